//! The primal–dual hybrid gradient method (Chambolle–Pock).

use super::proximal_common::{check_positive, check_primal_dual, operator_norm, report};
use super::SolverInfo;
use crate::solvers::{Callback, Functional};
use crate::{AsLinearOperator, Element, Error, LinearOperator, Result, Scalar};

/// Step sizes and options of [`pdhg`].
///
/// Convergence needs `τ σ ‖L‖² < 1`; within that, the split between `τ` and `σ` decides the
/// speed. [`PdhgOptions::for_operator`] picks equal steps `τ = σ = 0.99 / ‖L‖`, which suit
/// small, well-scaled problems only; for a data term plus regularisers (reconstruction) use
/// [`PdhgOptions::balanced`] with the step ratio [`auto_step_ratio`](super::auto_step_ratio),
/// or the ready-made [`pdhg_tv`](crate::solvers::tv::pdhg_tv), which does both.
#[derive(Clone, Debug, PartialEq)]
pub struct PdhgOptions {
    /// Primal step `τ` (the proximal step of `f`).
    pub tau: f64,
    /// Dual step `σ` (the proximal step of `g*`).
    pub sigma: f64,
    /// Over-relaxation `θ ∈ [0, 1]` of the primal variable (1 by default); replaced by the
    /// acceleration's value when one is set.
    pub theta: f64,
    /// Strong-convexity constant `γ` of `f`: when set, the steps are adapted every iteration
    /// (`θ = 1/√(1 + 2γτ)`, `τ ← θτ`, `σ ← σ/θ`), which gives the `O(1/k²)` rate.
    pub gamma_primal: Option<f64>,
    /// Strong-convexity constant of `g*`, with the symmetric adaptation.
    pub gamma_dual: Option<f64>,
    /// Report the objective `f(x) + g(L x)` to the callback (one more application of `L` and
    /// two functional values per iteration).
    pub objective: bool,
}

impl PdhgOptions {
    /// Steps `tau` and `sigma`, `θ = 1`, no acceleration, no objective.
    pub fn new(tau: f64, sigma: f64) -> Self {
        Self {
            tau,
            sigma,
            theta: 1.0,
            gamma_primal: None,
            gamma_dual: None,
            objective: false,
        }
    }

    /// `τ = σ = 0.99 / ‖L‖` from [`pdhg_stepsize`] (a norm estimate: up to 100 applications of
    /// `L` and of `L*`).
    ///
    /// Equal steps are fast only when the primal and the dual solution have comparable sizes
    /// and the parts of `L` comparable norms, e.g. denoising with `L = ∇` on unit cells. In
    /// reconstruction neither holds, and they are slow — not a little, but by an order of
    /// magnitude: for TV-regularised reconstruction from 2D parallel-beam data (128² Shepp–Logan,
    /// 6 % noise, `L = (A, ∇)`) they reach 14.5 dB after 200 iterations where the balanced
    /// set-up with the step ratio from the data reaches 31.2 dB, the minimiser's PSNR. There,
    /// use [`PdhgOptions::balanced`] with [`auto_step_ratio`](super::auto_step_ratio) (or the
    /// ready-made [`pdhg_tv`](crate::solvers::tv::pdhg_tv)).
    pub fn for_operator<T: Scalar>(op: &(impl AsLinearOperator<T> + ?Sized)) -> Result<Self> {
        let op = op.as_linear();
        let (tau, sigma) = pdhg_stepsize(op)?;
        Ok(Self::new(tau, sigma))
    }

    /// Sets the over-relaxation `θ`.
    pub fn theta(mut self, theta: f64) -> Self {
        self.theta = theta;
        self
    }

    /// Sets the strong-convexity constant of `f` (acceleration).
    pub fn gamma_primal(mut self, gamma: f64) -> Self {
        self.gamma_primal = Some(gamma);
        self
    }

    /// Sets the strong-convexity constant of `g*` (acceleration).
    pub fn gamma_dual(mut self, gamma: f64) -> Self {
        self.gamma_dual = Some(gamma);
        self
    }

    /// Turns the objective reporting on or off.
    pub fn objective(mut self, on: bool) -> Self {
        self.objective = on;
        self
    }

    fn check(&self) -> Result<()> {
        check_positive(self.tau, "tau", "pdhg")?;
        check_positive(self.sigma, "sigma", "pdhg")?;
        if !(0.0..=1.0).contains(&self.theta) {
            return Err(Error::invalid(format!(
                "pdhg: theta must be in [0, 1], got {}",
                self.theta
            )));
        }
        for g in [self.gamma_primal, self.gamma_dual].into_iter().flatten() {
            if !(g.is_finite() && g >= 0.0) {
                return Err(Error::invalid(format!(
                    "pdhg: acceleration constants must be finite and non-negative, got {g}"
                )));
            }
        }
        Ok(())
    }
}

/// The step sizes `τ = σ = 0.99 / ‖L‖` (so that `τσ‖L‖² < 1`), with `‖L‖` from
/// [`LinearOperator::norm_estimate`].
pub fn pdhg_stepsize<T: Scalar>(op: &(impl AsLinearOperator<T> + ?Sized)) -> Result<(f64, f64)> {
    let op = op.as_linear();
    let s = 0.99 / operator_norm(op, "pdhg")?;
    Ok((s, s))
}

/// The primal–dual hybrid gradient method of Chambolle and Pock for
/// `min_x f(x) + g(L x)`, with `f` and `g` convex with proximal operators and `L` linear.
///
/// ODL's `pdhg(x, f, g, L, niter, tau, sigma)`; rodl puts the operator first, as every solver
/// (see [`solvers`](crate::solvers)): `pdhg(L, x, f, g, niter, &options, callback)`, with
/// `tau`, `sigma` (and ODL's `theta`, `gamma_primal`, `gamma_dual`) in [`PdhgOptions`].
///
/// Each iteration (dual variable `y`, starting at 0):
///
/// ```text
/// y ← prox_{σ g*}(y + σ L x̄)
/// x⁺ ← prox_{τ f}(x − τ L* y)
/// x̄ ← x⁺ + θ (x⁺ − x)
/// ```
///
/// `x` is the start and is updated in place; returns a [`SolverInfo`] with the iterations done
/// (fewer when the callback stops early; no residual). The callback gets `x` and, with
/// [`PdhgOptions::objective`], `f(x) + g(L x)`. Several terms `Σ gᵢ(Lᵢ x)` are handled with a
/// [`SeparableSum`](crate::solvers::functional::SeparableSum) and a
/// [`BroadcastOperator`](crate::BroadcastOperator).
///
/// The steps are the options' ([`PdhgOptions`]: read there which set-up converges fast for
/// your problem).
///
/// Temporaries: two elements of the domain and two of the range, allocated before the loop.
/// An iteration applies `L` and `L*` once each and the two proximal operators, all through the
/// spaces and operators, so it runs on their device without host transfers.
///
/// ```
/// use std::sync::Arc;
/// use rodl::solvers::functional::{Func, FunctionalExt, L1Norm, L2NormSquared};
/// use rodl::solvers::iterative::{pdhg, PdhgOptions};
/// use rodl::{rn, IdentityOperator};
/// // min ½‖x − d‖² + ‖x‖₁: soft thresholding of d by 1.
/// let s = rn::<f64>(&[3])?;
/// let d = s.element_from_vec(vec![3.0, -0.5, -2.0])?;
/// let f = (Arc::new(L2NormSquared::new(s.clone())) as Func<f64>).translated(d)?.scaled(0.5)?;
/// let g = L1Norm::new(s.clone());
/// let id = IdentityOperator::new(s.clone());
/// let mut x = s.zero()?;
/// pdhg(&id, &mut x, f.as_ref(), &g, 100, &PdhgOptions::new(1.0, 0.99), &mut ())?;
/// let want = s.element_from_vec(vec![2.0, 0.0, -1.0])?;
/// assert!(s.dist(&x, &want)? < 1e-12);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn pdhg<T: Scalar>(
    op: &(impl AsLinearOperator<T> + ?Sized),
    x: &mut Element<T>,
    f: &dyn Functional<T>,
    g: &dyn Functional<T>,
    niter: usize,
    options: &PdhgOptions,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    pdhg_dyn(op.as_linear(), x, f, g, niter, options, callback)
}

fn pdhg_dyn<T: Scalar>(
    op: &dyn LinearOperator<T>,
    x: &mut Element<T>,
    f: &dyn Functional<T>,
    g: &dyn Functional<T>,
    niter: usize,
    options: &PdhgOptions,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    let mut y = op.range().zero()?;
    pdhg_with_dual(op, x, &mut y, f, g, niter, options, callback)
}

/// [`pdhg`] with a given dual start `y` (an element of `L`'s range), updated in place: the
/// final dual iterate, for warm restarts or duality-gap checks.
#[allow(clippy::too_many_arguments)]
pub fn pdhg_with_dual<T: Scalar>(
    op: &(impl AsLinearOperator<T> + ?Sized),
    x: &mut Element<T>,
    y: &mut Element<T>,
    f: &dyn Functional<T>,
    g: &dyn Functional<T>,
    niter: usize,
    options: &PdhgOptions,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    pdhg_with_dual_dyn(op.as_linear(), x, y, f, g, niter, options, callback)
}

#[allow(clippy::too_many_arguments)]
fn pdhg_with_dual_dyn<T: Scalar>(
    op: &dyn LinearOperator<T>,
    x: &mut Element<T>,
    y: &mut Element<T>,
    f: &dyn Functional<T>,
    g: &dyn Functional<T>,
    niter: usize,
    options: &PdhgOptions,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    check_primal_dual(x, f, g, op, "pdhg")?;
    op.range().check_member(y, "pdhg: dual variable")?;
    options.check()?;
    if niter == 0 {
        return Ok(SolverInfo::none());
    }
    let (domain, range) = (op.domain(), op.range());
    let adjoint = op.adjoint()?;
    let g_conj = g.convex_conj()?;
    let (mut tau, mut sigma, mut theta) = (options.tau, options.sigma, options.theta);
    // `relax` holds x̄ between iterations and the previous x during the primal step.
    let mut relax = x.try_clone()?;
    let mut primal_tmp = domain.zero()?;
    let mut dual_tmp = range.zero()?;
    for k in 1..=niter {
        // Dual step: y ← prox_{σ g*}(y + σ L x̄).
        op.apply_into(&relax, &mut dual_tmp)?;
        range.axpby(T::one(), y, T::of(sigma), &mut dual_tmp)?;
        g_conj.proximal_into(sigma, &dual_tmp, y)?;
        // Primal step: x ← prox_{τ f}(x − τ L* y).
        adjoint.apply_into(y, &mut primal_tmp)?;
        domain.axpby(T::one(), x, T::of(-tau), &mut primal_tmp)?;
        domain.assign(x, &mut relax)?;
        f.proximal_into(tau, &primal_tmp, x)?;
        if let Some(gamma) = options.gamma_primal {
            theta = 1.0 / (1.0 + 2.0 * gamma * tau).sqrt();
            tau *= theta;
            sigma /= theta;
        }
        if let Some(gamma) = options.gamma_dual {
            theta = 1.0 / (1.0 + 2.0 * gamma * sigma).sqrt();
            tau /= theta;
            sigma *= theta;
        }
        // x̄ = x + θ (x − x_old)
        domain.axpby(T::of(1.0 + theta), x, T::of(-theta), &mut relax)?;
        let objective = if options.objective {
            op.apply_into(x, &mut dual_tmp)?;
            Some(f.value(x)? + g.value(&dual_tmp)?)
        } else {
            None
        };
        if report(callback, x, k, objective)? {
            return Ok(SolverInfo::after(k, true, None));
        }
    }
    Ok(SolverInfo::after(niter, false, None))
}
