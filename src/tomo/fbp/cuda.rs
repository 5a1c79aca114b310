//! The FBP filter on a CUDA GPU (crate feature `cuda`): the ramp filter's weights, taps or
//! frequency response computed from the scan's set-up and handed to the backend's row filter
//! ([`crate::backend::cuda::row_filter`]: cuFFT when it can be loaded, otherwise a direct
//! convolution with the taps of the host's FFT filter). The method is chosen once per process
//! ([`super::cufft::method`], [`super::gpu_method`], `RODL_CUFFT`).

use super::cufft;
use super::filter::RowFilter;
use super::gpu_filter::GpuFbpFilter;
use super::gpu_method::GpuFilterMethod;
use super::setup::Setup;
use super::weights::Weights;
use crate::backend::cuda::row_filter::{Convolution, GpuRowFilter, RowDims};
use crate::backend::cuda::{DeviceTensor, Dtype};
use crate::{Result, Scalar};

/// The GPU filter of the FBP operator.
pub(crate) type GpuFilter = GpuRowFilter;

impl GpuFbpFilter for GpuRowFilter {
    /// Uploads the weights to GPU `id` and sets up the convolution for data of `T`: cuFFT plans,
    /// scratch and the frequency response of `row`, or the taps of `row` where cuFFT is not used
    /// ([`cufft::method`]); compiles the kernels.
    fn new<T: Scalar>(
        id: usize,
        row: &RowFilter,
        setup: &Setup,
        before: &Weights,
        after: &Weights,
    ) -> Result<Self> {
        let dims = RowDims {
            nviews: setup.nviews,
            nu: setup.nu,
            nv: setup.nv,
        };
        let taps;
        let conv = match cufft::method()? {
            GpuFilterMethod::Fft => Convolution::Fft {
                len: row.len(),
                spectrum: row.spectrum(),
            },
            GpuFilterMethod::DirectConvolution => {
                taps = row.taps();
                Convolution::Direct { taps: &taps }
            }
        };
        GpuRowFilter::build(
            id,
            dims,
            [before.uv.as_deref(), after.uv.as_deref()],
            [before.au.as_deref(), after.au.as_deref()],
            conv,
            Dtype::of::<T>()?,
        )
    }

    /// The method the convolution uses.
    fn method(&self) -> GpuFilterMethod {
        if self.uses_fft() {
            GpuFilterMethod::Fft
        } else {
            GpuFilterMethod::DirectConvolution
        }
    }

    /// The device ordinal.
    fn device(&self) -> usize {
        self.device_id()
    }

    /// `y = filter(x)` (or its adjoint) on the device, for `entries` data one after the other
    /// in `x` and `y`: the rows of all entries in one sequence of launches.
    fn apply<T: Scalar>(
        &self,
        x: &DeviceTensor<T>,
        y: &mut DeviceTensor<T>,
        adjoint: bool,
        entries: usize,
    ) -> Result<()> {
        self.run(x, y, adjoint, entries)
    }
}
