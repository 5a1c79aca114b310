//! Ray set-up for Joseph's method, shared by the forward projection and its transpose so that
//! both use bit-identical weights.
//!
//! The set-up is a part of the backends' shared [`Grid`] ([`Grid::view_rays`]); what it
//! produces and shares is in [`parts`], and [`avx2`] sets up four rays at a time.

#[cfg(target_arch = "x86_64")]
mod avx2;
mod parts;

pub(crate) use parts::{other_axes, Ray};
use parts::{Column, Direction};

use crate::tomo::geometry::{Beam, VecGeometry};
use crate::tomo::grid::Grid;
use crate::Scalar;

/// `⌊x⌋` for `|x| < 2⁶²` without a libm call.
#[inline(always)]
fn floor_small(x: f64) -> f64 {
    let t = x as i64 as f64;
    if t > x {
        t - 1.0
    } else {
        t
    }
}

/// Planes `m ∈ [0, n_a)` where `f0 + m s ∈ (−1, n)`, widened by one on each side (the kernels
/// check bounds per sample, so a conservative range is enough).
#[inline(always)]
fn plane_range(f0: f64, s: f64, inv_s: f64, n: usize, n_a: usize, lo: &mut f64, hi: &mut f64) {
    let nf = n as f64;
    if s == 0.0 {
        if !(f0 > -1.0 && f0 < nf) {
            *lo = f64::INFINITY;
        }
        return;
    }
    let (t0, t1) = ((-1.0 - f0) * inv_s, (nf - f0) * inv_s);
    let (t0, t1) = if t0 < t1 { (t0, t1) } else { (t1, t0) };
    // Clamped to [−1, n_a + 1] first, so floor and ceiling by integer conversion are exact.
    let cap = n_a as f64 + 1.0;
    let (t0, t1) = (t0.clamp(-1.0, cap), t1.clamp(-1.0, cap));
    *lo = lo.max(floor_small(t0));
    *hi = hi.min(-floor_small(-t1) + 1.0).min(n_a as f64);
}

impl Grid {
    /// Sets up the ray through detector pixel `(iu, iv)` of view `view`, or `None` when it misses
    /// the grid (the reference for [`Self::view_rays`]).
    #[cfg(test)]
    pub(crate) fn ray<T: Scalar>(
        &self,
        geom: &VecGeometry,
        view: usize,
        iu: usize,
        iv: usize,
    ) -> Option<Ray<T>> {
        let (q, d) = geom.ray(view, iu, iv);
        let dir = self.direction(&d, geom.ndim())?;
        self.ray_at(&q, &d, &dir)
    }

    /// The dominant axis of direction `d` in index space (the first of equals), or `None` for a
    /// zero direction.
    #[inline(always)]
    fn axis(&self, d: &[f64; 3], dims: usize) -> Option<usize> {
        let mut a = 0;
        let mut best = -1.0;
        for k in 0..dims {
            let s = (d[k] * self.inv_h[k]).abs();
            if s > best {
                best = s;
                a = k;
            }
        }
        (best > 0.0).then_some(a)
    }

    /// The slope per plane of the fractional index along `k` for a ray with direction `d`
    /// marched along `a` (`tm = h[a] / d[a]`), and its reciprocal (`inv_dk = 1 / d[k]`).
    #[inline(always)]
    fn slope(&self, tm: f64, d: &[f64; 3], a: usize, k: usize, inv_dk: f64) -> (f64, f64) {
        (
            tm * d[k] * self.inv_h[k],
            d[a] * inv_dk * self.h[k] * self.inv_h[a],
        )
    }

    /// The part of a ray's set-up that depends only on its direction `d` (shared by all rays of
    /// a parallel-beam view), or `None` for a zero direction.
    #[inline]
    pub(crate) fn direction(&self, d: &[f64; 3], dims: usize) -> Option<Direction> {
        // Dominant axis in index space. Products with 1/h; the reciprocals of all components
        // at once (independent divisions; a zero component gives an infinity that is never
        // used: its slope is 0).
        let a = self.axis(d, dims)?;
        let (b, c) = other_axes(a);
        let inv_d = [1.0 / d[0], 1.0 / d[1], 1.0 / d[2]];
        let inv_da = inv_d[a];
        let len = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let tm = self.h[a] * inv_da;
        let (sb, inv_sb) = self.slope(tm, d, a, b, inv_d[b]);
        let (sc, inv_sc) = if c < dims {
            self.slope(tm, d, a, c, inv_d[c])
        } else {
            (0.0, 0.0)
        };
        Some(Direction {
            a,
            three_d: c < dims,
            inv_da,
            w: self.h[a] * len * inv_da.abs(),
            sb,
            inv_sb,
            sc,
            inv_sc,
        })
    }

    /// The ray through the point `q` with direction `d` (set up by [`Self::direction`]), or
    /// `None` when it misses the grid.
    #[inline]
    pub(crate) fn ray_at<T: Scalar>(
        &self,
        q: &[f64; 3],
        d: &[f64; 3],
        dir: &Direction,
    ) -> Option<Ray<T>> {
        match (dir.a, dir.three_d) {
            (0, false) => self.ray_along::<T, 0, false>(q, d, dir),
            (1, false) => self.ray_along::<T, 1, false>(q, d, dir),
            (0, true) => self.ray_along::<T, 0, true>(q, d, dir),
            (1, true) => self.ray_along::<T, 1, true>(q, d, dir),
            _ => self.ray_along::<T, 2, true>(q, d, dir),
        }
    }

    /// [`Self::ray_at`] for dominant axis `A` (`dir.a == A`, `dir.three_d == C3`).
    #[inline(always)]
    fn ray_along<T: Scalar, const A: usize, const C3: bool>(
        &self,
        q: &[f64; 3],
        d: &[f64; 3],
        dir: &Direction,
    ) -> Option<Ray<T>> {
        let a = A;
        let (_, c) = other_axes(a);
        let (t0, fb0, mut lo, mut hi) = self.b_track(a, q, d, dir);
        let fc0 = if C3 { self.index_at(c, t0, q, d) } else { 0.0 };
        let n_a = self.shape[a];
        if C3 {
            plane_range(
                fc0,
                dir.sc,
                dir.inv_sc,
                self.shape[c],
                n_a,
                &mut lo,
                &mut hi,
            );
        }
        if !(lo < hi) {
            return None;
        }
        Some(Ray {
            a,
            fb0: T::of(fb0),
            sb: T::of(dir.sb),
            fc0: T::of(fc0),
            sc: T::of(dir.sc),
            w: T::of(dir.w),
            m0: lo as usize,
            m1: hi as usize,
        })
    }

    /// Calls `f(ray, det)` for every ray of `view` that hits the grid, in detector order
    /// (`det = iu · nv + iv`). The rays are those of the per-ray set-up `Grid::ray` (built for
    /// tests), bit for bit; the work that rays share is done once: the direction part for all
    /// rays of a parallel-beam view, and for point sources, the in-plane part (dominant axis,
    /// `b` track and its plane range) for the rays of a detector column whose inputs to it are
    /// bit-identical (a circular or helical cone beam with an untilted detector: the column runs
    /// along the rotation axis).
    pub(crate) fn view_rays<T: Scalar>(
        &self,
        geom: &VecGeometry,
        view: usize,
        mut f: impl FnMut(Ray<T>, usize),
    ) {
        let (nu, nv) = (geom.nu(), geom.nv());
        let dims = geom.ndim();
        match geom.beam() {
            Beam::Parallel => {
                let (_, d) = geom.ray(view, 0, 0);
                let Some(dir) = self.direction(&d, dims) else {
                    return;
                };
                match (dir.a, dir.three_d) {
                    (0, false) => self.parallel_rays::<T, 0, false>(geom, view, &d, &dir, f),
                    (1, false) => self.parallel_rays::<T, 1, false>(geom, view, &d, &dir, f),
                    (0, true) => self.parallel_rays::<T, 0, true>(geom, view, &d, &dir, f),
                    (1, true) => self.parallel_rays::<T, 1, true>(geom, view, &d, &dir, f),
                    _ => self.parallel_rays::<T, 2, true>(geom, view, &d, &dir, f),
                }
            }
            Beam::Point => {
                // The four-ray set-up evaluates flat detectors only.
                let simd = simd() && !geom.detector().is_curved();
                for iu in 0..nu {
                    let mut col: Option<Column> = None;
                    let mut iv = 0;
                    while iv < nv {
                        #[cfg(target_arch = "x86_64")]
                        if let (true, Some(cl)) = (simd && dims == 3 && iv + 4 <= nv, &col) {
                            let v = &geom.views()[view];
                            // SAFETY: AVX2 checked by `simd`; the grid is 3D.
                            let quad = (nu, nv);
                            if unsafe { avx2::column_quad(self, cl, v, quad, (iu, iv), &mut f) } {
                                iv += 4;
                                continue;
                            }
                        }
                        let (q, d) = geom.ray(view, iu, iv);
                        iv += 1;
                        let r = match &col {
                            Some(cl) if dims == 3 && cl.matches(self, &q, &d) => {
                                self.column_ray(cl, &q, &d)
                            }
                            _ => {
                                let Some(dir) = self.direction(&d, dims) else {
                                    continue;
                                };
                                col = (dims == 3).then(|| self.column(&q, &d, &dir));
                                self.ray_at(&q, &d, &dir)
                            }
                        };
                        if let Some(r) = r {
                            f(r, iu * nv + iv - 1);
                        }
                    }
                }
            }
        }
    }

    /// The rays of a parallel-beam view with direction `d` (dominant axis `A`).
    #[inline(never)]
    fn parallel_rays<T: Scalar, const A: usize, const C3: bool>(
        &self,
        geom: &VecGeometry,
        view: usize,
        d: &[f64; 3],
        dir: &Direction,
        mut f: impl FnMut(Ray<T>, usize),
    ) {
        let (nu, nv) = (geom.nu(), geom.nv());
        let simd = simd();
        // Quads along the faster detector index: v in 3D, u in 2D.
        let along_v = nv > 1;
        let (outer, inner) = if along_v { (nu, nv) } else { (1, nu) };
        for o in 0..outer {
            let mut i = 0;
            while i < inner {
                let (iu, iv) = if along_v { (o, i) } else { (i, 0) };
                #[cfg(target_arch = "x86_64")]
                if simd && i + 4 <= inner {
                    let v = &geom.views()[view];
                    let (shape, at) = ((nu, nv), (iu, iv));
                    // SAFETY: AVX2 checked by `simd`.
                    if unsafe {
                        avx2::parallel_quad::<T, A, C3>(self, v, shape, d, dir, at, along_v, &mut f)
                    } {
                        i += 4;
                        continue;
                    }
                }
                let (q, _) = geom.ray(view, iu, iv);
                if let Some(r) = self.ray_along::<T, A, C3>(&q, d, dir) {
                    f(r, iu * nv + iv);
                }
                i += 1;
            }
        }
    }

    /// The fractional index along axis `k` of the point `q + t0·d`.
    #[inline(always)]
    fn index_at(&self, k: usize, t0: f64, q: &[f64; 3], d: &[f64; 3]) -> f64 {
        (q[k] + t0 * d[k] - self.min[k]) * self.inv_h[k] - 0.5
    }

    /// A ray's position `t0` at the first plane centre along its dominant axis `a`, its
    /// fractional `b` index `fb0` there, and the planes `[lo, hi)` its `b` track allows.
    #[inline(always)]
    fn b_track(
        &self,
        a: usize,
        q: &[f64; 3],
        d: &[f64; 3],
        dir: &Direction,
    ) -> (f64, f64, f64, f64) {
        let (b, _) = other_axes(a);
        let t0 = (self.min[a] + 0.5 * self.h[a] - q[a]) * dir.inv_da;
        let fb0 = self.index_at(b, t0, q, d);
        let n_a = self.shape[a];
        let (mut lo, mut hi) = (0.0f64, n_a as f64);
        plane_range(
            fb0,
            dir.sb,
            dir.inv_sb,
            self.shape[b],
            n_a,
            &mut lo,
            &mut hi,
        );
        (t0, fb0, lo, hi)
    }

    /// The shared part of the rays of a 3D detector column, from its ray `(q, d)`.
    fn column(&self, q: &[f64; 3], d: &[f64; 3], dir: &Direction) -> Column {
        let a = dir.a;
        let (b, _) = other_axes(a);
        let (t0, fb0, lo, hi) = self.b_track(a, q, d, dir);
        Column {
            a,
            key: [q[a], q[b], d[a], d[b]].map(f64::to_bits),
            inv_da: dir.inv_da,
            tm: self.h[a] * dir.inv_da,
            t0,
            fb0,
            sb: dir.sb,
            lo,
            hi,
        }
    }

    /// The ray `(q, d)` of a column whose shared part is `cl` ([`Column::matches`]): what
    /// [`Self::direction`] and [`Self::ray_at`] compute, with the shared terms taken from `cl`.
    #[inline]
    fn column_ray<T: Scalar>(&self, cl: &Column, q: &[f64; 3], d: &[f64; 3]) -> Option<Ray<T>> {
        let a = cl.a;
        let (_, c) = other_axes(a);
        let inv_dc = 1.0 / d[c];
        let len = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let (sc, inv_sc) = self.slope(cl.tm, d, a, c, inv_dc);
        let fc0 = self.index_at(c, cl.t0, q, d);
        let n_a = self.shape[a];
        let (mut lo, mut hi) = (cl.lo, cl.hi);
        plane_range(fc0, sc, inv_sc, self.shape[c], n_a, &mut lo, &mut hi);
        if !(lo < hi) {
            return None;
        }
        Some(Ray {
            a,
            fb0: T::of(cl.fb0),
            sb: T::of(cl.sb),
            fc0: T::of(fc0),
            sc: T::of(sc),
            w: T::of(self.h[a] * len * cl.inv_da.abs()),
            m0: lo as usize,
            m1: hi as usize,
        })
    }
}

/// Whether the AVX2 set-up can run.
#[inline]
fn simd() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

impl Column {
    /// Whether ray `(q, d)` shares this column's part of the set-up (same dominant axis, same
    /// bits of the inputs to the shared terms).
    #[inline]
    fn matches(&self, grid: &Grid, q: &[f64; 3], d: &[f64; 3]) -> bool {
        let a = self.a;
        let (b, _) = other_axes(a);
        let k = &self.key;
        // Scalar comparisons (an array compare here stores and reloads the key: a stalled
        // store forwarding per ray).
        q[a].to_bits() == k[0]
            && q[b].to_bits() == k[1]
            && d[a].to_bits() == k[2]
            && d[b].to_bits() == k[3]
            && grid.axis(d, 3) == Some(a)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::tomo::geometry::View;
    use crate::tomo::Geometry;
    use crate::UniformPartition;

    fn grid(n: [usize; 3], e: [f64; 3]) -> Grid {
        let mut g = Grid {
            shape: n,
            min: [0.0; 3],
            h: [1.0; 3],
            inv_h: [1.0; 3],
        };
        for k in 0..3 {
            g.min[k] = -e[k] * 0.8;
            g.h[k] = (e[k] * 1.7) / n[k] as f64;
            g.inv_h[k] = 1.0 / g.h[k];
        }
        g
    }

    fn angles_of(a0: f64, da: f64, n: usize) -> UniformPartition {
        UniformPartition::new(&[a0], &[a0 + da], &[n]).unwrap()
    }

    /// Parallel 3D, circular and helical cone beams with offsets, a cone beam given view by
    /// view with a tilted detector (its columns share nothing), parallel 2D and fan beams, over
    /// random grids.
    fn case() -> impl Strategy<Value = (Grid, Geometry)> {
        (
            (1usize..24, 1usize..24, 1usize..24),
            (0.3f64..2.0, 0.3f64..2.0, 0.3f64..2.0),
            (0.0f64..6.3, 0.1f64..6.3, 1usize..6),
            (1usize..12, 1usize..12, 0.5f64..4.0, -0.5f64..0.5),
            (0usize..6, -1.0f64..1.0),
        )
            .prop_map(|(n, e, (a0, da, na), (nu, nv, dw, off), (kind, pitch))| {
                let mut g = grid([n.0, n.1, n.2], [e.0, e.1, e.2]);
                if kind >= 4 {
                    // 2D: a third axis of one unit cell; detectors up to 4·12 pixels.
                    (g.shape[2], g.min[2], g.h[2], g.inv_h[2]) = (1, 0.0, 1.0, 1.0);
                    let det = UniformPartition::new(&[-dw + off], &[dw], &[nu * nv]).unwrap();
                    let geom = if kind == 4 {
                        Geometry::parallel_2d_offset(&angles_of(a0, da, na), &det, off).unwrap()
                    } else {
                        Geometry::fan_flat(&angles_of(a0, da, na), &det, 4.0, 2.0, off).unwrap()
                    };
                    return (g, geom);
                }
                let angles = UniformPartition::new(&[a0], &[a0 + da], &[na]).unwrap();
                let det =
                    UniformPartition::new(&[-dw, -dw * 0.7], &[dw, dw * 0.9], &[nu, nv]).unwrap();
                let z = [0.0, 0.0, 1.0];
                let geom = match kind {
                    0 => Geometry::parallel_3d(&angles, &det, z, [off, -off]).unwrap(),
                    1 => Geometry::cone_flat(&angles, &det, 4.0, 2.0, 0.0, z, [off, off]).unwrap(),
                    2 => {
                        Geometry::cone_flat(&angles, &det, 3.0, 3.0, pitch, z, [off, 0.0]).unwrap()
                    }
                    _ => {
                        let views = (0..na)
                            .map(|k| {
                                let t = a0 + k as f64 * 0.3;
                                View {
                                    src: [4.0 * t.cos(), 4.0 * t.sin(), off],
                                    det_center: [-2.0 * t.cos(), -2.0 * t.sin(), 0.1],
                                    det_u: [-0.2 * t.sin(), 0.2 * t.cos(), 0.02],
                                    det_v: [0.01, 0.03, 0.2],
                                }
                            })
                            .collect();
                        Geometry::from_vec(
                            VecGeometry::new(3, Beam::Point, &[nu, nv], views).unwrap(),
                        )
                        .unwrap()
                    }
                };
                (g, geom)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The shared set-up of a view gives the rays of the per-ray set-up, bit for bit.
        #[test]
        fn view_rays_match_the_per_ray_set_up((g, geom) in case()) {
            let v = geom.vec();
            for view in 0..v.num_views() {
                let mut got = Vec::new();
                g.view_rays::<f32>(v, view, |r, det| got.push(format!("{det} {r:?}")));
                let mut want = Vec::new();
                for iu in 0..v.nu() {
                    for iv in 0..v.nv() {
                        if let Some(r) = g.ray::<f32>(v, view, iu, iv) {
                            want.push(format!("{} {r:?}", iu * v.nv() + iv));
                        }
                    }
                }
                prop_assert_eq!(got, want);
            }
        }
    }
}
