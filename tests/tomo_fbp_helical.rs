//! Helical FDK (`rodl::tomo::fbp`, the row window of `fbp/helical.rs`): Gaussian blobs spread
//! along the axis, from their exact line integrals (independent of rodl's ray code), come back
//! from helical scans with flat and cylindrical detectors about as well as a circular FDK does
//! near its mid-plane; scans the window cannot serve are `Error::Unsupported`.
//! `--nocapture` prints the measured errors.

use std::f64::consts::PI;

use rodl::tomo::phantom::{gaussian_phantom, gaussian_projections, GaussianBlob};
use rodl::tomo::{fbp_op, Backend, FbpOptions, Geometry, RayTransform};
use rodl::{uniform_discr, Element, Error, Operator, Space, UniformPartition};

/// Blobs at several heights: a helix sees each of them in other views.
fn blobs() -> Vec<GaussianBlob> {
    [
        ([0.2, -0.1, -0.45], 0.15, 1.0),
        ([-0.35, 0.3, 0.0], 0.1, 0.7),
        ([0.05, 0.45, 0.4], 0.08, 0.5),
        ([-0.3, -0.4, 0.3], 0.12, 0.6),
    ]
    .into_iter()
    .map(|(center, sigma, amplitude)| GaussianBlob {
        center,
        sigma,
        amplitude,
    })
    .collect()
}

/// Relative L2 error where `|(x, y)| < 0.8`, `|z| < zmax`, and the ratio of the integrals there.
fn errors(space: &Space<f32>, rec: &Element<f32>, truth: &Element<f32>, zmax: f64) -> (f64, f64) {
    let (r, t) = (rec.as_array().unwrap(), truth.as_array().unwrap());
    let p = space.partition().unwrap();
    let c: Vec<Vec<f64>> = (0..3).map(|a| p.coord_vector(a).unwrap()).collect();
    let (mut num, mut den, mut sr, mut st) = (0.0, 0.0, 0.0, 0.0);
    for ((i, &rv), &tv) in r.indexed_iter().zip(t.iter()) {
        let (x, y, z) = (c[0][i[0]], c[1][i[1]], c[2][i[2]]);
        if x * x + y * y < 0.64 && z.abs() < zmax {
            let (rv, tv) = (rv as f64, tv as f64);
            num += (rv - tv) * (rv - tv);
            den += tv * tv;
            sr += rv;
            st += tv;
        }
    }
    ((num / den).sqrt(), sr / st)
}

fn reconstruct(geometry: Geometry, zmax: f64) -> rodl::Result<(f64, f64)> {
    let space = uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[40, 40, 40])?;
    let b = blobs();
    let data = gaussian_projections::<f32>(&geometry, &b)?;
    let ray = RayTransform::new(space.clone(), geometry, Backend::default())?;
    let fdk = fbp_op(&ray, &FbpOptions::default())?;
    let rec = fdk.apply(&ray.range().element(data)?)?;
    Ok(errors(&space, &rec, &gaussian_phantom(&space, &b)?, zmax))
}

const SRC: f64 = 4.0;
const DET: f64 = 2.0;
/// Views per turn.
const PER_TURN: f64 = 80.0;

/// The angles of a helix of `pitch` (feed per turn) whose source passes `|z| ≤ zmax` plus half a
/// feed and a margin, so that every voxel there has its full turn of views.
fn angles(pitch: f64, zmax: f64) -> UniformPartition {
    let half = 2.0 * PI * (zmax + 0.5 * pitch + 0.25) / pitch;
    let n = (2.0 * half / (2.0 * PI) * PER_TURN).round() as usize;
    UniformPartition::new(&[-half], &[half], &[n]).unwrap()
}

/// A flat detector wide enough for the cube's fan, `rows` high at the detector.
fn flat(pitch: f64, zmax: f64, rows: f64) -> rodl::Result<Geometry> {
    let det = UniformPartition::new(&[-2.4, -rows], &[2.4, rows], &[64, 32])?;
    Geometry::cone_flat(
        &angles(pitch, zmax),
        &det,
        SRC,
        DET,
        pitch,
        [0.0, 0.0, 1.0],
        [0.0; 2],
    )
}

/// A cylinder about the source (a clinical detector) over the same fan and rows.
fn cylinder(pitch: f64, zmax: f64, rows: f64) -> rodl::Result<Geometry> {
    let half = (2.4f64 / (SRC + DET)).atan();
    let det = UniformPartition::new(&[-half, -rows], &[half, rows], &[64, 32])?;
    Geometry::cone_curved(
        &angles(pitch, zmax),
        &det,
        SRC,
        DET,
        [Some(SRC + DET), None],
        pitch,
        [0.0, 0.0, 1.0],
        [0.0; 2],
    )
}

/// Guards helical FDK: at a pitch factor of 0.3 (feed per turn over the rows' height at the
/// axis, 1.6 here) the blobs within `|z| < 0.6` come back about as well as a circular FDK's near
/// its mid-plane, in absolute values, with both detectors; at 0.6 and 0.9 within the bounds
/// measured.
#[test]
fn helical_fdk_reconstructs_blobs_along_the_axis() {
    let zmax = 0.6;
    let (circ, _) = {
        let det = UniformPartition::new(&[-2.4, -1.2], &[2.4, 1.2], &[64, 32]).unwrap();
        let g = Geometry::cone_flat(
            &UniformPartition::new(&[0.0], &[2.0 * PI], &[80]).unwrap(),
            &det,
            SRC,
            DET,
            0.0,
            [0.0, 0.0, 1.0],
            [0.0; 2],
        )
        .unwrap();
        reconstruct(g, zmax).unwrap()
    };
    println!("circular FDK, |z| < {zmax}: error {circ:.4}");
    let mut found = Vec::new();
    for factor in [0.3, 0.6, 0.9] {
        let pitch = factor * 1.6;
        for (name, g) in [
            ("flat", flat(pitch, zmax, 1.2).unwrap()),
            ("cylinder", cylinder(pitch, zmax, 1.2).unwrap()),
        ] {
            let (err, mean) = reconstruct(g, zmax).unwrap();
            println!(
                "helical FDK, {name}, pitch factor {factor}: error |z| < {zmax} {err:.4}, mean \
                 {mean:.4}"
            );
            found.push((name, factor, err, mean));
        }
    }
    // Measured (40³, 80 views per turn): circular 0.046 near its mid-plane; helical 0.052 /
    // 0.050 (flat / cylinder) at pitch factor 0.3, 0.091 / 0.090 at 0.6, 0.163 / 0.162 at 0.9
    // (the window's transitions narrow as the pitch grows), means 0.99, 0.96, 0.94.
    for (name, factor, err, mean) in found {
        let (max_err, max_mean) = match factor {
            f if f < 0.5 => (0.06, 0.02),
            f if f < 0.8 => (0.10, 0.05),
            _ => (0.18, 0.075),
        };
        assert!(err < max_err, "{name} {factor}: {err}");
        assert!((mean - 1.0).abs() < max_mean, "{name} {factor}: {mean}");
    }
}

/// A pitch factor above 1 leaves voxels without a full turn: refused, as is a helix of less
/// than a turn and a detector that does not reach both sides of the source's plane.
#[test]
fn helices_the_window_cannot_serve_are_unsupported() {
    let space = uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[8, 8, 8]).unwrap();
    let fdk = |g: Geometry| {
        let ray = RayTransform::new(space.clone(), g, Backend::default()).unwrap();
        fbp_op(&ray, &FbpOptions::default()).map(|_| ())
    };
    // Feed 2.0 per turn against 1.6 at the axis.
    let e = fdk(flat(2.0, 0.5, 1.2).unwrap()).unwrap_err();
    assert!(
        matches!(e, Error::Unsupported(_)) && e.to_string().contains("pitch factor"),
        "{e}"
    );
    let e = fdk(cylinder(2.0, 0.5, 1.2).unwrap()).unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
    // Less than a turn.
    let det = UniformPartition::new(&[-2.4, -1.2], &[2.4, 1.2], &[16, 8]).unwrap();
    let short = UniformPartition::new(&[0.0], &[1.5 * PI], &[30]).unwrap();
    let g = Geometry::cone_flat(&short, &det, SRC, DET, 0.2, [0.0, 0.0, 1.0], [0.0; 2]).unwrap();
    let e = fdk(g).unwrap_err();
    assert!(
        matches!(e, Error::Unsupported(_)) && e.to_string().contains("full turn"),
        "{e}"
    );
    // A detector shifted above the source's plane.
    let det = UniformPartition::new(&[-2.4, 0.1], &[2.4, 1.2], &[16, 8]).unwrap();
    let g = Geometry::cone_flat(
        &angles(0.3, 0.5),
        &det,
        SRC,
        DET,
        0.3,
        [0.0, 0.0, 1.0],
        [0.0; 2],
    )
    .unwrap();
    assert!(matches!(fdk(g), Err(Error::Unsupported(_))));
}
