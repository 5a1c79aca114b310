//! The communicator of a job of one rank.

use crate::space::Communicator;
use crate::Result;

/// A job of one rank: every collective is the identity. A distributed computation on it is
/// the single-process computation (what `mpirun -np 1` runs), and it needs no MPI.
///
/// ```
/// use rodl::distributed::{Across, SingleRank};
/// let across = Across::new(SingleRank);
/// assert_eq!((across.rank(), across.size()), (0, 1));
/// assert_eq!(across.sum(Ok(2.5))?, 2.5);
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct SingleRank;

impl Communicator for SingleRank {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn all_gather(&self, local: &[u8]) -> Result<Vec<Vec<u8>>> {
        Ok(vec![local.to_vec()])
    }

    fn all_sum_f64(&self, _values: &mut [f64]) -> Result<()> {
        Ok(())
    }

    fn all_sum_f32(&self, _values: &mut [f32]) -> Result<()> {
        Ok(())
    }

    fn describe(&self) -> String {
        "a single rank".into()
    }
}
