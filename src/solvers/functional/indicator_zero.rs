//! The indicator function of the origin.

use std::sync::Arc;

use super::helpers::{check_io, check_sigma};
use super::{ConstantFunctional, Func, Functional};
use crate::{Element, Error, Result, Scalar, Space};

/// The indicator of `{0}` plus a constant: `f(0) = c`, `f(x) = +∞` for `x ≠ 0`.
///
/// Its proximal operator maps everything to 0; its conjugate is the constant `−c`.
///
/// ```
/// use rodl::rn;
/// use rodl::solvers::functional::{Functional, IndicatorZero};
/// let s = rn::<f64>(&[2])?;
/// let f = IndicatorZero::new(s.clone());
/// assert_eq!(f.value(&s.zero()?)?, 0.0);
/// assert_eq!(f.value(&s.one()?)?, f64::INFINITY);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct IndicatorZero<T: Scalar> {
    space: Space<T>,
    constant: f64,
}

impl<T: Scalar> IndicatorZero<T> {
    /// The indicator of `{0}` on `space`.
    pub fn new(space: Space<T>) -> Self {
        Self {
            space,
            constant: 0.0,
        }
    }

    /// The indicator of `{0}` plus a finite `constant`.
    pub fn with_constant(space: Space<T>, constant: f64) -> Result<Self> {
        if !constant.is_finite() {
            return Err(Error::invalid(format!(
                "IndicatorZero: the constant must be finite, got {constant}"
            )));
        }
        Ok(Self { space, constant })
    }
}

impl<T: Scalar> Functional<T> for IndicatorZero<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        Ok(if self.space.norm(x)? == 0.0 {
            self.constant
        } else {
            f64::INFINITY
        })
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "IndicatorZero")?;
        check_io(&self.space, x, out, "IndicatorZero proximal")?;
        self.space.fill(out, T::zero())
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        Ok(Arc::new(ConstantFunctional::new(
            self.space.clone(),
            -self.constant,
        )?))
    }
    fn name(&self) -> String {
        "IndicatorZero".into()
    }
}
