//! Angular quadrature of views that are not spaced as the angle partition says (non-uniform,
//! random or subset angles, views given as vectors): each view's share of the angular range.
//!
//! The ray transform's adjoint weights every view by the data partition's angle cell `Δθ`; FBP
//! needs the integral over the rotation angle, so view `k` is weighted by `ω_k = Δθ_k / Δθ` with
//! `Δθ_k` its share of the range: half the distance to each neighbour (the cells of the views'
//! midpoints), periodic for a scan that covers the whole circle. ODL's `fbp_op` does not weight
//! such views (each counts `Δθ`).

use std::f64::consts::PI;

/// The views' angles and weights for FBP.
pub(crate) struct Quadrature {
    /// Each view's rotation angle from the start of the scan (in `[0, alen]`).
    pub betas: Vec<f64>,
    /// The length of the angle range the views cover (`Σ Δθ_k`).
    pub alen: f64,
    /// `ω_k = Δθ_k / cell`.
    pub weights: Vec<f64>,
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// The quadrature of views whose unit directions `dirs` (each view's detector normal or central
/// ray, perpendicular to the unit `axis`) turn about `axis`, counter-clockwise from `dirs[0]`.
///
/// `period` is `2π` for fan and cone beams and `π` for parallel beams (a parallel view and the
/// view half a turn later measure the same lines, so angles are taken modulo `π`). `part_len`
/// is the data partition's angle range and `cell` its cell: a range of at least `period`, or
/// short of it by less than the views' mean spacing `part_len / n`, is a full scan, whose views
/// share the circle periodically (`alen = period`); a shorter range is a short scan from the
/// view after the largest gap between the views, over `alen = max(part_len, span)` with equal
/// margins before the first and after the last view.
pub(crate) fn quadrature(
    dirs: &[[f64; 3]],
    axis: [f64; 3],
    period: f64,
    part_len: f64,
    cell: f64,
) -> Quadrature {
    let n = dirs.len();
    let e1 = dirs[0];
    let e2 = cross(axis, e1);
    let psi: Vec<f64> = dirs
        .iter()
        .map(|d| {
            let a = dot(*d, e2).atan2(dot(*d, e1)).rem_euclid(period);
            // rem_euclid may round up to the period itself.
            if a >= period {
                0.0
            } else {
                a
            }
        })
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| psi[a].total_cmp(&psi[b]));
    // Gap after sorted view j (the last one's wraps around).
    let gap = |j: usize| -> f64 {
        if j + 1 < n {
            psi[order[j + 1]] - psi[order[j]]
        } else {
            period - (psi[order[n - 1]] - psi[order[0]])
        }
    };
    let mut share = vec![0.0; n];
    let mut betas = vec![0.0; n];
    // A range short of the period by less than the mean spacing of the views is a full scan
    // (ODL's partitions of subsets such as `geometry[1::4]` end at their views' cells).
    let full = part_len >= period * (1.0 - 1e-9) || period - part_len < part_len / n as f64;
    let alen;
    if n == 1 {
        alen = if full { period } else { part_len };
        share[0] = alen;
        betas[0] = 0.5 * alen;
    } else if full {
        alen = period;
        for j in 0..n {
            share[order[j]] = 0.5 * (gap((j + n - 1) % n) + gap(j));
            betas[order[j]] = psi[order[j]];
        }
    } else {
        // The scan starts after the largest gap.
        let widest = (0..n).fold(0, |w, j| if gap(j) > gap(w) { j } else { w });
        let seq: Vec<usize> = (1..=n).map(|j| order[(widest + j) % n]).collect();
        let rel: Vec<f64> = seq
            .iter()
            .map(|&k| (psi[k] - psi[seq[0]]).rem_euclid(period))
            .collect();
        let span = rel[n - 1];
        alen = part_len.max(span);
        let margin = 0.5 * (alen - span);
        for j in 0..n {
            let before = if j == 0 {
                margin
            } else {
                0.5 * (rel[j] - rel[j - 1])
            };
            let after = if j == n - 1 {
                margin
            } else {
                0.5 * (rel[j + 1] - rel[j])
            };
            share[seq[j]] = before + after;
            betas[seq[j]] = margin + rel[j];
        }
    }
    Quadrature {
        betas,
        alen,
        weights: share.iter().map(|s| s / cell).collect(),
    }
}

/// The period of the view angles of a beam: `π` for parallel beams, `2π` otherwise.
pub(crate) fn period(parallel: bool) -> f64 {
    if parallel {
        PI
    } else {
        2.0 * PI
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(angles: &[f64]) -> Vec<[f64; 3]> {
        angles.iter().map(|a| [a.cos(), a.sin(), 0.0]).collect()
    }

    /// Uniform views: every share is the cell, the betas are the cells' midpoints.
    #[test]
    fn uniform_views_get_the_cell() {
        let n = 12;
        let d = 2.0 * PI / n as f64;
        let angles: Vec<f64> = (0..n).map(|k| 0.4 + (k as f64 + 0.5) * d).collect();
        let q = quadrature(&dirs(&angles), [0.0, 0.0, 1.0], 2.0 * PI, 2.0 * PI, d);
        assert!(q.weights.iter().all(|w| (w - 1.0).abs() < 1e-12));
        assert!((q.alen - 2.0 * PI).abs() < 1e-12);
        let half: Vec<f64> = (0..n).map(|k| (k as f64 + 0.5) * d).collect();
        let short = quadrature(&dirs(&angles[..6]), [0.0, 0.0, 1.0], 2.0 * PI, PI, d);
        assert!(short.weights.iter().all(|w| (w - 1.0).abs() < 1e-12));
        for (b, h) in short.betas.iter().zip(&half) {
            assert!((b - h).abs() < 1e-12, "{b} {h}");
        }
    }

    /// Random angles in any order: the shares add up to the range and follow the neighbours.
    #[test]
    fn shares_add_up() {
        let angles = [2.0, 0.3, 5.9, 1.1, 4.0, 3.3];
        let q = quadrature(&dirs(&angles), [0.0, 0.0, 1.0], 2.0 * PI, 2.0 * PI, 1.0);
        assert!((q.weights.iter().sum::<f64>() - 2.0 * PI).abs() < 1e-12);
        // 0.3: half of (0.3 − (5.9 − 2π)) and of (1.1 − 0.3).
        let w = 0.5 * (0.3 - (5.9 - 2.0 * PI)) + 0.5 * 0.8;
        assert!((q.weights[1] - w).abs() < 1e-12);
        // A range short of the turn by less than the mean spacing: a full scan.
        let subset = quadrature(
            &dirs(&angles),
            [0.0, 0.0, 1.0],
            2.0 * PI,
            2.0 * PI - 0.5,
            1.0,
        );
        assert_eq!(subset.alen, 2.0 * PI);
        assert!((subset.weights[1] - w).abs() < 1e-12);
        let short = quadrature(&dirs(&[1.0, 0.5, 2.5]), [0.0, 0.0, 1.0], 2.0 * PI, 2.5, 1.0);
        assert!((short.weights.iter().sum::<f64>() - 2.5).abs() < 1e-12);
        assert!((short.betas[1] - 0.25).abs() < 1e-12 && (short.betas[2] - 2.25).abs() < 1e-12);
    }
}
