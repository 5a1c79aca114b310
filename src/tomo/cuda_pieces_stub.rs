//! Stand-in for the piecewise CUDA ray transform when the crate is built without the `cuda`
//! feature: [`PieceRunner`] cannot be constructed, and it has the real one's interface.

use std::convert::Infallible;
use std::ops::Range;

use super::geometry::VecGeometry;
use super::grid::Grid;
use crate::backend::cuda::unavailable;
use crate::Result;

/// Input data of a piecewise call.
#[allow(dead_code)] // read by the CUDA build's runner
pub(crate) enum In<'a> {
    /// Host memory.
    Host(&'a [f32]),
    /// Device memory.
    Device(u64),
}

/// Output data of a piecewise call.
#[allow(dead_code)] // read by the CUDA build's runner
pub(crate) enum Out<'a> {
    /// Host memory.
    Host(&'a mut [f32]),
    /// Device memory.
    Device(u64),
}

/// The ray transform in pieces; uninhabited without `cuda`.
pub(crate) struct PieceRunner(Infallible);

impl PieceRunner {
    /// Deterministic kernels on or off.
    pub(crate) fn set_deterministic(&mut self, _on: bool) {
        match self.0 {}
    }

    /// Always an error without the `cuda` feature.
    pub(crate) fn new(
        _id: usize,
        _geom: &VecGeometry,
        _grid: &Grid,
        _axis: usize,
        _slabs: Vec<Range<usize>>,
        _groups: Vec<Range<usize>>,
    ) -> Result<Self> {
        Err(unavailable())
    }

    /// The axis the slabs lie along.
    pub(crate) fn axis(&self) -> usize {
        match self.0 {}
    }

    /// The slabs along [`Self::axis`].
    pub(crate) fn slabs(&self) -> &[Range<usize>] {
        match self.0 {}
    }

    /// The view groups.
    pub(crate) fn groups(&self) -> &[Range<usize>] {
        match self.0 {}
    }

    /// The device bytes a call takes beyond device-resident data.
    pub(crate) fn device_bytes(
        &self,
        _host_volume: bool,
        _host_data: bool,
        _forward: bool,
    ) -> u128 {
        match self.0 {}
    }

    /// `sino = A vol`.
    pub(crate) fn forward(&self, _vol: In<'_>, _sino: Out<'_>) -> Result<()> {
        match self.0 {}
    }

    /// `vol = Aᵀ sino`.
    pub(crate) fn transpose(&self, _sino: In<'_>, _vol: Out<'_>) -> Result<()> {
        match self.0 {}
    }
}
