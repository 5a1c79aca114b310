//! `rodl scan` on a circular cone-beam scan written by other people's code: the modified
//! Shepp–Logan phantom's exact line integrals over a full turn, as 16-bit counts with flats,
//! darks, Poisson noise, stripes, zingers and the rotation axis 3.4 pixels off the detector's
//! centre, in an NXtomo file (ESRF's `nxtomo`, or h5py without it; needs the `hdf5` feature)
//! and a TIFF stack (tifffile). Asserts the centre found (≤ 0.25 px), the reconstruction
//! against the one from the clean line integrals (`rodl fbp` on a .npy file with the true
//! geometry) to the noise level, the two formats alike, and the phase retrieval's options.
//! `--nocapture` prints the figures.
#![cfg(feature = "hdf5")]

use std::ffi::OsStr;
use std::path::Path;

use ndarray::ArrayD;
use ndarray_npy::{read_npy, write_npy};
use rodl::tomo::TomoSpec;

mod common;
#[path = "common/synthetic.rs"]
mod synthetic;

use common::{rodl, rodl_ok, stderr, TempDir};
use synthetic::{line_integrals, mse, psnr, scan_counts, write_with_python, Corruption, Phantom};

/// Detector columns and rows, views (over 360°), pixel size (mm), distances (mm).
const NU: usize = 64;
const NV: usize = 16;
const VIEWS: usize = 240;
const PX: f64 = 0.5;
const SRC: f64 = 200.0;
const DET: f64 = 100.0;
/// The rotation axis' offset: a detector shift of SHIFT pixels.
const SHIFT: f64 = 3.4;

/// The geometry the scan was taken with, as `rodl scan` builds it from the file (angles k·1.5°
/// as the midpoints of a uniform partition, the detector shifted by SHIFT pixels) and its
/// default volume (NU × NU × NV voxels of the sample-plane pixel size, PX / magnification).
fn truth_spec(shift_px: f64) -> TomoSpec {
    let step = 2.0 * std::f64::consts::PI / VIEWS as f64;
    let sample = PX * SRC / (SRC + DET);
    let (hu, hv) = (0.5 * NU as f64 * PX, 0.5 * NV as f64 * PX);
    let (xu, xv) = (0.5 * NU as f64 * sample, 0.5 * NV as f64 * sample);
    TomoSpec::from_json(&format!(
        r#"{{"volume": {{"min_pt": [-{xu}, -{xu}, -{xv}], "max_pt": [{xu}, {xu}, {xv}],
              "shape": [{NU}, {NU}, {NV}]}},
            "geometry": {{"kind": "cone",
              "angles": {{"min": {}, "max": {}, "count": {VIEWS}}},
              "detector": {{"min": [-{hu}, -{hv}], "max": [{hu}, {hv}], "shape": [{NU}, {NV}]}},
              "src_radius": {SRC}, "det_radius": {DET},
              "det_offset": [{}, 0]}}}}"#,
        -0.5 * step,
        2.0 * std::f64::consts::PI - 0.5 * step,
        shift_px * PX
    ))
    .unwrap()
}

/// `rodl fbp` of line integrals `y` in the geometry `spec`.
fn fbp(dir: &TempDir, name: &str, spec: &TomoSpec, y: &ndarray::Array3<f32>) -> ArrayD<f32> {
    let g = dir.path(&format!("{name}.json"));
    std::fs::write(&g, spec.to_json().unwrap()).unwrap();
    let (i, o) = (
        dir.path(&format!("{name}_y.npy")),
        dir.path(&format!("{name}_x.npy")),
    );
    write_npy(&i, y).unwrap();
    rodl_ok(&[
        OsStr::new("fbp"),
        "-g".as_ref(),
        g.as_os_str(),
        "-i".as_ref(),
        i.as_os_str(),
        "-o".as_ref(),
        o.as_os_str(),
    ]);
    read_npy(&o).unwrap()
}

/// Runs `rodl scan IN -o OUT.npy ARGS… -q` and returns the volume and the standard error.
fn scan(input: &Path, out: &Path, args: &[&str]) -> (ArrayD<f32>, String) {
    let mut all: Vec<&OsStr> = vec!["scan".as_ref(), input.as_os_str(), "-o".as_ref()];
    all.push(out.as_os_str());
    all.extend(args.iter().map(|a| OsStr::new(*a)));
    all.push("-q".as_ref());
    let o = rodl_ok(&all);
    (read_npy(out).unwrap(), stderr(&o))
}

fn meta() -> serde_json::Value {
    let angles: Vec<f64> = (0..VIEWS)
        .map(|k| k as f64 * 360.0 / VIEWS as f64)
        .collect();
    serde_json::json!({
        "angles_deg": angles,
        "pixel_size": PX * 1e-3,
        "source_distance": SRC * 1e-3,
        "detector_distance": DET * 1e-3,
        "energy_kev": 25.0,
    })
}

#[test]
fn a_noisy_cone_scan_from_nxtomo_and_tiff_files_reconstructs_to_the_noise_level() {
    let dir = TempDir::new("scan-cone");
    let truth = truth_spec(SHIFT);
    // A phantom of at most 1.2 in line integral: counts of 30 % transmission and more.
    let raw = line_integrals(&truth, Phantom::SheppLogan, 1.0);
    let peak = raw.iter().cloned().fold(0.0f32, f32::max) as f64;
    let clean = line_integrals(&truth, Phantom::SheppLogan, 1.2 / peak);
    let corruption = Corruption {
        i0: 2e4,
        stripes: 4,
        stripe_gain: 0.01,
        zinger_fraction: 5e-4,
        seed: 34,
    };
    let s = scan_counts(&clean, &corruption);
    let nx = dir.path("scan.nx");
    let Some(writer) = write_with_python(&s, &meta(), "nxtomo", &dir.0, &nx) else {
        return;
    };

    // The references: FBP of the clean line integrals and of the noisy ones (the noise
    // level), in the true geometry.
    let x_clean = fbp(&dir, "clean", &truth, &s.clean);
    let x_noise = fbp(&dir, "noise", &truth, &s.noisy);
    let noise_rms = mse(&x_noise, &x_clean).sqrt();

    // The scan, with every correction, from the NXtomo file.
    let geo = dir.path("g.json");
    let geo_s = geo.to_string_lossy().into_owned();
    let t = std::time::Instant::now();
    let (x, err) = scan(
        &nx,
        &dir.path("rec.npy"),
        &["--zingers", "2000", "--geometry-out", &geo_s, "-v"],
    );
    let took = t.elapsed();
    assert!(err.contains("NXtomo") && err.contains("cone beam"), "{err}");
    let spec = TomoSpec::from_file(&geo).unwrap();
    let found = spec.geometry.det_offset.clone().unwrap()[0] / PX;
    assert_eq!(spec.geometry.src_radius, Some(SRC));
    assert_eq!(spec.geometry.det_radius, Some(DET));
    let rms = mse(&x, &x_clean).sqrt();

    // Without the corrections: no centre and no zinger removal, or one of them.
    let (x_bare, _) = scan(
        &nx,
        &dir.path("bare.npy"),
        &["--centre", "off", "--zingers", "off"],
    );
    let (x_nocentre, _) = scan(
        &nx,
        &dir.path("nocentre.npy"),
        &["--centre", "off", "--zingers", "2000"],
    );
    let (x_zingers, _) = scan(&nx, &dir.path("zingers.npy"), &[]);
    let (p, p_noise, p_bare, p_nocentre, p_zingers) = (
        psnr(&x, &x_clean),
        psnr(&x_noise, &x_clean),
        psnr(&x_bare, &x_clean),
        psnr(&x_nocentre, &x_clean),
        psnr(&x_zingers, &x_clean),
    );
    eprintln!(
        "cone scan ({writer}, {VIEWS} × {NU} × {NV}, {took:.2?}): centre {found:.4} px (truth \
         {SHIFT}); against FBP of the clean data: rms {rms:.3e} (noise alone {noise_rms:.3e}, \
         ratio {:.3}), PSNR {p:.2} dB (noise alone {p_noise:.2}); no corrections {p_bare:.2} dB, \
         without the centre {p_nocentre:.2} dB, without zinger removal {p_zingers:.2} dB",
        rms / noise_rms
    );
    assert!((found - SHIFT).abs() <= 0.25, "centre {found}: {err}");
    // To the noise level: within 25 % of the error that the Poisson noise alone gives.
    assert!(rms <= 1.25 * noise_rms, "rms {rms} vs noise {noise_rms}");
    assert!(p >= p_bare + 6.0, "{p} vs {p_bare} without corrections");
    assert!(
        p >= p_nocentre + 6.0,
        "{p} vs {p_nocentre} without the centre"
    );
    assert!(
        p >= p_zingers + 2.0,
        "{p} vs {p_zingers} without zinger removal"
    );

    // The same frames as a TIFF stack (tifffile), with the lengths on the command line.
    let tif = dir.path("tif");
    if write_with_python(&s, &meta(), "tiff", &dir.0, &tif).is_some() {
        let p = |n: &str| tif.join(n).to_string_lossy().into_owned();
        let (flats, darks) = (p("flats.tif"), p("darks.tif"));
        let (x_tif, _) = scan(
            &tif.join("proj"),
            &dir.path("tif.npy"),
            &[
                "--flats",
                &flats,
                "--darks",
                &darks,
                "--angles",
                "0:360",
                "--pixel-size",
                "0.5",
                "--source-distance",
                "200",
                "--detector-distance",
                "100",
                "--zingers",
                "2000",
            ],
        );
        let d = x_tif
            .iter()
            .zip(&x)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(d <= 1e-6, "TIFF and NXtomo reconstructions differ by {d}");
        // A TIFF stack records no energy.
        let never = dir.path("never.npy");
        let o = rodl(&[
            OsStr::new("scan"),
            tif.join("proj").as_os_str(),
            "--flats".as_ref(),
            flats.as_ref(),
            "--paganin".as_ref(),
            "50".as_ref(),
            "-o".as_ref(),
            never.as_os_str(),
        ]);
        let e = stderr(&o);
        assert!(!o.status.success() && e.contains("--energy KEV"), "{e}");
    }

    // Phase retrieval: the energy (25 keV) and the distance from the file; a smoother volume
    // (on 0.5 mm pixels δ/β = 2·10⁶ makes the filter's length √a/2π about 2 pixels); the
    // same with the energy given on the command line.
    let pag = ["--paganin", "2e6", "--zingers", "2000"];
    let (x_pag, err) = scan(&nx, &dir.path("pag.npy"), &pag);
    let (x_pag2, _) = scan(
        &nx,
        &dir.path("pag2.npy"),
        &[&pag[..], &["--energy", "25"]].concat(),
    );
    assert_eq!(x_pag, x_pag2);
    assert!(x_pag.iter().all(|v| v.is_finite()), "{err}");
    let rough = |x: &ArrayD<f32>| {
        x.windows(vec![2, 1, 1])
            .into_iter()
            .map(|w| (w[[1, 0, 0]] - w[[0, 0, 0]]).abs() as f64)
            .sum::<f64>()
    };
    let (r_pag, r) = (rough(&x_pag), rough(&x));
    eprintln!("--paganin 2e6: total variation along x {r_pag:.4} (without {r:.4})");
    assert!(r_pag < 0.8 * r, "not smoother: {r_pag} vs {r}");
    for (args, needle) in [
        (
            &["--paganin", "50", "--propagation-distance", "0"][..],
            "--propagation-distance",
        ),
        (&["--energy", "25"][..], "--paganin"),
        (
            &["--paganin", "50", "--energy", "25", "--log", "false"][..],
            "--log",
        ),
    ] {
        let mut all: Vec<&OsStr> = vec!["scan".as_ref(), nx.as_os_str(), "-o".as_ref()];
        let out = dir.path("never.npy");
        all.push(out.as_os_str());
        all.extend(args.iter().map(|a| OsStr::new(*a)));
        let o = rodl(&all);
        let e = stderr(&o);
        assert!(!o.status.success() && e.contains(needle), "{args:?}: {e}");
        assert!(!out.exists());
    }
}
