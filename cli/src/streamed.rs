//! `project`, `backproject` and `fbp` by groups of views, their file I/O overlapped with the
//! transform (issue #34, item 4: the tool's wall time near the time of reading and writing its
//! files).
//!
//! The projection data are cut into groups of consecutive views (about [`GROUP_BYTES`] each),
//! and each group has a ray transform of its own on the device-resident volume
//! ([`rodl::tomo::split::piece_transform`]: the whole volume, the group's views):
//!
//! * `project`: the volume is read and uploaded once; a worker thread projects group after
//!   group while the main thread writes each finished group into its rows of the output file
//!   (positioned writes by all cores), so the write of group `k` runs beside the projection of
//!   group `k + 1`.
//! * `backproject` and `fbp`: a reader thread reads group after group from the input file
//!   (positioned reads by all cores, finite values checked) while the main thread uploads the
//!   previous group and adds its back-projection (for FBP: of its filtered rows,
//!   [`rodl::tomo::fbp_ops_views`], the whole scan's filter and weights restricted to the group)
//!   into the volume. The device's set-up runs beside the first reads.
//!
//! The groups add up to the whole transform (forward: each view's rows are computed as in one
//! call; adjoint and FBP: a sum over the groups), so the results equal the in-memory path's up
//! to the rounding of that sum (float32: ≤ 1e-6 relative).

use std::ops::Range;
use std::sync::mpsc::sync_channel;
use std::time::Instant;

use ndarray::ArrayD;
use rodl::tomo::split::{piece_transform, Piece};
use rodl::tomo::{fbp_filters_views, fbp_ops_views, FbpOptions, RayTransform};
use rodl::{Device, Element, LinOp, LinearOperator, Operator, Scalar, Space};

use crate::commands::{Compute, Setup, OVERFLOW_HINT};
use crate::io::{check_finite_rows, npy_header, write_values_at, NpyScalar, RowReader};
use crate::output::{Outputs, Slot, WriteError};
use crate::stages::Stages;
use crate::Failure;

/// The bytes of projection data in one group of views, by default: large enough that a group
/// keeps a GPU busy (cone_512: 42 or 43 views of 768 × 512), small enough that the first group's read
/// or the last group's write, which nothing overlaps, is short.
pub const GROUP_BYTES: u128 = 64 << 20;

/// The groups of views of data with `views` views and `bytes` bytes computed on `device`:
/// `asked` groups (`Some(1)`: one group, no streaming), else on a GPU groups of about
/// [`GROUP_BYTES`] (one group for data under twice that), and on the CPU one group: there the
/// transform takes far longer than the file I/O it would hide, and the CPU projector loses
/// wall time to its per-call synchronisation over fewer views per call (measured on 128³ with
/// 128 views on two cores: `backproject` 0.48 s in one group, 0.88 s in twelve). Consecutive,
/// of sizes that differ by at most one view.
pub fn view_groups(
    views: usize,
    bytes: u128,
    asked: Option<usize>,
    device: Device,
) -> Result<Vec<Range<usize>>, Failure> {
    let k = match (asked, device) {
        (Some(0), _) => return Err(Failure::usage("--view-groups must be at least 1")),
        (Some(k), _) => k,
        (None, Device::Cpu) => 1,
        (None, _) if bytes < 2 * GROUP_BYTES => 1,
        (None, _) => bytes.div_ceil(GROUP_BYTES).min(usize::MAX as u128) as usize,
    };
    let k = k.clamp(1, views.max(1));
    Ok((0..k).map(|i| i * views / k..(i + 1) * views / k).collect())
}

/// Whether the streamed path's arrays (`bytes` on the device) fit in the free memory of
/// `compute`'s device, with a tenth kept free for the kernels' scratch and the memory pool: a
/// GPU whose memory cannot hold the volume takes the one-group path, whose host arrays stream
/// through the GPU in pieces under its budget. The host's memory is checked before (the
/// in-memory path's limit). Starts the device (call it where its start is wanted).
pub fn fits_on_device(compute: &Compute, bytes: u128) -> Result<bool, Failure> {
    match compute.device {
        Device::Cpu => Ok(true),
        device => {
            let (free, _) = device.memory_info()?;
            Ok(bytes.saturating_mul(10) <= free as u128 * 9)
        }
    }
}

/// The device bytes of the streamed path on `setup` in values of `T` with the view groups
/// `groups` (the largest counts): the volume and a group's data (`project`); the volume twice
/// (the sum and one group's share) and a group's data twice (its upload and, for FBP, its
/// filtered copy) for the back-projections.
pub fn device_bytes<T: Scalar>(setup: &Setup, groups: &[Range<usize>], back: bool) -> u128 {
    let views = groups.iter().map(|g| g.len()).max().unwrap_or(0);
    let size = std::mem::size_of::<T>() as u128;
    let volume = setup
        .volume_shape()
        .iter()
        .map(|&n| n as u128)
        .product::<u128>()
        * size;
    let row: u128 = setup.data_shape()[1..]
        .iter()
        .map(|&n| n as u128)
        .product::<u128>()
        * size;
    let group = row * views as u128;
    if back {
        2 * volume + 2 * group
    } else {
        volume + group
    }
}

/// The ray transforms of the view groups `groups` of `setup`'s geometry on its volume on
/// `compute`'s device.
pub fn group_transforms<T: Scalar>(
    setup: &Setup,
    compute: &Compute,
    groups: &[Range<usize>],
) -> Result<Vec<RayTransform<T>>, Failure> {
    let space = compute.volume::<T>(setup)?;
    let n0 = setup.volume_shape()[0];
    groups
        .iter()
        .map(|views| {
            let piece = Piece {
                views: views.clone(),
                slab: 0..n0,
            };
            Ok(piece_transform(
                &space,
                &setup.geometry,
                &piece,
                0,
                compute.backend.clone(),
            )?)
        })
        .collect()
}

/// Projects the volume `x` with the group transforms `rays` (of the view groups `groups`) into
/// the `.npy` output `slot` of shape `data_shape`, writing each group as soon as it is computed.
/// Non-finite values are an error before their group is written (the output is then not
/// committed). `stages` gets the upload, the transform (the worker's busy time), the write
/// (the main thread's busy time) and the streamed part's wall time.
pub fn project<T: NpyScalar>(
    rays: &[RayTransform<T>],
    groups: &[Range<usize>],
    x: ArrayD<T>,
    data_shape: &[usize],
    outputs: &mut Outputs,
    slot: Slot,
    stages: &mut Stages,
) -> Result<(), Failure> {
    let first = rays
        .first()
        .ok_or_else(|| Failure::new("internal error: no view groups"))?;
    let x = stages.time("upload", || Ok(first.domain().element(x)?))?;
    let row: usize = data_shape[1..].iter().product();
    let size = std::mem::size_of::<T>() as u64;
    let start = Instant::now();
    let mut busy = (0.0, 0.0);
    outputs.write_in_place(slot, "a streamed projection", |file| {
        use std::os::unix::fs::FileExt;
        let header = npy_header::<T>(data_shape)?;
        file.write_all_at(&header, 0)?;
        let data_at = header.len() as u64;
        std::thread::scope(|s| {
            let (tx, rx) = sync_channel::<(usize, ArrayD<T>)>(1);
            let x = &x;
            let worker = s.spawn(move || -> Result<f64, Failure> {
                let mut seconds = 0.0;
                for (k, ray) in rays.iter().enumerate() {
                    let t = Instant::now();
                    let y = ray.apply(x)?.into_host()?.into_array()?;
                    seconds += t.elapsed().as_secs_f64();
                    if tx.send((k, y)).is_err() {
                        break; // the writer stopped at an error, which it reports
                    }
                }
                Ok(seconds)
            });
            let mut written = Ok(());
            for (k, y) in rx.iter() {
                let t = Instant::now();
                written = write_group(file, data_at, groups[k].start, row, size, &y);
                busy.1 += t.elapsed().as_secs_f64();
                if written.is_err() {
                    break;
                }
            }
            drop(rx);
            let computed = worker.join().map_err(|_| {
                WriteError::Failure(Failure::new(
                    "internal error: the projection thread panicked",
                ))
            })?;
            // A failed transform first: a write error may only be its consequence.
            busy.0 = computed.map_err(WriteError::Failure)?;
            written
        })
    })?;
    stages.add("transform", busy.0);
    stages.add("write", busy.1);
    stages.add("streamed", start.elapsed().as_secs_f64());
    stages.annotate(
        "streamed",
        format!(
            "{} view groups, transform and write overlapped",
            groups.len()
        ),
    );
    Ok(())
}

/// Checks the projections `y` of the views from `first_view` on and writes them at their rows
/// of the file (data from byte `data_at`, `row` values of `size` bytes per view).
fn write_group<T: NpyScalar>(
    file: &std::fs::File,
    data_at: u64,
    first_view: usize,
    row: usize,
    size: u64,
    y: &ArrayD<T>,
) -> Result<(), WriteError> {
    check_finite_rows(&y.view(), first_view, "the projection", OVERFLOW_HINT)
        .map_err(WriteError::Failure)?;
    let values = y
        .as_slice()
        .ok_or_else(|| WriteError::Failure(Failure::new("internal error: a strided projection")))?;
    write_values_at(
        file,
        data_at + first_view as u64 * row as u64 * size,
        values,
    )?;
    Ok(())
}

/// What is applied to each group of projection data.
#[derive(Clone, Copy, Debug)]
pub enum Back<'a> {
    /// The adjoint (`backproject`).
    Adjoint,
    /// Filtered back-projection with these options (`fbp`).
    Fbp(&'a FbpOptions),
}

impl Back<'_> {
    /// The stage of the back-projection's compute in `-v`.
    fn stage(self) -> &'static str {
        match self {
            Back::Adjoint => "transform",
            Back::Fbp(_) => "fbp",
        }
    }

    /// What the result is called in messages.
    fn what(self) -> &'static str {
        match self {
            Back::Adjoint => "the back-projection",
            Back::Fbp(_) => "the reconstruction",
        }
    }
}

/// The `.npy` output that [`back`] may write slab by slab (a regular file, written in place).
pub struct SlabOutput<'a> {
    /// The outputs.
    pub outputs: &'a mut Outputs,
    /// The volume's output.
    pub slot: Slot,
}

/// What [`back`] produced.
pub enum BackDone<T: Scalar> {
    /// The volume, on the device: the caller checks and writes it.
    Volume(Element<T>),
    /// The volume, checked and written slab by slab into the [`SlabOutput`] (not committed).
    Written,
}

/// How [`back`] computes, decided once the device is up.
enum Plan<T: Scalar> {
    /// Each group's data (for FBP: filtered by `filters`) kept on the device, then the volume
    /// back-projected slab by slab, each slab written while the next is computed.
    Slabs {
        rays: Vec<RayTransform<T>>,
        filters: Option<Vec<LinOp<T>>>,
    },
    /// Each group back-projected into the whole volume as it arrives (`ops`).
    Volume(Vec<LinOp<T>>),
}

/// The slabs of the volume's axis 0 (of `n0` planes, contiguous in the `.npy` file) that the
/// slab path computes and writes one after the other: as many as there are view groups (with
/// the default groups of about [`GROUP_BYTES`] of data, slabs of a similar size), at most one
/// per plane; consecutive, of sizes that differ by at most one plane.
pub fn volume_slabs(n0: usize, groups: usize) -> Vec<Range<usize>> {
    let k = groups.clamp(1, n0.max(1));
    (0..k).map(|i| i * n0 / k..(i + 1) * n0 / k).collect()
}

/// The device bytes of the slab path in values of `T`: every group's data (for FBP: filtered)
/// and one more group (the upload being filtered, or the next one), and two of the largest
/// slab (its sum and one group's share).
pub fn slab_bytes<T: Scalar>(setup: &Setup, groups: &[Range<usize>]) -> u128 {
    let size = std::mem::size_of::<T>() as u128;
    let shape = setup.volume_shape();
    let plane: u128 = shape[1..].iter().map(|&n| n as u128).product();
    let slabs = volume_slabs(shape[0], groups.len());
    let slab = slabs.iter().map(|s| s.len()).max().unwrap_or(0) as u128 * plane * size;
    let data = setup.data_shape();
    let row: u128 = data[1..].iter().map(|&n| n as u128).product::<u128>() * size;
    let group = groups.iter().map(|g| g.len()).max().unwrap_or(0) as u128 * row;
    data[0] as u128 * row + group + 2 * slab
}

/// Back-projects (or reconstructs by FBP, `how`) the projection data read group by group by
/// `reader`: the groups `groups` are read on a thread of their own while the device of
/// `compute` is checked (a GPU's context started) and the group transforms are built
/// ([`group_transforms`]), and then while each earlier group is uploaded.
///
/// With an `output` to write into, and where the device holds all the data
/// ([`slab_bytes`]) and the reconstruction is one back-projection of (filtered) data (all but
/// the exact fan-beam FBP: [`rodl::tomo::fbp_filters_views`]), each group is kept on the device
/// (filtered for FBP), and then the volume is back-projected slab by slab along axis 0
/// ([`volume_slabs`], each slab's sum over the groups through
/// [`rodl::tomo::split::piece_transform`]), each slab downloaded, checked and written into its
/// place in the file on a writer thread while the next slab is computed: the volume's
/// download and write overlap the back-projection, and the host never holds the whole volume.
/// Otherwise each group is back-projected into the whole volume as it arrives, and the volume
/// is returned.
///
/// `stages` gets the set-up, the read (the reader's busy time), the compute (the main
/// thread's busy time, `how`'s stage name: `transform` or `fbp`; on the slab path also the
/// uploads (`upload`), the slabs' download, check and write) and the streamed part's wall
/// time. `None` (nothing computed, the stages untouched) when the device's memory cannot hold
/// the streamed path's arrays ([`fits_on_device`]).
pub fn back<T: NpyScalar>(
    setup: &Setup,
    compute: &Compute,
    how: Back<'_>,
    groups: &[Range<usize>],
    reader: &RowReader<'_, T>,
    output: Option<SlabOutput<'_>>,
    stages: &mut Stages,
) -> Result<Option<BackDone<T>>, Failure> {
    let start = Instant::now();
    let bytes = device_bytes::<T>(setup, groups, true);
    let slab_path = output.is_some();
    let stage = how.stage();
    let (kept, read, (set, device), busy) = std::thread::scope(|s| {
        let (tx, rx) = sync_channel::<Result<Vec<T>, Failure>>(1);
        let reading = s.spawn(move || {
            let mut seconds = 0.0;
            for views in groups {
                let t = Instant::now();
                let rows = reader.read(views.clone());
                seconds += t.elapsed().as_secs_f64();
                let failed = rows.is_err();
                if tx.send(rows).is_err() || failed {
                    break;
                }
            }
            seconds
        });
        let t = Instant::now();
        let mut device = 0.0;
        let made = compute.check().and_then(|()| {
            device = t.elapsed().as_secs_f64();
            plan::<T>(setup, compute, how, groups, slab_path, bytes)
        });
        let set = t.elapsed().as_secs_f64();
        let mut busy = 0.0;
        let kept = made.and_then(|plan| {
            let Some(plan) = plan else {
                return Ok(None);
            };
            let kept = match plan {
                Plan::Volume(ops) => Kept::Volume(add_groups(&ops, rx.iter(), &mut busy)?),
                Plan::Slabs { rays, filters } => {
                    let data = keep_groups(&rays, filters.as_deref(), rx.iter(), &mut busy)?;
                    Kept::Groups(data)
                }
            };
            Ok(Some(kept))
        });
        drop(rx);
        let read = reading.join();
        (kept, read, (set, device), busy)
    });
    let read = read.map_err(|_| Failure::new("internal error: the reading thread panicked"))?;
    let Some(kept) = kept? else {
        return Ok(None);
    };
    stages.add("set-up", set);
    stages.annotate(
        "set-up",
        format!(
            "device {device:.3} s, the groups' operators {:.3} s",
            set - device
        ),
    );
    stages.add("read", read);
    let done = match kept {
        Kept::Volume(volume) => {
            stages.add(stage, busy);
            stages.annotate(
                "streamed",
                format!("{} view groups, read and {stage} overlapped", groups.len()),
            );
            BackDone::Volume(volume)
        }
        Kept::Groups(data) => {
            stages.add(
                match how {
                    Back::Adjoint => "upload",
                    Back::Fbp(_) => "filter",
                },
                busy,
            );
            let output = output
                .ok_or_else(|| Failure::new("internal error: the slab path without an output"))?;
            let slabs = volume_slabs(setup.volume_shape()[0], groups.len());
            write_slabs(setup, compute, how, groups, &data, &slabs, output, stages)?;
            stages.annotate(
                "streamed",
                format!(
                    "{} view groups read beside the uploads, {} slabs: {stage}, download and \
                     write overlapped",
                    groups.len(),
                    slabs.len()
                ),
            );
            BackDone::Written
        }
    };
    stages.add("streamed", start.elapsed().as_secs_f64());
    Ok(Some(done))
}

/// What the first part of [`back`] leaves on the device.
enum Kept<T: Scalar> {
    /// The whole volume.
    Volume(Element<T>),
    /// Each group's (filtered) data.
    Groups(Vec<Element<T>>),
}

/// [`back`]'s plan once the device is up (`None`: its memory cannot hold the arrays): the slab
/// path where it is `wanted`, the device holds it and the reconstruction is one
/// back-projection of filtered data; else the whole volume (`bytes` on the device).
fn plan<T: Scalar>(
    setup: &Setup,
    compute: &Compute,
    how: Back<'_>,
    groups: &[Range<usize>],
    wanted: bool,
    bytes: u128,
) -> Result<Option<Plan<T>>, Failure> {
    let slabs = wanted && fits_on_device(compute, slab_bytes::<T>(setup, groups))?;
    let volume = fits_on_device(compute, bytes)?;
    if !slabs && !volume {
        return Ok(None);
    }
    let rays = group_transforms::<T>(setup, compute, groups)?;
    if slabs {
        match how {
            Back::Adjoint => {
                return Ok(Some(Plan::Slabs {
                    rays,
                    filters: None,
                }))
            }
            Back::Fbp(options) => {
                let refs: Vec<&dyn LinearOperator<T>> =
                    rays.iter().map(|r| r as &dyn LinearOperator<T>).collect();
                if let Some(filters) = fbp_filters_views(&refs, &setup.geometry, groups, options)? {
                    return Ok(Some(Plan::Slabs {
                        rays,
                        filters: Some(filters),
                    }));
                }
            }
        }
    }
    if !volume {
        return Ok(None);
    }
    Ok(Some(Plan::Volume(back_operators(
        &rays, groups, setup, how,
    )?)))
}

/// Adds the back-projections `ops[k]` of the groups' data `rows` (as they arrive) into one
/// volume on the device; `busy` gets the time spent.
fn add_groups<T: Scalar>(
    ops: &[LinOp<T>],
    rows: impl Iterator<Item = Result<Vec<T>, Failure>>,
    busy: &mut f64,
) -> Result<Element<T>, Failure> {
    let space = ops
        .first()
        .ok_or_else(|| Failure::new("internal error: no view groups"))?
        .range()
        .clone();
    let mut volume: Option<Element<T>> = None;
    let mut scratch: Option<Element<T>> = None;
    for (op, rows) in ops.iter().zip(rows) {
        let rows = rows?;
        let t = Instant::now();
        let data = op.domain().element_from_vec(rows)?;
        match volume.as_mut() {
            None => volume = Some(op.apply(&data)?),
            Some(v) => {
                let tmp = match scratch.as_mut() {
                    Some(tmp) => tmp,
                    None => scratch.insert(space.zero()?),
                };
                op.apply_into(&data, tmp)?;
                space.axpby(T::one(), tmp, T::one(), v)?;
            }
        }
        *busy += t.elapsed().as_secs_f64();
    }
    volume.ok_or_else(|| Failure::new("internal error: no view groups were read"))
}

/// Uploads each group's data `rows` (as they arrive) into the range of its transform `rays[k]`
/// and, for FBP, filters it there (`filters[k]`), keeping the results on the device; `busy`
/// gets the time spent.
fn keep_groups<T: Scalar>(
    rays: &[RayTransform<T>],
    filters: Option<&[LinOp<T>]>,
    rows: impl Iterator<Item = Result<Vec<T>, Failure>>,
    busy: &mut f64,
) -> Result<Vec<Element<T>>, Failure> {
    let mut kept = Vec::with_capacity(rays.len());
    for (k, (ray, rows)) in rays.iter().zip(rows).enumerate() {
        let rows = rows?;
        let t = Instant::now();
        let data = ray.range().element_from_vec(rows)?;
        let data = match filters.and_then(|f| f.get(k)) {
            Some(filter) => filter.apply(&data)?,
            None => data,
        };
        kept.push(data);
        *busy += t.elapsed().as_secs_f64();
    }
    if kept.len() != rays.len() {
        return Err(Failure::new(
            "internal error: not every view group was read",
        ));
    }
    Ok(kept)
}

/// The slab path's second part: for each slab of `slabs`, the sum over the groups of the
/// adjoint of the slab's piece transform applied to the group's `data`, downloaded, and
/// handed to a writer thread that checks it (non-finite values name their index in the whole
/// volume) and writes it at its place in `output` while the next slab is computed. A failure
/// of either stops both; nothing is committed. `stages` gets the compute (`how`'s stage), the
/// download, the check and the write (the writer's busy times).
#[allow(clippy::too_many_arguments)]
fn write_slabs<T: NpyScalar>(
    setup: &Setup,
    compute: &Compute,
    how: Back<'_>,
    groups: &[Range<usize>],
    data: &[Element<T>],
    slabs: &[Range<usize>],
    output: SlabOutput<'_>,
    stages: &mut Stages,
) -> Result<(), Failure> {
    let space = compute.volume::<T>(setup)?;
    let shape = setup.volume_shape().to_vec();
    let plane: usize = shape[1..].iter().product();
    let size = std::mem::size_of::<T>() as u64;
    let what = how.what();
    let mut busy = (0.0, 0.0, 0.0, 0.0);
    output
        .outputs
        .write_in_place(output.slot, "a volume written by slabs", |file| {
            use std::os::unix::fs::FileExt;
            let header = npy_header::<T>(&shape)?;
            file.write_all_at(&header, 0)?;
            let data_at = header.len() as u64;
            std::thread::scope(|s| {
                let (tx, rx) = sync_channel::<(usize, ArrayD<T>)>(1);
                let writer = s.spawn(move || -> Result<(f64, f64), WriteError> {
                    let (mut checked, mut written) = (0.0, 0.0);
                    for (first, slab) in rx.iter() {
                        let t = Instant::now();
                        check_finite_rows(&slab.view(), first, what, OVERFLOW_HINT)
                            .map_err(WriteError::Failure)?;
                        checked += t.elapsed().as_secs_f64();
                        let t = Instant::now();
                        let values = slab.as_slice().ok_or_else(|| {
                            WriteError::Failure(Failure::new("internal error: a strided slab"))
                        })?;
                        write_values_at(file, data_at + (first * plane) as u64 * size, values)?;
                        written += t.elapsed().as_secs_f64();
                    }
                    Ok((checked, written))
                });
                let computed = (|| -> Result<(f64, f64), Failure> {
                    let (mut computing, mut downloading) = (0.0, 0.0);
                    for cells in slabs {
                        let t = Instant::now();
                        let slab = back_slab(&space, setup, compute, groups, data, cells)?;
                        computing += t.elapsed().as_secs_f64();
                        let t = Instant::now();
                        let host = slab.into_host()?.into_array()?;
                        downloading += t.elapsed().as_secs_f64();
                        if tx.send((cells.start, host)).is_err() {
                            break; // the writer stopped at an error, which it reports
                        }
                    }
                    Ok((computing, downloading))
                })();
                drop(tx);
                let written = writer.join().map_err(|_| {
                    WriteError::Failure(Failure::new("internal error: the writing thread panicked"))
                })?;
                // A failed back-projection first: a write error may only be its consequence.
                let (c, d) = computed.map_err(WriteError::Failure)?;
                let (k, w) = written?;
                busy = (c, d, k, w);
                Ok(())
            })
        })?;
    stages.add(how.stage(), busy.0);
    stages.add("download", busy.1);
    stages.add("check", busy.2);
    stages.add("write", busy.3);
    Ok(())
}

/// The back-projection of the slab `cells` (planes of axis 0) of `space`: the sum over the
/// groups of the adjoint of the piece transform (the group's views, the slab) applied to the
/// group's `data`.
fn back_slab<T: Scalar>(
    space: &Space<T>,
    setup: &Setup,
    compute: &Compute,
    groups: &[Range<usize>],
    data: &[Element<T>],
    cells: &Range<usize>,
) -> Result<Element<T>, Failure> {
    let mut sum: Option<Element<T>> = None;
    let mut scratch: Option<Element<T>> = None;
    for (views, y) in groups.iter().zip(data) {
        let piece = Piece {
            views: views.clone(),
            slab: cells.clone(),
        };
        let ray = piece_transform(space, &setup.geometry, &piece, 0, compute.backend.clone())?;
        let adjoint = ray.adjoint()?;
        match sum.as_mut() {
            None => sum = Some(adjoint.apply(y)?),
            Some(v) => {
                let part = ray.domain();
                let tmp = match scratch.as_mut() {
                    Some(tmp) => tmp,
                    None => scratch.insert(part.zero()?),
                };
                adjoint.apply_into(y, tmp)?;
                part.axpby(T::one(), tmp, T::one(), v)?;
            }
        }
    }
    sum.ok_or_else(|| Failure::new("internal error: no view groups"))
}

/// The operators that take a group's data to its share of the volume: the adjoints of `rays`,
/// or their FBPs restricted to the groups' views (the whole scan's filter and weights prepared
/// once for all groups).
fn back_operators<T: Scalar>(
    rays: &[RayTransform<T>],
    groups: &[Range<usize>],
    setup: &Setup,
    how: Back<'_>,
) -> Result<Vec<LinOp<T>>, Failure> {
    Ok(match how {
        Back::Adjoint => rays
            .iter()
            .map(|ray| ray.adjoint())
            .collect::<rodl::Result<_>>()?,
        Back::Fbp(options) => {
            let refs: Vec<&dyn LinearOperator<T>> =
                rays.iter().map(|r| r as &dyn LinearOperator<T>).collect();
            fbp_ops_views(&refs, &setup.geometry, groups, options)?
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_groups_cover_the_views_in_order() {
        let view_groups = |views, bytes, asked| view_groups(views, bytes, asked, Device::Cuda(0));
        assert_eq!(view_groups(10, 1 << 30, Some(1)).unwrap(), vec![0..10]);
        assert_eq!(
            view_groups(10, 0, Some(3)).unwrap(),
            vec![0..3, 3..6, 6..10]
        );
        assert_eq!(view_groups(2, 0, Some(5)).unwrap(), vec![0..1, 1..2]);
        assert!(view_groups(10, 0, Some(0)).is_err());
        // Defaults: one group under 128 MiB, else about 64 MiB each.
        assert_eq!(
            view_groups(512, (127 << 20) as u128, None).unwrap().len(),
            1
        );
        let g = view_groups(512, 805_306_368, None).unwrap();
        assert_eq!(g.len(), 12);
        assert_eq!(g.first().unwrap().start, 0);
        assert_eq!(g.last().unwrap().end, 512);
        assert!(g.windows(2).all(|w| w[0].end == w[1].start));
        // The device bytes: volume (+ a group), or twice both for the back-projections.
        let setup = Setup::from_text(
            r#"{"volume": {"min_pt": [-1, -1, -1], "max_pt": [1, 1, 1], "shape": [4, 5, 6]},
            "geometry": {"kind": "cone", "angles": {"min": 0, "max": 6.283185307179586, "count": 10},
            "src_radius": 4, "det_radius": 4, "detector": {"min": [-2, -2], "max": [2, 2], "shape": [7, 3]}}}"#,
        )
        .unwrap();
        assert_eq!(
            device_bytes::<f32>(&setup, &[0..2, 2..3], false),
            4 * (120 + 42)
        );
        assert_eq!(
            device_bytes::<f64>(&setup, &[0..1, 1..3], true),
            8 * 2 * (120 + 42)
        );
        // The slab path: all the data, one more group, two of the largest slab (4 planes of 30
        // cells in 2 slabs of 2).
        assert_eq!(volume_slabs(4, 2), vec![0..2, 2..4]);
        assert_eq!(volume_slabs(4, 9), vec![0..1, 1..2, 2..3, 3..4]);
        assert_eq!(volume_slabs(5, 0), vec![0..5]);
        assert_eq!(
            slab_bytes::<f32>(&setup, &[0..5, 5..10]),
            4 * (10 * 21 + 5 * 21 + 2 * 2 * 30)
        );
        // The CPU: one group unless asked.
        assert_eq!(
            super::view_groups(512, 805_306_368, None, Device::Cpu)
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            super::view_groups(512, 0, Some(4), Device::Cpu)
                .unwrap()
                .len(),
            4
        );
    }
}
