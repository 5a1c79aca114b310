//! Functionals plus a quadratic and a linear term.

use std::sync::Arc;

use super::helpers::{check_io, check_sigma};
use super::{Func, Functional, MoreauEnvelope, Translation};
use crate::operator::Scratch;
use crate::{Element, Error, Result, Scalar, Space};

/// The perturbed functional `x ↦ f(x) + a ‖x‖² + ⟨u, x⟩` with `a ≥ 0` (ODL's
/// `FunctionalQuadraticPerturb`).
///
/// Gradient `∇f(x) + 2a x + u`; proximal operator
/// `prox_{σ(f + a‖·‖² + ⟨u,·⟩)}(x) = prox_{σ' f}((x − σu) / (1 + 2σa))` with
/// `σ' = σ / (1 + 2σa)`; conjugate `f*(· − u)` when `a = 0`, and otherwise the Moreau envelope of
/// `f*` with parameter `2a`, translated by `u` (`(f + a‖·‖²)*` is the infimal convolution of `f*`
/// with `‖·‖²/(4a)`).
pub struct QuadraticPerturbation<T: Scalar> {
    f: Func<T>,
    a: f64,
    u: Option<Arc<Element<T>>>,
    tmp: Scratch<T>,
}

impl<T: Scalar> QuadraticPerturbation<T> {
    /// `x ↦ f(x) + a ‖x‖² + ⟨u, x⟩`; `a` finite and non-negative, `u` in `f`'s domain.
    pub fn new(f: Func<T>, a: f64, u: Option<Element<T>>) -> Result<Self> {
        Self::from_arc(f, a, u.map(Arc::new))
    }

    pub(super) fn from_arc(f: Func<T>, a: f64, u: Option<Arc<Element<T>>>) -> Result<Self> {
        if !(a.is_finite() && a >= 0.0) {
            return Err(Error::invalid(format!(
                "QuadraticPerturbation: the quadratic coefficient must be finite and \
                 non-negative, got {a}"
            )));
        }
        if let Some(u) = &u {
            f.domain()
                .check_member(u, "QuadraticPerturbation: linear term")?;
        }
        Ok(Self {
            tmp: Scratch::new(f.domain().clone()),
            f,
            a,
            u,
        })
    }
}

impl<T: Scalar> Functional<T> for QuadraticPerturbation<T> {
    fn domain(&self) -> &Space<T> {
        self.f.domain()
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        let s = self.f.domain();
        let mut v = self.f.value(x)?;
        if self.a != 0.0 {
            v += self.a * s.inner(x, x)?;
        }
        if let Some(u) = &self.u {
            v += s.inner(u, x)?;
        }
        Ok(v)
    }
    fn gradient_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let s = self.f.domain();
        self.f.gradient_into(x, out)?;
        if self.a != 0.0 {
            s.axpby(T::of(2.0 * self.a), x, T::one(), out)?;
        }
        if let Some(u) = &self.u {
            s.axpby(T::one(), u, T::one(), out)?;
        }
        Ok(())
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "QuadraticPerturbation")?;
        check_io(self.f.domain(), x, out, "QuadraticPerturbation proximal")?;
        let s = self.f.domain();
        let c = 1.0 / (1.0 + 2.0 * sigma * self.a);
        self.tmp.with(|t| {
            match &self.u {
                Some(u) => s.lincomb(T::of(c), x, T::of(-sigma * c), u, t)?,
                None => s.scaled(T::of(c), x, t)?,
            }
            self.f.proximal_into(sigma * c, t, out)
        })
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        let fc = self.f.convex_conj()?;
        let g: Func<T> = if self.a == 0.0 {
            fc
        } else {
            Arc::new(MoreauEnvelope::new(fc, 2.0 * self.a)?)
        };
        Ok(match &self.u {
            Some(u) => Arc::new(Translation::from_arc(g, Arc::clone(u))?),
            None => g,
        })
    }
    fn name(&self) -> String {
        format!("{} + {}‖·‖² + ⟨u, ·⟩", self.f.name(), self.a)
    }
}
