//! Splitting a ray transform and its sinogram into subsets of views, for ordered-subsets
//! solvers.

use std::ops::Range;
use std::sync::Arc;

use ndarray::{Axis, Slice};

use crate::tomo::{Backend, RayTransform};
use crate::{Device, Element, Error, LinOp, Operator, Result, Scalar, Space};

/// A ray transform split into `n` subsets of contiguous views
/// ([`Geometry::select_views`](crate::tomo::Geometry::select_views)), one ray transform each,
/// on the same volume.
///
/// The subsets are balanced (their sizes differ by at most one view) and listed in an order
/// that keeps consecutive subsets far apart in angle (0, n/2, n/4, 3n/4, … of the blocks), as
/// ordered-subsets methods want. [`RaySubsets::split_data`] cuts a sinogram of the full
/// transform into the matching blocks. The sub-geometries keep the data weighting, so the
/// stacked subset transforms are the full transform and their adjoints add up to its adjoint.
///
/// ```
/// use rodl::solvers::iterative::RaySubsets;
/// use rodl::tomo::{parallel_beam_geometry, Backend, RayTransform};
/// use rodl::uniform_discr;
/// let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[8, 8])?;
/// let ray = RayTransform::new(space.clone(), parallel_beam_geometry(&space, Some(10))?, Backend::default())?;
/// let subsets = RaySubsets::new(&ray, 4, Backend::default())?;
/// assert_eq!(subsets.views(), &[0..2, 5..7, 2..5, 7..10]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct RaySubsets<T: Scalar> {
    full_range: Space<T>,
    views: Vec<Range<usize>>,
    operators: Vec<LinOp<T>>,
}

impl<T: Scalar> RaySubsets<T> {
    /// Splits `ray` into `n_subsets` subsets of views, each a new [`RayTransform`] on `ray`'s
    /// domain computing on `backend` (use the backend `ray` was built with).
    ///
    /// Errors when `n_subsets` is 0 or exceeds the number of views, or when a subset transform
    /// cannot be built.
    pub fn new(ray: &RayTransform<T>, n_subsets: usize, backend: Backend) -> Result<Self> {
        let geometry = ray.geometry();
        let n_views = geometry.vec().num_views();
        if n_subsets == 0 || n_subsets > n_views {
            return Err(Error::invalid(format!(
                "RaySubsets: the number of subsets must lie in 1..={n_views}, got {n_subsets}"
            )));
        }
        let views: Vec<Range<usize>> = spread_order(n_subsets)
            .into_iter()
            .map(|i| i * n_views / n_subsets..(i + 1) * n_views / n_subsets)
            .collect();
        let operators = views
            .iter()
            .map(|v| -> Result<LinOp<T>> {
                let sub = geometry.select_views(v.clone())?;
                Ok(Arc::new(RayTransform::new(
                    ray.domain().clone(),
                    sub,
                    backend.clone(),
                )?))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            full_range: ray.range().clone(),
            views,
            operators,
        })
    }

    /// The subset transforms, in processing order.
    pub fn operators(&self) -> &[LinOp<T>] {
        &self.operators
    }

    /// The views of each subset, in processing order.
    pub fn views(&self) -> &[Range<usize>] {
        &self.views
    }

    /// Number of subsets.
    pub fn len(&self) -> usize {
        self.views.len()
    }

    /// Whether there are no subsets (never true for a constructed value).
    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
    }

    /// Cuts a sinogram of the full transform into the subsets' data blocks (copies, in each
    /// subset's range). A sinogram on a GPU is copied to the host once, cut, and the blocks
    /// copied back to the device (a one-off transfer before the iterations).
    pub fn split_data(&self, sinogram: &Element<T>) -> Result<Vec<Element<T>>> {
        self.full_range
            .check_member(sinogram, "RaySubsets::split_data")?;
        let host = match sinogram.device() {
            Device::Cpu => None,
            Device::Cuda(_) => Some(sinogram.to_host()?),
        };
        let full = host.as_ref().unwrap_or(sinogram).as_array()?;
        self.views
            .iter()
            .zip(&self.operators)
            .map(|(v, op)| {
                let block = full.slice_axis(Axis(0), Slice::from(v.clone()));
                op.range().element(block.to_owned())
            })
            .collect()
    }
}

/// The block indices `0..n` in an order where consecutive blocks are far apart: the
/// bit-reversal permutation of the next power of two, scaled to `n`, first occurrences kept.
fn spread_order(n: usize) -> Vec<usize> {
    let m = n.next_power_of_two();
    let bits = m.trailing_zeros();
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    for i in 0..m {
        let r = if bits == 0 {
            0
        } else {
            i.reverse_bits() >> (usize::BITS - bits)
        };
        let b = r * n / m;
        if !seen[b] {
            seen[b] = true;
            order.push(b);
        }
    }
    // Every block appears: r·n/m takes each value in 0..n for r in 0..m since m ≥ n.
    order
}

#[cfg(test)]
mod tests {
    use super::spread_order;

    #[test]
    fn spread_order_is_a_permutation() {
        for n in 1..40 {
            let mut o = spread_order(n);
            assert_eq!(o[0], 0);
            o.sort_unstable();
            assert_eq!(o, (0..n).collect::<Vec<_>>());
        }
        assert_eq!(spread_order(4), [0, 2, 1, 3]);
        assert_eq!(spread_order(6), [0, 3, 1, 4, 2, 5]);
    }
}
