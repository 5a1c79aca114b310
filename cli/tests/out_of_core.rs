//! `project`, `backproject` and `fbp` larger than the memory limit (the tool's
//! `out_of_core` module): with `RODL_MEMORY_LIMIT` below what the input and output take, the
//! commands run in pieces from memory-mapped files and give the in-memory results; a limit too
//! small for any piece is one error line and no output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ndarray::ArrayD;
use ndarray_npy::{read_npy, write_npy};

mod common;

use common::{random, rel, stderr, TempDir};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs `rodl` with `RODL_MEMORY_LIMIT` set to `limit` (or unset).
fn rodl(args: &[&str], limit: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rodl"));
    cmd.args(args).env_remove("RODL_MEMORY_LIMIT");
    if let Some(l) = limit {
        cmd.env("RODL_MEMORY_LIMIT", l);
    }
    cmd.output().expect("cannot start the rodl binary")
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "rodl failed: {}", stderr(&out));
    stderr(&out)
}

/// Asserts a failure with exit status `code` and one line on stderr containing `text`.
fn fails(out: &Output, code: i32, text: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    assert!(err.starts_with("rodl: error: "), "{err}");
    assert!(err.contains(text), "{err:?} lacks {text:?}");
}

/// A geometry file in `dir`.
fn geometry(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A 64³ cone-beam scan with a small detector: the volume (1 MB in float32) is most of the
/// memory, so a limit of 700 kB puts it in pieces.
const CONE: &str = r#"{"volume": {"min_pt": [-8, -8, -8], "max_pt": [8, 8, 8], "shape": [64, 64, 64]},
  "geometry": {"kind": "cone", "angles": {"min": 0, "max": 6.283185307179586, "count": 20},
  "src_radius": 40, "det_radius": 20, "detector": {"min": [-24, -18], "max": [24, 18], "shape": [20, 16]}}}"#;

/// A 2D fan-beam scan whose 4000 views of 200 cells (6.4 MB in float64) are most of the
/// memory: a limit of 3 MB puts them in view groups.
const FAN: &str = r#"{"volume": {"min_pt": [-1, -1], "max_pt": [1, 1], "shape": [96, 96]},
  "geometry": {"kind": "fanflat", "angles": {"min": 0, "max": 6.283185307179586, "count": 4000},
  "src_radius": 4, "det_radius": 2, "detector": {"min": [-3], "max": [3], "shape": [200]}}}"#;

/// A 3D parallel-beam half turn (FBP with per-view Parker weights) whose 400 views of 24 × 24
/// cells (1.8 MB in float64) are most of the memory: a limit of 2 MB puts them in view groups.
const PAR3D: &str = r#"{"volume": {"min_pt": [-1, -1, -1], "max_pt": [1, 1, 1], "shape": [32, 32, 32]},
  "geometry": {"kind": "parallel3d", "angles": {"min": 0, "max": 3.141592653589793, "count": 400},
  "detector": {"min": [-1.8, -1.8], "max": [1.8, 1.8], "shape": [24, 24]}}}"#;

/// Runs `command` on `input` in memory and, under `limit`, in pieces (checked to be so);
/// returns both outputs.
fn both<T: ndarray_npy::ReadableElement>(
    dir: &TempDir,
    command: &str,
    g: &Path,
    input: &Path,
    limit: &str,
) -> (ArrayD<T>, ArrayD<T>) {
    let (mem, ooc) = (dir.path("mem.npy"), dir.path("ooc.npy"));
    let note = ok(rodl(
        &[command, "-g", s(g), "-i", s(input), "-o", s(&mem), "-v"],
        None,
    ));
    assert!(!note.contains("out of core"), "{note}");
    let note = ok(rodl(
        &[command, "-g", s(g), "-i", s(input), "-o", s(&ooc), "-v"],
        Some(limit),
    ));
    assert!(note.contains("out of core, in "), "{note}");
    assert!(
        !note.contains(" 1 slab × 1 view group"),
        "one piece: {note}"
    );
    println!("{command}: {}", note.trim());
    (read_npy(&mem).unwrap(), read_npy(&ooc).unwrap())
}

/// float64: the pieces give the in-memory results to rounding, for all three commands, with
/// the volume in slabs (cone) and the data in view groups (fan, parallel 3D).
#[test]
fn pieces_match_the_in_memory_results_in_float64() {
    let dir = TempDir::new("f64");
    let all: &[&str] = &["project", "backproject", "fbp"];
    let cases = [
        (
            "cone",
            CONE,
            "1200K",
            [64, 64, 64].as_slice(),
            [20, 20, 16].as_slice(),
            all,
        ),
        ("fan", FAN, "3M", &[96, 96], &[4000, 200], &all[..2]),
        (
            "parallel 3D",
            PAR3D,
            "2M",
            &[32, 32, 32],
            &[400, 24, 24],
            &all[1..],
        ),
    ];
    for (name, text, limit, vol, data, commands) in cases {
        let g = geometry(&dir, "g.json", text);
        let (x, y) = (dir.path("x.npy"), dir.path("y.npy"));
        write_npy(&x, &random(vol, 1)).unwrap();
        write_npy(&y, &random(data, 2)).unwrap();
        for &command in commands {
            let input = if command == "project" { &x } else { &y };
            let (mem, ooc) = both::<f64>(&dir, command, &g, input, limit);
            let err = rel(&ooc, &mem);
            println!("{name} {command}: relative difference {err:.1e}");
            assert!(err <= 1e-12, "{name} {command}: {err:e}");
        }
    }
}

/// float32: the pieces' results differ from the in-memory ones only by float32 rounding (the
/// in-memory ones are themselves some 1e-6 from the float64 model: the pieces are as close).
#[test]
fn pieces_match_the_in_memory_results_in_float32() {
    let dir = TempDir::new("f32");
    let g = geometry(&dir, "cone.json", CONE);
    let (x, y, y64) = (dir.path("x.npy"), dir.path("y.npy"), dir.path("y64.npy"));
    write_npy(&x, &random(&[64, 64, 64], 3).mapv(|v| v as f32)).unwrap();
    let data = random(&[20, 20, 16], 4);
    write_npy(&y, &data.mapv(|v| v as f32)).unwrap();
    write_npy(&y64, &data).unwrap();
    let (mem, ooc) = both::<f32>(&dir, "project", &g, &x, "700K");
    let err = rel(&ooc, &mem);
    println!("cone project float32: relative difference {err:.1e}");
    assert!(err <= 1e-6, "{err:e}");
    for command in ["backproject", "fbp"] {
        let (mem, ooc) = both::<f32>(&dir, command, &g, &y, "700K");
        let reference = dir.path("ref.npy");
        ok(rodl(
            &[command, "-g", s(&g), "-i", s(&y64), "-o", s(&reference)],
            None,
        ));
        let reference: ArrayD<f64> = read_npy(&reference).unwrap();
        let to64 = |a: &ArrayD<f32>| a.mapv(f64::from);
        let (e_mem, e_ooc) = (rel(&to64(&mem), &reference), rel(&to64(&ooc), &reference));
        let err = rel(&ooc, &mem);
        println!(
            "cone {command} float32: relative difference {err:.1e}; from float64: in memory \
             {e_mem:.1e}, in pieces {e_ooc:.1e}"
        );
        assert!(err <= 1e-5, "{command}: {err:e}");
        assert!(
            e_ooc <= 1.5 * e_mem + 1e-7,
            "{command}: {e_ooc:e} vs {e_mem:e}"
        );
    }
}

/// `--out-of-core` forces the pieces (here a single piece) without a limit.
#[test]
fn out_of_core_can_be_forced() {
    let dir = TempDir::new("forced");
    let g = geometry(&dir, "cone.json", CONE);
    let x = dir.path("x.npy");
    write_npy(&x, &random(&[64, 64, 64], 5)).unwrap();
    let (a, b) = (dir.path("a.npy"), dir.path("b.npy"));
    ok(rodl(
        &["project", "-g", s(&g), "-i", s(&x), "-o", s(&a)],
        None,
    ));
    let note = ok(rodl(
        &[
            "project",
            "-g",
            s(&g),
            "-i",
            s(&x),
            "-o",
            s(&b),
            "--out-of-core",
            "-v",
        ],
        None,
    ));
    assert!(note.contains("out of core"), "{note}");
    let (a, b): (ArrayD<f64>, ArrayD<f64>) = (read_npy(&a).unwrap(), read_npy(&b).unwrap());
    assert!(rel(&b, &a) <= 1e-12);
}

/// A limit too small for one slice and one view: one line, status 1, no output, no
/// temporary file; `--png` (in memory only) and inputs that cannot be mapped are refused the
/// same way.
#[test]
fn what_cannot_run_in_pieces_is_one_error_line_and_no_output() {
    let dir = TempDir::new("small");
    let g = geometry(&dir, "cone.json", CONE);
    let (x, y) = (dir.path("x.npy"), dir.path("y.npy"));
    write_npy(&x, &random(&[64, 64, 64], 6).mapv(|v| v as f32)).unwrap();
    write_npy(&y, &random(&[20, 20, 16], 7).mapv(|v| v as f32)).unwrap();
    let out = dir.path("out.npy");
    let before = dir.listing();
    for (command, input) in [("project", &x), ("backproject", &y), ("fbp", &y)] {
        let res = rodl(
            &[command, "-g", s(&g), "-i", s(input), "-o", s(&out)],
            Some("100K"),
        );
        fails(
            &res,
            1,
            "even in pieces, the smallest piece of the ray transform",
        );
        assert!(
            stderr(&res).contains("more than the memory limit"),
            "{}",
            stderr(&res)
        );
        assert_eq!(dir.listing(), before, "{command} left files");
    }
    let png = dir.path("x.png");
    let res = rodl(
        &[
            "fbp",
            "-g",
            s(&g),
            "-i",
            s(&y),
            "-o",
            s(&out),
            "--png",
            s(&png),
            "--out-of-core",
        ],
        None,
    );
    fails(&res, 2, "--png needs the reconstruction in memory");
    let res = rodl(
        &[
            "backproject",
            "-g",
            s(&g),
            "-i",
            s(&y),
            "-o",
            "/dev/null",
            "--out-of-core",
        ],
        None,
    );
    fails(&res, 1, "is written in place into a regular file");
    // A Fortran-order input: fine in memory, refused in pieces.
    let fortran = dir.path("f.npy");
    let mut bytes = npy_header("{'descr': '<f4', 'fortran_order': True, 'shape': (20, 20, 16), }");
    bytes.extend(std::iter::repeat_n(0u8, 20 * 20 * 16 * 4));
    std::fs::write(&fortran, bytes).unwrap();
    ok(rodl(
        &["backproject", "-g", s(&g), "-i", s(&fortran), "-o", s(&out)],
        None,
    ));
    std::fs::remove_file(&out).unwrap();
    let res = rodl(
        &[
            "backproject",
            "-g",
            s(&g),
            "-i",
            s(&fortran),
            "-o",
            s(&out),
            "--out-of-core",
        ],
        None,
    );
    fails(&res, 1, "needs C order");
    assert!(!out.exists());
    // A non-finite input value: refused before any work, as in memory.
    let mut bad = random(&[20, 20, 16], 8).mapv(|v| v as f32);
    bad[[3, 4, 5]] = f32::NAN;
    write_npy(&y, &bad).unwrap();
    let res = rodl(
        &[
            "backproject",
            "-g",
            s(&g),
            "-i",
            s(&y),
            "-o",
            s(&out),
            "--out-of-core",
        ],
        None,
    );
    fails(
        &res,
        1,
        "1 non-finite value (NaN or Inf), the first at index [3, 4, 5]",
    );
    assert!(!out.exists());
}

/// The bytes of an `.npy` header (version 1) with this dictionary.
fn npy_header(dict: &str) -> Vec<u8> {
    let mut header = dict.as_bytes().to_vec();
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(&header);
    out
}

/// The peak of the anonymous resident memory (`RssAnon`: not the mapped files) of `rodl`
/// with `args` under `limit`, sampled every few milliseconds, in bytes.
#[cfg(target_os = "linux")]
fn peak_anon(args: &[&str], limit: Option<&str>) -> u64 {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rodl"));
    cmd.args(args).env_remove("RODL_MEMORY_LIMIT");
    if let Some(l) = limit {
        cmd.env("RODL_MEMORY_LIMIT", l);
    }
    let mut child = cmd
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("cannot start the rodl binary");
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Ok(text) = std::fs::read_to_string(&status) {
            let kib = text
                .lines()
                .find_map(|l| l.strip_prefix("RssAnon:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
            peak = peak.max(kib.unwrap_or(0) * 1024);
        }
        if let Some(st) = child.try_wait().unwrap() {
            assert!(st.success(), "rodl {args:?} failed");
            return peak;
        }
        std::thread::sleep(std::time::Duration::from_millis(3));
    }
}

/// In pieces, what the process allocates (its anonymous memory; the mapped files are the page
/// cache's) stays under the limit, give or take the process's own few MiB (thread stacks and
/// allocator arenas, which the limit does not count in memory either), where the in-memory run
/// holds the whole volume.
#[cfg(target_os = "linux")]
#[test]
fn resident_memory_stays_under_the_limit() {
    let dir = TempDir::new("rss");
    let g = geometry(
        &dir,
        "g.json",
        r#"{"volume": {"min_pt": [-1, -1, -1], "max_pt": [1, 1, 1], "shape": [160, 160, 160]},
  "geometry": {"kind": "cone", "angles": {"min": 0, "max": 6.283185307179586, "count": 40},
  "src_radius": 4, "det_radius": 2, "detector": {"min": [-2.5, -1.8], "max": [2.5, 1.8], "shape": [64, 64]}}}"#,
    );
    let (x, y, out) = (dir.path("x.npy"), dir.path("y.npy"), dir.path("out.npy"));
    write_npy(&x, &random(&[160, 160, 160], 9).mapv(|v| v as f32)).unwrap();
    write_npy(&y, &random(&[40, 64, 64], 10).mapv(|v| v as f32)).unwrap();
    let limit = 8u64 << 20;
    let whole = peak_anon(&["project", "-g", s(&g), "-i", s(&x), "-o", s(&out)], None);
    assert!(whole > 16 << 20, "in memory: {whole}");
    for (command, input) in [("project", &x), ("backproject", &y), ("fbp", &y)] {
        let peak = peak_anon(
            &[command, "-g", s(&g), "-i", s(input), "-o", s(&out)],
            Some("8M"),
        );
        println!("{command} under 8 MiB: peak anonymous memory {peak} bytes");
        assert!(peak <= limit + (3 << 20), "{command}: {peak} bytes");
    }
}

/// SIGINT or SIGTERM during a run in pieces removes the output's temporary file (the mapped
/// one): no file is left behind.
#[test]
fn a_signal_during_pieces_leaves_no_file() {
    let dir = TempDir::new("signal");
    let g = geometry(
        &dir,
        "g.json",
        r#"{"volume": {"min_pt": [-1, -1, -1], "max_pt": [1, 1, 1], "shape": [160, 160, 160]},
  "geometry": {"kind": "cone", "angles": {"min": 0, "max": 6.283185307179586, "count": 400},
  "src_radius": 4, "det_radius": 2, "detector": {"min": [-2.5, -1.8], "max": [2.5, 1.8], "shape": [64, 64]}}}"#,
    );
    let (y, out) = (dir.path("y.npy"), dir.path("out.npy"));
    write_npy(&y, &random(&[400, 64, 64], 11).mapv(|v| v as f32)).unwrap();
    let before = dir.listing();
    for signal in ["-INT", "-TERM"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rodl"))
            .args(["backproject", "-g", s(&g), "-i", s(&y), "-o", s(&out)])
            .env("RODL_MEMORY_LIMIT", "8M")
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        while dir.listing().len() == before.len() {
            assert!(
                child.try_wait().unwrap().is_none(),
                "rodl ended before the signal"
            );
            assert!(start.elapsed().as_secs() < 20, "no temporary file appeared");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // Into the pieces: the temporary file is mapped and being written.
        std::thread::sleep(std::time::Duration::from_millis(200));
        let pid = child.id().to_string();
        assert!(Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap()
            .success());
        let status = child.wait().unwrap();
        assert!(!status.success(), "rodl ended before the signal");
        assert_eq!(dir.listing(), before, "after {signal}");
    }
}

/// `project --noise` in pieces draws the in-memory path's noise: the same seed gives the same
/// noisy data (to the rounding of the clean projections), Gaussian and Poisson.
#[test]
fn noise_in_pieces_is_the_noise_in_memory() {
    let dir = TempDir::new("noise");
    let g = geometry(&dir, "cone.json", CONE);
    let x = dir.path("x.npy");
    for (dtype, tol) in [("f64", 1e-12), ("f32", 1e-6)] {
        let vol = random(&[64, 64, 64], 12).mapv(|v| 0.05 * v);
        if dtype == "f64" {
            write_npy(&x, &vol).unwrap();
        } else {
            write_npy(&x, &vol.mapv(|v| v as f32)).unwrap();
        }
        for noise in ["gaussian:0.1", "poisson:1e3"] {
            let (mem, ooc) = (dir.path("mem.npy"), dir.path("ooc.npy"));
            let args = |out| {
                let a = [s(&g), s(&x), noise, s(out)];
                [
                    "project", "-g", a[0], "-i", a[1], "--noise", a[2], "--seed", "7", "-v", "-o",
                    a[3],
                ]
            };
            ok(rodl(&args(&mem), None));
            let limit = if dtype == "f64" { "1200K" } else { "700K" };
            let note = ok(rodl(&args(&ooc), Some(limit)));
            assert!(
                note.contains("out of core") && note.contains("(seed 7)"),
                "{note}"
            );
            let err = if dtype == "f64" {
                let (a, b): (ArrayD<f64>, ArrayD<f64>) =
                    (read_npy(&mem).unwrap(), read_npy(&ooc).unwrap());
                rel(&b, &a)
            } else {
                let (a, b): (ArrayD<f32>, ArrayD<f32>) =
                    (read_npy(&mem).unwrap(), read_npy(&ooc).unwrap());
                rel(&b, &a)
            };
            println!("{dtype} {noise}: relative difference {err:.1e}");
            assert!(err <= tol, "{dtype} {noise}: {err:e}");
        }
    }
}
