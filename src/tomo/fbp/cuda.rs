//! The FBP filter on a CUDA GPU (crate feature `cuda`), so device data never leave the device:
//! through cuFFT when it can be loaded ([`super::cufft`]: batched real FFTs, `O(nu log nu)` per
//! detector row), otherwise by a direct convolution with the taps of the host's FFT filter
//! (`kernels/fbp_filter.cu`). The method is chosen once, at construction
//! ([`super::gpu_method`], `RODL_CUFFT`).
//!
//! The direct convolution is a Toeplitz matrix–vector product per detector row (`O(nu²)` per
//! row), tiled through shared memory: correct everywhere, but for large detectors several times
//! the cost of a back-projection.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg};

use super::cufft::{self, FftFilter};
use super::filter::RowFilter;
use super::gpu_filter::GpuFbpFilter;
use super::gpu_method::GpuFilterMethod;
use super::setup::Setup;
use super::weights::Weights;
use crate::backend::cuda::{device_ctx, driver_err, DeviceCtx, DeviceTensor, Dtype, KernelSource};
use crate::{Error, Result, Scalar};

const FBP: KernelSource = KernelSource {
    name: "fbp_filter",
    prelude: &[],
    code: include_str!("../../../kernels/fbp_filter.cu"),
    options: &[],
};

/// Tile sizes of the kernels (`TI`/`TC` and `TY` in `kernels/fbp_filter.cu`).
const TILE: u32 = 32;
const ROWS_PER_PASS: u32 = 8;

/// Kernel parameters; must match `FbpParams` in `kernels/fbp_filter.cu`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct FbpParams {
    /// Columns (view, row) of all entries: entries · views · nv.
    ncols: i64,
    nu: i32,
    nv: i32,
    /// Views per entry (the per-view weights repeat for every entry).
    nviews: i64,
}

// SAFETY: plain-old-data with the C layout the kernels expect.
unsafe impl DeviceRepr for FbpParams {}

/// How the ramp convolution runs.
enum Method {
    /// cuFFT: plans, scratch and the frequency response.
    Fft(Box<FftFilter>),
    /// The direct convolution with the taps `t_d`, `d = −(nu−1) ..= nu−1`.
    Direct(CudaSlice<f64>),
}

/// The filter's weights and its convolution on one GPU.
pub(crate) struct GpuFilter {
    ctx: Arc<DeviceCtx>,
    /// `[before, after]` per-pixel weights (`nu · nv`, ones when absent).
    uv: [CudaSlice<f64>; 2],
    /// `[before, after]` per-view-and-column weights (`views · nu`, ones when absent).
    au: [CudaSlice<f64>; 2],
    params: FbpParams,
    method: Method,
}

impl Drop for GpuFilter {
    fn drop(&mut self) {
        // The buffers are freed on this thread: make the device current first.
        let _ = self.ctx.bind();
    }
}

impl GpuFilter {}

impl GpuFbpFilter for GpuFilter {
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
        let ctx = device_ctx(id)?;
        let (nviews, nu, nv) = (setup.nviews, setup.nu, setup.nv);
        let too_big =
            |what: &str| Error::Unsupported(format!("{what} exceeds the FBP kernels' range"));
        let params = FbpParams {
            ncols: i64::try_from(nviews * nv).map_err(|_| too_big("views × detector rows"))?,
            nu: i32::try_from(nu).map_err(|_| too_big("the detector width"))?,
            nv: i32::try_from(nv).map_err(|_| too_big("the detector height"))?,
            nviews: i64::try_from(nviews.max(1)).map_err(|_| too_big("the number of views"))?,
        };
        let stream = &ctx.stream();
        let upload = |v: &[f64]| -> Result<CudaSlice<f64>> {
            stream
                .clone_htod(v)
                .map_err(driver_err("uploading the FBP filter"))
        };
        let ones = |n: usize| vec![1.0f64; n];
        let uv = [
            upload(before.uv.as_deref().unwrap_or(&ones(nu * nv)))?,
            upload(after.uv.as_deref().unwrap_or(&ones(nu * nv)))?,
        ];
        let au = [
            upload(before.au.as_deref().unwrap_or(&ones(nviews * nu)))?,
            upload(after.au.as_deref().unwrap_or(&ones(nviews * nu)))?,
        ];
        let method = match cufft::method()? {
            GpuFilterMethod::Fft => Method::Fft(Box::new(FftFilter::new(
                &ctx,
                row,
                setup,
                Dtype::of::<T>()?,
            )?)),
            GpuFilterMethod::DirectConvolution => {
                if nu.div_ceil(TILE as usize) > 65535 {
                    return Err(too_big("the detector width"));
                }
                let taps = upload(&row.taps())?;
                // Compile now, so that a compilation problem shows at construction.
                ctx.function(&FBP, "fbp_filter_cols_f32")?;
                Method::Direct(taps)
            }
        };
        Ok(Self {
            ctx,
            uv,
            au,
            params,
            method,
        })
    }

    /// The method the convolution uses.
    fn method(&self) -> GpuFilterMethod {
        match self.method {
            Method::Fft(_) => GpuFilterMethod::Fft,
            Method::Direct(_) => GpuFilterMethod::DirectConvolution,
        }
    }

    /// The device ordinal.
    fn device(&self) -> usize {
        self.ctx.id()
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
        for t in [x.ctx().id(), y.ctx().id()] {
            if t != self.ctx.id() {
                return Err(Error::device_mismatch(
                    "FbpFilter",
                    format!("cuda:{}", self.ctx.id()),
                    format!("cuda:{t}"),
                ));
            }
        }
        let (pre, post) = if adjoint { (1, 0) } else { (0, 1) };
        let taps = match &self.method {
            Method::Fft(f) => {
                return f.apply(
                    &self.ctx,
                    x,
                    y,
                    [&self.uv[pre], &self.au[pre]],
                    [&self.uv[post], &self.au[post]],
                    entries,
                )
            }
            Method::Direct(taps) => taps,
        };
        let params = FbpParams {
            ncols: cufft::batch_rows(self.params.ncols, self.params.nu, entries, x.len(), y.len())?,
            ..self.params
        };
        let rows = self.params.nv == 1;
        let name = match (rows, x.dtype().pick("f32", "f64")) {
            (true, "f32") => "fbp_filter_rows_f32",
            (true, _) => "fbp_filter_rows_f64",
            (false, "f32") => "fbp_filter_cols_f32",
            (false, _) => "fbp_filter_cols_f64",
        };
        let f = self.ctx.function(&FBP, name)?;
        let gx = u32::try_from((params.ncols as u64).div_ceil(TILE as u64))
            .ok()
            .filter(|&g| g <= i32::MAX as u32)
            .ok_or_else(|| Error::Unsupported("too many views × detector rows".into()))?;
        let gy = (params.nu as u32).div_ceil(TILE);
        let cfg = LaunchConfig {
            grid_dim: (gx, gy, 1),
            block_dim: (TILE, ROWS_PER_PASS, 1),
            shared_mem_bytes: 0,
        };
        let stream = self.ctx.stream();
        let mut b = stream.launch_builder(&f);
        b.arg(x.slice())
            .arg(y.slice_mut())
            .arg(taps)
            .arg(&self.uv[pre])
            .arg(&self.au[pre])
            .arg(&self.uv[post])
            .arg(&self.au[post])
            .arg(&params);
        // SAFETY: the kernel's signature is (const T*, T*, const double* ×5, FbpParams); `x` and
        // `y` hold entries · views · nu · nv values (checked above), the taps 2nu − 1, the uv
        // tables nu · nv and the au tables views · nu (indexed by the view within its entry).
        unsafe { b.launch(cfg) }.map_err(driver_err(name))?;
        Ok(())
    }
}
