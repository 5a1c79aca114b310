//! A filter along the detector rows on one GPU, so device data never leave the device:
//! `y = after ⊙ K(before ⊙ x)` for data laid out as views × u × v, where `K` convolves each
//! detector row (along u) and the weights are per pixel `(u, v)` and per view and column
//! `(view, u)`. `K` runs through cuFFT ([`super::row_filter_fft`]: batched real FFTs,
//! `O(nu log nu)` per row) or as a direct convolution with its taps (`kernels/fbp_filter.cu`:
//! a Toeplitz matrix–vector product per row, `O(nu²)`, tiled through shared memory: correct
//! everywhere, but for large detectors several times the cost of a back-projection). FBP's
//! ramp filter (`tomo::fbp`) is the user: it chooses the method and computes the weights,
//! taps and response.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg};

use super::context::{device_ctx, driver_err, DeviceCtx, Dtype, KernelSource};
use super::row_filter_fft::{batch_rows, FftFilter};
use super::tensor::DeviceTensor;
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

/// The layout of one entry's data: `nviews` views of `nu × nv` pixels (`nv = 1` in 2D).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RowDims {
    /// Views.
    pub(crate) nviews: usize,
    /// Detector cells along u (the filtered axis).
    pub(crate) nu: usize,
    /// Detector rows.
    pub(crate) nv: usize,
}

/// How `K` is given.
pub(crate) enum Convolution<'a> {
    /// By its frequency response on a padded length, through cuFFT.
    Fft {
        /// The padded row length.
        len: usize,
        /// The real response at the bins `0 ..= len/2` (the `1/len` included).
        spectrum: &'a [f64],
    },
    /// By its taps `t_d`, `d = −(nu−1) ..= nu−1`.
    Direct {
        /// The `2 nu − 1` taps.
        taps: &'a [f64],
    },
}

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

/// How the convolution runs.
enum Method {
    /// cuFFT: plans, scratch and the frequency response.
    Fft(Box<FftFilter>),
    /// The direct convolution with the taps.
    Direct(CudaSlice<f64>),
}

/// The row filter's weights and its convolution on one GPU.
pub(crate) struct GpuRowFilter {
    ctx: Arc<DeviceCtx>,
    /// `[before, after]` per-pixel weights (`nu · nv`, ones when absent).
    uv: [CudaSlice<f64>; 2],
    /// `[before, after]` per-view-and-column weights (`views · nu`, ones when absent).
    au: [CudaSlice<f64>; 2],
    params: FbpParams,
    method: Method,
}

impl Drop for GpuRowFilter {
    fn drop(&mut self) {
        // The buffers are freed on this thread: make the device current first.
        let _ = self.ctx.bind();
    }
}

impl GpuRowFilter {
    /// Uploads the weights (`uv`, `au`: `[before, after]`, ones where `None`) to GPU `id` and
    /// sets up the convolution `conv` for data of `dtype` of layout `dims`: cuFFT plans,
    /// scratch and the response, or the taps; compiles the kernels.
    pub(crate) fn build(
        id: usize,
        dims: RowDims,
        uv: [Option<&[f64]>; 2],
        au: [Option<&[f64]>; 2],
        conv: Convolution<'_>,
        dtype: Dtype,
    ) -> Result<Self> {
        let ctx = device_ctx(id)?;
        let RowDims { nviews, nu, nv } = dims;
        let too_big =
            |what: &str| Error::Unsupported(format!("{what} exceeds the FBP kernels' range"));
        let params = FbpParams {
            ncols: i64::try_from(nviews * nv).map_err(|_| too_big("views × detector rows"))?,
            nu: i32::try_from(nu).map_err(|_| too_big("the detector width"))?,
            nv: i32::try_from(nv).map_err(|_| too_big("the detector height"))?,
            nviews: i64::try_from(nviews.max(1)).map_err(|_| too_big("the number of views"))?,
        };
        let stream = &ctx.stream();
        let upload = |v: &[f64], want: usize| -> Result<CudaSlice<f64>> {
            if v.len() < want {
                return Err(Error::invalid(format!(
                    "a row filter's table of {} values where the kernels read {want}",
                    v.len()
                )));
            }
            stream
                .clone_htod(v)
                .map_err(driver_err("uploading the FBP filter"))
        };
        let table = |t: Option<&[f64]>, n: usize| match t {
            Some(v) => upload(v, n),
            None => upload(&vec![1.0f64; n], n),
        };
        let uv = [table(uv[0], nu * nv)?, table(uv[1], nu * nv)?];
        let au = [table(au[0], nviews * nu)?, table(au[1], nviews * nu)?];
        let method = match conv {
            Convolution::Fft { len, spectrum } => Method::Fft(Box::new(FftFilter::new(
                &ctx,
                len,
                spectrum,
                [nviews, nu, nv],
                dtype,
            )?)),
            Convolution::Direct { taps } => {
                if nu.div_ceil(TILE as usize) > 65535 {
                    return Err(too_big("the detector width"));
                }
                let taps = upload(taps, (2 * nu).saturating_sub(1))?;
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

    /// Whether the convolution runs through cuFFT (else by its taps).
    pub(crate) fn uses_fft(&self) -> bool {
        matches!(self.method, Method::Fft(_))
    }

    /// The device ordinal.
    pub(crate) fn device_id(&self) -> usize {
        self.ctx.id()
    }

    /// `y = filter(x)` (or its adjoint: the weights' roles swapped, `K` symmetric) on the
    /// device, for `entries` data one after the other in `x` and `y`: the rows of all entries
    /// in one sequence of launches.
    pub(crate) fn run<T: Scalar>(
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
            ncols: batch_rows(self.params.ncols, self.params.nu, entries, x.len(), y.len())?,
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
