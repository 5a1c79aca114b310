//! Factories: plain descriptions that build an operator for a given device, and the operators
//! that run on several devices through them.
//!
//! An operator never changes device (design rule 1). Whatever must exist once per device — the
//! replicas of a data-parallel operator, the parts of a ray transform split across GPUs, a
//! solver moved to another card — is built by a factory (rule 3): a description without a
//! device ([`SpaceDesc`]s, a geometry, options) whose [`OperatorFactory::build`] makes a fresh
//! operator on the device it is given. Factories are cheap to share (`Arc`), hold no device
//! state, and are never mutated.
//!
//! * [`OperatorFactory`] builds a general [`Op`]; [`LinearOperatorFactory`] also builds a
//!   [`LinOp`] (with its adjoint). Shared, type-erased factories are [`Factory`] and
//!   [`LinFactory`].
//! * Factories of the default operators: [`IdentityFactory`], [`ZeroFactory`],
//!   [`ScalingFactory`], [`MultiplyFactory`], [`GradientFactory`], [`DivergenceFactory`],
//!   [`LaplacianFactory`], [`PointwiseNormFactory`]; of the ray transform:
//!   [`RayTransformFactory`]; of any closure: [`FnFactory`], [`LinearFnFactory`].
//! * Composite factories build composite operators: [`ComposedFactory`], [`SumFactory`],
//!   [`ScaledFactory`], [`AdjointFactory`], most easily through [`FactoryExt`] and
//!   [`LinearFactoryExt`].
//! * [`DataParallel`] runs one replica per device on slices of a batch;
//!   [`MultiDeviceRayTransform`] splits one ray transform's views across devices.
//!
//! ```
//! use std::sync::Arc;
//! use rodl::factory::{GradientFactory, LinFactory, LinearFactoryExt, SpaceDesc};
//! use rodl::{check_adjoint, Device, Operator};
//!
//! let vol = SpaceDesc::uniform_discr(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16])?;
//! let grad: LinFactory<f64> = Arc::new(GradientFactory::new(vol)?);
//! let lap = grad.adjoint().compose(&grad)?.neg(); // −∇*∇, as a factory
//! let op = lap.build_linear(Device::Cpu)?; // a fresh operator on the CPU
//! assert!(check_adjoint(op.as_ref(), 2, 1)?.max_rel_error < 1e-12);
//! assert!(lap.build_linear(Device::Cuda(7)).is_err()); // no such GPU: an error, not a panic
//! # Ok::<(), rodl::Error>(())
//! ```

mod composite;
mod data_parallel;
mod default;
mod multi_device;
mod ray;
mod space_desc;
mod workers;

use std::sync::Arc;

pub use composite::{AdjointFactory, ComposedFactory, ScaledFactory, SumFactory};
pub use data_parallel::DataParallel;
pub use default::{
    DivergenceFactory, FnFactory, GradientFactory, IdentityFactory, LaplacianFactory,
    LinearFnFactory, MultiplyFactory, PointwiseNormFactory, ScalingFactory, ZeroFactory,
};
pub use multi_device::{MultiDeviceBackProjection, MultiDeviceRayTransform};
pub use ray::RayTransformFactory;
pub use space_desc::{SpaceDesc, SpaceDescExt};

use crate::{Device, LinOp, Op, Result, Scalar};

/// A shared, type-erased operator factory.
pub type Factory<T> = Arc<dyn OperatorFactory<T>>;
/// A shared, type-erased linear-operator factory.
pub type LinFactory<T> = Arc<dyn LinearOperatorFactory<T>>;

/// A description of an operator that builds it, fresh, for a given device.
///
/// The description knows the domain and range ([`SpaceDesc`]s) of what it builds, so that
/// composite factories are checked when they are assembled, before anything is built. A built
/// operator's domain and range are these descriptions built on the device.
///
/// ```
/// use std::sync::Arc;
/// use rodl::factory::{Factory, PointwiseNormFactory, SpaceDesc};
/// use rodl::{Device, Operator};
/// let field = SpaceDesc::rn(&[3]).power(2);
/// let norm: Factory<f64> = Arc::new(PointwiseNormFactory::new(field, 2.0)?);
/// let op = norm.build(Device::Cpu)?;
/// let g = op.domain().product_element(vec![
///     op.range().full(3.0)?,
///     op.range().full(4.0)?,
/// ])?;
/// assert_eq!(op.apply(&g)?.as_slice()?, &[5.0; 3]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub trait OperatorFactory<T: Scalar>: Send + Sync {
    /// The domain of the operators this factory builds.
    fn domain(&self) -> &SpaceDesc;
    /// The range of the operators this factory builds.
    fn range(&self) -> &SpaceDesc;
    /// Builds a new operator whose domain and range live on `device`.
    ///
    /// Errors (never panics) when the device cannot be used or the operator cannot be built
    /// there.
    fn build(&self, device: Device) -> Result<Op<T>>;
    /// A short human-readable description, used in messages.
    fn describe(&self) -> String;
    /// Whether the operators built are linear.
    fn is_linear(&self) -> bool {
        false
    }
}

/// A factory of linear operators: [`LinearOperatorFactory::build_linear`] gives the operator
/// with its adjoint. Its [`OperatorFactory::build`] builds the same operator as a general [`Op`].
pub trait LinearOperatorFactory<T: Scalar>: OperatorFactory<T> {
    /// Builds a new linear operator whose domain and range live on `device`.
    fn build_linear(&self, device: Device) -> Result<LinOp<T>>;
}

/// Factory arithmetic on shared general factories; the results build the composite operators
/// ([`crate::OperatorExt`]'s counterparts).
pub trait FactoryExt<T: Scalar> {
    /// The factory of `self ∘ right`; errors unless `right`'s range is `self`'s domain.
    fn compose(&self, right: &Factory<T>) -> Result<Factory<T>>;
    /// The factory of `self + other`; errors unless the domains and the ranges agree.
    fn plus(&self, other: &Factory<T>) -> Result<Factory<T>>;
    /// The factory of `self - other`; errors unless the domains and the ranges agree.
    fn minus(&self, other: &Factory<T>) -> Result<Factory<T>>;
    /// The factory of `c · self` (x ↦ c·self(x)).
    fn scaled(&self, c: T) -> Factory<T>;
    /// The factory of `self · c` (x ↦ self(c·x)).
    fn right_scaled(&self, c: T) -> Factory<T>;
    /// The factory of `-self`.
    fn neg(&self) -> Factory<T>;
}

impl<T: Scalar> FactoryExt<T> for Factory<T> {
    fn compose(&self, right: &Factory<T>) -> Result<Factory<T>> {
        Ok(Arc::new(ComposedFactory::new(self.clone(), right.clone())?))
    }
    fn plus(&self, other: &Factory<T>) -> Result<Factory<T>> {
        Ok(Arc::new(SumFactory::sum(self.clone(), other.clone())?))
    }
    fn minus(&self, other: &Factory<T>) -> Result<Factory<T>> {
        Ok(Arc::new(SumFactory::difference(
            self.clone(),
            other.clone(),
        )?))
    }
    fn scaled(&self, c: T) -> Factory<T> {
        Arc::new(ScaledFactory::left(c, self.clone()))
    }
    fn right_scaled(&self, c: T) -> Factory<T> {
        Arc::new(ScaledFactory::right(self.clone(), c))
    }
    fn neg(&self) -> Factory<T> {
        self.scaled(-T::one())
    }
}

/// Factory arithmetic on shared linear factories; the results build linear composites with
/// exact adjoints ([`crate::LinearOperatorExt`]'s counterparts).
pub trait LinearFactoryExt<T: Scalar> {
    /// The factory of `self ∘ right`; errors unless `right`'s range is `self`'s domain.
    fn compose(&self, right: &LinFactory<T>) -> Result<LinFactory<T>>;
    /// The factory of `self + other`; errors unless the domains and the ranges agree.
    fn plus(&self, other: &LinFactory<T>) -> Result<LinFactory<T>>;
    /// The factory of `self - other`; errors unless the domains and the ranges agree.
    fn minus(&self, other: &LinFactory<T>) -> Result<LinFactory<T>>;
    /// The factory of `c · self`.
    fn scaled(&self, c: T) -> LinFactory<T>;
    /// The factory of `-self`.
    fn neg(&self) -> LinFactory<T>;
    /// The factory of the adjoint `self*` (it builds `self`'s operator and takes its adjoint).
    fn adjoint(&self) -> LinFactory<T>;
    /// The same factory as a general [`Factory`].
    fn as_factory(&self) -> Factory<T>;
}

impl<T: Scalar> LinearFactoryExt<T> for LinFactory<T> {
    fn compose(&self, right: &LinFactory<T>) -> Result<LinFactory<T>> {
        Ok(Arc::new(ComposedFactory::new(self.clone(), right.clone())?))
    }
    fn plus(&self, other: &LinFactory<T>) -> Result<LinFactory<T>> {
        Ok(Arc::new(SumFactory::sum(self.clone(), other.clone())?))
    }
    fn minus(&self, other: &LinFactory<T>) -> Result<LinFactory<T>> {
        Ok(Arc::new(SumFactory::difference(
            self.clone(),
            other.clone(),
        )?))
    }
    fn scaled(&self, c: T) -> LinFactory<T> {
        Arc::new(ScaledFactory::left(c, self.clone()))
    }
    fn neg(&self) -> LinFactory<T> {
        self.scaled(-T::one())
    }
    fn adjoint(&self) -> LinFactory<T> {
        Arc::new(AdjointFactory::new(self.clone()))
    }
    fn as_factory(&self) -> Factory<T> {
        self.clone()
    }
}
