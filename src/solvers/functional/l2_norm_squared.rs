//! The squared L2 norm.

use std::sync::Arc;

use super::helpers::{check_io, check_sigma};
use super::{Func, Functional, LeftScalarMult};
use crate::{Element, Result, Scalar, Space};

/// The squared L2 norm `‖x‖² = ⟨x, x⟩` of the space's (weighted) inner product.
///
/// Gradient `2x`; proximal operator `x / (1 + 2σ)`; conjugate `¼ ‖·‖²`.
///
/// ```
/// use rodl::uniform_discr;
/// use rodl::solvers::functional::{Functional, L2NormSquared};
/// let s = uniform_discr::<f64>(&[0.0], &[1.0], &[4])?;
/// let f = L2NormSquared::new(s.clone());
/// assert_eq!(f.value(&s.full(3.0)?)?, 9.0); // ∫₀¹ 3² dx
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct L2NormSquared<T: Scalar> {
    space: Space<T>,
}

impl<T: Scalar> L2NormSquared<T> {
    /// The squared L2 norm on `space`.
    pub fn new(space: Space<T>) -> Self {
        Self { space }
    }
}

impl<T: Scalar> Functional<T> for L2NormSquared<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        self.space.inner(x, x)
    }
    fn gradient_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.space.scaled(T::of(2.0), x, out)
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "L2NormSquared")?;
        check_io(&self.space, x, out, "L2NormSquared proximal")?;
        self.space.scaled(T::of(1.0 / (1.0 + 2.0 * sigma)), x, out)
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        let f: Func<T> = Arc::new(L2NormSquared::new(self.space.clone()));
        Ok(Arc::new(LeftScalarMult::new(f, 0.25)?))
    }
    fn name(&self) -> String {
        "L2NormSquared".into()
    }
}
