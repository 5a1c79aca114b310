//! Functionals (values, gradients, proximal operators, convex conjugates), iterative solvers and
//! their callbacks, and ready-made TV reconstruction ([`tv`]).
//!
//! Solvers only use the spaces' vector operations and the operators' `apply` / `adjoint`, so the
//! same code runs on the host and on a GPU with no host round trip per iteration.
//!
//! # One argument order
//!
//! Every solver takes its arguments in the same order:
//!
//! ```text
//! solver(operator, x, data | functionals, niter, &options, callback)
//! ```
//!
//! 1. **what defines the problem that is not a functional**: the linear operator
//!    (`&dyn LinearOperator<T>`: `&op` for a concrete operator, `&linop` or `linop.as_ref()` for
//!    a shared [`LinOp`](crate::LinOp)), or for the ready-made TV recipes the
//!    [`TvProblem`](tv::TvProblem) that holds operator and data;
//! 2. **the iterate** `x: &mut Element<T>`, updated in place — also the start;
//! 3. **the data** (`rhs`, `data`) or **the functionals** `f, g` (in the order of the objective
//!    `f(x) + g(L x)`);
//! 4. **the number of iterations** `niter`;
//! 5. **the options**, by reference, where the solver has any (step sizes and the like; each
//!    options type has a `Default` or a constructor from the operator such as
//!    [`PdhgOptions::for_operator`](iterative::PdhgOptions::for_operator));
//! 6. **the callback** `&mut dyn Callback<T>`: `&mut ()` for none.
//!
//! and returns a [`SolverInfo`]. A solver without one of the parts skips its place and keeps
//! the order of the rest:
//!
//! | rodl | ODL | arguments |
//! |---|---|---|
//! | [`conjugate_gradient`](fn@iterative::conjugate_gradient) | `conjugate_gradient` | `(op, x, rhs, niter, cb)` |
//! | [`cgls`](fn@iterative::cgls) | `conjugate_gradient_normal` | `(op, x, rhs, niter, cb)` |
//! | [`landweber`](fn@iterative::landweber) | `landweber` (`omega` in the options) | `(op, x, rhs, niter, &LandweberOptions, cb)` |
//! | [`sirt`](fn@iterative::sirt) | — (ASTRA's `SIRT`) | `(op, x, rhs, niter, &SirtOptions, cb)` |
//! | [`mlem`](fn@iterative::mlem) | `mlem` | `(op, x, data, niter, cb)` |
//! | [`osem`](fn@iterative::osem) | `osmlem` | `(&[ops], x, &[data], niter, cb)`: one operator and one data block per subset, as ODL's lists ([`RaySubsets`](iterative::RaySubsets) makes both) |
//! | [`pdhg`](fn@iterative::pdhg) | `pdhg(x, f, g, L, niter, tau, sigma, …)` | `(L, x, f, g, niter, &PdhgOptions, cb)` |
//! | [`pdhg_with_dual`](iterative::pdhg_with_dual) | `pdhg(…, y=…)` | `(L, x, y, f, g, niter, &PdhgOptions, cb)`: the dual iterate after the primal one |
//! | [`admm_linearized`](iterative::admm_linearized) | `admm_linearized(x, f, g, L, tau, sigma, niter, …)` | `(L, x, f, g, niter, &AdmmOptions, cb)` |
//! | [`douglas_rachford_pd`](iterative::douglas_rachford_pd) | `douglas_rachford_pd(x, f, g, L, niter, tau, sigma, …)` | `(L, x, f, g, niter, &DouglasRachfordOptions, cb)` (one `g`, one `L`: stack several with a [`BroadcastOperator`](crate::BroadcastOperator) and a [`SeparableSum`](functional::SeparableSum)) |
//! | [`fista`](fn@iterative::fista) | `accelerated_proximal_gradient(x, f, g, gamma, niter, …)` (ODL's `f` is the proximal one, its `g` the smooth one) | `(x, f, g, niter, &FistaOptions, cb)`: no operator (a data term's operator sits inside the smooth `f`); `f` smooth, `g` proximal |
//! | [`pdhg_tv`](tv::pdhg_tv) | — | `(&TvProblem, x, niter, &PdhgTvOptions, cb)` |
//! | [`fista_tv`](tv::fista_tv) | — | `(&TvProblem, x, niter, &FistaTvOptions, cb)` |
//!
//! The operator comes first, unlike ODL's proximal solvers, which put it after the functionals
//! (`pdhg(x, f, g, L, …)`): in rodl the operator fixes the spaces the rest must belong to, as
//! in the linear solvers, which put it first in ODL too. Passing arguments in ODL's order is a
//! type error (an element where an operator is expected), not a silent mix-up. Elsewhere rodl's
//! names follow ODL's: [`add_gaussian_noise`](crate::tomo::phantom::noise::add_gaussian_noise)
//! adds noise to data, [`white_noise`](crate::tomo::phantom::noise::white_noise) is ODL's
//! `white_noise` (the noise element alone).
//!
//! ```
//! use rodl::prelude::*;
//! use rodl::solvers::functional::{IndicatorNonnegativity, L2NormSquared};
//!
//! let s = rn::<f64>(&[3])?;
//! let a = MultiplyOperator::new(s.clone(), s.element_from_vec(vec![1.0, 2.0, 4.0])?)?;
//! let b = s.element_from_vec(vec![1.0, -2.0, 8.0])?;
//!
//! // operator, iterate, data, iterations, (options,) callback
//! let mut x = s.zero()?;
//! cgls(&a, &mut x, &b, 10, &mut ())?;
//! let mut x_lw = s.zero()?;
//! landweber(&a, &mut x_lw, &b, 500, &LandweberOptions::default(), &mut ())?;
//! assert!(s.dist(&x, &x_lw)? < 1e-8);
//!
//! // operator, iterate, functionals, iterations, options, callback:
//! // min_x ι_{x ≥ 0}(x) + ½ ‖A x − b‖²
//! let f = IndicatorNonnegativity::new(s.clone());
//! let g = L2NormSquared::new(s.clone()).translated(b.try_clone()?)?.scaled(0.5)?;
//! let mut x_pd = s.zero()?;
//! pdhg(&a, &mut x_pd, &f, g.as_ref(), 2000, &PdhgOptions::for_operator(&a)?, &mut ())?;
//! let want = s.element_from_vec(vec![1.0, 0.0, 2.0])?; // the negative entry clamped
//! assert!(s.dist(&x_pd, &want)? < 1e-6);
//! # Ok::<(), rodl::Error>(())
//! ```

pub mod callback;
pub mod functional;
pub mod iterative;
pub mod tv;

pub use callback::{Callback, Control, IterationInfo};
pub use functional::{Func, Functional};
pub use iterative::{SolverInfo, StopReason};
