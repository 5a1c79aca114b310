//! Iterative solvers. Each updates `x` in place and calls a [`Callback`](super::Callback) after
//! every iteration.
