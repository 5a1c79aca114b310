//! `rodl fbp`: filtered back-projection (FDK for cone beams) with `rodl::tomo::fbp_op`.

use rodl::tomo::{fbp_op, FbpOptions};
use rodl::Operator;

use super::transform::beside_the_read;
use super::{write_result, Compute, ResultOutputs, Setup};
use crate::args::FbpArgs;
use crate::fbp_options::options;
use crate::io::{Dtype, NpyFile, NpyScalar};
use crate::out_of_core::{self, Job};
use crate::stages::Stages;
use crate::streamed;
use crate::Failure;

/// `rodl fbp`.
pub fn run(args: &FbpArgs) -> Result<(), Failure> {
    #[cfg(feature = "mpi")]
    if let Some(partition) = args.partition {
        return super::distributed::fbp(args, partition);
    }
    let options = options(args)?;
    args.image.check_options()?;
    // The device is started (a GPU's context and kernels) beside the read of the input.
    let compute = Compute::from_args_unchecked(&args.compute)?;
    let setup = Setup::load(&args.geometry)?;
    args.image.check(setup.volume_shape())?;
    let inputs = [
        ("--input", args.input.as_path()),
        ("--geometry", &args.geometry),
    ];
    crate::output::check_distinct(&[("--output", &args.output)], &inputs)?;
    let npy = NpyFile::open(&args.input)?;
    setup.check_data(npy.shape(), &args.input, &args.geometry)?;
    let mut out = ResultOutputs::prepare(&args.output, &args.image, &inputs)?;
    // In memory: the data, their filtered copy, the reconstruction (and its host copy).
    let dtype = npy.dtype();
    let volume = rodl::memory::entries(setup.volume_shape()).unwrap_or(usize::MAX) as u128
        * dtype.size() as u128;
    if out_of_core::needed(args.out_of_core, 2 * npy.data_bytes() + 2 * volume) {
        if args.image.png.is_some() {
            return Err(Failure::usage(
                "--png needs the reconstruction in memory, and it is computed in pieces here \
                 (more than the memory limit, or --out-of-core): leave out --png",
            ));
        }
        compute.check()?;
        let job = Job::Fbp(options.clone());
        let map = npy.map()?;
        let (outputs, slot) = (&mut out.outputs, out.npy);
        let summary = match dtype {
            Dtype::F32 => out_of_core::run::<f32>(&setup, &compute, &job, &map, outputs, slot),
            Dtype::F64 => out_of_core::run::<f64>(&setup, &compute, &job, &map, outputs, slot),
        }?;
        out.outputs.commit()?;
        if args.verbose {
            let how = format!("{} {}", compute.device, summary.describe());
            note_done(&options, &setup, args, &how, summary.seconds);
        }
        return Ok(());
    }
    // Streamed by groups of views: the read overlaps the filtering and back-projection.
    let groups = streamed::view_groups(
        setup.data_shape()[0],
        npy.data_bytes(),
        args.view_groups,
        compute.device,
    )?;
    let mut out = out;
    if groups.len() > 1 && npy.by_rows() {
        let mut stages = Stages::new(compute.device);
        let stream = Stream {
            setup: &setup,
            compute: &compute,
            options: &options,
            groups: &groups,
        };
        let done = match dtype {
            Dtype::F32 => stream.reconstruct::<f32>(&npy, out, args, &mut stages),
            Dtype::F64 => stream.reconstruct::<f64>(&npy, out, args, &mut stages),
        }?;
        match done {
            Streamed::Written => {
                stages.moved(
                    "write",
                    std::fs::metadata(&args.output).map_or(0, |m| m.len()),
                );
                if args.verbose {
                    let how = format!("{}, {} view groups", compute.device, groups.len());
                    let seconds = stages.sum_except(&["start", "read", "write", "streamed"]);
                    note_done(&options, &setup, args, &how, seconds);
                    crate::term::note(&format!("rodl: stages: {}", stages.describe()));
                }
                return Ok(());
            }
            // A volume too large for the device's memory: the one-group path below.
            Streamed::Not(back) => out = back,
        }
    }
    drop(npy);
    let mut stages = Stages::new(compute.device);
    match dtype {
        Dtype::F32 => reconstruct::<f32>(&setup, &compute, &options, out, args, &mut stages),
        Dtype::F64 => reconstruct::<f64>(&setup, &compute, &options, out, args, &mut stages),
    }?;
    stages.moved(
        "write",
        std::fs::metadata(&args.output).map_or(0, |m| m.len()),
    );
    if args.verbose {
        let how = compute.device.to_string();
        let seconds = stages.sum_except(&["start", "read", "write"]);
        note_done(&options, &setup, args, &how, seconds);
        crate::term::note(&format!("rodl: stages: {}", stages.describe()));
    }
    Ok(())
}

/// The `--verbose` line of a finished FBP: filter, shapes, `how` it ran (the device, and the
/// pieces out of core) and the time.
fn note_done(options: &FbpOptions, setup: &Setup, args: &FbpArgs, how: &str, seconds: f64) {
    crate::term::note(&format!(
        "rodl: FBP ({}, frequency scaling {}) {:?} -> {} {:?} on {how} in {:.1} ms",
        options.filter,
        options.frequency_scaling,
        setup.data_shape(),
        args.output.display(),
        setup.volume_shape(),
        seconds * 1e3
    ));
}

/// Builds `fbp_op` in precision `T` (starting the device) while the input is read, applies it
/// and writes the results.
fn reconstruct<T: NpyScalar>(
    setup: &Setup,
    compute: &Compute,
    options: &FbpOptions,
    out: ResultOutputs,
    args: &FbpArgs,
    stages: &mut Stages,
) -> Result<(), Failure> {
    let ((ray, fbp), y) = beside_the_read::<T, _>(stages, &args.input, || {
        compute.check()?;
        let ray = compute.ray_transform::<T>(setup)?;
        let fbp = fbp_op(ray.as_ref(), options)?;
        Ok((ray, fbp))
    })?;
    let y = stages.time("upload", || Ok(ray.range().element(y)?))?;
    let x = stages.time("fbp", || Ok(fbp.apply(&y)?))?;
    write_result(out, x, &args.image, "the reconstruction", stages)
}

/// What [`Stream::reconstruct`] did.
enum Streamed {
    /// The reconstruction is written.
    Written,
    /// Nothing: the device's memory cannot hold the streamed path's arrays; the outputs back.
    Not(ResultOutputs),
}

/// An FBP streamed by groups of views ([`streamed`]).
struct Stream<'a> {
    setup: &'a Setup,
    compute: &'a Compute,
    options: &'a FbpOptions,
    groups: &'a [std::ops::Range<usize>],
}

impl Stream<'_> {
    /// Reads the data of `npy` group by group while the device is set up and the earlier
    /// groups are filtered and back-projected, then writes the results.
    fn reconstruct<T: NpyScalar>(
        &self,
        npy: &NpyFile,
        out: ResultOutputs,
        args: &FbpArgs,
        stages: &mut Stages,
    ) -> Result<Streamed, Failure> {
        let reader = npy
            .rows::<T>()?
            .ok_or_else(|| Failure::new("internal error: data not readable by views"))?;
        let mut out = out;
        // The volume written slab by slab as it is computed, where nothing else (a PNG) needs
        // it whole and the output is a regular file.
        let whole = args.image.png.is_some() || out.outputs.temp_path(out.npy).is_none();
        let output = (!whole).then_some(streamed::SlabOutput {
            outputs: &mut out.outputs,
            slot: out.npy,
        });
        let Some(done) = streamed::back(
            self.setup,
            self.compute,
            streamed::Back::Fbp(self.options),
            self.groups,
            &reader,
            output,
            stages,
        )?
        else {
            return Ok(Streamed::Not(out));
        };
        stages.moved("read", npy.data_bytes() as u64);
        match done {
            streamed::BackDone::Volume(x) => {
                write_result(out, x, &args.image, "the reconstruction", stages)?
            }
            streamed::BackDone::Written => out.outputs.commit()?,
        }
        Ok(Streamed::Written)
    }
}
