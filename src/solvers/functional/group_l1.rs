//! The group L1 norm of vector fields (isotropic total variation with a gradient) and its
//! conjugate, the indicator of the pointwise unit ball.

use std::sync::Arc;

use super::helpers::{ball_slack, check_io, check_sigma, Magnitude};
use super::{Func, Functional};
use crate::{Element, Pointwise, Result, Scalar, Space};

/// The group L1 norm `∫ |x|₂` of a vector field `x = (x₁, …, x_d)` in a power space `X^d`,
/// `|x|₂ = (Σₖ xₖ²)^{1/2}` pointwise (ODL's `GroupL1Norm` with exponent 2). On a tensor space
/// it is the L1 norm.
///
/// Composed with [`Gradient`](crate::Gradient) it is the isotropic total variation. Gradient
/// `x / |x|₂` (0 where `|x|₂ = 0`); proximal operator the pointwise shrinkage
/// `x · max(1 − σ/|x|₂, 0)`; conjugate the indicator of the pointwise unit ball,
/// [`IndicatorGroupLinfUnitBall`].
///
/// ```
/// use rodl::rn;
/// use rodl::solvers::functional::{Functional, GroupL1Norm};
/// let s = rn::<f64>(&[2])?;
/// let v = s.power(2)?;
/// let x = v.product_element(vec![
///     s.element_from_vec(vec![3.0, 0.0])?,
///     s.element_from_vec(vec![4.0, 1.0])?,
/// ])?;
/// assert_eq!(GroupL1Norm::new(v)?.value(&x)?, 6.0); // |(3, 4)| + |(0, 1)|
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct GroupL1Norm<T: Scalar> {
    space: Space<T>,
    mag: Magnitude<T>,
}

impl<T: Scalar> GroupL1Norm<T> {
    /// The group L1 norm on a power space of a tensor space (or a tensor space).
    pub fn new(space: Space<T>) -> Result<Self> {
        Ok(Self {
            mag: Magnitude::new(&space, "GroupL1Norm")?,
            space,
        })
    }
}

impl<T: Scalar> Functional<T> for GroupL1Norm<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        self.mag.with_field(|m| {
            self.mag.compute(x, m)?;
            self.mag.field_space().integral(m)
        })
    }
    fn gradient_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.mag.with_field(|m| {
            self.mag.compute(x, m)?;
            self.mag.divide_by(x, m, out)
        })
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "GroupL1Norm")?;
        check_io(&self.space, x, out, "GroupL1Norm proximal")?;
        let f = self.mag.field_space();
        self.mag.with_field(|m| {
            self.mag.compute(x, m)?;
            // m ← 1 − σ / max(m, σ) = max(1 − σ/m, 0)
            f.pointwise_inplace(Pointwise::MaxScalar(T::of(sigma)), m)?;
            f.pointwise_inplace(Pointwise::Recip, m)?;
            f.scale(T::of(-sigma), m)?;
            f.pointwise_inplace(Pointwise::AddScalar(T::one()), m)?;
            self.mag.scale_by(m, x, out)
        })
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        Ok(Arc::new(IndicatorGroupLinfUnitBall::new(
            self.space.clone(),
        )?))
    }
    fn name(&self) -> String {
        "GroupL1Norm".into()
    }
}

/// The indicator of the pointwise unit ball `{y : |y|₂ ≤ 1 everywhere}` of a vector field (the
/// unit ball of the group L∞ norm), the conjugate of [`GroupL1Norm`].
///
/// Points outside by a few rounding units count as inside. Proximal operator: the pointwise
/// projection `y / max(|y|₂, 1)`.
pub struct IndicatorGroupLinfUnitBall<T: Scalar> {
    space: Space<T>,
    mag: Magnitude<T>,
}

impl<T: Scalar> IndicatorGroupLinfUnitBall<T> {
    /// The indicator on a power space of a tensor space (or a tensor space: the box [−1, 1]).
    pub fn new(space: Space<T>) -> Result<Self> {
        Ok(Self {
            mag: Magnitude::new(&space, "IndicatorGroupLinfUnitBall")?,
            space,
        })
    }
}

impl<T: Scalar> Functional<T> for IndicatorGroupLinfUnitBall<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        let f = self.mag.field_space();
        self.mag.with_field(|m| {
            self.mag.compute(x, m)?;
            // ∫ max(|x| − (1 + slack), 0) is positive exactly when some |x| exceeds the bound.
            let bound = T::of(1.0 + ball_slack::<T>());
            f.pointwise_inplace(Pointwise::AddScalar(-bound), m)?;
            f.pointwise_inplace(Pointwise::MaxScalar(T::zero()), m)?;
            Ok(if f.integral(m)? > 0.0 {
                f64::INFINITY
            } else {
                0.0
            })
        })
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "IndicatorGroupLinfUnitBall")?;
        check_io(&self.space, x, out, "IndicatorGroupLinfUnitBall proximal")?;
        self.mag.with_field(|m| {
            self.mag.compute(x, m)?;
            self.mag
                .field_space()
                .pointwise_inplace(Pointwise::MaxScalar(T::one()), m)?;
            self.mag.divide_by(x, m, out)
        })
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        Ok(Arc::new(GroupL1Norm::new(self.space.clone())?))
    }
    fn name(&self) -> String {
        "IndicatorGroupLinfUnitBall".into()
    }
}
