//! The CUDA projector: the Joseph kernels of `kernels/ray_joseph.cu` (f32) on one GPU.
//!
//! A device-resident domain computes on its data in place. A host-resident one (ODL's way)
//! computes in pieces planned at construction under the memory budget of the
//! [`CudaOptions`] ([`crate::tomo::split`] plans the view groups and volume slabs,
//! `tomo/cuda_pieces.rs` streams them through pinned staging buffers on two copy streams):
//! one piece when everything fits, with the views of a 3D problem still cut into a few groups
//! so that the transfers of one group overlap the kernels of another.

use super::Projector;
use crate::backend::cuda::DeviceTensorOf;
use crate::storage::Storage;
use crate::tomo::backend::{CudaOptions, PieceLayout};
use crate::tomo::cuda::CudaRay;
use crate::tomo::cuda_pieces::{In, Out, PieceRunner};
use crate::tomo::geometry::VecGeometry;
use crate::tomo::grid::Grid;
use crate::tomo::split::{plan, Piece, SplitPlan, SplitProblem};
use crate::{Device, Error, Result, Scalar};

/// View groups a 3D host-data transform is cut into at least, so that the copies of one group
/// overlap the kernels of the next.
const OVERLAP_GROUPS: usize = 4;

/// How the projector computes.
enum Exec {
    /// On device-resident data, in place.
    Whole(CudaRay),
    /// On host-resident data, in pieces.
    Pieces(PieceRunner),
}

/// The GPU projector of one device.
pub(crate) struct CudaProjector {
    id: usize,
    exec: Exec,
}

fn not_f32<T: Scalar>() -> Error {
    Error::Unsupported(format!(
        "the CUDA ray transform computes in f32, not {}",
        T::NAME
    ))
}

/// Whether the forward kernels of the pieces add into their rows (see
/// `CudaRay::forward_adds`), so that a forward needs no scratch rows; decided on the whole grid,
/// which no slab exceeds.
fn forward_adds(geom: &VecGeometry, grid: &Grid) -> bool {
    let [n0, n1, n2] = grid.shape.map(|n| n as u128);
    geom.ndim() == 3 && geom.nv() >= 32 && n0 * n1 * n2 + n1 * n2 + n2 + 1 < i32::MAX as u128
}

/// The slabs and view groups of a host-data transform of `geom` on `grid` under `budget`
/// bytes of GPU `id`: the whole problem when the volume and the data fit (the views of a 3D
/// problem in [`OVERLAP_GROUPS`] groups), else the planner's pieces with two buffers of each
/// kind (one in transfer, one in use) and, where a forward piece stores instead of adding, a
/// third of the data's for its scratch rows.
fn plan_pieces(id: usize, budget: u64, geom: &VecGeometry, grid: &Grid) -> Result<PieceLayout> {
    let ndim = geom.ndim();
    let views = geom.num_views();
    let problem = SplitProblem::new(&grid.shape[..ndim], views, geom.nu() * geom.nv(), 4)
        .on(Device::Cuda(id));
    let n0 = grid.shape[0];
    let whole = Piece {
        views: 0..views,
        slab: 0..n0,
    };
    if problem.piece_bytes(&whole) <= budget as u128 {
        let groups = if ndim == 3 {
            OVERLAP_GROUPS.min(views)
        } else {
            1
        };
        // The planner's own split for a budget that holds the volume and one group's rows.
        let one_group = Piece {
            views: 0..views.div_ceil(groups),
            slab: 0..n0,
        };
        let bytes = problem.piece_bytes(&one_group).min(u64::MAX as u128) as u64;
        return Ok(layout(&plan(&problem, bytes)?));
    }
    let data_buffers = if forward_adds(geom, grid) { 2 } else { 3 };
    Ok(layout(&plan(
        &problem.with_buffers(2, data_buffers),
        budget,
    )?))
}

fn layout(p: &SplitPlan) -> PieceLayout {
    PieceLayout {
        slabs: p.slabs().to_vec(),
        view_groups: p.view_groups().to_vec(),
    }
}

impl CudaProjector {
    /// Uploads the geometry to GPU `opts.device` and compiles the kernels; for a host-resident
    /// `domain`, plans the pieces under the budget. Errors unless `T` is `f32`, and with
    /// [`Error::OutOfMemory`] when not even the smallest pieces fit the budget.
    pub(crate) fn new<T: Scalar>(
        opts: &CudaOptions,
        domain: Device,
        geometry: &VecGeometry,
        grid: &Grid,
    ) -> Result<Self> {
        if T::as_f32_slice(&[]).is_none() {
            return Err(not_f32::<T>());
        }
        let id = opts.device;
        let exec = if domain.is_cuda() {
            Exec::Whole(CudaRay::new(id, geometry, grid)?)
        } else {
            let (free, _) = Device::Cuda(id).memory_info()?;
            let budget = opts.budget_for(free);
            let pieces = plan_pieces(id, budget, geometry, grid)?;
            let runner = PieceRunner::new(id, geometry, grid, pieces.slabs, pieces.view_groups)?;
            let need = runner
                .device_bytes(true, true, true)
                .max(runner.device_bytes(true, true, false));
            if need > budget as u128 {
                return Err(Error::OutOfMemory {
                    what: format!(
                        "the ray transform's pieces ({} slabs × {} view groups)",
                        runner.slabs().len(),
                        runner.groups().len()
                    ),
                    bytes: need,
                    limit: budget,
                    device: Device::Cuda(id),
                });
            }
            Exec::Pieces(runner)
        };
        Ok(Self { id, exec })
    }

    fn wrong<T: Scalar>(&self, what: &str, x: &Storage<T>, out: &Storage<T>) -> Error {
        Error::DeviceMismatch {
            context: what.into(),
            expected: format!("cuda:{} (or the host)", self.id),
            got: format!("{} and {}", x.device(), out.device()),
        }
    }

    fn input<'a, T: Scalar>(&self, s: &'a Storage<T>) -> Result<Option<In<'a>>> {
        Ok(match s {
            Storage::Host(h) => Some(In::Host(
                T::as_f32_slice(h.slice()).ok_or_else(not_f32::<T>)?,
            )),
            Storage::Cuda(d) => {
                let d = T::as_f32::<DeviceTensorOf>(d).ok_or_else(not_f32::<T>)?;
                (d.device_ordinal() == self.id).then(|| In::Device(d.device_addr()))
            }
        })
    }

    fn output<'a, T: Scalar>(&self, s: &'a mut Storage<T>) -> Result<Option<Out<'a>>> {
        Ok(match s {
            Storage::Host(h) => Some(Out::Host(
                T::as_f32_slice_mut(h.slice_mut()).ok_or_else(not_f32::<T>)?,
            )),
            Storage::Cuda(d) => {
                let d = T::as_f32_mut::<DeviceTensorOf>(d).ok_or_else(not_f32::<T>)?;
                (d.device_ordinal() == self.id).then(|| Out::Device(d.device_addr()))
            }
        })
    }

    fn run<T: Scalar>(&self, x: &Storage<T>, out: &mut Storage<T>, transpose: bool) -> Result<()> {
        let what = if transpose {
            "RayTransform adjoint (CUDA)"
        } else {
            "RayTransform (CUDA)"
        };
        match &self.exec {
            Exec::Whole(ray) => Storage::on_gpu(self.id, x, out, what, |a, b| {
                let a = T::as_f32::<DeviceTensorOf>(a).ok_or_else(not_f32::<T>)?;
                let b = T::as_f32_mut::<DeviceTensorOf>(b).ok_or_else(not_f32::<T>)?;
                if transpose {
                    ray.transpose(a, b)
                } else {
                    ray.forward(a, b)
                }
            }),
            Exec::Pieces(runner) => {
                let err = self.wrong(what, x, out);
                let (Some(a), Some(b)) = (self.input(x)?, self.output(out)?) else {
                    return Err(err);
                };
                if transpose {
                    runner.transpose(a, b)
                } else {
                    runner.forward(a, b)
                }
            }
        }
    }
}

impl<T: Scalar> Projector<T> for CudaProjector {
    fn forward(&self, vol: &Storage<T>, sino: &mut Storage<T>) -> Result<()> {
        self.run(vol, sino, false)
    }

    fn transpose(&self, sino: &Storage<T>, vol: &mut Storage<T>) -> Result<()> {
        self.run(sino, vol, true)
    }

    fn pieces(&self) -> Option<PieceLayout> {
        match &self.exec {
            Exec::Whole(_) => None,
            Exec::Pieces(r) => Some(PieceLayout {
                slabs: r.slabs().to_vec(),
                view_groups: r.groups().to_vec(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tomo::geometry::Geometry;
    use crate::UniformPartition;

    fn cone(n: usize, views: usize, rows: usize) -> (VecGeometry, Grid) {
        let part = |lo: &[f64], hi: &[f64], n: &[usize]| UniformPartition::new(lo, hi, n).unwrap();
        let g = Geometry::cone_flat(
            &part(&[0.0], &[std::f64::consts::TAU], &[views]),
            &part(&[-3.0, -3.0], &[3.0, 3.0], &[3 * n / 2, rows]),
            4.0,
            4.0,
            0.0,
            [0.0, 0.0, 1.0],
            [0.0, 0.0],
        )
        .unwrap();
        let grid = Grid::of(&part(&[-1.0; 3], &[1.0; 3], &[n, n, n]));
        (g.vec().clone(), grid)
    }

    /// The device bytes the runner takes for a layout (as `PieceRunner::device_bytes`).
    fn resident(l: &PieceLayout, g: &VecGeometry, grid: &Grid, scratch: bool) -> u128 {
        let two = |n: usize| if n > 1 { 2u128 } else { 1 };
        let slab = l.slabs.iter().map(|s| s.len()).max().unwrap() * grid.shape[1] * grid.shape[2];
        let rows = l.view_groups.iter().map(|v| v.len()).max().unwrap() * g.nu() * g.nv();
        let extra = if scratch && l.slabs.len() > 1 {
            rows as u128
        } else {
            0
        };
        4 * (two(l.slabs.len()) * slab as u128 + two(l.view_groups.len()) * rows as u128 + extra)
    }

    fn covers(r: &[std::ops::Range<usize>], n: usize) -> bool {
        r[0].start == 0
            && r.last().unwrap().end == n
            && r.windows(2).all(|w| w[0].end == w[1].start)
    }

    #[test]
    fn whole_problems_are_one_slab_in_overlapping_view_groups() {
        let (g, grid) = cone(32, 40, 32);
        let l = plan_pieces(0, 1 << 30, &g, &grid).unwrap();
        assert_eq!(l.slabs, vec![0..32]);
        assert_eq!(l.view_groups.len(), OVERLAP_GROUPS);
        assert!(covers(&l.view_groups, 40));
        // Within the budget with its two streamed data buffers.
        let whole = 4 * (32u128 * 32 * 32 + 40 * 48 * 32);
        assert!(resident(&l, &g, &grid, false) <= whole);
    }

    #[test]
    fn small_budgets_give_pieces_within_them() {
        for (rows, adds) in [(32, true), (16, false)] {
            let (g, grid) = cone(32, 40, rows);
            assert_eq!(forward_adds(&g, &grid), adds);
            let whole = 4 * (32u64 * 32 * 32 + 40 * 48 * rows as u64);
            for div in [2, 3, 7, 12] {
                let budget = whole / div;
                let l = plan_pieces(0, budget, &g, &grid).unwrap();
                assert!(l.count() > 1, "{div}");
                assert!(covers(&l.slabs, 32) && covers(&l.view_groups, 40));
                let r = resident(&l, &g, &grid, !adds);
                assert!(r <= budget as u128, "{div}: {r} > {budget}");
            }
        }
    }

    #[test]
    fn budgets_below_the_smallest_piece_are_out_of_memory() {
        let (g, grid) = cone(32, 40, 32);
        match plan_pieces(0, 1000, &g, &grid) {
            Err(Error::OutOfMemory { limit, device, .. }) => {
                assert_eq!(limit, 1000);
                assert_eq!(device, Device::Cuda(0));
            }
            other => panic!("expected out of memory, got {other:?}"),
        }
    }
}
