//! AVX2 versions of the per-plane kernels for `f32` (8 rays per instruction; the forward with
//! masked gathers). Selected at run time; computes the same taps and weights as the portable
//! kernel.

use std::arch::x86_64::*;

use super::plane::Plane;
use crate::tomo::cpu::view_rays::ViewRays;

/// Runs the AVX2 kernel when the CPU has AVX2 and FMA and offsets fit in `i32`; returns
/// whether it ran.
#[inline]
pub(super) fn forward_plane(
    p: &Plane,
    plane: &[f32],
    m: usize,
    vr: &ViewRays<f32>,
    k0: usize,
    k1: usize,
    acc: &mut [f32],
) -> bool {
    if !is_x86_feature_detected!("avx2") {
        return false;
    }
    let extent = (p.nb * p.stride_b).max(p.nc * p.stride_c);
    if extent >= i32::MAX as usize / 2 || m >= (1 << 24) {
        return false;
    }
    let rays = Rays::of(vr, k0, k1);
    // SAFETY: AVX2 is present.
    unsafe {
        if p.three_d {
            forward_3d(p, plane, m, &rays, acc);
        } else {
            forward_2d(p, plane, m, &rays, acc);
        }
    }
    true
}

/// The parameters of rays `k0..k1` of a view that the kernels read.
struct Rays<'a> {
    fb0: &'a [f32],
    sb: &'a [f32],
    fc0: &'a [f32],
    sc: &'a [f32],
    m0: &'a [u32],
    m1: &'a [u32],
}

impl<'a> Rays<'a> {
    fn of(vr: &'a ViewRays<f32>, k0: usize, k1: usize) -> Self {
        Self {
            fb0: &vr.fb0[k0..k1],
            sb: &vr.sb[k0..k1],
            fc0: &vr.fc0[k0..k1],
            sc: &vr.sc[k0..k1],
            m0: &vr.m0[k0..k1],
            m1: &vr.m1[k0..k1],
        }
    }
}

/// Lane masks and weights of one axis: lower tap index, in-range masks of both taps, weights.
#[inline(always)]
unsafe fn axis(
    f0: __m256,
    s: __m256,
    mv: __m256,
    n: i32,
) -> (__m256i, __m256i, __m256i, __m256, __m256) {
    let f = _mm256_add_ps(f0, _mm256_mul_ps(mv, s));
    let four = _mm256_set1_ps(4.0);
    let i = _mm256_sub_epi32(
        _mm256_cvttps_epi32(_mm256_add_ps(f, four)),
        _mm256_set1_epi32(4),
    );
    let t = _mm256_sub_ps(f, _mm256_cvtepi32_ps(i));
    let w0 = _mm256_sub_ps(_mm256_set1_ps(1.0), t);
    // 0 <= i < n  and  0 <= i + 1 < n
    let ge0 = _mm256_cmpgt_epi32(i, _mm256_set1_epi32(-1));
    let ltn = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), i);
    let ge_1 = _mm256_cmpgt_epi32(i, _mm256_set1_epi32(-2));
    let ltn1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(n - 1), i);
    (
        i,
        _mm256_and_si256(ge0, ltn),
        _mm256_and_si256(ge_1, ltn1),
        w0,
        t,
    )
}

/// Mask of lanes whose ray range `[m0, m1)` contains `m`.
#[inline(always)]
unsafe fn range_mask(m0: *const u32, m1: *const u32, m: i32) -> __m256i {
    let lo = _mm256_loadu_si256(m0 as *const __m256i);
    let hi = _mm256_loadu_si256(m1 as *const __m256i);
    let mv = _mm256_set1_epi32(m);
    // m0 <= m < m1 (all values < 2^31)
    _mm256_andnot_si256(_mm256_cmpgt_epi32(lo, mv), _mm256_cmpgt_epi32(hi, mv))
}

#[target_feature(enable = "avx2,fma")]
unsafe fn forward_2d(p: &Plane, plane: &[f32], m: usize, r: &Rays, acc: &mut [f32]) {
    let n = acc.len();
    let mv = _mm256_set1_ps(m as f32);
    let sb = _mm256_set1_epi32(p.stride_b as i32);
    let base = plane.as_ptr();
    let zero = _mm256_setzero_ps();
    let mut k = 0;
    while k + 8 <= n {
        let inr = range_mask(r.m0.as_ptr().add(k), r.m1.as_ptr().add(k), m as i32);
        if _mm256_testz_si256(inr, inr) == 1 {
            k += 8;
            continue;
        }
        let (i, ok0, ok1, w0, w1) = axis(
            _mm256_loadu_ps(r.fb0.as_ptr().add(k)),
            _mm256_loadu_ps(r.sb.as_ptr().add(k)),
            mv,
            p.nb as i32,
        );
        let idx0 = _mm256_mullo_epi32(i, sb);
        let idx1 = _mm256_add_epi32(idx0, sb);
        let m0 = _mm256_castsi256_ps(_mm256_and_si256(ok0, inr));
        let m1 = _mm256_castsi256_ps(_mm256_and_si256(ok1, inr));
        let v0 = _mm256_mask_i32gather_ps::<4>(zero, base, idx0, m0);
        let v1 = _mm256_mask_i32gather_ps::<4>(zero, base, idx1, m1);
        let s = _mm256_add_ps(_mm256_mul_ps(w0, v0), _mm256_mul_ps(w1, v1));
        let a = acc.as_mut_ptr().add(k);
        _mm256_storeu_ps(a, _mm256_add_ps(_mm256_loadu_ps(a), s));
        k += 8;
    }
    scalar_tail(p, plane, m, r, acc, k);
}

#[target_feature(enable = "avx2,fma")]
unsafe fn forward_3d(p: &Plane, plane: &[f32], m: usize, r: &Rays, acc: &mut [f32]) {
    let n = acc.len();
    let mv = _mm256_set1_ps(m as f32);
    let sb = _mm256_set1_epi32(p.stride_b as i32);
    let sc = _mm256_set1_epi32(p.stride_c as i32);
    let base = plane.as_ptr();
    let zero = _mm256_setzero_ps();
    let mut k = 0;
    while k + 8 <= n {
        let inr = range_mask(r.m0.as_ptr().add(k), r.m1.as_ptr().add(k), m as i32);
        if _mm256_testz_si256(inr, inr) == 1 {
            k += 8;
            continue;
        }
        let (ib, okb0, okb1, wb0, wb1) = axis(
            _mm256_loadu_ps(r.fb0.as_ptr().add(k)),
            _mm256_loadu_ps(r.sb.as_ptr().add(k)),
            mv,
            p.nb as i32,
        );
        let (ic, okc0, okc1, wc0, wc1) = axis(
            _mm256_loadu_ps(r.fc0.as_ptr().add(k)),
            _mm256_loadu_ps(r.sc.as_ptr().add(k)),
            mv,
            p.nc as i32,
        );
        let okb0 = _mm256_and_si256(okb0, inr);
        let okb1 = _mm256_and_si256(okb1, inr);
        let i00 = _mm256_add_epi32(_mm256_mullo_epi32(ib, sb), _mm256_mullo_epi32(ic, sc));
        let i01 = _mm256_add_epi32(i00, sc);
        let i10 = _mm256_add_epi32(i00, sb);
        let i11 = _mm256_add_epi32(i10, sc);
        let mk = |a: __m256i, b: __m256i| _mm256_castsi256_ps(_mm256_and_si256(a, b));
        let v00 = _mm256_mask_i32gather_ps::<4>(zero, base, i00, mk(okb0, okc0));
        let v01 = _mm256_mask_i32gather_ps::<4>(zero, base, i01, mk(okb0, okc1));
        let v10 = _mm256_mask_i32gather_ps::<4>(zero, base, i10, mk(okb1, okc0));
        let v11 = _mm256_mask_i32gather_ps::<4>(zero, base, i11, mk(okb1, okc1));
        // Same products as the portable kernel: (wb · wc) · v.
        let s = _mm256_add_ps(
            _mm256_add_ps(
                _mm256_mul_ps(_mm256_mul_ps(wb0, wc0), v00),
                _mm256_mul_ps(_mm256_mul_ps(wb0, wc1), v01),
            ),
            _mm256_add_ps(
                _mm256_mul_ps(_mm256_mul_ps(wb1, wc0), v10),
                _mm256_mul_ps(_mm256_mul_ps(wb1, wc1), v11),
            ),
        );
        let a = acc.as_mut_ptr().add(k);
        _mm256_storeu_ps(a, _mm256_add_ps(_mm256_loadu_ps(a), s));
        k += 8;
    }
    scalar_tail(p, plane, m, r, acc, k);
}

/// The last `< 8` rays, with the portable formulas.
#[inline(always)]
fn scalar_tail(p: &Plane, plane: &[f32], m: usize, r: &Rays, acc: &mut [f32], from: usize) {
    let mt = m as f32;
    let mu = m as u32;
    let split = |f: f32| {
        let i = (f + 4.0) as isize - 4;
        (i, f - i as f32)
    };
    for k in from..acc.len() {
        if mu < r.m0[k] || mu >= r.m1[k] {
            continue;
        }
        let (ib, tb) = split(r.fb0[k] + mt * r.sb[k]);
        let (nb, nc) = (p.nb as isize, p.nc as isize);
        let bs = [(ib, 1.0 - tb), (ib + 1, tb)];
        let cs = if p.three_d {
            let (ic, tc) = split(r.fc0[k] + mt * r.sc[k]);
            [(ic, 1.0 - tc), (ic + 1, tc)]
        } else {
            [(0, 1.0), (-1, 0.0)]
        };
        let mut v = 0.0;
        for (jb, wb) in bs {
            if jb < 0 || jb >= nb {
                continue;
            }
            for (jc, wc) in cs {
                if jc < 0 || jc >= nc {
                    continue;
                }
                let w = if p.three_d { wb * wc } else { wb };
                v += w * plane[jb as usize * p.stride_b + jc as usize * p.stride_c];
            }
        }
        acc[k] += v;
    }
}

/// AVX2-assisted transpose for `f32`: taps and weights of 8 rays at a time in vector registers
/// (same formulas as the forward), then the scatter-adds one lane at a time. Returns whether it
/// ran.
///
/// # Safety
/// As [`super::kernels::transpose_plane`].
#[inline]
pub(super) unsafe fn transpose_plane(
    p: &Plane,
    plane: *mut f32,
    m: usize,
    vr: &ViewRays<f32>,
    k0: usize,
    k1: usize,
) -> bool {
    if !is_x86_feature_detected!("avx2") {
        return false;
    }
    let extent = (p.nb * p.stride_b).max(p.nc * p.stride_c);
    if extent >= i32::MAX as usize / 2 || m >= (1 << 24) {
        return false;
    }
    let rays = Rays::of(vr, k0, k1);
    // SAFETY: AVX2 is present; the plane as the caller's contract says.
    unsafe { transpose_simd(p, plane, m, &rays, &vr.coef[k0..k1]) };
    true
}

#[target_feature(enable = "avx2,fma")]
unsafe fn transpose_simd(p: &Plane, plane: *mut f32, m: usize, r: &Rays, coef: &[f32]) {
    let n = coef.len();
    let mv = _mm256_set1_ps(m as f32);
    // Per lane: offsets of the taps (0 for taps outside the grid or planes outside the ray's
    // range) and weights (0 for those), so the scatter needs no branches; a masked tap adds
    // exactly 0 to the plane's first voxel.
    let mut off = [[0i32; 8]; 4];
    let mut wt = [[0f32; 8]; 4];
    let sb = _mm256_set1_epi32(p.stride_b as i32);
    let sc = _mm256_set1_epi32(p.stride_c as i32);
    let zi = _mm256_setzero_si256();
    let zf = _mm256_setzero_ps();
    let sel_i = |v: __m256i, ok: __m256i| _mm256_blendv_epi8(zi, v, ok);
    let sel_f = |v: __m256, ok: __m256i| _mm256_blendv_ps(zf, v, _mm256_castsi256_ps(ok));
    let mut k = 0;
    while k + 8 <= n {
        let inr = range_mask(r.m0.as_ptr().add(k), r.m1.as_ptr().add(k), m as i32);
        if _mm256_testz_si256(inr, inr) == 1 {
            k += 8;
            continue;
        }
        let (ib, b0, b1, wb0, wb1) = axis(
            _mm256_loadu_ps(r.fb0.as_ptr().add(k)),
            _mm256_loadu_ps(r.sb.as_ptr().add(k)),
            mv,
            p.nb as i32,
        );
        let b0 = _mm256_and_si256(b0, inr);
        let b1 = _mm256_and_si256(b1, inr);
        let i0 = _mm256_mullo_epi32(ib, sb);
        let c = _mm256_loadu_ps(coef.as_ptr().add(k));
        if p.three_d {
            let (ic, c0, c1, wc0, wc1) = axis(
                _mm256_loadu_ps(r.fc0.as_ptr().add(k)),
                _mm256_loadu_ps(r.sc.as_ptr().add(k)),
                mv,
                p.nc as i32,
            );
            let i00 = _mm256_add_epi32(i0, _mm256_mullo_epi32(ic, sc));
            let taps = [
                (i00, _mm256_and_si256(b0, c0), _mm256_mul_ps(wb0, wc0)),
                (
                    _mm256_add_epi32(i00, sc),
                    _mm256_and_si256(b0, c1),
                    _mm256_mul_ps(wb0, wc1),
                ),
                (
                    _mm256_add_epi32(i00, sb),
                    _mm256_and_si256(b1, c0),
                    _mm256_mul_ps(wb1, wc0),
                ),
                (
                    _mm256_add_epi32(_mm256_add_epi32(i00, sb), sc),
                    _mm256_and_si256(b1, c1),
                    _mm256_mul_ps(wb1, wc1),
                ),
            ];
            for (t, (i, ok, w)) in taps.into_iter().enumerate() {
                _mm256_storeu_si256(off[t].as_mut_ptr() as *mut __m256i, sel_i(i, ok));
                _mm256_storeu_ps(wt[t].as_mut_ptr(), sel_f(_mm256_mul_ps(c, w), ok));
            }
            for l in 0..8 {
                for t in 0..4 {
                    *plane.add(off[t][l] as usize) += wt[t][l];
                }
            }
        } else {
            _mm256_storeu_si256(off[0].as_mut_ptr() as *mut __m256i, sel_i(i0, b0));
            _mm256_storeu_si256(
                off[1].as_mut_ptr() as *mut __m256i,
                sel_i(_mm256_add_epi32(i0, sb), b1),
            );
            _mm256_storeu_ps(wt[0].as_mut_ptr(), sel_f(_mm256_mul_ps(c, wb0), b0));
            _mm256_storeu_ps(wt[1].as_mut_ptr(), sel_f(_mm256_mul_ps(c, wb1), b1));
            for l in 0..8 {
                *plane.add(off[0][l] as usize) += wt[0][l];
                *plane.add(off[1][l] as usize) += wt[1][l];
            }
        }
        k += 8;
    }
    let (sb, sc) = (p.stride_b, p.stride_c);
    // The last < 8 rays with the portable formulas.
    let mt = m as f32;
    let mu = m as u32;
    let split = |f: f32| {
        let i = (f + 4.0) as isize - 4;
        (i, f - i as f32)
    };
    for k in k..n {
        let c = coef[k];
        if mu < r.m0[k] || mu >= r.m1[k] {
            continue;
        }
        let (jb, tb) = split(r.fb0[k] + mt * r.sb[k]);
        let (nb, nc) = (p.nb as isize, p.nc as isize);
        let cs = if p.three_d {
            let (jc, tc) = split(r.fc0[k] + mt * r.sc[k]);
            [(jc, 1.0 - tc), (jc + 1, tc)]
        } else {
            [(0, 1.0), (-1, 0.0)]
        };
        for (jb, wb) in [(jb, 1.0 - tb), (jb + 1, tb)] {
            if jb < 0 || jb >= nb {
                continue;
            }
            for (jc, wc) in cs {
                if jc < 0 || jc >= nc {
                    continue;
                }
                let w = if p.three_d { wb * wc } else { wb };
                *plane.add(jb as usize * sb + jc as usize * sc) += c * w;
            }
        }
    }
}
