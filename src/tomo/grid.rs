//! The volume grid of a ray transform in world coordinates, as both backends take it.

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
