//! Phantoms: Shepp–Logan against ODL's own samples (tests/data/odl), ODL's placement and
//! rotation conventions, and the closed-form line integrals of ellipses and ellipsoids.

use std::f64::consts::PI;
use std::path::PathBuf;

use ndarray::ArrayD;
use ndarray_npy::read_npy;
use rand::{Rng, SeedableRng};
use rodl::tomo::phantom::{
    ellipse_phantom, ellipse_projections, ellipsoid_phantom, ellipsoid_projections,
    gaussian_phantom, shepp_logan, shepp_logan_ellipses, shepp_logan_ellipsoids,
    shepp_logan_projections, Ellipse, Ellipsoid, GaussianBlob,
};
use rodl::tomo::{Backend, Geometry, RayTransform, TomoSpec};
use rodl::{rn, uniform_discr, Error, Operator, Space, UniformPartition};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/odl")
        .join(name)
}

fn odl_space<T: rodl::Scalar>(case: &str) -> Space<T> {
    let spec = TomoSpec::from_file(data(&format!("{case}.json"))).unwrap();
    spec.volume.space::<T>().unwrap()
}

/// (number of samples that differ, largest difference) between ours and ODL's f32 phantom.
fn compare_with_odl(case: &str) -> (usize, f32) {
    let space = odl_space::<f32>(case);
    let ours = shepp_logan(&space, true).unwrap().into_array().unwrap();
    let odl: ArrayD<f32> = read_npy(data(&format!("{case}_image.npy"))).unwrap();
    assert_eq!(ours.shape(), odl.shape());
    let differing = ours.iter().zip(&odl).filter(|(a, b)| a != b).count();
    let max = ours
        .iter()
        .zip(&odl)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    eprintln!(
        "{case}: {differing} of {} samples differ from ODL (max |diff| {max:e})",
        odl.len()
    );
    (differing, max)
}

#[test]
fn shepp_logan_2d_matches_odl_exactly() {
    for case in ["par2d_64", "fan2d_64"] {
        assert_eq!(compare_with_odl(case), (0, 0.0), "{case}");
    }
}

#[test]
fn shepp_logan_3d_matches_odl_exactly() {
    for case in ["par3d_32", "cone3d_32"] {
        assert_eq!(compare_with_odl(case), (0, 0.0), "{case}");
    }
}

#[test]
fn shepp_logan_f64_has_odl_values_and_is_nonnegative() {
    // Same samples inside the same ellipses; in f64 the "−0.2 + 5e-17" ellipses keep the
    // modified phantom nowhere negative (ODL's reason for the offset).
    let space = odl_space::<f64>("par2d_64");
    let ours = shepp_logan(&space, true).unwrap().into_array().unwrap();
    let odl: ArrayD<f32> = read_npy(data("par2d_64_image.npy")).unwrap();
    let max = ours
        .iter()
        .zip(&odl)
        .map(|(a, &b)| (a - b as f64).abs())
        .fold(0.0, f64::max);
    assert!(max < 1e-7, "{max}");
    assert!(ours.iter().all(|&v| v >= 0.0));
    // The values that occur: background, skull, brain, and the small features.
    let mut levels: Vec<f64> = ours.iter().map(|v| (v * 1e6).round() / 1e6).collect();
    levels.sort_by(f64::total_cmp);
    levels.dedup();
    assert_eq!(levels, vec![0.0, 0.1, 0.2, 0.3, 0.4, 1.0]);
}

#[test]
fn standard_shepp_logan_values() {
    // Shepp and Logan's original values: skull 2, brain 2 − 0.98 = 1.02, ventricles 1.00, ...
    let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[128, 128]).unwrap();
    let x = shepp_logan(&space, false).unwrap().into_array().unwrap();
    let at = |px: f64, py: f64| {
        // the sample nearest to reference point (px, py): reference ±1 = first/last sample
        let i = ((px + 1.0) / 2.0 * 127.0).round() as usize;
        let j = ((py + 1.0) / 2.0 * 127.0).round() as usize;
        x[[i, j]]
    };
    assert_eq!(at(0.0, 0.9), 2.0); // skull (top)
    assert!((at(0.0, -0.3) - 1.02).abs() < 1e-12); // brain
    assert!((at(0.22, 0.0) - 1.0).abs() < 1e-12); // right ventricle: 1.02 − 0.02
    assert!((at(0.0, 0.35) - 1.03).abs() < 1e-12); // top ellipse: 1.02 + 0.01
    assert_eq!(at(0.99, 0.99), 0.0);
}

#[test]
fn slice_of_the_3d_phantom_is_the_2d_phantom() {
    // One cell in z: the slice z = 0, whose cuts through the ellipsoids are the 2D ellipses.
    let s2 = uniform_discr::<f32>(&[-3.0, -2.0], &[3.0, 2.0], &[48, 40]).unwrap();
    let s3 = uniform_discr::<f32>(&[-3.0, -2.0, -1.0], &[3.0, 2.0, 5.0], &[48, 40, 1]).unwrap();
    let a = shepp_logan(&s2, true).unwrap().into_array().unwrap();
    let b = shepp_logan(&s3, true).unwrap().into_array().unwrap();
    assert_eq!(a.as_slice().unwrap(), b.as_slice().unwrap());
    assert!(a.iter().any(|&v| v == 1.0));
}

#[test]
fn ellipses_are_placed_on_the_sample_extent() {
    // ODL maps the first and last sample (cell midpoint) of each axis to −1 and 1, per axis, so
    // an ellipse with semi-axes (0.5, 0.5) on [0, 4] × [−1, 1] (41 × 21 cells) has world
    // semi-axes 0.5 · 1.951 and 0.5 · 0.952 and is centred on the middle sample.
    let space = uniform_discr::<f64>(&[0.0, -1.0], &[4.0, 1.0], &[41, 21]).unwrap();
    let e = Ellipse::from_params([3.0, 0.5, 0.5, 0.0, 0.0, 0.0]);
    let x = ellipse_phantom(&space, &[e]).unwrap();
    let pts = space.points().unwrap();
    let (cx, hx) = (2.0, (4.0 - 4.0 / 41.0) / 2.0);
    let hy = (2.0 - 2.0 / 21.0) / 2.0;
    for (k, &v) in x.as_slice().unwrap().iter().enumerate() {
        let (px, py) = (pts[[k, 0]], pts[[k, 1]]);
        let r = ((px - cx) / (0.5 * hx)).powi(2) + (py / (0.5 * hy)).powi(2);
        if (r - 1.0).abs() > 1e-9 {
            assert_eq!(v, if r < 1.0 { 3.0 } else { 0.0 }, "at ({px}, {py})");
        }
    }
    assert_eq!(x.as_array().unwrap()[[20, 10]], 3.0);
}

#[test]
fn rotation_is_counter_clockwise() {
    // A needle along the first axis rotated by +45° lies on the diagonal x = y.
    let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[33, 33]).unwrap();
    let needle = Ellipse::from_params([1.0, 0.9, 0.05, 0.0, 0.0, PI / 4.0]);
    let x = ellipse_phantom(&space, &[needle])
        .unwrap()
        .into_array()
        .unwrap();
    assert_eq!(x[[26, 26]], 1.0);
    assert_eq!(x[[6, 6]], 1.0);
    assert_eq!(x[[26, 6]], 0.0);
    assert_eq!(x[[6, 26]], 0.0);
    // The same in 3D with φ (rotation about z), and θ tilts the first axis out of the plane…
    let s3 = uniform_discr::<f64>(&[-1.0; 3], &[1.0; 3], &[33, 33, 33]).unwrap();
    let n3 = Ellipsoid::from_params([1.0, 0.9, 0.05, 0.05, 0.0, 0.0, 0.0, PI / 4.0, 0.0, 0.0]);
    let y = ellipsoid_phantom(&s3, &[n3]).unwrap().into_array().unwrap();
    assert_eq!(y[[26, 26, 16]], 1.0);
    assert_eq!(y[[26, 6, 16]], 0.0);
    // With φ = 0, θ = 45°, ψ = 90°, row 0 of ODL's matrix, the first semi-axis, is
    // (cψ cφ − cθ sφ sψ, cψ sφ + cθ cφ sψ, sψ sθ) = (0, cos θ, sin θ): the y–z diagonal.
    let tilt =
        Ellipsoid::from_params([1.0, 0.9, 0.05, 0.05, 0.0, 0.0, 0.0, 0.0, PI / 4.0, PI / 2.0]);
    let z = ellipsoid_phantom(&s3, &[tilt])
        .unwrap()
        .into_array()
        .unwrap();
    assert_eq!(z[[16, 26, 26]], 1.0);
    assert_eq!(z[[16, 26, 6]], 0.0);
    assert_eq!(z[[26, 16, 16]], 0.0);
}

#[test]
fn phantom_arguments_are_checked() {
    let s2 = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[8, 8]).unwrap();
    let s3 = uniform_discr::<f64>(&[-1.0; 3], &[1.0; 3], &[4, 4, 4]).unwrap();
    let s1 = uniform_discr::<f64>(&[-1.0], &[1.0], &[8]).unwrap();
    let e = Ellipse::from_params([1.0, 0.5, 0.5, 0.0, 0.0, 0.0]);
    assert!(matches!(
        ellipse_phantom(&s3, &[e]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        shepp_logan(&s1, true),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        shepp_logan(&rn::<f64>(&[8, 8]).unwrap(), true),
        Err(Error::InvalidArgument(_))
    ));
    let bad = Ellipse::from_params([1.0, 0.0, 0.5, 0.0, 0.0, 0.0]);
    assert!(matches!(
        ellipse_phantom(&s2, &[bad]),
        Err(Error::InvalidArgument(_))
    ));
    let nan = Ellipse::from_params([f64::NAN, 0.5, 0.5, 0.0, 0.0, 0.0]);
    assert!(matches!(
        ellipse_phantom(&s2, &[nan]),
        Err(Error::InvalidArgument(_))
    ));
    let g3 = rodl::tomo::parallel_beam_geometry(&s3, Some(4)).unwrap();
    assert!(matches!(
        ellipse_projections::<f64>(&s2, &g3, &[e]),
        Err(Error::InvalidArgument(_))
    ));
    // Parameter lists round-trip.
    assert_eq!(Ellipse::from_params(e.params()), e);
    let p = [1.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];
    assert_eq!(Ellipsoid::from_params(p).params(), p);
    assert_eq!(shepp_logan_ellipses(true).len(), 10);
    assert_eq!(
        shepp_logan_ellipsoids(false)[2].angles[0],
        -(18f64.to_radians())
    );
}

#[test]
fn gaussian_blob_api_still_works() {
    // The midpoint rule integrates a Gaussian to spectral accuracy; the tails outside the
    // square (6.7 σ away) are below 1e-10.
    let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[32, 32]).unwrap();
    let blob = GaussianBlob {
        center: [0.0, 0.0, 0.0],
        sigma: 0.15,
        amplitude: 2.0,
    };
    let x = gaussian_phantom(&space, &[blob]).unwrap();
    let integral = space.integral(&x).unwrap();
    let exact = 2.0 * 2.0 * PI * 0.15 * 0.15;
    assert!(
        (integral - exact).abs() / exact < 1e-9,
        "{integral} vs {exact}"
    );
}

// ------------------------------------------------------------------ closed-form line integrals

/// Midpoint-rule integral of a sampled-by-formula phantom along `q + t e`, `t ∈ [−L, L]`.
fn quadrature(f: impl Fn([f64; 3]) -> f64, q: [f64; 3], e: [f64; 3], len: f64, n: usize) -> f64 {
    let h = 2.0 * len / n as f64;
    (0..n)
        .map(|i| {
            let t = -len + (i as f64 + 0.5) * h;
            f([q[0] + t * e[0], q[1] + t * e[1], q[2] + t * e[2]])
        })
        .sum::<f64>()
        * h
}

#[test]
fn ellipse_line_integrals_match_quadrature() {
    // The continuous phantom is evaluated pointwise through a 1×1 space per point (ODL's
    // placement rule, the same code that samples the phantom), on a non-square domain.
    let (lo, hi, shape) = ([-2.0, -1.0], [2.0, 1.5], [40, 30]);
    let space = uniform_discr::<f64>(&lo, &hi, &shape).unwrap();
    let ellipses = shepp_logan_ellipses(true);
    let angles = UniformPartition::new(&[0.0], &[PI], &[7]).unwrap();
    let det = UniformPartition::new(&[-3.0], &[3.0], &[15]).unwrap();
    let geometry = Geometry::parallel_2d(&angles, &det).unwrap();
    let exact = ellipse_projections::<f64>(&space, &geometry, &ellipses).unwrap();
    // Membership test in world coordinates from the phantom's own mapping.
    let gx = (hi[0] - lo[0]) / 2.0 * (1.0 - 1.0 / shape[0] as f64);
    let gy = (hi[1] - lo[1]) / 2.0 * (1.0 - 1.0 / shape[1] as f64);
    let (mx, my) = ((lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0);
    let f = |p: [f64; 3]| {
        let (u, v) = ((p[0] - mx) / gx, (p[1] - my) / gy);
        ellipses
            .iter()
            .map(|e| {
                let (s, c) = e.rotation.sin_cos();
                let (du, dv) = (u - e.center[0], v - e.center[1]);
                let (a, b) = (c * du + s * dv, -s * du + c * dv);
                let r = (a / e.axes[0]).powi(2) + (b / e.axes[1]).powi(2);
                if r <= 1.0 {
                    e.value
                } else {
                    0.0
                }
            })
            .sum()
    };
    let vg = geometry.vec();
    let mut worst: f64 = 0.0;
    for view in 0..7 {
        for iu in 0..15 {
            let (q, d) = vg.ray(view, iu, 0);
            let n = (d[0] * d[0] + d[1] * d[1]).sqrt();
            let e = [d[0] / n, d[1] / n, 0.0];
            let num = quadrature(f, q, e, 5.0, 100_000);
            worst = worst.max((num - exact[[view, iu]]).abs());
        }
    }
    eprintln!("2D ellipse line integrals vs quadrature (h = 1e-4): max |diff| {worst:.2e}");
    // Each of the ≤ 20 edge crossings of a ray costs at most one step h = 1e-4 times a jump ≤ 1.
    assert!(worst < 2e-3, "{worst}");
    assert!(exact.iter().any(|&v| v > 0.3));
}

#[test]
fn ellipsoid_line_integrals_match_quadrature() {
    // Rotated ellipsoids (all three Euler angles) in a cone-beam geometry.
    let (lo, hi, shape) = ([-1.0, -1.0, -0.5], [1.0, 1.0, 1.0], [20, 20, 10]);
    let space = uniform_discr::<f64>(&lo, &hi, &shape).unwrap();
    let bodies = [
        Ellipsoid::from_params([1.0, 0.7, 0.5, 0.6, 0.1, -0.05, 0.0, 0.3, 0.5, -0.4]),
        Ellipsoid::from_params([-0.5, 0.3, 0.2, 0.25, -0.2, 0.1, 0.2, -1.0, 0.2, 0.7]),
    ];
    let geometry = rodl::tomo::cone_beam_geometry(&space, 5.0, 3.0, Some(5)).unwrap();
    let exact = ellipsoid_projections::<f64>(&space, &geometry, &bodies).unwrap();
    let half: Vec<f64> = (0..3)
        .map(|k| (hi[k] - lo[k]) / 2.0 * (1.0 - 1.0 / shape[k] as f64))
        .collect();
    let mid: Vec<f64> = (0..3).map(|k| (lo[k] + hi[k]) / 2.0).collect();
    let f = |p: [f64; 3]| {
        let g = [0, 1, 2].map(|k| (p[k] - mid[k]) / half[k]);
        bodies
            .iter()
            .map(|b| {
                let [phi, th, psi] = b.angles;
                let (sf, cf, st, ct, sp, cp) = (
                    phi.sin(),
                    phi.cos(),
                    th.sin(),
                    th.cos(),
                    psi.sin(),
                    psi.cos(),
                );
                let m = [
                    [cp * cf - ct * sf * sp, cp * sf + ct * cf * sp, sp * st],
                    [-sp * cf - ct * sf * cp, -sp * sf + ct * cf * cp, cp * st],
                    [st * sf, -st * cf, ct],
                ];
                let d = [0, 1, 2].map(|k| g[k] - b.center[k]);
                let r: f64 = (0..3)
                    .map(|k| {
                        ((m[k][0] * d[0] + m[k][1] * d[1] + m[k][2] * d[2]) / b.axes[k]).powi(2)
                    })
                    .sum();
                if r <= 1.0 {
                    b.value
                } else {
                    0.0
                }
            })
            .sum()
    };
    let vg = geometry.vec();
    let shape_d = geometry.data_shape();
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let mut worst: f64 = 0.0;
    let mut hits = 0;
    for _ in 0..100 {
        let (view, iu, iv) = (
            rng.gen_range(0..shape_d[0]),
            rng.gen_range(shape_d[1] / 4..3 * shape_d[1] / 4),
            rng.gen_range(shape_d[2] / 4..3 * shape_d[2] / 4),
        );
        let (q, d) = vg.ray(view, iu, iv);
        let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let e = d.map(|x| x / n);
        // Integrate around the point of the ray nearest to the origin.
        let t0 = -(q[0] * e[0] + q[1] * e[1] + q[2] * e[2]);
        let c = [0, 1, 2].map(|k| q[k] + t0 * e[k]);
        let num = quadrature(f, c, e, 3.0, 100_000);
        let want = exact[[view, iu, iv]];
        hits += (want != 0.0) as usize;
        worst = worst.max((num - want).abs());
    }
    eprintln!("3D ellipsoid line integrals vs quadrature (h = 6e-5): max |diff| {worst:.2e}, {hits} of 100 rays hit");
    assert!(worst < 1e-3, "{worst}");
    assert!(hits > 30);
}

/// Relative L2 distance of the ray transform of the sampled phantom from the exact projections.
fn projector_error(shape: &[usize], geometry: impl Fn(&Space<f64>) -> Geometry) -> f64 {
    let d = shape.len();
    let space = uniform_discr::<f64>(&vec![-1.0; d], &vec![1.0; d], shape).unwrap();
    let g = geometry(&space);
    let exact = shepp_logan_projections::<f64>(&space, &g, true).unwrap();
    let x = shepp_logan(&space, true).unwrap();
    let ray = RayTransform::new(space, g, Backend::default()).unwrap();
    let y = ray.apply(&x).unwrap().into_array().unwrap();
    let num: f64 = y.iter().zip(&exact).map(|(a, b)| (a - b).powi(2)).sum();
    let den: f64 = exact.iter().map(|b| b * b).sum();
    (num / den).sqrt()
}

#[test]
fn ray_transform_of_shepp_logan_converges_to_exact_projections() {
    // The sampled phantom has staircase edges, so the error is first order in the cell size:
    // halving the cells must roughly halve it.
    let par = |s: &Space<f64>| rodl::tomo::parallel_beam_geometry(s, Some(60)).unwrap();
    let e64 = projector_error(&[64, 64], par);
    let e128 = projector_error(&[128, 128], par);
    let e256 = projector_error(&[256, 256], par);
    eprintln!(
        "Shepp–Logan, parallel 2D: rel L2 {e64:.3e} (64²), {e128:.3e} (128²), {e256:.3e} (256²)"
    );
    assert!(e256 < 0.7 * e128 && e128 < 0.7 * e64, "{e64} {e128} {e256}");
    assert!(e256 < 2e-2, "{e256}");
    let cone = |s: &Space<f64>| rodl::tomo::cone_beam_geometry(s, 4.0, 2.0, Some(24)).unwrap();
    let e24 = projector_error(&[24, 24, 24], cone);
    let e48 = projector_error(&[48, 48, 48], cone);
    eprintln!("Shepp–Logan, cone 3D: rel L2 {e24:.3e} (24³), {e48:.3e} (48³)");
    // The 3D skull is thinner than a 48³ voxel, hence the larger figures than in 2D.
    assert!(e48 < 0.6 * e24 && e48 < 0.15, "{e24} {e48}");
}

// ---------------------------------------------------------------------------------------------
// Shepp–Logan against ODL's published parameters (odl/phantom/transmission.py)
// ---------------------------------------------------------------------------------------------

/// ODL's `_shepp_logan_ellipse_2d()`: value, semi-axes x and y, centre x and y, rotation.
fn odl_ellipses_2d() -> [[f64; 6]; 10] {
    let r18 = 18f64.to_radians();
    [
        [2.00, 0.6900, 0.9200, 0.0000, 0.0000, 0.0],
        [-0.98, 0.6624, 0.8740, 0.0000, -0.0184, 0.0],
        [-0.02, 0.1100, 0.3100, 0.2200, 0.0000, -r18],
        [-0.02, 0.1600, 0.4100, -0.2200, 0.0000, r18],
        [0.01, 0.2100, 0.2500, 0.0000, 0.3500, 0.0],
        [0.01, 0.0460, 0.0460, 0.0000, 0.1000, 0.0],
        [0.01, 0.0460, 0.0460, 0.0000, -0.1000, 0.0],
        [0.01, 0.0460, 0.0230, -0.0800, -0.6050, 0.0],
        [0.01, 0.0230, 0.0230, 0.0000, -0.6060, 0.0],
        [0.01, 0.0230, 0.0460, 0.0600, -0.6050, 0.0],
    ]
}

/// ODL's `_shepp_logan_ellipsoids_3d()`: value, semi-axes x, y, z, centre x, y, z, Euler angles.
fn odl_ellipsoids_3d() -> [[f64; 10]; 10] {
    let r18 = 18f64.to_radians();
    [
        [
            2.00, 0.6900, 0.9200, 0.810, 0.0000, 0.0000, 0.0, 0.0, 0.0, 0.0,
        ],
        [
            -0.98, 0.6624, 0.8740, 0.780, 0.0000, -0.0184, 0.0, 0.0, 0.0, 0.0,
        ],
        [
            -0.02, 0.1100, 0.3100, 0.220, 0.2200, 0.0000, 0.0, -r18, 0.0, 0.0,
        ],
        [
            -0.02, 0.1600, 0.4100, 0.280, -0.2200, 0.0000, 0.0, r18, 0.0, 0.0,
        ],
        [
            0.01, 0.2100, 0.2500, 0.410, 0.0000, 0.3500, 0.0, 0.0, 0.0, 0.0,
        ],
        [
            0.01, 0.0460, 0.0460, 0.050, 0.0000, 0.1000, 0.0, 0.0, 0.0, 0.0,
        ],
        [
            0.01, 0.0460, 0.0460, 0.050, 0.0000, -0.1000, 0.0, 0.0, 0.0, 0.0,
        ],
        [
            0.01, 0.0460, 0.0230, 0.050, -0.0800, -0.6050, 0.0, 0.0, 0.0, 0.0,
        ],
        [
            0.01, 0.0230, 0.0230, 0.020, 0.0000, -0.6060, 0.0, 0.0, 0.0, 0.0,
        ],
        [
            0.01, 0.0230, 0.0460, 0.020, 0.0600, -0.6050, 0.0, 0.0, 0.0, 0.0,
        ],
    ]
}

/// ODL's `_modified_shepp_logan_ellipsoids` intensities (the two −0.2 get `+5e-17`).
fn odl_modified_values() -> [f64; 10] {
    [
        1.0,
        -0.8,
        -0.2 + 5e-17,
        -0.2 + 5e-17,
        0.1,
        0.1,
        0.1,
        0.1,
        0.1,
        0.1,
    ]
}

#[test]
fn shepp_logan_tables_are_odls_entry_by_entry() {
    for modified in [false, true] {
        let ours = shepp_logan_ellipses(modified);
        let odl = odl_ellipses_2d();
        assert_eq!(ours.len(), odl.len());
        for (k, (e, p)) in ours.iter().zip(&odl).enumerate() {
            let v = if modified {
                odl_modified_values()[k]
            } else {
                p[0]
            };
            let got = [
                e.value,
                e.axes[0],
                e.axes[1],
                e.center[0],
                e.center[1],
                e.rotation,
            ];
            let want = [v, p[1], p[2], p[3], p[4], p[5]];
            assert_eq!(got, want, "2D ellipse {k} (modified {modified})");
        }
        let ours = shepp_logan_ellipsoids(modified);
        let odl = odl_ellipsoids_3d();
        assert_eq!(ours.len(), odl.len());
        for (k, (e, p)) in ours.iter().zip(&odl).enumerate() {
            let v = if modified {
                odl_modified_values()[k]
            } else {
                p[0]
            };
            let mut got = vec![e.value];
            got.extend(e.axes);
            got.extend(e.center);
            got.extend(e.angles);
            let mut want = p.to_vec();
            want[0] = v;
            assert_eq!(got, want, "3D ellipsoid {k} (modified {modified})");
        }
    }
}

/// The phantom by ODL's recipe, written from its description: sample points (cell midpoints)
/// mapped to `[-1, 1]` per axis by the first and last sample, a point inside an ellipse when
/// `|Rᵀ(p − c)|²` in the semi-axes' units is at most 1 (rotation counter-clockwise), values
/// added in table order. Returns the phantom and, per sample, the smallest `|r − 1|` over the
/// ellipses (a sample within rounding of an ellipse's border may fall either way).
fn odl_recipe_2d(
    n: [usize; 2],
    lo: [f64; 2],
    hi: [f64; 2],
    modified: bool,
) -> (Vec<f64>, Vec<f64>) {
    let h = [0, 1].map(|i| (hi[i] - lo[i]) / n[i] as f64);
    let first = [0, 1].map(|i| lo[i] + 0.5 * h[i]);
    let last = [0, 1].map(|i| hi[i] - 0.5 * h[i]);
    let table = odl_ellipses_2d();
    let mut out = vec![0.0; n[0] * n[1]];
    let mut margin = vec![f64::INFINITY; n[0] * n[1]];
    for i in 0..n[0] {
        for j in 0..n[1] {
            let pt = [first[0] + i as f64 * h[0], first[1] + j as f64 * h[1]];
            let p = [0, 1].map(|a| {
                let mean = 0.5 * (first[a] + last[a]);
                (pt[a] - mean) / (0.5 * (last[a] - first[a]))
            });
            for (k, e) in table.iter().enumerate() {
                let v = if modified {
                    odl_modified_values()[k]
                } else {
                    e[0]
                };
                let (s, c) = e[5].sin_cos();
                let (dx, dy) = (p[0] - e[3], p[1] - e[4]);
                let (rx, ry) = (c * dx + s * dy, -s * dx + c * dy);
                let r = rx * rx / (e[1] * e[1]) + ry * ry / (e[2] * e[2]);
                if r <= 1.0 {
                    out[i * n[1] + j] += v;
                }
                let m = &mut margin[i * n[1] + j];
                *m = m.min((r - 1.0).abs());
            }
        }
    }
    (out, margin)
}

/// Compares samples: equal except within rounding of an ellipse border (counted, at most a few).
fn assert_matches_recipe(got: &[f64], want: &[f64], margin: &[f64], what: &str) {
    assert_eq!(got.len(), want.len());
    let mut border = 0;
    for (k, ((g, w), m)) in got.iter().zip(want).zip(margin).enumerate() {
        if g != w {
            assert!(
                *m < 1e-12,
                "{what}: sample {k} is {g}, ODL's recipe gives {w}"
            );
            border += 1;
        }
    }
    assert!(border <= 4, "{what}: {border} border samples differ");
}

#[test]
fn shepp_logan_matches_odls_recipe_at_256() {
    for modified in [true, false] {
        for (lo, hi) in [([-1.0, -1.0], [1.0, 1.0]), ([-20.0, -10.0], [20.0, 14.0])] {
            let space = uniform_discr::<f64>(&lo, &hi, &[256, 256]).unwrap();
            let ours = shepp_logan(&space, modified).unwrap();
            let (want, margin) = odl_recipe_2d([256, 256], lo, hi, modified);
            let inside = want.iter().filter(|&&v| v != 0.0).count();
            assert!(inside > 25_000, "{inside}");
            assert_matches_recipe(
                ours.as_slice().unwrap(),
                &want,
                &margin,
                &format!("256² on {lo:?}..{hi:?}, modified {modified}"),
            );
        }
    }
}

#[test]
fn shepp_logan_3d_matches_odls_recipe_at_96() {
    // The 3D ellipsoids rotate by φ about z only; ODL's Euler rotation is then the 2D one.
    let n = [96usize, 96, 96];
    let space = uniform_discr::<f64>(&[-1.0; 3], &[1.0; 3], &n).unwrap();
    let ours = shepp_logan(&space, true).unwrap();
    let h = 2.0 / 96.0;
    let to_ref = |i: usize| (-1.0 + (i as f64 + 0.5) * h) / (1.0 - 0.5 * h);
    let mut want = vec![0.0; n.iter().product()];
    let mut margin = vec![f64::INFINITY; want.len()];
    for i in 0..n[0] {
        for j in 0..n[1] {
            for l in 0..n[2] {
                let p = [to_ref(i), to_ref(j), to_ref(l)];
                let at = (i * n[1] + j) * n[2] + l;
                for (k, e) in odl_ellipsoids_3d().iter().enumerate() {
                    let (s, c) = e[7].sin_cos();
                    let d = [p[0] - e[4], p[1] - e[5], p[2] - e[6]];
                    let (rx, ry) = (c * d[0] + s * d[1], -s * d[0] + c * d[1]);
                    let r = rx * rx / (e[1] * e[1])
                        + ry * ry / (e[2] * e[2])
                        + d[2] * d[2] / (e[3] * e[3]);
                    if r <= 1.0 {
                        want[at] += odl_modified_values()[k];
                    }
                    margin[at] = margin[at].min((r - 1.0).abs());
                }
            }
        }
    }
    assert_matches_recipe(ours.as_slice().unwrap(), &want, &margin, "96³ modified");
}
