//! Stand-in for the CUDA ray kernels when the crate is built without the `cuda` feature:
//! [`CudaRay`] cannot be constructed (its constructor returns
//! [`Error::CudaUnavailable`](crate::Error::CudaUnavailable)), and it has the real one's
//! interface, so the code that uses it is checked in both builds.

use std::convert::Infallible;

use super::geometry::VecGeometry;
use super::gpu_interface::GpuRay;
use super::grid::Grid;
use crate::backend::cuda::{unavailable, DeviceTensor};
use crate::Result;

/// Planes per segment of the 3D forward, as in the real module (the piece planner's cost
/// model counts the segments; without `cuda` no transform runs, so the value only keeps the
/// planner's code the same in both builds).
pub(crate) const FORWARD_SEGMENT_PLANES: i32 = 128;

/// Device-resident geometry of one ray transform on one GPU; uninhabited without `cuda`.
pub(crate) struct CudaRay(Infallible);

impl CudaRay {}

impl GpuRay for CudaRay {
    /// Always an error without the `cuda` feature.
    fn new(_id: usize, _geom: &VecGeometry, _grid: &Grid) -> Result<Self> {
        Err(unavailable())
    }

    /// Deterministic kernels on or off.
    fn set_deterministic(&mut self, _on: bool) {
        match self.0 {}
    }

    /// The most entries of a batch in one launch sequence.
    fn max_batch(&self) -> usize {
        match self.0 {}
    }

    /// `sino[b] = A vol[b]` on the device for a batch.
    fn forward_batch(
        &self,
        _vol: &DeviceTensor<f32>,
        _sino: &mut DeviceTensor<f32>,
        _batch: usize,
    ) -> Result<()> {
        match self.0 {}
    }

    /// `vol[b] = Aᵀ sino[b]` on the device for a batch.
    fn transpose_batch(
        &self,
        _sino: &DeviceTensor<f32>,
        _vol: &mut DeviceTensor<f32>,
        _batch: usize,
    ) -> Result<()> {
        match self.0 {}
    }
}
