//! CGLS iterations per second of the distributed ray transform, and the share of the time its
//! ranks spend in communication (feature `mpi`):
//!
//! ```text
//! cargo build --release --features mpi --example mpi_timing
//! for n in 1 2 4; do
//!   mpirun --oversubscribe -np $n target/release/examples/mpi_timing [SIZE] [ITERATIONS]
//! done
//! ```
//!
//! A cone-beam problem of `SIZE³` voxels (48 by default) and `SIZE` views of `SIZE × SIZE`
//! pixels in f32, partitioned by views and by slabs; each rank computes on the CPU with
//! `cores / ranks` threads (at least one). Rank 0 prints one line per partition: the ranks,
//! the iterations per second, the share of the slowest rank's time spent in collectives
//! (the communicator is wrapped by a timer) and the values each rank sends per iteration.
//! `benches/README.md` has the figures of this machine and a model for larger jobs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rodl::distributed::{Across, Communicator, DistributedRayTransform, MpiComm, Partition, Plan};
use rodl::solvers::iterative::cgls;
use rodl::tomo::{cone_beam_geometry, Backend};
use rodl::{uniform_discr, Operator, Result};

/// A communicator that adds up the time spent in its collectives.
struct Timed {
    comm: Arc<MpiComm>,
    nanos: AtomicU64,
}

impl Timed {
    fn time<R>(&self, f: impl FnOnce() -> R) -> R {
        let t = Instant::now();
        let r = f();
        self.nanos
            .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r
    }

    fn seconds(&self) -> f64 {
        self.nanos.load(Ordering::Relaxed) as f64 * 1e-9
    }
}

impl Communicator for Timed {
    fn rank(&self) -> usize {
        self.comm.rank()
    }
    fn size(&self) -> usize {
        self.comm.size()
    }
    fn all_gather(&self, local: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.time(|| self.comm.all_gather(local))
    }
    fn all_sum_f64(&self, values: &mut [f64]) -> Result<()> {
        self.time(|| self.comm.all_sum_f64(values))
    }
    fn all_sum_f32(&self, values: &mut [f32]) -> Result<()> {
        self.time(|| self.comm.all_sum_f32(values))
    }
    fn all_to_all_f64(&self, s: &[f64], sc: &[usize], r: &mut [f64], rc: &[usize]) -> Result<()> {
        self.time(|| self.comm.all_to_all_f64(s, sc, r, rc))
    }
    fn all_to_all_f32(&self, s: &[f32], sc: &[usize], r: &mut [f32], rc: &[usize]) -> Result<()> {
        self.time(|| self.comm.all_to_all_f32(s, sc, r, rc))
    }
}

fn main() -> Result<()> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(48);
    let iterations = args.get(1).copied().unwrap_or(10);
    let world = Arc::new(MpiComm::world()?);
    let (rank, size) = (world.rank(), world.size());
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let threads = (cores / size).max(1);
    let backend = Backend::cpu_threads(threads);
    let space = uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[n, n, n])?;
    let geometry = cone_beam_geometry(&space, 4.0, 4.0, Some(n))?;
    for partition in [Partition::Views, Partition::Slabs] {
        let timed = Arc::new(Timed {
            comm: world.clone(),
            nanos: AtomicU64::new(0),
        });
        let across = Across::from_arc(timed.clone());
        let plan = Plan::even(partition, n, size)?;
        let ray = DistributedRayTransform::new(
            &space,
            &geometry,
            &plan,
            backend.clone(),
            across.clone(),
        )?;
        let x_true = ray.domain().one()?;
        let y = ray.apply(&x_true)?;
        let mut x = ray.domain().zero()?;
        cgls(&ray, &mut x, &y, 1, &mut ())?; // warm-up
        across.agree(Ok(()))?;
        let before = timed.seconds();
        let start = Instant::now();
        let mut x = ray.domain().zero()?;
        cgls(&ray, &mut x, &y, iterations, &mut ())?;
        let wall = start.elapsed().as_secs_f64();
        let comm = timed.seconds() - before;
        // The slowest rank's wall time, and the largest communication share.
        let wall = across.max(Ok(wall))?;
        let share = across.max(Ok(comm / wall))?;
        let (sent, _) = ray.exchanged_values();
        let sent = across.max(Ok(sent as f64))?;
        if rank == 0 {
            println!(
                "partition={partition:?} ranks={size} threads/rank={threads} size={n}^3 \
                 cgls_it_per_s={:.2} comm_share={:.1}% values_sent_per_apply={}",
                iterations as f64 / wall,
                100.0 * share,
                sent
            );
        }
    }
    Ok(())
}
