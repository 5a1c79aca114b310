//! The communicator over MPI (feature `mpi`): the `mpi` crate over the system's MPI library.

use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use mpi::collective::SystemOperation;
use mpi::datatype::{Partition, PartitionMut};
use mpi::environment::Universe;
use mpi::raw::{AsRaw as _, FromRaw as _};
use mpi::topology::{Communicator as _, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives as _;
use mpi::{Count, Threading};

use crate::space::Communicator;
use crate::{Error, Result};

/// The values of one `MPI_Allreduce` call (16 Mi: 64 MiB of f32).
const SUM_CHUNK: usize = 1 << 24;

/// An MPI communicator for [`Across`](super::Across): MPI's own collectives
/// (`MPI_Allgatherv`, `MPI_Allreduce`, `MPI_Alltoallv`) under the distributed spaces and
/// operators.
///
/// [`MpiComm::world`] initialises MPI (asking for `MPI_THREAD_MULTIPLE`) and takes
/// `MPI_COMM_WORLD` of a job started by `mpirun` (or `srun`); MPI is finalised when the last
/// handle is dropped. [`MpiComm::from_raw`] adopts a duplicate of a communicator of a program
/// that initialised MPI itself (mpi4py, a C or Fortran host code), which keeps MPI's
/// initialisation and finalisation. The collectives are serialised by a lock, so the handle may be
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
    /// `MPI_COMM_WORLD`, or rodl's own duplicate of an adopted communicator (freed on drop
    /// unless MPI is finalised by then).
    comm: ManuallyDrop<SimpleCommunicator>,
    rank: usize,
    size: usize,
    local_rank: usize,
    /// The only thread that may call MPI, when the library is less than serialised.
    owner: Option<ThreadId>,
    lock: Mutex<()>,
    /// For messages: `"MPI_COMM_WORLD"` or what was adopted.
    name: &'static str,
    // Dropped last: finalises MPI (`None` for an adopted communicator: its program does).
    _universe: Option<Arc<Universe>>,
}

impl Drop for MpiComm {
    fn drop(&mut self) {
        // Freeing a communicator after `MPI_Finalize` is erroneous (the program that owns MPI
        // may finalise it before the last rodl object goes, as mpi4py does at exit): then
        // the handle is left to MPI's own clean-up.
        if !mpi::environment::is_finalized() {
            // SAFETY: `comm` is not used after this.
            unsafe { ManuallyDrop::drop(&mut self.comm) };
        }
    }
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
        Ok(Self::with(
            universe.world(),
            threading,
            "MPI_COMM_WORLD",
            Some(Arc::new(universe)),
        ))
    }

    /// Adopts the intra-communicator `raw` of a program that initialised MPI itself (mpi4py's
    /// `MPI._handleof(comm)`, a C code's `MPI_Comm`): rodl works on a duplicate
    /// (`MPI_Comm_dup`, collective over `raw`'s ranks), so that its collectives never match
    /// the program's own messages, and frees it when the handle is dropped. MPI stays the
    /// program's to finalise. The threading level is the one MPI was initialised with
    /// (`MPI_Query_thread`).
    ///
    /// Errors when MPI is not initialised or already finalised, when `raw` is
    /// `MPI_COMM_NULL`, or when it is an inter-communicator.
    ///
    /// # Safety
    /// `raw` must be a valid communicator handle of the MPI library that rodl is linked
    /// against (the same `libmpi` as the program's), and every rank of `raw` must make this
    /// call.
    pub unsafe fn from_raw(raw: mpi::ffi::MPI_Comm) -> Result<Self> {
        if !mpi::environment::is_initialized() || mpi::environment::is_finalized() {
            return Err(Error::invalid(
                "MpiComm::from_raw: MPI is not initialised (or is finalised already) in the \
                 libmpi that rodl links: initialise it before adopting a communicator (mpi4py \
                 does on `from mpi4py import MPI`; if it did, it uses another libmpi than rodl: \
                 build both against the same MPI)",
            ));
        }
        // SAFETY (of the MPI calls below): MPI is initialised and `raw` is a valid handle
        // (the caller's promise); the out-pointers are live locals.
        if raw == unsafe { mpi::ffi::RSMPI_COMM_NULL } {
            return Err(Error::invalid("MpiComm::from_raw: MPI_COMM_NULL"));
        }
        let mut inter: std::os::raw::c_int = 0;
        unsafe { mpi::ffi::MPI_Comm_test_inter(raw, &mut inter) };
        if inter != 0 {
            return Err(Error::Unsupported(
                "MpiComm::from_raw: an inter-communicator (rodl needs an intra-communicator, \
                 such as MPI_COMM_WORLD or a split of it)"
                    .into(),
            ));
        }
        let mut dup = unsafe { mpi::ffi::RSMPI_COMM_NULL };
        unsafe { mpi::ffi::MPI_Comm_dup(raw, &mut dup) };
        if dup == unsafe { mpi::ffi::RSMPI_COMM_NULL } {
            return Err(Error::invalid(
                "MpiComm::from_raw: MPI_Comm_dup returned MPI_COMM_NULL",
            ));
        }
        // SAFETY: `dup` is a live user intra-communicator that nothing else holds.
        let comm = unsafe { SimpleCommunicator::from_raw(dup) };
        Ok(Self::with(
            comm,
            mpi::environment::threading_support(),
            "a duplicate of the caller's communicator",
            None,
        ))
    }

    fn with(
        comm: SimpleCommunicator,
        threading: Threading,
        name: &'static str,
        universe: Option<Arc<Universe>>,
    ) -> Self {
        let rank = comm.rank().max(0) as usize;
        let size = comm.size().max(1) as usize;
        // The ranks on this node (sharing memory): the local rank picks the GPU.
        let local_rank = comm.split_shared(comm.rank()).rank().max(0) as usize;
        let owner = match threading {
            Threading::Serialized | Threading::Multiple => None,
            Threading::Single | Threading::Funneled => Some(std::thread::current().id()),
        };
        MpiComm {
            comm: ManuallyDrop::new(comm),
            rank,
            size,
            local_rank,
            owner,
            lock: Mutex::new(()),
            name,
            _universe: universe,
        }
    }

    /// The raw handle of rodl's communicator (`MPI_COMM_WORLD`, or the duplicate that
    /// [`MpiComm::from_raw`] made), for MPI calls of the program's own on the same ranks.
    pub fn as_raw(&self) -> mpi::ffi::MPI_Comm {
        self.comm.as_raw()
    }

    /// This process's rank in the communicator.
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
        format!("{} of {} ranks", self.name, self.size)
    }
}
