//! Joseph's method for 2D parallel-beam views with rays binned by their offset (`f32`, x86-64
//! with AVX2): no lane permutes, no candidate search.
//!
//! In a parallel-beam view all rays of a class (dominant axis `a`) share their slope `s`; at
//! plane `m` ray `r` sits at `f = f0[r] + m·s` (the rounded product `pm = m·s`, then the rounded
//! sum). Write `pm = k + φ` with the integer `k = ⌊pm⌋` and `φ ∈ [0, 1)`, and put each ray in
//! the bin `b = ⌊f0[r]⌋`. Rounding is monotone and integers are exact, so:
//! - the ray's lower tap `⌊f⌋` is one of `b + k`, `b + k + 1`, `b + k + 2` (the last only when
//!   `f` is that integer, with weight `t = 0`);
//! - it can give cell `j` a non-zero weight only when the exact `f0[r] + pm` is in
//!   `(j − 1, j + 1)`, so only from the bins `u − 2`, `u − 1`, `u` of the sheared cell
//!   `u = j − k`.
//!
//! With at most one ray per bin (rays at least a cell apart, which parallel beams with detector
//! cells not finer than the volume's have), eight neighbouring bins fill the lanes of a vector:
//! - the forward reads, per plane, three shifted rows of eight cells at `b + k` with plain loads
//!   and picks each lane's two taps with blends;
//! - the transpose gives eight neighbouring cells of a plane the weights of the rays in their
//!   three candidate bins, read with plain loads at the shift `k` of each view and plane, and
//!   accumulates a few views in a register. A ray of bin `u − 2` has `f ∈ [j − 2, j]`, so cell
//!   `j` can only be its upper tap, with the forward's weight `t = f − (j − 1)` (0 when
//!   negative); one of bin `u` has `f ∈ [j, j + 2]` and cell `j` can only be its lower tap,
//!   weight `1 − t = (j + 1) − f`; one of bin `u − 1` has `f ∈ [j − 1, j + 1]`: the smaller of
//!   the two.
//!
//! Rays that find their bin taken (detectors a little finer than the cells) are done one by one
//! with the same formulas; a class with many of them is left to the other kernels.

use std::arch::x86_64::*;

use crate::tomo::cpu::view_rays::ViewRays;

/// Bins of sentinel rays on each side of a table: the kernels' loads stay inside.
const TPAD: usize = 16;
/// Views whose contributions a vector of cells accumulates in a register (transpose).
const VIEWS: usize = 4;
/// Most planes of a block.
pub(super) const MAX_PLANES: usize = 16;
/// Zero cells needed on each side of a scratch row by [`forward_block`].
pub(super) const ROW_PAD: usize = 16;

/// The binned rays of one view (both classes), reusable.
pub(super) struct Bins {
    classes: [Option<Class>; 2],
    /// Per class: `TPAD` sentinels, the offset `f0` of each bin's ray (or 0 for an empty bin),
    /// `TPAD` sentinels.
    f0: [Vec<f32>; 2],
    /// Per class, the same for the coefficients `w · sino` (0 for empty bins; transpose only).
    coef: [Vec<f32>; 2],
    /// Per class: each bin's ray (index into the view's rays), or `u32::MAX`.
    ray: [Vec<u32>; 2],
    /// Per class: the rays whose bin was taken.
    extra: [Vec<u32>; 2],
}

/// One binned class of a view.
#[derive(Clone, Copy, Debug)]
struct Class {
    /// The rays' shared slope per plane.
    sb: f32,
    /// The first bin of the table.
    bmin: i32,
    /// Bins in the table (without the sentinels).
    nbins: usize,
}

/// The forward's rounded plane shift `m·s` and its floor.
#[inline(always)]
fn shift(m: usize, sb: f32) -> (f32, i32) {
    let pm = m as f32 * sb;
    (pm, pm.floor() as i32)
}

impl Bins {
    pub(super) fn new() -> Self {
        Self {
            classes: [None, None],
            f0: [Vec::new(), Vec::new()],
            coef: [Vec::new(), Vec::new()],
            ray: [Vec::new(), Vec::new()],
            extra: [Vec::new(), Vec::new()],
        }
    }

    /// Bins each class of the view `r` (set up, in any order; with coefficients when `coef`)
    /// that qualifies: at least one ray, one shared finite slope, sizes whose plane and cell
    /// numbers are exact in `f32`, and at most one ray in eight (plus four) whose bin is taken.
    /// `shape` is the volume's.
    pub(super) fn build(&mut self, r: &ViewRays<f32>, shape: [usize; 2], coef: bool) {
        for a in 0..2 {
            self.classes[a] = None;
            let (k0, k1) = (r.class[a], r.class[a + 1]);
            let (na, nb) = (shape[a], shape[1 - a]);
            if k1 == k0 || na >= 1 << 22 || nb >= 1 << 22 {
                continue;
            }
            let sb = r.sb[k0];
            if !sb.is_finite()
                || sb.abs() > 16.0
                || r.sb[k0..k1].iter().any(|s| s.to_bits() != sb.to_bits())
            {
                continue;
            }
            // Shifts k = ⌊m·s⌋ are monotone in m: the extremes are at the end planes.
            let (k_first, k_last) = (shift(0, sb).1, shift(na - 1, sb).1);
            let (kmin, kmax) = (k_first.min(k_last), k_first.max(k_last));
            // Bins that can reach a cell: u − 2 ..= u for u = j − k, j in 0..nb.
            let bmin = -kmax - 2;
            let bmax = nb as i32 - 1 - kmin;
            let nbins = (bmax - bmin + 1) as usize;
            let extra = &mut self.extra[a];
            extra.clear();
            let ray = &mut self.ray[a];
            ray.clear();
            ray.resize(nbins, u32::MAX);
            // Empty bins and sentinels: any finite offset (their sums are not used, their
            // coefficients are 0).
            let f0 = &mut self.f0[a];
            f0.clear();
            f0.resize(nbins + 2 * TPAD, 0.0);
            let limit = (k1 - k0) / 8 + 4;
            let mut ok = true;
            for k in k0..k1 {
                let x = r.fb0[k];
                if !x.is_finite() || x.abs() >= (1 << 23) as f32 {
                    ok = false;
                    break;
                }
                let b = x.floor() as i32;
                if b < bmin || b > bmax {
                    // Its taps never reach a cell of the grid.
                    continue;
                }
                let q = (b - bmin) as usize;
                if ray[q] == u32::MAX {
                    ray[q] = k as u32;
                    f0[TPAD + q] = x;
                } else {
                    extra.push(k as u32);
                    if extra.len() > limit {
                        ok = false;
                        break;
                    }
                }
            }
            if !ok {
                continue;
            }
            let c = &mut self.coef[a];
            c.clear();
            if coef {
                c.resize(nbins + 2 * TPAD, 0.0);
                for (q, &k) in ray.iter().enumerate() {
                    if k != u32::MAX {
                        c[TPAD + q] = r.coef[k as usize];
                    }
                }
            }
            self.classes[a] = Some(Class { sb, bmin, nbins });
        }
    }

    /// Whether class `a` of this view is binned.
    pub(super) fn takes(&self, a: usize) -> bool {
        self.classes[a].is_some()
    }

    /// The accumulators [`forward_block`] needs for class `a`: bins (rounded up to vectors)
    /// and extra rays.
    pub(super) fn accumulators(&self, a: usize) -> (usize, usize) {
        self.classes[a].map_or((0, 0), |c| (c.nbins.div_ceil(8) * 8, self.extra[a].len()))
    }

    /// Class `a` for [`transpose_block`], if binned.
    pub(super) fn view(&self, a: usize) -> Option<BinView<'_>> {
        let c = self.classes[a]?;
        Some(BinView {
            f0: &self.f0[a],
            coef: &self.coef[a],
            c,
        })
    }

    /// Moves the forward's sums of class `a` to the rays: `acc_rays[k]` for each ray `k` of the
    /// view, from the bins' sums `acc` and the extra rays' sums `extra_acc` (rays in no bin
    /// keep their 0).
    pub(super) fn finish(&self, a: usize, acc: &[f32], extra_acc: &[f32], acc_rays: &mut [f32]) {
        for (&k, &s) in self.ray[a].iter().zip(acc) {
            if k != u32::MAX {
                acc_rays[k as usize] = s;
            }
        }
        for (&k, &s) in self.extra[a].iter().zip(extra_acc) {
            acc_rays[k as usize] = s;
        }
    }
}

/// One binned class of a view as [`transpose_block`] takes it.
#[derive(Clone, Copy)]
pub(super) struct BinView<'a> {
    f0: &'a [f32],
    coef: &'a [f32],
    c: Class,
}

/// Adds the forward's sums of class `a` over planes `mb..mb + npl` to `acc` (one per bin,
/// continuing from the previous blocks) and `extra_acc` (one per extra ray). `scr` holds the
/// planes as rows of `row` cells, cell 0 at `ROW_PAD`, zero padding.
///
/// # Safety
/// AVX2 and FMA must be present.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn forward_block(
    bins: &Bins,
    a: usize,
    r: &ViewRays<f32>,
    scr: &[f32],
    row: usize,
    nb: usize,
    mb: usize,
    npl: usize,
    acc: &mut [f32],
    extra_acc: &mut [f32],
) {
    let Some(c) = bins.classes[a] else {
        return;
    };
    let nvec = c.nbins.div_ceil(8);
    assert!(
        npl <= MAX_PLANES
            && npl * row <= scr.len()
            && row >= nb + 2 * ROW_PAD
            && acc.len() >= nvec * 8
            && bins.f0[a].len() >= TPAD + nvec * 8
            && extra_acc.len() >= bins.extra[a].len()
    );
    let mut pm = [0f32; MAX_PLANES];
    for (p, pm) in pm.iter_mut().enumerate().take(npl) {
        *pm = shift(mb + p, c.sb).0;
    }
    let one = _mm256_set1_ps(1.0);
    let four = _mm256_set1_ps(4.0);
    let (zero_i, one_i) = (_mm256_setzero_si256(), _mm256_set1_epi32(1));
    let (four_i, eight_i) = (_mm256_set1_epi32(4), _mm256_set1_epi32(8));
    let f0 = bins.f0[a].as_ptr().add(TPAD);
    let nbi = nb as i32;
    // Plane by plane over the vectors of bins whose taps can reach the grid, the sums kept in
    // `acc` (the additions happen in the order of the plane-major kernels: bit-identical).
    for (p, &pm) in pm.iter().enumerate().take(npl) {
        let k = shift(mb + p, c.sb).1;
        // Vector v's lane q has its taps within cells base + q ..= base + q + 3, base =
        // bmin + 8·v + k: some in the grid only for base in [−10, nb).
        let v_lo = ((-10 - k - c.bmin).max(0) as usize).div_ceil(8);
        let v_hi = ((nbi - 1 - k - c.bmin).div_euclid(8) + 1).clamp(0, nvec as i32) as usize;
        if v_lo >= v_hi {
            continue;
        }
        let pv = _mm256_set1_ps(pm);
        // The lower taps `i` plus 4 minus `first` are the lanes' offsets from base + q.
        let b0 = c.bmin + 8 * v_lo as i32 + k;
        let mut first = _mm256_add_epi32(
            _mm256_setr_epi32(4, 5, 6, 7, 8, 9, 10, 11),
            _mm256_set1_epi32(b0),
        );
        let mut x = scr.as_ptr().add(p * row + ROW_PAD).offset(b0 as isize);
        for v in v_lo..v_hi {
            let (x0, x1, x2) = (
                _mm256_loadu_ps(x),
                _mm256_loadu_ps(x.add(1)),
                _mm256_loadu_ps(x.add(2)),
            );
            // The coordinates of `lanes::coords`: bit-identical taps and weights.
            let f = _mm256_add_ps(_mm256_loadu_ps(f0.add(8 * v)), pv);
            let i4 = _mm256_cvttps_epi32(_mm256_add_ps(f, four));
            let t = _mm256_sub_ps(f, _mm256_cvtepi32_ps(_mm256_sub_epi32(i4, four_i)));
            let sel = _mm256_sub_epi32(i4, first);
            let m0 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(sel, zero_i));
            let m1 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(sel, one_i));
            let v0 = _mm256_blendv_ps(_mm256_blendv_ps(x2, x1, m1), x0, m0);
            let v1 = _mm256_blendv_ps(x2, x1, m0);
            let xv = _mm256_add_ps(
                _mm256_mul_ps(_mm256_sub_ps(one, t), v0),
                _mm256_mul_ps(t, v1),
            );
            let s = acc.as_mut_ptr().add(8 * v);
            _mm256_storeu_ps(s, _mm256_add_ps(_mm256_loadu_ps(s), xv));
            first = _mm256_add_epi32(first, eight_i);
            x = x.add(8);
        }
    }
    let nb = nb as i32;
    // Rays whose bin was taken: one by one, the same formulas.
    for (&k, s) in bins.extra[a].iter().zip(extra_acc.iter_mut()) {
        let f0 = r.fb0[k as usize];
        for p in 0..npl {
            let f = f0 + pm[p];
            let i = (f + 4.0) as i32 - 4;
            let t = f - i as f32;
            if i < -1 || i >= nb {
                continue;
            }
            let x = scr.as_ptr().add(p * row + ROW_PAD).offset(i as isize);
            *s += (1.0 - t) * *x + t * *x.add(1);
        }
    }
}

/// Adds the contributions of `views` (binned views of one class) to planes `mb..mb + npl` of
/// the scratch slab `scr` (rows of `row` cells, cell 0 at `pad`, at least 7 cells after the `nb`
/// cells that are never read back), and those of their extra rays.
///
/// # Safety
/// AVX2 and FMA must be present.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn transpose_block(
    scr: &mut [f32],
    row: usize,
    pad: usize,
    nb: usize,
    mb: usize,
    npl: usize,
    views: &[BinView<'_>],
) {
    assert!(npl <= MAX_PLANES && npl * row <= scr.len() && pad + nb.div_ceil(8) * 8 <= row);
    for v in views {
        assert!(v.f0.len() == v.c.nbins + 2 * TPAD && v.coef.len() == v.f0.len());
    }
    for chunk in views.chunks(VIEWS) {
        views_block((scr.as_mut_ptr(), row, pad, nb, mb, npl), chunk);
    }
}

/// [`transpose_block`] for up to [`VIEWS`] views.
#[inline(always)]
unsafe fn views_block(
    (scr, row, pad, nb, mb, npl): (*mut f32, usize, usize, usize, usize, usize),
    views: &[BinView<'_>],
) {
    let iota = _mm256_setr_ps(0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0);
    // Per plane and view: `m·s`, and the table offset of cell 0's first candidate bin
    // (`u − 2` for `u = −k`).
    let mut pm = [[0f32; VIEWS]; MAX_PLANES];
    let mut off = [[0usize; VIEWS]; MAX_PLANES];
    for p in 0..npl {
        for (q, v) in views.iter().enumerate() {
            let (s, k) = shift(mb + p, v.c.sb);
            pm[p][q] = s;
            // −k − 2 − bmin ≥ 0: bmin = −kmax − 2.
            off[p][q] = (TPAD as i32 - k - 2 - v.c.bmin) as usize;
        }
    }
    let zero = _mm256_setzero_ps();
    for j0 in (0..nb).step_by(8) {
        let jf = _mm256_add_ps(_mm256_set1_ps(j0 as f32), iota);
        let (jm1, jp1) = (
            _mm256_sub_ps(jf, _mm256_set1_ps(1.0)),
            _mm256_add_ps(jf, _mm256_set1_ps(1.0)),
        );
        for p in 0..npl {
            let d = scr.add(p * row + pad + j0);
            let mut acc = _mm256_loadu_ps(d);
            for (q, v) in views.iter().enumerate() {
                let at = off[p][q] + j0;
                let (f0, cf) = (v.f0.as_ptr().add(at), v.coef.as_ptr().add(at));
                let pv = _mm256_set1_ps(pm[p][q]);
                let f = |c: usize| _mm256_add_ps(_mm256_loadu_ps(f0.add(c)), pv);
                let coef = |c: usize| _mm256_loadu_ps(cf.add(c));
                // Bin u − 2: f ∈ [j − 2, j], cell j is the upper tap (weight t = f − (j − 1)).
                let w = _mm256_max_ps(_mm256_sub_ps(f(0), jm1), zero);
                acc = _mm256_fmadd_ps(w, coef(0), acc);
                // Bin u − 1: f ∈ [j − 1, j + 1], either tap: the smaller of the two weights.
                let f1 = f(1);
                let w = _mm256_min_ps(_mm256_sub_ps(f1, jm1), _mm256_sub_ps(jp1, f1));
                acc = _mm256_fmadd_ps(w, coef(1), acc);
                // Bin u: f ∈ [j, j + 2], cell j is the lower tap (weight 1 − t = (j + 1) − f).
                let w = _mm256_max_ps(_mm256_sub_ps(jp1, f(2)), zero);
                acc = _mm256_fmadd_ps(w, coef(2), acc);
            }
            _mm256_storeu_ps(d, acc);
        }
    }
}

/// Adds the contributions of the extra rays of class `a` of `bins` (coefficients from `r`) to
/// planes `mb..mb + npl` of the slab `scr` (rows of `row` cells, cell 0 at `pad`).
pub(super) fn transpose_extra(
    bins: &Bins,
    a: usize,
    r: &ViewRays<f32>,
    scr: &mut [f32],
    (row, pad, nb): (usize, usize, usize),
    mb: usize,
    npl: usize,
) {
    let Some(c) = bins.classes[a] else {
        return;
    };
    for &k in &bins.extra[a] {
        let (f0, w) = (r.fb0[k as usize], r.coef[k as usize]);
        for p in 0..npl {
            let f = f0 + shift(mb + p, c.sb).0;
            let i = (f + 4.0) as i32 - 4;
            let t = f - i as f32;
            let cells = &mut scr[p * row + pad..p * row + pad + nb];
            if i >= 0 && (i as usize) < nb {
                cells[i as usize] += w * (1.0 - t);
            }
            if i + 1 >= 0 && ((i + 1) as usize) < nb {
                cells[(i + 1) as usize] += w * t;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// The facts the kernels rest on, for `f = f0 + m·s` rounded as the forward rounds it,
        /// bin `b = ⌊f0⌋` and shift `k = ⌊m·s⌋`: the lower tap `i` (`split`'s shifted
        /// truncation) is `b + k`, `b + k + 1`, or `b + k + 2` with `t = 0`; a cell `j` that
        /// gets a weight (`i = j`: `1 − t`, `i = j − 1`: `t`) has `b` in `j − k − 2 ..= j − k`,
        /// and the transpose's weight for that bin is the forward's.
        #[test]
        fn taps_and_weights_stay_in_the_bins_window(
            f0 in -600.0f32..600.0,
            s in -1.5f32..1.5,
            m in 0usize..4096,
            tiny in proptest::bool::ANY,
        ) {
            // Offsets just off integers, where the roundings bite.
            let f0 = if tiny { f0.round() - f32::EPSILON * f0.abs().max(1.0) } else { f0 };
            let (pm, k) = super::shift(m, s);
            let f = f0 + pm;
            let b = f0.floor() as i32;
            let i = (f + 4.0) as i32 - 4;
            let t = f - i as f32;
            prop_assume!(f >= -4.0);
            prop_assert!(i >= b + k && i <= b + k + 2, "tap {i}, bin {b}, shift {k}");
            prop_assert!(i < b + k + 2 || t == 0.0);
            for j in (b + k - 4)..=(b + k + 4) {
                let forward = if i == j {
                    1.0 - t
                } else if i + 1 == j {
                    t
                } else {
                    0.0
                };
                let jf = j as f32;
                let transpose = match j - k - b {
                    2 => (f - (jf - 1.0)).max(0.0),
                    1 => (f - (jf - 1.0)).min((jf + 1.0) - f),
                    0 => ((jf + 1.0) - f).max(0.0),
                    _ => 0.0,
                };
                prop_assert!(
                    (forward - transpose).abs() <= 1e-6 * f.abs().max(1.0),
                    "cell {j}, bin {b}, shift {k}: {forward} vs {transpose}"
                );
            }
        }
    }
}
