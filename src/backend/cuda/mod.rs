//! The CUDA backend (crate feature `cuda`): device tensors, their vector-space operations, and the
//! GPU kernels of the default operators, on top of cudarc's driver API with kernels compiled at
//! run time by NVRTC (`kernels/*.cu`).
//!
//! # Using it from other crate modules
//!
//! * [`device_ctx`]`(id)` gives the shared [`DeviceCtx`] of a device: its cudarc context
//!   ([`DeviceCtx::context`]), the stream rodl's work on that device goes to
//!   ([`DeviceCtx::stream`]: rodl's own, or the caller's during [`DeviceCtx::run_on_stream`]; a
//!   cache that outlives a call is made inside [`lasting`]), allocation ([`DeviceCtx::alloc`], [`DeviceCtx::alloc_raw`]: no
//!   panics, out-of-memory is an [`Error::Cuda`](crate::Error::Cuda)), launch configurations
//!   ([`DeviceCtx::launch_cfg`]) and compiled kernels ([`DeviceCtx::function`]).
//! * A kernel source is a [`KernelSource`] constant (`include_str!` of a `kernels/*.cu` file, a
//!   unique registry name, NVRTC options); it is compiled once per device for the device's
//!   architecture (`--gpu-architecture=compute_XY`). The PTX is kept between processes in the
//!   on-disk kernel cache ([`crate::backend::kernel_cache`]; `RODL_KERNEL_CACHE` moves or
//!   disables it).
//! * A [`DeviceTensor`]'s data is [`DeviceTensor::slice`] / [`DeviceTensor::slice_mut`] (a
//!   `cudarc::driver::CudaSlice<T>`), ready to push as a kernel argument; results are wrapped with
//!   [`DeviceTensor::from_slice`] or written into [`DeviceTensor::uninit`] tensors.
//! * Errors: map `cudarc::driver::DriverError`s with [`driver_err`].
//!
//! ```ignore
//! const RAY: KernelSource = KernelSource {
//!     name: "ray_parallel",
//!     prelude: &[],
//!     code: include_str!("../../kernels/ray_parallel.cu"),
//!     options: &[],
//! };
//! let ctx = x.ctx();
//! let f = ctx.function(&RAY, "forward_f32")?;
//! let stream = &ctx.stream();
//! let mut l = stream.launch_builder(&f);
//! l.arg(x.slice()).arg(out.slice_mut()).arg(&n);
//! unsafe { l.launch(ctx.launch_cfg(n as usize)) }.map_err(driver_err("ray kernel"))?;
//! ```
//!
//! # Transfers
//!
//! Host ↔ device copies happen only when asked for (`Element::to_device`, `Space::element`, …).
//! From [`STAGING_MIN_BYTES`] on they go through two pinned buffers per device (double-buffered,
//! the host-side copy done by several threads); copies between GPUs are peer copies.

// Parts of the internal API exist for other modules (ray transform) that may not use them yet.
#![allow(dead_code)]

mod borrowed;
mod compile;
mod context;
mod driver_error;
pub(crate) mod fft;
pub(crate) mod lanes;
mod ops;
pub(crate) mod pieces;
mod pointwise;
mod pool;
pub(crate) mod preprocess;
mod probe;
pub(crate) mod ray;
pub(crate) mod row_filter;
mod row_filter_fft;
mod staging;
mod tensor;

pub(crate) use borrowed::lasting;
#[allow(unused_imports)]
pub(crate) use context::{
    device_count, device_ctx, driver_err, par_copy, DeviceCtx, Dtype, KernelSource, PinnedBuf,
    BLOCK, STAGING_MIN_BYTES, VECTOR_OPS,
};
pub(crate) use tensor::DeviceTensor;

/// The [`ScalarFamily`](crate::ScalarFamily) of device tensors (for
/// [`Scalar::as_f32`](crate::Scalar::as_f32)).
pub(crate) struct DeviceTensorOf;

impl crate::ScalarFamily for DeviceTensorOf {
    type Of<T: crate::Scalar> = DeviceTensor<T>;
}

/// The CUDA runtime calls.
pub(crate) struct Cuda;

impl super::Runtime for Cuda {
    /// Errors unless CUDA device `id` can be used: driver and NVRTC present, the ordinal exists,
    /// the context is created and the vector kernels compile. Never panics.
    fn check_available(id: usize) -> crate::Result<()> {
        device_ctx(id).map(|_| ())
    }

    fn device_count() -> crate::Result<usize> {
        device_count()
    }

    fn synchronize(id: usize) -> crate::Result<()> {
        device_ctx(id)?.synchronize()
    }

    fn memory_info(id: usize) -> crate::Result<(u64, u64)> {
        device_ctx(id)?.memory_info()
    }

    unsafe fn run_on_stream(
        id: usize,
        stream: u64,
        f: &mut dyn FnMut() -> crate::Result<()>,
    ) -> crate::Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { device_ctx(id)?.run_on_stream(stream, f) }
    }

    fn time(id: usize, f: &mut dyn FnMut() -> crate::Result<()>) -> crate::Result<f64> {
        use cudarc::driver::sys::CUevent_flags;
        let ctx = device_ctx(id)?;
        let stream = &ctx.stream();
        let ev = |what| {
            stream
                .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(driver_err(what))
        };
        let start = ev("recording a timing event")?;
        f()?;
        let end = ev("recording a timing event")?;
        end.synchronize()
            .map_err(driver_err("waiting for a timing event"))?;
        start
            .elapsed_ms(&end)
            .map(f64::from)
            .map_err(driver_err("reading a timing event"))
    }
}
