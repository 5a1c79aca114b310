//! Joseph's method on the CPU: ray-driven forward projection (parallel over views) and its exact
//! transpose (parallel over volume slabs along each ray's dominant axis, so no two threads write
//! the same voxel: no atomics, no per-thread volume copies).

use rayon::prelude::*;

use super::ray::{other_axes, Grid, Ray};
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

/// Linear interpolation set-up at plane `m`: lower index and the two weights.
#[inline(always)]
fn interp<T: Scalar>(f0: T, s: T, m: T) -> (isize, T, T) {
    let f = f0 + m * s;
    let fl = f.floor();
    let t = f - fl;
    (fl.as_isize(), T::one() - t, t)
}

/// Calls `visit(voxel index, interpolation weight)` for every voxel that plane `m` of the ray
/// touches. The order and the weights are the same for the forward projection and the transpose.
#[inline(always)]
fn for_each_tap<T: Scalar>(
    ray: &Ray<T>,
    m: usize,
    shape: [usize; 3],
    st: [usize; 3],
    three_d: bool,
    mut visit: impl FnMut(usize, T),
) {
    let (b, c) = other_axes(ray.a);
    let mt = T::from_index(m);
    let (ib, wb0, wb1) = interp(ray.fb0, ray.sb, mt);
    let nb = shape[b] as isize;
    let base = m * st[ray.a];
    if !three_d {
        if ib >= 0 && ib + 1 < nb {
            let i = base + ib as usize * st[b];
            visit(i, wb0);
            visit(i + st[b], wb1);
        } else {
            if ib >= 0 && ib < nb {
                visit(base + ib as usize * st[b], wb0);
            }
            if ib + 1 >= 0 && ib + 1 < nb {
                visit(base + (ib + 1) as usize * st[b], wb1);
            }
        }
        return;
    }
    let (ic, wc0, wc1) = interp(ray.fc0, ray.sc, mt);
    let nc = shape[c] as isize;
    if ib >= 0 && ib + 1 < nb && ic >= 0 && ic + 1 < nc {
        let i = base + ib as usize * st[b] + ic as usize * st[c];
        visit(i, wb0 * wc0);
        visit(i + st[c], wb0 * wc1);
        visit(i + st[b], wb1 * wc0);
        visit(i + st[b] + st[c], wb1 * wc1);
        return;
    }
    for (jb, wb) in [(ib, wb0), (ib + 1, wb1)] {
        if jb < 0 || jb >= nb {
            continue;
        }
        for (jc, wc) in [(ic, wc0), (ic + 1, wc1)] {
            if jc < 0 || jc >= nc {
                continue;
            }
            visit(base + jb as usize * st[b] + jc as usize * st[c], wb * wc);
        }
    }
}

/// Forward projection: `sino[view, u, v] = Σ_planes w · interp(vol)`.
pub(crate) fn forward<T: Scalar>(geom: &VecGeometry, grid: &Grid, vol: &[T], sino: &mut [T]) {
    let (nu, nv) = (geom.nu(), geom.nv());
    let shape = grid.shape;
    let st = strides(shape);
    let three_d = geom.ndim() == 3;
    sino.par_chunks_mut(nu * nv)
        .enumerate()
        .for_each(|(view, out)| {
            for iu in 0..nu {
                for iv in 0..nv {
                    let Some(ray) = grid.ray::<T>(geom, view, iu, iv) else {
                        out[iu * nv + iv] = T::zero();
                        continue;
                    };
                    let mut acc = T::zero();
                    for m in ray.m0..ray.m1 {
                        for_each_tap(&ray, m, shape, st, three_d, |i, w| acc += w * vol[i]);
                    }
                    out[iu * nv + iv] = acc * ray.w;
                }
            }
        });
}

/// The exact transpose of [`forward`]: `vol = Σ_rays w · sino · interpᵀ`.
///
/// One pass per dominant axis `a`; in each pass the volume is split into slabs along `a` and
/// each task handles, for every ray whose dominant axis is `a`, the planes inside its slab.
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
    let ptr = VolPtr(vol.as_mut_ptr());
    for a in 0..geom.ndim() {
        let n_a = shape[a];
        let k = tasks.clamp(1, n_a);
        (0..k).into_par_iter().for_each(|t| {
            let (p, q) = (t * n_a / k, (t + 1) * n_a / k);
            let ptr = ptr;
            for view in 0..geom.num_views() {
                let row = &sino[view * nu * nv..(view + 1) * nu * nv];
                for iu in 0..nu {
                    for iv in 0..nv {
                        let s = row[iu * nv + iv];
                        if s == T::zero() {
                            continue;
                        }
                        let Some(ray) = grid.ray::<T>(geom, view, iu, iv) else {
                            continue;
                        };
                        if ray.a != a {
                            continue;
                        }
                        let coef = ray.w * s;
                        for m in ray.m0.max(p)..ray.m1.min(q) {
                            for_each_tap(&ray, m, shape, st, three_d, |i, w| {
                                debug_assert!(i < len);
                                // SAFETY: `i` lies in plane `m` of axis `a`, and `p <= m < q`:
                                // only this task writes to that plane in this pass; `i < len`
                                // because every tap index is bounds-checked against the grid.
                                unsafe { *ptr.0.add(i) += coef * w };
                            });
                        }
                    }
                }
            }
        });
    }
}
