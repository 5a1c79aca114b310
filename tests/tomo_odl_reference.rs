//! The ray transform against ODL 1.0 + ASTRA reference data (tests/data/odl, see its README).
//!
//! The forward projections are compared directly. The adjoints are compared on `y` = white
//! noise: where ODL's back-projection is the exact transpose of the same Joseph model
//! (`par2d_64`, ASTRA CPU 'linear') rodl agrees to rounding-level accuracy; where it is not
//! (ASTRA's line-length fan model, ASTRA's voxel-driven GPU back-projection in 3D) the two
//! operators differ at the highest frequencies, which white noise excites fully. There the
//! comparison is made after 4× block averaging (low-pass), which checks the conventions and the
//! weighted-adjoint scaling, and the scaling ratio is checked to 2 %.

use std::path::PathBuf;

use ndarray::{ArrayD, Dimension};
use ndarray_npy::read_npy;
use rodl::tomo::{Backend, RayTransform, TomoSpec};
use rodl::{LinearOperator, Operator};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/odl")
        .join(name)
}

fn rel_l2(a: &ArrayD<f32>, b: &ArrayD<f32>) -> f64 {
    let num: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
    let den: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    (num / den).sqrt()
}

/// Returns (forward, adjoint) relative L2 errors against ODL.
fn block_mean(a: &ArrayD<f32>, k: usize) -> ArrayD<f32> {
    let shape: Vec<usize> = a.shape().iter().map(|n| n / k).collect();
    let mut out = ArrayD::<f32>::zeros(shape.clone());
    let scale = 1.0 / (k.pow(a.ndim() as u32) as f32);
    for (idx, v) in a.indexed_iter() {
        let small: Vec<usize> = idx.as_array_view().iter().map(|i| i / k).collect();
        if small.iter().zip(&shape).all(|(i, n)| i < n) {
            out[small.as_slice()] += v * scale;
        }
    }
    out
}

fn ratio(a: &ArrayD<f32>, b: &ArrayD<f32>) -> f64 {
    let ab: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (*x as f64) * (*y as f64))
        .sum();
    let bb: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    ab / bb
}

/// A reference file; a missing one fails the test (it never skips).
fn read(name: &str) -> ArrayD<f32> {
    let p = data(name);
    assert!(p.exists(), "missing ODL reference file {}", p.display());
    read_npy(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Block means along the detector axes only (`k` pixels), views kept: a low-pass of the data
/// that keeps angular errors visible.
fn detector_block_mean(a: &ArrayD<f32>, k: usize) -> ArrayD<f32> {
    let mut shape: Vec<usize> = a.shape().to_vec();
    for n in shape.iter_mut().skip(1) {
        *n /= k;
    }
    let mut out = ArrayD::<f32>::zeros(shape.clone());
    let scale = 1.0 / (k.pow(a.ndim() as u32 - 1) as f32);
    for (idx, v) in a.indexed_iter() {
        let small: Vec<usize> = idx
            .as_array_view()
            .iter()
            .enumerate()
            .map(|(d, i)| if d == 0 { *i } else { i / k })
            .collect();
        if small.iter().zip(&shape).all(|(i, n)| i < n) {
            out[small.as_slice()] += v * scale;
        }
    }
    out
}

/// Errors of one case against ODL.
#[derive(Debug)]
struct Cmp {
    /// Forward, relative L2.
    f: f64,
    /// Forward after 4-pixel detector block means, relative L2.
    flp: f64,
    /// Adjoint, relative L2.
    a: f64,
    /// Adjoint after 4× block means, relative L2.
    lp: f64,
    /// Scale ratio of the low-passed adjoints.
    r: f64,
}

fn compare(case: &str) -> Cmp {
    compare_shifted(case, 0.0)
}

/// [`compare`] with rodl's angles shifted by `shift` radians (to check that a bound catches an
/// angle error).
fn compare_shifted(case: &str, shift: f64) -> Cmp {
    let (f, a, lp, r, flp) = compare_parts(case, shift);
    Cmp { f, flp, a, lp, r }
}

/// Returns (forward, adjoint, low-passed adjoint, adjoint scale ratio, low-passed forward).
fn compare_parts(case: &str, shift: f64) -> (f64, f64, f64, f64, f64) {
    let json = data(&format!("{case}.json"));
    assert!(
        json.exists(),
        "missing ODL reference file {}",
        json.display()
    );
    let mut spec = TomoSpec::from_file(json).unwrap();
    if let Some(a) = spec.geometry.angles.as_mut() {
        a.min += shift;
        a.max += shift;
    }
    let space = spec.volume.space::<f32>().unwrap();
    let geometry = spec.geometry.build().unwrap();
    let ray = RayTransform::new(space.clone(), geometry, Backend::default()).unwrap();
    let image: ArrayD<f32> = read(&format!("{case}_image.npy"));
    let sino_ref: ArrayD<f32> = read(&format!("{case}_sino.npy"));
    let y: ArrayD<f32> = read(&format!("{case}_y.npy"));
    let adj_ref: ArrayD<f32> = read(&format!("{case}_adj.npy"));
    let sino = ray
        .apply(&space.element(image).unwrap())
        .unwrap()
        .into_array()
        .unwrap();
    let adj = ray
        .adjoint()
        .unwrap()
        .apply(&ray.range().element(y).unwrap())
        .unwrap()
        .into_array()
        .unwrap();
    let (f, a) = (rel_l2(&sino, &sino_ref), rel_l2(&adj, &adj_ref));
    let (ba, bref) = (block_mean(&adj, 4), block_mean(&adj_ref, 4));
    let (lp, r) = (rel_l2(&ba, &bref), ratio(&ba, &bref));
    let flp = rel_l2(
        &detector_block_mean(&sino, 4),
        &detector_block_mean(&sino_ref, 4),
    );
    eprintln!(
        "{case}: forward rel L2 {f:.3e} (low-passed {flp:.3e}), adjoint rel L2 {a:.3e}, \
         low-passed {lp:.3e}, scale {r:.4}"
    );
    (f, a, lp, r, flp)
}

#[test]
fn parallel2d_matches_odl() {
    // Same Joseph model as ASTRA CPU 'linear': measured forward 7.2e-6, adjoint 5.5e-5.
    let c = compare("par2d_64");
    assert!(c.f <= 2e-5 && c.a <= 8e-5, "{c:?}");
    assert!((c.r - 1.0).abs() <= 1e-4, "{c:?}");
}

#[test]
fn fanflat_matches_odl() {
    // ASTRA's 'line_fanflat' is a line-length model; on the sharp-edged phantom it differs from
    // Joseph by 3.7 % (rodl's own accuracy against exact integrals: tests/tomo_accuracy.rs).
    // The models differ at the highest frequencies; after 4-pixel detector means the
    // difference is measured at 1.8e-2 and every view's angle shifted by 0.01 rad exceeds the
    // bound (`fanflat_bound_catches_a_small_angle_shift`). Scale ratio measured 0.9836.
    let c = compare("fan2d_64");
    assert!(fan_ok(&c), "{c:?}");
}

/// The fan-beam bounds, each within 10 % of the measured value: forward 3.73e-2, low-passed
/// forward 1.81e-2, low-passed adjoint 7.13e-2, scale 0.9836.
fn fan_ok(c: &Cmp) -> bool {
    c.f <= 3.9e-2 && c.flp <= 1.95e-2 && c.lp <= 7.8e-2 && (c.r - 0.9836).abs() <= 5e-3
}

/// The fan-beam bounds are tight enough to see every angle shifted by 0.01 rad (each of the
/// forward, low-passed forward and low-passed adjoint bounds fails then).
#[test]
fn fanflat_bounds_catch_a_small_angle_shift() {
    for shift in [0.01, -0.01] {
        let c = compare_shifted("fan2d_64", shift);
        assert!(!fan_ok(&c), "shift {shift}: {c:?}");
        assert!(
            c.f > 3.9e-2 && c.flp > 1.95e-2 && c.lp > 7.8e-2,
            "shift {shift}: {c:?}"
        );
    }
}

#[test]
fn parallel3d_matches_odl() {
    // Measured: forward 3.8e-4, low-passed adjoint 2.7e-2, scale 1.0061.
    let c = compare("par3d_32");
    assert!(
        c.f <= 6e-4 && c.lp <= 3.5e-2 && (c.r - 1.0061).abs() <= 5e-3,
        "{c:?}"
    );
}

#[test]
fn cone_matches_odl() {
    // Measured: forward 1.0e-2, low-passed adjoint 6.2e-2, scale 1.0125.
    let c = compare("cone3d_32");
    assert!(
        c.f <= 1.3e-2 && c.lp <= 7e-2 && (c.r - 1.0125).abs() <= 5e-3,
        "{c:?}"
    );
}

#[test]
fn helical_matches_odl() {
    // Measured: forward 1.0e-2, low-passed adjoint 6.7e-2, scale 1.0112.
    let c = compare("helical_32");
    assert!(
        c.f <= 1.3e-2 && c.lp <= 7.5e-2 && (c.r - 1.0112).abs() <= 5e-3,
        "{c:?}"
    );
}
