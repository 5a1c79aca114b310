//! cuFFT through cudarc (dynamic loading, like the driver and NVRTC): the up-front check that
//! the library opens and has every function rodl calls ([`probe`]), so that cudarc's lazy
//! loader, which panics on a missing library or symbol, is never reached without it; and
//! batches of in-place real transforms of rows in a scratch buffer ([`RealFftRows`]), the
//! plans' work area shared and allocated through the device pool.
//!
//! The FBP filter (`tomo::fbp::cufft`) is the user: it fills the scratch rows with its
//! kernels, transforms them, weighs the spectrum and transforms back.

use std::ffi::{c_int, OsString};
use std::panic::catch_unwind;
use std::path::Path;

use cudarc::cufft::{result as fft, sys as fft_sys};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtrMut};

use super::context::{DeviceCtx, Dtype};
use crate::{Error, Result};

/// The cuFFT functions rodl calls; all must be present before any is called.
const SYMBOLS: [&str; 10] = [
    "cufftCreate",
    "cufftDestroy",
    "cufftSetAutoAllocation",
    "cufftMakePlanMany",
    "cufftSetWorkArea",
    "cufftSetStream",
    "cufftExecR2C",
    "cufftExecC2R",
    "cufftExecD2Z",
    "cufftExecZ2D",
];

/// Opens cuFFT (the file `path`, or the first of cudarc's standard names) and checks that it has
/// every function in [`SYMBOLS`]. The library is kept loaded for the life of the process, so
/// that cudarc's own loader, which opens it by name afterwards, gets this one.
pub(crate) fn probe(path: Option<&Path>) -> std::result::Result<(), String> {
    let names: Vec<OsString> = match path {
        Some(p) => vec![p.as_os_str().to_owned()],
        None => cudarc::get_lib_name_candidates("cufft")
            .into_iter()
            .map(OsString::from)
            .collect(),
    };
    let mut last = String::new();
    let mut lib = None;
    for n in &names {
        // SAFETY: loading cuFFT runs only its initialisers, which have no preconditions.
        match unsafe { libloading::Library::new(n) } {
            Ok(l) => {
                lib = Some(l);
                break;
            }
            Err(e) => last = e.to_string(),
        }
    }
    let Some(lib) = lib else {
        return Err(format!(
            "cuFFT could not be loaded (tried {names:?}; last error: {last})"
        ));
    };
    let missing: Vec<&str> = SYMBOLS
        .iter()
        .copied()
        // SAFETY: only looks the symbol up; it is never called through this pointer.
        .filter(|s| unsafe { lib.get::<unsafe extern "C" fn()>(s.as_bytes()) }.is_err())
        .collect();
    if !missing.is_empty() {
        return Err(format!("the cuFFT library lacks {}", missing.join(", ")));
    }
    // Keep it loaded: cudarc opens it again by name.
    std::mem::forget(lib);
    // cudarc's loader must find the same library now; it panics where it cannot.
    catch_unwind(fft::get_version)
        .map_err(|_| "cudarc could not load cuFFT under its standard names".to_string())?
        .map_err(|e| format!("cuFFT does not answer: {e:?}"))?;
    Ok(())
}

fn cufft_err(what: &str) -> impl FnOnce(fft::CufftError) -> Error + '_ {
    move |e| Error::Cuda(format!("{what}: cuFFT {:?}", e.0))
}

/// A cuFFT plan handle, destroyed on drop (errors ignored: nothing to do about them then).
struct Plan(fft_sys::cufftHandle);

impl Drop for Plan {
    fn drop(&mut self) {
        // SAFETY: the handle came from cufftCreate and is destroyed once.
        let _ = unsafe { fft::destroy(self.0) };
    }
}

/// Scratch rows in the transforms' precision.
pub(crate) enum Scratch {
    /// `f32` rows (`R2C` / `C2R`).
    F32(CudaSlice<f32>),
    /// `f64` rows (`D2Z` / `Z2D`).
    F64(CudaSlice<f64>),
}

/// The in-place real-to-complex and complex-to-real transforms of length `len` of `rows` rows
/// of a scratch buffer, each row `ld = 2 (len/2 + 1)` reals (`len/2 + 1` complex values) apart,
/// with their plans' shared work area. One caller at a time (the plans keep the stream of
/// [`Self::set_stream`]).
pub(crate) struct RealFftRows {
    /// Plans before the work area they use, so that they are destroyed first.
    r2c: Plan,
    c2r: Plan,
    /// The rows the transforms work on.
    pub(crate) scratch: Scratch,
    _work: Option<CudaSlice<u8>>,
    /// Rows per pass (the plans' batch).
    pub(crate) rows: usize,
}

impl RealFftRows {
    /// Plans the transforms of length `len` for `rows` rows in `dtype` on the device's stream,
    /// with one work area for both, and allocates the scratch (`rows · ld` values).
    pub(crate) fn new(ctx: &DeviceCtx, dtype: Dtype, len: i32, rows: usize) -> Result<Self> {
        let batch_i = i32::try_from(rows).map_err(|_| {
            Error::Unsupported("the batch of rows exceeds the cuFFT transforms' range".into())
        })?;
        if len < 1 {
            return Err(Error::invalid(format!("a cuFFT transform of length {len}")));
        }
        let nc = len / 2 + 1;
        let ld = 2 * nc;
        let values = rows
            .checked_mul(ld as usize)
            .ok_or_else(|| Error::invalid("the cuFFT scratch exceeds the address space"))?;
        let scratch = match dtype {
            Dtype::F32 => Scratch::F32(ctx.alloc_raw::<f32>(values)?),
            Dtype::F64 => Scratch::F64(ctx.alloc_raw::<f64>(values)?),
        };
        let stream = &ctx.stream();
        ctx.bind()?;
        let (fwd, inv) = match dtype {
            Dtype::F32 => (fft_sys::cufftType::CUFFT_R2C, fft_sys::cufftType::CUFFT_C2R),
            Dtype::F64 => (fft_sys::cufftType::CUFFT_D2Z, fft_sys::cufftType::CUFFT_Z2D),
        };
        let make = |kind, idist: c_int, odist: c_int| -> Result<(Plan, usize)> {
            let plan = Plan(fft::create().map_err(cufft_err("creating a cuFFT plan"))?);
            let mut n = [len];
            let mut inembed = [idist];
            let mut onembed = [odist];
            // SAFETY: a fresh plan; the arrays live through the calls.
            let work = unsafe {
                fft::set_auto_allocation(plan.0, false)
                    .map_err(cufft_err("configuring a cuFFT plan"))?;
                fft::make_plan_many(
                    plan.0,
                    1,
                    n.as_mut_ptr(),
                    inembed.as_mut_ptr(),
                    1,
                    idist,
                    onembed.as_mut_ptr(),
                    1,
                    odist,
                    kind,
                    batch_i,
                )
                .map_err(cufft_err("planning batched real transforms"))?
            };
            // SAFETY: the stream belongs to the device's context, which outlives the plan.
            unsafe { fft::set_stream(plan.0, stream.cu_stream() as fft_sys::cudaStream_t) }
                .map_err(cufft_err("setting the cuFFT stream"))?;
            Ok((plan, work))
        };
        let (r2c, w1) = make(fwd, ld, nc)?;
        let (c2r, w2) = make(inv, nc, ld)?;
        let bytes = w1.max(w2);
        let mut work = None;
        if bytes > 0 {
            let mut w = ctx.alloc_raw::<u8>(bytes)?;
            let (ptr, _g) = w.device_ptr_mut(stream);
            for plan in [&r2c, &c2r] {
                // SAFETY: `w` holds the larger of the two plans' work sizes and lives (in
                // `self`, after the plans) as long as they do.
                unsafe { fft::set_work_area(plan.0, ptr as *mut std::ffi::c_void) }
                    .map_err(cufft_err("setting the cuFFT work area"))?;
            }
            drop(_g);
            work = Some(w);
        }
        Ok(Self {
            r2c,
            c2r,
            scratch,
            _work: work,
            rows,
        })
    }

    /// Runs both plans on `stream` from now on (the caller's, when one is lent).
    pub(crate) fn set_stream(&self, stream: &CudaStream) -> Result<()> {
        for plan in [&self.r2c, &self.c2r] {
            // SAFETY: the stream belongs to the device's context and outlives the work queued
            // on it by this call's caller.
            unsafe { fft::set_stream(plan.0, stream.cu_stream() as fft_sys::cudaStream_t) }
                .map_err(cufft_err("setting the cuFFT stream"))?;
        }
        Ok(())
    }

    /// The forward (real-to-complex) transforms of all rows, in place, queued on the plans'
    /// stream (`stream` orders the scratch's use).
    pub(crate) fn forward(&mut self, stream: &CudaStream) -> Result<()> {
        let what = "a batched forward transform";
        match &mut self.scratch {
            Scratch::F32(buf) => {
                let (ptr, _g) = buf.device_ptr_mut(stream);
                // SAFETY: in place on the scratch (rows of ld reals = nc complex values each,
                // as planned).
                unsafe {
                    fft::exec_r2c(
                        self.r2c.0,
                        ptr as *mut fft_sys::cufftReal,
                        ptr as *mut fft_sys::cufftComplex,
                    )
                }
                .map_err(cufft_err(what))
            }
            Scratch::F64(buf) => {
                let (ptr, _g) = buf.device_ptr_mut(stream);
                // SAFETY: as above, in double precision.
                unsafe {
                    fft::exec_d2z(
                        self.r2c.0,
                        ptr as *mut fft_sys::cufftDoubleReal,
                        ptr as *mut fft_sys::cufftDoubleComplex,
                    )
                }
                .map_err(cufft_err(what))
            }
        }
    }

    /// The inverse (complex-to-real, unnormalised) transforms of all rows, in place.
    pub(crate) fn inverse(&mut self, stream: &CudaStream) -> Result<()> {
        let what = "a batched inverse transform";
        match &mut self.scratch {
            Scratch::F32(buf) => {
                let (ptr, _g) = buf.device_ptr_mut(stream);
                // SAFETY: as in `forward`.
                unsafe {
                    fft::exec_c2r(
                        self.c2r.0,
                        ptr as *mut fft_sys::cufftComplex,
                        ptr as *mut fft_sys::cufftReal,
                    )
                }
                .map_err(cufft_err(what))
            }
            Scratch::F64(buf) => {
                let (ptr, _g) = buf.device_ptr_mut(stream);
                // SAFETY: as in `forward`.
                unsafe {
                    fft::exec_z2d(
                        self.c2r.0,
                        ptr as *mut fft_sys::cufftDoubleComplex,
                        ptr as *mut fft_sys::cufftDoubleReal,
                    )
                }
                .map_err(cufft_err(what))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs without a GPU: a missing or wrong library is an error, never a panic.
    #[test]
    fn probing_a_missing_library_is_an_error() {
        let e = probe(Some(Path::new("/nonexistent/libcufft.so.12"))).unwrap_err();
        assert!(e.contains("could not be loaded"), "{e}");
    }

    #[test]
    fn probing_a_library_without_cufft_names_the_missing_functions() {
        // Any shared library that is not cuFFT: the C library is on every Linux machine.
        if !cfg!(target_os = "linux") {
            return;
        }
        let e = probe(Some(Path::new("libc.so.6"))).unwrap_err();
        assert!(e.contains("lacks cufftCreate"), "{e}");
    }
}
