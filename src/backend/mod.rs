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
