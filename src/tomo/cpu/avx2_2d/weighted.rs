//! The weighted transpose of 2D fan-beam FBP for `f32` on x86-64 with AVX2: one pass of the
//! windowed scatter transpose ([`super::window`]) in which every tap also carries a weight
//! affine in the voxel's centre, `c₀ − x₀ c₁ − x₁ c₂` with per-ray coefficients `c_k`.
//!
//! Exact fan-beam FBP back-projects with the distance weight `1/U²`; on the rays of a view,
//! `1/U²` is `(R²(2 cos γ − sec γ) − R sec γ (x·e_c)) / (R² − |x|²)` (see
//! [`crate::tomo::fbp`]), affine in `x` per ray up to the factor `1/(R² − |x|²)`. So the
//! three back-projections `A*[t₀ Q] − x₀ A*[t₁ Q] − x₁ A*[t₂ Q]` become one: each tap adds
//! `w (1 − t)(c₀ − x_a c_a − x_b(i) c_b)` (and `t` at `i + 1`) with the taps and weights of the
//! plain transpose, `x_a` the plane's centre and `x_b(i)` the cell's. The caller divides by
//! `R² − |x|²`. The sum is the three back-projections' to rounding.

use std::arch::x86_64::*;

use rayon::prelude::*;

use super::window::{safe_span, store_slab, vector_planes, Layout, PAD, PLANES, VIEW_BLOCK};
use crate::tomo::cpu::lanes::{add_pair, coords, fits, lanes};
use crate::tomo::cpu::send_ptr::SendPtr;
use crate::tomo::cpu::view_rays::{Group, ViewRays};
use crate::tomo::geometry::VecGeometry;
use crate::tomo::grid::Grid;

/// The rays of one view with their three coefficient sets (`r.coef`: `c₀`; `c[0]`, `c[1]`:
/// the coefficients of `x₀` and `x₁`).
struct WeightedRays {
    r: ViewRays<f32>,
    c: [Vec<f32>; 2],
}

/// Cell centres of one class: plane `m` at `oa + m·ha`, cell `i` at `ob + i·hb`.
struct Centres {
    oa: f32,
    ha: f32,
    ob: f32,
    hb: f32,
}

/// `vol[x] = Σ_rays w · interpᵀ · (c₀ − x₀ c₁ − x₁ c₂)` over the rays of `geom`, `c_k` the
/// ray's entry of `rows[k]` (`[view][u]`, as a sinogram) and `x` the voxel's centre.
///
/// The caller checks [`super::window::available`].
pub(crate) fn transpose_weighted(
    geom: &VecGeometry,
    grid: &Grid,
    rows: [&[f32]; 3],
    vol: &mut [f32],
) {
    vol.iter_mut().for_each(|x| *x = 0.0);
    let nu = geom.nu();
    let nviews = geom.num_views();
    let shape = grid.shape;
    let block = VIEW_BLOCK.min(nviews.max(1));
    let mut rays: Vec<WeightedRays> = (0..block)
        .map(|_| WeightedRays {
            r: ViewRays::new(),
            c: [Vec::new(), Vec::new()],
        })
        .collect();
    for first in (0..nviews).step_by(block) {
        let count = block.min(nviews - first);
        rays[..count].par_iter_mut().enumerate().for_each(|(j, w)| {
            let view = first + j;
            let row = |k: usize| &rows[k][view * nu..(view + 1) * nu];
            w.r.setup(geom, grid, view);
            w.r.orient(1);
            for k in 0..2 {
                w.r.set_coefficients(row(k + 1));
                std::mem::swap(&mut w.c[k], &mut w.r.coef);
            }
            w.r.set_coefficients(row(0));
        });
        let rays = &rays[..count];
        for a in 0..2 {
            let b = 1 - a;
            let l = Layout::new(shape, a);
            let centres = Centres {
                oa: (grid.min[a] + 0.5 * grid.h[a]) as f32,
                ha: grid.h[a] as f32,
                ob: (grid.min[b] + 0.5 * grid.h[b]) as f32,
                hb: grid.h[b] as f32,
            };
            let nblocks = l.na.div_ceil(PLANES);
            // Each task owns whole blocks of planes: disjoint voxels.
            let slabs = SendPtr::new(vol);
            (0..nblocks).into_par_iter().for_each_init(
                || vec![0.0f32; 2 * PLANES * l.row()],
                |scr, blk| {
                    let mb = blk * PLANES;
                    let npl = PLANES.min(l.na - mb);
                    let mut any = false;
                    for w in rays {
                        let r = &w.r;
                        let (k0, k1) = (r.class[a], r.class[a + 1]);
                        let (lo, hi) = r.planes[a];
                        if k0 == k1 || hi <= mb || lo >= mb + npl {
                            continue;
                        }
                        if !any {
                            scr.iter_mut().for_each(|x| *x = 0.0);
                            any = true;
                        }
                        let (ca, cb) = (&w.c[a][k0..k1], &w.c[b][k0..k1]);
                        let (even, odd) = scr.split_at_mut(PLANES * l.row());
                        // SAFETY: AVX2 and FMA checked by the caller (`available`); the
                        // scratch has `npl` rows of `l.row()` cells per slab.
                        unsafe {
                            weighted_block(
                                even,
                                odd,
                                &l,
                                (mb, npl),
                                (&r.fb0[k0..k1], &r.sb[k0..k1]),
                                &r.groups[r.gclass[a]..r.gclass[a + 1]],
                                [&r.coef[k0..k1], ca, cb],
                                &centres,
                            )
                        };
                    }
                    if any {
                        // SAFETY: planes `mb..mb + npl` of class `a` belong to this task alone,
                        // and `store_slab` touches only them; AVX2 checked by the caller.
                        unsafe { store_slab(slabs.slice_mut(), &l, mb, npl, scr) };
                    }
                },
            );
        }
    }
}

/// The weighted form of the window's `transpose_block`: even lanes add their two taps to slab
/// `even`, odd lanes to slab `odd`, each tap times `c₀ − x_a c_a − x_b c_b` at its cell's
/// centre (`coef = [c₀, c_a, c_b]`, `a` the class's plane axis).
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
unsafe fn weighted_block(
    even: &mut [f32],
    odd: &mut [f32],
    l: &Layout,
    (mb, npl): (usize, usize),
    (fb0, sb): (&[f32], &[f32]),
    vr: &[Group],
    coef: [&[f32]; 3],
    centres: &Centres,
) {
    let n = fb0.len();
    let row = l.row();
    let nb = l.nb as i32;
    let one = _mm256_set1_ps(1.0);
    let zero = _mm256_setzero_ps();
    let (ob, hb) = (_mm256_set1_ps(centres.ob), _mm256_set1_ps(centres.hb));
    // Position of lane q's (a0, a1) pair after unpacklo/unpackhi.
    const PAIR: [usize; 8] = [0, 2, 8, 10, 4, 6, 12, 14];
    let mut k = 0;
    while k < n {
        let (p0, p1) = vector_planes(vr, k / 8, mb, npl);
        let c0 = lanes(coef[0], k, true);
        let ca = lanes(coef[1], k, true);
        let cb = lanes(coef[2], k, true);
        let nonzero = _mm256_or_ps(
            _mm256_cmp_ps::<_CMP_NEQ_UQ>(c0, zero),
            _mm256_or_ps(
                _mm256_cmp_ps::<_CMP_NEQ_UQ>(ca, zero),
                _mm256_cmp_ps::<_CMP_NEQ_UQ>(cb, zero),
            ),
        );
        if p0 >= p1 || _mm256_movemask_ps(nonzero) == 0 {
            k += 8;
            continue;
        }
        let f0 = lanes(fb0, k, false);
        let s = lanes(sb, k, false);
        let hcb = _mm256_mul_ps(hb, cb);
        let mut mv = _mm256_set1_ps((mb + p0) as f32);
        let safe = safe_span(f0, s, mb + p0, mb + p1 - 1, nb);
        for p in p0..p1 {
            let (i, t, i0, idx) = coords(f0, s, mv);
            mv = _mm256_add_ps(mv, one);
            // The weights at the two cells: c₀ − x_a c_a − x_b c_b, and one cell on.
            let xa = _mm256_set1_ps(centres.oa + centres.ha * (mb + p) as f32);
            let cp = _mm256_fnmadd_ps(xa, ca, c0);
            let xb = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), hb, ob);
            let g0 = _mm256_fnmadd_ps(xb, cb, cp);
            let g1 = _mm256_sub_ps(g0, hcb);
            let a0 = _mm256_mul_ps(g0, _mm256_sub_ps(one, t));
            let a1 = _mm256_mul_ps(g1, t);
            let re = even.as_mut_ptr().add(p * row + PAD);
            let ro = odd.as_mut_ptr().add(p * row + PAD);
            if safe || fits(idx) {
                if !safe && (i0 + PAD as i32) as u32 >= (nb + PAD as i32) as u32 {
                    continue;
                }
                // Taps in the padding land in cells that are never stored.
                let mut pr = [0f32; 16];
                _mm256_storeu_ps(pr.as_mut_ptr(), _mm256_unpacklo_ps(a0, a1));
                _mm256_storeu_ps(pr.as_mut_ptr().add(8), _mm256_unpackhi_ps(a0, a1));
                let mut ii = [0u32; 8];
                let pad = _mm256_set1_epi32(PAD as i32);
                _mm256_storeu_si256(ii.as_mut_ptr() as *mut __m256i, _mm256_add_epi32(i, pad));
                let (pr, ii) = std::hint::black_box((&pr, &ii));
                let we = re.sub(PAD);
                let wo = ro.sub(PAD);
                for q in (0..8).step_by(2) {
                    add_pair(we.add(ii[q] as usize), pr.as_ptr().add(PAIR[q]));
                }
                for q in (1..8).step_by(2) {
                    add_pair(wo.add(ii[q] as usize), pr.as_ptr().add(PAIR[q]));
                }
            } else {
                let mut w0 = [0f32; 8];
                let mut w1 = [0f32; 8];
                _mm256_storeu_ps(w0.as_mut_ptr(), a0);
                _mm256_storeu_ps(w1.as_mut_ptr(), a1);
                let mut ii = [0i32; 8];
                _mm256_storeu_si256(ii.as_mut_ptr() as *mut __m256i, i);
                for q in 0..8 {
                    let j = ii[q];
                    if j >= 0 && j < nb {
                        *re.add(j as usize) += w0[q];
                    }
                    if j + 1 >= 0 && j + 1 < nb {
                        *re.add((j + 1) as usize) += w1[q];
                    }
                }
            }
        }
        k += 8;
    }
}
