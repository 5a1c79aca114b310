//! Joseph's method on the CPU: ray-driven forward projection (parallel over views) and its exact
//! transpose (parallel over volume slabs along each ray's dominant axis, so no two threads write
//! the same voxel: no atomics, no per-thread volume copies).
//!
//! The rays of a view are set up once per call (grouped by dominant axis, stored as
//! structure-of-arrays). For `f32` on x86-64 with AVX2 the windowed kernels run
//! ([`super::window2d`], [`super::window3d`]: groups of eight rays fetch their taps with row
//! loads and lane permutes, in blocks of planes). Within them, 2D parallel beams bin their rays
//! by offset and need no permutes ([`super::bins2d`]; detectors much finer than the cells:
//! a cell-by-cell gather, [`super::gather2d`]), and 3D detector columns that share their
//! in-plane track interpolate along it once per plane, on whole rows ([`super::column3d`]).
//! Otherwise, and for classes the windowed 3D kernels do not take, the plane-major kernels of
//! [`super::kernels`] (every plane
//! visited by all rays of a class while it is in cache; portable, with an AVX2 gather version
//! for `f32`). All use the same per-plane interpolation coordinates and weights, so every forward
//! has its exact transpose.

use rayon::prelude::*;

use super::kernels::{self, Plane};
use super::ray::{Grid, Ray};
use crate::tomo::geometry::VecGeometry;
use crate::Scalar;

/// Raw pointer to the volume, shared by the slab tasks of the transpose.
#[derive(Clone, Copy)]
struct VolPtr<T>(*mut T);
// SAFETY: tasks write only to voxels of their own slab (disjoint index sets).
unsafe impl<T: Send> Send for VolPtr<T> {}
unsafe impl<T: Send> Sync for VolPtr<T> {}

#[inline(always)]
fn strides(shape: [usize; 3]) -> [usize; 3] {
    [shape[1] * shape[2], shape[2], 1]
}

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

    /// The per-plane description of class `a`.
    fn plane(&self, a: usize, shape: [usize; 3], st: [usize; 3], three_d: bool) -> Plane {
        let (b, c) = super::ray::other_axes(a);
        Plane {
            stride_b: st[b],
            stride_c: if three_d { st[c] } else { 0 },
            nb: shape[b],
            nc: if three_d { shape[c] } else { 1 },
            three_d,
        }
    }
}

/// The slices as `f32` when `T` is `f32`.
#[cfg(target_arch = "x86_64")]
fn as_f32<'a, T: Scalar>(x: &'a [T], y: &'a mut [T]) -> Option<(&'a [f32], &'a mut [f32])> {
    if std::any::TypeId::of::<T>() != std::any::TypeId::of::<f32>() {
        return None;
    }
    // SAFETY: `T` is `f32` (checked above): the casts are identities.
    unsafe {
        Some((
            std::slice::from_raw_parts(x.as_ptr() as *const f32, x.len()),
            std::slice::from_raw_parts_mut(y.as_mut_ptr() as *mut f32, y.len()),
        ))
    }
}

/// Forward projection: `sino[view, u, v] = w · Σ_planes interp(vol)`, parallel over views and
/// plane-major within a view.
pub(crate) fn forward<T: Scalar>(geom: &VecGeometry, grid: &Grid, vol: &[T], sino: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    if let Some((vol, sino)) = as_f32(vol, sino) {
        if super::window2d::available(geom, grid) {
            return super::window2d::forward(geom, grid, vol, sino);
        }
        if super::window3d::available(geom, grid) {
            return super::window3d::forward(geom, grid, vol, sino);
        }
    }
    forward_planes(geom, grid, vol, sino)
}

/// [`forward`] by the plane-major per-plane kernels (any dimension and scalar type).
pub(crate) fn forward_planes<T: Scalar>(
    geom: &VecGeometry,
    grid: &Grid,
    vol: &[T],
    sino: &mut [T],
) {
    let (nu, nv) = (geom.nu(), geom.nv());
    let shape = grid.shape;
    let st = strides(shape);
    let three_d = geom.ndim() == 3;
    sino.par_chunks_mut(nu * nv).enumerate().for_each_init(
        || (ViewRays::<T>::new(), Vec::<T>::new()),
        |(vr, acc), (view, out)| {
            vr.setup(geom, grid, view);
            acc.clear();
            acc.resize(vr.det.len(), T::zero());
            for a in 0..3 {
                let (k0, k1) = (vr.class[a], vr.class[a + 1]);
                if k0 == k1 {
                    continue;
                }
                let plane = vr.plane(a, shape, st, three_d);
                let (lo, hi) = vr.planes[a];
                for m in lo..hi {
                    let slab = &vol[m * st[a]..];
                    kernels::forward_plane(&plane, slab, m, vr, k0, k1, &mut acc[k0..k1]);
                }
            }
            out.iter_mut().for_each(|o| *o = T::zero());
            for ((&d, &w), &s) in vr.det.iter().zip(&vr.w).zip(acc.iter()) {
                out[d as usize] = s * w;
            }
        },
    );
}

/// The exact transpose of [`forward`]: `vol = Σ_rays w · sino · interpᵀ`.
///
/// Views are taken in blocks whose rays are set up in parallel; then, per dominant axis `a`, the
/// volume is split into slabs of planes along `a` and each task adds, for every ray of the block
/// with dominant axis `a`, the contributions to the planes of its own slab: tasks never write the
/// same voxel.
pub(crate) fn transpose<T: Scalar>(
    geom: &VecGeometry,
    grid: &Grid,
    sino: &[T],
    vol: &mut [T],
    tasks: usize,
) {
    #[cfg(target_arch = "x86_64")]
    if let Some((sino, vol)) = as_f32(sino, vol) {
        if super::window2d::available(geom, grid) {
            return super::window2d::transpose(geom, grid, sino, vol);
        }
        if super::window3d::available(geom, grid) {
            return super::window3d::transpose(geom, grid, sino, vol, tasks);
        }
    }
    transpose_planes(geom, grid, sino, vol, tasks)
}

/// [`transpose`] by the plane-major per-plane kernels (any dimension and scalar type).
pub(crate) fn transpose_planes<T: Scalar>(
    geom: &VecGeometry,
    grid: &Grid,
    sino: &[T],
    vol: &mut [T],
    tasks: usize,
) {
    vol.iter_mut().for_each(|x| *x = T::zero());
    let (nu, nv) = (geom.nu(), geom.nv());
    let shape = grid.shape;
    let st = strides(shape);
    let three_d = geom.ndim() == 3;
    let len = vol.len();
    let ptr = VolPtr(vol.as_mut_ptr());
    let block = tasks.max(1);
    let mut views: Vec<ViewRays<T>> = (0..block).map(|_| ViewRays::new()).collect();
    for first in (0..geom.num_views()).step_by(block) {
        let count = block.min(geom.num_views() - first);
        views[..count]
            .par_iter_mut()
            .enumerate()
            .for_each(|(k, vr)| {
                let view = first + k;
                vr.setup(geom, grid, view);
                vr.set_coefficients(&sino[view * nu * nv..(view + 1) * nu * nv]);
            });
        for a in 0..geom.ndim() {
            let n_a = shape[a];
            let k = tasks.clamp(1, n_a);
            let views = &views[..count];
            (0..k).into_par_iter().for_each(|t| {
                let (p, q) = (t * n_a / k, (t + 1) * n_a / k);
                let ptr = &ptr;
                for vr in views {
                    let (k0, k1) = (vr.class[a], vr.class[a + 1]);
                    if k0 == k1 {
                        continue;
                    }
                    let plane = vr.plane(a, shape, st, three_d);
                    let (lo, hi) = vr.planes[a];
                    for m in lo.max(p)..hi.min(q) {
                        let off = m * st[a];
                        debug_assert!(off < len);
                        // SAFETY: plane `m` of axis `a`, `p <= m < q`, is written only by this
                        // task in this pass; the kernel writes only in-grid voxels of that plane.
                        unsafe { kernels::transpose_plane(&plane, ptr.0.add(off), m, vr, k0, k1) };
                    }
                }
            });
        }
    }
}
/// The detector indices of the column (`nv` rows) of detector index `det`: membership is a
/// range check, one division per column instead of one per ray.
pub(super) fn detector_column(det: u32, nv: usize) -> std::ops::Range<usize> {
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
