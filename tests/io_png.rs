//! PNG output (rodl::io): pixel values and orientation read back with the `png` decoder,
//! windows, slices of volumes, atomic writes and errors.

use std::fs;
use std::path::{Path, PathBuf};

use rodl::io::{
    slice_to_gray8, to_gray8, write_gray_png, write_png, write_png_slice, GrayImage, Window,
};
use rodl::{rn, uniform_discr, Error};

/// A fresh empty directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rodl-io-png-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Decodes a PNG file: (width, height, color type, bit depth, pixels).
fn read_png(path: &Path) -> (u32, u32, png::ColorType, png::BitDepth, Vec<u8>) {
    let decoder = png::Decoder::new(fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    (
        info.width,
        info.height,
        info.color_type,
        info.bit_depth,
        buf,
    )
}

#[test]
fn written_pixels_follow_the_window_and_odl_orientation() {
    let dir = scratch("pixels");
    let (nx, ny) = (7, 5);
    let space = uniform_discr::<f64>(&[0.0, 0.0], &[7.0, 5.0], &[nx, ny]).unwrap();
    // value = ix + 10 iy: distinct in every pixel
    let x = space
        .element_from_fn(|p| (p[0] - 0.5) + 10.0 * (p[1] - 0.5))
        .unwrap();
    let path = dir.join("img.png");
    let (lo, hi) = (-1.0, 50.0);
    write_png(&path, &x, Window::Range { min: lo, max: hi }).unwrap();
    let (w, h, color, depth, px) = read_png(&path);
    assert_eq!((w, h), (nx as u32, ny as u32));
    assert_eq!(
        (color, depth),
        (png::ColorType::Grayscale, png::BitDepth::Eight)
    );
    for row in 0..ny {
        for col in 0..nx {
            // column = x index, row from the top = y index from the top (y upwards)
            let v = col as f64 + 10.0 * (ny - 1 - row) as f64;
            let want = ((v - lo) / (hi - lo) * 255.0).round() as u8;
            assert_eq!(px[row * nx + col], want, "row {row}, col {col}");
        }
    }
    assert_eq!(listing(&dir), vec!["img.png"]);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn auto_window_and_clipping() {
    let space = rn::<f32>(&[4, 3]).unwrap();
    let x = space
        .element_from_vec(vec![
            -2.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
        ])
        .unwrap();
    // Auto: min → 0, max → 255, linear in between
    let img = to_gray8(&x, Window::Auto).unwrap();
    assert_eq!(img.get(2, 0), Some(0)); // [0, 0] = −2 is bottom-left
    assert_eq!(img.get(0, 3), Some(255)); // [3, 2] = 10 is top-right
    assert_eq!(
        img.get(1, 1),
        Some(((3.0 + 2.0) / 12.0 * 255.0f64).round() as u8)
    ); // [1, 1]
       // A window narrower than the data clips.
    let img = to_gray8(&x, Window::Range { min: 0.0, max: 5.0 }).unwrap();
    assert_eq!(img.get(2, 0), Some(0));
    assert_eq!(img.get(0, 3), Some(255));
    assert_eq!(img.get(1, 1), Some(153)); // 3 / 5 · 255
                                          // A constant image is black; NaN is black, ±∞ clip.
    let c = to_gray8(&space.full(3.5).unwrap(), Window::Auto).unwrap();
    assert!(c.pixels.iter().all(|&p| p == 0));
    let odd = space
        .element_from_vec(vec![
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            1.0,
            0.5,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
        ])
        .unwrap();
    let img = to_gray8(&odd, Window::Auto).unwrap();
    assert_eq!(img.get(2, 0), Some(0)); // NaN
    assert_eq!(img.get(1, 0), Some(255)); // +∞
    assert_eq!(img.get(0, 0), Some(0)); // −∞
    assert_eq!(img.get(1, 1), Some(255)); // 1 = max of the finite values
    assert_eq!(img.get(0, 1), Some(128)); // 0.5
}

#[test]
fn volume_slices_show_the_remaining_axes() {
    let shape = [4, 5, 6];
    let space = rn::<f64>(&shape).unwrap();
    let x = space
        .element_from_vec((0..120).map(|k| k as f64).collect())
        .unwrap();
    let a = x.as_array().unwrap();
    let win = Window::Range {
        min: 0.0,
        max: 119.0,
    };
    let g = |v: f64| (v / 119.0 * 255.0).round() as u8;
    for axis in 0..3 {
        for index in [0, shape[axis] - 1] {
            let img = slice_to_gray8(&x, axis, index, win).unwrap();
            let rest: Vec<usize> = (0..3).filter(|&k| k != axis).collect();
            assert_eq!((img.width, img.height), (shape[rest[0]], shape[rest[1]]));
            for row in 0..img.height {
                for col in 0..img.width {
                    let mut idx = [0; 3];
                    idx[axis] = index;
                    idx[rest[0]] = col;
                    idx[rest[1]] = img.height - 1 - row;
                    assert_eq!(
                        img.get(row, col),
                        Some(g(a[idx])),
                        "axis {axis} {index} ({row}, {col})"
                    );
                }
            }
        }
    }
    // written slice = decoded slice
    let dir = scratch("slices");
    let path = dir.join("z.png");
    write_png_slice(&path, &x, 2, 3, win).unwrap();
    let (w, h, _, _, px) = read_png(&path);
    let img = slice_to_gray8(&x, 2, 3, win).unwrap();
    assert_eq!(
        (w as usize, h as usize, px),
        (img.width, img.height, img.pixels)
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn failed_writes_leave_nothing_behind() {
    let dir = scratch("atomic");
    let space = rn::<f64>(&[8, 8]).unwrap();
    let x = space
        .element_from_vec((0..64).map(|k| k as f64).collect())
        .unwrap();
    // Missing directory: an Io error naming the file, nothing created.
    let missing = dir.join("no/such/dir/img.png");
    match write_png(&missing, &x, Window::Auto) {
        Err(Error::Io { path, .. }) => assert_eq!(path, missing),
        other => panic!("expected an Io error, got {other:?}"),
    }
    assert!(listing(&dir).is_empty());
    // The target is a directory: the image is encoded into a temporary file, the final rename
    // fails, and the temporary file is removed.
    fs::create_dir(dir.join("taken.png")).unwrap();
    assert!(matches!(
        write_png(dir.join("taken.png"), &x, Window::Auto),
        Err(Error::Io { .. })
    ));
    assert_eq!(listing(&dir), vec!["taken.png"]);
    assert!(listing(&dir.join("taken.png")).is_empty());
    // An existing file is replaced only by a complete image, and kept on error.
    let good = dir.join("good.png");
    fs::write(&good, b"old").unwrap();
    assert!(matches!(
        write_png(&good, &x, Window::Range { min: 1.0, max: 1.0 }),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(fs::read(&good).unwrap(), b"old");
    write_png(&good, &x, Window::Auto).unwrap();
    assert_eq!(read_png(&good).4.len(), 64);
    assert_eq!(listing(&dir), vec!["good.png", "taken.png"]);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn png_arguments_are_checked() {
    let dir = scratch("args");
    let s3 = rn::<f64>(&[3, 4, 5]).unwrap();
    let v = s3.one().unwrap();
    let s1 = rn::<f64>(&[9]).unwrap();
    let p = dir.join("x.png");
    assert!(matches!(
        write_png(&p, &v, Window::Auto),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        write_png(&p, &s1.one().unwrap(), Window::Auto),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        write_png_slice(&p, &v, 3, 0, Window::Auto),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        write_png_slice(&p, &v, 1, 4, Window::Auto),
        Err(Error::InvalidArgument(_))
    ));
    let s2 = rn::<f64>(&[3, 4]).unwrap();
    assert!(matches!(
        write_png_slice(&p, &s2.one().unwrap(), 0, 0, Window::Auto),
        Err(Error::InvalidArgument(_))
    ));
    for (min, max) in [(1.0, 0.0), (f64::NAN, 1.0), (0.0, f64::INFINITY)] {
        assert!(matches!(
            write_png(&p, &s2.one().unwrap(), Window::Range { min, max }),
            Err(Error::InvalidArgument(_))
        ));
    }
    let bad = GrayImage {
        width: 3,
        height: 2,
        pixels: vec![0; 5],
    };
    assert!(matches!(
        write_gray_png(&p, &bad),
        Err(Error::InvalidArgument(_))
    ));
    let prod = rodl::Space::product(vec![s2.clone(), s2.clone()]).unwrap();
    assert!(write_png(&p, &prod.one().unwrap(), Window::Auto).is_err());
    assert!(listing(&dir).is_empty());
    fs::remove_dir_all(&dir).unwrap();
}

/// A GPU element must be copied to the host explicitly (needs CUDA device 0).
#[cfg(feature = "cuda")]
#[test]
fn png_refuses_gpu_elements() {
    let space = rn::<f32>(&[8, 8])
        .unwrap()
        .with_device(rodl::Device::Cuda(0))
        .expect("needs CUDA device 0");
    let x = space.one().unwrap();
    let err = to_gray8(&x, Window::Auto).unwrap_err();
    assert!(err.to_string().contains("to_host"), "{err}");
    assert!(to_gray8(&x.to_host().unwrap(), Window::Auto).is_ok());
}
