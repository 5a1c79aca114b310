//! Iterative solvers. Each updates `x` in place and calls a [`Callback`](super::Callback) after
//! every iteration.

mod common;
pub mod landweber;
pub use landweber::landweber;
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
pub mod fista;
pub use fista::{fista, FistaOptions};
pub mod admm;
pub use admm::{admm_linearized, AdmmOptions};
pub mod douglas_rachford;
pub use douglas_rachford::{douglas_rachford_pd, DouglasRachfordOptions};
mod proximal_common;
