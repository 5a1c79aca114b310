//! Compute backends behind the spaces and operators: host (rayon) and CUDA.
//!
//! Spaces and operators dispatch on where an element's data lives; solvers never see this module.

pub(crate) mod host;

#[cfg(feature = "cuda")]
pub(crate) mod cuda;
#[cfg(not(feature = "cuda"))]
#[path = "cuda_stub.rs"]
pub(crate) mod cuda;

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

/// Elementwise maps `out = f(x)` with up to two scalar parameters `a`, `b` (the public
/// [`Pointwise`](crate::Pointwise) operations). The discriminant is the opcode of
/// `kernels/pointwise.cu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub(crate) enum MapOp {
    /// `x + a`
    AddScalar = 0,
    /// `max(x, a)`
    MaxScalar = 1,
    /// `min(x, a)`
    MinScalar = 2,
    /// `min(max(x, a), b)`
    Clamp = 3,
    /// `√x`
    Sqrt = 4,
    /// `eˣ`
    Exp = 5,
    /// `ln x`
    Log = 6,
    /// `-1, 0, 1` (NaN stays NaN)
    Sign = 7,
    /// `x²`
    Square = 8,
    /// `1 / x`
    Recip = 9,
    /// `sign(x) max(|x| − a, 0)`
    SoftThreshold = 10,
    /// `xᵃ`
    Pow = 11,
    /// Huber function of `|x|` with parameter `a`
    Huber = 12,
}

/// Elementwise maps `out = f(x, y)` of two tensors (the public [`Pointwise2`](crate::Pointwise2)
/// operations). The discriminant is the opcode of `kernels/pointwise.cu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub(crate) enum Map2Op {
    /// `max(x, y)`
    Max = 0,
    /// `min(x, y)`
    Min = 1,
    /// `x / y` where `y ≠ 0`, else 0
    DivOrZero = 2,
    /// `x ln y`, 0 where `x = 0`
    XLogY = 3,
    /// `x ln(x/y) − x + y` (scipy's `kl_div`)
    KlDiv = 4,
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

pub(crate) fn cuda_check_available(id: usize) -> crate::Result<()> {
    cuda::check_available(id)
}

/// Waits until all work queued on CUDA device `id` has finished.
#[cfg(feature = "cuda")]
pub(crate) fn cuda_synchronize(id: usize) -> crate::Result<()> {
    cuda::device_ctx(id)?.synchronize()
}

/// Runs `f` between two timing events recorded on device `id`'s stream and returns the GPU time
/// between them in milliseconds.
#[cfg(feature = "cuda")]
pub(crate) fn cuda_time(id: usize, f: &mut dyn FnMut() -> crate::Result<()>) -> crate::Result<f64> {
    use cudarc::driver::sys::CUevent_flags;
    let ctx = cuda::device_ctx(id)?;
    let stream = ctx.stream();
    let ev = |what| {
        stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(cuda::driver_err(what))
    };
    let start = ev("recording a timing event")?;
    f()?;
    let end = ev("recording a timing event")?;
    end.synchronize()
        .map_err(cuda::driver_err("waiting for a timing event"))?;
    start
        .elapsed_ms(&end)
        .map(f64::from)
        .map_err(cuda::driver_err("reading a timing event"))
}

#[cfg(not(feature = "cuda"))]
pub(crate) fn cuda_synchronize(id: usize) -> crate::Result<()> {
    cuda::check_available(id)
}

#[cfg(not(feature = "cuda"))]
pub(crate) fn cuda_time(
    id: usize,
    _f: &mut dyn FnMut() -> crate::Result<()>,
) -> crate::Result<f64> {
    cuda::check_available(id).map(|_| 0.0)
}
