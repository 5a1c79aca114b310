//! Finding the CUDA driver and NVRTC without panicking: whether their libraries load, the
//! device count, the architectures NVRTC compiles for and the toolchain's versions.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use cudarc::driver::{sys, CudaContext};

use super::driver_error::describe;
use crate::{Error, Result};

pub(super) fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Runs a call into cudarc that might panic (a missing library or symbol) and turns a panic into
/// [`Error::CudaUnavailable`].
pub(super) fn guarded<R>(what: &str, f: impl FnOnce() -> R) -> Result<R> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        Error::CudaUnavailable(format!(
            "{what}: the CUDA library failed: {}",
            panic_text(p)
        ))
    })
}

pub(super) fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to open the shared library.
    *PRESENT.get_or_init(|| catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false))
}

pub(super) fn nvrtc_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to open the shared library.
    *PRESENT.get_or_init(|| {
        catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false)
    })
}

/// The number of CUDA devices, or why there are none.
pub(crate) fn device_count() -> Result<usize> {
    if !driver_present() {
        return Err(Error::CudaUnavailable(
            "the CUDA driver library (libcuda.so / nvcuda.dll) was not found: no NVIDIA driver \
             is installed, or it is not on the library search path"
                .into(),
        ));
    }
    let n = guarded("CUDA driver initialisation", CudaContext::device_count)?.map_err(|e| {
        Error::CudaUnavailable(format!(
            "the CUDA driver did not initialise: {} (no usable GPU?)",
            describe(&e)
        ))
    })?;
    Ok(n.max(0) as usize)
}

/// The NVRTC target architectures (`XY` for compute_XY), or why NVRTC cannot be used.
pub(super) fn nvrtc_archs() -> Result<Vec<i32>> {
    if !nvrtc_present() {
        return Err(Error::CudaUnavailable(
            "the NVRTC library (libnvrtc.so, CUDA 13) was not found: rodl compiles its GPU \
             kernels at run time and needs the CUDA toolkit's NVRTC on the library search path \
             (e.g. LD_LIBRARY_PATH=/usr/local/cuda/lib64)"
                .into(),
        ));
    }
    guarded("NVRTC", || {
        let mut n = 0i32;
        // SAFETY: plain queries into caller-owned memory of the announced size.
        unsafe {
            cudarc::nvrtc::sys::nvrtcGetNumSupportedArchs(&mut n).result()?;
            let mut v = vec![0i32; n.max(0) as usize];
            if n > 0 {
                cudarc::nvrtc::sys::nvrtcGetSupportedArchs(v.as_mut_ptr()).result()?;
            }
            Ok::<_, cudarc::nvrtc::result::NvrtcError>(v)
        }
    })?
    .map_err(|e| Error::CudaUnavailable(format!("NVRTC does not answer: {e:?}")))
}

/// The NVRTC version `(major, minor)` and the CUDA driver version (e.g. 13000), which key the
/// kernel cache; `None` when either cannot be queried (then kernels are not cached).
pub(super) fn toolchain_versions() -> Option<((i32, i32), i32)> {
    guarded("CUDA version query", || {
        let (mut major, mut minor, mut driver) = (0i32, 0i32, 0i32);
        // SAFETY: plain queries into caller-owned integers.
        unsafe {
            cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor)
                .result()
                .ok()?;
            sys::cuDriverGetVersion(&mut driver).result().ok()?;
        }
        Some(((major, minor), driver))
    })
    .ok()
    .flatten()
}
