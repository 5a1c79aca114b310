//! Disk-to-disk timing of `rodl scan` (issue #34, item 6): a parallel-beam scan of
//! `SIZE × ROWS` detector pixels and `VIEWS` projections (balls in closed form, 16-bit counts,
//! 10 flats and 5 darks) written as 16-bit TIFF frames and, in builds with the feature `hdf5`,
//! as an NXtomo file, then reconstructed by the tool (zingers, flat field, −log, stripes, the
//! centre, FBP) into a float32 TIFF stack (`--tiff-depth uint16`: 16 bit, which needs the
//! whole volume before its first slice and so is not streamed). Prints each stage's time
//! (from `rodl scan -v`: summed over the slabs, which overlap in time), the slab pipeline's
//! overlap — its wall time against read + write and preprocess + reconstruct, and the ratio
//! to the larger — and the time this machine takes to read the input files and to write a file
//! of the volume's size, for the target "wall time ≤ 1.2 × max(read + write, preprocess +
//! reconstruct)".
//!
//! ```text
//! cargo build --release -p rodl-cli [--features hdf5,cuda]
//! cargo run --release -p rodl-cli [--features hdf5] --example scan_timing -- \
//!     [--size 1024] [--rows 1024] [--views 900] [--device cuda:0] [--dir DIR] [--rodl PATH] \
//!     [--slab-rows N] [--memory BYTES] [--tiff-depth float32|uint16]
//! ```
//!
//! `--slab-rows` and `--memory` go to `rodl scan` (the slab size; default: as many rows as the
//! memory holds, so a scan that fits is one slab and nothing overlaps: give `--slab-rows` to
//! see the pipeline).
//!
//! Defaults: 256 × 256 pixels, 225 views, the CPU, a temporary folder under the system's, and
//! the `rodl` binary next to the example's (target/release/rodl). The scan files are kept in
//! `DIR` when it is given (and reused when they are there already).

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use tiff::encoder::{colortype, TiffEncoder};

/// Command-line options.
struct Options {
    size: usize,
    rows: usize,
    views: usize,
    device: String,
    dir: Option<PathBuf>,
    rodl: PathBuf,
    slab_rows: Option<String>,
    memory: Option<String>,
    tiff_depth: String,
}

fn options() -> Options {
    let mut o = Options {
        size: 256,
        rows: 0,
        views: 225,
        device: "cpu".into(),
        dir: None,
        rodl: std::env::current_exe()
            .ok()
            .and_then(|p| Some(p.parent()?.parent()?.join("rodl")))
            .unwrap_or_else(|| PathBuf::from("rodl")),
        slab_rows: None,
        memory: None,
        tiff_depth: "float32".into(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--size" => o.size = value().parse().expect("--size N"),
            "--rows" => o.rows = value().parse().expect("--rows N"),
            "--views" => o.views = value().parse().expect("--views N"),
            "--device" => o.device = value(),
            "--dir" => o.dir = Some(PathBuf::from(value())),
            "--rodl" => o.rodl = PathBuf::from(value()),
            "--slab-rows" => o.slab_rows = Some(value()),
            "--memory" => o.memory = Some(value()),
            "--tiff-depth" => o.tiff_depth = value(),
            other => panic!("unknown option {other} (see the example's docs)"),
        }
    }
    if o.rows == 0 {
        o.rows = o.size;
    }
    o
}

/// Detector counts of three balls (closed-form chords) at view `a`, as an image (rows from
/// the top), with the rotation axis 3.4 pixels off the detector's centre.
fn frame(o: &Options, a: usize) -> Vec<u16> {
    let (nu, nv) = (o.size as f64, o.rows as f64);
    let theta = std::f64::consts::PI * a as f64 / o.views as f64;
    let (s, c) = theta.sin_cos();
    let balls = [
        (0.0, 0.0, 0.0, 0.35 * nu, 0.4 / nu),
        (0.15 * nu, -0.1 * nu, 0.1 * nv, 0.08 * nu, 2.0 / nu),
        (-0.2 * nu, 0.12 * nu, -0.15 * nv, 0.05 * nu, 3.0 / nu),
    ];
    let mut px = Vec::with_capacity(o.size * o.rows);
    for row in 0..o.rows {
        let v = nv / 2.0 - row as f64 - 0.5;
        for col in 0..o.size {
            let u = col as f64 + 0.5 - nu / 2.0 + 3.4;
            let mut y = 0.0;
            for &(x0, y0, z0, r, mu) in &balls {
                let du = u - (x0 * c + y0 * s);
                let d2 = du * du + (v - z0) * (v - z0);
                if d2 < r * r {
                    y += 2.0 * mu * (r * r - d2).sqrt();
                }
            }
            px.push((100.0 + 20000.0 * (-y).exp()).round() as u16);
        }
    }
    px
}

fn write_tiff(path: &Path, o: &Options, frames: impl Iterator<Item = Vec<u16>>) {
    let mut f = BufWriter::new(File::create(path).unwrap());
    let mut enc = TiffEncoder::new(&mut f).unwrap();
    for px in frames {
        enc.write_image::<colortype::Gray16>(o.size as u32, o.rows as u32, &px)
            .unwrap();
    }
}

/// Writes the TIFF scan (proj/, flats.tif, darks.tif) unless it is there.
fn tiff_scan(dir: &Path, o: &Options) -> PathBuf {
    let proj = dir.join("proj");
    if proj.join(format!("p_{:05}.tif", o.views - 1)).exists() {
        return proj;
    }
    std::fs::create_dir_all(&proj).unwrap();
    for a in 0..o.views {
        write_tiff(
            &proj.join(format!("p_{a:05}.tif")),
            o,
            std::iter::once(frame(o, a)),
        );
    }
    let flat = vec![20100u16; o.size * o.rows];
    write_tiff(&dir.join("flats.tif"), o, (0..10).map(|_| flat.clone()));
    let dark = vec![100u16; o.size * o.rows];
    write_tiff(&dir.join("darks.tif"), o, (0..5).map(|_| dark.clone()));
    proj
}

/// Writes the NXtomo scan (5 darks, 10 flats, the projections) unless it is there.
#[cfg(feature = "hdf5")]
fn nxtomo_scan(dir: &Path, o: &Options) -> Option<PathBuf> {
    use ndarray::{s, Array1, Array3};
    let path = dir.join("scan.nx");
    if path.exists() {
        return Some(path);
    }
    let n = 15 + o.views;
    let f = hdf5::File::create(&path).unwrap();
    let e = f.create_group("entry0000").unwrap();
    let text = |loc: &hdf5::Location, name: &str, v: &str| {
        loc.new_attr::<hdf5::types::VarLenUnicode>()
            .create(name)
            .unwrap()
            .write_scalar(&v.parse::<hdf5::types::VarLenUnicode>().unwrap())
            .unwrap();
    };
    text(&e, "NX_class", "NXentry");
    e.new_dataset::<hdf5::types::VarLenUnicode>()
        .create("definition")
        .unwrap()
        .write_scalar(&"NXtomo".parse::<hdf5::types::VarLenUnicode>().unwrap())
        .unwrap();
    let det = e.create_group("instrument/detector").unwrap();
    let data = det
        .new_dataset::<u16>()
        .shape([n, o.rows, o.size])
        .chunk([1, o.rows, o.size])
        .create("data")
        .unwrap();
    let fill = |k: usize, v: u16| {
        let a = Array3::from_elem([1, o.rows, o.size], v);
        data.write_slice(&a, s![k..k + 1, .., ..]).unwrap();
    };
    (0..5).for_each(|k| fill(k, 100));
    (5..15).for_each(|k| fill(k, 20100));
    for a in 0..o.views {
        let px = Array3::from_shape_vec([1, o.rows, o.size], frame(o, a)).unwrap();
        data.write_slice(&px, s![15 + a..16 + a, .., ..]).unwrap();
    }
    let keys: Array1<i32> = (0..n)
        .map(|k| {
            if k < 5 {
                2
            } else if k < 15 {
                1
            } else {
                0
            }
        })
        .collect();
    det.new_dataset_builder()
        .with_data(&keys)
        .create("image_key_control")
        .unwrap();
    for name in ["x_pixel_size", "y_pixel_size"] {
        let d = det
            .new_dataset_builder()
            .with_data(&[1e-3])
            .create(name)
            .unwrap();
        text(&d, "units", "m");
    }
    let sample = e.create_group("sample").unwrap();
    let angles: Array1<f64> = (0..n)
        .map(|k| {
            if k < 15 {
                0.0
            } else {
                180.0 * (k - 15) as f64 / o.views as f64
            }
        })
        .collect();
    let d = sample
        .new_dataset_builder()
        .with_data(&angles)
        .create("rotation_angle")
        .unwrap();
    text(&d, "units", "degree");
    Some(path)
}

#[cfg(not(feature = "hdf5"))]
fn nxtomo_scan(_dir: &Path, _o: &Options) -> Option<PathBuf> {
    None
}

/// The bytes of every file under `path`, read once (the page cache may hold them: the
/// rate is the one `rodl scan` sees on a second run).
fn read_all(path: &Path) -> u64 {
    let mut n = 0;
    let mut buf = vec![0u8; 1 << 20];
    let mut visit = |p: &Path| {
        let mut f = File::open(p).unwrap();
        loop {
            let k = f.read(&mut buf).unwrap();
            if k == 0 {
                break;
            }
            n += k as u64;
        }
    };
    if path.is_dir() {
        for e in std::fs::read_dir(path).unwrap() {
            visit(&e.unwrap().path());
        }
    } else {
        visit(path);
    }
    n
}

/// Runs `rodl scan` and prints its stages, their shares and the disk's rates.
fn run(o: &Options, name: &str, input: &Path, extra: &[String], dir: &Path) {
    let out = dir.join(format!("rec_{name}"));
    let _ = std::fs::remove_dir_all(&out);
    let mut inputs = vec![input.to_path_buf()];
    for w in extra.windows(2) {
        if w[0] == "--flats" || w[0] == "--darks" {
            inputs.push(PathBuf::from(&w[1]));
        }
    }
    let t = Instant::now();
    let bytes_in: u64 = inputs.iter().map(|p| read_all(p)).sum();
    let read_s = t.elapsed().as_secs_f64();
    let bytes_per_voxel = if o.tiff_depth == "uint16" { 2 } else { 4 };
    let volume = (o.size * o.size * o.rows * bytes_per_voxel) as u64;
    let t = Instant::now();
    {
        let probe = dir.join("write_probe.bin");
        let mut f = File::create(&probe).unwrap();
        let chunk = vec![7u8; 1 << 20];
        let mut left = volume;
        while left > 0 {
            let k = left.min(chunk.len() as u64) as usize;
            f.write_all(&chunk[..k]).unwrap();
            left -= k as u64;
        }
        f.sync_all().unwrap();
        drop(f);
        std::fs::remove_file(probe).unwrap();
    }
    let write_s = t.elapsed().as_secs_f64();
    let mut pipeline: Vec<String> = Vec::new();
    for (k, v) in [("--slab-rows", &o.slab_rows), ("--memory", &o.memory)] {
        if let Some(v) = v {
            pipeline.extend([k.to_string(), v.clone()]);
        }
    }
    let t = Instant::now();
    let res = Command::new(&o.rodl)
        .arg("scan")
        .arg(input)
        .args(extra)
        .args(&pipeline)
        .args(["--tiff-depth", &o.tiff_depth, "--stripes", "5", "-q", "-v"])
        .args(["--device", &o.device, "-o"])
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", o.rodl.display()));
    let wall = t.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "rodl scan failed: {err}");
    let line = err.lines().rfind(|l| l.contains("(total ")).unwrap_or("");
    let slabs = err
        .lines()
        .find(|l| l.contains(" slabs of at most "))
        .map(|l| l.trim_start_matches("rodl: ").to_string())
        .unwrap_or_else(|| "in memory (not by slabs)".into());
    // "rodl: overlap: slabs W s wall, read + write IO s, preprocess + reconstruct WK s: …"
    let overlap: Vec<f64> = err
        .lines()
        .find(|l| l.contains("overlap: slabs"))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|w| w.parse::<f64>().ok())
                .collect()
        })
        .unwrap_or_default();
    let stages: Vec<(String, f64)> = line
        .rsplit_once(": ")
        .map(|(_, s)| s)
        .unwrap_or("")
        .split(", ")
        .filter_map(|p| {
            let mut w = p.split_whitespace();
            let name = w.next()?.to_string();
            let secs: f64 = w.next()?.parse().ok()?;
            Some((name, secs))
        })
        .collect();
    let get = |n: &str| {
        stages
            .iter()
            .filter(|(m, _)| m == n)
            .map(|(_, s)| s)
            .sum::<f64>()
    };
    println!(
        "{name}: {} views of {} × {} → {} × {} × {} on {}: wall {wall:.2} s",
        o.views, o.size, o.rows, o.size, o.size, o.rows, o.device
    );
    println!("  {slabs}");
    for (n, s) in &stages {
        println!("  {n:<11} {s:8.3} s  {:5.1} %", 100.0 * s / wall);
    }
    if let [pipe, io, work, ..] = overlap[..] {
        println!(
            "  overlap: the pipeline's wall {pipe:.3} s, read + write {io:.3} s, preprocess + \
             reconstruct {work:.3} s: {:.2} × the larger (no overlap: {:.2} ×)",
            pipe / io.max(work).max(1e-9),
            (io + work) / io.max(work).max(1e-9)
        );
    }
    let io = get("read") + get("write");
    let work = get("preprocess") + get("set-up") + get("compute");
    println!(
        "  disk: read {:.0} MB in {read_s:.3} s ({:.2} GB/s), write {:.0} MB in {write_s:.3} s \
         ({:.2} GB/s); the tool's read + write {io:.2} s, preprocess + set-up + compute \
         {work:.2} s; wall / max = {:.2} (target ≤ 1.2)",
        bytes_in as f64 / 1e6,
        bytes_in as f64 / 1e9 / read_s,
        volume as f64 / 1e6,
        volume as f64 / 1e9 / write_s,
        wall / io.max(work)
    );
    let _ = std::fs::remove_dir_all(&out);
}

fn main() {
    let o = options();
    let tmp;
    let dir = match &o.dir {
        Some(d) => {
            std::fs::create_dir_all(d).unwrap();
            d.clone()
        }
        None => {
            tmp = std::env::temp_dir().join(format!("rodl-scan-timing-{}", std::process::id()));
            std::fs::create_dir_all(&tmp).unwrap();
            tmp.clone()
        }
    };
    let t = Instant::now();
    let proj = tiff_scan(&dir, &o);
    let nx = nxtomo_scan(&dir, &o);
    println!(
        "scan files written in {:.1} s under {}",
        t.elapsed().as_secs_f64(),
        dir.display()
    );
    let s = |p: PathBuf| p.to_string_lossy().into_owned();
    let tiff_args = [
        "--flats".into(),
        s(dir.join("flats.tif")),
        "--darks".into(),
        s(dir.join("darks.tif")),
        "--angles".into(),
        "0:180".into(),
        "--pixel-size".into(),
        "1".into(),
    ];
    run(&o, "tiff", &proj, &tiff_args, &dir);
    match nx {
        Some(nx) => run(&o, "nxtomo", &nx, &[], &dir),
        None => println!("(NXtomo: build with --features hdf5)"),
    }
    if o.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
