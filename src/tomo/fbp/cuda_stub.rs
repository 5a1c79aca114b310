//! Stand-in for the GPU FBP filter when the crate is built without the `cuda` feature:
//! [`GpuFilter`] cannot be constructed (its constructor returns
//! [`Error::CudaUnavailable`](crate::Error::CudaUnavailable)) and has the real one's interface.

use std::convert::Infallible;

use super::filter::RowFilter;
use super::gpu_filter::GpuFbpFilter;
use super::gpu_method::GpuFilterMethod;
use super::setup::Setup;
use super::weights::Weights;
use crate::backend::cuda::{unavailable, DeviceTensor};
use crate::{Result, Scalar};

/// The filter's taps and weights on one GPU; uninhabited without `cuda`.
pub(crate) struct GpuFilter(Infallible);

impl GpuFilter {}

impl GpuFbpFilter for GpuFilter {
    /// Always an error without the `cuda` feature.
    #[allow(clippy::extra_unused_type_parameters)]
    fn new<T: Scalar>(
        _id: usize,
        _row: &RowFilter,
        _setup: &Setup,
        _before: &Weights,
        _after: &Weights,
    ) -> Result<Self> {
        Err(unavailable())
    }

    /// The method the convolution uses.
    fn method(&self) -> GpuFilterMethod {
        match self.0 {}
    }

    /// The device ordinal.
    fn device(&self) -> usize {
        match self.0 {}
    }

    /// `y = filter(x)` (or its adjoint) on the device, for `entries` data one after the other.
    fn apply<T: Scalar>(
        &self,
        _x: &DeviceTensor<T>,
        _y: &mut DeviceTensor<T>,
        _adjoint: bool,
        _entries: usize,
    ) -> Result<()> {
        match self.0 {}
    }
}
