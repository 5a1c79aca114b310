//! TIFF stacks in (`rodl::io::TiffStack`) and volumes out (`write_volume_tiff`): files written
//! by Python's `tifffile` when python3 has it (else by the `tiff` crate, and the test says so),
//! the orientation `[frame, u = column, v = rows − 1 − row]`, natural file order, multi-page
//! files, chunked reading, and the refusal of every malformed stack with a message that names
//! the file.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use ndarray::Array3;
use rodl::io::{
    for_each_chunk, read_all_frames, read_frames, write_volume_tiff, FileValue, FrameStack,
    LengthUnit, Scan, ScanGeometryOptions, TiffPixel, TiffSliceFormat, TiffStack, Window,
};
use rodl::tomo::{Geometry, TomoSpec};
use rodl::{Error, UniformPartition};
use tiff::encoder::{colortype, TiffEncoder};

const ROWS: usize = 5;
const COLS: usize = 7;

fn u16_value(k: usize, r: usize, c: usize) -> f32 {
    ((k * 131 + r * 17 + c * 3) % 65536) as f32
}

fn u8_value(k: usize, r: usize, c: usize) -> f32 {
    ((k * 31 + r * 7 + c) % 256) as f32
}

fn f32_value(k: usize, r: usize, c: usize) -> f32 {
    k as f32 + 0.5 * r as f32 + 0.25 * c as f32 - 3.0
}

fn image<T: Copy>(f: impl Fn(usize, usize) -> T) -> Vec<T> {
    (0..ROWS)
        .flat_map(|r| (0..COLS).map(move |c| (r, c)))
        .map(|(r, c)| f(r, c))
        .collect()
}

fn has_python(modules: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// The stacks of tests/scripts/write_scan_files.py, written by tifffile when python3 has it,
/// else the same files written here with the `tiff` crate.
fn stacks() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/write_scan_files.py");
    if has_python("numpy, tifffile") {
        let st = Command::new("python3")
            .arg(&script)
            .arg("tiff")
            .arg(&out)
            .status()
            .unwrap();
        assert!(st.success(), "{} failed", script.display());
        return (dir, out);
    }
    eprintln!("python3 has no tifffile: the TIFF files are written with the tiff crate instead");
    let write = |path: PathBuf, pages: &[Vec<u8>], kind: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut f = File::create(path).unwrap();
        let mut enc = TiffEncoder::new(&mut f).unwrap();
        for p in pages {
            match kind {
                "u8" => enc
                    .write_image::<colortype::Gray8>(COLS as u32, ROWS as u32, p)
                    .unwrap(),
                "u16" => {
                    let v: Vec<u16> = p
                        .chunks(2)
                        .map(|b| u16::from_le_bytes([b[0], b[1]]))
                        .collect();
                    enc.write_image::<colortype::Gray16>(COLS as u32, (v.len() / COLS) as u32, &v)
                        .unwrap()
                }
                "f32" => {
                    let v: Vec<f32> = p
                        .chunks(4)
                        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .collect();
                    enc.write_image::<colortype::Gray32Float>(COLS as u32, ROWS as u32, &v)
                        .unwrap()
                }
                "i16" => {
                    let v = vec![0i16; ROWS * COLS];
                    enc.write_image::<colortype::GrayI16>(COLS as u32, ROWS as u32, &v)
                        .unwrap()
                }
                "f64" => {
                    let v = vec![0f64; ROWS * COLS];
                    enc.write_image::<colortype::Gray64Float>(COLS as u32, ROWS as u32, &v)
                        .unwrap()
                }
                "rgb" => {
                    let v = vec![0u8; ROWS * COLS * 3];
                    enc.write_image::<colortype::RGB8>(COLS as u32, ROWS as u32, &v)
                        .unwrap()
                }
                "rgb16" => {
                    let v = vec![0u16; ROWS * COLS * 3];
                    enc.write_image::<colortype::RGB16>(COLS as u32, ROWS as u32, &v)
                        .unwrap()
                }
                "i64" => {
                    let v = vec![0i64; ROWS * COLS];
                    enc.write_image::<colortype::GrayI64>(COLS as u32, ROWS as u32, &v)
                        .unwrap()
                }
                "u32" => {
                    let v = vec![0u32; ROWS * COLS];
                    enc.write_image::<colortype::Gray32>(COLS as u32, ROWS as u32, &v)
                        .unwrap()
                }
                "i8" => {
                    let v = vec![0i8; ROWS * COLS];
                    enc.write_image::<colortype::GrayI8>(COLS as u32, ROWS as u32, &v)
                        .unwrap()
                }
                _ => unreachable!(),
            }
        }
    };
    let bytes16 = |v: Vec<u16>| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    for k in 0..12 {
        let img = image(|r, c| u16_value(k, r, c) as u16);
        write(
            out.join(format!("u16/proj_{k}.tif")),
            &[bytes16(img)],
            "u16",
        );
    }
    let pages: Vec<Vec<u8>> = (0..4)
        .map(|k| image(|r, c| u8_value(k, r, c) as u8))
        .collect();
    write(out.join("u8/stack.tif"), &pages, "u8");
    for k in 0..3 {
        let img: Vec<u8> = image(|r, c| f32_value(k, r, c))
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        write(out.join(format!("f32/f_{k:03}.tiff")), &[img], "f32");
    }
    write(out.join("refused/int16.tif"), &[vec![]], "i16");
    write(out.join("refused/float64.tif"), &[vec![]], "f64");
    write(out.join("refused/rgb.tif"), &[vec![]], "rgb");
    write(out.join("refused/rgb16.tif"), &[vec![]], "rgb16");
    write(out.join("refused/int64.tif"), &[vec![]], "i64");
    write(out.join("refused/uint32.tif"), &[vec![]], "u32");
    write(out.join("refused/int8.tif"), &[vec![]], "i8");
    // (The tiff crate writes no complex pages: complex64.tif comes from tifffile only.)
    let zeros16 = |rows: usize| bytes16(vec![0u16; rows * COLS]);
    write(out.join("mixed_size/a.tif"), &[zeros16(ROWS)], "u16");
    write(out.join("mixed_size/b.tif"), &[zeros16(ROWS + 1)], "u16");
    write(out.join("mixed_type/a.tif"), &[zeros16(ROWS)], "u16");
    write(
        out.join("mixed_type/b.tif"),
        &[vec![0u8; ROWS * COLS]],
        "u8",
    );
    (dir, out)
}

/// Asserts `frames[k, c, ROWS − 1 − r] == value(k, r, c)` for all frames.
fn check_frames(frames: &Array3<f32>, first: usize, value: impl Fn(usize, usize, usize) -> f32) {
    assert_eq!(frames.shape()[1..], [COLS, ROWS]);
    for k in 0..frames.shape()[0] {
        for r in 0..ROWS {
            for c in 0..COLS {
                assert_eq!(
                    frames[[k, c, ROWS - 1 - r]],
                    value(first + k, r, c),
                    "frame {k}, row {r}, column {c}"
                );
            }
        }
    }
}

fn io_message(e: Error) -> (PathBuf, String) {
    match e {
        Error::Io { path, message } => (path, message),
        other => panic!("expected an Io error, got {other:?}"),
    }
}

#[test]
fn stacks_of_each_pixel_type_read_exactly() {
    let (_dir, out) = stacks();
    // 16 bit: a folder of 12 single-page files, some zlib-compressed, in natural order.
    let mut s = TiffStack::open(out.join("u16")).unwrap();
    assert_eq!(
        (s.len(), s.frame_shape(), s.pixel()),
        (12, [COLS, ROWS], TiffPixel::U16)
    );
    let names: Vec<String> = s
        .files()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names[..3], ["proj_0.tif", "proj_1.tif", "proj_2.tif"]);
    assert_eq!(names[11], "proj_11.tif");
    check_frames(&read_all_frames(&mut s).unwrap(), 0, u16_value);
    // A range, read out of order, then chunked streaming.
    check_frames(&read_frames(&mut s, 7..10).unwrap(), 7, u16_value);
    check_frames(&read_frames(&mut s, 2..4).unwrap(), 2, u16_value);
    let mut seen = Vec::new();
    for_each_chunk(&mut s, 5, |first, chunk| {
        check_frames(&chunk.to_owned(), first, u16_value);
        seen.push((first, chunk.shape()[0]));
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, [(0, 5), (5, 5), (10, 2)]);
    // 8 bit: one multi-page file.
    let mut s = TiffStack::open(out.join("u8/stack.tif")).unwrap();
    assert_eq!((s.len(), s.pixel()), (4, TiffPixel::U8));
    check_frames(&read_all_frames(&mut s).unwrap(), 0, u8_value);
    check_frames(&read_frames(&mut s, 3..4).unwrap(), 3, u8_value);
    check_frames(&read_frames(&mut s, 1..3).unwrap(), 1, u8_value);
    // 32-bit float, by a pattern.
    let mut s = TiffStack::open(out.join("f32/f_*.tiff")).unwrap();
    assert_eq!((s.len(), s.pixel()), (3, TiffPixel::F32));
    check_frames(&read_all_frames(&mut s).unwrap(), 0, f32_value);
}

#[test]
fn malformed_stacks_are_refused_naming_the_file() {
    let (dir, out) = stacks();
    let err = |p: PathBuf| io_message(TiffStack::open(p).unwrap_err());

    let (path, m) = err(out.join("does_not_exist"));
    assert!(path.ends_with("does_not_exist"), "{m}");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(empty.join("notes.txt"), "x").unwrap();
    let (_, m) = err(empty.clone());
    assert!(m.contains("no TIFF files"), "{m}");
    let (_, m) = err(out.join("u16/flat_*.tif"));
    assert!(m.contains("no file matches"), "{m}");

    for (name, what) in [
        ("int16.tif", "16-bit signed integer"),
        ("float64.tif", "64-bit float"),
        ("rgb.tif", "RGB"),
        ("rgb16.tif", "RGB"),
        ("int64.tif", "64-bit signed integer"),
        ("uint32.tif", "32-bit unsigned integer"),
        ("int8.tif", "8-bit signed integer"),
        ("complex64.tif", "complex float"),
    ] {
        if !out.join("refused").join(name).exists() {
            continue; // complex64.tif without tifffile
        }
        let (path, m) = err(out.join("refused").join(name));
        assert!(path.ends_with(name), "{name}: {m}");
        assert!(
            m.contains(what) && m.contains("rodl reads grayscale"),
            "{name}: {m}"
        );
    }
    let (path, m) = err(out.join("mixed_size"));
    assert!(
        path.ends_with("b.tif") && m.contains("one frame size"),
        "{m}"
    );
    let (path, m) = err(out.join("mixed_type"));
    assert!(
        path.ends_with("b.tif") && m.contains("one pixel type"),
        "{m}"
    );

    // Not a TIFF file, and truncated files (header intact, data cut; header cut).
    let bad = dir.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    std::fs::write(bad.join("a.tif"), b"this is not an image").unwrap();
    let (path, m) = err(bad.join("a.tif"));
    assert!(
        path.ends_with("a.tif") && m.contains("not a TIFF file"),
        "{m}"
    );
    let src = std::fs::read(out.join("u16/proj_0.tif")).unwrap();
    // tifffile writes the image data before the directory, the tiff crate after: cut the file
    // where it loses the pixel data either way, and keep its directory.
    let trunc = bad.join("trunc.tif");
    let data_at = find_strip(&out.join("u16/proj_0.tif"));
    let mut cut = src.clone();
    cut.truncate(data_at.0 + data_at.1 / 2);
    std::fs::write(&trunc, &cut).unwrap();
    let e = TiffStack::open(&trunc).and_then(|mut s| read_all_frames(&mut s).map(|_| ()));
    let (path, m) = io_message(e.unwrap_err());
    assert!(path.ends_with("trunc.tif"), "{m}");
    assert!(m.contains("truncated") || m.contains("ends early"), "{m}");
    std::fs::write(&trunc, &src[..6]).unwrap();
    let (_, m) = err(trunc);
    assert!(
        m.contains("ends early") || m.contains("not a readable TIFF"),
        "{m}"
    );
}

/// The offset and length of the first strip of a TIFF file.
fn find_strip(path: &Path) -> (usize, usize) {
    let mut d = tiff::decoder::Decoder::new(File::open(path).unwrap()).unwrap();
    let o = d
        .find_tag_unsigned_vec::<u64>(tiff::tags::Tag::StripOffsets)
        .unwrap()
        .unwrap();
    let c = d
        .find_tag_unsigned_vec::<u64>(tiff::tags::Tag::StripByteCounts)
        .unwrap()
        .unwrap();
    (o[0] as usize, c[0] as usize)
}

#[test]
fn volumes_round_trip_as_float_and_16_bit_stacks() {
    let dir = tempfile::tempdir().unwrap();
    let space = rodl::uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[6, 4, 3]).unwrap();
    let vals: Vec<f32> = (0..72).map(|i| (i as f32 * 0.37).sin() * 10.0).collect();
    let x = space.element_from_vec(vals.clone()).unwrap();
    let a = x
        .as_array()
        .unwrap()
        .into_dimensionality::<ndarray::Ix3>()
        .unwrap();

    let out = write_volume_tiff(dir.path().join("f"), "rec_", &x, TiffSliceFormat::F32).unwrap();
    assert_eq!((out.files.len(), out.offset, out.scale), (3, 0.0, 1.0));
    let mut s = TiffStack::open(dir.path().join("f")).unwrap();
    let back = read_all_frames(&mut s).unwrap(); // [z, u = x, v = y]
    for ((ix, iy, iz), &v) in a.indexed_iter() {
        assert_eq!(back[[iz, ix, iy]], v);
    }
    let desc = tiff_description(&out.files[2]);
    assert!(desc.contains("\"rodl_volume_slice\": 2"), "{desc}");

    let out = write_volume_tiff(
        dir.path().join("u"),
        "rec_",
        &x,
        TiffSliceFormat::U16(Window::Auto),
    )
    .unwrap();
    let mut s = TiffStack::open(dir.path().join("u")).unwrap();
    assert_eq!(s.pixel(), TiffPixel::U16);
    let back = read_all_frames(&mut s).unwrap();
    let mut worst = 0.0f64;
    for ((ix, iy, iz), &v) in a.indexed_iter() {
        let restored = out.offset + out.scale * back[[iz, ix, iy]] as f64;
        worst = worst.max((restored - v as f64).abs());
    }
    assert!(
        worst <= 0.5 * out.scale + 1e-6,
        "{worst} vs step {}",
        out.scale
    );
    let desc = tiff_description(&out.files[0]);
    assert!(desc.contains("\"scale\""), "{desc}");
    // No temporary files are left.
    for d in ["f", "u"] {
        let names: Vec<_> = std::fs::read_dir(dir.path().join(d))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| n.starts_with("rec_")), "{names:?}");
    }
    // A failed write leaves nothing behind: slice 0's name is taken by a folder.
    let blocked = dir.path().join("blocked");
    std::fs::create_dir_all(blocked.join("rec_0000.tif")).unwrap();
    let e = write_volume_tiff(&blocked, "rec_", &x, TiffSliceFormat::F32).unwrap_err();
    let (path, _) = io_message(e);
    assert!(path.ends_with("rec_0000.tif"));
    let names: Vec<_> = std::fs::read_dir(&blocked)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["rec_0000.tif"]);
    // A 2D element is refused.
    let flat = rodl::uniform_discr::<f32>(&[-1.0; 2], &[1.0; 2], &[2, 2]).unwrap();
    let e = write_volume_tiff(dir.path(), "p", &flat.zero().unwrap(), TiffSliceFormat::F32);
    assert!(e.unwrap_err().to_string().contains("3D"));
}

fn tiff_description(path: &Path) -> String {
    let mut d = tiff::decoder::Decoder::new(File::open(path).unwrap()).unwrap();
    match d.get_tag(tiff::tags::Tag::ImageDescription).unwrap() {
        tiff::decoder::ifd::Value::Ascii(s) => s,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_tiff_scan_gives_a_geometry_only_with_the_sizes_it_lacks() {
    let (dir, out) = stacks();
    let n = 12;
    let angles: Vec<f64> = (0..n)
        .map(|k| k as f64 * std::f64::consts::PI / n as f64)
        .collect();
    let f = out.join("u16");
    // Angles must match the projections.
    let e = Scan::from_tiff(&f, None, None, angles[..5].to_vec()).unwrap_err();
    assert!(io_message(e).1.contains("12 projections but 5 angles"));
    // Flats of another size are refused.
    let e = Scan::from_tiff(
        &f,
        Some(&out.join("mixed_size/b.tif")),
        None,
        angles.clone(),
    )
    .unwrap_err();
    let m = io_message(e).1;
    assert!(m.contains("flats"), "{m}");
    let mut scan = Scan::from_tiff(&f, Some(&f), None, angles.clone()).unwrap();
    assert_eq!(scan.flats.len(), 12);
    assert_eq!(scan.darks.len(), 0);
    let opts = ScanGeometryOptions::default();
    let (path, m) = io_message(scan.info.geometry(&opts).unwrap_err());
    assert_eq!(path, f);
    assert!(
        m.contains("pixel size") && m.contains("TIFF stack records none"),
        "{m}"
    );
    for axis in 0..2 {
        scan.info.sample_pixel_size[axis] = FileValue::found("given", 0.01e-3);
    }
    let opts = ScanGeometryOptions {
        det_offset_px: 1.5,
        unit: LengthUnit::Millimetre,
        ..Default::default()
    };
    let g = scan.info.geometry(&opts).unwrap();
    assert_eq!(g.data_shape(), vec![12, COLS, ROWS]);
    // The same geometry built directly: 12 angles over [0, π), detector of 0.01 mm pixels.
    let ang = UniformPartition::new(
        &[0.0 - std::f64::consts::PI / 24.0],
        &[std::f64::consts::PI - std::f64::consts::PI / 24.0],
        &[12],
    )
    .unwrap();
    let det = UniformPartition::new(&[-0.035, -0.025], &[0.035, 0.025], &[COLS, ROWS]).unwrap();
    let direct = Geometry::parallel_3d(&ang, &det, [0.0, 0.0, 1.0], [0.015, 0.0]).unwrap();
    for (a, b) in g.vec().views().iter().zip(direct.vec().views()) {
        for i in 0..3 {
            assert!((a.src[i] - b.src[i]).abs() < 1e-12);
            assert!((a.det_center[i] - b.det_center[i]).abs() < 1e-12);
            assert!((a.det_u[i] - b.det_u[i]).abs() < 1e-15);
            assert!((a.det_v[i] - b.det_v[i]).abs() < 1e-15);
        }
    }
    // Written as geometry JSON and read back: the same geometry.
    let json = dir.path().join("g.json");
    scan.info.write_geometry_json(&json, &opts, None).unwrap();
    let spec = TomoSpec::from_file(&json).unwrap();
    assert_eq!(spec.volume.shape, vec![COLS, COLS, ROWS]);
    assert_eq!(spec.geometry.build().unwrap().vec(), g.vec());
    let mut text = String::new();
    File::open(&json)
        .and_then(|mut f| std::io::Read::read_to_string(&mut f, &mut text))
        .unwrap();
    assert!(text.contains("\"det_offset\""), "{text}");
    let _ = File::create(dir.path().join("x")).and_then(|mut f| f.write_all(b""));
}

/// `read_rows_into` reads the rows of uncompressed pages from their strips alone and decodes
/// compressed pages whole: both give the rows of `read_into`, in several strip layouts.
#[test]
fn rows_of_frames_read_alone_equal_the_whole_frames() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, how: usize| {
        let path = dir.path().join(name);
        let mut f = File::create(&path).unwrap();
        let mut enc = match how {
            2 => TiffEncoder::new(&mut f)
                .unwrap()
                .with_compression(tiff::encoder::Compression::Packbits),
            _ => TiffEncoder::new(&mut f).unwrap(),
        };
        for k in 0..3 {
            match how {
                0 => {
                    let px = image(|r, c| u16_value(k, r, c) as u16);
                    let mut page = enc
                        .new_image::<colortype::Gray16>(COLS as u32, ROWS as u32)
                        .unwrap();
                    page.rows_per_strip(2).unwrap();
                    page.write_data(&px).unwrap();
                }
                1 => enc
                    .write_image::<colortype::Gray32Float>(
                        COLS as u32,
                        ROWS as u32,
                        &image(|r, c| f32_value(k, r, c)),
                    )
                    .unwrap(),
                _ => enc
                    .write_image::<colortype::Gray16>(
                        COLS as u32,
                        ROWS as u32,
                        &image(|r, c| u16_value(k, r, c) as u16),
                    )
                    .unwrap(),
            }
        }
        path
    };
    for (name, how) in [("strips.tif", 0), ("f32.tif", 1), ("packbits.tif", 2)] {
        let path = write(name, how);
        let mut stack = TiffStack::open(&path).unwrap();
        let whole = read_all_frames(&mut stack).unwrap();
        for rows in [0..ROWS, 1..4, 4..5, 0..1, 2..2] {
            let mut out = Array3::<f32>::zeros([2, COLS, rows.len()]);
            stack
                .read_rows_into(1, rows.clone(), out.view_mut())
                .unwrap();
            let want = whole.slice(ndarray::s![1..3, .., rows.clone()]);
            assert_eq!(out, want, "{name} rows {rows:?}");
        }
        let mut out = Array3::<f32>::zeros([1, COLS, 2]);
        assert!(stack.read_rows_into(0, 4..6, out.view_mut()).is_err());
        assert!(stack.read_rows_into(3, 0..2, out.view_mut()).is_err());
    }
}
