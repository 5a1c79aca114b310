//! Separable sums of functionals on product spaces.

use std::sync::Arc;

use super::helpers::{check_io, check_sigma};
use super::{Func, Functional};
use crate::{Element, Error, Result, Scalar, Space};

/// The separable sum `f(x₁, …, xₙ) = Σᵢ fᵢ(xᵢ)` on the product of the functionals' domains.
///
/// Gradient, proximal operator and conjugate act part by part: `prox_{σf} = (prox_{σfᵢ})ᵢ`,
/// `f* = Σᵢ fᵢ*`. This is how PDHG handles several data and regularisation terms at once
/// (with a [`BroadcastOperator`](crate::BroadcastOperator)).
///
/// ```
/// use std::sync::Arc;
/// use rodl::rn;
/// use rodl::solvers::functional::{Func, Functional, L1Norm, L2NormSquared, SeparableSum};
/// let s = rn::<f64>(&[2])?;
/// let f = SeparableSum::new(vec![
///     Arc::new(L1Norm::new(s.clone())) as Func<f64>,
///     Arc::new(L2NormSquared::new(s.clone())),
/// ])?;
/// let x = f.domain().product_element(vec![s.full(-1.0)?, s.full(3.0)?])?;
/// assert_eq!(f.value(&x)?, 2.0 + 18.0);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct SeparableSum<T: Scalar> {
    space: Space<T>,
    parts: Vec<Func<T>>,
}

impl<T: Scalar> SeparableSum<T> {
    /// The separable sum of `parts` (at least one), on the product of their domains.
    pub fn new(parts: Vec<Func<T>>) -> Result<Self> {
        if parts.is_empty() {
            return Err(Error::invalid("SeparableSum needs at least one functional"));
        }
        let space = Space::product(parts.iter().map(|f| f.domain().clone()).collect())?;
        Ok(Self { space, parts })
    }

    /// The summands.
    pub fn parts(&self) -> &[Func<T>] {
        &self.parts
    }
}

impl<T: Scalar> Functional<T> for SeparableSum<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        self.space.check_member(x, "SeparableSum")?;
        let mut v = 0.0;
        for (f, xi) in self.parts.iter().zip(x.parts()?) {
            v += f.value(xi)?;
        }
        Ok(v)
    }
    fn gradient_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_io(&self.space, x, out, "SeparableSum gradient")?;
        for ((f, xi), oi) in self.parts.iter().zip(x.parts()?).zip(out.parts_mut()?) {
            f.gradient_into(xi, oi)?;
        }
        Ok(())
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "SeparableSum")?;
        check_io(&self.space, x, out, "SeparableSum proximal")?;
        for ((f, xi), oi) in self.parts.iter().zip(x.parts()?).zip(out.parts_mut()?) {
            f.proximal_into(sigma, xi, oi)?;
        }
        Ok(())
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        let conj = self
            .parts
            .iter()
            .map(|f| f.convex_conj())
            .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(SeparableSum::new(conj)?))
    }
    fn name(&self) -> String {
        format!(
            "SeparableSum({})",
            self.parts
                .iter()
                .map(|f| f.name())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}
