//! `rodl scan`: a synthetic parallel-beam scan (a ball off the axis, 16-bit counts with flats
//! and darks, the rotation axis 3.4 pixels off the detector's centre) written as TIFF frames
//! (and, with the `hdf5` feature and python3's h5py, as an NXtomo file) and reconstructed by
//! the tool; the centre it finds, the data and geometry it writes (rerun through `rodl fbp`),
//! its outputs in each format, and its one-line failures.

use std::ffi::OsStr;
use std::path::Path;
#[cfg(feature = "hdf5")]
use std::process::Command;

use ndarray::{Array3, ArrayD};
use ndarray_npy::read_npy;
use rodl::tomo::{Backend, RayTransform, TomoSpec};
use rodl::Operator;

mod common;

use common::{rodl, rodl_ok, stderr, TempDir};

/// Detector columns, rows and views of the synthetic scan.
const NU: usize = 40;
const NV: usize = 4;
const VIEWS: usize = 120;
/// The rotation axis' offset from the detector's centre (pixels of 1 mm).
const SHIFT: f64 = 3.4;
/// Incident counts per pixel, and the dark level.
const I0: f64 = 20000.0;
const DARK: f64 = 100.0;
/// The ball's attenuation (per mm), radius (mm) and centre (mm).
const MU: f64 = 0.02;
const RADIUS: f64 = 8.0;
const CENTRE: [f64; 2] = [4.0, -3.0];

/// The geometry the scan was taken with: angles k·1.5° (the midpoints of ±0.75° cells; the first and last views are 178.5° apart, within the centre finder's 2°), a 1 mm
/// detector shifted by SHIFT mm, the volume of `rodl scan`'s default (NU × NU × NV of 1 mm).
fn truth_spec() -> TomoSpec {
    common::parallel_scan_spec(NU, NV, VIEWS, SHIFT)
}

/// The ball, sampled on the volume.
fn ball() -> ArrayD<f64> {
    let h = NU as f64 / 2.0;
    ArrayD::from_shape_fn(vec![NU, NU, NV], |i| {
        let x = -h + i[0] as f64 + 0.5 - CENTRE[0];
        let y = -h + i[1] as f64 + 0.5 - CENTRE[1];
        if x * x + y * y <= RADIUS * RADIUS {
            MU
        } else {
            0.0
        }
    })
}

/// The scan's line integrals `[angle, u, v]`.
fn line_integrals() -> Array3<f64> {
    let spec = truth_spec();
    let space = spec.volume.space::<f64>().unwrap();
    let ray = RayTransform::new(space, spec.geometry.build().unwrap(), Backend::default()).unwrap();
    let y = ray.apply(&ray.domain().element(ball()).unwrap()).unwrap();
    y.into_array().unwrap().into_dimensionality().unwrap()
}

/// A frame `[u, v]` as the image a detector stores.
fn image(frame: impl Fn(usize, usize) -> f64) -> Vec<u16> {
    common::image16(NU, NV, frame)
}

fn write_tiff(path: &Path, frames: &[Vec<u16>]) {
    common::write_tiff16(path, NU, NV, frames)
}

/// Writes the scan as TIFF stacks: `proj/` (one file per view), `flat.tif` and `dark.tif`
/// (multi-page).
fn write_tiff_scan(dir: &TempDir) {
    let y = line_integrals();
    std::fs::create_dir_all(dir.path("proj")).unwrap();
    for a in 0..VIEWS {
        let px = image(|u, v| I0 * (-y[[a, u, v]]).exp() + DARK);
        write_tiff(&dir.path(&format!("proj/p_{a:04}.tif")), &[px]);
    }
    let flats: Vec<_> = (0..3).map(|_| image(|_, _| I0 + DARK)).collect();
    write_tiff(&dir.path("flat.tif"), &flats);
    let darks: Vec<_> = (0..2).map(|_| image(|_, _| DARK)).collect();
    write_tiff(&dir.path("dark.tif"), &darks);
}

fn tiff_args(dir: &TempDir) -> Vec<String> {
    let p = |n: &str| dir.path(n).to_string_lossy().into_owned();
    vec![
        "scan".into(),
        p("proj"),
        "--flats".into(),
        p("flat.tif"),
        "--darks".into(),
        p("dark.tif"),
        "--angles".into(),
        "0:180".into(),
        "--pixel-size".into(),
        "1".into(),
    ]
}

/// The detector shift `rodl scan -v` reports.
fn reported_shift(err: &str) -> f64 {
    let line = err
        .lines()
        .find(|l| l.contains("centre of rotation"))
        .unwrap_or_else(|| panic!("no centre line in {err}"));
    let (_, rest) = line.split_once("a detector shift of ").unwrap();
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn a_tiff_scan_is_reconstructed_with_its_centre_found_and_the_geometry_reruns() {
    let dir = TempDir::new("scan-tiff");
    write_tiff_scan(&dir);
    let mut args = tiff_args(&dir);
    let (rec, geo, data) = (dir.path("rec.npy"), dir.path("g.json"), dir.path("y.npy"));
    for (k, v) in [
        ("-o", &rec),
        ("--geometry-out", &geo),
        ("--data-out", &data),
    ] {
        args.push(k.into());
        args.push(v.to_string_lossy().into_owned());
    }
    args.push("-v".into());
    args.push("-q".into());
    let out = rodl_ok(&args);
    let err = stderr(&out);
    let shift = reported_shift(&err);
    assert!(
        (shift - SHIFT).abs() <= 0.1,
        "centre found at {shift}, truth {SHIFT}: {err}"
    );
    for stage in ["read", "preprocess", "set-up", "compute", "write"] {
        assert!(err.contains(stage), "no {stage} time in {err}");
    }

    // The preprocessed data are the line integrals to the counts' rounding.
    let y_out: ArrayD<f32> = read_npy(&data).unwrap();
    let y = line_integrals();
    assert_eq!(y_out.shape(), y.shape());
    let worst = y_out
        .iter()
        .zip(y.iter())
        .map(|(a, b)| (*a as f64 - b).abs())
        .fold(0.0, f64::max);
    assert!(
        worst < 2e-4,
        "data differ from the line integrals by {worst}"
    );

    // The geometry carries the centre as a detector shift, and reruns through `rodl fbp`.
    let spec = TomoSpec::from_file(&geo).unwrap();
    let off = spec.geometry.det_offset.clone().unwrap();
    assert!(
        (off[0] - shift).abs() <= 0.005 + 1e-9,
        "{off:?} vs {shift} (printed to 0.01 px)"
    );
    let rec2 = dir.path("rec2.npy");
    rodl_ok(&[
        OsStr::new("fbp"),
        "-g".as_ref(),
        geo.as_os_str(),
        "-i".as_ref(),
        data.as_os_str(),
        "-o".as_ref(),
        rec2.as_os_str(),
    ]);
    let x: ArrayD<f32> = read_npy(&rec).unwrap();
    let x2: ArrayD<f32> = read_npy(&rec2).unwrap();
    assert_eq!(x.shape(), &[NU, NU, NV]);
    let diff = x
        .iter()
        .zip(&x2)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(diff <= 1e-6, "scan and fbp differ by {diff}");

    // The ball is where it was, with its attenuation (mean over its inner part).
    let truth = ball();
    let inner: Vec<f64> = x
        .indexed_iter()
        .filter(|(i, _)| {
            let h = NU as f64 / 2.0;
            let px = -h + i[0] as f64 + 0.5 - CENTRE[0];
            let py = -h + i[1] as f64 + 0.5 - CENTRE[1];
            (px * px + py * py).sqrt() < RADIUS - 2.0
        })
        .map(|(_, &v)| v as f64)
        .collect();
    let mean = inner.iter().sum::<f64>() / inner.len() as f64;
    assert!(
        (mean - MU).abs() < 0.1 * MU,
        "mean {mean} inside the ball, truth {MU}"
    );
    let err2: f64 = x
        .iter()
        .zip(&truth)
        .map(|(a, b)| (*a as f64 - b).powi(2))
        .sum();
    let norm2: f64 = truth.iter().map(|b| b * b).sum();
    assert!(
        (err2 / norm2).sqrt() < 0.25,
        "relative error {}",
        (err2 / norm2).sqrt()
    );

    // Without the centre the reconstruction is worse (the shift matters).
    let off_rec = dir.path("off.npy");
    let mut args = tiff_args(&dir);
    args.extend(["--centre", "off", "-q", "-o"].map(String::from));
    args.push(off_rec.to_string_lossy().into_owned());
    rodl_ok(&args);
    let x_off: ArrayD<f32> = read_npy(&off_rec).unwrap();
    let err_off: f64 = x_off
        .iter()
        .zip(&truth)
        .map(|(a, b)| (*a as f64 - b).powi(2))
        .sum();
    assert!(err_off > 1.5 * err2, "no centre: {err_off} vs {err2}");
    eprintln!(
        "centre {shift:.3} px (truth {SHIFT}), data within {worst:.1e}, ball mean {mean:.5} \
         (truth {MU}), relative error {:.3}, without the centre {:.3}",
        (err2 / norm2).sqrt(),
        (err_off / norm2).sqrt()
    );
}

#[test]
fn a_scan_writes_a_tiff_stack_and_a_slab_of_rows() {
    let dir = TempDir::new("scan-formats");
    write_tiff_scan(&dir);
    let slices = dir.path("slices");
    let mut args = tiff_args(&dir);
    args.extend(["-q", "--tiff-depth", "uint16", "--rows", "1:3", "-o"].map(String::from));
    args.push(slices.to_string_lossy().into_owned());
    rodl_ok(&args);
    let mut names: Vec<String> = std::fs::read_dir(&slices)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["slice_0000.tif", "slice_0001.tif"]);

    // The slab of rows 1..3 is the whole volume's slices 1 and 2.
    let whole = dir.path("whole.npy");
    let slab = dir.path("slab.npy");
    for (out, rows) in [(&whole, None), (&slab, Some("1:3"))] {
        let mut args = tiff_args(&dir);
        args.extend(["-q", "-o"].map(String::from));
        args.push(out.to_string_lossy().into_owned());
        if let Some(r) = rows {
            args.extend(["--rows".to_string(), r.to_string()]);
        }
        rodl_ok(&args);
    }
    let w: ArrayD<f32> = read_npy(&whole).unwrap();
    let s: ArrayD<f32> = read_npy(&slab).unwrap();
    assert_eq!(s.shape(), &[NU, NU, 2]);
    let diff = (0..2)
        .flat_map(|k| {
            let (w, s) = (&w, &s);
            (0..NU * NU).map(move |i| (w[[i / NU, i % NU, k + 1]] - s[[i / NU, i % NU, k]]).abs())
        })
        .fold(0.0f32, f32::max);
    assert!(diff <= 1e-5, "slab and whole differ by {diff}");
}

#[test]
fn scan_failures_are_one_line_and_leave_nothing_behind() {
    let dir = TempDir::new("scan-fail");
    write_tiff_scan(&dir);
    let rec = dir.path("rec.npy");
    let before = dir.listing();
    // Runs the scan with `base` (the TIFF scan's arguments, or fewer) and `extra`.
    let check_with = |base: Vec<String>, extra: &[&str], needle: &str| {
        let mut args = base;
        args.extend(extra.iter().map(|s| s.to_string()));
        args.extend(["-o".to_string(), rec.to_string_lossy().into_owned()]);
        let out = rodl(&args);
        let err = stderr(&out);
        assert!(!out.status.success(), "succeeded: {args:?}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            err.starts_with("rodl: error: ") && err.trim_end().lines().count() == 1,
            "{err:?}"
        );
        assert!(err.contains(needle), "{err:?} lacks {needle:?}");
        assert!(!rec.exists());
        assert_eq!(dir.listing(), before, "files left behind");
    };
    let check = |extra: &[&str], needle: &str| check_with(tiff_args(&dir), extra, needle);
    let mut no_flats = tiff_args(&dir);
    let k = no_flats.iter().position(|a| a == "--flats").unwrap();
    no_flats.drain(k..k + 2);
    check_with(no_flats, &[], "no flat fields");
    check(&["--rows", "2:9"], "has 4 rows");
    check(&["--angles", "0:180:3"], "--angles");
    check(&["--algorithm", "cgls"], "--iterations");
    check(&["--iterations", "3"], "iterative");
    check(&["--stripes", "4"], "odd");
    check(&["--entry", "/entry"], "--entry");
    #[cfg(not(feature = "hdf5"))]
    check(&["--format", "h5"], "HDF5");
    // A truncated projection file.
    let p = dir.path("proj/p_0007.tif");
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    check(&[], "p_0007.tif");
}

/// The volume of an HDF5 file's dataset `[z, y, x]`, back in rodl's `[x, y, z]` order.
#[cfg(feature = "hdf5")]
fn read_h5_volume(path: &Path) -> ArrayD<f32> {
    let f = hdf5::File::open(path).unwrap();
    let ds = f.dataset(rodl::io::VOLUME_DATASET).unwrap();
    let zyx: ndarray::Array3<f32> = ds.read().unwrap();
    zyx.permuted_axes([2, 1, 0])
        .as_standard_layout()
        .into_owned()
        .into_dyn()
}

#[cfg(feature = "hdf5")]
#[test]
fn an_nxtomo_file_written_by_h5py_reconstructs_as_its_tiff_stack_does() {
    let dir = TempDir::new("scan-nx");
    write_tiff_scan(&dir);
    let tif_rec = dir.path("tif.npy");
    let mut args = tiff_args(&dir);
    args.extend(["-q", "-o"].map(String::from));
    args.push(tif_rec.to_string_lossy().into_owned());
    rodl_ok(&args);

    // The same frames in an NXtomo file (darks, flats, projections; angles in degrees; 1 mm
    // pixels), written by h5py.
    let y = line_integrals();
    let counts: Vec<f64> = (0..VIEWS)
        .flat_map(|a| {
            let y = &y;
            (0..NV).flat_map(move |row| {
                (0..NU).map(move |u| (I0 * (-y[[a, u, NV - 1 - row]]).exp() + DARK).round())
            })
        })
        .collect();
    let nx = dir.path("scan.nxs");
    let script = format!(
        r#"
import sys, numpy as np
try:
    import h5py
except ImportError:
    sys.exit(3)
nu, nv, n = {NU}, {NV}, {VIEWS}
proj = np.array([{}], dtype=np.float64).reshape(n, nv, nu).astype(np.uint16)
flat = np.full((3, nv, nu), {I0} + {DARK}, np.uint16)
dark = np.full((2, nv, nu), {DARK}, np.uint16)
data = np.concatenate([dark, flat, proj])
keys = np.array([2] * 2 + [1] * 3 + [0] * n, np.int32)
angles = np.concatenate([np.zeros(5), np.arange(n) * 180.0 / n])
with h5py.File(sys.argv[1], "w") as f:
    e = f.create_group("entry0000"); e.attrs["NX_class"] = "NXentry"; e["definition"] = "NXtomo"
    i = e.create_group("instrument"); i.attrs["NX_class"] = "NXinstrument"
    d = i.create_group("detector"); d.attrs["NX_class"] = "NXdetector"
    d["data"] = data; d["image_key"] = keys
    for k in ("x_pixel_size", "y_pixel_size"):
        d[k] = 1e-3; d[k].attrs["units"] = "m"
    s = e.create_group("sample"); s.attrs["NX_class"] = "NXsample"
    s["rotation_angle"] = angles; s["rotation_angle"].attrs["units"] = "degree"
"#,
        counts
            .iter()
            .map(|c| format!("{c}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let status = Command::new("python3")
        .arg("-c")
        .arg(&script)
        .arg(&nx)
        .status();
    match status {
        Ok(s) if s.code() == Some(3) => {
            eprintln!("python3 has no h5py: the NXtomo case is not run");
            return;
        }
        Ok(s) => assert!(s.success(), "writing the NXtomo file failed"),
        Err(_) => {
            eprintln!("no python3: the NXtomo case is not run");
            return;
        }
    }
    let h5_rec = dir.path("rec.h5");
    let out = rodl_ok(&[
        OsStr::new("scan"),
        nx.as_os_str(),
        "-o".as_ref(),
        h5_rec.as_os_str(),
        "-q".as_ref(),
        "-v".as_ref(),
    ]);
    let err = stderr(&out);
    assert!(err.contains("NXtomo"), "{err}");
    let shift = reported_shift(&err);
    assert!((shift - SHIFT).abs() <= 0.1, "centre {shift}: {err}");
    let a: ArrayD<f32> = read_npy(&tif_rec).unwrap();
    let b = read_h5_volume(&h5_rec);
    assert_eq!(a.shape(), b.shape());
    let diff = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    assert!(
        diff <= 1e-6,
        "NXtomo and TIFF reconstructions differ by {diff}"
    );
}

/// A 32-bit float TIFF slice `[x, y]` as rodl writes it (rows of y from the top).
fn read_tiff_slice(path: &Path) -> Vec<f32> {
    let mut d = tiff::decoder::Decoder::new(std::fs::File::open(path).unwrap()).unwrap();
    match d.read_image().unwrap() {
        tiff::decoder::DecodingResult::F32(v) => v,
        _ => panic!("{} is not float32", path.display()),
    }
}

#[test]
fn a_cone_scan_beyond_the_memory_limit_goes_out_of_core_and_equals_the_in_memory_one() {
    // Frames read as a cone beam (their values need not fit a cone's geometry: the
    // in-memory and the out-of-core scans are compared): 120 views of 40 × 16 pixels, whose
    // scan needs about 820 KB in memory.
    let dir = TempDir::new("scan-cone-ooc");
    let (nu, nv) = (40, 16);
    std::fs::create_dir_all(dir.path("proj")).unwrap();
    for a in 0..VIEWS {
        let t = a as f64 * 3.0 * std::f64::consts::PI / VIEWS as f64;
        let px = common::image16(nu, nv, |u, v| {
            let r = (u as f64 - 20.0 - 6.0 * t.cos()) / 7.0;
            let z = (v as f64 - 7.5) / 6.0;
            I0 * (-0.8 * (-(r * r) - z * z).exp()).exp() + DARK
        });
        common::write_tiff16(&dir.path(&format!("proj/p_{a:04}.tif")), nu, nv, &[px]);
    }
    let flats: Vec<_> = (0..3)
        .map(|_| common::image16(nu, nv, |_, _| I0 + DARK))
        .collect();
    common::write_tiff16(&dir.path("flat.tif"), nu, nv, &flats);
    let darks: Vec<_> = (0..2)
        .map(|_| common::image16(nu, nv, |_, _| DARK))
        .collect();
    common::write_tiff16(&dir.path("dark.tif"), nu, nv, &darks);
    let mut base = tiff_args(&dir);
    let k = base.iter().position(|a| a == "--angles").unwrap();
    base[k + 1] = "0:360".into();
    base.extend(
        [
            "--source-distance",
            "400",
            "--detector-distance",
            "100",
            "--centre",
            "3.4",
            "--stripes",
            "5",
            "--threads",
            "1",
        ]
        .map(String::from),
    );
    let run = |extra: &[&str], out: &Path| {
        let mut a = base.clone();
        a.extend(extra.iter().map(|s| s.to_string()));
        a.extend(["-o".to_string(), out.to_string_lossy().into_owned()]);
        rodl(&a)
    };
    let ok = |o: std::process::Output| {
        assert!(o.status.success(), "{}", stderr(&o));
        stderr(&o)
    };
    let (whole, whole_y) = (dir.path("whole.npy"), dir.path("whole_y.npy"));
    ok(run(
        &["-q", "--data-out", &whole_y.to_string_lossy()],
        &whole,
    ));
    let (ooc, ooc_y) = (dir.path("ooc.npy"), dir.path("ooc_y.npy"));
    let err = ok(run(
        &[
            "-v",
            "--memory",
            "600K",
            "--data-out",
            &ooc_y.to_string_lossy(),
        ],
        &ooc,
    ));
    assert!(err.contains("out of core"), "{err}");
    assert!(err.contains("2 slabs of at most 10 rows"), "{err}");
    let (a, b): (ArrayD<f32>, ArrayD<f32>) = (read_npy(&whole).unwrap(), read_npy(&ooc).unwrap());
    let (ya, yb): (ArrayD<f32>, ArrayD<f32>) =
        (read_npy(&whole_y).unwrap(), read_npy(&ooc_y).unwrap());
    let max_abs = |x: &ArrayD<f32>| x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let diff = |x: &ArrayD<f32>, y: &ArrayD<f32>| {
        assert_eq!(x.shape(), y.shape());
        x.iter()
            .zip(y)
            .fold(0.0f32, |m, (p, q)| m.max((p - q).abs()))
            / max_abs(x)
    };
    let (dy, dx) = (diff(&ya, &yb), diff(&a, &b));
    eprintln!("out of core against in memory: line integrals {dy:.2e}, volume {dx:.2e} (relative to the largest value)");
    assert!(dy <= 1e-6, "line integrals differ by {dy}");
    assert!(dx <= 1e-5, "volumes differ by {dx}");
    // Nothing left over but the outputs (the temporary line integrals removed).
    let listing = dir.listing();
    assert!(
        !listing.iter().any(|n| n.contains("rodl-tmp")),
        "{listing:?}"
    );

    // A TIFF stack: slices equal to the .npy volume's (without --data-out, through a
    // temporary file of line integrals).
    let slices = dir.path("slices");
    ok(run(&["-q", "--memory", "600K"], &slices));
    for z in 0..nv {
        let s = read_tiff_slice(&slices.join(format!("slice_{z:04}.tif")));
        let want: Vec<f32> = (0..nu)
            .rev()
            .flat_map(|y| (0..nu).map(move |x| (x, y)))
            .map(|(x, y)| b[[x, y, z]])
            .collect();
        let d = s
            .iter()
            .zip(&want)
            .fold(0.0f32, |m, (p, q)| m.max((p - q).abs()));
        assert!(d <= 1e-6 * max_abs(&b), "slice {z} differs by {d}");
    }
    #[cfg(feature = "hdf5")]
    {
        let h5 = dir.path("ooc.h5");
        ok(run(&["-q", "--memory", "600K"], &h5));
        assert_eq!(read_h5_volume(&h5), b);
    }
    let listing = dir.listing();
    assert!(
        !listing.iter().any(|n| n.contains("rodl-tmp")),
        "{listing:?}"
    );

    // What this path cannot do is refused before any output, with the reason.
    for (extra, needle) in [
        (
            &[
                "--memory",
                "600K",
                "--algorithm",
                "sirt",
                "--iterations",
                "2",
            ][..],
            "fbp (FDK) only",
        ),
        (
            &["--memory", "600K", "--tiff-depth", "uint16"][..],
            "--tiff-depth float32",
        ),
        (&["--memory", "20K"][..], "more than the memory budget"),
    ] {
        let out = if extra.contains(&"--tiff-depth") {
            dir.path("never")
        } else {
            dir.path("never.npy")
        };
        let o = run(extra, &out);
        let msg = stderr(&o);
        assert!(
            !o.status.success() && msg.contains(needle),
            "{extra:?}: {msg}"
        );
        assert_eq!(msg.trim().lines().count(), 1, "{msg}");
        assert!(!out.exists());
    }
    let listing = dir.listing();
    assert!(
        !listing.iter().any(|n| n.contains("rodl-tmp")),
        "{listing:?}"
    );
}
