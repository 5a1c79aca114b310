//! Ray set-up four rays at a time (`f64` lanes, AVX2): the formulas of [`super`], operation
//! for operation (products and sums in the same order, no fused multiply-adds, exact floors), so
//! the rays are bit-identical to the scalar set-up's. Lanes where the scalar code would meet a
//! NaN are left to it.

use std::arch::x86_64::*;

use super::parts::{other_axes, Column, Direction, Ray};
use crate::tomo::geometry::View;
use crate::tomo::grid::Grid;
use crate::Scalar;

/// Four lanes of `f64`.
type V = __m256d;

#[inline(always)]
unsafe fn splat(x: f64) -> V {
    _mm256_set1_pd(x)
}

/// `-x` (a sign flip, as Rust's negation).
#[inline(always)]
unsafe fn neg(x: V) -> V {
    _mm256_xor_pd(x, splat(-0.0))
}

/// The detector points of four rays of a view: `q[k] = c[k] + cu·u[k] + cv·v[k]` (evaluated
/// left to right, as [`crate::tomo::geometry::VecGeometry::ray`] does).
#[inline(always)]
unsafe fn points(v: &View, cu: V, cv: V) -> [V; 3] {
    std::array::from_fn(|k| {
        _mm256_add_pd(
            _mm256_add_pd(splat(v.det_center[k]), _mm256_mul_pd(cu, splat(v.det_u[k]))),
            _mm256_mul_pd(cv, splat(v.det_v[k])),
        )
    })
}

/// The detector coordinates `i − (n − 1)/2` of indices `i0..i0 + 4`.
#[inline(always)]
unsafe fn centred(i0: usize, n: usize) -> V {
    let h = 0.5 * (n as f64 - 1.0);
    _mm256_setr_pd(
        i0 as f64 - h,
        (i0 + 1) as f64 - h,
        (i0 + 2) as f64 - h,
        (i0 + 3) as f64 - h,
    )
}

/// `plane_range` of [`super`] on four lanes (slopes `s`, possibly 0 in some lanes);
/// `false` (and nothing changed) when a lane with a non-zero slope meets a NaN.
#[inline(always)]
unsafe fn plane_range(f0: V, s: V, inv_s: V, n: usize, n_a: usize, lo: &mut V, hi: &mut V) -> bool {
    let nf = splat(n as f64);
    let m1 = splat(-1.0);
    let flat = _mm256_cmp_pd::<_CMP_EQ_OQ>(s, _mm256_setzero_pd());
    let inside = _mm256_and_pd(
        _mm256_cmp_pd::<_CMP_GT_OQ>(f0, m1),
        _mm256_cmp_pd::<_CMP_LT_OQ>(f0, nf),
    );
    let t0 = _mm256_mul_pd(_mm256_sub_pd(m1, f0), inv_s);
    let t1 = _mm256_mul_pd(_mm256_sub_pd(nf, f0), inv_s);
    let nan = _mm256_or_pd(
        _mm256_cmp_pd::<_CMP_UNORD_Q>(t0, t0),
        _mm256_cmp_pd::<_CMP_UNORD_Q>(t1, t1),
    );
    if _mm256_movemask_pd(_mm256_andnot_pd(flat, nan)) != 0 {
        return false;
    }
    let lt = _mm256_cmp_pd::<_CMP_LT_OQ>(t0, t1);
    let (t0, t1) = (_mm256_blendv_pd(t1, t0, lt), _mm256_blendv_pd(t0, t1, lt));
    let cap = splat(n_a as f64 + 1.0);
    let clamp = |t: V| _mm256_min_pd(_mm256_max_pd(t, m1), cap);
    let (t0, t1) = (clamp(t0), clamp(t1));
    let new_lo = _mm256_max_pd(*lo, _mm256_floor_pd(t0));
    let up = _mm256_add_pd(neg(_mm256_floor_pd(neg(t1))), splat(1.0));
    let new_hi = _mm256_min_pd(_mm256_min_pd(*hi, up), splat(n_a as f64));
    let missed = _mm256_blendv_pd(splat(f64::INFINITY), *lo, inside);
    *lo = _mm256_blendv_pd(new_lo, missed, flat);
    *hi = _mm256_blendv_pd(new_hi, *hi, flat);
    true
}

/// Hands the lanes whose plane range `[lo, hi)` is not empty to `f`, with detector indices
/// `det0 + j · step`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn emit<T: Scalar>(
    a: usize,
    fb0: V,
    sb: V,
    fc0: V,
    sc: V,
    w: V,
    lo: V,
    hi: V,
    det0: usize,
    step: usize,
    f: &mut impl FnMut(Ray<T>, usize),
) {
    let hit = _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_LT_OQ>(lo, hi));
    if hit == 0 {
        return;
    }
    let st = |v: V| {
        let mut o = [0f64; 4];
        _mm256_storeu_pd(o.as_mut_ptr(), v);
        o
    };
    let (fb0, sb, fc0, sc, w, lo, hi) = (st(fb0), st(sb), st(fc0), st(sc), st(w), st(lo), st(hi));
    for j in 0..4 {
        if hit & (1 << j) != 0 {
            f(
                Ray {
                    a,
                    fb0: T::of(fb0[j]),
                    sb: T::of(sb[j]),
                    fc0: T::of(fc0[j]),
                    sc: T::of(sc[j]),
                    w: T::of(w[j]),
                    m0: lo[j] as usize,
                    m1: hi[j] as usize,
                },
                det0 + j * step,
            );
        }
    }
}

/// Four rays of a parallel-beam view with direction `d` (dominant axis `A`, `C3` for 3D):
/// pixels `(iu, iv..iv + 4)` when `along_v`, else `(iu..iu + 4, iv)`; `false` (nothing
/// emitted) when a lane meets a NaN.
///
/// # Safety
/// AVX2 must be present.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn parallel_quad<T: Scalar, const A: usize, const C3: bool>(
    g: &Grid,
    v: &View,
    (nu, nv): (usize, usize),
    d: &[f64; 3],
    dir: &Direction,
    (iu, iv): (usize, usize),
    along_v: bool,
    f: &mut impl FnMut(Ray<T>, usize),
) -> bool {
    let (b, c) = other_axes(A);
    let na = g.shape[A];
    let (cu, cv) = if along_v {
        (splat(iu as f64 - 0.5 * (nu as f64 - 1.0)), centred(iv, nv))
    } else {
        (centred(iu, nu), splat(iv as f64 - 0.5 * (nv as f64 - 1.0)))
    };
    let q = points(v, cu, cv);
    let base = g.min[A] + 0.5 * g.h[A];
    let t0 = _mm256_mul_pd(_mm256_sub_pd(splat(base), q[A]), splat(dir.inv_da));
    let f0 = |k: usize| {
        _mm256_sub_pd(
            _mm256_mul_pd(
                _mm256_sub_pd(
                    _mm256_add_pd(q[k], _mm256_mul_pd(t0, splat(d[k]))),
                    splat(g.min[k]),
                ),
                splat(g.inv_h[k]),
            ),
            splat(0.5),
        )
    };
    let fb0 = f0(b);
    let fc0 = if C3 { f0(c) } else { _mm256_setzero_pd() };
    let (sb, sc) = (splat(dir.sb), splat(dir.sc));
    let (mut lo, mut hi) = (_mm256_setzero_pd(), splat(na as f64));
    if !plane_range(fb0, sb, splat(dir.inv_sb), g.shape[b], na, &mut lo, &mut hi) {
        return false;
    }
    if C3 && !plane_range(fc0, sc, splat(dir.inv_sc), g.shape[c], na, &mut lo, &mut hi) {
        return false;
    }
    let (det0, step) = if along_v {
        (iu * nv + iv, 1)
    } else {
        (iu * nv + iv, nv)
    };
    emit(A, fb0, sb, fc0, sc, splat(dir.w), lo, hi, det0, step, f);
    true
}

/// Rays `iv0..iv0 + 4` of detector column `iu` of a point-source view, when all four share
/// the column part `cl` ([`Column::matches`]); `false` (nothing emitted) otherwise or when a
/// lane meets a NaN.
///
/// # Safety
/// AVX2 must be present; the grid is 3D.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn column_quad<T: Scalar>(
    g: &Grid,
    cl: &Column,
    v: &View,
    (nu, nv): (usize, usize),
    (iu, iv0): (usize, usize),
    f: &mut impl FnMut(Ray<T>, usize),
) -> bool {
    let a = cl.a;
    let (b, c) = other_axes(a);
    let q = points(
        v,
        splat(iu as f64 - 0.5 * (nu as f64 - 1.0)),
        centred(iv0, nv),
    );
    let d: [V; 3] = std::array::from_fn(|k| _mm256_sub_pd(q[k], splat(v.src[k])));
    // Same bits of q[a], q[b], d[a], d[b] as the column's first ray.
    let same = |x: V, key: u64| {
        _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(
            _mm256_castpd_si256(x),
            _mm256_set1_epi64x(key as i64),
        ))) == 0xf
    };
    if !(same(q[a], cl.key[0])
        && same(q[b], cl.key[1])
        && same(d[a], cl.key[2])
        && same(d[b], cl.key[3]))
    {
        return false;
    }
    // Same dominant axis: the first of the largest |d[k] / h[k]|, and not zero.
    let abs = |x: V| _mm256_andnot_pd(splat(-0.0), x);
    let s: [V; 3] = std::array::from_fn(|k| abs(_mm256_mul_pd(d[k], splat(g.inv_h[k]))));
    let mut ok = _mm256_cmp_pd::<_CMP_GT_OQ>(s[a], _mm256_setzero_pd());
    for k in 0..3 {
        if k < a {
            ok = _mm256_and_pd(ok, _mm256_cmp_pd::<_CMP_GT_OQ>(s[a], s[k]));
        } else if k > a {
            ok = _mm256_and_pd(ok, _mm256_cmp_pd::<_CMP_GE_OQ>(s[a], s[k]));
        }
    }
    if _mm256_movemask_pd(ok) != 0xf {
        return false;
    }
    let inv_dc = _mm256_div_pd(splat(1.0), d[c]);
    let len = _mm256_sqrt_pd(_mm256_add_pd(
        _mm256_add_pd(_mm256_mul_pd(d[0], d[0]), _mm256_mul_pd(d[1], d[1])),
        _mm256_mul_pd(d[2], d[2]),
    ));
    let sc = _mm256_mul_pd(_mm256_mul_pd(splat(cl.tm), d[c]), splat(g.inv_h[c]));
    let inv_sc = _mm256_mul_pd(
        _mm256_mul_pd(_mm256_mul_pd(d[a], inv_dc), splat(g.h[c])),
        splat(g.inv_h[a]),
    );
    let fc0 = _mm256_sub_pd(
        _mm256_mul_pd(
            _mm256_sub_pd(
                _mm256_add_pd(q[c], _mm256_mul_pd(splat(cl.t0), d[c])),
                splat(g.min[c]),
            ),
            splat(g.inv_h[c]),
        ),
        splat(0.5),
    );
    let w = _mm256_mul_pd(_mm256_mul_pd(splat(g.h[a]), len), splat(cl.inv_da.abs()));
    let (mut lo, mut hi) = (splat(cl.lo), splat(cl.hi));
    if !plane_range(fc0, sc, inv_sc, g.shape[c], g.shape[a], &mut lo, &mut hi) {
        return false;
    }
    emit(
        a,
        splat(cl.fb0),
        splat(cl.sb),
        fc0,
        sc,
        w,
        lo,
        hi,
        iu * nv + iv0,
        1,
        f,
    );
    true
}
