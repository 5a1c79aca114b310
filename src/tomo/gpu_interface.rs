//! What the ray transform's projectors ask of the CUDA kernels: [`GpuRay`] (one transform on
//! one GPU, whole) and [`GpuPieces`] (a transform in slabs × view groups under a memory budget).
//! The CUDA build implements them in `cuda.rs` and `cuda_pieces.rs`; without the `cuda` feature
//! their stand-ins (`cuda_stub.rs`, `cuda_pieces_stub.rs`) implement them with uninhabited
//! types whose constructors return [`Error::CudaUnavailable`](crate::Error::CudaUnavailable),
//! so both builds are checked against one interface.

use std::ops::Range;

use super::geometry::VecGeometry;
use super::grid::Grid;
use crate::backend::cuda::DeviceTensor;
pub(crate) use crate::backend::host_or_device::{In, Out};
use crate::Result;

/// Device-resident geometry of one ray transform on one GPU, its kernels compiled.
pub(crate) trait GpuRay: Sized {
    /// Uploads the per-view vectors of `geom` on `grid` to GPU `id` and compiles the kernels
    /// (once per device).
    fn new(id: usize, geom: &VecGeometry, grid: &Grid) -> Result<Self>;

    /// Bitwise reproducible forwards and transposes (`on`), or float atomics (the default).
    fn set_deterministic(&mut self, on: bool);

    /// The most entries [`Self::forward_batch`] and [`Self::transpose_batch`] take at once.
    fn max_batch(&self) -> usize;

    /// `sino[b] = A vol[b]` on the device for `batch` entries stored one after the other.
    fn forward_batch(
        &self,
        vol: &DeviceTensor<f32>,
        sino: &mut DeviceTensor<f32>,
        batch: usize,
    ) -> Result<()>;

    /// `vol[b] = Aᵀ sino[b]` on the device for `batch` entries stored one after the other.
    fn transpose_batch(
        &self,
        sino: &DeviceTensor<f32>,
        vol: &mut DeviceTensor<f32>,
        batch: usize,
    ) -> Result<()>;
}

/// The ray transform in pieces (slabs of the volume along an axis × groups of views) on one
/// GPU, with host or device data.
pub(crate) trait GpuPieces: Sized {
    /// The runner of `geom` on `grid` on GPU `id` in the pieces `slabs` (along `axis`) ×
    /// `groups` (each list covering its axis in order).
    fn new(
        id: usize,
        geom: &VecGeometry,
        grid: &Grid,
        axis: usize,
        slabs: Vec<Range<usize>>,
        groups: Vec<Range<usize>>,
    ) -> Result<Self>;

    /// Every piece's kernels deterministic (`on`) or not.
    fn set_deterministic(&mut self, on: bool);

    /// The axis the slabs lie along.
    fn axis(&self) -> usize;

    /// The slabs along [`Self::axis`].
    fn slabs(&self) -> &[Range<usize>];

    /// The view groups.
    fn groups(&self) -> &[Range<usize>];

    /// The device bytes a call takes beyond device-resident data.
    fn device_bytes(&self, host_volume: bool, host_data: bool, forward: bool) -> u128;

    /// `sino = A vol`.
    fn forward(&self, vol: In<'_>, sino: Out<'_>) -> Result<()>;

    /// `vol = Aᵀ sino`.
    fn transpose(&self, sino: In<'_>, vol: Out<'_>) -> Result<()>;
}
