//! Which detector rows can see a box of the volume: the band of rays a piece of a split
//! transform needs to launch, and the volume axis along which slabs make such bands narrow.

use std::ops::Range;

use super::vec::{Beam, VecGeometry};

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// Detector rows of margin on each side of a band, for the rounding of the projected corners
/// against the kernels' own ray set-up.
const BAND_MARGIN: f64 = 1.0;

impl VecGeometry {
    /// The volume axis best aligned with the detector's `v` axis over all views (3D; axis 0 in
    /// 2D): the rotation axis of circular and helical scans (axis 2 for ODL's default), along
    /// which a slab of the volume is seen by a band of detector rows rather than by all of them.
    pub(crate) fn slab_axis(&self) -> usize {
        if self.ndim() != 3 {
            return 0;
        }
        let mut weight = [0.0f64; 3];
        for v in self.views() {
            let n = dot(v.det_v, v.det_v).sqrt();
            if n > 0.0 {
                for (w, c) in weight.iter_mut().zip(v.det_v) {
                    *w += (c / n).abs();
                }
            }
        }
        let mut best = 0;
        for k in 1..3 {
            if weight[k] > weight[best] {
                best = k;
            }
        }
        best
    }

    /// The detector rows whose rays can pass through the box `[min, max]` (world coordinates)
    /// in any of the views `views`, conservatively: the rows between the lowest and the highest
    /// detector row coordinate of the box's eight corners in each view (the image of a box is
    /// the convex hull of its corners' images, for a parallel beam and for a point source with
    /// the whole box in front of it), widened by [`BAND_MARGIN`] rows each side and clipped to
    /// the detector. All rows where that does not apply: 2D geometries, a detector parallel to
    /// the rays, a curved detector, a corner at or behind the source, views out of range,
    /// anything not finite. The
    /// caller widens the box by the interpolation's reach (a ray reads cells up to one cell
    /// side away from its path). An empty range means that no ray of these views meets the box.
    pub(crate) fn rows_through(
        &self,
        views: Range<usize>,
        min: [f64; 3],
        max: [f64; 3],
    ) -> Range<usize> {
        let nv = self.nv();
        let all = 0..nv;
        let Some(chosen) = self.views().get(views) else {
            return all;
        };
        // A curved detector's rows are not the projective image of a plane: all rows.
        if self.ndim() != 3 || chosen.is_empty() || self.detector().is_curved() {
            return all;
        }
        let centre = 0.5 * (nv as f64 - 1.0);
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in chosen {
            let normal = cross(v.det_u, v.det_v);
            // The normal equations of the detector's (u, v) coordinates.
            let (uu, uv, vv) = (
                dot(v.det_u, v.det_u),
                dot(v.det_u, v.det_v),
                dot(v.det_v, v.det_v),
            );
            let det = uu * vv - uv * uv;
            if !(det.abs() > 1e-300) {
                return all;
            }
            for corner in 0..8 {
                let p = [0, 1, 2].map(|k| if corner >> k & 1 == 0 { min[k] } else { max[k] });
                // The point where the ray through p meets the detector plane.
                let q = match self.beam() {
                    Beam::Parallel => {
                        let dn = dot(v.src, normal);
                        if !(dn.abs() > 1e-300) {
                            return all;
                        }
                        let t = dot(sub(v.det_center, p), normal) / dn;
                        [0, 1, 2].map(|k| p[k] + t * v.src[k])
                    }
                    Beam::Point => {
                        let to_p = dot(sub(p, v.src), normal);
                        let to_det = dot(sub(v.det_center, v.src), normal);
                        let lambda = to_det / to_p;
                        // The corner must lie strictly between the source's plane and beyond
                        // it on the detector's side.
                        if !(lambda > 0.0 && lambda.is_finite() && to_p * to_det > 0.0) {
                            return all;
                        }
                        [0, 1, 2].map(|k| v.src[k] + lambda * (p[k] - v.src[k]))
                    }
                };
                let w = sub(q, v.det_center);
                let (wu, wv) = (dot(w, v.det_u), dot(w, v.det_v));
                let cv = (uu * wv - uv * wu) / det;
                let row = cv + centre;
                if !row.is_finite() {
                    return all;
                }
                lo = lo.min(row);
                hi = hi.max(row);
            }
        }
        let first = (lo - BAND_MARGIN).ceil().max(0.0);
        let last = (hi + BAND_MARGIN).floor().min(nv as f64 - 1.0);
        if last < first {
            return 0..0;
        }
        first as usize..last as usize + 1
    }
}

#[cfg(test)]
mod tests {
    use crate::tomo::Geometry;
    use crate::UniformPartition;

    fn cone(nv: usize) -> Geometry {
        let part = |lo: &[f64], hi: &[f64], n: &[usize]| UniformPartition::new(lo, hi, n).unwrap();
        Geometry::cone_flat(
            &part(&[0.0], &[std::f64::consts::TAU], &[16]),
            &part(&[-3.0, -3.0], &[3.0, 3.0], &[48, nv]),
            4.0,
            4.0,
            0.0,
            [0.0, 0.0, 1.0],
            [0.0, 0.0],
        )
        .unwrap()
    }

    #[test]
    fn circular_cones_slab_along_the_rotation_axis() {
        assert_eq!(cone(32).vec().slab_axis(), 2);
    }

    #[test]
    fn every_ray_through_the_box_is_in_its_band() {
        let g = cone(64);
        let v = g.vec();
        // A slab of the unit cube near its top, seen by a band of rows.
        let (min, max) = ([-1.0, -1.0, 0.5], [1.0, 1.0, 0.75]);
        let band = v.rows_through(0..16, min, max);
        assert!(!band.is_empty() && band.len() < 64, "{band:?}");
        // Sample the rays of every row: those that cross the box are in the band.
        for view in 0..16 {
            for iu in 0..48 {
                for iv in 0..64 {
                    let (q, d) = v.ray(view, iu, iv);
                    let hits = (0..=400).any(|s| {
                        let t = -1.5 + s as f64 * 0.00375 * 1.0;
                        let p = [0, 1, 2].map(|k| q[k] + t * d[k]);
                        (0..3).all(|k| p[k] >= min[k] && p[k] <= max[k])
                    });
                    assert!(!hits || band.contains(&iv), "view {view} row {iv} {band:?}");
                }
            }
        }
    }

    #[test]
    fn boxes_no_ray_meets_have_empty_bands() {
        let g = cone(64);
        // Far above the detector's top row (rows reach ±3 at the detector, ±1.5 at the axis).
        assert!(g
            .vec()
            .rows_through(0..16, [-0.1, -0.1, 3.5], [0.1, 0.1, 3.6])
            .is_empty());
        // The source inside the box: every row.
        assert_eq!(g.vec().rows_through(0..1, [-5.0; 3], [5.0; 3]), 0..64);
    }
}
