//! `mpirun -np N rodl reconstruct --partition views|slabs` (feature `mpi`; needs Debian's
//! `openmpi-bin`): the reconstruction of 2 and 3 ranks equals one process's, and a bad input
//! ends every rank with a message naming the rank, not a hang.

use ndarray::ArrayD;
use ndarray_npy::read_npy;

mod common;

use common::{mpirun, rodl_ok as rodl, TempDir};

const GEOMETRY: &str = r#"{"volume": {"min_pt": [-1, -1, -1], "max_pt": [1, 1, 1], "shape": [12, 12, 10]},
 "geometry": {"kind": "cone", "angles": {"min": 0, "max": 6.283185307179586, "count": 16},
   "detector": {"min": [-2, -1.6], "max": [2, 1.6], "shape": [18, 14]},
   "src_radius": 4, "det_radius": 4}}"#;

#[test]
fn ranks_reconstruct_as_one_process() {
    let dir = TempDir::new("mpi");
    let g = dir.path("g.json");
    std::fs::write(&g, GEOMETRY).unwrap();
    let path = |n: &str| dir.path(n).to_string_lossy().into_owned();
    let (g, x, y) = (path("g.json"), path("x.npy"), path("y.npy"));
    rodl(&["phantom", "-g", &g, "-o", &x]);
    rodl(&["project", "-g", &g, "-i", &x, "-o", &y]);
    for algorithm in ["cgls", "sirt"] {
        let reference = path(&format!("{algorithm}.npy"));
        rodl(&[
            "reconstruct",
            "-g",
            &g,
            "-i",
            &y,
            "-o",
            &reference,
            "-a",
            algorithm,
            "-n",
            "6",
            "-q",
        ]);
        let want: ArrayD<f32> = read_npy(&reference).unwrap();
        let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
        for partition in ["views", "slabs"] {
            for ranks in [2, 3] {
                let out = path(&format!("{algorithm}-{partition}-{ranks}.npy"));
                let args = [
                    "reconstruct",
                    "-g",
                    &g,
                    "-i",
                    &y,
                    "-o",
                    &out,
                    "-a",
                    algorithm,
                    "-n",
                    "6",
                    "--partition",
                    partition,
                ];
                let (code, err) = mpirun(ranks, &args);
                assert_eq!(code, Some(0), "{args:?}: {err}");
                let got: ArrayD<f32> = read_npy(&out).unwrap();
                assert_eq!(got.shape(), want.shape());
                let diff = got
                    .iter()
                    .zip(want.iter())
                    .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
                // f32 rounding of sums taken in another order.
                assert!(
                    diff <= 1e-5 * scale,
                    "{algorithm} {partition} {ranks}: {diff} of {scale}"
                );
            }
        }
    }
}

#[test]
fn a_bad_input_ends_every_rank_with_its_rank() {
    let dir = TempDir::new("mpi-bad");
    let g = dir.path("g.json");
    std::fs::write(&g, GEOMETRY).unwrap();
    let path = |n: &str| dir.path(n).to_string_lossy().into_owned();
    let (g, x) = (path("g.json"), path("x.npy"));
    rodl(&["phantom", "-g", &g, "-o", &x]);
    // The volume given as the data: every rank finds the wrong shape.
    let args = [
        "reconstruct",
        "-g",
        &g,
        "-i",
        &x,
        "-o",
        &path("out.npy"),
        "-a",
        "cgls",
        "-n",
        "2",
        "--partition",
        "slabs",
    ];
    let (code, err) = mpirun(2, &args);
    assert_ne!(code, Some(0));
    assert!(err.contains("rodl: error: rank 0: "), "{err}");
    assert!(err.contains("has shape [12, 12, 10]"), "{err}");
    assert!(!dir.path("out.npy").exists());
}

#[test]
fn ranks_filter_and_back_project_their_views() {
    let dir = TempDir::new("mpi-fbp");
    let g = dir.path("g.json");
    std::fs::write(&g, GEOMETRY).unwrap();
    let path = |n: &str| dir.path(n).to_string_lossy().into_owned();
    let (g, x, y, reference) = (path("g.json"), path("x.npy"), path("y.npy"), path("f.npy"));
    rodl(&["phantom", "-g", &g, "-o", &x]);
    rodl(&["project", "-g", &g, "-i", &x, "-o", &y]);
    rodl(&["fbp", "-g", &g, "-i", &y, "-o", &reference]);
    let want: ArrayD<f32> = read_npy(&reference).unwrap();
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    for ranks in [2, 3] {
        let out = path(&format!("f{ranks}.npy"));
        let args = [
            "fbp",
            "-g",
            &g,
            "-i",
            &y,
            "-o",
            &out,
            "--partition",
            "views",
        ];
        let (code, err) = mpirun(ranks, &args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        let got: ArrayD<f32> = read_npy(&out).unwrap();
        let diff = got
            .iter()
            .zip(want.iter())
            .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(
            diff <= 1e-5 * scale,
            "fbp on {ranks} ranks: {diff} of {scale}"
        );
    }
    let (code, err) = mpirun(
        2,
        &[
            "fbp",
            "-g",
            &g,
            "-i",
            &y,
            "-o",
            &path("s.npy"),
            "--partition",
            "slabs",
        ],
    );
    assert_ne!(code, Some(0));
    assert!(
        err.contains("rank 0: --partition slabs") && err.contains("use --partition views"),
        "{err}"
    );
}

/// A parallel beam whose detector rows are finer than the volume's slices and reach beyond
/// them.
const PARALLEL: &str = r#"{"volume": {"min_pt": [-1, -1, -1], "max_pt": [1, 1, 1], "shape": [12, 12, 10]},
 "geometry": {"kind": "parallel3d", "angles": {"min": 0, "max": 3.141592653589793, "count": 20},
   "detector": {"min": [-2, -1.6], "max": [2, 1.6], "shape": [18, 14]}}}"#;

#[test]
fn ranks_filter_and_back_project_their_slabs() {
    let dir = TempDir::new("mpi-fbp-slabs");
    let g = dir.path("g.json");
    std::fs::write(&g, PARALLEL).unwrap();
    let path = |n: &str| dir.path(n).to_string_lossy().into_owned();
    let (g, x, y, reference) = (path("g.json"), path("x.npy"), path("y.npy"), path("f.npy"));
    rodl(&["phantom", "-g", &g, "-o", &x]);
    rodl(&["project", "-g", &g, "-i", &x, "-o", &y]);
    rodl(&["fbp", "-g", &g, "-i", &y, "-o", &reference]);
    let want: ArrayD<f32> = read_npy(&reference).unwrap();
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    for ranks in [2, 3] {
        let out = path(&format!("s{ranks}.npy"));
        let args = [
            "fbp",
            "-g",
            &g,
            "-i",
            &y,
            "-o",
            &out,
            "--partition",
            "slabs",
        ];
        let (code, err) = mpirun(ranks, &args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        let got: ArrayD<f32> = read_npy(&out).unwrap();
        assert_eq!(got.shape(), want.shape());
        let diff = got
            .iter()
            .zip(want.iter())
            .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
        eprintln!("fbp by slabs on {ranks} ranks: max difference {diff:.2e} of {scale:.2e}");
        assert!(
            diff <= 1e-5 * scale,
            "fbp by slabs on {ranks} ranks: {diff} of {scale}"
        );
    }
}
