//! The pointwise norm of a vector field.

use crate::operator::Operator;
use crate::storage::Storage;
use crate::{Element, Error, Result, Scalar, Space};

/// The pointwise p-norm `X^d → X`, `|g|_p[i] = (Σ_k |g_k[i]|^p)^{1/p}` (p ∈ [1, ∞]).
/// Non-linear.
///
/// ```
/// use rodl::{rn, Operator, PointwiseNorm, Space};
/// let x = rn::<f64>(&[2])?;
/// let v = x.power(2)?;
/// let g = v.product_element(vec![x.full(3.0)?, x.full(4.0)?])?;
/// let n = PointwiseNorm::new(v, 2.0)?.apply(&g)?;
/// assert_eq!(n.as_slice()?, &[5.0, 5.0]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct PointwiseNorm<T: Scalar> {
    domain: Space<T>,
    range: Space<T>,
    exponent: f64,
}

impl<T: Scalar> PointwiseNorm<T> {
    /// The pointwise `exponent`-norm on the power space `domain = X^d`.
    pub fn new(domain: Space<T>, exponent: f64) -> Result<Self> {
        if exponent.is_nan() || exponent < 1.0 {
            return Err(Error::invalid(format!(
                "pointwise norm exponent must be in [1, ∞], got {exponent}"
            )));
        }
        let parts = domain.parts()?;
        let range = parts[0].clone();
        if range.is_product() || parts.iter().any(|p| *p != range) {
            return Err(Error::invalid(format!(
                "PointwiseNorm needs a power space of a tensor space, got {domain}"
            )));
        }
        Ok(Self {
            domain,
            range,
            exponent,
        })
    }
}

impl<T: Scalar> Operator<T> for PointwiseNorm<T> {
    fn domain(&self) -> &Space<T> {
        &self.domain
    }
    fn range(&self) -> &Space<T> {
        &self.range
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let parts = x.part_storages("PointwiseNorm: input")?;
        Storage::pointwise_norm(
            &parts,
            out.storage_mut("PointwiseNorm: output")?,
            self.exponent,
        )
    }
}

// ---------------------------------------------------------------------------------- factories

impl<T: Scalar> PointwiseNorm<T> {
    /// The factory of the (non-linear) pointwise `exponent`-norm on `domain = X^d`; errors as
    /// [`PointwiseNorm::new`] does.
    ///
    /// ```
    /// use rodl::factory::{OpFactory, SpaceDesc};
    /// use rodl::{Device, Operator, PointwiseNorm};
    /// let norm: OpFactory<f32> = PointwiseNorm::factory(SpaceDesc::rn(&[4]).power(3), 1.0)?;
    /// assert!(!norm.is_linear());
    /// let op = norm.build(Device::Cpu)?;
    /// assert_eq!(op.apply(&op.domain().one()?)?.as_slice()?, &[3.0; 4]);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn factory(
        domain: crate::factory::SpaceDesc,
        exponent: f64,
    ) -> Result<crate::factory::OpFactory<T>> {
        let desc = format!("PointwiseNorm({exponent}) on {domain}");
        crate::factory::Factory::on_space(domain, desc, move |s| {
            Ok(std::sync::Arc::new(PointwiseNorm::new(s, exponent)?) as crate::Op<T>)
        })
    }
}
