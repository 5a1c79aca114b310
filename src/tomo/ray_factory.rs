//! The factory of the ray transform: the volume's description, the geometry and the options
//! of each backend kind, built on any device.

use std::sync::Arc;

use super::{Backend, BackendOptions, Geometry, RayTransform};
use crate::factory::{Factory, LinFactory, SpaceDesc};
use crate::{Error, LinOp, Result, Scalar};

/// Errors unless `volume` describes a discretised space of `geometry`'s dimension.
pub(crate) fn check_volume(volume: &SpaceDesc, geometry: &Geometry) -> Result<()> {
    let p = match volume {
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
    Ok(())
}

impl<T: Scalar> RayTransform<T> {
    /// The factory of the ray transform on the discretised `volume` for `geometry`: built for a
    /// device, it is [`RayTransform::new`] on the volume space on that device with
    /// [`Backend::for_device`] — the CPU backend with `options`' CPU options for
    /// [`Device::Cpu`](crate::Device::Cpu), the CUDA backend on GPU `id` with `options`' CUDA
    /// options (the memory budget) for [`Device::Cuda`](crate::Device::Cuda)`(id)` (a
    /// GPU-resident transform whose domain and range live on the GPU). `options` is a
    /// [`BackendOptions`] or, for the CPU's alone, a [`CpuOptions`](super::CpuOptions). The
    /// range is the geometry's data space.
    ///
    /// Errors unless `volume` is a discretised space of the geometry's dimension.
    ///
    /// ```
    /// use rodl::factory::{LinFactory, SpaceDescExt};
    /// use rodl::tomo::{parallel_beam_geometry, CpuOptions, RayTransform};
    /// use rodl::{uniform_discr, Device, Operator};
    /// let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[32, 32])?;
    /// let geometry = parallel_beam_geometry(&space, Some(24))?;
    /// let f: LinFactory<f32> = RayTransform::factory(space.desc(), geometry, CpuOptions::default())?;
    /// let ray = f.build(Device::Cpu)?;
    /// assert_eq!(ray.range().shape()?, &[24, 47]);
    /// assert!(f.build(Device::Cuda(7)).is_err()); // no such GPU: a clean error
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn factory(
        volume: SpaceDesc,
        geometry: Geometry,
        options: impl Into<BackendOptions>,
    ) -> Result<LinFactory<T>> {
        check_volume(&volume, &geometry)?;
        let options = options.into();
        let range = SpaceDesc::Discr(geometry.data_partition().clone());
        let desc = format!(
            "RayTransform on {volume} with {} views, data shape {:?}",
            geometry.vec().num_views(),
            geometry.data_shape()
        );
        let vol = volume.clone();
        Ok(Factory::from_fn(volume, range, desc, move |d| {
            let op: LinOp<T> = Arc::new(RayTransform::new(
                vol.build(d)?,
                geometry.clone(),
                Backend::for_device(d, &options),
            )?);
            Ok(op)
        }))
    }
}
