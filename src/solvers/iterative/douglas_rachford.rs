//! The Douglas–Rachford primal–dual splitting method.

use super::proximal_common::{check_positive, check_primal_dual, operator_norm, report};
use super::SolverInfo;
use crate::solvers::{Callback, Functional};
use crate::{AsLinearOperator, Element, Error, LinearOperator, Result, Scalar};

/// Step sizes and options of [`douglas_rachford_pd`].
///
/// Convergence needs `τ σ ‖L‖² < 4` and `0 < λ < 2` ([`DouglasRachfordOptions::for_operator`]
/// picks `τ = σ = 1.98 / ‖L‖`, `λ = 1`).
#[derive(Clone, Debug, PartialEq)]
pub struct DouglasRachfordOptions {
    /// Proximal step `τ` of `f`.
    pub tau: f64,
    /// Proximal step `σ` of `g*`.
    pub sigma: f64,
    /// Relaxation `λ ∈ (0, 2)` (1 by default).
    pub lambda: f64,
    /// Report the objective `f(p) + g(L p)` at the primal estimate `p` to the callback (one
    /// more application of `L` and two functional values per iteration).
    pub objective: bool,
}

impl DouglasRachfordOptions {
    /// Steps `tau` and `sigma`, `λ = 1`, no objective reporting.
    pub fn new(tau: f64, sigma: f64) -> Self {
        Self {
            tau,
            sigma,
            lambda: 1.0,
            objective: false,
        }
    }

    /// `τ = σ = 1.98 / ‖L‖` (so that `τσ‖L‖² < 4`) with `‖L‖` from
    /// [`LinearOperator::norm_estimate`].
    pub fn for_operator<T: Scalar>(op: &(impl AsLinearOperator<T> + ?Sized)) -> Result<Self> {
        let op = op.as_linear();
        let s = 1.98 / operator_norm(op, "douglas_rachford_pd")?;
        Ok(Self::new(s, s))
    }

    /// Sets the relaxation `λ`.
    pub fn lambda(mut self, lambda: f64) -> Self {
        self.lambda = lambda;
        self
    }

    /// Turns the objective reporting on or off.
    pub fn objective(mut self, on: bool) -> Self {
        self.objective = on;
        self
    }
}

/// The Douglas–Rachford type primal–dual method of Boţ and Hendrich (2013, algorithm 3.1;
/// ODL's `douglas_rachford_pd(x, f, g, L, niter, tau, sigma)`, here operator first, with one
/// `g` and one `L`) for `min_x f(x) + g(L x)`, with `f` and `g` convex with proximal operators
/// and `L` linear.
///
/// With the dual variable `v = 0` at the start, each iteration is
///
/// ```text
/// p  = prox_{τ f}(x − τ/2 L* v)            w  = 2p − x
/// q  = prox_{σ g*}(v + σ/2 L w)            w' = 2q − v
/// z  = w − τ/2 L* w'                       x ← x + λ (z − p)
/// z' = w' + σ/2 L(2z − w)                  v ← v + λ (z' − q)
/// ```
///
/// and `p` converges to a minimiser. `x` is the start; on return it holds the last `p`. Returns
/// a [`SolverInfo`] (no residual). The callback gets `p` and, with
/// [`DouglasRachfordOptions::objective`], `f(p) + g(L p)`. Several terms `Σ gᵢ(Lᵢ x)` are
/// handled with a [`SeparableSum`](crate::solvers::functional::SeparableSum) and a
/// [`BroadcastOperator`](crate::BroadcastOperator) (each `σᵢ` equal to `σ`).
///
/// Temporaries: four elements of the domain and four of the range, allocated before the loop;
/// an iteration applies `L` and `L*` twice each.
///
/// ```
/// use rodl::rn;
/// use rodl::solvers::functional::{IndicatorBox, L2NormSquared};
/// use rodl::solvers::iterative::{douglas_rachford_pd, DouglasRachfordOptions};
/// use rodl::IdentityOperator;
/// // min ‖x‖² subject to 1 ≤ x ≤ 2: x = 1.
/// let s = rn::<f64>(&[2])?;
/// let (f, g) = (L2NormSquared::new(s.clone()), IndicatorBox::new(s.clone(), 1.0, 2.0)?);
/// let mut x = s.zero()?;
/// douglas_rachford_pd(&IdentityOperator::new(s.clone()), &mut x, &f, &g, 100,
///                     &DouglasRachfordOptions::new(1.0, 1.0), &mut ())?;
/// assert!(s.dist(&x, &s.one()?)? < 1e-6);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn douglas_rachford_pd<T: Scalar>(
    op: &(impl AsLinearOperator<T> + ?Sized),
    x: &mut Element<T>,
    f: &dyn Functional<T>,
    g: &dyn Functional<T>,
    niter: usize,
    options: &DouglasRachfordOptions,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    douglas_rachford_pd_dyn(op.as_linear(), x, f, g, niter, options, callback)
}

fn douglas_rachford_pd_dyn<T: Scalar>(
    op: &dyn LinearOperator<T>,
    x: &mut Element<T>,
    f: &dyn Functional<T>,
    g: &dyn Functional<T>,
    niter: usize,
    options: &DouglasRachfordOptions,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    let solver = "douglas_rachford_pd";
    check_primal_dual(x, f, g, op, solver)?;
    check_positive(options.tau, "tau", solver)?;
    check_positive(options.sigma, "sigma", solver)?;
    if !(options.lambda > 0.0 && options.lambda < 2.0) {
        return Err(Error::invalid(format!(
            "{solver}: lambda must be in (0, 2), got {}",
            options.lambda
        )));
    }
    if niter == 0 {
        return Ok(SolverInfo::none());
    }
    let (domain, range) = (op.domain(), op.range());
    let adjoint = op.adjoint()?;
    let g_conj = g.convex_conj()?;
    let (tau, sigma) = (options.tau, options.sigma);
    let (half_tau, half_sigma, lam) = (T::of(tau / 2.0), T::of(sigma / 2.0), T::of(options.lambda));
    let one = T::one();
    let two = T::of(2.0);
    let mut p = domain.zero()?;
    let mut w = domain.zero()?;
    let mut z = domain.zero()?;
    let mut td = domain.zero()?;
    let mut v = range.zero()?;
    let mut q = range.zero()?;
    let mut w2 = range.zero()?;
    let mut tr = range.zero()?;
    let mut info = SolverInfo::after(niter, false, None);
    for k in 1..=niter {
        // p = prox_{τ f}(x − τ/2 L* v), w = 2p − x
        adjoint.apply_into(&v, &mut td)?;
        domain.axpby(one, x, -half_tau, &mut td)?;
        f.proximal_into(tau, &td, &mut p)?;
        domain.lincomb(two, &p, -one, x, &mut w)?;
        // q = prox_{σ g*}(v + σ/2 L w), w' = 2q − v
        op.apply_into(&w, &mut tr)?;
        range.axpby(one, &v, half_sigma, &mut tr)?;
        g_conj.proximal_into(sigma, &tr, &mut q)?;
        range.lincomb(two, &q, -one, &v, &mut w2)?;
        // z = w − τ/2 L* w', x ← x + λ (z − p)
        adjoint.apply_into(&w2, &mut td)?;
        domain.lincomb(one, &w, -half_tau, &td, &mut z)?;
        domain.axpby(lam, &z, one, x)?;
        domain.axpby(-lam, &p, one, x)?;
        // z' = w' + σ/2 L(2z − w), v ← v + λ (z' − q)
        domain.lincomb(two, &z, -one, &w, &mut td)?;
        op.apply_into(&td, &mut tr)?;
        range.axpby(one, &w2, half_sigma, &mut tr)?;
        range.axpby(lam, &tr, one, &mut v)?;
        range.axpby(-lam, &q, one, &mut v)?;
        let objective = if options.objective {
            op.apply_into(&p, &mut tr)?;
            Some(f.value(&p)? + g.value(&tr)?)
        } else {
            None
        };
        if report(callback, &p, k, objective)? {
            info = SolverInfo::after(k, true, None);
            break;
        }
    }
    domain.assign(&p, x)?;
    Ok(info)
}
