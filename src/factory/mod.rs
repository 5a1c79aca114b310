//! Factories: plain descriptions that build a fresh operator for a given device.
//!
//! An operator never changes device (design rule 1). Whatever must exist once per device — the
//! replicas of a data-parallel operator ([`crate::parallel::DataParallel`]), a solver moved to
//! another card, an operator module that follows its input tensors — is built by a factory
//! (rule 3): the descriptions of the domain and range without a device ([`SpaceDesc`]), a
//! description string, and a build function that makes a new operator on the device it is
//! given. A factory holds no device state and is never mutated; cloning it is cheap (one
//! reference count) and shares the description, never an operator.
//!
//! A [`SpaceDesc`] carries no scalar type, so a factory's comes from where it is used: give it
//! as a type annotation, `let f: LinFactory<f32> = Gradient::factory(desc)?;`, or on the
//! operator, `Gradient::<f32>::factory(desc)?`. Without either (a factory only ever built and
//! applied to elements of a type that is not yet known) rustc asks for type annotations.
//!
//! There is one factory type, [`Factory`], generic over what it builds:
//! * [`LinFactory<T>`] builds a [`LinOp<T>`], a linear operator with its adjoint —
//!   [`Factory::build`] is the obvious call;
//! * [`OpFactory<T>`] builds a general [`Op<T>`] (possibly non-linear); a linear factory
//!   becomes one only explicitly, with [`LinFactory::general`].
//!
//! The operators come with their factories: [`IdentityOperator::factory`](crate::IdentityOperator::factory),
//! [`ZeroOperator::factory`](crate::ZeroOperator::factory),
//! [`ScalingOperator::factory`](crate::ScalingOperator::factory),
//! [`MultiplyOperator::factory`](crate::MultiplyOperator::factory),
//! [`Gradient::factory`](crate::Gradient::factory),
//! [`Divergence::factory`](crate::Divergence::factory),
//! [`Laplacian::factory`](crate::Laplacian::factory),
//! [`PointwiseNorm::factory`](crate::PointwiseNorm::factory),
//! [`RayTransform::factory`](crate::tomo::RayTransform::factory); any closure gives one with
//! [`Factory::from_fn`]. Factories combine like operators — `compose`, `plus`, `minus`,
//! `scaled`, `right_scaled`, `neg`, and `adjoint` for linear ones: the composite builds its
//! operands on the device and combines them with the operator algebra. Domains and ranges are
//! checked when a composite is assembled, before anything is built.
//!
//! ```
//! use rodl::factory::{LinFactory, SpaceDesc};
//! use rodl::{check_adjoint, Device, Gradient};
//!
//! let vol = SpaceDesc::uniform_discr(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16])?;
//! let grad: LinFactory<f64> = Gradient::factory(vol)?;
//! let lap = grad.adjoint().compose(&grad)?.neg(); // −∇*∇, as a factory
//! let op = lap.build(Device::Cpu)?; // a fresh linear operator on the CPU
//! assert!(check_adjoint(op.as_ref(), 2, 1)?.max_rel_error < 1e-12);
//! assert!(lap.build(Device::Cuda(7)).is_err()); // no such GPU: an error, not a panic
//! # Ok::<(), rodl::Error>(())
//! ```

mod algebra;
mod handle;
mod space_desc;

use std::fmt;
use std::sync::Arc;

pub use handle::OperatorHandle;
pub(crate) use space_desc::check_space;
pub use space_desc::{SpaceDesc, SpaceDescExt};

use crate::{Device, LinOp, Op, Result, Scalar, Space};

/// A factory of general operators: it builds an [`Op<T>`].
pub type OpFactory<T> = Factory<Op<T>>;
/// A factory of linear operators: it builds a [`LinOp<T>`], with its adjoint.
pub type LinFactory<T> = Factory<LinOp<T>>;

/// The build function of a factory.
type BuildFn<O> = dyn Fn(Device) -> Result<O> + Send + Sync;

/// A plain description of an operator that builds it, fresh, for a given device.
///
/// It knows the domain and range ([`SpaceDesc`]s) of what it builds, so that composites are
/// checked when they are assembled; a built operator's domain and range are these descriptions
/// built on the device, and every [`build`](Factory::build) checks that they are (and, for a
/// [`LinFactory`], that the operator says it is linear). `O` is what it builds: [`Op<T>`]
/// ([`OpFactory`]) or [`LinOp<T>`] ([`LinFactory`]). Clones share the description.
///
/// ```
/// use rodl::factory::{OpFactory, SpaceDesc};
/// use rodl::{Device, Operator, PointwiseNorm};
/// let field = SpaceDesc::rn(&[3]).power(2);
/// let norm: OpFactory<f64> = PointwiseNorm::factory(field, 2.0)?;
/// let op = norm.build(Device::Cpu)?;
/// let g = op.domain().product_element(vec![
///     op.range().full(3.0)?,
///     op.range().full(4.0)?,
/// ])?;
/// assert_eq!(op.apply(&g)?.as_slice()?, &[5.0; 3]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct Factory<O> {
    inner: Arc<Inner<O>>,
}

struct Inner<O> {
    domain: SpaceDesc,
    range: SpaceDesc,
    describe: String,
    linear: bool,
    build: Box<BuildFn<O>>,
}

impl<O> Clone for Factory<O> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<O> fmt::Debug for Factory<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Factory")
            .field("describe", &self.inner.describe)
            .field("domain", &self.inner.domain.to_string())
            .field("range", &self.inner.range.to_string())
            .field("linear", &self.inner.linear)
            .finish()
    }
}

impl<O: OperatorHandle> Factory<O> {
    /// A factory that calls `build(device)`; `domain` and `range` describe what it builds
    /// (checked at every build) and `describe` describes the factory in messages.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use rodl::factory::{Factory, LinFactory, SpaceDesc};
    /// use rodl::{Device, LinOp, Operator, ScalingOperator};
    /// let s = SpaceDesc::rn(&[2]);
    /// let s2 = s.clone();
    /// let f: LinFactory<f64> = Factory::from_fn(s.clone(), s, "3·I", move |d: Device| {
    ///     let op: LinOp<f64> = Arc::new(ScalingOperator::new(s2.build(d)?, 3.0));
    ///     Ok(op)
    /// });
    /// let op = f.build(Device::Cpu)?;
    /// assert_eq!(op.adjoint()?.apply(&op.domain().one()?)?.as_slice()?, &[3.0, 3.0]);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn from_fn<F>(
        domain: SpaceDesc,
        range: SpaceDesc,
        describe: impl Into<String>,
        build: F,
    ) -> Self
    where
        F: Fn(Device) -> Result<O> + Send + Sync + 'static,
    {
        Self::assemble(domain, range, describe.into(), O::LINEAR, build)
    }

    /// The factory of `make(space)` with `space` built on the device: `make` runs once here, on
    /// the CPU, which checks its arguments and gives the domain and range of what it builds (the
    /// constructors of the default operators' factories).
    pub(crate) fn on_space<T: Scalar>(
        space: SpaceDesc,
        describe: String,
        make: impl Fn(Space<T>) -> Result<O> + Send + Sync + 'static,
    ) -> Result<Self>
    where
        O: handle::sealed::Handle<Scalar = T>,
    {
        let probe = make(space.build(Device::Cpu)?)?;
        let op = probe.operator();
        let (domain, range) = (SpaceDesc::of(op.domain()), SpaceDesc::of(op.range()));
        Ok(Self::from_fn(domain, range, describe, move |d| {
            make(space.build(d)?)
        }))
    }

    /// The factory of these parts; `linear`: whether what it builds is known to be linear.
    fn assemble<F>(
        domain: SpaceDesc,
        range: SpaceDesc,
        describe: String,
        linear: bool,
        build: F,
    ) -> Self
    where
        F: Fn(Device) -> Result<O> + Send + Sync + 'static,
    {
        Self {
            inner: Arc::new(Inner {
                domain,
                range,
                describe,
                linear,
                build: Box::new(build),
            }),
        }
    }

    /// The domain of the operators this factory builds.
    pub fn domain(&self) -> &SpaceDesc {
        &self.inner.domain
    }

    /// The range of the operators this factory builds.
    pub fn range(&self) -> &SpaceDesc {
        &self.inner.range
    }

    /// A short human-readable description, used in messages.
    pub fn describe(&self) -> &str {
        &self.inner.describe
    }

    /// Whether the operators built are linear: always for a [`LinFactory`], and for an
    /// [`OpFactory`] made from one ([`LinFactory::general`]) or assembled from such.
    pub fn is_linear(&self) -> bool {
        self.inner.linear
    }

    /// Builds a new operator whose domain and range live on `device` — or one of them, where
    /// the operator's own options say so, in host memory (a ray transform built for a GPU with
    /// a CUDA memory budget below its data keeps the data on the host and streams them).
    ///
    /// Errors (never panics) when the device cannot be used, when the operator cannot be built
    /// there, or when what was built is not what the factory describes.
    pub fn build(&self, device: Device) -> Result<O> {
        let built = (self.inner.build)(device)?;
        let op = built.operator();
        let ctx = &self.inner.describe;
        // One side may stay on the host where a GPU was asked for (an operator's own options
        // keep it there: a ray transform whose data exceed its CUDA memory budget streams them
        // through the GPU in pieces); an operator with neither side on the device ignored it.
        let host_ok = op.domain().device() == device || op.range().device() == device;
        check_space(
            op.domain(),
            &self.inner.domain,
            device,
            host_ok,
            &format!("{ctx}: built domain"),
        )?;
        check_space(
            op.range(),
            &self.inner.range,
            device,
            host_ok,
            &format!("{ctx}: built range"),
        )?;
        Ok(built)
    }
}
