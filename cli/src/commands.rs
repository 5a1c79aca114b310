//! The subcommands, and what they share: the checked geometry file ([`Setup`]) and the compute
//! device ([`Compute`]).

pub mod demo;
#[cfg(feature = "mpi")]
pub mod distributed;
pub mod fbp;
pub mod info;
pub mod phantom;
pub mod reconstruct;
pub mod scan;
pub mod transform;

use std::path::Path;
use std::sync::Arc;

use rodl::tomo::{Backend, Geometry, RayTransform, TomoSpec};
use rodl::{Device, Scalar, Space};

use crate::args::DeviceArgs;
use crate::image::ImageArgs;
use crate::io::{check_finite, NpyScalar};
use crate::output::{check_distinct, Outputs, Slot};
use crate::stages::Stages;
use crate::Failure;

/// What may make a result overflow, for the message when it is not finite.
pub const OVERFLOW_HINT: &str = "the input's values or the geometry's extents are too large \
                                 for the precision (float32 overflows beyond 3.4e38)";

/// The outputs of a command that writes `output` (`--output`) and maybe a PNG: checked to be
/// distinct from each other and from the `inputs` (option name, path), and prepared.
pub struct ResultOutputs {
    /// The set.
    pub outputs: Outputs,
    /// The `.npy` output.
    pub npy: Slot,
    /// The PNG output.
    pub png: Option<Slot>,
}

impl ResultOutputs {
    /// Checks and prepares `--output` and `--png`.
    pub fn prepare(
        output: &Path,
        image: &ImageArgs,
        inputs: &[(&str, &Path)],
    ) -> Result<ResultOutputs, Failure> {
        let mut names = vec![("--output", output)];
        if let Some(png) = &image.png {
            names.push(("--png", png.as_path()));
        }
        check_distinct(&names, inputs)?;
        let mut outputs = Outputs::new();
        let npy = outputs.prepare(output)?;
        let png = image.prepare(&mut outputs)?;
        Ok(ResultOutputs { outputs, npy, png })
    }
}

/// Writes a command's result `x` (an element of a volume space, on any device; `what` names
/// it in messages): the `.npy` output and, when asked, its PNG, as one unit. A result with
/// non-finite values is an error and nothing is written. `stages` gets the times of the
/// download, the check and the write.
pub fn write_result<T: NpyScalar>(
    out: ResultOutputs,
    x: rodl::Element<T>,
    image: &ImageArgs,
    what: &str,
    stages: &mut Stages,
) -> Result<(), Failure> {
    let ResultOutputs {
        mut outputs,
        npy,
        png,
    } = out;
    let host = stages.time("download", || Ok(x.into_host()?))?;
    stages.time("check", || {
        check_finite(&host.as_array()?, what, OVERFLOW_HINT)
    })?;
    stages.time("write", || {
        image.write(&mut outputs, png, &host)?;
        let array = T::wrap(host.into_array()?);
        outputs.write_array(npy, &array)?;
        outputs.commit()
    })
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
        let text = crate::io::read_geometry_text(path)?;
        Setup::from_text(&text)
            .map_err(|f| Failure::new(format!("{}: {}", path.display(), f.message)))
    }

    /// Parses and checks the text of a geometry file.
    pub fn from_text(text: &str) -> Result<Setup, Failure> {
        let spec = TomoSpec::from_json(text)?;
        // Check the volume first, so that `info` reports a bad one too.
        spec.volume.check()?;
        crate::limits::check_geometry_size(&spec.geometry)?;
        let geometry = spec.geometry.build()?;
        spec.volume.space::<f64>()?;
        if spec.volume.shape.len() != geometry.ndim() {
            return Err(Failure::new(format!(
                "a {}D geometry needs a {}D volume, got `volume.shape` {:?}",
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

    /// Errors unless an input of shape `shape` (read from `path`) has the shape of the
    /// projection data.
    pub fn check_data(&self, shape: &[usize], path: &Path, geometry: &Path) -> Result<(), Failure> {
        let expected = self.data_shape();
        if shape != expected.as_slice() {
            return Err(Failure::new(format!(
                "{} has shape {:?}, but the projection data of {} have shape {expected:?} \
                 ([angles, u] or [angles, u, v])",
                path.display(),
                shape,
                geometry.display(),
            )));
        }
        Ok(())
    }
}

/// Parses `--device` (a usage error when it names no device).
pub fn parse_device(text: &str) -> Result<Device, Failure> {
    text.parse::<Device>()
        .map_err(|e| Failure::usage(format!("--device: {}", crate::error_message(&e))))
}

/// The device a command computes on, and the ray-transform backend that goes with it.
#[derive(Clone, Debug)]
pub struct Compute {
    /// Where the data live while computing.
    pub device: Device,
    /// The ray transform's backend.
    pub backend: Backend,
}

impl Compute {
    /// The device and backend selected by `--device` and `--threads`, checked to be usable.
    pub fn from_args(args: &DeviceArgs) -> Result<Compute, Failure> {
        Compute::new(parse_device(&args.device)?, args.threads)
    }

    /// The device and backend selected by `--device` and `--threads`, not yet checked to be
    /// usable: for commands that start the device (a GPU's context and kernels) on a thread
    /// of its own while they read their input, calling [`Compute::check`] there.
    pub fn from_args_unchecked(args: &DeviceArgs) -> Result<Compute, Failure> {
        Compute::unchecked(parse_device(&args.device)?, args.threads)
    }

    /// Errors unless the device can be used (on a GPU: creates its context and compiles or
    /// loads the vector kernels, the first time).
    pub fn check(&self) -> Result<(), Failure> {
        Ok(self.device.check_available()?)
    }

    /// The device `device` with `threads` CPU worker threads (CPU only), checked to be usable.
    pub fn new(device: Device, threads: Option<usize>) -> Result<Compute, Failure> {
        let c = Compute::unchecked(device, threads)?;
        c.check()?;
        Ok(c)
    }

    fn unchecked(device: Device, threads: Option<usize>) -> Result<Compute, Failure> {
        let backend = match (device, threads) {
            (Device::Cpu, None) => Backend::default(),
            (Device::Cpu, Some(n)) => Backend::cpu_threads(n),
            (Device::Cuda(_), Some(_)) => {
                return Err(Failure::usage("--threads applies only to --device cpu"))
            }
            (Device::Cuda(id), None) => Backend::cuda(id),
        };
        Ok(Compute { device, backend })
    }

    /// The CPU worker threads the ray transform runs on (for a GPU, those of the host's part).
    pub fn threads(&self) -> usize {
        match &self.backend {
            Backend::Cpu(o) => o.threads.unwrap_or_else(crate::limits::cores),
            _ => crate::limits::cores(),
        }
    }

    /// The volume space of `setup` in precision `T` on this device.
    pub fn volume<T: Scalar>(&self, setup: &Setup) -> Result<Space<T>, Failure> {
        Ok(setup.spec.volume.space::<T>()?.with_device(self.device)?)
    }

    /// The ray transform of `setup` on host spaces, computed on this device: on a GPU the
    /// host arrays stream through it in pieces, their transfers overlapped with the kernels
    /// (one application: `project`, `backproject`), instead of being copied up whole first.
    pub fn host_ray_transform<T: Scalar>(
        &self,
        setup: &Setup,
    ) -> Result<Arc<RayTransform<T>>, Failure> {
        Ok(Arc::new(RayTransform::new(
            setup.spec.volume.space::<T>()?,
            setup.geometry.clone(),
            self.backend.clone(),
        )?))
    }

    /// The ray transform of `setup` on this device (data stay on the device).
    pub fn ray_transform<T: Scalar>(&self, setup: &Setup) -> Result<Arc<RayTransform<T>>, Failure> {
        Ok(Arc::new(RayTransform::new(
            self.volume::<T>(setup)?,
            setup.geometry.clone(),
            self.backend.clone(),
        )?))
    }
}
