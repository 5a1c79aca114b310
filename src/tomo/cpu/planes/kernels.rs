//! Per-plane Joseph kernels: all rays of one dominant-axis group of a view at plane `m`.
//!
//! At plane `m` a ray's fractional indices are `f = f0 + m·s` (computed as a product and a sum,
//! never fused, so every kernel gets bit-identical values); the taps are `⌊f⌋` and `⌊f⌋ + 1`
//! with weights `1 − t` and `t`, `t = f − ⌊f⌋`; taps outside the grid and planes outside a ray's
//! range `[m0, m1)` are skipped. The forward and the transpose visit exactly the same taps with
//! exactly the same weights.

use super::plane::Plane;
use crate::tomo::cpu::view_rays::ViewRays;
#[cfg(target_arch = "x86_64")]
use crate::tomo::cpu::view_rays::ViewRaysOf;
use crate::Scalar;
#[cfg(target_arch = "x86_64")]
use crate::ScalarFamily;

/// The [`ScalarFamily`] of raw pointers `*mut T` (a plane's first voxel for the transpose).
#[cfg(target_arch = "x86_64")]
struct MutPtrOf;

#[cfg(target_arch = "x86_64")]
impl ScalarFamily for MutPtrOf {
    type Of<T: Scalar> = *mut T;
}

/// Floor of `f ≥ −4` (and any `f` whose floor is outside the grid maps outside the grid) by
/// truncation after a shift: no libm call.
#[inline(always)]
pub(super) fn split<T: Scalar>(f: T) -> (isize, T) {
    let i = (f + T::of(4.0)).as_isize() - 4;
    (i, f - T::of(i as f64))
}

/// Calls `visit(offset in the plane, weight)` for each in-grid tap of ray `k` at plane `m`.
#[inline(always)]
fn taps<T: Scalar>(p: &Plane, vr: &ViewRays<T>, k: usize, mt: T, mut visit: impl FnMut(usize, T)) {
    let (ib, tb) = split(vr.fb0[k] + mt * vr.sb[k]);
    let (wb0, wb1) = (T::one() - tb, tb);
    let nb = p.nb as isize;
    if !p.three_d {
        if ib >= 0 && ib < nb {
            visit(ib as usize * p.stride_b, wb0);
        }
        if ib + 1 >= 0 && ib + 1 < nb {
            visit((ib + 1) as usize * p.stride_b, wb1);
        }
        return;
    }
    let (ic, tc) = split(vr.fc0[k] + mt * vr.sc[k]);
    let (wc0, wc1) = (T::one() - tc, tc);
    let nc = p.nc as isize;
    for (jb, wb) in [(ib, wb0), (ib + 1, wb1)] {
        if jb < 0 || jb >= nb {
            continue;
        }
        for (jc, wc) in [(ic, wc0), (ic + 1, wc1)] {
            if jc < 0 || jc >= nc {
                continue;
            }
            visit(jb as usize * p.stride_b + jc as usize * p.stride_c, wb * wc);
        }
    }
}

/// `acc[k − k0] += Σ_taps weight · plane[tap]` for rays `k0..k1` at plane `m`; `plane` starts
/// at the plane's first voxel.
pub(crate) fn forward_plane<T: Scalar>(
    p: &Plane,
    plane: &[T],
    m: usize,
    vr: &ViewRays<T>,
    k0: usize,
    k1: usize,
    acc: &mut [T],
) {
    // The AVX2 kernel for `f32` (the same taps and weights) where the CPU has it.
    #[cfg(target_arch = "x86_64")]
    if let (Some(plane), Some(vr), Some(acc)) = (
        T::as_f32_slice(plane),
        T::as_f32::<ViewRaysOf>(vr),
        T::as_f32_slice_mut(acc),
    ) {
        if super::avx2::forward_plane(p, plane, m, vr, k0, k1, acc) {
            return;
        }
    }
    let mt = T::from_index(m);
    let mu = m as u32;
    for k in k0..k1 {
        if mu < vr.m0[k] || mu >= vr.m1[k] {
            continue;
        }
        let mut v = T::zero();
        taps(p, vr, k, mt, |i, w| v += w * plane[i]);
        acc[k - k0] += v;
    }
}

/// `plane[tap] += coef[k] · weight` for rays `k0..k1` at plane `m`.
///
/// # Safety
/// `plane` must point to the first voxel of plane `m`, valid for writes at every in-grid offset
/// of the plane, and no other thread may access that plane meanwhile.
pub(crate) unsafe fn transpose_plane<T: Scalar>(
    p: &Plane,
    plane: *mut T,
    m: usize,
    vr: &ViewRays<T>,
    k0: usize,
    k1: usize,
) {
    // The AVX2 kernel for `f32` (the same taps and weights) where the CPU has it.
    #[cfg(target_arch = "x86_64")]
    if let (Some(&plane), Some(vr)) = (T::as_f32::<MutPtrOf>(&plane), T::as_f32::<ViewRaysOf>(vr)) {
        // SAFETY: same contract.
        if unsafe { super::avx2::transpose_plane(p, plane, m, vr, k0, k1) } {
            return;
        }
    }
    let mt = T::from_index(m);
    let mu = m as u32;
    for k in k0..k1 {
        let c = vr.coef[k];
        if c == T::zero() || mu < vr.m0[k] || mu >= vr.m1[k] {
            continue;
        }
        // SAFETY: in-grid offsets of the plane (caller's contract).
        taps(p, vr, k, mt, |i, w| unsafe { *plane.add(i) += c * w });
    }
}
