//! The row filter through cuFFT: batched real-to-complex and complex-to-real transforms of all
//! detector rows of all views (of all entries of a batch of data: more rows, the same plans),
//! in place in a scratch buffer ([`super::fft::RealFftRows`]), with a given padded length and
//! frequency response, the weights before and after applied while gathering and scattering
//! the rows (`kernels/fbp_fft.cu`). FBP's filter (`tomo::fbp`) is the user.
//!
//! The scratch buffer, the cuFFT plans and their work area for one entry's data are made once at
//! construction. Rows are processed in batches of at most [`SCRATCH_BYTES`] of scratch, so that
//! large data need no scratch of their own size. A batch of entries with more rows than one
//! entry's gets plans and scratch for as many rows per pass as fit that budget, made on its
//! first call and kept (made anew only for a batch that wants more rows per pass), so that the
//! rows of all entries go through a few large transforms rather than one pass per entry.

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaEvent, CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg};

use super::context::{driver_err, DeviceCtx, Dtype, KernelSource};
use super::fft::{RealFftRows, Scratch};
use super::tensor::DeviceTensor;
use crate::{Error, Result, Scalar};

const FFT: KernelSource = KernelSource {
    name: "fbp_fft",
    prelude: &[],
    code: include_str!("../../../kernels/fbp_fft.cu"),
    options: &[],
};

/// The most scratch memory one filter uses (bytes): rows are transformed in batches that fit.
pub(crate) const SCRATCH_BYTES: usize = 256 << 20;

/// Tile edge and rows per pass of the tiled gather/scatter kernels (`TILE`, `TY` in
/// `kernels/fbp_fft.cu`).
const TILE: u32 = 32;
const TY: u32 = 8;

/// Rows per pass for `nrows` rows at most `max_rows` at a time: the fewest passes, rows split
/// evenly over them.
/// The detector rows of a batch of `entries` data of `rows` rows of `nu` values each: errors
/// unless they fit an `i64` and the input and output hold `x_len` and `y_len` = all their
/// values.
pub(crate) fn batch_rows(
    rows: i64,
    nu: i32,
    entries: usize,
    x_len: usize,
    y_len: usize,
) -> Result<i64> {
    let too_many = || Error::invalid(format!("FBP filter: a batch of {entries} entries"));
    let total = i64::try_from(entries)
        .ok()
        .and_then(|e| rows.checked_mul(e))
        .ok_or_else(too_many)?;
    let n = (total as u64)
        .checked_mul(nu.max(0) as u64)
        .ok_or_else(too_many)?;
    if x_len as u64 != n || y_len as u64 != n {
        return Err(Error::invalid(format!(
            "FBP filter: data of {x_len} and {y_len} values for {entries} × {} values",
            rows as u64 * nu.max(0) as u64
        )));
    }
    Ok(total)
}

fn rows_per_pass(nrows: usize, max_rows: usize) -> usize {
    let passes = nrows.max(1).div_ceil(max_rows.max(1));
    nrows.max(1).div_ceil(passes)
}

/// Kernel parameters; must match `FftParams` in `kernels/fbp_fft.cu`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct FftParams {
    /// Detector rows of all entries of a call: entries · views · nv.
    nrows: i64,
    row0: i64,
    batch: i64,
    /// Views per entry (the per-view weights repeat for every entry).
    nviews: i64,
    nu: i32,
    nv: i32,
    len: i32,
    nc: i32,
    ld: i32,
    pad: i32,
}

// SAFETY: plain-old-data with the C layout the kernels expect.
unsafe impl DeviceRepr for FftParams {}

/// The transform states of a filter: the one for the rows of one entry's data, made at
/// construction, and one for batches of entries with more rows, made on the first such call and
/// made anew (larger) only when a batch needs more rows per pass than it has.
struct States {
    one: RealFftRows,
    batch: Option<RealFftRows>,
    /// The end of the work that the last call queued on the scratch and plans (on its stream):
    /// the next call, perhaps on another stream (another thread's), is ordered after it.
    last: Option<CudaEvent>,
}

/// The cuFFT path of the GPU filter on one device.
pub(crate) struct FftFilter {
    dtype: Dtype,
    /// The parameters of one entry's data (`batch`: the rows per pass of `States::one`).
    params: FftParams,
    /// The most rows per pass within [`SCRATCH_BYTES`].
    max_rows: usize,
    /// The host filter's real response at the bins `0 ..= len/2` (the `1/len` included).
    spectrum: CudaSlice<f64>,
    state: Mutex<States>,
}

impl FftFilter {
    /// Plans the transforms of the padded length `len` for the rows of data of `nviews` views
    /// of `nu × nv` pixels in `dtype`, uploads the frequency response `spectrum` (the bins
    /// `0 ..= len/2`, the `1/len` included) and allocates the scratch (at most [`SCRATCH_BYTES`]) and cuFFT's work area.
    /// The plans run on the stream of each call ([`DeviceCtx::stream`]).
    pub(crate) fn new(
        ctx: &Arc<DeviceCtx>,
        len: usize,
        spectrum: &[f64],
        [nviews, nu, nv]: [usize; 3],
        dtype: Dtype,
    ) -> Result<Self> {
        let too_big =
            |what: &str| Error::Unsupported(format!("{what} exceeds the cuFFT filter's range"));
        let nc = len / 2 + 1;
        let ld = 2 * nc;
        let nrows = nviews * nv;
        let real = match dtype {
            Dtype::F32 => 4,
            Dtype::F64 => 8,
        };
        let row_bytes = ld * real;
        let max_rows = (SCRATCH_BYTES / row_bytes).clamp(1, i32::MAX as usize);
        let batch = rows_per_pass(nrows, max_rows);
        let as_i32 = |v: usize, what: &str| i32::try_from(v).map_err(|_| too_big(what));
        let params = FftParams {
            nrows: i64::try_from(nrows).map_err(|_| too_big("views × detector rows"))?,
            row0: 0,
            batch: batch as i64,
            nviews: i64::try_from(nviews.max(1)).map_err(|_| too_big("the number of views"))?,
            nu: as_i32(nu, "the detector width")?,
            nv: as_i32(nv, "the detector height")?,
            len: as_i32(len, "the padded row length")?,
            nc: as_i32(nc, "the padded row length")?,
            ld: as_i32(ld, "the padded row length")?,
            pad: 0,
        };
        if ld.div_ceil(TILE as usize) > 65535 {
            return Err(too_big("the padded row length"));
        }
        if spectrum.len() != nc {
            return Err(Error::Cuda(format!(
                "FBP filter: {} frequency samples for {nc} bins",
                spectrum.len()
            )));
        }
        let spectrum = ctx
            .stream()
            .clone_htod(spectrum)
            .map_err(driver_err("uploading the FBP filter's response"))?;
        let one = RealFftRows::new(ctx, dtype, params.len, batch)?;
        // Compile now, so that a compilation problem shows at construction.
        ctx.function(
            &FFT,
            dtype.pick("fbp_fft_spectrum_f32", "fbp_fft_spectrum_f64"),
        )?;
        Ok(Self {
            dtype,
            params,
            max_rows,
            spectrum,
            state: Mutex::new(States {
                one,
                batch: None,
                last: None,
            }),
        })
    }

    /// `y = post ⊙ K(pre ⊙ x)` with the tables `pre = (uv, au)` and `post`, for `entries` data
    /// one after the other in `x` and `y`: the rows of all entries, batch of rows by batch of
    /// rows (the scratch's), the per-view weights repeating for every entry.
    pub(crate) fn apply<T: Scalar>(
        &self,
        ctx: &DeviceCtx,
        x: &DeviceTensor<T>,
        y: &mut DeviceTensor<T>,
        pre: [&CudaSlice<f64>; 2],
        post: [&CudaSlice<f64>; 2],
        entries: usize,
    ) -> Result<()> {
        if x.dtype() != self.dtype || y.dtype() != self.dtype {
            return Err(Error::Unsupported(
                "the GPU FBP filter was built for another scalar type".into(),
            ));
        }
        let p = FftParams {
            nrows: batch_rows(self.params.nrows, self.params.nu, entries, x.len(), y.len())?,
            ..self.params
        };
        let cols = p.nv > 1;
        let name = |base: &str| format!("{base}_{}", self.dtype.pick("f32", "f64"));
        let gather = ctx.function(
            &FFT,
            &name(if cols {
                "fbp_fft_gather_cols"
            } else {
                "fbp_fft_gather_rows"
            }),
        )?;
        let scatter = ctx.function(
            &FFT,
            &name(if cols {
                "fbp_fft_scatter_cols"
            } else {
                "fbp_fft_scatter_rows"
            }),
        )?;
        let spectrum = ctx.function(&FFT, &name("fbp_fft_spectrum"))?;
        let stream = &ctx.stream();
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let states = &mut *guard;
        ctx.bind()?;
        // One scratch and one set of plans serve every call: a call on another stream than the
        // last one's must not overwrite them while that one's kernels may still run.
        if let Some(last) = states.last.take() {
            ctx.order_after(stream, &last)?;
        }
        let total = p.nrows as usize;
        let st = if total <= states.one.rows {
            &mut states.one
        } else {
            // A batch of entries: as many rows per pass as fit the budget, in a state made for
            // batches (anew when it has fewer rows per pass than this batch wants).
            let want = rows_per_pass(total, self.max_rows);
            if states.batch.as_ref().is_none_or(|b| b.rows < want) {
                // Free the smaller scratch before making the larger one.
                states.batch = None;
                // Kept across calls: made on rodl's own stream.
                states.batch = Some(crate::backend::lasting(|| {
                    RealFftRows::new(ctx, self.dtype, self.params.len, want)
                })?);
            }
            match states.batch.as_mut() {
                Some(b) => b,
                None => {
                    return Err(Error::Cuda(
                        "FBP filter: no cuFFT plan for the batch".into(),
                    ))
                }
            }
        };
        // The plans run on the stream of this call (the caller's, when one is lent).
        st.set_stream(stream)?;
        let batch = st.rows;
        let p = FftParams {
            batch: batch as i64,
            ..p
        };
        let tiled = |width: usize| -> Result<LaunchConfig> {
            let gx = u32::try_from(batch.div_ceil(TILE as usize))
                .map_err(|_| Error::Unsupported("too many detector rows per batch".into()))?;
            Ok(LaunchConfig {
                grid_dim: (gx, (width as u32).div_ceil(TILE), 1),
                block_dim: (TILE, TY, 1),
                shared_mem_bytes: 0,
            })
        };
        let (gather_cfg, scatter_cfg) = if cols {
            (tiled(p.ld as usize)?, tiled(p.nu as usize)?)
        } else {
            (
                ctx.launch_cfg(batch * p.ld as usize),
                ctx.launch_cfg(batch * p.nu as usize),
            )
        };
        let spectrum_cfg = ctx.launch_cfg(batch * p.nc as usize);
        let nbatch = (p.nrows as usize).max(1).div_ceil(batch);
        for b in 0..nbatch {
            let q = FftParams {
                row0: (b * batch) as i64,
                ..p
            };
            // The scratch rows as a kernel argument, in the transforms' precision.
            macro_rules! with_scratch {
                (|$buf:ident| $body:block) => {
                    match &mut st.scratch {
                        Scratch::F32($buf) => $body,
                        Scratch::F64($buf) => $body,
                    }
                };
            }
            with_scratch!(|buf| {
                let mut l = stream.launch_builder(&gather);
                l.arg(x.slice())
                    .arg(&mut *buf)
                    .arg(pre[0])
                    .arg(pre[1])
                    .arg(&q);
                // SAFETY: (const T*, R*, const double* ×2, FftParams); x holds nrows · nu
                // values (checked), the scratch batch · ld, the tables nu · nv and
                // views · nu; rows past nrows are not read.
                unsafe { l.launch(gather_cfg) }.map_err(driver_err("fbp_fft_gather"))?;
            });
            st.forward(stream)?;
            with_scratch!(|buf| {
                let mut l = stream.launch_builder(&spectrum);
                l.arg(&mut *buf).arg(&self.spectrum).arg(&q);
                // SAFETY: (R*, const double*, FftParams); the response has nc values.
                unsafe { l.launch(spectrum_cfg) }.map_err(driver_err("fbp_fft_spectrum"))?;
            });
            st.inverse(stream)?;
            with_scratch!(|buf| {
                let mut l = stream.launch_builder(&scatter);
                l.arg(&*buf)
                    .arg(y.slice_mut())
                    .arg(post[0])
                    .arg(post[1])
                    .arg(&q);
                // SAFETY: (const R*, T*, const double* ×2, FftParams); as the gather.
                unsafe { l.launch(scatter_cfg) }.map_err(driver_err("fbp_fft_scatter"))?;
            });
        }
        states.last = ctx.mark(stream)?;
        Ok(())
    }
}
