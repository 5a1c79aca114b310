//! The layout of one plane of the volume as the per-plane kernels see it.

use crate::tomo::cpu::ray::other_axes;

/// Layout of one plane of the volume for a dominant axis: the two in-plane axes `b < c`.
pub(crate) struct Plane {
    pub(crate) stride_b: usize,
    pub(crate) stride_c: usize,
    pub(crate) nb: usize,
    pub(crate) nc: usize,
    pub(crate) three_d: bool,
}

impl Plane {
    /// The per-plane description of class `a` (dominant axis) of a volume of `shape` with
    /// strides `st`.
    pub(crate) fn new(a: usize, shape: [usize; 3], st: [usize; 3], three_d: bool) -> Self {
        let (b, c) = other_axes(a);
        Plane {
            stride_b: st[b],
            stride_c: if three_d { st[c] } else { 0 },
            nb: shape[b],
            nc: if three_d { shape[c] } else { 1 },
            three_d,
        }
    }
}
