//! The rays of one view as the kernels take them: set up once per view and call (grouped by
//! dominant axis, structure of arrays), ordered and grouped by eight for the SIMD kernels, with
//! the back-projection coefficients of the transpose.

use super::ray::Ray;
use crate::tomo::geometry::VecGeometry;
use crate::tomo::grid::Grid;
use crate::{Scalar, ScalarFamily};

/// The rays of one view that hit the grid, grouped by dominant axis, as structure of arrays
/// (reusable buffers).
pub(crate) struct ViewRays<T> {
    pub(crate) fb0: Vec<T>,
    pub(crate) sb: Vec<T>,
    pub(crate) fc0: Vec<T>,
    pub(crate) sc: Vec<T>,
    pub(crate) w: Vec<T>,
    pub(crate) m0: Vec<u32>,
    pub(crate) m1: Vec<u32>,
    /// Detector index (`iu * nv + iv`) of each ray.
    pub(crate) det: Vec<u32>,
    /// Back-projection coefficients `w · sino[det]` (transpose only).
    pub(crate) coef: Vec<T>,
    /// Rays `class[a]..class[a + 1]` have dominant axis `a`.
    pub(crate) class: [usize; 4],
    /// Plane range `[lo, hi)` of each class.
    pub(crate) planes: [(usize, usize); 3],
    /// Groups of up to 8 consecutive rays of a class that the SIMD kernels take together, set
    /// by [`Self::orient`]; groups `gclass[a]..gclass[a + 1]` belong to class `a`.
    pub(crate) groups: Vec<Group>,
    /// See `groups`.
    pub(crate) gclass: [usize; 4],
    /// Dominant axis of each ray in detector order (scratch of [`Self::setup`]).
    axis: Vec<u8>,
    /// A permutation of rays (scratch).
    order: Vec<usize>,
    /// Scratch for reordering the arrays.
    scratch_t: Vec<T>,
    /// See `scratch_t`.
    scratch_u: Vec<u32>,
}

/// Up to 8 consecutive rays `k..k + len` of a class, and the union `[lo, hi)` of their plane
/// ranges.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Group {
    pub(crate) k: u32,
    pub(crate) len: u32,
    pub(crate) lo: u32,
    pub(crate) hi: u32,
}

/// The [`ScalarFamily`] of [`ViewRays`]: with it [`Scalar::as_f32`] turns a `&ViewRays<T>`
/// into the `&ViewRays<f32>` of the `f32`-only kernels when `T` is `f32`.
pub(crate) struct ViewRaysOf;

impl ScalarFamily for ViewRaysOf {
    type Of<T: Scalar> = ViewRays<T>;
}

impl<T: Scalar> ViewRays<T> {
    pub(crate) fn new() -> Self {
        Self {
            fb0: Vec::new(),
            sb: Vec::new(),
            fc0: Vec::new(),
            sc: Vec::new(),
            w: Vec::new(),
            m0: Vec::new(),
            m1: Vec::new(),
            det: Vec::new(),
            coef: Vec::new(),
            class: [0; 4],
            planes: [(0, 0); 3],
            groups: Vec::new(),
            gclass: [0; 4],
            axis: Vec::new(),
            order: Vec::new(),
            scratch_t: Vec::new(),
            scratch_u: Vec::new(),
        }
    }

    pub(crate) fn setup(&mut self, geom: &VecGeometry, grid: &Grid, view: usize) {
        // At most one ray per detector pixel: written into the spare capacity, then the lengths
        // set (no per-ray capacity checks and length updates in nine vectors).
        let n = geom.nu() * geom.nv();
        for v in self.floats() {
            v.clear();
            v.reserve(n);
        }
        for v in self.indices() {
            v.clear();
            v.reserve(n);
        }
        self.axis.clear();
        self.axis.reserve(n);
        let mut count = [0usize; 3];
        let mut range = [(usize::MAX, 0usize); 3];
        let mut k = 0;
        {
            let fb0 = self.fb0.spare_capacity_mut();
            let sb = self.sb.spare_capacity_mut();
            let fc0 = self.fc0.spare_capacity_mut();
            let sc = self.sc.spare_capacity_mut();
            let w = self.w.spare_capacity_mut();
            let m0 = self.m0.spare_capacity_mut();
            let m1 = self.m1.spare_capacity_mut();
            let det = self.det.spare_capacity_mut();
            let axis = self.axis.spare_capacity_mut();
            // The rays in detector order; placed class by class below.
            grid.view_rays::<T>(geom, view, |r: Ray<T>, d: usize| {
                fb0[k].write(r.fb0);
                sb[k].write(r.sb);
                fc0[k].write(r.fc0);
                sc[k].write(r.sc);
                w[k].write(r.w);
                m0[k].write(r.m0 as u32);
                m1[k].write(r.m1 as u32);
                det[k].write(d as u32);
                axis[k].write(r.a as u8);
                k += 1;
                count[r.a] += 1;
                let (lo, hi) = &mut range[r.a];
                *lo = (*lo).min(r.m0);
                *hi = (*hi).max(r.m1);
            });
        }
        // SAFETY: elements `0..k` of every vector were written above.
        unsafe {
            self.fb0.set_len(k);
            self.sb.set_len(k);
            self.fc0.set_len(k);
            self.sc.set_len(k);
            self.w.set_len(k);
            self.m0.set_len(k);
            self.m1.set_len(k);
            self.det.set_len(k);
            self.axis.set_len(k);
        }
        let total = self.det.len();
        self.class = [0, count[0], count[0] + count[1], total];
        for a in 0..3 {
            let (lo, hi) = range[a];
            self.planes[a] = if lo < hi { (lo, hi) } else { (0, 0) };
        }
        if count.iter().filter(|&&c| c > 0).count() > 1 {
            // Stable partition by dominant axis.
            let mut next = [0, count[0], count[0] + count[1]];
            self.order.clear();
            self.order.resize(total, 0);
            for (k, &a) in self.axis.iter().enumerate() {
                self.order[next[a as usize]] = k;
                next[a as usize] += 1;
            }
            self.apply_order(0);
        }
    }

    /// The rays' floating-point parameters.
    fn floats(&mut self) -> [&mut Vec<T>; 5] {
        [
            &mut self.fb0,
            &mut self.sb,
            &mut self.fc0,
            &mut self.sc,
            &mut self.w,
        ]
    }

    /// The rays' plane ranges and detector indices.
    fn indices(&mut self) -> [&mut Vec<u32>; 3] {
        [&mut self.m0, &mut self.m1, &mut self.det]
    }

    /// Reorders rays `k0..k0 + order.len()` so that ray `k0 + j` becomes ray `order[j]`.
    fn apply_order(&mut self, k0: usize) {
        let order = std::mem::take(&mut self.order);
        let (mut st, mut su) = (
            std::mem::take(&mut self.scratch_t),
            std::mem::take(&mut self.scratch_u),
        );
        // Runs of consecutive indices (a detector column's rays move together) are copied whole.
        let runs = Runs(&order);
        for v in self.floats() {
            st.clear();
            runs.gather(v, &mut st);
            v[k0..k0 + st.len()].copy_from_slice(&st);
        }
        for v in self.indices() {
            su.clear();
            runs.gather(v, &mut su);
            v[k0..k0 + su.len()].copy_from_slice(&su);
        }
        (self.order, self.scratch_t, self.scratch_u) = (order, st, su);
    }

    /// Reverses the order of rays `k0..k1`.
    fn reverse(&mut self, k0: usize, k1: usize) {
        for v in self.floats() {
            v[k0..k1].reverse();
        }
        for v in self.indices() {
            v[k0..k1].reverse();
        }
    }

    pub(crate) fn set_coefficients(&mut self, row: &[T]) {
        self.coef.clear();
        self.coef.extend(
            self.det
                .iter()
                .zip(&self.w)
                .map(|(&d, &w)| w * row[d as usize]),
        );
    }

    /// Orders the rays for the SIMD kernels and forms their groups of 8 (call before
    /// [`Self::set_coefficients`]). With one detector row (`nv = 1`, 2D) the rays of a class are
    /// sorted by their in-plane coordinate `b` at the class's middle plane, so that neighbouring
    /// lanes tap neighbouring cells. With several rows, the rays of one detector column (same
    /// `iu`, consecutive `iv`) stay together, ascending in `c` (a column's rays share their `b`
    /// track in circular and helical cone beams), and groups do not straddle columns.
    pub(crate) fn orient(&mut self, nv: usize) {
        self.groups.clear();
        for a in 0..3 {
            self.gclass[a] = self.groups.len();
            let (k0, k1) = (self.class[a], self.class[a + 1]);
            if k0 == k1 {
                continue;
            }
            let (lo, hi) = self.planes[a];
            let mid = T::from_index((lo + hi) / 2);
            if nv == 1 {
                let key = |s: &Self, k: usize| s.fb0[k] + mid * s.sb[k];
                let ascending = (k0 + 1..k1).all(|k| key(self, k - 1) <= key(self, k));
                if !ascending {
                    if (k0 + 1..k1).all(|k| key(self, k - 1) >= key(self, k)) {
                        self.reverse(k0, k1);
                    } else {
                        let mut order = std::mem::take(&mut self.order);
                        order.clear();
                        order.extend(k0..k1);
                        order.sort_by(|&x, &y| {
                            key(self, x)
                                .partial_cmp(&key(self, y))
                                .unwrap_or(std::cmp::Ordering::Equal)
                        });
                        self.order = order;
                        self.apply_order(k0);
                    }
                }
                self.push_groups(k0, k1);
            } else {
                let key = |s: &Self, k: usize| s.fc0[k] + mid * s.sc[k];
                let mut r0 = k0;
                while r0 < k1 {
                    let col = detector_column(self.det[r0], nv);
                    let mut r1 = r0 + 1;
                    while r1 < k1 && col.contains(&(self.det[r1] as usize)) {
                        r1 += 1;
                    }
                    if key(self, r1 - 1) < key(self, r0) {
                        self.reverse(r0, r1);
                    }
                    self.push_groups(r0, r1);
                    r0 = r1;
                }
            }
        }
        self.gclass[3] = self.groups.len();
    }

    /// Groups of 8 of the rays `r0..r1` (the last one shorter).
    fn push_groups(&mut self, r0: usize, r1: usize) {
        for k in (r0..r1).step_by(8) {
            let e = (k + 8).min(r1);
            self.groups.push(Group {
                k: k as u32,
                len: (e - k) as u32,
                lo: self.m0[k..e].iter().copied().min().unwrap_or(0),
                hi: self.m1[k..e].iter().copied().max().unwrap_or(0),
            });
        }
    }

    /// Leaves the rays in their set-up order without groups, for kernels that need neither
    /// (instead of [`Self::orient`]).
    pub(crate) fn no_groups(&mut self) {
        self.groups.clear();
        self.gclass = [0; 4];
    }
}

/// The detector indices of the column (`nv` rows) of detector index `det`: membership is a
/// range check, one division per column instead of one per ray.
pub(crate) fn detector_column(det: u32, nv: usize) -> std::ops::Range<usize> {
    let start = det as usize / nv * nv;
    start..start + nv
}

/// An order of indices, read as runs of consecutive indices.
struct Runs<'a>(&'a [usize]);

impl Runs<'_> {
    /// Appends `v[k]` for every index `k` of the order to `out`, a run at a time.
    fn gather<X: Copy>(&self, v: &[X], out: &mut Vec<X>) {
        let o = self.0;
        let mut i = 0;
        while i < o.len() {
            let mut j = i + 1;
            while j < o.len() && o[j] == o[j - 1] + 1 {
                j += 1;
            }
            out.extend_from_slice(&v[o[i]..o[i] + (j - i)]);
            i = j;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Runs;

    #[test]
    fn runs_gather_in_order() {
        let v: Vec<u32> = (10..20).collect();
        let mut out = Vec::new();
        Runs(&[3, 4, 5, 0, 1, 9, 7, 8, 2]).gather(&v, &mut out);
        assert_eq!(out, [13, 14, 15, 10, 11, 19, 17, 18, 12]);
        out.clear();
        Runs(&[]).gather(&v, &mut out);
        assert!(out.is_empty());
    }
}
