//! The conjugate gradient method for self-adjoint positive definite operators.

use super::common::{check_problem, report, residual_into};
use super::{SolverInfo, StopReason};
use crate::operator::check_same_space;
use crate::solvers::Callback;
use crate::{AsLinearOperator, Element, Error, LinearOperator, Result, Scalar};

/// Conjugate gradients (ODL's `conjugate_gradient`, same arguments) for `A x = b` with `A`
/// self-adjoint and positive definite in the domain's inner product (e.g. `A*A + λI`), `niter`
/// iterations from `x`, updating `x` in place.
/// Returns a [`SolverInfo`]: the iterations done (fewer when the callback stops it, when the
/// residual vanishes — [`StopReason::Converged`] — or when a search direction has zero curvature
/// `⟨p, A p⟩ = 0`, [`StopReason::Breakdown`]) and the final `‖b − A x‖`.
///
/// The callback gets `residual = ‖b − A x‖` (the recursively updated residual, which CG has for
/// free). Errors when `A` maps outside its domain or shows a negative curvature `⟨p, A p⟩ < 0`
/// (not positive semi-definite).
///
/// Temporaries: three elements of the space, allocated before the loop; each iteration is one
/// application of `A`, two reductions and three `axpby`.
///
/// ```
/// use std::sync::Arc;
/// use rodl::solvers::iterative::conjugate_gradient;
/// use rodl::{rn, LinOp, LinearOperatorExt, MultiplyOperator, ScalingOperator};
/// let s = rn::<f64>(&[3])?;
/// let d: LinOp<f64> = Arc::new(MultiplyOperator::new(s.clone(), s.element_from_vec(vec![1.0, 2.0, 3.0])?)?);
/// // (D*D + I) x = b  ⇒  x_i = b_i / (d_i² + 1)
/// let id: LinOp<f64> = Arc::new(ScalingOperator::new(s.clone(), 1.0));
/// let op = d.adjoint()?.compose(&d)?.plus(&id)?;
/// let b = s.element_from_vec(vec![2.0, 5.0, 10.0])?;
/// let mut x = s.zero()?;
/// // three distinct eigenvalues: exact after three iterations, up to rounding
/// assert_eq!(conjugate_gradient(op.as_ref(), &mut x, &b, 3, &mut ())?.iterations, 3);
/// assert!(s.dist(&x, &s.one()?)? < 1e-12);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn conjugate_gradient<T: Scalar>(
    op: &(impl AsLinearOperator<T> + ?Sized),
    x: &mut Element<T>,
    rhs: &Element<T>,
    niter: usize,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    conjugate_gradient_dyn(op.as_linear(), x, rhs, niter, callback)
}

fn conjugate_gradient_dyn<T: Scalar>(
    op: &dyn LinearOperator<T>,
    x: &mut Element<T>,
    rhs: &Element<T>,
    niter: usize,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    check_same_space(
        op.domain(),
        op.range(),
        "conjugate_gradient: range vs domain",
    )?;
    check_problem(op, x, rhs, "conjugate_gradient")?;
    if niter == 0 {
        return Ok(SolverInfo::none());
    }
    let space = op.domain();
    let mut r = space.zero()?;
    residual_into(op, x, rhs, &mut r)?;
    let mut rr = space.norm(&r)?.powi(2);
    if rr == 0.0 {
        return Ok(SolverInfo::new(0, Some(0.0), StopReason::Converged));
    }
    let mut p = r.try_clone()?;
    let mut ap = space.zero()?;
    for k in 1..=niter {
        op.apply_into(&p, &mut ap)?;
        let pap = space.inner(&p, &ap)?;
        if !(pap.is_finite() && pap >= 0.0) {
            return Err(Error::invalid(format!(
                "conjugate_gradient: <p, A p> = {pap} at iteration {k}: the operator is not \
                 positive definite"
            )));
        }
        if pap == 0.0 {
            return Ok(SolverInfo::new(
                k - 1,
                Some(rr.sqrt()),
                StopReason::Breakdown,
            ));
        }
        let alpha = rr / pap;
        space.axpby(T::of(alpha), &p, T::one(), x)?; // x += α p
        space.axpby(T::of(-alpha), &ap, T::one(), &mut r)?; // r −= α A p
        let rr_new = space.norm(&r)?.powi(2);
        let stopped = report(callback, x, k, Some(rr_new.sqrt()))?;
        if rr_new == 0.0 {
            return Ok(SolverInfo::new(k, Some(0.0), StopReason::Converged));
        }
        if stopped {
            return Ok(SolverInfo::after(k, true, Some(rr_new.sqrt())));
        }
        space.axpby(T::one(), &r, T::of(rr_new / rr), &mut p)?; // p = r + β p
        rr = rr_new;
    }
    Ok(SolverInfo::after(niter, false, Some(rr.sqrt())))
}
