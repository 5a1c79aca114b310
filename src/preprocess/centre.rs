//! Centre-of-rotation estimation for parallel-beam scans.

use std::f64::consts::PI;
use std::ops::Range;

use ndarray::{ArrayView3, Axis};
use realfft::num_complex::Complex;
use realfft::RealFftPlanner;

use crate::{Error, Result};

/// Options of [`find_centre_parallel`].
#[derive(Clone, Debug, PartialEq)]
pub struct CentreOptions {
    /// The largest distance of the rotation axis from the detector's centre that is searched, in
    /// pixels. `None`: a quarter of the detector width.
    pub max_offset_px: Option<f64>,
    /// The detector rows `v` used (default: all).
    pub rows: Option<Range<usize>>,
    /// The largest difference from 180° between the two views compared, in radians (default
    /// 2°, i.e. 0.0349). A scan over `[0, π)` compares its first and last views, which differ by
    /// `π − Δθ`.
    pub max_angle_mismatch: f64,
}

impl Default for CentreOptions {
    fn default() -> Self {
        Self {
            max_offset_px: None,
            rows: None,
            max_angle_mismatch: 2f64.to_radians(),
        }
    }
}

/// The rotation axis found by [`find_centre_parallel`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CentreEstimate {
    /// Where the rotation axis projects onto the detector, as a (fractional) pixel index
    /// along u, 0 being the first pixel's centre.
    pub axis_px: f64,
    /// The detector shift along u that puts the axis there, in pixels: `(nu − 1)/2 − axis_px`,
    /// to be carried into a geometry as `det_offset = det_offset_px · pixel size` (e.g.
    /// [`crate::io::ScanGeometryOptions::det_offset_px`]) — a geometry shift, not a resampling
    /// of the data.
    pub det_offset_px: f64,
    /// The two views compared (indices into the projections).
    pub views: (usize, usize),
    /// How far their angles are from 180° apart (radians).
    pub angle_mismatch: f64,
}

/// Estimates the centre of rotation of a parallel-beam scan `projections = [angle, u, v]` (line
/// integrals) at `angles` (radians) to sub-pixel accuracy.
///
/// Method: in parallel beam the view at `θ + π` is the mirror image of the view at `θ` about
/// the axis' projection `c`: `p(θ + π, u) = p(θ, 2c − u)`. The two views closest to 180°
/// apart are compared, the second mirrored, by the mean squared difference over their overlap
/// for every integer shift (computed with FFT cross-correlations, summed over the detector
/// rows); the minimum is refined by a parabola through it and its two neighbours, and the
/// shift `d` gives `c = (d + nu − 1)/2`. This is the image-registration of the 0° and mirrored
/// 180° projections compared by Donath et al., "Automated determination of the center of
/// rotation in tomography data", J. Opt. Soc. Am. A 23(5), 1048–1057 (2006), with a parabolic
/// sub-pixel refinement.
///
/// The views must differ by 180° within [`CentreOptions::max_angle_mismatch`]; the residual
/// mismatch `δ` biases the result by about `ȳ·δ/2` (ȳ: the object's centre of mass across the
/// beam in pixels), small for a centred sample. Errors: shapes that disagree, fewer than two
/// views, no pair of views 180° apart, an empty row range.
pub fn find_centre_parallel(
    projections: ArrayView3<'_, f32>,
    angles: &[f64],
    opts: &CentreOptions,
) -> Result<CentreEstimate> {
    let (na, nu, nv) = projections.dim();
    if angles.len() != na {
        return Err(Error::invalid(format!(
            "{na} projections but {} angles",
            angles.len()
        )));
    }
    if na < 2 || nu < 4 {
        return Err(Error::invalid(format!(
            "centre finding needs at least 2 views of 4 pixels, got {na} views of {nu}"
        )));
    }
    let rows = opts.rows.clone().unwrap_or(0..nv);
    if rows.start >= rows.end || rows.end > nv {
        return Err(Error::invalid(format!(
            "detector rows {}..{} are not inside 0..{nv}",
            rows.start, rows.end
        )));
    }
    let (i, j, mismatch) = opposite_views(angles)?;
    if mismatch.abs() > opts.max_angle_mismatch {
        return Err(Error::invalid(format!(
            "no two views are 180° apart within {:.3}°: the closest pair, views {i} and {j}, \
             is {:.3}° off (a parallel scan over at least 180° is needed)",
            opts.max_angle_mismatch.to_degrees(),
            mismatch.to_degrees()
        )));
    }
    let max_off = opts.max_offset_px.unwrap_or(nu as f64 / 4.0);
    if !(max_off >= 0.0) {
        return Err(Error::invalid(format!(
            "max_offset_px must be non-negative, got {max_off}"
        )));
    }
    // d = 2c − (nu − 1) ranges over ±2·max_off, kept inside the detector.
    let max_d = ((2.0 * max_off).ceil() as usize + 1).min(nu - 2) as isize;
    let a = projections.index_axis(Axis(0), i);
    let b = projections.index_axis(Axis(0), j);
    let msd = mirrored_msd(a, b, rows, max_d);
    // The integer minimum, then the parabola.
    let (k, _) = msd
        .iter()
        .enumerate()
        .filter(|(_, m)| m.is_finite())
        .min_by(|x, y| x.1.total_cmp(y.1))
        .ok_or_else(|| Error::invalid("the projections are not finite".to_string()))?;
    let mut d = k as f64 - max_d as f64;
    if k > 0 && k + 1 < msd.len() {
        let (m0, m1, m2) = (msd[k - 1], msd[k], msd[k + 1]);
        let curv = m0 - 2.0 * m1 + m2;
        if curv > 0.0 {
            d += (0.5 * (m0 - m2) / curv).clamp(-0.5, 0.5);
        }
    }
    let axis_px = 0.5 * (d + nu as f64 - 1.0);
    Ok(CentreEstimate {
        axis_px,
        det_offset_px: 0.5 * (nu as f64 - 1.0) - axis_px,
        views: (i, j),
        angle_mismatch: mismatch,
    })
}

/// The pair of views closest to 180° apart, the pair [`find_centre_parallel`] compares:
/// `(i, j, θ_j − θ_i − π)` (angle differences taken modulo 2π into `[0, 2π)`). A caller that
/// streams a scan can read just these two views and pass them alone (with their two angles)
/// to [`find_centre_parallel`]. Errors: fewer than two angles, or one that is not finite.
///
/// ```
/// let angles: Vec<f64> = (0..180).map(|k| (k as f64).to_radians()).collect();
/// let (i, j, mismatch) = rodl::preprocess::opposite_views(&angles)?;
/// assert_eq!((j as isize - i as isize).abs(), 179);
/// assert!((mismatch.abs() - 1f64.to_radians()).abs() < 1e-12);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn opposite_views(angles: &[f64]) -> Result<(usize, usize, f64)> {
    let two_pi = 2.0 * PI;
    let norm = |t: f64| t.rem_euclid(two_pi);
    let mut order: Vec<(f64, usize)> = angles.iter().map(|&t| (norm(t), 0)).collect();
    for (k, o) in order.iter_mut().enumerate() {
        o.1 = k;
        if !o.0.is_finite() {
            return Err(Error::invalid(format!("angle {k} is {}", angles[k])));
        }
    }
    order.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut best = (0, 0, f64::INFINITY);
    for &(t, i) in &order {
        let target = norm(t + PI);
        let p = order.partition_point(|x| x.0 < target);
        // The neighbours of the target, with wrap-around.
        for q in [p, p + order.len() - 1] {
            let (u, j) = order[q % order.len()];
            if j == i {
                continue;
            }
            let mut diff = norm(u - t) - PI;
            if diff > PI {
                diff -= two_pi;
            }
            if diff.abs() < best.2.abs() {
                best = (i, j, diff);
            }
        }
    }
    if best.2.is_infinite() {
        return Err(Error::invalid("centre finding needs two distinct views"));
    }
    Ok(best)
}

/// The mean squared difference of `a(u + d)` and `f(u) = b(nu − 1 − u)` over their overlap
/// and the rows, for `d = −max_d ..= max_d`.
fn mirrored_msd(
    a: ndarray::ArrayView2<'_, f32>,
    b: ndarray::ArrayView2<'_, f32>,
    rows: Range<usize>,
    max_d: isize,
) -> Vec<f64> {
    let nu = a.shape()[0];
    let len = (2 * nu).next_power_of_two();
    let mut planner = RealFftPlanner::<f64>::new();
    let fwd = planner.plan_fft_forward(len);
    let inv = planner.plan_fft_inverse(len);
    let mut acc = vec![Complex::new(0.0, 0.0); len / 2 + 1];
    let mut ea = vec![0.0f64; nu];
    let mut ef = vec![0.0f64; nu];
    let mut xa = vec![0.0f64; len];
    let mut xf = vec![0.0f64; len];
    let mut sa = fwd.make_output_vec();
    let mut sf = fwd.make_output_vec();
    let nrows = rows.len();
    for v in rows {
        xa.iter_mut().for_each(|x| *x = 0.0);
        xf.iter_mut().for_each(|x| *x = 0.0);
        for u in 0..nu {
            let pa = a[[u, v]] as f64;
            let pf = b[[nu - 1 - u, v]] as f64;
            xa[u] = pa;
            xf[u] = pf;
            ea[u] += pa * pa;
            ef[u] += pf * pf;
        }
        // Lengths match the plan, so the transforms cannot fail.
        let _ = fwd.process(&mut xa, &mut sa);
        let _ = fwd.process(&mut xf, &mut sf);
        for ((c, x), y) in acc.iter_mut().zip(&sa).zip(&sf) {
            *c += x * y.conj();
        }
    }
    acc[0].im = 0.0;
    let last = acc.len() - 1;
    acc[last].im = 0.0;
    let mut cross = inv.make_output_vec();
    let _ = inv.process(&mut acc, &mut cross);
    let prefix = |e: &[f64]| {
        let mut p = vec![0.0; e.len() + 1];
        for (k, &x) in e.iter().enumerate() {
            p[k + 1] = p[k] + x;
        }
        p
    };
    let (pa, pf) = (prefix(&ea), prefix(&ef));
    (-max_d..=max_d)
        .map(|d| {
            // Overlap: u in [max(0, −d), min(nu, nu − d)), a-indices shifted by d.
            let lo = (-d).max(0) as usize;
            let hi = (nu as isize).min(nu as isize - d) as usize;
            let n = (hi - lo) as f64 * nrows as f64;
            let x = cross[d.rem_euclid(len as isize) as usize] / len as f64;
            let e_a = pa[(hi as isize + d) as usize] - pa[(lo as isize + d) as usize];
            let e_f = pf[hi] - pf[lo];
            (e_a + e_f - 2.0 * x) / n
        })
        .collect()
}
