//! Functionals multiplied by a scalar from the left (`a f(x)`) or the right (`f(a x)`).

use std::sync::Arc;

use super::helpers::{check_io, check_sigma};
use super::{Func, Functional};
use crate::operator::Scratch;
use crate::{Element, Error, Result, Scalar, Space};

/// The functional `x ↦ a f(x)` for `a > 0`.
///
/// Gradient `a ∇f`; proximal operator `prox_{σ a f}`; conjugate `a f*(· / a)`.
///
/// ```
/// use std::sync::Arc;
/// use rodl::rn;
/// use rodl::solvers::functional::{Func, Functional, FunctionalExt, L1Norm};
/// let s = rn::<f64>(&[2])?;
/// let f: Func<f64> = Arc::new(L1Norm::new(s.clone()));
/// let g = f.scaled(3.0)?; // 3 ‖x‖₁
/// assert_eq!(g.value(&s.full(-1.0)?)?, 6.0);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct LeftScalarMult<T: Scalar> {
    f: Func<T>,
    a: f64,
}

impl<T: Scalar> LeftScalarMult<T> {
    /// `x ↦ a f(x)`; `a` must be finite and positive.
    pub fn new(f: Func<T>, a: f64) -> Result<Self> {
        if !(a.is_finite() && a > 0.0) {
            return Err(Error::invalid(format!(
                "LeftScalarMult: the factor must be finite and positive, got {a}"
            )));
        }
        Ok(Self { f, a })
    }
}

impl<T: Scalar> Functional<T> for LeftScalarMult<T> {
    fn domain(&self) -> &Space<T> {
        self.f.domain()
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        Ok(self.a * self.f.value(x)?)
    }
    fn gradient_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.f.gradient_into(x, out)?;
        self.f.domain().scale(T::of(self.a), out)
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "LeftScalarMult")?;
        self.f.proximal_into(sigma * self.a, x, out)
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        let fc = self.f.convex_conj()?;
        if self.a == 1.0 {
            return Ok(fc);
        }
        let inner: Func<T> = Arc::new(RightScalarMult::new(fc, 1.0 / self.a)?);
        Ok(Arc::new(LeftScalarMult::new(inner, self.a)?))
    }
    fn name(&self) -> String {
        format!("{} · {}", self.a, self.f.name())
    }
}

/// The functional `x ↦ f(a x)` for `a ≠ 0`.
///
/// Gradient `a ∇f(a x)`; proximal operator `prox_{σ f(a·)}(x) = prox_{σa² f}(a x) / a`;
/// conjugate `f*(· / a)`.
pub struct RightScalarMult<T: Scalar> {
    f: Func<T>,
    a: f64,
    tmp: Scratch<T>,
}

impl<T: Scalar> RightScalarMult<T> {
    /// `x ↦ f(a x)`; `a` must be finite and non-zero.
    pub fn new(f: Func<T>, a: f64) -> Result<Self> {
        if !(a.is_finite() && a != 0.0) {
            return Err(Error::invalid(format!(
                "RightScalarMult: the factor must be finite and non-zero, got {a}"
            )));
        }
        Ok(Self {
            tmp: Scratch::new(f.domain().clone()),
            f,
            a,
        })
    }

    /// Runs `g` with `t = a x`.
    fn with_scaled<R>(
        &self,
        x: &Element<T>,
        g: impl FnOnce(&Element<T>) -> Result<R>,
    ) -> Result<R> {
        self.tmp.with(|t| {
            self.f.domain().scaled(T::of(self.a), x, t)?;
            g(t)
        })
    }
}

impl<T: Scalar> Functional<T> for RightScalarMult<T> {
    fn domain(&self) -> &Space<T> {
        self.f.domain()
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        self.with_scaled(x, |t| self.f.value(t))
    }
    fn gradient_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.with_scaled(x, |t| self.f.gradient_into(t, out))?;
        self.f.domain().scale(T::of(self.a), out)
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "RightScalarMult")?;
        check_io(self.f.domain(), x, out, "RightScalarMult proximal")?;
        let s = sigma * self.a * self.a;
        self.with_scaled(x, |t| self.f.proximal_into(s, t, out))?;
        self.f.domain().scale(T::of(1.0 / self.a), out)
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        Ok(Arc::new(RightScalarMult::new(
            self.f.convex_conj()?,
            1.0 / self.a,
        )?))
    }
    fn name(&self) -> String {
        format!("{}({} ·)", self.f.name(), self.a)
    }
}
