//! SIRT, the simultaneous iterative reconstruction technique (ASTRA's variant).

use super::common::{check_problem, report, residual_into};
use super::SolverInfo;
use crate::solvers::Callback;
use crate::{
    AsLinearOperator, Element, Error, LinearOperator, Pointwise, Pointwise2, Result, Scalar,
};

/// Options of [`sirt`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SirtOptions {
    /// The relaxation factor `λ ∈ (0, 2)` multiplying each update (default 1).
    pub relaxation: f64,
    /// Whether to clamp the iterate to `x ≥ 0` after each update (default `false`).
    pub nonnegative: bool,
}

impl Default for SirtOptions {
    fn default() -> Self {
        Self {
            relaxation: 1.0,
            nonnegative: false,
        }
    }
}

/// SIRT as in ASTRA (ODL has no SIRT; the arguments are those of
/// [`landweber`](fn@super::landweber)): `x ← x + λ C A*(R (b − A x))`, `niter` times, updating
/// `x` in place, with
/// `R = 1 / (A 1)` (inverse row sums) and `C = 1 / (A* 1)` (inverse column sums), both set to
/// 0 where the sums vanish (rays that miss the volume, voxels that no ray sees — those keep
/// their value). With [`SirtOptions::nonnegative`] the iterate is clamped to `x ≥ 0` after each
/// update. Returns a [`SolverInfo`]: the iterations done (fewer when the callback stops it) and
/// the final `‖b − A x‖`.
///
/// For a non-negative `A` (a ray transform) this converges to the minimiser of the
/// `R`-weighted misfit `‖b − A x‖_R` (in the `C⁻¹` metric). The weights of the spaces cancel
/// (`C A*` is the same for any constant weighting), so the iteration is ASTRA's for the
/// matrix of `A`. The callback gets `residual = ‖b − A x‖` (range norm) at the new iterate.
///
/// Temporaries: `R`, `C`, two more elements of the range and two of the domain, made before the
/// loop (computing `R` and `C` costs one application of `A` and one of `A*`). Each iteration is
/// one `A`, one `A*` and five vector operations (six with the clamp), on the operator's device.
///
/// ```
/// use rodl::solvers::iterative::{sirt, SirtOptions};
/// use rodl::tomo::{parallel_beam_geometry, Backend, RayTransform};
/// use rodl::{uniform_discr, Operator};
/// let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16])?;
/// let ray = RayTransform::new(space.clone(), parallel_beam_geometry(&space, Some(30))?, Backend::default())?;
/// let phantom = space.element_from_fn(|p| if p[0] * p[0] + p[1] * p[1] < 0.5 { 1.0 } else { 0.0 })?;
/// let data = ray.apply(&phantom)?;
/// let mut x = space.zero()?;
/// let opts = SirtOptions { nonnegative: true, ..Default::default() };
/// sirt(&ray, &mut x, &data, 100, &opts, &mut ())?;
/// let misfit = ray.range().dist(&ray.apply(&x)?, &data)? / ray.range().norm(&data)?;
/// assert!(misfit < 0.02);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn sirt<T: Scalar>(
    op: &(impl AsLinearOperator<T> + ?Sized),
    x: &mut Element<T>,
    rhs: &Element<T>,
    niter: usize,
    options: &SirtOptions,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    sirt_dyn(op.as_linear(), x, rhs, niter, options, callback)
}

fn sirt_dyn<T: Scalar>(
    op: &dyn LinearOperator<T>,
    x: &mut Element<T>,
    rhs: &Element<T>,
    niter: usize,
    options: &SirtOptions,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    check_problem(op, x, rhs, "sirt")?;
    let lambda = options.relaxation;
    if !(lambda > 0.0 && lambda < 2.0) {
        return Err(Error::invalid(format!(
            "sirt: the relaxation must lie in (0, 2), got {lambda}"
        )));
    }
    if niter == 0 {
        return Ok(SolverInfo::none());
    }
    let (domain, range) = (op.domain(), op.range());
    let adjoint = op.adjoint()?;

    // R = 1 / (A 1) and C = 1 / (A* 1), zero where the sums vanish.
    let mut tmp = domain.one()?;
    let mut w = range.one()?;
    let mut ax = range.zero()?;
    let mut g = domain.zero()?;
    let mut row = range.zero()?;
    let mut col = domain.zero()?;
    op.apply_into(&tmp, &mut ax)?;
    range.pointwise2(Pointwise2::DivOrZero, &w, &ax, &mut row)?;
    adjoint.apply_into(&w, &mut g)?;
    domain.pointwise2(Pointwise2::DivOrZero, &tmp, &g, &mut col)?;

    residual_into(op, x, rhs, &mut ax)?; // ax holds b − A x from here on
    let step = T::of(lambda);
    let mut info = SolverInfo::none();
    for k in 1..=niter {
        range.multiply(&ax, &row, &mut w)?; // w = R (b − A x)
        adjoint.apply_into(&w, &mut g)?; // g = A* w
        domain.multiply(&g, &col, &mut tmp)?; // tmp = C g
        domain.axpby(step, &tmp, T::one(), x)?; // x += λ C g
        if options.nonnegative {
            domain.pointwise_inplace(Pointwise::MaxScalar(T::zero()), x)?;
        }
        op.apply_into(x, &mut ax)?;
        range.axpby(T::one(), rhs, -T::one(), &mut ax)?; // ax = b − A x
        let residual = Some(range.norm(&ax)?);
        let stopped = report(callback, x, k, residual)?;
        info = SolverInfo::after(k, stopped, residual);
        if stopped {
            break;
        }
    }
    Ok(info)
}
