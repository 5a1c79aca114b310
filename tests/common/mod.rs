//! Helpers shared by the integration tests: tolerances, comparisons, and catalogues of linear
//! operators built on random spaces.
#![allow(dead_code)]

use std::sync::Arc;

use rand::SeedableRng;
use rodl::tomo::{Beam, Geometry, VecGeometry, View};
use rodl::uniform_discr;
use rodl::{
    diagonal_operator, BlockOperator, BroadcastOperator, ComponentEmbedding, ComponentProjection,
    Divergence, Element, Gradient, IdentityOperator, Laplacian, LinOp, LinearOperatorExt,
    MultiplyOperator, ReductionOperator, Scalar, ScalingOperator, Space, UniformPartition,
    ZeroOperator,
};

/// The ODL reference cases of `tests/data/odl` that every geometry kind has.
pub const ODL_CASES: [&str; 5] = [
    "par2d_64",
    "fan2d_64",
    "par3d_32",
    "cone3d_32",
    "helical_32",
];

/// The ODL reference case `case` (`tests/data/odl/{case}.json`), from the source tree or, for
/// test binaries staged and run elsewhere, from the current directory.
pub fn odl_case(case: &str) -> rodl::tomo::TomoSpec {
    let rel = format!("tests/data/odl/{case}.json");
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(&rel);
    rodl::tomo::TomoSpec::from_file(if p.exists() {
        p
    } else {
        std::path::PathBuf::from(rel)
    })
    .unwrap()
}

/// The f32 volume space of an ODL reference case on GPU 0.
pub fn odl_volume_on_gpu(spec: &rodl::tomo::TomoSpec) -> Space<f32> {
    spec.volume
        .space::<f32>()
        .unwrap()
        .with_device(rodl::Device::Cuda(0))
        .unwrap()
}

/// Adjointness tolerance of the issue: 1e-12 relative in f64, 1e-5 in f32.
pub fn adjoint_tol<T: Scalar>() -> f64 {
    if T::EPS < 1e-10 {
        1e-12
    } else {
        1e-5
    }
}

/// Tolerance for comparing two computations of the same value that round differently: a small
/// multiple of the scalar type's rounding unit.
pub fn rounding_tol<T: Scalar>() -> f64 {
    64.0 * T::EPS
}

/// A seeded random number generator.
pub fn rng(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed)
}

/// `‖a − b‖ / max(‖a‖, ‖b‖)` (0 when both are 0).
pub fn rel_dist<T: Scalar>(space: &Space<T>, a: &Element<T>, b: &Element<T>) -> f64 {
    let d = space.dist(a, b).unwrap();
    let n = space.norm(a).unwrap().max(space.norm(b).unwrap());
    if n == 0.0 {
        d
    } else {
        d / n
    }
}

/// Asserts `|a − b| <= tol · max(1, |a|, |b|)` entrywise, with a message naming the entry.
pub fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "lengths differ: {got:?} vs {want:?}");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let scale = 1f64.max(g.abs()).max(w.abs());
        assert!(
            (g - w).abs() <= tol * scale,
            "entry {i}: got {g}, want {w} (tol {tol}); got {got:?}, want {want:?}"
        );
    }
}

/// The entries of a host tensor element as f64.
pub fn values<T: Scalar>(x: &Element<T>) -> Vec<f64> {
    x.as_slice().unwrap().iter().map(|v| v.f64()).collect()
}

/// An element of `space` (a tensor space or a product of them, on any device) from its values
/// in order, each part's after the one before.
pub fn element_of<T: Scalar>(space: &Space<T>, v: &[T]) -> Element<T> {
    if !space.is_product() {
        return space.element_from_vec(v.to_vec()).unwrap();
    }
    let mut at = 0;
    let parts = space
        .parts()
        .unwrap()
        .iter()
        .map(|p| {
            let e = element_of(p, &v[at..at + p.size()]);
            at += p.size();
            e
        })
        .collect();
    space.product_element(parts).unwrap()
}

/// The values of an element (on any device) in order, each part's after the one before.
pub fn flatten<T: Scalar>(e: &Element<T>) -> Vec<T> {
    if e.is_product() {
        e.parts().unwrap().iter().flat_map(flatten).collect()
    } else {
        e.to_host().unwrap().as_slice().unwrap().to_vec()
    }
}

/// Every default (non-product) linear operator on the tensor space `x`, plus the zero operator
/// into another space `y`. `w` is the factor of the multiplication operator, `c` a scalar.
pub fn default_ops<T: Scalar>(
    x: &Space<T>,
    y: &Space<T>,
    w: Element<T>,
    c: T,
) -> Vec<(String, LinOp<T>)> {
    vec![
        (
            "identity".into(),
            Arc::new(IdentityOperator::new(x.clone())) as LinOp<T>,
        ),
        (
            "zero X→Y".into(),
            Arc::new(ZeroOperator::new(x.clone(), y.clone())),
        ),
        (
            "scaling".into(),
            Arc::new(ScalingOperator::new(x.clone(), c)),
        ),
        (
            "multiply".into(),
            Arc::new(MultiplyOperator::new(x.clone(), w).unwrap()),
        ),
        (
            "gradient".into(),
            Arc::new(Gradient::new(x.clone()).unwrap()),
        ),
        (
            "divergence".into(),
            Arc::new(Divergence::new(x.clone()).unwrap()),
        ),
        (
            "laplacian".into(),
            Arc::new(Laplacian::new(x.clone()).unwrap()),
        ),
    ]
}

/// Every product-space operator, built from default operators on the tensor spaces `x` and `y`.
pub fn product_ops<T: Scalar>(
    x: &Space<T>,
    y: &Space<T>,
    w: Element<T>,
    c: T,
) -> Vec<(String, LinOp<T>)> {
    let grad: LinOp<T> = Arc::new(Gradient::new(x.clone()).unwrap());
    let div: LinOp<T> = Arc::new(Divergence::new(x.clone()).unwrap());
    let lap: LinOp<T> = Arc::new(Laplacian::new(x.clone()).unwrap());
    let mul: LinOp<T> = Arc::new(MultiplyOperator::new(x.clone(), w).unwrap());
    let sy: LinOp<T> = Arc::new(ScalingOperator::new(y.clone(), c));
    let zxy: LinOp<T> = Arc::new(ZeroOperator::new(x.clone(), y.clone()));
    let zyx: LinOp<T> = Arc::new(ZeroOperator::new(y.clone(), x.clone()));
    let xy = Space::product(vec![x.clone(), y.clone()]).unwrap();
    let x2 = x.power(2).unwrap();

    let block: LinOp<T> = Arc::new(
        BlockOperator::new(vec![
            vec![Some(lap.clone()), Some(zyx.clone())],
            vec![Some(zxy.clone()), Some(sy.clone())],
        ])
        .unwrap(),
    );
    // A sparse block matrix with an empty block and a composite block, range X^d × Y.
    let sparse: LinOp<T> = Arc::new(
        BlockOperator::with_spaces(
            vec![
                vec![Some(grad.compose(&mul).unwrap()), None],
                vec![None, Some(sy.clone())],
            ],
            xy.clone(),
            Space::product(vec![grad.range().clone(), y.clone()]).unwrap(),
        )
        .unwrap(),
    );
    // A block row with one empty row (the zero row), given explicit spaces.
    let with_zero_row: LinOp<T> = Arc::new(
        BlockOperator::with_spaces(
            vec![vec![Some(mul.clone())], vec![None]],
            Space::product(vec![x.clone()]).unwrap(),
            xy.clone(),
        )
        .unwrap(),
    );
    let broadcast: LinOp<T> =
        Arc::new(BroadcastOperator::new(vec![mul.clone(), grad.clone(), zxy.clone()]).unwrap());
    let reduction: LinOp<T> =
        Arc::new(ReductionOperator::new(vec![lap.clone(), div.clone(), zyx.clone()]).unwrap());
    let nested: LinOp<T> = diagonal_operator(vec![block.clone(), grad.clone()]).unwrap();

    vec![
        (
            "projection 0".into(),
            Arc::new(ComponentProjection::new(xy.clone(), 0).unwrap()) as LinOp<T>,
        ),
        (
            "projection 1".into(),
            Arc::new(ComponentProjection::new(xy.clone(), 1).unwrap()),
        ),
        (
            "embedding 0".into(),
            Arc::new(ComponentEmbedding::new(xy.clone(), 0).unwrap()),
        ),
        (
            "embedding 1".into(),
            Arc::new(ComponentEmbedding::new(x2.clone(), 1).unwrap()),
        ),
        ("block 2×2".into(), block),
        ("sparse block".into(), sparse),
        ("block with zero row".into(), with_zero_row),
        (
            "diagonal".into(),
            diagonal_operator(vec![grad.clone(), sy.clone(), mul.clone()]).unwrap(),
        ),
        ("broadcast".into(), broadcast),
        ("reduction".into(), reduction),
        ("nested block".into(), nested),
    ]
}

/// Compositions, sums, differences and scalar multiples of default operators on `x`.
///
/// A sum `A + B` is computed as `Ax + Bx`, so its rounding error is relative to ‖A‖ + ‖B‖; the
/// sums here avoid cancellation (‖A + B‖ ≪ ‖A‖ + ‖B‖) so that relative tolerances near rounding
/// apply.
pub fn algebra_ops<T: Scalar>(
    x: &Space<T>,
    y: &Space<T>,
    w: Element<T>,
    c: T,
) -> Vec<(String, LinOp<T>)> {
    let grad: LinOp<T> = Arc::new(Gradient::new(x.clone()).unwrap());
    let div: LinOp<T> = Arc::new(Divergence::new(x.clone()).unwrap());
    let lap: LinOp<T> = Arc::new(Laplacian::new(x.clone()).unwrap());
    let mul: LinOp<T> = Arc::new(MultiplyOperator::new(x.clone(), w).unwrap());
    let id: LinOp<T> = Arc::new(IdentityOperator::new(x.clone()));
    let zxy: LinOp<T> = Arc::new(ZeroOperator::new(x.clone(), y.clone()));
    let zyx: LinOp<T> = Arc::new(ZeroOperator::new(y.clone(), x.clone()));
    vec![
        ("div ∘ grad".into(), div.compose(&grad).unwrap()),
        ("grad ∘ mul".into(), grad.compose(&mul).unwrap()),
        (
            "mul ∘ div ∘ grad ∘ mul".into(),
            mul.compose(&div)
                .unwrap()
                .compose(&grad)
                .unwrap()
                .compose(&mul)
                .unwrap(),
        ),
        ("zero ∘ zero".into(), zyx.compose(&zxy).unwrap()),
        // sums whose parts cannot cancel: rounding stays relative to the norm of the sum
        (
            "lap − mul ∘ mul".into(),
            lap.minus(mul.compose(&mul).unwrap()).unwrap(),
        ),
        (
            "lap − div ∘ grad".into(),
            lap.minus(div.compose(&grad).unwrap()).unwrap(),
        ),
        ("mul − mul".into(), mul.minus(&mul).unwrap()),
        ("c · grad".into(), grad.scaled(c).unwrap()),
        ("−lap".into(), lap.neg()),
        (
            "c · (mul ∘ mul + id)".into(),
            mul.compose(&mul)
                .unwrap()
                .plus(&id)
                .unwrap()
                .scaled(c)
                .unwrap(),
        ),
        ("grad*".into(), grad.adjoint().unwrap()),
        (
            "(grad ∘ mul)*".into(),
            grad.compose(&mul).unwrap().adjoint().unwrap(),
        ),
        (
            "grad** ∘ lap".into(),
            grad.adjoint()
                .unwrap()
                .adjoint()
                .unwrap()
                .compose(&lap)
                .unwrap(),
        ),
    ]
}

/// Runs [`rodl::check_adjoint`] on every operator and panics with the name of the worst one
/// when it exceeds `tol`.
pub fn assert_adjoints<T: Scalar>(ops: &[(String, LinOp<T>)], seed: u64, tol: f64) {
    for (name, op) in ops {
        let r = rodl::check_adjoint(op.as_ref(), 2, seed)
            .unwrap_or_else(|e| panic!("{name}: check_adjoint failed: {e}"));
        assert!(
            r.max_rel_error <= tol,
            "{name} on {} → {}: adjoint error {:e} > {tol:e} (‖A‖ ≈ {})",
            op.domain(),
            op.range(),
            r.max_rel_error,
            r.opnorm
        );
    }
}

/// Runs [`rodl::check_linearity`] on every operator.
pub fn assert_linear<T: Scalar>(ops: &[(String, LinOp<T>)], seed: u64, tol: f64) {
    for (name, op) in ops {
        assert!(op.is_linear(), "{name} says it is not linear");
        let e = rodl::check_linearity(op.as_ref(), 2, seed).unwrap();
        assert!(e <= tol, "{name}: linearity error {e:e} > {tol:e}");
    }
}

/// A 2D or 3D volume and a geometry of each kind (parallel 2D, fan, parallel 3D, cone,
/// helical, and point beams from vectors): 3D volumes of `shape3` voxels, the vector
/// geometry's detector tilted by `tilt` (its `u` axis rises by `2·tilt`, its `v` axis leans by
/// `tilt`).
pub fn geometry_cases<T: Scalar>(
    shape3: [usize; 3],
    tilt: f64,
) -> Vec<(&'static str, Space<T>, Geometry)> {
    let part = |lo: f64, hi: f64, n: usize| UniformPartition::new(&[lo], &[hi], &[n]).unwrap();
    let v2 = uniform_discr::<T>(&[-1.0, -0.8], &[1.0, 1.2], &[20, 18]).unwrap();
    let v3 = uniform_discr::<T>(&[-1.0, -1.0, -0.5], &[1.0, 1.0, 0.7], &shape3).unwrap();
    let det2 = part(-1.6, 1.6, 25);
    let det3 = UniformPartition::new(&[-1.8, -1.2], &[1.8, 1.2], &[20, 14]).unwrap();
    let views: Vec<View> = (0..7)
        .map(|k| {
            let t = 0.4 * k as f64;
            View {
                src: [-4.0 * t.sin(), -4.0 * t.cos(), 0.1 * k as f64],
                det_center: [2.0 * t.sin(), 2.0 * t.cos(), 0.0],
                det_u: [0.15 * t.cos(), -0.15 * t.sin(), 2.0 * tilt],
                det_v: [tilt, 0.0, 0.15],
            }
        })
        .collect();
    vec![
        (
            "parallel 2D",
            v2.clone(),
            Geometry::parallel_2d(&part(0.0, std::f64::consts::PI, 11), &det2).unwrap(),
        ),
        (
            "fan",
            v2.clone(),
            Geometry::fan_flat(
                &part(0.0, 2.0 * std::f64::consts::PI, 13),
                &det2,
                5.0,
                3.0,
                0.1,
            )
            .unwrap(),
        ),
        (
            "parallel 3D",
            v3.clone(),
            Geometry::parallel_3d(
                &part(0.0, std::f64::consts::PI, 9),
                &det3,
                [0.2, 0.1, 1.0],
                [0.05, -0.1],
            )
            .unwrap(),
        ),
        (
            "cone",
            v3.clone(),
            Geometry::cone_flat(
                &part(0.0, 2.0 * std::f64::consts::PI, 10),
                &det3,
                6.0,
                4.0,
                0.0,
                [0.0, 0.0, 1.0],
                [0.0, 0.0],
            )
            .unwrap(),
        ),
        (
            "helical",
            v3.clone(),
            Geometry::cone_flat(
                &part(0.0, 4.0 * std::f64::consts::PI, 14),
                &det3,
                6.0,
                4.0,
                0.6,
                [0.0, 0.0, 1.0],
                [0.0, 0.0],
            )
            .unwrap(),
        ),
        (
            "vec (point beams)",
            v3,
            Geometry::from_vec(VecGeometry::new(3, Beam::Point, &[16, 12], views).unwrap())
                .unwrap(),
        ),
    ]
}

/// The lock of the tests of one test binary that need the GPU to themselves.
static GPU_LOCK: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Taken by a GPU test that reads or changes state of the whole device or process while it
/// runs — the device's free memory, a graph capture in global mode (which forbids other
/// threads' allocations) — so that no other test of its binary runs beside it. Every other GPU
/// test of such a binary takes [`gpu_shared`]; test binaries run one after another, so other
/// binaries need nothing. A test that failed while holding it does not block the rest.
pub fn gpu_alone() -> std::sync::RwLockWriteGuard<'static, ()> {
    GPU_LOCK.write().unwrap_or_else(|e| e.into_inner())
}

/// Taken by the GPU tests of a binary that also has [`gpu_alone`] tests: these run in
/// parallel with each other, never beside a [`gpu_alone`] one.
pub fn gpu_shared() -> std::sync::RwLockReadGuard<'static, ()> {
    GPU_LOCK.read().unwrap_or_else(|e| e.into_inner())
}

/// How many times a reproducibility test repeats a call: `default`, or fewer where
/// `RODL_TEST_REPEATS` says so (`tools/gpu-sanitize` sets 2: a sanitizer checks each launch,
/// and one repetition reaches every kernel that twenty do).
pub fn repeats(default: usize) -> usize {
    std::env::var("RODL_TEST_REPEATS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map_or(default, |n| n.clamp(2, default.max(2)))
}

/// Whether the tests run under compute-sanitizer (`tools/gpu-sanitize` sets `RODL_SANITIZER`):
/// the heaviest GPU tests then take fewer views, budgets, batch sizes or random trials — the
/// same kernels and the same paths through them, fewer and smaller launches to instrument
/// (racecheck runs shared-memory kernels a thousand times slower).
pub fn sanitizing() -> bool {
    std::env::var_os("RODL_SANITIZER").is_some()
}

/// `full` normally, `small` under a sanitizer ([`sanitizing`]).
pub fn sized<T>(full: T, small: T) -> T {
    if sanitizing() {
        small
    } else {
        full
    }
}

/// The share of `cases` that this process runs: all of them, or where `RODL_TEST_SHARD` is
/// `i/n` (`tools/gpu-sanitize` sets it for the tests it lists as sharded) every `n`-th from the
/// `i`-th, so that one long test's cases run in `n` sanitizer processes at once. A malformed
/// value is a test failure, not a silent "all".
pub fn shard<T>(cases: &[T]) -> Vec<&T> {
    let Ok(spec) = std::env::var("RODL_TEST_SHARD") else {
        return cases.iter().collect();
    };
    let (i, n) = spec
        .split_once('/')
        .and_then(|(i, n)| Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
        .filter(|&(i, n)| i < n)
        .unwrap_or_else(|| panic!("RODL_TEST_SHARD={spec}: expected i/n with i < n"));
    cases.iter().skip(i).step_by(n).collect()
}
