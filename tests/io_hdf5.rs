//! HDF5 scan files (feature `hdf5`): NXtomo and DXchange files written by Python's `h5py` (when
//! python3 has it; the same files are also written here with the `hdf5` crate, and both are
//! read), read exactly in rodl's orientation, with flats/darks and their positions, angles in
//! radians, lengths in metres, chunked projections, the geometry they give, and the refusal of
//! truncated files, wrong dtypes, missing keys and inconsistent counts with a message naming the
//! file and the HDF5 path.
#![cfg(feature = "hdf5")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;

use hdf5::types::{FixedAscii, VarLenUnicode};
use ndarray::{Array1, Array3};
use rodl::io::{
    for_each_chunk, read_all_frames, BeamChoice, DxFile, FrameStack, LengthUnit, NxTomoFile,
    ScanFormat, ScanGeometryOptions,
};
use rodl::preprocess::FlatField;
use rodl::tomo::GeometryKind;
use rodl::Error;

const ROWS: usize = 5;
const COLS: usize = 7;
/// The acquisition sequence of tests/scripts/write_scan_files.py.
const NX_KEYS: [i32; 29] = [
    2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, -1,
];

fn nx_value(k: usize, r: usize, c: usize) -> f32 {
    ((k * 131 + r * 17 + c * 3) % 4096 + 100) as f32
}

fn dx_value(k: usize, r: usize, c: usize) -> f32 {
    k as f32 + 0.5 * r as f32 + 0.25 * c as f32
}

fn frames(n: usize, f: impl Fn(usize, usize, usize) -> f32) -> Array3<f32> {
    Array3::from_shape_fn([n, ROWS, COLS], |(k, r, c)| f(k, r, c))
}

/// Held by every test: libhdf5 opens files without `O_CLOEXEC`, so a python3 started by one test
/// would inherit (and keep) the lock of a file another test is writing.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn io_message(e: Error) -> (PathBuf, String) {
    match e {
        Error::Io { path, message } => (path, message),
        other => panic!("expected an Io error, got {other:?}"),
    }
}

fn text_attr(loc: &hdf5::Location, name: &str, value: &str) {
    loc.new_attr::<VarLenUnicode>()
        .create(name)
        .unwrap()
        .write_scalar(&VarLenUnicode::from_str(value).unwrap())
        .unwrap();
}

/// What an NXtomo file written here looks like; `good()` is the Python script's file.
#[derive(Clone)]
struct Nx {
    keys: Vec<i32>,
    angles: Option<Vec<f64>>,
    string_data: bool,
    source_distance: Option<f64>,
    entry_class: &'static str,
}

impl Nx {
    fn good() -> Self {
        let mut angles = vec![0.0; NX_KEYS.len()];
        let mut j = 0;
        for (k, &key) in NX_KEYS.iter().enumerate() {
            if key == 0 {
                angles[k] = j as f64 * 9.0;
                j += 1;
            }
        }
        angles[NX_KEYS.len() - 1] = 90.0;
        Self {
            keys: NX_KEYS.to_vec(),
            angles: Some(angles),
            string_data: false,
            source_distance: Some(0.5),
            entry_class: "NXentry",
        }
    }

    fn write(&self, path: &Path) {
        let f = hdf5::File::create(path).unwrap();
        let e = f.create_group("entry0000").unwrap();
        text_attr(&e, "NX_class", self.entry_class);
        e.new_dataset::<VarLenUnicode>()
            .create("definition")
            .unwrap()
            .write_scalar(&VarLenUnicode::from_str("NXtomo").unwrap())
            .unwrap();
        let det = e.create_group("instrument/detector").unwrap();
        let n = NX_KEYS.len();
        if self.string_data {
            let s = vec![FixedAscii::<4>::from_ascii(b"x").unwrap(); n * ROWS * COLS];
            let a = Array3::from_shape_vec([n, ROWS, COLS], s).unwrap();
            det.new_dataset_builder()
                .with_data(&a)
                .create("data")
                .unwrap();
        } else {
            let a = frames(n, nx_value).mapv(|x| x as u16);
            det.new_dataset_builder()
                .with_data(&a)
                .create("data")
                .unwrap();
        }
        let keys = Array1::from(self.keys.clone());
        det.new_dataset_builder()
            .with_data(&keys)
            .create("image_key_control")
            .unwrap();
        let len = |name: &str, g: &hdf5::Group, v: f64, units: &str| {
            let d = g
                .new_dataset_builder()
                .with_data(&[v])
                .create(name)
                .unwrap();
            text_attr(&d, "units", units);
        };
        len("x_pixel_size", &det, 6.5, "um");
        len("y_pixel_size", &det, 13.0, "µm");
        len("distance", &det, 250.0, "mm");
        if let Some(s) = self.source_distance {
            let src = e.create_group("instrument/source").unwrap();
            len("distance", &src, s, "m");
        }
        let sample = e.create_group("sample").unwrap();
        if let Some(a) = &self.angles {
            let d = sample
                .new_dataset_builder()
                .with_data(&Array1::from(a.clone()))
                .create("rotation_angle")
                .unwrap();
            text_attr(&d, "units", "degree");
        }
        len("x_pixel_size", &sample, 3.25e-6, "m");
        len("y_pixel_size", &sample, 6.5e-6, "m");
    }
}

fn write_dx(path: &Path, theta: usize, white_rows: usize) {
    let f = hdf5::File::create(path).unwrap();
    let ex = f.create_group("exchange").unwrap();
    ex.new_dataset_builder()
        .with_data(&frames(12, dx_value))
        .create("data")
        .unwrap();
    let white = Array3::from_shape_fn([3, white_rows, COLS], |(k, r, c)| {
        100.0 + (k + r + c) as f32
    });
    ex.new_dataset_builder()
        .with_data(&white)
        .create("data_white")
        .unwrap();
    let dark = frames(2, |k, _, _| 10.0 + k as f32);
    ex.new_dataset_builder()
        .with_data(&dark)
        .create("data_dark")
        .unwrap();
    let th = Array1::from_iter((0..theta).map(|k| k as f64 * 15.0));
    ex.new_dataset_builder()
        .with_data(&th)
        .create("theta")
        .unwrap();
    let det = f.create_group("measurement/instrument/detector").unwrap();
    let d = det
        .new_dataset_builder()
        .with_data(&[1.3])
        .create("pixel_size_x")
        .unwrap();
    text_attr(&d, "units", "um");
    det.new_dataset_builder()
        .with_data(&[1.3])
        .create("pixel_size_y")
        .unwrap();
}

/// The files to read: h5py's (when python3 has h5py) and this test's.
fn good_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mine = dir.join("rust");
    std::fs::create_dir_all(&mine).unwrap();
    Nx::good().write(&mine.join("nxtomo.nx"));
    write_dx(&mine.join("dxchange.h5"), 12, ROWS);
    let mut out = vec![("hdf5 crate".to_string(), mine)];
    let python = Command::new("python3")
        .args(["-c", "import numpy, h5py"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if python {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/write_scan_files.py");
        let py = dir.join("h5py");
        let st = Command::new("python3")
            .arg(&script)
            .arg("hdf5")
            .arg(&py)
            .status()
            .unwrap();
        assert!(st.success());
        out.push(("h5py".to_string(), py));
    } else {
        eprintln!("python3 has no h5py: only the files written with the hdf5 crate are read");
    }
    out
}

#[test]
fn nxtomo_files_read_exactly() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    for (writer, d) in good_files(dir.path()) {
        let path = d.join("nxtomo.nx");
        assert_eq!(
            NxTomoFile::entries(&path).unwrap(),
            ["/entry0000"],
            "{writer}"
        );
        let mut f = NxTomoFile::open(&path).unwrap();
        let info = f.info().clone();
        assert_eq!(
            info.format,
            ScanFormat::NxTomo {
                entry: "/entry0000".into()
            }
        );
        assert_eq!(info.detector_shape, [COLS, ROWS]);
        let proj: Vec<usize> = (5..25).collect();
        assert_eq!(
            info.projection_positions.as_deref(),
            Some(&proj[..]),
            "{writer}"
        );
        assert_eq!(info.angles.len(), 20);
        for (j, a) in info.angles.iter().enumerate() {
            assert!((a - (j as f64 * 9.0).to_radians()).abs() < 1e-15);
        }
        let v = |x: &rodl::io::FileValue| x.value.unwrap();
        assert!((v(&info.pixel_size[0]) - 6.5e-6).abs() < 1e-18, "{writer}");
        assert!((v(&info.pixel_size[1]) - 13e-6).abs() < 1e-18, "{writer}");
        assert!((v(&info.sample_pixel_size[0]) - 3.25e-6).abs() < 1e-18);
        assert!((v(&info.detector_distance) - 0.25).abs() < 1e-15);
        assert!((v(&info.source_distance) - 0.5).abs() < 1e-15);
        // The energy (keV): h5py's file records it, the hdf5 crate's does not.
        let energy = (writer == "h5py").then_some(19.5);
        assert_eq!(info.energy.value, energy, "{writer}");
        assert_eq!(
            info.pixel_size[0].key,
            "/entry0000/instrument/detector/x_pixel_size"
        );
        assert_eq!(
            f.flats().positions.as_deref(),
            Some(&[2, 3, 4, 25, 26, 27][..])
        );
        assert_eq!(f.darks().positions.as_deref(), Some(&[0, 1][..]));
        let check = |a: &Array3<f32>, frame_of: &dyn Fn(usize) -> usize| {
            for k in 0..a.shape()[0] {
                for r in 0..ROWS {
                    for c in 0..COLS {
                        assert_eq!(a[[k, c, ROWS - 1 - r]], nx_value(frame_of(k), r, c));
                    }
                }
            }
        };
        check(&f.flats().data, &|k| [2, 3, 4, 25, 26, 27][k]);
        check(&f.darks().data, &|k| k);
        // Chunks of 7 views (hyperslabs).
        let mut starts = Vec::new();
        for_each_chunk(&mut f, 7, |first, chunk| {
            check(&chunk.to_owned(), &|k| 5 + first + k);
            starts.push(first);
            Ok(())
        })
        .unwrap();
        assert_eq!(starts, [0, 7, 14]);
        let ff = FlatField::new(f.flats(), f.darks()).unwrap();
        assert_eq!(ff.group_positions(), vec![3.0, 26.0]);
        let scan = f.read_scan().unwrap();
        check(&scan.projections, &|k| 5 + k);

        // The geometry: a cone beam (the file has a source distance), in millimetres.
        let spec = scan
            .info
            .geometry_spec(&ScanGeometryOptions::default())
            .unwrap();
        assert_eq!(spec.kind, GeometryKind::Cone);
        assert!((spec.src_radius.unwrap() - 500.0).abs() < 1e-9);
        assert!((spec.det_radius.unwrap() - 250.0).abs() < 1e-9);
        let a = spec.angles.clone().unwrap();
        assert_eq!(a.count, 20);
        assert!(
            (a.min + 4.5f64.to_radians()).abs() < 1e-12
                && (a.max - 175.5f64.to_radians()).abs() < 1e-12
        );
        let det_max = spec.detector.max.clone().unwrap();
        assert!(
            (det_max[0] - 3.5 * 0.0065).abs() < 1e-12 && (det_max[1] - 2.5 * 0.013).abs() < 1e-12
        );
        spec.build().unwrap();
        // Parallel: the sample pixel size, here in sample pixels.
        let opts = ScanGeometryOptions {
            beam: BeamChoice::Parallel,
            unit: LengthUnit::SamplePixel,
            ..Default::default()
        };
        let spec = scan.info.geometry_spec(&opts).unwrap();
        assert_eq!(spec.kind, GeometryKind::Parallel3d);
        let max = spec.detector.max.clone().unwrap();
        assert!(
            (max[0] - 3.5).abs() < 1e-12 && (max[1] - 5.0).abs() < 1e-12,
            "{max:?}"
        );
    }
}

#[test]
fn several_entries_and_dxchange_files() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    for (writer, d) in good_files(dir.path()) {
        let path = d.join("dxchange.h5");
        let mut f = DxFile::open(&path).unwrap();
        let info = f.info().clone();
        assert_eq!(
            (info.angles.len(), f.flats().len(), f.darks().len()),
            (12, 3, 2)
        );
        assert!(
            (info.angles[11] - 165f64.to_radians()).abs() < 1e-15,
            "{writer}"
        );
        assert!((info.pixel_size[0].value.unwrap() - 1.3e-6).abs() < 1e-18);
        assert_eq!(info.pixel_size[1].value, None);
        assert_eq!(
            info.pixel_size[1].key,
            "/measurement/instrument/detector/pixel_size_y@units"
        );
        let p = read_all_frames(&mut f).unwrap();
        for ((k, u, v), &x) in p.indexed_iter() {
            assert_eq!(x, dx_value(k, ROWS - 1 - v, u));
        }
        let (at, m) = io_message(info.geometry(&ScanGeometryOptions::default()).unwrap_err());
        assert_eq!(at, path);
        assert!(m.contains("pixel_size_y@units"), "{m}");
        let (_, m) = io_message(
            info.geometry(&ScanGeometryOptions {
                beam: BeamChoice::Cone,
                ..Default::default()
            })
            .unwrap_err(),
        );
        assert!(m.contains("source_distance"), "{m}");
        if writer == "h5py" {
            let two = d.join("two_entries.nx");
            let (_, m) = io_message(NxTomoFile::open(&two).unwrap_err());
            assert!(
                m.contains("2 NXtomo entries") && m.contains("/entry0001"),
                "{m}"
            );
            let e = NxTomoFile::open_entry(&two, "entry0001").unwrap();
            // No source distance: a parallel beam from the sample pixel size.
            let spec = e
                .info()
                .geometry_spec(&ScanGeometryOptions::default())
                .unwrap();
            assert_eq!(spec.kind, GeometryKind::Parallel3d);
        }
    }
}

#[test]
fn malformed_files_are_refused_naming_the_file_and_the_path() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let nx_err = |name: &str, nx: Nx| {
        let p = at(name);
        nx.write(&p);
        let (path, m) = io_message(NxTomoFile::open(&p).unwrap_err());
        assert_eq!(path, p);
        m
    };
    let m = nx_err(
        "no_angles.nx",
        Nx {
            angles: None,
            ..Nx::good()
        },
    );
    assert!(
        m.contains("`/entry0000/sample/rotation_angle`: not found"),
        "{m}"
    );
    let m = nx_err(
        "strings.nx",
        Nx {
            string_data: true,
            ..Nx::good()
        },
    );
    assert!(
        m.contains("instrument/detector/data`: holds strings"),
        "{m}"
    );
    let mut keys = NX_KEYS.to_vec();
    keys.pop();
    let m = nx_err("short_keys.nx", Nx { keys, ..Nx::good() });
    assert!(
        m.contains("image_key_control`: has 28 entries but") && m.contains("29 frames"),
        "{m}"
    );
    let mut keys = NX_KEYS.to_vec();
    keys[7] = 5;
    let m = nx_err("bad_key.nx", Nx { keys, ..Nx::good() });
    assert!(m.contains("frame 7 has the image key 5"), "{m}");
    let mut angles = Nx::good().angles.unwrap();
    angles.push(0.0);
    let m = nx_err(
        "long_angles.nx",
        Nx {
            angles: Some(angles),
            ..Nx::good()
        },
    );
    assert!(m.contains("rotation_angle`: has 30 angles"), "{m}");
    let m = nx_err(
        "not_nxtomo.nx",
        Nx {
            entry_class: "NXcollection",
            ..Nx::good()
        },
    );
    assert!(m.contains("no NXtomo entry"), "{m}");

    // Truncated and non-HDF5 files.
    let good = at("good.nx");
    Nx::good().write(&good);
    let bytes = std::fs::read(&good).unwrap();
    for keep in [bytes.len() / 2, 100, 4] {
        let p = at(&format!("trunc_{keep}.nx"));
        std::fs::write(&p, &bytes[..keep]).unwrap();
        let r = NxTomoFile::open(&p).and_then(|f| f.read_scan().map(|_| ()));
        let (path, m) = io_message(r.unwrap_err());
        assert_eq!(path, p);
        assert!(!m.is_empty());
        println!("truncated to {keep} bytes: {m}");
    }
    let p = at("text.h5");
    std::fs::write(&p, "not hdf5 at all, just text").unwrap();
    let (_, m) = io_message(DxFile::open(&p).unwrap_err());
    assert!(m.contains("not a readable HDF5 file"), "{m}");
    let (_, m) = io_message(DxFile::open(at("missing.h5")).unwrap_err());
    assert!(m.contains("No such file"), "{m}");

    // DXchange: counts and sizes that disagree.
    let p = at("dx_theta.h5");
    write_dx(&p, 11, ROWS);
    let (_, m) = io_message(DxFile::open(&p).unwrap_err());
    assert!(
        m.contains("`/exchange/theta`: has 11 angles but `/exchange/data` has 12"),
        "{m}"
    );
    let p = at("dx_white.h5");
    write_dx(&p, 12, ROWS + 1);
    let (_, m) = io_message(DxFile::open(&p).unwrap_err());
    assert!(
        m.contains("`/exchange/data_white`: has frames of 7 × 6"),
        "{m}"
    );
    // A file without /exchange/data.
    let p = at("empty.h5");
    hdf5::File::create(&p).unwrap();
    let (_, m) = io_message(DxFile::open(&p).unwrap_err());
    assert!(m.contains("`/exchange/data`: not found"), "{m}");
}

#[test]
fn element_types_rodl_cannot_read_are_refused_naming_the_file_and_the_path() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let py = dir.path().join("h5py");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/write_scan_files.py");
    let written = Command::new("python3")
        .args(["-c", "import numpy, h5py"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
        && Command::new("python3")
            .arg(&script)
            .arg("hdf5")
            .arg(&py)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
    if !written {
        eprintln!("python3 has no h5py: the element types are not checked");
        return;
    }
    let refused = py.join("refused");
    let nx = |name: &str| {
        let p = refused.join(name);
        let (path, m) = io_message(
            NxTomoFile::open(&p)
                .and_then(|f| f.read_scan())
                .unwrap_err(),
        );
        assert_eq!(path, p);
        println!("{name}: {m}");
        m
    };
    let dx = |name: &str| {
        let p = refused.join(name);
        let (path, m) = io_message(DxFile::open(&p).and_then(|f| f.read_scan()).unwrap_err());
        assert_eq!(path, p);
        println!("{name}: {m}");
        m
    };
    // h5py stores complex numbers as a compound of two floats.
    let m = nx("complex_data.nx");
    assert!(
        m.contains("`/entry0000/instrument/detector/data`: holds complex numbers"),
        "{m}"
    );
    let m = nx("string_angles.nx");
    assert!(
        m.contains("`/entry0000/sample/rotation_angle`: holds strings"),
        "{m}"
    );
    let m = dx("bool_data.h5");
    assert!(m.contains("`/exchange/data`: holds booleans"), "{m}");
    let m = dx("compound_theta.h5");
    assert!(
        m.contains("`/exchange/theta`: holds compound values"),
        "{m}"
    );
    let m = dx("string_white.h5");
    assert!(m.contains("`/exchange/data_white`: holds strings"), "{m}");
}

/// `read_rows_into` reads a slab of rows by hyperslabs: the rows of the whole frames, for
/// NXtomo (projections among flats and darks) and DXchange files.
#[test]
fn rows_of_frames_read_by_hyperslabs_equal_the_whole_frames() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    Nx::good().write(&dir.path().join("nxtomo.nx"));
    write_dx(&dir.path().join("dxchange.h5"), 12, ROWS);
    let mut stacks: Vec<Box<dyn FrameStack>> = vec![
        Box::new(NxTomoFile::open(dir.path().join("nxtomo.nx")).unwrap()),
        Box::new(DxFile::open(dir.path().join("dxchange.h5")).unwrap()),
    ];
    for stack in &mut stacks {
        let n = stack.len();
        let whole = read_all_frames(stack.as_mut()).unwrap();
        for rows in [0..ROWS, 1..4, 4..5, 0..1, 3..3] {
            let mut out = Array3::<f32>::zeros([n - 1, COLS, rows.len()]);
            stack
                .read_rows_into(1, rows.clone(), out.view_mut())
                .unwrap();
            let want = whole.slice(ndarray::s![1.., .., rows.clone()]);
            assert_eq!(out, want, "{} rows {rows:?}", stack.source().display());
        }
        let mut out = Array3::<f32>::zeros([1, COLS, 2]);
        assert!(stack.read_rows_into(0, 4..6, out.view_mut()).is_err());
        assert!(stack.read_rows_into(n, 0..2, out.view_mut()).is_err());
    }
}
