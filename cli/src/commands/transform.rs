//! `rodl project` and `rodl backproject`: the ray transform and its exact adjoint, with
//! optional simulated noise on projections.

use ndarray::ArrayD;
use rodl::{Device, LinearOperator, Operator, Scalar};

use super::{Compute, Setup, OVERFLOW_HINT};
use crate::args::TransformArgs;
use crate::io::{check_finite, read_array_as, AnyArray, Dtype, NpyFile, NpyScalar};
use crate::noise::Noise;
use crate::out_of_core::{self, Job};
use crate::output::{check_distinct, Outputs};
use crate::stages::Stages;
use crate::streamed;
use crate::Failure;

/// Which way a ray transform is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// The ray transform `A`: volume → projection data.
    Forward,
    /// Its exact adjoint `A*`: projection data → volume.
    Adjoint,
}

/// `rodl project` (`Direction::Forward`, with optional noise and seed) and
/// `rodl backproject` (`Direction::Adjoint`).
pub fn run(
    args: &TransformArgs,
    direction: Direction,
    noise: Option<(Noise, u64)>,
) -> Result<(), Failure> {
    // The device is started (a GPU's context and kernels) beside the read of the input.
    let compute = Compute::from_args_unchecked(&args.compute)?;
    let setup = Setup::load(&args.geometry)?;
    let inputs = [
        ("--input", args.input.as_path()),
        ("--geometry", &args.geometry),
    ];
    check_distinct(&[("--output", &args.output)], &inputs)?;
    crate::output::check_target(&args.output)?;
    let npy = NpyFile::open(&args.input)?;
    let (expected, produced, what) = match direction {
        Direction::Forward => (setup.volume_shape().to_vec(), setup.data_shape(), "volume"),
        Direction::Adjoint => (
            setup.data_shape(),
            setup.volume_shape().to_vec(),
            "projection data",
        ),
    };
    if npy.shape() != expected.as_slice() {
        let hint = match direction {
            Direction::Forward => "",
            Direction::Adjoint => " ([angles, u] or [angles, u, v])",
        };
        return Err(Failure::new(format!(
            "{} has shape {:?}, but the {what} of {} has shape {expected:?}{hint}",
            args.input.display(),
            npy.shape(),
            args.geometry.display(),
        )));
    }
    // Fail on an unwritable output before computing.
    let mut outputs = Outputs::new();
    let slot = outputs.prepare(&args.output)?;
    let dtype = npy.dtype();
    // In memory: the input, the output and, with noise, its noisy copy.
    let out_bytes =
        rodl::memory::entries(&produced).unwrap_or(usize::MAX) as u128 * dtype.size() as u128;
    let copies = if noise.is_some() { 2 } else { 1 };
    if out_of_core::needed(args.out_of_core, npy.data_bytes() + copies * out_bytes) {
        compute.check()?;
        let job = match direction {
            Direction::Forward => Job::Project(noise),
            Direction::Adjoint => Job::Backproject,
        };
        let map = npy.map()?;
        let summary = match dtype {
            Dtype::F32 => out_of_core::run::<f32>(&setup, &compute, &job, &map, &mut outputs, slot),
            Dtype::F64 => out_of_core::run::<f64>(&setup, &compute, &job, &map, &mut outputs, slot),
        }?;
        outputs.commit()?;
        if args.verbose {
            let how = format!(" {}", summary.describe());
            let done = Done {
                direction,
                dtype,
                noise,
            };
            done.note(&expected, args, &produced, &how, summary.seconds);
        }
        return Ok(());
    }
    // Streamed by groups of views (a regular output file, no noise): the file I/O overlaps
    // the transform.
    let data_bytes = match direction {
        Direction::Forward => out_bytes,
        Direction::Adjoint => npy.data_bytes(),
    };
    let views = setup.data_shape()[0];
    let groups = streamed::view_groups(views, data_bytes, args.view_groups, compute.device)?;
    if groups.len() > 1 && noise.is_none() && outputs.temp_path(slot).is_some() {
        let stream = Stream {
            setup: &setup,
            compute: &compute,
            args,
            groups: &groups,
        };
        let done = match (direction, dtype) {
            (Direction::Forward, Dtype::F32) => stream.project::<f32>(&mut outputs, slot)?,
            (Direction::Forward, Dtype::F64) => stream.project::<f64>(&mut outputs, slot)?,
            (Direction::Adjoint, Dtype::F32) => {
                stream.backproject::<f32>(&npy, &mut outputs, slot)?
            }
            (Direction::Adjoint, Dtype::F64) => {
                stream.backproject::<f64>(&npy, &mut outputs, slot)?
            }
        };
        if let Some((stages, shape)) = done {
            if args.verbose {
                let done = Done {
                    direction,
                    dtype,
                    noise,
                };
                let how = format!(" on {}, {} view groups", compute.device, groups.len());
                let compute_s = stages.sum_except(&["start", "read", "write", "streamed"]);
                done.note(&expected, args, &shape, &how, compute_s);
                crate::term::note(&format!("rodl: stages: {}", stages.describe()));
            }
            return outputs.commit();
        }
    }
    drop(npy);
    let mut stages = Stages::new(compute.device);
    let output = match dtype {
        Dtype::F32 => AnyArray::F32(in_memory::<f32>(
            &setup,
            &compute,
            args,
            direction,
            noise,
            &mut stages,
        )?),
        Dtype::F64 => AnyArray::F64(in_memory::<f64>(
            &setup,
            &compute,
            args,
            direction,
            noise,
            &mut stages,
        )?),
    };
    let compute_s = stages.sum_except(&["start", "read", "write"]);
    stages.time("write", || {
        outputs.write_array(slot, &output)?;
        outputs.commit()
    })?;
    stages.moved(
        "write",
        std::fs::metadata(&args.output).map_or(0, |m| m.len()),
    );
    if args.verbose {
        let done = Done {
            direction,
            dtype,
            noise,
        };
        let how = format!(" on {}", compute.device);
        done.note(&expected, args, output.shape(), &how, compute_s);
        crate::term::note(&format!("rodl: stages: {}", stages.describe()));
    }
    Ok(())
}

/// Reads the input (precision `T`) while the device starts and the ray transform is built on
/// a thread of its own, then applies it ([`apply`]).
fn in_memory<T: NpyScalar>(
    setup: &Setup,
    compute: &Compute,
    args: &TransformArgs,
    direction: Direction,
    noise: Option<(Noise, u64)>,
    stages: &mut Stages,
) -> Result<ArrayD<T>, Failure> {
    let (ray, input) = beside_the_read(stages, &args.input, || {
        compute.check()?;
        // Host spaces: on a GPU the transform streams the host arrays through it (the time
        // of the transfers is in "transform").
        compute.host_ray_transform::<T>(setup)
    })?;
    apply(ray, input, direction, noise, stages)
}

/// Runs `set_up` on a thread of its own while the `.npy` file `path` is read (as `T`); the
/// stages get the read (with its bytes) and, as `set-up`, the time spent waiting for
/// `set_up` after the read (its whole time noted). A failure of `set_up` (a device that
/// cannot be used) is reported before one of the read.
pub fn beside_the_read<T: NpyScalar, R: Send>(
    stages: &mut Stages,
    path: &std::path::Path,
    set_up: impl FnOnce() -> Result<R, Failure> + Send,
) -> Result<(R, ArrayD<T>), Failure> {
    let (made, read, waited) = std::thread::scope(|s| {
        let worker = s.spawn(|| {
            let t = std::time::Instant::now();
            let r = set_up();
            (r, t.elapsed().as_secs_f64())
        });
        let read = stages.time("read", || read_array_as::<T>(path));
        let t = std::time::Instant::now();
        let made = worker.join();
        (made, read, t.elapsed().as_secs_f64())
    });
    let (made, whole) =
        made.map_err(|_| Failure::new("internal error: the set-up thread panicked"))?;
    let made = made?;
    let input = read?;
    stages.moved("read", std::fs::metadata(path).map_or(0, |m| m.len()));
    stages.add("set-up", waited);
    stages.annotate("set-up", format!("{whole:.3} s in all beside the read"));
    Ok((made, input))
}

/// A `project` or `backproject` streamed by groups of views ([`streamed`]).
struct Stream<'a> {
    setup: &'a Setup,
    compute: &'a Compute,
    args: &'a TransformArgs,
    groups: &'a [std::ops::Range<usize>],
}

impl Stream<'_> {
    /// Reads the volume while the device and the groups' transforms are set up, then projects
    /// it group by group into the output `slot`, each group written while the next one is
    /// computed. Returns the stages and the output's shape; `None` (nothing written) when the
    /// device's memory cannot hold the volume.
    fn project<T: NpyScalar>(
        &self,
        outputs: &mut Outputs,
        slot: crate::output::Slot,
    ) -> Result<Option<(Stages, Vec<usize>)>, Failure> {
        let mut stages = Stages::new(self.compute.device);
        let bytes = streamed::device_bytes::<T>(self.setup, self.groups, false);
        let (rays, x) = beside_the_read::<T, _>(&mut stages, &self.args.input, || {
            self.compute.check()?;
            if !streamed::fits_on_device(self.compute, bytes)? {
                return Ok(None);
            }
            Ok(Some(streamed::group_transforms::<T>(
                self.setup,
                self.compute,
                self.groups,
            )?))
        })?;
        // A volume too large for the device's memory: the one-group path (host arrays in
        // pieces through the GPU), which reads the volume again.
        let Some(rays) = rays else {
            return Ok(None);
        };
        let shape = self.setup.data_shape();
        streamed::project(&rays, self.groups, x, &shape, outputs, slot, &mut stages)?;
        stages.moved(
            "write",
            std::fs::metadata(&self.args.output).map_or(0, |m| m.len()),
        );
        Ok(Some((stages, shape)))
    }

    /// Reads the projection data group by group while the device is set up and the earlier
    /// groups are back-projected, then writes the volume into the output `slot`. `None` (and
    /// nothing written) for data in Fortran order, which are not read by groups, and when the
    /// device's memory cannot hold the volume.
    fn backproject<T: NpyScalar>(
        &self,
        npy: &NpyFile,
        outputs: &mut Outputs,
        slot: crate::output::Slot,
    ) -> Result<Option<(Stages, Vec<usize>)>, Failure> {
        let Some(reader) = npy.rows::<T>()? else {
            return Ok(None);
        };
        let mut stages = Stages::new(self.compute.device);
        let output = streamed::SlabOutput { outputs, slot };
        let Some(done) = streamed::back(
            self.setup,
            self.compute,
            streamed::Back::Adjoint,
            self.groups,
            &reader,
            Some(output),
            &mut stages,
        )?
        else {
            return Ok(None);
        };
        stages.moved("read", npy.data_bytes() as u64);
        // Given an output, `back` writes the volume itself.
        let streamed::BackDone::Written = done else {
            return Err(Failure::new(
                "internal error: a streamed volume not written",
            ));
        };
        let shape = self.setup.volume_shape().to_vec();
        stages.moved(
            "write",
            std::fs::metadata(&self.args.output).map_or(0, |m| m.len()),
        );
        Ok(Some((stages, shape)))
    }
}

/// What a finished `project` or `backproject` did, for its `--verbose` line.
struct Done {
    direction: Direction,
    dtype: Dtype,
    noise: Option<(Noise, u64)>,
}

impl Done {
    /// The `--verbose` line: direction, precision, shapes, `how` it ran (the pieces out of core,
    /// with a leading space, or nothing), the time and the noise.
    fn note(
        &self,
        input: &[usize],
        args: &TransformArgs,
        output: &[usize],
        how: &str,
        seconds: f64,
    ) {
        crate::term::note(&format!(
            "rodl: {} {} {:?} -> {} {:?}{how} in {:.1} ms{}",
            match self.direction {
                Direction::Forward => "projected",
                Direction::Adjoint => "back-projected",
            },
            self.dtype.name(),
            input,
            args.output.display(),
            output,
            seconds * 1e3,
            match self.noise {
                Some((n, seed)) => format!(", {n} (seed {seed})"),
                None => String::new(),
            }
        ));
    }
}

/// Applies the ray transform `ray` (or its adjoint) to `input`, then adds the noise (on the
/// host).
fn apply<T: Scalar>(
    ray: std::sync::Arc<rodl::tomo::RayTransform<T>>,
    input: ArrayD<T>,
    direction: Direction,
    noise: Option<(Noise, u64)>,
    stages: &mut Stages,
) -> Result<ArrayD<T>, Failure> {
    let (out, what) = match direction {
        Direction::Forward => {
            let x = ray.domain().element(input)?;
            (
                stages.time("transform", || Ok(ray.apply(&x)?))?,
                "the projection",
            )
        }
        Direction::Adjoint => {
            let y = ray.range().element(input)?;
            let adj = ray.adjoint()?;
            (
                stages.time("transform", || Ok(adj.apply(&y)?))?,
                "the back-projection",
            )
        }
    };
    let out = out.into_array()?;
    stages.time("check", || check_finite(&out.view(), what, OVERFLOW_HINT))?;
    let Some((noise, seed)) = noise else {
        return Ok(out);
    };
    stages.time("noise", || {
        let host = ray.range().with_device(Device::Cpu)?;
        let noisy = noise
            .apply(&host, &host.element(out)?, seed)
            .map_err(|e| noise.failure(&e))?
            .into_array()?;
        check_finite(
            &noisy.view(),
            "the noisy projection",
            "--noise is too strong for the precision (float32 overflows beyond 3.4e38)",
        )?;
        Ok(noisy)
    })
}
