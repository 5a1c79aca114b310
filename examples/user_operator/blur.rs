//! The user-defined operator of the `user_operator` example (also compiled by its property
//! test, `tests/user_operator.rs`).

use std::sync::Arc;

use rodl::prelude::*;

/// Detector blur: every line of the data along the last axis (the detector's `u` axis of a
/// sinogram `[angle, u]`) is convolved with a short kernel `w` of odd length `2m + 1`, zero
/// outside the detector:
///
/// ```text
/// (B y)[.., i] = Σₖ w[k] y[.., i + k − m]
/// ```
///
/// Domain and range are the same space, so the weights of its inner product cancel and the
/// adjoint is the correlation with `w`, i.e. the convolution with the reversed kernel. Works on
/// host elements (a GPU element is an error, from `as_slice`).
pub struct DetectorBlur<T: Scalar> {
    space: Space<T>,
    kernel: Vec<f64>,
}

impl<T: Scalar> DetectorBlur<T> {
    /// The blur on `space` with the kernel `kernel` (odd length, finite values).
    pub fn new(space: Space<T>, kernel: Vec<f64>) -> Result<Self> {
        if kernel.len() % 2 == 0 || kernel.iter().any(|w| !w.is_finite()) {
            return Err(Error::invalid(format!(
                "DetectorBlur: the kernel needs an odd length and finite values, got {kernel:?}"
            )));
        }
        if space.shape()?.is_empty() {
            return Err(Error::invalid(
                "DetectorBlur: the space needs at least one axis",
            ));
        }
        Ok(Self { space, kernel })
    }
}

impl<T: Scalar> Operator<T> for DetectorBlur<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }

    fn range(&self) -> &Space<T> {
        &self.space
    }

    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let n = *self.space.shape()?.last().unwrap_or(&1);
        let m = self.kernel.len() / 2;
        let (x, out) = (x.as_slice()?, out.as_slice_mut()?);
        for (line, res) in x.chunks(n).zip(out.chunks_mut(n)) {
            for (i, r) in res.iter_mut().enumerate() {
                let mut acc = 0.0;
                for (k, w) in self.kernel.iter().enumerate() {
                    // the sample i + k − m, when it is on the detector
                    if let Some(j) = (i + k).checked_sub(m).filter(|&j| j < n) {
                        acc += w * line[j].f64();
                    }
                }
                *r = T::of(acc);
            }
        }
        Ok(())
    }
}

impl<T: Scalar> LinearOperator<T> for DetectorBlur<T> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        let reversed = self.kernel.iter().rev().copied().collect();
        Ok(Arc::new(DetectorBlur::new(self.space.clone(), reversed)?))
    }
}
