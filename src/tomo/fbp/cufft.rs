//! The process's choice of the GPU FBP filter's method (crate feature `cuda`): cuFFT where it
//! loads (the backend's [`probe`]), else the direct convolution, as `RODL_CUFFT` asks
//! ([`super::gpu_method`]).

use std::sync::OnceLock;

use super::gpu_method::{choose, CufftRequest, GpuFilterMethod};
use crate::backend::cuda::fft::probe;
use crate::{Error, Result};

/// The method the GPU filter uses in this process (chosen on first use from `RODL_CUFFT` and
/// whether cuFFT loads; see [`super::gpu_method`]).
pub(crate) fn method() -> Result<GpuFilterMethod> {
    static CHOICE: OnceLock<std::result::Result<GpuFilterMethod, String>> = OnceLock::new();
    CHOICE
        .get_or_init(|| {
            choose(&CufftRequest::from_env(), probe).map_err(|e| match e {
                Error::CudaUnavailable(m) => m,
                e => e.to_string(),
            })
        })
        .clone()
        .map_err(Error::CudaUnavailable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_choice_never_panics() {
        let r =
            std::panic::catch_unwind(method).expect("choosing the GPU filter's method panicked");
        match &r {
            Ok(_) => {}
            Err(Error::CudaUnavailable(m)) => assert!(m.contains("RODL_CUFFT"), "{m}"),
            Err(e) => panic!("unexpected error {e:?}"),
        }
        // The choice is made once: asking again gives the same answer.
        assert_eq!(method().ok(), r.ok());
    }
}
