//! `mpirun -np N rodl reconstruct --partition views|slabs …` and `rodl fbp --partition views`
//! (feature `mpi`): one rank per
//! process, each reading only its share of the input (the `.npy` is memory-mapped and only
//! the rank's views or detector rows are copied from it), the solver running unchanged on the
//! distributed ray transform (`rodl::distributed`), one progress bar (rank 0's), and rank 0
//! writing the result. A failure on any rank is reported by every rank with the failing rank's
//! number (`rank R: …`), and the job ends with a non-zero status instead of hanging.

use std::sync::Arc;

use ndarray::{ArrayD, ArrayViewD, Axis, Slice};
use rodl::distributed::{Across, DistributedRayTransform, MpiComm, Partition, Plan};
use rodl::solvers::callback::ProgressBar;
use rodl::solvers::iterative::{cgls, landweber, sirt, LandweberOptions, SirtOptions};
use rodl::{Element, Operator, Scalar};

use super::{write_result, Compute, ResultOutputs, Setup};
use crate::algorithm::{Algorithm, Settings};
use crate::args::{FbpArgs, PartitionArg, ReconstructArgs};
use crate::io::{Dtype, NpyFile, NpyScalar};
use crate::stages::Stages;
use crate::Failure;

/// A failure on this rank, as the library's error that the ranks agree on.
fn as_error(rank: usize, f: &Failure) -> rodl::Error {
    rodl::Error::Distributed {
        rank,
        message: f.message().to_string(),
    }
}

/// The agreed outcome of `local` on every rank (a failure names its rank).
fn agree<V>(across: &Across, local: Result<V, Failure>) -> Result<V, Failure> {
    let rank = across.rank();
    let as_lib = local.as_ref().map(|_| ()).map_err(|f| as_error(rank, f));
    across.agree(as_lib)?;
    local
}

/// `rodl reconstruct` over the ranks of an MPI job.
pub fn run(args: &ReconstructArgs, partition: PartitionArg) -> Result<(), Failure> {
    let world = Arc::new(MpiComm::world()?);
    let across = Across::from_arc(world);
    let prepared = agree(&across, prepare(args));
    let (settings, compute, setup, npy) = prepared?;
    let partition = match partition {
        PartitionArg::Views => Partition::Views,
        PartitionArg::Slabs => Partition::Slabs,
    };
    match npy.dtype() {
        Dtype::F32 => run_typed::<f32>(args, &across, partition, &settings, &compute, &setup, &npy),
        Dtype::F64 => run_typed::<f64>(args, &across, partition, &settings, &compute, &setup, &npy),
    }
}

fn prepare(args: &ReconstructArgs) -> Result<(Settings, Compute, Setup, NpyFile), Failure> {
    let settings = Settings {
        algorithm: args.algorithm,
        iterations: args.iterations,
        subsets: args.subsets,
        nonnegative: args.nonnegative,
        tv_weight: args.tv_weight,
    };
    settings.check(usize::MAX)?;
    if !matches!(
        settings.algorithm,
        Algorithm::Cgls | Algorithm::Sirt | Algorithm::Landweber
    ) {
        return Err(Failure::usage(format!(
            "--partition: {} does not run distributed yet (cgls, sirt and landweber do)",
            settings.algorithm
        )));
    }
    args.image.check_options()?;
    let compute = Compute::from_args(&args.compute)?;
    let setup = Setup::load(&args.geometry)?;
    settings.check(setup.data_shape()[0])?;
    args.image.check(setup.volume_shape())?;
    let npy = NpyFile::open(&args.input)?;
    setup.check_data(npy.shape(), &args.input, &args.geometry)?;
    Ok((settings, compute, setup, npy))
}

#[allow(clippy::too_many_arguments)]
fn run_typed<T: NpyScalar + Scalar>(
    args: &ReconstructArgs,
    across: &Across,
    partition: Partition,
    settings: &Settings,
    compute: &Compute,
    setup: &Setup,
    npy: &NpyFile,
) -> Result<(), Failure> {
    let (rank, size) = (across.rank(), across.size());
    let volume = compute.volume::<T>(setup)?;
    let n = match partition {
        Partition::Views => setup.data_shape()[0],
        Partition::Slabs => *setup.volume_shape().last().unwrap_or(&1),
    };
    let plan = Plan::even(partition, n, size)?;
    let ray = DistributedRayTransform::new(
        &volume,
        &setup.geometry,
        &plan,
        compute.backend.clone(),
        across.clone(),
    )?;
    let mine = read_share(npy, &args.input, &ray);
    let data = ray.range_element(agree(across, mine)?)?;
    let mut bar = if args.quiet || rank != 0 {
        ProgressBar::hidden(settings.iterations)
    } else {
        ProgressBar::new(settings.iterations)
    };
    let mut x = ray.domain().zero()?;
    let n = settings.iterations;
    let done = match settings.algorithm {
        Algorithm::Cgls => cgls(&ray, &mut x, &data, n, &mut bar)?,
        Algorithm::Sirt => {
            let options = SirtOptions {
                nonnegative: settings.nonnegative,
                ..SirtOptions::default()
            };
            sirt(&ray, &mut x, &data, n, &options, &mut bar)?
        }
        _ => landweber(
            &ray,
            &mut x,
            &data,
            n,
            &LandweberOptions::default(),
            &mut bar,
        )?,
    };
    bar.inner().abandon();
    let whole = gather(across, &ray, x)?;
    // Rank 0 writes; the others wait for its outcome.
    let files = [&args.input, &args.geometry, &args.output];
    write_on_rank_zero(across, whole, files, &args.image, &volume, compute)?;
    if args.verbose && rank == 0 {
        crate::term::note(&format!(
            "rodl: {} {} iterations {:?} -> {} {:?} on {size} ranks ({partition:?})",
            settings.algorithm,
            done.iterations,
            setup.data_shape(),
            args.output.display(),
            setup.volume_shape(),
        ));
    }
    Ok(())
}

/// This rank's part of the data (`ray.range_part()`), copied from the mapped file alone.
fn read_share<T: NpyScalar + Scalar>(
    npy: &NpyFile,
    input: &std::path::Path,
    ray: &DistributedRayTransform<T>,
) -> Result<ArrayD<T>, Failure> {
    let (axis, rows) = ray.range_part();
    let map = npy.map()?;
    let all = ArrayViewD::from_shape(npy.shape(), map.data::<T>()?)
        .map_err(|e| Failure::new(format!("{}: {e}", input.display())))?;
    let part = all.slice_axis(Axis(axis), Slice::from(rows.start..rows.end));
    if !part.iter().all(|v| v.is_finite()) {
        return Err(Failure::new(format!(
            "{}: the data have entries that are not finite (NaN or infinite)",
            input.display()
        )));
    }
    Ok(part.to_owned())
}

/// `rodl fbp` over the ranks of an MPI job: each rank filters and back-projects its views
/// (`fbp_op_views`: the whole scan's filter and weights on them), the volumes are summed.
pub fn fbp(args: &FbpArgs, partition: PartitionArg) -> Result<(), Failure> {
    let world = Arc::new(MpiComm::world()?);
    let across = Across::from_arc(world);
    let prepared = agree(
        &across,
        (|| {
            let options = crate::fbp_options::options(args)?;
            args.image.check_options()?;
            let compute = Compute::from_args(&args.compute)?;
            let setup = Setup::load(&args.geometry)?;
            args.image.check(setup.volume_shape())?;
            let npy = NpyFile::open(&args.input)?;
            setup.check_data(npy.shape(), &args.input, &args.geometry)?;
            Ok((options, compute, setup, npy))
        })(),
    );
    let (options, compute, setup, npy) = prepared?;
    match (partition, npy.dtype()) {
        (PartitionArg::Views, Dtype::F32) => {
            fbp_typed::<f32>(args, &across, &options, &compute, &setup, &npy)
        }
        (PartitionArg::Views, Dtype::F64) => {
            fbp_typed::<f64>(args, &across, &options, &compute, &setup, &npy)
        }
        (PartitionArg::Slabs, Dtype::F32) => {
            fbp_slabs::<f32>(args, &across, &options, &compute, &setup, &npy)
        }
        (PartitionArg::Slabs, Dtype::F64) => {
            fbp_slabs::<f64>(args, &across, &options, &compute, &setup, &npy)
        }
    }
}

/// `rodl fbp --partition slabs`: each rank a slab of the volume along z, reconstructed from
/// the band of detector rows its rays reach (read alone from the mapped input) by the FBP of
/// its local transform. In a parallel beam the filter works on each row on its own and a
/// slice's rays stay in its rows, so the slabs are the whole FBP's; a cone beam's FDK is not
/// split this way (its rays cross the slices): an error that names `--partition views`.
fn fbp_slabs<T: NpyScalar + Scalar>(
    args: &FbpArgs,
    across: &Across,
    options: &rodl::tomo::FbpOptions,
    compute: &Compute,
    setup: &Setup,
    npy: &NpyFile,
) -> Result<(), Failure> {
    let (rank, size) = (across.rank(), across.size());
    let volume = compute.volume::<T>(setup)?;
    let parallel = agree(
        across,
        if matches!(setup.geometry.vec().beam(), rodl::tomo::Beam::Parallel) {
            Ok(())
        } else {
            Err(Failure::usage(
                "--partition slabs: fbp splits a parallel beam into slabs (each slice from its \
                 own rows); FDK's rays cross the slices: use --partition views",
            ))
        },
    );
    parallel?;
    let nz = *setup.volume_shape().last().unwrap_or(&1);
    let plan = Plan::even(Partition::Slabs, nz, size)?;
    let ray = DistributedRayTransform::new(
        &volume,
        &setup.geometry,
        &plan,
        compute.backend.clone(),
        across.clone(),
    )?;
    let local = (|| -> Result<ArrayD<T>, Failure> {
        let (Some(part), Some(band)) = (ray.local(), ray.band()) else {
            return Ok(ray.domain().zero()?.into_host()?.into_array()?);
        };
        let map = npy.map()?;
        let all = ArrayViewD::from_shape(npy.shape(), map.data::<T>()?)
            .map_err(|e| Failure::new(format!("{}: {e}", args.input.display())))?;
        let rows = all.slice_axis(Axis(2), Slice::from(band.start..band.end));
        if !rows.iter().all(|v| v.is_finite()) {
            return Err(Failure::new(format!(
                "{}: the data have entries that are not finite (NaN or infinite)",
                args.input.display()
            )));
        }
        let data = part.range().element(rows.to_owned())?;
        let x = rodl::tomo::fbp_op(part, options)?.apply(&data)?;
        Ok(x.into_host()?.into_array()?)
    })();
    let x = agree(across, local)?;
    let x = ray.domain_element(x)?;
    let whole = gather(across, &ray, x)?;
    let files = [&args.input, &args.geometry, &args.output];
    write_on_rank_zero(across, whole, files, &args.image, &volume, compute)?;
    if args.verbose && rank == 0 {
        crate::term::note(&format!(
            "rodl: FBP ({}) {:?} -> {} {:?} on {size} ranks by slabs",
            options.filter,
            setup.data_shape(),
            args.output.display(),
            setup.volume_shape(),
        ));
    }
    Ok(())
}

fn fbp_typed<T: NpyScalar + Scalar>(
    args: &FbpArgs,
    across: &Across,
    options: &rodl::tomo::FbpOptions,
    compute: &Compute,
    setup: &Setup,
    npy: &NpyFile,
) -> Result<(), Failure> {
    let (rank, size) = (across.rank(), across.size());
    let volume = compute.volume::<T>(setup)?;
    let plan = Plan::even(Partition::Views, setup.data_shape()[0], size)?;
    let ray = DistributedRayTransform::new(
        &volume,
        &setup.geometry,
        &plan,
        compute.backend.clone(),
        across.clone(),
    )?;
    let data = ray.range_element(agree(across, read_share(npy, &args.input, &ray))?)?;
    let (_, views) = ray.range_part();
    let local = (|| -> Result<ArrayD<T>, Failure> {
        let x = match ray.local() {
            Some(part) => {
                let op = rodl::tomo::fbp_op_views(part, &setup.geometry, views, options)?;
                op.apply(&data)?
            }
            None => volume.zero()?,
        };
        Ok(x.into_host()?.into_array()?)
    })();
    let mut x = agree(across, local)?;
    // The views' back-projections add up to the whole FBP.
    match x.as_slice_mut() {
        Some(values) => across.all_sum(values)?,
        None => return Err(Failure::new("the volume is not contiguous")),
    }
    let files = [&args.input, &args.geometry, &args.output];
    write_on_rank_zero(
        across,
        (rank == 0).then_some(x),
        files,
        &args.image,
        &volume,
        compute,
    )?;
    if args.verbose && rank == 0 {
        crate::term::note(&format!(
            "rodl: FBP ({}) {:?} -> {} {:?} on {size} ranks by views",
            options.filter,
            setup.data_shape(),
            args.output.display(),
            setup.volume_shape(),
        ));
    }
    Ok(())
}

/// Rank 0 writes the volume `x` (`Some` there, `None` on the other ranks) to the output of
/// `files = [input, geometry, output]`, checked against the inputs; every rank then agrees on
/// the outcome.
fn write_on_rank_zero<T: NpyScalar + Scalar>(
    across: &Across,
    x: Option<ArrayD<T>>,
    [input, geometry, output]: [&std::path::PathBuf; 3],
    image: &crate::image::ImageArgs,
    volume: &rodl::Space<T>,
    compute: &Compute,
) -> Result<(), Failure> {
    let written = match x {
        Some(x) => (|| {
            let inputs = [("--input", input.as_path()), ("--geometry", geometry)];
            crate::output::check_distinct(&[("--output", output)], &inputs)?;
            let out = ResultOutputs::prepare(output, image, &inputs)?;
            let x = volume.with_device(rodl::Device::Cpu)?.element(x)?;
            write_result(
                out,
                x,
                image,
                "the reconstruction",
                &mut Stages::new(compute.device),
            )
        })(),
        None => Ok(()),
    };
    agree(across, written)
}

/// The whole volume on rank 0 (`None` elsewhere): rank 0's copy by views, the slabs gathered
/// by slabs.
fn gather<T: Scalar>(
    across: &Across,
    ray: &DistributedRayTransform<T>,
    x: Element<T>,
) -> Result<Option<ArrayD<T>>, Failure> {
    let x = x.into_host()?.into_array()?;
    let Some((axis, _)) = ray.domain_part() else {
        return Ok((across.rank() == 0).then_some(x));
    };
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.f64().to_le_bytes()).collect();
    let all = across.comm().all_gather(&bytes)?;
    if across.rank() != 0 {
        return Ok(None);
    }
    let mut parts = Vec::with_capacity(all.len());
    for (range, b) in ray.plan().ranges().iter().zip(&all) {
        let mut shape = x.shape().to_vec();
        shape[axis] = range.len();
        let values: Vec<T> = b
            .chunks_exact(8)
            .map(|c| T::of(f64::from_le_bytes(c.try_into().unwrap_or([0; 8]))))
            .collect();
        parts.push(
            ArrayD::from_shape_vec(shape, values)
                .map_err(|e| Failure::new(format!("gathering the slabs: {e}")))?,
        );
    }
    let views: Vec<_> = parts.iter().map(|p| p.view()).collect();
    Ok(Some(ndarray::concatenate(Axis(axis), &views).map_err(
        |e| Failure::new(format!("gathering the slabs: {e}")),
    )?))
}
