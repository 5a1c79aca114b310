//! The volume grid of a ray transform in world coordinates, as both backends take it.

use crate::UniformPartition;

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

impl Grid {
    /// The grid of a partition of one to three axes (padded with single cells).
    pub(crate) fn of(part: &UniformPartition) -> Self {
        let mut grid = Grid {
            shape: [1; 3],
            min: [0.0; 3],
            h: [1.0; 3],
            inv_h: [1.0; 3],
        };
        for k in 0..part.ndim().min(3) {
            grid.shape[k] = part.shape()[k];
            grid.min[k] = part.min_pt()[k];
            grid.h[k] = part.cell_side(k);
            grid.inv_h[k] = 1.0 / grid.h[k];
        }
        grid
    }

    /// The world box of the cells `cells` along `axis` (the whole range along the other axes),
    /// widened by one cell on every side: the region a ray must pass through to have an
    /// interpolation tap in those cells (a tap reads cells up to one cell side from the ray's
    /// path), as [`VecGeometry::rows_through`](super::VecGeometry::rows_through) takes it.
    pub(crate) fn reach_box(
        &self,
        axis: usize,
        cells: &std::ops::Range<usize>,
    ) -> ([f64; 3], [f64; 3]) {
        let (mut lo, mut hi) = ([0usize; 3], self.shape);
        lo[axis] = cells.start;
        hi[axis] = cells.end;
        let min = [0, 1, 2].map(|k| self.min[k] + (lo[k] as f64 - 1.0) * self.h[k]);
        let max = [0, 1, 2].map(|k| self.min[k] + (hi[k] as f64 + 1.0) * self.h[k]);
        (min, max)
    }

    /// The cells `cells` along axis 0 of this grid: the same cell sides and inverse sides, bit
    /// for bit (so every ray keeps its dominant axis, which a partition of the slab's extent
    /// could change by a rounding of its cell side), the lower corner moved to the slab's.
    pub(crate) fn slab(&self, cells: std::ops::Range<usize>) -> Self {
        self.slab_along(0, cells)
    }

    /// [`Grid::slab`] along `axis` (0..3).
    pub(crate) fn slab_along(&self, axis: usize, cells: std::ops::Range<usize>) -> Self {
        let mut grid = *self;
        grid.shape[axis] = cells.len();
        grid.min[axis] = self.min[axis] + cells.start as f64 * self.h[axis];
        grid
    }
}
