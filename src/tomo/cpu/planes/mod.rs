//! Plane-major Joseph kernels, for any dimension and scalar type: every plane is visited by all
//! rays of a class (dominant axis) while it is in cache, with the per-plane kernels of
//! [`kernels`] (portable, with an AVX2 gather version for `f32` in [`avx2`]); the weighted
//! transpose of 2D fan-beam FBP in [`weighted`].
//!
//! The forward runs in parallel over views; the transpose over slabs of planes along each
//! dominant axis, so no two tasks write the same voxel (no atomics, no per-thread copies).

#[cfg(target_arch = "x86_64")]
mod avx2;
mod kernels;
mod plane;
mod weighted;

pub(crate) use kernels::{forward_plane, transpose_plane};
pub(crate) use plane::Plane;
pub(crate) use weighted::transpose_weighted;

use rayon::prelude::*;

use crate::tomo::cpu::send_ptr::SendPtr;
use crate::tomo::cpu::view_rays::ViewRays;
use crate::tomo::geometry::VecGeometry;
use crate::tomo::grid::Grid;
use crate::Scalar;

#[inline(always)]
fn strides(shape: [usize; 3]) -> [usize; 3] {
    [shape[1] * shape[2], shape[2], 1]
}

/// Forward projection: `sino[view, u, v] = w · Σ_planes interp(vol)`, parallel over views and
/// plane-major within a view.
pub(crate) fn forward<T: Scalar>(geom: &VecGeometry, grid: &Grid, vol: &[T], sino: &mut [T]) {
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
                let plane = Plane::new(a, shape, st, three_d);
                let (lo, hi) = vr.planes[a];
                for m in lo..hi {
                    let slab = &vol[m * st[a]..];
                    forward_plane(&plane, slab, m, vr, k0, k1, &mut acc[k0..k1]);
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
    vol.iter_mut().for_each(|x| *x = T::zero());
    let (nu, nv) = (geom.nu(), geom.nv());
    let shape = grid.shape;
    let st = strides(shape);
    let three_d = geom.ndim() == 3;
    let len = vol.len();
    let ptr = SendPtr::new(vol);
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
                    let plane = Plane::new(a, shape, st, three_d);
                    let (lo, hi) = vr.planes[a];
                    for m in lo.max(p)..hi.min(q) {
                        let off = m * st[a];
                        debug_assert!(off < len);
                        // SAFETY: plane `m` of axis `a`, `p <= m < q`, is written only by this
                        // task in this pass; the kernel writes only in-grid voxels of that plane.
                        unsafe {
                            transpose_plane(&plane, ptr.as_mut_ptr().add(off), m, vr, k0, k1)
                        };
                    }
                }
            });
        }
    }
}
