//! OSEM, ordered-subsets expectation maximisation.

use super::common::report;
use super::mlem::{check_blocks, EmBlock, EmWork};
use super::SolverInfo;
use crate::solvers::Callback;
use crate::{Element, LinOp, Result, Scalar};

/// OSEM (ODL's `osmlem`, same arguments: lists of operators and data blocks): MLEM run over
/// ordered subsets of the data. Each of the `niter` passes makes one EM
/// update per subset, in the given order: `x ← x / (A_i* 1) · A_i*(y_i / A_i x)`, updating `x`
/// in place; the callback is called after each full pass (neither residual nor objective is
/// reported). Returns a [`SolverInfo`] whose `iterations` are the passes done (no residual).
///
/// `ops[i]` is the forward operator of subset `i` (all with the same domain) and `data[i]` its
/// data block, in `ops[i]`'s range. For a ray transform,
/// [`RaySubsets`](super::RaySubsets) makes both from the full operator and sinogram. With `n`
/// subsets a pass costs about one MLEM iteration and typically gains about as much as `n` of
/// them early on (OSEM does not converge to the maximum-likelihood solution for inconsistent
/// data; it cycles near it).
///
/// Same requirements and zero-safety as [`mlem`](fn@super::mlem): non-negative operators, data
/// `≥ 0`, a positive start. Temporaries: per subset `1 / A_i* 1` and two elements of its range,
/// plus two elements of the domain, all made before the loop.
///
/// ```
/// use rodl::solvers::iterative::{mlem, osem, RaySubsets};
/// use rodl::tomo::{parallel_beam_geometry, Backend, RayTransform};
/// use rodl::{uniform_discr, Operator};
/// let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16])?;
/// let ray = RayTransform::new(space.clone(), parallel_beam_geometry(&space, Some(32))?, Backend::default())?;
/// let phantom = space.element_from_fn(|p| if p[0] * p[0] + p[1] * p[1] < 0.5 { 2.0 } else { 0.5 })?;
/// let data = ray.apply(&phantom)?;
/// let subsets = RaySubsets::new(&ray, 4, Backend::default())?;
/// let blocks = subsets.split_data(&data)?;
/// let mut x = space.one()?;
/// osem(subsets.operators(), &mut x, &blocks, 5, &mut ())?;
/// let mut x_mlem = space.one()?;
/// mlem(&ray, &mut x_mlem, &data, 5, &mut ())?;
/// // five passes over four subsets fit the data better than five MLEM iterations
/// let misfit = |x| ray.range().dist(&ray.apply(x)?, &data);
/// assert!(misfit(&x)? < 0.5 * misfit(&x_mlem)?);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn osem<T: Scalar>(
    ops: &[LinOp<T>],
    x: &mut Element<T>,
    data: &[Element<T>],
    niter: usize,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    check_blocks(ops, data, "osem")?;
    let domain = ops[0].domain();
    domain.check_member(x, "osem: x")?;
    if niter == 0 {
        return Ok(SolverInfo::none());
    }
    let mut blocks = ops
        .iter()
        .zip(data)
        .map(|(op, y)| EmBlock::new(op.as_ref(), y, "osem"))
        .collect::<Result<Vec<_>>>()?;
    let mut work = EmWork::new(domain)?;
    for k in 1..=niter {
        for block in &mut blocks {
            block.step(x, &mut work)?;
        }
        if report(callback, x, k, None)? {
            return Ok(SolverInfo::after(k, true, None));
        }
    }
    Ok(SolverInfo::after(niter, false, None))
}
