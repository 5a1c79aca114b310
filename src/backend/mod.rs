//! Compute backends behind the spaces and operators: host (rayon) and CUDA.
//!
//! Each backend's tensor type implements the traits below — [`BackendStorage`] (vector-space
//! operations), [`PointwiseBackend`] (the [`op`] tables), [`StencilBackend`] (the default
//! operators' stencils) and [`DeviceBackend`] (construction on a device) — so that the stand-in
//! that replaces the CUDA backend when the crate is built without the `cuda` feature is checked
//! by the compiler against the real one. [`crate::storage::Storage`] owns every match between
//! the backends; spaces, operators and solvers never see this module.

pub(crate) mod host;
pub(crate) mod host_or_device;
pub(crate) mod kernel_cache;
pub(crate) mod op;

#[cfg(feature = "cuda")]
pub(crate) mod cuda;
#[cfg(not(feature = "cuda"))]
#[path = "cuda_stub.rs"]
pub(crate) mod cuda;

use ndarray::{ArrayD, ArrayViewD};

pub(crate) use op::{Map2Op, MapOp};

/// Runs `f`, whose device buffers outlive the current call (a cache filled on first use), with
/// rodl's own streams rather than a stream lent by the caller (see
/// [`interop::apply_to_cuda_memory`](crate::interop::apply_to_cuda_memory)); just `f` on the
/// host and where no stream is lent.
pub(crate) fn lasting<R>(f: impl FnOnce() -> Result<R>) -> Result<R> {
    #[cfg(feature = "cuda")]
    {
        cuda::lasting(f)
    }
    #[cfg(not(feature = "cuda"))]
    {
        f()
    }
}

use crate::{Device, Result, Scalar};

/// Elementwise operation `out = op(x, y)`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Binary<T> {
    /// `out = a x + b y`
    Lincomb(T, T),
    /// `out = x * y`
    Mul,
    /// `out = x / y`
    Div,
}

/// Elementwise operation `out = op(x)`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Unary<T> {
    /// `out = a x`
    Scale(T),
    /// `out = |x|`
    Abs,
}

/// Reductions over one or two tensors, accumulated in f64 (unweighted).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reduction {
    /// `sum x y`
    Inner,
    /// `sum x²`
    NormSq,
    /// `sum (x - y)²`
    DistSq,
    /// `sum x`
    Sum,
}

/// A tensor of one backend: its vector-space operations. Operands are tensors of the same
/// backend, device and length (the callers check shapes against the space first).
pub(crate) trait BackendStorage<T: Scalar>: Sized {
    /// The device the data lives on.
    fn device(&self) -> Device;
    /// The tensor shape.
    fn shape(&self) -> &[usize];
    /// A deep copy on the same device.
    fn try_clone(&self) -> Result<Self>;
    /// A copy in host memory.
    fn to_host(&self) -> Result<ArrayD<T>>;
    /// Copies the values `offset..offset + out.len()` (flat, C order; the caller checked the
    /// range) into `out`, blocking until they are there.
    fn copy_range_to(&self, offset: usize, out: &mut [T]) -> Result<()>;
    /// `self = op(x, y)` elementwise.
    fn binary(&mut self, op: Binary<T>, x: &Self, y: &Self) -> Result<()>;
    /// `self = a x + b self`.
    fn axpby(&mut self, a: T, x: &Self, b: T) -> Result<()>;
    /// `self[b·n + i] = factor[i] · x[b·n + i]` with `n = factor`'s length: one factor for
    /// every entry of a batch (`x` and `self` as long as each other, a multiple of `n`).
    fn mul_repeated(&mut self, factor: &Self, x: &Self) -> Result<()>;
    /// `self = op(x)` elementwise.
    fn unary(&mut self, op: Unary<T>, x: &Self) -> Result<()>;
    /// Sets every entry to `v`.
    fn fill(&mut self, v: T) -> Result<()>;
    /// `self *= s`.
    fn scale_inplace(&mut self, s: T) -> Result<()>;
    /// Unweighted reduction accumulated in f64 (`y` is ignored by `NormSq` and `Sum`).
    fn reduce(&self, op: Reduction, y: &Self) -> Result<f64>;
}

/// The pointwise maps of the [`op`] tables.
pub(crate) trait PointwiseBackend<T: Scalar>: BackendStorage<T> {
    /// `self = f(x)` elementwise, `f` given by `op` and its parameters `p`.
    fn map(&mut self, op: MapOp, p: [T; 2], x: &Self) -> Result<()>;
    /// `self = f(self)` elementwise.
    fn map_inplace(&mut self, op: MapOp, p: [T; 2]) -> Result<()>;
    /// `self = f(x, y)` elementwise.
    fn map2(&mut self, op: Map2Op, x: &Self, y: &Self) -> Result<()>;
}

/// The stencils of the default operators. `w` are per-axis weights (`1/h` for the differences,
/// `1/h²` for the Laplacian).
pub(crate) trait StencilBackend<T: Scalar>: BackendStorage<T> {
    /// Forward differences with zero padding: `outs[k] = (x[i + e_k] − x[i]) · w[k]`.
    fn gradient(&self, outs: &mut [&mut Self], w: &[f64]) -> Result<()>;
    /// Backward differences: `out = Σ_k (g_k[i] − g_k[i − e_k]) · w[k]`.
    fn divergence(parts: &[&Self], out: &mut Self, w: &[f64]) -> Result<()>;
    /// `out = centre · x + Σ_k (x[i + e_k] + x[i − e_k]) · w[k]`, zero padded.
    fn laplacian(&self, out: &mut Self, w: &[f64], centre: f64) -> Result<()>;
    /// `out[i] = ‖(parts[0][i], parts[1][i], …)‖_p`.
    fn pointwise_norm(parts: &[&Self], out: &mut Self, exponent: f64) -> Result<()>;
    /// [`Self::gradient`] of a batch: `self` is `[batch, …shape]`, `out` is `[batch, d, …shape]`
    /// (each entry's `d` parts one after the other); shapes as [`check_stencil_batch`] checks.
    fn gradient_batch(&self, out: &mut Self, w: &[f64]) -> Result<()>;
    /// [`Self::divergence`] of a batch: `self` is `[batch, d, …shape]`, `out` `[batch, …shape]`.
    fn divergence_batch(&self, out: &mut Self, w: &[f64]) -> Result<()>;
    /// [`Self::laplacian`] of a batch: both `[batch, …shape]`.
    fn laplacian_batch(&self, out: &mut Self, w: &[f64], centre: f64) -> Result<()>;
}

/// Errors unless a batch of `x` values (into `out`, as many) is whole entries of a factor of `n`.
pub(crate) fn check_repeated(n: usize, x: usize, out: usize) -> Result<()> {
    if n == 0 || x != out || x % n != 0 {
        return Err(crate::Error::invalid(format!(
            "a factor of {n} values for a batch of {x} values into {out}"
        )));
    }
    Ok(())
}

/// Which stencil a batch is for: the shapes of its input and output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StencilBatch {
    /// `[batch, …shape] → [batch, d, …shape]`
    Gradient,
    /// `[batch, d, …shape] → [batch, …shape]`
    Divergence,
    /// `[batch, …shape] → [batch, …shape]`
    Laplacian,
}

/// Errors unless `x` and `out` are the shapes of a batch of `kind` with `w.len()` axes.
pub(crate) fn check_stencil_batch(
    kind: StencilBatch,
    x: &[usize],
    out: &[usize],
    w: &[f64],
) -> Result<()> {
    let (tensor, parts) = match kind {
        StencilBatch::Gradient => (x, out),
        StencilBatch::Divergence => (out, x),
        StencilBatch::Laplacian => (x, out),
    };
    let d = w.len();
    let ok_tensor = tensor.len() == d + 1;
    let want: Vec<usize> = match kind {
        StencilBatch::Laplacian => tensor.to_vec(),
        _ => {
            let mut v = tensor.first().copied().into_iter().collect::<Vec<_>>();
            v.push(d);
            v.extend_from_slice(tensor.get(1..).unwrap_or(&[]));
            v
        }
    };
    if !ok_tensor || parts != want.as_slice() {
        return Err(crate::Error::invalid(format!(
            "{kind:?} of a batch with {d} axes: shapes {x:?} → {out:?} (want {tensor:?} and \
             {want:?}, the batch axis first)"
        )));
    }
    Ok(())
}

/// Making tensors on a device of this backend (`id`: the device ordinal; the host has one).
pub(crate) trait DeviceBackend<T: Scalar>: BackendStorage<T> {
    /// A copy of host data on device `id`.
    fn from_host(id: usize, a: ArrayViewD<'_, T>) -> Result<Self>;
    /// A tensor of zeros on device `id`.
    fn zeros(id: usize, shape: &[usize]) -> Result<Self>;
    /// A copy on device `id` of the same backend.
    fn to_device(&self, id: usize) -> Result<Self>;
}

/// Device-wide calls of a backend: availability, synchronisation, timing.
pub(crate) trait Runtime {
    /// Errors unless device `id` can be used (never panics).
    fn check_available(id: usize) -> Result<()>;
    /// The number of devices present, or why there are none (never panics).
    fn device_count() -> Result<usize>;
    /// Waits until all work queued on device `id` has finished.
    fn synchronize(id: usize) -> Result<()>;
    /// The free and total memory of device `id`, in bytes.
    fn memory_info(id: usize) -> Result<(u64, u64)>;
    /// Runs `f` between two timing events on device `id` and returns the device time between
    /// them in milliseconds.
    fn time(id: usize, f: &mut dyn FnMut() -> Result<()>) -> Result<f64>;
    /// Runs `f` with device `id`'s work on the calling thread queued on another library's
    /// stream `stream` of that device: after the work queued there so far, in that stream's
    /// order, and ordered with rodl's own stream by events, without synchronising host or
    /// device.
    ///
    /// # Safety
    /// `stream` must be a live CUDA stream of device `id`'s primary context (or 0, the
    /// default stream) that stays alive until the work queued on it is done.
    unsafe fn run_on_stream(
        id: usize,
        stream: u64,
        f: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()>;
}
