//! The CUDA projector: the Joseph kernels of `kernels/ray_joseph.cu` (f32) on one GPU.
//! Device data stay on the device; host data are copied in and the result copied out
//! (ODL-compatible).

use super::Projector;
use crate::backend::cuda::DeviceTensorOf;
use crate::storage::Storage;
use crate::tomo::cuda::CudaRay;
use crate::tomo::geometry::VecGeometry;
use crate::tomo::grid::Grid;
use crate::{Error, Result, Scalar};

/// The GPU projector of one device.
pub(crate) struct CudaProjector {
    ray: CudaRay,
}

fn not_f32<T: Scalar>() -> Error {
    Error::Unsupported(format!(
        "the CUDA ray transform computes in f32, not {}",
        T::NAME
    ))
}

impl CudaProjector {
    /// Uploads the geometry to GPU `id` and compiles the kernels; errors unless `T` is `f32`.
    pub(crate) fn new<T: Scalar>(id: usize, geometry: &VecGeometry, grid: &Grid) -> Result<Self> {
        if T::as_f32_slice(&[]).is_none() {
            return Err(not_f32::<T>());
        }
        Ok(Self {
            ray: CudaRay::new(id, geometry, grid)?,
        })
    }

    fn run<T: Scalar>(
        &self,
        x: &Storage<T>,
        out: &mut Storage<T>,
        transpose: bool,
        batch: usize,
    ) -> Result<()> {
        let what = if transpose {
            "RayTransform adjoint (CUDA)"
        } else {
            "RayTransform (CUDA)"
        };
        Storage::on_gpu(self.ray.device(), x, out, what, |a, b| {
            let a = T::as_f32::<DeviceTensorOf>(a).ok_or_else(not_f32::<T>)?;
            let b = T::as_f32_mut::<DeviceTensorOf>(b).ok_or_else(not_f32::<T>)?;
            if transpose {
                self.ray.transpose_batch(a, b, batch)
            } else {
                self.ray.forward_batch(a, b, batch)
            }
        })
    }
}

impl<T: Scalar> Projector<T> for CudaProjector {
    fn forward(&self, vol: &Storage<T>, sino: &mut Storage<T>) -> Result<()> {
        self.run(vol, sino, false, 1)
    }

    fn transpose(&self, sino: &Storage<T>, vol: &mut Storage<T>) -> Result<()> {
        self.run(sino, vol, true, 1)
    }

    fn max_batch(&self) -> usize {
        self.ray.max_batch()
    }

    fn forward_batch(&self, vol: &Storage<T>, sino: &mut Storage<T>, batch: usize) -> Result<()> {
        self.run(vol, sino, false, batch)
    }

    fn transpose_batch(&self, sino: &Storage<T>, vol: &mut Storage<T>, batch: usize) -> Result<()> {
        self.run(sino, vol, true, batch)
    }
}
