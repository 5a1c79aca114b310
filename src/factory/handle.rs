//! What a factory builds: a general operator handle ([`Op`]) or a linear one ([`LinOp`]).
//!
//! The operator algebra exists once for each kind of handle ([`crate::OperatorExt`],
//! [`crate::LinearOperatorExt`]); the sealed trait here forwards to it, so that the factory
//! algebra is written once for both kinds.

use crate::operator::{LinearOperatorExt, OperatorExt};
use crate::{LinOp, Op, Operator, Result, Scalar};

/// The kind of operator a [`Factory`](super::Factory) builds: [`Op<T>`] (a general operator,
/// [`OpFactory`](super::OpFactory)) or [`LinOp<T>`] (a linear operator with its adjoint,
/// [`LinFactory`](super::LinFactory)).
///
/// Sealed: implemented for these two handles only.
pub trait OperatorHandle: Clone + Send + Sync + 'static + sealed::Handle {}

impl<T: Scalar> OperatorHandle for Op<T> {}
impl<T: Scalar> OperatorHandle for LinOp<T> {}

pub(crate) mod sealed {
    use super::*;

    /// The operations a factory needs from the operators it builds.
    pub trait Handle: Sized {
        /// The scalar type of the operator.
        type Scalar: Scalar;
        /// Whether handles of this kind are linear operators.
        const LINEAR: bool;
        /// The operator behind the handle.
        fn operator(&self) -> &dyn Operator<Self::Scalar>;
        /// The handle as a general operator, and as a linear one when it is.
        fn into_parts(self) -> (Op<Self::Scalar>, Option<LinOp<Self::Scalar>>);
        /// `self ∘ right`.
        fn compose(&self, right: &Self) -> Result<Self>;
        /// `self + other`.
        fn plus(&self, other: &Self) -> Result<Self>;
        /// `self - other`.
        fn minus(&self, other: &Self) -> Result<Self>;
        /// `c · self`.
        fn scaled(&self, c: Self::Scalar) -> Result<Self>;
        /// `self · c` (x ↦ self(c·x)).
        fn right_scaled(&self, c: Self::Scalar) -> Result<Self>;
    }

    impl<T: Scalar> Handle for Op<T> {
        type Scalar = T;
        const LINEAR: bool = false;
        fn operator(&self) -> &dyn Operator<T> {
            self.as_ref()
        }
        fn into_parts(self) -> (Op<T>, Option<LinOp<T>>) {
            (self, None)
        }
        fn compose(&self, right: &Self) -> Result<Self> {
            OperatorExt::compose(self, right)
        }
        fn plus(&self, other: &Self) -> Result<Self> {
            OperatorExt::plus(self, other)
        }
        fn minus(&self, other: &Self) -> Result<Self> {
            OperatorExt::minus(self, other)
        }
        fn scaled(&self, c: T) -> Result<Self> {
            OperatorExt::scaled(self, c)
        }
        fn right_scaled(&self, c: T) -> Result<Self> {
            OperatorExt::right_scaled(self, c)
        }
    }

    impl<T: Scalar> Handle for LinOp<T> {
        type Scalar = T;
        const LINEAR: bool = true;
        fn operator(&self) -> &dyn Operator<T> {
            // Upcast through the general handle.
            let op: &dyn Operator<T> = &**self;
            op
        }
        fn into_parts(self) -> (Op<T>, Option<LinOp<T>>) {
            (self.as_op(), Some(self))
        }
        fn compose(&self, right: &Self) -> Result<Self> {
            LinearOperatorExt::compose(self, right)
        }
        fn plus(&self, other: &Self) -> Result<Self> {
            LinearOperatorExt::plus(self, other)
        }
        fn minus(&self, other: &Self) -> Result<Self> {
            LinearOperatorExt::minus(self, other)
        }
        fn scaled(&self, c: T) -> Result<Self> {
            LinearOperatorExt::scaled(self, c)
        }
        fn right_scaled(&self, c: T) -> Result<Self> {
            // For a linear operator A(c·x) = c·A(x); the left form needs no temporary.
            LinearOperatorExt::scaled(self, c)
        }
    }
}
