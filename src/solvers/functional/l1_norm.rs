//! The L1 norm.

use std::sync::Arc;

use super::helpers::{check_io, check_sigma};
use super::{Func, Functional, IndicatorBox};
use crate::operator::Scratch;
use crate::{Element, Pointwise, Result, Scalar, Space};

/// The L1 norm `‖x‖₁ = ∫ |x|` (the space's weighted sum of `|xᵢ|`; summed over the parts of a
/// product space).
///
/// Gradient `sign(x)` (valid away from zeros); proximal operator soft thresholding
/// `prox_{σ‖·‖₁}(x) = sign(x) max(|x| − σ, 0)`; conjugate the indicator of the box `[−1, 1]`.
///
/// ```
/// use rodl::weighted_rn;
/// use rodl::solvers::functional::{Functional, L1Norm};
/// let s = weighted_rn::<f64>(&[3], 0.5)?;
/// let x = s.element_from_vec(vec![1.0, -2.0, 0.5])?;
/// assert_eq!(L1Norm::new(s).value(&x)?, 1.75);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct L1Norm<T: Scalar> {
    space: Space<T>,
    tmp: Scratch<T>,
}

impl<T: Scalar> L1Norm<T> {
    /// The L1 norm on `space`.
    pub fn new(space: Space<T>) -> Self {
        Self {
            tmp: Scratch::new(space.clone()),
            space,
        }
    }
}

impl<T: Scalar> Functional<T> for L1Norm<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        self.tmp.with(|t| {
            self.space.abs(x, t)?;
            self.space.integral(t)
        })
    }
    fn gradient_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.space.pointwise(Pointwise::Sign, x, out)
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "L1Norm")?;
        check_io(&self.space, x, out, "L1Norm proximal")?;
        self.space
            .pointwise(Pointwise::SoftThreshold(T::of(sigma)), x, out)
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        Ok(Arc::new(IndicatorBox::new(self.space.clone(), -1.0, 1.0)?))
    }
    fn name(&self) -> String {
        "L1Norm".into()
    }
}
