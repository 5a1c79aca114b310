//! The piece planner: one ray-transform problem split into pieces that add up exactly.
//!
//! A piece is a contiguous group of views and a slab of the volume along its **first axis**
//! (axis 0, the slowest in C order, so a slab is one contiguous run of memory). A backend that
//! cuts slabs along another axis plans with that axis first in the problem's shape (the CUDA
//! projector cuts 3D volumes along the rotation axis, where a slab is seen by a band of
//! detector rows only, and moves the strided slabs itself). By linearity,
//! with `x = Σ_s x_s` (`x_s`: `x` on slab `s`, zero elsewhere),
//!
//! * the forward transform of the views `g` is `(A x)[g] = Σ_s A_{g,s} x_s`, and
//! * the adjoint on slab `s` is `(A* y)[s] = Σ_g (A_{g,s})* y[g]`,
//!
//! where `A_{g,s}` is the ray transform of the sub-geometry of the views `g`
//! ([`Geometry::select_views`]) on the sub-space of the slab `s` ([`slab_space`]), built by
//! [`piece_transform`]. So a caller that holds one piece's data at a time — a GPU under a
//! memory budget, or a host that maps files larger than its memory — computes the same `A x`
//! and `A* y` as the whole problem.
//!
//! **The exactness rule.** rodl's Joseph model (CPU and CUDA alike) marches each ray along the
//! planes of its dominant axis (chosen from the direction and the cell sides alone, never from
//! the grid's extent), interpolates linearly between the two cells around the ray in each other
//! axis, and *drops the taps that fall outside the grid*; the planes it visits are clipped to
//! the box only conservatively (the kernels check every tap). So a sub-grid that is the slab
//! itself, with the same cell sides and world coordinates, sees every ray with the same dominant
//! axis, the same interpolation weights (to rounding of the start point) and the same taps
//! inside the slab, and drops exactly the taps that belong to other slabs, which the pieces of
//! those slabs add. Two consequences:
//!
//! * **No halo is needed**: the layer of zero cells that other interpolation models need on
//!   each side of a slab (so that the interpolation sees the same neighbours) is zero cells for
//!   rodl's model, [`JOSEPH_HALO`]. A backend whose interpolation clamped at the grid's edge
//!   instead of dropping would need one cell; [`SplitProblem::with_halo`] plans for a halo, and
//!   [`slab_space`] builds the padded sub-space (padded only inside the volume: beyond its box
//!   the taps are dropped anyway). Halo cells are zero in a forward piece and discarded from an
//!   adjoint piece.
//! * **The cell sides must be the volume's, bit for bit.** A
//!   [`uniform_discr`](crate::uniform_discr) space on the slab's extent computes its cell side
//!   as `(max − min) / n` again, which rounds differently for most slabs; a ray whose direction
//!   is a tie (or within a rounding of one) between two dominant axes — a diagonal of cubic
//!   cells — then marches along the other axis: a different Joseph sum, 2 % off for 3D
//!   diagonals in the tests. [`piece_transform`] builds a piece's ray transform on the slab's
//!   sub-space with the volume's own cell sides; a backend that sets up its own kernels for
//!   pieces must do the same (keep the whole grid's cell sides and move only its lower corner).
//!
//! `tests/tomo_split.rs` checks the sums against the whole transform for every geometry kind,
//! with slabs along and across the rays' dominant axes, rays through slab borders and on
//! diagonals: relative errors below 1e-14 in f64.
//!
//! **The cost model.** A piece's resident data is its padded slab, its views' data and a
//! caller-given fixed overhead (scratch, staging):
//! `bytes(t, g) = elem · (b_vol · min(t + 2·halo, n₀) · S + b_data · g · C) + overhead`, with `t`
//! the slab thickness, `S` the cells of one slice of the volume (the product of the other axes),
//! `g` the views of the group, `C` the data cells per view and `b_vol`, `b_data` the buffers of
//! each kind a piece holds ([`SplitProblem::with_buffers`], 1 and 1 by default). The plan
//! minimises the number of pieces (`slabs × view groups`: each piece has a fixed cost, a launch
//! or a set-up of its rays and a set of transfers), and among plans with as few pieces takes
//! the one with the fewest slabs, so that the whole volume (one slab, read once, with the views
//! in groups) is preferred whenever it fits. The slabs (and the groups) are then made as even as
//! possible, which keeps the count and never makes a piece larger. When even one slice and one
//! view exceed the budget, planning fails with [`Error::OutOfMemory`] naming that smallest
//! piece. A backend whose slabs and view groups cost differently weighs the candidates of
//! [`candidate_counts`] itself (one per slab thickness, each with the fewest groups beside it)
//! and builds its choice with [`even_plan`]: the CUDA projector does, since a slab there costs
//! a pass of ray set-ups and a view group almost nothing.
//!
//! ```
//! use rodl::tomo::split::{piece_transform, plan, SplitProblem};
//! use rodl::tomo::{parallel_beam_geometry, Backend, RayTransform};
//! use rodl::{uniform_discr, Operator};
//!
//! // 32 × 32 volume, 20 views of 47 cells, f64: the whole problem needs 16 kB + 7.5 kB.
//! let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[32, 32])?;
//! let geometry = parallel_beam_geometry(&space, Some(20))?;
//! let problem = SplitProblem::new(&[32, 32], 20, 47, 8);
//! let split = plan(&problem, 8_000)?;
//! assert!(split.slabs().len() > 1); // the volume alone exceeds the budget
//! assert!(split.pieces().iter().all(|p| problem.piece_bytes(p) <= 8_000));
//!
//! // The pieces add up to the whole transform.
//! let f = |p: &[f64]| 1.0 + p[0] * p[1];
//! let full = RayTransform::new(space.clone(), geometry.clone(), Backend::default())?
//!     .apply(&space.element_from_fn(f)?)?;
//! let mut sum = vec![0.0; 20 * 47];
//! for piece in split.pieces() {
//!     let ray = piece_transform(&space, &geometry, piece, split.halo(), Backend::default())?;
//!     let y = ray.apply(&ray.domain().element_from_fn(f)?)?; // x on the slab (no halo here)
//!     let rows = &mut sum[piece.views.start * 47..piece.views.end * 47];
//!     rows.iter_mut().zip(y.as_slice()?).for_each(|(s, v)| *s += v);
//! }
//! let max = full.as_slice()?.iter().fold(0.0f64, |m, v| m.max(v.abs()));
//! let err = sum.iter().zip(full.as_slice()?).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
//! assert!(err <= 1e-12 * max);
//!
//! // Nothing fits: one slice of 32 cells and one view of 47 cells need 632 bytes.
//! assert!(plan(&problem, 600).is_err());
//! # Ok::<(), rodl::Error>(())
//! ```

use std::ops::Range;

use super::geometry::VecGeometry;
use super::grid::Grid;
use super::{Backend, Geometry, RayTransform};
use crate::{Device, Error, Result, Scalar, Space, UniformPartition};

/// The halo, in cells on each side of a slab, that rodl's Joseph model needs for the pieces to
/// add up exactly: none (it drops the taps outside the grid; see the [module](self)'s rule).
pub const JOSEPH_HALO: usize = 0;

/// One piece of a [`SplitPlan`]: the views `views` (a contiguous range) and the slab `slab` of
/// the volume's first axis (a contiguous range of indices along axis 0, without halo).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Piece {
    /// The views of the piece.
    pub views: Range<usize>,
    /// The slab of the volume along axis 0, without halo.
    pub slab: Range<usize>,
}

/// What the planner splits: the sizes of one ray-transform problem and of its pieces' fixed
/// costs. See the [module](self)'s cost model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitProblem {
    /// The volume's shape (2 or 3 axes; any number ≥ 1 is accepted).
    pub volume_shape: Vec<usize>,
    /// The number of views.
    pub views: usize,
    /// The data cells of one view (`nu`, or `nu · nv`).
    pub cells_per_view: usize,
    /// The bytes of one value (4 for f32, 8 for f64).
    pub elem_size: usize,
    /// Cells of zero halo on each side of a slab (clamped to the volume), [`JOSEPH_HALO`] by
    /// default.
    pub halo: usize,
    /// Fixed bytes of every piece besides its slab and its views' data (scratch, staging).
    pub overhead: u64,
    /// How many buffers of the padded slab's size a piece holds (1 by default; e.g. 2 for an
    /// input slab and an accumulator, or double buffering).
    pub volume_buffers: usize,
    /// How many buffers of its views' data size a piece holds (1 by default).
    pub data_buffers: usize,
    /// Where the budget is, for the error when nothing fits.
    pub device: Device,
}

impl SplitProblem {
    /// The problem of a volume of `volume_shape`, `views` views of `cells_per_view` data cells,
    /// values of `elem_size` bytes; halo [`JOSEPH_HALO`], no overhead, budget on the host.
    pub fn new(
        volume_shape: &[usize],
        views: usize,
        cells_per_view: usize,
        elem_size: usize,
    ) -> Self {
        SplitProblem {
            volume_shape: volume_shape.to_vec(),
            views,
            cells_per_view,
            elem_size,
            halo: JOSEPH_HALO,
            overhead: 0,
            volume_buffers: 1,
            data_buffers: 1,
            device: Device::Cpu,
        }
    }

    /// The problem of the ray transform of `space` (a discretised volume) for `geometry`, in
    /// values of type `T`.
    pub fn of<T: Scalar>(space: &Space<T>, geometry: &Geometry) -> Result<Self> {
        let shape = space.shape()?;
        let data = geometry.data_shape();
        Ok(SplitProblem::new(
            shape,
            data[0],
            data[1..].iter().product(),
            std::mem::size_of::<T>(),
        )
        .on(space.device()))
    }

    /// The problem of the ray transform of `geom` on `grid` in f32 with slabs along `axis`:
    /// the problem's first axis is `axis` (its slices are the product of the other axes), so
    /// that the plan's slabs are ranges along `axis`.
    pub(crate) fn along(geom: &VecGeometry, grid: &Grid, axis: usize) -> Self {
        let ndim = geom.ndim();
        let shape: Vec<usize> = std::iter::once(grid.shape[axis])
            .chain((0..ndim).filter(|&k| k != axis).map(|k| grid.shape[k]))
            .collect();
        SplitProblem::new(&shape, geom.num_views(), geom.nu() * geom.nv(), 4)
    }

    /// With `halo` cells of zero halo on each side of a slab.
    pub fn with_halo(mut self, halo: usize) -> Self {
        self.halo = halo;
        self
    }

    /// With `bytes` of fixed overhead per piece.
    pub fn with_overhead(mut self, bytes: u64) -> Self {
        self.overhead = bytes;
        self
    }

    /// With `volume` buffers of the padded slab's size and `data` buffers of the views' data
    /// size per piece (each at least 1).
    pub fn with_buffers(mut self, volume: usize, data: usize) -> Self {
        self.volume_buffers = volume.max(1);
        self.data_buffers = data.max(1);
        self
    }

    /// With the budget on `device` (named in the error when nothing fits).
    pub fn on(mut self, device: Device) -> Self {
        self.device = device;
        self
    }

    /// The cells of one slice of the volume along axis 0 (the product of the other axes).
    pub fn slice_cells(&self) -> u128 {
        self.volume_shape[1.min(self.volume_shape.len())..]
            .iter()
            .map(|&n| n as u128)
            .product()
    }

    /// The slab of `slab.len()` slices at `slab`, padded with the halo on each side within the
    /// volume: the cells along axis 0 that a piece's sub-space covers.
    pub fn padded(&self, slab: &Range<usize>) -> Range<usize> {
        let n0 = self.volume_shape.first().copied().unwrap_or(0);
        slab.start.saturating_sub(self.halo)..slab.end.saturating_add(self.halo).min(n0)
    }

    /// The resident bytes of `piece`: its padded slab, its views' data and the overhead.
    pub fn piece_bytes(&self, piece: &Piece) -> u128 {
        self.bytes(
            self.padded(&piece.slab).len() as u128,
            piece.views.len() as u128,
        )
    }

    /// The resident bytes of a padded slab of `slices` slices and `views` views.
    fn bytes(&self, slices: u128, views: u128) -> u128 {
        let cells = slices
            .saturating_mul(self.slice_cells())
            .saturating_mul(self.volume_buffers.max(1) as u128)
            .saturating_add(
                views
                    .saturating_mul(self.cells_per_view as u128)
                    .saturating_mul(self.data_buffers.max(1) as u128),
            );
        cells
            .saturating_mul(self.elem_size as u128)
            .saturating_add(self.overhead as u128)
    }

    /// The padded slices of a slab of `t` slices (worst case over positions).
    fn padded_len(&self, t: usize) -> u128 {
        let n0 = self.volume_shape[0] as u128;
        (t as u128).saturating_add(2 * self.halo as u128).min(n0)
    }

    fn check(&self) -> Result<()> {
        if self.volume_shape.is_empty() || self.volume_shape.contains(&0) {
            return Err(Error::invalid(format!(
                "split plan: the volume needs at least one axis and no empty axis, got {:?}",
                self.volume_shape
            )));
        }
        if self.views == 0 || self.cells_per_view == 0 || self.elem_size == 0 {
            return Err(Error::invalid(format!(
                "split plan: needs at least one view, one data cell per view and a non-zero \
                 element size, got {} views of {} cells, {} bytes per value",
                self.views, self.cells_per_view, self.elem_size
            )));
        }
        Ok(())
    }
}

/// A plan: the slabs and view groups whose products are the pieces (see [`plan`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitPlan {
    slabs: Vec<Range<usize>>,
    groups: Vec<Range<usize>>,
    pieces: Vec<Piece>,
    halo: usize,
    max_bytes: u128,
}

impl SplitPlan {
    /// Every piece, view group by view group (all slabs of the first group, then of the next):
    /// the order of a forward projection that accumulates a group's rows over the slabs.
    pub fn pieces(&self) -> &[Piece] {
        &self.pieces
    }

    /// The slabs along axis 0 (without halo), in order; they cover the axis once.
    pub fn slabs(&self) -> &[Range<usize>] {
        &self.slabs
    }

    /// The view groups, in order; they cover the views once.
    pub fn view_groups(&self) -> &[Range<usize>] {
        &self.groups
    }

    /// The halo of the slabs' sub-spaces, in cells on each side (see [`slab_space`]).
    pub fn halo(&self) -> usize {
        self.halo
    }

    /// Whether the plan is the whole problem in one piece.
    pub fn is_whole(&self) -> bool {
        self.pieces.len() == 1
    }

    /// The resident bytes of the largest piece (at most the budget).
    pub fn max_piece_bytes(&self) -> u128 {
        self.max_bytes
    }
}

/// `n` split into `k` contiguous ranges whose lengths differ by at most one (the longer
/// first).
pub(crate) fn even(n: usize, k: usize) -> Vec<Range<usize>> {
    (0..k).map(|i| i * n / k..(i + 1) * n / k).collect()
}

/// `slabs` with their inner borders moved to the nearest multiple of `q` (empty slabs dropped;
/// the first and last borders kept).
pub(crate) fn align(slabs: &[Range<usize>], q: usize) -> Vec<Range<usize>> {
    let end = slabs.last().map_or(0, |s| s.end);
    let mut borders: Vec<usize> = std::iter::once(0)
        .chain(
            slabs
                .iter()
                .skip(1)
                .map(|s| ((s.start + q / 2) / q * q).min(end)),
        )
        .chain(std::iter::once(end))
        .collect();
    borders.dedup();
    borders.windows(2).map(|w| w[0]..w[1]).collect()
}

/// Plans the pieces of `problem` so that each piece's resident data fit in `budget` bytes,
/// with as few pieces as possible (see the [module](self)'s cost model): the candidate of
/// [`candidate_counts`] with the fewest pieces, and among those the fewest slabs.
///
/// Errors with [`Error::OutOfMemory`] when even one slice of the volume (with its halo) and one
/// view exceed the budget, and with [`Error::InvalidArgument`] for an empty problem.
pub fn plan(problem: &SplitProblem, budget: u64) -> Result<SplitPlan> {
    let (k, m) = candidate_counts(problem, budget)?
        .into_iter()
        .min_by_key(|&(k, m)| (k as u128 * m as u128, k))
        .ok_or_else(|| Error::invalid("split plan: no plan found (internal error)"))?;
    Ok(even_plan(problem, k, m))
}

/// The layouts of `problem` under `budget` bytes worth weighing, as (slabs, view groups) by
/// slab count: for each thickness of the slabs (as even as possible), the fewest slabs of that
/// thickness and the fewest view groups that fit beside them. Thinner slabs leave room for
/// larger view groups, so each candidate trades slabs for groups; the list ends with the first
/// candidate whose views form one group (more slabs would gain nothing). A backend whose pieces
/// cost more per slab than per view group (or the reverse) picks from these by its own costs
/// and builds the plan with [`even_plan`]; [`plan`] takes the one with the fewest pieces.
///
/// ```
/// use rodl::tomo::split::{candidate_counts, even_plan, SplitProblem};
///
/// // 64 slices of 1000 cells, 100 views of 500 cells, f32, 120 kB: the volume alone is 256 kB.
/// let problem = SplitProblem::new(&[64, 10, 100], 100, 500, 4);
/// let counts = candidate_counts(&problem, 120_000)?;
/// assert!(counts.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 > w[1].1));
/// for &(slabs, groups) in &counts {
///     let p = even_plan(&problem, slabs, groups);
///     assert_eq!(p.pieces().len(), slabs * groups);
///     assert!(p.max_piece_bytes() <= 120_000);
/// }
/// # Ok::<(), rodl::Error>(())
/// ```
///
/// Errors as [`plan`].
pub fn candidate_counts(problem: &SplitProblem, budget: u64) -> Result<Vec<(usize, usize)>> {
    problem.check()?;
    let n0 = problem.volume_shape[0];
    let views = problem.views;
    let budget = budget as u128;
    let per_view = problem.bytes(0, 1) - problem.overhead as u128;
    let group = |t: usize| -> usize {
        let fixed = problem.bytes(problem.padded_len(t), 0);
        if fixed > budget {
            return 0;
        }
        ((budget - fixed) / per_view).min(views as u128) as usize
    };
    if group(1) == 0 {
        return Err(Error::OutOfMemory {
            what: format!(
                "the smallest piece of the ray transform (a slab of 1 of {n0} slices of {} \
                 cells{}, the data of 1 view of {} cells{})",
                problem.slice_cells(),
                match problem.halo {
                    0 => String::new(),
                    h => format!(" with a halo of {h} on each side"),
                },
                problem.cells_per_view,
                match problem.overhead {
                    0 => String::new(),
                    b => format!(" and {b} bytes of overhead"),
                }
            ),
            bytes: problem.bytes(problem.padded_len(1), 1),
            limit: budget.min(u64::MAX as u128) as u64,
            device: problem.device,
        });
    }
    let mut counts: Vec<(usize, usize)> = Vec::new();
    let mut k = 1;
    while k <= n0 {
        let t = n0.div_ceil(k);
        let g = group(t);
        if g > 0 {
            let m = views.div_ceil(g);
            // Only a candidate with fewer groups than the last one trades anything.
            if counts.last().is_none_or(|&(_, last)| m < last) {
                counts.push((n0.div_ceil(t), m));
            }
            if g == views {
                break;
            }
        }
        k = if t > 1 { n0.div_ceil(t - 1) } else { n0 + 1 };
    }
    Ok(counts)
}

/// The plan of `k` slabs × `m` view groups of `problem` (each clamped to 1 ..= its axis),
/// each as even as possible, the pieces group-major. Whether they fit a budget is the caller's
/// concern ([`candidate_counts`] gives counts that do); [`SplitPlan::max_piece_bytes`] tells.
pub fn even_plan(problem: &SplitProblem, k: usize, m: usize) -> SplitPlan {
    let n0 = problem.volume_shape.first().copied().unwrap_or(1).max(1);
    let slabs = even(n0, k.clamp(1, n0));
    let groups = even(problem.views.max(1), m.clamp(1, problem.views.max(1)));
    let pieces: Vec<Piece> = groups
        .iter()
        .flat_map(|g| {
            slabs.iter().map(move |s| Piece {
                views: g.clone(),
                slab: s.clone(),
            })
        })
        .collect();
    let max_bytes = pieces
        .iter()
        .map(|p| problem.piece_bytes(p))
        .max()
        .unwrap_or(0);
    SplitPlan {
        slabs,
        groups,
        pieces,
        halo: problem.halo,
        max_bytes,
    }
}

/// The sub-space of the slab `slab` (indices along axis 0) of the discretised volume `space`,
/// padded with `halo` cells on each side within the volume: a space like `space` (same cell
/// sides, weighting and device) on the extent of those cells. Returns it and the range of
/// cells along axis 0 it covers. The halo cells are for the caller to set to zero in a forward
/// piece, and to discard from an adjoint piece (they belong to the neighbouring slabs).
///
/// Errors when `space` is not a discretised space or the slab is empty or runs past the axis.
pub fn slab_space<T: Scalar>(
    space: &Space<T>,
    slab: Range<usize>,
    halo: usize,
) -> Result<(Space<T>, Range<usize>)> {
    let part = space.partition().map_err(|_| {
        Error::invalid(format!(
            "slab_space needs a discretised (uniform_discr) volume, got {space}"
        ))
    })?;
    let n0 = part.shape()[0];
    if slab.start >= slab.end || slab.end > n0 {
        return Err(Error::invalid(format!(
            "slab_space: the slab {slab:?} is empty or not within 0..{n0}"
        )));
    }
    let cells = slab.start.saturating_sub(halo)..slab.end.saturating_add(halo).min(n0);
    let h = part.cell_side(0);
    // The box's own end points at the volume's borders (no rounding there), as for views.
    let at = |k: usize| {
        if k == 0 {
            part.min_pt()[0]
        } else if k == n0 {
            part.max_pt()[0]
        } else {
            part.min_pt()[0] + k as f64 * h
        }
    };
    let mut lo = part.min_pt().to_vec();
    let mut hi = part.max_pt().to_vec();
    let mut shape = part.shape().to_vec();
    lo[0] = at(cells.start);
    hi[0] = at(cells.end);
    shape[0] = cells.len();
    let sub = Space::from_partition(UniformPartition::new(&lo, &hi, &shape)?);
    let sub = if space.device() == Device::Cpu {
        sub
    } else {
        sub.with_device(space.device())?
    };
    Ok((sub, cells))
}

/// The ray transform of one piece: the views `piece.views` of `geometry`
/// ([`Geometry::select_views`]) on the sub-space of the slab `piece.slab` of `space` padded
/// with `halo` cells ([`slab_space`]), computing on `backend`. Its projectors keep the whole
/// volume's cell sides bit for bit (the sub-space's own partition may round them differently,
/// and a ray whose direction is within a rounding of a diagonal would then change its dominant
/// axis: a different Joseph sum), so the pieces of a [`SplitPlan`] add up to the whole
/// transform to rounding. A piece of all views keeps the geometry as it is.
///
/// Errors as [`slab_space`], [`Geometry::select_views`] and [`RayTransform::new`] do.
pub fn piece_transform<T: Scalar>(
    space: &Space<T>,
    geometry: &Geometry,
    piece: &Piece,
    halo: usize,
    backend: Backend,
) -> Result<RayTransform<T>> {
    let part = RayTransform::check_domain(space, geometry)?;
    let (sub, cells) = slab_space(space, piece.slab.clone(), halo)?;
    let views = if piece.views == (0..geometry.vec().num_views()) {
        geometry.clone()
    } else {
        geometry.select_views(piece.views.clone())?
    };
    RayTransform::on_grid(sub, views, backend, Grid::of(part).slab(cells))
}

/// An upper estimate of the host scratch the CPU backend allocates during one call of a ray
/// transform (or its adjoint) whose views have `cells_per_view` data cells, in values of
/// `elem_size` bytes, on `threads` worker threads: the set-up rays of one view per thread in the
/// forward, of two views per thread in the back-projection, each ray holding eight values (its
/// start, slopes, weight, back-projection coefficient, sums and scratch) and 32 bytes of
/// indices (plane range, detector index, ordering). A caller that plans pieces of host memory
/// adds it to the per-piece overhead ([`SplitProblem::with_overhead`]).
///
/// ```
/// let bytes = rodl::tomo::split::cpu_scratch_bytes(512 * 512, 4, 4);
/// assert_eq!(bytes, 512 * 512 * 64 * 8);
/// ```
pub fn cpu_scratch_bytes(cells_per_view: usize, elem_size: usize, threads: usize) -> u64 {
    (cells_per_view as u64)
        .saturating_mul(8 * elem_size as u64 + 32)
        .saturating_mul(2 * threads.max(1) as u64)
}
