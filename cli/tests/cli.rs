//! The `rodl` command-line tool, run as a process on the ODL reference cases (the library's
//! tests/data/odl): results identical to the library's, ODL agreement, precision handling, and
//! clean one-line failures that leave no output file behind.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ndarray::ArrayD;
use ndarray_npy::{read_npy, write_npy};
use rodl::tomo::{Backend, RayTransform, TomoSpec};
use rodl::{LinearOperator, Operator, Scalar};

mod common;

use common::{rodl, rodl_ok, stderr, TempDir};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/odl")
        .join(name)
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

/// A curved detector with a flying focal spot: `rodl info` names the surface and the offsets
/// and does not report the flat-detector coverage; `rodl project` projects it (CPU).
#[test]
fn info_and_project_with_a_curved_detector() {
    let dir = TempDir::new("curved");
    let geometry = dir.path("curved.json");
    std::fs::write(
        &geometry,
        r#"{"volume": {"min_pt": [-1, -1, -1], "max_pt": [1, 1, 1], "shape": [8, 8, 8]},
            "geometry": {"kind": "cone", "angles": {"min": 0, "max": 6.283185307179586, "count": 12},
              "detector": {"min": [-0.4, -1.5], "max": [0.4, 1.5], "shape": [16, 12]},
              "src_radius": 4, "det_radius": 2, "det_curvature_radius": [6, null],
              "src_offsets": [[0, 0.01, 0], [0, -0.01, 0.02]]}}"#,
    )
    .unwrap();
    let out = rodl_ok(&[
        OsStr::new("info"),
        OsStr::new("--geometry"),
        geometry.as_os_str(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("cylindrical, curvature radius 6"), "{text}");
    assert!(
        text.contains("flying focal spot of 2 source offsets"),
        "{text}"
    );
    assert!(
        text.contains("coverage: not computed for a curved detector"),
        "{text}"
    );
    let input = dir.path("x.npy");
    write_npy(&input, &ndarray::Array3::<f32>::ones((8, 8, 8))).unwrap();
    let output = dir.path("y.npy");
    rodl_ok(&[
        OsStr::new("project"),
        OsStr::new("--geometry"),
        geometry.as_os_str(),
        OsStr::new("--input"),
        input.as_os_str(),
        OsStr::new("--output"),
        output.as_os_str(),
    ]);
    let y: ArrayD<f32> = read_npy(&output).unwrap();
    assert_eq!(y.shape(), &[12, 16, 12]);
    assert!(y.iter().all(|v| v.is_finite()) && y.iter().any(|&v| v > 0.0));
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

/// Over a file-size limit (`ulimit -f`, which sends SIGXFSZ) the write fails with one line and
/// the temporary file is removed, instead of the process being killed with half a file left.
#[cfg(unix)]
#[test]
fn a_file_size_limit_fails_cleanly() {
    let dir = TempDir::new("fsize");
    let output = dir.path("y.npy");
    let before = dir.listing();
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -f 2 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_rodl"))
        .args(["project", "-g"])
        .arg(data("par2d_64.json"))
        .arg("-i")
        .arg(data("par2d_64_image.npy"))
        .arg("-o")
        .arg(&output)
        .output()
        .expect("cannot start sh");
    assert_clean_failure(&out, &output, &dir, &before, "File too large");
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

// ------------------------------------------------------------ phantom, noise, fbp, reconstruct

/// A path as `&str` (the test directories have ASCII names).
fn s(p: &Path) -> &str {
    p.to_str().expect("non-UTF-8 test path")
}

/// The geometry file of a reference case as a `&str` path.
fn case(name: &str) -> String {
    data(&format!("{name}.json")).to_string_lossy().into_owned()
}

/// The gray levels of a PNG file and its size (width, height).
fn read_png(path: &Path) -> (usize, usize, Vec<u8>) {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Grayscale);
    buf.truncate(info.buffer_size());
    (info.width as usize, info.height as usize, buf)
}

/// The library's phantom on the volume of a reference case.
fn library_phantom<T: Scalar>(name: &str, modified: bool) -> rodl::Element<T> {
    let spec = TomoSpec::from_file(data(&format!("{name}.json"))).unwrap();
    let space = spec.volume.space::<T>().unwrap();
    rodl::tomo::phantom::shepp_logan(&space, modified).unwrap()
}

#[test]
fn phantom_matches_the_library_in_2d_and_3d() {
    let dir = TempDir::new("phantom");
    let (x, png) = (dir.path("x.npy"), dir.path("x.png"));
    let g = case("par2d_64");
    rodl_ok(&[
        "phantom",
        "-g",
        &g,
        "-o",
        s(&x),
        "--png",
        s(&png),
        "--window",
        "0:1",
    ]);
    let got: ArrayD<f32> = read_npy(&x).unwrap();
    let want = library_phantom::<f32>("par2d_64", true);
    assert_eq!(got, want.as_array().unwrap());
    // The PNG is the library's picture of the phantom with the window [0, 1].
    let (w, h, pixels) = read_png(&png);
    let image = rodl::io::to_gray8(&want, rodl::io::Window::Range { min: 0.0, max: 1.0 }).unwrap();
    assert_eq!((w, h), (64, 64));
    assert_eq!(pixels, image.pixels);

    // The original phantom in float64, and a 3D one with the middle z slice as PNG.
    rodl_ok(&[
        "phantom",
        "-g",
        &g,
        "-o",
        s(&x),
        "--kind",
        "shepp-logan",
        "--dtype",
        "float64",
    ]);
    let got: ArrayD<f64> = read_npy(&x).unwrap();
    assert_eq!(
        got,
        library_phantom::<f64>("par2d_64", false)
            .as_array()
            .unwrap()
    );
    let x3 = dir.path("x3.npy");
    let png3 = dir.path("x3.png");
    let g3 = case("cone3d_32");
    rodl_ok(&[
        "phantom",
        "-g",
        &g3,
        "-o",
        s(&x3),
        "--png",
        s(&png3),
        "--window",
        "0:1",
    ]);
    let want3 = library_phantom::<f32>("cone3d_32", true);
    let got3: ArrayD<f32> = read_npy(&x3).unwrap();
    assert_eq!(got3, want3.as_array().unwrap());
    let slice = rodl::io::slice_to_gray8(
        &want3,
        2,
        16,
        rodl::io::Window::Range { min: 0.0, max: 1.0 },
    )
    .unwrap();
    assert_eq!(read_png(&png3).2, slice.pixels);
    assert_eq!(dir.listing(), ["x.npy", "x.png", "x3.npy", "x3.png"]);
}

/// `rodl project` of the par2d_64 image with extra arguments; returns the sinogram.
fn project_with(dir: &TempDir, name: &str, extra: &[&str]) -> ArrayD<f32> {
    let out = dir.path(name);
    let image = data("par2d_64_image.npy");
    let g = case("par2d_64");
    let mut args = vec!["project", "-g", &g, "-i", s(&image), "-o", s(&out)];
    args.extend(extra);
    rodl_ok(&args);
    read_npy(&out).unwrap()
}

#[test]
fn projection_noise_is_seeded_and_has_its_level() {
    let dir = TempDir::new("noise");
    let clean = project_with(&dir, "clean.npy", &[]);
    let a = project_with(&dir, "a.npy", &["--noise", "gaussian:0.1", "--seed", "3"]);
    let b = project_with(&dir, "b.npy", &["--noise", "gaussian:0.1", "--seed", "3"]);
    let c = project_with(&dir, "c.npy", &["--noise", "gaussian:0.1", "--seed", "4"]);
    assert_eq!(a, b, "the same seed must give the same noise");
    assert_ne!(a, c, "another seed must give other noise");
    // ‖noise‖ / ‖data‖ ≈ 0.1 (8550 entries: the ratio's spread is well below 0.005).
    let level = rel_l2(&a, &clean);
    assert!((level - 0.1).abs() < 0.005, "relative noise level {level}");

    // Transmission noise: unbiased to first order, bounded by ln(photons).
    let p = project_with(&dir, "p.npy", &["--noise", "poisson:1e4", "--seed", "1"]);
    let mean_diff: f64 = p
        .iter()
        .zip(&clean)
        .map(|(x, y)| (x - y) as f64)
        .sum::<f64>()
        / p.len() as f64;
    assert!(mean_diff.abs() < 2e-3, "mean deviation {mean_diff}");
    assert!(p.iter().all(|&v| (v as f64) <= (1e4f64).ln() + 1e-4));
    // Per-entry variance ≈ exp(y) / photons.
    let var: f64 = p
        .iter()
        .zip(&clean)
        .map(|(x, y)| ((x - y) as f64).powi(2) / ((*y as f64).exp() / 1e4))
        .sum::<f64>()
        / p.len() as f64;
    assert!((var - 1.0).abs() < 0.1, "normalised variance {var}");
}

#[test]
fn fbp_matches_the_library_and_reconstructs() {
    use rodl::tomo::{fbp_op, FbpOptions, FilterType};
    let dir = TempDir::new("fbp");
    let (out, png) = (dir.path("rec.npy"), dir.path("rec.png"));
    let sino = data("par2d_64_sino.npy");
    let g = case("par2d_64");
    rodl_ok(&[
        "fbp",
        "-g",
        &g,
        "-i",
        s(&sino),
        "-o",
        s(&out),
        "--filter",
        "hann",
        "--frequency-scaling",
        "0.8",
        "--padding",
        "false",
        "--png",
        s(&png),
    ]);
    let got: ArrayD<f32> = read_npy(&out).unwrap();
    let spec = TomoSpec::from_file(data("par2d_64.json")).unwrap();
    let ray = RayTransform::new(
        spec.volume.space::<f32>().unwrap(),
        spec.geometry.build().unwrap(),
        Backend::default(),
    )
    .unwrap();
    let options = FbpOptions::new(FilterType::Hann)
        .with_frequency_scaling(0.8)
        .with_padding(false);
    let y: ArrayD<f32> = read_npy(&sino).unwrap();
    let want = fbp_op(&ray, &options)
        .unwrap()
        .apply(&ray.range().element(y).unwrap())
        .unwrap();
    assert_eq!(got, want.as_array().unwrap());
    assert_eq!(read_png(&png).0, 64);

    // Ram-Lak with the defaults recovers ODL's image from ODL's sinogram.
    rodl_ok(&["fbp", "-g", &g, "-i", s(&sino), "-o", s(&out)]);
    let rec: ArrayD<f32> = read_npy(&out).unwrap();
    let image: ArrayD<f32> = read_npy(data("par2d_64_image.npy")).unwrap();
    let err = rel_l2(&rec, &image);
    eprintln!("FBP (Ram-Lak) of par2d_64: relative L2 error {err:.3}");
    assert!(err < 0.33, "relative error {err}"); // measured 0.299 (90 views, 64 × 64)

    // FDK on the cone-beam case: the library's result.
    let cone_out = dir.path("fdk.npy");
    let cone_sino = data("cone3d_32_sino.npy");
    let gc = case("cone3d_32");
    rodl_ok(&[
        "fbp",
        "-g",
        &gc,
        "-i",
        s(&cone_sino),
        "-o",
        s(&cone_out),
        "--filter",
        "shepp-logan",
    ]);
    let spec = TomoSpec::from_file(data("cone3d_32.json")).unwrap();
    let ray = RayTransform::new(
        spec.volume.space::<f32>().unwrap(),
        spec.geometry.build().unwrap(),
        Backend::default(),
    )
    .unwrap();
    let y: ArrayD<f32> = read_npy(&cone_sino).unwrap();
    let want = fbp_op(&ray, &FbpOptions::new(FilterType::SheppLogan))
        .unwrap()
        .apply(&ray.range().element(y).unwrap())
        .unwrap();
    let got: ArrayD<f32> = read_npy(&cone_out).unwrap();
    assert_eq!(got, want.as_array().unwrap());
}

/// The library's reconstruction of par2d_64's ODL sinogram with `algorithm`.
fn library_reconstruction(algorithm: &str, iterations: usize) -> ArrayD<f32> {
    use rodl::solvers::iterative::{
        cgls, landweber, mlem, osem, sirt, LandweberOptions, RaySubsets, SirtOptions,
    };
    let spec = TomoSpec::from_file(data("par2d_64.json")).unwrap();
    let space = spec.volume.space::<f32>().unwrap();
    let ray = RayTransform::new(
        space.clone(),
        spec.geometry.build().unwrap(),
        Backend::default(),
    )
    .unwrap();
    let y: ArrayD<f32> = read_npy(data("par2d_64_sino.npy")).unwrap();
    let y = ray.range().element(y).unwrap();
    let mut x = space.zero().unwrap();
    match algorithm {
        "cgls" => cgls(&ray, &mut x, &y, iterations, &mut ()).map(|_| ()),
        "landweber" => landweber(
            &ray,
            &mut x,
            &y,
            iterations,
            &LandweberOptions::default(),
            &mut (),
        )
        .map(|_| ()),
        "sirt" => sirt(
            &ray,
            &mut x,
            &y,
            iterations,
            &SirtOptions::default(),
            &mut (),
        )
        .map(|_| ()),
        "mlem" => {
            x = space.one().unwrap();
            mlem(&ray, &mut x, &y, iterations, &mut ()).map(|_| ())
        }
        "osem" => {
            x = space.one().unwrap();
            let subsets = RaySubsets::new(&ray, 5, Backend::default()).unwrap();
            let blocks = subsets.split_data(&y).unwrap();
            osem(subsets.operators(), &mut x, &blocks, iterations, &mut ()).map(|_| ())
        }
        other => panic!("no such algorithm {other}"),
    }
    .unwrap();
    x.into_array().unwrap()
}

#[test]
fn reconstruct_matches_the_library_for_every_algorithm() {
    let dir = TempDir::new("reconstruct");
    let out = dir.path("rec.npy");
    let sino = data("par2d_64_sino.npy");
    let g = case("par2d_64");
    let image: ArrayD<f32> = read_npy(data("par2d_64_image.npy")).unwrap();
    for (algorithm, n, tol) in [
        // Errors measured: 0.251, 0.604, 0.490, 0.305, 0.296 (90 views, 64 × 64).
        ("cgls", 10, 0.28),
        ("landweber", 10, 0.65),
        ("sirt", 20, 0.55),
        ("mlem", 20, 0.34),
        ("osem", 4, 0.33),
    ] {
        let n_str = n.to_string();
        let mut args = vec![
            "reconstruct",
            "-g",
            &g,
            "-i",
            s(&sino),
            "-o",
            s(&out),
            "-a",
            algorithm,
            "-n",
            &n_str,
        ];
        if algorithm == "osem" {
            args.extend(["--subsets", "5"]);
        }
        let res = rodl_ok(&args);
        // Not a terminal: no progress bar, nothing on stderr.
        assert!(res.stderr.is_empty(), "{algorithm}: {}", stderr(&res));
        let got: ArrayD<f32> = read_npy(&out).unwrap();
        assert_eq!(got, library_reconstruction(algorithm, n), "{algorithm}");
        let err = rel_l2(&got, &image);
        eprintln!("{algorithm} ({n} iterations) of par2d_64: relative L2 error {err:.3}");
        assert!(err < tol, "{algorithm}: relative error {err}");
    }
    assert_eq!(dir.listing(), ["rec.npy"]);
}

#[test]
fn tv_methods_agree_and_beat_fbp_on_noisy_data() {
    let dir = TempDir::new("tv");
    let noisy = project_with(
        &dir,
        "noisy.npy",
        &["--noise", "gaussian:0.1", "--seed", "1"],
    );
    drop(noisy);
    let (y, g) = (dir.path("noisy.npy"), case("par2d_64"));
    let run = |args: &[&str], name: &str| -> ArrayD<f32> {
        let out = dir.path(name);
        let mut all = vec![args[0], "-g", &g, "-i", s(&y), "-o", s(&out)];
        all.extend(&args[1..]);
        rodl_ok(&all);
        read_npy(&out).unwrap()
    };
    let fbp = run(&["fbp", "--filter", "hann"], "fbp.npy");
    let tv = ["--tv-weight", "0.01", "-n", "300"];
    let pdhg = run(
        &[&["reconstruct", "-a", "pdhg-tv"][..], &tv].concat(),
        "pdhg.npy",
    );
    let fista = run(
        &[&["reconstruct", "-a", "fista-tv"][..], &tv].concat(),
        "fista.npy",
    );
    let image: ArrayD<f32> = read_npy(data("par2d_64_image.npy")).unwrap();
    let psnr = |x: &ArrayD<f32>| {
        let mse = x
            .iter()
            .zip(&image)
            .map(|(a, b)| ((a - b) as f64).powi(2))
            .sum::<f64>()
            / x.len() as f64;
        10.0 * (1.0 / mse).log10()
    };
    let (p_fbp, p_pdhg, p_fista) = (psnr(&fbp), psnr(&pdhg), psnr(&fista));
    let diff = rel_l2(&fista, &pdhg);
    eprintln!(
        "PSNR FBP {p_fbp:.2}, PDHG-TV {p_pdhg:.2}, FISTA-TV {p_fista:.2}; rel. diff {diff:.4}"
    );
    // Measured: 18.3, 26.4 and 26.4 dB; the two minimisers differ by 0.6 %.
    assert!(p_pdhg > p_fbp + 5.0 && p_fista > p_fbp + 5.0);
    // Two algorithms for (nearly) the same problem reach (nearly) the same image.
    assert!(diff < 0.02, "PDHG-TV and FISTA-TV differ by {diff}");
    assert!(pdhg.iter().chain(&fista).all(|&v| v >= 0.0));
}

#[test]
fn reconstruct_writes_a_windowed_png_and_reports_with_verbose() {
    let dir = TempDir::new("recpng");
    let (out, png) = (dir.path("rec.npy"), dir.path("rec.png"));
    let sino = data("par2d_64_sino.npy");
    let g = case("par2d_64");
    let res = rodl_ok(&[
        "reconstruct",
        "-g",
        &g,
        "-i",
        s(&sino),
        "-o",
        s(&out),
        "-a",
        "sirt",
        "-n",
        "5",
        "--nonnegative",
        "--png",
        s(&png),
        "--window",
        "0:0.5",
        "-v",
    ]);
    let err = stderr(&res);
    assert!(err.contains("SIRT 5 iterations"), "{err}");
    let rec: ArrayD<f32> = read_npy(&out).unwrap();
    assert!(rec.iter().all(|&v| v >= 0.0));
    let space = TomoSpec::from_file(data("par2d_64.json"))
        .unwrap()
        .volume
        .space::<f32>()
        .unwrap();
    let window = rodl::io::Window::Range { min: 0.0, max: 0.5 };
    let want = rodl::io::to_gray8(&space.element(rec).unwrap(), window).unwrap();
    assert_eq!(read_png(&png).2, want.pixels);
}

/// The par2d_64 geometry with the detector narrowed to [-w, w] (95 pixels).
fn narrow_par2d(w: f64) -> String {
    edited_par2d(
        "\"detector\":{\"min\":[-15],\"max\":[15]",
        &format!("\"detector\":{{\"min\":[-{w}],\"max\":[{w}]"),
    )
}

#[test]
fn info_reports_sampling_and_coverage() {
    let out = rodl_ok(&["info", "-g", &case("par2d_64")]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    for needle in [
        "voxel size [0.3125, 0.3125]",
        "step 0.0349066 rad (2°)",
        "pixels of size [0.315789]",
        "in 90 of 90 views (100%)",
        "= 143 over π",
    ] {
        assert!(text.contains(needle), "{needle:?} not in\n{text}");
    }
    // For a fan beam, ODL's cone_beam_geometry takes ⌈2πρ/Δx · r/(r + ρ)⌉ angles: 231 for
    // fan2d_64 (ODL 1.0's own number).
    let out = rodl_ok(&["info", "-g", &case("fan2d_64")]);
    let fan = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(fan.contains("= 231 over 2π"), "{fan}");
    // The TV-weight conversion: w_data · h / w_volume with w_data = Δθ · Δu, w_volume = h².
    let weights = text
        .lines()
        .find(|l| l.starts_with("weights:"))
        .unwrap_or_else(|| panic!("no weights line in\n{text}"));
    let factor: f64 = weights.rsplit(' ').nth(1).unwrap().parse().unwrap();
    let expected = (2.0f64.to_radians() * 0.315789) * 0.3125 / (0.3125 * 0.3125);
    assert!((factor - expected).abs() <= 1e-4 * expected, "{weights}");
    // A detector of half-width 12 sees the 20 × 20 square only where its shadow,
    // of half-width 10 (|cos θ| + |sin θ|), fits.
    let dir = TempDir::new("info");
    let g = geometry_file(&dir, "narrow.json", &narrow_par2d(12.0));
    let out = rodl_ok(&["info", "-g", s(&g)]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let covered = (0..90)
        .filter(|&k| {
            let t = (k as f64 + 0.5) * std::f64::consts::PI / 90.0;
            10.0 * (t.cos().abs() + t.sin().abs()) <= 12.0
        })
        .count();
    assert!(covered > 0 && covered < 90);
    assert!(
        text.contains(&format!("in {covered} of 90 views")),
        "{text}"
    );
    // The widest shadow, at 45°, sticks out by (10√2 − 12) / (24/95) pixels.
    let over = (10.0 * 2f64.sqrt() - 12.0) / (24.0 / 95.0);
    assert!(
        text.contains(&format!("by up to {:.2} pixels", over)),
        "{over}: {text}"
    );
    // A cone beam whose source sits inside the volume.
    let text3 = std::fs::read_to_string(data("cone3d_32.json")).unwrap();
    let inside = text3.replacen("\"src_radius\": 40", "\"src_radius\": 5", 1);
    assert_ne!(inside, text3, "cone3d_32.json has no \"src_radius\": 40");
    let g = geometry_file(&dir, "inside.json", &inside);
    let out = rodl_ok(&["info", "-g", s(&g)]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("in 0 of 36 views (0%)"), "{text}");
    assert!(text.contains("source lies inside"), "{text}");
}

#[test]
fn demo_runs_and_writes_its_files() {
    let dir = TempDir::new("demo");
    let out_dir = dir.path("out");
    let res = rodl_ok(&[
        "demo",
        "--output-dir",
        s(&out_dir),
        "--size",
        "32",
        "--device",
        "cpu",
        "--quiet",
    ]);
    let text = String::from_utf8_lossy(&res.stdout).into_owned();
    assert!(text.contains("PSNR"), "{text}");
    let mut names: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut expected = vec![
        "cgls.png",
        "fbp_hann.png",
        "geometry.json",
        "pdhg_tv.png",
        "phantom.png",
        "sinogram.npy",
        "sinogram.png",
        "summary.json",
        "summary.txt",
    ];
    expected.sort();
    assert_eq!(names, expected);
    assert_eq!(
        std::fs::read_to_string(out_dir.join("summary.txt")).unwrap(),
        text
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    let methods = summary["methods"].as_array().unwrap();
    let names: Vec<&str> = methods
        .iter()
        .map(|m| m["method"].as_str().unwrap())
        .collect();
    assert!(
        names[0].starts_with("FBP")
            && names[1].starts_with("CGLS")
            && names[2].starts_with("PDHG-TV"),
        "{names:?}"
    );
    let psnr: Vec<f64> = methods
        .iter()
        .map(|m| m["psnr_db"].as_f64().unwrap())
        .collect();
    for m in methods {
        let (p, q) = (m["psnr_db"].as_f64().unwrap(), m["ssim"].as_f64().unwrap());
        assert!(p > 14.0 && q > 0.5 && q <= 1.0, "{m}");
        assert!(text.contains(&format!("{p:.2}")), "{text}");
    }
    // 32 × 32 with 5 % noise (measured 16.8, 25.1, 33.9 dB): TV regularisation wins clearly.
    assert!(
        psnr[2] > psnr[0] + 5.0 && psnr[2] > psnr[1] + 5.0,
        "{psnr:?}"
    );
    // The written data and geometry work with the other commands.
    let rec = dir.path("rec.npy");
    rodl_ok(&[
        "fbp",
        "-g",
        s(&out_dir.join("geometry.json")),
        "-i",
        s(&out_dir.join("sinogram.npy")),
        "-o",
        s(&rec),
        "--filter",
        "hann",
    ]);
    let (w, h, _) = read_png(&out_dir.join("phantom.png"));
    assert_eq!((w, h), (32, 32));
}

// ------------------------------------------------------------------- failures of new commands

/// Runs `rodl` with `args` and asserts a clean failure mentioning `needle` that leaves
/// `dir` as it was and creates no `output`.
fn fails(dir: &TempDir, args: &[&str], output: &Path, needle: &str) {
    let before = dir.listing();
    let out = rodl(args);
    assert_clean_failure(&out, output, dir, &before, needle);
}

#[test]
fn missing_wrong_and_mismatched_inputs_fail_cleanly() {
    let dir = TempDir::new("badinput");
    let out = dir.path("out.npy");
    let g = case("par2d_64");
    let sino = data("par2d_64_sino.npy");
    // Missing input file, for each command that reads one.
    let missing = dir.path("missing.npy");
    for cmd in ["fbp", "backproject"] {
        fails(
            &dir,
            &[cmd, "-g", &g, "-i", s(&missing), "-o", s(&out)],
            &out,
            "missing.npy",
        );
    }
    fails(
        &dir,
        &[
            "reconstruct",
            "-g",
            &g,
            "-i",
            s(&missing),
            "-o",
            s(&out),
            "-a",
            "cgls",
            "-n",
            "2",
        ],
        &out,
        "missing.npy",
    );
    // Missing geometry file.
    let nog = dir.path("nog.json");
    fails(
        &dir,
        &["phantom", "-g", s(&nog), "-o", s(&out)],
        &out,
        "nog.json",
    );
    // Wrong dtype.
    let ints = dir.path("ints.npy");
    write_npy(&ints, &ArrayD::<i64>::zeros(vec![90, 95])).unwrap();
    fails(
        &dir,
        &["fbp", "-g", &g, "-i", s(&ints), "-o", s(&out)],
        &out,
        "dtype",
    );
    fails(
        &dir,
        &[
            "reconstruct",
            "-g",
            &g,
            "-i",
            s(&ints),
            "-o",
            s(&out),
            "-a",
            "sirt",
            "-n",
            "2",
        ],
        &out,
        "dtype",
    );
    // Shape mismatch: an image where a sinogram belongs, and a sinogram of another geometry.
    let image = data("par2d_64_image.npy");
    fails(
        &dir,
        &["fbp", "-g", &g, "-i", s(&image), "-o", s(&out)],
        &out,
        "[90, 95]",
    );
    fails(
        &dir,
        &[
            "reconstruct",
            "-g",
            &case("fan2d_64"),
            "-i",
            s(&sino),
            "-o",
            s(&out),
            "-a",
            "cgls",
            "-n",
            "2",
        ],
        &out,
        "[120, 100]",
    );
}

#[test]
fn non_finite_data_fail_cleanly() {
    let dir = TempDir::new("nonfinite");
    let out = dir.path("out.npy");
    let g = case("par2d_64");
    let mut y: ArrayD<f32> = read_npy(data("par2d_64_sino.npy")).unwrap();
    y[[3, 7]] = f32::NAN;
    y[[50, 2]] = f32::INFINITY;
    let bad = dir.path("nan.npy");
    write_npy(&bad, &y).unwrap();
    for cmd in [
        vec!["fbp"],
        vec!["backproject"],
        vec!["reconstruct", "-a", "mlem", "-n", "2"],
    ] {
        let mut args = cmd.clone();
        args.extend(["-g", &g, "-i", s(&bad), "-o", s(&out)]);
        fails(
            &dir,
            &args,
            &out,
            "2 non-finite values (NaN or Inf), the first at index [3, 7]",
        );
    }
    let mut x: ArrayD<f64> = read_npy::<_, ArrayD<f32>>(data("par2d_64_image.npy"))
        .unwrap()
        .mapv(f64::from);
    x[[10, 10]] = f64::NEG_INFINITY;
    let badx = dir.path("inf.npy");
    write_npy(&badx, &x).unwrap();
    fails(
        &dir,
        &["project", "-g", &g, "-i", s(&badx), "-o", s(&out)],
        &out,
        "[10, 10]",
    );
}

#[test]
fn bad_options_fail_cleanly() {
    let dir = TempDir::new("badopts");
    let out = dir.path("out.npy");
    let g = case("par2d_64");
    let sino = data("par2d_64_sino.npy");
    let image = data("par2d_64_image.npy");
    let rec = |extra: &[&'static str]| -> Vec<String> {
        let mut v: Vec<String> = ["reconstruct", "-g", &g, "-i", s(&sino), "-o", s(&out)]
            .iter()
            .map(|x| x.to_string())
            .collect();
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (rec(&["-a", "art", "-n", "2"]), "art"),
        (rec(&["-a", "cgls"]), "--iterations"),
        (rec(&["-a", "cgls", "-n", "0"]), "iterations"),
        (
            rec(&["-a", "cgls", "-n", "2", "--subsets", "3"]),
            "--subsets",
        ),
        (rec(&["-a", "osem", "-n", "2", "--subsets", "91"]), "1..=90"),
        (
            rec(&["-a", "mlem", "-n", "2", "--nonnegative"]),
            "--nonnegative",
        ),
        (
            rec(&["-a", "cgls", "-n", "2", "--window", "1:0", "--png", "x.png"]),
            "LO:HI",
        ),
        (
            rec(&["-a", "cgls", "-n", "2", "--png", "/no/such/dir/x.png"]),
            "x.png",
        ),
        (
            rec(&["-a", "cgls", "-n", "2", "--slice", "2:0", "--png", "x.png"]),
            "3D",
        ),
        (
            rec(&[
                "-a",
                "cgls",
                "-n",
                "2",
                "--device",
                "cuda:0",
                "--threads",
                "1",
            ]),
            "threads",
        ),
    ];
    for (args, needle) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails(&dir, &args, &out, needle);
    }
    let fbp = |extra: &[&str], needle: &str| {
        let mut args = vec!["fbp", "-g", &g, "-i", s(&sino), "-o", s(&out)];
        args.extend(extra);
        fails(&dir, &args, &out, needle);
    };
    fbp(&["--filter", "gauss"], "gauss");
    fbp(&["--frequency-scaling", "0"], "0");
    fbp(&["--frequency-scaling", "1.5"], "1.5");
    fbp(&["--parker", "maybe"], "--parker");
    fbp(&["--padding", "sometimes"], "sometimes");
    let project = |extra: &[&str], needle: &str| {
        let mut args = vec!["project", "-g", &g, "-i", s(&image), "-o", s(&out)];
        args.extend(extra);
        fails(&dir, &args, &out, needle);
    };
    project(&["--noise", "uniform:0.1"], "uniform");
    project(&["--noise", "poisson:0"], "poisson");
    project(&["--seed", "3"], "--noise");
    // Output and PNG on the same file.
    let same = dir.path("same");
    fails(
        &dir,
        &["phantom", "-g", &g, "-o", s(&same), "--png", s(&same)],
        &same,
        "also another output",
    );
    fails(
        &dir,
        &["phantom", "-g", &g, "-o", s(&out), "--kind", "disc"],
        &out,
        "disc",
    );
}

#[test]
fn impossible_geometries_fail_cleanly() {
    let dir = TempDir::new("badgeom");
    let out = dir.path("out.npy");
    let sino = data("par2d_64_sino.npy");
    for (from, to, needle) in [
        ("\"count\":90", "\"count\":0", "angles"),
        ("\"max_pt\":[10,10]", "\"max_pt\":[-20,10]", "volume"),
        ("\"shape\":[95]", "\"shape\":[0]", "detector"),
        ("\"max\":3.141592653589793", "\"max\":\"pi\"", "pi"),
    ] {
        let g = geometry_file(&dir, "g.json", &edited_par2d(from, to));
        fails(
            &dir,
            &["fbp", "-g", s(&g), "-i", s(&sino), "-o", s(&out)],
            &out,
            needle,
        );
        fails(&dir, &["phantom", "-g", s(&g), "-o", s(&out)], &out, needle);
        fails(&dir, &["info", "-g", s(&g)], &out, needle);
        std::fs::remove_file(&g).unwrap();
    }
    // A fan beam whose source is at the rotation centre.
    let fan = edited_par2d(
        "\"parallel2d\"",
        "\"fanflat\",\"src_radius\":0,\"det_radius\":10",
    );
    let g = geometry_file(&dir, "fan.json", &fan);
    fails(&dir, &["info", "-g", s(&g)], &out, "src_radius");
}

#[test]
fn demo_bad_arguments_fail_cleanly() {
    let dir = TempDir::new("demobad");
    let file = dir.path("file");
    std::fs::write(&file, b"x").unwrap();
    let none = dir.path("none");
    fails(
        &dir,
        &["demo", "--output-dir", s(&file), "--quiet"],
        &none,
        "file",
    );
    fails(
        &dir,
        &["demo", "--output-dir", s(&dir.0), "--size", "5"],
        &none,
        "--size",
    );
    fails(
        &dir,
        &["demo", "--output-dir", s(&dir.0), "--device", "tpu"],
        &none,
        "tpu",
    );
}

/// With the `cuda` feature, on a GPU machine: `fbp` and `reconstruct` on `cuda:0` agree with the
/// CPU to float32 rounding, and the demo runs there. Like every GPU test it fails (it does not
/// skip) without a usable GPU; without the feature the GPU path is covered by
/// `cuda_device_without_gpu_fails_cleanly`.
#[cfg(feature = "cuda")]
#[test]
fn gpu_fbp_reconstruct_and_demo_agree_with_the_cpu() {
    rodl::Device::Cuda(0)
        .check_available()
        .expect("this test needs a usable GPU (cuda:0)");
    let dir = TempDir::new("gpu");
    let (g, sino) = (case("par2d_64"), data("par2d_64_sino.npy"));
    let run = |args: &[&str], device: &str, name: &str| -> ArrayD<f32> {
        let out = dir.path(name);
        let mut all = vec![
            args[0],
            "-g",
            &g,
            "-i",
            s(&sino),
            "-o",
            s(&out),
            "--device",
            device,
        ];
        all.extend(&args[1..]);
        rodl_ok(&all);
        read_npy(&out).unwrap()
    };
    for (args, tol) in [
        (&["fbp", "--filter", "hann"][..], 1e-4),
        (&["reconstruct", "-a", "cgls", "-n", "10"][..], 5e-3),
        (&["reconstruct", "-a", "osem", "-n", "3"][..], 5e-3),
        (
            &[
                "reconstruct",
                "-a",
                "pdhg-tv",
                "-n",
                "50",
                "--tv-weight",
                "0.01",
            ][..],
            5e-3,
        ),
    ] {
        let cpu = run(args, "cpu", "cpu.npy");
        let gpu = run(args, "cuda:0", "gpu.npy");
        let diff = rel_l2(&gpu, &cpu);
        eprintln!("{args:?}: GPU vs CPU relative difference {diff:.2e}");
        assert!(diff < tol, "{args:?}: {diff}");
    }
    let out_dir = dir.path("demo");
    let res = rodl_ok(&[
        "demo",
        "--output-dir",
        s(&out_dir),
        "--size",
        "64",
        "--device",
        "cuda:0",
        "-q",
    ]);
    assert!(String::from_utf8_lossy(&res.stdout).contains("device:    cuda:0"));
}

// ------------------------------------------------ reliability: whatever the tool is given

/// Runs `rodl` with `args` and extra environment variables.
fn rodl_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rodl"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("cannot start the rodl binary")
}

/// Asserts that `out` is a failure with exit status `code` and one good error line: it
/// mentions `needle`, does not panic, stacks no error-kind prefixes, names no internal type
/// and prints no number of 25 digits or more.
#[track_caller]
fn assert_message(out: &Output, code: i32, needle: &str) {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(code),
        "status {}: {err}",
        out.status
    );
    assert!(!err.contains("panicked"), "panic: {err}");
    assert!(
        err.starts_with("rodl: error: ") && err.trim_end().lines().count() == 1,
        "not one error line: {err:?}"
    );
    assert!(err.contains(needle), "{needle:?} not in {err:?}");
    for bad in [
        "invalid argument:",
        "invalid configuration:",
        "Spec",
        "transmission_noise",
        "Lipschitz",
        "memory allocation",
    ] {
        assert!(!err.contains(bad), "{bad:?} in {err:?}");
    }
    let mut run = 0;
    for c in err.chars() {
        run = if c.is_ascii_digit() { run + 1 } else { 0 };
        assert!(run < 25, "a long number in {err:?}");
    }
}

/// Writes an `.npy` file (version 1) with this header dictionary and data.
fn raw_npy(path: &Path, dict: &str, data: &[u8]) {
    let mut header = dict.as_bytes().to_vec();
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(&header);
    bytes.extend_from_slice(data);
    std::fs::write(path, bytes).unwrap();
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Waits for `child` at most `secs` seconds; kills it (and fails) when it is still running.
fn wait_bounded(
    child: &mut std::process::Child,
    secs: u64,
    what: &str,
) -> std::process::ExitStatus {
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed().as_secs() >= secs {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running after {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn sizes_that_cannot_fit_are_errors_naming_the_size_and_the_limit() {
    let dir = TempDir::new("sizes");
    let out = dir.path("out.npy");
    let limit = [("RODL_MEMORY_LIMIT", "1G")];
    // 1e12 views: `info` too (more views than rodl takes); data that cannot fit.
    let g = geometry_file(
        &dir,
        "views.json",
        &edited_par2d("\"count\":90", "\"count\":1e12"),
    );
    let res = rodl_env(&["info", "-g", s(&g)], &limit);
    assert_message(
        &res,
        1,
        "`geometry.angles.count` is 1e12; rodl takes at most 1000000 views",
    );
    // Data larger than memory are fine (`project`, `backproject` and `fbp` run in pieces, the
    // other commands check what they read), data larger than the address space are not.
    let g = geometry_file(
        &dir,
        "data.json",
        &edited_par2d("\"shape\":[95]", "\"shape\":[100000000]"),
    );
    let res = rodl_env(&["info", "-g", s(&g)], &limit);
    assert!(res.status.success(), "{}", stderr(&res));
    let g = geometry_file(
        &dir,
        "data.json",
        &edited_par2d("\"shape\":[95]", "\"shape\":[100000000000000000]"),
    );
    let res = rodl_env(&["info", "-g", s(&g)], &limit);
    assert_message(&res, 1, "(float32) would need 36000000 TB");
    assert!(
        stderr(&res).contains("more than this system can address"),
        "{}",
        stderr(&res)
    );
    // Phantoms of 100000² and 2000³.
    let g = geometry_file(
        &dir,
        "vol.json",
        &edited_par2d("\"shape\":[64,64]", "\"shape\":[100000,100000]"),
    );
    let res = rodl_env(&["phantom", "-g", s(&g), "-o", s(&out)], &limit);
    assert_message(&res, 1, "[100000, 100000] needs 40 GB");
    let g3 = geometry_file(
        &dir,
        "vol3.json",
        r#"{"volume":{"min_pt":[-1,-1,-1],"max_pt":[1,1,1],"shape":[2000,2000,2000]},
            "geometry":{"kind":"parallel3d","angles":{"min":0,"max":3.14,"count":2},
            "detector":{"min":[-2,-2],"max":[2,2],"shape":[4,4]}}}"#,
    );
    let res = rodl_env(&["phantom", "-g", s(&g3), "-o", s(&out)], &limit);
    assert_message(&res, 1, "[2000, 2000, 2000]");
    // A huge 3D back-projection of small data: in pieces, one slice of 20000² is too much.
    let g4 = geometry_file(
        &dir,
        "vol4.json",
        r#"{"volume":{"min_pt":[-1,-1,-1],"max_pt":[1,1,1],"shape":[20000,20000,20000]},
            "geometry":{"kind":"parallel3d","angles":{"min":0,"max":3.14,"count":2},
            "detector":{"min":[-2,-2],"max":[2,2],"shape":[4,4]}}}"#,
    );
    let y = dir.path("y.npy");
    write_npy(&y, &ArrayD::<f32>::zeros(ndarray::IxDyn(&[2, 4, 4]))).unwrap();
    let res2 = rodl_env(
        &["backproject", "-g", s(&g4), "-i", s(&y), "-o", s(&out)],
        &limit,
    );
    assert_message(&res2, 1, "more than the memory limit");
    assert!(!out.exists());
    // An .npy header claiming (64, 1e11) elements in a 100-byte file.
    let liar = dir.path("liar.npy");
    raw_npy(
        &liar,
        "{'descr': '<f4', 'fortran_order': False, 'shape': (64, 100000000000), }",
        &[0; 36],
    );
    let res = rodl(&["info", "-g", s(&g3)]);
    assert!(res.status.success(), "{}", stderr(&res));
    let g2 = case("par2d_64");
    let res = rodl(&["backproject", "-g", &g2, "-i", s(&liar), "-o", s(&out)]);
    assert_message(&res, 1, "needs 2.56e13 bytes of data, but the file has 36");
    assert!(!out.exists());
}

#[test]
fn closed_or_full_output_streams_do_not_panic() {
    let dir = TempDir::new("streams");
    let g = case("par2d_64");
    // A full device: one line, status 1.
    let full = std::fs::File::create("/dev/full").unwrap();
    let res = Command::new(env!("CARGO_BIN_EXE_rodl"))
        .args(["info", "-g", &g])
        .stdout(full)
        .output()
        .unwrap();
    assert_message(&res, 1, "No space left on device");
    // A closed pipe: quiet, status 1.
    let mut child = Command::new(env!("CARGO_BIN_EXE_rodl"))
        .args(["info", "-g", &g])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let res = child.wait_with_output().unwrap();
    let err = stderr(&res);
    assert!(!err.contains("panicked"), "{err}");
    if !res.status.success() {
        assert_eq!(res.status.code(), Some(1), "{err}");
        assert!(err.is_empty(), "a broken pipe should be quiet: {err:?}");
    }
    // --help into a full device.
    let full = std::fs::File::create("/dev/full").unwrap();
    let res = Command::new(env!("CARGO_BIN_EXE_rodl"))
        .arg("--help")
        .stdout(full)
        .output()
        .unwrap();
    assert_message(&res, 1, "No space left on device");
    // Verbose notes into a full stderr: the command still works.
    let out = dir.path("y.npy");
    let full = std::fs::File::create("/dev/full").unwrap();
    let res = Command::new(env!("CARGO_BIN_EXE_rodl"))
        .args([
            "project",
            "-g",
            &g,
            "-i",
            s(&data("par2d_64_image.npy")),
            "-o",
            s(&out),
            "-v",
        ])
        .stderr(full)
        .output()
        .unwrap();
    assert!(res.status.success());
    assert!(out.exists());
    // The demo with a full stdout writes none of its files.
    let demo_dir = dir.path("demo");
    let full = std::fs::File::create("/dev/full").unwrap();
    let res = Command::new(env!("CARGO_BIN_EXE_rodl"))
        .args([
            "demo",
            "--size",
            "16",
            "--device",
            "cpu",
            "--quiet",
            "--output-dir",
            s(&demo_dir),
        ])
        .stdout(full)
        .output()
        .unwrap();
    assert_message(&res, 1, "standard output");
    assert!(!demo_dir.exists(), "the demo left its folder");
}

#[test]
fn fifos_devices_and_thread_counts_do_not_hang() {
    let dir = TempDir::new("hangs");
    let out = dir.path("out.npy");
    let fifo = dir.path("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let g = case("par2d_64");
    let x = data("par2d_64_image.npy");
    let runs: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["info", "-g", s(&fifo)], 1, "FIFO"),
        (vec!["info", "-g", "/dev/urandom"], 1, "regular file"),
        (
            vec!["project", "-g", &g, "-i", s(&fifo), "-o", s(&out)],
            1,
            "FIFO",
        ),
        (
            vec!["project", "-g", &g, "-i", "/dev/zero", "-o", s(&out)],
            1,
            "--input",
        ),
        (
            vec![
                "project",
                "-g",
                &g,
                "-i",
                s(&x),
                "-o",
                s(&out),
                "--threads",
                "100000",
            ],
            2,
            "1..=",
        ),
        (
            vec![
                "project",
                "-g",
                &g,
                "-i",
                s(&x),
                "-o",
                s(&out),
                "--threads",
                "18446744073709551615",
            ],
            2,
            "cores",
        ),
        (
            vec![
                "project",
                "-g",
                &g,
                "-i",
                s(&x),
                "-o",
                s(&out),
                "--threads",
                "-1",
            ],
            2,
            "1..=",
        ),
    ];
    for (args, code, needle) in runs {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rodl"))
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        wait_bounded(&mut child, 20, &format!("rodl {args:?}"));
        let res = child.wait_with_output().unwrap();
        assert_message(&res, code, needle);
        assert!(!out.exists());
    }
    // A FIFO as the output that nothing reads: refused, not waited on.
    let mut child = Command::new(env!("CARGO_BIN_EXE_rodl"))
        .args(["phantom", "-g", &g, "-o", s(&fifo)])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_bounded(&mut child, 20, "phantom -o FIFO");
    let res = child.wait_with_output().unwrap();
    assert_message(&res, 1, "FIFO");
}

#[test]
fn outputs_keep_devices_links_modes_and_inputs() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let dir = TempDir::new("files");
    let g = case("par2d_64");
    // /dev/null stays a device (written through).
    if is_root() {
        rodl_ok(&["phantom", "-g", &g, "-o", "/dev/null", "--png", "/dev/null"]);
        let m = std::fs::metadata("/dev/null").unwrap();
        assert!(m.file_type().is_char_device());
    } else {
        eprintln!("skipped the /dev/null check: it needs root (as root a rename would replace it)");
        rodl_ok(&["phantom", "-g", &g, "-o", "/dev/null"]);
    }
    // /dev/stdout on a pipe (a link to no file name): written through.
    let res = Command::new(env!("CARGO_BIN_EXE_rodl"))
        .args(["phantom", "-g", &g, "-o", "/dev/stdout"])
        .output()
        .unwrap();
    assert!(res.status.success(), "{}", stderr(&res));
    assert!(res.stdout.starts_with(b"\x93NUMPY") && res.stdout.len() == 16512);
    // A symbolic link: its target is written, the link stays.
    let target = dir.path("target.npy");
    let link = dir.path("link.npy");
    std::fs::write(&target, b"old").unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    rodl_ok(&["phantom", "-g", &g, "-o", s(&link)]);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let a: ArrayD<f32> = read_npy(&target).unwrap();
    assert_eq!(a.shape(), &[64, 64]);
    // A replaced file keeps its permissions.
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
    rodl_ok(&["phantom", "-g", &g, "-o", s(&target), "--dtype", "float64"]);
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    // A dangling link is refused.
    let dangling = dir.path("dangling.npy");
    std::os::unix::fs::symlink(dir.path("nowhere/x.npy"), &dangling).unwrap();
    assert_message(
        &rodl(&["phantom", "-g", &g, "-o", s(&dangling)]),
        1,
        "symbolic link",
    );
    // --png must not be an input, and outputs must differ.
    let sino = dir.path("sino.npy");
    std::fs::copy(data("par2d_64_sino.npy"), &sino).unwrap();
    let geometry = dir.path("g.json");
    std::fs::copy(&g, &geometry).unwrap();
    let before = std::fs::read(&sino).unwrap();
    let rec = dir.path("rec.npy");
    let fbp = |extra: &[&str]| {
        let mut args = vec!["fbp", "-g", s(&geometry), "-i", s(&sino), "-o", s(&rec)];
        args.extend(extra);
        rodl(&args)
    };
    assert_message(&fbp(&["--png", s(&sino)]), 2, "--input");
    assert_message(&fbp(&["--png", s(&geometry)]), 2, "--geometry");
    assert_message(&fbp(&["--png", s(&rec)]), 2, "another output");
    let res = rodl(&["fbp", "-g", s(&geometry), "-i", s(&sino), "-o", s(&sino)]);
    assert_message(&res, 2, "--input");
    assert_eq!(std::fs::read(&sino).unwrap(), before);
    assert!(!rec.exists());
    // Nothing else is left in the folder.
    assert_eq!(
        dir.listing(),
        [
            "dangling.npy",
            "g.json",
            "link.npy",
            "sino.npy",
            "target.npy"
        ]
    );
}

/// Starts `rodl` with `args`, waits until a temporary file appears in `dir`, sends `signal`
/// (or a folder in it) and checks that the process ends and leaves no temporary file.
fn interrupt_leaves_nothing(dir: &Path, args: &[&str], signal: &str) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rodl"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let temps = || -> Vec<String> {
        let mut names = vec![];
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.contains(".rodl-") {
                names.push(name);
            } else if let Ok(inner) = std::fs::read_dir(entry.path()) {
                names.extend(
                    inner
                        .flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|n| n.contains(".rodl-")),
                );
            }
        }
        names
    };
    let start = std::time::Instant::now();
    while temps().is_empty() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "rodl ended before the signal"
        );
        assert!(start.elapsed().as_secs() < 20, "no temporary file appeared");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args([signal, &pid])
        .status()
        .unwrap()
        .success());
    let status = wait_bounded(&mut child, 20, "rodl after a signal");
    assert!(!status.success());
    assert_eq!(
        temps(),
        Vec::<String>::new(),
        "temporary files left after {signal}"
    );
}

#[test]
fn signals_remove_temporary_files() {
    let dir = TempDir::new("signals");
    let g = case("par2d_64");
    let sino = data("par2d_64_sino.npy");
    let rec = dir.path("rec.npy");
    let png = dir.path("rec.png");
    for signal in ["-TERM", "-INT"] {
        interrupt_leaves_nothing(
            &dir.0,
            &[
                "reconstruct",
                "-g",
                &g,
                "-i",
                s(&sino),
                "-o",
                s(&rec),
                "--png",
                s(&png),
                "-a",
                "cgls",
                "-n",
                "100000",
                "--quiet",
            ],
            signal,
        );
        assert!(!rec.exists() && !png.exists());
    }
    let demo = dir.path("demo");
    std::fs::create_dir(&demo).unwrap();
    interrupt_leaves_nothing(
        &demo,
        &[
            "demo",
            "--size",
            "64",
            "--device",
            "cpu",
            "--quiet",
            "--output-dir",
            s(&demo),
        ],
        "-INT",
    );
    assert_eq!(
        std::fs::read_dir(&demo).unwrap().count(),
        0,
        "the demo left files"
    );
    // A folder the demo created goes too.
    let fresh = demo.join("fresh");
    interrupt_leaves_nothing(
        &demo,
        &[
            "demo",
            "--size",
            "64",
            "--device",
            "cpu",
            "--quiet",
            "--output-dir",
            s(&fresh),
        ],
        "-TERM",
    );
    assert!(!fresh.exists(), "the demo left its folder");
}

#[test]
fn demo_sizes_across_the_range_run() {
    // The whole range is checked in the tool's unit tests (its geometry file for every N);
    // here a few sizes that failed before JSON floats were read exactly run end to end.
    let dir = TempDir::new("demosizes");
    for n in ["17", "23"] {
        let out = dir.path(n);
        rodl_ok(&[
            "demo",
            "--size",
            n,
            "--device",
            "cpu",
            "--quiet",
            "--output-dir",
            s(&out),
        ]);
        rodl_ok(&["info", "-g", s(&out.join("geometry.json"))]);
    }
}

#[test]
fn non_finite_results_are_never_written() {
    let dir = TempDir::new("nonfinite");
    let out = dir.path("out.npy");
    let image = data("par2d_64_image.npy");
    for (from, to, needle) in [
        (
            "\"min_pt\":[-10,-10]",
            "\"min_pt\":[-1e300,-10]",
            "`volume.min_pt[0]`",
        ),
        (
            "\"max\":[15]",
            "\"max\":[1e308]",
            "`geometry.detector.max[0]`",
        ),
        (
            "\"parallel2d\"",
            "\"fanflat\",\"src_radius\":1e308,\"det_radius\":10",
            "`geometry.src_radius`",
        ),
    ] {
        let g = geometry_file(&dir, "g.json", &edited_par2d(from, to));
        let res = rodl(&["project", "-g", s(&g), "-i", s(&image), "-o", s(&out)]);
        assert_message(&res, 1, needle);
        assert!(stderr(&res).contains("1e15"), "{}", stderr(&res));
        std::fs::remove_file(&g).unwrap();
    }
    let cone = r#"{"volume":{"min_pt":[-1,-1,-1],"max_pt":[1,1,1],"shape":[4,4,4]},
        "geometry":{"kind":"cone","angles":{"min":0,"max":6.28,"count":20},
        "detector":{"min":[-2,-2],"max":[2,2],"shape":[4,4]},
        "src_radius":5,"det_radius":5,"pitch":1e308}}"#;
    let g = geometry_file(&dir, "cone.json", cone);
    assert_message(&rodl(&["info", "-g", s(&g)]), 1, "`geometry.pitch`");
    // Data near the float32 limit overflow in the projection: refused, nothing written.
    let big = dir.path("big.npy");
    write_npy(
        &big,
        &ArrayD::<f32>::from_elem(ndarray::IxDyn(&[64, 64]), 3e38),
    )
    .unwrap();
    let res = rodl(&[
        "project",
        "-g",
        &case("par2d_64"),
        "-i",
        s(&big),
        "-o",
        s(&out),
    ]);
    assert_message(&res, 1, "non-finite");
    // Noise beyond its range.
    let res = rodl(&[
        "project",
        "-g",
        &case("par2d_64"),
        "-i",
        s(&image),
        "-o",
        s(&out),
        "--noise",
        "gaussian:1e38",
    ]);
    assert_message(&res, 2, "1e6");
    assert!(!out.exists());
}

#[test]
fn messages_name_the_key_or_option() {
    let dir = TempDir::new("messages");
    let out = dir.path("out.npy");
    let info = |text: &str| {
        let g = geometry_file(&dir, "m.json", text);
        let res = rodl(&["info", "-g", s(&g)]);
        std::fs::remove_file(&g).unwrap();
        res
    };
    let res = info(&edited_par2d(
        "\"volume\":{\"min_pt\":[-10,-10],\"max_pt\":[10,10],\"shape\":[64,64]}",
        "\"volume\":1",
    ));
    assert_message(
        &res,
        1,
        "`volume`: invalid type: integer `1`, expected an object",
    );
    let res = info(&edited_par2d("\"count\":90", "\"count\":90.5"));
    assert_message(&res, 1, "`geometry.angles.count`: expected a whole number");
    let res = info(&edited_par2d("\"max_pt\":[10,10]", "\"max_pt\":[-20,10]"));
    assert_message(&res, 1, "`volume.max_pt[0]` (-20) must be larger than");
    let res = info(&edited_par2d("\"shape\":[95]", "\"shape\":[0]"));
    assert_message(&res, 1, "`geometry.detector.shape[0]` must be at least 1");
    // Integral floats and a byte-order mark are accepted.
    assert!(info(&edited_par2d("\"count\":90", "\"count\":90.0"))
        .status
        .success());
    assert!(info(&format!("\u{feff}{}", edited_par2d("", "")))
        .status
        .success());
    // Option values, negative ones too: status 2 with the valid range.
    let g = case("par2d_64");
    let sino = data("par2d_64_sino.npy");
    let rec = |extra: &[&str]| {
        let mut args = vec!["reconstruct", "-g", &g, "-i", s(&sino), "-o", s(&out)];
        args.extend(extra);
        rodl(&args)
    };
    assert_message(
        &rec(&["-a", "pdhg-tv", "-n", "2", "--tv-weight", "-1"]),
        2,
        "≥ 0",
    );
    assert_message(&rec(&["-a", "cgls", "-n", "-3"]), 2, "1..=100000");
    assert_message(&rec(&["-a", "cgls", "-n", "0"]), 2, "1..=100000");
    assert_message(
        &rec(&["-a", "cgls", "-n", "18446744073709551615"]),
        2,
        "1..=100000",
    );
    assert_message(
        &rec(&["-a", "osem", "-n", "2", "--subsets", "91"]),
        2,
        "1..=90",
    );
    assert_message(
        &rec(&["-a", "cgls", "-n", "2", "--window", "0:1"]),
        2,
        "--window needs --png",
    );
    assert_message(
        &rec(&["-a", "cgls", "-n", "2", "--slice", "2:1"]),
        2,
        "--slice needs --png",
    );
    assert_message(
        &rec(&["-a", "cgls", "-n", "2", "--device", "tpu"]),
        2,
        "tpu",
    );
    let fbp = |extra: &[&str]| {
        let mut args = vec!["fbp", "-g", &g, "-i", s(&sino), "-o", s(&out)];
        args.extend(extra);
        rodl(&args)
    };
    assert_message(&fbp(&["--filter", "gauss"]), 2, "gauss");
    assert_message(&fbp(&["--frequency-scaling", "-0.5"]), 2, "(0, 1]");
    assert_message(&fbp(&["--parker", "-2"]), 2, "--parker");
    assert_message(&rodl(&["demo", "--size", "-5"]), 2, "16..=4096");
    assert_message(&rodl(&["demo", "--size", "5000"]), 2, "16..=4096");
    assert!(!out.exists());
    // `--device gpu` means GPU 0 (documented); without CUDA it says so.
    let res = fbp(&["--device", "gpu"]);
    if !res.status.success() {
        assert_message(&res, 1, "CUDA");
    }
    let help = rodl_ok(&["fbp", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("`gpu`"));
}
