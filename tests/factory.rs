//! Factories: device-free space descriptions, the factories of the default operators, of the
//! ray transform and of closures, and the factory algebra. Operators built by a factory equal
//! the directly constructed ones, composite factories build the composite operators, mismatches
//! are reported when factories are assembled, and a missing device is a clean error.

use std::sync::Arc;

use rand::SeedableRng;
use rodl::factory::{Factory, LinFactory, OpFactory, SpaceDesc, SpaceDescExt};
use rodl::tomo::{parallel_beam_geometry, Backend, CpuOptions, RayTransform};
use rodl::{
    check_adjoint, rn, uniform_discr, weighted_rn, Device, Divergence, Element, Error, Gradient,
    IdentityOperator, Laplacian, LinOp, LinearOperator, LinearOperatorExt, MultiplyOperator, Op,
    Operator, PointwiseNorm, Result, Scalar, ScalingOperator, Space, ZeroOperator,
};

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

/// Flattened host data of an element (all leaves, depth first).
fn flat<T: Scalar>(x: &Element<T>) -> Vec<f64> {
    if x.is_product() {
        x.parts().unwrap().iter().flat_map(flat).collect()
    } else {
        x.as_slice().unwrap().iter().map(|v| v.f64()).collect()
    }
}

/// Asserts that `built` and `direct` have the same spaces and give identical results (forward
/// and, when linear, adjoint) on random inputs.
fn assert_same_op<T: Scalar>(built: &dyn Operator<T>, direct: &dyn Operator<T>, what: &str) {
    assert_eq!(built.domain(), direct.domain(), "{what}: domain");
    assert_eq!(built.range(), direct.range(), "{what}: range");
    let mut r = rng(11);
    let x = direct.domain().random_normal(&mut r).unwrap();
    assert_eq!(
        flat(&built.apply(&x).unwrap()),
        flat(&direct.apply(&x).unwrap()),
        "{what}: forward"
    );
}

fn assert_same_linop<T: Scalar>(built: &LinOp<T>, direct: &LinOp<T>, what: &str) {
    assert_same_op::<T>(built.as_ref(), direct.as_ref(), what);
    let (ba, da) = (built.adjoint().unwrap(), direct.adjoint().unwrap());
    assert_same_op::<T>(ba.as_ref(), da.as_ref(), &format!("{what} (adjoint)"));
    let rep = check_adjoint(built.as_ref(), 2, 5).unwrap();
    assert!(
        rep.max_rel_error <= adjoint_tol::<T>(),
        "{what}: adjoint error {}",
        rep.max_rel_error
    );
}

fn is_cuda_unavailable<X>(r: Result<X>) -> bool {
    matches!(r, Err(Error::CudaUnavailable(_)))
}

// ------------------------------------------------------------------------------ space descs

#[test]
fn space_desc_round_trips_every_kind() {
    let discr = uniform_discr::<f64>(&[-1.0, 0.0], &[1.0, 3.0], &[4, 6]).unwrap();
    let spaces = vec![
        rn::<f64>(&[3, 2]).unwrap(),
        weighted_rn::<f64>(&[5], 0.25).unwrap(),
        discr.clone(),
        discr.power(2).unwrap(),
        Space::product(vec![rn::<f64>(&[2]).unwrap(), discr.clone()]).unwrap(),
    ];
    for s in spaces {
        let d = s.desc();
        assert_eq!(d, SpaceDesc::of(&s));
        assert_eq!(d.build::<f64>(Device::Cpu).unwrap(), s, "{d}");
        assert_eq!(d.size(), s.size());
        // Another scalar type from the same description.
        assert_eq!(d.build::<f32>(Device::Cpu).unwrap(), s.with_scalar::<f32>());
        assert!(!d.to_string().is_empty());
    }
    assert_eq!(
        discr.desc(),
        SpaceDesc::uniform_discr(&[-1.0, 0.0], &[1.0, 3.0], &[4, 6]).unwrap()
    );
    assert_eq!(SpaceDesc::rn(&[2]).power(3).leaf_sizes(), vec![2, 2, 2]);
}

#[test]
fn space_desc_build_errors_are_clean() {
    assert!(is_cuda_unavailable(
        SpaceDesc::rn(&[3]).build::<f32>(Device::Cuda(7))
    ));
    assert!(SpaceDesc::rn(&[]).build::<f32>(Device::Cpu).is_err());
    assert!(SpaceDesc::weighted_rn(&[2], -1.0)
        .build::<f32>(Device::Cpu)
        .is_err());
    assert!(SpaceDesc::product(vec![])
        .build::<f32>(Device::Cpu)
        .is_err());
    assert!(SpaceDesc::uniform_discr(&[1.0], &[0.0], &[3]).is_err());
    assert!(SpaceDesc::rn(&[2]).batched(0).is_err());
}

#[test]
fn batched_spaces_sum_the_inner_products() {
    let inner = SpaceDesc::uniform_discr(&[0.0, 0.0], &[1.0, 2.0], &[3, 5]).unwrap();
    let b = inner.batched(4).unwrap().build::<f64>(Device::Cpu).unwrap();
    let s = inner.build::<f64>(Device::Cpu).unwrap();
    assert_eq!(b.shape().unwrap(), &[4, 3, 5]);
    assert_eq!(b.weight().unwrap(), s.weight().unwrap());
    let mut r = rng(3);
    let (x, y) = (
        b.random_normal(&mut r).unwrap(),
        b.random_normal(&mut r).unwrap(),
    );
    let (xs, ys) = (x.as_slice().unwrap(), y.as_slice().unwrap());
    let mut sum = 0.0;
    for k in 0..4 {
        let xe = s
            .element_from_vec(xs[k * 15..(k + 1) * 15].to_vec())
            .unwrap();
        let ye = s
            .element_from_vec(ys[k * 15..(k + 1) * 15].to_vec())
            .unwrap();
        sum += s.inner(&xe, &ye).unwrap();
    }
    assert!((b.inner(&x, &y).unwrap() - sum).abs() <= 1e-12 * sum.abs().max(1.0));
    // Products batch part by part.
    let p = SpaceDesc::product(vec![SpaceDesc::rn(&[2]), inner.clone()])
        .batched(3)
        .unwrap();
    assert_eq!(p.leaf_sizes(), vec![6, 45]);
}

// ------------------------------------------------------------------------ default operators

fn default_factories_match<T: Scalar>() {
    let x = uniform_discr::<T>(&[-1.0, 0.0], &[1.0, 2.0], &[5, 7]).unwrap();
    let y = rn::<T>(&[3]).unwrap();
    let xd = x.desc();
    let mut r = rng(1);
    let w = x.random_normal(&mut r).unwrap();
    let c = T::of(-1.75);

    let cases: Vec<(&str, LinFactory<T>, LinOp<T>)> = vec![
        (
            "identity",
            IdentityOperator::factory(xd.clone()),
            Arc::new(IdentityOperator::new(x.clone())),
        ),
        (
            "zero",
            ZeroOperator::factory(xd.clone(), y.desc()),
            Arc::new(ZeroOperator::new(x.clone(), y.clone())),
        ),
        (
            "scaling",
            ScalingOperator::factory(xd.clone(), c),
            Arc::new(ScalingOperator::new(x.clone(), c)),
        ),
        (
            "multiply",
            MultiplyOperator::factory(xd.clone(), w.try_clone().unwrap()).unwrap(),
            Arc::new(MultiplyOperator::new(x.clone(), w.try_clone().unwrap()).unwrap()),
        ),
        (
            "gradient",
            Gradient::factory(xd.clone()).unwrap(),
            Arc::new(Gradient::new(x.clone()).unwrap()),
        ),
        (
            "divergence",
            Divergence::factory(xd.clone()).unwrap(),
            Arc::new(Divergence::new(x.clone()).unwrap()),
        ),
        (
            "laplacian",
            Laplacian::factory(xd.clone()).unwrap(),
            Arc::new(Laplacian::new(x.clone()).unwrap()),
        ),
    ];
    for (what, f, direct) in cases {
        assert!(f.is_linear(), "{what}");
        assert!(!f.describe().is_empty(), "{what}");
        assert_eq!(f.domain(), &direct.domain().desc(), "{what}");
        assert_eq!(f.range(), &direct.range().desc(), "{what}");
        let built = f.build(Device::Cpu).unwrap();
        assert_same_linop(&built, &direct, what);
        // The general factory builds the same operator.
        let general = f.general().build(Device::Cpu).unwrap();
        assert_same_op::<T>(general.as_ref(), direct.as_ref(), what);
        // Every build is a fresh operator.
        let again = f.build(Device::Cpu).unwrap();
        assert!(!Arc::ptr_eq(&built, &again), "{what}");
        // A missing device is an error, never a panic.
        assert!(is_cuda_unavailable(f.build(Device::Cuda(7))), "{what}");
    }

    // The non-linear pointwise norm.
    let field = x.power(2).unwrap();
    let pn: OpFactory<T> = PointwiseNorm::factory(field.desc(), 2.0).unwrap();
    assert!(!pn.is_linear());
    let direct = PointwiseNorm::new(field.clone(), 2.0).unwrap();
    assert_same_op::<T>(
        pn.build(Device::Cpu).unwrap().as_ref(),
        &direct,
        "pointwise norm",
    );
    assert!(is_cuda_unavailable(pn.build(Device::Cuda(7))));
}

#[test]
fn default_factories_match_direct_construction_f64() {
    default_factories_match::<f64>();
}

#[test]
fn default_factories_match_direct_construction_f32() {
    default_factories_match::<f32>();
}

#[test]
fn default_factories_reject_bad_descriptions() {
    let prod = SpaceDesc::rn(&[3]).power(2);
    assert!(Gradient::<f64>::factory(prod.clone()).is_err());
    assert!(Divergence::<f64>::factory(prod.clone()).is_err());
    assert!(Laplacian::<f64>::factory(prod.clone()).is_err());
    assert!(PointwiseNorm::<f64>::factory(SpaceDesc::rn(&[3]), 2.0).is_err());
    assert!(PointwiseNorm::<f64>::factory(prod, 0.5).is_err());
    // The factor of a multiplication must be a host element of the space.
    let w = rn::<f64>(&[4]).unwrap().one().unwrap();
    assert!(MultiplyOperator::factory(SpaceDesc::rn(&[3]), w).is_err());
}

#[test]
fn multiply_factory_keeps_its_host_factor() {
    let s = rn::<f32>(&[3]).unwrap();
    let w = s.element_from_vec(vec![1.0, -2.0, 0.5]).unwrap();
    let f = MultiplyOperator::factory(s.desc(), w).unwrap();
    let a = f.build(Device::Cpu).unwrap();
    let b = f.build(Device::Cpu).unwrap();
    let x = s.full(2.0).unwrap();
    assert_eq!(a.apply(&x).unwrap().as_slice().unwrap(), &[2.0, -4.0, 1.0]);
    assert_eq!(b.apply(&x).unwrap().as_slice().unwrap(), &[2.0, -4.0, 1.0]);
    // The factory still holds its factor: a later build multiplies by it.
    let c = f.build(Device::Cpu).unwrap();
    assert_eq!(
        c.apply(&s.one().unwrap()).unwrap().as_slice().unwrap(),
        &[1.0, -2.0, 0.5]
    );
}

// ----------------------------------------------------------------------- composite factories

fn composites_match<T: Scalar>() {
    let x = uniform_discr::<T>(&[0.0, 0.0], &[1.0, 1.0], &[6, 5]).unwrap();
    let xd = x.desc();
    let c = T::of(0.5);
    let grad_f: LinFactory<T> = Gradient::factory(xd.clone()).unwrap();
    let lap_f: LinFactory<T> = Laplacian::factory(xd.clone()).unwrap();
    let id_f: LinFactory<T> = IdentityOperator::factory(xd.clone());
    let scale_f: LinFactory<T> = ScalingOperator::factory(xd.clone(), T::of(3.0));

    let grad: LinOp<T> = Arc::new(Gradient::new(x.clone()).unwrap());
    let lap: LinOp<T> = Arc::new(Laplacian::new(x.clone()).unwrap());
    let id: LinOp<T> = Arc::new(IdentityOperator::new(x.clone()));
    let scale: LinOp<T> = Arc::new(ScalingOperator::new(x.clone(), T::of(3.0)));

    let cases: Vec<(&str, LinFactory<T>, LinOp<T>)> = vec![
        (
            "grad* ∘ grad",
            grad_f.adjoint().compose(&grad_f).unwrap(),
            grad.adjoint().unwrap().compose(&grad).unwrap(),
        ),
        (
            "lap + id",
            lap_f.plus(&id_f).unwrap(),
            lap.plus(&id).unwrap(),
        ),
        (
            "lap - 3 id",
            lap_f.minus(&scale_f).unwrap(),
            lap.minus(&scale).unwrap(),
        ),
        ("0.5 lap", lap_f.scaled(c), lap.scaled(c).unwrap()),
        ("-grad", grad_f.neg(), grad.neg()),
        (
            "grad ∘ (lap + id) scaled",
            grad_f
                .compose(&lap_f.plus(&id_f).unwrap())
                .unwrap()
                .scaled(c),
            grad.compose(lap.plus(&id).unwrap())
                .unwrap()
                .scaled(c)
                .unwrap(),
        ),
        ("adjoint of grad", grad_f.adjoint(), grad.adjoint().unwrap()),
    ];
    for (what, f, direct) in cases {
        assert!(f.is_linear(), "{what}");
        assert_eq!(f.domain(), &direct.domain().desc(), "{what}");
        assert_eq!(f.range(), &direct.range().desc(), "{what}");
        assert!(!f.describe().is_empty());
        let built = f.build(Device::Cpu).unwrap();
        assert_same_linop(&built, &direct, what);
        assert_same_op::<T>(
            f.general().build(Device::Cpu).unwrap().as_ref(),
            direct.as_ref(),
            what,
        );
        assert!(is_cuda_unavailable(f.build(Device::Cuda(7))), "{what}");
    }

    // General composites, including a right scaling of a non-linear operator.
    let field = x.power(2).unwrap();
    let norm_f: OpFactory<T> = PointwiseNorm::factory(field.desc(), 2.0).unwrap();
    let grad_g = grad_f.general();
    let tv_f = norm_f.compose(&grad_g).unwrap().right_scaled(T::of(2.0));
    assert!(!tv_f.is_linear());
    let norm: Op<T> = Arc::new(PointwiseNorm::new(field, 2.0).unwrap());
    let tv = {
        use rodl::OperatorExt;
        norm.compose(&grad.as_op())
            .unwrap()
            .right_scaled(T::of(2.0))
            .unwrap()
    };
    assert_same_op::<T>(tv_f.build(Device::Cpu).unwrap().as_ref(), tv.as_ref(), "tv");
    let sum_f = tv_f.plus(&tv_f).unwrap().minus(&tv_f.neg()).unwrap();
    let built = sum_f.build(Device::Cpu).unwrap();
    let xe = x.random_normal(&mut rng(2)).unwrap();
    let (a, b) = (built.apply(&xe).unwrap(), tv.apply(&xe).unwrap());
    let want: Vec<f64> = flat(&b).iter().map(|v| 3.0 * v).collect();
    for (g, w) in flat(&a).iter().zip(&want) {
        assert!((g - w).abs() <= 64.0 * T::EPS * w.abs().max(1.0));
    }
}

#[test]
fn composite_factories_build_the_composites_f64() {
    composites_match::<f64>();
}

#[test]
fn composite_factories_build_the_composites_f32() {
    composites_match::<f32>();
}

#[test]
fn composite_factories_check_spaces_when_assembled() {
    let a = SpaceDesc::rn(&[3]);
    let b = SpaceDesc::rn(&[4]);
    let fa: LinFactory<f64> = IdentityOperator::factory(a.clone());
    let fb: LinFactory<f64> = IdentityOperator::factory(b.clone());
    let zab: LinFactory<f64> = ZeroOperator::factory(a.clone(), b.clone());
    assert!(matches!(fa.compose(&fb), Err(Error::SpaceMismatch { .. })));
    assert!(fa.plus(&fb).is_err());
    assert!(fa.minus(&zab).is_err());
    assert!(fb.compose(&zab).is_ok());
    assert!(fa.compose(&zab).is_err());
    // General factories are checked the same way.
    assert!(fa.general().plus(&fb.general()).is_err());
    assert!(fa.general().compose(&zab.general()).is_err());
    // The adjoint swaps domain and range.
    let adj = zab.adjoint();
    assert_eq!(adj.domain(), &b);
    assert_eq!(adj.range(), &a);
    assert!(zab.compose(&adj).is_ok());
}

// -------------------------------------------------------------------------- closure factories

#[test]
fn closure_factories_build_and_check_what_they_build() {
    let s = SpaceDesc::uniform_discr(&[0.0], &[1.0], &[8]).unwrap();
    let s2 = s.clone();
    let f: LinFactory<f64> = Factory::from_fn(
        s.clone(),
        s.clone(),
        "Laplacian via closure",
        move |d: Device| -> Result<LinOp<f64>> { Ok(Arc::new(Laplacian::new(s2.build(d)?)?)) },
    );
    assert_eq!(f.describe(), "Laplacian via closure");
    let direct: LinOp<f64> = Arc::new(Laplacian::new(s.build(Device::Cpu).unwrap()).unwrap());
    assert_same_linop(&f.build(Device::Cpu).unwrap(), &direct, "closure");
    assert!(is_cuda_unavailable(f.build(Device::Cuda(7))));
    // Closure factories compose like any other.
    let twice = f.compose(&f).unwrap();
    assert!(twice.build(Device::Cpu).is_ok());

    // A closure that builds on the wrong space is caught at build.
    let wrong: LinFactory<f64> = Factory::from_fn(
        SpaceDesc::rn(&[3]),
        SpaceDesc::rn(&[3]),
        "wrong",
        |_d: Device| -> Result<LinOp<f64>> { Ok(Arc::new(IdentityOperator::new(rn(&[4])?))) },
    );
    assert!(matches!(
        wrong.build(Device::Cpu),
        Err(Error::SpaceMismatch { .. })
    ));
    // One that ignores the device (builds on the CPU whatever it is asked for) is caught too.
    let ignores: OpFactory<f64> = Factory::from_fn(
        SpaceDesc::rn(&[3]),
        SpaceDesc::rn(&[3]),
        "ignores the device",
        |_d: Device| -> Result<Op<f64>> { Ok(Arc::new(IdentityOperator::new(rn(&[3])?))) },
    );
    assert!(ignores.build(Device::Cpu).is_ok());
    assert!(matches!(
        ignores.build(Device::Cuda(0)),
        Err(Error::DeviceMismatch { .. })
    ));
    // A linear closure factory builds linear operators whatever their `is_linear` says.
    let lying: LinFactory<f64> = Factory::from_fn(
        SpaceDesc::rn(&[3]).power(2),
        SpaceDesc::rn(&[3]),
        "lying",
        |_d: Device| -> Result<LinOp<f64>> {
            Ok(Arc::new(NotReallyLinear(rn(&[3])?.power(2)?, rn(&[3])?)))
        },
    );
    let built = lying.build(Device::Cpu).unwrap();
    assert!(built.scaled(2.0).unwrap().is_linear());
}

/// A linear operator that does not override `is_linear`.
struct NotReallyLinear(Space<f64>, Space<f64>);

impl Operator<f64> for NotReallyLinear {
    fn domain(&self) -> &Space<f64> {
        &self.0
    }
    fn range(&self) -> &Space<f64> {
        &self.1
    }
    fn evaluate(&self, _x: &Element<f64>, out: &mut Element<f64>) -> Result<()> {
        self.1.fill(out, 0.0)
    }
}

impl LinearOperator<f64> for NotReallyLinear {
    fn adjoint(&self) -> Result<LinOp<f64>> {
        Ok(Arc::new(NotReallyLinear(self.1.clone(), self.0.clone())))
    }
}

// ------------------------------------------------------------------------------- ray transform

fn ray_factory_matches<T: Scalar>() {
    let space = uniform_discr::<T>(&[-1.0, -1.0], &[1.0, 1.0], &[20, 20]).unwrap();
    let geometry = parallel_beam_geometry(&space, Some(12)).unwrap();
    let lf: LinFactory<T> =
        RayTransform::factory(space.desc(), geometry.clone(), CpuOptions::default()).unwrap();
    assert_eq!(lf.domain(), &space.desc());
    assert_eq!(
        lf.range(),
        &SpaceDesc::Discr(geometry.data_partition().clone())
    );
    let built = lf.build(Device::Cpu).unwrap();
    let direct: LinOp<T> =
        Arc::new(RayTransform::new(space.clone(), geometry.clone(), Backend::default()).unwrap());
    assert_same_linop(&built, &direct, "ray transform");
    assert!(is_cuda_unavailable(lf.build(Device::Cuda(7))));
    // The ray transform's factory composes with the others: A ∘ (c·I).
    let scaled = lf
        .compose(&ScalingOperator::factory(space.desc(), T::of(2.0)))
        .unwrap();
    let op = scaled.build(Device::Cpu).unwrap();
    let rep = check_adjoint(op.as_ref(), 2, 9).unwrap();
    assert!(rep.max_rel_error <= adjoint_tol::<T>());
    // CPU options travel with the factory.
    let one = CpuOptions { threads: Some(1) };
    assert_eq!(
        Backend::for_device(Device::Cpu, &one),
        Backend::cpu_threads(1)
    );
    assert_eq!(Backend::for_device(Device::Cuda(1), &one), Backend::cuda(1));
    let one_thread: LinFactory<T> = RayTransform::factory(space.desc(), geometry, one).unwrap();
    let t = one_thread.build(Device::Cpu).unwrap();
    assert_same_op::<T>(t.as_ref(), direct.as_ref(), "one thread");
}

#[test]
fn ray_transform_factory_matches_direct_construction_f64() {
    ray_factory_matches::<f64>();
}

#[test]
fn ray_transform_factory_matches_direct_construction_f32() {
    ray_factory_matches::<f32>();
}

#[test]
fn ray_transform_factory_rejects_bad_volumes() {
    let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[8, 8]).unwrap();
    let g = parallel_beam_geometry(&space, Some(4)).unwrap();
    let cpu = CpuOptions::default;
    assert!(RayTransform::<f64>::factory(SpaceDesc::rn(&[8, 8]), g.clone(), cpu()).is_err());
    let vol3 = SpaceDesc::uniform_discr(&[-1.0; 3], &[1.0; 3], &[4, 4, 4]).unwrap();
    assert!(matches!(
        RayTransform::<f64>::factory(vol3, g, cpu()),
        Err(Error::Geometry(_))
    ));
}

// ----------------------------------------------------------------------------- the type itself

#[test]
fn factories_are_plain_shared_descriptions() {
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c2 = count.clone();
    let s = SpaceDesc::rn(&[3]);
    let s2 = s.clone();
    let f: LinFactory<f64> = Factory::from_fn(s.clone(), s.clone(), "counted", move |d| {
        c2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let op: LinOp<f64> = Arc::new(ScalingOperator::new(s2.build(d)?, 2.0));
        Ok(op)
    });
    // Cloning and combining build nothing; every build is a fresh operator.
    let g = f.clone();
    let h = f.compose(&g).unwrap().right_scaled(0.5);
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert!(format!("{h:?}").contains("counted"));
    let op = h.build(Device::Cpu).unwrap();
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 2);
    // A linear factory's right scaling is its scaling: 0.5 · 2 · 2 = 2.
    let x = op.domain().one().unwrap();
    assert_eq!(op.apply(&x).unwrap().as_slice().unwrap(), &[2.0; 3]);
    assert_eq!(
        op.adjoint().unwrap().apply(&x).unwrap().as_slice().unwrap(),
        &[2.0; 3]
    );
    // The general view is explicit and keeps the linearity flag; a general closure factory
    // does not claim linearity.
    let general = h.general();
    assert!(general.is_linear());
    assert_eq!(general.describe(), h.describe());
    let closure: OpFactory<f64> = Factory::from_fn(s.clone(), s, "general", |d| {
        let op: Op<f64> = Arc::new(IdentityOperator::new(SpaceDesc::rn(&[3]).build(d)?));
        Ok(op)
    });
    assert!(!closure.is_linear());
    assert!(!general.plus(&closure).unwrap().is_linear());
}
