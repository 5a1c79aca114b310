//! CGLS: conjugate gradients on the normal equations.

use super::common::{check_problem, report, residual_into};
use super::{SolverInfo, StopReason};
use crate::solvers::Callback;
use crate::{AsLinearOperator, Element, LinearOperator, Result, Scalar};

/// CGLS (ODL's `conjugate_gradient_normal`, same arguments): conjugate gradients on the normal
/// equations `A*A x = A* b`, without forming `A*A`, `niter` iterations from `x`, updating `x` in
/// place.
/// Minimises `‖A x − b‖` over the Krylov spaces; from `x = 0` it converges to the
/// minimum-norm least-squares solution. Returns a [`SolverInfo`]: the iterations done (fewer
/// when the callback stops it, [`StopReason::CallbackStopped`], or the normal-equation residual
/// `A*(b − A x)` vanishes, [`StopReason::Converged`]) and the final `‖b − A x‖`.
///
/// The callback gets `residual = ‖b − A x‖` (range norm of the recursively updated residual).
///
/// Temporaries: two elements of the domain and two of the range, allocated before the loop.
/// Each iteration is one application of `A`, one of `A*`, three fused `axpby` and three
/// reductions (`‖A p‖²`, `‖A* r‖²`, `‖r‖`) — no copies, no host transfers.
///
/// ```
/// use rodl::solvers::iterative::cgls;
/// use rodl::tomo::{parallel_beam_geometry, Backend, RayTransform};
/// use rodl::{uniform_discr, Operator};
/// let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16])?;
/// let ray = RayTransform::new(space.clone(), parallel_beam_geometry(&space, Some(30))?, Backend::default())?;
/// let phantom = space.element_from_fn(|p| if p[0] * p[0] + p[1] * p[1] < 0.5 { 1.0 } else { 0.0 })?;
/// let data = ray.apply(&phantom)?;
/// let mut x = space.zero()?;
/// cgls(&ray, &mut x, &data, 30, &mut ())?;
/// let misfit = ray.range().dist(&ray.apply(&x)?, &data)? / ray.range().norm(&data)?;
/// assert!(misfit < 1e-3);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn cgls<T: Scalar>(
    op: &(impl AsLinearOperator<T> + ?Sized),
    x: &mut Element<T>,
    rhs: &Element<T>,
    niter: usize,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    cgls_dyn(op.as_linear(), x, rhs, niter, callback)
}

fn cgls_dyn<T: Scalar>(
    op: &dyn LinearOperator<T>,
    x: &mut Element<T>,
    rhs: &Element<T>,
    niter: usize,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    check_problem(op, x, rhs, "cgls")?;
    if niter == 0 {
        return Ok(SolverInfo::none());
    }
    let (domain, range) = (op.domain(), op.range());
    let adjoint = op.adjoint()?;
    let mut r = range.zero()?;
    residual_into(op, x, rhs, &mut r)?; // r = b − A x
    let mut s = domain.zero()?;
    adjoint.apply_into(&r, &mut s)?; // s = A* r
    let mut gamma = domain.norm(&s)?.powi(2);
    let mut residual = range.norm(&r)?;
    if gamma == 0.0 {
        return Ok(SolverInfo::new(0, Some(residual), StopReason::Converged));
    }
    let mut p = s.try_clone()?;
    let mut q = range.zero()?;
    for k in 1..=niter {
        op.apply_into(&p, &mut q)?; // q = A p
        let delta = range.norm(&q)?.powi(2);
        if delta == 0.0 {
            return Ok(SolverInfo::new(
                k - 1,
                Some(residual),
                StopReason::Breakdown,
            ));
        }
        let alpha = gamma / delta;
        domain.axpby(T::of(alpha), &p, T::one(), x)?; // x += α p
        range.axpby(T::of(-alpha), &q, T::one(), &mut r)?; // r −= α q
        adjoint.apply_into(&r, &mut s)?; // s = A* r
        let gamma_new = domain.norm(&s)?.powi(2);
        residual = range.norm(&r)?;
        let stopped = report(callback, x, k, Some(residual))?;
        if gamma_new == 0.0 {
            return Ok(SolverInfo::new(k, Some(residual), StopReason::Converged));
        }
        if stopped {
            return Ok(SolverInfo::after(k, true, Some(residual)));
        }
        domain.axpby(T::one(), &s, T::of(gamma_new / gamma), &mut p)?; // p = s + β p
        gamma = gamma_new;
    }
    Ok(SolverInfo::after(niter, false, Some(residual)))
}
