//! Partition planning: which views, or which slab of the volume, each rank holds.

use std::ops::Range;

use crate::{Error, Result};

/// How a ray transform's work and data are split across the ranks of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Partition {
    /// Each rank holds a contiguous group of views (its data); the volume is replicated on
    /// every rank, and the adjoint's back-projections are summed with an all-reduce of the
    /// volume. The choice while the volume fits on one rank.
    Views,
    /// Each rank holds a slab of the volume along the rotation axis (axis 2, `z`) and the
    /// detector rows of every view that the slab's share of the rows is made of; the rows that
    /// a slab's rays reach beyond its own come from (forward: are added on) the ranks that hold
    /// them. For volumes larger than one rank's memory. 3D geometries with a flat detector and
    /// the rotation axis along `z` only.
    Slabs,
}

/// Which part each rank holds: a [`Partition`] and one contiguous range per rank (views for
/// [`Partition::Views`], slices along `z` for [`Partition::Slabs`]), in rank order, covering
/// the axis once. A range may be empty: a rank with no views or no slab takes part in every
/// collective and contributes nothing.
///
/// ```
/// use rodl::distributed::{Partition, Plan};
/// let p = Plan::even(Partition::Views, 10, 3)?;
/// assert_eq!(p.ranges(), &[0..4, 4..7, 7..10]);
/// let q = Plan::with_counts(Partition::Slabs, &[5, 0, 3])?; // rank 1 holds no slab
/// assert_eq!(q.ranges(), &[0..5, 5..5, 5..8]);
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Plan {
    partition: Partition,
    ranges: Vec<Range<usize>>,
}

impl Plan {
    /// `n` views or slices split over `ranks` ranks as evenly as possible (the first ranks
    /// take the remainder; with more ranks than `n`, the last ranks get none).
    pub fn even(partition: Partition, n: usize, ranks: usize) -> Result<Self> {
        if ranks == 0 || n == 0 {
            return Err(Error::invalid(format!(
                "a distributed plan needs at least one rank and one view or slice, got {ranks} \
                 ranks for {n}"
            )));
        }
        let counts: Vec<usize> = (0..ranks)
            .map(|i| n / ranks + usize::from(i < n % ranks))
            .collect();
        Self::with_counts(partition, &counts)
    }

    /// `counts[r]` consecutive views or slices on rank `r` (zeros allowed, at least one
    /// non-zero count).
    pub fn with_counts(partition: Partition, counts: &[usize]) -> Result<Self> {
        if counts.is_empty() || counts.iter().all(|&c| c == 0) {
            return Err(Error::invalid(format!(
                "a distributed plan needs at least one rank with a non-empty part, got counts \
                 {counts:?}"
            )));
        }
        let mut start = 0usize;
        let mut ranges = Vec::with_capacity(counts.len());
        for &c in counts {
            let end = start
                .checked_add(c)
                .ok_or_else(|| Error::invalid("a distributed plan's counts overflow"))?;
            ranges.push(start..end);
            start = end;
        }
        Ok(Plan { partition, ranges })
    }

    /// The plan an HPC user would pick for `ranks` ranks of `budget` bytes each: by views when
    /// the whole volume (`volume_bytes`, replicated) and one rank's share of the data
    /// (`data_bytes / ranks`) fit in the budget, else by slabs of the `nz` slices along `z`.
    /// Errors with [`Error::OutOfMemory`] when even a slab share and its data do not fit.
    ///
    /// ```
    /// use rodl::distributed::{Partition, Plan};
    /// // 2048³ f32 (32 GiB) and as much data, on 8 ranks of 80 GB: views.
    /// let gib = 1u64 << 30;
    /// let p = Plan::choose(32 * gib, 32 * gib, 2048, 2048, 8, 80_000_000_000)?;
    /// assert_eq!(p.partition(), Partition::Views);
    /// // 4096³ (256 GiB): slabs.
    /// let q = Plan::choose(256 * gib, 256 * gib, 4096, 4096, 8, 80_000_000_000)?;
    /// assert_eq!(q.partition(), Partition::Slabs);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn choose(
        volume_bytes: u64,
        data_bytes: u64,
        views: usize,
        nz: usize,
        ranks: usize,
        budget: u64,
    ) -> Result<Self> {
        let r = ranks.max(1) as u64;
        let data_share = data_bytes.div_ceil(r);
        if volume_bytes.saturating_add(data_share) <= budget {
            return Self::even(Partition::Views, views, ranks);
        }
        let slab_share = volume_bytes.div_ceil(r);
        let need = slab_share.saturating_add(data_share);
        if need > budget {
            return Err(Error::OutOfMemory {
                what: format!(
                    "one rank's share of the volume and of its data on {ranks} ranks (a slab of \
                     {slab_share} bytes and {data_share} bytes of data)"
                ),
                bytes: need as u128,
                limit: budget,
                device: crate::Device::Cpu,
            });
        }
        Self::even(Partition::Slabs, nz, ranks)
    }

    /// The partition.
    pub fn partition(&self) -> Partition {
        self.partition
    }

    /// The ranges, one per rank.
    pub fn ranges(&self) -> &[Range<usize>] {
        &self.ranges
    }

    /// The number of ranks the plan is for.
    pub fn ranks(&self) -> usize {
        self.ranges.len()
    }

    /// The length of the axis the plan covers (views or slices).
    pub fn total(&self) -> usize {
        self.ranges.last().map_or(0, |r| r.end)
    }

    /// `rows` detector rows split in the proportions of the slabs (rank `r` owns the rows
    /// `round(start · rows / nz) .. round(end · rows / nz)`): the rows of the data each rank
    /// holds in a [`Partition::Slabs`] plan, a partition of `0..rows`.
    pub fn owned_rows(&self, rows: usize) -> Vec<Range<usize>> {
        let n = self.total().max(1) as u128;
        let at = |k: usize| ((k as u128 * rows as u128 * 2 + n) / (2 * n)) as usize;
        self.ranges.iter().map(|r| at(r.start)..at(r.end)).collect()
    }
}
