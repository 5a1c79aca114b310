//! Distributed elements and operators: a ray transform whose views or volume slabs are spread
//! over the ranks of a job (MPI, or any [`Communicator`]), and the share spaces that let the
//! existing solvers run unchanged on them.
//!
//! # The model
//! One process per rank (per GPU, or per node of CPU threads) runs the same program. Data that
//! a [`Plan`] splits live in a *share space* ([`Space::local_share`](crate::Space::local_share)):
//! a rank's elements hold only its part, and the space's inner products, norms, distances,
//! integrals and extrema are summed (or taken) over the ranks ([`Across`]), so that every rank
//! sees the numbers of the whole problem. Data that a plan replicates (the volume when it is
//! split by views) live in an ordinary space, the same on every rank. A solver such as
//! [`cgls`](crate::solvers::iterative::cgls()) or [`pdhg`](crate::solvers::iterative::pdhg()) then
//! runs on every rank with the [`DistributedRayTransform`] and computes the single-process
//! iterates to rounding (`tests/distributed_mpi.rs`: ≤ 1e-10 in f64 for 1, 2 and 3 ranks).
//!
//! Everything distributed is *collective*: every rank makes the same calls in the same order
//! (as an SPMD program does). A failure on one rank — a share of the wrong shape, a backend
//! error, a different geometry at construction — becomes the same [`Error::Distributed`]
//! naming that rank on every rank, instead of a hang: each collective first agrees on the
//! ranks' outcomes ([`Across::agree`]). A failure outside rodl's collectives is the program's
//! to handle: `MpiComm::abort` (feature `mpi`) ends every rank.
//!
//! # What does not work on a share
//! Operators that couple neighbouring cells (the [`Gradient`](crate::Gradient),
//! [`Divergence`](crate::Divergence), [`Laplacian`](crate::Laplacian)) return
//! [`Error::Unsupported`] on a slab share: partition by views for TV (the volume is whole on
//! every rank there). [`Element::sum`](crate::Element::sum)/`min`/`max` are an element's own
//! (local); [`Space::max`](crate::Space::max) and [`Space::min`](crate::Space::min) are the
//! whole space's. Seeded random elements ([`Space::random_normal`](crate::Space::random_normal))
//! of a share differ from a single process's, so estimates that start from one
//! ([`power_method_opnorm`](crate::power_method_opnorm)) agree across ranks but not to
//! rounding with a single process.
//!
//! # Running
//! Build with the `mpi` feature (the system MPI: on Debian `apt-get install libopenmpi-dev
//! openmpi-bin libclang-dev`) and start one process per rank, `mpirun -np 4 ./program`; each
//! makes `MpiComm::world` and picks its GPU by `MpiComm::local_rank`. A program that runs MPI
//! itself hands rodl its communicator with `MpiComm::from_raw` (a duplicate): so does the
//! Python package's `rodl.distributed.RayTransform` with mpi4py's.
//!
//! [`Error::Distributed`]: crate::Error::Distributed
//! [`Error::Unsupported`]: crate::Error::Unsupported

#[cfg(feature = "mpi")]
mod mpi_comm;
mod plan;
mod ray_transform;
mod rows;
mod single;

pub use crate::space::{Across, Communicator};
#[cfg(feature = "mpi")]
pub use mpi_comm::MpiComm;
pub use plan::{Partition, Plan};
pub use ray_transform::{DistributedBackProjection, DistributedRayTransform};
pub use single::SingleRank;
