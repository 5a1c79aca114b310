//! Per-device CUDA state: the driver context and the stream all rodl work on that device runs
//! on ([`DeviceCtx`], created once per device and process by [`device_ctx`] and then shared),
//! with the device's launch configurations. The other jobs of a device have files of their own:
//! finding the driver and NVRTC (`probe.rs`), compiling and caching kernels (`compile.rs`: also
//! kept on disk between processes by [`crate::backend::kernel_cache`], `~/.cache/rodl/kernels`
//! on Linux, moved or disabled with `RODL_KERNEL_CACHE`), the memory pool (`pool.rs`) and the
//! pinned staging area for large transfers (`staging.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use cudarc::driver::{
    sys, CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DriverError,
    LaunchConfig,
};

use super::borrowed;
pub(crate) use super::compile::{Dtype, KernelSource, VECTOR_OPS};
use super::driver_error::describe;
pub(crate) use super::driver_error::driver_err;
pub(crate) use super::probe::device_count;
use super::probe::{guarded, nvrtc_archs, toolchain_versions};
pub(crate) use super::staging::{par_copy, PinnedBuf, Staging, STAGING_MIN_BYTES};
use crate::{Error, Result, Scalar};

/// Threads per block of the 1D kernels launched through [`DeviceCtx::launch_cfg`].
pub(crate) const BLOCK: u32 = 256;

/// The [`ScalarFamily`](crate::ScalarFamily) of device buffers.
pub(crate) struct CudaSliceOf;

impl crate::ScalarFamily for CudaSliceOf {
    type Of<T: Scalar> = CudaSlice<T>;
}

pub(super) fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Everything rodl keeps per CUDA device: context, stream, compiled kernels, memory pool.
///
/// All rodl work on a device is ordered on [`DeviceCtx::stream`]: rodl's own stream, or during
/// [`DeviceCtx::run_on_stream`] the caller's. Other crate modules that launch their own kernels
/// use that stream (so no extra synchronisation is needed) and get their compiled functions from
/// [`DeviceCtx::function`].
pub(crate) struct DeviceCtx {
    pub(super) id: usize,
    pub(super) name: String,
    pub(super) cc: (i32, i32),
    pub(super) sm_count: u32,
    pub(super) arch: String,
    /// NVRTC and driver versions for the kernel cache's keys (`None`: no cache).
    pub(super) versions: Option<((i32, i32), i32)>,
    pub(super) ctx: Arc<CudaContext>,
    /// rodl's own stream (non-blocking: no implicit order with other libraries' streams).
    pub(super) stream: Arc<CudaStream>,
    /// The device's default memory pool (stream-ordered allocations), if supported.
    pub(super) pool: Option<usize>,
    pub(super) modules: Mutex<HashMap<&'static str, (&'static str, Arc<CudaModule>)>>,
    pub(super) functions: Mutex<HashMap<&'static str, HashMap<String, CudaFunction>>>,
    pub(super) staging: Mutex<Option<Staging>>,
    /// Per-block partial sums and the result of a reduction.
    pub(super) reduce_scratch: Mutex<Option<(CudaSlice<f64>, CudaSlice<f64>)>>,
}

/// The shared context of CUDA device `id`, created (driver context, stream, NVRTC compilation of
/// the vector kernels) on first use.
///
/// Errors with [`Error::CudaUnavailable`] when there is no driver, no NVRTC, no such device, or the
/// device cannot be initialised; never panics.
pub(crate) fn device_ctx(id: usize) -> Result<Arc<DeviceCtx>> {
    device_ctx_inner(id).map_err(|e| match e {
        Error::CudaUnavailable(m) => Error::CudaUnavailable(format!("cannot use cuda:{id}: {m}")),
        e => e,
    })
}

fn device_ctx_inner(id: usize) -> Result<Arc<DeviceCtx>> {
    static CTXS: OnceLock<Mutex<HashMap<usize, Arc<DeviceCtx>>>> = OnceLock::new();
    let map = CTXS.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(c) = lock(map).get(&id) {
        return Ok(Arc::clone(c));
    }
    let count = device_count()?;
    if id >= count {
        return Err(Error::CudaUnavailable(format!(
            "no such device, {count} CUDA device(s) found"
        )));
    }
    // Holding the lock while creating means one compilation per device, even under contention.
    let mut guard = lock(map);
    if let Some(c) = guard.get(&id) {
        return Ok(Arc::clone(c));
    }
    let c = Arc::new(DeviceCtx::create(id)?);
    // Compile the vector kernels now, so that a usable device is known to be usable.
    c.module(&VECTOR_OPS)?;
    guard.insert(id, Arc::clone(&c));
    Ok(c)
}

impl DeviceCtx {
    fn create(id: usize) -> Result<Self> {
        let archs = nvrtc_archs()?;
        let unavailable = |e: DriverError| Error::CudaUnavailable(describe(&e));
        let ctx =
            guarded("CUDA context creation", || CudaContext::new(id))?.map_err(unavailable)?;
        let (cc, sm_count, name, pools) = guarded("CUDA device query", || {
            Ok::<_, DriverError>((
                ctx.compute_capability()?,
                ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
                ctx.name()?,
                ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)?,
            ))
        })?
        .map_err(unavailable)?;
        // The newest virtual architecture NVRTC knows that the device can run.
        let want = cc.0 * 10 + cc.1;
        let arch = archs
            .iter()
            .copied()
            .filter(|&a| a <= want)
            .max()
            .ok_or_else(|| {
                Error::CudaUnavailable(format!(
                    "NVRTC cannot compile for this device ({name}, compute capability \
                     {}.{}): it supports {archs:?}",
                    cc.0, cc.1
                ))
            })?;
        // cudarc's per-buffer event tracking orders buffers shared between streams; rodl
        // orders its streams explicitly instead (tracking costs two events per buffer, created
        // and destroyed with it, a few µs each: most of the host time of a small operator call).
        // All rodl work on the device goes to one stream at a time: its own, or a stream lent
        // by the caller, ordered with its own by events (`borrowed`); the pieces' copy streams
        // are ordered by their own events; copies between devices synchronise their source
        // first (`DeviceTensor::to_device`).
        // SAFETY: no buffer of this context is used on a second stream without explicit
        // ordering (see above), so no use can outlive a free or race a write.
        unsafe { ctx.disable_event_tracking() };
        // A non-blocking stream of rodl's own, so that no implicit synchronisation with the
        // legacy default stream ties rodl's work to other libraries' work.
        let stream = guarded("CUDA stream creation", || ctx.new_stream())?.map_err(unavailable)?;
        let pool = if pools > 0 {
            Self::configure_pool(&ctx)
        } else {
            None
        };
        Ok(DeviceCtx {
            id,
            name,
            cc,
            sm_count: sm_count.max(1) as u32,
            arch: format!("--gpu-architecture=compute_{arch}"),
            versions: toolchain_versions(),
            ctx,
            stream,
            pool,
            modules: Mutex::new(HashMap::new()),
            functions: Mutex::new(HashMap::new()),
            staging: Mutex::new(None),
            reduce_scratch: Mutex::new(None),
        })
    }

    /// The device ordinal.
    pub(crate) fn id(&self) -> usize {
        self.id
    }

    /// Orders the work queued next on `stream` (this device's, from [`DeviceCtx::stream`])
    /// after `event`: for a resource that calls on any stream share (a scratch buffer, a cuFFT
    /// plan), whose previous use `event` marks. During a graph capture of the lent stream the
    /// host waits for the event instead (see `borrowed::order_after`).
    pub(crate) fn order_after(&self, stream: &CudaStream, event: &CudaEvent) -> Result<()> {
        borrowed::order_after(stream, event, borrowed::current_is_capturing(self.id))
    }

    /// Marks the work queued so far on `stream` (this device's, from [`DeviceCtx::stream`]),
    /// for [`DeviceCtx::order_after`]: `None` while the lent stream is being captured into a
    /// graph (an event recorded in a capture cannot order work outside it; the graph's replays
    /// are ordered by its owner).
    pub(crate) fn mark(&self, stream: &CudaStream) -> Result<Option<CudaEvent>> {
        if borrowed::current_is_capturing(self.id) {
            return Ok(None);
        }
        stream
            .record_event(None)
            .map(Some)
            .map_err(driver_err("recording an event"))
    }

    /// The device's name as the driver reports it.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The compute capability `(major, minor)`.
    pub(crate) fn compute_capability(&self) -> (i32, i32) {
        self.cc
    }

    /// Number of streaming multiprocessors.
    pub(crate) fn sm_count(&self) -> u32 {
        self.sm_count
    }

    /// The cudarc context.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream rodl's work on this device goes to from the calling thread: the stream lent
    /// by [`Self::run_on_stream`] while it runs (outside [`lasting`](super::lasting) scopes),
    /// otherwise rodl's own stream.
    pub(crate) fn stream(&self) -> Arc<CudaStream> {
        self.forget_capture_residue();
        borrowed::current(self.id).unwrap_or_else(|| Arc::clone(&self.stream))
    }

    /// cudarc keeps the error of a free or wait that a buffer's drop made and returns it from
    /// the context's next call. Frees refused during another thread's global-mode graph capture
    /// (the call that met the capture has already returned [`Error::GraphCapture`]) must not
    /// fail the next call after the capture: those are dropped here, other errors kept.
    fn forget_capture_residue(&self) {
        if let Err(e) = self.ctx.check_err() {
            if !super::driver_error::is_capture_error(e.0) {
                self.ctx.record_err::<()>(Err(e));
            }
        }
    }

    /// rodl's own stream of this device (for what outlives a call on a lent stream).
    pub(crate) fn own_stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Runs `f` with this device's work on the calling thread queued on another library's
    /// stream `stream` of the device's primary context (0: the legacy default stream), ordered
    /// by events with rodl's own stream: no host or device synchronisation.
    ///
    /// # Safety
    /// `stream` must be a live stream of this device's primary context that stays alive until
    /// the work queued on it is done.
    pub(crate) unsafe fn run_on_stream(
        &self,
        stream: u64,
        f: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        self.bind()?;
        // SAFETY: forwarded to the caller.
        unsafe { borrowed::run_on(self.id, &self.ctx, &self.stream, stream, f) }
    }

    /// Makes the device's context current on the calling thread (needed before raw driver
    /// calls; cudarc's safe calls do it themselves).
    pub(crate) fn bind(&self) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(driver_err("making the CUDA context current"))
    }

    /// The device's free and total memory in bytes (`cuMemGetInfo`).
    pub(crate) fn memory_info(&self) -> Result<(u64, u64)> {
        self.bind()?;
        cudarc::driver::result::mem_get_info()
            .map(|(free, total)| (free as u64, total as u64))
            .map_err(driver_err("querying the device memory"))
    }

    /// Waits until all work queued on the device's stream ([`Self::stream`]) has finished.
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.stream()
            .synchronize()
            .map_err(driver_err("synchronising the stream"))
    }

    /// A 1D launch configuration with one [`BLOCK`]-thread block per `BLOCK` of the `n` elements
    /// (grid-stride kernels loop only past 2³¹ − 1 blocks): the GPU schedules the blocks in
    /// index order, so the threads in flight at a time hold neighbouring elements. For kernels
    /// whose element order is chosen for cache locality; [`Self::launch_cfg`] caps the grid.
    pub(crate) fn launch_cfg_ordered(&self, n: usize) -> LaunchConfig {
        let blocks = n.div_ceil(BLOCK as usize).clamp(1, i32::MAX as usize) as u32;
        LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// A 1D launch configuration for grid-stride kernels over `n` elements: [`BLOCK`] threads
    /// per block, at most 32 blocks per multiprocessor.
    pub(crate) fn launch_cfg(&self, n: usize) -> LaunchConfig {
        let max_blocks = (self.sm_count as usize) * 32;
        let blocks = n.div_ceil(BLOCK as usize).clamp(1, max_blocks) as u32;
        LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Sets `n` 32-bit words at device address `ptr` to zero, queued on [`Self::stream`].
    ///
    /// # Safety
    /// `ptr` must address at least `n` 32-bit words of this context's memory, not in use by
    /// work that the stream does not order before this.
    pub(crate) unsafe fn zero_words(&self, ptr: u64, n: usize, what: &str) -> Result<()> {
        self.bind()?;
        // SAFETY: the caller's guarantees.
        unsafe { cudarc::driver::sys::cuMemsetD32Async(ptr, 0, n, self.stream().cu_stream()) }
            .result()
            .map_err(driver_err(what))
    }
}
