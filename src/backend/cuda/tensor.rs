//! Tensors in GPU memory and their vector-space operations.

use std::sync::Arc;

use cudarc::driver::{
    result, sys, CudaSlice, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg,
};
use ndarray::{ArrayD, ArrayViewD, IxDyn};

use super::context::{device_ctx, driver_err, DeviceCtx, Dtype, STAGING_MIN_BYTES, VECTOR_OPS};
use crate::backend::{BackendStorage, Binary, DeviceBackend, Reduction, Unary};
use crate::{Device, Error, Result, Scalar};

/// A C-ordered tensor of `f32` or `f64` in the memory of one CUDA device.
///
/// All work on it is ordered on its device's stream ([`DeviceCtx::stream`]). Other crate modules
/// reach the data with [`DeviceTensor::slice`] / [`DeviceTensor::slice_mut`] (to pass to their own
/// kernels) and wrap their results with [`DeviceTensor::from_slice`].
pub(crate) struct DeviceTensor<T> {
    ctx: Arc<DeviceCtx>,
    buf: CudaSlice<T>,
    shape: Vec<usize>,
    len: usize,
    dtype: Dtype,
}

fn numel(shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |a, &n| a.checked_mul(n))
        .ok_or_else(|| Error::invalid(format!("shape {shape:?} overflows usize")))
}

/// Launches a kernel and maps the error.
macro_rules! launch {
    ($builder:expr, $cfg:expr, $what:expr) => {{
        // SAFETY: the kernels' signatures match the argument lists built by the callers, and
        // every buffer is at least as long as the element count passed with it.
        unsafe { $builder.launch($cfg) }
            .map(|_| ())
            .map_err(driver_err($what))
    }};
}

impl<T> Drop for DeviceTensor<T> {
    fn drop(&mut self) {
        // The buffer is freed (stream-ordered) right after this: its context must be current on
        // this thread, or cudarc records an error that a later call would report.
        let _ = self.ctx.context().bind_to_thread();
    }
}

impl<T: Scalar> DeviceTensor<T> {
    /// Uninitialised tensor of `shape` on the device of `ctx` (callers overwrite every entry).
    pub(crate) fn uninit(ctx: &Arc<DeviceCtx>, shape: &[usize]) -> Result<Self> {
        let dtype = Dtype::of::<T>()?;
        let len = numel(shape)?;
        let buf = ctx.alloc::<T>(len)?;
        Ok(Self {
            ctx: Arc::clone(ctx),
            buf,
            shape: shape.to_vec(),
            len,
            dtype,
        })
    }

    /// Wraps device memory (allocated on `ctx`'s stream, e.g. with [`DeviceCtx::alloc`]) as a
    /// tensor of `shape`.
    pub(crate) fn from_slice(
        ctx: &Arc<DeviceCtx>,
        buf: CudaSlice<T>,
        shape: &[usize],
    ) -> Result<Self> {
        let dtype = Dtype::of::<T>()?;
        let len = numel(shape)?;
        if buf.len() < len || buf.ordinal() != ctx.id() {
            return Err(Error::invalid(format!(
                "device buffer of {} values on cuda:{} cannot hold shape {shape:?} on cuda:{}",
                buf.len(),
                buf.ordinal(),
                ctx.id()
            )));
        }
        Ok(Self {
            ctx: Arc::clone(ctx),
            buf,
            shape: shape.to_vec(),
            len,
            dtype,
        })
    }

    /// Wraps memory that another library owns (at device address `ptr` on device `id`, at
    /// least `shape`'s entries) without taking it over: rodl reads and writes it but never
    /// frees it, provided the tensor ends in [`release_borrowed`](Self::release_borrowed)
    /// instead of being dropped.
    ///
    /// # Safety
    /// `ptr` must address a live allocation of device `id` holding `shape`'s entries of `T`,
    /// and the tensor must end in [`release_borrowed`](Self::release_borrowed).
    pub(crate) unsafe fn borrow_raw(id: usize, ptr: u64, shape: &[usize]) -> Result<Self> {
        // Everything that can fail comes before the wrapper exists: dropping it would free
        // memory rodl does not own.
        let dtype = Dtype::of::<T>()?;
        let len = numel(shape)?;
        let ctx = device_ctx(id)?;
        ctx.bind()?;
        if ptr == 0 && len > 0 {
            return Err(Error::invalid("a null device pointer cannot hold data"));
        }
        // SAFETY: the caller guarantees a live allocation of `len` values of `T` on this
        // device; the slice is given back by `release_borrowed`, never freed.
        let buf = unsafe { ctx.stream().upgrade_device_ptr::<T>(ptr, len) };
        Ok(Self {
            ctx,
            buf,
            shape: shape.to_vec(),
            len,
            dtype,
        })
    }

    /// Gives a borrowed tensor back without freeing its memory; returns its device address.
    pub(crate) fn release_borrowed(self) -> u64 {
        let me = std::mem::ManuallyDrop::new(self);
        let _ = me.ctx.context().bind_to_thread();
        // SAFETY: each field is moved out exactly once and `me` is never used again (it is a
        // ManuallyDrop, so its own Drop does not run); the buffer is leaked, not freed.
        let (buf, ctx, shape) = unsafe {
            (
                std::ptr::read(&me.buf),
                std::ptr::read(&me.ctx),
                std::ptr::read(&me.shape),
            )
        };
        drop(shape);
        let ptr = buf.leak();
        drop(ctx);
        ptr
    }

    /// The device address of the data (for work queued on the device's stream, which orders
    /// it after the tensor's earlier work).
    pub(crate) fn device_addr(&self) -> u64 {
        self.buf.device_ptr(&self.ctx.stream()).0
    }

    /// The ordinal of the tensor's GPU.
    pub(crate) fn device_ordinal(&self) -> usize {
        self.ctx.id()
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The scalar type of the entries.
    pub(crate) fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// The device context (stream, kernels) of the tensor's device.
    pub(crate) fn ctx(&self) -> &Arc<DeviceCtx> {
        &self.ctx
    }

    /// The data, for passing to kernels (`.arg(t.slice())`); C order, [`len`](Self::len) values
    /// (the allocation may hold one more when the tensor is empty).
    pub(crate) fn slice(&self) -> &CudaSlice<T> {
        &self.buf
    }

    /// The data, for kernels that write it.
    pub(crate) fn slice_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.buf
    }

    /// Errors unless `other` is on this tensor's device.
    pub(crate) fn check_same_device(&self, other: &Self, what: &str) -> Result<()> {
        if other.ctx.id() != self.ctx.id() {
            return Err(Error::device_mismatch(what, self.device(), other.device()));
        }
        Ok(())
    }

    fn check_operand(&self, other: &Self, what: &str) -> Result<()> {
        self.check_same_device(other, what)?;
        if other.len != self.len {
            return Err(Error::shape(what, &self.shape, &other.shape));
        }
        Ok(())
    }

    fn cfg(&self) -> LaunchConfig {
        self.ctx.launch_cfg(self.len)
    }

    /// [`to_host`](Self::to_host), through the pinned staging buffers or directly.
    fn to_host_via(&self, staged: bool) -> Result<ArrayD<T>> {
        let n = self.len;
        let bytes = n * std::mem::size_of::<T>();
        let mut v: Vec<T> = Vec::new();
        v.try_reserve_exact(n).map_err(|e| {
            Error::invalid(format!("cannot allocate {bytes} bytes of host memory: {e}"))
        })?;
        // The copy below is the memory's first write: fewer page faults on huge pages.
        crate::memory::advise_huge_pages(v.spare_capacity_mut());
        // SAFETY: `v` has capacity for the `n` values, which the copy writes.
        unsafe { self.copy_values_to(0, n, v.as_mut_ptr(), staged)? };
        // SAFETY: all `n` values were written by the completed copy.
        unsafe { v.set_len(n) };
        ArrayD::from_shape_vec(IxDyn(&self.shape), v).map_err(|e| Error::invalid(e.to_string()))
    }

    /// Copies the `n` values from `offset` on into host memory at `dst`, through the pinned
    /// staging buffers or directly, and returns when they are there.
    ///
    /// # Safety
    /// `dst` must be valid for writes of `n` values; `offset + n` at most the tensor's length.
    unsafe fn copy_values_to(
        &self,
        offset: usize,
        n: usize,
        dst: *mut T,
        staged: bool,
    ) -> Result<()> {
        let size = std::mem::size_of::<T>();
        let bytes = n * size;
        self.ctx.bind()?;
        let stream = &self.ctx.stream();
        let (src, _r) = self.buf.device_ptr(stream);
        let src = src + (offset * size) as u64;
        if staged {
            let mut st = self.ctx.staging()?;
            // SAFETY: `dst` takes `bytes` bytes (the caller); the source holds them.
            unsafe { st.dtoh(src, dst as *mut u8, bytes)? };
        } else if bytes > 0 {
            // SAFETY: as above; synchronised before the caller reads `dst`.
            unsafe {
                sys::cuMemcpyDtoHAsync_v2(
                    dst as *mut std::ffi::c_void,
                    src,
                    bytes,
                    stream.cu_stream(),
                )
                .result()
                .map_err(driver_err("device-to-host copy"))?;
            }
            self.ctx.synchronize()?;
        }
        drop(_r);
        Ok(())
    }

    /// [`from_host`](Self::from_host), through the pinned staging buffers or directly.
    fn from_host_via(id: usize, a: ArrayViewD<'_, T>, staged: bool) -> Result<Self> {
        Dtype::of::<T>()?;
        let ctx = device_ctx(id)?;
        let a = a.as_standard_layout();
        let data = a
            .as_slice()
            .ok_or_else(|| Error::invalid("host data is not contiguous"))?;
        let mut out = Self::uninit(&ctx, a.shape())?;
        let bytes = std::mem::size_of_val(data);
        ctx.bind()?;
        let stream = &ctx.stream();
        let (dst, _w) = out.buf.device_ptr_mut(stream);
        if staged {
            let mut st = ctx.staging()?;
            // SAFETY: `data` holds `bytes` bytes, the destination as many.
            unsafe { st.htod(data.as_ptr() as *const u8, dst, bytes)? };
        } else if bytes > 0 {
            // SAFETY: as above; synchronised before `data` may go away.
            unsafe {
                sys::cuMemcpyHtoDAsync_v2(
                    dst,
                    data.as_ptr() as *const std::ffi::c_void,
                    bytes,
                    stream.cu_stream(),
                )
                .result()
                .map_err(driver_err("host-to-device copy"))?;
            }
            ctx.synchronize()?;
        }
        drop(_w);
        Ok(out)
    }

    fn memset_zero(&mut self) -> Result<()> {
        self.ctx.bind()?;
        let stream = self.ctx.stream();
        let bytes = self.len * std::mem::size_of::<T>();
        let (dst, _w) = self.buf.device_ptr_mut(&stream);
        // SAFETY: the allocation holds `bytes` bytes; all-zero bits are 0.0.
        unsafe { result::memset_d8_async(dst, 0, bytes, stream.cu_stream()) }
            .map_err(driver_err("clearing device memory"))
    }
}

impl<T: Scalar> BackendStorage<T> for DeviceTensor<T> {
    /// The device the data lives on.
    fn device(&self) -> Device {
        Device::Cuda(self.ctx.id())
    }

    /// The tensor shape.
    fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// A deep copy on the same device.
    fn try_clone(&self) -> Result<Self> {
        let mut out = Self::uninit(&self.ctx, &self.shape)?;
        self.ctx.bind()?;
        let stream = &self.ctx.stream();
        let bytes = self.len * std::mem::size_of::<T>();
        let (src, _r) = self.buf.device_ptr(stream);
        let (dst, _w) = out.buf.device_ptr_mut(stream);
        // SAFETY: both allocations hold at least `bytes` bytes.
        unsafe { result::memcpy_dtod_async(dst, src, bytes, stream.cu_stream()) }
            .map_err(driver_err("device-to-device copy"))?;
        drop((_r, _w));
        Ok(out)
    }

    /// A copy in host memory (blocks until the copy is done).
    fn to_host(&self) -> Result<ArrayD<T>> {
        self.to_host_via(self.len * std::mem::size_of::<T>() >= STAGING_MIN_BYTES)
    }

    /// Copies a range of values into host memory (blocks until the copy is done).
    fn copy_range_to(&self, offset: usize, out: &mut [T]) -> Result<()> {
        let staged = std::mem::size_of_val(out) >= STAGING_MIN_BYTES;
        // SAFETY: `out` takes its length of values; the caller checked the range.
        unsafe { self.copy_values_to(offset, out.len(), out.as_mut_ptr(), staged) }
    }

    /// `self = op(x, y)` elementwise.
    fn binary(&mut self, op: Binary<T>, x: &Self, y: &Self) -> Result<()> {
        self.check_operand(x, "binary operation")?;
        self.check_operand(y, "binary operation")?;
        let ctx = Arc::clone(&self.ctx);
        let cfg = self.cfg();
        let n = self.len as u64;
        let dt = self.dtype;
        match op {
            Binary::Lincomb(a, b) => {
                let f = ctx.function(&VECTOR_OPS, dt.pick("lincomb_f32", "lincomb_f64"))?;
                let (a, b) = (a.f64(), b.f64());
                let stream = ctx.stream();
                let mut l = stream.launch_builder(&f);
                l.arg(&mut self.buf)
                    .arg(&x.buf)
                    .arg(&y.buf)
                    .arg(&a)
                    .arg(&b)
                    .arg(&n);
                launch!(l, cfg, "lincomb kernel")
            }
            Binary::Mul | Binary::Div => {
                let name = match op {
                    Binary::Mul => dt.pick("mul_f32", "mul_f64"),
                    _ => dt.pick("div_f32", "div_f64"),
                };
                let f = ctx.function(&VECTOR_OPS, name)?;
                let stream = ctx.stream();
                let mut l = stream.launch_builder(&f);
                l.arg(&mut self.buf).arg(&x.buf).arg(&y.buf).arg(&n);
                launch!(l, cfg, name)
            }
        }
    }

    /// `self[b·n + i] = factor[i] · x[b·n + i]`, one launch for the whole batch.
    fn mul_repeated(&mut self, factor: &Self, x: &Self) -> Result<()> {
        self.check_operand(x, "repeated multiplication")?;
        self.check_same_device(factor, "repeated multiplication: the factor")?;
        crate::backend::check_repeated(factor.len, x.len, self.len)?;
        let ctx = Arc::clone(&self.ctx);
        let cfg = self.cfg();
        let (n, entry) = (self.len as u64, factor.len as u64);
        let name = self.dtype.pick("mul_rep_f32", "mul_rep_f64");
        let f = ctx.function(&VECTOR_OPS, name)?;
        let stream = ctx.stream();
        let mut l = stream.launch_builder(&f);
        l.arg(&mut self.buf)
            .arg(&factor.buf)
            .arg(&x.buf)
            .arg(&n)
            .arg(&entry);
        launch!(l, cfg, name)
    }

    /// `self = a x + b self`.
    fn axpby(&mut self, a: T, x: &Self, b: T) -> Result<()> {
        self.check_operand(x, "axpby")?;
        let ctx = Arc::clone(&self.ctx);
        let f = ctx.function(&VECTOR_OPS, self.dtype.pick("axpby_f32", "axpby_f64"))?;
        let (a, b, n) = (a.f64(), b.f64(), self.len as u64);
        let cfg = self.cfg();
        let stream = ctx.stream();
        let mut l = stream.launch_builder(&f);
        l.arg(&x.buf).arg(&mut self.buf).arg(&a).arg(&b).arg(&n);
        launch!(l, cfg, "axpby kernel")
    }

    /// `self = op(x)` elementwise.
    fn unary(&mut self, op: Unary<T>, x: &Self) -> Result<()> {
        self.check_operand(x, "unary operation")?;
        let ctx = Arc::clone(&self.ctx);
        let n = self.len as u64;
        let cfg = self.cfg();
        match op {
            Unary::Scale(s) => {
                let f = ctx.function(&VECTOR_OPS, self.dtype.pick("scale_f32", "scale_f64"))?;
                let s = s.f64();
                let stream = ctx.stream();
                let mut l = stream.launch_builder(&f);
                l.arg(&mut self.buf).arg(&x.buf).arg(&s).arg(&n);
                launch!(l, cfg, "scale kernel")
            }
            Unary::Abs => {
                let f = ctx.function(&VECTOR_OPS, self.dtype.pick("abs_f32", "abs_f64"))?;
                let stream = ctx.stream();
                let mut l = stream.launch_builder(&f);
                l.arg(&mut self.buf).arg(&x.buf).arg(&n);
                launch!(l, cfg, "abs kernel")
            }
        }
    }

    /// Sets every entry to `v`.
    fn fill(&mut self, v: T) -> Result<()> {
        if v == T::zero() && v.is_sign_positive() {
            return self.memset_zero();
        }
        let ctx = Arc::clone(&self.ctx);
        let f = ctx.function(&VECTOR_OPS, self.dtype.pick("fill_f32", "fill_f64"))?;
        let (v, n) = (v.f64(), self.len as u64);
        let cfg = self.cfg();
        let stream = ctx.stream();
        let mut l = stream.launch_builder(&f);
        l.arg(&mut self.buf).arg(&v).arg(&n);
        launch!(l, cfg, "fill kernel")
    }

    /// `self *= s`.
    fn scale_inplace(&mut self, s: T) -> Result<()> {
        let ctx = Arc::clone(&self.ctx);
        let f = ctx.function(
            &VECTOR_OPS,
            self.dtype.pick("scale_inplace_f32", "scale_inplace_f64"),
        )?;
        let (s, n) = (s.f64(), self.len as u64);
        let cfg = self.cfg();
        let stream = ctx.stream();
        let mut l = stream.launch_builder(&f);
        l.arg(&mut self.buf).arg(&s).arg(&n);
        launch!(l, cfg, "scale kernel")
    }

    /// Unweighted reduction accumulated in f64 (`y` is ignored by `NormSq` and `Sum`); the one
    /// resulting number is copied to the host.
    fn reduce(&self, op: Reduction, y: &Self) -> Result<f64> {
        self.check_operand(y, "reduction")?;
        let ctx = &self.ctx;
        ctx.bind()?;
        let op_code: i32 = match op {
            Reduction::Inner => 0,
            Reduction::NormSq => 1,
            Reduction::DistSq => 2,
            Reduction::Sum => 3,
        };
        let cfg = ctx.launch_cfg(self.len);
        let m = cfg.grid_dim.0 as u64;
        let n = self.len as u64;
        let f = ctx.function(
            &VECTOR_OPS,
            self.dtype.pick("reduce_partial_f32", "reduce_partial_f64"),
        )?;
        let g = ctx.function(&VECTOR_OPS, "reduce_final")?;
        let one_block = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1024, 1, 1),
            shared_mem_bytes: 0,
        };
        let v = ctx.with_reduce_scratch(|partial, total| {
            let stream = ctx.stream();
            let mut l = stream.launch_builder(&f);
            l.arg(&self.buf)
                .arg(&y.buf)
                .arg(&n)
                .arg(&op_code)
                .arg(&mut *partial);
            launch!(l, cfg, "reduction kernel")?;
            let stream = ctx.stream();
            let mut l = stream.launch_builder(&g);
            l.arg(&*partial).arg(&m).arg(&mut *total);
            launch!(l, one_block, "final reduction kernel")?;
            ctx.stream()
                .clone_dtoh(&*total)
                .map_err(driver_err("copying a reduction result"))
        })?;
        v.first()
            .copied()
            .ok_or_else(|| Error::Cuda("empty reduction result".into()))
    }
}

impl<T: Scalar> DeviceBackend<T> for DeviceTensor<T> {
    /// A copy of host data on CUDA device `id` (blocks until the copy is done).
    fn from_host(id: usize, a: ArrayViewD<'_, T>) -> Result<Self> {
        let staged = a.len() * std::mem::size_of::<T>() >= STAGING_MIN_BYTES;
        Self::from_host_via(id, a, staged)
    }

    /// A tensor of zeros on CUDA device `id`.
    fn zeros(id: usize, shape: &[usize]) -> Result<Self> {
        Dtype::of::<T>()?;
        let ctx = device_ctx(id)?;
        let mut out = Self::uninit(&ctx, shape)?;
        out.memset_zero()?;
        Ok(out)
    }

    /// A copy on CUDA device `id` (a peer copy between different devices).
    fn to_device(&self, id: usize) -> Result<Self> {
        if id == self.ctx.id() {
            return self.try_clone();
        }
        let dst_ctx = device_ctx(id)?;
        let mut out = Self::uninit(&dst_ctx, &self.shape)?;
        self.ctx.bind()?;
        let bytes = self.len * std::mem::size_of::<T>();
        // The source must be complete before the destination's stream reads it.
        self.ctx.synchronize()?;
        let src_stream = &self.ctx.stream();
        let dst_stream = &dst_ctx.stream();
        let (src, _r) = self.buf.device_ptr(src_stream);
        dst_ctx.bind()?;
        let (dst, _w) = out.buf.device_ptr_mut(dst_stream);
        // SAFETY: both allocations hold `bytes` bytes in their contexts.
        unsafe {
            sys::cuMemcpyPeerAsync(
                dst,
                dst_ctx.context().cu_ctx(),
                src,
                self.ctx.context().cu_ctx(),
                bytes,
                dst_stream.cu_stream(),
            )
            .result()
            .map_err(driver_err("peer copy between GPUs"))?;
        }
        drop((_r, _w));
        dst_ctx.synchronize()?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use ndarray::{ArrayD, IxDyn};

    use super::DeviceTensor;
    use crate::backend::cuda::device_ctx;

    /// Both transfer paths give the same data; prints their throughput (`--nocapture`) so that
    /// [`STAGING_MIN_BYTES`](super::STAGING_MIN_BYTES) can be judged. Skipped without a GPU
    /// (tests/cuda_backend.rs is the suite that requires one).
    #[test]
    fn staged_and_direct_transfers_agree() {
        if let Err(e) = device_ctx(0) {
            eprintln!("no usable GPU, skipped: {e}");
            return;
        }
        for n in [1usize << 10, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 28] {
            let a = ArrayD::from_shape_fn(IxDyn(&[n]), |i| (i[0] % 65521) as f32);
            let mut line = format!("transfer {:>10} B:", n * 4);
            for staged in [false, true] {
                // Warm-up, then timed.
                DeviceTensor::from_host_via(0, a.view(), staged).unwrap();
                let t0 = Instant::now();
                let d = DeviceTensor::from_host_via(0, a.view(), staged).unwrap();
                let up = t0.elapsed().as_secs_f64();
                let t0 = Instant::now();
                let b = d.to_host_via(staged).unwrap();
                let down = t0.elapsed().as_secs_f64();
                assert!(a == b, "round trip (staged: {staged}) changed the data");
                let gb = (n * 4) as f64 / 1e9;
                line += &format!(
                    "  {}: up {:6.1} GB/s, down {:6.1} GB/s",
                    if staged { "staged" } else { "direct" },
                    gb / up,
                    gb / down
                );
            }
            eprintln!("{line}");
        }
    }
}
