//! Operators between spaces: the traits, their algebra, product-space operators and the default
//! operators.
//!
//! An operator knows its domain and range; `apply_into` checks that the input and output belong
//! to them and then calls the implementation. Operators are shared as `Arc<dyn Operator<T>>`
//! ([`Op`]) or `Arc<dyn LinearOperator<T>>` ([`LinOp`]) so that pipelines can be assembled at run
//! time; the algebra ([`OperatorExt`], [`LinearOperatorExt`]) builds new operators from them.

mod algebra;
pub mod default;
mod opnorm;
mod pair;
mod product;
mod scratch;

use std::sync::{Arc, OnceLock};

pub use algebra::{Composition, LinearOperatorExt, OperatorExt, OperatorSum, ScalarMultiple};
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

    /// Whether the operator is linear.
    fn is_linear(&self) -> bool {
        false
    }

    /// A short human-readable name used in messages.
    fn name(&self) -> String {
        let full = std::any::type_name::<Self>();
        let base = full.split('<').next().unwrap_or(full);
        base.rsplit("::").next().unwrap_or(base).to_string()
    }

    /// Computes `out = self(x)` after checking that `x` is in the domain and `out` in the range.
    fn apply_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let ctx = self.name();
        self.domain().check_member(x, &format!("{ctx}: input"))?;
        self.range().check_member(out, &format!("{ctx}: output"))?;
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
pub trait LinearOperator<T: Scalar>: Operator<T> {
    /// The adjoint operator, from the range back to the domain.
    fn adjoint(&self) -> Result<LinOp<T>>;

    /// Where this operator keeps its norm estimate, if it caches one. Operators that return
    /// `Some` compute [`LinearOperator::norm_estimate`] only once.
    fn norm_cache(&self) -> Option<&NormCache> {
        None
    }

    /// An estimate of the operator norm ‖A‖ by power iteration on A*A (cached when
    /// [`LinearOperator::norm_cache`] gives a cache).
    fn norm_estimate(&self) -> Result<f64> {
        if let Some(c) = self.norm_cache().and_then(|c| c.0.get()) {
            return Ok(*c);
        }
        let adj = self.adjoint()?;
        let v = power_method_opnorm(self, adj.as_ref(), 100, 1e-7, 0x5eed)?;
        if let Some(c) = self.norm_cache() {
            let _ = c.0.set(v);
        }
        Ok(v)
    }
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
        return Err(crate::Error::DeviceMismatch {
            context: context.into(),
            expected: expected.device().to_string(),
            got: got.device().to_string(),
        });
    }
    Err(crate::Error::SpaceMismatch {
        context: context.into(),
        expected: expected.to_string(),
        got: got.to_string(),
    })
}
