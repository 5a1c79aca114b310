//! FBP and FDK of views at non-uniform angles (`rodl::tomo::fbp`'s angular quadrature): a
//! uniform scan given as vectors (with a data partition that says nothing of its angles, or
//! with its views shuffled) equals the uniform FBP to rounding; random angles reconstruct
//! Gaussian blobs from their exact line integrals within a measured bound of the uniform scan
//! with as many views, and closer than without the weights (ODL's `fbp_op`). `--nocapture`
//! prints the measured errors.

use std::f64::consts::PI;

use rand::{Rng, SeedableRng};
use rodl::tomo::phantom::{gaussian_phantom, gaussian_projections, GaussianBlob};
use rodl::tomo::{
    fbp_op, fbp_op_with, Backend, Detector, FbpOptions, Geometry, RayTransform, VecGeometry, View,
};
use rodl::{uniform_discr, Element, Operator, Space, UniformPartition};

fn part(lo: f64, hi: f64, n: usize) -> UniformPartition {
    UniformPartition::new(&[lo], &[hi], &[n]).unwrap()
}

/// The kinds of scan under test, each at any list of angles: a geometry with one view at each
/// angle (its views), built by the library's own constructor for that one angle.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Parallel,
    Fan,
    FanArc,
    Cone,
}

impl Kind {
    fn ndim(self) -> usize {
        if matches!(self, Kind::Cone) {
            3
        } else {
            2
        }
    }

    /// The scan over the angle partition `angles`.
    fn geometry(self, angles: &UniformPartition) -> Geometry {
        match self {
            Kind::Parallel => Geometry::parallel_2d(angles, &part(-1.5, 1.5, 64)).unwrap(),
            Kind::Fan => Geometry::fan_flat(angles, &part(-3.0, 3.0, 80), 3.0, 2.0, 0.1).unwrap(),
            Kind::FanArc => {
                let half = (1.5f64 / 3.0).asin() * 1.1;
                Geometry::fan_curved(angles, &part(-half, half, 80), 3.0, 2.0, 5.0, 0.0).unwrap()
            }
            Kind::Cone => Geometry::cone_flat(
                angles,
                &UniformPartition::new(&[-3.0, -2.0], &[3.0, 2.0], &[48, 24]).unwrap(),
                3.0,
                2.0,
                0.0,
                [0.0, 0.0, 1.0],
                [0.0, 0.0],
            )
            .unwrap(),
        }
    }

    /// Views at `angles` (any order), on the data partition with angle range `range`.
    fn at(self, angles: &[f64], range: (f64, f64)) -> Geometry {
        let one = |a: f64| self.geometry(&part(a - 1e-3, a + 1e-3, 1));
        let first = one(angles[0]);
        let views: Vec<View> = angles.iter().map(|&a| one(a).vec().views()[0]).collect();
        let g = first.vec();
        let mut vec = VecGeometry::new(g.ndim(), g.beam(), &g.det_shape(), views).unwrap();
        if !matches!(g.detector(), Detector::Flat) {
            vec = vec.with_detector(g.detector()).unwrap();
        }
        let dp = first.data_partition();
        let mut lo = vec![range.0];
        let mut hi = vec![range.1];
        lo.extend_from_slice(&dp.min_pt()[1..]);
        hi.extend_from_slice(&dp.max_pt()[1..]);
        let mut shape = vec![angles.len()];
        shape.extend_from_slice(&dp.shape()[1..]);
        Geometry::from_vec_on(vec, UniformPartition::new(&lo, &hi, &shape).unwrap()).unwrap()
    }

    fn space(self) -> Space<f64> {
        if self.ndim() == 3 {
            uniform_discr(&[-1.0; 3], &[1.0; 3], &[24, 24, 12]).unwrap()
        } else {
            uniform_discr(&[-1.0, -1.0], &[1.0, 1.0], &[48, 48]).unwrap()
        }
    }
}

fn blobs(three_d: bool) -> Vec<GaussianBlob> {
    let z = if three_d { 0.1 } else { 0.0 };
    vec![
        GaussianBlob {
            center: [0.2, -0.1, z],
            sigma: 0.15,
            amplitude: 1.0,
        },
        GaussianBlob {
            center: [-0.35, 0.3, -z],
            sigma: 0.1,
            amplitude: 0.7,
        },
    ]
}

/// FBP of the data `y` (an array of the data shape) for `geometry`.
fn fbp(space: &Space<f64>, geometry: &Geometry, y: &[f64], opts: &FbpOptions) -> Element<f64> {
    let ray = RayTransform::new(space.clone(), geometry.clone(), Backend::default()).unwrap();
    let data = ray.range().element_from_vec(y.to_vec()).unwrap();
    fbp_op(&ray, opts).unwrap().apply(&data).unwrap()
}

fn rel(space: &Space<f64>, a: &Element<f64>, b: &Element<f64>) -> f64 {
    space.dist(a, b).unwrap() / space.norm(b).unwrap()
}

/// Uniform angles given as vectors, on a partition that does not give them (`[0, views]`) or
/// with the views shuffled: the uniform FBP, to rounding.
#[test]
fn uniform_views_as_vectors_equal_the_uniform_fbp() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    for kind in [Kind::Parallel, Kind::Fan, Kind::FanArc, Kind::Cone] {
        let space = kind.space();
        let (len, n) = match kind {
            Kind::Parallel => (PI, 40),
            _ => (2.0 * PI, 48),
        };
        for (lo, alen, parker) in [(0.2, len, None), (0.2, PI + 1.5, Some(0.5))] {
            if matches!(kind, Kind::Parallel) && parker.is_some() {
                continue;
            }
            let n = if alen < len { n * 3 / 4 } else { n };
            let angles = part(lo, lo + alen, n);
            let g = kind.geometry(&angles);
            let opts = FbpOptions::default().with_parker(parker);
            let y: Vec<f64> = gaussian_projections::<f64>(&g, &blobs(kind.ndim() == 3))
                .unwrap()
                .iter()
                .copied()
                .collect();
            let uniform = fbp(&space, &g, &y, &opts);
            // The same views on [0, views]: from the vectors (full scans only: a short scan's
            // range must be given).
            if parker.is_none() {
                let plain = Geometry::from_vec(g.vec().clone()).unwrap();
                let e = rel(&space, &fbp(&space, &plain, &y, &opts), &uniform);
                println!("{kind:?} [0, views]: {e:.2e}");
                assert!(e < 1e-12, "{kind:?}: {e:.3e}");
            }
            // Shuffled views (and their data rows) on the scan's own range.
            let mut order: Vec<usize> = (0..n).collect();
            for k in (1..n).rev() {
                order.swap(k, rng.gen_range(0..=k));
            }
            let thetas = angles.coord_vector(0).unwrap();
            let shuffled: Vec<f64> = order.iter().map(|&k| thetas[k]).collect();
            let sg = kind.at(&shuffled, (lo, lo + alen));
            let row = y.len() / n;
            let sy: Vec<f64> = order
                .iter()
                .flat_map(|&k| y[k * row..(k + 1) * row].iter().copied())
                .collect();
            let e = rel(&space, &fbp(&space, &sg, &sy, &opts), &uniform);
            println!("{kind:?} shuffled, range {alen:.3}: {e:.2e}");
            assert!(e < 1e-12, "{kind:?} shuffled: {e:.3e}");
        }
    }
}

/// Random angles: jittered about the uniform ones, and uniformly random over the range; within
/// a measured bound of the uniform scan with as many views (the random ones leave gaps of up
/// to several times the mean spacing), and for parallel beams better than the same views
/// without angular weights.
#[test]
fn random_angles_reconstruct() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    for kind in [Kind::Parallel, Kind::Fan, Kind::FanArc, Kind::Cone] {
        let space = kind.space();
        let three_d = kind.ndim() == 3;
        let truth = gaussian_phantom(&space, &blobs(three_d)).unwrap();
        let (len, n) = match kind {
            Kind::Parallel => (PI, 90),
            _ => (2.0 * PI, 120),
        };
        let data = |g: &Geometry| -> Vec<f64> {
            gaussian_projections::<f64>(g, &blobs(three_d))
                .unwrap()
                .iter()
                .copied()
                .collect()
        };
        let error = |g: &Geometry| {
            rel(
                &space,
                &fbp(&space, g, &data(g), &FbpOptions::default()),
                &truth,
            )
        };
        let uniform_g = kind.geometry(&part(0.0, len, n));
        let uniform = error(&uniform_g);
        let d = len / n as f64;
        for (what, bound) in [("jittered", 0.01), ("random", 0.1)] {
            let angles: Vec<f64> = (0..n)
                .map(|k| match what {
                    "jittered" => (k as f64 + 0.5 + rng.gen_range(-0.3..0.3)) * d,
                    _ => rng.gen_range(0.0..len),
                })
                .collect();
            let random = kind.at(&angles, (0.0, len));
            let weighted = error(&random);
            // Without weights (ODL's `fbp_op`: each view counts Δθ), for parallel beams, whose
            // filter has no per-view parts: the uniform scan's filter on the random views.
            let unweighted = matches!(kind, Kind::Parallel).then(|| {
                let ray =
                    RayTransform::new(space.clone(), random.clone(), Backend::default()).unwrap();
                let f = fbp_op_with(&ray, &uniform_g, &FbpOptions::default()).unwrap();
                let y = ray.range().element_from_vec(data(&random)).unwrap();
                rel(&space, &f.apply(&y).unwrap(), &truth)
            });
            println!(
                "{kind:?}: uniform {uniform:.4}, {what} {weighted:.4} (without weights \
                 {unweighted:.4?})"
            );
            assert!(
                weighted < uniform + bound,
                "{kind:?} {what}: {weighted:.4} against {uniform:.4}"
            );
            if let Some(u) = unweighted {
                assert!(
                    weighted < u,
                    "{kind:?} {what}: {weighted:.4} against {u:.4} unweighted"
                );
            }
        }
    }
}
