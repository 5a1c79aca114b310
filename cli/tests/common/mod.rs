//! Helpers shared by the tool's integration tests.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir =
            std::env::temp_dir().join(format!("rodl-cli-{tag}-{}-{n}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// The names of the files in the directory, sorted.
    pub fn listing(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The standard error of a finished `rodl` process, as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs the `rodl` binary of this package with `args`.
pub fn rodl<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rodl"))
        .args(args)
        .output()
        .expect("cannot start the rodl binary")
}

/// Runs `rodl` and asserts success.
pub fn rodl_ok<S: AsRef<OsStr>>(args: &[S]) -> Output {
    let out = rodl(args);
    assert!(
        out.status.success(),
        "rodl failed ({}): {}",
        out.status,
        stderr(&out)
    );
    out
}

/// Runs `rodl args` under `mpirun -np ranks` (oversubscribed, allowed as root), its standard
/// output discarded; a job still running after two minutes is killed as a hang (a failed
/// test). Returns its exit code and standard error.
pub fn mpirun<S: AsRef<OsStr> + std::fmt::Debug>(
    ranks: usize,
    args: &[S],
) -> (Option<i32>, String) {
    let mut child = Command::new("mpirun")
        .args(["--oversubscribe", "--allow-run-as-root", "-np"])
        .arg(ranks.to_string())
        .arg(env!("CARGO_BIN_EXE_rodl"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun (Debian: apt-get install openmpi-bin)");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mpirun -np {ranks} rodl {args:?}: no end after 120 s (a hang)");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("output");
    (out.status.code(), stderr(&out))
}

/// A detector frame `[u, v]` of `nu × nv` pixels as the 16-bit image a detector stores
/// (rows × columns, row 0 the top: `v` up), rounded and clamped to the 16-bit range.
pub fn image16(nu: usize, nv: usize, frame: impl Fn(usize, usize) -> f64) -> Vec<u16> {
    let mut px = Vec::with_capacity(nu * nv);
    for row in 0..nv {
        for u in 0..nu {
            px.push(frame(u, nv - 1 - row).round().clamp(0.0, 65535.0) as u16);
        }
    }
    px
}

/// Writes `frames` (images of [`image16`]) as the pages of one 16-bit TIFF file.
pub fn write_tiff16(path: &std::path::Path, nu: usize, nv: usize, frames: &[Vec<u16>]) {
    use tiff::encoder::{colortype, TiffEncoder};
    let mut f = std::fs::File::create(path).unwrap();
    let mut enc = TiffEncoder::new(&mut f).unwrap();
    for px in frames {
        enc.write_image::<colortype::Gray16>(nu as u32, nv as u32, px)
            .unwrap();
    }
}

/// The geometry and default volume of a parallel-beam scan as `rodl scan` builds them from a
/// file of `views` projections of `nu × nv` pixels of 1 mm over [0°, 180°): angles at the
/// midpoints of equal cells, the detector shifted by `shift` mm along u, the volume `nu × nu ×
/// nv` cells of 1 mm.
pub fn parallel_scan_spec(nu: usize, nv: usize, views: usize, shift: f64) -> rodl::tomo::TomoSpec {
    let step = std::f64::consts::PI / views as f64;
    let (hu, hv) = (nu as f64 / 2.0, nv as f64 / 2.0);
    rodl::tomo::TomoSpec::from_json(&format!(
        r#"{{"volume": {{"min_pt": [-{hu}, -{hu}, -{hv}], "max_pt": [{hu}, {hu}, {hv}],
              "shape": [{nu}, {nu}, {nv}]}},
            "geometry": {{"kind": "parallel3d",
              "angles": {{"min": {}, "max": {}, "count": {views}}},
              "detector": {{"min": [-{hu}, -{hv}], "max": [{hu}, {hv}], "shape": [{nu}, {nv}]}},
              "det_offset": [{shift}, 0]}}}}"#,
        -0.5 * step,
        std::f64::consts::PI - 0.5 * step
    ))
    .unwrap()
}

/// `‖a − b‖ / ‖b‖`, accumulated in f64.
pub fn rel<T: Copy + Into<f64>>(a: &ndarray::ArrayD<T>, b: &ndarray::ArrayD<T>) -> f64 {
    assert_eq!(a.shape(), b.shape());
    let (mut d, mut n) = (0.0, 0.0);
    for (&x, &y) in a.iter().zip(b.iter()) {
        let (x, y): (f64, f64) = (x.into(), y.into());
        d += (x - y) * (x - y);
        n += y * y;
    }
    (d / n).sqrt()
}

/// An array of `shape` with values uniform in [0, 1) drawn from the seed `seed`.
pub fn random(shape: &[usize], seed: u64) -> ndarray::ArrayD<f64> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    ndarray::ArrayD::from_shape_simple_fn(shape, || rng.gen_range(0.0..1.0))
}
