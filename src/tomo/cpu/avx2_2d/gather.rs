//! Pixel-driven exact transpose of Joseph's method for 2D parallel beams with a uniform detector
//! (`f32`, x86-64 with AVX2).
//!
//! In a parallel-beam view all rays of a class (dominant axis `a`) share their slope `s`, and
//! with a uniform detector their offsets `f0` are affine in the detector index `r` (checked on
//! the set-up values, not assumed): `f0[r] ≈ α + r·β`. At plane `m` ray `r` sits at
//! `f = f0[r] + m·s` (the forward's rounded product and sum) and gives cell `j` the weight
//! `1 − |f − j|` when that is positive (for `⌊f⌋ = j` that is the forward's `1 − t`, for
//! `⌊f⌋ = j − 1` its `t`). So cell `j` gathers from the few rays with `f ∈ [j − 1, j + 1)`:
//! their indices form a range that the affine model bounds with a proven margin, and each
//! candidate's weight is then computed from its exact `f0[r]` (one windowed fetch from a row of
//! the `f0` values and one from a row of the coefficients `w · sino`); candidates outside the
//! range get weight 0.
//!
//! Eight neighbouring cells of a plane sit in the lanes of a vector and accumulate the views of
//! a block, four at a time, in a register: no scatter, no read-modify-write per ray.
//! Views that do not qualify (fan beams, irregular detectors, detector cells much finer than the
//! volume's) keep the scatter transpose of [`super::window`].

use std::arch::x86_64::*;

use crate::tomo::cpu::view_rays::ViewRays;

/// Zero cells on each side of a row of offsets or coefficients: a window whose first candidate
/// is in `[−ROW_PAD, nu)` reads inside the row.
const ROW_PAD: usize = 16;
/// Views whose contributions a vector of cells accumulates in a register.
const VIEWS: usize = 4;
/// Most planes of a block.
pub(super) const MAX_PLANES: usize = 16;

/// The gather data of one view: per class, the rows of offsets and coefficients by detector
/// index (padded), and the parameters of the candidate search.
pub(super) struct Uniform {
    rows: [Vec<f32>; 2],
    params: [Option<Params>; 2],
}

/// Parameters of one class of one view (see [`Uniform::build`]).
#[derive(Clone, Copy, Debug)]
struct Params {
    /// The rays' shared slope per plane.
    sb: f32,
    /// The candidate search at plane 0 (at plane `m` the offsets shift by `m·s`).
    search: Search,
    /// Detector cells.
    nu: usize,
}

/// The search for the candidates of cell `j` among rays whose positions are `f(r) ≈ α + r·β`
/// (`β > 0`) within `e` cells: ray `r` can give cell `j` a weight only if `f(r) ∈ [j − 1, j + 1)`,
/// so the candidates are `cands` consecutive rays from `⌈j / β + x0⌉`, `x0 = (−1 − α − ε) / β`,
/// where `ε` also covers the `f32` rounding of that expression.
#[derive(Clone, Copy, Debug)]
struct Search {
    /// `1 / β`.
    inv_beta: f32,
    /// `(−1 − α − ε) / β`.
    x0: f32,
    /// Candidates per cell (1 to 3).
    cands: usize,
    /// Whether the first candidates of eight neighbouring cells are at most 7 apart (then each
    /// candidate is one load and one permute).
    narrow: bool,
}

impl Search {
    /// The search for `n` rays with positions `α + r·β ± e`, `β > 0`, for cells whose `f32`
    /// expressions involve magnitudes up to `extent` cells (plane shifts included); `None` when
    /// a vector's candidates would not fit a 16-cell window (rays much denser than cells).
    fn new(alpha: f64, beta: f64, e: f64, extent: f64, n: usize) -> Option<Self> {
        if !(beta > 0.0 && beta < 1e6 && alpha.abs() < 1e7 && e < 1e-2 && extent < 1e7) {
            return None;
        }
        // Five roundings of terms at most `span` (in candidate units) in the f32 evaluation
        // of the first candidate.
        let span = (alpha.abs() + extent) / beta + n as f64;
        let e_x = span * 2f64.powi(-20);
        // The lower bound moved down by 2·e_x: the computed first candidate is at most the
        // exact one even with its rounding error.
        let eps = e + 2.0 * beta * e_x;
        let len = (2.0 + 2.0 * e) / beta + 4.0 * e_x;
        let cands = len.floor() as usize + 1;
        let spread = (7.0 / beta * (1.0 + 1e-6) + 2.0 * e_x).ceil() as usize;
        (cands <= 3 && spread + cands <= 16).then(|| Self {
            inv_beta: (1.0 / beta) as f32,
            x0: ((-1.0 - alpha - eps) / beta) as f32,
            cands,
            narrow: spread <= 7,
        })
    }

    /// Index into kernel tables: `3 · narrow + cands − 1`.
    fn kind(&self) -> usize {
        3 * self.narrow as usize + self.cands - 1
    }
}

/// One view of a class as the kernel takes it.
#[derive(Clone, Copy)]
pub(super) struct GatherView<'a> {
    /// `ROW_PAD` zeros, the offsets `f0` by oriented detector index, `ROW_PAD` zeros.
    f0: &'a [f32],
    /// The same for the coefficients `w · sino`.
    coef: &'a [f32],
    p: Params,
}

impl Uniform {
    pub(super) fn new() -> Self {
        Self {
            rows: [Vec::new(), Vec::new()],
            params: [None, None],
        }
    }

    /// Checks each class `a` of the view `r` (set up, ordered, with coefficients) with
    /// `classes[a]` and fills its rows when it qualifies: at least two rays, one shared slope,
    /// offsets affine in the detector index within 10⁻³ cells, rays not much denser than the
    /// cells (see [`Search::new`]), and sizes whose plane and cell numbers are exact in `f32`.
    /// `shape` is the volume's, `nu` the detector's cells.
    pub(super) fn build(
        &mut self,
        r: &ViewRays<f32>,
        shape: [usize; 2],
        nu: usize,
        classes: [bool; 2],
    ) {
        for a in 0..2 {
            self.params[a] = None;
            let (k0, k1) = (r.class[a], r.class[a + 1]);
            if !classes[a] || k1 - k0 < 2 || nu >= 1 << 24 {
                continue;
            }
            let (na, nb) = (shape[a], shape[1 - a]);
            let sb = r.sb[k0];
            if r.sb[k0..k1].iter().any(|s| s.to_bits() != sb.to_bits()) || !sb.is_finite() {
                continue;
            }
            // The rays with the smallest and largest detector index fix the affine model.
            let (mut lo, mut hi) = (k0, k0);
            for k in k0..k1 {
                if r.det[k] < r.det[lo] {
                    lo = k;
                }
                if r.det[k] > r.det[hi] {
                    hi = k;
                }
            }
            let (dlo, dhi) = (r.det[lo] as f64, r.det[hi] as f64);
            let slope = (r.fb0[hi] as f64 - r.fb0[lo] as f64) / (dhi - dlo);
            // Orient the detector index so that β > 0: index ρ(d) = d, or nu − 1 − d.
            let flip = slope < 0.0;
            let rho = |d: u32| {
                if flip {
                    nu - 1 - d as usize
                } else {
                    d as usize
                }
            };
            let beta = slope.abs();
            let alpha = r.fb0[lo] as f64 - rho(r.det[lo]) as f64 * beta;
            let fit = (k0..k1)
                .map(|k| (r.fb0[k] as f64 - (alpha + rho(r.det[k]) as f64 * beta)).abs())
                .fold(0.0f64, f64::max);
            if fit > 1e-3 {
                continue;
            }
            // The forward's `f = f0 + m·s` rounds once more than the model (`|f| ≤ nb + 1`
            // where it matters).
            let p_max = na as f64 * (sb as f64).abs();
            let e = fit + (nb as f64 + 2.0) * 2f64.powi(-23);
            let Some(search) = Search::new(alpha, beta, e, nb as f64 + p_max + 2.0, nu) else {
                continue;
            };
            if na >= 1 << 24 || nb >= 1 << 24 {
                continue;
            }
            let row = nu + 2 * ROW_PAD;
            let v = &mut self.rows[a];
            v.clear();
            v.resize(2 * row, 0.0);
            let (f0, coef) = v.split_at_mut(row);
            for k in k0..k1 {
                let i = ROW_PAD + rho(r.det[k]);
                f0[i] = r.fb0[k];
                coef[i] = r.coef[k];
            }
            self.params[a] = Some(Params { sb, search, nu });
        }
    }

    /// Whether class `a` of this view goes to the gather.
    pub(super) fn takes(&self, a: usize) -> bool {
        self.params[a].is_some()
    }

    /// Class `a` of this view for [`gather_block`], if it qualifies.
    pub(super) fn view(&self, a: usize) -> Option<GatherView<'_>> {
        let p = self.params[a]?;
        let (f0, coef) = self.rows[a].split_at(p.nu + 2 * ROW_PAD);
        Some(GatherView { f0, coef, p })
    }
}

/// Kinds of views: `3 · narrow + cands − 1`.
const KINDS: usize = 6;

/// Sorts the views by kernel: number of candidates per cell, and whether the candidates of a
/// vector's lanes are at most 7 apart (then each candidate is one load and one permute).
pub(super) fn by_kind<'a>(
    views: impl Iterator<Item = GatherView<'a>>,
) -> [Vec<GatherView<'a>>; KINDS] {
    let mut out: [Vec<GatherView<'a>>; KINDS] = Default::default();
    for v in views {
        out[v.p.search.kind()].push(v);
    }
    out
}

/// Adds the contributions of `views` (all of one class, by kind) to planes `mb..mb + npl` of
/// the scratch slab `scr` (rows of `row` cells, cell 0 at offset `pad`; the `nb` cells of a row
/// are followed by at least 7 cells that are never read back).
///
/// # Safety
/// AVX2 and FMA must be present.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn gather_block(
    scr: &mut [f32],
    row: usize,
    pad: usize,
    nb: usize,
    mb: usize,
    npl: usize,
    views: &[Vec<GatherView<'_>>; KINDS],
) {
    assert!(npl <= MAX_PLANES && npl * row <= scr.len() && pad + nb.div_ceil(8) * 8 <= row);
    for (kind, list) in views.iter().enumerate() {
        // A few views at a time: their rows stay in the L1 cache over the block's planes, and
        // the slab is read and written once per chunk of views.
        for chunk in list.chunks(VIEWS) {
            let block = (scr.as_mut_ptr(), row, pad, nb, mb, npl);
            match kind {
                0 => views_block::<1, false>(block, chunk),
                1 => views_block::<2, false>(block, chunk),
                2 => views_block::<3, false>(block, chunk),
                3 => views_block::<1, true>(block, chunk),
                4 => views_block::<2, true>(block, chunk),
                _ => views_block::<3, true>(block, chunk),
            }
        }
    }
}

/// [`gather_block`] for up to [`VIEWS`] views of one kind.
#[inline(always)]
unsafe fn views_block<const C: usize, const NARROW: bool>(
    (scr, row, pad, nb, mb, npl): (*mut f32, usize, usize, usize, usize, usize),
    views: &[GatherView<'_>],
) {
    let iota = _mm256_setr_ps(0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0);
    // Per plane and view: the forward's rounded product `m·s`, and the first candidate's
    // offset.
    let mut pm = [[0f32; VIEWS]; MAX_PLANES];
    let mut xc = [[0f32; VIEWS]; MAX_PLANES];
    let npl = npl.min(MAX_PLANES);
    for p in 0..npl {
        let mf = (mb + p) as f32;
        for (q, v) in views.iter().enumerate() {
            pm[p][q] = mf * v.p.sb;
            xc[p][q] = v.p.search.x0 - pm[p][q] * v.p.search.inv_beta;
        }
    }
    // Columns of eight cells through the block's planes: the views' windows move little from
    // plane to plane, so rows and slab stay in the L1 cache.
    for j0 in (0..nb).step_by(8) {
        let jf = _mm256_add_ps(_mm256_set1_ps(j0 as f32), iota);
        for p in 0..npl {
            let d = scr.add(p * row + pad + j0);
            let mut acc = _mm256_loadu_ps(d);
            for (q, v) in views.iter().enumerate() {
                acc = _mm256_add_ps(acc, view_sum::<C, NARROW>(v, pm[p][q], xc[p][q], jf));
            }
            _mm256_storeu_ps(d, acc);
        }
    }
}

/// `Σ_candidates weight · coef` of one view for the cells `jf` of plane `m` (`pm = m·s`, `xc`
/// the first candidate's offset at that plane).
#[inline(always)]
unsafe fn view_sum<const C: usize, const NARROW: bool>(
    v: &GatherView<'_>,
    pm: f32,
    xc: f32,
    jf: __m256,
) -> __m256 {
    let Some((at, idx0)) = first_candidates(jf, v.p.search.inv_beta, xc, v.p.nu) else {
        return _mm256_setzero_ps();
    };
    let (f0, cf) = (v.f0.as_ptr().add(at), v.coef.as_ptr().add(at));
    let pv = _mm256_set1_ps(pm);
    let mut sum = _mm256_setzero_ps();
    for c in 0..C {
        let f = _mm256_add_ps(fetch::<NARROW>(f0, idx0, c), pv);
        sum = _mm256_fmadd_ps(hat(f, jf), fetch::<NARROW>(cf, idx0, c), sum);
    }
    sum
}

/// The first candidates of the cells `jf` (`⌈j / β + xc⌉`) among `n` rays: the row offset of
/// lane 0's (rows padded by [`ROW_PAD`]) and each lane's offset from it, or `None` when no
/// candidate of these cells is a ray. Candidates increase with the lane, at most 15 above lane
/// 0's: all are outside `[0, n)` when lane 0's is at or past `n` or more than `ROW_PAD` before 0.
#[inline(always)]
unsafe fn first_candidates(
    jf: __m256,
    inv_beta: f32,
    xc: f32,
    n: usize,
) -> Option<(usize, __m256i)> {
    let x = _mm256_fmadd_ps(jf, _mm256_set1_ps(inv_beta), _mm256_set1_ps(xc));
    let first = _mm256_cvtps_epi32(_mm256_ceil_ps(x));
    let base = _mm256_cvtsi256_si32(first);
    if (base + ROW_PAD as i32) as u32 >= (n + ROW_PAD) as u32 {
        return None;
    }
    let idx0 = _mm256_sub_epi32(first, _mm256_set1_epi32(base));
    Some(((ROW_PAD as i32 + base) as usize, idx0))
}

/// Candidate `c` of each lane from the row at `p` (lane 0's first candidate): `p[idx0 + c]`.
/// With `NARROW` (`idx0 ≤ 7`) one load and one permute, else a 16-cell window.
#[inline(always)]
unsafe fn fetch<const NARROW: bool>(p: *const f32, idx0: __m256i, c: usize) -> __m256 {
    if NARROW {
        // The window of candidate c starts c cells further.
        _mm256_permutevar8x32_ps(_mm256_loadu_ps(p.add(c)), idx0)
    } else {
        let idx = _mm256_add_epi32(idx0, _mm256_set1_epi32(c as i32));
        let sel = _mm256_castsi256_ps(_mm256_slli_epi32::<28>(idx));
        _mm256_blendv_ps(
            _mm256_permutevar8x32_ps(_mm256_loadu_ps(p), idx),
            _mm256_permutevar8x32_ps(_mm256_loadu_ps(p.add(8)), idx),
            sel,
        )
    }
}

/// The interpolation weight `max(0, 1 − |f − j|)` of a ray at `f` for cell `j`: for `⌊f⌋ = j`
/// the forward's `1 − t`, for `⌊f⌋ = j − 1` its `t` (`f − j` is exact there), else 0.
#[inline(always)]
unsafe fn hat(f: __m256, jf: __m256) -> __m256 {
    let d = _mm256_andnot_ps(_mm256_set1_ps(-0.0), _mm256_sub_ps(f, jf));
    _mm256_max_ps(_mm256_sub_ps(_mm256_set1_ps(1.0), d), _mm256_setzero_ps())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The candidates of a cell (from the first one as the kernel computes it, in `f32`)
        /// include every ray whose position, off the affine model by at most `e`, is in
        /// `[j − 1, j + 1)`, at any plane shift.
        #[test]
        fn candidates_cover_the_rays(
            alpha in -300.0f64..300.0,
            beta in 0.7f64..4.0,
            e in 0.0f64..1e-3,
            n in 2usize..800,
            shift in -600.0f64..600.0,
            dev in proptest::collection::vec(-1.0f64..1.0, 800),
        ) {
            let extent = 600.0 + 512.0;
            let Some(s) = Search::new(alpha, beta, e, extent, n) else {
                return Ok(());
            };
            // The plane shift `pm` moves all positions; it enters the first candidate as in
            // the kernel.
            let pm = shift as f32;
            let xc = s.x0 - pm * s.inv_beta;
            for j in 0..512 {
                let first = (j as f32).mul_add(s.inv_beta, xc).ceil() as i64;
                for (r, d) in dev.iter().enumerate().take(n) {
                    let f = alpha + r as f64 * beta + d * e + pm as f64;
                    if f >= j as f64 - 1.0 && f < j as f64 + 1.0 {
                        let r = r as i64;
                        prop_assert!(
                            r >= first && r < first + s.cands as i64,
                            "cell {j}: ray {r} at {f}, candidates {first}..+{}", s.cands
                        );
                    }
                }
            }
        }
    }
}
