//! The CUDA projector: the Joseph kernels of `kernels/ray_joseph.cu` (f32) on one GPU.
//!
//! A device-resident domain computes on its data in place. A host-resident one (ODL's way)
//! computes in pieces planned at construction under the memory budget of the
//! [`CudaOptions`] ([`crate::tomo::split`] plans the view groups and volume slabs,
//! `tomo/cuda_pieces.rs` sets up each piece's kernels and `backend/cuda/pieces.rs` streams
//! them through pinned staging buffers on two copy streams):
//! one piece when everything fits, with the views of a 3D problem still cut into a few groups
//! so that the transfers of one group overlap the kernels of another. A device-resident domain
//! whose data exceed the budget keeps its volume in place and gets a host-resident range,
//! streamed in view groups.
//!
//! Which mixes a call takes: the domain's and the range's elements where the spaces put them
//! (host and host; device and device; a device volume with host data when the budget forces
//! it). The piece runner itself takes any mix of host and device input and output.

use super::Projector;
use crate::backend::cuda::DeviceTensorOf;
use crate::storage::Storage;
use crate::tomo::backend::{CudaOptions, PieceLayout};
use crate::tomo::cuda::{CudaRay, FORWARD_SEGMENT_PLANES};
use crate::tomo::cuda_pieces::PieceRunner;
use crate::tomo::geometry::VecGeometry;
use crate::tomo::gpu_interface::{GpuPieces, GpuRay, In, Out};
use crate::tomo::grid::Grid;
use crate::tomo::split::{
    align, candidate_counts, even_plan, plan, Piece, SplitPlan, SplitProblem,
};
use crate::{Device, Error, Result, Scalar};
use std::ops::Range;

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
    /// Where the data live: the domain's device, or the host when they exceed the budget.
    range: Device,
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
/// bytes of GPU `id`, the slabs along the geometry's [`VecGeometry::slab_axis`]: the whole
/// problem when the volume and the data fit (the views of a 3D problem in [`OVERLAP_GROUPS`]
/// groups); else the whole volume with the views in groups when the volume fits beside two
/// groups' data; else, among the planner's candidates with two buffers of each kind (one in
/// transfer, one in use) and, where a forward piece stores instead of adding, a third of the
/// data's for its scratch rows, the one of least [`layout_cost`], its slabs along axis 2 cut
/// at multiples of 4 cells where that still fits (the profile transpose's vector path).
fn plan_pieces(id: usize, budget: u64, geom: &VecGeometry, grid: &Grid) -> Result<PieceLayout> {
    let ndim = geom.ndim();
    let views = geom.num_views();
    let axis = geom.slab_axis();
    let problem = SplitProblem::along(geom, grid, axis).on(Device::Cuda(id));
    let n = grid.shape[axis];
    let whole = Piece {
        views: 0..views,
        slab: 0..n,
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
            slab: 0..n,
        };
        let bytes = problem.piece_bytes(&one_group).min(u64::MAX as u128) as u64;
        return Ok(layout(&plan(&problem, bytes)?, axis));
    }
    // A volume that fits beside two buffers of one view's data stays whole: only the views are
    // grouped, each group's rays set up exactly as in the whole transform, and the volume
    // crosses the bus once.
    let volume_bytes = problem.piece_bytes(&Piece {
        views: 0..0,
        slab: 0..n,
    });
    let per_view = 4 * (geom.nu() * geom.nv()) as u128;
    if volume_bytes + 2 * per_view <= budget as u128 {
        return plan_view_groups(id, budget - volume_bytes as u64, geom, grid);
    }
    let data_buffers = if forward_adds(geom, grid) { 2 } else { 3 };
    let problem = problem.with_buffers(2, data_buffers);
    let (k, m) = candidate_counts(&problem, budget)?
        .into_iter()
        .min_by_key(|&(k, m)| (layout_cost(k, m, axis, geom, grid), k))
        .ok_or_else(|| Error::invalid("no layout of the ray transform's pieces"))?;
    let plan = even_plan(&problem, k, m);
    let mut l = layout(&plan, axis);
    if axis == 2 {
        let aligned = align(&l.slabs, 4);
        let fits = aligned.iter().all(|s| {
            l.view_groups.iter().all(|g| {
                problem.piece_bytes(&Piece {
                    views: g.clone(),
                    slab: s.clone(),
                }) <= budget as u128
            })
        });
        if fits {
            l.slabs = aligned;
        }
    }
    Ok(l)
}

/// Fixed cost of one piece in [`layout_cost`]'s unit (its launches and events, some 50 µs).
const PIECE_COST: u128 = 1 << 20;

/// Views sampled for the bands of [`layout_cost`] (evenly spaced; the launches use every view).
const COST_VIEWS: usize = 64;

/// The whole forward's time in tenths of a pass of ray set-ups (one set-up per ray and segment).
/// With [`ADJOINT_PASSES`] (the adjoint's) and [`BAND_PASS`] (each further pass a layout's bands
/// add: the rays of a band cross their slab only partly, with their set-ups, partial segments
/// and atomics), calibrated on an H200 on cone_1024: whole forward 3.05 s and adjoint 4.98 s
/// against a pass of 0.58 s, and with slabs along the rotation axis (device data, 6 to 9 slabs)
/// about 1.5 s per further pass.
const FORWARD_PASSES: u128 = 53;
/// The whole adjoint's time, in tenths of a pass (see [`FORWARD_PASSES`]).
const ADJOINT_PASSES: u128 = 86;
/// The cost of each further pass that bands of rows add, in tenths of a pass (see
/// [`FORWARD_PASSES`]).
const BAND_PASS: u128 = 26;
/// The cost of each further pass with slabs across the rotation axis (whose segments lie wholly
/// in or out of a slab, so that a pass is little more than its set-ups: about 0.6 s on the H200,
/// cone_1024), in tenths of a pass.
const SLAB_PASS: u128 = 10;
/// The unit of the pass constants above: tenths of a pass.
const TENTHS: u128 = 10;

/// What `k` slabs along `axis` × `m` view groups cost one forward and one adjoint of a
/// host-data transform of `geom` on `grid`, in one unit: a thread's ray set-up (about 45 ps on
/// an H200) counts as a byte across the bus (at most 43 ps streamed, measured). Each direction
/// takes the longer of its kernels and its transfers, which overlap: the kernels are the whole
/// transform's ([`FORWARD_PASSES`], [`ADJOINT_PASSES`]) and [`BAND_PASS`] for each pass of
/// set-ups the slabs' launches add ([`SLAB_PASS`] across the rotation axis; a slab's launch sets up the rays of its views that can
/// reach it, the band of [`VecGeometry::rows_through`], or all of them for slabs across the
/// rotation axis, in every segment of the grid's longest axis); the transfers are the data once
/// and the volume once, except that with more than one slab the forward streams the volume once
/// per view group, and with more than one view group the adjoint streams the data once per
/// slab. Each piece adds [`PIECE_COST`]. H200, cone_1024 with slabs along axis 0
/// (a profile of layouts, now `benches/pieces_profile.rs`): each slab added about 0.6 s forward and
/// 0.5 s adjoint, view groups nothing, and up to 110 GB streamed per forward stayed hidden
/// behind the kernels.
fn layout_cost(k: usize, m: usize, axis: usize, geom: &VecGeometry, grid: &Grid) -> u128 {
    let rays = geom.num_views() as u128 * (geom.nu() * geom.nv()) as u128;
    let longest = grid.shape[..geom.ndim()].iter().copied().max().unwrap_or(1);
    let segments = longest.div_ceil(FORWARD_SEGMENT_PLANES as usize) as u128;
    let volume = 4 * grid.shape[..geom.ndim()]
        .iter()
        .map(|&n| n as u128)
        .product::<u128>();
    let data = 4 * rays;
    // The rows each slab's launches take, summed over the slabs (nv per slab without bands).
    let nv = geom.nv().max(1) as u128;
    let n = grid.shape[axis];
    let slabs = crate::tomo::split::even(n, k.clamp(1, n.max(1)));
    let banded = geom.ndim() == 3 && k > 1 && axis == geom.slab_axis();
    let band_rows: u128 = if banded {
        let step = geom.num_views().div_ceil(COST_VIEWS).max(1);
        slabs
            .iter()
            .map(|s| {
                let (min, max) = grid.reach_box(axis, s);
                (0..geom.num_views())
                    .step_by(step)
                    .map(|v| geom.rows_through(v..v + 1, min, max))
                    .fold(None::<Range<usize>>, |acc, b| match (acc, b.is_empty()) {
                        (a, true) => a,
                        (None, false) => Some(b),
                        (Some(a), false) => Some(a.start.min(b.start)..a.end.max(b.end)),
                    })
                    .map_or(0, |b| b.len() as u128)
            })
            .sum()
    } else {
        k as u128 * nv
    };
    let (k, m) = (k as u128, m as u128);
    let pass = rays.saturating_mul(segments);
    // The passes beyond the whole transform's one, in tenths.
    let extra = (band_rows.saturating_mul(TENTHS) / nv).saturating_sub(TENTHS);
    let per_pass = if banded { BAND_PASS } else { SLAB_PASS };
    let kernels = |whole: u128| {
        pass.saturating_mul(whole.saturating_add(extra.saturating_mul(per_pass) / TENTHS)) / TENTHS
    };
    let forward_bytes = if k > 1 {
        m.saturating_mul(volume)
    } else {
        volume
    }
    .saturating_add(data);
    let adjoint_bytes = if m > 1 { k.saturating_mul(data) } else { data }.saturating_add(volume);
    let forward = kernels(FORWARD_PASSES).max(forward_bytes);
    let adjoint = kernels(ADJOINT_PASSES).max(adjoint_bytes);
    forward
        .saturating_add(adjoint)
        .saturating_add((k * m).saturating_mul(PIECE_COST))
}

/// The view groups of a device-resident volume (used in place, one slab) whose data stream
/// through `budget` bytes of GPU `id` in two buffers: the planner's groups for a problem whose
/// volume is a single cell (the volume costs the budget nothing).
fn plan_view_groups(
    id: usize,
    budget: u64,
    geom: &VecGeometry,
    grid: &Grid,
) -> Result<PieceLayout> {
    let problem = SplitProblem::new(&[1], geom.num_views(), geom.nu() * geom.nv(), 4)
        .with_buffers(1, 2)
        .on(Device::Cuda(id));
    let p = plan(&problem, budget.saturating_add(4))?;
    Ok(PieceLayout {
        slab_axis: 0,
        slabs: std::iter::once(0..grid.shape[0]).collect(),
        view_groups: p.view_groups().to_vec(),
    })
}

/// The layout of [`CudaOptions::with_pieces`]: `k` even slabs along the geometry's slab axis
/// (cut at multiples of 4 cells along axis 2, as the planner cuts them) × `m` even view groups.
fn fixed_pieces(
    id: usize,
    k: usize,
    m: usize,
    geom: &VecGeometry,
    grid: &Grid,
) -> Result<PieceLayout> {
    let axis = geom.slab_axis();
    let (cells, views) = (grid.shape[axis], geom.num_views());
    if k == 0 || m == 0 || k > cells || m > views {
        return Err(Error::invalid(format!(
            "CudaOptions::with_pieces({k}, {m}): 1 to {cells} slabs and 1 to {views} view groups"
        )));
    }
    let problem = SplitProblem::along(geom, grid, axis).on(Device::Cuda(id));
    let mut l = layout(&even_plan(&problem, k, m), axis);
    if axis == 2 {
        l.slabs = align(&l.slabs, 4);
    }
    Ok(l)
}

fn layout(p: &SplitPlan, axis: usize) -> PieceLayout {
    PieceLayout {
        slab_axis: axis,
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
        let (free, _) = Device::Cuda(id).memory_info()?;
        let budget = opts.budget_for(free);
        let data_bytes =
            4 * (geometry.num_views() as u128) * (geometry.nu() * geometry.nv()) as u128;
        let host_volume = !domain.is_cuda();
        let host_data = host_volume || data_bytes > budget as u128;
        let exec = if !host_data {
            let mut ray = CudaRay::new(id, geometry, grid)?;
            ray.set_deterministic(opts.deterministic);
            Exec::Whole(ray)
        } else {
            let pieces = if let (true, Some([k, m])) = (host_volume, opts.pieces) {
                fixed_pieces(id, k, m, geometry, grid)?
            } else if host_volume {
                plan_pieces(id, budget, geometry, grid)?
            } else {
                plan_view_groups(id, budget, geometry, grid)?
            };
            let mut runner = PieceRunner::new(
                id,
                geometry,
                grid,
                pieces.slab_axis,
                pieces.slabs,
                pieces.view_groups,
            )?;
            runner.set_deterministic(opts.deterministic);
            let need = runner
                .device_bytes(host_volume, true, true)
                .max(runner.device_bytes(host_volume, true, false));
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
        let range = if host_data { Device::Cpu } else { domain };
        Ok(Self { id, exec, range })
    }

    fn wrong<T: Scalar>(&self, what: &str, x: &Storage<T>, out: &Storage<T>) -> Error {
        Error::device_mismatch(
            what,
            format!("cuda:{} (or the host)", self.id),
            format!("{} and {}", x.device(), out.device()),
        )
    }

    fn input<'a, T: Scalar>(&self, s: &'a Storage<T>) -> Result<Option<In<'a>>> {
        Ok(match s {
            Storage::Host(h) => Some(In::Host(
                T::as_f32_slice(h.slice()).ok_or_else(not_f32::<T>)?,
            )),
            Storage::Cuda(d) => {
                let d = T::as_f32::<DeviceTensorOf>(d).ok_or_else(not_f32::<T>)?;
                (d.device_ordinal() == self.id).then_some(In::Device(d))
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
                (d.device_ordinal() == self.id).then_some(Out::Device(d))
            }
        })
    }

    fn run<T: Scalar>(
        &self,
        x: &Storage<T>,
        out: &mut Storage<T>,
        transpose: bool,
        batch: usize,
    ) -> Result<()> {
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
                    ray.transpose_batch(a, b, batch)
                } else {
                    ray.forward_batch(a, b, batch)
                }
            }),
            Exec::Pieces(_) if batch != 1 => Err(Error::Unsupported(format!(
                "{what}: a batch of {batch} with the data in pieces"
            ))),
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
        self.run(vol, sino, false, 1)
    }

    fn transpose(&self, sino: &Storage<T>, vol: &mut Storage<T>) -> Result<()> {
        self.run(sino, vol, true, 1)
    }

    fn max_batch(&self) -> usize {
        match &self.exec {
            Exec::Whole(ray) => ray.max_batch(),
            Exec::Pieces(_) => 1,
        }
    }

    fn forward_batch(&self, vol: &Storage<T>, sino: &mut Storage<T>, batch: usize) -> Result<()> {
        self.run(vol, sino, false, batch)
    }

    fn transpose_batch(&self, sino: &Storage<T>, vol: &mut Storage<T>, batch: usize) -> Result<()> {
        self.run(sino, vol, true, batch)
    }

    fn range_device(&self) -> Device {
        self.range
    }

    fn pieces(&self) -> Option<PieceLayout> {
        match &self.exec {
            Exec::Whole(_) => None,
            Exec::Pieces(r) => Some(PieceLayout {
                slab_axis: r.axis(),
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
        let slice = grid.shape.iter().product::<usize>() / grid.shape[l.slab_axis];
        let slab = l.slabs.iter().map(|s| s.len()).max().unwrap() * slice;
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
    fn volumes_that_fit_stay_whole_with_the_views_in_groups() {
        let (g, grid) = cone(32, 40, 32);
        let volume = 4 * 32u64 * 32 * 32;
        let per_view = 4 * 48 * 32;
        for budget in [volume + 2 * per_view, volume + 9 * per_view] {
            let l = plan_pieces(0, budget, &g, &grid).unwrap();
            assert_eq!((l.slabs.len(), l.slabs[0].clone()), (1, 0..32));
            assert!(l.view_groups.len() > 1 && covers(&l.view_groups, 40));
            assert!(resident(&l, &g, &grid, false) <= budget as u128);
        }
        // One byte less than the volume and two views' data: slabs.
        let l = plan_pieces(0, volume + 2 * per_view - 1, &g, &grid).unwrap();
        assert!(l.slabs.len() > 1);
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

    #[test]
    fn layouts_weigh_slabs_against_streamed_bytes() {
        // cone_1024 under 2 GiB: slabs along the rotation axis, each seen by a band of rows
        // (1.58 passes of ray set-ups for 6 slabs where slabs across it take 6), and fewer
        // slabs than the fewest pieces (9 × 11) take.
        let (g, grid) = cone(1024, 1024, 1024);
        let l = plan_pieces(0, 2 << 30, &g, &grid).unwrap();
        assert_eq!(l.slab_axis, 2);
        assert_eq!((l.slabs.len(), l.view_groups.len()), (6, 19));
        assert!(l.slabs.iter().all(|s| s.start % 4 == 0), "{:?}", l.slabs);
        assert!(covers(&l.slabs, 1024) && covers(&l.view_groups, 1024));
        assert!(resident(&l, &g, &grid, false) <= 2 << 30);
        let problem = SplitProblem::new(&grid.shape, 1024, 1536 * 1024, 4).with_buffers(2, 2);
        let fewest = plan(&problem, 2 << 30).unwrap();
        assert_eq!((fewest.slabs().len(), fewest.view_groups().len()), (9, 11));
        // Slabs across the rotation axis each set up every ray: the layout cost ranks them
        // behind the same counts along it.
        assert!(layout_cost(6, 19, 0, &g, &grid) > layout_cost(6, 19, 2, &g, &grid));
    }

    #[test]
    fn slab_borders_move_to_multiples_of_four() {
        let slabs = crate::tomo::split::even(1024, 7);
        let a = align(&slabs, 4);
        assert_eq!(a.len(), 7);
        assert!(covers(&a, 1024));
        assert!(a.iter().all(|s| s.start % 4 == 0 && !s.is_empty()));
        // Borders that round together drop the empty slab.
        assert_eq!(align(&[0..1, 1..2, 2..9], 4), vec![0..4, 4..9]);
        assert_eq!(align(&[0..1, 1..2, 2..3], 4), vec![0..3]);
    }
}
