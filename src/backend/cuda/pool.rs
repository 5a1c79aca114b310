//! Device memory: the device's default memory pool (freed memory kept for reuse), allocations
//! that trim the pool and retry once when memory runs out, and the reduction scratch.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{sys, CudaContext, CudaSlice, DeviceRepr, DriverError};

use super::borrowed;
use super::compile::Dtype;
use super::context::{lock, CudaSliceOf, DeviceCtx};
use super::driver_error::driver_err;
use crate::{Error, Result, Scalar};

impl DeviceCtx {
    /// Keeps freed memory in the device's default pool (no release at every synchronisation);
    /// [`DeviceCtx::alloc`] trims the pool when an allocation runs out of memory.
    pub(super) fn configure_pool(ctx: &Arc<CudaContext>) -> Option<usize> {
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        let mut threshold: u64 = u64::MAX;
        // SAFETY: plain driver calls with valid out-pointers.
        unsafe {
            ctx.bind_to_thread().ok()?;
            sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device())
                .result()
                .ok()?;
            sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                &mut threshold as *mut u64 as *mut c_void,
            )
            .result()
            .ok()?;
        }
        Some(pool as usize)
    }

    /// Runs an allocation of `bytes` bytes; on out-of-memory, returns the pool's cached memory
    /// to the device and tries once more. Running out again is [`Error::OutOfMemory`] with
    /// the device's free memory as the limit.
    pub(super) fn retry_oom<R>(
        &self,
        what: &str,
        bytes: usize,
        f: impl Fn() -> std::result::Result<R, DriverError>,
    ) -> Result<R> {
        let oom = sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY;
        match f() {
            Err(e) if e.0 == oom => {
                self.trim_pool();
                match f() {
                    Err(e) if e.0 == oom => {
                        // A failed stream-ordered allocation can leave what it reserved in the
                        // pool (seen on an H200: 3 MB free after a 268 GB request failed);
                        // give it back, so that the error leaves the device as it was.
                        self.trim_pool();
                        let free = cudarc::driver::result::mem_get_info()
                            .map(|(free, _)| free as u64)
                            .unwrap_or(0);
                        Err(Error::OutOfMemory {
                            what: "an array".into(),
                            bytes: bytes as u128,
                            limit: free,
                            device: crate::Device::Cuda(self.id),
                        })
                    }
                    r => r.map_err(driver_err(what)),
                }
            }
            r => r.map_err(driver_err(what)),
        }
    }

    /// Returns the memory the pool keeps for reuse to the device (after the queued work).
    pub(super) fn trim_pool(&self) {
        if let Some(pool) = self.pool {
            let _ = self.stream().synchronize();
            let _ = self.stream.synchronize();
            // SAFETY: the pool handle came from cuDeviceGetDefaultMemPool.
            let _ = unsafe { sys::cuMemPoolTrimTo(pool as sys::CUmemoryPool, 0) };
        }
    }

    /// Uninitialised device memory for `n` values of a plain type (kernel scratch, tables, …).
    pub(crate) fn alloc_raw<U: DeviceRepr>(&self, n: usize) -> Result<CudaSlice<U>> {
        let bytes = n.max(1).saturating_mul(std::mem::size_of::<U>());
        self.retry_oom(
            &format!("allocating {bytes} bytes on cuda:{}", self.id),
            bytes,
            || {
                // SAFETY: the memory is uninitialised; callers write before they read.
                unsafe { self.stream().alloc::<U>(n.max(1)) }
            },
        )
    }

    /// Uninitialised device memory for `n` scalars (`f32` or `f64`).
    pub(crate) fn alloc<T: Scalar>(&self, n: usize) -> Result<CudaSlice<T>> {
        let cast = || Error::Cuda("scalar type changed under a cast".into());
        match Dtype::of::<T>()? {
            Dtype::F32 => {
                T::cast_from_f32::<CudaSliceOf>(self.alloc_raw::<f32>(n)?).map_err(|_| cast())
            }
            Dtype::F64 => {
                T::cast_from_f64::<CudaSliceOf>(self.alloc_raw::<f64>(n)?).map_err(|_| cast())
            }
        }
    }

    /// Runs `f` with the device's reduction scratch: room for the partial sums of the largest
    /// grid [`launch_cfg`](Self::launch_cfg) makes, and one result (allocated on first use).
    pub(crate) fn with_reduce_scratch<R>(
        &self,
        f: impl FnOnce(&mut CudaSlice<f64>, &mut CudaSlice<f64>) -> Result<R>,
    ) -> Result<R> {
        let mut g = lock(&self.reduce_scratch);
        if g.is_none() {
            *g = Some(borrowed::lasting(|| {
                Ok((
                    self.alloc_raw::<f64>(self.sm_count as usize * 32)?,
                    self.alloc_raw::<f64>(1)?,
                ))
            })?);
        }
        match g.as_mut() {
            Some((partial, total)) => f(partial, total),
            None => Err(Error::Cuda("reduction scratch missing".into())),
        }
    }
}
