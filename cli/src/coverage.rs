//! Detector coverage of the volume: whether every view's detector sees the whole volume.
//!
//! The volume's bounding box is convex, so its shadow on a (flat) detector is the convex hull
//! of its corners' shadows, and the detector (a parallelogram) holds the shadow exactly when it
//! holds every corner's. Each corner is followed along its ray (the view's direction for
//! parallel beams, the line from the source for point beams) to the detector plane and its
//! coordinates are taken in pixel units along `det_u` and `det_v`.

use rodl::tomo::{Beam, VecGeometry};

/// How well the detector covers the volume, over all views.
#[derive(Clone, Debug, PartialEq)]
pub struct Coverage {
    /// Number of views.
    pub views: usize,
    /// Views whose detector holds the shadow of the whole bounding box.
    pub covered: usize,
    /// The largest distance, in pixels, by which the shadow sticks out past the detector's
    /// edge along u and along v (0 when it never does).
    pub overhang: [f64; 2],
    /// Views in which some corner of the box is level with or behind the source (the source
    /// is inside or next to the volume): such a view cannot see the whole volume.
    pub behind_source: usize,
}

impl Coverage {
    /// The percentage of views with full coverage.
    pub fn percent(&self) -> f64 {
        100.0 * self.covered as f64 / self.views.max(1) as f64
    }
}

type V3 = [f64; 3];

fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn det3(c0: V3, c1: V3, c2: V3) -> f64 {
    c0[0] * (c1[1] * c2[2] - c1[2] * c2[1]) - c1[0] * (c0[1] * c2[2] - c0[2] * c2[1])
        + c2[0] * (c0[1] * c1[2] - c0[2] * c1[1])
}

/// Solves `a·u + b·v + t·w = r` (3D) or `a·u + t·w = r` (2D, `b = 0`) by Cramer's rule;
/// `None` when the system is singular (a ray parallel to the detector).
fn solve(ndim: usize, u: V3, v: V3, w: V3, r: V3) -> Option<(f64, f64, f64)> {
    if ndim == 2 {
        let d = u[0] * w[1] - u[1] * w[0];
        let scale = (u[0].hypot(u[1]) * w[0].hypot(w[1])).max(f64::MIN_POSITIVE);
        if d.abs() <= 1e-12 * scale {
            return None;
        }
        let a = (r[0] * w[1] - r[1] * w[0]) / d;
        let t = (u[0] * r[1] - u[1] * r[0]) / d;
        return Some((a, 0.0, t));
    }
    let d = det3(u, v, w);
    let norm = |x: V3| (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]).sqrt();
    let scale = (norm(u) * norm(v) * norm(w)).max(f64::MIN_POSITIVE);
    if d.abs() <= 1e-12 * scale {
        return None;
    }
    Some((det3(r, v, w) / d, det3(u, r, w) / d, det3(u, v, r) / d))
}

/// The corners of the box `[min_pt, max_pt]` (2D boxes lie in z = 0).
fn corners(min_pt: &[f64], max_pt: &[f64]) -> Vec<V3> {
    let n = min_pt.len();
    (0..1usize << n)
        .map(|mask| {
            let mut p = [0.0; 3];
            for k in 0..n {
                p[k] = if mask >> k & 1 == 1 {
                    max_pt[k]
                } else {
                    min_pt[k]
                };
            }
            p
        })
        .collect()
}

/// The detector coverage of the box `[min_pt, max_pt]` by `geometry`, view by view, for a flat
/// detector (a curved one is treated as the plane of its centre pixel: the caller checks
/// [`VecGeometry::detector`] first).
pub fn coverage(geometry: &VecGeometry, min_pt: &[f64], max_pt: &[f64]) -> Coverage {
    let ndim = geometry.ndim();
    let half = [geometry.nu() as f64 / 2.0, geometry.nv() as f64 / 2.0];
    let tol = 1e-9;
    let corners = corners(min_pt, max_pt);
    let mut result = Coverage {
        views: geometry.num_views(),
        covered: 0,
        overhang: [0.0, 0.0],
        behind_source: 0,
    };
    for view in geometry.views() {
        let mut inside = true;
        let mut behind = false;
        for &p in &corners {
            // Parallel: p + t d = c + a u + b v.  Point: s + t (p − s) = c + a u + b v.
            let (w, r) = match geometry.beam() {
                Beam::Parallel => (view.src.map(|x| -x), sub(p, view.det_center)),
                Beam::Point => (sub(view.src, p), sub(view.src, view.det_center)),
            };
            match solve(ndim, view.det_u, view.det_v, w, r) {
                Some((a, b, t)) if geometry.beam() == Beam::Parallel || t > 0.0 => {
                    let over_u = a.abs() - half[0];
                    let over_v = if ndim == 3 { b.abs() - half[1] } else { 0.0 };
                    if over_u > tol * half[0] || over_v > tol * half[1] {
                        inside = false;
                    }
                    result.overhang[0] = result.overhang[0].max(over_u);
                    result.overhang[1] = result.overhang[1].max(over_v);
                }
                _ => {
                    inside = false;
                    behind = geometry.beam() == Beam::Point;
                }
            }
        }
        result.covered += usize::from(inside);
        result.behind_source += usize::from(behind);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use rodl::tomo::{cone_beam_geometry, parallel_beam_geometry, Geometry};
    use rodl::{uniform_discr, UniformPartition};
    use std::f64::consts::PI;

    #[test]
    fn odl_parallel_sampling_covers_the_box() {
        let space = uniform_discr::<f32>(&[-1.0, -2.0], &[1.0, 2.0], &[16, 32]).unwrap();
        let g = parallel_beam_geometry(&space, Some(12)).unwrap();
        let c = coverage(g.vec(), &[-1.0, -2.0], &[1.0, 2.0]);
        assert_eq!((c.views, c.covered), (12, 12));
        assert!(c.overhang[0] <= 0.0);
    }

    #[test]
    fn narrow_parallel_detector_covers_only_some_views() {
        // A 2 × 2 square and a detector of half-width 1.2: the shadow's half-width is
        // |cos θ| + |sin θ|, at most 1.2 for θ within 0.2241 rad of a multiple of π/2.
        let angles = UniformPartition::new(&[0.0], &[PI], &[360]).unwrap();
        let det = UniformPartition::new(&[-1.2], &[1.2], &[24]).unwrap();
        let g = Geometry::parallel_2d(&angles, &det).unwrap();
        let c = coverage(g.vec(), &[-1.0, -1.0], &[1.0, 1.0]);
        let expected = (0..360)
            .filter(|&k| {
                let t = (k as f64 + 0.5) * PI / 360.0;
                t.cos().abs() + t.sin().abs() <= 1.2
            })
            .count();
        assert_eq!(c.covered, expected);
        assert!(expected > 0 && expected < 360);
        // Largest shadow: √2 at 45°, i.e. (√2 − 1.2) / 0.1 pixels past the edge.
        assert!((c.overhang[0] - (2f64.sqrt() - 1.2) / 0.1).abs() < 1e-3);
    }

    #[test]
    fn source_inside_the_volume_is_reported() {
        let angles = UniformPartition::new(&[0.0], &[2.0 * PI], &[8]).unwrap();
        let det = UniformPartition::new(&[-50.0], &[50.0], &[100]).unwrap();
        let g = Geometry::fan_flat(&angles, &det, 0.5, 2.0, 0.0).unwrap();
        let c = coverage(g.vec(), &[-1.0, -1.0], &[1.0, 1.0]);
        assert_eq!((c.covered, c.behind_source), (0, 8));
    }

    #[test]
    fn cone_helper_misses_corners_and_height_is_checked() {
        let space = uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[8, 8, 8]).unwrap();
        let g = cone_beam_geometry(&space, 4.0, 4.0, Some(16)).unwrap();
        let c = coverage(g.vec(), &[-1.0; 3], &[1.0; 3]);
        // Its width 2ρ(rs + rd)/rs holds the corners only when none is nearer the source
        // than the centre along the central ray's normal: not at every angle.
        assert!(c.covered < c.views);
        assert!(c.overhang[0] > 0.0);
        // A taller volume than the detector was built for sticks out along v in every view.
        let c = coverage(g.vec(), &[-1.0, -1.0, -3.0], &[1.0, 1.0, 3.0]);
        assert_eq!(c.covered, 0);
        assert!(c.overhang[1] > 0.0);
    }
}
