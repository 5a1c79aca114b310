//! AVX2 building blocks of the windowed Joseph kernels: ray parameters in lanes, the per-plane
//! taps and weights (the formulas of [`super::kernels`]), the window test, the windowed fetch of
//! two neighbouring taps, and an 8-byte read-modify-write of a tap pair.

use std::arch::x86_64::*;

/// Ray parameters of lanes `k..k + 8`; past the end the last ray is repeated (its taps fit the
/// same window) with `coef` 0.
#[inline(always)]
pub(super) unsafe fn lanes(v: &[f32], k: usize, fill_zero: bool) -> __m256 {
    if k + 8 <= v.len() {
        return _mm256_loadu_ps(v.as_ptr().add(k));
    }
    let mut t = [if fill_zero { 0.0 } else { v[v.len() - 1] }; 8];
    t[..v.len() - k].copy_from_slice(&v[k..]);
    _mm256_loadu_ps(t.as_ptr())
}

/// Lower tap, weight of the upper tap, lane 0's lower tap and (lower tap − lane 0's lower tap)
/// at plane `mv` (the plane number in every lane).
#[inline(always)]
pub(super) unsafe fn coords(f0: __m256, s: __m256, mv: __m256) -> (__m256i, __m256, i32, __m256i) {
    let f = _mm256_add_ps(f0, _mm256_mul_ps(mv, s));
    let i = _mm256_sub_epi32(
        _mm256_cvttps_epi32(_mm256_add_ps(f, _mm256_set1_ps(4.0))),
        _mm256_set1_epi32(4),
    );
    let t = _mm256_sub_ps(f, _mm256_cvtepi32_ps(i));
    let i0 = _mm256_cvtsi256_si32(i);
    let idx = _mm256_sub_epi32(i, _mm256_set1_epi32(i0));
    (i, t, i0, idx)
}

/// Whether every lane's lower tap is within 15 cells above lane 0's.
#[inline(always)]
pub(super) unsafe fn fits(idx: __m256i) -> bool {
    let lim = _mm256_set1_epi32(15);
    _mm256_movemask_epi8(_mm256_cmpeq_epi32(_mm256_max_epu32(idx, lim), lim)) == -1
}

/// Ray parameters of the `len ≤ 8` lanes `k..k + len`; the remaining lanes repeat the last ray
/// (its taps fit the same window), or are 0 with `fill_zero`.
#[inline(always)]
pub(super) unsafe fn lanes_n(v: &[f32], k: usize, len: usize, fill_zero: bool) -> __m256 {
    if len == 8 {
        return _mm256_loadu_ps(v.as_ptr().add(k));
    }
    let mut t = [if fill_zero { 0.0 } else { v[k + len - 1] }; 8];
    t[..len].copy_from_slice(&v[k..k + len]);
    _mm256_loadu_ps(t.as_ptr())
}

/// The cells `p[idx]` and `p[idx + 1]` of each lane, for `idx` in `0..=15` (reads `p[0..17]`):
/// two unaligned loads per tap and lane permutes, no gathers.
#[inline(always)]
pub(super) unsafe fn window(p: *const f32, idx: __m256i) -> (__m256, __m256) {
    let lo = _mm256_loadu_ps(p);
    let hi = _mm256_loadu_ps(p.add(8));
    let lo1 = _mm256_loadu_ps(p.add(1));
    let hi1 = _mm256_loadu_ps(p.add(9));
    let sel = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28));
    let v0 = _mm256_blendv_ps(
        _mm256_permutevar8x32_ps(lo, idx),
        _mm256_permutevar8x32_ps(hi, idx),
        sel,
    );
    let v1 = _mm256_blendv_ps(
        _mm256_permutevar8x32_ps(lo1, idx),
        _mm256_permutevar8x32_ps(hi1, idx),
        sel,
    );
    (v0, v1)
}

/// Adds the pair `(x[0], x[1])` to cells `w[0], w[1]` (one 8-byte load and store).
#[inline(always)]
pub(super) unsafe fn add_pair(w: *mut f32, x: *const f32) {
    let c = _mm_castpd_ps(_mm_load_sd(w as *const f64));
    let v = _mm_castpd_ps(_mm_load_sd(x as *const f64));
    _mm_store_sd(w as *mut f64, _mm_castps_pd(_mm_add_ps(c, v)));
}
