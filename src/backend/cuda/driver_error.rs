//! Driver errors as [`Error`]s, saying what was being done.
//!
//! The errors a CUDA graph capture in progress causes (a call forbidden while another thread
//! captures in global mode, a capture invalidated by it) become [`Error::GraphCapture`], with
//! the mode and the remedy, rather than a driver error string.

use cudarc::driver::{sys::CUresult, DriverError};

use crate::Error;

/// Maps a driver error to [`Error::Cuda`] (or [`Error::GraphCapture`]), saying what was being
/// done.
pub(crate) fn driver_err(what: &str) -> impl FnOnce(DriverError) -> Error + '_ {
    move |e| {
        if is_capture_error(e.0) {
            Error::GraphCapture(capture_message(what, &describe(&e)))
        } else {
            Error::Cuda(format!("{what}: {}", describe(&e)))
        }
    }
}

/// Whether `code` is one of the driver's stream-capture errors.
pub(crate) fn is_capture_error(code: CUresult) -> bool {
    use CUresult as R;
    matches!(
        code,
        R::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
            | R::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
            | R::CUDA_ERROR_STREAM_CAPTURE_MERGE
            | R::CUDA_ERROR_STREAM_CAPTURE_UNMATCHED
            | R::CUDA_ERROR_STREAM_CAPTURE_UNJOINED
            | R::CUDA_ERROR_STREAM_CAPTURE_ISOLATION
            | R::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
            | R::CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD
            | R::CUDA_ERROR_CAPTURED_EVENT
    )
}

/// The text of [`Error::GraphCapture`]: what failed, the driver's name for it, why, and what to
/// do instead.
pub(crate) fn capture_message(what: &str, driver: &str) -> String {
    format!(
        "{what}: a CUDA graph capture in progress forbids this call ({driver}). Another thread \
         is capturing a stream in global mode (cudaStreamCaptureModeGlobal, the default of \
         cudaStreamBeginCapture and of torch.cuda.graph), which forbids allocations, frees and \
         host waits on every thread until the capture ends; rodl does not wait or retry. \
         Capture in thread_local or relaxed mode (torch.cuda.graph(g, \
         capture_error_mode=\"thread_local\")), or run rodl on the capturing stream so that \
         its work is recorded into the graph"
    )
}

pub(super) fn describe(e: &DriverError) -> String {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    let text = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if text.is_empty() {
        name
    } else {
        format!("{name} ({text})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_errors_name_the_mode_and_the_remedy() {
        let e = driver_err("allocating 4 bytes on cuda:0")(DriverError(
            CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
        ));
        let Error::GraphCapture(msg) = &e else {
            panic!("not a capture error: {e:?}")
        };
        assert!(msg.starts_with("allocating 4 bytes on cuda:0: "), "{msg}");
        for word in ["global mode", "thread_local", "relaxed", "torch.cuda.graph"] {
            assert!(msg.contains(word), "{word} missing from {msg}");
        }
        let other = driver_err("x")(DriverError(CUresult::CUDA_ERROR_INVALID_VALUE));
        assert!(matches!(other, Error::Cuda(_)), "{other:?}");
    }
}
