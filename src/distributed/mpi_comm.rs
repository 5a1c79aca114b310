//! The communicator over MPI (feature `mpi`): the `mpi` crate over the system's MPI library.

use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use mpi::collective::SystemOperation;
use mpi::datatype::{Partition, PartitionMut};
use mpi::environment::Universe;
use mpi::topology::{Communicator as _, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives as _;
use mpi::{Count, Threading};

use crate::space::Communicator;
use crate::{Error, Result};

/// The values of one `MPI_Allreduce` call (16 Mi: 64 MiB of f32).
const SUM_CHUNK: usize = 1 << 24;

/// `MPI_COMM_WORLD` of a job started by `mpirun` (or `srun`), for [`Across`](super::Across):
/// MPI's own collectives (`MPI_Allgatherv`, `MPI_Allreduce`, `MPI_Alltoallv`) under the
/// distributed spaces and operators.
///
/// [`MpiComm::world`] initialises MPI (asking for `MPI_THREAD_MULTIPLE`); MPI is finalised when
/// the last handle is dropped. The collectives are serialised by a lock, so the handle may be
/// used from any thread when the MPI library gives `MPI_THREAD_SERIALIZED` or more, and only
/// from the thread that initialised MPI otherwise (a call from another thread is an error).
///
/// ```no_run
/// use rodl::distributed::{Across, MpiComm};
/// let world = MpiComm::world()?;
/// println!("rank {} of {} (local rank {})", world.rank(), world.size(), world.local_rank());
/// let across = Across::new(world);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct MpiComm {
    comm: SimpleCommunicator,
    rank: usize,
    size: usize,
    local_rank: usize,
    /// The only thread that may call MPI, when the library is less than serialised.
    owner: Option<ThreadId>,
    lock: Mutex<()>,
    // Dropped last: finalises MPI.
    _universe: Arc<Universe>,
}

// SAFETY: the communicator handle is used only under `lock` (one MPI call at a time, which
// MPI_THREAD_SERIALIZED and MPI_THREAD_MULTIPLE allow from any thread), and, when MPI gives
// less than that, only from the thread that initialised it (`owner`, checked on every call).
unsafe impl Send for MpiComm {}
// SAFETY: as for `Send`: every use of the handle goes through `MpiComm::call`.
unsafe impl Sync for MpiComm {}

impl MpiComm {
    /// Initialises MPI and returns `MPI_COMM_WORLD`.
    ///
    /// Errors when MPI was initialised before in this process (one handle per process: share
    /// it through [`Across`](super::Across), which is cheap to clone).
    pub fn world() -> Result<Self> {
        let (universe, threading) = mpi::initialize_with_threading(Threading::Multiple)
            .ok_or_else(|| {
                Error::Unsupported(
                    "MPI is initialised already in this process: make one MpiComm::world() and \
                     share it (Across is cheap to clone)"
                        .into(),
                )
            })?;
        let comm = universe.world();
        let rank = comm.rank().max(0) as usize;
        let size = comm.size().max(1) as usize;
        // The ranks on this node (sharing memory): the local rank picks the GPU.
        let local_rank = comm.split_shared(comm.rank()).rank().max(0) as usize;
        let owner = match threading {
            Threading::Serialized | Threading::Multiple => None,
            Threading::Single | Threading::Funneled => Some(std::thread::current().id()),
        };
        Ok(MpiComm {
            comm,
            rank,
            size,
            local_rank,
            owner,
            lock: Mutex::new(()),
            _universe: Arc::new(universe),
        })
    }

    /// This process's rank in `MPI_COMM_WORLD`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of processes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// This process's rank among those on its node (`MPI_Comm_split_type` with
    /// `MPI_COMM_TYPE_SHARED`): one rank per GPU takes `cuda:{local_rank}`.
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// Ends every process of the job (`MPI_Abort`) with exit code `code`: for a failure
    /// outside rodl's collectives, where the other ranks would otherwise wait for this one.
    pub fn abort(&self, code: i32) -> ! {
        self.comm.abort(code)
    }

    /// Runs `f` on the communicator under the lock, from an allowed thread.
    fn call<R>(&self, f: impl FnOnce(&SimpleCommunicator) -> Result<R>) -> Result<R> {
        if let Some(owner) = self.owner {
            if std::thread::current().id() != owner {
                return Err(Error::Distributed {
                    rank: self.rank,
                    message: "this MPI library allows MPI calls only from the thread that \
                              initialised it (less than MPI_THREAD_SERIALIZED)"
                        .into(),
                });
            }
        }
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        f(&self.comm)
    }

    fn counts(&self, counts: &[usize]) -> Result<(Vec<Count>, Vec<Count>)> {
        let too_large = || Error::Distributed {
            rank: self.rank,
            message: format!(
                "a message of {} values is beyond MPI's counts ({} values): use more ranks",
                counts.iter().sum::<usize>(),
                Count::MAX
            ),
        };
        let c = counts
            .iter()
            .map(|&n| Count::try_from(n).map_err(|_| too_large()))
            .collect::<Result<Vec<_>>>()?;
        let mut displs = Vec::with_capacity(c.len());
        let mut at: Count = 0;
        for &n in &c {
            displs.push(at);
            at = at.checked_add(n).ok_or_else(too_large)?;
        }
        Ok((c, displs))
    }

    /// `values` summed over the ranks in chunks of [`SUM_CHUNK`] values: MPI counts are 32-bit
    /// (a 4096³ volume has more entries), and the send copy of a chunk stays small.
    fn all_sum<V: mpi::datatype::Equivalence + Copy + Default>(
        &self,
        values: &mut [V],
    ) -> Result<()> {
        let mut send = vec![V::default(); values.len().min(SUM_CHUNK)];
        for chunk in values.chunks_mut(SUM_CHUNK) {
            let s = &mut send[..chunk.len()];
            s.copy_from_slice(chunk);
            self.call(|comm| {
                comm.all_reduce_into(&s[..], chunk, SystemOperation::sum());
                Ok(())
            })?;
        }
        Ok(())
    }

    fn all_to_all<V: mpi::datatype::Equivalence>(
        &self,
        send: &[V],
        send_counts: &[usize],
        recv: &mut [V],
        recv_counts: &[usize],
    ) -> Result<()> {
        crate::space::check_counts(self.size, send.len(), send_counts, recv.len(), recv_counts)?;
        let (sc, sd) = self.counts(send_counts)?;
        let (rc, rd) = self.counts(recv_counts)?;
        self.call(|comm| {
            let s = Partition::new(send, sc, sd);
            let mut r = PartitionMut::new(recv, rc, rd);
            comm.all_to_all_varcount_into(&s, &mut r);
            Ok(())
        })
    }
}

impl Communicator for MpiComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn all_gather(&self, local: &[u8]) -> Result<Vec<Vec<u8>>> {
        // The lengths first, on every rank alike, so that a message beyond MPI's counts fails
        // on every rank (not only on the one that has it).
        let n = local.len() as u64;
        let mut lens = vec![0u64; self.size];
        self.call(|comm| {
            comm.all_gather_into(&n, &mut lens[..]);
            Ok(())
        })?;
        let total: u64 = lens.iter().sum();
        if total > Count::MAX as u64 {
            let rank = lens
                .iter()
                .position(|&l| l == *lens.iter().max().unwrap_or(&0));
            return Err(Error::Distributed {
                rank: rank.unwrap_or(0),
                message: format!(
                    "an all-gather of {total} bytes is beyond MPI's counts ({} bytes)",
                    Count::MAX
                ),
            });
        }
        let sizes: Vec<usize> = lens.iter().map(|&l| l as usize).collect();
        let (counts, displs) = self.counts(&sizes)?;
        let mut all = vec![0u8; sizes.iter().sum()];
        self.call(|comm| {
            let mut r = PartitionMut::new(&mut all[..], counts, displs);
            comm.all_gather_varcount_into(local, &mut r);
            Ok(())
        })?;
        let mut out = Vec::with_capacity(self.size);
        let mut at = 0;
        for s in sizes {
            out.push(all[at..at + s].to_vec());
            at += s;
        }
        Ok(out)
    }

    fn all_sum_f64(&self, values: &mut [f64]) -> Result<()> {
        self.all_sum(values)
    }

    fn all_sum_f32(&self, values: &mut [f32]) -> Result<()> {
        self.all_sum(values)
    }

    fn all_to_all_f64(
        &self,
        send: &[f64],
        send_counts: &[usize],
        recv: &mut [f64],
        recv_counts: &[usize],
    ) -> Result<()> {
        self.all_to_all(send, send_counts, recv, recv_counts)
    }

    fn all_to_all_f32(
        &self,
        send: &[f32],
        send_counts: &[usize],
        recv: &mut [f32],
        recv_counts: &[usize],
    ) -> Result<()> {
        self.all_to_all(send, send_counts, recv, recv_counts)
    }

    fn describe(&self) -> String {
        format!("MPI_COMM_WORLD of {} ranks", self.size)
    }
}
