//! `rodl project` and `rodl backproject`: the ray transform and its exact adjoint, with
//! optional simulated noise on projections.

use std::time::Instant;

use ndarray::ArrayD;
use rodl::{Device, LinearOperator, Operator, Scalar};

use super::{Compute, Setup};
use crate::args::TransformArgs;
use crate::io::{read_array, AnyArray, AtomicOutput};
use crate::noise::Noise;
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
    let compute = Compute::from_args(&args.compute)?;
    let setup = Setup::load(&args.geometry)?;
    let input = read_array(&args.input)?;
    let (expected, what) = match direction {
        Direction::Forward => (setup.volume_shape().to_vec(), "volume"),
        Direction::Adjoint => (setup.data_shape(), "projection data"),
    };
    if input.shape() != expected.as_slice() {
        let hint = match direction {
            Direction::Forward => "",
            Direction::Adjoint => " ([angles, u] or [angles, u, v])",
        };
        return Err(Failure::new(format!(
            "{} has shape {:?}, but the {what} of {} has shape {expected:?}{hint}",
            args.input.display(),
            input.shape(),
            args.geometry.display(),
        )));
    }
    // Fail on an unwritable output before computing.
    let (out, file) = AtomicOutput::create(&args.output)?;
    let dtype = input.dtype();
    let start = Instant::now();
    let output = match input {
        AnyArray::F32(a) => AnyArray::F32(apply(&setup, &compute, a, direction, noise)?),
        AnyArray::F64(a) => AnyArray::F64(apply(&setup, &compute, a, direction, noise)?),
    };
    let elapsed = start.elapsed();
    out.write(file, &output)?;
    if args.verbose {
        eprintln!(
            "rodl: {} {} {:?} -> {} {:?} in {:.1} ms{}",
            match direction {
                Direction::Forward => "projected",
                Direction::Adjoint => "back-projected",
            },
            dtype.name(),
            expected,
            args.output.display(),
            output.shape(),
            elapsed.as_secs_f64() * 1e3,
            match noise {
                Some((n, seed)) => format!(", {n} (seed {seed})"),
                None => String::new(),
            }
        );
    }
    Ok(())
}

/// Builds the ray transform in precision `T` and applies it (or its adjoint) to `input`, then
/// adds the noise (on the host).
fn apply<T: Scalar>(
    setup: &Setup,
    compute: &Compute,
    input: ArrayD<T>,
    direction: Direction,
    noise: Option<(Noise, u64)>,
) -> Result<ArrayD<T>, Failure> {
    let ray = compute.ray_transform::<T>(setup)?;
    let out = match direction {
        Direction::Forward => ray.apply(&ray.domain().element(input)?)?,
        Direction::Adjoint => ray.adjoint()?.apply(&ray.range().element(input)?)?,
    }
    .to_host()?;
    let out = match noise {
        Some((noise, seed)) => {
            let host = ray.range().with_device(Device::Cpu)?;
            noise.apply(&host, &out, seed)?
        }
        None => out,
    };
    Ok(out.into_array()?)
}
