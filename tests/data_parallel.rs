//! `DataParallel`: a batch split across devices, one replica per device built once by a factory.
//! Results equal element-by-element application of a single operator, the adjoint is exact in
//! the batch spaces, uneven and empty chunks work, the replicas are built once per device entry
//! (also under concurrent calls), and a missing device is a clean error at first use.
//!
//! Several CPU entries stand in for several devices: `[Cpu, Cpu]` runs two replicas on two
//! threads exactly as two GPUs would (less the transfers).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rand::SeedableRng;
use rodl::factory::{Factory, LinFactory, OpFactory, SpaceDesc, SpaceDescExt};
use rodl::parallel::DataParallel;
use rodl::tomo::{parallel_beam_geometry, CpuOptions, Geometry, RayTransform};
use rodl::{
    check_adjoint, uniform_discr, Device, Element, Error, Gradient, LinOp, LinearOperator, Op,
    Operator, PointwiseNorm, Result, Scalar, ScalingOperator, Space,
};

const CPU: Device = Device::Cpu;

fn rng(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed)
}

fn adjoint_tol<T: Scalar>() -> f64 {
    if T::EPS < 1e-10 {
        1e-12
    } else {
        1e-5
    }
}

/// The tensor leaves of a host element, depth first.
fn leaves<T: Scalar>(x: &Element<T>) -> Vec<Vec<T>> {
    if x.is_product() {
        x.parts().unwrap().iter().flat_map(leaves).collect()
    } else {
        vec![x.as_slice().unwrap().to_vec()]
    }
}

/// Element `b` of a batch element of the batch space of `inner`.
fn sample<T: Scalar>(inner: &Space<T>, batch: &Element<T>, b: usize) -> Element<T> {
    if inner.is_product() {
        let parts = inner
            .parts()
            .unwrap()
            .iter()
            .zip(batch.parts().unwrap())
            .map(|(s, x)| sample(s, x, b))
            .collect();
        inner.product_element(parts).unwrap()
    } else {
        let n = inner.size();
        let data = batch.as_slice().unwrap()[b * n..(b + 1) * n].to_vec();
        inner.element_from_vec(data).unwrap()
    }
}

/// Applies `op` element by element to the batch `x` and compares with `got`, to rounding.
fn assert_matches_single<T: Scalar>(
    op: &dyn Operator<T>,
    x: &Element<T>,
    got: &Element<T>,
    batch: usize,
    what: &str,
) {
    let tol = 16.0 * T::EPS;
    for b in 0..batch {
        let xb = sample(op.domain(), x, b);
        let want = op.apply(&xb).unwrap();
        let gb = sample(op.range(), got, b);
        for (g, w) in leaves(&gb).iter().zip(leaves(&want)) {
            let scale = w.iter().fold(1.0f64, |m, v| m.max(v.f64().abs()));
            for (gv, wv) in g.iter().zip(&w) {
                assert!(
                    (gv.f64() - wv.f64()).abs() <= tol * scale,
                    "{what}: element {b}: {gv} vs {wv}"
                );
            }
        }
    }
}

/// A linear factory that counts its builds (to check the caching from the outside too).
fn counting<T: Scalar>(inner: LinFactory<T>, count: Arc<AtomicUsize>) -> LinFactory<T> {
    let (d, r) = (inner.domain().clone(), inner.range().clone());
    Factory::from_fn(d, r, "counting", move |dev: Device| -> Result<LinOp<T>> {
        count.fetch_add(1, Ordering::SeqCst);
        inner.build(dev)
    })
}

fn check_linear_factory<T: Scalar>(f: LinFactory<T>, what: &str) {
    let single = f.build(CPU).unwrap();
    let single_adj = single.adjoint().unwrap();
    for (devices, chunks) in [
        (vec![CPU], vec![5]),
        (vec![CPU, CPU], vec![3, 2]),
        (vec![CPU, CPU, CPU], vec![2, 2, 1]),
        (vec![CPU, CPU, CPU], vec![0, 4, 1]),
        (vec![CPU, CPU, CPU, CPU, CPU, CPU], vec![1, 1, 1, 1, 1, 0]),
    ] {
        let what = format!("{what} on {} devices, chunks {chunks:?}", devices.len());
        let count = Arc::new(AtomicUsize::new(0));
        let op = DataParallel::with_chunks(counting(f.clone(), count.clone()), &devices, &chunks)
            .unwrap();
        assert_eq!(op.batch_size(), 5);
        assert_eq!(op.build_counts(), vec![0; devices.len()], "{what}");
        let mut r = rng(7);
        let x = op.domain().random_normal(&mut r).unwrap();
        let y = op.range().random_normal(&mut r).unwrap();
        let ax = op.apply(&x).unwrap();
        assert_matches_single(single.as_ref(), &x, &ax, 5, &what);
        let adj = op.adjoint().unwrap();
        let aty = adj.apply(&y).unwrap();
        assert_matches_single(single_adj.as_ref(), &y, &aty, 5, &format!("{what} adjoint"));
        // Repeated calls reuse the replicas: one build per device entry with work.
        for _ in 0..3 {
            op.apply(&x).unwrap();
            adj.apply(&y).unwrap();
        }
        let want: Vec<usize> = chunks.iter().map(|&c| usize::from(c > 0)).collect();
        assert_eq!(op.build_counts(), want, "{what}");
        assert_eq!(count.load(Ordering::SeqCst), want.iter().sum::<usize>());
        // The adjoint is exact in the batch spaces, and the adjoint of the adjoint is the op.
        let rep = check_adjoint(&op, 2, 3).unwrap();
        assert!(rep.max_rel_error <= adjoint_tol::<T>(), "{what}: {rep:?}");
        let back = adj.adjoint().unwrap();
        assert_eq!(back.domain(), op.domain());
        let again = back.apply(&x).unwrap();
        assert_eq!(leaves(&again), leaves(&ax), "{what}");
        assert_eq!(op.build_counts(), want, "{what}");
    }
}

fn small_ray<T: Scalar>() -> (Space<T>, Geometry) {
    let space = uniform_discr::<T>(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16]).unwrap();
    let g = parallel_beam_geometry(&space, Some(9)).unwrap();
    (space, g)
}

fn data_parallel_matches_single<T: Scalar>() {
    let (space, g) = small_ray::<T>();
    let ray: LinFactory<T> = RayTransform::factory(space.desc(), g, CpuOptions::default()).unwrap();
    check_linear_factory(ray.clone(), "ray transform");
    let grad: LinFactory<T> = Gradient::factory(space.desc()).unwrap();
    check_linear_factory(grad.clone(), "gradient");
    // A composite: 2·(∇* ∘ ∇).
    check_linear_factory(
        grad.adjoint().compose(&grad).unwrap().scaled(T::of(2.0)),
        "∇*∇",
    );
    // The adjoint factory's data-parallel operator.
    check_linear_factory(ray.adjoint(), "back-projection");
}

#[test]
fn data_parallel_matches_single_device_f64() {
    data_parallel_matches_single::<f64>();
}

#[test]
fn data_parallel_matches_single_device_f32() {
    data_parallel_matches_single::<f32>();
}

#[test]
fn even_split_puts_the_remainder_first() {
    let f: LinFactory<f32> = ScalingOperator::factory(SpaceDesc::rn(&[2, 3]), 2.0);
    let op = DataParallel::new(f.clone(), &[CPU, CPU, CPU], 7).unwrap();
    assert_eq!(op.chunks(), &[0..3, 3..5, 5..7]);
    assert_eq!(op.devices(), vec![CPU; 3]);
    assert_eq!(op.domain().shape().unwrap(), &[7, 2, 3]);
    // More devices than elements: the idle ones are never built.
    let op = DataParallel::new(f, &[CPU, CPU, CPU, CPU], 2).unwrap();
    assert_eq!(op.chunks(), &[0..1, 1..2, 2..2, 2..2]);
    op.apply(&op.domain().one().unwrap()).unwrap();
    assert_eq!(op.build_counts(), vec![1, 1, 0, 0]);
    op.warm_up().unwrap();
    assert_eq!(op.build_counts(), vec![1, 1, 0, 0]);
}

#[test]
fn general_data_parallel_runs_non_linear_factories() {
    let x = SpaceDesc::uniform_discr(&[0.0, 0.0], &[1.0, 1.0], &[4, 5]).unwrap();
    let norm: OpFactory<f64> = PointwiseNorm::factory(x.power(2), 2.0).unwrap();
    let single: Op<f64> = norm.build(CPU).unwrap();
    for devices in [vec![CPU], vec![CPU, CPU], vec![CPU, CPU, CPU]] {
        let op = DataParallel::new(norm.clone(), &devices, 5).unwrap();
        assert!(!op.is_linear());
        let xb = op.domain().random_normal(&mut rng(5)).unwrap();
        let y = op.apply(&xb).unwrap();
        assert_matches_single(single.as_ref(), &xb, &y, 5, "pointwise norm");
        op.apply(&xb).unwrap();
        assert_eq!(op.build_counts(), vec![1; devices.len()]);
    }
    // A general data-parallel operator from a linear factory keeps its linearity flag.
    let g: LinFactory<f64> = Gradient::factory(x).unwrap();
    let op = DataParallel::new(g.general(), &[CPU, CPU], 3).unwrap();
    assert!(op.is_linear());
}

#[test]
fn replicas_are_built_once_under_concurrent_calls() {
    let (space, g) = small_ray::<f32>();
    let count = Arc::new(AtomicUsize::new(0));
    let ray: LinFactory<f32> =
        RayTransform::factory(space.desc(), g, CpuOptions::default()).unwrap();
    let op = DataParallel::new(counting(ray, count.clone()), &[CPU, CPU], 4).unwrap();
    let x = op.domain().random_normal(&mut rng(1)).unwrap();
    let want = op.apply(&x).unwrap();
    let fresh = DataParallel::new(
        counting(
            RayTransform::factory(space.desc(), small_ray::<f32>().1, CpuOptions::default())
                .unwrap(),
            count.clone(),
        ),
        &[CPU, CPU],
        4,
    )
    .unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..3 {
                    let y = fresh.apply(&x).unwrap();
                    assert_eq!(leaves(&y), leaves(&want));
                }
            });
        }
    });
    assert_eq!(fresh.build_counts(), vec![1, 1]);
    assert_eq!(count.load(Ordering::SeqCst), 4);
}

#[test]
fn missing_device_is_a_clean_error_at_first_use() {
    let f: LinFactory<f64> = ScalingOperator::factory(SpaceDesc::rn(&[3]), 2.0);
    // Construction builds nothing, so it succeeds.
    let op = DataParallel::new(f.clone(), &[CPU, Device::Cuda(7)], 4).unwrap();
    let x = op.domain().one().unwrap();
    assert!(matches!(op.apply(&x), Err(Error::CudaUnavailable(_))));
    assert!(matches!(
        op.adjoint().unwrap().apply(&x),
        Err(Error::CudaUnavailable(_))
    ));
    assert!(matches!(op.warm_up(), Err(Error::CudaUnavailable(_))));
    assert_eq!(op.build_counts(), vec![1, 0]);
    // A GPU-only operator fails the same way, and again at the next call (not cached).
    let gpu_only = DataParallel::new(f, &[Device::Cuda(7)], 2).unwrap();
    for _ in 0..2 {
        assert!(matches!(
            gpu_only.apply(&gpu_only.domain().one().unwrap()),
            Err(Error::CudaUnavailable(_))
        ));
    }
}

#[test]
fn bad_arguments_are_errors() {
    let f: LinFactory<f64> = ScalingOperator::factory(SpaceDesc::rn(&[3]), 2.0);
    assert!(DataParallel::new(f.clone(), &[], 4).is_err());
    assert!(DataParallel::new(f.clone(), &[CPU], 0).is_err());
    assert!(DataParallel::with_chunks(f.clone(), &[CPU, CPU], &[3]).is_err());
    assert!(DataParallel::with_chunks(f.clone(), &[CPU, CPU], &[0, 0]).is_err());
    // Inputs must belong to the batch space.
    let op = DataParallel::new(f, &[CPU, CPU], 4).unwrap();
    let wrong = rodl::rn::<f64>(&[3, 4]).unwrap().one().unwrap();
    assert!(op.apply(&wrong).is_err());
    assert_eq!(op.build_counts(), vec![0, 0]);
}

#[test]
fn a_replica_on_the_wrong_space_is_reported() {
    // A closure factory that lies about what it builds is caught by its own check; the
    // data-parallel operator reports the error at first use.
    let liar: LinFactory<f64> = Factory::from_fn(
        SpaceDesc::rn(&[3]),
        SpaceDesc::rn(&[3]),
        "liar",
        |d: Device| -> Result<LinOp<f64>> {
            Ok(Arc::new(rodl::IdentityOperator::new(
                SpaceDesc::rn(&[5]).build(d)?,
            )))
        },
    );
    let op = DataParallel::new(liar, &[CPU, CPU], 2).unwrap();
    assert!(matches!(
        op.apply(&op.domain().one().unwrap()),
        Err(Error::SpaceMismatch { .. })
    ));
}

#[test]
fn stack_and_unstack_go_between_a_batch_and_its_elements() {
    // A product range (the gradient's) and a discretised domain: every leaf gets its rows.
    let x = SpaceDesc::uniform_discr(&[0.0, 0.0], &[1.0, 2.0], &[3, 4]).unwrap();
    let grad: LinFactory<f64> = Gradient::factory(x.clone()).unwrap();
    let single = grad.build(CPU).unwrap();
    let op = DataParallel::new(grad, &[CPU, CPU], 3).unwrap();
    let mut r = rng(21);
    let xs: Vec<Element<f64>> = (0..3)
        .map(|_| single.domain().random_normal(&mut r).unwrap())
        .collect();
    let batch = op.stack(&xs).unwrap();
    assert!(op.domain().check_member(&batch, "batch").is_ok());
    // Element b sits in row b of the batch.
    for (b, xb) in xs.iter().enumerate() {
        assert_eq!(
            sample(single.domain(), &batch, b).as_slice().unwrap(),
            xb.as_slice().unwrap()
        );
    }
    // Unstacking gives the elements back, and the outputs are the single operator's.
    let back = op.unstack(&batch).unwrap();
    assert_eq!(back.len(), 3);
    for (a, b) in back.iter().zip(&xs) {
        assert_eq!(a.as_slice().unwrap(), b.as_slice().unwrap());
    }
    let ys = op.unstack(&op.apply(&batch).unwrap()).unwrap();
    for (y, x) in ys.iter().zip(&xs) {
        assert!(single.range().check_member(y, "y").is_ok());
        assert_eq!(leaves(y), leaves(&single.apply(x).unwrap()));
    }
    // The range side (the adjoint's input): stack the outputs, apply the adjoint, unstack.
    let yb = op.stack(&ys).unwrap();
    assert!(op.range().check_member(&yb, "range batch").is_ok());
    assert_eq!(leaves(&yb), leaves(&op.apply(&batch).unwrap()));
    let adj = single.adjoint().unwrap();
    let back = op
        .unstack(&op.adjoint().unwrap().apply(&yb).unwrap())
        .unwrap();
    for (g, y) in back.iter().zip(&ys) {
        assert_eq!(leaves(g), leaves(&adj.apply(y).unwrap()));
    }
    // Wrong counts, wrong spaces and device elements are errors, not panics.
    assert!(op.stack(&xs[..2]).is_err());
    assert!(op.stack(&[]).is_err());
    let other = rodl::rn::<f64>(&[5]).unwrap().one().unwrap();
    assert!(op
        .stack(&[
            other.try_clone().unwrap(),
            other.try_clone().unwrap(),
            other
        ])
        .is_err());
    assert!(op.unstack(&xs[0]).is_err());
}

/// The weights of the tensor leaves of a space, depth first, with their sizes.
fn leaf_weights<T: Scalar>(s: &Space<T>) -> Vec<(f64, usize)> {
    if s.is_product() {
        s.parts().unwrap().iter().flat_map(leaf_weights).collect()
    } else {
        vec![(s.weight().unwrap(), s.size())]
    }
}

/// Asserts that `space` has leaves of exactly these weights and sizes, and that `⟨1, 1⟩` is
/// their sum of `size · weight` (a guard independent of how the weights are stored).
fn assert_weights(space: &Space<f64>, want: &[(f64, usize)], what: &str) {
    let got = leaf_weights(space);
    assert_eq!(got.len(), want.len(), "{what}: leaves");
    for (k, ((gw, gn), (ww, wn))) in got.iter().zip(want).enumerate() {
        assert_eq!(gn, wn, "{what}: leaf {k} size");
        assert!(
            (gw - ww).abs() <= 1e-15 * ww,
            "{what}: leaf {k} weight {gw}, want {ww}"
        );
    }
    let one = space.one().unwrap();
    let total: f64 = want.iter().map(|(w, n)| w * *n as f64).sum();
    let ip = space.inner(&one, &one).unwrap();
    assert!(
        (ip - total).abs() <= 1e-13 * total,
        "{what}: ⟨1, 1⟩ = {ip}, want {total}"
    );
}

/// Guards the weights of data-parallel (batched) domains and ranges against cell volumes
/// written out here, for a discretised space, a weighted tensor space, a power space (the
/// gradient's range), a product of unlike parts and a ray transform's data space: the batch
/// axis has unit weight, so every leaf keeps its element's weight, and `⟨1, 1⟩` of a batch of
/// `B` is `B` times the element's. Adjointness tests cannot see a weight that changes on both
/// sides alike; this can.
#[test]
fn batched_domains_and_ranges_keep_the_cell_volumes() {
    let b = 5;
    let cell = (2.0 / 16.0) * (3.0 / 12.0); // [-1, 1] × [0, 3] in 16 × 12 cells
    let discr = SpaceDesc::uniform_discr(&[-1.0, 0.0], &[1.0, 3.0], &[16, 12]).unwrap();
    let grad: LinFactory<f64> = Gradient::factory(discr.clone()).unwrap();
    let op = DataParallel::new(grad, &[CPU, CPU], b).unwrap();
    assert_weights(op.domain(), &[(cell, b * 192)], "gradient domain");
    assert_weights(
        op.range(),
        &[(cell, b * 192), (cell, b * 192)],
        "gradient range",
    );
    let adj = op.adjoint().unwrap();
    assert_weights(
        adj.domain(),
        &[(cell, b * 192), (cell, b * 192)],
        "∇* domain",
    );
    assert_weights(adj.range(), &[(cell, b * 192)], "∇* range");

    let rn = SpaceDesc::weighted_rn(&[3, 2], 0.375);
    let scale: LinFactory<f64> = ScalingOperator::factory(rn, 2.0);
    let op = DataParallel::new(scale, &[CPU], b).unwrap();
    assert_weights(op.domain(), &[(0.375, b * 6)], "weighted rn");
    assert_weights(op.range(), &[(0.375, b * 6)], "weighted rn range");

    let mixed = SpaceDesc::product(vec![
        SpaceDesc::uniform_discr(&[0.0], &[2.0], &[8]).unwrap(),
        SpaceDesc::product(vec![SpaceDesc::weighted_rn(&[4], 3.0), discr.clone()]),
    ]);
    let id: LinFactory<f64> = rodl::IdentityOperator::factory(mixed);
    let op = DataParallel::new(id, &[CPU, CPU, CPU], b).unwrap();
    let want = [(0.25, b * 8), (3.0, b * 4), (cell, b * 192)];
    assert_weights(op.domain(), &want, "product domain");
    assert_weights(op.range(), &want, "product range");

    // A ray transform: the data space's cell is Δθ · Δu with parallel_beam_geometry's
    // [0, π] in 9 angles and [−√2, √2] in 2⌈√2 · 8⌉ + 1 = 25 pixels.
    let (space, g) = small_ray::<f64>();
    let ray: LinFactory<f64> =
        RayTransform::factory(space.desc(), g, CpuOptions::default()).unwrap();
    let op = DataParallel::new(ray, &[CPU, CPU], b).unwrap();
    let data_cell = (std::f64::consts::PI / 9.0) * (2.0 * 2f64.sqrt() / 25.0);
    assert_weights(
        op.domain(),
        &[((2.0 / 16.0) * (2.0 / 16.0), b * 256)],
        "ray domain",
    );
    assert_weights(op.range(), &[(data_cell, b * 9 * 25)], "ray range");
}
