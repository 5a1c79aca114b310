//! Stand-in for the piecewise CUDA ray transform when the crate is built without the `cuda`
//! feature: [`PieceRunner`] cannot be constructed, and it has the real one's interface.

use std::convert::Infallible;
use std::ops::Range;

use super::geometry::VecGeometry;
use super::gpu_interface::{GpuPieces, In, Out};
use super::grid::Grid;
use crate::backend::cuda::unavailable;
use crate::Result;

/// The ray transform in pieces; uninhabited without `cuda`.
pub(crate) struct PieceRunner(Infallible);

impl PieceRunner {}

impl GpuPieces for PieceRunner {
    /// Always an error without the `cuda` feature.
    fn new(
        _id: usize,
        _geom: &VecGeometry,
        _grid: &Grid,
        _axis: usize,
        _slabs: Vec<Range<usize>>,
        _groups: Vec<Range<usize>>,
    ) -> Result<Self> {
        Err(unavailable())
    }

    /// Deterministic kernels on or off.
    fn set_deterministic(&mut self, _on: bool) {
        match self.0 {}
    }

    /// The axis the slabs lie along.
    fn axis(&self) -> usize {
        match self.0 {}
    }

    /// The slabs along [`Self::axis`].
    fn slabs(&self) -> &[Range<usize>] {
        match self.0 {}
    }

    /// The view groups.
    fn groups(&self) -> &[Range<usize>] {
        match self.0 {}
    }

    /// The device bytes a call takes beyond device-resident data.
    fn device_bytes(&self, _host_volume: bool, _host_data: bool, _forward: bool) -> u128 {
        match self.0 {}
    }

    /// `sino = A vol`.
    fn forward(&self, _vol: In<'_>, _sino: Out<'_>) -> Result<()> {
        match self.0 {}
    }

    /// `vol = Aᵀ sino`.
    fn transpose(&self, _sino: In<'_>, _vol: Out<'_>) -> Result<()> {
        match self.0 {}
    }
}
