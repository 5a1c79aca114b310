//! The weighted transpose of 2D fan-beam FBP for any scalar type, plane-major (the portable
//! form of `avx2_2d::weighted`): every tap of the plain transpose also carries the weight
//! `c₀ − x₀ c₁ − x₁ c₂` at its voxel's centre, `c_k` per ray. The taps and weights are those of
//! [`super::kernels`], so the sum is the three back-projections' to rounding.

use rayon::prelude::*;

use super::kernels::split;
use super::strides;
use crate::tomo::cpu::send_ptr::SendPtr;
use crate::tomo::cpu::view_rays::ViewRays;
use crate::tomo::geometry::VecGeometry;
use crate::tomo::grid::Grid;
use crate::Scalar;

/// `vol[x] = Σ_rays w · interpᵀ · (c₀ − x₀ c₁ − x₁ c₂)` over the rays of the 2D `geom`, `c_k`
/// the ray's entry of `rows[k]` (shaped as the sinogram) and `x` the voxel's centre; `tasks`
/// slabs of planes per dominant axis.
pub(crate) fn transpose_weighted<T: Scalar>(
    geom: &VecGeometry,
    grid: &Grid,
    rows: [&[T]; 3],
    vol: &mut [T],
    tasks: usize,
) {
    vol.iter_mut().for_each(|x| *x = T::zero());
    let nu = geom.nu();
    let shape = grid.shape;
    let st = strides(shape);
    let ptr = SendPtr::new(vol);
    let block = tasks.max(1);
    let mut views: Vec<(ViewRays<T>, [Vec<T>; 2])> = (0..block)
        .map(|_| (ViewRays::new(), [Vec::new(), Vec::new()]))
        .collect();
    for first in (0..geom.num_views()).step_by(block) {
        let count = block.min(geom.num_views() - first);
        views[..count]
            .par_iter_mut()
            .enumerate()
            .for_each(|(k, (vr, c))| {
                let view = first + k;
                let row = |j: usize| &rows[j][view * nu..(view + 1) * nu];
                vr.setup(geom, grid, view);
                for j in 0..2 {
                    vr.set_coefficients(row(j + 1));
                    std::mem::swap(&mut c[j], &mut vr.coef);
                }
                vr.set_coefficients(row(0));
            });
        for a in 0..2 {
            let b = 1 - a;
            let n_a = shape[a];
            let k = tasks.clamp(1, n_a);
            let views = &views[..count];
            let (oa, ha) = (grid.min[a] + 0.5 * grid.h[a], grid.h[a]);
            let (ob, hb) = (T::of(grid.min[b] + 0.5 * grid.h[b]), T::of(grid.h[b]));
            let (nb, sb) = (shape[b] as isize, st[b]);
            (0..k).into_par_iter().for_each(|t| {
                let (p, q) = (t * n_a / k, (t + 1) * n_a / k);
                let ptr = &ptr;
                for (vr, c) in views {
                    let (k0, k1) = (vr.class[a], vr.class[a + 1]);
                    if k0 == k1 {
                        continue;
                    }
                    let (ca, cb) = (&c[a], &c[b]);
                    let (lo, hi) = vr.planes[a];
                    for m in lo.max(p)..hi.min(q) {
                        let xa = T::of(oa + ha * m as f64);
                        let mt = T::from_index(m);
                        let mu = m as u32;
                        // SAFETY: plane `m` of axis `a`, `p <= m < q`, is written only by this
                        // task in this pass; only in-grid voxels of it are written.
                        let plane = unsafe { ptr.as_mut_ptr().add(m * st[a]) };
                        for r in k0..k1 {
                            let (c0, wa, wb) = (vr.coef[r], ca[r], cb[r]);
                            if (c0 == T::zero() && wa == T::zero() && wb == T::zero())
                                || mu < vr.m0[r]
                                || mu >= vr.m1[r]
                            {
                                continue;
                            }
                            let (ib, tb) = split(vr.fb0[r] + mt * vr.sb[r]);
                            let g0 = c0 - xa * wa - (ob + hb * T::of(ib as f64)) * wb;
                            let g1 = g0 - hb * wb;
                            // SAFETY: in-grid offsets of plane `m` (checked against `nb`).
                            unsafe {
                                if ib >= 0 && ib < nb {
                                    *plane.add(ib as usize * sb) += g0 * (T::one() - tb);
                                }
                                if ib + 1 >= 0 && ib + 1 < nb {
                                    *plane.add((ib + 1) as usize * sb) += g1 * tb;
                                }
                            }
                        }
                    }
                }
            });
        }
    }
}
