//! `rodl fbp`: filtered back-projection (FDK for cone beams) with `rodl::tomo::fbp_op`.

use std::time::Instant;

use ndarray::ArrayD;
use rodl::tomo::{fbp_op, FbpOptions, FilterType};
use rodl::Operator;

use super::{write_result, Compute, ResultOutputs, Setup};
use crate::args::FbpArgs;
use crate::io::{read_array, AnyArray, NpyScalar};
use crate::Failure;

/// The FBP options of the command line (usage errors when a value is wrong).
pub fn options(args: &FbpArgs) -> Result<FbpOptions, Failure> {
    let filter: FilterType = args
        .filter
        .parse()
        .map_err(|e| Failure::usage(format!("--filter: {}", crate::error_message(&e))))?;
    let bad_parker = || {
        Failure::usage(format!(
            "--parker expects a number in (0, 1] or `off`, got {:?}",
            args.parker
        ))
    };
    let parker = match args.parker.trim().to_ascii_lowercase().as_str() {
        "off" | "none" | "no" => None,
        q => match q.parse::<f64>() {
            Ok(q) if q > 0.0 && q <= 1.0 => Some(q),
            _ => return Err(bad_parker()),
        },
    };
    Ok(FbpOptions::new(filter)
        .with_frequency_scaling(args.frequency_scaling)
        .with_padding(args.padding)
        .with_parker(parker))
}

/// `rodl fbp`.
pub fn run(args: &FbpArgs) -> Result<(), Failure> {
    let options = options(args)?;
    args.image.check_options()?;
    let compute = Compute::from_args(&args.compute)?;
    let setup = Setup::load(&args.geometry)?;
    args.image.check(setup.volume_shape())?;
    let inputs = [
        ("--input", args.input.as_path()),
        ("--geometry", &args.geometry),
    ];
    crate::output::check_distinct(&[("--output", &args.output)], &inputs)?;
    let input = read_array(&args.input)?;
    setup.check_data(&input, &args.input, &args.geometry)?;
    let out = ResultOutputs::prepare(&args.output, &args.image, &inputs)?;
    let start = Instant::now();
    match input {
        AnyArray::F32(y) => reconstruct(&setup, &compute, &options, y, out, args),
        AnyArray::F64(y) => reconstruct(&setup, &compute, &options, y, out, args),
    }?;
    if args.verbose {
        crate::term::note(&format!(
            "rodl: FBP ({}, frequency scaling {}) {:?} -> {} {:?} on {} in {:.1} ms",
            options.filter,
            options.frequency_scaling,
            setup.data_shape(),
            args.output.display(),
            setup.volume_shape(),
            compute.device,
            start.elapsed().as_secs_f64() * 1e3
        ));
    }
    Ok(())
}

/// Builds `fbp_op` in precision `T`, applies it to `y` and writes the results.
fn reconstruct<T: NpyScalar>(
    setup: &Setup,
    compute: &Compute,
    options: &FbpOptions,
    y: ArrayD<T>,
    out: ResultOutputs,
    args: &FbpArgs,
) -> Result<(), Failure> {
    let ray = compute.ray_transform::<T>(setup)?;
    let fbp = fbp_op(&ray, options)?;
    let x = fbp.apply(&ray.range().element(y)?)?;
    write_result(out, &x, &args.image, "the reconstruction")
}
