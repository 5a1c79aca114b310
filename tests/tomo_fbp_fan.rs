//! Exact 2D fan-beam FBP in one weighted back-projection (`rodl::tomo::fbp`'s `fan` form on the
//! CPU: the windowed kernel for `f32`, the plane-major one for `f64`): equal to the sum of three
//! back-projections (the form it replaces, which any handle that hides the ray transform still
//! gets) to rounding, for flat and arc detectors, full
//! and short scans, detector offsets and view ranges; its adjoint is the three-term operator's,
//! so `⟨F y, x⟩ = ⟨y, F* x⟩` to rounding. `--nocapture` prints the measured differences.

use std::f64::consts::PI;
use std::sync::Arc;

use proptest::prelude::*;
use rodl::tomo::{fbp_op, fbp_op_views, fbp_op_with, Backend, FbpOptions, Geometry, RayTransform};
use rodl::{
    check_adjoint, uniform_discr, Element, LinOp, LinearOperatorExt, Operator, Space,
    UniformPartition,
};

fn part(lo: f64, hi: f64, n: usize) -> UniformPartition {
    UniformPartition::new(&[lo], &[hi], &[n]).unwrap()
}

/// A fan-beam geometry: flat or an arc about the source, `alen` of angles from `a0`.
fn fan(curved: bool, (a0, alen, n): (f64, f64, usize), nu: usize, offset: f64) -> Geometry {
    let (r, d) = (3.0, 2.0);
    let angles = part(a0, a0 + alen, n);
    if curved {
        let half = (1.6f64 / (r + d)).atan() * 1.8;
        Geometry::fan_curved(&angles, &part(-half, half, nu), r, d, r + d, 0.0).unwrap()
    } else {
        Geometry::fan_flat(&angles, &part(-3.0, 3.0, nu), r, d, offset).unwrap()
    }
}

/// A random sinogram of the data space.
fn data(space: &Space<f32>, seed: u64) -> Element<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    let n = space.size();
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        })
        .collect();
    space.element_from_vec(v).unwrap()
}

/// The relative L2 difference of the fast FBP (through the ray transform) from the three-term
/// one (through a handle that hides it).
fn difference(space: &Space<f32>, g: &Geometry, opts: &FbpOptions, seed: u64) -> f64 {
    let ray = Arc::new(RayTransform::new(space.clone(), g.clone(), Backend::default()).unwrap());
    let fast = fbp_op(ray.as_ref(), opts).unwrap();
    assert!(fast.name().contains("weighted"), "{}", fast.name());
    let op: LinOp<f32> = ray.clone();
    let hidden = op.scaled(1.0).unwrap();
    let exact = fbp_op_with(hidden.as_ref(), g, opts).unwrap();
    let y = data(ray.range(), seed);
    let (a, b) = (fast.apply(&y).unwrap(), exact.apply(&y).unwrap());
    space.dist(&a, &b).unwrap() / space.norm(&b).unwrap()
}

#[test]
fn one_back_projection_equals_three() {
    let space = uniform_discr::<f32>(&[-1.0, -1.2], &[1.1, 1.0], &[37, 41]).unwrap();
    let full = FbpOptions::default();
    let mut worst = 0.0f64;
    for curved in [false, true] {
        for (angles, opts) in [
            ((0.0, 2.0 * PI, 48), full.clone()),
            ((0.3, PI + 1.4, 40), full.clone()),
            ((0.3, PI + 1.4, 40), full.clone().with_parker(None)),
        ] {
            for offset in [0.0, 0.4] {
                let g = fan(curved, angles, 61, offset);
                let e = difference(&space, &g, &opts, 7);
                println!("curved {curved}, angles {angles:?}, offset {offset}: {e:.2e}");
                worst = worst.max(e);
            }
        }
    }
    assert!(worst < 2e-6, "worst relative difference {worst:.3e}");
}

/// `f64` (the plane-major weighted transpose): equal to the three-term form to `f64` rounding.
#[test]
fn f64_one_back_projection_equals_three() {
    let space = uniform_discr::<f64>(&[-1.0, -1.2], &[1.1, 1.0], &[29, 33]).unwrap();
    for curved in [false, true] {
        for angles in [(0.0, 2.0 * PI, 40), (0.3, PI + 1.4, 36)] {
            let g = fan(curved, angles, 45, if curved { 0.0 } else { 0.3 });
            let ray =
                Arc::new(RayTransform::new(space.clone(), g.clone(), Backend::default()).unwrap());
            let opts = FbpOptions::default();
            let fast = fbp_op(ray.as_ref(), &opts).unwrap();
            assert!(fast.name().contains("weighted"), "{}", fast.name());
            let op: LinOp<f64> = ray.clone();
            let exact = fbp_op_with(op.scaled(1.0).unwrap().as_ref(), &g, &opts).unwrap();
            let y = ray
                .range()
                .element_from_vec(
                    data(
                        &uniform_discr::<f32>(&[0.0], &[1.0], &[ray.range().size()]).unwrap(),
                        5,
                    )
                    .as_slice()
                    .unwrap()
                    .iter()
                    .map(|&v| v as f64)
                    .collect(),
                )
                .unwrap();
            let (a, b) = (fast.apply(&y).unwrap(), exact.apply(&y).unwrap());
            let e = space.dist(&a, &b).unwrap() / space.norm(&b).unwrap();
            println!("f64, curved {curved}, angles {angles:?}: {e:.2e}");
            assert!(e < 1e-12, "{e:.3e}");
            let report = check_adjoint(&fast, 2, 3).unwrap();
            assert!(report.max_rel_error < 1e-12, "{}", report.max_rel_error);
        }
    }
}

/// On the benchmark's case (300², 360 × 512): equal to the three-term form to rounding.
#[test]
fn equal_on_the_benchmark_case() {
    let space = uniform_discr::<f32>(&[-20.0, -20.0], &[20.0, 20.0], &[300, 300]).unwrap();
    let g = Geometry::fan_flat(
        &part(0.0, 2.0 * PI, 360),
        &part(-40.0, 40.0, 512),
        40.0,
        40.0,
        0.0,
    )
    .unwrap();
    let e = difference(&space, &g, &FbpOptions::default(), 3);
    println!("300², 360 × 512: {e:.2e}");
    assert!(e < 2e-6, "{e:.3e}");
}

/// A view range's FBP (a piece of the scan) takes the weighted form too: the pieces add up
/// to the whole.
#[test]
fn view_ranges_add_up() {
    let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[32, 32]).unwrap();
    let g = fan(false, (0.0, 2.0 * PI, 30), 48, 0.1);
    let ray = RayTransform::new(space.clone(), g.clone(), Backend::default()).unwrap();
    let y = data(ray.range(), 11);
    let whole = fbp_op(&ray, &FbpOptions::default())
        .unwrap()
        .apply(&y)
        .unwrap();
    let mut sum = space.zero().unwrap();
    for views in [0..13, 13..30] {
        let sub = g.select_views(views.clone()).unwrap();
        let part = RayTransform::new(space.clone(), sub, Backend::default()).unwrap();
        let rows = y.as_slice().unwrap()[views.start * 48..views.end * 48].to_vec();
        let op = fbp_op_views(&part, &g, views, &FbpOptions::default()).unwrap();
        let x = op
            .apply(&part.range().element_from_vec(rows).unwrap())
            .unwrap();
        let prev = sum.try_clone().unwrap();
        space.lincomb(1.0, &prev, 1.0, &x, &mut sum).unwrap();
    }
    let e = space.dist(&sum, &whole).unwrap() / space.norm(&whole).unwrap();
    assert!(e < 2e-6, "{e:.3e}");
}

/// `fbp_ops_views` (one preparation for several groups) gives each group the operator that
/// `fbp_op_views` gives it, exact fan-beam plan included; lists of different lengths and views
/// outside the scan are errors.
#[test]
fn groups_prepared_together_equal_groups_prepared_alone() {
    use rodl::tomo::fbp_ops_views;
    let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[24, 24]).unwrap();
    let g = fan(false, (0.0, 2.0 * PI, 30), 40, 0.1);
    let full = RayTransform::new(space.clone(), g.clone(), Backend::default()).unwrap();
    let y = data(full.range(), 5);
    let groups = [0..7, 7..19, 19..30];
    let parts: Vec<RayTransform<f32>> = groups
        .iter()
        .map(|v| {
            RayTransform::new(
                space.clone(),
                g.select_views(v.clone()).unwrap(),
                Backend::default(),
            )
            .unwrap()
        })
        .collect();
    let refs: Vec<&dyn rodl::LinearOperator<f32>> = parts
        .iter()
        .map(|r| r as &dyn rodl::LinearOperator<f32>)
        .collect();
    let o = FbpOptions::default();
    let together = fbp_ops_views(&refs, &g, &groups, &o).unwrap();
    for ((op, part), views) in together.iter().zip(&parts).zip(&groups) {
        let rows = y.as_slice().unwrap()[views.start * 40..views.end * 40].to_vec();
        let d = part.range().element_from_vec(rows).unwrap();
        let alone = fbp_op_views(part, &g, views.clone(), &o).unwrap();
        let (a, b) = (op.apply(&d).unwrap(), alone.apply(&d).unwrap());
        assert_eq!(a.as_slice().unwrap(), b.as_slice().unwrap(), "{views:?}");
    }
    assert!(fbp_ops_views(&refs[..2], &g, &groups, &o).is_err());
    let outside = vec![std::ops::Range { start: 25, end: 31 }];
    assert!(fbp_ops_views(&refs[..1], &g, &outside, &o).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Random fan geometries: the fast form equals the three-term one to rounding, and its
    /// adjoint (the three-term operator's) is its adjoint to rounding.
    #[test]
    fn random_fans(
        n in (8usize..30, 8usize..30),
        curved in any::<bool>(),
        a0 in 0.0f64..6.3,
        full in any::<bool>(),
        nviews in 6usize..30,
        nu in 10usize..50,
        offset in -0.3f64..0.3,
        seed in 0u64..1000,
    ) {
        let space = uniform_discr::<f32>(&[-1.0, -0.9], &[0.9, 1.0], &[n.0, n.1]).unwrap();
        let alen = if full { 2.0 * PI } else { PI + 1.6 };
        let g = fan(curved, (a0, alen, nviews), nu, if curved { 0.0 } else { offset });
        let opts = FbpOptions::default();
        let e = difference(&space, &g, &opts, seed);
        prop_assert!(e < 2e-6, "relative difference {:.3e}", e);
        let ray = RayTransform::new(space.clone(), g, Backend::default()).unwrap();
        let fast = fbp_op(&ray, &opts).unwrap();
        let report = check_adjoint(&fast, 2, seed).unwrap();
        prop_assert!(report.max_rel_error < 1e-5, "adjointness {:.3e}", report.max_rel_error);
    }
}
