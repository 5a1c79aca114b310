//! # rodl — operator discretization for inverse problems
//!
//! Discretised function spaces, operators that know their domain and range, operator algebra with
//! exact adjoints, a tomographic ray transform, functionals and iterative solvers — in the style
//! of ODL (the Operator Discretization Library), in Rust.
//!
//! ```
//! use std::sync::Arc;
//! use rodl::{check_adjoint, uniform_discr, Gradient, LinOp, LinearOperatorExt, ScalingOperator};
//!
//! let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[32, 32])?;
//! let grad: LinOp<f64> = Arc::new(Gradient::new(space.clone())?);
//! let op = grad.adjoint()?.compose(&grad)?.scaled(-1.0); // −∇*∇ = div ∘ grad
//! assert!(check_adjoint(op.as_ref(), 3, 7)?.max_rel_error < 1e-12);
//! # Ok::<(), rodl::Error>(())
//! ```
#![warn(missing_docs)]
// `!(a < b)` is used on purpose: it is true for NaN, which must be rejected too.
#![allow(clippy::neg_cmp_op_on_partial_ord)]
// Index loops over several parallel arrays read better than zipped iterators here.
#![allow(clippy::needless_range_loop)]

mod backend;
mod device;
pub mod diagnostics;
mod element;
mod error;
pub mod factory;
pub mod io;
pub mod operator;
pub mod parallel;
mod scalar;
pub mod solvers;
mod space;
mod storage;
pub mod tomo;

pub use device::Device;
pub use diagnostics::{check_adjoint, check_linearity, AdjointReport};
pub use element::Element;
pub use error::{Error, Result};
pub use operator::default::{
    Divergence, Gradient, IdentityOperator, Laplacian, MultiplyOperator, PointwiseNorm,
    ScalingOperator, ZeroOperator,
};
pub use operator::{
    diagonal_operator, power_method_opnorm, BlockOperator, BroadcastOperator, ComponentEmbedding,
    ComponentProjection, Composition, LinOp, LinearOperator, LinearOperatorExt, NormCache, Op,
    Operator, OperatorExt, OperatorSum, ReductionOperator, ScalarMultiple,
};
pub use scalar::{Scalar, ScalarFamily, SliceOf};
pub use space::{rn, uniform_discr, weighted_rn, Pointwise, Pointwise2, Space, UniformPartition};
