//! Functionals on a space: value, gradient, proximal operator and convex conjugate.

use std::sync::Arc;

use crate::{Element, Error, Result, Scalar, Space};

/// A shared, type-erased functional.
pub type Func<T> = Arc<dyn Functional<T>>;

/// A functional `f: X → ℝ ∪ {+∞}` on a space `X`, in the style of ODL's `Functional`.
///
/// Inner products, and therefore gradients and proximal operators, are those of the domain's
/// (weighted) inner product.
pub trait Functional<T: Scalar>: Send + Sync {
    /// The space the functional is defined on.
    fn domain(&self) -> &Space<T>;

    /// `f(x)`; `f64::INFINITY` outside the functional's effective domain.
    fn value(&self, x: &Element<T>) -> Result<f64>;

    /// Writes `∇f(x)` into `out`. The default is an error: the functional is not differentiable.
    fn gradient_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let _ = (x, out);
        Err(Error::Unsupported(format!("{} has no gradient", self.name())))
    }

    /// Writes `prox_{σ f}(x) = argmin_z f(z) + ‖z − x‖² / (2σ)` into `out`, for `σ > 0`.
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()>;

    /// The convex conjugate `f*(y) = sup_x ⟨x, y⟩ − f(x)`.
    fn convex_conj(&self) -> Result<Func<T>>;

    /// A short description for messages.
    fn name(&self) -> String {
        "functional".into()
    }
}
