//! Checks and reporting shared by the proximal solvers (PDHG, FISTA, linearized ADMM,
//! Douglas–Rachford).

use crate::operator::check_same_space;
use crate::solvers::{Callback, Control, Functional, IterationInfo};
use crate::{Element, Error, LinearOperator, Result, Scalar};

/// Errors unless `v` (a step size or similar parameter called `what`) is finite and positive.
pub(crate) fn check_positive(v: f64, what: &str, solver: &str) -> Result<()> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{solver}: {what} must be finite and positive, got {v}"
        )))
    }
}

/// Errors unless `x` and `f` live on the operator's domain and `g` on its range.
pub(crate) fn check_primal_dual<T: Scalar>(
    x: &Element<T>,
    f: &dyn Functional<T>,
    g: &dyn Functional<T>,
    op: &dyn LinearOperator<T>,
    solver: &str,
) -> Result<()> {
    op.domain().check_member(x, format_args!("{solver}: x"))?;
    check_same_space(op.domain(), f.domain(), &format!("{solver}: domain of f"))?;
    check_same_space(op.range(), g.domain(), &format!("{solver}: domain of g"))
}

/// Calls the callback after iteration `k`; `true` when the solver must stop.
pub(crate) fn report<T: Scalar>(
    callback: &mut dyn Callback<T>,
    x: &Element<T>,
    iteration: usize,
    objective: Option<f64>,
) -> Result<bool> {
    let info = IterationInfo {
        iteration,
        objective,
        residual: None,
    };
    Ok(callback.call(x, &info)? == Control::Stop)
}

/// `‖L‖` from [`LinearOperator::norm_estimate`], checked to be usable for step sizes.
pub(crate) fn operator_norm<T: Scalar>(op: &dyn LinearOperator<T>, solver: &str) -> Result<f64> {
    let n = op.norm_estimate()?;
    if n.is_finite() && n > 0.0 {
        Ok(n)
    } else {
        Err(Error::invalid(format!(
            "{solver}: cannot choose step sizes from the operator norm estimate {n}"
        )))
    }
}
