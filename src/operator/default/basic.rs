//! Identity, zero, scaling and pointwise-multiplication operators.

use std::sync::Arc;

use crate::operator::batch::check_batch_elements;
use crate::operator::{BatchedOperator, LinOp, LinearOperator, Operator};
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
    fn batched(&self) -> Option<&dyn BatchedOperator<T>> {
        // On a tensor space: the factor repeated for every entry, in one pass.
        (!self.space.is_product()).then_some(self as &dyn BatchedOperator<T>)
    }
}

impl<T: Scalar> BatchedOperator<T> for MultiplyOperator<T> {
    fn max_batch(&self) -> usize {
        usize::MAX
    }
    fn apply_batch(&self, x: &Element<T>, out: &mut Element<T>, batch: usize) -> Result<()> {
        let what = format!("MultiplyOperator on a batch of {batch}");
        check_batch_elements(&what, (&self.space, &self.space), x, out, batch)?;
        let f = self.factor.storage(&what)?;
        out.storage_mut(&what)?.mul_repeated(f, x.storage(&what)?)
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

// ---------------------------------------------------------------------------------- factories

impl<T: Scalar> IdentityOperator<T> {
    /// The factory of the identity on `space`: it builds `IdentityOperator::new(space on the
    /// device)`.
    ///
    /// ```
    /// use rodl::factory::{LinFactory, SpaceDesc};
    /// use rodl::{Device, IdentityOperator, Operator};
    /// let id: LinFactory<f64> = IdentityOperator::factory(SpaceDesc::rn(&[3]));
    /// let op = id.build(Device::Cpu)?;
    /// let x = op.domain().full(2.0)?;
    /// assert_eq!(op.apply(&x)?.as_slice()?, &[2.0; 3]);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn factory(space: crate::factory::SpaceDesc) -> crate::factory::LinFactory<T> {
        let desc = format!("IdentityOperator on {space}");
        let s = space.clone();
        crate::factory::Factory::from_fn(space.clone(), space, desc, move |d| {
            let op: LinOp<T> = Arc::new(IdentityOperator::new(s.build(d)?));
            Ok(op)
        })
    }
}

impl<T: Scalar> ZeroOperator<T> {
    /// The factory of the zero operator from `domain` to `range`.
    pub fn factory(
        domain: crate::factory::SpaceDesc,
        range: crate::factory::SpaceDesc,
    ) -> crate::factory::LinFactory<T> {
        let desc = format!("ZeroOperator {domain} → {range}");
        let (a, b) = (domain.clone(), range.clone());
        crate::factory::Factory::from_fn(domain, range, desc, move |d| {
            let op: LinOp<T> = Arc::new(ZeroOperator::new(a.build(d)?, b.build(d)?));
            Ok(op)
        })
    }
}

impl<T: Scalar> ScalingOperator<T> {
    /// The factory of x ↦ `scalar`·x on `space`.
    pub fn factory(space: crate::factory::SpaceDesc, scalar: T) -> crate::factory::LinFactory<T> {
        let desc = format!("ScalingOperator({scalar}) on {space}");
        let s = space.clone();
        crate::factory::Factory::from_fn(space.clone(), space, desc, move |d| {
            let op: LinOp<T> = Arc::new(ScalingOperator::new(s.build(d)?, scalar));
            Ok(op)
        })
    }
}

impl<T: Scalar> MultiplyOperator<T> {
    /// The factory of x ↦ `factor`·x on `space`. The factory keeps `factor` (a host element of
    /// `space`, else an error) in host memory and copies it to the device at each build: an
    /// explicit host → device transfer for a GPU, a host copy for the CPU (each built operator
    /// owns its factor).
    ///
    /// ```
    /// use rodl::factory::{LinFactory, SpaceDesc};
    /// use rodl::{rn, Device, MultiplyOperator, Operator};
    /// let w = rn::<f64>(&[3])?.element_from_vec(vec![1.0, 2.0, 3.0])?;
    /// let f: LinFactory<f64> = MultiplyOperator::factory(SpaceDesc::rn(&[3]), w)?;
    /// let op = f.build(Device::Cpu)?;
    /// assert_eq!(op.apply(&op.domain().full(2.0)?)?.as_slice()?, &[2.0, 4.0, 6.0]);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn factory(
        space: crate::factory::SpaceDesc,
        factor: Element<T>,
    ) -> Result<crate::factory::LinFactory<T>> {
        space.build::<T>(crate::Device::Cpu)?.check_member(
            &factor,
            "MultiplyOperator::factory factor (a host element of the space)",
        )?;
        let desc = format!("MultiplyOperator on {space}");
        let s = space.clone();
        Ok(crate::factory::Factory::from_fn(
            space.clone(),
            space,
            desc,
            move |d| {
                let op: LinOp<T> =
                    Arc::new(MultiplyOperator::new(s.build(d)?, factor.to_device(d)?)?);
                Ok(op)
            },
        ))
    }
}
