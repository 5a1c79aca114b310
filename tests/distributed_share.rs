//! Share spaces and the distributed ray transform without MPI: the ranks are threads of this
//! process over a communicator made of a barrier and a mailbox (the default collectives of
//! `Communicator`, built on its all-gather). Mirrors `src/distributed/` and
//! `src/space/across.rs`; `tests/distributed_mpi.rs` runs the same under `mpirun`.

use std::sync::{Arc, Barrier, Mutex};

use proptest::prelude::*;
use rand::SeedableRng;
use rodl::distributed::{
    Across, Communicator, DistributedRayTransform, Partition, Plan, SingleRank,
};
use rodl::tomo::{cone_beam_geometry, parallel_beam_geometry, Backend, Geometry};
use rodl::{rn, uniform_discr, Error, Gradient, LinearOperator, Operator, Result, Space};

struct Shared {
    barrier: Barrier,
    slots: Mutex<Vec<Vec<u8>>>,
}

/// Rank `rank` of a job of threads.
struct ThreadComm {
    rank: usize,
    size: usize,
    shared: Arc<Shared>,
}

impl Communicator for ThreadComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn all_gather(&self, local: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.shared.slots.lock().unwrap()[self.rank] = local.to_vec();
        self.shared.barrier.wait();
        let all = self.shared.slots.lock().unwrap().clone();
        self.shared.barrier.wait();
        Ok(all)
    }
}

/// Runs `f(across)` on `size` threads, one rank each; the results in rank order.
fn on_ranks<R: Send + 'static>(
    size: usize,
    f: impl Fn(Across) -> R + Send + Sync + 'static,
) -> Vec<R> {
    let shared = Arc::new(Shared {
        barrier: Barrier::new(size),
        slots: Mutex::new(vec![Vec::new(); size]),
    });
    let f = Arc::new(f);
    let handles: Vec<_> = (0..size)
        .map(|rank| {
            let (shared, f) = (shared.clone(), f.clone());
            std::thread::spawn(move || f(Across::new(ThreadComm { rank, size, shared })))
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// `v` split as `counts`, rank by rank.
fn pieces(v: &[f64], counts: &[usize]) -> Vec<Vec<f64>> {
    let mut at = 0;
    counts
        .iter()
        .map(|&c| {
            at += c;
            v[at - c..at].to_vec()
        })
        .collect()
}

#[test]
fn share_reductions_are_the_whole_spaces() {
    let whole: Vec<f64> = (0..10).map(|i| (i as f64 * 0.7).sin() * 3.0).collect();
    let other: Vec<f64> = (0..10).map(|i| (i as f64 * 1.3).cos()).collect();
    let w = rodl::weighted_rn::<f64>(&[10], 0.25).unwrap();
    let (x, y) = (
        w.element_from_vec(whole.clone()).unwrap(),
        w.element_from_vec(other.clone()).unwrap(),
    );
    let want = [
        w.inner(&x, &y).unwrap(),
        w.norm(&x).unwrap(),
        w.dist(&x, &y).unwrap(),
        w.integral(&x).unwrap(),
        w.max(&x).unwrap(),
        w.min(&x).unwrap(),
    ];
    let counts = [4, 0, 6];
    let (xs, ys) = (pieces(&whole, &counts), pieces(&other, &counts));
    let got = on_ranks(3, move |across| {
        let r = across.rank();
        let start: usize = counts[..r].iter().sum();
        // Rank 1's share is empty: a rank with nothing.
        let s = rodl::weighted_rn::<f64>(&[10], 0.25)
            .unwrap()
            .local_part(0, start..start + counts[r], across.clone())
            .unwrap();
        let x = s.element_from_vec(xs[r].clone()).unwrap();
        let y = s.element_from_vec(ys[r].clone()).unwrap();
        [
            s.inner(&x, &y).unwrap(),
            s.norm(&x).unwrap(),
            s.dist(&x, &y).unwrap(),
            s.integral(&x).unwrap(),
            s.max(&x).unwrap(),
            s.min(&x).unwrap(),
        ]
    });
    for g in got {
        for (a, b) in g.iter().zip(&want) {
            assert!(
                (a - b).abs() <= 1e-14 * b.abs().max(1.0),
                "{g:?} vs {want:?}"
            );
        }
    }
}

#[test]
fn product_of_share_and_replicated_parts_sums_once() {
    let got = on_ranks(2, |across| {
        let share = rn::<f64>(&[2])
            .unwrap()
            .local_share(across.clone())
            .unwrap();
        let whole = rn::<f64>(&[3]).unwrap();
        let p = Space::product(vec![share.clone(), whole.clone()]).unwrap();
        let x = p
            .product_element(vec![share.full(1.0).unwrap(), whole.full(2.0).unwrap()])
            .unwrap();
        // 2 ranks × 2 entries of 1, plus 3 replicated entries of 4: 4 + 12.
        p.norm(&x).unwrap().powi(2)
    });
    assert_eq!(got, vec![16.0, 16.0]);
}

#[test]
fn a_bad_element_on_one_rank_fails_every_rank() {
    let got = on_ranks(3, |across| {
        let s = rn::<f64>(&[4])
            .unwrap()
            .local_share(across.clone())
            .unwrap();
        let x = if across.rank() == 2 {
            rn::<f64>(&[5]).unwrap().one().unwrap()
        } else {
            s.one().unwrap()
        };
        s.norm(&x).map_err(|e| e.to_string())
    });
    for g in got {
        let e = g.unwrap_err();
        assert!(e.starts_with("rank 2: space mismatch in norm"), "{e}");
    }
}

#[test]
fn shares_refuse_stencils_and_mixed_communicators() {
    let share = uniform_discr::<f64>(&[0.0], &[1.0], &[4])
        .unwrap()
        .local_share(Across::new(SingleRank))
        .unwrap();
    assert!(matches!(
        Gradient::new(share.clone()),
        Err(Error::Unsupported(_))
    ));
    let other = share.local_share(Across::new(SingleRank)).unwrap();
    assert!(Space::product(vec![share.clone(), other]).is_err());
    assert!(share.to_string().contains("share of rank 0 of 1"));
}

#[test]
fn plans_split_and_choose() {
    let p = Plan::even(Partition::Slabs, 7, 3).unwrap();
    assert_eq!(p.ranges(), &[0..3, 3..5, 5..7]);
    assert_eq!(p.owned_rows(14), vec![0..6, 6..10, 10..14]);
    let q = Plan::with_counts(Partition::Slabs, &[0, 4, 0]).unwrap();
    assert_eq!(q.owned_rows(9), vec![0..0, 0..9, 9..9]);
    assert!(Plan::with_counts(Partition::Views, &[0, 0]).is_err());
    assert!(Plan::even(Partition::Views, 5, 0).is_err());
    assert!(matches!(
        Plan::choose(1 << 40, 1 << 40, 100, 100, 2, 1 << 30),
        Err(Error::OutOfMemory { .. })
    ));
}

#[test]
fn wrong_plans_fail_at_construction() {
    let space = uniform_discr::<f64>(&[-1.0; 3], &[1.0; 3], &[4, 4, 4]).unwrap();
    let g = parallel_beam_geometry(&space, Some(3)).unwrap();
    let make = |plan: &Plan| {
        DistributedRayTransform::new(
            &space,
            &g,
            plan,
            Backend::default(),
            Across::new(SingleRank),
        )
    };
    // For two ranks on a job of one; not covering the views; a slab plan of wrong depth.
    assert!(make(&Plan::even(Partition::Views, 3, 2).unwrap()).is_err());
    assert!(make(&Plan::even(Partition::Views, 4, 1).unwrap()).is_err());
    assert!(make(&Plan::even(Partition::Slabs, 5, 1).unwrap()).is_err());
    let flat = uniform_discr::<f64>(&[-1.0; 2], &[1.0; 2], &[4, 4]).unwrap();
    let g2 = parallel_beam_geometry(&flat, Some(3)).unwrap();
    let slabs = Plan::even(Partition::Slabs, 4, 1).unwrap();
    let e = DistributedRayTransform::new(
        &flat,
        &g2,
        &slabs,
        Backend::default(),
        Across::new(SingleRank),
    );
    assert!(matches!(e, Err(Error::Distributed { .. })), "{:?}", e.err());
}

/// `|<A x, y> − <x, A* y>| / (‖A x‖ ‖y‖)` on every rank of a threaded job (relative to the
/// norms, not to `<A x, y>` itself, which random inputs can make arbitrarily small).
fn adjointness(cone: bool, partition: Partition, counts: Vec<usize>, seed: u64) -> Vec<f64> {
    let size = counts.len();
    on_ranks(size, move |across| {
        let space = uniform_discr::<f64>(&[-1.0; 3], &[1.0; 3], &[6, 5, 7]).unwrap();
        let g: Geometry = if cone {
            cone_beam_geometry(&space, 4.0, 3.0, Some(7)).unwrap()
        } else {
            parallel_beam_geometry(&space, Some(7)).unwrap()
        };
        let plan = Plan::with_counts(partition, &counts).unwrap();
        let ray =
            DistributedRayTransform::new(&space, &g, &plan, Backend::default(), across.clone())
                .unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed + across.rank() as u64);
        // Replicated domains must be the same on every rank: one seed for them.
        let x = if ray.domain_part().is_none() {
            ray.domain()
                .random_normal(&mut rand::rngs::StdRng::seed_from_u64(seed))
                .unwrap()
        } else {
            ray.domain().random_normal(&mut rng).unwrap()
        };
        let y = ray.range().random_normal(&mut rng).unwrap();
        let ax = ray.apply(&x).unwrap();
        let a = ray.range().inner(&ax, &y).unwrap();
        let b = ray
            .domain()
            .inner(&x, &ray.adjoint().unwrap().apply(&y).unwrap())
            .unwrap();
        let scale = ray.range().norm(&ax).unwrap() * ray.range().norm(&y).unwrap();
        (a - b).abs() / scale
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn distributed_views_are_adjoint(
        a in 0usize..4, b in 0usize..4, cone in any::<bool>(), seed in 0u64..1000
    ) {
        // Seven views over three ranks, some with none.
        let counts = vec![a, b.min(7 - a), 7 - a - b.min(7 - a)];
        for err in adjointness(cone, Partition::Views, counts, seed) {
            prop_assert!(err <= 1e-12, "adjointness {err}");
        }
    }

    #[test]
    fn distributed_slabs_are_adjoint(
        a in 0usize..5, b in 0usize..5, cone in any::<bool>(), seed in 0u64..1000
    ) {
        // Seven slices over three ranks, some with none.
        let counts = vec![a, b.min(7 - a), 7 - a - b.min(7 - a)];
        for err in adjointness(cone, Partition::Slabs, counts, seed) {
            prop_assert!(err <= 1e-12, "adjointness {err}");
        }
    }
}
