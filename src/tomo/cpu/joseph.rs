//! Joseph's method on the CPU: ray-driven forward projection (parallel over views) and its exact
//! transpose (parallel over volume slabs along each ray's dominant axis, so no two threads write
//! the same voxel: no atomics, no per-thread volume copies).
//!
//! The rays of a view are set up once per call (grouped by dominant axis, stored as
//! structure-of-arrays). For `f32` on x86-64 with AVX2 the windowed kernels run
//! ([`super::window2d`], [`super::window3d`]: groups of eight rays fetch their taps with row
//! loads and lane permutes, in blocks of planes); otherwise, and for classes the windowed 3D
//! kernels do not take, the plane-major kernels of [`super::kernels`] (every plane visited by
//! all rays of a class while it is in cache; portable, with an AVX2 gather version for `f32`).
//! All use the same per-plane interpolation coordinates and weights, so every forward has its
//! exact transpose.

use rayon::prelude::*;

use super::kernels::{self, Plane};
use super::ray::{Grid, Ray};
use crate::tomo::geometry::{Beam, VecGeometry};
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
    /// Scratch of [`Self::setup`]: the rays in detector order with their detector index.
    tmp: Vec<(Ray<T>, u32)>,
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
            tmp: Vec::new(),
        }
    }

    pub(crate) fn setup(&mut self, geom: &VecGeometry, grid: &Grid, view: usize) {
        let (nu, nv) = (geom.nu(), geom.nv());
        for v in [
            &mut self.fb0,
            &mut self.sb,
            &mut self.fc0,
            &mut self.sc,
            &mut self.w,
        ] {
            v.clear();
        }
        self.m0.clear();
        self.m1.clear();
        self.det.clear();
        // All rays first (reused buffer), then placed class by class.
        self.tmp.clear();
        let mut count = [0usize; 3];
        // A parallel-beam view has one direction: its part of the set-up is done once.
        let shared = match geom.beam() {
            Beam::Parallel => {
                let (_, d) = geom.ray(view, 0, 0);
                Some((d, grid.direction(&d, geom.ndim())))
            }
            Beam::Point => None,
        };
        for iu in 0..nu {
            for iv in 0..nv {
                let r = match &shared {
                    Some((d, dir)) => dir.as_ref().and_then(|dir| {
                        let (q, _) = geom.ray(view, iu, iv);
                        grid.ray_at::<T>(&q, d, dir)
                    }),
                    None => grid.ray::<T>(geom, view, iu, iv),
                };
                if let Some(r) = r {
                    count[r.a] += 1;
                    self.tmp.push((r, (iu * nv + iv) as u32));
                }
            }
        }
        let total = self.tmp.len();
        self.fb0.resize(total, T::zero());
        self.sb.resize(total, T::zero());
        self.fc0.resize(total, T::zero());
        self.sc.resize(total, T::zero());
        self.w.resize(total, T::zero());
        self.m0.resize(total, 0);
        self.m1.resize(total, 0);
        self.det.resize(total, 0);
        let mut next = [0, count[0], count[0] + count[1]];
        self.class = [0, count[0], count[0] + count[1], total];
        let mut range = [(usize::MAX, 0usize); 3];
        for (r, d) in &self.tmp {
            let k = next[r.a];
            next[r.a] += 1;
            self.fb0[k] = r.fb0;
            self.sb[k] = r.sb;
            self.fc0[k] = r.fc0;
            self.sc[k] = r.sc;
            self.w[k] = r.w;
            self.m0[k] = r.m0 as u32;
            self.m1[k] = r.m1 as u32;
            self.det[k] = *d;
            let (lo, hi) = &mut range[r.a];
            *lo = (*lo).min(r.m0);
            *hi = (*hi).max(r.m1);
        }
        for a in 0..3 {
            let (lo, hi) = range[a];
            self.planes[a] = if lo < hi { (lo, hi) } else { (0, 0) };
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
        let mut order: Vec<usize> = Vec::new();
        self.groups.clear();
        for a in 0..3 {
            self.gclass[a] = self.groups.len();
            let (k0, k1) = (self.class[a], self.class[a + 1]);
            if k0 == k1 {
                continue;
            }
            let (lo, hi) = self.planes[a];
            let mid = T::from_index((lo + hi) / 2);
            order.clear();
            if nv == 1 {
                let key = |k: usize| self.fb0[k] + mid * self.sb[k];
                order.extend(k0..k1);
                if !order.windows(2).all(|w| key(w[0]) <= key(w[1])) {
                    order.sort_by(|&x, &y| {
                        key(x)
                            .partial_cmp(&key(y))
                            .unwrap_or(std::cmp::Ordering::Equal)
                    });
                }
            } else {
                let key = |k: usize| self.fc0[k] + mid * self.sc[k];
                let mut r0 = k0;
                while r0 < k1 {
                    let col = self.det[r0] as usize / nv;
                    let mut r1 = r0 + 1;
                    while r1 < k1 && self.det[r1] as usize / nv == col {
                        r1 += 1;
                    }
                    if key(r1 - 1) < key(r0) {
                        order.extend((r0..r1).rev());
                    } else {
                        order.extend(r0..r1);
                    }
                    r0 = r1;
                }
            }
            if order.iter().enumerate().any(|(j, &k)| k != k0 + j) {
                fn permute<U: Copy>(v: &mut [U], k0: usize, order: &[usize]) {
                    let seg: Vec<U> = order.iter().map(|&k| v[k]).collect();
                    v[k0..k0 + seg.len()].copy_from_slice(&seg);
                }
                permute(&mut self.fb0, k0, &order);
                permute(&mut self.sb, k0, &order);
                permute(&mut self.fc0, k0, &order);
                permute(&mut self.sc, k0, &order);
                permute(&mut self.w, k0, &order);
                permute(&mut self.m0, k0, &order);
                permute(&mut self.m1, k0, &order);
                permute(&mut self.det, k0, &order);
            }
            // Groups of 8 within runs (the whole class in 2D, one detector column otherwise).
            let mut r0 = k0;
            while r0 < k1 {
                let mut r1 = r0 + 1;
                if nv == 1 {
                    r1 = k1;
                } else {
                    let col = self.det[r0] as usize / nv;
                    while r1 < k1 && self.det[r1] as usize / nv == col {
                        r1 += 1;
                    }
                }
                for k in (r0..r1).step_by(8) {
                    let e = (k + 8).min(r1);
                    self.groups.push(Group {
                        k: k as u32,
                        len: (e - k) as u32,
                        lo: self.m0[k..e].iter().copied().min().unwrap_or(0),
                        hi: self.m1[k..e].iter().copied().max().unwrap_or(0),
                    });
                }
                r0 = r1;
            }
        }
        self.gclass[3] = self.groups.len();
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
