//! Factories of the default operators and of closures.

use std::sync::Arc;

use super::space_desc::check_space;
use super::{LinearOperatorFactory, OperatorFactory, SpaceDesc};
use crate::{
    Device, Divergence, Element, Error, Gradient, IdentityOperator, Laplacian, LinOp,
    MultiplyOperator, Op, Operator, PointwiseNorm, Result, Scalar, ScalingOperator, ZeroOperator,
};

/// Implements [`OperatorFactory::build`] and `is_linear` of a linear factory through its
/// [`LinearOperatorFactory::build_linear`].
macro_rules! linear_build {
    () => {
        fn build(&self, device: Device) -> Result<Op<T>> {
            Ok(self.build_linear(device)?)
        }
        fn is_linear(&self) -> bool {
            true
        }
    };
}

/// The factory of [`IdentityOperator`] on a space.
///
/// ```
/// use std::sync::Arc;
/// use rodl::factory::{IdentityFactory, LinFactory, SpaceDesc};
/// use rodl::{Device, Operator};
/// let id: LinFactory<f64> = Arc::new(IdentityFactory::new(SpaceDesc::rn(&[3])));
/// let op = id.build_linear(Device::Cpu)?;
/// let x = op.domain().full(2.0)?;
/// assert_eq!(op.apply(&x)?.as_slice()?, &[2.0; 3]);
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct IdentityFactory {
    space: SpaceDesc,
}

impl IdentityFactory {
    /// The factory of the identity on `space`.
    pub fn new(space: SpaceDesc) -> Self {
        Self { space }
    }
}

impl<T: Scalar> OperatorFactory<T> for IdentityFactory {
    fn domain(&self) -> &SpaceDesc {
        &self.space
    }
    fn range(&self) -> &SpaceDesc {
        &self.space
    }
    fn describe(&self) -> String {
        format!("IdentityOperator on {}", self.space)
    }
    linear_build!();
}

impl<T: Scalar> LinearOperatorFactory<T> for IdentityFactory {
    fn build_linear(&self, device: Device) -> Result<LinOp<T>> {
        Ok(Arc::new(IdentityOperator::new(self.space.build(device)?)))
    }
}

/// The factory of [`ZeroOperator`] between two spaces.
#[derive(Clone, Debug)]
pub struct ZeroFactory {
    domain: SpaceDesc,
    range: SpaceDesc,
}

impl ZeroFactory {
    /// The factory of the zero operator from `domain` to `range`.
    pub fn new(domain: SpaceDesc, range: SpaceDesc) -> Self {
        Self { domain, range }
    }
}

impl<T: Scalar> OperatorFactory<T> for ZeroFactory {
    fn domain(&self) -> &SpaceDesc {
        &self.domain
    }
    fn range(&self) -> &SpaceDesc {
        &self.range
    }
    fn describe(&self) -> String {
        format!("ZeroOperator {} → {}", self.domain, self.range)
    }
    linear_build!();
}

impl<T: Scalar> LinearOperatorFactory<T> for ZeroFactory {
    fn build_linear(&self, device: Device) -> Result<LinOp<T>> {
        Ok(Arc::new(ZeroOperator::new(
            self.domain.build(device)?,
            self.range.build(device)?,
        )))
    }
}

/// The factory of [`ScalingOperator`] (x ↦ c·x) on a space.
#[derive(Clone, Debug)]
pub struct ScalingFactory<T: Scalar> {
    space: SpaceDesc,
    scalar: T,
}

impl<T: Scalar> ScalingFactory<T> {
    /// The factory of x ↦ `scalar`·x on `space`.
    pub fn new(space: SpaceDesc, scalar: T) -> Self {
        Self { space, scalar }
    }
}

impl<T: Scalar> OperatorFactory<T> for ScalingFactory<T> {
    fn domain(&self) -> &SpaceDesc {
        &self.space
    }
    fn range(&self) -> &SpaceDesc {
        &self.space
    }
    fn describe(&self) -> String {
        format!("ScalingOperator({}) on {}", self.scalar, self.space)
    }
    linear_build!();
}

impl<T: Scalar> LinearOperatorFactory<T> for ScalingFactory<T> {
    fn build_linear(&self, device: Device) -> Result<LinOp<T>> {
        Ok(Arc::new(ScalingOperator::new(
            self.space.build(device)?,
            self.scalar,
        )))
    }
}

/// The factory of [`MultiplyOperator`] (x ↦ w·x): it holds the factor `w` in host memory and
/// copies it to the device at each build (an explicit host → device transfer for a GPU; a
/// host copy for the CPU, as each built operator owns its factor).
///
/// ```
/// use std::sync::Arc;
/// use rodl::factory::{LinFactory, MultiplyFactory, SpaceDesc};
/// use rodl::{rn, Device, Operator};
/// let w = rn::<f64>(&[3])?.element_from_vec(vec![1.0, 2.0, 3.0])?;
/// let f: LinFactory<f64> = Arc::new(MultiplyFactory::new(SpaceDesc::rn(&[3]), w)?);
/// let op = f.build_linear(Device::Cpu)?;
/// assert_eq!(op.apply(&op.domain().full(2.0)?)?.as_slice()?, &[2.0, 4.0, 6.0]);
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Debug)]
pub struct MultiplyFactory<T: Scalar> {
    space: SpaceDesc,
    factor: Element<T>,
}

impl<T: Scalar> MultiplyFactory<T> {
    /// The factory of x ↦ `factor`·x on `space`; `factor` must be a host element of `space`.
    pub fn new(space: SpaceDesc, factor: Element<T>) -> Result<Self> {
        let host = space.build::<T>(Device::Cpu)?;
        host.check_member(
            &factor,
            "MultiplyFactory factor (a host element of the space)",
        )?;
        Ok(Self { space, factor })
    }

    /// The factor, in host memory.
    pub fn factor(&self) -> &Element<T> {
        &self.factor
    }
}

impl<T: Scalar> OperatorFactory<T> for MultiplyFactory<T> {
    fn domain(&self) -> &SpaceDesc {
        &self.space
    }
    fn range(&self) -> &SpaceDesc {
        &self.space
    }
    fn describe(&self) -> String {
        format!("MultiplyOperator on {}", self.space)
    }
    linear_build!();
}

impl<T: Scalar> LinearOperatorFactory<T> for MultiplyFactory<T> {
    fn build_linear(&self, device: Device) -> Result<LinOp<T>> {
        let space = self.space.build(device)?;
        let factor = self.factor.to_device(device)?;
        Ok(Arc::new(MultiplyOperator::new(space, factor)?))
    }
}

/// The factory of [`Gradient`] on a tensor space (range: its power space).
#[derive(Clone, Debug)]
pub struct GradientFactory {
    domain: SpaceDesc,
    range: SpaceDesc,
}

impl GradientFactory {
    /// The factory of the gradient on `domain`; errors unless it is a tensor space.
    pub fn new(domain: SpaceDesc) -> Result<Self> {
        let probe = Gradient::new(domain.build::<f64>(Device::Cpu)?)?;
        let range = SpaceDesc::of(probe.range());
        Ok(Self { domain, range })
    }
}

impl<T: Scalar> OperatorFactory<T> for GradientFactory {
    fn domain(&self) -> &SpaceDesc {
        &self.domain
    }
    fn range(&self) -> &SpaceDesc {
        &self.range
    }
    fn describe(&self) -> String {
        format!("Gradient on {}", self.domain)
    }
    linear_build!();
}

impl<T: Scalar> LinearOperatorFactory<T> for GradientFactory {
    fn build_linear(&self, device: Device) -> Result<LinOp<T>> {
        Ok(Arc::new(Gradient::new(self.domain.build(device)?)?))
    }
}

/// The factory of [`Divergence`] into a tensor space (domain: its power space).
#[derive(Clone, Debug)]
pub struct DivergenceFactory {
    domain: SpaceDesc,
    range: SpaceDesc,
}

impl DivergenceFactory {
    /// The factory of the divergence into `range`; errors unless it is a tensor space.
    pub fn new(range: SpaceDesc) -> Result<Self> {
        let probe = Divergence::new(range.build::<f64>(Device::Cpu)?)?;
        let domain = SpaceDesc::of(probe.domain());
        Ok(Self { domain, range })
    }
}

impl<T: Scalar> OperatorFactory<T> for DivergenceFactory {
    fn domain(&self) -> &SpaceDesc {
        &self.domain
    }
    fn range(&self) -> &SpaceDesc {
        &self.range
    }
    fn describe(&self) -> String {
        format!("Divergence into {}", self.range)
    }
    linear_build!();
}

impl<T: Scalar> LinearOperatorFactory<T> for DivergenceFactory {
    fn build_linear(&self, device: Device) -> Result<LinOp<T>> {
        Ok(Arc::new(Divergence::new(self.range.build(device)?)?))
    }
}

/// The factory of [`Laplacian`] on a tensor space.
#[derive(Clone, Debug)]
pub struct LaplacianFactory {
    space: SpaceDesc,
}

impl LaplacianFactory {
    /// The factory of the Laplacian on `space`; errors unless it is a tensor space.
    pub fn new(space: SpaceDesc) -> Result<Self> {
        Laplacian::new(space.build::<f64>(Device::Cpu)?)?;
        Ok(Self { space })
    }
}

impl<T: Scalar> OperatorFactory<T> for LaplacianFactory {
    fn domain(&self) -> &SpaceDesc {
        &self.space
    }
    fn range(&self) -> &SpaceDesc {
        &self.space
    }
    fn describe(&self) -> String {
        format!("Laplacian on {}", self.space)
    }
    linear_build!();
}

impl<T: Scalar> LinearOperatorFactory<T> for LaplacianFactory {
    fn build_linear(&self, device: Device) -> Result<LinOp<T>> {
        Ok(Arc::new(Laplacian::new(self.space.build(device)?)?))
    }
}

/// The factory of [`PointwiseNorm`] (non-linear) on a power space `X^d`.
#[derive(Clone, Debug)]
pub struct PointwiseNormFactory {
    domain: SpaceDesc,
    range: SpaceDesc,
    exponent: f64,
}

impl PointwiseNormFactory {
    /// The factory of the pointwise `exponent`-norm on `domain = X^d`; errors as
    /// [`PointwiseNorm::new`] does.
    pub fn new(domain: SpaceDesc, exponent: f64) -> Result<Self> {
        let probe = PointwiseNorm::new(domain.build::<f64>(Device::Cpu)?, exponent)?;
        let range = SpaceDesc::of(probe.range());
        Ok(Self {
            domain,
            range,
            exponent,
        })
    }
}

impl<T: Scalar> OperatorFactory<T> for PointwiseNormFactory {
    fn domain(&self) -> &SpaceDesc {
        &self.domain
    }
    fn range(&self) -> &SpaceDesc {
        &self.range
    }
    fn build(&self, device: Device) -> Result<Op<T>> {
        Ok(Arc::new(PointwiseNorm::new(
            self.domain.build(device)?,
            self.exponent,
        )?))
    }
    fn describe(&self) -> String {
        format!("PointwiseNorm({}) on {}", self.exponent, self.domain)
    }
}

/// Errors unless `op`'s domain and range are the described spaces on `device`.
fn check_built<T: Scalar, P: ?Sized + Operator<T>>(
    op: &P,
    domain: &SpaceDesc,
    range: &SpaceDesc,
    device: Device,
    name: &str,
) -> Result<()> {
    check_space(
        op.domain(),
        domain,
        device,
        &format!("{name}: built domain"),
    )?;
    check_space(op.range(), range, device, &format!("{name}: built range"))
}

/// A factory from a closure `Fn(Device) -> Result<Op<T>>` and the descriptions of the domain
/// and range of what it builds (checked at every build).
///
/// ```
/// use std::sync::Arc;
/// use rodl::factory::{Factory, FnFactory, SpaceDesc};
/// use rodl::{Device, Op, Operator, PointwiseNorm};
/// let field = SpaceDesc::rn(&[4]).power(3);
/// let f: Factory<f32> = Arc::new(FnFactory::new(
///     field.clone(),
///     SpaceDesc::rn(&[4]),
///     "1-norm of a field",
///     move |d: Device| -> rodl::Result<Op<f32>> {
///         Ok(Arc::new(PointwiseNorm::new(field.build(d)?, 1.0)?))
///     },
/// ));
/// let op = f.build(Device::Cpu)?;
/// assert_eq!(op.apply(&op.domain().one()?)?.as_slice()?, &[3.0; 4]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct FnFactory<F> {
    domain: SpaceDesc,
    range: SpaceDesc,
    name: String,
    f: F,
}

impl<F> FnFactory<F> {
    /// A factory that calls `f(device)`; `domain` and `range` describe what it builds and
    /// `name` describes the factory.
    pub fn new(domain: SpaceDesc, range: SpaceDesc, name: impl Into<String>, f: F) -> Self {
        Self {
            domain,
            range,
            name: name.into(),
            f,
        }
    }
}

impl<T: Scalar, F> OperatorFactory<T> for FnFactory<F>
where
    F: Fn(Device) -> Result<Op<T>> + Send + Sync,
{
    fn domain(&self) -> &SpaceDesc {
        &self.domain
    }
    fn range(&self) -> &SpaceDesc {
        &self.range
    }
    fn build(&self, device: Device) -> Result<Op<T>> {
        let op = (self.f)(device)?;
        check_built(op.as_ref(), &self.domain, &self.range, device, &self.name)?;
        Ok(op)
    }
    fn describe(&self) -> String {
        self.name.clone()
    }
}

/// A linear factory from a closure `Fn(Device) -> Result<LinOp<T>>` and the descriptions of
/// the domain and range of what it builds (checked at every build).
///
/// ```
/// use std::sync::Arc;
/// use rodl::factory::{LinFactory, LinearFnFactory, SpaceDesc};
/// use rodl::{Device, LinOp, LinearOperatorExt, Operator, ScalingOperator};
/// let s = SpaceDesc::rn(&[2]);
/// let s2 = s.clone();
/// let f: LinFactory<f64> = Arc::new(LinearFnFactory::new(s.clone(), s, "3·I", move |d: Device| {
///     let op: LinOp<f64> = Arc::new(ScalingOperator::new(s2.build(d)?, 3.0));
///     Ok(op)
/// }));
/// let op = f.build_linear(Device::Cpu)?;
/// assert_eq!(op.adjoint()?.apply(&op.domain().one()?)?.as_slice()?, &[3.0, 3.0]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct LinearFnFactory<F> {
    domain: SpaceDesc,
    range: SpaceDesc,
    name: String,
    f: F,
}

impl<F> LinearFnFactory<F> {
    /// A linear factory that calls `f(device)`; `domain` and `range` describe what it builds
    /// and `name` describes the factory.
    pub fn new(domain: SpaceDesc, range: SpaceDesc, name: impl Into<String>, f: F) -> Self {
        Self {
            domain,
            range,
            name: name.into(),
            f,
        }
    }
}

impl<T: Scalar, F> OperatorFactory<T> for LinearFnFactory<F>
where
    F: Fn(Device) -> Result<LinOp<T>> + Send + Sync,
{
    fn domain(&self) -> &SpaceDesc {
        &self.domain
    }
    fn range(&self) -> &SpaceDesc {
        &self.range
    }
    fn describe(&self) -> String {
        self.name.clone()
    }
    linear_build!();
}

impl<T: Scalar, F> LinearOperatorFactory<T> for LinearFnFactory<F>
where
    F: Fn(Device) -> Result<LinOp<T>> + Send + Sync,
{
    fn build_linear(&self, device: Device) -> Result<LinOp<T>> {
        let op = (self.f)(device)?;
        if !op.is_linear() {
            return Err(Error::NotLinear(format!(
                "{}: the closure built {}, whose is_linear() is false",
                self.name,
                op.name()
            )));
        }
        check_built(op.as_ref(), &self.domain, &self.range, device, &self.name)?;
        Ok(op)
    }
}
