//! The linearized alternating direction method of multipliers.

use super::proximal_common::{check_positive, check_primal_dual, operator_norm, report};
use super::SolverInfo;
use crate::solvers::{Callback, Functional};
use crate::{AsLinearOperator, Element, LinearOperator, Result, Scalar};

/// Step sizes and options of [`admm_linearized`].
///
/// Convergence needs `0 < τ < σ / ‖L‖²` ([`AdmmOptions::for_operator`] picks
/// `τ = 0.99 σ / ‖L‖²`).
#[derive(Clone, Debug, PartialEq)]
pub struct AdmmOptions {
    /// Proximal step `τ` of `f`.
    pub tau: f64,
    /// Proximal step `σ` of `g` (the inverse penalty parameter).
    pub sigma: f64,
    /// Report the objective `f(x) + g(L x)` to the callback (two functional values per
    /// iteration; `L x` is computed anyway).
    pub objective: bool,
}

impl AdmmOptions {
    /// Steps `tau` and `sigma`, no objective reporting.
    pub fn new(tau: f64, sigma: f64) -> Self {
        Self {
            tau,
            sigma,
            objective: false,
        }
    }

    /// The given `sigma` and `τ = 0.99 σ / ‖L‖²` with `‖L‖` from
    /// [`LinearOperator::norm_estimate`].
    pub fn for_operator<T: Scalar>(
        op: &(impl AsLinearOperator<T> + ?Sized),
        sigma: f64,
    ) -> Result<Self> {
        let op = op.as_linear();
        let n = operator_norm(op, "admm_linearized")?;
        Ok(Self::new(0.99 * sigma / (n * n), sigma))
    }

    /// Turns the objective reporting on or off.
    pub fn objective(mut self, on: bool) -> Self {
        self.objective = on;
        self
    }
}

/// The linearized ADMM (ODL's `admm_linearized(x, f, g, L, tau, sigma, niter)`; here the
/// operator comes first, as in every solver) for `min_x f(x) + g(L x)`, with `f` and `g`
/// convex with proximal operators and `L` linear.
///
/// With `z = u = 0` at the start, each iteration is
///
/// ```text
/// x ← prox_{τ f}(x − (τ/σ) L*(L x − z + u))
/// z ← prox_{σ g}(L x + u)
/// u ← u + L x − z
/// ```
///
/// `x` is the start and is updated in place; returns a [`SolverInfo`] (no residual). The
/// callback gets `x` and, with [`AdmmOptions::objective`], `f(x) + g(L x)`. Temporaries: one
/// element of the domain and four of the range, allocated before the loop; an iteration applies
/// `L` and `L*` once each.
///
/// ```
/// use rodl::rn;
/// use rodl::solvers::functional::{IndicatorBox, L2NormSquared};
/// use rodl::solvers::iterative::{admm_linearized, AdmmOptions};
/// use rodl::IdentityOperator;
/// // min ‖x‖² subject to 1 ≤ x ≤ 2: x = 1.
/// let s = rn::<f64>(&[2])?;
/// let (f, g) = (L2NormSquared::new(s.clone()), IndicatorBox::new(s.clone(), 1.0, 2.0)?);
/// let mut x = s.zero()?;
/// admm_linearized(&IdentityOperator::new(s.clone()), &mut x, &f, &g, 300,
///                 &AdmmOptions::new(0.5, 1.0), &mut ())?;
/// assert!(s.dist(&x, &s.one()?)? < 1e-6);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn admm_linearized<T: Scalar>(
    op: &(impl AsLinearOperator<T> + ?Sized),
    x: &mut Element<T>,
    f: &dyn Functional<T>,
    g: &dyn Functional<T>,
    niter: usize,
    options: &AdmmOptions,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    admm_linearized_dyn(op.as_linear(), x, f, g, niter, options, callback)
}

fn admm_linearized_dyn<T: Scalar>(
    op: &dyn LinearOperator<T>,
    x: &mut Element<T>,
    f: &dyn Functional<T>,
    g: &dyn Functional<T>,
    niter: usize,
    options: &AdmmOptions,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    let solver = "admm_linearized";
    check_primal_dual(x, f, g, op, solver)?;
    check_positive(options.tau, "tau", solver)?;
    check_positive(options.sigma, "sigma", solver)?;
    if niter == 0 {
        return Ok(SolverInfo::none());
    }
    let (domain, range) = (op.domain(), op.range());
    let adjoint = op.adjoint()?;
    let (tau, sigma) = (options.tau, options.sigma);
    let mut lx = range.zero()?; // L x
    let mut z = range.zero()?;
    let mut u = range.zero()?;
    let mut r = range.zero()?;
    let mut d = domain.zero()?;
    op.apply_into(x, &mut lx)?;
    for k in 1..=niter {
        // x ← prox_{τ f}(x − (τ/σ) L*(L x − z + u))
        range.lincomb(T::one(), &lx, -T::one(), &z, &mut r)?;
        range.axpby(T::one(), &u, T::one(), &mut r)?;
        adjoint.apply_into(&r, &mut d)?;
        domain.axpby(T::one(), x, T::of(-tau / sigma), &mut d)?;
        f.proximal_into(tau, &d, x)?;
        // z ← prox_{σ g}(L x + u)
        op.apply_into(x, &mut lx)?;
        range.lincomb(T::one(), &lx, T::one(), &u, &mut r)?;
        g.proximal_into(sigma, &r, &mut z)?;
        // u ← u + L x − z
        range.axpby(T::one(), &lx, T::one(), &mut u)?;
        range.axpby(-T::one(), &z, T::one(), &mut u)?;
        let objective = if options.objective {
            Some(f.value(x)? + g.value(&lx)?)
        } else {
            None
        };
        if report(callback, x, k, objective)? {
            return Ok(SolverInfo::after(k, true, None));
        }
    }
    Ok(SolverInfo::after(niter, false, None))
}
