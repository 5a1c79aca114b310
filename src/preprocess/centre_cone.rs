//! Centre-of-rotation estimation for circular cone-beam scans.

use std::f64::consts::PI;
use std::ops::Range;

use ndarray::{Array2, ArrayView3};
use rayon::prelude::*;

use crate::{Error, Result};

/// The lengths of a circular cone-beam scan that [`find_centre_cone`] needs, in one unit of
/// length (any: only their ratios matter).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConeLengths {
    /// The source to rotation-axis distance.
    pub src_radius: f64,
    /// The rotation-axis to detector distance.
    pub det_radius: f64,
    /// The detector's pixel size along u.
    pub pixel_size: f64,
}

/// Options of [`find_centre_cone`].
#[derive(Clone, Debug, PartialEq)]
pub struct ConeCentreOptions {
    /// The largest distance of the rotation axis from the detector's centre that is searched, in
    /// pixels. `None`: a quarter of the detector width.
    pub max_offset_px: Option<f64>,
    /// The detector rows `v` compared. `None`: the middle eighth of the rows (at least 2, or
    /// all of a detector with fewer), about the source's plane, where the cone beam's rays lie
    /// closest to the plane of the orbit.
    pub rows: Option<Range<usize>>,
    /// The search ends when the bracket of the axis' position is this narrow, in pixels
    /// (default 1e-3).
    pub tolerance_px: f64,
}

impl Default for ConeCentreOptions {
    fn default() -> Self {
        Self {
            max_offset_px: None,
            rows: None,
            tolerance_px: 1e-3,
        }
    }
}

/// The rotation axis found by [`find_centre_cone`].
#[derive(Clone, Debug, PartialEq)]
pub struct ConeCentreEstimate {
    /// Where the ray from the source through the rotation axis meets the detector, as a
    /// (fractional) pixel index along u, 0 being the first pixel's centre.
    pub axis_px: f64,
    /// The detector shift along u that puts the axis there, in pixels: `(nu − 1)/2 − axis_px`,
    /// to be carried into the geometry as `det_offset = det_offset_px · pixel size`
    /// ([`crate::io::ScanGeometryOptions::det_offset_px`]).
    pub det_offset_px: f64,
    /// The detector rows compared.
    pub rows: Range<usize>,
    /// How many pairs of opposite rays (per row) were compared at the axis found.
    pub pairs: usize,
    /// The root-mean-square difference of the pairs at the axis found (the data's unit): the
    /// noise and the cone beam's inconsistency left over.
    pub rms_mismatch: f64,
}

/// Estimates the centre of rotation of a circular cone-beam scan `projections = [angle, u, v]`
/// (line integrals, a flat detector) at `angles` (radians) to sub-pixel accuracy.
///
/// Method: in the plane of the source's orbit a cone beam is a fan beam, and every ray is
/// measured twice, once from each end: with `u` the position along the detector counted from
/// where the ray through the rotation axis meets it, and `D` the source-to-detector distance,
/// `p(β, u) = p(β + π − 2 atan(u/D), −u)` (in rodl's geometry: the source at `−R_s·e_y` rotated
/// counter-clockwise by `β`). For each candidate axis position the measured rays of the rows
/// near that plane are compared with their opposite rays, interpolated (cubic convolution along
/// u, Keys 1981; linear in the angle), by the mean squared difference, which is smallest at the
/// true axis. The minimum is found on a half-pixel grid of a subset of the views, then refined
/// with all views by a golden-section search. This is the fan-beam form of the
/// conjugate-ray criterion of parallel-beam centre finders (e.g. Vo, Drakopoulos, Atwood,
/// Reinhard, "Reliable method for calculating the center of rotation in parallel-beam
/// tomography", Opt. Express 22(16), 19078 (2014), who compare a sinogram with its 180° flip).
///
/// The scan must cover a full turn or at least half a turn plus the fan angle for the pairs to
/// exist; off the orbit's plane the criterion holds approximately (both rays of a pair cross
/// the same line at heights that differ with the cone angle), so the rows used default to the
/// middle ones. Angles may come in any order; views more than twice the median angular step
/// apart are not interpolated between. Errors: shapes that disagree, fewer than 8 views,
/// non-finite angles or lengths, an empty row range, too few pairs of opposite rays.
///
/// ```
/// use ndarray::Array3;
/// use rodl::preprocess::{find_centre_cone, ConeCentreOptions, ConeLengths};
/// // Line integrals through a cylinder of radius 6 about (3, 2) (units of the detector's
/// // pixel), seen over a full turn with the detector shifted by 2.5 pixels.
/// let (na, nu, nv) = (180, 48, 2);
/// let (rs, rd) = (100.0, 50.0);
/// let angles: Vec<f64> = (0..na).map(|k| 2.0 * std::f64::consts::PI * k as f64 / na as f64).collect();
/// let p = Array3::from_shape_fn([na, nu, nv], |(a, j, _)| {
///     // The ray through pixel j: world position along the detector (magnified units).
///     let u = (j as f64 - 23.5) + 2.5;
///     let (s, c) = angles[a].sin_cos();
///     let src = [rs * s, -rs * c];
///     let det = [u * c - rd * s, u * s + rd * c];
///     let d = [det[0] - src[0], det[1] - src[1]];
///     let len = (d[0] * d[0] + d[1] * d[1]).sqrt();
///     let o = [3.0 - src[0], 2.0 - src[1]];
///     let dist = (o[0] * d[1] - o[1] * d[0]).abs() / len;
///     (2.0 * (36.0 - dist * dist).max(0.0).sqrt()) as f32
/// });
/// let lengths = ConeLengths { src_radius: rs, det_radius: rd, pixel_size: 1.0 };
/// let c = find_centre_cone(p.view(), &angles, &lengths, &ConeCentreOptions::default())?;
/// assert!((c.det_offset_px - 2.5).abs() < 0.05, "{c:?}");
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn find_centre_cone(
    projections: ArrayView3<'_, f32>,
    angles: &[f64],
    lengths: &ConeLengths,
    opts: &ConeCentreOptions,
) -> Result<ConeCentreEstimate> {
    let (na, nu, nv) = projections.dim();
    if angles.len() != na {
        return Err(Error::invalid(format!(
            "{na} projections but {} angles",
            angles.len()
        )));
    }
    if na < 8 || nu < 8 || nv == 0 {
        return Err(Error::invalid(format!(
            "cone-beam centre finding needs at least 8 views of 8 × 1 pixels, got {na} views of \
             {nu} × {nv}"
        )));
    }
    let ConeLengths {
        src_radius,
        det_radius,
        pixel_size,
    } = *lengths;
    for (name, v) in [
        ("src_radius", src_radius),
        ("det_radius", det_radius),
        ("pixel_size", pixel_size),
    ] {
        if !(v.is_finite() && v > 0.0) {
            return Err(Error::invalid(format!(
                "cone-beam centre finding: {name} must be positive and finite, got {v}"
            )));
        }
    }
    if !(opts.tolerance_px.is_finite() && opts.tolerance_px > 0.0) {
        return Err(Error::invalid(format!(
            "tolerance_px must be positive, got {}",
            opts.tolerance_px
        )));
    }
    let rows = match &opts.rows {
        Some(r) => r.clone(),
        None => {
            let k = (nv / 8).max(2).min(nv);
            let lo = (nv - k) / 2;
            lo..lo + k
        }
    };
    if rows.start >= rows.end || rows.end > nv {
        return Err(Error::invalid(format!(
            "detector rows {}..{} are not inside 0..{nv}",
            rows.start, rows.end
        )));
    }
    let max_off = opts.max_offset_px.unwrap_or(nu as f64 / 4.0);
    if !(max_off.is_finite() && max_off >= 0.0) {
        return Err(Error::invalid(format!(
            "max_offset_px must be non-negative, got {max_off}"
        )));
    }
    let max_off = max_off.min(0.5 * nu as f64 - 2.0);
    let views = Views::new(angles)?;
    // The rows as sinograms [view (sorted by angle), u] in f64.
    let sinos: Vec<Array2<f64>> = rows
        .clone()
        .map(|v| {
            Array2::from_shape_fn([na, nu], |(k, j)| {
                projections[[views.order[k], j, v]] as f64
            })
        })
        .collect();
    if sinos.iter().any(|s| s.iter().any(|x| !x.is_finite())) {
        return Err(Error::invalid("the projections are not finite"));
    }
    let problem = Problem {
        sinos: &sinos,
        views: &views,
        nu,
        dist_px: (src_radius + det_radius) / pixel_size,
    };
    let centre = 0.5 * (nu as f64 - 1.0);
    // Coarse: a half-pixel grid (the opposite pixel 2c − j moves by whole pixels), on at most
    // 90 views and 4 rows.
    let view_step = na.div_ceil(90);
    let row_step = sinos.len().div_ceil(4);
    let steps = (2.0 * max_off).floor() as isize;
    let coarse: Vec<(f64, Option<f64>)> = (-steps..=steps)
        .into_par_iter()
        .map(|k| {
            let c = centre + 0.5 * k as f64;
            let m = problem.cost(c, view_step, row_step, None).mean();
            (c, m)
        })
        .collect();
    let (c0, _) =
        coarse
            .iter()
            .filter_map(|&(c, m)| m.map(|m| (c, m)))
            .min_by(|x, y| x.1.total_cmp(&y.1))
            .ok_or_else(|| {
                Error::invalid(format!(
                "cone-beam centre finding found no pairs of opposite rays: the {na} views must \
                 cover at least half a turn plus the fan angle ({:.1}° to {:.1}° given)",
                angles.iter().cloned().fold(f64::INFINITY, f64::min).to_degrees(),
                angles
                    .iter()
                    .cloned()
                    .fold(f64::NEG_INFINITY, f64::max)
                    .to_degrees()
            ))
            })?;
    // Fine: golden-section search over [c0 − 1, c0 + 1] with all views and rows, over a fixed
    // set of pixels whose opposite pixels stay on the detector for every candidate.
    let (lo, hi) = (c0 - 1.0, c0 + 1.0);
    let j_lo = ((2.0 * hi - (nu as f64 - 1.0)).ceil().max(0.0)) as usize;
    let j_hi = ((2.0 * lo).floor().min(nu as f64 - 1.0)).max(0.0) as usize;
    let fixed = (j_lo <= j_hi).then_some(j_lo..j_hi + 1);
    let f = |c: f64| {
        problem
            .cost(c, 1, 1, fixed.clone())
            .mean()
            .unwrap_or(f64::INFINITY)
    };
    let g = 0.5 * (5f64.sqrt() - 1.0);
    let (mut a, mut b) = (lo, hi);
    let mut x1 = b - g * (b - a);
    let mut x2 = a + g * (b - a);
    let (mut f1, mut f2) = (f(x1), f(x2));
    while b - a > opts.tolerance_px {
        if f1 <= f2 {
            b = x2;
            x2 = x1;
            f2 = f1;
            x1 = b - g * (b - a);
            f1 = f(x1);
        } else {
            a = x1;
            x1 = x2;
            f1 = f2;
            x2 = a + g * (b - a);
            f2 = f(x2);
        }
    }
    let axis_px = 0.5 * (a + b);
    let at = problem.cost(axis_px, 1, 1, fixed);
    let rms = at.mean().map(f64::sqrt).ok_or_else(|| {
        Error::invalid("cone-beam centre finding: no pairs of opposite rays at the axis found")
    })?;
    Ok(ConeCentreEstimate {
        axis_px,
        det_offset_px: centre - axis_px,
        rows,
        pairs: at.count / sinos.len(),
        rms_mismatch: rms,
    })
}

/// The views sorted by angle (in `[0, 2π)`), with the largest gap that is interpolated across.
struct Views {
    /// `order[k]`: the projection index of the k-th smallest angle.
    order: Vec<usize>,
    /// The sorted angles, in `[0, 2π)`.
    theta: Vec<f64>,
    /// The largest angular gap interpolated across.
    max_gap: f64,
}

impl Views {
    fn new(angles: &[f64]) -> Result<Self> {
        if let Some(k) = angles.iter().position(|a| !a.is_finite()) {
            return Err(Error::invalid(format!("angle {k} is {}", angles[k])));
        }
        let two_pi = 2.0 * PI;
        let mut order: Vec<usize> = (0..angles.len()).collect();
        let norm: Vec<f64> = angles.iter().map(|a| a.rem_euclid(two_pi)).collect();
        order.sort_by(|&i, &j| norm[i].total_cmp(&norm[j]));
        let theta: Vec<f64> = order.iter().map(|&i| norm[i]).collect();
        let n = theta.len();
        let mut gaps: Vec<f64> = (0..n)
            .map(|k| {
                if k + 1 < n {
                    theta[k + 1] - theta[k]
                } else {
                    theta[0] + two_pi - theta[k]
                }
            })
            .collect();
        gaps.sort_by(f64::total_cmp);
        let median = gaps[n / 2];
        if !(median > 0.0) {
            return Err(Error::invalid(
                "cone-beam centre finding: the angles repeat (their median step is 0)",
            ));
        }
        Ok(Self {
            order,
            theta,
            max_gap: 2.0 * median,
        })
    }

    /// The sorted views `(k, k')` around angle `t` with the weight of `k'`, or `None` where the
    /// gap is too wide to interpolate across.
    fn bracket(&self, t: f64) -> Option<(usize, usize, f64)> {
        let two_pi = 2.0 * PI;
        let t = t.rem_euclid(two_pi);
        let n = self.theta.len();
        let p = self.theta.partition_point(|&x| x <= t);
        let (k0, k1, t0, t1) = if p == 0 {
            (n - 1, 0, self.theta[n - 1] - two_pi, self.theta[0])
        } else if p == n {
            (n - 1, 0, self.theta[n - 1], self.theta[0] + two_pi)
        } else {
            (p - 1, p, self.theta[p - 1], self.theta[p])
        };
        let gap = t1 - t0;
        if gap > self.max_gap {
            return None;
        }
        Some((k0, k1, if gap > 0.0 { (t - t0) / gap } else { 0.0 }))
    }
}

/// The sum of squared differences of opposite rays and their count.
#[derive(Clone, Copy, Default)]
struct Cost {
    sum: f64,
    count: usize,
}

impl Cost {
    fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }
}

/// The sinograms of the rows compared and the fan's geometry.
struct Problem<'a> {
    sinos: &'a [Array2<f64>],
    views: &'a Views,
    nu: usize,
    /// The source-to-detector distance in pixels.
    dist_px: f64,
}

impl Problem<'_> {
    /// The mismatch of opposite rays for the axis at pixel `c`, over every `view_step`-th view,
    /// every `row_step`-th row and the pixels `pixels` (default: all whose opposite pixel is
    /// on the detector).
    fn cost(
        &self,
        c: f64,
        view_step: usize,
        row_step: usize,
        pixels: Option<Range<usize>>,
    ) -> Cost {
        let na = self.views.theta.len();
        let nu = self.nu;
        let pixels = pixels.unwrap_or(0..nu);
        (0..na)
            .into_par_iter()
            .step_by(view_step)
            .map(|k| {
                let mut acc = Cost::default();
                let theta = self.views.theta[k];
                for j in pixels.clone() {
                    let x = j as f64 - c;
                    let opposite = c - x;
                    if !(opposite >= 0.0 && opposite <= (nu - 1) as f64) {
                        continue;
                    }
                    let t = theta + PI - 2.0 * (x / self.dist_px).atan();
                    let Some((k0, k1, w)) = self.views.bracket(t) else {
                        continue;
                    };
                    let taps = cubic_taps(opposite, nu);
                    for sino in self.sinos.iter().step_by(row_step) {
                        let q0: f64 = taps.iter().map(|&(i, c)| c * sino[[k0, i]]).sum();
                        let q1: f64 = taps.iter().map(|&(i, c)| c * sino[[k1, i]]).sum();
                        let q = (1.0 - w) * q0 + w * q1;
                        let d = sino[[k, j]] - q;
                        acc.sum += d * d;
                        acc.count += 1;
                    }
                }
                acc
            })
            .reduce(Cost::default, |a, b| Cost {
                sum: a.sum + b.sum,
                count: a.count + b.count,
            })
    }
}

/// The four pixels and weights of Keys' cubic convolution (a = −1/2) at `x` in `[0, n − 1]`,
/// the edge pixels repeated outside.
fn cubic_taps(x: f64, n: usize) -> [(usize, f64); 4] {
    let i = x.floor();
    let t = x - i;
    let i = i as isize;
    let w = [
        ((-0.5 * t + 1.0) * t - 0.5) * t,
        (1.5 * t - 2.5) * t * t + 1.0,
        ((-1.5 * t + 2.0) * t + 0.5) * t,
        (0.5 * t - 0.5) * t * t,
    ];
    let at = |d: isize| (i + d).clamp(0, n as isize - 1) as usize;
    [(at(-1), w[0]), (at(0), w[1]), (at(1), w[2]), (at(2), w[3])]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cubic_taps_interpolate_lines_exactly() {
        let f: Vec<f64> = (0..10).map(|i| 2.0 * i as f64 - 3.0).collect();
        for x in [1.0, 1.25, 4.5, 7.9] {
            let v: f64 = cubic_taps(x, 10).iter().map(|&(i, w)| w * f[i]).sum();
            assert!((v - (2.0 * x - 3.0)).abs() < 1e-12, "{x}: {v}");
        }
    }

    #[test]
    fn brackets_wrap_around_and_skip_gaps() {
        let angles: Vec<f64> = (0..36).map(|k| (k as f64 * 10.0).to_radians()).collect();
        let v = Views::new(&angles).unwrap();
        let (k0, k1, w) = v.bracket((355f64).to_radians()).unwrap();
        assert_eq!((k0, k1), (35, 0));
        assert!((w - 0.5).abs() < 1e-12);
        let half: Vec<f64> = (0..18).map(|k| (k as f64 * 10.0).to_radians()).collect();
        let v = Views::new(&half).unwrap();
        assert!(v.bracket(270f64.to_radians()).is_none());
        assert!(v.bracket(85f64.to_radians()).is_some());
    }
}
