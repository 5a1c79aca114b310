//! Per-device CUDA state: the driver context, the stream all rodl work on that device runs on, the
//! NVRTC-compiled kernel modules, the memory pool and a pinned staging area for large transfers.
//!
//! Everything here is created once per device and process ([`device_ctx`]) and then shared.
//! Compiled kernels are also kept on disk between processes ([`crate::backend::kernel_cache`]:
//! `~/.cache/rodl/kernels` on Linux, moved or disabled with `RODL_KERNEL_CACHE`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use cudarc::driver::{
    sys, CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr,
    DriverError, LaunchConfig,
};
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx};

use super::borrowed;
use super::driver_error::describe;
pub(crate) use super::driver_error::driver_err;
use crate::backend::kernel_cache::{self, CacheKey, KeyParts};
use crate::{Error, Result, Scalar};

/// Threads per block of the 1D kernels launched through [`DeviceCtx::launch_cfg`].
pub(crate) const BLOCK: u32 = 256;

/// A CUDA C++ source compiled at run time with NVRTC, once per device.
///
/// `name` keys the module registry: one name, one source. Other crate modules declare theirs as
/// constants next to the code that launches them:
///
/// ```ignore
/// const RAY: KernelSource = KernelSource {
///     name: "ray_parallel",
///     prelude: &[],
///     code: include_str!("../../kernels/ray_parallel.cu"),
///     options: &[],
/// };
/// let f = device_ctx(id)?.function(&RAY, "forward_f32")?;
/// ```
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelSource {
    /// Registry key and NVRTC program name (`<name>.cu` in compiler messages).
    pub name: &'static str,
    /// Generated code compiled before `code` (e.g. the pointwise operations' table).
    pub prelude: &'static [&'static str],
    /// The CUDA C++ source.
    pub code: &'static str,
    /// Extra NVRTC options (the target architecture is added automatically).
    pub options: &'static [&'static str],
}

/// The elementwise vector operations and reductions.
pub(crate) const VECTOR_OPS: KernelSource = KernelSource {
    name: "vector_ops",
    prelude: &[],
    code: include_str!("../../../kernels/vector_ops.cu"),
    options: &["--fmad=false"],
};

/// Scalar types a device tensor can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dtype {
    F32,
    F64,
}

impl Dtype {
    /// The dtype of `T`, or an error for scalar types other than `f32` and `f64`.
    pub(crate) fn of<T: Scalar>() -> Result<Self> {
        if T::as_f32_slice(&[]).is_some() {
            Ok(Dtype::F32)
        } else if T::NAME == "f64" {
            Ok(Dtype::F64)
        } else {
            Err(Error::Unsupported(format!(
                "CUDA tensors hold f32 or f64, not {}",
                T::NAME
            )))
        }
    }

    /// Picks the kernel name for this dtype.
    pub(crate) fn pick(self, f32_name: &'static str, f64_name: &'static str) -> &'static str {
        match self {
            Dtype::F32 => f32_name,
            Dtype::F64 => f64_name,
        }
    }
}

/// The [`ScalarFamily`](crate::ScalarFamily) of device buffers.
pub(crate) struct CudaSliceOf;

impl crate::ScalarFamily for CudaSliceOf {
    type Of<T: Scalar> = CudaSlice<T>;
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
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
fn guarded<R>(what: &str, f: impl FnOnce() -> R) -> Result<R> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        Error::CudaUnavailable(format!(
            "{what}: the CUDA library failed: {}",
            panic_text(p)
        ))
    })
}

fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to open the shared library.
    *PRESENT.get_or_init(|| catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false))
}

fn nvrtc_present() -> bool {
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
fn nvrtc_archs() -> Result<Vec<i32>> {
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
fn toolchain_versions() -> Option<((i32, i32), i32)> {
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

/// Pinned host memory (page-locked, cached) owned by rodl.
pub(crate) struct PinnedBuf {
    ptr: *mut u8,
    len: usize,
}

impl PinnedBuf {
    /// `len` bytes of pinned host memory for transfers on `ctx`'s device.
    /// Running out is [`Error::OutOfMemory`] on the host.
    pub(crate) fn new(ctx: &DeviceCtx, len: usize) -> Result<Self> {
        let what = "pinned staging memory";
        crate::memory::check_host_bytes(what, len as u128)?;
        ctx.bind()?;
        // SAFETY: cuMemHostAlloc of `len` bytes, freed in PinnedBuf::drop.
        let ptr = unsafe { cudarc::driver::result::malloc_host(len.max(1), 0) }.map_err(|e| {
            if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                Error::OutOfMemory {
                    what: what.into(),
                    bytes: len as u128,
                    limit: crate::memory::host_memory_limit(),
                    device: crate::Device::Cpu,
                }
            } else {
                driver_err("allocating pinned staging memory")(e)
            }
        })?;
        Ok(PinnedBuf {
            ptr: ptr as *mut u8,
            len,
        })
    }

    /// The start of the buffer.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Its length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

// SAFETY: the buffer is plain memory, only touched while its owner's mutex is held.
unsafe impl Send for PinnedBuf {}
unsafe impl Sync for PinnedBuf {}

impl Drop for PinnedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated with cuMemHostAlloc; every copy using it was synchronised.
        let _ = unsafe { cudarc::driver::result::free_host(self.ptr as *mut c_void) };
    }
}

/// Two pinned buffers and their events for double-buffered host transfers.
pub(crate) struct Staging {
    bufs: [PinnedBuf; 2],
    events: [CudaEvent; 2],
}

/// Bytes per staging buffer.
pub(crate) const STAGING_CHUNK: usize = 8 << 20;
/// Compiled kernels by (device, source name), then by kernel name.
type KernelTable = HashMap<(usize, &'static str), HashMap<String, CudaFunction>>;

/// Transfers of at least this many bytes go through the pinned staging buffers.
/// (Measured on an H200 host: from 1 MiB on, staged copies are faster both ways; at 1 GiB staged
/// 23.5 / 8.5 GB/s up / down against 8.3 / 1.5 GB/s for direct copies from pageable memory.)
pub(crate) const STAGING_MIN_BYTES: usize = 1 << 20;

/// Everything rodl keeps per CUDA device: context, stream, compiled kernels, memory pool.
///
/// All rodl work on a device is ordered on [`DeviceCtx::stream`]: rodl's own stream, or during
/// [`DeviceCtx::run_on_stream`] the caller's. Other crate modules that launch their own kernels
/// use that stream (so no extra synchronisation is needed) and get their compiled functions from
/// [`DeviceCtx::function`].
pub(crate) struct DeviceCtx {
    id: usize,
    name: String,
    cc: (i32, i32),
    sm_count: u32,
    arch: String,
    /// NVRTC and driver versions for the kernel cache's keys (`None`: no cache).
    versions: Option<((i32, i32), i32)>,
    ctx: Arc<CudaContext>,
    /// rodl's own stream (non-blocking: no implicit order with other libraries' streams).
    stream: Arc<CudaStream>,
    /// The device's default memory pool (stream-ordered allocations), if supported.
    pool: Option<usize>,
    modules: Mutex<HashMap<&'static str, (&'static str, Arc<CudaModule>)>>,
    functions: Mutex<HashMap<&'static str, HashMap<String, CudaFunction>>>,
    staging: Mutex<Option<Staging>>,
    /// Per-block partial sums and the result of a reduction.
    reduce_scratch: Mutex<Option<(CudaSlice<f64>, CudaSlice<f64>)>>,
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

    /// Keeps freed memory in the device's default pool (no release at every synchronisation);
    /// [`DeviceCtx::alloc`] trims the pool when an allocation runs out of memory.
    fn configure_pool(ctx: &Arc<CudaContext>) -> Option<usize> {
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

    /// The device ordinal.
    pub(crate) fn id(&self) -> usize {
        self.id
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

    /// The compiled module of `src` on this device: on first use, loaded from the on-disk kernel
    /// cache ([`kernel_cache`]) or compiled with NVRTC (and then stored in the cache).
    ///
    /// A cached entry that the driver refuses to load is compiled again and overwritten; cache
    /// failures are never errors.
    pub(crate) fn module(&self, src: &KernelSource) -> Result<Arc<CudaModule>> {
        let mut modules = lock(&self.modules);
        if let Some((code, m)) = modules.get(src.name) {
            if *code != src.code {
                return Err(Error::Cuda(format!(
                    "two different kernel sources are registered as {:?}",
                    src.name
                )));
            }
            return Ok(Arc::clone(m));
        }
        let mut options = vec![self.arch.clone()];
        options.extend(src.options.iter().map(|s| s.to_string()));
        let full: String = src.prelude.iter().copied().chain([src.code]).collect();
        let key = self.versions.map(|(nvrtc_version, driver_version)| {
            CacheKey::new(&KeyParts {
                name: src.name,
                source: &full,
                options: &options,
                compute_capability: self.cc,
                nvrtc_version,
                driver_version,
            })
        });
        let compile = || self.compile(src, &full, &options);
        let load = |ptx: &[u8]| self.load_ptx(src, ptx);
        let m = match &key {
            Some(key) => {
                kernel_cache::load_or_compile(kernel_cache::cache_dir(), key, compile, load)?
            }
            None => load(&compile()?)?,
        };
        modules.insert(src.name, (src.code, Arc::clone(&m)));
        Ok(m)
    }

    /// Compiles `full` (the prelude and code of `src`) to PTX with NVRTC; returns the PTX text
    /// (without a terminating NUL).
    fn compile(&self, src: &KernelSource, full: &str, options: &[String]) -> Result<Vec<u8>> {
        let opts = CompileOptions {
            options: options.to_vec(),
            name: Some(format!("{}.cu", src.name)),
            ..Default::default()
        };
        let ptx = guarded("NVRTC", || cudarc::nvrtc::compile_ptx_with_opts(full, opts))?.map_err(
            |e| match e {
                CompileError::CompileError { log, options, .. } => Error::Cuda(format!(
                    "NVRTC could not compile kernels/{}.cu with {options:?}:\n{}",
                    src.name,
                    log.to_string_lossy()
                )),
                e => Error::Cuda(format!("NVRTC failed on kernels/{}.cu: {e}", src.name)),
            },
        )?;
        let mut bytes = match ptx.as_bytes() {
            Some(b) => b.to_vec(),
            None => guarded("NVRTC", || ptx.to_src())?.into_bytes(),
        };
        while bytes.last() == Some(&0) {
            bytes.pop();
        }
        Ok(bytes)
    }

    /// Loads PTX text into the driver as a module of this context.
    fn load_ptx(&self, src: &KernelSource, ptx: &[u8]) -> Result<Arc<CudaModule>> {
        let bad = || Error::Cuda(format!("the PTX of {} is not text", src.name));
        if ptx.contains(&0) {
            return Err(bad());
        }
        let text = std::str::from_utf8(ptx).map_err(|_| bad())?;
        self.ctx
            .load_module(Ptx::from_src(text))
            .map_err(driver_err(&format!("loading the module {}", src.name)))
    }

    /// The kernel `name` of the source `src` on this device (compiled and cached on first use).
    ///
    /// Each thread keeps the kernels it has looked up, so a launch takes no lock once its thread
    /// has launched the kernel before (the shared table's lock is taken on first use only).
    pub(crate) fn function(&self, src: &KernelSource, name: &str) -> Result<CudaFunction> {
        thread_local! {
            static KNOWN: RefCell<KernelTable> = RefCell::new(HashMap::new());
        }
        let key = (self.id, src.name);
        let known = KNOWN.with(|k| k.borrow().get(&key).and_then(|m| m.get(name)).cloned());
        if let Some(f) = known {
            return Ok(f);
        }
        let f = self.shared_function(src, name)?;
        KNOWN.with(|k| {
            k.borrow_mut()
                .entry(key)
                .or_default()
                .insert(name.to_string(), f.clone())
        });
        Ok(f)
    }

    /// [`Self::function`] through the table shared by all threads.
    fn shared_function(&self, src: &KernelSource, name: &str) -> Result<CudaFunction> {
        if let Some(f) = lock(&self.functions)
            .get(src.name)
            .and_then(|m| m.get(name))
        {
            return Ok(f.clone());
        }
        let m = self.module(src)?;
        let f = m
            .load_function(name)
            .map_err(driver_err(&format!("kernel {name} in {}", src.name)))?;
        lock(&self.functions)
            .entry(src.name)
            .or_default()
            .insert(name.to_string(), f.clone());
        Ok(f)
    }

    /// Runs an allocation of `bytes` bytes; on out-of-memory, returns the pool's cached memory
    /// to the device and tries once more. Running out again is [`Error::OutOfMemory`] with
    /// the device's free memory as the limit.
    fn retry_oom<R>(
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
    fn trim_pool(&self) {
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

    /// The pinned staging buffers (allocated on first use).
    pub(crate) fn staging(&self) -> Result<StagingGuard<'_>> {
        let mut g = lock(&self.staging);
        if g.is_none() {
            let alloc = || -> std::result::Result<Staging, DriverError> {
                self.ctx.bind_to_thread()?;
                let buf = || -> std::result::Result<PinnedBuf, DriverError> {
                    // SAFETY: cuMemHostAlloc of STAGING_CHUNK bytes, freed in PinnedBuf::drop.
                    let ptr = unsafe { cudarc::driver::result::malloc_host(STAGING_CHUNK, 0)? };
                    Ok(PinnedBuf {
                        ptr: ptr as *mut u8,
                        len: STAGING_CHUNK,
                    })
                };
                let bufs = [buf()?, buf()?];
                let events = [self.ctx.new_event(None)?, self.ctx.new_event(None)?];
                Ok(Staging { bufs, events })
            };
            *g = Some(alloc().map_err(driver_err("allocating pinned staging memory"))?);
        }
        Ok(StagingGuard {
            guard: g,
            ctx: self,
        })
    }
}

/// Exclusive use of a device's staging buffers.
pub(crate) struct StagingGuard<'a> {
    guard: MutexGuard<'a, Option<Staging>>,
    ctx: &'a DeviceCtx,
}

/// Copies `len` bytes from `src` to `dst` with several threads.
///
/// # Safety
/// `src` and `dst` must be valid for `len` bytes and must not overlap.
pub(crate) unsafe fn par_copy(src: *const u8, dst: *mut u8, len: usize) {
    use rayon::prelude::*;
    const PIECE: usize = 1 << 20;
    // SAFETY: the caller guarantees both ranges are valid for `len` bytes and disjoint.
    let (src, dst) = unsafe {
        (
            std::slice::from_raw_parts(src, len),
            std::slice::from_raw_parts_mut(dst, len),
        )
    };
    dst.par_chunks_mut(PIECE)
        .zip(src.par_chunks(PIECE))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

impl StagingGuard<'_> {
    fn parts(&mut self) -> &mut Staging {
        // The guard is only made after the staging was allocated.
        self.guard.get_or_insert_with(|| unreachable!())
    }

    /// Copies `len` bytes from host memory `src` to device address `dst` through the pinned
    /// buffers (double-buffered: the copy of one chunk into pinned memory overlaps the DMA of
    /// the previous one). Returns when the data is on the device.
    ///
    /// # Safety
    /// `src` must be valid for `len` bytes; `dst` must be a device allocation of at least `len`
    /// bytes in this context, not used by other work meanwhile.
    pub(crate) unsafe fn htod(
        &mut self,
        src: *const u8,
        dst: sys::CUdeviceptr,
        len: usize,
    ) -> Result<()> {
        let ctx = self.ctx;
        let stream = ctx.stream();
        ctx.ctx
            .bind_to_thread()
            .map_err(driver_err("binding the context"))?;
        let st = self.parts();
        let mut off = 0usize;
        let mut k = 0usize;
        while off < len {
            let b = k % 2;
            let n = STAGING_CHUNK.min(len - off);
            st.events[b]
                .synchronize()
                .map_err(driver_err("waiting for a staging buffer"))?;
            par_copy(src.add(off), st.bufs[b].ptr, n);
            sys::cuMemcpyHtoDAsync_v2(
                dst + off as u64,
                st.bufs[b].ptr as *const c_void,
                n,
                stream.cu_stream(),
            )
            .result()
            .map_err(driver_err("host-to-device copy"))?;
            st.events[b]
                .record(&stream)
                .map_err(driver_err("recording a staging event"))?;
            off += n;
            k += 1;
        }
        stream
            .synchronize()
            .map_err(driver_err("synchronising the stream"))
    }

    /// Copies `len` bytes from device address `src` to host memory `dst` through the pinned
    /// buffers (double-buffered). Returns when the data is in `dst`.
    ///
    /// # Safety
    /// `dst` must be valid for writes of `len` bytes; `src` must be a device allocation of at
    /// least `len` bytes in this context whose pending writes are ordered on the device stream.
    pub(crate) unsafe fn dtoh(
        &mut self,
        src: sys::CUdeviceptr,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        let ctx = self.ctx;
        let stream = ctx.stream();
        ctx.ctx
            .bind_to_thread()
            .map_err(driver_err("binding the context"))?;
        let st = self.parts();
        let chunks = len.div_ceil(STAGING_CHUNK);
        let issue = |st: &mut Staging, k: usize| -> Result<()> {
            let b = k % 2;
            let off = k * STAGING_CHUNK;
            let n = STAGING_CHUNK.min(len - off);
            sys::cuMemcpyDtoHAsync_v2(
                st.bufs[b].ptr as *mut c_void,
                src + off as u64,
                n,
                stream.cu_stream(),
            )
            .result()
            .map_err(driver_err("device-to-host copy"))?;
            st.events[b]
                .record(&stream)
                .map_err(driver_err("recording a staging event"))
        };
        if chunks > 0 {
            issue(st, 0)?;
        }
        for k in 0..chunks {
            if k + 1 < chunks {
                issue(st, k + 1)?;
            }
            let b = k % 2;
            st.events[b]
                .synchronize()
                .map_err(driver_err("device-to-host copy"))?;
            let off = k * STAGING_CHUNK;
            let n = STAGING_CHUNK.min(len - off);
            debug_assert!(n <= st.bufs[b].len);
            par_copy(st.bufs[b].ptr, dst.add(off), n);
        }
        Ok(())
    }
}
