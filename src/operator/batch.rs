//! Batched forms of operators: one pass over a whole batch of inputs.

use crate::{Element, Result, Scalar};

/// An operator's batched form: `out[b] = op(x[b])` for every entry `b` of a batch, computed in
/// one pass (on a GPU, one sequence of launches with a batch axis in the kernels instead of one
/// per entry). An operator offers it through [`Operator::batched`](crate::Operator::batched);
/// [`interop::apply_to_cuda_memory`](crate::interop::apply_to_cuda_memory) uses it, and applies
/// the operator entry by entry where there is none.
///
/// The CUDA ray transform and its adjoint have one for 2D geometries and for 3D detectors of
/// at least 32 rows (on whole volumes with 32-bit indices), and so does the FBP filter
/// ([`FbpFilter`](crate::tomo::FbpFilter), on every device), and the finite-difference operators
/// ([`Gradient`](crate::Gradient), [`Divergence`](crate::Divergence),
/// [`Laplacian`](crate::Laplacian): one launch per batch on a GPU) and the
/// [`MultiplyOperator`](crate::MultiplyOperator) of a tensor space. Scalar multiples of an
/// operator that has one, and compositions and sums of two that have one (through a space with
/// a batched form), have one too: one pass of each factor over the whole batch (so FBP,
/// `A* ∘ filter`, has one where the ray transform does, and `Gradient* ∘ Gradient` has one).
pub trait BatchedOperator<T: Scalar>: Send + Sync {
    /// The most entries one call of [`BatchedOperator::apply_batch`] takes (at least 1).
    fn max_batch(&self) -> usize;

    /// Computes `out[b] = op(x[b])` for `batch` entries: `x` is a tensor of shape
    /// `domain.batch_shape(batch)` and `out` one of shape `range.batch_shape(batch)`
    /// ([`Space::batch_shape`](crate::Space::batch_shape): `[batch, …shape]`, or
    /// `[batch, parts, …shape]` for a power space), both on the operator's device. Errors for a batch of 0 or above [`BatchedOperator::max_batch`] and
    /// for tensors of other shapes or devices; `out` is then unspecified.
    fn apply_batch(&self, x: &Element<T>, out: &mut Element<T>, batch: usize) -> Result<()>;
}

/// Errors unless `x` and `out` are batches of `batch` entries of `domain` and `range` — one
/// tensor each of the space's [`Space::batch_shape`](crate::Space::batch_shape), on the space's
/// device — and `batch` is not 0 (`what`: the operation, for the message).
pub(crate) fn check_batch_elements<T: Scalar>(
    what: &str,
    (domain, range): (&crate::Space<T>, &crate::Space<T>),
    x: &Element<T>,
    out: &Element<T>,
    batch: usize,
) -> Result<()> {
    if batch == 0 {
        return Err(crate::Error::invalid(format!("{what}: an empty batch")));
    }
    for (e, s, side) in [(x, domain, "input"), (out, range, "output")] {
        let want = s.batch_shape(batch)?;
        if e.shape()? != want.as_slice() {
            return Err(crate::Error::Shape {
                context: format!("{what}: the {side}"),
                expected: want,
                got: e.shape()?.to_vec(),
            });
        }
        if e.device() != s.device() {
            return Err(crate::Error::device_mismatch(
                format!("{what}: the {side}"),
                s.device(),
                e.device(),
            ));
        }
    }
    Ok(())
}
