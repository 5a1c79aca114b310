//! AVX2 building blocks of the windowed Joseph kernels: ray parameters in lanes, the per-plane
//! taps and weights (the formulas of [`super::planes`]), the window test, the windowed fetch of
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

/// The transpose of an 8 × 8 block of `f32` held as eight rows.
#[inline(always)]
pub(super) unsafe fn transpose8(r: [__m256; 8]) -> [__m256; 8] {
    let t0 = _mm256_unpacklo_ps(r[0], r[1]);
    let t1 = _mm256_unpackhi_ps(r[0], r[1]);
    let t2 = _mm256_unpacklo_ps(r[2], r[3]);
    let t3 = _mm256_unpackhi_ps(r[2], r[3]);
    let t4 = _mm256_unpacklo_ps(r[4], r[5]);
    let t5 = _mm256_unpackhi_ps(r[4], r[5]);
    let t6 = _mm256_unpacklo_ps(r[6], r[7]);
    let t7 = _mm256_unpackhi_ps(r[6], r[7]);
    let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
    let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
    let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
    let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
    [
        _mm256_permute2f128_ps::<0x20>(u0, u4),
        _mm256_permute2f128_ps::<0x20>(u1, u5),
        _mm256_permute2f128_ps::<0x20>(u2, u6),
        _mm256_permute2f128_ps::<0x20>(u3, u7),
        _mm256_permute2f128_ps::<0x31>(u0, u4),
        _mm256_permute2f128_ps::<0x31>(u1, u5),
        _mm256_permute2f128_ps::<0x31>(u2, u6),
        _mm256_permute2f128_ps::<0x31>(u3, u7),
    ]
}

/// Whether the eight lanes are parallel rays (equal slopes) whose taps suit [`window_halves`] at
/// every plane: within each half (lanes 0–3, 4–7) the offsets `f0` are non-decreasing and span
/// less than five cells. With equal slopes every lane adds the same rounded `m·s` to its `f0`,
/// and rounding is monotone, so at every plane the lower taps of a half are non-decreasing and
/// at most five cells above the half's first.
#[inline(always)]
pub(super) unsafe fn parallel_halves(f0: __m256, s: __m256) -> bool {
    let s0 = _mm256_permutevar8x32_ps(s, _mm256_setzero_si256());
    if _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_EQ_OQ>(s, s0)) != 0xff {
        return false;
    }
    let mut v = [0f32; 8];
    _mm256_storeu_ps(v.as_mut_ptr(), f0);
    let half = |h: &[f32]| h.windows(2).all(|w| w[0] <= w[1]) && h[3] - h[0] <= 4.99;
    half(&v[..4]) && half(&v[4..])
}

/// The cells `p[i]` and `p[i + 1]` of each lane for lower taps `i` whose offsets from the first
/// tap of their half (lanes 0–3, 4–7) are in `0..=6` (reads `p[i0..i0 + 8]` and
/// `p[i4..i4 + 8]`): two loads per half and in-lane permutes.
#[inline(always)]
pub(super) unsafe fn window_halves(p: *const f32, i: __m256i) -> (__m256, __m256) {
    let i0 = _mm256_cvtsi256_si32(i) as isize;
    let i4 = _mm256_extract_epi32::<4>(i) as isize;
    let a = _mm256_loadu2_m128(p.offset(i4), p.offset(i0));
    let b = _mm256_loadu2_m128(p.offset(i4 + 4), p.offset(i0 + 4));
    let rel = _mm256_sub_epi32(i, _mm256_shuffle_epi32::<0>(i));
    let rel1 = _mm256_add_epi32(rel, _mm256_set1_epi32(1));
    let pick = |r: __m256i| {
        _mm256_blendv_ps(
            _mm256_permutevar_ps(a, r),
            _mm256_permutevar_ps(b, r),
            _mm256_castsi256_ps(_mm256_slli_epi32::<29>(r)),
        )
    };
    (pick(rel), pick(rel1))
}
