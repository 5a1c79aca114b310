//! The Landweber iteration.

use super::common::{check_problem, report, residual_into};
use crate::solvers::Callback;
use crate::{Element, Error, LinearOperator, Result, Scalar};

/// Landweber's method for `A x = b`: `x ← x + ω A*(b − A x)`, `niter` times, updating `x` in
/// place. Returns the number of iterations done (fewer when the callback stops it).
///
/// `omega` is the step; `None` takes `1 / ‖A‖²` from [`LinearOperator::norm_estimate`]. The
/// iteration converges to the least-squares solution nearest the start for `0 < ω < 2 / ‖A‖²`.
/// The callback gets `residual = ‖b − A x‖` (range norm) at the new iterate.
///
/// Temporaries: one element of the domain and one of the range, allocated before the loop;
/// each iteration is one application of `A`, one of `A*` and three vector operations, so it
/// runs on the operator's device without host transfers.
///
/// ```
/// use rodl::solvers::iterative::landweber;
/// use rodl::{rn, MultiplyOperator, Operator};
/// let s = rn::<f64>(&[3])?;
/// let a = MultiplyOperator::new(s.clone(), s.element_from_vec(vec![1.0, 2.0, 4.0])?)?;
/// let b = s.element_from_vec(vec![1.0, 1.0, 1.0])?;
/// let mut x = s.zero()?;
/// landweber(&a, &mut x, &b, 500, None, &mut ())?;
/// let expected = s.element_from_vec(vec![1.0, 0.5, 0.25])?;
/// assert!(s.dist(&x, &expected)? < 1e-10);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn landweber<T: Scalar>(
    op: &dyn LinearOperator<T>,
    x: &mut Element<T>,
    rhs: &Element<T>,
    niter: usize,
    omega: Option<f64>,
    callback: &mut dyn Callback<T>,
) -> Result<usize> {
    check_problem(op, x, rhs, "landweber")?;
    let omega = match omega {
        Some(w) => w,
        None => {
            let n = op.norm_estimate()?;
            1.0 / (n * n)
        }
    };
    if !(omega.is_finite() && omega > 0.0) {
        return Err(Error::invalid(format!(
            "landweber: the step must be finite and positive, got {omega} \
             (a zero operator gives an infinite default step)"
        )));
    }
    if niter == 0 {
        return Ok(0);
    }
    let (domain, range) = (op.domain(), op.range());
    let adjoint = op.adjoint()?;
    let mut r = range.zero()?;
    let mut g = domain.zero()?;
    residual_into(op, x, rhs, &mut r)?;
    let w = T::of(omega);
    for k in 1..=niter {
        adjoint.apply_into(&r, &mut g)?; // g = A*(b − A x)
        domain.axpby(w, &g, T::one(), x)?; // x += ω g
        op.apply_into(x, &mut r)?;
        range.axpby(T::one(), rhs, -T::one(), &mut r)?; // r = b − A x
        if report(callback, x, k, Some(range.norm(&r)?))? {
            return Ok(k);
        }
    }
    Ok(niter)
}
