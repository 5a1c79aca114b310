//! The layout of one class of rays (dominant axis `a`) in a 3D volume, as the windowed 3D
//! kernels take it.

use crate::tomo::cpu::planes::Plane;
use crate::tomo::cpu::ray::other_axes;

/// Layout of one class (dominant axis `a`).
#[derive(Clone, Copy)]
pub(super) struct Layout {
    pub(super) nb: i32,
    pub(super) nc: i32,
    pub(super) sa: usize,
    pub(super) sb: usize,
    pub(super) sc: usize,
    pub(super) len: usize,
}

impl Layout {
    pub(super) fn new(shape: [usize; 3], a: usize) -> Self {
        let (b, c) = other_axes(a);
        let st = [shape[1] * shape[2], shape[2], 1];
        Self {
            nb: shape[b] as i32,
            nc: shape[c] as i32,
            sa: st[a],
            sb: st[b],
            sc: st[c],
            len: shape.iter().product(),
        }
    }

    pub(super) fn plane(&self) -> Plane {
        Plane {
            stride_b: self.sb,
            stride_c: self.sc,
            nb: self.nb as usize,
            nc: self.nc as usize,
            three_d: true,
        }
    }
}
