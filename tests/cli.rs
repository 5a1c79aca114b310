//! The `rodl` command-line tool, run as a process on the ODL reference cases (tests/data/odl):
//! results identical to the library's, ODL agreement, precision handling, and clean one-line
//! failures that leave no output file behind.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use ndarray::ArrayD;
use ndarray_npy::{read_npy, write_npy};
use rodl::tomo::{Backend, RayTransform, TomoSpec};
use rodl::{LinearOperator, Operator, Scalar};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/odl")
        .join(name)
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
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

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// The names of the files in the directory, sorted.
    fn listing(&self) -> Vec<String> {
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

fn rodl<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rodl"))
        .args(args)
        .output()
        .expect("cannot start the rodl binary")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `rodl` and asserts success.
fn rodl_ok<S: AsRef<OsStr>>(args: &[S]) -> Output {
    let out = rodl(args);
    assert!(
        out.status.success(),
        "rodl failed ({}): {}",
        out.status,
        stderr(&out)
    );
    out
}

/// Asserts a clean failure: non-zero exit, exactly one line `rodl: error: …` on stderr that
/// contains `needle`, no panic, `output` absent, and no temporary file left in `dir`.
fn assert_clean_failure(
    out: &Output,
    output: &Path,
    dir: &TempDir,
    before: &[String],
    needle: &str,
) {
    let err = stderr(out);
    assert!(!out.status.success(), "rodl succeeded, stderr: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    assert!(
        err.ends_with('\n') && err.trim_end_matches('\n').lines().count() == 1,
        "stderr is not exactly one line: {err:?}"
    );
    assert!(
        err.starts_with("rodl: error: "),
        "unexpected stderr: {err:?}"
    );
    assert!(
        err.contains(needle),
        "stderr does not mention {needle:?}: {err:?}"
    );
    assert!(!output.exists(), "{} was left behind", output.display());
    assert_eq!(dir.listing(), before, "files were left behind");
}

/// The library's result: `A x` (forward) or `A* y` (adjoint) in precision `T`.
fn library<T: Scalar>(case: &str, input: ArrayD<T>, forward: bool, backend: Backend) -> ArrayD<T> {
    let spec = TomoSpec::from_file(data(&format!("{case}.json"))).unwrap();
    let space = spec.volume.space::<T>().unwrap();
    let ray = RayTransform::new(space, spec.geometry.build().unwrap(), backend).unwrap();
    let out = if forward {
        ray.apply(&ray.domain().element(input).unwrap()).unwrap()
    } else {
        let adj = ray.adjoint().unwrap();
        adj.apply(&ray.range().element(input).unwrap()).unwrap()
    };
    out.into_array().unwrap()
}

fn rel_l2(a: &ArrayD<f32>, b: &ArrayD<f32>) -> f64 {
    assert_eq!(a.shape(), b.shape());
    let num: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
    let den: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    (num / den).sqrt()
}

/// Projects `CASE_image.npy` and back-projects `CASE_y.npy` with the binary; returns the
/// relative L2 errors against ODL's sinogram and back-projection after checking that both
/// results are identical to the library's.
fn cli_case(case: &str, extra: &[&str], backend: Backend) -> (f64, f64) {
    let dir = TempDir::new(case);
    let geometry = data(&format!("{case}.json"));
    let (sino_path, adj_path) = (dir.path("sino.npy"), dir.path("adj.npy"));
    let mut args: Vec<&OsStr> = vec![
        OsStr::new("project"),
        OsStr::new("--geometry"),
        geometry.as_os_str(),
        OsStr::new("--input"),
    ];
    let image_path = data(&format!("{case}_image.npy"));
    args.extend([
        image_path.as_os_str(),
        OsStr::new("--output"),
        sino_path.as_os_str(),
    ]);
    args.extend(extra.iter().map(OsStr::new));
    rodl_ok(&args);

    let y_path = data(&format!("{case}_y.npy"));
    args[0] = OsStr::new("backproject");
    args[4] = y_path.as_os_str();
    args[6] = adj_path.as_os_str();
    rodl_ok(&args);
    assert_eq!(dir.listing(), ["adj.npy", "sino.npy"]);

    let image: ArrayD<f32> = read_npy(data(&format!("{case}_image.npy"))).unwrap();
    let y: ArrayD<f32> = read_npy(data(&format!("{case}_y.npy"))).unwrap();
    let sino: ArrayD<f32> = read_npy(&sino_path).unwrap();
    let adj: ArrayD<f32> = read_npy(&adj_path).unwrap();
    assert_eq!(
        sino,
        library(case, image, true, backend.clone()),
        "{case}: forward"
    );
    assert_eq!(adj, library(case, y, false, backend), "{case}: adjoint");

    let sino_odl: ArrayD<f32> = read_npy(data(&format!("{case}_sino.npy"))).unwrap();
    let adj_odl: ArrayD<f32> = read_npy(data(&format!("{case}_adj.npy"))).unwrap();
    let (f, a) = (rel_l2(&sino, &sino_odl), rel_l2(&adj, &adj_odl));
    eprintln!("{case}: forward rel L2 vs ODL {f:.3e}, adjoint {a:.3e}");
    (f, a)
}

#[test]
fn parallel2d_matches_library_and_odl() {
    let (f, a) = cli_case("par2d_64", &[], Backend::default());
    assert!(f <= 1e-4, "forward vs ODL: {f}");
    assert!(a <= 1e-4, "adjoint vs ODL: {a}");
}

#[test]
fn fanflat_matches_library_and_odl() {
    // ODL/ASTRA uses a line-length model here; see tests/tomo_odl_reference.rs.
    let (f, _) = cli_case("fan2d_64", &[], Backend::default());
    assert!(f <= 5e-2, "forward vs ODL: {f}");
}

#[test]
fn cone_matches_library_and_odl() {
    let (f, _) = cli_case("cone3d_32", &[], Backend::default());
    assert!(f <= 2e-2, "forward vs ODL: {f}");
}

#[test]
fn threads_option_is_used() {
    let (f, a) = cli_case("par2d_64", &["--threads", "2"], Backend::cpu_threads(2));
    assert!(f <= 1e-4 && a <= 1e-4, "forward {f}, adjoint {a}");
}

#[test]
fn float64_in_gives_float64_out() {
    let dir = TempDir::new("f64");
    let image: ArrayD<f32> = read_npy(data("par2d_64_image.npy")).unwrap();
    let image64 = image.mapv(f64::from);
    let input = dir.path("image64.npy");
    write_npy(&input, &image64).unwrap();
    let (sino_path, adj_path) = (dir.path("sino64.npy"), dir.path("adj64.npy"));
    let geometry = data("par2d_64.json");
    rodl_ok(&[
        OsStr::new("project"),
        OsStr::new("-g"),
        geometry.as_os_str(),
        OsStr::new("-i"),
        input.as_os_str(),
        OsStr::new("-o"),
        sino_path.as_os_str(),
    ]);
    rodl_ok(&[
        OsStr::new("backproject"),
        OsStr::new("-g"),
        geometry.as_os_str(),
        OsStr::new("-i"),
        sino_path.as_os_str(),
        OsStr::new("-o"),
        adj_path.as_os_str(),
    ]);
    // Reading as f64 fails unless the file holds float64 data.
    let sino: ArrayD<f64> = read_npy(&sino_path).unwrap();
    let adj: ArrayD<f64> = read_npy(&adj_path).unwrap();
    assert!(read_npy::<_, ArrayD<f32>>(&sino_path).is_err());
    let sino_lib = library("par2d_64", image64, true, Backend::default());
    assert_eq!(sino, sino_lib);
    assert_eq!(
        adj,
        library("par2d_64", sino_lib, false, Backend::default())
    );
    let sino_odl: ArrayD<f32> = read_npy(data("par2d_64_sino.npy")).unwrap();
    assert!(rel_l2(&sino.mapv(|v| v as f32), &sino_odl) <= 1e-4);
}

#[test]
fn info_prints_shapes_and_kind() {
    let out = rodl_ok(&[
        OsStr::new("info"),
        OsStr::new("--geometry"),
        data("cone3d_32.json").as_os_str(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("cone"), "{text}");
    assert!(text.contains("[32, 32, 32]"), "{text}");
    assert!(text.contains("[36, 64, 48]"), "{text}");
}

// ------------------------------------------------------------------------- failures

/// Runs `rodl project` on par2d_64 with `geometry` and `input` into `dir/out.npy` plus `extra`
/// arguments, and asserts a clean failure mentioning `needle`.
fn project_fails(dir: &TempDir, geometry: &Path, input: &Path, extra: &[&str], needle: &str) {
    let output = dir.path("out.npy");
    project_fails_into(dir, geometry, input, &output, extra, needle);
}

fn project_fails_into(
    dir: &TempDir,
    geometry: &Path,
    input: &Path,
    output: &Path,
    extra: &[&str],
    needle: &str,
) {
    let before = dir.listing();
    let mut args: Vec<&OsStr> = vec![
        OsStr::new("project"),
        OsStr::new("--geometry"),
        geometry.as_os_str(),
        OsStr::new("--input"),
        input.as_os_str(),
        OsStr::new("--output"),
        output.as_os_str(),
    ];
    args.extend(extra.iter().map(OsStr::new));
    let out = rodl(&args);
    assert_clean_failure(&out, output, dir, &before, needle);
}

/// Writes `text` as a geometry file in `dir`.
fn geometry_file(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn wrong_input_shape_fails_cleanly() {
    let dir = TempDir::new("shape");
    // Data instead of an image.
    project_fails(
        &dir,
        &data("par2d_64.json"),
        &data("par2d_64_y.npy"),
        &[],
        "[90, 95]",
    );
    // An image given to backproject.
    let before = dir.listing();
    let output = dir.path("back.npy");
    let out = rodl(&[
        OsStr::new("backproject"),
        OsStr::new("-g"),
        data("par2d_64.json").as_os_str(),
        OsStr::new("-i"),
        data("par2d_64_image.npy").as_os_str(),
        OsStr::new("-o"),
        output.as_os_str(),
    ]);
    assert_clean_failure(&out, &output, &dir, &before, "[64, 64]");
    // An image of the wrong dimension for a 3D geometry.
    project_fails(
        &dir,
        &data("cone3d_32.json"),
        &data("par2d_64_image.npy"),
        &[],
        "shape",
    );
}

#[test]
fn bad_json_fails_cleanly() {
    let dir = TempDir::new("json");
    let g = geometry_file(&dir, "bad.json", "{\"volume\": {\"min_pt\": [-1, -1],");
    project_fails(&dir, &g, &data("par2d_64_image.npy"), &[], "bad.json");
    let g = geometry_file(&dir, "notjson.json", "volume = 3");
    project_fails(&dir, &g, &data("par2d_64_image.npy"), &[], "notjson.json");
}

/// The geometry of tests/data/odl/par2d_64.json with a text substitution.
fn edited_par2d(from: &str, to: &str) -> String {
    let text = concat!(
        r#"{"volume":{"min_pt":[-10,-10],"max_pt":[10,10],"shape":[64,64]},"#,
        r#""geometry":{"kind":"parallel2d","angles":{"min":0,"max":3.141592653589793,"count":90},"#,
        r#""detector":{"min":[-15],"max":[15],"shape":[95]}}}"#
    );
    let file = TomoSpec::from_file(data("par2d_64.json")).unwrap();
    assert_eq!(TomoSpec::from_json(text).unwrap(), file);
    assert!(text.contains(from), "{text} lacks {from}");
    text.replacen(from, to, 1)
}

#[test]
fn unknown_key_fails_cleanly() {
    let dir = TempDir::new("unknown");
    let text = edited_par2d("\"kind\":", "\"colour\":\"red\",\"kind\":");
    let g = geometry_file(&dir, "g.json", &text);
    project_fails(&dir, &g, &data("par2d_64_image.npy"), &[], "colour");
}

#[test]
fn missing_key_is_named() {
    let dir = TempDir::new("missing");
    // A key that the format always needs.
    let text = edited_par2d(",\"shape\":[64,64]", "");
    let g = geometry_file(&dir, "g.json", &text);
    project_fails(&dir, &g, &data("par2d_64_image.npy"), &[], "shape");
    // A key that only some kinds need.
    let text = edited_par2d("\"parallel2d\"", "\"fanflat\"");
    let g = geometry_file(&dir, "fan.json", &text);
    project_fails(&dir, &g, &data("par2d_64_image.npy"), &[], "src_radius");
}

#[test]
fn unreadable_input_fails_cleanly() {
    let dir = TempDir::new("input");
    let g = data("par2d_64.json");
    project_fails(&dir, &g, &dir.path("missing.npy"), &[], "missing.npy");
    // Not an .npy file.
    project_fails(&dir, &g, &g, &[], "npy");
    // An .npy file of integers.
    let ints = dir.path("ints.npy");
    write_npy(&ints, &ArrayD::<i32>::zeros(vec![64, 64])).unwrap();
    project_fails(&dir, &g, &ints, &[], "dtype");
    // A truncated .npy file.
    let bytes = std::fs::read(data("par2d_64_image.npy")).unwrap();
    let cut = dir.path("cut.npy");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    project_fails(&dir, &g, &cut, &[], "cut.npy");
}

#[test]
fn unwritable_output_fails_cleanly() {
    let dir = TempDir::new("output");
    let (g, x) = (data("par2d_64.json"), data("par2d_64_image.npy"));
    // A directory that does not exist.
    let out = dir.path("no/such/dir/y.npy");
    project_fails_into(&dir, &g, &x, &out, &[], "y.npy");
    // A "directory" that is a file.
    let file = dir.path("file");
    std::fs::write(&file, b"x").unwrap();
    project_fails_into(&dir, &g, &x, &file.join("y.npy"), &[], "y.npy");
    // The output is a directory.
    let sub = dir.path("sub");
    std::fs::create_dir(&sub).unwrap();
    let before = dir.listing();
    let res = rodl(&[
        OsStr::new("project"),
        OsStr::new("-g"),
        g.as_os_str(),
        OsStr::new("-i"),
        x.as_os_str(),
        OsStr::new("-o"),
        sub.as_os_str(),
    ]);
    assert!(!res.status.success());
    assert_eq!(stderr(&res).lines().count(), 1, "{}", stderr(&res));
    assert!(sub.is_dir() && std::fs::read_dir(&sub).unwrap().next().is_none());
    assert_eq!(dir.listing(), before);
}

#[test]
fn failure_keeps_an_existing_output_unchanged() {
    let dir = TempDir::new("keep");
    let output = dir.path("y.npy");
    std::fs::write(&output, b"previous").unwrap();
    let out = rodl(&[
        OsStr::new("project"),
        OsStr::new("-g"),
        data("par2d_64.json").as_os_str(),
        OsStr::new("-i"),
        data("par2d_64_y.npy").as_os_str(),
        OsStr::new("-o"),
        output.as_os_str(),
    ]);
    assert!(!out.status.success());
    assert_eq!(stderr(&out).lines().count(), 1);
    assert_eq!(std::fs::read(&output).unwrap(), b"previous");
    assert_eq!(dir.listing(), ["y.npy"]);
}

#[test]
fn cuda_device_without_gpu_fails_cleanly() {
    let dir = TempDir::new("cuda");
    let cuda_usable = rodl::Device::Cuda(0).check_available().is_ok();
    let output = dir.path("out.npy");
    let out = rodl(&[
        OsStr::new("project"),
        OsStr::new("-g"),
        data("par2d_64.json").as_os_str(),
        OsStr::new("-i"),
        data("par2d_64_image.npy").as_os_str(),
        OsStr::new("-o"),
        output.as_os_str(),
        OsStr::new("--device"),
        OsStr::new("cuda:0"),
    ]);
    if cuda_usable && out.status.success() {
        // A GPU run: the result must agree with the CPU's to float32 rounding.
        let sino: ArrayD<f32> = read_npy(&output).unwrap();
        let image: ArrayD<f32> = read_npy(data("par2d_64_image.npy")).unwrap();
        let cpu = library("par2d_64", image, true, Backend::default());
        assert!(rel_l2(&sino, &cpu) <= 1e-5);
    } else {
        assert_clean_failure(&out, &output, &dir, &[], "CUDA");
    }
}

#[test]
fn bad_device_and_threads_fail_cleanly() {
    let dir = TempDir::new("device");
    let (g, x) = (data("par2d_64.json"), data("par2d_64_image.npy"));
    project_fails(&dir, &g, &x, &["--device", "tpu"], "tpu");
    project_fails(&dir, &g, &x, &["--device", "cuda:x"], "cuda:x");
    project_fails(&dir, &g, &x, &["--threads", "0"], "threads");
    project_fails(&dir, &g, &x, &["--threads", "many"], "threads");
    project_fails(
        &dir,
        &g,
        &x,
        &["--device", "cuda:0", "--threads", "2"],
        "threads",
    );
}

#[test]
fn usage_errors_are_one_line() {
    let dir = TempDir::new("usage");
    let out = rodl(&["project", "--geometry", "g.json"]);
    assert_clean_failure(&out, &dir.path("none"), &dir, &[], "--input");
    let out = rodl(&["transmogrify"]);
    assert_clean_failure(&out, &dir.path("none"), &dir, &[], "transmogrify");
    let help = rodl_ok(&["--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("backproject"));
}
