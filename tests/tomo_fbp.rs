//! Filtered back-projection and FDK (`rodl::tomo::fbp`): exact adjoints of the filter,
//! reconstructions of Gaussian blobs from their exact line integrals in absolute values for every
//! geometry kind, Parker short scans, and the Shepp–Logan quality figure of ODL's FBP.
//! `--nocapture` prints the measured errors.

use std::f64::consts::PI;
use std::sync::Arc;

use proptest::prelude::*;
use rodl::tomo::phantom::{gaussian_phantom, gaussian_projections, shepp_logan, GaussianBlob};
use rodl::tomo::{
    cone_beam_geometry, fbp_filter_op, fbp_op, fbp_op_with, parallel_beam_geometry, Backend, Beam,
    FbpFilter, FbpOptions, FilterType, Geometry, RayTransform, VecGeometry,
};
use rodl::{
    check_adjoint, uniform_discr, BatchedOperator, Element, Error, LinOp, LinearOperator,
    LinearOperatorExt, Operator, Scalar, Space, UniformPartition,
};

fn blob(center: [f64; 3], sigma: f64, amplitude: f64) -> GaussianBlob {
    GaussianBlob {
        center,
        sigma,
        amplitude,
    }
}

/// Three blobs inside the unit disc, in the plane z = 0 (2D) or around it (3D).
fn blobs(three_d: bool) -> Vec<GaussianBlob> {
    let z = if three_d { [0.1, -0.15, 0.2] } else { [0.0; 3] };
    vec![
        blob([0.2, -0.1, z[0]], 0.15, 1.0),
        blob([-0.35, 0.3, z[1]], 0.1, 0.7),
        blob([0.05, 0.45, z[2]], 0.08, 0.5),
    ]
}

/// Relative L2 error of `rec` against `truth` where `|(x, y)| < rad` and `|z| < zmax`, and the
/// ratio of their integrals over the unit disc (cylinder) that every test geometry sees.
fn errors<T: Scalar>(
    space: &Space<T>,
    rec: &Element<T>,
    truth: &Element<T>,
    rad: f64,
    zmax: f64,
) -> (f64, f64) {
    let (r, t) = (rec.as_array().unwrap(), truth.as_array().unwrap());
    let p = space.partition().unwrap();
    let coords: Vec<Vec<f64>> = (0..p.ndim()).map(|a| p.coord_vector(a).unwrap()).collect();
    let (mut num, mut den, mut sr, mut st) = (0.0, 0.0, 0.0, 0.0);
    for ((idx, &rv), &tv) in r.indexed_iter().zip(t.iter()) {
        let (rv, tv) = (rv.f64(), tv.f64());
        let (x, y) = (coords[0][idx[0]], coords[1][idx[1]]);
        if x * x + y * y < 1.0 {
            sr += rv;
            st += tv;
        }
        let z = if p.ndim() == 3 {
            coords[2][idx[2]]
        } else {
            0.0
        };
        if x * x + y * y < rad * rad && z.abs() < zmax {
            num += (rv - tv) * (rv - tv);
            den += tv * tv;
        }
    }
    ((num / den).sqrt(), sr / st)
}

/// FBP of the exact line integrals of the blobs for `geometry`: (interior error, mean ratio).
fn reconstruct<T: Scalar>(
    space: &Space<T>,
    geometry: Geometry,
    options: &FbpOptions,
    zmax: f64,
) -> (f64, f64, Element<T>) {
    let three_d = geometry.ndim() == 3;
    let b = blobs(three_d);
    let data = gaussian_projections::<T>(&geometry, &b).unwrap();
    let ray = RayTransform::new(space.clone(), geometry, Backend::default()).unwrap();
    let fbp = fbp_op(&ray, options).unwrap();
    let rec = fbp.apply(&ray.range().element(data).unwrap()).unwrap();
    let truth = gaussian_phantom(space, &b).unwrap();
    let (err, mean) = errors(space, &rec, &truth, 0.8, zmax);
    (err, mean, rec)
}

fn square(n: usize) -> Space<f64> {
    uniform_discr(&[-1.0, -1.0], &[1.0, 1.0], &[n, n]).unwrap()
}

fn cube(n: usize) -> Space<f32> {
    uniform_discr(&[-1.0; 3], &[1.0; 3], &[n, n, n]).unwrap()
}

fn part(min: f64, max: f64, n: usize) -> UniformPartition {
    UniformPartition::new(&[min], &[max], &[n]).unwrap()
}

/// A flat fan-beam geometry over `[start, start + alen]` with a detector that sees the unit
/// square.
fn fan(angles: usize, start: f64, alen: f64, src: f64, det: f64, offset: f64) -> Geometry {
    let half = 1.5 * (src + det) / src;
    Geometry::fan_flat(
        &part(start, start + alen, angles),
        &part(-half, half, 151),
        src,
        det,
        offset,
    )
    .unwrap()
}

/// The fan angle of the full detector of [`fan`] (from the pixel centres).
fn fan_angle(src: f64, det: f64) -> f64 {
    let half = 1.5 * (src + det) / src;
    let du = 2.0 * half / 151.0;
    2.0 * ((half - du / 2.0) / (src + det)).atan()
}

// ---------------------------------------------------------------------------------------------
// The filter: linearity and exact adjoints.

fn filter_geometries() -> Vec<(&'static str, Geometry)> {
    let s2 = square(12);
    let s3 = uniform_discr::<f64>(&[-1.0; 3], &[1.0; 3], &[8, 8, 8]).unwrap();
    vec![
        (
            "parallel 2D",
            parallel_beam_geometry(&s2, Some(10)).unwrap(),
        ),
        ("fan full", fan(12, 0.0, 2.0 * PI, 3.0, 2.0, 0.0)),
        (
            "fan short",
            fan(12, 0.3, PI + fan_angle(3.0, 2.0) + 0.2, 3.0, 2.0, 0.2),
        ),
        ("parallel 3D", parallel_beam_geometry(&s3, Some(6)).unwrap()),
        ("cone", cone_beam_geometry(&s3, 4.0, 2.0, Some(8)).unwrap()),
    ]
}

#[test]
fn filter_adjoint_is_exact_for_every_geometry_and_filter() {
    for (name, g) in filter_geometries() {
        let data = Space::<f64>::from_partition(g.data_partition().clone());
        for f in FilterType::ALL {
            let filter = FbpFilter::new(data.clone(), &g, &FbpOptions::new(f)).unwrap();
            let r = check_adjoint(&filter, 3, 7).unwrap();
            assert!(r.max_rel_error < 1e-13, "{name} {f}: {}", r.max_rel_error);
            assert!(rodl::check_linearity(&filter, 2, 3).unwrap() < 1e-13);
        }
    }
}

/// Parallel-beam and FDK filters of full scans are symmetric: its adjoint gives the same values.
#[test]
fn full_scan_filters_are_self_adjoint() {
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(5);
    for (name, g) in filter_geometries() {
        if name.starts_with("fan") {
            continue; // the single fan-beam filter weights differently before and after
        }
        let data = Space::<f64>::from_partition(g.data_partition().clone());
        let filter = FbpFilter::new(data.clone(), &g, &FbpOptions::default()).unwrap();
        let y = data.random_normal(&mut rng).unwrap();
        let a = filter.apply(&y).unwrap();
        let b = filter.adjoint().unwrap().apply(&y).unwrap();
        assert!(
            data.dist(&a, &b).unwrap() < 1e-13 * data.norm(&a).unwrap(),
            "{name}"
        );
    }
}

/// Every FBP operator (including the three-term exact fan-beam form) has an exact adjoint.
#[test]
fn fbp_operators_have_exact_adjoints() {
    for (name, g) in filter_geometries() {
        let space = if g.ndim() == 2 {
            square(12)
        } else {
            uniform_discr::<f64>(&[-1.0; 3], &[1.0; 3], &[8, 8, 8]).unwrap()
        };
        let ray = RayTransform::new(space, g, Backend::default()).unwrap();
        let fbp = fbp_op(&ray, &FbpOptions::new(FilterType::Hamming)).unwrap();
        let r = check_adjoint(fbp.as_ref(), 2, 11).unwrap();
        assert!(r.max_rel_error < 1e-12, "{name}: {}", r.max_rel_error);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random detector sizes, angle counts, filters, cut-offs, padding and detector offsets.
    #[test]
    fn filter_adjoint_property(
        nu in 1usize..40,
        angles in 1usize..6,
        filter in 0usize..5,
        scaling in 0.05f64..=1.0,
        padding in any::<bool>(),
        point in any::<bool>(),
        offset in -0.5f64..0.5,
    ) {
        let det = part(-1.5, 1.5, nu);
        let g = if point {
            Geometry::fan_flat(&part(0.0, 2.0 * PI, angles), &det, 3.0, 1.0, offset).unwrap()
        } else {
            Geometry::parallel_2d_offset(&part(0.0, PI, angles), &det, offset).unwrap()
        };
        let data = Space::<f64>::from_partition(g.data_partition().clone());
        let options = FbpOptions::new(FilterType::ALL[filter])
            .with_frequency_scaling(scaling)
            .with_padding(padding);
        let f = FbpFilter::new(data, &g, &options).unwrap();
        let r = check_adjoint(&f, 2, 1).unwrap();
        prop_assert!(r.max_rel_error < 1e-13, "{}", r.max_rel_error);
    }
}

// ---------------------------------------------------------------------------------------------
// Reconstructions in absolute values.

#[test]
fn parallel_2d_reconstructs_blobs() {
    let space = square(64);
    let geometry = parallel_beam_geometry(&space, None).unwrap();
    let (err, mean, _) = reconstruct(&space, geometry, &FbpOptions::default(), 1.0);
    println!("parallel 2D 64²: interior error {err:.4}, mean ratio {mean:.4}");
    assert!(err < 0.02, "{err}");
    assert!((mean - 1.0).abs() < 0.01, "{mean}");
}

/// ODL's scaling `1/(2α)` holds for angle ranges other than π, and a detector offset is taken
/// into account.
#[test]
fn parallel_2d_other_angle_ranges_and_offsets() {
    let space = square(64);
    for (alen, angles, offset) in [(2.0 * PI, 200, 0.0), (1.5 * PI, 150, 0.0), (PI, 100, 0.3)] {
        let det = part(-1.5, 1.5, 101);
        let g = Geometry::parallel_2d_offset(&part(0.4, 0.4 + alen, angles), &det, offset).unwrap();
        let (err, mean, _) = reconstruct(&space, g, &FbpOptions::default(), 1.0);
        println!("parallel 2D, range {alen:.3}, offset {offset}: error {err:.4}, mean {mean:.4}");
        assert!(err < 0.03, "{alen} {offset}: {err}");
        assert!((mean - 1.0).abs() < 0.02, "{alen} {offset}: {mean}");
    }
}

#[test]
fn every_filter_keeps_the_mean_value() {
    let space = square(48);
    for f in FilterType::ALL {
        for scaling in [1.0, 0.5] {
            let options = FbpOptions::new(f).with_frequency_scaling(scaling);
            let g = parallel_beam_geometry(&space, None).unwrap();
            let (err, mean, _) = reconstruct(&space, g, &options, 1.0);
            assert!((mean - 1.0).abs() < 0.01, "{f} {scaling}: mean {mean}");
            assert!(err < 0.1 / scaling, "{f} {scaling}: {err}");
        }
    }
}

#[test]
fn fan_beam_reconstructs_blobs() {
    let space = square(64);
    for (src, det, offset) in [(3.0, 2.0, 0.0), (2.0, 2.0, 0.0), (3.0, 1.0, 0.25)] {
        let g = fan(240, 0.0, 2.0 * PI, src, det, offset);
        let (err, mean, _) = reconstruct(&space, g, &FbpOptions::default(), 1.0);
        println!(
            "fan R={src} D={} offset {offset}: error {err:.4}, mean {mean:.4}",
            src + det
        );
        assert!(err < 0.02, "{src} {offset}: {err}");
        assert!((mean - 1.0).abs() < 0.02, "{src} {offset}: {mean}");
    }
}

#[test]
fn fan_short_scan_with_parker_weights_is_close_to_the_full_scan() {
    let space = square(64);
    let (src, det) = (3.0, 2.0);
    let full = fan(240, 0.0, 2.0 * PI, src, det, 0.0);
    let (err_full, _, rec_full) = reconstruct(&space, full, &FbpOptions::default(), 1.0);
    let minimal = PI + fan_angle(src, det);
    for (alen, q) in [
        (minimal + 1e-9, 1.0),
        (minimal + 0.4, 1.0),
        (minimal + 0.4, 0.25),
    ] {
        let g = fan(160, 0.7, alen, src, det, 0.0);
        let options = FbpOptions::default().with_parker(Some(q));
        let (err, mean, rec) = reconstruct(&space, g, &options, 1.0);
        let (diff, _) = errors(&space, &rec, &rec_full, 0.8, 1.0);
        println!(
            "fan short scan {alen:.3} rad, q {q}: error {err:.4} (full {err_full:.4}), \
             differs from full by {diff:.4}, mean {mean:.4}"
        );
        assert!(err < 0.02, "{alen} {q}: {err}");
        assert!(diff < 0.02, "{alen} {q}: {diff}");
        assert!((mean - 1.0).abs() < 0.02, "{mean}");
    }
    // Too short for Parker weights.
    let g = fan(100, 0.0, PI, src, det, 0.0);
    let ray = RayTransform::new(space, g, Backend::default()).unwrap();
    assert!(matches!(
        fbp_op(&ray, &FbpOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    // Without them a short scan is still accepted (weighted like a full one).
    let short = fbp_op(&ray, &FbpOptions::default().with_parker(None)).unwrap();
    assert_eq!(short.domain(), ray.range());
    assert_eq!(short.range(), ray.domain());
}

#[test]
fn parallel_3d_reconstructs_blobs() {
    let space = cube(32);
    let g = parallel_beam_geometry(&space, Some(60)).unwrap();
    let (err, mean, _) = reconstruct(&space, g, &FbpOptions::default(), 1.0);
    println!("parallel 3D 32³: error {err:.4}, mean {mean:.4}");
    assert!(err < 0.05, "{err}");
    assert!((mean - 1.0).abs() < 0.01, "{mean}");
}

#[test]
fn cone_fdk_reconstructs_blobs() {
    let space = cube(64);
    let g = cone_beam_geometry(&space, 4.0, 2.0, Some(96)).unwrap();
    let (err_mid, mean, _) = reconstruct(&space, g.clone(), &FbpOptions::default(), 0.25);
    let (err_all, _) = {
        let b = blobs(true);
        let ray = RayTransform::new(space.clone(), g.clone(), Backend::default()).unwrap();
        let fdk = fbp_op(&ray, &FbpOptions::default()).unwrap();
        let data = ray
            .range()
            .element(gaussian_projections::<f32>(&g, &b).unwrap())
            .unwrap();
        let rec = fdk.apply(&data).unwrap();
        errors(
            &space,
            &rec,
            &gaussian_phantom(&space, &b).unwrap(),
            0.8,
            1.0,
        )
    };
    println!("FDK 64³, R=4, D=6: error |z|<0.25 {err_mid:.4}, all z {err_all:.4}, mean {mean:.4}");
    assert!(err_mid < 0.05, "{err_mid}");
    assert!(err_all < 0.08, "{err_all}");
    assert!((mean - 1.0).abs() < 0.02, "{mean}");
}

#[test]
fn unsupported_geometries_and_bad_options_are_errors() {
    let space = square(16);
    let g = parallel_beam_geometry(&space, Some(8)).unwrap();
    let ray = RayTransform::new(space.clone(), g.clone(), Backend::default()).unwrap();
    for s in [0.0, -0.5, 1.5, f64::NAN] {
        let o = FbpOptions::default().with_frequency_scaling(s);
        assert!(
            matches!(fbp_op(&ray, &o), Err(Error::InvalidArgument(_))),
            "{s}"
        );
    }
    let o = FbpOptions::default().with_parker(Some(0.0));
    assert!(matches!(
        fbp_filter_op(&ray, &o),
        Err(Error::InvalidArgument(_))
    ));
    // A data space of the wrong shape.
    let wrong = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[8, 5]).unwrap();
    assert!(matches!(
        FbpFilter::new(wrong, &g, &FbpOptions::default()),
        Err(Error::Shape { .. })
    ));
    // Views given as vectors (unit angle weights that are not the views' angles): their angles
    // from the vectors, each view weighted by its share (tests/tomo_fbp_nonuniform.rs), so the
    // uniform FBP to rounding.
    let vec = VecGeometry::new(
        2,
        Beam::Parallel,
        &g.vec().det_shape(),
        g.vec().views().to_vec(),
    )
    .unwrap();
    let gv = Geometry::from_vec(vec).unwrap();
    let ray_v = RayTransform::new(space.clone(), gv, Backend::default()).unwrap();
    let y = ray.apply(&space.one().unwrap()).unwrap();
    let yv = ray_v
        .range()
        .element_from_vec(y.as_slice().unwrap().to_vec())
        .unwrap();
    let (a, b) = (
        fbp_op(&ray, &FbpOptions::default())
            .unwrap()
            .apply(&y)
            .unwrap(),
        fbp_op(&ray_v, &FbpOptions::default())
            .unwrap()
            .apply(&yv)
            .unwrap(),
    );
    assert!(space.dist(&a, &b).unwrap() <= 1e-12 * space.norm(&a).unwrap());
    // A helical cone beam whose feed per turn (20) exceeds the detector's height at the axis.
    let s3 = cube(8);
    let det = UniformPartition::new(&[-2.0, -2.0], &[2.0, 2.0], &[12, 12]).unwrap();
    let helix = Geometry::cone_flat(
        &part(0.0, 4.0 * PI, 16),
        &det,
        4.0,
        2.0,
        20.0,
        [0.0, 0.0, 1.0],
        [0.0; 2],
    )
    .unwrap();
    let ray_h = RayTransform::new(s3, helix, Backend::default()).unwrap();
    assert!(matches!(
        fbp_op(&ray_h, &FbpOptions::default()),
        Err(Error::Unsupported(_))
    ));
    assert_eq!("Ram-Lak".parse::<FilterType>().unwrap(), FilterType::RamLak);
    assert_eq!("hann".parse::<FilterType>().unwrap(), FilterType::Hann);
    assert!(matches!(
        "sinc".parse::<FilterType>(),
        Err(Error::InvalidArgument(_))
    ));
}

// ---------------------------------------------------------------------------------------------
// The quality figure of the issue: ODL 1.0 + ASTRA (CPU) on the same problem.

/// Noiseless 256² modified Shepp–Logan on [−20, 20]², ODL's `parallel_beam_geometry` sampling
/// (569 angles, 365 detector cells), PSNR over the phantom's range, every filter at frequency
/// scaling 1: at least ODL's figures.
#[test]
fn shepp_logan_psnr_is_at_least_odls() {
    const ODL: [(FilterType, f64); 5] = [
        (FilterType::RamLak, 29.26),
        (FilterType::SheppLogan, 28.19),
        (FilterType::Cosine, 26.23),
        (FilterType::Hamming, 25.33),
        (FilterType::Hann, 25.03),
    ];
    let space = uniform_discr::<f32>(&[-20.0, -20.0], &[20.0, 20.0], &[256, 256]).unwrap();
    let phantom = shepp_logan(&space, true).unwrap();
    let geometry = parallel_beam_geometry(&space, None).unwrap();
    assert_eq!(geometry.data_shape(), vec![569, 365]);
    let ray = RayTransform::new(space.clone(), geometry, Backend::default()).unwrap();
    let data = ray.apply(&phantom).unwrap();
    for (filter, odl) in ODL {
        let fbp: LinOp<f32> = fbp_op(&ray, &FbpOptions::new(filter)).unwrap();
        let rec = fbp.apply(&data).unwrap();
        // Over the phantom's range (max − min), as skimage and ODL compute it.
        let psnr = rodl::diagnostics::psnr(&space, &rec, &phantom, None).unwrap();
        println!("{filter:>11}: PSNR {psnr:.3} dB (ODL 1.0 + ASTRA: {odl} dB)");
        assert!(psnr >= odl, "{filter}: {psnr:.3} dB < ODL's {odl} dB");
    }
}

/// FDK of a short cone scan with Parker weights stays close to the full scan near the mid-plane
/// (where FDK is fan-beam FBP); farther from it the short scan's cone-beam artifacts grow.
#[test]
fn cone_short_scan_with_parker_weights_is_close_to_the_full_scan() {
    let space = cube(32);
    let (src, det) = (4.0, 2.0);
    let full = cone_beam_geometry(&space, src, det, Some(120)).unwrap();
    let p = full.data_partition().clone();
    let detector =
        UniformPartition::new(&p.min_pt()[1..], &p.max_pt()[1..], &p.shape()[1..]).unwrap();
    let half_fan = (p.max_pt()[1] - 0.5 * p.cell_side(1)).atan2(src + det);
    let alen = PI + 2.0 * half_fan + 0.1;
    let short = Geometry::cone_flat(
        &part(1.0, 1.0 + alen, 80),
        &detector,
        src,
        det,
        0.0,
        [0.0, 0.0, 1.0],
        [0.0; 2],
    )
    .unwrap();
    let (_, _, rec_full) = reconstruct(&space, full, &FbpOptions::default(), 1.0);
    let (_, mean, rec) = reconstruct(&space, short, &FbpOptions::default(), 1.0);
    let truth = gaussian_phantom(&space, &blobs(true)).unwrap();
    for zmax in [0.1, 1.0] {
        let (err_full, _) = errors(&space, &rec_full, &truth, 0.8, zmax);
        let (err, _) = errors(&space, &rec, &truth, 0.8, zmax);
        let (diff, _) = errors(&space, &rec, &rec_full, 0.8, zmax);
        println!(
            "FDK short scan {alen:.3} rad, 32³, |z| < {zmax}: error {err:.4} (full scan \
             {err_full:.4}), differs from the full scan by {diff:.4}"
        );
        let bound = if zmax < 0.5 { 0.05 } else { 0.1 };
        assert!(diff < bound, "|z| < {zmax}: {diff}");
        assert!(err < err_full + bound, "|z| < {zmax}: {err} vs {err_full}");
    }
    assert!((mean - 1.0).abs() < 0.02, "{mean}");
}

// ---------------------------------------------------------------------------------------------
// The filters' frequency responses against their formulas.

/// ODL's windows (`odl.tomo.analytic.filtered_back_projection._fbp_filter`), written from their
/// definitions: `ν` the frequency over Nyquist, `s` the frequency scaling, `0` beyond `s`.
fn odl_window(f: FilterType, nu: f64, s: f64) -> f64 {
    if nu > s {
        return 0.0;
    }
    let x = nu / s;
    let sinc = |t: f64| {
        if t == 0.0 {
            1.0
        } else {
            (PI * t).sin() / (PI * t)
        }
    };
    match f {
        FilterType::RamLak => 1.0,
        FilterType::SheppLogan => sinc(x / 2.0),
        FilterType::Cosine => (PI * x / 2.0).cos(),
        FilterType::Hamming => 0.54 + 0.46 * (PI * x).cos(),
        FilterType::Hann => (PI * x / 2.0).cos().powi(2),
    }
}

/// Response of the circular (unpadded) parallel-beam filter at detector frequency `k` (cycles
/// per row of `n` pixels): every row of the data is `cos(2πki/n)`, an eigenvector of a
/// circular even convolution. Returns the eigenvalue and the relative residual.
fn filter_response(f: FilterType, s: f64, n: usize, k: usize) -> (f64, f64) {
    let g = Geometry::parallel_2d(&part(0.0, PI, 3), &part(-1.5, 1.5, n)).unwrap();
    let data = Space::<f64>::from_partition(g.data_partition().clone());
    let opts = FbpOptions::new(f)
        .with_frequency_scaling(s)
        .with_padding(false)
        .with_parker(None);
    let filter = FbpFilter::new(data.clone(), &g, &opts).unwrap();
    let row: Vec<f64> = (0..n)
        .map(|i| (2.0 * PI * (k * i) as f64 / n as f64).cos())
        .collect();
    let input: Vec<f64> = (0..3).flat_map(|_| row.clone()).collect();
    let out = filter
        .apply(&data.element_from_vec(input.clone()).unwrap())
        .unwrap();
    let out = out.as_slice().unwrap();
    let cc: f64 = input.iter().map(|c| c * c).sum();
    let h = out.iter().zip(&input).map(|(o, c)| o * c).sum::<f64>() / cc;
    let res = out
        .iter()
        .zip(&input)
        .map(|(o, c)| (o - h * c).powi(2))
        .sum::<f64>()
        .sqrt();
    let norm = out.iter().map(|o| o * o).sum::<f64>().sqrt();
    (h, if norm > 0.0 { res / norm } else { res })
}

/// The band-limited ramp's samples (`t₀ = π/(2Δu)`, `t_m = −2/(π m² Δu)` for odd `m`, 0 for
/// even `m ≠ 0`) over one period of `n` samples, transformed at frequency `k`.
fn ramp_dft(n: usize, du: f64, k: usize) -> f64 {
    (0..n)
        .map(|j| {
            let m = if j <= n / 2 {
                j as f64
            } else {
                j as f64 - n as f64
            };
            let t = if j == 0 {
                PI / (2.0 * du)
            } else if (m as i64) % 2 != 0 {
                -2.0 / (PI * m * m * du)
            } else {
                0.0
            };
            t * (2.0 * PI * k as f64 * m / n as f64).cos()
        })
        .sum()
}

#[test]
fn filter_frequency_responses_match_their_formulas() {
    let n = 64;
    let du = 3.0 / n as f64;
    let ks = [1, 3, 8, 13, 19, 24, 30, 32];
    // Ram-Lak: the sampled ramp's spectrum up to one constant factor, ≈ |ξ| = 2πk/(nΔu).
    let (h1, _) = filter_response(FilterType::RamLak, 1.0, n, 8);
    let c = h1 / ramp_dft(n, du, 8);
    assert!(c > 0.0, "{c}");
    for &k in &ks {
        let (h, res) = filter_response(FilterType::RamLak, 1.0, n, k);
        let want = c * ramp_dft(n, du, k);
        assert!(res < 1e-12, "Ram-Lak k = {k}: not an eigenvector ({res:e})");
        assert!(
            (h - want).abs() <= 1e-12 * want.abs(),
            "Ram-Lak k = {k}: {h} vs {want}"
        );
        let xi = 2.0 * PI * k as f64 / (n as f64 * du);
        let ramp = c * xi;
        assert!(
            (h - ramp).abs() <= 0.05 * ramp,
            "Ram-Lak k = {k}: {h} vs |ξ| {ramp}"
        );
    }
    // Every window: the ratio to Ram-Lak at each frequency, for two frequency scalings.
    for s in [1.0, 0.6] {
        for f in FilterType::ALL {
            for &k in &ks {
                let (h, res) = filter_response(f, s, n, k);
                let (r, _) = filter_response(FilterType::RamLak, 1.0, n, k);
                let nu = 2.0 * k as f64 / n as f64;
                let want = odl_window(f, nu, s);
                assert!(
                    res * h.abs() <= 1e-12 * r.abs(),
                    "{f} s = {s} k = {k}: residual {res:e}"
                );
                assert!(
                    (h / r - want).abs() <= 1e-12,
                    "{f} s = {s} k = {k} (ν = {nu}): window {} vs {want}",
                    h / r
                );
            }
        }
    }
}

/// The FBP filter for data on a GPU: with no GPU (or no `cuda` feature) a clean
/// `Error::CudaUnavailable` at construction, never a panic, whatever `RODL_CUFFT` says; where a
/// GPU can be used, the filter reports its method (cuFFT or the direct convolution). Host
/// filters have no GPU method.
#[test]
fn gpu_fbp_filter_without_a_gpu_is_a_clean_error() {
    use std::panic::catch_unwind;
    let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[8, 8]).unwrap();
    let g = parallel_beam_geometry(&space, Some(6)).unwrap();
    let data = Space::<f32>::from_partition(g.data_partition().clone());
    let host = FbpFilter::new(data.clone(), &g, &FbpOptions::default()).unwrap();
    assert_eq!(host.gpu_method(), None);
    let r = catch_unwind(|| {
        let gpu = data.with_device(rodl::Device::Cuda(0))?;
        FbpFilter::new(gpu, &g, &FbpOptions::default())
    })
    .expect("building a GPU FBP filter panicked");
    match r {
        Err(Error::CudaUnavailable(m)) => assert!(!m.is_empty()),
        Err(e) => panic!("expected Error::CudaUnavailable, got {e:?}"),
        Ok(f) => {
            if !cfg!(feature = "cuda") {
                panic!("a GPU FBP filter without the `cuda` feature");
            }
            assert!(f.gpu_method().is_some());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Batches: the filter's batched form, and FBP's where the ray transform has one.

/// A linear operator with a batched form that applies it entry by entry: it lends a host ray
/// transform the batched form that the CUDA one has, so that the batched FBP composition (what
/// the PyTorch op runs on a GPU) runs on the CPU.
struct EntryBatched<T: Scalar> {
    op: LinOp<T>,
}

impl<T: Scalar> Operator<T> for EntryBatched<T> {
    fn domain(&self) -> &Space<T> {
        self.op.domain()
    }
    fn range(&self) -> &Space<T> {
        self.op.range()
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> rodl::Result<()> {
        self.op.evaluate(x, out)
    }
    fn batched(&self) -> Option<&dyn BatchedOperator<T>> {
        Some(self)
    }
}

impl<T: Scalar> BatchedOperator<T> for EntryBatched<T> {
    fn max_batch(&self) -> usize {
        64
    }
    fn apply_batch(&self, x: &Element<T>, out: &mut Element<T>, batch: usize) -> rodl::Result<()> {
        let (n_in, n_out) = (self.domain().size(), self.range().size());
        let xs = x.as_slice()?.to_vec();
        if batch == 0 || batch > 64 || xs.len() != batch * n_in {
            return Err(Error::invalid("EntryBatched: batch"));
        }
        if out.as_slice()?.len() != batch * n_out {
            return Err(Error::invalid("EntryBatched: batch"));
        }
        let o = out.as_slice_mut()?;
        for b in 0..batch {
            let xe = self
                .domain()
                .element_from_vec(xs[b * n_in..(b + 1) * n_in].to_vec())?;
            let y = self.op.apply(&xe)?;
            o[b * n_out..(b + 1) * n_out].copy_from_slice(y.as_slice()?);
        }
        Ok(())
    }
}

impl<T: Scalar> LinearOperator<T> for EntryBatched<T> {
    fn adjoint(&self) -> rodl::Result<LinOp<T>> {
        Ok(Arc::new(EntryBatched {
            op: self.op.adjoint()?,
        }))
    }
}

/// `batch` random entries of `space` one after the other, as a tensor `[batch, …shape]`.
fn random_batch(space: &Space<f64>, batch: usize, seed: u64) -> Element<f64> {
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed);
    let mut shape = vec![batch];
    shape.extend_from_slice(space.shape().unwrap());
    rodl::rn::<f64>(&shape)
        .unwrap()
        .random_normal(&mut rng)
        .unwrap()
}

/// A zero tensor of `batch` entries of `space`.
fn zero_batch(space: &Space<f64>, batch: usize) -> Element<f64> {
    let mut shape = vec![batch];
    shape.extend_from_slice(space.shape().unwrap());
    rodl::rn::<f64>(&shape).unwrap().zero().unwrap()
}

/// max |batched − per entry| / max |per entry| of `op`'s batched form on `batch` random
/// entries against `op.apply` entry by entry.
fn batched_vs_entries(op: &dyn Operator<f64>, batch: usize, seed: u64) -> f64 {
    let form = op
        .batched()
        .unwrap_or_else(|| panic!("{}: no batched form", op.name()));
    let x = random_batch(op.domain(), batch, seed);
    let mut out = zero_batch(op.range(), batch);
    form.apply_batch(&x, &mut out, batch).unwrap();
    let (n_in, n_out) = (op.domain().size(), op.range().size());
    let (xs, ys) = (x.as_slice().unwrap(), out.as_slice().unwrap());
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for b in 0..batch {
        let xe = op
            .domain()
            .element_from_vec(xs[b * n_in..(b + 1) * n_in].to_vec())
            .unwrap();
        let want = op.apply(&xe).unwrap();
        for (g, w) in ys[b * n_out..(b + 1) * n_out]
            .iter()
            .zip(want.as_slice().unwrap())
        {
            num = num.max((g - w).abs());
            den = den.max(w.abs());
        }
    }
    num / den
}

/// The filter and its adjoint filter a batch of data as they filter each entry, for every
/// geometry kind (the per-view weights of short scans repeat for every entry).
#[test]
fn batched_filter_matches_entry_by_entry() {
    for (name, g) in filter_geometries() {
        let data = Space::<f64>::from_partition(g.data_partition().clone());
        for f in [FilterType::RamLak, FilterType::Hann] {
            let filter = FbpFilter::new(data.clone(), &g, &FbpOptions::new(f)).unwrap();
            let form = filter.batched().expect("the filter has a batched form");
            let rows = g.data_shape()[0] * g.data_shape().get(2).copied().unwrap_or(1);
            assert_eq!(form.max_batch(), i32::MAX as usize / rows, "{name}");
            let adjoint = filter.adjoint().unwrap();
            for batch in [1, 3] {
                let e = batched_vs_entries(&filter, batch, 7 + batch as u64);
                let ea = batched_vs_entries(adjoint.as_ref(), batch, 8 + batch as u64);
                assert!(
                    e < 1e-14 && ea < 1e-14,
                    "{name} {f} batch {batch}: {e} {ea}"
                );
            }
        }
    }
}

/// FBP over a ray transform with a batched form (entry by entry here, one launch sequence on a
/// GPU) has one, and it reconstructs a batch as it reconstructs each entry: 2D parallel beams,
/// 3D parallel beams and FDK through `fbp_op_with`, fan beams through the single-filter
/// composition `A* ∘ F` (the exact three-term fan-beam FBP of `fbp_op` multiplies by volume
/// factors, which have no batched form).
#[test]
fn batched_fbp_matches_entry_by_entry() {
    let o = FbpOptions::new(FilterType::Hamming);
    for (name, g) in filter_geometries() {
        let space = if g.ndim() == 2 {
            square(12)
        } else {
            uniform_discr::<f64>(&[-1.0; 3], &[1.0; 3], &[8, 8, 8]).unwrap()
        };
        let ray = RayTransform::new(space, g.clone(), Backend::default()).unwrap();
        assert!(fbp_op(&ray, &o).unwrap().batched().is_none(), "{name}");
        let lent: LinOp<f64> = Arc::new(EntryBatched {
            op: Arc::new(
                RayTransform::new(ray.domain().clone(), g.clone(), Backend::default()).unwrap(),
            ),
        });
        let fbp = if name.starts_with("fan") {
            let filter = fbp_filter_op(&ray, &o).unwrap();
            lent.adjoint().unwrap().compose(&filter).unwrap()
        } else {
            fbp_op_with(lent.as_ref(), &g, &o).unwrap()
        };
        let form = fbp.batched().expect("a batched form");
        assert_eq!(form.max_batch(), 64, "{name}");
        for batch in [1, 2, 5] {
            let e = batched_vs_entries(fbp.as_ref(), batch, 20 + batch as u64);
            assert!(e < 1e-13, "{name} batch {batch}: {e}");
        }
        // The batched FBP is the FBP of `fbp_op` on the host ray transform, entry by entry.
        if !name.starts_with("fan") {
            let reference = fbp_op(&ray, &o).unwrap();
            let x = random_batch(ray.range(), 2, 31);
            let mut out = zero_batch(ray.domain(), 2);
            form.apply_batch(&x, &mut out, 2).unwrap();
            let (n_in, n_out) = (ray.range().size(), ray.domain().size());
            for b in 0..2 {
                let xe = ray
                    .range()
                    .element_from_vec(x.as_slice().unwrap()[b * n_in..(b + 1) * n_in].to_vec())
                    .unwrap();
                let want = reference.apply(&xe).unwrap();
                let got = &out.as_slice().unwrap()[b * n_out..(b + 1) * n_out];
                let err = got
                    .iter()
                    .zip(want.as_slice().unwrap())
                    .fold(0.0f64, |m, (g, w)| m.max((g - w).abs()));
                let scale = want
                    .as_slice()
                    .unwrap()
                    .iter()
                    .fold(0.0f64, |m, w| m.max(w.abs()));
                assert!(err <= 1e-13 * scale, "{name} entry {b}: {err}");
            }
        }
    }
}

/// The filter's batched form errors for a batch of 0 or above its maximum and for tensors that
/// are not that many entries of its data space, and never panics.
#[test]
fn batched_filter_checks_its_batch() {
    let (_, g) = &filter_geometries()[4];
    let data = Space::<f64>::from_partition(g.data_partition().clone());
    let filter = FbpFilter::new(data.clone(), g, &FbpOptions::default()).unwrap();
    let form = filter.batched().unwrap();
    let max = form.max_batch();
    let x = random_batch(&data, 2, 1);
    let mut out = zero_batch(&data, 2);
    for batch in [0, max + 1] {
        let e = form.apply_batch(&x, &mut out, batch).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{batch}: {e:?}");
    }
    // Tensors of another batch, without a batch axis, or of another data shape.
    assert!(matches!(
        form.apply_batch(&x, &mut out, 3),
        Err(Error::Shape { .. })
    ));
    let mut short = zero_batch(&data, 1);
    assert!(form.apply_batch(&x, &mut short, 2).is_err());
    let one = data.zero().unwrap();
    let mut one_out = data.zero().unwrap();
    assert!(form.apply_batch(&one, &mut one_out, 1).is_err());
    let mut shape = vec![2];
    shape.extend_from_slice(data.shape().unwrap());
    shape[1] += 1;
    let wrong = rodl::rn::<f64>(&shape).unwrap().zero().unwrap();
    assert!(form.apply_batch(&wrong, &mut out, 2).is_err());
    // A product-space element is no batch.
    let pair = rodl::Space::product(vec![data.clone(), data.clone()]).unwrap();
    assert!(form
        .apply_batch(&pair.zero().unwrap(), &mut out, 2)
        .is_err());
    // The adjoint's form checks the same; compositions check their batch too.
    let adjoint = filter.adjoint().unwrap();
    let aform = adjoint.batched().unwrap();
    assert!(aform.apply_batch(&x, &mut out, 0).is_err());
    assert!(aform.apply_batch(&x, &mut short, 2).is_err());
    let space = uniform_discr::<f64>(&[-1.0; 3], &[1.0; 3], &[8, 8, 8]).unwrap();
    let ray = RayTransform::new(space.clone(), g.clone(), Backend::default()).unwrap();
    let lent = EntryBatched { op: Arc::new(ray) };
    let fbp = fbp_op_with(&lent, g, &FbpOptions::default()).unwrap();
    let fform = fbp.batched().unwrap();
    let mut vols = zero_batch(&space, 2);
    assert!(fform.apply_batch(&x, &mut vols, 0).is_err());
    assert!(fform.apply_batch(&x, &mut vols, 65).is_err());
    assert!(fform.apply_batch(&x, &mut out, 2).is_err());
    fform.apply_batch(&x, &mut vols, 2).unwrap();
}

// ---------------------------------------------------------------------------------------------
// FDK and fan-beam weights, each on its own, against weights computed here from the scan's
// distances; and FDK far from the mid-plane.

/// The filter of `geometry` (on its data space) applied to `y`.
fn filtered(geometry: &Geometry, y: Vec<f64>) -> Vec<f64> {
    let space = Space::<f64>::from_partition(geometry.data_partition().clone());
    let f = FbpFilter::new(space.clone(), geometry, &FbpOptions::default()).unwrap();
    f.apply(&space.element_from_vec(y).unwrap())
        .unwrap()
        .as_slice()
        .unwrap()
        .to_vec()
}

/// Pixel centres of a detector partition axis shifted by `offset`: coordinates measured from
/// the foot of the source on the detector (the detector centre without offsets sits there).
fn centres(lo: f64, hi: f64, n: usize, offset: f64) -> Vec<f64> {
    (0..n)
        .map(|i| lo + (i as f64 + 0.5) * (hi - lo) / n as f64 + offset)
        .collect()
}

/// The largest `|a − b|` relative to the largest `|b|`.
fn max_rel(a: &[f64], b: &[f64]) -> f64 {
    let m = b.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    a.iter()
        .zip(b)
        .fold(0.0f64, |w, (x, y)| w.max((x - y).abs()))
        / m
}

/// A full circular cone scan starting at 0.4 rad, R = 4, D = 6, a detector with rows far from
/// the mid-plane (|v| up to 3.2, half the source–detector distance) and offsets along u and v;
/// and the parallel-beam scan with the same angles and detector, whose filter is the bare
/// ramp `K / (2α)`.
fn fdk_and_parallel(nu: usize, nv: usize) -> (Geometry, Geometry, [f64; 2]) {
    let angles = part(0.4, 0.4 + 2.0 * PI, 6);
    let det = UniformPartition::new(&[-3.0, -2.5], &[3.0, 2.5], &[nu, nv]).unwrap();
    let offset = [0.3, 0.7];
    let cone = Geometry::cone_flat(&angles, &det, 4.0, 2.0, 0.0, [0.0, 0.0, 1.0], offset).unwrap();
    let par = Geometry::parallel_3d(&angles, &det, [0.0, 0.0, 1.0], [0.0, 0.0]).unwrap();
    (cone, par, offset)
}

/// Guards FDK's cosine weights together with the scale: for data `f(view, u) g(v) / cos κ`
/// (`cos κ = D / √(D² + u² + v²)`, `u`, `v` from the source's foot), the filter is
/// `(R/D) cos κ g(v)` times the parallel-beam filter of `f`: the pre-weight cancels `1/cos κ`
/// exactly, so after dividing by the post-weight every detector row is the same row (to
/// rounding). A weight that drops `v`, or measures it from the detector centre instead of the
/// source's foot, is off by up to `(1 + v²/D²)^½ ≈ 13 %` on the far rows.
#[test]
fn fdk_cosine_weights_are_exact_on_rows_far_from_the_mid_plane() {
    let (nu, nv) = (24, 10);
    let (cone, par, off) = fdk_and_parallel(nu, nv);
    let (r, d) = (4.0, 6.0);
    let u = centres(-3.0, 3.0, nu, off[0]);
    let v = centres(-2.5, 2.5, nv, off[1]);
    let cos = |i: usize, j: usize| d / (d * d + u[i] * u[i] + v[j] * v[j]).sqrt();
    let f = |a: usize, i: usize| ((a * 7 + i * 3) % 11) as f64 - 4.0 + 0.1 * i as f64;
    let g = |j: usize| 1.0 + 0.3 * j as f64;
    let n = 6 * nu * nv;
    let at = |a: usize, i: usize, j: usize| (a * nu + i) * nv + j;
    let mut y = vec![0.0; n];
    let mut z = vec![0.0; n];
    for a in 0..6 {
        for i in 0..nu {
            for j in 0..nv {
                y[at(a, i, j)] = f(a, i) * g(j) / cos(i, j);
                z[at(a, i, j)] = f(a, i);
            }
        }
    }
    let got = filtered(&cone, y);
    let ramp = filtered(&par, z);
    let mut want = vec![0.0; n];
    for a in 0..6 {
        for i in 0..nu {
            for j in 0..nv {
                want[at(a, i, j)] = r / d * cos(i, j) * g(j) * ramp[at(a, i, j)];
            }
        }
    }
    let err = max_rel(&got, &want);
    println!("FDK weights on 1/cos data: max relative difference {err:.1e}");
    assert!(err <= 1e-13, "{err:e}");
}

/// Guards FDK's pre-weight and post-weight one at a time: a single non-zero sample at pixel
/// `(i₀, j₀)` of one view is filtered into row `j₀` as `(R/D) cos κ(i, j₀) · cos κ(i₀, j₀)`
/// times the parallel filter of that sample (the post-weight varies along the row, the
/// pre-weight is the constant factor), on the farthest row and on one near the middle.
#[test]
fn fdk_pre_and_post_weights_each_on_their_own() {
    let (nu, nv) = (20, 8);
    let (cone, par, off) = fdk_and_parallel(nu, nv);
    let (r, d) = (4.0, 6.0);
    let u = centres(-3.0, 3.0, nu, off[0]);
    let v = centres(-2.5, 2.5, nv, off[1]);
    let cos = |i: usize, j: usize| d / (d * d + u[i] * u[i] + v[j] * v[j]).sqrt();
    let at = |a: usize, i: usize, j: usize| (a * nu + i) * nv + j;
    for (a0, i0, j0) in [(2, 3, nv - 1), (4, 15, 3), (0, 0, 0)] {
        let mut y = vec![0.0; 6 * nu * nv];
        y[at(a0, i0, j0)] = 1.0;
        let got = filtered(&cone, y.clone());
        let ramp = filtered(&par, y);
        let want: Vec<f64> = (0..6 * nu * nv)
            .map(|k| {
                let (i, j) = ((k / nv) % nu, k % nv);
                r / d * cos(i, j) * cos(i0, j0) * ramp[k]
            })
            .collect();
        let err = max_rel(&got, &want);
        assert!(err <= 1e-13, "sample {a0} {i0} {j0}: {err:e}");
        // Only that row of that view is touched.
        for (k, x) in got.iter().enumerate() {
            if k / (nu * nv) != a0 || k % nv != j0 {
                assert_eq!(*x, 0.0, "entry {k}");
            }
        }
    }
}

/// Guards the single fan-beam filter's weights (`W₁ = sec γ`, `W₂ = cos γ`, `c = 1/(2α)`): a
/// single sample at column `i₀` is filtered into `cos γ(i) / cos γ(i₀)` times the parallel
/// filter of that sample, with a detector offset along u.
#[test]
fn fan_filter_weights_each_on_their_own() {
    let nu = 26;
    let angles = part(-1.0, -1.0 + 2.0 * PI, 5);
    let det = part(-2.5, 3.5, nu);
    let fan = Geometry::fan_flat(&angles, &det, 3.0, 2.0, -0.4).unwrap();
    let par = Geometry::parallel_2d(&angles, &det).unwrap();
    let d = 5.0;
    let u = centres(-2.5, 3.5, nu, -0.4);
    let cos = |i: usize| d / (d * d + u[i] * u[i]).sqrt();
    for (a0, i0) in [(1, 0), (3, nu - 1), (4, 11)] {
        let mut y = vec![0.0; 5 * nu];
        y[a0 * nu + i0] = 1.0;
        let got = filtered(&fan, y.clone());
        let ramp = filtered(&par, y);
        let want: Vec<f64> = (0..5 * nu)
            .map(|k| cos(k % nu) / cos(i0) * ramp[k])
            .collect();
        let err = max_rel(&got, &want);
        assert!(err <= 1e-13, "sample {a0} {i0}: {err:e}");
    }
}

/// Guards FDK away from the mid-plane: a column of blobs along z (nearly z-invariant, which
/// FDK reconstructs without cone-beam artefacts) from its exact line integrals. In every
/// layer with 0.9 ≤ |z| ≤ 1.4 (cone angles 13°–19°) the column's core sum is within
/// [0.965, 1.005] of the truth (measured 0.983–0.985) and within 1 % of the layers at
/// |z| ≈ 0.5. Weights that drop `v` make those layers 4–12 % too high (1.04–1.12).
#[test]
fn fdk_reconstructs_a_column_far_from_the_mid_plane() {
    let space = uniform_discr::<f64>(&[-1.0, -1.0, -1.5], &[1.0, 1.0, 1.5], &[24, 24, 36]).unwrap();
    let g = cone_beam_geometry(&space, 4.0, 2.0, Some(72)).unwrap();
    let (cx, cy, sigma) = (0.1, -0.15, 0.18);
    let b: Vec<GaussianBlob> = (0..=66)
        .map(|k| blob([cx, cy, -3.0 + 0.09 * k as f64], sigma, 1.0))
        .collect();
    let data = gaussian_projections::<f64>(&g, &b).unwrap();
    let ray = RayTransform::new(space.clone(), g, Backend::default()).unwrap();
    let rec = fbp_op(&ray, &FbpOptions::default())
        .unwrap()
        .apply(&ray.range().element(data).unwrap())
        .unwrap();
    let truth = gaussian_phantom(&space, &b).unwrap();
    let (r, t) = (rec.as_array().unwrap(), truth.as_array().unwrap());
    let p = space.partition().unwrap();
    let (xs, ys, zs) = (
        p.coord_vector(0).unwrap(),
        p.coord_vector(1).unwrap(),
        p.coord_vector(2).unwrap(),
    );
    // Per layer: the reconstruction's sum over the column's core (1.5 σ) over the truth's.
    let ratio = |k: usize| {
        let (mut sr, mut st) = (0.0, 0.0);
        for i in 0..xs.len() {
            for j in 0..ys.len() {
                if (xs[i] - cx).powi(2) + (ys[j] - cy).powi(2) < (1.5 * sigma).powi(2) {
                    sr += r[[i, j, k]];
                    st += t[[i, j, k]];
                }
            }
        }
        sr / st
    };
    let near: Vec<f64> = (0..zs.len())
        .filter(|&k| (0.4..=0.6).contains(&zs[k].abs()))
        .map(ratio)
        .collect();
    let near = near.iter().sum::<f64>() / near.len() as f64;
    let mut far = 0;
    for (k, z) in zs.iter().enumerate() {
        if !(0.9..=1.4).contains(&z.abs()) {
            continue;
        }
        let q = ratio(k);
        println!("FDK column, z = {z:.3}: core sum ratio {q:.4} (|z| ≈ 0.5: {near:.4})");
        assert!((0.965..=1.005).contains(&q), "z = {z}: ratio {q}");
        assert!(
            (q / near - 1.0).abs() <= 0.01,
            "z = {z}: {q} vs {near} near the middle"
        );
        far += 1;
    }
    assert!(far >= 8, "{far} layers checked");
}

// ---------------------------------------------------------------------------------------------
// Fan beams with an arc detector about the source (equiangular; issue #35).

/// An equiangular fan beam: an arc of radius `src + det` about the source over the fan angles
/// of [`fan`]'s flat detector, with as many pixels.
fn fan_arc(angles: usize, start: f64, alen: f64, src: f64, det: f64) -> Geometry {
    let half = (1.5 / src).atan();
    Geometry::fan_curved(
        &part(start, start + alen, angles),
        &part(-half, half, 151),
        src,
        det,
        src + det,
        0.0,
    )
    .unwrap()
}

/// Guards the equiangular FBP (cos γ pre-weights, the `(γ/sin γ)²` kernel and the exact
/// `1/L²` weighting): blobs from their exact line integrals come back as well as with the flat
/// detector, in absolute values, for full scans and Parker short scans; the filter's adjoint is
/// exact.
#[test]
fn fan_arc_reconstructs_blobs() {
    let space = square(64);
    for (src, det) in [(3.0, 2.0), (2.0, 2.0), (4.0, 1.0)] {
        let (flat, _, _) = reconstruct(
            &space,
            fan(240, 0.0, 2.0 * PI, src, det, 0.0),
            &FbpOptions::default(),
            1.0,
        );
        let g = fan_arc(240, 0.0, 2.0 * PI, src, det);
        let ray = RayTransform::new(space.clone(), g.clone(), Backend::default()).unwrap();
        let filter = fbp_filter_op(&ray, &FbpOptions::default()).unwrap();
        let adj = check_adjoint(filter.as_ref(), 2, 0).unwrap().max_rel_error;
        assert!(adj < 1e-13, "filter adjoint {adj:e}");
        let (err, mean, _) = reconstruct(&space, g, &FbpOptions::default(), 1.0);
        println!(
            "fan arc R={src} D={}: error {err:.4} (flat {flat:.4}), mean {mean:.4}",
            src + det
        );
        assert!(err < 0.02, "{src}: {err}");
        assert!((mean - 1.0).abs() < 0.02, "{src}: {mean}");
    }
    let (src, det) = (3.0, 2.0);
    let (err_full, _, rec_full) = reconstruct(
        &space,
        fan_arc(240, 0.0, 2.0 * PI, src, det),
        &FbpOptions::default(),
        1.0,
    );
    let minimal = PI + 2.0 * (1.5f64 / src).atan();
    for (alen, q) in [(minimal + 0.05, 1.0), (minimal + 0.4, 0.25)] {
        let g = fan_arc(160, 0.7, alen, src, det);
        let options = FbpOptions::default().with_parker(Some(q));
        let (err, mean, rec) = reconstruct(&space, g, &options, 1.0);
        let (diff, _) = errors(&space, &rec, &rec_full, 0.8, 1.0);
        println!(
            "fan arc short scan {alen:.3} rad, q {q}: error {err:.4} (full {err_full:.4}), \
             differs from full by {diff:.4}, mean {mean:.4}"
        );
        assert!(err < 0.02 && diff < 0.02, "{alen} {q}: {err} {diff}");
        assert!((mean - 1.0).abs() < 0.02, "{mean}");
    }
}

/// Guards the bar: FBP of a noiseless 256² Shepp–Logan scanned with an equiangular arc
/// is within 0.3 dB of the same scan with a flat detector of matching sampling (the flat pixel
/// the arc's pitch at the centre, the same fan), for every filter.
#[test]
fn fan_arc_shepp_logan_psnr_matches_the_flat_detector() {
    let space = uniform_discr::<f32>(&[-20.0, -20.0], &[20.0, 20.0], &[256, 256]).unwrap();
    let phantom = shepp_logan(&space, true).unwrap();
    let (src, det, n, views) = (60.0, 40.0, 401, 720);
    let half = (29.0f64 / src).atan(); // sees the disc of radius 29 (the square's corners)
    let angles = part(0.0, 2.0 * PI, views);
    let arc =
        Geometry::fan_curved(&angles, &part(-half, half, n), src, det, src + det, 0.0).unwrap();
    let du = (src + det) * 2.0 * half / n as f64;
    let flat = Geometry::fan_flat(
        &angles,
        &part(-du * n as f64 / 2.0, du * n as f64 / 2.0, n),
        src,
        det,
        0.0,
    )
    .unwrap();
    let psnr = |g: Geometry, filter: FilterType| {
        let ray = RayTransform::new(space.clone(), g, Backend::default()).unwrap();
        let data = ray.apply(&phantom).unwrap();
        let rec = fbp_op(&ray, &FbpOptions::new(filter))
            .unwrap()
            .apply(&data)
            .unwrap();
        rodl::diagnostics::psnr(&space, &rec, &phantom, None).unwrap()
    };
    for filter in [FilterType::RamLak, FilterType::Hann] {
        let (a, f) = (psnr(arc.clone(), filter), psnr(flat.clone(), filter));
        println!("Shepp–Logan fan beam, {filter}: arc {a:.3} dB, flat {f:.3} dB");
        assert!(a >= f - 0.3, "{filter}: arc {a:.3} dB vs flat {f:.3} dB");
    }
}

fn cone_curved_on(
    angles: &UniformPartition,
    radii: [Option<f64>; 2],
    pitch: f64,
) -> rodl::Result<Geometry> {
    Geometry::cone_curved(
        angles,
        &UniformPartition::new(&[-0.4, -0.5], &[0.4, 0.5], &[21, 8]).unwrap(),
        3.0,
        2.0,
        radii,
        pitch,
        [0.0, 0.0, 1.0],
        [0.0; 2],
    )
}

/// Guards FDK for a cylindrical detector about the source (clinical CT, circular scan):
/// blobs from their exact line integrals come back as well as with a flat detector over the
/// same fan and rows, near the mid-plane and over the whole cube, in absolute values; Parker
/// short scans stay close to the full scan near the mid-plane.
#[test]
fn cylindrical_fdk_reconstructs_blobs() {
    let space = cube(64);
    let flat = cone_beam_geometry(&space, 4.0, 2.0, Some(96)).unwrap();
    let p = flat.data_partition();
    let (umax, vmin, vmax) = (p.max_pt()[1], p.min_pt()[2], p.max_pt()[2]);
    let (nu, nv) = (p.shape()[1], p.shape()[2]);
    let half = (umax / 6.0).atan();
    let cyl_on = |angles: UniformPartition| {
        Geometry::cone_curved(
            &angles,
            &UniformPartition::new(&[-half, vmin], &[half, vmax], &[nu, nv]).unwrap(),
            4.0,
            2.0,
            [Some(6.0), None],
            0.0,
            [0.0, 0.0, 1.0],
            [0.0; 2],
        )
        .unwrap()
    };
    let cyl = cyl_on(part(0.0, 2.0 * PI, 96));
    let all_z = |g: &Geometry, options: &FbpOptions| {
        let b = blobs(true);
        let ray = RayTransform::new(space.clone(), g.clone(), Backend::default()).unwrap();
        let fdk = fbp_op(&ray, options).unwrap();
        let data = ray
            .range()
            .element(gaussian_projections::<f32>(g, &b).unwrap())
            .unwrap();
        let rec = fdk.apply(&data).unwrap();
        errors(
            &space,
            &rec,
            &gaussian_phantom(&space, &b).unwrap(),
            0.8,
            1.0,
        )
        .0
    };
    let (flat_mid, _, _) = reconstruct(&space, flat.clone(), &FbpOptions::default(), 0.25);
    let (err_mid, mean, rec_full) = reconstruct(&space, cyl.clone(), &FbpOptions::default(), 0.25);
    let (flat_all, err_all) = (
        all_z(&flat, &FbpOptions::default()),
        all_z(&cyl, &FbpOptions::default()),
    );
    println!(
        "cylindrical FDK 64³, R=4, D=6: error |z|<0.25 {err_mid:.4} (flat {flat_mid:.4}), all z \
         {err_all:.4} (flat {flat_all:.4}), mean {mean:.4}"
    );
    assert!(
        err_mid < 0.05 && err_mid < flat_mid + 0.005,
        "{err_mid} vs {flat_mid}"
    );
    assert!(
        err_all < 0.08 && err_all < flat_all + 0.01,
        "{err_all} vs {flat_all}"
    );
    assert!((mean - 1.0).abs() < 0.02, "{mean}");
    // A Parker short scan, against the flat detector's over the same angles.
    let short = part(0.3, 0.3 + PI + 2.0 * half + 0.1, 64);
    let flat_short = Geometry::cone_flat(
        &short,
        &UniformPartition::new(&p.min_pt()[1..], &p.max_pt()[1..], &p.shape()[1..]).unwrap(),
        4.0,
        2.0,
        0.0,
        [0.0, 0.0, 1.0],
        [0.0; 2],
    )
    .unwrap();
    let options = FbpOptions::default().with_parker(Some(1.0));
    let (err, mean, rec) = reconstruct(&space, cyl_on(short), &options, 0.25);
    let (flat_err, _, _) = reconstruct(&space, flat_short, &options, 0.25);
    let (diff, _) = errors(&space, &rec, &rec_full, 0.8, 0.25);
    println!(
        "cylindrical FDK short scan: error |z|<0.25 {err:.4} (flat {flat_err:.4}), differs from \
         the full scan by {diff:.4}, mean {mean:.4}"
    );
    assert!(
        err < flat_err + 0.005 && diff < 0.05,
        "{err} vs {flat_err}, {diff}"
    );
    assert!((mean - 1.0).abs() < 0.02, "{mean}");
}

/// Arcs that the equiangular FBP does not describe are refused, never reconstructed as flat.
#[test]
fn curved_detectors_fbp_cannot_handle_are_errors() {
    let space = square(16);
    let angles = part(0.0, 2.0 * PI, 32);
    let arc = part(-0.4, 0.4, 21);
    for (what, g) in [
        (
            "arc not about the source",
            Geometry::fan_curved(&angles, &arc, 3.0, 2.0, 3.0, 0.0),
        ),
        (
            "shifted arc",
            Geometry::fan_curved(&angles, &arc, 3.0, 2.0, 5.0, 0.2),
        ),
        (
            "fan beyond π",
            Geometry::fan_curved(&angles, &part(-1.7, 1.7, 21), 3.0, 2.0, 5.0, 0.0),
        ),
        (
            "spherical cone",
            cone_curved_on(&angles, [Some(5.0), Some(5.0)], 0.0),
        ),
        (
            "helical cylinder, pitch factor above 1",
            cone_curved_on(&angles, [Some(5.0), None], 5.0),
        ),
        (
            "cylinder not about the source",
            cone_curved_on(&angles, [Some(7.0), None], 0.0),
        ),
    ] {
        let g = g.unwrap();
        let space: Space<f64> = if g.ndim() == 3 {
            uniform_discr(&[-1.0; 3], &[1.0; 3], &[8, 8, 8]).unwrap()
        } else {
            space.clone()
        };
        let ray = RayTransform::new(space, g, Backend::default()).unwrap();
        match fbp_op(&ray, &FbpOptions::default()) {
            Err(Error::Unsupported(m)) => println!("{what}: {m}"),
            Err(e) => panic!("{what}: expected Error::Unsupported, got {e:?}"),
            Ok(_) => panic!("{what}: accepted"),
        }
    }
}

/// Guards the bar for FDK: a 64³ 3D Shepp–Logan scanned (closed-form line integrals of
/// its ellipsoids) with a cylindrical detector about the source is reconstructed within 0.3 dB
/// PSNR of the same scan with a flat detector of matching sampling (the same fan and rows, the
/// flat pixel the cylinder's pitch at the centre).
#[test]
fn cylindrical_fdk_shepp_logan_psnr_matches_the_flat_detector() {
    use rodl::tomo::phantom::shepp_logan_projections;
    let space = cube(64);
    let phantom = shepp_logan(&space, true).unwrap();
    let (src, det, nu, nv, views) = (4.0, 2.0, 128, 96, 160);
    let half = (1.5f64 / src).atan();
    let du = (src + det) * 2.0 * half / nu as f64;
    let vmax = 1.6 * (src + det) / src;
    let angles = part(0.0, 2.0 * PI, views);
    let cyl = Geometry::cone_curved(
        &angles,
        &UniformPartition::new(&[-half, -vmax], &[half, vmax], &[nu, nv]).unwrap(),
        src,
        det,
        [Some(src + det), None],
        0.0,
        [0.0, 0.0, 1.0],
        [0.0; 2],
    )
    .unwrap();
    let w = du * nu as f64 / 2.0;
    let flat = Geometry::cone_flat(
        &angles,
        &UniformPartition::new(&[-w, -vmax], &[w, vmax], &[nu, nv]).unwrap(),
        src,
        det,
        0.0,
        [0.0, 0.0, 1.0],
        [0.0; 2],
    )
    .unwrap();
    let psnr = |g: Geometry| {
        let data = shepp_logan_projections(&space, &g, true).unwrap();
        let ray = RayTransform::new(space.clone(), g, Backend::default()).unwrap();
        let fdk = fbp_op(&ray, &FbpOptions::new(FilterType::Hann)).unwrap();
        let rec = fdk.apply(&ray.range().element(data).unwrap()).unwrap();
        rodl::diagnostics::psnr(&space, &rec, &phantom, None).unwrap()
    };
    let (c, f) = (psnr(cyl), psnr(flat));
    println!("3D Shepp–Logan FDK (Hann): cylinder {c:.3} dB, flat {f:.3} dB");
    assert!(c >= f - 0.3, "cylinder {c:.3} dB vs flat {f:.3} dB");
}
