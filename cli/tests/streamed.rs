//! `project`, `backproject` and `fbp` streamed by groups of views (the tool's `streamed`
//! module, `--view-groups N`; the back-projections' volume written by slabs): the
//! results equal the one-group (in-memory) path's to the rounding of the sum over the groups, for float32 and float64, 2D and 3D, with any number of
//! groups; data in Fortran order and outputs that cannot be written in place take the
//! in-memory path; non-finite values are one error line that names their index in the whole
//! array, and nothing is written.

use std::path::Path;
use std::process::Output;

use ndarray::ArrayD;
use ndarray_npy::{read_npy, write_npy};

mod common;

use common::{random, rel, rodl, stderr, TempDir};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "rodl failed: {}", stderr(&out));
    stderr(&out)
}

/// A 24³ cone beam of 30 views of 20 × 16 pixels.
const CONE: &str = r#"{"volume": {"min_pt": [-8, -8, -8], "max_pt": [8, 8, 8], "shape": [24, 24, 24]},
  "geometry": {"kind": "cone", "angles": {"min": 0, "max": 6.283185307179586, "count": 30},
  "src_radius": 40, "det_radius": 20, "detector": {"min": [-24, -18], "max": [24, 18], "shape": [20, 16]}}}"#;

/// A 2D fan beam (short scan: FBP's Parker weights span the groups) of 61 views of 50 cells.
const FAN: &str = r#"{"volume": {"min_pt": [-1, -1], "max_pt": [1, 1], "shape": [40, 40]},
  "geometry": {"kind": "fanflat", "angles": {"min": 0, "max": 4.3, "count": 61},
  "src_radius": 4, "det_radius": 2, "detector": {"min": [-3], "max": [3], "shape": [50]}}}"#;

/// Runs `command` (`project`, `backproject`, `fbp`) on `input` with `--view-groups groups`,
/// returning the output and the `-v` lines.
fn run<T: ndarray_npy::ReadableElement>(
    dir: &TempDir,
    command: &str,
    geometry: &Path,
    input: &Path,
    groups: usize,
) -> (ArrayD<T>, String) {
    let out = dir.path(&format!("{command}-{groups}.npy"));
    let g = groups.to_string();
    let args = [
        command,
        "-g",
        s(geometry),
        "-i",
        s(input),
        "-o",
        s(&out),
        "--view-groups",
        &g,
        "-v",
    ];
    let err = ok(rodl(&args));
    (read_npy(&out).unwrap(), err)
}

/// Every command with 2, 3 and 7 groups against one group, on `spec` in float32 and float64.
fn groups_equal_one_group(spec: &str, tag: &str, seed: u64) {
    let dir = TempDir::new(tag);
    let geometry = dir.path("g.json");
    std::fs::write(&geometry, spec).unwrap();
    let json: serde_json::Value = serde_json::from_str(spec).unwrap();
    let vol_shape: Vec<usize> = json["volume"]["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    let views = json["geometry"]["angles"]["count"].as_u64().unwrap() as usize;
    let mut data_shape = vec![views];
    data_shape.extend(
        json["geometry"]["detector"]["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize),
    );
    let volume = random(&vol_shape, seed);
    let data = random(&data_shape, seed + 1);
    let (v64, d64) = (dir.path("v64.npy"), dir.path("d64.npy"));
    let (v32, d32) = (dir.path("v32.npy"), dir.path("d32.npy"));
    write_npy(&v64, &volume).unwrap();
    write_npy(&d64, &data).unwrap();
    write_npy(&v32, &volume.mapv(|v| v as f32)).unwrap();
    write_npy(&d32, &data.mapv(|v| v as f32)).unwrap();
    for (command, input64, input32) in [
        ("project", &v64, &v32),
        ("backproject", &d64, &d32),
        ("fbp", &d64, &d32),
    ] {
        let (one64, _) = run::<f64>(&dir, command, &geometry, input64, 1);
        let (one32, _) = run::<f32>(&dir, command, &geometry, input32, 1);
        for groups in [2, 3, 7] {
            let (many64, err) = run::<f64>(&dir, command, &geometry, input64, groups);
            assert!(
                err.contains(&format!("{groups} view groups")),
                "{command}: {err}"
            );
            // The back-projections' set-up names its parts (the device's start and the
            // groups' ray transforms), and their compute the operators built beside it.
            if command != "project" {
                assert!(
                    err.contains(" s, the groups' ray transforms ")
                        && err.contains("(device ")
                        && err.contains("(the groups' operators built beside it in "),
                    "{command}: {err}"
                );
            }
            let (many32, _) = run::<f32>(&dir, command, &geometry, input32, groups);
            let (e64, e32) = (rel(&many64, &one64), rel(&many32, &one32));
            eprintln!("{tag} {command}, {groups} groups: float64 {e64:.1e}, float32 {e32:.1e}");
            assert!(
                e64 <= 1e-13 && e32 <= 1e-6,
                "{command} {groups}: {e64} {e32}"
            );
            // Back-projections into a file: the volume copied down and written by slabs.
            let slabs = command != "project";
            assert_eq!(
                err.contains(" slabs, download and write overlapped"),
                slabs,
                "{command}: {err}"
            );
        }
    }
}

#[test]
fn cone_beam_groups_equal_one_group() {
    groups_equal_one_group(CONE, "stream-cone", 11);
}

#[test]
fn fan_beam_short_scan_groups_equal_one_group() {
    groups_equal_one_group(FAN, "stream-fan", 21);
}

/// Fortran-order data are read whole (the in-memory path); `--view-groups 0` is a usage error;
/// a NaN in the data is one error line naming its index in the whole array, and no output is
/// left; a NaN in the volume fails the projection of the groups before any is committed.
#[test]
fn fortran_order_zero_groups_and_non_finite_values() {
    let dir = TempDir::new("stream-edge");
    let geometry = dir.path("g.json");
    std::fs::write(&geometry, CONE).unwrap();
    let data = random(&[30, 20, 16], 5).mapv(|v| v as f32);
    let c = dir.path("c.npy");
    write_npy(&c, &data).unwrap();
    let f = dir.path("f.npy");
    write_npy(&f, &data.t().as_standard_layout().t().to_owned()).unwrap();
    let (from_c, _) = run::<f32>(&dir, "backproject", &geometry, &c, 3);
    let (from_f, err) = run::<f32>(&dir, "backproject", &geometry, &f, 3);
    assert!(!err.contains("view groups"), "{err}");
    assert!(rel(&from_f, &from_c) <= 1e-6);

    let out = dir.path("x.npy");
    let zero = rodl(&[
        "fbp",
        "-g",
        s(&geometry),
        "-i",
        s(&c),
        "-o",
        s(&out),
        "--view-groups",
        "0",
    ]);
    assert_eq!(zero.status.code(), Some(2), "{}", stderr(&zero));
    assert!(stderr(&zero).contains("--view-groups"));

    let mut bad = data.clone();
    bad[[23, 4, 5]] = f32::NAN;
    let b = dir.path("bad.npy");
    write_npy(&b, &bad).unwrap();
    // `command` on `input` in `groups` groups fails in one line that contains `needle`, and
    // leaves no output.
    let fails = |command: &str, input: &Path, groups: &str, needle: &str| {
        let o = rodl(&[
            command,
            "-g",
            s(&geometry),
            "-i",
            s(input),
            "-o",
            s(&out),
            "--view-groups",
            groups,
        ]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err}");
        assert!(!out.exists());
    };
    for command in ["backproject", "fbp"] {
        fails(command, &b, "4", "[23, 4, 5]");
    }
    // Finite data whose back-projection overflows float32 near the centre (all ones give up
    // to 41.6 there): the check of the slabs stops at the first one with an infinity and names
    // the same first index in the whole volume as the one-group path; one line, no output.
    let huge = b.with_file_name("huge.npy");
    write_npy(&huge, &data.mapv(|_| 1e37f32)).unwrap();
    let index = |err: String| err[err.find("index [").unwrap()..].to_string();
    let one = rodl(&[
        "backproject",
        "-g",
        s(&geometry),
        "-i",
        s(&huge),
        "-o",
        s(&out),
        "--view-groups",
        "1",
    ]);
    let whole = index(stderr(&one));
    assert!(!whole.starts_with("index [0, "), "{whole}");
    fails("backproject", &huge, "3", &whole);
    let mut vol = random(&[24, 24, 24], 6).mapv(|v| v as f32);
    vol[[12, 12, 12]] = f32::INFINITY;
    let v = dir.path("vol.npy");
    write_npy(&v, &vol).unwrap();
    let o = rodl(&[
        "project",
        "-g",
        s(&geometry),
        "-i",
        s(&v),
        "-o",
        s(&out),
        "--view-groups",
        "4",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!out.exists());
    let left: Vec<String> = dir
        .listing()
        .into_iter()
        .filter(|n| n.starts_with('.') || n.contains("tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

/// Over a file-size limit (`ulimit -f`) the volume's write by slabs fails in one line naming
/// the error, and neither the output nor its temporary file is left.
#[cfg(unix)]
#[test]
fn a_file_size_limit_stops_the_slabs_cleanly() {
    let dir = TempDir::new("stream-fsize");
    let geometry = dir.path("g.json");
    std::fs::write(&geometry, CONE).unwrap();
    let y = dir.path("y.npy");
    write_npy(&y, &random(&[30, 20, 16], 8).mapv(|v| v as f32)).unwrap();
    let out = dir.path("x.npy");
    for command in ["backproject", "fbp"] {
        let o = std::process::Command::new("sh")
            .arg("-c")
            .arg("ulimit -f 40 && exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_rodl"))
            .args([command, "-g", s(&geometry), "-i", s(&y), "-o", s(&out)])
            .args(["--view-groups", "3"])
            .output()
            .expect("cannot start sh");
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{command}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("File too large"), "{err}");
        assert!(!out.exists());
        assert_eq!(dir.listing(), ["g.json", "y.npy"], "{command}");
    }
}
