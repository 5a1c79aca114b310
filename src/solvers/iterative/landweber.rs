//! The Landweber iteration.

use super::common::{check_problem, report, residual_into};
use super::SolverInfo;
use crate::solvers::Callback;
use crate::{AsLinearOperator, Element, Error, LinearOperator, Result, Scalar};

/// Options of [`landweber`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LandweberOptions {
    /// The step `ω`; `None` (the default) takes `1 / ‖A‖²` from
    /// [`LinearOperator::norm_estimate`].
    pub omega: Option<f64>,
}

impl LandweberOptions {
    /// The step `omega`.
    pub fn step(omega: f64) -> Self {
        Self { omega: Some(omega) }
    }
}

/// Landweber's method (ODL's `landweber`; its `omega` is [`LandweberOptions::omega`]) for
/// `A x = b`: `x ← x + ω A*(b − A x)`, `niter` times, updating `x` in
/// place. Returns a [`SolverInfo`]: the iterations done (fewer when the callback stops it) and
/// the final `‖b − A x‖`.
///
/// The step `ω` is [`LandweberOptions::omega`] (by default `1 / ‖A‖²`). The iteration converges to the least-squares solution nearest the start for `0 < ω < 2 / ‖A‖²`.
/// The callback gets `residual = ‖b − A x‖` (range norm) at the new iterate.
///
/// Temporaries: one element of the domain and one of the range, allocated before the loop;
/// each iteration is one application of `A`, one of `A*` and three vector operations, so it
/// runs on the operator's device without host transfers.
///
/// ```
/// use rodl::solvers::iterative::{landweber, LandweberOptions};
/// use rodl::{rn, MultiplyOperator, Operator};
/// let s = rn::<f64>(&[3])?;
/// let a = MultiplyOperator::new(s.clone(), s.element_from_vec(vec![1.0, 2.0, 4.0])?)?;
/// let b = s.element_from_vec(vec![1.0, 1.0, 1.0])?;
/// let mut x = s.zero()?;
/// landweber(&a, &mut x, &b, 500, &LandweberOptions::default(), &mut ())?;
/// let expected = s.element_from_vec(vec![1.0, 0.5, 0.25])?;
/// assert!(s.dist(&x, &expected)? < 1e-10);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn landweber<T: Scalar>(
    op: &(impl AsLinearOperator<T> + ?Sized),
    x: &mut Element<T>,
    rhs: &Element<T>,
    niter: usize,
    options: &LandweberOptions,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    landweber_dyn(op.as_linear(), x, rhs, niter, options, callback)
}

fn landweber_dyn<T: Scalar>(
    op: &dyn LinearOperator<T>,
    x: &mut Element<T>,
    rhs: &Element<T>,
    niter: usize,
    options: &LandweberOptions,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    check_problem(op, x, rhs, "landweber")?;
    let omega = match options.omega {
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
        return Ok(SolverInfo::none());
    }
    let (domain, range) = (op.domain(), op.range());
    let adjoint = op.adjoint()?;
    let mut r = range.zero()?;
    let mut g = domain.zero()?;
    residual_into(op, x, rhs, &mut r)?;
    let w = T::of(omega);
    let mut info = SolverInfo::none();
    for k in 1..=niter {
        adjoint.apply_into(&r, &mut g)?; // g = A*(b − A x)
        domain.axpby(w, &g, T::one(), x)?; // x += ω g
        op.apply_into(x, &mut r)?;
        range.axpby(T::one(), rhs, -T::one(), &mut r)?; // r = b − A x
        let residual = Some(range.norm(&r)?);
        let stopped = report(callback, x, k, residual)?;
        info = SolverInfo::after(k, stopped, residual);
        if stopped {
            break;
        }
    }
    Ok(info)
}
