//! The Huber functional (a smoothed L1 / group L1 norm).

use std::sync::Arc;

use super::helpers::{check_io, check_sigma, Magnitude};
use super::{Func, Functional, IndicatorBox, IndicatorGroupLinfUnitBall, QuadraticPerturbation};
use crate::{Element, Error, Pointwise, Result, Scalar, Space};

/// ODL's Huber functional `f(x) = ∫ h_γ(|x|)` with
/// `h_γ(t) = t²/(2γ)` for `t ≤ γ` and `t − γ/2` beyond; `|x|` is the absolute value on a tensor
/// space and the pointwise Euclidean norm over the components on a power space (a smoothed
/// [`GroupL1Norm`](super::GroupL1Norm)).
///
/// It is the Moreau envelope of the (group) L1 norm with parameter `γ`, so it is differentiable
/// with a `1/γ`-Lipschitz gradient `x / max(|x|, γ)`. Proximal operator
/// `x · (1 − σ / max(|x|, γ + σ))`; conjugate the indicator of the (pointwise) unit ball plus
/// `γ/2 ‖·‖²`.
///
/// ```
/// use rodl::rn;
/// use rodl::solvers::functional::{Functional, Huber};
/// let s = rn::<f64>(&[2])?;
/// let x = s.element_from_vec(vec![0.5, -3.0])?;
/// // 0.5²/2 + (3 − 1/2)
/// assert_eq!(Huber::new(s, 1.0)?.value(&x)?, 0.125 + 2.5);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct Huber<T: Scalar> {
    space: Space<T>,
    gamma: f64,
    mag: Magnitude<T>,
}

impl<T: Scalar> Huber<T> {
    /// The Huber functional with parameter `gamma > 0` on a tensor space or a power space of
    /// one.
    pub fn new(space: Space<T>, gamma: f64) -> Result<Self> {
        if !(gamma.is_finite() && gamma > 0.0) {
            return Err(Error::invalid(format!(
                "Huber: gamma must be finite and positive, got {gamma} \
                 (use L1Norm or GroupL1Norm for gamma = 0)"
            )));
        }
        Ok(Self {
            mag: Magnitude::new(&space, "Huber")?,
            space,
            gamma,
        })
    }
}

impl<T: Scalar> Functional<T> for Huber<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        let f = self.mag.field_space();
        self.mag.with_field(|m| {
            self.mag.compute(x, m)?;
            f.pointwise_inplace(Pointwise::Huber(T::of(self.gamma)), m)?;
            f.integral(m)
        })
    }
    fn gradient_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_io(&self.space, x, out, "Huber gradient")?;
        self.mag.with_field(|m| {
            self.mag.compute(x, m)?;
            self.mag
                .field_space()
                .pointwise_inplace(Pointwise::MaxScalar(T::of(self.gamma)), m)?;
            self.mag.divide_by(x, m, out)
        })
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "Huber")?;
        check_io(&self.space, x, out, "Huber proximal")?;
        let f = self.mag.field_space();
        self.mag.with_field(|m| {
            self.mag.compute(x, m)?;
            // m ← 1 − σ / max(|x|, γ + σ)
            f.pointwise_inplace(Pointwise::MaxScalar(T::of(self.gamma + sigma)), m)?;
            f.pointwise_inplace(Pointwise::Recip, m)?;
            f.scale(T::of(-sigma), m)?;
            f.pointwise_inplace(Pointwise::AddScalar(T::one()), m)?;
            self.mag.scale_by(m, x, out)
        })
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        let ball: Func<T> = if self.space.is_product() {
            Arc::new(IndicatorGroupLinfUnitBall::new(self.space.clone())?)
        } else {
            Arc::new(IndicatorBox::new(self.space.clone(), -1.0, 1.0)?)
        };
        Ok(Arc::new(QuadraticPerturbation::new(
            ball,
            self.gamma / 2.0,
            None,
        )?))
    }
    fn name(&self) -> String {
        format!("Huber(γ = {})", self.gamma)
    }
}
