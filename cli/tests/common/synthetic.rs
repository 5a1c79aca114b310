//! Synthetic scans for the `rodl scan` tests: a Shepp–Logan phantom's exact line integrals
//! (`shepp_logan_projections`) in a given geometry, turned into detector counts with Poisson
//! noise, flats and darks, a few stripes (detector pixels with a gain error) and zingers, and
//! written by other people's code (tests/scripts/write_scan.py: nxtomo, h5py, tifffile).
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use ndarray::{Array3, Ix3};
use ndarray_npy::write_npy;
use rand::{rngs::StdRng, Rng, SeedableRng};
use rand_distr::{Distribution, Poisson};
use rodl::tomo::phantom::{gaussian_projections, shepp_logan_projections, GaussianBlob};
use rodl::tomo::TomoSpec;

/// The dark level of the detector (counts).
pub const DARK: f64 = 100.0;

/// How a synthetic scan is corrupted.
#[derive(Clone, Copy, Debug)]
pub struct Corruption {
    /// Incident counts per pixel.
    pub i0: f64,
    /// Number of detector columns with a gain error (stripes in every row).
    pub stripes: usize,
    /// The largest relative gain error of a stripe.
    pub stripe_gain: f64,
    /// The fraction of projection pixels hit by a zinger.
    pub zinger_fraction: f64,
    /// The seed of the noise.
    pub seed: u64,
}

/// A synthetic scan: raw frames `[frame, image row, image column]` (row 0 the top: `v`
/// upwards) and the line integrals `[angle, u, v]` it was made from.
pub struct Synthetic {
    /// The exact line integrals.
    pub clean: Array3<f32>,
    /// The line integrals of the noisy counts (no stripes, no zingers) through the mean flat
    /// and dark: the noise level.
    pub noisy: Array3<f32>,
    /// The projections' counts, with stripes and zingers.
    pub proj: Array3<u16>,
    /// Flats and darks.
    pub flats: Array3<u16>,
    pub darks: Array3<u16>,
    /// The detector columns with stripes.
    pub stripe_columns: Vec<usize>,
}

/// The phantom of a synthetic scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phantom {
    /// The modified Shepp–Logan phantom (sharp edges, features of a few pixels).
    SheppLogan,
    /// A sum of Gaussian blobs (σ of 3 % to 35 % of the volume's half width).
    Blobs,
}

/// The exact line integrals of `phantom` in the truth geometry, scaled by `scale`.
pub fn line_integrals(spec: &TomoSpec, phantom: Phantom, scale: f64) -> Array3<f32> {
    let space = spec.volume.space::<f64>().unwrap();
    let g = spec.geometry.build().unwrap();
    let p = match phantom {
        Phantom::SheppLogan => shepp_logan_projections(&space, &g, true).unwrap(),
        Phantom::Blobs => {
            let h = 0.5 * (spec.volume.max_pt[0] - spec.volume.min_pt[0]);
            let blob = |x: f64, y: f64, sigma: f64, amplitude: f64| GaussianBlob {
                center: [x * h, y * h, 0.0],
                sigma: sigma * h,
                amplitude,
            };
            let blobs = [
                blob(0.0, 0.0, 0.35, 1.0),
                blob(0.3, -0.2, 0.1, 0.8),
                blob(-0.35, 0.25, 0.07, 1.2),
                blob(0.1, 0.45, 0.04, 1.5),
                blob(-0.2, -0.4, 0.08, -0.5),
                blob(0.45, 0.2, 0.03, 1.0),
            ];
            gaussian_projections(&g, &blobs).unwrap()
        }
    };
    p.into_dimensionality::<Ix3>()
        .unwrap()
        .mapv(|x| (x * scale) as f32)
}

/// Counts `[frame, row, column]` from line integrals `[angle, u, v]`.
pub fn scan_counts(clean: &Array3<f32>, c: &Corruption) -> Synthetic {
    let (na, nu, nv) = clean.dim();
    let mut rng = StdRng::seed_from_u64(c.seed);
    let mut count = |mean: f64| Poisson::new(mean.max(1e-3)).unwrap().sample(&mut rng);
    let flats = Array3::from_shape_fn([8, nv, nu], |_| DARK + count(c.i0));
    let darks = Array3::from_shape_fn([4, nv, nu], |_| DARK + count(1.0) - 1.0);
    let flat_mean = flats.mean_axis(ndarray::Axis(0)).unwrap();
    let dark_mean = darks.mean_axis(ndarray::Axis(0)).unwrap();
    let mut noisy = Array3::<f32>::zeros([na, nu, nv]);
    let mut proj = Array3::<f64>::zeros([na, nv, nu]);
    for ((a, u, v), &y) in clean.indexed_iter() {
        let row = nv - 1 - v;
        let n = DARK + count(c.i0 * (-(y as f64)).exp());
        proj[[a, row, u]] = n;
        let t = (n - dark_mean[[row, u]]) / (flat_mean[[row, u]] - dark_mean[[row, u]]);
        noisy[[a, u, v]] = -(t.max(1e-6).ln()) as f32;
    }
    // Stripes: detector columns whose gain is off by up to `stripe_gain` in the projections
    // (not in the flats), away from the edges.
    let mut rng = StdRng::seed_from_u64(c.seed + 1000);
    let mut stripe_columns = Vec::new();
    while stripe_columns.len() < c.stripes {
        let u = rng.gen_range(nu / 8..nu - nu / 8);
        if stripe_columns.iter().any(|&s: &usize| s.abs_diff(u) < 3) {
            continue;
        }
        let gain = 1.0
            + c.stripe_gain * rng.gen_range(0.4..1.0) * if rng.gen_bool(0.5) { 1.0 } else { -1.0 };
        for a in 0..na {
            for row in 0..nv {
                let x = &mut proj[[a, row, u]];
                *x = DARK + (*x - DARK) * gain;
            }
        }
        stripe_columns.push(u);
    }
    // Zingers: isolated bright pixels.
    let hits = (c.zinger_fraction * (na * nu * nv) as f64).round() as usize;
    for _ in 0..hits {
        let (a, row, u) = (
            rng.gen_range(0..na),
            rng.gen_range(0..nv),
            rng.gen_range(0..nu),
        );
        proj[[a, row, u]] += rng.gen_range(0.3..1.0) * c.i0;
    }
    let to_u16 = |x: &f64| x.round().clamp(0.0, 65535.0) as u16;
    Synthetic {
        clean: clean.clone(),
        noisy,
        proj: proj.map(to_u16),
        flats: flats.map(to_u16),
        darks: darks.map(to_u16),
        stripe_columns,
    }
}

/// Writes the scan as `format` (`nxtomo`, `dxchange`, `tiff`) to `out` with python3 and
/// tests/scripts/write_scan.py; `meta` is the script's scan.json. Returns the writer's name,
/// or `None` (with a note) where python3 or the writer's package is missing.
pub fn write_with_python(
    s: &Synthetic,
    meta: &serde_json::Value,
    format: &str,
    work: &Path,
    out: &Path,
) -> Option<String> {
    let inputs = work.join("npy");
    std::fs::create_dir_all(&inputs).unwrap();
    if !inputs.join("proj.npy").exists() {
        write_npy(inputs.join("proj.npy"), &s.proj).unwrap();
        write_npy(inputs.join("flats.npy"), &s.flats).unwrap();
        write_npy(inputs.join("darks.npy"), &s.darks).unwrap();
        std::fs::write(inputs.join("scan.json"), meta.to_string()).unwrap();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/write_scan.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(format)
        .arg(&inputs)
        .arg(out)
        .output();
    match out {
        Ok(o) if o.status.code() == Some(3) => {
            eprintln!("python3 lacks the writer of {format}: that case is not run");
            None
        }
        Ok(o) => {
            assert!(
                o.status.success(),
                "writing {format} failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            Some(String::from_utf8_lossy(&o.stdout).trim().to_string())
        }
        Err(_) => {
            eprintln!("no python3: the {format} case is not run");
            None
        }
    }
}

/// The PSNR of `x` against `reference` (the reference's range as the peak), in dB.
pub fn psnr(x: &ndarray::ArrayD<f32>, reference: &ndarray::ArrayD<f32>) -> f64 {
    let (lo, hi) = reference
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v as f64), b.max(v as f64))
        });
    10.0 * ((hi - lo).powi(2) / mse(x, reference)).log10()
}

/// The mean squared difference of two arrays of one shape.
pub fn mse(x: &ndarray::ArrayD<f32>, y: &ndarray::ArrayD<f32>) -> f64 {
    assert_eq!(x.shape(), y.shape());
    x.iter()
        .zip(y)
        .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
        .sum::<f64>()
        / x.len() as f64
}
