//! The L2 norm and the indicator of its unit ball (its conjugate).

use std::sync::Arc;

use super::helpers::{ball_slack, check_io, check_sigma};
use super::{Func, Functional};
use crate::{Element, Result, Scalar, Space};

/// The L2 norm `‖x‖ = √⟨x, x⟩` of the space's (weighted) inner product.
///
/// Gradient `x / ‖x‖` (0 at 0, where 0 is a subgradient); proximal operator
/// `x · max(1 − σ/‖x‖, 0)`; conjugate the indicator of the unit ball, [`IndicatorL2UnitBall`].
///
/// ```
/// use rodl::rn;
/// use rodl::solvers::functional::{Functional, L2Norm};
/// let s = rn::<f64>(&[2])?;
/// let x = s.element_from_vec(vec![3.0, 4.0])?;
/// let f = L2Norm::new(s);
/// assert_eq!(f.value(&x)?, 5.0);
/// assert_eq!(f.proximal(2.5, &x)?.as_slice()?, &[1.5, 2.0]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct L2Norm<T: Scalar> {
    space: Space<T>,
}

impl<T: Scalar> L2Norm<T> {
    /// The L2 norm on `space`.
    pub fn new(space: Space<T>) -> Self {
        Self { space }
    }
}

impl<T: Scalar> Functional<T> for L2Norm<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        self.space.norm(x)
    }
    fn gradient_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let n = self.space.norm(x)?;
        let s = if n > 0.0 { 1.0 / n } else { 0.0 };
        self.space.scaled(T::of(s), x, out)
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "L2Norm")?;
        check_io(&self.space, x, out, "L2Norm proximal")?;
        let n = self.space.norm(x)?;
        let s = if n > sigma { 1.0 - sigma / n } else { 0.0 };
        self.space.scaled(T::of(s), x, out)
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        Ok(Arc::new(IndicatorL2UnitBall::new(self.space.clone())))
    }
    fn name(&self) -> String {
        "L2Norm".into()
    }
}

/// The indicator of the closed unit ball `{x : ‖x‖ ≤ 1}` of the space's norm, the conjugate of
/// [`L2Norm`].
///
/// Points outside by a few rounding units (relative) count as inside, so that projections
/// computed in floating point belong to the ball. Proximal operator: the projection
/// `x / max(‖x‖, 1)`.
pub struct IndicatorL2UnitBall<T: Scalar> {
    space: Space<T>,
}

impl<T: Scalar> IndicatorL2UnitBall<T> {
    /// The unit-ball indicator on `space`.
    pub fn new(space: Space<T>) -> Self {
        Self { space }
    }
}

impl<T: Scalar> Functional<T> for IndicatorL2UnitBall<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        Ok(if self.space.norm(x)? <= 1.0 + ball_slack::<T>() {
            0.0
        } else {
            f64::INFINITY
        })
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "IndicatorL2UnitBall")?;
        check_io(&self.space, x, out, "IndicatorL2UnitBall proximal")?;
        let n = self.space.norm(x)?;
        let s = if n > 1.0 { 1.0 / n } else { 1.0 };
        self.space.scaled(T::of(s), x, out)
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        Ok(Arc::new(L2Norm::new(self.space.clone())))
    }
    fn name(&self) -> String {
        "IndicatorL2UnitBall".into()
    }
}
