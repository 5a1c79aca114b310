//! `rodl phantom`: ODL's (modified) Shepp–Logan phantom on a geometry file's volume.

use rodl::tomo::phantom::shepp_logan;

use super::{write_result, ResultOutputs, Setup};
use crate::args::{DtypeArg, PhantomArgs, PhantomKind};
use crate::io::NpyScalar;
use crate::stages::Stages;
use crate::Failure;

/// `rodl phantom`.
pub fn run(args: &PhantomArgs) -> Result<(), Failure> {
    args.image.check_options()?;
    let setup = Setup::load(&args.geometry)?;
    args.image.check(setup.volume_shape())?;
    let out = ResultOutputs::prepare(&args.output, &args.image, &[("--geometry", &args.geometry)])?;
    match args.dtype {
        DtypeArg::Float32 => make::<f32>(&setup, args, out),
        DtypeArg::Float64 => make::<f64>(&setup, args, out),
    }
}

/// Computes and writes the phantom in precision `T`.
fn make<T: NpyScalar>(
    setup: &Setup,
    args: &PhantomArgs,
    out: ResultOutputs,
) -> Result<(), Failure> {
    let space = setup.spec.volume.space::<T>()?;
    let x = shepp_logan(&space, args.kind == PhantomKind::ModifiedSheppLogan)?;
    write_result(
        out,
        x,
        &args.image,
        "the phantom",
        &mut Stages::new(rodl::Device::Cpu),
    )
}
