//! The subcommands: `project`, `backproject` and `info`.

use std::path::Path;
use std::time::Instant;

use ndarray::ArrayD;
use rodl::tomo::{Backend, Geometry, RayTransform, TomoSpec};
use rodl::{Device, LinearOperator, Operator, Scalar};

use crate::io::{read_array, AnyArray, AtomicOutput};
use crate::{Failure, TransformArgs};

/// Which way a ray transform is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// The ray transform `A`: volume → projection data.
    Forward,
    /// Its exact adjoint `A*`: projection data → volume.
    Adjoint,
}

/// A geometry file, read and checked.
pub struct Setup {
    /// The parsed file.
    pub spec: TomoSpec,
    /// The geometry built from it.
    pub geometry: Geometry,
}

impl Setup {
    /// Reads and checks the geometry file.
    pub fn load(path: &Path) -> Result<Setup, Failure> {
        let spec = TomoSpec::from_file(path).map_err(|e| match e {
            rodl::Error::Io { path, message } => {
                Failure::new(format!("cannot read {}: {message}", path.display()))
            }
            e => Failure::from(e),
        })?;
        let geometry = spec
            .geometry
            .build()
            .map_err(|e| Failure::new(format!("{}: {e}", path.display())))?;
        // Check the volume now, so that `info` reports a bad one too.
        spec.volume
            .space::<f64>()
            .map_err(|e| Failure::new(format!("{}: invalid volume: {e}", path.display())))?;
        if spec.volume.shape.len() != geometry.ndim() {
            return Err(Failure::new(format!(
                "{}: a {}D geometry needs a {}D volume, got volume.shape {:?}",
                path.display(),
                geometry.ndim(),
                geometry.ndim(),
                spec.volume.shape
            )));
        }
        Ok(Setup { spec, geometry })
    }

    /// The volume's shape.
    pub fn volume_shape(&self) -> &[usize] {
        &self.spec.volume.shape
    }

    /// The shape of projection data: `[angles, u(, v)]`.
    pub fn data_shape(&self) -> Vec<usize> {
        self.geometry.data_shape()
    }
}

/// The compute backend selected by `--device` and `--threads`.
pub fn backend(device: &str, threads: Option<usize>) -> Result<Backend, Failure> {
    let device: Device = device.parse()?;
    match (device, threads) {
        (Device::Cpu, None) => Ok(Backend::default()),
        (Device::Cpu, Some(n)) => Ok(Backend::cpu_threads(n)),
        (Device::Cuda(_), Some(_)) => Err(Failure::new(
            "--threads applies only to --device cpu".to_string(),
        )),
        (Device::Cuda(id), None) => Ok(Backend::cuda(id)),
    }
}

/// `rodl project` (`Direction::Forward`) and `rodl backproject` (`Direction::Adjoint`).
pub fn transform(args: &TransformArgs, direction: Direction) -> Result<(), Failure> {
    let backend = backend(&args.device, args.threads)?;
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
        AnyArray::F32(a) => AnyArray::F32(apply(&setup, backend, a, direction)?),
        AnyArray::F64(a) => AnyArray::F64(apply(&setup, backend, a, direction)?),
    };
    let elapsed = start.elapsed();
    out.write(file, &output)?;
    if args.verbose {
        eprintln!(
            "rodl: {} {} {:?} -> {} {:?} in {:.1} ms",
            match direction {
                Direction::Forward => "projected",
                Direction::Adjoint => "back-projected",
            },
            dtype.name(),
            expected,
            args.output.display(),
            output.shape(),
            elapsed.as_secs_f64() * 1e3
        );
    }
    Ok(())
}

/// Builds the ray transform in precision `T` and applies it (or its adjoint) to `input`.
fn apply<T: Scalar>(
    setup: &Setup,
    backend: Backend,
    input: ArrayD<T>,
    direction: Direction,
) -> Result<ArrayD<T>, Failure> {
    let space = setup.spec.volume.space::<T>()?;
    let ray = RayTransform::new(space, setup.geometry.clone(), backend)?;
    let out = match direction {
        Direction::Forward => ray.apply(&ray.domain().element(input)?)?,
        Direction::Adjoint => ray.adjoint()?.apply(&ray.range().element(input)?)?,
    };
    Ok(out.into_array()?)
}

/// `rodl info`: the geometry kind, the volume and the data shapes.
pub fn info(geometry: &Path) -> Result<(), Failure> {
    let setup = Setup::load(geometry)?;
    let spec = &setup.spec;
    let kind = serde_json::to_value(spec.geometry.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{:?}", spec.geometry.kind).to_lowercase());
    let space = spec.volume.space::<f64>()?;
    let data_axes = if setup.geometry.ndim() == 2 {
        "[angle, u]"
    } else {
        "[angle, u, v]"
    };
    println!("geometry: {kind} ({}D)", setup.geometry.ndim());
    println!(
        "volume:   shape {:?}, min_pt {:?}, max_pt {:?}, cell sides {:?}",
        spec.volume.shape,
        spec.volume.min_pt,
        spec.volume.max_pt,
        space.cell_sides()?
    );
    println!("data:     shape {:?} {data_axes}", setup.data_shape());
    if let Some(a) = &spec.geometry.angles {
        println!("angles:   {} in [{}, {}] (radians)", a.count, a.min, a.max);
    }
    Ok(())
}
