//! What the ray set-up produces and shares: a ray marched along its dominant axis, the
//! direction-dependent part of its set-up, and the part that the rays of a 3D detector column
//! share.

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
    pub(super) a: usize,
    pub(super) three_d: bool,
    pub(super) inv_da: f64,
    pub(super) w: f64,
    pub(super) sb: f64,
    pub(super) inv_sb: f64,
    pub(super) sc: f64,
    pub(super) inv_sc: f64,
}

/// What the 3D rays of a detector column share when their dominant axis `a` and their
/// coordinates along `a` and `b` (point and direction) are bit-identical: the reciprocal of the
/// direction along `a`, the `b` track and the planes it allows.
#[derive(Clone, Copy, Debug)]
pub(super) struct Column {
    pub(super) a: usize,
    /// Bits of `q[a]`, `q[b]`, `d[a]`, `d[b]`.
    pub(super) key: [u64; 4],
    pub(super) inv_da: f64,
    pub(super) tm: f64,
    pub(super) t0: f64,
    pub(super) fb0: f64,
    pub(super) sb: f64,
    pub(super) lo: f64,
    pub(super) hi: f64,
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
