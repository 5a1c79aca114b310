// The crate documentation is the README (its examples run as doctests).
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
// `!(a < b)` is used on purpose: it is true for NaN, which must be rejected too.
#![allow(clippy::neg_cmp_op_on_partial_ord)]
// Index loops over several parallel arrays read better than zipped iterators here.
#![allow(clippy::needless_range_loop)]

mod backend;
mod device;
pub mod diagnostics;
pub mod distributed;
mod element;
mod error;
pub mod factory;
pub mod interop;
pub mod io;
pub mod memory;
pub mod operator;
pub mod parallel;
pub mod prelude;
pub mod preprocess;
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
    diagonal_operator, power_method_opnorm, AsLinearOperator, AsOperator, BatchedOperator,
    BlockOperator, BroadcastOperator, ComponentEmbedding, ComponentProjection, Composition,
    IntoLinOp, LinOp, LinearOperator, LinearOperatorExt, NormCache, Op, Operator, OperatorExt,
    OperatorSum, ReductionOperator, ScalarMultiple,
};
pub use scalar::{Scalar, ScalarFamily, SliceOf};
pub use space::{
    rn, uniform_discr, weighted_rn, Across, Pointwise, Pointwise2, Space, UniformPartition,
};
