//! Joseph's method for 3D `f32` volumes on x86-64 with AVX2, one detector column at a time.
//!
//! In circular and helical cone beams (and in parallel beams) the rays of one detector column
//! share their track in the in-plane axis `b` (bit-identical offsets and slopes, checked): at
//! a plane they all tap the same two rows `⌊f_b⌋`, `⌊f_b⌋ + 1` of the contiguous axis `c`,
//! with the same weights `1 − t_b`, `t_b`. So the `b` interpolation is done once per column and
//! plane, on whole rows:
//! - the forward blends the two rows into a zero-padded buffer, from which each group of eight
//!   rays interpolates along `c` with one windowed fetch;
//! - the transpose routes the `c` taps of every group of the column into a zero-padded profile
//!   buffer, then adds the profile to both rows with their weights and clears it in the same
//!   sweep. A group's taps at all planes of a block are worked out before any is added: each
//!   plane's chain (coordinates, step pattern, route load, permutes) is long, and side by side
//!   they overlap; plane after plane, the out-of-order window filled with one plane's waiting
//!   operations (13 % of the transpose's time on cone_256).
//!
//! Taps outside the grid fall into the buffers' padding (forward: zeros; transpose: cells that
//! are never added to the volume), or the row is skipped. The weights are the forward's
//! products in another order (`w_c · (w_b · x)` instead of `(w_b · w_c) · x`): the transpose is
//! exact up to the rounding of the products and sums.

use std::arch::x86_64::*;

use super::layout::Layout;
use super::routes::{steps_pattern, ROUTES};
use crate::tomo::cpu::lanes::{coords, fits, lanes_n, window};
use crate::tomo::cpu::view_rays::{detector_column, Group, ViewRays};

/// Zero cells on each side of a buffer row.
const PAD: usize = 32;

/// A run of groups of one detector column (indices into the class's groups), and whether all of
/// its rays share their `b` track.
#[derive(Clone, Copy, Debug)]
pub(super) struct Column {
    pub(super) g0: usize,
    pub(super) g1: usize,
    pub(super) shared: bool,
    /// The union of the groups' plane ranges.
    pub(super) lo: usize,
    pub(super) hi: usize,
    /// The `b` track of the first ray, `[fb0, sb]` (all rays' when `shared`).
    pub(super) track: [f32; 2],
}

/// The columns of the groups `groups` of a view with `nv` detector rows (groups do not straddle
/// columns, see `ViewRays::orient`).
pub(super) fn columns(r: &ViewRays<f32>, groups: &[Group], nv: usize, out: &mut Vec<Column>) {
    out.clear();
    let mut g0 = 0;
    while g0 < groups.len() {
        let col = detector_column(r.det[groups[g0].k as usize], nv);
        let mut g1 = g0 + 1;
        while g1 < groups.len() && col.contains(&(r.det[groups[g1].k as usize] as usize)) {
            g1 += 1;
        }
        let k0 = groups[g0].k as usize;
        let k1 = (groups[g1 - 1].k + groups[g1 - 1].len) as usize;
        let (fb, sb) = (r.fb0[k0].to_bits(), r.sb[k0].to_bits());
        let shared = (k0..k1).all(|k| r.fb0[k].to_bits() == fb && r.sb[k].to_bits() == sb)
            && r.fb0[k0].is_finite()
            && r.sb[k0].is_finite();
        let lo = groups[g0..g1].iter().map(|g| g.lo).min().unwrap_or(0) as usize;
        let hi = groups[g0..g1].iter().map(|g| g.hi).max().unwrap_or(0) as usize;
        out.push(Column {
            g0,
            g1,
            shared,
            lo,
            hi,
            track: [r.fb0[k0], r.sb[k0]],
        });
        g0 = g1;
    }
}

/// Planes a call of [`forward_column`] or [`transpose_column`] takes at most.
pub(super) const MAX_PLANES: usize = 4;

/// The buffer rows for [`forward_column`] and [`transpose_column`] (`MAX_PLANES` rows of `nc`
/// cells and the padding, all zero).
pub(super) fn buffer(nc: usize) -> Vec<f32> {
    vec![0.0; buffer_len(nc)]
}

/// The length of [`buffer`] for `nc` cells.
pub(super) fn buffer_len(nc: usize) -> usize {
    MAX_PLANES * (nc + 2 * PAD)
}

/// The column's shared `b` tap and weights at plane `m` (the forward's formulas), and which of
/// the two rows are in the grid; `None` when neither is.
#[inline(always)]
fn b_taps([fb0, sb]: [f32; 2], m: usize, nb: i32) -> Option<(i32, f32, f32, [bool; 2])> {
    let f = fb0 + m as f32 * sb;
    let ib = (f + 4.0) as i32 - 4;
    let tb = f - ib as f32;
    let rows = [ib >= 0 && ib < nb, ib + 1 >= 0 && ib + 1 < nb];
    (rows[0] || rows[1]).then_some((ib, 1.0 - tb, tb, rows))
}

/// Prefetches the row that the following detector columns reach (`ahead` from row `ib` of the
/// plane at `plane`, see `window::next_row`). Prefetches do not fault, whatever the address.
#[inline(always)]
unsafe fn prefetch_row(plane: *const f32, ib: i32, l: &Layout, ahead: isize) {
    let row = plane.wrapping_offset(ib as isize * l.sb as isize + ahead);
    for c in (0..l.nc as usize).step_by(16) {
        _mm_prefetch::<_MM_HINT_T0>(row.wrapping_add(c) as *const i8);
    }
}

/// The cells of a row, the planes `m0..m1` of a block and the stride of the buffer rows,
/// checked against what the kernels need (`c` contiguous, at most [`MAX_PLANES`] planes, a
/// buffer from [`buffer`], a column with groups).
fn block(l: &Layout, m0: usize, m1: usize, buf: &[f32], groups: &[Group]) -> (usize, usize, usize) {
    let nc = l.nc as usize;
    let (np, stride) = (m1 - m0, nc + 2 * PAD);
    assert!(
        l.sc == 1 && np <= MAX_PLANES && buf.len() == MAX_PLANES * stride && !groups.is_empty()
    );
    (nc, np, stride)
}

/// The planes `p0..p1` of the block `m0..` where group `g` may have taps.
#[inline(always)]
fn group_planes(g: &Group, m0: usize, np: usize) -> (usize, usize) {
    let p0 = (g.lo as usize).saturating_sub(m0).min(np);
    let p1 = (g.hi as usize).saturating_sub(m0).min(np);
    (p0, p1)
}

/// Adds the taps of the column's groups at planes `m0..m1` (at most [`MAX_PLANES`]) to their
/// running sums `acc` (one per ray of the view).
///
/// # Safety
/// AVX2 and FMA must be present; `vol` is the whole volume of `l` (with `l.sc == 1`), `buf`
/// from [`buffer`] for `l.nc`.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn forward_column(
    vol: &[f32],
    l: &Layout,
    r: &ViewRays<f32>,
    groups: &[Group],
    track: [f32; 2],
    m0: usize,
    m1: usize,
    ahead: isize,
    buf: &mut [f32],
    acc: &mut [f32],
) {
    let (nc, np, stride) = block(l, m0, m1, buf, groups);
    // Blends plane p's two rows with their weights into buffer row p (a row outside the grid
    // counts as zeros); false when neither row is in the grid.
    let blend = |p: usize, buf: &mut [f32]| -> bool {
        let m = m0 + p;
        let Some((ib, wb0, tb, rows)) = b_taps(track, m, l.nb) else {
            return false;
        };
        prefetch_row(vol.as_ptr().wrapping_add(m * l.sa), ib, l, ahead);
        let row = |d: i32| &vol[m * l.sa + (ib + d) as usize * l.sb..][..nc];
        let out = &mut buf[p * stride + PAD..p * stride + PAD + nc];
        match rows {
            [true, true] => {
                let (x0, x1) = (row(0), row(1));
                let (w0, w1) = (_mm256_set1_ps(wb0), _mm256_set1_ps(tb));
                let n8 = nc / 8 * 8;
                for c in (0..n8).step_by(8) {
                    let v = _mm256_mul_ps(w0, _mm256_loadu_ps(x0.as_ptr().add(c)));
                    let v = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x1.as_ptr().add(c)), v);
                    _mm256_storeu_ps(out.as_mut_ptr().add(c), v);
                }
                for c in n8..nc {
                    out[c] = tb.mul_add(x1[c], wb0 * x0[c]);
                }
            }
            [true, false] => out.iter_mut().zip(row(0)).for_each(|(o, x)| *o = wb0 * x),
            _ => out.iter_mut().zip(row(1)).for_each(|(o, x)| *o = tb * x),
        }
        true
    };
    let one = _mm256_set1_ps(1.0);
    // Plane after plane, the next plane's rows blended before this plane's groups read theirs
    // (the groups' loads then find the blends in the cache, not in the store queue).
    let mut next = blend(0, buf);
    for p in 0..np {
        let on = next;
        if p + 1 < np {
            next = blend(p + 1, buf);
        }
        if !on {
            continue;
        }
        let m = m0 + p;
        let mix = buf.as_ptr().add(p * stride + PAD);
        let mv = _mm256_set1_ps(m as f32);
        for g in groups {
            if (m as u32) < g.lo || (m as u32) >= g.hi {
                continue;
            }
            let (k, len) = (g.k as usize, g.len as usize);
            let fc0 = lanes_n(&r.fc0, k, len, false);
            let sc = lanes_n(&r.sc, k, len, false);
            let (ic, tc, ic0, idx) = coords(fc0, sc, mv);
            let (v0, v1) = if fits(idx) && ic0 >= -(PAD as i32) && ic0 + 17 <= l.nc + PAD as i32 {
                window(mix.offset(ic0 as isize), idx)
            } else {
                let mut ii = [0i32; 8];
                _mm256_storeu_si256(ii.as_mut_ptr() as *mut __m256i, ic);
                let at = |j: i32| {
                    if j >= 0 && j < l.nc {
                        *mix.add(j as usize)
                    } else {
                        0.0
                    }
                };
                let v0: [f32; 8] = std::array::from_fn(|q| at(ii[q]));
                let v1: [f32; 8] = std::array::from_fn(|q| at(ii[q] + 1));
                (_mm256_loadu_ps(v0.as_ptr()), _mm256_loadu_ps(v1.as_ptr()))
            };
            let x = _mm256_fmadd_ps(tc, v1, _mm256_mul_ps(_mm256_sub_ps(one, tc), v0));
            let a = &mut acc[k..k + len];
            if len == 8 {
                let q = a.as_mut_ptr();
                _mm256_storeu_ps(q, _mm256_add_ps(_mm256_loadu_ps(q), x));
            } else {
                let mut xs = [0f32; 8];
                _mm256_storeu_ps(xs.as_mut_ptr(), x);
                a.iter_mut().zip(xs).for_each(|(a, x)| *a += x);
            }
        }
    }
}

/// Adds the taps of the column's groups at planes `m0..m1` (at most [`MAX_PLANES`]; the
/// transpose of [`forward_column`]).
///
/// # Safety
/// AVX2 and FMA must be present; `vol` points to the whole volume of `l` (with `l.sc == 1`)
/// and no other thread accesses planes `m0..m1` of this class meanwhile; `buf` from [`buffer`]
/// for `l.nc`, left all zero.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn transpose_column(
    vol: *mut f32,
    l: &Layout,
    r: &ViewRays<f32>,
    groups: &[Group],
    track: [f32; 2],
    m0: usize,
    m1: usize,
    ahead: isize,
    buf: &mut [f32],
) {
    let (nc, np, stride) = block(l, m0, m1, buf, groups);
    let one = _mm256_set1_ps(1.0);
    let zero = _mm256_setzero_ps();
    let base = buf.as_mut_ptr().add(PAD);
    let (pad, nci) = (PAD as i32, l.nc);
    // Zero that the compiler cannot see: a blend with it stays one instruction (with a known
    // zero it becomes a compare and a mask).
    let opaque_zero = std::hint::black_box(zero);
    // Per plane: the shared `b` taps, the plane number in every lane, and whether a group
    // added to the profile.
    let mut bt = [None; MAX_PLANES];
    let mut mvs = [zero; MAX_PLANES];
    let mut touched = [false; MAX_PLANES];
    for p in 0..np {
        bt[p] = b_taps(track, m0 + p, l.nb);
        mvs[p] = _mm256_set1_ps((m0 + p) as f32);
        if let Some((ib, ..)) = bt[p] {
            prefetch_row(vol.wrapping_add((m0 + p) * l.sa), ib, l, ahead);
        }
    }
    // Planes p0..p1 of the group that have a row in the grid.
    let (first, last) = (
        bt.iter().take(np).position(|b| b.is_some()).unwrap_or(np),
        np - bt
            .iter()
            .take(np)
            .rev()
            .position(|b| b.is_some())
            .unwrap_or(np),
    );
    // Even groups, then odd ones: neighbouring groups' windows overlap, and a window read
    // right after an overlapping store would wait for it.
    let order = (0..groups.len())
        .step_by(2)
        .chain((1..groups.len()).step_by(2));
    // Adds the taps of a group at plane `p` (window from cell `ic0`, step pattern `pat`,
    // weights `c0`, `c1` of the lower and upper taps) to the profile: the lanes' taps, one or
    // two cells apart, routed into sixteen cells.
    let route = |p: usize, ic0: i32, pat: usize, c0: __m256, c1: __m256| {
        let pick = |v: __m256, ix: __m256i| {
            _mm256_blendv_ps(
                _mm256_permutevar8x32_ps(v, ix),
                opaque_zero,
                _mm256_castsi256_ps(ix),
            )
        };
        let route = &ROUTES[pat];
        let prof = base.add(p * stride);
        for h in 0..2 {
            let (lo_h, hi_h) = route.lane_vectors(h);
            let d = prof.offset(ic0 as isize + 8 * h as isize);
            let v = _mm256_add_ps(pick(c0, lo_h), pick(c1, hi_h));
            _mm256_storeu_ps(d, _mm256_add_ps(_mm256_loadu_ps(d), v));
        }
    };
    // A group's taps at plane `p`: the first cell of its window, the step pattern of the
    // lower taps, and the weights of the lower and upper taps; `None` unless the window fits
    // the padded profile and the pattern has a route.
    let taps = |c: __m256, fc0: __m256, sc: __m256, p: usize| {
        let (ic, tc, ic0, _) = coords(fc0, sc, mvs[p]);
        if ic0 < -pad || ic0 + 16 > nci + pad {
            return None;
        }
        let c0 = _mm256_mul_ps(c, _mm256_sub_ps(one, tc));
        Some((ic0, steps_pattern(ic)?, c0, _mm256_mul_ps(c, tc)))
    };
    // The same for every plane of a full block.
    let staged = |c: __m256, fc0: __m256, sc: __m256| {
        let mut st = [(0, 0, zero, zero); MAX_PLANES];
        for (p, s) in st.iter_mut().enumerate() {
            *s = taps(c, fc0, sc, p)?;
        }
        Some(st)
    };
    for g in order.map(|i| &groups[i]) {
        let (p0, p1) = group_planes(g, m0, np);
        let (p0, p1) = (p0.max(first), p1.min(last));
        if p0 >= p1 {
            continue;
        }
        let (k, len) = (g.k as usize, g.len as usize);
        let c = lanes_n(&r.coef, k, len, true);
        if _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_NEQ_UQ>(c, zero)) == 0 {
            continue;
        }
        let fc0 = lanes_n(&r.fc0, k, len, false);
        let sc = lanes_n(&r.sc, k, len, false);
        // (A plane between two with rows in the grid has one too: the b track is a line.)
        touched[p0..p1].iter_mut().for_each(|t| *t = true);
        if p1 - p0 == MAX_PLANES {
            // A full block: every plane's taps first, then the adds. The planes' chains
            // (coordinates, step pattern, route load) are independent and overlap; plane by
            // plane, each would wait for the last.
            if let Some(st) = staged(c, fc0, sc) {
                for (p, (ic0, pat, c0, c1)) in st.into_iter().enumerate() {
                    route(p, ic0, pat, c0, c1);
                }
                continue;
            }
        }
        for p in p0..p1 {
            if let Some((ic0, pat, c0, c1)) = taps(c, fc0, sc, p) {
                route(p, ic0, pat, c0, c1);
                continue;
            }
            // Lane by lane.
            let (ic, tc, _, _) = coords(fc0, sc, mvs[p]);
            let (c0, c1) = (
                _mm256_mul_ps(c, _mm256_sub_ps(one, tc)),
                _mm256_mul_ps(c, tc),
            );
            let prof = base.add(p * stride);
            let mut ii = [0i32; 8];
            let (mut w0, mut w1) = ([0f32; 8], [0f32; 8]);
            _mm256_storeu_si256(ii.as_mut_ptr() as *mut __m256i, ic);
            _mm256_storeu_ps(w0.as_mut_ptr(), c0);
            _mm256_storeu_ps(w1.as_mut_ptr(), c1);
            for q in 0..len {
                let j = ii[q];
                // Taps outside the row are dropped (cells 0..nc only are added back).
                for (d, w) in [(0, w0[q]), (1, w1[q])] {
                    if j + d >= 0 && j + d < nci {
                        *prof.add((j + d) as usize) += w;
                    }
                }
            }
        }
    }
    for p in 0..np {
        let Some((ib, wb0, tb, rows)) = bt[p] else {
            continue;
        };
        if !touched[p] {
            continue;
        }
        // The profile added to the rows in the grid with their weights, and cleared.
        let prof = base.add(p * stride);
        let row = |d: i32| vol.add((m0 + p) * l.sa + (ib + d) as usize * l.sb);
        let n8 = nc / 8 * 8;
        match rows {
            [true, true] => add_rows(prof, n8, [(row(0), wb0), (row(1), tb)]),
            [true, false] => add_rows(prof, n8, [(row(0), wb0)]),
            _ => add_rows(prof, n8, [(row(1), tb)]),
        }
        for c in n8..nc {
            for (d, w, on) in [(0, wb0, rows[0]), (1, tb, rows[1])] {
                if on {
                    let x = row(d).add(c);
                    *x = w.mul_add(*prof.add(c), *x);
                }
            }
        }
        // The padding and the tail (taps outside the row land there) cleared too.
        for c in (0..PAD).step_by(8) {
            _mm256_storeu_ps(prof.sub(PAD).add(c), zero);
            _mm256_storeu_ps(prof.add(n8 + c), zero);
        }
        _mm256_storeu_ps(prof.add(nc + PAD - 8), zero);
    }
}

/// Adds `w · prof[c]` to `x[c]` for every row `(x, w)` and clears `prof[c]`, for `c < n8` (a
/// multiple of eight).
#[inline(always)]
unsafe fn add_rows<const R: usize>(prof: *mut f32, n8: usize, rows: [(*mut f32, f32); R]) {
    let w = rows.map(|(_, w)| _mm256_set1_ps(w));
    let zero = _mm256_setzero_ps();
    for c in (0..n8).step_by(8) {
        let v = _mm256_loadu_ps(prof.add(c));
        _mm256_storeu_ps(prof.add(c), zero);
        for (r, (x, _)) in rows.iter().enumerate() {
            let q = x.add(c);
            _mm256_storeu_ps(q, _mm256_fmadd_ps(w[r], v, _mm256_loadu_ps(q)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tomo::grid::Grid;
    use crate::tomo::Geometry;
    use crate::UniformPartition;

    /// In a circular cone beam with the usual vertical axis every detector column shares its
    /// `b` track (so the column kernels take all of them); a tilted axis breaks that.
    #[test]
    fn cone_beam_columns_share_their_b_track() {
        let n = [12, 10, 14];
        let mut g = Grid {
            shape: n,
            min: [-1.0; 3],
            h: [1.0; 3],
            inv_h: [1.0; 3],
        };
        for k in 0..3 {
            g.h[k] = 2.0 / n[k] as f64;
            g.inv_h[k] = 1.0 / g.h[k];
        }
        let angles = UniformPartition::new(&[0.3], &[6.0], &[7]).unwrap();
        let det = UniformPartition::new(&[-2.0, -1.5], &[2.0, 1.5], &[20, 16]).unwrap();
        for (axis, shared) in [([0.0, 0.0, 1.0], true), ([0.3, -0.2, 1.0], false)] {
            let geom = Geometry::cone_flat(&angles, &det, 4.0, 2.0, 0.0, axis, [0.0; 2]).unwrap();
            let v = geom.vec();
            let mut r = ViewRays::<f32>::new();
            let mut cols = Vec::new();
            let mut count = [0; 2];
            for view in 0..v.num_views() {
                r.setup(v, &g, view);
                r.orient(v.nv());
                for a in 0..2 {
                    columns(
                        &r,
                        &r.groups[r.gclass[a]..r.gclass[a + 1]],
                        v.nv(),
                        &mut cols,
                    );
                    for c in &cols {
                        count[c.shared as usize] += 1;
                        assert!(c.g0 < c.g1 && c.lo <= c.hi);
                    }
                }
            }
            if shared {
                assert!(count[0] == 0 && count[1] > 20, "{count:?}");
            } else {
                assert!(count[0] > 20, "{count:?}");
            }
        }
    }
}
