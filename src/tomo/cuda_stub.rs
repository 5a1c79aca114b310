//! Stand-in for the CUDA ray kernels when the crate is built without the `cuda` feature:
//! [`CudaRay`] cannot be constructed (its constructor returns
//! [`Error::CudaUnavailable`](crate::Error::CudaUnavailable)), and it has the real one's
//! interface, so the code that uses it is checked in both builds.

use std::convert::Infallible;

use super::geometry::VecGeometry;
use super::grid::Grid;
use crate::backend::cuda::{unavailable, DeviceTensor};
use crate::Result;

/// Device-resident geometry of one ray transform on one GPU; uninhabited without `cuda`.
pub(crate) struct CudaRay(Infallible);

impl CudaRay {
    /// Always an error without the `cuda` feature.
    pub(crate) fn new(_id: usize, _geom: &VecGeometry, _grid: &Grid) -> Result<Self> {
        Err(unavailable())
    }

    /// `sino = A vol` on the device.
    pub(crate) fn forward(
        &self,
        _vol: &DeviceTensor<f32>,
        _sino: &mut DeviceTensor<f32>,
    ) -> Result<()> {
        match self.0 {}
    }

    /// `vol = Aᵀ sino` on the device.
    pub(crate) fn transpose(
        &self,
        _sino: &DeviceTensor<f32>,
        _vol: &mut DeviceTensor<f32>,
    ) -> Result<()> {
        match self.0 {}
    }
}
