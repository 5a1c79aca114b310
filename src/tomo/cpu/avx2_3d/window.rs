//! Joseph projector for 3D `f32` volumes on x86-64 with AVX2: groups of eight rays of one
//! detector column marched together, taps fetched by windowed loads and lane permutes.
//!
//! In a circular or helical cone beam (and in parallel beams) the rays of one detector column
//! share their track in the in-plane axis `b` and fan out along `c`, about one cell apart. When
//! `c` is the volume's contiguous axis (stride 1, the case for rays whose dominant axis is x or
//! y), the four taps of eight such rays at a plane lie in two rows of the plane, within seventeen
//! consecutive cells of each: four unaligned loads and permutes per row replace four gathers.
//! A group keeps its running sums in a register over all of its planes. Groups whose lanes do
//! not share the `b` tap, do not fit the window, or touch the volume's border at a plane are
//! done lane by lane at that plane, with the formulas of [`crate::tomo::cpu::planes`]; classes whose `c`
//! axis is not contiguous use the plane-major kernels.
//!
//! Detector columns whose rays all share their `b` track go to the column kernels of
//! [`super::column`] (the `b` interpolation once per column and plane, on whole rows); the
//! group kernels here take the others.
//!
//! Forward: parallel over views; the group kernel has the products and order of the additions
//! of the portable plane-major kernel. Transpose: the volume is split into slabs of planes
//! along each dominant axis, tasks own slabs (no atomics, no copies), and every group scatters
//! its taps with the same weights into the planes of the slab.

use std::arch::x86_64::*;

use rayon::prelude::*;

use super::column;
use super::layout::Layout;
use super::routes::{steps_pattern, ROUTES};
use crate::tomo::cpu::lanes::{add_pair, coords, fits, lanes_n, window};
use crate::tomo::cpu::planes;
use crate::tomo::cpu::send_ptr::SendPtr;
use crate::tomo::cpu::view_rays::{Group, ViewRays};
use crate::tomo::geometry::VecGeometry;
use crate::tomo::grid::Grid;

/// Planes per block: all groups of a view march through a block before the next one, so the
/// block's pages stay in the TLB and its rows in cache.
const PLANES: usize = 4;
// The column kernels take a block of planes at a time.
const _: () = assert!(PLANES <= column::MAX_PLANES);

/// Whether the windowed path can run: 3D, AVX2 and FMA present, indices small enough for exact
/// `f32` plane numbers and `i32` offsets.
pub(crate) fn available(geom: &VecGeometry, grid: &Grid) -> bool {
    geom.ndim() == 3
        && grid.shape.iter().all(|&n| n < (1 << 24))
        && grid.shape.iter().product::<usize>() < (i32::MAX as usize) / 2
        && is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
}

/// Where a group's taps at a plane are: `Fast` (shared `b` tap with both rows in the grid,
/// window fits; the window starts at volume offset `base`; `inner`: all of it inside the row),
/// `Outside` (no tap in the grid) or `Lanes` (lane by lane).
enum Taps {
    Fast { base: isize, inner: bool },
    Outside,
    Lanes,
}

#[inline(always)]
unsafe fn classify(l: &Layout, m: usize, ib: __m256i, ib0: i32, ic0: i32, idx: __m256i) -> Taps {
    let same_b = _mm256_movemask_epi8(_mm256_cmpeq_epi32(ib, _mm256_set1_epi32(ib0))) == -1;
    if same_b && fits(idx) {
        if ib0 < -1 || ib0 >= l.nb || ic0 >= l.nc || ic0 < -16 {
            return Taps::Outside;
        }
        if ib0 >= 0 && ib0 + 1 < l.nb {
            let base = (m * l.sa + ib0 as usize * l.sb) as isize + ic0 as isize;
            // Both rows' windows inside the allocation (cells outside the row are masked).
            if base >= 0 && base as usize + l.sb + 17 <= l.len {
                let inner = ic0 >= 0 && ic0 + 17 <= l.nc;
                return Taps::Fast { base, inner };
            }
        }
    }
    Taps::Lanes
}

/// Whether the lanes share their `b` track (bit-identical `fb0` and `sb`): then they share the
/// `b` taps and weights at every plane.
#[inline(always)]
unsafe fn shares_b(fb0: __m256, sb: __m256) -> bool {
    let zero = _mm256_setzero_si256();
    let same = |v: __m256| {
        let v = _mm256_castps_si256(v);
        let v0 = _mm256_permutevar8x32_epi32(v, zero);
        _mm256_movemask_epi8(_mm256_cmpeq_epi32(v, v0)) == -1
    };
    same(fb0) && same(sb)
}

/// [`classify`], with the common case (lanes sharing their `b` track, the window inside both
/// rows) tested first.
#[inline(always)]
unsafe fn taps_at(
    l: &Layout,
    m: usize,
    shared_b: bool,
    ib: __m256i,
    ib0: i32,
    ic0: i32,
    idx: __m256i,
) -> Taps {
    if shared_b && inner(l, ib0, ic0) && fits(idx) {
        Taps::Fast {
            base: (m * l.sa + ib0 as usize * l.sb + ic0 as usize) as isize,
            inner: true,
        }
    } else {
        classify(l, m, ib, ib0, ic0, idx)
    }
}

/// Whether both `b` rows of a window from lane 0's taps `(ib0, ic0)` are in the grid and the
/// seventeen cells of the window inside them (with [`fits`], [`classify`] gives `Fast` with
/// `inner` then).
#[inline(always)]
fn inner(l: &Layout, ib0: i32, ic0: i32) -> bool {
    (ib0 as u32) < (l.nb - 1) as u32 && ic0 >= 0 && ic0 + 17 <= l.nc
}

/// Prefetches both rows four cache lines ahead of the window (the next groups of the detector
/// column read there at the same plane), and the row that the next detector columns will need
/// (`next_row` from `p`, at the window's upper line). Prefetches do not fault, whatever the
/// address.
#[inline(always)]
unsafe fn prefetch_rows(p: *const f32, sb: usize, next_row: isize) {
    _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64) as *const i8);
    _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(sb + 64) as *const i8);
    _mm_prefetch::<_MM_HINT_T0>(p.wrapping_offset(next_row + 16) as *const i8);
}

/// The volume offset from a group's lower `b` row to the row that the following detector
/// columns of class `a` reach next: `b + 2` when the columns' `b` track increases, `b − 1` when
/// it decreases.
fn next_row(r: &ViewRays<f32>, a: usize, l: &Layout) -> isize {
    let (k0, k1) = (r.class[a], r.class[a + 1]);
    let (lo, hi) = r.planes[a];
    let mid = ((lo + hi) / 2) as f32;
    let key = |k: usize| r.fb0[k] + mid * r.sb[k];
    if k1 > k0 && key(k1 - 1) < key(k0) {
        -(l.sb as isize)
    } else {
        2 * l.sb as isize
    }
}

/// Lane masks of the `c` taps `ic` and `ic + 1` that are inside `[0, nc)`.
#[inline(always)]
unsafe fn c_masks(ic: __m256i, nc: i32) -> (__m256, __m256) {
    let lo = _mm256_cmpgt_epi32(ic, _mm256_set1_epi32(-1));
    let hi = _mm256_cmpgt_epi32(_mm256_set1_epi32(nc), ic);
    let lo1 = _mm256_cmpgt_epi32(ic, _mm256_set1_epi32(-2));
    let hi1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(nc - 1), ic);
    (
        _mm256_castsi256_ps(_mm256_and_si256(lo, hi)),
        _mm256_castsi256_ps(_mm256_and_si256(lo1, hi1)),
    )
}

/// Forward projection (see the module documentation); `sino` is `[view][u][v]`.
pub(crate) fn forward(geom: &VecGeometry, grid: &Grid, vol: &[f32], sino: &mut [f32]) {
    let (nu, nv) = (geom.nu(), geom.nv());
    let shape = grid.shape;
    sino.par_chunks_mut(nu * nv).enumerate().for_each_init(
        || {
            (
                ViewRays::<f32>::new(),
                Vec::<f32>::new(),
                Vec::new(),
                Vec::<f32>::new(),
            )
        },
        |(r, acc, cols, buf), (view, out)| {
            r.setup(geom, grid, view);
            r.orient(nv);
            acc.clear();
            acc.resize(r.det.len(), 0.0);
            for a in 0..3 {
                let (k0, k1) = (r.class[a], r.class[a + 1]);
                if k0 == k1 {
                    continue;
                }
                let l = Layout::new(shape, a);
                if l.sc != 1 {
                    let plane = l.plane();
                    let (lo, hi) = r.planes[a];
                    for m in lo..hi {
                        let slab = &vol[m * l.sa..];
                        planes::forward_plane(&plane, slab, m, r, k0, k1, &mut acc[k0..k1]);
                    }
                    continue;
                }
                let groups = &r.groups[r.gclass[a]..r.gclass[a + 1]];
                let ahead = next_row(r, a, &l);
                let (lo, hi) = r.planes[a];
                column::columns(r, groups, nv, cols);
                if buf.len() != column::buffer_len(l.nc as usize) {
                    *buf = column::buffer(l.nc as usize);
                }
                // Blocks of planes: the pages and cache lines of a few planes serve all groups.
                for mb in (lo..hi).step_by(PLANES) {
                    let me = (mb + PLANES).min(hi);
                    for col in cols.iter() {
                        let (m0, m1) = (col.lo.max(mb), col.hi.min(me));
                        if m0 >= m1 {
                            continue;
                        }
                        let col_groups = &groups[col.g0..col.g1];
                        if col.shared {
                            // SAFETY: AVX2 and FMA checked by `available`; `vol` is the whole
                            // volume of `l` (`l.sc == 1`), `buf` a buffer for `l.nc`.
                            unsafe {
                                column::forward_column(
                                    vol, &l, r, col_groups, col.track, m0, m1, ahead, buf, acc,
                                )
                            };
                            continue;
                        }
                        for g in col_groups {
                            let (m0, m1) = ((g.lo as usize).max(mb), (g.hi as usize).min(me));
                            if m0 >= m1 {
                                continue;
                            }
                            let (k, len) = (g.k as usize, g.len as usize);
                            // SAFETY: AVX2 and FMA checked by `available`; the group's rays
                            // are in `r`, `vol` is the whole volume of `l`.
                            unsafe {
                                forward_group(vol, &l, r, g, m0, m1, ahead, &mut acc[k..k + len])
                            };
                        }
                    }
                }
            }
            out.iter_mut().for_each(|x| *x = 0.0);
            for ((&d, &w), &s) in r.det.iter().zip(&r.w).zip(acc.iter()) {
                out[d as usize] = s * w;
            }
        },
    );
}

/// The ray parameters `fb0, sb, fc0, sc` of the group's lanes `k..k + len`.
#[inline(always)]
unsafe fn group_lanes(r: &ViewRays<f32>, k: usize, len: usize) -> (__m256, __m256, __m256, __m256) {
    (
        lanes_n(&r.fb0, k, len, false),
        lanes_n(&r.sb, k, len, false),
        lanes_n(&r.fc0, k, len, false),
        lanes_n(&r.sc, k, len, false),
    )
}

/// One tap's value `vol[j]` when `(jb, jc)` is in the grid, else 0.
#[inline(always)]
fn tap(vol: &[f32], l: &Layout, m: usize, jb: i32, jc: i32) -> f32 {
    if jb >= 0 && jb < l.nb && jc >= 0 && jc < l.nc {
        vol[m * l.sa + jb as usize * l.sb + jc as usize * l.sc]
    } else {
        0.0
    }
}

/// Adds the group's taps at planes `m0..m1` to its running sums `acc`, plane after plane.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
unsafe fn forward_group(
    vol: &[f32],
    l: &Layout,
    r: &ViewRays<f32>,
    g: &Group,
    m0: usize,
    m1: usize,
    next_row: isize,
    acc: &mut [f32],
) {
    let (k, len) = (g.k as usize, g.len as usize);
    let (fb0, sb, fc0, sc) = group_lanes(r, k, len);
    let one = _mm256_set1_ps(1.0);
    let mut sum = lanes_n(acc, 0, len, true);
    let mut mv = _mm256_set1_ps(m0 as f32);
    let shared_b = shares_b(fb0, sb);
    for m in m0..m1 {
        let (ib, tb, ib0, _) = coords(fb0, sb, mv);
        let (ic, tc, ic0, idx) = coords(fc0, sc, mv);
        mv = _mm256_add_ps(mv, one);
        let (wb0, wc0) = (_mm256_sub_ps(one, tb), _mm256_sub_ps(one, tc));
        let taps = taps_at(l, m, shared_b, ib, ib0, ic0, idx);
        match taps {
            Taps::Fast { base, inner } => {
                let p = vol.as_ptr().offset(base);
                prefetch_rows(p, l.sb, next_row);
                let (mut v00, mut v01) = window(p, idx);
                let (mut v10, mut v11) = window(p.add(l.sb), idx);
                if !inner {
                    // Cells outside the row are other voxels: masked to 0 (as if skipped).
                    let (k0, k1) = c_masks(ic, l.nc);
                    v00 = _mm256_and_ps(v00, k0);
                    v10 = _mm256_and_ps(v10, k0);
                    v01 = _mm256_and_ps(v01, k1);
                    v11 = _mm256_and_ps(v11, k1);
                }
                // The products and the order of the additions of the portable kernel.
                let mut x = _mm256_mul_ps(_mm256_mul_ps(wb0, wc0), v00);
                x = _mm256_add_ps(x, _mm256_mul_ps(_mm256_mul_ps(wb0, tc), v01));
                x = _mm256_add_ps(x, _mm256_mul_ps(_mm256_mul_ps(tb, wc0), v10));
                x = _mm256_add_ps(x, _mm256_mul_ps(_mm256_mul_ps(tb, tc), v11));
                sum = _mm256_add_ps(sum, x);
            }
            Taps::Outside => {}
            Taps::Lanes => {
                let mut ii = [[0i32; 8]; 2];
                let mut tt = [[0f32; 8]; 2];
                _mm256_storeu_si256(ii[0].as_mut_ptr() as *mut __m256i, ib);
                _mm256_storeu_si256(ii[1].as_mut_ptr() as *mut __m256i, ic);
                _mm256_storeu_ps(tt[0].as_mut_ptr(), tb);
                _mm256_storeu_ps(tt[1].as_mut_ptr(), tc);
                let mut x = [0f32; 8];
                for q in 0..8 {
                    let (jb, jc, tb, tc) = (ii[0][q], ii[1][q], tt[0][q], tt[1][q]);
                    let mut v = (1.0 - tb) * (1.0 - tc) * tap(vol, l, m, jb, jc);
                    v += (1.0 - tb) * tc * tap(vol, l, m, jb, jc + 1);
                    v += tb * (1.0 - tc) * tap(vol, l, m, jb + 1, jc);
                    v += tb * tc * tap(vol, l, m, jb + 1, jc + 1);
                    x[q] = v;
                }
                sum = _mm256_add_ps(sum, _mm256_loadu_ps(x.as_ptr()));
            }
        }
    }
    if len == 8 {
        _mm256_storeu_ps(acc.as_mut_ptr(), sum);
    } else {
        let mut out = [0f32; 8];
        _mm256_storeu_ps(out.as_mut_ptr(), sum);
        for (a, o) in acc.iter_mut().zip(out) {
            *a = o;
        }
    }
}

/// The exact transpose of [`forward`]; `tasks` slabs per dominant axis.
pub(crate) fn transpose(
    geom: &VecGeometry,
    grid: &Grid,
    sino: &[f32],
    vol: &mut [f32],
    tasks: usize,
) {
    // Cleared by all threads (one alone would leave the others idle for a while).
    vol.par_chunks_mut(1 << 16).for_each(|c| c.fill(0.0));
    let (nu, nv) = (geom.nu(), geom.nv());
    let nviews = geom.num_views();
    let shape = grid.shape;
    let ptr = SendPtr::new(vol);
    let block = (2 * tasks).clamp(1, nviews.max(1));
    let mut views: Vec<(ViewRays<f32>, [Vec<column::Column>; 3])> = (0..block)
        .map(|_| (ViewRays::new(), Default::default()))
        .collect();
    for first in (0..nviews).step_by(block) {
        let count = block.min(nviews - first);
        views[..count]
            .par_iter_mut()
            .enumerate()
            .for_each(|(j, (r, cols))| {
                let view = first + j;
                r.setup(geom, grid, view);
                r.orient(nv);
                r.set_coefficients(&sino[view * nu * nv..(view + 1) * nu * nv]);
                for (a, cols) in cols.iter_mut().enumerate() {
                    column::columns(r, &r.groups[r.gclass[a]..r.gclass[a + 1]], nv, cols);
                }
            });
        let views = &views[..count];
        for a in 0..3 {
            let l = Layout::new(shape, a);
            let n_a = shape[a];
            // Slabs of at most 8 planes (the work per plane varies: rays cross the middle
            // planes more often than the outer ones), at least one per task.
            let k = tasks.max(n_a.div_ceil(8)).clamp(1, n_a);
            let nc = l.nc as usize;
            (0..k).into_par_iter().for_each_init(
                || column::buffer(nc),
                |buf, t| {
                    let ptr = &ptr;
                    let (p, q) = (t * n_a / k, (t + 1) * n_a / k);
                    // Block of planes outside, views inside: a block stays in cache while all views
                    // of the pass add to it.
                    for mb in (p..q).step_by(PLANES) {
                        let me = (mb + PLANES).min(q);
                        for (r, cols) in views {
                            let (k0, k1) = (r.class[a], r.class[a + 1]);
                            let (lo, hi) = r.planes[a];
                            if k0 == k1 || hi <= mb || lo >= me {
                                continue;
                            }
                            if l.sc != 1 {
                                let plane = l.plane();
                                for m in lo.max(mb)..hi.min(me) {
                                    // SAFETY: plane `m` (p <= m < q) of axis `a` is written only
                                    // by this task in this pass.
                                    unsafe {
                                        planes::transpose_plane(
                                            &plane,
                                            ptr.as_mut_ptr().add(m * l.sa),
                                            m,
                                            r,
                                            k0,
                                            k1,
                                        )
                                    };
                                }
                                continue;
                            }
                            let ahead = next_row(r, a, &l);
                            let groups = &r.groups[r.gclass[a]..r.gclass[a + 1]];
                            for col in &cols[a] {
                                let (m0, m1) = (col.lo.max(mb), col.hi.min(me));
                                if m0 >= m1 {
                                    continue;
                                }
                                let col_groups = &groups[col.g0..col.g1];
                                if col.shared {
                                    // SAFETY: as above; AVX2 and FMA checked by `available`, `buf`
                                    // a zero buffer for `l.nc`.
                                    unsafe {
                                        column::transpose_column(
                                            ptr.as_mut_ptr(),
                                            &l,
                                            r,
                                            col_groups,
                                            col.track,
                                            m0,
                                            m1,
                                            ahead,
                                            buf,
                                        )
                                    };
                                    continue;
                                }
                                for g in col_groups {
                                    let (m0, m1) =
                                        ((g.lo as usize).max(mb), (g.hi as usize).min(me));
                                    if m0 < m1 {
                                        // SAFETY: as above; AVX2 and FMA checked by `available`.
                                        unsafe {
                                            transpose_group(
                                                ptr.as_mut_ptr(),
                                                &l,
                                                r,
                                                g,
                                                m0,
                                                m1,
                                                ahead,
                                            )
                                        };
                                    }
                                }
                            }
                        }
                    }
                },
            );
        }
    }
}

/// Adds the taps of group `g` at planes `m0..m1` (see [`forward_group`]).
///
/// # Safety
/// `vol` points to the whole volume of `l`; no other thread accesses planes `m0..m1` of this
/// class meanwhile; AVX2 and FMA are present.
#[target_feature(enable = "avx2,fma")]
unsafe fn transpose_group(
    vol: *mut f32,
    l: &Layout,
    r: &ViewRays<f32>,
    g: &Group,
    m0: usize,
    m1: usize,
    next_row: isize,
) {
    let (k, len) = (g.k as usize, g.len as usize);
    let c = lanes_n(&r.coef, k, len, true);
    if _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_NEQ_UQ>(c, _mm256_setzero_ps())) == 0 {
        return;
    }
    let (fb0, sb, fc0, sc) = group_lanes(r, k, len);
    let one = _mm256_set1_ps(1.0);
    // Position of lane q's pair after unpacklo/unpackhi.
    const PAIR: [usize; 8] = [0, 2, 8, 10, 4, 6, 12, 14];
    let mut mv = _mm256_set1_ps(m0 as f32);
    let shared_b = shares_b(fb0, sb);
    for m in m0..m1 {
        let (ib, tb, ib0, _) = coords(fb0, sb, mv);
        let (ic, tc, ic0, idx) = coords(fc0, sc, mv);
        mv = _mm256_add_ps(mv, one);
        let (wb0, wc0) = (_mm256_sub_ps(one, tb), _mm256_sub_ps(one, tc));
        let taps = taps_at(l, m, shared_b, ib, ib0, ic0, idx);
        // The products of the portable kernel: coef · (wb · wc) (not needed by the profile).
        let products = || {
            [
                _mm256_mul_ps(c, _mm256_mul_ps(wb0, wc0)),
                _mm256_mul_ps(c, _mm256_mul_ps(wb0, tc)),
                _mm256_mul_ps(c, _mm256_mul_ps(tb, wc0)),
                _mm256_mul_ps(c, _mm256_mul_ps(tb, tc)),
            ]
        };
        match taps {
            Taps::Fast { base, inner } => {
                let p0 = vol.offset(base);
                let p1 = p0.add(l.sb);
                prefetch_rows(p0, l.sb, next_row);
                let pattern = if inner && shared_b {
                    steps_pattern(idx)
                } else {
                    None
                };
                if let Some(pat) = pattern {
                    // The lanes' c taps, one or two cells apart, routed into a sixteen-cell
                    // profile (shared by both rows: the lanes share their b weights), added to
                    // each row with two vector read-modify-writes.
                    let route = &ROUTES[pat];
                    let ((lo0, hi0), (lo1, hi1)) = (route.lane_vectors(0), route.lane_vectors(1));
                    let (c0, c1) = (_mm256_mul_ps(c, wc0), _mm256_mul_ps(c, tc));
                    let pick = |v: __m256, ix: __m256i| {
                        _mm256_blendv_ps(
                            _mm256_permutevar8x32_ps(v, ix),
                            _mm256_setzero_ps(),
                            _mm256_castsi256_ps(ix),
                        )
                    };
                    let prof = [
                        _mm256_add_ps(pick(c0, lo0), pick(c1, hi0)),
                        _mm256_add_ps(pick(c0, lo1), pick(c1, hi1)),
                    ];
                    for (row, w) in [(p0, wb0), (p1, tb)] {
                        for (h, v) in prof.iter().enumerate() {
                            let d = row.add(8 * h);
                            _mm256_storeu_ps(d, _mm256_fmadd_ps(w, *v, _mm256_loadu_ps(d)));
                        }
                    }
                    continue;
                }
                let [a00, a01, a10, a11] = products();
                let mut pr = [[0f32; 16]; 2];
                _mm256_storeu_ps(pr[0].as_mut_ptr(), _mm256_unpacklo_ps(a00, a01));
                _mm256_storeu_ps(pr[0].as_mut_ptr().add(8), _mm256_unpackhi_ps(a00, a01));
                _mm256_storeu_ps(pr[1].as_mut_ptr(), _mm256_unpacklo_ps(a10, a11));
                _mm256_storeu_ps(pr[1].as_mut_ptr().add(8), _mm256_unpackhi_ps(a10, a11));
                let mut ii = [0i32; 8];
                _mm256_storeu_si256(ii.as_mut_ptr() as *mut __m256i, idx);
                if inner {
                    // Even lanes, then odd ones (neighbouring lanes' pairs may overlap), one row
                    // after the other: overlapping accesses stay far apart.
                    for h in [[0, 2, 4, 6], [1, 3, 5, 7]] {
                        for q in h {
                            add_pair(p0.add(ii[q] as usize), pr[0].as_ptr().add(PAIR[q]));
                        }
                        for q in h {
                            add_pair(p1.add(ii[q] as usize), pr[1].as_ptr().add(PAIR[q]));
                        }
                    }
                } else {
                    // Only cells of the row: others may belong to another task's planes.
                    for q in 0..len {
                        let j = ii[q];
                        let jc = ic0 + j;
                        for (t, d) in [0, 1].into_iter().enumerate() {
                            if jc + d >= 0 && jc + d < l.nc {
                                let o = (j + d) as usize;
                                *p0.add(o) += pr[0][PAIR[q] + t];
                                *p1.add(o) += pr[1][PAIR[q] + t];
                            }
                        }
                    }
                }
            }
            Taps::Outside => {}
            Taps::Lanes => {
                let mut ii = [[0i32; 8]; 2];
                let mut aa = [[0f32; 8]; 4];
                _mm256_storeu_si256(ii[0].as_mut_ptr() as *mut __m256i, ib);
                _mm256_storeu_si256(ii[1].as_mut_ptr() as *mut __m256i, ic);
                for (t, v) in products().into_iter().enumerate() {
                    _mm256_storeu_ps(aa[t].as_mut_ptr(), v);
                }
                for q in 0..len {
                    let (jb, jc) = (ii[0][q], ii[1][q]);
                    for (t, (db, dc)) in [(0, 0), (0, 1), (1, 0), (1, 1)].into_iter().enumerate() {
                        let (xb, xc) = (jb + db, jc + dc);
                        if xb >= 0 && xb < l.nb && xc >= 0 && xc < l.nc {
                            let o = m * l.sa + xb as usize * l.sb + xc as usize * l.sc;
                            debug_assert!(o < l.len);
                            *vol.add(o) += aa[t][q];
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::tomo::Geometry;
    use crate::UniformPartition;

    fn random(n: usize, seed: u64) -> Vec<f32> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect()
    }

    /// Random cone (circular or helical, tilted axis or not) and parallel 3D geometries over
    /// random grids with anisotropic cells; detectors from much finer to much coarser than the
    /// cells, partly outside the volume's shadow.
    fn case() -> impl Strategy<Value = (Grid, Geometry)> {
        (
            (1usize..14, 1usize..14, 1usize..40),
            (0.4f64..1.5, 0.4f64..1.5, 0.4f64..1.5),
            (0.0f64..6.3, 0.1f64..6.3, 1usize..6),
            (1usize..12, 1usize..60, 0.3f64..3.0, 0.3f64..3.0),
            (0usize..3, -0.4f64..0.4, -0.3f64..0.3, any::<bool>()),
        )
            .prop_map(
                |(
                    (n0, n1, n2),
                    (e0, e1, e2),
                    (a0, da, na),
                    (nu, nv, du, dv),
                    (kind, off, pitch, tilt),
                )| {
                    let n = [n0, n1, n2];
                    let (lo, hi) = ([-e0, -e1 * 0.8, -e2], [e0 * 0.9, e1, e2 * 0.7]);
                    let mut g = Grid {
                        shape: n,
                        min: lo,
                        h: [1.0; 3],
                        inv_h: [1.0; 3],
                    };
                    for k in 0..3 {
                        g.h[k] = (hi[k] - lo[k]) / n[k] as f64;
                        g.inv_h[k] = 1.0 / g.h[k];
                    }
                    let angles = UniformPartition::new(&[a0], &[a0 + da], &[na]).unwrap();
                    let det = UniformPartition::new(
                        &[-du + off, -dv - off],
                        &[du + off, dv - off],
                        &[nu, nv],
                    )
                    .unwrap();
                    let axis = if tilt {
                        [0.1, -0.2, 1.0]
                    } else {
                        [0.0, 0.0, 1.0]
                    };
                    let geom = match kind {
                        0 => Geometry::cone_flat(&angles, &det, 4.0, 2.0, 0.0, axis, [off, 0.0]),
                        1 => Geometry::cone_flat(&angles, &det, 3.0, 3.0, pitch, axis, [0.0, off]),
                        _ => Geometry::parallel_3d(&angles, &det, axis, [off, -off]),
                    }
                    .unwrap();
                    (g, geom)
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The windowed forward and transpose agree with the plane-major kernels up to the
        /// order of the additions.
        #[test]
        fn matches_plane_major_kernels((g, geom) in case(), seed in any::<u64>()) {
            let v = geom.vec();
            prop_assume!(available(v, &g));
            let x = random(g.shape.iter().product(), seed);
            let ns = v.num_views() * v.nu() * v.nv();
            let (mut s1, mut s2) = (vec![0f32; ns], vec![0f32; ns]);
            forward(v, &g, &x, &mut s1);
            planes::forward(v, &g, &x, &mut s2);
            // Same taps and weights; the AVX2 gather kernel sums a plane's four taps pairwise.
            let top = s2.iter().fold(0f32, |m, a| m.max(a.abs())).max(f32::MIN_POSITIVE);
            for (a, b) in s1.iter().zip(&s2) {
                prop_assert!((a - b).abs() <= 1e-6 * top, "forward {a} vs {b}");
            }
            let y = random(ns, seed ^ 1);
            let (mut x1, mut x2) = (vec![0f32; x.len()], vec![0f32; x.len()]);
            transpose(v, &g, &y, &mut x1, 3);
            planes::transpose(v, &g, &y, &mut x2, 3);
            let scale = x2.iter().fold(0f32, |m, a| m.max(a.abs())).max(f32::MIN_POSITIVE);
            for (a, b) in x1.iter().zip(&x2) {
                prop_assert!((a - b).abs() <= 1e-5 * scale, "transpose {a} vs {b}");
            }
        }
    }
}
