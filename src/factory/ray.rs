//! The factory of the ray transform.

use std::sync::Arc;

use super::{LinearOperatorFactory, OperatorFactory, SpaceDesc};
use crate::tomo::{Backend, CpuOptions, Geometry, RayTransform};
use crate::{Device, Error, LinOp, Op, Result, Scalar};

/// The description of a [`RayTransform`] without its device: the volume, the geometry and the
/// CPU options. [`LinearOperatorFactory::build_linear`] builds the transform on the volume
/// space on that device with [`Backend::Cpu`] (these options) for [`Device::Cpu`] and
/// [`Backend::cuda`]`(id)` for [`Device::Cuda`]`(id)` — a GPU-resident transform whose domain and
/// range live on the GPU.
///
/// ```
/// use std::sync::Arc;
/// use rodl::factory::{LinFactory, RayTransformFactory, SpaceDescExt};
/// use rodl::tomo::parallel_beam_geometry;
/// use rodl::{uniform_discr, Device, Operator};
/// let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[32, 32])?;
/// let geometry = parallel_beam_geometry(&space, Some(24))?;
/// let f: LinFactory<f32> = Arc::new(RayTransformFactory::new(space.desc(), geometry)?);
/// let ray = f.build_linear(Device::Cpu)?;
/// assert_eq!(ray.range().shape()?, &[24, 47]);
/// assert!(f.build_linear(Device::Cuda(7)).is_err()); // no such GPU: a clean error
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct RayTransformFactory {
    volume: SpaceDesc,
    range: SpaceDesc,
    geometry: Geometry,
    cpu: CpuOptions,
}

impl RayTransformFactory {
    /// The factory of the ray transform on the discretised `volume` for `geometry`, with default
    /// CPU options.
    ///
    /// Errors unless `volume` is a discretised space of the geometry's dimension.
    pub fn new(volume: SpaceDesc, geometry: Geometry) -> Result<Self> {
        let p = match &volume {
            SpaceDesc::Discr(p) => p,
            other => {
                return Err(Error::invalid(format!(
                    "the ray transform needs a discretised (uniform_discr) volume, got {other}"
                )))
            }
        };
        if p.ndim() != geometry.ndim() {
            return Err(Error::Geometry(format!(
                "a {}D geometry needs a {}D volume, got {volume}",
                geometry.ndim(),
                geometry.ndim()
            )));
        }
        let range = SpaceDesc::Discr(geometry.data_partition().clone());
        Ok(Self {
            volume,
            range,
            geometry,
            cpu: CpuOptions::default(),
        })
    }

    /// The same factory with these CPU options (used when building for [`Device::Cpu`]).
    pub fn with_cpu_options(mut self, cpu: CpuOptions) -> Self {
        self.cpu = cpu;
        self
    }

    /// The volume (the transform's domain).
    pub fn volume(&self) -> &SpaceDesc {
        &self.volume
    }

    /// The geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The CPU options.
    pub fn cpu_options(&self) -> &CpuOptions {
        &self.cpu
    }

    /// The backend options for `device`.
    pub fn backend(&self, device: Device) -> Backend {
        match device {
            Device::Cpu => Backend::Cpu(self.cpu.clone()),
            Device::Cuda(id) => Backend::cuda(id),
        }
    }

    /// Builds the ray transform itself (not type-erased) on `device`.
    pub fn build_ray_transform<T: Scalar>(&self, device: Device) -> Result<RayTransform<T>> {
        RayTransform::new(
            self.volume.build(device)?,
            self.geometry.clone(),
            self.backend(device),
        )
    }
}

impl<T: Scalar> OperatorFactory<T> for RayTransformFactory {
    fn domain(&self) -> &SpaceDesc {
        &self.volume
    }
    fn range(&self) -> &SpaceDesc {
        &self.range
    }
    fn build(&self, device: Device) -> Result<Op<T>> {
        Ok(Arc::new(self.build_ray_transform::<T>(device)?))
    }
    fn describe(&self) -> String {
        format!(
            "RayTransform on {} with {} views, data shape {:?}",
            self.volume,
            self.geometry.vec().num_views(),
            self.geometry.data_shape()
        )
    }
    fn is_linear(&self) -> bool {
        true
    }
}

impl<T: Scalar> LinearOperatorFactory<T> for RayTransformFactory {
    fn build_linear(&self, device: Device) -> Result<LinOp<T>> {
        Ok(Arc::new(self.build_ray_transform::<T>(device)?))
    }
}
