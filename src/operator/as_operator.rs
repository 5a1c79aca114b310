//! Borrowing the operator behind any handle: [`AsOperator`] and [`AsLinearOperator`], the
//! bounds of every entry point that reads an operator (the solvers, the checks, FBP), so that
//! a concrete operator, a shared [`Op`](crate::Op) / [`LinOp`](crate::LinOp) and a `dyn` reference are passed alike.

use std::sync::Arc;

use super::{LinearOperator, Operator};
use crate::Scalar;

/// Anything that is or holds an operator, borrowed: `&op` for a concrete [`Operator`], `&op`
/// for a shared [`Op`](crate::Op) or [`LinOp`](crate::LinOp), and `&dyn Operator<T>` / `&dyn LinearOperator<T>`.
///
/// ```
/// use rodl::{check_linearity, rn, Op, PointwiseNorm, ScalingOperator};
/// use std::sync::Arc;
/// let s = rn::<f64>(&[4])?;
/// let two = ScalingOperator::new(s.clone(), 2.0);
/// assert!(check_linearity(&two, 3, 0)? < 1e-14); // a concrete operator
/// let shared: Op<f64> = Arc::new(two);
/// assert!(check_linearity(&shared, 3, 0)? < 1e-14); // a shared handle, no `.as_ref()`
/// let norm = PointwiseNorm::new(s.power(2)?, 2.0)?; // non-linear
/// assert!(check_linearity(&norm, 3, 0)? > 1e-3);
/// # Ok::<(), rodl::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an operator on `{T}` or a handle of one",
    label = "expected an operator, an `Op<{T}>` or a `LinOp<{T}>`",
    note = "pass a reference: `&op` for a concrete operator or a shared `Op`/`LinOp` (`op.as_ref()` in code generic over the scalar type)"
)]
pub trait AsOperator<T: Scalar> {
    /// The operator, as a trait object.
    fn as_operator(&self) -> &dyn Operator<T>;
}

/// Anything that is or holds a linear operator, borrowed: `&op` for a concrete
/// [`LinearOperator`], `&op` for a shared [`LinOp`](crate::LinOp) (or an `Arc` of a concrete
/// operator), and `&dyn LinearOperator<T>`. The solvers, [`check_adjoint`](crate::check_adjoint),
/// [`fbp_op`](crate::tomo::fbp_op) and the step rules take it.
///
/// The shared handles implement it for `f32` and `f64` (a generic `impl` would collide with the
/// one for every concrete operator): code generic over `T: Scalar` passes `linop.as_ref()`.
///
/// ```
/// use rodl::solvers::iterative::cgls;
/// use rodl::{check_adjoint, rn, LinOp, LinearOperatorExt, MultiplyOperator};
/// let s = rn::<f64>(&[3])?;
/// let a = MultiplyOperator::new(s.clone(), s.element_from_vec(vec![1.0, 2.0, 4.0])?)?;
/// assert!(check_adjoint(&a, 2, 0)?.max_rel_error < 1e-15); // concrete
/// let shared: LinOp<f64> = a.into_linop();
/// assert!(check_adjoint(&shared, 2, 0)?.max_rel_error < 1e-15); // shared
/// assert!(check_adjoint(shared.as_ref(), 2, 0)?.max_rel_error < 1e-15); // &dyn
/// let mut x = s.zero()?;
/// cgls(&shared, &mut x, &s.one()?, 3, &mut ())?; // the solvers alike
/// assert!(s.dist(&x, &s.element_from_vec(vec![1.0, 0.5, 0.25])?)? < 1e-12);
/// # Ok::<(), rodl::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a linear operator on `{T}` or a handle of one",
    label = "expected a linear operator or a `LinOp<{T}>`",
    note = "pass a reference: `&op` for a concrete linear operator or a shared `LinOp` (`linop.as_ref()` in code generic over the scalar type); a general `Op` is not linear"
)]
pub trait AsLinearOperator<T: Scalar> {
    /// The linear operator, as a trait object.
    fn as_linear(&self) -> &dyn LinearOperator<T>;
}

impl<T: Scalar, O: Operator<T>> AsOperator<T> for O {
    fn as_operator(&self) -> &dyn Operator<T> {
        self
    }
}

impl<'a, T: Scalar> AsOperator<T> for dyn Operator<T> + 'a {
    fn as_operator(&self) -> &dyn Operator<T> {
        self
    }
}

impl<'a, T: Scalar> AsOperator<T> for dyn LinearOperator<T> + 'a {
    fn as_operator(&self) -> &dyn Operator<T> {
        self
    }
}

impl<T: Scalar, O: LinearOperator<T>> AsLinearOperator<T> for O {
    fn as_linear(&self) -> &dyn LinearOperator<T> {
        self
    }
}

impl<'a, T: Scalar> AsLinearOperator<T> for dyn LinearOperator<T> + 'a {
    fn as_linear(&self) -> &dyn LinearOperator<T> {
        self
    }
}

// The handles, for each scalar type: a generic `impl<T> … for Arc<…>` would overlap with the
// blanket impls above (a downstream crate could implement the operator traits for `Arc<X>`
// with a scalar type of its own); for `f32` and `f64` it cannot.
macro_rules! handle_impls {
    ($($t:ty),*) => {$(
        /// A shared operator: [`Op`](crate::Op), [`LinOp`](crate::LinOp) or an `Arc` of a concrete operator.
        impl<O: AsOperator<$t> + ?Sized> AsOperator<$t> for Arc<O> {
            fn as_operator(&self) -> &dyn Operator<$t> {
                (**self).as_operator()
            }
        }
        /// A shared linear operator: [`LinOp`](crate::LinOp) or an `Arc` of a concrete one.
        impl<O: AsLinearOperator<$t> + ?Sized> AsLinearOperator<$t> for Arc<O> {
            fn as_linear(&self) -> &dyn LinearOperator<$t> {
                (**self).as_linear()
            }
        }
        impl<'a> AsOperator<$t> for &(dyn Operator<$t> + 'a) {
            fn as_operator(&self) -> &dyn Operator<$t> {
                *self
            }
        }
        impl<'a> AsLinearOperator<$t> for &(dyn LinearOperator<$t> + 'a) {
            fn as_linear(&self) -> &dyn LinearOperator<$t> {
                *self
            }
        }
    )*};
}

handle_impls!(f32, f64);
