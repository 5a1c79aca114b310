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
}
