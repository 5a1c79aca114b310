//! Zinger (outlier) removal by comparison with a local median.

use ndarray::{Array2, ArrayViewMut3, Axis};
use rayon::prelude::*;

use crate::storage::Storage;
use crate::{Element, Error, Result};

/// Options of [`remove_zingers`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ZingerOptions {
    /// The side of the square median window in pixels (odd, at least 3). Default 3.
    pub size: usize,
    /// A pixel is an outlier when it exceeds its window's median by more than this (in the
    /// data's units, e.g. counts of raw frames).
    pub threshold: f32,
    /// Also replace pixels *below* the median by more than `threshold` (dead spots); default
    /// false: zingers (direct hits of scattered X-rays on the detector) are bright.
    pub both_signs: bool,
}

impl ZingerOptions {
    /// A 3 × 3 window and bright outliers only, with `threshold`.
    pub fn new(threshold: f32) -> Self {
        Self {
            size: 3,
            threshold,
            both_signs: false,
        }
    }
}

/// Replaces outliers of each frame `[u, v]` of `frames` (`[k, nu, nv]`) by the median of the
/// `size × size` window around them (clipped at the frame's edges) — the median-filter
/// comparison of e.g. TomoPy's `remove_outlier` (Gürsoy et al. 2014, J. Synchrotron Rad. 21,
/// 1188). Works on raw frames, flats and darks alike; returns the number of pixels replaced.
/// The medians are taken from the frame before any replacement.
///
/// ```
/// use ndarray::Array3;
/// use rodl::preprocess::{remove_zingers, ZingerOptions};
/// let mut f = Array3::from_elem([1, 5, 5], 100.0f32);
/// f[[0, 2, 3]] = 5000.0;
/// assert_eq!(remove_zingers(f.view_mut(), &ZingerOptions::new(500.0))?, 1);
/// assert_eq!(f[[0, 2, 3]], 100.0);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn remove_zingers(mut frames: ArrayViewMut3<'_, f32>, opts: &ZingerOptions) -> Result<usize> {
    check(opts)?;
    Ok(apply_zingers(frames.view_mut(), opts, opts.size / 2))
}

/// [`remove_zingers`] on an element of a space (`[k, nu, nv]`, f32) on any device: on a GPU in
/// one kernel on the device (no host round trip), each pixel's median found by counting ranks
/// in the same total order as the host's selection, so the results are the host's exactly.
/// The work per pixel grows as `size⁴` on the GPU (3 × 3 and 5 × 5 windows are cheap).
pub fn remove_zingers_element(frames: &mut Element<f32>, opts: &ZingerOptions) -> Result<usize> {
    check(opts)?;
    if frames.shape()?.len() != 3 {
        return Err(Error::invalid(format!(
            "zinger removal needs frames [k, nu, nv], got shape {:?}",
            frames.shape()?
        )));
    }
    match frames.storage_mut("remove_zingers")? {
        Storage::Host(_) => {
            let a = frames
                .as_array_mut()?
                .into_dimensionality::<ndarray::Ix3>()
                .map_err(|e| Error::invalid(e.to_string()))?;
            remove_zingers(a, opts)
        }
        Storage::Cuda(t) => Ok(crate::backend::cuda::preprocess::zingers(
            t,
            opts.size / 2,
            opts.threshold,
            opts.both_signs,
        )? as usize),
    }
}

/// Errors unless the options are valid.
fn check(opts: &ZingerOptions) -> Result<()> {
    if opts.size < 3 || opts.size % 2 == 0 {
        return Err(Error::invalid(format!(
            "the zinger window size must be odd and at least 3, got {}",
            opts.size
        )));
    }
    if !(opts.threshold >= 0.0) || !opts.threshold.is_finite() {
        return Err(Error::invalid(format!(
            "the zinger threshold must be finite and non-negative, got {}",
            opts.threshold
        )));
    }
    Ok(())
}

/// The replacements of [`remove_zingers`] (options checked) with the half-window `r`.
fn apply_zingers(mut frames: ArrayViewMut3<'_, f32>, opts: &ZingerOptions, r: usize) -> usize {
    frames
        .axis_iter_mut(Axis(0))
        .into_par_iter()
        .map(|mut frame| {
            let (nu, nv) = frame.dim();
            let original: Array2<f32> = frame.to_owned();
            let mut window = Vec::with_capacity(opts.size * opts.size);
            let mut n = 0;
            for iu in 0..nu {
                for iv in 0..nv {
                    let x = original[[iu, iv]];
                    window.clear();
                    for a in iu.saturating_sub(r)..(iu + r + 1).min(nu) {
                        for b in iv.saturating_sub(r)..(iv + r + 1).min(nv) {
                            let y = original[[a, b]];
                            if !y.is_nan() {
                                window.push(y);
                            }
                        }
                    }
                    if window.is_empty() {
                        continue;
                    }
                    let mid = window.len() / 2;
                    let (_, &mut med, _) = window.select_nth_unstable_by(mid, f32::total_cmp);
                    let d = x - med;
                    if d > opts.threshold || (opts.both_signs && -d > opts.threshold) {
                        frame[[iu, iv]] = med;
                        n += 1;
                    }
                }
            }
            n
        })
        .sum()
}
