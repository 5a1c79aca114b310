//! Uniform cell partitions of a rectangular domain.

use crate::{Error, Result};

/// A uniform partition of the box `[min_pt, max_pt]` into `shape` cells per axis.
///
/// Sample points are the cell midpoints, as in ODL's `uniform_partition`.
///
/// ```
/// use rodl::UniformPartition;
/// let p = UniformPartition::new(&[0.0], &[1.0], &[4])?;
/// assert_eq!(p.cell_sides(), vec![0.25]);
/// assert_eq!(p.coord_vector(0)?, vec![0.125, 0.375, 0.625, 0.875]);
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct UniformPartition {
    min_pt: Vec<f64>,
    max_pt: Vec<f64>,
    shape: Vec<usize>,
}

impl UniformPartition {
    /// A partition of `[min_pt, max_pt]` with `shape[i]` cells along axis `i`.
    ///
    /// Errors when the lengths differ, a bound is not finite, `min_pt[i] >= max_pt[i]` or a count is 0.
    pub fn new(min_pt: &[f64], max_pt: &[f64], shape: &[usize]) -> Result<Self> {
        if min_pt.len() != shape.len() || max_pt.len() != shape.len() {
            return Err(Error::invalid(format!(
                "partition: min_pt ({}), max_pt ({}) and shape ({}) must have the same length",
                min_pt.len(),
                max_pt.len(),
                shape.len()
            )));
        }
        if shape.is_empty() {
            return Err(Error::invalid("partition: at least one axis is needed"));
        }
        for i in 0..shape.len() {
            if !(min_pt[i].is_finite() && max_pt[i].is_finite()) || min_pt[i] >= max_pt[i] {
                return Err(Error::invalid(format!(
                    "partition: axis {i} needs finite min_pt < max_pt, got [{}, {}]",
                    min_pt[i], max_pt[i]
                )));
            }
            if shape[i] == 0 {
                return Err(Error::invalid(format!("partition: axis {i} has 0 cells")));
            }
        }
        super::check_shape(shape)?;
        Ok(Self {
            min_pt: min_pt.to_vec(),
            max_pt: max_pt.to_vec(),
            shape: shape.to_vec(),
        })
    }

    /// The partition of the cells `cells` (non-empty, within the axis) along `axis`: the same
    /// cell sides (to rounding), the borders at the whole partition's where they coincide.
    pub fn cells(&self, axis: usize, cells: std::ops::Range<usize>) -> Result<Self> {
        let n = *self.shape().get(axis).ok_or_else(|| {
            Error::invalid(format!("axis {axis} of a {}-axis partition", self.ndim()))
        })?;
        if cells.start >= cells.end || cells.end > n {
            return Err(Error::invalid(format!(
                "the cells {cells:?} are empty or not within 0..{n}"
            )));
        }
        let h = self.cell_side(axis);
        let at = |k: usize| {
            if k == 0 {
                self.min_pt()[axis]
            } else if k == n {
                self.max_pt()[axis]
            } else {
                self.min_pt()[axis] + k as f64 * h
            }
        };
        let (mut lo, mut hi, mut shape) = (
            self.min_pt().to_vec(),
            self.max_pt().to_vec(),
            self.shape().to_vec(),
        );
        lo[axis] = at(cells.start);
        hi[axis] = at(cells.end);
        shape[axis] = cells.len();
        UniformPartition::new(&lo, &hi, &shape)
    }

    /// Number of axes.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    /// Lower corner of the box.
    pub fn min_pt(&self) -> &[f64] {
        &self.min_pt
    }
    /// Upper corner of the box.
    pub fn max_pt(&self) -> &[f64] {
        &self.max_pt
    }
    /// Cells per axis.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// Side lengths of one cell.
    pub fn cell_sides(&self) -> Vec<f64> {
        (0..self.ndim()).map(|i| self.cell_side(i)).collect()
    }
    /// Side length of a cell along `axis` (no bounds check: `axis < ndim`).
    pub fn cell_side(&self, axis: usize) -> f64 {
        (self.max_pt[axis] - self.min_pt[axis]) / self.shape[axis] as f64
    }
    /// Volume of one cell: the weight of the discretised inner product.
    pub fn cell_volume(&self) -> f64 {
        self.cell_sides().iter().product()
    }
    /// Midpoint coordinates along one axis.
    pub fn coord_vector(&self, axis: usize) -> Result<Vec<f64>> {
        if axis >= self.ndim() {
            return Err(Error::invalid(format!(
                "axis {axis} out of range for a {}-dimensional partition",
                self.ndim()
            )));
        }
        let h = self.cell_side(axis);
        crate::memory::check_host_alloc(
            &format!(
                "the coordinates of axis {axis} ({} cells)",
                self.shape[axis]
            ),
            self.shape[axis],
            std::mem::size_of::<f64>(),
        )?;
        Ok((0..self.shape[axis])
            .map(|i| self.min_pt[axis] + (i as f64 + 0.5) * h)
            .collect())
    }
}
