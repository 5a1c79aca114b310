//! FISTA, the accelerated proximal gradient method.

use super::proximal_common::{check_positive, report};
use super::SolverInfo;
use crate::operator::check_same_space;
use crate::solvers::{Callback, Functional};
use crate::{Element, Result, Scalar};

/// Options of [`fista`].
#[derive(Clone, Debug, PartialEq)]
pub struct FistaOptions {
    /// A Lipschitz constant `L` of `∇f`; the step is `1/L`.
    pub lipschitz: f64,
    /// Report the objective `f(x) + g(x)` to the callback (two functional values per
    /// iteration).
    pub objective: bool,
}

impl FistaOptions {
    /// The step `1/lipschitz`, no objective reporting.
    pub fn new(lipschitz: f64) -> Self {
        Self {
            lipschitz,
            objective: false,
        }
    }

    /// Turns the objective reporting on or off.
    pub fn objective(mut self, on: bool) -> Self {
        self.objective = on;
        self
    }
}

/// FISTA (Beck and Teboulle), the accelerated proximal gradient method for `min_x f(x) + g(x)`
/// with `f` convex and differentiable with an `L`-Lipschitz gradient and `g` convex with a
/// proximal operator.
///
/// ODL's `accelerated_proximal_gradient(x, f, g, gamma, niter)` names them the other way round
/// (its `f` has the proximal operator, its `g` the gradient) and takes the step `gamma`; here the
/// smooth term comes first, as in the objective `f + g` of the other proximal solvers, and the
/// step is `1 / FistaOptions::lipschitz`. There is no operator argument (the rule of the
/// [`solvers`](crate::solvers) module skips it): a data term's operator sits inside `f`.
///
/// With step `s = 1/L`, `t₁ = 1` and `y₁ = x₀`:
///
/// ```text
/// x_k = prox_{s g}(y_k − s ∇f(y_k))
/// t_{k+1} = (1 + √(1 + 4 t_k²)) / 2
/// y_{k+1} = x_k + (t_k − 1)/t_{k+1} (x_k − x_{k−1})
/// ```
///
/// which gives `F(x_k) − F* ≤ 2L ‖x₀ − x*‖² / (k + 1)²`. A data term `‖A x − b‖²` is
/// [`FunctionalComposition`](crate::solvers::functional::FunctionalComposition) of a translated
/// [`L2NormSquared`](crate::solvers::functional::L2NormSquared) with `A` (Lipschitz constant
/// `2‖A‖²`).
///
/// `x` is the start and is updated in place; returns a [`SolverInfo`] (no residual). The
/// callback gets `x_k` and, with [`FistaOptions::objective`], `f(x_k) + g(x_k)`. Temporaries:
/// three elements of the domain, allocated before the loop.
///
/// ```
/// use rodl::rn;
/// use rodl::solvers::functional::{L1Norm, L2NormSquared};
/// use rodl::solvers::iterative::{fista, FistaOptions};
/// // ‖x‖² + ‖x‖₁ is minimal at 0; with the step 1/2 FISTA lands there at once.
/// let s = rn::<f64>(&[3])?;
/// let mut x = s.element_from_vec(vec![1.0, -2.0, 3.0])?;
/// let (f, g) = (L2NormSquared::new(s.clone()), L1Norm::new(s.clone()));
/// fista(&mut x, &f, &g, 20, &FistaOptions::new(2.0), &mut ())?;
/// assert_eq!(s.norm(&x)?, 0.0);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn fista<T: Scalar>(
    x: &mut Element<T>,
    f: &dyn Functional<T>,
    g: &dyn Functional<T>,
    niter: usize,
    options: &FistaOptions,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    let space = f.domain();
    space.check_member(x, "fista: x")?;
    check_same_space(space, g.domain(), "fista: domain of g")?;
    check_positive(options.lipschitz, "the Lipschitz constant", "fista")?;
    if niter == 0 {
        return Ok(SolverInfo::none());
    }
    let step = 1.0 / options.lipschitz;
    let mut y = x.try_clone()?;
    let mut x_old = space.zero()?;
    let mut tmp = space.zero()?;
    let mut t = 1.0f64;
    for k in 1..=niter {
        // x ← prox_{s g}(y − s ∇f(y))
        f.gradient_into(&y, &mut tmp)?;
        space.axpby(T::one(), &y, T::of(-step), &mut tmp)?;
        space.assign(x, &mut x_old)?;
        g.proximal_into(step, &tmp, x)?;
        let t_next = 0.5 * (1.0 + (1.0 + 4.0 * t * t).sqrt());
        let beta = (t - 1.0) / t_next;
        space.lincomb(T::of(1.0 + beta), x, T::of(-beta), &x_old, &mut y)?;
        t = t_next;
        let objective = if options.objective {
            Some(f.value(x)? + g.value(x)?)
        } else {
            None
        };
        if report(callback, x, k, objective)? {
            return Ok(SolverInfo::after(k, true, None));
        }
    }
    Ok(SolverInfo::after(niter, false, None))
}
