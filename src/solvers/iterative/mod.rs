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
