//! The centre of rotation of circular cone-beam scans (`rodl::preprocess::find_centre_cone`):
//! a phantom scanned with rodl's cone-beam RayTransform over a full turn and over a short scan,
//! with the detector shifted by fractional pixels, clean and through Poisson counts, flat/dark
//! normalisation and `−log`; the shift found carried into the geometry. `--nocapture` prints
//! the figures.

use std::f64::consts::PI;

use ndarray::{Array3, Ix3};
use rand::{rngs::StdRng, SeedableRng};
use rand_distr::{Distribution, Poisson};
use rodl::preprocess::{find_centre_cone, neg_log, ConeCentreOptions, ConeLengths, NEG_LOG_FLOOR};
use rodl::tomo::phantom::shepp_logan;
use rodl::tomo::{Backend, Geometry, RayTransform};
use rodl::{uniform_discr, Operator, UniformPartition};

const NU: usize = 96;
const NV: usize = 12;
const SRC: f64 = 6.0;
const DET: f64 = 3.0;
/// The detector's half width (world units) and pixel size.
const HALF_U: f64 = 2.0;
const DU: f64 = 2.0 * HALF_U / NU as f64;

/// A cone scan of the Shepp–Logan phantom (a 2 × 2 × 0.5 box) at `na` angles over `[0, arc)`
/// with the detector shifted by `offset_px` pixels: the angles (midpoints) and the line
/// integrals `[angle, u, v]`.
fn cone_scan(offset_px: f64, na: usize, arc: f64) -> (Vec<f64>, Array3<f32>) {
    let space =
        uniform_discr::<f32>(&[-1.0, -1.0, -0.25], &[1.0, 1.0, 0.25], &[64, 64, 16]).unwrap();
    let angles = UniformPartition::new(&[0.0], &[arc], &[na]).unwrap();
    let hv = 0.5 * 0.75;
    let det = UniformPartition::new(&[-HALF_U, -hv], &[HALF_U, hv], &[NU, NV]).unwrap();
    let g = Geometry::cone_flat(
        &angles,
        &det,
        SRC,
        DET,
        0.0,
        [0.0, 0.0, 1.0],
        [offset_px * DU, 0.0],
    )
    .unwrap();
    let ray = RayTransform::new(space.clone(), g, Backend::default()).unwrap();
    let x = shepp_logan(&space, true).unwrap();
    let p = ray.apply(&x).unwrap().into_array().unwrap();
    let a = (0..na)
        .map(|k| (k as f64 + 0.5) * arc / na as f64)
        .collect();
    (a, p.into_dimensionality::<Ix3>().unwrap())
}

/// Line integrals through Poisson counts of `i0` incident photons, normalised by a flat of
/// the same mean (10 frames' average) and `−log`.
fn noisy(p: &Array3<f32>, i0: f64, seed: u64) -> Array3<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut count = |mean: f64| Poisson::new(mean).unwrap().sample(&mut rng);
    let flat: f64 = (0..10).map(|_| count(i0)).sum::<f64>() / 10.0;
    let mut t = p.mapv(|x| (count(i0 * (-(x as f64)).exp()) / flat) as f32);
    neg_log(t.view_mut(), NEG_LOG_FLOOR);
    t
}

fn lengths() -> ConeLengths {
    ConeLengths {
        src_radius: SRC,
        det_radius: DET,
        pixel_size: DU,
    }
}

#[test]
fn the_centre_of_a_noisy_full_turn_is_found_to_a_fiftieth_of_a_pixel() {
    let mut worst: f64 = 0.0;
    for (shift, seed) in [(3.4, 1), (-2.7, 2), (0.0, 3), (7.85, 4)] {
        let (angles, p) = cone_scan(shift, 240, 2.0 * PI);
        let t = std::time::Instant::now();
        let clean = find_centre_cone(p.view(), &angles, &lengths(), &Default::default()).unwrap();
        let took = t.elapsed();
        let raw = noisy(&p, 2e4, seed);
        let found = find_centre_cone(raw.view(), &angles, &lengths(), &Default::default()).unwrap();
        println!(
            "cone centre: true det_offset {shift:+.2} px; found {:+.4} px clean ({took:.1?}), \
             {:+.4} px with Poisson noise (rows {:?}, {} pairs per row, rms mismatch {:.2e})",
            clean.det_offset_px, found.det_offset_px, found.rows, found.pairs, found.rms_mismatch
        );
        assert!((clean.det_offset_px - shift).abs() <= 0.02, "{clean:?}");
        assert!((found.det_offset_px - shift).abs() <= 0.02, "{found:?}");
        assert!((found.axis_px + found.det_offset_px - 0.5 * (NU as f64 - 1.0)).abs() < 1e-12);
        worst = worst.max((found.det_offset_px - shift).abs());
    }
    println!("cone centre: worst error with noise {worst:.4} px");
}

#[test]
fn a_short_scan_and_the_options() {
    // Half a turn plus the fan angle (2·atan(2/9) ≈ 25°) and a little more.
    let arc = PI + 2.0 * (HALF_U / (SRC + DET)).atan() + 0.2;
    let (angles, p) = cone_scan(3.4, 160, arc);
    let c = find_centre_cone(p.view(), &angles, &lengths(), &Default::default()).unwrap();
    println!("short scan of {:.1}°: {c:?}", arc.to_degrees());
    assert!((c.det_offset_px - 3.4).abs() <= 0.05, "{c:?}");
    // Rows given, and the angles in another order (reversed).
    let opts = ConeCentreOptions {
        rows: Some(5..7),
        ..Default::default()
    };
    let mut rev = p.clone();
    rev.invert_axis(ndarray::Axis(0));
    let back: Vec<f64> = angles.iter().rev().cloned().collect();
    let r = find_centre_cone(rev.view(), &back, &lengths(), &opts).unwrap();
    assert_eq!(r.rows, 5..7);
    assert!((r.det_offset_px - 3.4).abs() <= 0.05, "{r:?}");

    // Too short a scan, bad lengths, rows and counts.
    let (angles, p) = cone_scan(0.0, 40, 0.5 * PI);
    let e = find_centre_cone(p.view(), &angles, &lengths(), &Default::default()).unwrap_err();
    assert!(e.to_string().contains("half a turn"), "{e}");
    let bad = ConeLengths {
        src_radius: f64::NAN,
        ..lengths()
    };
    let e = find_centre_cone(p.view(), &angles, &bad, &Default::default()).unwrap_err();
    assert!(e.to_string().contains("src_radius"), "{e}");
    let rows = ConeCentreOptions {
        rows: Some(3..99),
        ..Default::default()
    };
    assert!(find_centre_cone(p.view(), &angles, &lengths(), &rows).is_err());
    assert!(find_centre_cone(p.view(), &angles[1..], &lengths(), &Default::default()).is_err());
}
