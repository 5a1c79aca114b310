//! Helical FDK: the angular window that turns a helical cone-beam scan into one full turn of
//! views for every voxel.
//!
//! A voxel near the rotation axis at height `z` is seen from view `β` on the detector row whose
//! ray crosses the axis at `z`: the row at `v = (z − z_s(β)) · D / R` (flat detector; on a
//! cylinder about the source, the row at that height), with `z_s(β) = z_s(0) + h β` the source
//! height and `h` the pitch per radian. Seen from the voxel, the row is an angle
//! `t = v R / (D h)` away from the view whose source is at the voxel's height. Weighting each row
//! by `w(t)`, with `w(t) + w(t − 2π) = 1` for every `t`, gives every voxel one full turn of
//! directions in total, and FDK's full-turn filter (`c = R / (2 · 2π D)`) reconstructs it. This is
//! the row-wise weighted helical FDK of the literature (Wang et al., "A general cone-beam
//! reconstruction algorithm", IEEE TMI 12, 1993, for the helical source path; the
//! angle-normalised row window as in Stierstorfer et al.'s WFBP, Phys. Med. Biol. 49, 2004, here
//! without rebinning to parallel beams): `w` is 1 for `|t| ≤ π − δ` and falls to 0 at
//! `|t| = π + δ` by Parker's smooth step, with `δ` as wide as the detector allows (at most
//! `π`: then `w(t) = cos²(t/4)`).
//!
//! It is approximate, as every FDK: the window uses the row through the axis for all voxels
//! (voxels off the axis see their partner views at slightly other angles), the rows are filtered
//! horizontally, not along the helix, and voxels less than half a turn (plus `δ`) from either end
//! of the helix miss views. The detector must cover the rows `|t| ≤ π`: a pitch factor (feed per
//! turn over the detector's height at the axis) of at most 1. The error grows with the pitch
//! factor, as the transitions narrow (`tests/tomo_fbp_helical.rs`, Gaussian blobs in a 40³
//! cube, source radius 4, detector at 6, 80 views per turn, relative L2 error within
//! `|(x, y)| < 0.8`, `|z| < 0.6`): 0.052 at a pitch factor of 0.3 (a circular FDK of the same
//! detector: 0.046 near its mid-plane), 0.091 at 0.6, 0.163 at 0.9, the same with a cylindrical
//! detector. For pitch factors above about 0.5, or for the best quality, reconstruct
//! iteratively (CGLS, PDHG-TV) with the exact ray transform.

use std::f64::consts::PI;

use super::smooth_step::smooth_step;
use crate::{Error, Result};

/// The largest half-width of the window's transitions.
const MAX_TRANSITION: f64 = PI;

/// The row weights of a helical scan: `rows` are the rows' heights above the source's plane
/// on a detector at distance `d` from the source (flat: `v`; a cylinder about the source: the
/// height), `dv` their spacing, `r` the source's distance from the axis, `pitch` the source's
/// shift along the axis per radian, `alen` the scan's angle range.
pub(crate) fn row_window(
    rows: &[f64],
    dv: f64,
    r: f64,
    d: f64,
    pitch: f64,
    alen: f64,
) -> Result<Vec<f64>> {
    let pitch = pitch.abs();
    if alen < 2.0 * PI * (1.0 - 1e-9) {
        return Err(Error::Unsupported(format!(
            "helical FDK needs at least one full turn of views, got an angle range of {alen:.6} \
             rad; reconstruct it iteratively"
        )));
    }
    // The angle of each row's edges from the voxel's own view; the detector must reach ±π.
    let to_angle = |v: f64| v * r / (d * pitch);
    let lo = rows.iter().fold(f64::INFINITY, |m, &v| m.min(v)) - 0.5 * dv;
    let hi = rows.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v)) + 0.5 * dv;
    let reach = to_angle(lo).abs().min(to_angle(hi).abs());
    if !(lo < 0.0 && hi > 0.0) || reach < PI * (1.0 - 1e-9) {
        let feed = 2.0 * PI * pitch;
        let height = (hi - lo) * r / d;
        return Err(Error::Unsupported(format!(
            "helical FDK needs the detector rows to cover half a turn of the helix on either side \
             of the source's plane (a pitch factor of at most 1, centred): the feed per turn is \
             {feed:.6}, the detector's height at the axis {height:.6} (rows from {:.6} to {:.6}); \
             reconstruct it iteratively",
            lo * r / d,
            hi * r / d
        )));
    }
    let delta = (reach - PI).clamp(0.0, MAX_TRANSITION);
    Ok(rows
        .iter()
        .map(|&v| {
            let t = to_angle(v).abs();
            if delta > 1e-12 {
                smooth_step((PI - t) / (2.0 * delta))
            } else if t < PI {
                1.0
            } else if t > PI {
                0.0
            } else {
                0.5
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every voxel's views add up to one turn: `w(t) + w(t − 2π) = 1`, for transitions of every
    /// width the detector allows.
    #[test]
    fn the_window_is_a_partition_of_unity_over_turns() {
        for pitch in [0.05, 0.1, 0.15, 0.2] {
            let rows: Vec<f64> = (0..401).map(|j| -2.0 + j as f64 * 0.01).collect();
            let w = row_window(&rows, 0.01, 4.0, 6.0, pitch, 4.0 * PI).unwrap();
            let at = |t: f64| {
                // The row at angle t, interpolated.
                let v = t * 6.0 * pitch / 4.0;
                let x = (v + 2.0) / 0.01;
                let (k, f) = (x.floor() as usize, x - x.floor());
                if k + 1 >= rows.len() {
                    return 0.0;
                }
                w[k] * (1.0 - f) + w[k + 1] * f
            };
            for i in 0..200 {
                let t = i as f64 * 2.0 * PI / 200.0 - PI;
                let s = at(t.abs()) + at((t - 2.0 * PI).abs()) + at((t + 2.0 * PI).abs());
                assert!((s - 1.0).abs() < 2e-3, "pitch {pitch}, t {t}: {s}");
            }
        }
        // A pitch factor above 1 is refused; so is less than a turn.
        let rows = [-1.0, 0.0, 1.0];
        assert!(row_window(&rows, 1.0, 4.0, 6.0, 1.0, 4.0 * PI).is_err());
        assert!(row_window(&rows, 1.0, 4.0, 6.0, 0.01, 3.0).is_err());
    }
}
