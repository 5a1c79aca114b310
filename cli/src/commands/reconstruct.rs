//! `rodl reconstruct`: iterative reconstruction with a progress bar on stderr.

use std::time::Instant;

use ndarray::ArrayD;
use rodl::solvers::callback::ProgressBar;
use rodl::Operator;

use super::{write_result, Compute, Setup};
use crate::algorithm::{reconstruct, Settings};
use crate::args::ReconstructArgs;
use crate::io::{read_array, AnyArray, AtomicOutput, NpyScalar};
use crate::Failure;

/// `rodl reconstruct`.
pub fn run(args: &ReconstructArgs) -> Result<(), Failure> {
    let settings = Settings {
        algorithm: args.algorithm,
        iterations: args.iterations,
        subsets: args.subsets,
        nonnegative: args.nonnegative,
        tv_weight: args.tv_weight,
    };
    let compute = Compute::from_args(&args.compute)?;
    let setup = Setup::load(&args.geometry)?;
    settings.check(setup.data_shape()[0])?;
    let input = read_array(&args.input)?;
    setup.check_data(&input, &args.input, &args.geometry)?;
    args.image.check(setup.volume_shape(), &[&args.output])?;
    let (out, file) = AtomicOutput::create(&args.output)?;
    let start = Instant::now();
    let done = match input {
        AnyArray::F32(y) => run_typed(&setup, &compute, &settings, y, out, file, args),
        AnyArray::F64(y) => run_typed(&setup, &compute, &settings, y, out, file, args),
    }?;
    if args.verbose {
        eprintln!(
            "rodl: {} {done} iterations {:?} -> {} {:?} on {} in {:.2} s",
            settings.algorithm,
            setup.data_shape(),
            args.output.display(),
            setup.volume_shape(),
            compute.device,
            start.elapsed().as_secs_f64()
        );
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
    out: AtomicOutput,
    file: std::fs::File,
    args: &ReconstructArgs,
) -> Result<usize, Failure> {
    if settings.algorithm.needs_nonnegative_data() {
        let n = clamp_negative(&mut y);
        if n > 0 && !args.quiet {
            eprintln!(
                "rodl: warning: {} needs data ≥ 0; {n} negative entries of {} were set to 0",
                settings.algorithm,
                args.input.display()
            );
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
    write_result(out, file, &x, &args.image)?;
    Ok(done)
}
