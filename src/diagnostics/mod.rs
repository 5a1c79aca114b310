//! Diagnostics for users' own operators: adjointness and linearity checks, and proptest
//! strategies that draw random spaces and elements.

mod checks;
pub mod strategies;

pub use checks::{check_adjoint, check_linearity, AdjointReport};
