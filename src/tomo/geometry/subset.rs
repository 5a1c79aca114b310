//! Sub-geometries made of a contiguous range of views.

use std::ops::Range;

use super::Geometry;
use crate::{Error, Result, UniformPartition};

impl Geometry {
    /// The geometry of the contiguous views `views` of this one (e.g. to split a scan across
    /// devices).
    ///
    /// The views are the same, and the data partition is the matching sub-range of the angle
    /// (view) axis with the same detector partition, so the data space has the same cell
    /// weight (`Δθ · Δu (· Δv)`, up to rounding) and the ray transform of the sub-geometry is
    /// exactly the rows `views` of this geometry's transform, its adjoint the back-projection of
    /// those rows: the adjoints of the sub-ranges of a partition of the views add up to the
    /// adjoint of the whole. The sub-geometry has no [`spec`](Geometry::spec).
    ///
    /// Errors when the range is empty or runs past the last view.
    ///
    /// ```
    /// use rodl::{tomo::Geometry, UniformPartition};
    /// let angles = UniformPartition::new(&[0.0], &[std::f64::consts::PI], &[10])?;
    /// let det = UniformPartition::new(&[-1.0], &[1.0], &[8])?;
    /// let g = Geometry::parallel_2d(&angles, &det)?;
    /// let sub = g.select_views(3..7)?;
    /// assert_eq!(sub.data_shape(), vec![4, 8]);
    /// assert_eq!(sub.vec().views(), &g.vec().views()[3..7]);
    /// let (w, w_sub) = (g.data_partition().cell_volume(), sub.data_partition().cell_volume());
    /// assert!((w - w_sub).abs() <= 1e-15 * w);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn select_views(&self, views: Range<usize>) -> Result<Geometry> {
        let n = self.vec.num_views();
        if views.start >= views.end || views.end > n {
            return Err(Error::invalid(format!(
                "select_views: the view range {views:?} is empty or not within 0..{n}"
            )));
        }
        let vec = self.vec.select(views.clone())?;
        let p = &self.data_partition;
        let h = p.cell_side(0);
        let at = |k: usize| {
            if k == 0 {
                p.min_pt()[0]
            } else if k == n {
                p.max_pt()[0]
            } else {
                p.min_pt()[0] + k as f64 * h
            }
        };
        let mut lo = p.min_pt().to_vec();
        let mut hi = p.max_pt().to_vec();
        let mut shape = p.shape().to_vec();
        lo[0] = at(views.start);
        hi[0] = at(views.end);
        shape[0] = views.len();
        let data_partition = UniformPartition::new(&lo, &hi, &shape)?;
        Ok(Geometry {
            vec,
            data_partition,
            spec: None,
            setup: None,
        })
    }
}
