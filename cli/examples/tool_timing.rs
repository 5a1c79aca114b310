//! Wall time of `rodl project`, `rodl backproject` and `rodl fbp` on host `.npy` files against
//! the time this machine takes to read the input file and to write a file of the output's size
//! (with `fsync`, as the tool does) — issue #34, item 4: "wall time within 1.3× of reading and
//! writing the files".
//!
//! ```text
//! cargo build --release -p rodl-cli [--features cuda] --examples
//! target/release/examples/tool_timing [--size 512] [--views 512] [--kind cone|parallel3d] \
//!     [--device cuda:0] [--runs 3] [--dir DIR] [--rodl PATH]
//! ```
//!
//! Defaults: a cone beam with a 128³ volume [-1, 1]³, 128 views of 192 × 128 pixels (the
//! benches' `cone_N`: `--size 512` is `cone_512`), the CPU, 3 runs (the best of each is
//! printed), a temporary folder under the system's (give `--dir` on the disk to measure; a
//! tmpfs such as /dev/shm measures the tool without the disk), and the `rodl` binary next to the
//! example's (target/release/rodl). The files of `DIR` are kept and reused.
//!
//! Each line prints the best read time (the input read into fresh memory, from the page cache
//! like the tool's read), the best write time (a file of the output's size written with one
//! large write, `fsync`ed and renamed), their rates, the tool's best wall time (the process from
//! start to exit) with its ratio to read + write, and the tool's `-v` stages of that run.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Command-line options.
struct Options {
    size: usize,
    views: usize,
    kind: String,
    device: String,
    runs: usize,
    dir: Option<PathBuf>,
    rodl: PathBuf,
}

fn options() -> Options {
    let mut o = Options {
        size: 128,
        views: 0,
        kind: "cone".into(),
        device: "cpu".into(),
        runs: 3,
        dir: None,
        rodl: std::env::current_exe()
            .ok()
            .and_then(|p| Some(p.parent()?.parent()?.join("rodl")))
            .unwrap_or_else(|| PathBuf::from("rodl")),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--size" => o.size = value().parse().expect("--size N"),
            "--views" => o.views = value().parse().expect("--views N"),
            "--kind" => o.kind = value(),
            "--device" => o.device = value(),
            "--runs" => o.runs = value().parse().expect("--runs N"),
            "--dir" => o.dir = Some(PathBuf::from(value())),
            "--rodl" => o.rodl = PathBuf::from(value()),
            other => panic!("unknown option {other} (see the example's docs)"),
        }
    }
    if o.views == 0 {
        o.views = o.size;
    }
    o.runs = o.runs.max(1);
    o
}

/// The geometry file: `cone_N` of the benches, or a parallel beam with the same detector.
fn geometry(o: &Options) -> String {
    let n = o.size;
    let (kind, radii) = match o.kind.as_str() {
        "cone" => ("cone", r#", "src_radius": 4, "det_radius": 4"#),
        "parallel3d" => ("parallel3d", ""),
        k => panic!("--kind {k}: cone or parallel3d"),
    };
    format!(
        r#"{{"volume": {{"min_pt": [-1, -1, -1], "max_pt": [1, 1, 1], "shape": [{n}, {n}, {n}]}},
  "geometry": {{"kind": "{kind}", "angles": {{"min": 0, "max": 6.283185307179586, "count": {}}},
    "detector": {{"min": [-2.8284, -2.8859], "max": [2.8284, 2.8859], "shape": [{}, {n}]}}{radii}}}}}"#,
        o.views,
        3 * n / 2
    )
}

/// Runs `rodl args…`, panicking with its stderr when it fails; returns the wall time and stderr.
fn rodl(o: &Options, args: &[&str]) -> (f64, String) {
    let t = Instant::now();
    let out = Command::new(&o.rodl)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", o.rodl.display()));
    let wall = t.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "rodl {args:?} failed:\n{err}");
    (wall, err)
}

/// Seconds to read `path` into fresh memory with one sequential read.
fn read_time(path: &Path) -> f64 {
    let t = Instant::now();
    let mut f = File::open(path).expect("the input opens");
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).expect("the input reads");
    let s = t.elapsed().as_secs_f64();
    assert!(!buf.is_empty());
    s
}

/// Seconds to write `bytes` bytes as a new file next to `like` (one large write, fsync, rename
/// onto a scratch name), as the tool writes its output.
fn write_time(like: &Path, bytes: usize) -> f64 {
    let data = vec![1u8; bytes];
    let tmp = like.with_extension("write-test.tmp");
    let dst = like.with_extension("write-test");
    let t = Instant::now();
    let mut f = File::create(&tmp).expect("the scratch file is created");
    f.write_all(&data).expect("the scratch file is written");
    f.sync_all().expect("the scratch file is synced");
    drop(f);
    std::fs::rename(&tmp, &dst).expect("the scratch file is renamed");
    let s = t.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&dst);
    s
}

fn size(path: &Path) -> usize {
    std::fs::metadata(path).map_or(0, |m| m.len() as usize)
}

fn main() {
    let o = options();
    let keep = o.dir.is_some();
    let dir = o.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("rodl-tool-timing-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir).expect("the folder is created");
    let tag = format!("{}_{}_{}", o.kind, o.size, o.views);
    let g = dir.join(format!("{tag}.json"));
    let vol = dir.join(format!("{tag}_volume.npy"));
    let data = dir.join(format!("{tag}_data.npy"));
    let out = dir.join(format!("{tag}_out.npy"));
    std::fs::write(&g, geometry(&o)).expect("the geometry is written");
    let (g_s, vol_s, data_s, out_s) = (
        g.to_str().unwrap(),
        vol.to_str().unwrap(),
        data.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let dev = o.device.as_str();
    if !vol.exists() {
        rodl(&o, &["phantom", "-g", g_s, "-o", vol_s]);
    }
    if !data.exists() {
        rodl(
            &o,
            &[
                "project", "-g", g_s, "-i", vol_s, "-o", data_s, "--device", dev,
            ],
        );
    }
    println!(
        "{} {}³ volume, {} views, {} ({}), best of {} runs, files in {}",
        o.kind,
        o.size,
        o.views,
        o.device,
        o.rodl.display(),
        o.runs,
        dir.display()
    );
    println!(
        "{:<12} {:>9} {:>9} {:>11} {:>11} {:>9} {:>7} {:>9} {:>7}  stages (-v) of the best run",
        "command", "in MB", "out MB", "read s", "write s", "wall s", "ratio", "new s", "ratio"
    );
    let cases: [(&str, &str, &Path); 3] = [
        ("project", vol_s, &data),
        ("backproject", data_s, &vol),
        ("fbp", data_s, &vol),
    ];
    for (cmd, input, out_like) in cases {
        let out_bytes = size(out_like);
        let in_bytes = size(Path::new(input));
        let mut read = f64::MAX;
        let mut write = f64::MAX;
        let mut best = (f64::MAX, String::new());
        let mut fresh = (f64::MAX, String::new());
        let args = [
            cmd, "-g", g_s, "-i", input, "-o", out_s, "--device", dev, "-v",
        ];
        for _ in 0..o.runs {
            read = read.min(read_time(Path::new(input)));
            write = write.min(write_time(&out, out_bytes));
            // Over the file just written (the old file is removed at the commit)...
            let (wall, err) = rodl(&o, &args);
            if wall < best.0 {
                best = (wall, err);
            }
            // ...and into a new file.
            std::fs::remove_file(&out).expect("remove the output");
            let (wall, err) = rodl(&o, &args);
            if wall < fresh.0 {
                fresh = (wall, err);
            }
        }
        println!(
            "{cmd:<12} {:>9.1} {:>9.1} {:>5.3} {:>4.1}G {:>5.3} {:>4.1}G {:>9.3} {:>7.2} {:>9.3} {:>7.2}  {}",
            in_bytes as f64 / 1e6,
            out_bytes as f64 / 1e6,
            read,
            in_bytes as f64 / 1e9 / read,
            write,
            out_bytes as f64 / 1e9 / write,
            best.0,
            best.0 / (read + write),
            fresh.0,
            fresh.0 / (read + write),
            describe(best.0, &best.1)
        );
        println!("{:<12} new file: {}", "", describe(fresh.0, &fresh.1));
    }
    let _ = std::fs::remove_file(&out);
    if !keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A run's stages (`-v`) and where the rest of its wall time `wall` went: the tool's total
/// runs from its `main` to its last stage, then come the outputs' commit (an old file removed)
/// and the drops until the end of `main`, then the process's exit (and, before its `main`, its
/// start).
fn describe(wall: f64, err: &str) -> String {
    let stages = err
        .lines()
        .find_map(|l| l.strip_prefix("rodl: stages: "))
        .unwrap_or("")
        .to_string();
    let total = stages
        .rsplit_once("(total ")
        .and_then(|(_, t)| t.strip_suffix(" s)"))
        .and_then(|t| t.parse::<f64>().ok());
    let end = err
        .lines()
        .find_map(|l| l.strip_prefix("rodl: end of main at "))
        .and_then(|t| t.strip_suffix(" s"))
        .and_then(|t| t.parse::<f64>().ok());
    let outside = match (total, end) {
        (Some(t), Some(e)) => format!(
            " [after the stages: commit and drops {:.3} s, process start and exit {:.3} s]",
            e - t,
            wall - e
        ),
        (Some(t), None) => format!(" [outside the stages {:.3} s]", wall - t),
        _ => String::new(),
    };
    format!("{stages}{outside}")
}
