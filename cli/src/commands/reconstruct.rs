//! `rodl reconstruct`: iterative reconstruction with a progress bar on stderr.

use std::time::Instant;

use ndarray::ArrayD;
use rodl::solvers::callback::ProgressBar;
use rodl::Operator;

use super::{write_result, Compute, ResultOutputs, Setup};
use crate::algorithm::{reconstruct, Settings};
use crate::args::ReconstructArgs;
use crate::io::{read_array, AnyArray, NpyScalar};
use crate::stages::Stages;
use crate::Failure;

/// `rodl reconstruct`.
pub fn run(args: &ReconstructArgs) -> Result<(), Failure> {
    #[cfg(feature = "mpi")]
    if let Some(partition) = args.partition {
        return super::distributed::run(args, partition);
    }
    let settings = Settings {
        algorithm: args.algorithm,
        iterations: args.iterations,
        subsets: args.subsets,
        nonnegative: args.nonnegative,
        tv_weight: args.tv_weight,
    };
    settings.check(usize::MAX)?;
    args.image.check_options()?;
    let compute = Compute::from_args(&args.compute)?;
    let setup = Setup::load(&args.geometry)?;
    settings.check(setup.data_shape()[0])?;
    args.image.check(setup.volume_shape())?;
    let inputs = [
        ("--input", args.input.as_path()),
        ("--geometry", &args.geometry),
    ];
    crate::output::check_distinct(&[("--output", &args.output)], &inputs)?;
    let input = read_array(&args.input)?;
    setup.check_data(input.shape(), &args.input, &args.geometry)?;
    let out = ResultOutputs::prepare(&args.output, &args.image, &inputs)?;
    let start = Instant::now();
    let done = match input {
        AnyArray::F32(y) => run_typed(&setup, &compute, &settings, y, out, args),
        AnyArray::F64(y) => run_typed(&setup, &compute, &settings, y, out, args),
    }?;
    if args.verbose {
        crate::term::note(&format!(
            "rodl: {} {done} iterations {:?} -> {} {:?} on {} in {:.2} s",
            settings.algorithm,
            setup.data_shape(),
            args.output.display(),
            setup.volume_shape(),
            compute.device,
            start.elapsed().as_secs_f64()
        ));
    }
    Ok(())
}

/// Sets negative entries of `y` to 0 and returns how many there were.
fn clamp_negative<T: NpyScalar>(y: &mut ArrayD<T>) -> usize {
    let mut n = 0;
    for v in y.iter_mut() {
        if *v < T::zero() {
            *v = T::zero();
            n += 1;
        }
    }
    n
}

/// Reconstructs in precision `T` and writes the results; returns the iterations done.
fn run_typed<T: NpyScalar>(
    setup: &Setup,
    compute: &Compute,
    settings: &Settings,
    mut y: ArrayD<T>,
    out: ResultOutputs,
    args: &ReconstructArgs,
) -> Result<usize, Failure> {
    if settings.algorithm.needs_nonnegative_data() {
        let n = clamp_negative(&mut y);
        if n > 0 && !args.quiet {
            crate::term::note(&format!(
                "rodl: warning: {} needs data ≥ 0; {n} negative entries of {} were set to 0",
                settings.algorithm,
                args.input.display()
            ));
        }
    }
    let ray = compute.ray_transform::<T>(setup)?;
    let data = ray.range().element(y)?;
    let mut bar = if args.quiet {
        ProgressBar::hidden(settings.iterations)
    } else {
        ProgressBar::new(settings.iterations)
    };
    let (x, done) = reconstruct(&ray, &compute.backend, &data, settings, &mut bar)?;
    bar.inner().abandon(); // leave the bar where the solver stopped
    write_result(
        out,
        x,
        &args.image,
        "the reconstruction",
        &mut Stages::new(compute.device),
    )?;
    Ok(done)
}
