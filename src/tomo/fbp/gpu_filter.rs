//! What FBP asks of the GPU: [`GpuFbpFilter`], the filter's weights and ramp convolution on
//! one GPU. The CUDA build implements it in `cuda.rs` (with cuFFT or direct taps, `cufft.rs`);
//! without the `cuda` feature `cuda_stub.rs` implements it with an uninhabited type whose
//! constructor returns [`Error::CudaUnavailable`](crate::Error::CudaUnavailable), so both
//! builds are checked against one interface.

use super::filter::RowFilter;
use super::gpu_method::GpuFilterMethod;
use super::setup::Setup;
use super::weights::Weights;
use crate::backend::cuda::DeviceTensor;
use crate::{Result, Scalar};

/// The FBP filter `after ⊙ K(before ⊙ y)` on one GPU.
pub(crate) trait GpuFbpFilter: Sized {
    /// Uploads the weights to GPU `id` and sets up the convolution `row` for data of `T`.
    fn new<T: Scalar>(
        id: usize,
        row: &RowFilter,
        setup: &Setup,
        before: &Weights,
        after: &Weights,
    ) -> Result<Self>;

    /// The method the convolution uses.
    fn method(&self) -> GpuFilterMethod;

    /// The device ordinal.
    fn device(&self) -> usize;

    /// `y = filter(x)` (or its adjoint) on the device, for `entries` data one after the other.
    fn apply<T: Scalar>(
        &self,
        x: &DeviceTensor<T>,
        y: &mut DeviceTensor<T>,
        adjoint: bool,
        entries: usize,
    ) -> Result<()>;
}
