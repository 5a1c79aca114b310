//! `rodl phantom`: ODL's (modified) Shepp–Logan phantom on a geometry file's volume.

use rodl::tomo::phantom::shepp_logan;

use super::{write_result, Setup};
use crate::args::{DtypeArg, PhantomArgs, PhantomKind};
use crate::io::{AtomicOutput, NpyScalar};
use crate::Failure;

/// `rodl phantom`.
pub fn run(args: &PhantomArgs) -> Result<(), Failure> {
    let setup = Setup::load(&args.geometry)?;
    args.image.check(setup.volume_shape(), &[&args.output])?;
    match args.dtype {
        DtypeArg::Float32 => make::<f32>(&setup, args),
        DtypeArg::Float64 => make::<f64>(&setup, args),
    }
}

/// Computes and writes the phantom in precision `T`.
fn make<T: NpyScalar>(setup: &Setup, args: &PhantomArgs) -> Result<(), Failure> {
    let (out, file) = AtomicOutput::create(&args.output)?;
    let space = setup.spec.volume.space::<T>()?;
    let x = shepp_logan(&space, args.kind == PhantomKind::ModifiedSheppLogan)?;
    write_result(out, file, &x, &args.image)
}
