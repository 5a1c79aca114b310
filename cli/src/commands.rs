//! The subcommands, and what they share: the checked geometry file ([`Setup`]) and the compute
//! device ([`Compute`]).

pub mod demo;
pub mod fbp;
pub mod info;
pub mod phantom;
pub mod reconstruct;
pub mod transform;

use std::path::Path;
use std::sync::Arc;

use rodl::tomo::{Backend, Geometry, RayTransform, TomoSpec};
use rodl::{Device, Scalar, Space};

use crate::args::DeviceArgs;
use crate::image::ImageArgs;
use crate::io::{AnyArray, AtomicOutput, NpyScalar};
use crate::Failure;

/// Writes a command's result `x` (an element of a volume space, on any device): the `.npy`
/// output prepared by `out` and, when asked, its PNG. The `.npy` file appears under its name
/// only after both are complete; if that last rename fails the PNG is removed again.
pub fn write_result<T: NpyScalar>(
    out: AtomicOutput,
    file: std::fs::File,
    x: &rodl::Element<T>,
    image: &ImageArgs,
) -> Result<(), Failure> {
    let host = x.to_host()?;
    let pending = out.fill(file, &T::wrap(host.as_array()?.to_owned()))?;
    image.write(&host)?;
    pending.commit().inspect_err(|_| {
        if let Some(png) = &image.png {
            let _ = std::fs::remove_file(png);
        }
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

    /// Errors unless `input` (read from `path`) has the shape of the projection data.
    pub fn check_data(
        &self,
        input: &AnyArray,
        path: &Path,
        geometry: &Path,
    ) -> Result<(), Failure> {
        let expected = self.data_shape();
        if input.shape() != expected.as_slice() {
            return Err(Failure::new(format!(
                "{} has shape {:?}, but the projection data of {} have shape {expected:?} \
                 ([angles, u] or [angles, u, v])",
                path.display(),
                input.shape(),
                geometry.display(),
            )));
        }
        Ok(())
    }
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
        let device: Device = args.device.parse()?;
        Compute::new(device, args.threads)
    }

    /// The device `device` with `threads` CPU worker threads (CPU only), checked to be usable.
    pub fn new(device: Device, threads: Option<usize>) -> Result<Compute, Failure> {
        let backend = match (device, threads) {
            (Device::Cpu, None) => Backend::default(),
            (Device::Cpu, Some(n)) => Backend::cpu_threads(n),
            (Device::Cuda(_), Some(_)) => {
                return Err(Failure::new("--threads applies only to --device cpu"))
            }
            (Device::Cuda(id), None) => Backend::cuda(id),
        };
        device.check_available()?;
        Ok(Compute { device, backend })
    }

    /// The volume space of `setup` in precision `T` on this device.
    pub fn volume<T: Scalar>(&self, setup: &Setup) -> Result<Space<T>, Failure> {
        Ok(setup.spec.volume.space::<T>()?.with_device(self.device)?)
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
