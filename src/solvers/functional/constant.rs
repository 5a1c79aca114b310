//! The zero functional and constant functionals.

use std::sync::Arc;

use super::helpers::{check_io, check_sigma};
use super::{Func, Functional, IndicatorZero};
use crate::{Element, Error, Result, Scalar, Space};

/// The zero functional `f(x) = 0`: gradient 0, proximal operator the identity, conjugate the
/// indicator of `{0}`.
///
/// ```
/// use rodl::rn;
/// use rodl::solvers::functional::{Functional, ZeroFunctional};
/// let s = rn::<f64>(&[2])?;
/// let f = ZeroFunctional::new(s.clone());
/// assert_eq!(f.value(&s.one()?)?, 0.0);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct ZeroFunctional<T: Scalar> {
    space: Space<T>,
}

impl<T: Scalar> ZeroFunctional<T> {
    /// The zero functional on `space`.
    pub fn new(space: Space<T>) -> Self {
        Self { space }
    }
}

impl<T: Scalar> Functional<T> for ZeroFunctional<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        self.space.check_member(x, "ZeroFunctional")?;
        Ok(0.0)
    }
    fn gradient_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_io(&self.space, x, out, "ZeroFunctional gradient")?;
        self.space.fill(out, T::zero())
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "ZeroFunctional")?;
        self.space.assign(x, out)
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        Ok(Arc::new(IndicatorZero::new(self.space.clone())))
    }
    fn name(&self) -> String {
        "ZeroFunctional".into()
    }
}

/// The constant functional `f(x) = c`: gradient 0, proximal operator the identity, conjugate
/// `−c` plus the indicator of `{0}`.
pub struct ConstantFunctional<T: Scalar> {
    space: Space<T>,
    constant: f64,
}

impl<T: Scalar> ConstantFunctional<T> {
    /// The functional that is `constant` (finite) everywhere on `space`.
    pub fn new(space: Space<T>, constant: f64) -> Result<Self> {
        if !constant.is_finite() {
            return Err(Error::invalid(format!(
                "ConstantFunctional: the constant must be finite, got {constant}"
            )));
        }
        Ok(Self { space, constant })
    }

    /// The constant.
    pub fn constant(&self) -> f64 {
        self.constant
    }
}

impl<T: Scalar> Functional<T> for ConstantFunctional<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        self.space.check_member(x, "ConstantFunctional")?;
        Ok(self.constant)
    }
    fn gradient_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_io(&self.space, x, out, "ConstantFunctional gradient")?;
        self.space.fill(out, T::zero())
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "ConstantFunctional")?;
        self.space.assign(x, out)
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        Ok(Arc::new(IndicatorZero::with_constant(
            self.space.clone(),
            -self.constant,
        )?))
    }
    fn name(&self) -> String {
        format!("ConstantFunctional({})", self.constant)
    }
}
