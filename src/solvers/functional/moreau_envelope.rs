//! Moreau envelopes (Moreau–Yosida regularisations).

use std::sync::Arc;

use super::helpers::{check_io, check_sigma};
use super::{Func, Functional, QuadraticPerturbation};
use crate::operator::Scratch;
use crate::{Element, Error, Result, Scalar, Space};

/// The Moreau envelope `e_μ f(x) = min_z f(z) + ‖x − z‖² / (2μ)` of a convex functional, `μ > 0`.
///
/// The minimiser is `p = prox_{μ f}(x)`, so `e_μ f(x) = f(p) + ‖x − p‖²/(2μ)`. The envelope is
/// differentiable with the `1/μ`-Lipschitz gradient `(x − p)/μ`; its proximal operator is
/// `x + σ/(μ + σ) (prox_{(μ+σ) f}(x) − x)` and its conjugate `f* + μ/2 ‖·‖²`. The
/// [`Huber`](super::Huber) functional is the Moreau envelope of the L1 norm.
pub struct MoreauEnvelope<T: Scalar> {
    f: Func<T>,
    mu: f64,
    tmp: Scratch<T>,
}

impl<T: Scalar> MoreauEnvelope<T> {
    /// The Moreau envelope of `f` with parameter `mu` (finite, positive).
    pub fn new(f: Func<T>, mu: f64) -> Result<Self> {
        if !(mu.is_finite() && mu > 0.0) {
            return Err(Error::invalid(format!(
                "MoreauEnvelope: the parameter must be finite and positive, got {mu}"
            )));
        }
        Ok(Self {
            tmp: Scratch::new(f.domain().clone()),
            f,
            mu,
        })
    }
}

impl<T: Scalar> Functional<T> for MoreauEnvelope<T> {
    fn domain(&self) -> &Space<T> {
        self.f.domain()
    }
    fn value(&self, x: &Element<T>) -> Result<f64> {
        self.tmp.with(|p| {
            self.f.proximal_into(self.mu, x, p)?;
            let d = self.f.domain().dist(x, p)?;
            Ok(self.f.value(p)? + d * d / (2.0 * self.mu))
        })
    }
    fn gradient_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.f.proximal_into(self.mu, x, out)?;
        let r = 1.0 / self.mu;
        self.f.domain().axpby(T::of(r), x, T::of(-r), out)
    }
    fn proximal_into(&self, sigma: f64, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        check_sigma(sigma, "MoreauEnvelope")?;
        check_io(self.f.domain(), x, out, "MoreauEnvelope proximal")?;
        let m = self.mu + sigma;
        self.f.proximal_into(m, x, out)?;
        self.f
            .domain()
            .axpby(T::of(self.mu / m), x, T::of(sigma / m), out)
    }
    fn convex_conj(&self) -> Result<Func<T>> {
        Ok(Arc::new(QuadraticPerturbation::new(
            self.f.convex_conj()?,
            self.mu / 2.0,
            None,
        )?))
    }
    fn name(&self) -> String {
        format!("MoreauEnvelope({}, μ = {})", self.f.name(), self.mu)
    }
}
