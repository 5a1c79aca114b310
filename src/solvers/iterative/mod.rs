//! Iterative solvers. Each updates `x` in place and calls a [`Callback`](super::Callback) after
//! every iteration.

mod common;
pub mod landweber;
pub use landweber::landweber;
pub mod conjugate_gradient;
pub use conjugate_gradient::conjugate_gradient;
pub mod cgls;
pub use cgls::cgls;
