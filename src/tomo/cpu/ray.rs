//! Ray set-up for Joseph's method, shared by the forward projection and its transpose so that
//! both use bit-identical weights.

use crate::tomo::geometry::VecGeometry;
use crate::Scalar;

/// The volume grid in world coordinates: `shape`, lower corner and cell sides, padded to 3 axes
/// (a 2D grid has a third axis of one cell).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Grid {
    pub(crate) shape: [usize; 3],
    pub(crate) min: [f64; 3],
    pub(crate) h: [f64; 3],
    /// `1 / h`.
    pub(crate) inv_h: [f64; 3],
}

/// One ray marched along its dominant axis `a`: at plane `m` (integer index along `a`) the
/// fractional indices along the other axes `b < c` are `fb0 + m·sb` and `fc0 + m·sc`; each plane
/// contributes with weight `w` (the step length) times the (bi)linear interpolation weights.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ray<T> {
    pub(crate) a: usize,
    pub(crate) fb0: T,
    pub(crate) sb: T,
    pub(crate) fc0: T,
    pub(crate) sc: T,
    pub(crate) w: T,
    /// First plane with a possibly non-zero contribution.
    pub(crate) m0: usize,
    /// One past the last such plane.
    pub(crate) m1: usize,
}

/// The direction-dependent part of a ray's set-up: dominant axis `a`, `1/d[a]`, the weight `w`
/// (step length per plane), and the slopes of the fractional indices along the other axes per
/// plane with their reciprocals.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Direction {
    a: usize,
    three_d: bool,
    inv_da: f64,
    w: f64,
    sb: f64,
    inv_sb: f64,
    sc: f64,
    inv_sc: f64,
}

/// The two non-dominant axes, in increasing order.
#[inline(always)]
pub(crate) fn other_axes(a: usize) -> (usize, usize) {
    match a {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    }
}

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
    /// the grid.
    #[inline]
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

    /// The part of a ray's set-up that depends only on its direction `d` (shared by all rays of
    /// a parallel-beam view), or `None` for a zero direction.
    #[inline]
    pub(crate) fn direction(&self, d: &[f64; 3], dims: usize) -> Option<Direction> {
        // Dominant axis in index space. Products with 1/h; the reciprocals of all components
        // at once (independent divisions; a zero component gives an infinity that is never
        // used: its slope is 0).
        let mut a = 0;
        let mut best = -1.0;
        for k in 0..dims {
            let s = (d[k] * self.inv_h[k]).abs();
            if s > best {
                best = s;
                a = k;
            }
        }
        if best <= 0.0 {
            return None;
        }
        let (b, c) = other_axes(a);
        let inv_d = [1.0 / d[0], 1.0 / d[1], 1.0 / d[2]];
        let inv_da = inv_d[a];
        let len = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let tm = self.h[a] * inv_da;
        // Slope per plane of the fractional index along k, and its reciprocal.
        let slope = |k: usize| {
            (
                tm * d[k] * self.inv_h[k],
                d[a] * inv_d[k] * self.h[k] * self.inv_h[a],
            )
        };
        let (sb, inv_sb) = slope(b);
        let (sc, inv_sc) = if c < dims { slope(c) } else { (0.0, 0.0) };
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
        let a = dir.a;
        let (b, c) = other_axes(a);
        // Position along the ray at the first plane centre; fractional index there.
        let t0 = (self.min[a] + 0.5 * self.h[a] - q[a]) * dir.inv_da;
        let f0 = |k: usize| (q[k] + t0 * d[k] - self.min[k]) * self.inv_h[k] - 0.5;
        let fb0 = f0(b);
        let fc0 = if dir.three_d { f0(c) } else { 0.0 };
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
        if dir.three_d {
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
}
