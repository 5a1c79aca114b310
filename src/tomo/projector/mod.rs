//! Projectors: the discretised ray transform's kernels on one backend.
//!
//! A [`Projector`] computes the unweighted Joseph forward projection and its exact transpose for
//! the geometry and grid it was set up with; [`RayTransform`](super::RayTransform) holds one and
//! knows nothing else about the backend (ODL's `tomo/backends` pattern). [`build`] is the one
//! place that reconciles the backend options with the domain's device.

mod cpu;
mod cuda;

use super::backend::{Backend, PieceLayout};
use super::geometry::VecGeometry;
use super::grid::Grid;
use crate::storage::Storage;
use crate::{Device, Error, Result, Scalar};

/// Forward projection and its transpose on one backend, for a fixed geometry and grid.
pub(crate) trait Projector<T: Scalar>: Send + Sync {
    /// `sino = A vol` (line integrals in world units).
    fn forward(&self, vol: &Storage<T>, sino: &mut Storage<T>) -> Result<()>;
    /// `vol = Aᵀ sino`, the exact transpose of [`Projector::forward`] (unweighted).
    fn transpose(&self, sino: &Storage<T>, vol: &mut Storage<T>) -> Result<()>;
    /// The most entries [`Projector::forward_batch`] and [`Projector::transpose_batch`] take in
    /// one pass (1: no batched form, the default).
    fn max_batch(&self) -> usize {
        1
    }
    /// [`Projector::forward`] of `batch` volumes stored one after the other in `vol` (shape
    /// `[batch, …]`), into as many sinograms in `sino`.
    fn forward_batch(&self, vol: &Storage<T>, sino: &mut Storage<T>, batch: usize) -> Result<()> {
        if batch == 1 {
            return self.forward(vol, sino);
        }
        Err(crate::Error::Unsupported(format!(
            "this projector has no batched form (a batch of {batch})"
        )))
    }
    /// [`Projector::transpose`] of `batch` sinograms stored one after the other.
    fn transpose_batch(&self, sino: &Storage<T>, vol: &mut Storage<T>, batch: usize) -> Result<()> {
        if batch == 1 {
            return self.transpose(sino, vol);
        }
        Err(crate::Error::Unsupported(format!(
            "this projector has no batched form (a batch of {batch})"
        )))
    }
    /// The pieces the projector computes in, (slabs along axis 0, view groups), where it
    /// splits the transform; `None` where it computes the whole at once.
    fn pieces(&self) -> Option<PieceLayout> {
        None
    }
    /// Whether [`Projector::transpose_weighted`] has a kernel (the default: no).
    fn has_weighted_transpose(&self) -> bool {
        false
    }
    /// The weighted transpose of 2D fan-beam FBP (`crate::tomo::cpu::transpose_weighted`:
    /// each tap times `c₀ − x₀ c₁ − x₁ c₂` at the voxel's centre, `c_k` from the sinogram-shaped
    /// `rows[k]`; unweighted by the spaces), or `Ok(false)` where the projector has none.
    fn transpose_weighted(&self, rows: [&[T]; 3], vol: &mut Storage<T>) -> Result<bool> {
        let _ = (rows, vol);
        Ok(false)
    }
    /// The device of the data (the range's elements); the domain's unless the projector
    /// streams device-resident volumes' data through host memory.
    fn range_device(&self) -> Device;
}

/// The projector for `backend` on a domain living on `domain`.
///
/// Errors when the CPU backend is asked for a GPU domain, when the CUDA options name another GPU
/// than a CUDA domain's, or when the backend cannot be used. A host domain with the CUDA backend
/// is allowed (data are copied in and out at each call).
pub(crate) fn build<T: Scalar>(
    backend: &Backend,
    domain: Device,
    geometry: &VecGeometry,
    grid: &Grid,
) -> Result<Box<dyn Projector<T>>> {
    match backend {
        Backend::Cpu(opts) => {
            if domain != Device::Cpu {
                return Err(Error::device_mismatch(
                    "RayTransform: CPU backend",
                    "cpu",
                    domain,
                ));
            }
            Ok(Box::new(cpu::CpuProjector::new(opts, geometry, grid)?))
        }
        Backend::Cuda(opts) => {
            if let Device::Cuda(d) = domain {
                if d != opts.device {
                    return Err(Error::device_mismatch(
                        "RayTransform: CUDA options vs domain",
                        format!("cuda:{d}"),
                        format!("cuda:{}", opts.device),
                    ));
                }
            }
            Device::Cuda(opts.device).check_available()?;
            Ok(Box::new(cuda::CudaProjector::new::<T>(
                opts, domain, geometry, grid,
            )?))
        }
    }
}
