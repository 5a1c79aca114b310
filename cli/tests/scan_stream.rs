//! `rodl scan` of a parallel beam by slabs of rows: a scan larger than a small `--memory`
//! budget streams in slabs and equals the one-slab result (to rounding) in `.npy`, TIFF and
//! HDF5 output; a failure in a later slab leaves no output; and (feature `mpi`) `mpirun -np 2`
//! and `-np 3` equal one process, for TIFF and NXtomo input, a rank with no slab included.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Output};

use ndarray::{Array3, ArrayD};
use ndarray_npy::read_npy;
use rodl::tomo::{Backend, RayTransform, TomoSpec};
use rodl::Operator;
use tiff::encoder::{colortype, TiffEncoder};

mod common;

#[cfg(feature = "mpi")]
use common::mpirun;
use common::{rodl, rodl_ok, stderr, TempDir};

/// Detector columns, rows and views.
const NU: usize = 32;
const NV: usize = 12;
const VIEWS: usize = 120;
/// The rotation axis' offset from the detector's centre (pixels of 1 mm).
const SHIFT: f64 = 2.3;
const I0: f64 = 20000.0;
const DARK: f64 = 100.0;

fn truth_spec() -> TomoSpec {
    common::parallel_scan_spec(NU, NV, VIEWS, SHIFT)
}

/// Counts `[view, u, v]` of a ball whose radius changes with the height (slices differ).
fn counts() -> Array3<f64> {
    let spec = truth_spec();
    let space = spec.volume.space::<f64>().unwrap();
    let h = NU as f64 / 2.0;
    let ball = ArrayD::from_shape_fn(vec![NU, NU, NV], |i| {
        let (x, y) = (-h + i[0] as f64 + 0.5 - 3.0, -h + i[1] as f64 + 0.5 + 2.0);
        let r = 5.0 + i[2] as f64 * 0.5;
        if x * x + y * y <= r * r {
            0.02
        } else {
            0.0
        }
    });
    let ray = RayTransform::new(space, spec.geometry.build().unwrap(), Backend::default()).unwrap();
    let y = ray.apply(&ray.domain().element(ball).unwrap()).unwrap();
    let y: Array3<f64> = y.into_array().unwrap().into_dimensionality().unwrap();
    y.mapv(|l| (I0 * (-l).exp() + DARK).round())
}

/// A frame `[u, v]` as the image a detector stores.
fn image(frame: impl Fn(usize, usize) -> f64) -> Vec<u16> {
    common::image16(NU, NV, frame)
}

fn write_tiff(path: &Path, frames: &[Vec<u16>]) {
    common::write_tiff16(path, NU, NV, frames)
}

/// The scan as TIFF: `proj/` (a file per view), `flat.tif`, `dark.tif`.
fn write_tiff_scan(dir: &TempDir) {
    let c = counts();
    std::fs::create_dir_all(dir.path("proj")).unwrap();
    for a in 0..VIEWS {
        write_tiff(
            &dir.path(&format!("proj/p_{a:04}.tif")),
            &[image(|u, v| c[[a, u, v]])],
        );
    }
    write_tiff(&dir.path("flat.tif"), &vec![image(|_, _| I0 + DARK); 3]);
    write_tiff(&dir.path("dark.tif"), &vec![image(|_, _| DARK); 2]);
}

/// The same scan as an NXtomo file written by h5py (`None` without python3's h5py).
#[cfg_attr(not(all(feature = "hdf5", feature = "mpi")), allow(dead_code))]
fn write_nxtomo(dir: &TempDir) -> Option<std::path::PathBuf> {
    let c = counts();
    // [frame, image row, column] as the file stores it.
    let proj = Array3::from_shape_fn([VIEWS, NV, NU], |(a, row, u)| c[[a, u, NV - 1 - row]]);
    ndarray_npy::write_npy(dir.path("proj.npy"), &proj).unwrap();
    let nx = dir.path("scan.nxs");
    let script = format!(
        r#"
import sys, numpy as np
try:
    import h5py
except ImportError:
    sys.exit(3)
nu, nv, n = {NU}, {NV}, {VIEWS}
proj = np.load(sys.argv[2]).astype(np.uint16)
flat = np.full((3, nv, nu), {I0} + {DARK}, np.uint16)
dark = np.full((2, nv, nu), {DARK}, np.uint16)
data = np.concatenate([dark, flat, proj])
keys = np.array([2] * 2 + [1] * 3 + [0] * n, np.int32)
angles = np.concatenate([np.zeros(5), np.arange(n) * 180.0 / n])
with h5py.File(sys.argv[1], "w") as f:
    e = f.create_group("entry0000"); e.attrs["NX_class"] = "NXentry"; e["definition"] = "NXtomo"
    i = e.create_group("instrument"); i.attrs["NX_class"] = "NXinstrument"
    d = i.create_group("detector"); d.attrs["NX_class"] = "NXdetector"
    d.create_dataset("data", data=data, chunks=(1, 4, nu)); d["image_key"] = keys
    for k in ("x_pixel_size", "y_pixel_size"):
        d[k] = 1e-3; d[k].attrs["units"] = "m"
    s = e.create_group("sample"); s.attrs["NX_class"] = "NXsample"
    s["rotation_angle"] = angles; s["rotation_angle"].attrs["units"] = "degree"
"#
    );
    let status = Command::new("python3")
        .arg("-c")
        .arg(&script)
        .arg(&nx)
        .arg(dir.path("proj.npy"))
        .status();
    match status {
        Ok(s) if s.success() => Some(nx),
        Ok(s) if s.code() == Some(3) => {
            eprintln!("python3 has no h5py: the NXtomo case is not run");
            None
        }
        other => panic!("writing the NXtomo file: {other:?}"),
    }
}

/// `rodl scan` of the TIFF scan in `dir` with zingers and stripes (their halo and per-row
/// steps), the centre found.
fn tiff_args(dir: &TempDir) -> Vec<String> {
    let p = |n: &str| dir.path(n).to_string_lossy().into_owned();
    let mut a: Vec<String> = vec!["scan".into(), p("proj")];
    a.extend(
        [
            "--flats",
            &p("flat.tif"),
            "--darks",
            &p("dark.tif"),
            "--angles",
            "0:180",
            "--pixel-size",
            "1",
            "--zingers",
            "2000",
            "--stripes",
            "3",
            "-q",
        ]
        .map(String::from),
    );
    a
}

fn with(mut args: Vec<String>, more: &[&str]) -> Vec<String> {
    args.extend(more.iter().map(|s| s.to_string()));
    args
}

fn max_diff(a: &ArrayD<f32>, b: &ArrayD<f32>) -> f64 {
    assert_eq!(a.shape(), b.shape());
    a.iter()
        .zip(b.iter())
        .map(|(x, y)| (*x as f64 - *y as f64).abs())
        .fold(0.0, f64::max)
}

fn scale(a: &ArrayD<f32>) -> f64 {
    a.iter().map(|v| v.abs() as f64).fold(0.0, f64::max)
}

/// The TIFF stack `dir/slice_*.tif` as a volume `[x, y, z]`.
fn read_stack(dir: &Path) -> ArrayD<f32> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tif"))
        .collect();
    files.sort();
    assert_eq!(files.len(), NV, "{files:?}");
    let mut x = ArrayD::<f32>::zeros(vec![NU, NU, NV]);
    for (z, f) in files.iter().enumerate() {
        let mut d = tiff::decoder::Decoder::new(File::open(f).unwrap()).unwrap();
        let tiff::decoder::DecodingResult::F32(v) = d.read_image().unwrap() else {
            panic!("{} is not float32", f.display());
        };
        for (r, line) in v.chunks(NU).enumerate() {
            for (ix, val) in line.iter().enumerate() {
                x[[ix, NU - 1 - r, z]] = *val;
            }
        }
    }
    x
}

/// The number of slabs `rodl scan -v` reports.
fn slab_count(out: &Output) -> usize {
    let err = stderr(out);
    let line = err
        .lines()
        .find(|l| l.contains(" slabs of at most "))
        .unwrap_or_else(|| panic!("no slab line in {err}"));
    line.trim_start_matches("rodl: ")
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_scan_over_the_memory_budget_streams_in_slabs_as_the_whole() {
    let dir = TempDir::new("stream");
    write_tiff_scan(&dir);
    let whole = dir.path("whole.npy");
    let out = rodl_ok(&with(
        tiff_args(&dir),
        &["-v", "-o", whole.to_str().unwrap()],
    ));
    assert_eq!(slab_count(&out), 1, "{}", stderr(&out));
    let reference: ArrayD<f32> = read_npy(&whole).unwrap();
    let tol = 1e-5 * scale(&reference);

    // A budget of a few rows: the scan streams (it would not fit whole).
    let streamed = dir.path("streamed.npy");
    let out = rodl_ok(&with(
        tiff_args(&dir),
        &["-v", "--memory", "300000", "-o", streamed.to_str().unwrap()],
    ));
    assert!(slab_count(&out) >= 3, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("overlap: slabs"), "{err}");
    let x: ArrayD<f32> = read_npy(&streamed).unwrap();
    let d = max_diff(&x, &reference);
    eprintln!(
        "npy by slabs: max difference {d:.2e} (scale {:.2e})",
        scale(&reference)
    );
    assert!(d <= tol, "npy by slabs differs by {d}");

    // A TIFF stack in uneven slabs (5, 5, 2 rows).
    let stack = dir.path("stack");
    let out = rodl_ok(&with(
        tiff_args(&dir),
        &["-v", "--slab-rows", "5", "-o", stack.to_str().unwrap()],
    ));
    assert_eq!(slab_count(&out), 3);
    let d = max_diff(&read_stack(&stack), &reference);
    assert!(d <= tol, "TIFF by slabs differs by {d}");

    #[cfg(feature = "hdf5")]
    {
        let h5 = dir.path("rec.h5");
        rodl_ok(&with(
            tiff_args(&dir),
            &["--slab-rows", "4", "-o", h5.to_str().unwrap()],
        ));
        let f = hdf5::File::open(&h5).unwrap();
        let zyx = f
            .dataset("/entry/reconstruction/data")
            .unwrap()
            .read_dyn::<f32>()
            .unwrap();
        assert_eq!(zyx.shape(), &[NV, NU, NU]);
        let x = zyx
            .permuted_axes(vec![2, 1, 0])
            .as_standard_layout()
            .to_owned();
        let d = max_diff(&x, &reference);
        assert!(d <= tol, "HDF5 by slabs differs by {d}");
    }

    // A budget that holds not even one row: a clear error, no output.
    let none = dir.path("none.npy");
    let out = rodl(&with(
        tiff_args(&dir),
        &["--memory", "1K", "-o", none.to_str().unwrap()],
    ));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("memory budget"), "{}", stderr(&out));
    assert!(!none.exists());
}

#[test]
fn a_failure_in_a_later_slab_leaves_no_output() {
    let dir = TempDir::new("stream-fail");
    // Transmission frames in float32 with an infinity in the top row of one view: the last slab
    // fails after the first ones were written.
    std::fs::create_dir_all(dir.path("proj")).unwrap();
    let c = counts();
    for a in 0..VIEWS {
        let mut f = File::create(dir.path(&format!("proj/p_{a:04}.tif"))).unwrap();
        let mut enc = TiffEncoder::new(&mut f).unwrap();
        let mut px = Vec::with_capacity(NU * NV);
        for row in 0..NV {
            for u in 0..NU {
                let t = ((c[[a, u, NV - 1 - row]] - DARK) / I0) as f32;
                px.push(if a == 7 && row == 0 && u == 3 {
                    f32::INFINITY
                } else {
                    t
                });
            }
        }
        enc.write_image::<colortype::Gray32Float>(NU as u32, NV as u32, &px)
            .unwrap();
    }
    let p = |n: &str| dir.path(n).to_string_lossy().into_owned();
    for out in ["rec.npy", "stack", "rec.h5"] {
        if out.ends_with(".h5") && !cfg!(feature = "hdf5") {
            continue;
        }
        let o = rodl(&[
            "scan",
            &p("proj"),
            "--flat-field",
            "false",
            "--angles",
            "0:180",
            "--pixel-size",
            "1",
            "--centre",
            "off",
            "--slab-rows",
            "4",
            "-q",
            "-o",
            &p(out),
        ]);
        assert!(!o.status.success(), "{out}");
        let err = stderr(&o);
        assert!(
            err.contains("not finite") && err.contains("rows 8..12"),
            "{err}"
        );
        let left: Vec<String> = dir.listing().into_iter().filter(|n| n != "proj").collect();
        if out == "stack" {
            let files = std::fs::read_dir(dir.path("stack"))
                .map(|d| d.count())
                .unwrap_or(0);
            assert_eq!(files, 0, "the stack kept files");
            let _ = std::fs::remove_dir(dir.path("stack"));
        } else {
            assert!(left.is_empty(), "{out}: left {left:?}");
        }
    }
}

#[cfg(feature = "mpi")]
#[test]
fn mpirun_scan_equals_one_process() {
    let dir = TempDir::new("stream-mpi");
    write_tiff_scan(&dir);
    let whole = dir.path("whole.npy");
    rodl_ok(&with(tiff_args(&dir), &["-o", whole.to_str().unwrap()]));
    let reference: ArrayD<f32> = read_npy(&whole).unwrap();
    let tol = 1e-5 * scale(&reference);
    // 2 ranks of 2 slabs each (npy by byte ranges); 3 ranks of 6-row slabs: 2 slabs, rank 2
    // none (TIFF); 3 ranks of 1 slab each (HDF5 output, gathered).
    let cases: &[(usize, &[&str], &str)] = &[
        (2, &["--slab-rows", "3"], "r2.npy"),
        (3, &["--slab-rows", "6"], "r3"),
        (3, &[], "r3.npy"),
        #[cfg(feature = "hdf5")]
        (3, &[], "r3.h5"),
    ];
    for (ranks, extra, out) in cases {
        let target = dir.path(out);
        let mut args = with(tiff_args(&dir), extra);
        args.extend(["-o".into(), target.to_string_lossy().into_owned()]);
        let (code, err) = mpirun(*ranks, &args);
        assert_eq!(code, Some(0), "-np {ranks} {out}: {err}");
        let x: ArrayD<f32> = if out.ends_with(".npy") {
            read_npy(&target).unwrap()
        } else if out.ends_with(".h5") {
            #[cfg(feature = "hdf5")]
            {
                let f = hdf5::File::open(&target).unwrap();
                let zyx = f
                    .dataset("/entry/reconstruction/data")
                    .unwrap()
                    .read_dyn::<f32>()
                    .unwrap();
                zyx.permuted_axes(vec![2, 1, 0])
                    .as_standard_layout()
                    .to_owned()
            }
            #[cfg(not(feature = "hdf5"))]
            unreachable!()
        } else {
            read_stack(&target)
        };
        let d = max_diff(&x, &reference);
        eprintln!(
            "-np {ranks} {out}: max difference {d:.2e} (scale {:.2e})",
            scale(&reference)
        );
        assert!(d <= tol, "-np {ranks} {out}: differs by {d}");
        let temps: Vec<String> = dir
            .listing()
            .into_iter()
            .filter(|n| n.contains("rodl-tmp"))
            .collect();
        assert!(temps.is_empty(), "temporary files left: {temps:?}");
    }

    #[cfg(feature = "hdf5")]
    if let Some(nx) = write_nxtomo(&dir) {
        let nx = nx.to_string_lossy().into_owned();
        let base = |out: &str| -> Vec<String> {
            [
                "scan",
                &nx,
                "--zingers",
                "2000",
                "--stripes",
                "3",
                "-q",
                "-o",
                out,
            ]
            .map(String::from)
            .to_vec()
        };
        let one = dir.path("nx1.npy");
        rodl_ok(&base(one.to_str().unwrap()));
        let reference: ArrayD<f32> = read_npy(&one).unwrap();
        for ranks in [2, 3] {
            let target = dir.path(&format!("nx{ranks}.npy"));
            let (code, err) = mpirun(ranks, &base(target.to_str().unwrap()));
            assert_eq!(code, Some(0), "NXtomo -np {ranks}: {err}");
            let x: ArrayD<f32> = read_npy(&target).unwrap();
            let d = max_diff(&x, &reference);
            eprintln!("NXtomo -np {ranks}: max difference {d:.2e}");
            assert!(d <= tol, "NXtomo -np {ranks}: differs by {d}");
        }
    }

    // A failure on the ranks ends them all with the rank named, without a hang, and leaves
    // no output: a cone beam is not split.
    let target = dir.path("cone.npy");
    let args = with(
        tiff_args(&dir),
        &[
            "--beam",
            "cone",
            "--source-distance",
            "100",
            "--detector-distance",
            "10",
            "-o",
            target.to_str().unwrap(),
        ],
    );
    let (code, err) = mpirun(2, &args);
    assert_ne!(code, Some(0));
    assert!(err.contains("cone") && err.contains("rank"), "{err}");
    assert!(!target.exists());
}
