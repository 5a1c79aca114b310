//! MLEM, maximum-likelihood expectation maximisation for Poisson data.

use super::common::report;
use super::SolverInfo;
use crate::operator::check_same_space;
use crate::solvers::Callback;
use crate::{
    AsLinearOperator, Element, Error, LinOp, LinearOperator, Pointwise2, Result, Scalar, Space,
};

/// MLEM (ODL's `mlem`, same arguments) for `y ~ Poisson(A x)`: `x ← x / (A* 1) · A*(y / A x)`,
/// `niter` times, updating `x` in place; it increases the Poisson log-likelihood `Σ y ln(A x) − A x` monotonically. Returns a
/// [`SolverInfo`] with the iterations done (no residual). The callback gets neither residual nor
/// objective (neither is free).
///
/// Needs a non-negative operator (a ray transform), data `y ≥ 0` and a positive start (e.g.
/// `x = 1`); the iterate then stays non-negative. Zero-safe: `y / A x` is 0 where `A x = 0`,
/// and voxels that no ray sees (`A* 1 = 0`) keep their value.
///
/// Temporaries: `1 / A* 1` (one application of `A*` to compute), two more elements of the
/// domain and two of the range, made before the loop. Each iteration is one `A`, one `A*` and
/// three vector operations (four when some voxels are unseen), on the operator's device.
///
/// ```
/// use rodl::solvers::iterative::mlem;
/// use rodl::tomo::{parallel_beam_geometry, Backend, RayTransform};
/// use rodl::{uniform_discr, Operator};
/// let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16])?;
/// let ray = RayTransform::new(space.clone(), parallel_beam_geometry(&space, Some(30))?, Backend::default())?;
/// let phantom = space.element_from_fn(|p| if p[0] * p[0] + p[1] * p[1] < 0.5 { 2.0 } else { 0.5 })?;
/// let data = ray.apply(&phantom)?;
/// let mut x = space.one()?;
/// mlem(&ray, &mut x, &data, 50, &mut ())?;
/// let misfit = ray.range().dist(&ray.apply(&x)?, &data)? / ray.range().norm(&data)?;
/// assert!(misfit < 0.01);
/// assert!(x.as_slice()?.iter().all(|&v| v > 0.0));
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn mlem<T: Scalar>(
    op: &(impl AsLinearOperator<T> + ?Sized),
    x: &mut Element<T>,
    data: &Element<T>,
    niter: usize,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    mlem_dyn(op.as_linear(), x, data, niter, callback)
}

fn mlem_dyn<T: Scalar>(
    op: &dyn LinearOperator<T>,
    x: &mut Element<T>,
    data: &Element<T>,
    niter: usize,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    op.domain().check_member(x, "mlem: x")?;
    if niter == 0 {
        return Ok(SolverInfo::none());
    }
    let mut block = EmBlock::new(op, data, "mlem")?;
    let mut work = EmWork::new(op.domain())?;
    for k in 1..=niter {
        block.step(x, &mut work)?;
        if report(callback, x, k, None)? {
            return Ok(SolverInfo::after(k, true, None));
        }
    }
    Ok(SolverInfo::after(niter, false, None))
}

/// The domain temporaries of an EM update, shared by the blocks of OSEM.
pub(crate) struct EmWork<T: Scalar> {
    back: Element<T>,
    factor: Element<T>,
}

impl<T: Scalar> EmWork<T> {
    pub(crate) fn new(domain: &Space<T>) -> Result<Self> {
        Ok(Self {
            back: domain.zero()?,
            factor: domain.zero()?,
        })
    }
}

/// One block of an EM iteration: its operator, data, inverse sensitivity and range temporaries.
pub(crate) struct EmBlock<'a, T: Scalar> {
    op: &'a dyn LinearOperator<T>,
    adjoint: LinOp<T>,
    data: &'a Element<T>,
    /// `1 / A* 1`, 0 where `A* 1 = 0`.
    inv_sens: Element<T>,
    /// 1 where `A* 1 = 0`, else 0; `None` when every voxel is seen.
    unseen: Option<Element<T>>,
    ax: Element<T>,
    ratio: Element<T>,
}

impl<'a, T: Scalar> EmBlock<'a, T> {
    pub(crate) fn new(
        op: &'a dyn LinearOperator<T>,
        data: &'a Element<T>,
        solver: &str,
    ) -> Result<Self> {
        op.range()
            .check_member(data, format_args!("{solver}: data"))?;
        let (domain, range) = (op.domain(), op.range());
        let adjoint = op.adjoint()?;
        let ratio = range.one()?;
        let mut sens = domain.zero()?;
        adjoint.apply_into(&ratio, &mut sens)?; // A* 1
        let one = domain.one()?;
        let mut inv_sens = domain.zero()?;
        domain.pointwise2(Pointwise2::DivOrZero, &one, &sens, &mut inv_sens)?;
        // unseen = 1 − (sens / sens): exactly 1 where sens = 0 and 0 elsewhere.
        let mut seen = domain.zero()?;
        domain.pointwise2(Pointwise2::DivOrZero, &sens, &sens, &mut seen)?;
        domain.lincomb(T::one(), &one, -T::one(), &seen, &mut sens)?;
        let unseen = if domain.integral(&sens)? == 0.0 {
            None
        } else {
            Some(sens)
        };
        Ok(Self {
            op,
            adjoint,
            data,
            inv_sens,
            unseen,
            ax: range.zero()?,
            ratio,
        })
    }

    /// `x ← x · A*(y / A x) / A* 1` (unseen voxels unchanged).
    pub(crate) fn step(&mut self, x: &mut Element<T>, work: &mut EmWork<T>) -> Result<()> {
        let (domain, range) = (self.op.domain(), self.op.range());
        self.op.apply_into(x, &mut self.ax)?;
        range.pointwise2(Pointwise2::DivOrZero, self.data, &self.ax, &mut self.ratio)?;
        self.adjoint.apply_into(&self.ratio, &mut work.back)?;
        domain.multiply(&work.back, &self.inv_sens, &mut work.factor)?;
        if let Some(u) = &self.unseen {
            domain.axpby(T::one(), u, T::one(), &mut work.factor)?;
        }
        domain.multiply(x, &work.factor, &mut work.back)?;
        std::mem::swap(x, &mut work.back);
        Ok(())
    }
}

/// Errors unless every operator has the domain of the first and there is one data block each.
pub(crate) fn check_blocks<T: Scalar>(
    ops: &[LinOp<T>],
    data: &[Element<T>],
    solver: &str,
) -> Result<()> {
    let Some(first) = ops.first() else {
        return Err(Error::invalid(format!("{solver}: no subsets given")));
    };
    if ops.len() != data.len() {
        return Err(Error::invalid(format!(
            "{solver}: {} operators but {} data blocks",
            ops.len(),
            data.len()
        )));
    }
    for (i, op) in ops.iter().enumerate() {
        check_same_space(
            first.domain(),
            op.domain(),
            &format!("{solver}: domain of subset {i}"),
        )?;
    }
    Ok(())
}
