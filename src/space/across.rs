//! Reductions across the ranks of a distributed computation: the [`Communicator`] a space's
//! local share sums over, and the [`Across`] handle that a share space holds.
//!
//! A *share space* ([`Space::local_share`](crate::Space::local_share)) is one rank's part of a
//! space split across the ranks of a job: its elements hold only that rank's entries, and its
//! inner products, norms, distances, integrals and extrema are those of the whole space, summed
//! (or maximised) over the ranks. Every reduction is *collective*: every rank calls it, in the
//! same order, as the solvers do (they run the same code on every rank). A reduction that fails
//! on one rank (an element of the wrong shape there) fails on every rank with
//! [`Error::Distributed`] naming it, instead of leaving the others waiting.

use std::fmt;
use std::sync::Arc;

use crate::{Error, Result, Scalar};

/// The collective operations that rodl's distributed spaces and operators need, over the
/// ranks `0..size()` of one job.
///
/// One method is required, [`Communicator::all_gather`], from which the others have (slow,
/// but exact and deterministic) default implementations; an MPI communicator
/// (`rodl::distributed::MpiComm`, feature `mpi`) overrides them with MPI's own
/// collectives. Every method is collective: all ranks call it, in the same order.
///
/// The sums of [`Communicator::all_sum_f64`] and [`Communicator::all_sum_f32`] must give every
/// rank the same (bit-identical) result, so that replicated data stays replicated: the default
/// adds the ranks' values in rank order; MPI's `MPI_Allreduce` does so in practice (the
/// standard asks implementations to).
///
/// It is [`RefUnwindSafe`](std::panic::RefUnwindSafe), as spaces are (a panic in a user's
/// code must not leave a space half-changed behind a `catch_unwind`).
pub trait Communicator: Send + Sync + std::panic::RefUnwindSafe + 'static {
    /// This process's rank, `0..size()`.
    fn rank(&self) -> usize;

    /// The number of ranks.
    fn size(&self) -> usize;

    /// Every rank's `local` bytes, in rank order (an all-gather of messages of any length).
    fn all_gather(&self, local: &[u8]) -> Result<Vec<Vec<u8>>>;

    /// `values` summed over the ranks, in place (every rank passes the same length).
    fn all_sum_f64(&self, values: &mut [f64]) -> Result<()> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let all = self.all_gather(&bytes)?;
        values.iter_mut().for_each(|v| *v = 0.0);
        for (rank, b) in all.iter().enumerate() {
            if b.len() != bytes.len() {
                return Err(length_mismatch(rank, b.len(), bytes.len()));
            }
            for (v, c) in values.iter_mut().zip(b.chunks_exact(8)) {
                *v += f64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
            }
        }
        Ok(())
    }

    /// `values` summed over the ranks, in place (every rank passes the same length).
    fn all_sum_f32(&self, values: &mut [f32]) -> Result<()> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let all = self.all_gather(&bytes)?;
        values.iter_mut().for_each(|v| *v = 0.0);
        for (rank, b) in all.iter().enumerate() {
            if b.len() != bytes.len() {
                return Err(length_mismatch(rank, b.len(), bytes.len()));
            }
            for (v, c) in values.iter_mut().zip(b.chunks_exact(4)) {
                *v += f32::from_le_bytes(c.try_into().unwrap_or([0; 4]));
            }
        }
        Ok(())
    }

    /// Personalised all-to-all: rank `r` sends `send[displ(send_counts, q)..][..send_counts[q]]`
    /// to each rank `q` and receives what `q` sends it into
    /// `recv[displ(recv_counts, q)..][..recv_counts[q]]` (the blocks one after the other in
    /// rank order). The counts must match pairwise (`send_counts[q]` on `r` equals
    /// `recv_counts[r]` on `q`).
    fn all_to_all_f64(
        &self,
        send: &[f64],
        send_counts: &[usize],
        recv: &mut [f64],
        recv_counts: &[usize],
    ) -> Result<()> {
        let me = self.rank();
        check_counts(
            self.size(),
            send.len(),
            send_counts,
            recv.len(),
            recv_counts,
        )?;
        let (mut bytes, mut header) = (Vec::new(), Vec::new());
        for c in send_counts {
            header.extend_from_slice(&(*c as u64).to_le_bytes());
        }
        bytes.extend_from_slice(&header);
        bytes.extend(send.iter().flat_map(|v| v.to_le_bytes()));
        let all = self.all_gather(&bytes)?;
        let mut at = 0;
        for (q, b) in all.iter().enumerate() {
            let n = self.size();
            let counts: Vec<usize> = b
                .chunks_exact(8)
                .take(n)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as usize)
                .collect();
            if counts.len() != n {
                return Err(length_mismatch(q, b.len(), 8 * n));
            }
            let start = counts[..me].iter().sum::<usize>();
            let len = counts[me];
            if len != recv_counts[q] {
                return Err(length_mismatch(q, len, recv_counts[q]));
            }
            let data = b
                .get(8 * n..)
                .and_then(|d| d.get(8 * start..8 * (start + len)))
                .ok_or_else(|| length_mismatch(q, b.len(), 8 * (n + start + len)))?;
            for (v, c) in recv[at..at + len].iter_mut().zip(data.chunks_exact(8)) {
                *v = f64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
            }
            at += len;
        }
        Ok(())
    }

    /// [`Communicator::all_to_all_f64`] for `f32` values.
    fn all_to_all_f32(
        &self,
        send: &[f32],
        send_counts: &[usize],
        recv: &mut [f32],
        recv_counts: &[usize],
    ) -> Result<()> {
        let wide: Vec<f64> = send.iter().map(|&v| v as f64).collect();
        let mut out = vec![0.0f64; recv.len()];
        self.all_to_all_f64(&wide, send_counts, &mut out, recv_counts)?;
        recv.iter_mut().zip(out).for_each(|(r, v)| *r = v as f32);
        Ok(())
    }

    /// A short description for messages (`"MPI_COMM_WORLD"`, …).
    fn describe(&self) -> String {
        format!("a communicator of {} ranks", self.size())
    }
}

/// Errors unless there is one count per rank and the counts add up to the buffers' lengths
/// (for implementations of [`Communicator::all_to_all_f64`]).
pub fn check_counts(
    size: usize,
    send: usize,
    send_counts: &[usize],
    recv: usize,
    recv_counts: &[usize],
) -> Result<()> {
    if send_counts.len() != size
        || recv_counts.len() != size
        || send_counts.iter().sum::<usize>() != send
        || recv_counts.iter().sum::<usize>() != recv
    {
        return Err(Error::invalid(format!(
            "all-to-all: {} send counts adding up to {} for {send} values and {} receive counts \
             adding up to {} for {recv} values, on {size} ranks",
            send_counts.len(),
            send_counts.iter().sum::<usize>(),
            recv_counts.len(),
            recv_counts.iter().sum::<usize>(),
        )));
    }
    Ok(())
}

fn length_mismatch(rank: usize, got: usize, expected: usize) -> Error {
    Error::Distributed {
        rank,
        message: format!(
            "a collective got {got} bytes or values from this rank where {expected} were expected \
             (the ranks called different collectives, or with different sizes)"
        ),
    }
}

/// A shared handle to a [`Communicator`]: what a share space holds, compared by identity.
///
/// Besides the communicator's own collectives it offers the *agreement* that makes a failure
/// on one rank an error on all of them: [`Across::agree`] all-gathers each rank's outcome, so
/// that every rank returns the same [`Error::Distributed`] when any rank failed.
#[derive(Clone)]
pub struct Across(Arc<dyn Communicator>);

impl Across {
    /// The handle of `comm`.
    pub fn new(comm: impl Communicator) -> Self {
        Across(Arc::new(comm))
    }

    /// The handle of a shared communicator.
    pub fn from_arc(comm: Arc<dyn Communicator>) -> Self {
        Across(comm)
    }

    /// The communicator.
    pub fn comm(&self) -> &dyn Communicator {
        &*self.0
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.0.rank()
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.0.size()
    }

    /// Collective: each rank's outcome `local`, and the values of all ranks when all succeeded
    /// (in rank order). When any rank failed, every rank gets [`Error::Distributed`] with the
    /// lowest failing rank and its message (a rank's own [`Error::Distributed`] is passed on as
    /// it is, so that an error keeps naming the rank where it began).
    pub fn gather_outcome(&self, local: Result<Vec<f64>>) -> Result<Vec<Vec<f64>>> {
        let bytes = match &local {
            Ok(values) => {
                let mut b = vec![0u8];
                b.extend(values.iter().flat_map(|v| v.to_le_bytes()));
                b
            }
            Err(e) => {
                let (rank, message) = match e {
                    Error::Distributed { rank, message } => (*rank, message.clone()),
                    other => (self.rank(), other.to_string()),
                };
                let mut b = vec![1u8];
                b.extend_from_slice(&(rank as u64).to_le_bytes());
                b.extend_from_slice(message.as_bytes());
                b
            }
        };
        let all = self.0.all_gather(&bytes)?;
        let mut values = Vec::with_capacity(all.len());
        for (rank, b) in all.iter().enumerate() {
            match b.split_first() {
                Some((0, rest)) => values.push(
                    rest.chunks_exact(8)
                        .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                        .collect(),
                ),
                Some((_, rest)) if rest.len() >= 8 => {
                    let origin = u64::from_le_bytes(rest[..8].try_into().unwrap_or([0; 8]));
                    return Err(Error::Distributed {
                        rank: origin as usize,
                        message: String::from_utf8_lossy(&rest[8..]).into_owned(),
                    });
                }
                _ => {
                    return Err(Error::Distributed {
                        rank,
                        message: "a malformed outcome in a collective".into(),
                    })
                }
            }
        }
        Ok(values)
    }

    /// Collective: `Ok` on every rank when `local` is `Ok` on every rank, else the same
    /// [`Error::Distributed`] on every rank (see [`Across::gather_outcome`]).
    pub fn agree(&self, local: Result<()>) -> Result<()> {
        self.gather_outcome(local.map(|_| Vec::new())).map(|_| ())
    }

    /// Collective: as [`Across::agree`] on the outcome of `local` (a value is kept by the
    /// caller; an error's message and, for an [`Error::Distributed`], its rank are passed on).
    pub fn agree_on<V>(&self, local: &Result<V>) -> Result<()> {
        let outcome = match local {
            Ok(_) => Ok(()),
            Err(Error::Distributed { rank, message }) => Err(Error::Distributed {
                rank: *rank,
                message: message.clone(),
            }),
            Err(e) => Err(Error::Distributed {
                rank: self.rank(),
                message: e.to_string(),
            }),
        };
        self.agree(outcome)
    }

    /// Collective: the sum over the ranks of `local` (added in rank order, the same on every
    /// rank), or the agreed error.
    pub fn sum(&self, local: Result<f64>) -> Result<f64> {
        let all = self.gather_outcome(local.map(|v| vec![v]))?;
        Ok(all.iter().map(|v| v.first().copied().unwrap_or(0.0)).sum())
    }

    /// Collective: the largest of the ranks' `local` values (NaN when any is NaN), or the
    /// agreed error.
    pub fn max(&self, local: Result<f64>) -> Result<f64> {
        self.extremum(local, f64::NEG_INFINITY, f64::max)
    }

    /// Collective: the smallest of the ranks' `local` values (NaN when any is NaN), or the
    /// agreed error.
    pub fn min(&self, local: Result<f64>) -> Result<f64> {
        self.extremum(local, f64::INFINITY, f64::min)
    }

    fn extremum(&self, local: Result<f64>, start: f64, pick: fn(f64, f64) -> f64) -> Result<f64> {
        let all = self.gather_outcome(local.map(|v| vec![v]))?;
        let mut acc = start;
        for v in all.iter().filter_map(|v| v.first().copied()) {
            if v.is_nan() {
                return Ok(f64::NAN);
            }
            acc = pick(acc, v);
        }
        Ok(acc)
    }

    /// Collective: `values` summed over the ranks in place, in their own precision.
    pub fn all_sum<T: Scalar>(&self, values: &mut [T]) -> Result<()> {
        if let Some(v) = T::as_f32_mut::<crate::SliceOf>(values) {
            return self.0.all_sum_f32(v);
        }
        match T::as_f64_mut::<crate::SliceOf>(values) {
            Some(v) => self.0.all_sum_f64(v),
            None => Err(Error::Unsupported(format!(
                "sums across ranks of {} values",
                T::NAME
            ))),
        }
    }

    /// Collective: [`Communicator::all_to_all_f64`] in the values' own precision.
    pub fn all_to_all<T: Scalar>(
        &self,
        send: &mut [T],
        send_counts: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
    ) -> Result<()> {
        if let (Some(s), Some(r)) = (
            T::as_f32_mut::<crate::SliceOf>(send),
            T::as_f32_mut::<crate::SliceOf>(recv),
        ) {
            return self.0.all_to_all_f32(s, send_counts, r, recv_counts);
        }
        match (
            T::as_f64_mut::<crate::SliceOf>(send),
            T::as_f64_mut::<crate::SliceOf>(recv),
        ) {
            (Some(s), Some(r)) => self.0.all_to_all_f64(s, send_counts, r, recv_counts),
            _ => Err(Error::Unsupported(format!(
                "exchanges across ranks of {} values",
                T::NAME
            ))),
        }
    }
}

impl PartialEq for Across {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for Across {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Across(rank {} of {}, {})",
            self.rank(),
            self.size(),
            self.0.describe()
        )
    }
}
