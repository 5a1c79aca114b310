//! Identity, zero, scaling and pointwise-multiplication operators.

use std::sync::Arc;

use crate::operator::{LinOp, LinearOperator, Operator};
use crate::{Element, Result, Scalar, Space};

/// The identity x ↦ x on a space.
///
/// ```
/// use rodl::{rn, IdentityOperator, Operator};
/// let s = rn::<f32>(&[4])?;
/// let x = s.full(2.0)?;
/// assert_eq!(IdentityOperator::new(s).apply(&x)?.as_slice()?, &[2.0; 4]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct IdentityOperator<T: Scalar> {
    space: Space<T>,
}

impl<T: Scalar> IdentityOperator<T> {
    /// The identity on `space`.
    pub fn new(space: Space<T>) -> Self {
        Self { space }
    }
}

impl<T: Scalar> Operator<T> for IdentityOperator<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn range(&self) -> &Space<T> {
        &self.space
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.space.assign(x, out)
    }
    fn is_linear(&self) -> bool {
        true
    }
}

impl<T: Scalar> LinearOperator<T> for IdentityOperator<T> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        Ok(Arc::new(IdentityOperator::new(self.space.clone())))
    }
    fn norm_estimate(&self) -> Result<f64> {
        Ok(1.0)
    }
}

/// The zero operator x ↦ 0 from `domain` to `range`.
pub struct ZeroOperator<T: Scalar> {
    domain: Space<T>,
    range: Space<T>,
}

impl<T: Scalar> ZeroOperator<T> {
    /// The zero operator between two spaces.
    pub fn new(domain: Space<T>, range: Space<T>) -> Self {
        Self { domain, range }
    }
}

impl<T: Scalar> Operator<T> for ZeroOperator<T> {
    fn domain(&self) -> &Space<T> {
        &self.domain
    }
    fn range(&self) -> &Space<T> {
        &self.range
    }
    fn evaluate(&self, _x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.range.fill(out, T::zero())
    }
    fn is_linear(&self) -> bool {
        true
    }
}

impl<T: Scalar> LinearOperator<T> for ZeroOperator<T> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        Ok(Arc::new(ZeroOperator::new(
            self.range.clone(),
            self.domain.clone(),
        )))
    }
    fn norm_estimate(&self) -> Result<f64> {
        Ok(0.0)
    }
}

/// Multiplication by a scalar, x ↦ c·x, on one space.
pub struct ScalingOperator<T: Scalar> {
    space: Space<T>,
    scalar: T,
}

impl<T: Scalar> ScalingOperator<T> {
    /// x ↦ `scalar`·x on `space`.
    pub fn new(space: Space<T>, scalar: T) -> Self {
        Self { space, scalar }
    }
}

impl<T: Scalar> Operator<T> for ScalingOperator<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn range(&self) -> &Space<T> {
        &self.space
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.space.scaled(self.scalar, x, out)
    }
    fn is_linear(&self) -> bool {
        true
    }
}

impl<T: Scalar> LinearOperator<T> for ScalingOperator<T> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        Ok(Arc::new(ScalingOperator::new(
            self.space.clone(),
            self.scalar,
        )))
    }
    fn norm_estimate(&self) -> Result<f64> {
        Ok(self.scalar.f64().abs())
    }
}

/// Pointwise multiplication by a fixed element, x ↦ w·x.
pub struct MultiplyOperator<T: Scalar> {
    space: Space<T>,
    factor: Arc<Element<T>>,
}

impl<T: Scalar> MultiplyOperator<T> {
    /// x ↦ `factor`·x; errors unless `factor` belongs to `space`.
    pub fn new(space: Space<T>, factor: Element<T>) -> Result<Self> {
        space.check_member(&factor, "MultiplyOperator factor")?;
        Ok(Self {
            space,
            factor: Arc::new(factor),
        })
    }
}

impl<T: Scalar> Operator<T> for MultiplyOperator<T> {
    fn domain(&self) -> &Space<T> {
        &self.space
    }
    fn range(&self) -> &Space<T> {
        &self.space
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.space.multiply(&self.factor, x, out)
    }
    fn is_linear(&self) -> bool {
        true
    }
}

impl<T: Scalar> LinearOperator<T> for MultiplyOperator<T> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        Ok(Arc::new(MultiplyOperator {
            space: self.space.clone(),
            factor: self.factor.clone(),
        }))
    }
}
