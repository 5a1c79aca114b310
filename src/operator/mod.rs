//! Operators between spaces: the traits, their algebra, product-space operators and the default
//! operators.
//!
//! An operator knows its domain and range; `apply_into` checks that the input and output belong
//! to them and then calls the implementation. Operators are shared as `Arc<dyn Operator<T>>`
//! ([`Op`]) or `Arc<dyn LinearOperator<T>>` ([`LinOp`]) so that pipelines can be assembled at run
//! time; the algebra ([`OperatorExt`], [`LinearOperatorExt`]) builds new operators from them,
//! from shared and (for linear operators) concrete ones alike.
//!
//! ```
//! use rodl::{check_adjoint, uniform_discr, Gradient, LinOp, LinearOperatorExt, Operator};
//!
//! let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[32, 32])?;
//! let grad: LinOp<f64> = Gradient::new(space.clone())?.into_linop();
//! let op = grad.adjoint()?.compose(&grad)?.neg(); // −∇*∇ = div ∘ grad
//! assert!(op.is_linear());
//! assert!(check_adjoint(op.as_ref(), 3, 7)?.max_rel_error < 1e-12);
//! // The same from concrete operators, without `Arc::new`:
//! let scaled = Gradient::new(space.clone())?.scaled(0.5)?;
//! assert_eq!(scaled.range(), grad.range());
//! # Ok::<(), rodl::Error>(())
//! ```

mod algebra;
mod as_operator;
mod batch;
pub mod default;
mod opnorm;
mod pair;
mod product;
mod scratch;

use std::sync::{Arc, OnceLock};

pub use algebra::{
    receiver, Composition, IntoLinOp, LinearOperatorExt, OperatorExt, OperatorSum, ScalarMultiple,
};
pub use as_operator::{AsLinearOperator, AsOperator};
pub use batch::BatchedOperator;
pub use opnorm::power_method_opnorm;
pub(crate) use pair::forward_backward_pair;
pub use product::{
    diagonal_operator, BlockOperator, BroadcastOperator, ComponentEmbedding, ComponentProjection,
    ReductionOperator,
};
pub(crate) use scratch::Scratch;

use crate::{Element, Result, Scalar, Space};

/// A shared, type-erased operator.
pub type Op<T> = Arc<dyn Operator<T>>;
/// A shared, type-erased linear operator.
pub type LinOp<T> = Arc<dyn LinearOperator<T>>;

/// A mapping from its domain to its range.
///
/// Implementors provide [`Operator::domain`], [`Operator::range`] and [`Operator::evaluate`];
/// users call [`Operator::apply_into`] (into a given output) or [`Operator::apply`] (allocating).
///
/// ```
/// use std::sync::Arc;
/// use rodl::{rn, Element, Operator, Result, Space};
///
/// /// x ↦ x² elementwise.
/// struct Square(Space<f64>);
/// impl Operator<f64> for Square {
///     fn domain(&self) -> &Space<f64> { &self.0 }
///     fn range(&self) -> &Space<f64> { &self.0 }
///     fn evaluate(&self, x: &Element<f64>, out: &mut Element<f64>) -> Result<()> {
///         self.0.multiply(x, x, out)
///     }
/// }
/// let s = rn::<f64>(&[2])?;
/// let op: Arc<dyn Operator<f64>> = Arc::new(Square(s.clone()));
/// let y = op.apply(&s.full(3.0)?)?;
/// assert_eq!(y.as_slice()?, &[9.0, 9.0]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub trait Operator<T: Scalar>: Send + Sync {
    /// The space of inputs.
    fn domain(&self) -> &Space<T>;
    /// The space of outputs.
    fn range(&self) -> &Space<T>;
    /// Computes `out = self(x)`. Called by [`Operator::apply_into`] after it checked that `x`
    /// belongs to the domain and `out` to the range; `out` may hold anything on entry.
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()>;

    /// Whether the operator is linear, as seen through a general [`Op`].
    ///
    /// Implementors of [`LinearOperator`] need not override it: everything that needs a linear
    /// operator takes a [`LinearOperator`] ([`check_adjoint`](crate::check_adjoint), the
    /// algebra of [`LinOp`]s, linear factories, the solvers), so the trait implementation is what
    /// makes an operator linear, and composites built from [`LinOp`]s report `true` whatever
    /// their parts say. The flag only matters for an operator held as a general [`Op`] (use
    /// [`LinearOperatorExt::as_op`] to turn a linear operator into one that keeps saying `true`).
    /// The default is `false`.
    fn is_linear(&self) -> bool {
        false
    }

    /// The operator's batched form, where it has one (the default: `None`): whole batches in
    /// one pass, e.g. on a GPU for PyTorch.
    fn batched(&self) -> Option<&dyn BatchedOperator<T>> {
        None
    }

    /// The operator as [`Any`](std::any::Any), so that its concrete type can be recovered
    /// behind a shared handle: `op.as_any().and_then(|a| a.downcast_ref::<RayTransform<f32>>())`
    /// for a `LinOp<f32>` that holds a ray transform (what [`fbp_op`](crate::tomo::fbp_op) does).
    /// `None` by default; an operator that wants to be found returns `Some(self)`, as the ray
    /// transform and its back-projection do.
    ///
    /// ```
    /// use rodl::tomo::{parallel_beam_geometry, Backend, RayTransform};
    /// use rodl::{uniform_discr, LinOp, LinearOperatorExt, Operator, ScalingOperator};
    /// let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[8, 8])?;
    /// let geometry = parallel_beam_geometry(&space, Some(4))?;
    /// let op: LinOp<f32> = RayTransform::new(space.clone(), geometry, Backend::default())?.into_linop();
    /// let ray = op.as_any().and_then(|a| a.downcast_ref::<RayTransform<f32>>());
    /// assert_eq!(ray.map(|r| r.geometry().data_shape()), Some(vec![4, 13]));
    /// assert!(ScalingOperator::new(space, 2.0).as_any().is_none());
    /// # Ok::<(), rodl::Error>(())
    /// ```
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }

    /// A short human-readable name used in messages.
    fn name(&self) -> String {
        let full = std::any::type_name::<Self>();
        let base = full.split('<').next().unwrap_or(full);
        base.rsplit("::").next().unwrap_or(base).to_string()
    }

    /// Computes `out = self(x)` after checking that `x` is in the domain and `out` in the range.
    fn apply_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        // The operator's name is formed only when a check fails.
        let named = |what: &'static str| Named(move || self.name(), what);
        self.domain().check_member(x, named("input"))?;
        self.range().check_member(out, named("output"))?;
        self.evaluate(x, out)
    }

    /// Computes `self(x)` into a new element of the range.
    fn apply(&self, x: &Element<T>) -> Result<Element<T>> {
        let mut out = self.range().zero()?;
        self.apply_into(x, &mut out)?;
        Ok(out)
    }
}

/// A linear operator: an [`Operator`] with an adjoint.
///
/// The adjoint is taken with respect to the (weighted) inner products of domain and range:
/// `⟨A x, y⟩_range = ⟨x, A* y⟩_domain`. The adjoint of the adjoint acts as the original.
///
/// Implementing this trait is what makes an operator linear: there is no flag to set (see
/// [`Operator::is_linear`]).
///
/// ```
/// use std::sync::Arc;
/// use rodl::{check_adjoint, rn, Element, LinOp, LinearOperator, Operator, Result, Space};
///
/// /// x ↦ 3x, with no `is_linear` override.
/// struct Triple(Space<f64>);
/// impl Operator<f64> for Triple {
///     fn domain(&self) -> &Space<f64> { &self.0 }
///     fn range(&self) -> &Space<f64> { &self.0 }
///     fn evaluate(&self, x: &Element<f64>, out: &mut Element<f64>) -> Result<()> {
///         self.0.scaled(3.0, x, out)
///     }
/// }
/// impl LinearOperator<f64> for Triple {
///     fn adjoint(&self) -> Result<LinOp<f64>> { Ok(Arc::new(Triple(self.0.clone()))) }
/// }
/// let op = Triple(rn(&[4])?);
/// assert!(check_adjoint(&op, 2, 0)?.max_rel_error < 1e-15);
/// assert!((op.norm_estimate_with(20, 1e-6)? - 3.0).abs() < 1e-12);
/// # Ok::<(), rodl::Error>(())
/// ```
pub trait LinearOperator<T: Scalar>: Operator<T> {
    /// The adjoint operator, from the range back to the domain.
    fn adjoint(&self) -> Result<LinOp<T>>;

    /// Where this operator keeps its norm estimate, if it caches one. Operators that return
    /// `Some` compute [`LinearOperator::norm_estimate`] only once.
    fn norm_cache(&self) -> Option<&NormCache> {
        None
    }

    /// An estimate of the operator norm ‖A‖: [`LinearOperator::norm_estimate_with`] with
    /// [`NORM_ESTIMATE_ITERATIONS`] (100) iterations and relative tolerance
    /// [`NORM_ESTIMATE_RTOL`] (1e-7), cached when [`LinearOperator::norm_cache`] gives a cache.
    ///
    /// Cost: up to 100 forward and 100 adjoint applications on the first call — for a large
    /// operator (a 3D ray transform) that is as long as 100 iterations of a solver. Operators
    /// whose norm is known (identity, scalings, projections, scalar multiples of those) return it
    /// without iterating. Pass the iteration count and tolerance yourself with
    /// [`LinearOperator::norm_estimate_with`], or give a known norm where a solver or check
    /// accepts one.
    fn norm_estimate(&self) -> Result<f64> {
        if let Some(c) = self.norm_cache().and_then(|c| c.0.get()) {
            return Ok(*c);
        }
        let v = self.norm_estimate_with(NORM_ESTIMATE_ITERATIONS, NORM_ESTIMATE_RTOL)?;
        if let Some(c) = self.norm_cache() {
            let _ = c.0.set(v);
        }
        Ok(v)
    }

    /// An estimate of the operator norm ‖A‖ by at most `max_iter` power iterations on A*A
    /// ([`power_method_opnorm`], from a fixed seed), stopping early when the estimate changes by
    /// less than `rtol` (relative). The estimate approaches ‖A‖ from below.
    ///
    /// Cost: each iteration applies the operator once and its adjoint once. Not cached (it
    /// neither reads nor fills [`LinearOperator::norm_cache`]), so a quick rough estimate does
    /// not replace the accurate one of [`LinearOperator::norm_estimate`].
    ///
    /// ```
    /// use rodl::{uniform_discr, Gradient, LinearOperator};
    /// let grad = Gradient::new(uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[64, 64])?)?;
    /// let rough = grad.norm_estimate_with(10, 1e-3)?; // 10 forward + 10 adjoint applications
    /// assert!(rough > 0.0 && rough <= grad.norm_estimate()? * (1.0 + 1e-12));
    /// # Ok::<(), rodl::Error>(())
    /// ```
    fn norm_estimate_with(&self, max_iter: usize, rtol: f64) -> Result<f64> {
        let adj = self.adjoint()?;
        power_method_opnorm(self, adj.as_ref(), max_iter, rtol, 0x5eed)
    }
}

/// The number of power iterations of [`LinearOperator::norm_estimate`].
pub const NORM_ESTIMATE_ITERATIONS: usize = 100;
/// The relative tolerance of [`LinearOperator::norm_estimate`].
pub const NORM_ESTIMATE_RTOL: f64 = 1e-7;

/// The kinds of shared operator that the algebra's composites hold: `dyn Operator<T>` (linear
/// when its [`Operator::is_linear`] says so) and `dyn LinearOperator<T>` (linear by
/// construction). Sealed.
pub trait OperatorKind<T: Scalar>: Operator<T> + sealed::Sealed {
    /// Whether an operator of this kind is linear.
    fn kind_is_linear(&self) -> bool;
}

impl<T: Scalar> OperatorKind<T> for dyn Operator<T> {
    fn kind_is_linear(&self) -> bool {
        self.is_linear()
    }
}

impl<T: Scalar> OperatorKind<T> for dyn LinearOperator<T> {
    fn kind_is_linear(&self) -> bool {
        true
    }
}

mod sealed {
    use super::{LinearOperator, Operator};
    use crate::Scalar;

    pub trait Sealed {}
    impl<T: Scalar> Sealed for dyn Operator<T> {}
    impl<T: Scalar> Sealed for dyn LinearOperator<T> {}
}

/// A once-computed operator-norm estimate, stored inside an operator.
#[derive(Debug, Default)]
pub struct NormCache(OnceLock<f64>);

impl NormCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }
    /// The cached value, if computed.
    pub fn get(&self) -> Option<f64> {
        self.0.get().copied()
    }
}

/// Errors unless `op`'s domain equals `space`.
pub(crate) fn check_same_space<T: Scalar>(
    expected: &Space<T>,
    got: &Space<T>,
    context: &str,
) -> Result<()> {
    if expected == got {
        return Ok(());
    }
    if expected.device() != got.device() {
        return Err(crate::Error::device_mismatch(
            context,
            expected.device(),
            got.device(),
        ));
    }
    Err(crate::Error::SpaceMismatch {
        context: context.into(),
        expected: expected.to_string(),
        got: got.to_string(),
    })
}

/// `"{name}: {what}"` with the name computed when displayed: the context of a membership check,
/// formatted only when the check fails.
struct Named<F: Fn() -> String>(F, &'static str);

impl<F: Fn() -> String> std::fmt::Display for Named<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", (self.0)(), self.1)
    }
}
