//! Functionals (values, gradients, proximal operators, convex conjugates), iterative solvers and
//! their callbacks, and ready-made TV reconstruction ([`tv`]).
//!
//! Solvers only use the spaces' vector operations and the operators' `apply` / `adjoint`, so the
//! same code runs on the host and on a GPU with no host round trip per iteration.

pub mod callback;
pub mod functional;
pub mod iterative;
pub mod tv;

pub use callback::{Callback, Control, IterationInfo};
pub use functional::{Func, Functional};
pub use iterative::{SolverInfo, StopReason};
