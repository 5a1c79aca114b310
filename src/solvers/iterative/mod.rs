//! Iterative solvers. Each updates `x` in place, calls a [`Callback`](super::Callback) after
//! every iteration and returns a [`SolverInfo`] (iterations done, final residual where known, why
//! it stopped).
//!
//! All take their arguments in one order: the operator, the iterate, the data or the
//! functionals, the number of iterations, the options (by reference, where the solver has
//! any) and the callback — `solver(op, x, data, niter, &options, callback)`; the
//! [`solvers`](super) module lists every solver's arguments with its ODL counterpart.

mod common;
mod info;
pub use info::{SolverInfo, StopReason};
pub mod landweber;
pub use landweber::{landweber, LandweberOptions};
pub mod conjugate_gradient;
pub use conjugate_gradient::conjugate_gradient;
pub mod cgls;
pub use cgls::cgls;
pub mod sirt;
pub use sirt::{sirt, SirtOptions};
pub mod mlem;
pub use mlem::mlem;
pub mod osem;
pub use osem::osem;
pub mod subsets;
pub use subsets::RaySubsets;
pub mod pdhg;
pub use pdhg::{pdhg, pdhg_stepsize, pdhg_with_dual, PdhgOptions};
mod balanced;
pub use balanced::{auto_step_ratio, BalancedPdhg, StepRatio, AUTO_RELATIVE_RESIDUAL};
pub mod fista;
pub use fista::{fista, FistaOptions};
pub mod admm;
pub use admm::{admm_linearized, AdmmOptions};
pub mod douglas_rachford;
pub use douglas_rachford::{douglas_rachford_pd, DouglasRachfordOptions};
mod proximal_common;
