//! Translated functionals `f(x − a)`.

use std::sync::Arc;

use super::helpers::{check_io, check_sigma};
use super::{Func, Functional, QuadraticPerturbation};
use crate::operator::Scratch;
use crate::{Element, Result, Scalar, Space};

/// The translated functional `x ↦ f(x − a)`.
///
/// Gradient `∇f(x − a)`; proximal operator `a + prox_{σf}(x − a)`; conjugate
/// `f*(y) + ⟨a, y⟩`. `‖x − b‖²` (a least-squares data term) is
/// `L2NormSquared` translated by `b`.
pub struct Translation<T: Scalar> {
    f: Func<T>,
    shift: Arc<Element<T>>,
    tmp: Scratch<T>,
}

impl<T: Scalar> Translation<T> {
    /// `x ↦ f(x − a)`; `a` must belong to `f`'s domain.
    pub fn new(f: Func<T>, a: Element<T>) -> Result<Self> {
        Self::from_arc(f, Arc::new(a))
    }

    pub(super) fn from_arc(f: Func<T>, a: Arc<Element<T>>) -> Result<Self> {
        f.domain().check_member(&a, "Translation: shift")?;
        Ok(Self {
            tmp: Scratch::new(f.domain().clone()),
            f,
            shift: a,
        })
    }

    /// The shift `a`.
    pub fn shift(&self) -> &Element<T> {
        &self.shift
    }

    /// Runs `g` with `t = x − a`.
    fn with_shifted<R>(
        &self,
        x: &Element<T>,
        g: impl FnOnce(&Element<T>) -> Result<R>,
    ) -> Result<R> {
        self.tmp.with(|t| {
            self.f.domain().sub(x, &self.shift, t)?;
            g(t)
        })
    }
}

impl<T: Scalar> Functional<T> for Translation<T> {
    fn domain(&self) -> &Space<T> {
        self.f.domain()
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        self.with_shifted(x, |t| self.f.value(t))
    }
    fn gradient_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.with_shifted(x, |t| self.f.gradient_into(t, out))
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "Translation")?;
        check_io(self.f.domain(), x, out, "Translation proximal")?;
        self.with_shifted(x, |t| self.f.proximal_into(sigma, t, out))?;
        self.f.domain().axpby(T::one(), &self.shift, T::one(), out)
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        Ok(Arc::new(QuadraticPerturbation::from_arc(
            self.f.convex_conj()?,
            0.0,
            Some(Arc::clone(&self.shift)),
        )?))
    }
    fn name(&self) -> String {
        format!("{}(· − a)", self.f.name())
    }
}
