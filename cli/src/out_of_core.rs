//! `project`, `backproject` and `fbp` on data larger than the memory limit: the input is read
//! through a memory map and the output written in place through another (into the output's
//! temporary file, renamed onto the target only when complete: [`crate::output`]), while the
//! work runs in pieces of the library's planner ([`rodl::tomo::split`]): slabs of the volume
//! along its first axis times groups of views, each piece small enough that what it holds in
//! memory stays under the limit.
//!
//! * `project`: for each view group, the projections of the volume's slabs (each copied from
//!   the map) are added into the group's rows of the output; `--noise` is then drawn view group
//!   by view group in the in-memory path's order (the same noise for the same seed).
//! * `backproject`: for each slab, the back-projections of the view groups (each copied from
//!   the map) are added into the slab of the output.
//! * `fbp`: as `backproject`, each view group filtered first with the whole scan's filter and
//!   weights restricted to it ([`rodl::tomo::fbp_op_views`]; the filter works on each view on
//!   its own).
//!
//! The pieces add up to the whole transform (the planner's rule), so the results equal the
//! in-memory ones up to the rounding of the sums (≤ 1e-6 relative in float32).

use std::time::Instant;

use rodl::memory::{format_bytes, host_memory_limit, MEMORY_LIMIT_ENV};
use rodl::tomo::split::{cpu_scratch_bytes, piece_transform, plan, SplitPlan, SplitProblem};
use rodl::tomo::{fbp_op_views, Beam, FbpOptions};
use rodl::{LinearOperator, Operator};

use crate::commands::{Compute, Setup, OVERFLOW_HINT};
use crate::io::{MappedNpy, MappedOutput, NpyScalar};
use crate::noise::Noise;
use crate::output::{Outputs, Slot, WriteError};
use crate::Failure;

/// What is computed in pieces.
#[derive(Clone, Debug)]
pub enum Job {
    /// The ray transform: volume → projection data, with optional noise and its seed.
    Project(Option<(Noise, u64)>),
    /// Its adjoint: projection data → volume.
    Backproject,
    /// Filtered back-projection with these options.
    Fbp(FbpOptions),
}

/// Whether a command whose arrays in memory take `bytes` runs in pieces: when `forced`
/// (`--out-of-core`) or when they exceed the host-memory limit.
pub fn needed(forced: bool, bytes: u128) -> bool {
    forced || bytes > host_memory_limit() as u128
}

/// What a finished run did, for `--verbose`.
pub struct Summary {
    /// The slabs and view groups.
    pub slabs: usize,
    /// See `slabs`.
    pub groups: usize,
    /// The resident bytes of the largest piece.
    pub piece_bytes: u128,
    /// The seconds the pieces took.
    pub seconds: f64,
}

impl Summary {
    /// `in 3 slabs × 4 view groups (pieces of at most 12 MB)`.
    pub fn describe(&self) -> String {
        format!(
            "out of core, in {} slab{} × {} view group{} (pieces of at most {})",
            self.slabs,
            if self.slabs == 1 { "" } else { "s" },
            self.groups,
            if self.groups == 1 { "" } else { "s" },
            format_bytes(self.piece_bytes)
        )
    }
}

/// The bytes that the views of a geometry take in memory, with the copies that the pieces'
/// sub-geometries make (the vectors, angles and FBP's per-view set-up).
const BYTES_PER_VIEW: u64 = 512;

/// Fixed bytes of a piece besides its arrays and the kernels' scratch: thread pools, the
/// filter's row buffers.
const PIECE_SLACK: u64 = 256 << 10;

/// The plan of `job` on `setup` in values of `T`, under the memory limit `limit` (bytes).
fn make_plan<T: NpyScalar>(
    setup: &Setup,
    compute: &Compute,
    job: &Job,
    limit: u64,
) -> Result<(SplitProblem, SplitPlan), Failure> {
    let space = setup.spec.volume.space::<T>()?;
    let geometry = &setup.geometry;
    let problem = SplitProblem::of(&space, geometry)?;
    let cells = problem.cells_per_view;
    let views = problem.views as u64;
    // What a piece holds: its input's copy and its output (and for FBP the filtered data, and
    // for the exact fan-beam FBP the three terms' volumes and their factors).
    let exact_fan = geometry.ndim() == 2 && geometry.vec().beam() == Beam::Point;
    let (volume_buffers, data_buffers) = match job {
        Job::Project(None) | Job::Backproject => (1, 1),
        // The noise holds a clean and a noisy chunk of a view group's rows.
        Job::Project(Some(_)) => (1, 2),
        Job::Fbp(_) if exact_fan => (7, 2),
        Job::Fbp(_) => (2, 2),
    };
    let threads = compute.threads();
    let elem = std::mem::size_of::<T>();
    let mut overhead = cpu_scratch_bytes(cells, elem, threads).saturating_add(PIECE_SLACK);
    if let Job::Fbp(_) = job {
        // The whole scan's per-view weights (before and after the ramp filter, f64, per term of
        // the FBP plan: three for the exact fan-beam plan), made for each view group. They are
        // the size of 2D data, so a 2D fan-beam FBP in pieces needs more memory than in one.
        let terms = if exact_fan { 3 } else { 1 };
        let weights = views.saturating_mul(geometry.vec().nu() as u64 * 16 * terms);
        overhead = overhead.saturating_add(weights);
    }
    let fixed = views.saturating_mul(BYTES_PER_VIEW);
    let budget = limit.saturating_sub(fixed);
    let problem = problem
        .with_buffers(volume_buffers, data_buffers)
        .with_overhead(overhead);
    let split = plan(&problem, budget).map_err(|e| match e {
        rodl::Error::OutOfMemory { what, bytes, .. } => Failure::new(format!(
            "even in pieces, {what} needs {}, more than the memory limit of {} less {} for the \
             geometry (the available memory; the environment variable {MEMORY_LIMIT_ENV} sets \
             another)",
            format_bytes(bytes),
            format_bytes(limit as u128),
            format_bytes(fixed as u128)
        )),
        e => Failure::from(e),
    })?;
    Ok((problem, split))
}

/// Runs `job` in pieces on the mapped `input` (values of type `T`, checked to have the job's
/// input shape), writing the output `slot` of `outputs` in place, under the host-memory limit.
pub fn run<T: NpyScalar>(
    setup: &Setup,
    compute: &Compute,
    job: &Job,
    input: &MappedNpy,
    outputs: &mut Outputs,
    slot: Slot,
) -> Result<Summary, Failure> {
    run_within::<T>(
        setup,
        compute,
        job,
        input,
        outputs,
        slot,
        host_memory_limit(),
    )
}

/// [`run`] under the memory limit `limit` (bytes; `rodl scan --memory`).
pub fn run_within<T: NpyScalar>(
    setup: &Setup,
    compute: &Compute,
    job: &Job,
    input: &MappedNpy,
    outputs: &mut Outputs,
    slot: Slot,
    limit: u64,
) -> Result<Summary, Failure> {
    let (problem, split) = make_plan::<T>(setup, compute, job, limit)?;
    return_freed_memory();
    let (in_shape, out_shape, what) = match job {
        Job::Project(_) => (
            setup.volume_shape().to_vec(),
            setup.data_shape(),
            "the projection",
        ),
        Job::Backproject => (
            setup.data_shape(),
            setup.volume_shape().to_vec(),
            "the back-projection",
        ),
        Job::Fbp(_) => (
            setup.data_shape(),
            setup.volume_shape().to_vec(),
            "the reconstruction",
        ),
    };
    input.check_finite::<T>(&in_shape)?;
    let x = input.data::<T>()?;
    let start = Instant::now();
    outputs.write_in_place(slot, "a result computed in pieces", |file| {
        let mut out = MappedOutput::create::<T>(file, &out_shape)?;
        let y = out.data_mut::<T>()?;
        pieces(setup, compute, job, &problem, &split, x, y).map_err(WriteError::Failure)?;
        out.check_finite::<T>(what, OVERFLOW_HINT)?;
        if let Job::Project(Some((noise, seed))) = job {
            // View group by view group, the draws in the order of the in-memory path.
            let chunk = split.view_groups()[0].len() * problem.cells_per_view;
            let y = out.data_mut::<T>()?;
            noise
                .apply_in_place(y, chunk, *seed)
                .map_err(|e| WriteError::Failure(noise.failure(&e)))?;
            out.check_finite::<T>(
                "the noisy projection",
                "--noise is too strong for the precision (float32 overflows beyond 3.4e38)",
            )?;
        }
        out.flush()?;
        Ok(())
    })?;
    Ok(Summary {
        slabs: split.slabs().len(),
        groups: split.view_groups().len(),
        piece_bytes: split.max_piece_bytes(),
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Makes the allocator give large buffers back to the system when they are freed. (glibc keeps
/// freed buffers of up to 32 MiB for reuse once a large one has been freed, which with the
/// pieces' buffers of changing sizes piles up beyond the limit: 40 % more than planned for an
/// FDK in pieces.)
fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tuning parameter of glibc's allocator (a value it accepts).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
}

/// `acc += add`, entry by entry.
fn add_into<T: NpyScalar>(acc: &mut [T], add: &[T]) {
    acc.iter_mut().zip(add).for_each(|(a, &b)| *a += b);
}

/// The pieces of `split`: `x` the input, `y` the (zeroed) output, both flat in C order.
fn pieces<T: NpyScalar>(
    setup: &Setup,
    compute: &Compute,
    job: &Job,
    problem: &SplitProblem,
    split: &SplitPlan,
    x: &[T],
    y: &mut [T],
) -> Result<(), Failure> {
    let space = setup.spec.volume.space::<T>()?;
    let geometry = &setup.geometry;
    let slice = problem.slice_cells() as usize;
    let view = problem.cells_per_view;
    let halo = split.halo();
    let transform = |views: &std::ops::Range<usize>, slab: &std::ops::Range<usize>| {
        let piece = rodl::tomo::split::Piece {
            views: views.clone(),
            slab: slab.clone(),
        };
        piece_transform(&space, geometry, &piece, halo, compute.backend.clone())
    };
    // The cells of the slab `slab` in a piece's sub-space of the padded cells `cells`.
    let own = |slab: &std::ops::Range<usize>, cells: &std::ops::Range<usize>| {
        (slab.start - cells.start) * slice..(slab.end - cells.start) * slice
    };
    match job {
        Job::Project(_) => {
            for group in split.view_groups() {
                let rows = &mut y[group.start * view..group.end * view];
                for slab in split.slabs() {
                    let ray = transform(group, slab)?;
                    let cells = problem.padded(slab);
                    let mut xs = ray.domain().zero()?;
                    xs.as_slice_mut()?[own(slab, &cells)]
                        .copy_from_slice(&x[slab.start * slice..slab.end * slice]);
                    add_into(rows, ray.apply(&xs)?.as_slice()?);
                }
            }
        }
        Job::Backproject | Job::Fbp(_) => {
            for slab in split.slabs() {
                let cells = problem.padded(slab);
                let out = &mut y[slab.start * slice..slab.end * slice];
                for group in split.view_groups() {
                    let ray = transform(group, slab)?;
                    let rows = x[group.start * view..group.end * view].to_vec();
                    let data = ray.range().element_from_vec(rows)?;
                    let back = match job {
                        Job::Fbp(options) => {
                            fbp_op_views(&ray, geometry, group.clone(), options)?.apply(&data)?
                        }
                        _ => ray.adjoint()?.apply(&data)?,
                    };
                    add_into(out, &back.as_slice()?[own(slab, &cells)]);
                }
            }
        }
    }
    Ok(())
}
