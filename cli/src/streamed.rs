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
//!   [`rodl::tomo::FbpViews`], the whole scan's filter and weights restricted to the group)
//!   into the volume. The device's set-up runs beside the first reads, and the groups'
//!   operators (for FBP their filters) are built on a thread of their own beside the
//!   back-projection of the groups before them. The volume is then
//!   copied down and written slab by slab ([`write_slabs`]), each slab's write beside the next
//!   slab's copy.
//!
//! The groups add up to the whole transform (forward: each view's rows are computed as in one
//! call; adjoint and FBP: a sum over the groups), so the results equal the in-memory path's up
//! to the rounding of that sum (float32: ≤ 1e-6 relative).

use std::ops::Range;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::time::Instant;

use ndarray::ArrayD;
use rodl::tomo::split::{piece_transform, Piece};
use rodl::tomo::{FbpOptions, FbpViews, RayTransform};
use rodl::{Device, Element, LinOp, LinearOperator, Operator, Scalar};

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

/// The slabs of the volume's axis 0 (of `n0` planes, contiguous in the `.npy` file) that
/// [`write_slabs`] copies down and writes one after the other: as many as there are view
/// groups (with the default groups of about [`GROUP_BYTES`] of data, slabs of a similar size),
/// at most one per plane; consecutive, of sizes that differ by at most one plane.
pub fn volume_slabs(n0: usize, groups: usize) -> Vec<Range<usize>> {
    let k = groups.clamp(1, n0.max(1));
    (0..k).map(|i| i * n0 / k..(i + 1) * n0 / k).collect()
}

/// Back-projects (or reconstructs by FBP, `how`) the projection data read group by group by
/// `reader`: the groups `groups` are read on a thread of their own while the device of
/// `compute` is checked (a GPU's context started) and the group transforms are built
/// ([`group_transforms`]), and then while each earlier group is uploaded and back-projected
/// into the volume on the device. With an `output`, the volume is then copied down and written
/// slab by slab ([`write_slabs`]: each slab's write beside the next slab's copy); else it is
/// returned.
///
/// `stages` gets the set-up, the read (the reader's busy time), the compute (the main
/// thread's busy time, `how`'s stage name: `transform` or `fbp`), with an output the
/// download, check and write, and the streamed part's wall time. `None` (nothing computed,
/// the stages untouched) when the device's memory cannot hold the streamed path's arrays
/// ([`fits_on_device`]).
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
    let stage = how.stage();
    let (volume, read, set, busy) = std::thread::scope(|s| {
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
            if !fits_on_device(compute, bytes)? {
                return Ok(None);
            }
            Ok(Some(group_transforms::<T>(setup, compute, groups)?))
        });
        let set = t.elapsed().as_secs_f64();
        let mut busy = 0.0;
        let mut built = Ok(0.0);
        let volume = made.and_then(|rays| match rays {
            // The groups' operators (for FBP their filters: cuFFT plans, weights) are built
            // on a thread of their own, each handed over as it is ready, beside the
            // back-projection of the groups before it.
            Some(rays) => std::thread::scope(|b| {
                let (op_tx, op_rx) = sync_channel::<Result<LinOp<T>, Failure>>(groups.len());
                let building = b.spawn(move || back_operators(&rays, groups, setup, how, &op_tx));
                let volume = add_groups(op_rx.iter(), rx.iter(), &mut busy);
                drop(op_rx);
                built = building
                    .join()
                    .map_err(|_| Failure::new("internal error: the operators' thread panicked"));
                volume.map(Some)
            }),
            None => Ok(None),
        });
        drop(rx);
        let read = reading.join();
        (volume, read, (set, device, built), busy)
    });
    let (set, device, built) = set;
    let read = read.map_err(|_| Failure::new("internal error: the reading thread panicked"))?;
    let Some(volume) = volume? else {
        return Ok(None);
    };
    let built = built?;
    stages.add("set-up", set);
    stages.annotate(
        "set-up",
        format!(
            "device {device:.3} s, the groups' ray transforms {:.3} s",
            set - device
        ),
    );
    stages.add("read", read);
    stages.add(stage, busy);
    stages.annotate(
        stage,
        format!("the groups' operators built beside it in {built:.3} s"),
    );
    let done = match output {
        None => {
            stages.annotate(
                "streamed",
                format!("{} view groups, read and {stage} overlapped", groups.len()),
            );
            BackDone::Volume(volume)
        }
        Some(output) => {
            let slabs = volume_slabs(setup.volume_shape()[0], groups.len());
            write_slabs(
                &volume,
                setup.volume_shape(),
                &slabs,
                how.what(),
                output,
                stages,
            )?;
            stages.annotate(
                "streamed",
                format!(
                    "{} view groups, read and {stage} overlapped; {} slabs, download and \
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

/// Adds the back-projections `ops[k]` of the groups' data `rows` (as they arrive) into one
/// volume on the device; `busy` gets the time spent.
fn add_groups<T: Scalar>(
    ops: impl Iterator<Item = Result<LinOp<T>, Failure>>,
    rows: impl Iterator<Item = Result<Vec<T>, Failure>>,
    busy: &mut f64,
) -> Result<Element<T>, Failure> {
    let mut volume: Option<Element<T>> = None;
    let mut scratch: Option<Element<T>> = None;
    for (op, rows) in ops.zip(rows) {
        let rows = rows?;
        let t = Instant::now();
        let op = op?;
        let space = op.range();
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

/// Writes `volume` (of shape `shape`, on any device) into the `.npy` `output` slab by slab
/// (`slabs`, planes of axis 0): each slab is copied down
/// ([`Element::copy_range_to_slice`]) and handed to a writer thread, which checks it
/// (non-finite values name their index in the whole volume; `what` names the volume) and
/// writes it at its place in the file while the next slab is copied; two host buffers of a
/// slab go back and forth, so the host never holds the whole volume. A failure of either stops
/// both, and nothing is committed. `stages` gets the download, the check and the write (the
/// writer's busy times).
fn write_slabs<T: NpyScalar>(
    volume: &Element<T>,
    shape: &[usize],
    slabs: &[Range<usize>],
    what: &str,
    output: SlabOutput<'_>,
    stages: &mut Stages,
) -> Result<(), Failure> {
    let plane: usize = shape[1..].iter().product();
    let size = std::mem::size_of::<T>() as u64;
    let mut busy = (0.0, 0.0, 0.0);
    output
        .outputs
        .write_in_place(output.slot, "a volume written by slabs", |file| {
            use std::os::unix::fs::FileExt;
            let header = npy_header::<T>(shape)?;
            file.write_all_at(&header, 0)?;
            let data_at = header.len() as u64;
            std::thread::scope(|s| {
                let (tx, rx) = sync_channel::<(usize, Vec<T>)>(1);
                let (back_tx, back_rx) = sync_channel::<Vec<T>>(2);
                let writer = s.spawn(move || -> Result<(f64, f64), WriteError> {
                    let (mut checked, mut written) = (0.0, 0.0);
                    for (first, values) in rx.iter() {
                        let t = Instant::now();
                        let mut slab = shape.to_vec();
                        slab[0] = values.len() / plane.max(1);
                        let view = ndarray::ArrayViewD::from_shape(slab, &values)
                            .map_err(|e| WriteError::Failure(Failure::new(e.to_string())))?;
                        check_finite_rows(&view, first, what, OVERFLOW_HINT)
                            .map_err(WriteError::Failure)?;
                        checked += t.elapsed().as_secs_f64();
                        let t = Instant::now();
                        write_values_at(file, data_at + (first * plane) as u64 * size, &values)?;
                        written += t.elapsed().as_secs_f64();
                        // The buffer back for a later slab (or dropped once none is left).
                        let _ = back_tx.try_send(values);
                    }
                    Ok((checked, written))
                });
                let copied = (|| -> Result<f64, Failure> {
                    let largest = slabs.iter().map(|c| c.len()).max().unwrap_or(0) * plane;
                    let mut seconds = 0.0;
                    for cells in slabs {
                        let t = Instant::now();
                        let n = cells.len() * plane;
                        let mut values = match back_rx.try_recv() {
                            Ok(v) => v,
                            Err(_) => host_buffer::<T>(largest)?,
                        };
                        // Every buffer holds the largest slab: no reallocation here.
                        values.truncate(n);
                        values.resize(n, T::zero());
                        volume.copy_range_to_slice(cells.start * plane, &mut values)?;
                        seconds += t.elapsed().as_secs_f64();
                        if tx.send((cells.start, values)).is_err() {
                            break; // the writer stopped at an error, which it reports
                        }
                    }
                    Ok(seconds)
                })();
                drop(tx);
                let written = writer.join().map_err(|_| {
                    WriteError::Failure(Failure::new("internal error: the writing thread panicked"))
                })?;
                // A failed copy first: a write error may only be its consequence.
                let copied = copied.map_err(WriteError::Failure)?;
                let (checked, written) = written?;
                busy = (copied, checked, written);
                Ok(())
            })
        })?;
    stages.add("download", busy.0);
    stages.add("check", busy.1);
    stages.add("write", busy.2);
    Ok(())
}

/// An empty host buffer with room for `n` values, its memory advised to huge pages (before its
/// first write); an allocation failure is an error, not an abort.
fn host_buffer<T: Scalar>(n: usize) -> Result<Vec<T>, Failure> {
    let mut v: Vec<T> = Vec::new();
    v.try_reserve_exact(n).map_err(|e| {
        Failure::new(format!(
            "cannot allocate {} bytes of host memory for a slab of the volume: {e}",
            n as u128 * std::mem::size_of::<T>() as u128
        ))
    })?;
    rodl::memory::advise_huge_pages(v.spare_capacity_mut());
    Ok(v)
}

/// The operators that take a group's data to its share of the volume, sent to `ops` in the
/// groups' order as each is built: the adjoints of `rays`, or their FBPs restricted to the
/// groups' views (the whole scan's filter and weights prepared once for all groups,
/// [`FbpViews`]). Stops at the first failure (sent) or when the receiver is gone; returns the
/// seconds spent.
fn back_operators<T: Scalar>(
    rays: &[RayTransform<T>],
    groups: &[Range<usize>],
    setup: &Setup,
    how: Back<'_>,
    ops: &SyncSender<Result<LinOp<T>, Failure>>,
) -> f64 {
    let t = Instant::now();
    let fbp = match how {
        Back::Adjoint => Ok(None),
        Back::Fbp(options) => FbpViews::new(&setup.geometry, options).map(Some),
    };
    let fbp = match fbp {
        Ok(f) => f,
        Err(e) => {
            let _ = ops.send(Err(e.into()));
            return t.elapsed().as_secs_f64();
        }
    };
    for (ray, views) in rays.iter().zip(groups) {
        let op = match &fbp {
            None => ray.adjoint(),
            Some(f) => f.op(ray, views),
        };
        let failed = op.is_err();
        if ops.send(op.map_err(Failure::from)).is_err() || failed {
            break;
        }
    }
    t.elapsed().as_secs_f64()
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
        // The volume's slabs: as many as the groups, at most one per plane.
        assert_eq!(volume_slabs(4, 2), vec![0..2, 2..4]);
        assert_eq!(volume_slabs(4, 9), vec![0..1, 1..2, 2..3, 3..4]);
        assert_eq!(volume_slabs(5, 0), vec![0..5]);
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
