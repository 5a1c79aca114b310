//! Functionals on a space: value, gradient, proximal operator and convex conjugate.
//!
//! Every functional here is computed with the spaces' vector operations only
//! ([`Space::lincomb`], [`Space::pointwise`], reductions, …), so the same functional runs on host
//! and GPU elements unchanged. Temporaries are cached inside the functional (allocated on first
//! use, then reused), so repeated proximal steps in a solver allocate nothing.
//!
//! Conventions are ODL's: norms, inner products and integrals are the space's weighted ones
//! (on a [`uniform_discr`](crate::uniform_discr) space [`L1Norm`] is `∫ |x|`, not `Σ |xᵢ|`), and
//! gradients and proximal operators are taken with respect to that inner product.
//!
//! | functional | value | conjugate |
//! |---|---|---|
//! | [`L1Norm`] | `∫ \|x\|` | [`IndicatorBox`]`(−1, 1)` |
//! | [`L2Norm`] | `‖x‖` | [`IndicatorL2UnitBall`] |
//! | [`L2NormSquared`] | `‖x‖²` | `¼ ‖·‖²` |
//! | [`Huber`] | `∫ h_γ(\|x\|)` | unit-ball indicator `+ γ/2 ‖·‖²` |
//! | [`GroupL1Norm`] | `∫ \|x\|₂` (pointwise over components) | [`IndicatorGroupLinfUnitBall`] |
//! | [`KullbackLeibler`] | `∫ x − g + g ln(g/x)` | [`KullbackLeiblerConvexConj`] |
//! | [`IndicatorBox`], [`IndicatorNonnegativity`] | 0 in the box, ∞ outside | [`IndicatorBoxConvexConj`] |
//! | [`IndicatorZero`] | `c` at 0, ∞ elsewhere | [`ConstantFunctional`] |
//! | [`ZeroFunctional`], [`ConstantFunctional`] | `0`, `c` | [`IndicatorZero`] |
//! | [`SeparableSum`] | `Σ fᵢ(xᵢ)` on a product space | `Σ fᵢ*` |
//! | [`Translation`] | `f(x − a)` | `f* + ⟨a, ·⟩` |
//! | [`LeftScalarMult`] | `a f(x)` | `a f*(·/a)` |
//! | [`RightScalarMult`] | `f(a x)` | `f*(·/a)` |
//! | [`QuadraticPerturbation`] | `f(x) + a‖x‖² + ⟨u, x⟩` | Moreau envelope of `f*`, translated |
//! | [`MoreauEnvelope`] | `min_z f(z) + ‖x − z‖²/(2μ)` | `f* + μ/2 ‖·‖²` |
//! | [`FunctionalComposition`] | `f(A x)` | not available |
//!
//! ```
//! use std::sync::Arc;
//! use rodl::solvers::functional::{Func, FunctionalExt, L1Norm};
//! use rodl::uniform_discr;
//! let space = uniform_discr::<f64>(&[0.0], &[2.0], &[4])?; // cells of width 0.5
//! let f: Func<f64> = Arc::new(L1Norm::new(space.clone()));
//! let x = space.element_from_vec(vec![1.0, -2.0, 0.5, 0.0])?;
//! assert_eq!(f.value(&x)?, 0.5 * 3.5);
//! let p = f.proximal(1.0, &x)?; // soft thresholding
//! assert_eq!(p.as_slice()?, &[0.0, -1.0, 0.0, 0.0]);
//! // f(x − a) with a = 1:
//! let g = f.translated(space.one()?)?;
//! assert_eq!(g.value(&x)?, 0.5 * (0.0 + 3.0 + 0.5 + 1.0));
//! # Ok::<(), rodl::Error>(())
//! ```

use std::sync::Arc;

use crate::operator::receiver;
use crate::{Element, Error, Result, Scalar, Space};

mod composition;
mod constant;
mod group_l1;
mod helpers;
mod huber;
mod indicator_box;
mod indicator_zero;
mod kullback_leibler;
mod l1_norm;
mod l2_norm;
mod l2_norm_squared;
mod moreau_envelope;
mod quadratic_perturbation;
mod scalar_mult;
mod separable_sum;
mod translation;

pub use composition::FunctionalComposition;
pub use constant::{ConstantFunctional, ZeroFunctional};
pub use group_l1::{GroupL1Norm, IndicatorGroupLinfUnitBall};
pub use huber::Huber;
pub use indicator_box::{IndicatorBox, IndicatorBoxConvexConj, IndicatorNonnegativity};
pub use indicator_zero::IndicatorZero;
pub use kullback_leibler::{KullbackLeibler, KullbackLeiblerConvexConj};
pub use l1_norm::L1Norm;
pub use l2_norm::{IndicatorL2UnitBall, L2Norm};
pub use l2_norm_squared::L2NormSquared;
pub use moreau_envelope::MoreauEnvelope;
pub use quadratic_perturbation::QuadraticPerturbation;
pub use scalar_mult::{LeftScalarMult, RightScalarMult};
pub use separable_sum::SeparableSum;
pub use translation::Translation;

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
        Err(Error::Unsupported(format!(
            "{} has no gradient",
            self.name()
        )))
    }

    /// Writes `prox_{σ f}(x) = argmin_z f(z) + ‖z − x‖² / (2σ)` into `out`, for `σ > 0`.
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()>;

    /// The convex conjugate `f*(y) = sup_x ⟨x, y⟩ − f(x)`.
    fn convex_conj(&self) -> Result<Func<T>>;

    /// A short description for messages.
    fn name(&self) -> String {
        "functional".into()
    }

    /// `∇f(x)` in a new element of the domain.
    fn gradient(&self, x: &Element<T>) -> Result<Element<T>> {
        let mut out = self.domain().zero()?;
        self.gradient_into(x, &mut out)?;
        Ok(out)
    }

    /// `prox_{σ f}(x)` in a new element of the domain.
    fn proximal(&self, sigma: f64, x: &Element<T>) -> Result<Element<T>> {
        let mut out = self.domain().zero()?;
        self.proximal_into(sigma, x, &mut out)?;
        Ok(out)
    }
}

/// Builders of new functionals (ODL's functional arithmetic).
///
/// Implemented for concrete functionals, which move into the result
/// (`L2NormSquared::new(r).translated(d)?.scaled(0.5)?`), and for shared ones, `&Func<T>`, which
/// are cloned (`f.scaled(2.0)?` with `f: Func<T>` leaves `f` usable). The second parameter,
/// [`receiver::Owned`] or [`receiver::Shared`], tells the two apart and is always inferred.
///
/// ```
/// use rodl::rn;
/// use rodl::solvers::functional::{Functional, FunctionalExt, L2NormSquared};
/// let r = rn::<f64>(&[2])?;
/// let d = r.element_from_vec(vec![1.0, 2.0])?;
/// let data_term = L2NormSquared::new(r.clone()).translated(d)?.scaled(0.5)?; // ½‖x − d‖²
/// assert_eq!(data_term.value(&r.zero()?)?, 2.5);
/// # Ok::<(), rodl::Error>(())
/// ```
pub trait FunctionalExt<T: Scalar, K = receiver::Shared>: Sized {
    /// The functional as a shared [`Func`] (moved into an `Arc`, or the handle cloned).
    fn into_func(self) -> Func<T>;

    /// `x ↦ f(x − a)` ([`Translation`]).
    fn translated(self, a: Element<T>) -> Result<Func<T>> {
        Ok(Arc::new(Translation::new(self.into_func(), a)?))
    }
    /// `x ↦ a f(x)` for `a > 0` ([`LeftScalarMult`]); errors unless `a` is finite and positive.
    fn scaled(self, a: f64) -> Result<Func<T>> {
        Ok(Arc::new(LeftScalarMult::new(self.into_func(), a)?))
    }
    /// `x ↦ f(a x)` for `a ≠ 0` ([`RightScalarMult`]).
    fn scaled_argument(self, a: f64) -> Result<Func<T>> {
        Ok(Arc::new(RightScalarMult::new(self.into_func(), a)?))
    }
    /// `x ↦ f(x) + a ‖x‖² + ⟨u, x⟩` for `a ≥ 0` ([`QuadraticPerturbation`]).
    fn perturbed(self, a: f64, u: Option<Element<T>>) -> Result<Func<T>> {
        Ok(Arc::new(QuadraticPerturbation::new(
            self.into_func(),
            a,
            u,
        )?))
    }
    /// `x ↦ f(A x)` for a linear operator `A` ([`FunctionalComposition`]): a concrete one
    /// (moved in), a `LinOp` or a `&LinOp` ([`IntoLinOp`](crate::IntoLinOp)).
    fn compose<K2>(self, op: impl crate::IntoLinOp<T, K2>) -> Result<Func<T>> {
        Ok(Arc::new(FunctionalComposition::new(
            self.into_func(),
            op.into_shared_linop(),
        )?))
    }
    /// The Moreau envelope `x ↦ min_z f(z) + ‖x − z‖²/(2μ)` ([`MoreauEnvelope`]).
    fn moreau_envelope(self, mu: f64) -> Result<Func<T>> {
        Ok(Arc::new(MoreauEnvelope::new(self.into_func(), mu)?))
    }
}

impl<T: Scalar, F: Functional<T> + 'static> FunctionalExt<T, receiver::Owned> for F {
    fn into_func(self) -> Func<T> {
        Arc::new(self)
    }
}

impl<T: Scalar> FunctionalExt<T, receiver::Shared> for &Func<T> {
    fn into_func(self) -> Func<T> {
        self.clone()
    }
}
