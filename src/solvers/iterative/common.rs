//! Checks and steps shared by the iterative solvers.

use crate::solvers::{Callback, Control, IterationInfo};
use crate::{Element, LinearOperator, Result, Scalar};

/// Errors unless `x` is in the operator's domain and `rhs` in its range.
pub(crate) fn check_problem<T: Scalar>(
    op: &dyn LinearOperator<T>,
    x: &Element<T>,
    rhs: &Element<T>,
    solver: &str,
) -> Result<()> {
    op.domain().check_member(x, format_args!("{solver}: x"))?;
    op.range()
        .check_member(rhs, format_args!("{solver}: right-hand side"))
}

/// `r = rhs − A x`; skips the application of `A` when `x` is zero (the usual start).
pub(crate) fn residual_into<T: Scalar>(
    op: &dyn LinearOperator<T>,
    x: &Element<T>,
    rhs: &Element<T>,
    r: &mut Element<T>,
) -> Result<()> {
    let range = op.range();
    if op.domain().norm(x)? == 0.0 {
        return range.assign(rhs, r);
    }
    op.apply_into(x, r)?;
    range.axpby(T::one(), rhs, -T::one(), r)
}

/// Calls the callback after iteration `k`; `true` when the solver must stop.
pub(crate) fn report<T: Scalar>(
    callback: &mut dyn Callback<T>,
    x: &Element<T>,
    iteration: usize,
    residual: Option<f64>,
) -> Result<bool> {
    let info = IterationInfo {
        iteration,
        objective: None,
        residual,
    };
    Ok(callback.call(x, &info)? == Control::Stop)
}
