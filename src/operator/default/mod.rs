//! The default operators: identity, zero, scaling, pointwise multiplication, finite-difference
//! gradient, divergence and Laplacian, pointwise norm.

mod basic;
mod finite_diff;
mod pointwise_norm;

pub use basic::{IdentityOperator, MultiplyOperator, ScalingOperator, ZeroOperator};
pub use finite_diff::{Divergence, Gradient, Laplacian};
pub use pointwise_norm::PointwiseNorm;
