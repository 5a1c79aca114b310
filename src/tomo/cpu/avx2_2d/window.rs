//! Plane-blocked Joseph projector for 2D `f32` volumes on x86-64 with AVX2: windowed loads and
//! lane permutes instead of gathers.
//!
//! The planes of a block (`PLANES` consecutive planes along a class's dominant axis) are copied
//! into a zero-padded scratch slab whose rows run along the in-plane axis (a copy for the axis
//! that is contiguous in memory, a transposed copy for the other), shared by the views of a task.
//! Eight rays of a view sit in the lanes of a vector; their taps at a plane usually lie within
//! sixteen consecutive cells of a row (the rays are ordered along the in-plane axis, about one
//! cell apart), so two unaligned loads and lane permutes fetch them. Rays keep their running sum
//! in a register over the planes of the block. When the taps of a vector do not fit the window,
//! that plane is done lane by lane with the same formulas.
//!
//! The transpose walks the same blocks: each task owns blocks of planes, accumulates the taps of
//! all rays of a block of views into its scratch slab (padding absorbs the taps outside the grid)
//! and adds the slab to the volume. Parallel-beam views with a uniform detector are gathered cell
//! by cell ([`super::gather`]); the other views scatter their rays' tap pairs. Taps and weights
//! are those of the plane-major kernels ([`crate::tomo::cpu::planes`]): the coordinate at plane
//! `m` is `f0 + m·s` (a product and a sum, not fused), the taps `⌊f⌋`, `⌊f⌋ + 1` with weights
//! `1 − t`, `t`; so forward and transpose are exact transposes, and the forward is bit-identical
//! to the portable kernel.

use std::arch::x86_64::*;

use rayon::prelude::*;

use super::bins::{self, Bins};
use super::gather::{by_kind, gather_block, Uniform, MAX_PLANES};
use crate::tomo::cpu::lanes::{
    add_pair, coords, fits, lanes, parallel_halves, transpose8, window, window_halves,
};
use crate::tomo::cpu::ray::other_axes;
use crate::tomo::cpu::send_ptr::SendPtr;
use crate::tomo::cpu::view_rays::{Group, ViewRays};
use crate::tomo::geometry::VecGeometry;
use crate::tomo::grid::Grid;

/// Zero cells on each side of a scratch row: a window whose first tap is in `[−PAD, n)` reads
/// inside the row.
pub(super) const PAD: usize = 16;
/// Planes per block.
pub(super) const PLANES: usize = 16;
// The gather kernels keep per-plane parameters for at most MAX_PLANES planes.
const _: () = assert!(PLANES <= MAX_PLANES && PLANES <= bins::MAX_PLANES);
const _: () = assert!(FORWARD_PLANES <= bins::MAX_PLANES && PAD >= bins::ROW_PAD);
/// Planes per block of the forward (one scratch slab).
const FORWARD_PLANES: usize = 16;
/// Views whose rays are set up together in the transpose.
pub(super) const VIEW_BLOCK: usize = 64;
/// Most views of one forward task (their rays and sums stay in the core's cache).
const CHUNK: usize = 32;

/// Whether the windowed path can run: 2D, AVX2 and FMA present, plane and cell indices small
/// enough for exact `f32` plane numbers and `i32` offsets.
pub(crate) fn available(geom: &VecGeometry, grid: &Grid) -> bool {
    geom.ndim() == 2
        && grid.shape[0] < (1 << 24)
        && grid.shape[1] < (1 << 24)
        && grid.shape[0].saturating_mul(grid.shape[1]) < (i32::MAX as usize) / 2
        && is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
}

/// Layout of one class (dominant axis `a`) of a 2D volume.
#[derive(Clone, Copy)]
pub(super) struct Layout {
    /// Planes along `a`.
    pub(super) na: usize,
    /// Cells along the in-plane axis.
    pub(super) nb: usize,
    /// Volume stride of a plane step.
    pub(super) sa: usize,
    /// Volume stride of an in-plane step.
    pub(super) sb: usize,
}

impl Layout {
    pub(super) fn new(shape: [usize; 3], a: usize) -> Self {
        let (b, _) = other_axes(a);
        let st = [shape[1], 1];
        Self {
            na: shape[a],
            nb: shape[b],
            sa: st[a],
            sb: st[b],
        }
    }

    pub(super) fn row(&self) -> usize {
        self.nb + 2 * PAD
    }
}

/// Copies planes `mb..mb + npl` into the scratch rows (padding left as is).
///
/// # Safety
/// AVX2 must be present.
#[target_feature(enable = "avx2,fma")]
unsafe fn load_slab(vol: &[f32], l: &Layout, mb: usize, npl: usize, scr: &mut [f32]) {
    let row = l.row();
    if l.sb == 1 {
        for p in 0..npl {
            let src = &vol[(mb + p) * l.sa..(mb + p) * l.sa + l.nb];
            scr[p * row + PAD..p * row + PAD + l.nb].copy_from_slice(src);
        }
    } else {
        // The in-plane axis is the strided one: 8 × 8 tiles transposed in registers.
        let (j8, p8) = (l.nb / 8 * 8, npl / 8 * 8);
        assert!(l.sa == 1 && (l.nb - 1) * l.sb + mb + npl <= vol.len() && npl * row <= scr.len());
        for j in (0..j8).step_by(8) {
            for p in (0..p8).step_by(8) {
                // SAFETY: AVX2 checked by `available`; rows `j..j + 8` hold planes
                // `mb + p..mb + p + 8` (asserted above) and the scratch rows `p..p + 8`.
                unsafe {
                    let src = vol.as_ptr().add(j * l.sb + mb + p);
                    let r = std::array::from_fn(|q| _mm256_loadu_ps(src.add(q * l.sb)));
                    let c = transpose8(r);
                    for (q, c) in c.iter().enumerate() {
                        _mm256_storeu_ps(scr.as_mut_ptr().add((p + q) * row + PAD + j), *c);
                    }
                }
            }
        }
        for j in 0..l.nb {
            let src = &vol[j * l.sb + mb..];
            let from = if j < j8 { p8 } else { 0 };
            for p in from..npl {
                scr[p * row + PAD + j] = src[p];
            }
        }
    }
}

/// Adds the two scratch slabs (`PLANES` rows each) to planes `mb..mb + npl` of the volume.
///
/// # Safety
/// AVX2 must be present.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn store_slab(vol: &mut [f32], l: &Layout, mb: usize, npl: usize, scr: &[f32]) {
    let row = l.row();
    let (even, odd) = scr.split_at(PLANES * row);
    if l.sb == 1 {
        for p in 0..npl {
            let dst = &mut vol[(mb + p) * l.sa..(mb + p) * l.sa + l.nb];
            let (e, o) = (&even[p * row + PAD..], &odd[p * row + PAD..]);
            for ((d, e), o) in dst.iter_mut().zip(e).zip(o) {
                *d += *e + *o;
            }
        }
    } else {
        // The in-plane axis is the strided one: 8 × 8 tiles transposed in registers.
        let (j8, p8) = (l.nb / 8 * 8, npl / 8 * 8);
        assert!(l.sa == 1 && (l.nb - 1) * l.sb + mb + npl <= vol.len() && npl * row <= even.len());
        for j in (0..j8).step_by(8) {
            for p in (0..p8).step_by(8) {
                // SAFETY: AVX2 checked by `available`; rows `j..j + 8` hold planes
                // `mb + p..mb + p + 8` (asserted above) and the scratch rows `p..p + 8`.
                unsafe {
                    let r = std::array::from_fn(|q| {
                        let at = (p + q) * row + PAD + j;
                        _mm256_add_ps(
                            _mm256_loadu_ps(even.as_ptr().add(at)),
                            _mm256_loadu_ps(odd.as_ptr().add(at)),
                        )
                    });
                    let c = transpose8(r);
                    let dst = vol.as_mut_ptr().add(j * l.sb + mb + p);
                    for (q, c) in c.iter().enumerate() {
                        let d = dst.add(q * l.sb);
                        _mm256_storeu_ps(d, _mm256_add_ps(_mm256_loadu_ps(d), *c));
                    }
                }
            }
        }
        for j in 0..l.nb {
            let dst = &mut vol[j * l.sb + mb..];
            let from = if j < j8 { p8 } else { 0 };
            for p in from..npl {
                dst[p] += even[p * row + PAD + j] + odd[p * row + PAD + j];
            }
        }
    }
}

/// Forward projection (see the module documentation); `sino` is `[view][u]`.
pub(crate) fn forward(geom: &VecGeometry, grid: &Grid, vol: &[f32], sino: &mut [f32]) {
    let nu = geom.nu();
    let nviews = geom.num_views();
    // At least two chunks of views per thread (load balance), at most CHUNK views per chunk
    // (bounded scratch); the slab copies are shared by the views of a chunk.
    let tasks = 2 * rayon::current_num_threads();
    let per_task = nviews.div_ceil(tasks).clamp(1, CHUNK);
    let shape = grid.shape;
    sino.par_chunks_mut(nu * per_task)
        .enumerate()
        .for_each_init(
            || {
                (
                    Vec::<ViewRays<f32>>::new(),
                    Vec::<Vec<f32>>::new(),
                    Vec::new(),
                    Vec::<(Bins, Vec<f32>, Vec<f32>)>::new(),
                )
            },
            |(rays, accs, scr, bins), (chunk, out)| {
                let first = chunk * per_task;
                let count = out.len() / nu;
                while rays.len() < count {
                    rays.push(ViewRays::new());
                    accs.push(Vec::new());
                    bins.push((Bins::new(), Vec::new(), Vec::new()));
                }
                for j in 0..count {
                    prepare(geom, grid, first + j, &mut rays[j], &mut bins[j].0, None);
                    accs[j].clear();
                    accs[j].resize(rays[j].det.len(), 0.0);
                }
                for a in 0..2 {
                    let l = Layout::new(shape, a);
                    let (lo, hi) = rays[..count]
                        .iter()
                        .filter(|r| r.class[a] < r.class[a + 1])
                        .fold((usize::MAX, 0), |(lo, hi), r| {
                            (lo.min(r.planes[a].0), hi.max(r.planes[a].1))
                        });
                    if lo >= hi {
                        continue;
                    }
                    scr.clear();
                    scr.resize(FORWARD_PLANES * l.row(), 0.0f32);
                    for (b, bacc, eacc) in bins[..count].iter_mut() {
                        let (nbin, nextra) = b.accumulators(a);
                        bacc.clear();
                        bacc.resize(nbin, 0.0);
                        eacc.clear();
                        eacc.resize(nextra, 0.0);
                    }
                    let mut mb = lo;
                    while mb < hi {
                        let npl = FORWARD_PLANES.min(hi - mb);
                        // SAFETY: AVX2 checked by `available`.
                        unsafe { load_slab(vol, &l, mb, npl, scr) };
                        for ((r, acc), (b, bacc, eacc)) in rays[..count]
                            .iter()
                            .zip(accs.iter_mut())
                            .zip(bins.iter_mut())
                        {
                            let (k0, k1) = (r.class[a], r.class[a + 1]);
                            if k0 == k1 {
                                continue;
                            }
                            if b.takes(a) {
                                // SAFETY: AVX2 and FMA checked by `available`; the scratch has
                                // `npl` rows of `l.row()` cells with `PAD` zeros on each side.
                                unsafe {
                                    bins::forward_block(
                                        b,
                                        a,
                                        r,
                                        scr,
                                        l.row(),
                                        l.nb,
                                        mb,
                                        npl,
                                        bacc,
                                        eacc,
                                    )
                                };
                                continue;
                            }
                            // SAFETY: AVX2 and FMA checked by `available`; the scratch has `npl`
                            // rows of `l.row()` cells.
                            unsafe {
                                forward_block(
                                    scr,
                                    &l,
                                    mb,
                                    npl,
                                    &r.fb0[k0..k1],
                                    &r.sb[k0..k1],
                                    &r.groups[r.gclass[a]..r.gclass[a + 1]],
                                    &mut acc[k0..k1],
                                )
                            };
                        }
                        mb += npl;
                    }
                    for ((b, bacc, eacc), acc) in bins[..count].iter().zip(accs.iter_mut()) {
                        if b.takes(a) {
                            b.finish(a, bacc, eacc, acc);
                        }
                    }
                }
                for j in 0..count {
                    let o = &mut out[j * nu..(j + 1) * nu];
                    o.iter_mut().for_each(|x| *x = 0.0);
                    let r = &rays[j];
                    for ((&d, &w), &s) in r.det.iter().zip(&r.w).zip(accs[j].iter()) {
                        o[d as usize] = s * w;
                    }
                }
            },
        );
}

/// Sets up the rays of `view` and bins them ([`Bins`], with the coefficients from the sinogram
/// row `coef` for the transpose); classes that are not binned get the ray order and groups of
/// the windowed kernels.
fn prepare(
    geom: &VecGeometry,
    grid: &Grid,
    view: usize,
    r: &mut ViewRays<f32>,
    b: &mut Bins,
    coef: Option<&[f32]>,
) {
    let shape = [grid.shape[0], grid.shape[1]];
    r.setup(geom, grid, view);
    if let Some(row) = coef {
        r.set_coefficients(row);
    }
    b.build(r, shape, coef.is_some());
    if (0..2).all(|a| r.class[a] == r.class[a + 1] || b.takes(a)) {
        r.no_groups();
        return;
    }
    // Ordering moves the rays: coefficients and bins again.
    r.orient(1);
    if let Some(row) = coef {
        r.set_coefficients(row);
    }
    b.build(r, shape, coef.is_some());
}

/// The exact transpose of [`forward`].
pub(crate) fn transpose(geom: &VecGeometry, grid: &Grid, sino: &[f32], vol: &mut [f32]) {
    vol.iter_mut().for_each(|x| *x = 0.0);
    let nu = geom.nu();
    let nviews = geom.num_views();
    let shape = grid.shape;
    let block = VIEW_BLOCK.min(nviews.max(1));
    let mut rays: Vec<ViewRays<f32>> = (0..block).map(|_| ViewRays::new()).collect();
    let mut uniform: Vec<(Uniform, Bins)> =
        (0..block).map(|_| (Uniform::new(), Bins::new())).collect();
    for first in (0..nviews).step_by(block) {
        let count = block.min(nviews - first);
        rays[..count]
            .par_iter_mut()
            .zip(uniform[..count].par_iter_mut())
            .enumerate()
            .for_each(|(j, (r, (u, b)))| {
                let view = first + j;
                let row = &sino[view * nu..(view + 1) * nu];
                prepare(geom, grid, view, r, b, Some(row));
                u.build(r, [shape[0], shape[1]], nu, [!b.takes(0), !b.takes(1)]);
            });
        let rays = &rays[..count];
        let uniform = &uniform[..count];
        for a in 0..2 {
            let l = Layout::new(shape, a);
            let nblocks = l.na.div_ceil(PLANES);
            // Parallel-beam views: binned rays, else (rays denser than the cells, with a
            // uniform detector) the pixel-driven gather.
            let binned: Vec<_> = uniform.iter().filter_map(|(_, b)| b.view(a)).collect();
            let gather = by_kind(
                uniform
                    .iter()
                    .filter(|(_, b)| !b.takes(a))
                    .filter_map(|(u, _)| u.view(a)),
            );
            let gathers = !binned.is_empty() || gather.iter().any(|g| !g.is_empty());
            // Each task owns whole blocks of planes: disjoint voxels.
            let slabs = SendPtr::new(vol);
            (0..nblocks).into_par_iter().for_each_init(
                || vec![0.0f32; 2 * PLANES * l.row()],
                |scr, blk| {
                    let mb = blk * PLANES;
                    let npl = PLANES.min(l.na - mb);
                    let mut any = false;
                    if gathers {
                        scr.iter_mut().for_each(|x| *x = 0.0);
                        any = true;
                        // SAFETY: AVX2 and FMA checked by `available`; the slab has `npl` rows
                        // of `l.row()` cells with `PAD ≥ 8` padding cells after the `nb` cells.
                        unsafe {
                            bins::transpose_block(scr, l.row(), PAD, l.nb, mb, npl, &binned);
                            gather_block(scr, l.row(), PAD, l.nb, mb, npl, &gather)
                        };
                    }
                    for (r, (u, b)) in rays.iter().zip(uniform) {
                        let (k0, k1) = (r.class[a], r.class[a + 1]);
                        let (lo, hi) = r.planes[a];
                        if k0 == k1 || hi <= mb || lo >= mb + npl {
                            continue;
                        }
                        if b.takes(a) {
                            bins::transpose_extra(b, a, r, scr, (l.row(), PAD, l.nb), mb, npl);
                            continue;
                        }
                        if u.takes(a) {
                            continue;
                        }
                        if !any {
                            scr.iter_mut().for_each(|x| *x = 0.0);
                            any = true;
                        }
                        // SAFETY: AVX2 and FMA checked by `available`; the scratch has `npl`
                        // rows of `l.row()` cells.
                        let (even, odd) = scr.split_at_mut(PLANES * l.row());
                        unsafe {
                            transpose_block(
                                even,
                                odd,
                                &l,
                                mb,
                                npl,
                                &r.fb0[k0..k1],
                                &r.sb[k0..k1],
                                &r.groups[r.gclass[a]..r.gclass[a + 1]],
                                &r.coef[k0..k1],
                            )
                        };
                    }
                    if any {
                        // SAFETY: planes `mb..mb + npl` of class `a` belong to this task alone,
                        // and `store_slab` touches only them; AVX2 checked by `available`.
                        unsafe { store_slab(slabs.slice_mut(), &l, mb, npl, scr) };
                    }
                },
            );
        }
    }
}

/// Whether, at every plane `m_first..=m_last`, the taps of the eight lanes fit the window
/// (lower taps within 15 cells above lane 0's, and lane 0's in `[−PAD, nb)`). Checked at the
/// two end planes with margins: each lane's coordinate `f` is affine in the plane number; for
/// `f ≥ −4` the computed lower tap is within one of `f` (below lane 0's tap −2 at an end this
/// need not hold, so such spans take the checked loop); so the lanes' offsets from lane 0,
/// within `[1, 13]` at both ends, are within `[0, 15]` in between.
#[inline(always)]
pub(super) unsafe fn safe_span(
    f0: __m256,
    s: __m256,
    m_first: usize,
    m_last: usize,
    nb: i32,
) -> bool {
    let mut ii = [[0i32; 8]; 2];
    let mut base = [0i32; 2];
    for (j, m) in [m_first, m_last].into_iter().enumerate() {
        let (_, _, i0, idx) = coords(f0, s, _mm256_set1_ps(m as f32));
        _mm256_storeu_si256(ii[j].as_mut_ptr() as *mut __m256i, idx);
        base[j] = i0;
    }
    base.iter().all(|&b| b >= -2 && b <= nb - 2)
        && ii
            .iter()
            .all(|v| v[1..].iter().all(|&x| (1..=13).contains(&x)))
}

/// Whether the first taps of both halves (lanes 0 and 4) stay in `[−PAD, nb + PAD − 8]` at every
/// plane `m_first..=m_last`, so that [`window_halves`] reads inside the padded rows. Each lane's
/// computed coordinate is monotone in the plane number (a rounded product, then a rounded sum),
/// so the two end planes bound it.
#[inline(always)]
unsafe fn bases_fit(f0: __m256, s: __m256, m_first: usize, m_last: usize, nb: i32) -> bool {
    let (lo, hi) = (-(PAD as i32), nb + PAD as i32 - 8);
    [m_first, m_last].into_iter().all(|m| {
        let (i, _, _, _) = coords(f0, s, _mm256_set1_ps(m as f32));
        let mut ii = [0i32; 8];
        _mm256_storeu_si256(ii.as_mut_ptr() as *mut __m256i, i);
        (lo..=hi).contains(&ii[0]) && (lo..=hi).contains(&ii[4])
    })
}

/// Planes `p0..p1` of the block (relative to `mb`) where vector `vi` may have taps.
#[inline(always)]
pub(super) fn vector_planes(vr: &[Group], vi: usize, mb: usize, npl: usize) -> (usize, usize) {
    let (lo, hi) = (vr[vi].lo, vr[vi].hi);
    let p0 = (lo as usize).saturating_sub(mb).min(npl);
    let p1 = (hi as usize).saturating_sub(mb).min(npl);
    (p0, p1)
}

#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
unsafe fn forward_block(
    scr: &[f32],
    l: &Layout,
    mb: usize,
    npl: usize,
    fb0: &[f32],
    sb: &[f32],
    vr: &[Group],
    acc: &mut [f32],
) {
    let n = fb0.len();
    let row = l.row();
    let nb = l.nb as i32;
    let one = _mm256_set1_ps(1.0);
    let mut k = 0;
    while k < n {
        let (p0, p1) = vector_planes(vr, k / 8, mb, npl);
        if p0 >= p1 {
            k += 8;
            continue;
        }
        let f0 = lanes(fb0, k, false);
        let s = lanes(sb, k, false);
        // Running sums continue from the previous blocks: the additions happen in the order
        // of the plane-major kernels (bit-identical results).
        let mut sum = lanes(acc, k, true);
        let mut mv = _mm256_set1_ps((mb + p0) as f32);
        if parallel_halves(f0, s) && bases_fit(f0, s, mb + p0, mb + p1 - 1, nb) {
            // Parallel rays whose halves keep their taps within eight cells, all in the
            // padded rows: half windows, no per-plane checks.
            for p in p0..p1 {
                let (i, t, _, _) = coords(f0, s, mv);
                mv = _mm256_add_ps(mv, one);
                let (v0, v1) = window_halves(scr.as_ptr().add(p * row + PAD), i);
                let x = _mm256_add_ps(
                    _mm256_mul_ps(_mm256_sub_ps(one, t), v0),
                    _mm256_mul_ps(t, v1),
                );
                sum = _mm256_add_ps(sum, x);
            }
            let mut out = [0f32; 8];
            _mm256_storeu_ps(out.as_mut_ptr(), sum);
            for (a, o) in acc[k..].iter_mut().zip(out) {
                *a = o;
            }
            k += 8;
            continue;
        }
        // A span proven to fit the window needs no per-plane checks.
        let safe = safe_span(f0, s, mb + p0, mb + p1 - 1, nb);
        for p in p0..p1 {
            let (i, t, i0, idx) = coords(f0, s, mv);
            mv = _mm256_add_ps(mv, one);
            let r = scr.as_ptr().add(p * row + PAD);
            if safe || fits(idx) {
                if !safe && (i0 + PAD as i32) as u32 >= (nb + PAD as i32) as u32 {
                    continue;
                }
                let (v0, v1) = window(r.offset(i0 as isize), idx);
                let x = _mm256_add_ps(
                    _mm256_mul_ps(_mm256_sub_ps(one, t), v0),
                    _mm256_mul_ps(t, v1),
                );
                sum = _mm256_add_ps(sum, x);
            } else {
                let mut ii = [0i32; 8];
                let mut tt = [0f32; 8];
                let mut x = [0f32; 8];
                _mm256_storeu_si256(ii.as_mut_ptr() as *mut __m256i, i);
                _mm256_storeu_ps(tt.as_mut_ptr(), t);
                let tap = |j: i32| {
                    if j >= 0 && j < nb {
                        *r.add(j as usize)
                    } else {
                        0.0
                    }
                };
                for q in 0..8 {
                    x[q] = (1.0 - tt[q]) * tap(ii[q]) + tt[q] * tap(ii[q] + 1);
                }
                sum = _mm256_add_ps(sum, _mm256_loadu_ps(x.as_ptr()));
            }
        }
        let mut out = [0f32; 8];
        _mm256_storeu_ps(out.as_mut_ptr(), sum);
        for (a, o) in acc[k..].iter_mut().zip(out) {
            *a = o;
        }
        k += 8;
    }
}

/// The transpose of [`forward_block`]: even lanes add their two taps to slab `even`, odd lanes
/// to slab `odd` (neighbouring rays' tap pairs overlap; keeping them in separate slabs keeps
/// the 8-byte read-modify-writes of one vector independent).
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
unsafe fn transpose_block(
    even: &mut [f32],
    odd: &mut [f32],
    l: &Layout,
    mb: usize,
    npl: usize,
    fb0: &[f32],
    sb: &[f32],
    vr: &[Group],
    coef: &[f32],
) {
    let n = fb0.len();
    let row = l.row();
    let nb = l.nb as i32;
    let one = _mm256_set1_ps(1.0);
    // Position of lane q's (a0, a1) pair after unpacklo/unpackhi.
    const PAIR: [usize; 8] = [0, 2, 8, 10, 4, 6, 12, 14];
    let mut k = 0;
    while k < n {
        let (p0, p1) = vector_planes(vr, k / 8, mb, npl);
        let c = lanes(coef, k, true);
        if p0 >= p1 || _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_NEQ_UQ>(c, _mm256_setzero_ps())) == 0
        {
            k += 8;
            continue;
        }
        let f0 = lanes(fb0, k, false);
        let s = lanes(sb, k, false);
        let mut mv = _mm256_set1_ps((mb + p0) as f32);
        let safe = safe_span(f0, s, mb + p0, mb + p1 - 1, nb);
        for p in p0..p1 {
            let (i, t, i0, idx) = coords(f0, s, mv);
            mv = _mm256_add_ps(mv, one);
            let a0 = _mm256_mul_ps(c, _mm256_sub_ps(one, t));
            let a1 = _mm256_mul_ps(c, t);
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
                // Cell offsets from the start of the scratch row (taps from −PAD on).
                let mut ii = [0u32; 8];
                let pad = _mm256_set1_epi32(PAD as i32);
                _mm256_storeu_si256(ii.as_mut_ptr() as *mut __m256i, _mm256_add_epi32(i, pad));
                // Read back through memory: scalar loads on the load ports instead of lane
                // extracts on the shuffle ports.
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::tomo::cpu::planes;
    use crate::tomo::Geometry;
    use crate::UniformPartition;

    fn grid(n: [usize; 2], lo: [f64; 2], hi: [f64; 2]) -> Grid {
        let mut g = Grid {
            shape: [n[0], n[1], 1],
            min: [lo[0], lo[1], 0.0],
            h: [1.0; 3],
            inv_h: [1.0; 3],
        };
        for k in 0..2 {
            g.h[k] = (hi[k] - lo[k]) / n[k] as f64;
            g.inv_h[k] = 1.0 / g.h[k];
        }
        g
    }

    fn random(n: usize, seed: u64) -> Vec<f32> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect()
    }

    /// A random parallel or fan-beam geometry over a random grid: random angle range and
    /// count, detector size (from much finer to much coarser than the cells), offsets.
    fn case() -> impl Strategy<Value = (Grid, Geometry)> {
        (
            (1usize..40, 1usize..40),
            (0.3f64..2.0, 0.3f64..2.0),
            (0.0f64..6.3, 0.1f64..6.3, 1usize..24),
            (1usize..90, 0.2f64..4.0, -0.5f64..0.5),
            any::<bool>(),
        )
            .prop_map(|((n0, n1), (e0, e1), (a0, da, na), (nu, dw, off), fan)| {
                let g = grid([n0, n1], [-e0, -e1 * 0.7], [e0 * 0.9, e1]);
                let angles = UniformPartition::new(&[a0], &[a0 + da], &[na]).unwrap();
                let det = UniformPartition::new(&[-dw + off], &[dw + off], &[nu]).unwrap();
                let geom = if fan {
                    Geometry::fan_flat(&angles, &det, 5.0, 3.0, off).unwrap()
                } else {
                    Geometry::parallel_2d_offset(&angles, &det, off).unwrap()
                };
                (g, geom)
            })
    }

    /// The windowed transpose of `y` agrees with the plane-major one up to the order of the
    /// additions (within 1e-5 of the largest value).
    fn transposes_agree(v: &VecGeometry, g: &Grid, y: &[f32]) -> Result<(), TestCaseError> {
        let n = g.shape[0] * g.shape[1];
        let (mut x1, mut x2) = (vec![0f32; n], vec![0f32; n]);
        transpose(v, g, y, &mut x1);
        planes::transpose(v, g, y, &mut x2, 3);
        let scale = x2
            .iter()
            .fold(0f32, |m, a| m.max(a.abs()))
            .max(f32::MIN_POSITIVE);
        for (a, b) in x1.iter().zip(&x2) {
            prop_assert!((a - b).abs() <= 1e-5 * scale, "transpose {a} vs {b}");
        }
        Ok(())
    }

    /// A random parallel-beam geometry whose detector cells are at least 0.75 of the larger
    /// volume cell side (so every view qualifies for the gather transpose), with random offsets
    /// and angles, over a random grid.
    fn gather_case() -> impl Strategy<Value = (Grid, Geometry)> {
        (
            (1usize..40, 1usize..40),
            (0.3f64..2.0, 0.3f64..2.0),
            (0.0f64..6.3, 0.1f64..6.3, 1usize..24),
            (2usize..90, 0.75f64..3.0, -0.5f64..0.5),
        )
            .prop_map(|((n0, n1), (e0, e1), (a0, da, na), (nu, dt, off))| {
                let g = grid([n0, n1], [-e0, -e1 * 0.7], [e0 * 0.9, e1]);
                let dt = dt * g.h[0].max(g.h[1]);
                let w = dt * nu as f64 / 2.0;
                let angles = UniformPartition::new(&[a0], &[a0 + da], &[na]).unwrap();
                let det = UniformPartition::new(&[-w + off], &[w + off], &[nu]).unwrap();
                let geom = Geometry::parallel_2d_offset(&angles, &det, off).unwrap();
                (g, geom)
            })
    }

    /// A detector 0.7 times finer than the cells puts two rays into some bins of most views,
    /// too many for the binned kernels: those views go to the pixel-driven gather, which agrees
    /// with the plane-major transpose; views near the diagonal are binned, with rays whose bin
    /// was taken done one by one.
    #[test]
    fn fine_detectors_go_to_the_gather() {
        let g = grid([48, 40], [-1.0, -1.0], [1.0, 0.8]);
        let (n, w) = (97, 97.0 * 0.7 * g.h[0] / 2.0);
        let angles = UniformPartition::new(&[0.1], &[3.2], &[16]).unwrap();
        let det = UniformPartition::new(&[-w + 0.01], &[w + 0.01], &[n]).unwrap();
        let geom = Geometry::parallel_2d_offset(&angles, &det, 0.01).unwrap();
        let v = geom.vec();
        if !available(v, &g) {
            return;
        }
        let (mut r, mut u, mut b) = (ViewRays::<f32>::new(), Uniform::new(), Bins::new());
        let (mut gathered, mut binned, mut extra) = (0, 0, 0);
        for view in 0..v.num_views() {
            prepare(v, &g, view, &mut r, &mut b, Some(&vec![1.0; v.nu()]));
            u.build(
                &r,
                [g.shape[0], g.shape[1]],
                v.nu(),
                [!b.takes(0), !b.takes(1)],
            );
            for a in 0..2 {
                if b.takes(a) {
                    binned += 1;
                    extra += b.accumulators(a).1;
                } else if u.takes(a) {
                    gathered += 1;
                }
            }
        }
        assert!(
            gathered >= 4 && binned >= 2 && extra >= 1,
            "{gathered} {binned} {extra}"
        );
        let ns = v.num_views() * v.nu();
        let x = random(g.shape[0] * g.shape[1], 7);
        let (mut s1, mut s2) = (vec![0f32; ns], vec![0f32; ns]);
        forward(v, &g, &x, &mut s1);
        planes::forward(v, &g, &x, &mut s2);
        assert!(s1 == s2, "forward differs");
        transposes_agree(v, &g, &random(ns, 8)).unwrap();
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Parallel beams with detector cells not much finer than the volume's go to the binned
        /// kernels or the pixel-driven gather (every class of two or more rays): the forward is
        /// bit-identical to the plane-major kernels, and the transpose agrees with theirs up to
        /// the order of the additions.
        #[test]
        fn parallel_views_match_plane_major_kernels(
            (g, geom) in gather_case(),
            seed in any::<u64>(),
        ) {
            let v = geom.vec();
            prop_assume!(available(v, &g));
            let (mut r, mut u, mut b) = (ViewRays::<f32>::new(), Uniform::new(), Bins::new());
            for view in 0..v.num_views() {
                prepare(v, &g, view, &mut r, &mut b, Some(&vec![1.0; v.nu()]));
                u.build(&r, [g.shape[0], g.shape[1]], v.nu(), [!b.takes(0), !b.takes(1)]);
                for a in 0..2 {
                    if r.class[a + 1] - r.class[a] >= 2 {
                        prop_assert!(u.takes(a) || b.takes(a));
                    }
                }
            }
            let x = random(g.shape[0] * g.shape[1], seed);
            let ns = v.num_views() * v.nu();
            let (mut s1, mut s2) = (vec![0f32; ns], vec![0f32; ns]);
            forward(v, &g, &x, &mut s1);
            planes::forward(v, &g, &x, &mut s2);
            prop_assert!(s1 == s2, "forward differs");
            transposes_agree(v, &g, &random(ns, seed ^ 1))?;
        }

        /// The windowed forward is bit-identical to the plane-major kernels, and the windowed
        /// transpose agrees with theirs up to the order of the additions.
        #[test]
        fn matches_plane_major_kernels((g, geom) in case(), seed in any::<u64>()) {
            let v = geom.vec();
            prop_assume!(available(v, &g));
            let x = random(g.shape[0] * g.shape[1], seed);
            let ns = v.num_views() * v.nu();
            let (mut s1, mut s2) = (vec![0f32; ns], vec![0f32; ns]);
            forward(v, &g, &x, &mut s1);
            planes::forward(v, &g, &x, &mut s2);
            prop_assert!(s1 == s2, "forward differs");
            transposes_agree(v, &g, &random(ns, seed ^ 1))?;
        }
    }
}
