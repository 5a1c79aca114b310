//! Preprocessing of device-resident projection data (`kernels/preprocess.cu`): the GPU side of
//! [`crate::preprocess`]'s element functions. Each kernel follows the host definition of
//! `src/preprocess/` (flat field in f64 and zinger/stripe medians exactly; `−log` through the
//! device's `logf`, within 1 ulp of the host's).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, PushKernelArg};

use super::context::{driver_err, DeviceCtx, KernelSource};
use super::tensor::DeviceTensor;
use crate::backend::BackendStorage;
use crate::{Error, Result};

const PREPROCESS: KernelSource = KernelSource {
    name: "preprocess",
    prelude: &[],
    code: include_str!("../../../kernels/preprocess.cu"),
    options: &["--fmad=false"],
};

/// `[k, nu, nv]` of a 3D tensor.
fn dims(x: &DeviceTensor<f32>, what: &str) -> Result<(u64, u64, u64)> {
    match x.shape() {
        &[k, nu, nv] => Ok((k as u64, nu as u64, nv as u64)),
        s => Err(Error::invalid(format!(
            "{what} needs data [k, nu, nv], got shape {s:?}"
        ))),
    }
}

/// A zeroed device counter.
fn counter(ctx: &DeviceCtx) -> Result<CudaSlice<u64>> {
    ctx.stream()
        .alloc_zeros::<u64>(1)
        .map_err(driver_err("allocating a counter"))
}

/// The counter's value (waits for the stream).
fn read_counter(ctx: &DeviceCtx, c: &CudaSlice<u64>) -> Result<u64> {
    let v = ctx
        .stream()
        .clone_dtoh(c)
        .map_err(driver_err("reading a counter"))?;
    Ok(v.first().copied().unwrap_or(0))
}

/// Uploads a small host table.
fn upload(ctx: &DeviceCtx, v: &[f64]) -> Result<CudaSlice<f64>> {
    ctx.stream()
        .clone_htod(v)
        .map_err(driver_err("copying a table to the device"))
}

/// Flat-field normalisation of `x` (`[k, nu, nv]`) in place: `dark` is the mean dark
/// (`nu·nv`), `groups` the flat groups' mean frames (`g·nu·nv`), `per_view` each view's two
/// groups and the weight of the second (`3·k`: indices as f64); with `log_floor`, `−log` (with
/// that floor) follows in the same kernel. Returns the number of bad pixels.
pub(crate) fn flat_field(
    x: &mut DeviceTensor<f32>,
    dark: &[f64],
    groups: &[f64],
    per_view: &[f64],
    log_floor: Option<f32>,
) -> Result<u64> {
    let (k, nu, nv) = dims(x, "flat-field normalisation")?;
    let npix = nu * nv;
    let groups_n = groups.len() as u64 / npix.max(1);
    if dark.len() as u64 != npix
        || groups.len() as u64 != groups_n * npix
        || per_view.len() as u64 != 3 * k
        || per_view
            .chunks(3)
            .any(|t| t[0] < 0.0 || t[1] < 0.0 || t[0] as u64 >= groups_n || t[1] as u64 >= groups_n)
    {
        return Err(Error::invalid(
            "flat-field normalisation on the GPU: tables of the wrong size",
        ));
    }
    let ctx = Arc::clone(x.ctx());
    let f = ctx.function(&PREPROCESS, "flat_field_f32")?;
    let (d, g, pv) = (
        upload(&ctx, dark)?,
        upload(&ctx, groups)?,
        upload(&ctx, per_view)?,
    );
    let mut bad = counter(&ctx)?;
    let (fuse, floor) = match log_floor {
        Some(fl) => (1i32, fl),
        None => (0i32, 0.0f32),
    };
    let cfg = ctx.launch_cfg(x.len());
    let stream = ctx.stream();
    let mut l = stream.launch_builder(&f);
    l.arg(x.slice_mut())
        .arg(&d)
        .arg(&g)
        .arg(&pv)
        .arg(&k)
        .arg(&npix)
        .arg(&fuse)
        .arg(&floor)
        .arg(&mut bad);
    // SAFETY: `x` holds k·npix values, the tables the sizes checked above (group indices below
    // their count); the signature matches `flat_field_f32`.
    unsafe { l.launch(cfg) }.map_err(driver_err("flat-field kernel"))?;
    read_counter(&ctx, &bad)
}

/// `x = −log(max(x, floor))` in place (NaN → floor).
pub(crate) fn neg_log(x: &mut DeviceTensor<f32>, floor: f32) -> Result<()> {
    let ctx = Arc::clone(x.ctx());
    let f = ctx.function(&PREPROCESS, "neg_log_f32")?;
    let n = x.len() as u64;
    let cfg = ctx.launch_cfg(x.len());
    let stream = ctx.stream();
    let mut l = stream.launch_builder(&f);
    l.arg(x.slice_mut()).arg(&n).arg(&floor);
    // SAFETY: `x` holds `n` values; the signature matches `neg_log_f32`.
    unsafe { l.launch(cfg) }
        .map(|_| ())
        .map_err(driver_err("-log kernel"))
}

/// Zinger removal in `x` (`[k, nu, nv]`, frames `[nu, nv]`) with a `(2r + 1)²` window: each
/// pixel more than `threshold` above (or, with `both_signs`, below) its window's median gets
/// the median. Returns the number of pixels replaced.
pub(crate) fn zingers(
    x: &mut DeviceTensor<f32>,
    r: usize,
    threshold: f32,
    both_signs: bool,
) -> Result<u64> {
    let (k, nu, nv) = dims(x, "zinger removal")?;
    let r = i32::try_from(r).map_err(|_| Error::invalid("the zinger window is too large"))?;
    let src = x.try_clone()?;
    let ctx = Arc::clone(x.ctx());
    let f = ctx.function(&PREPROCESS, "zinger_f32")?;
    let mut count = counter(&ctx)?;
    let both = i32::from(both_signs);
    let cfg = ctx.launch_cfg(x.len());
    let stream = ctx.stream();
    let mut l = stream.launch_builder(&f);
    l.arg(src.slice())
        .arg(x.slice_mut())
        .arg(&k)
        .arg(&nu)
        .arg(&nv)
        .arg(&r)
        .arg(&threshold)
        .arg(&both)
        .arg(&mut count);
    // SAFETY: `src` and `x` hold k·nu·nv values each; the signature matches `zinger_f32`.
    unsafe { l.launch(cfg) }.map_err(driver_err("zinger kernel"))?;
    let n = read_counter(&ctx, &count)?;
    drop(src);
    Ok(n)
}

/// The sorting-based stripe removal of `x` (`[na, nu, nv]`) with a median of width `size`
/// along u (odd, checked by the caller): ranks and sorted columns (scratch of 8 bytes per
/// value), then the medians.
pub(crate) fn stripes(x: &mut DeviceTensor<f32>, size: usize) -> Result<()> {
    let (na, nu, nv) = dims(x, "stripe removal")?;
    if na > u32::MAX as u64 {
        return Err(Error::invalid("stripe removal: too many angles"));
    }
    let h = i32::try_from(size / 2).map_err(|_| Error::invalid("the stripe filter is too wide"))?;
    let ctx = Arc::clone(x.ctx());
    let n = x.len();
    let mut sorted = ctx.alloc_raw::<f32>(n)?;
    let mut rank = ctx.alloc_raw::<u32>(n)?;
    let rank_f = ctx.function(&PREPROCESS, "stripe_rank_f32")?;
    let median_f = ctx.function(&PREPROCESS, "stripe_median_f32")?;
    let cfg = ctx.launch_cfg(n);
    let stream = ctx.stream();
    let mut l = stream.launch_builder(&rank_f);
    l.arg(x.slice())
        .arg(&mut sorted)
        .arg(&mut rank)
        .arg(&na)
        .arg(&nu)
        .arg(&nv);
    // SAFETY: `x`, `sorted` and `rank` hold na·nu·nv values each; every rank is below na (a
    // permutation of each column), so every entry of `sorted` is written; the signature matches
    // `stripe_rank_f32`.
    unsafe { l.launch(cfg) }.map_err(driver_err("stripe rank kernel"))?;
    let mut l = stream.launch_builder(&median_f);
    l.arg(&sorted)
        .arg(&rank)
        .arg(x.slice_mut())
        .arg(&na)
        .arg(&nu)
        .arg(&nv)
        .arg(&h);
    // SAFETY: as above; the signature matches `stripe_median_f32`.
    unsafe { l.launch(cfg) }.map_err(driver_err("stripe median kernel"))?;
    Ok(())
}
