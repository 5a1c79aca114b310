//! The communication of the distributed ray transform at scale, from its plans (no MPI, no
//! data: the transforms are only set up): for each partition, size and rank count, the values
//! a rank exchanges per application, next to the volume it would all-reduce by views.
//!
//! `cargo run --release --example mpi_model [N...]` (default 2048 4096): cone beam as
//! `benches/ray_transform.rs`'s `cone_N` (N³ voxels, N views, 1.5 N × N pixels, source and
//! detector at 4 from the axis: a wide cone) and parallel beam, on 8, 16, 32 and 64 ranks.
//! `benches/README.md` turns these counts into times.

use std::f64::consts::PI;

use rodl::distributed::{Across, Communicator, DistributedRayTransform, Partition, Plan};
use rodl::tomo::{Backend, Geometry};
use rodl::{uniform_discr, Result, UniformPartition};

/// Rank `rank` of `size` for setting up a plan alone: every rank is taken to agree.
struct Pretend {
    rank: usize,
    size: usize,
}

impl Communicator for Pretend {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn all_gather(&self, local: &[u8]) -> Result<Vec<Vec<u8>>> {
        Ok(vec![local.to_vec(); self.size])
    }
}

fn part(lo: &[f64], hi: &[f64], n: &[usize]) -> Result<UniformPartition> {
    UniformPartition::new(lo, hi, n)
}

fn main() -> Result<()> {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![2048, 4096]
    } else {
        sizes
    };
    println!(
        "beam      N  ranks  slab: max values sent/apply (largest rank)  views: volume values"
    );
    for &n in &sizes {
        let space = uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[n, n, n])?;
        let angles = part(&[0.0], &[2.0 * PI], &[n])?;
        let cone = Geometry::cone_flat(
            &angles,
            &part(&[-2.8284, -2.8859], &[2.8284, 2.8859], &[3 * n / 2, n])?,
            4.0,
            4.0,
            0.0,
            [0.0, 0.0, 1.0],
            [0.0, 0.0],
        )?;
        let parallel = Geometry::parallel_3d(
            &angles,
            &part(&[-1.5, -1.0], &[1.5, 1.0], &[3 * n / 2, n])?,
            [0.0, 0.0, 1.0],
            [0.0, 0.0],
        )?;
        for (beam, g) in [("cone", &cone), ("parallel", &parallel)] {
            for ranks in [8, 16, 32, 64] {
                let plan = Plan::even(Partition::Slabs, n, ranks)?;
                let mut worst = 0usize;
                for rank in 0..ranks {
                    let across = Across::new(Pretend { rank, size: ranks });
                    let ray =
                        DistributedRayTransform::new(&space, g, &plan, Backend::default(), across)?;
                    let (sent, received) = ray.exchanged_values();
                    worst = worst.max(sent).max(received);
                }
                println!(
                    "{beam:<8} {n:>5} {ranks:>5}  {worst:>14} ({:.3} of a rank's data)  {:>14}",
                    worst as f64 / (n as f64 * 1.5 * n as f64 * n as f64 / ranks as f64),
                    n * n * n
                );
            }
        }
    }
    Ok(())
}
