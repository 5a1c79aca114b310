//! 8-bit grayscale PNG output of 2D images, displayed the way ODL's `show()` displays them.
//!
//! Orientation: rodl (like ODL) indexes a 2D image `[ix, iy]`, x first. The picture shows x to
//! the right and y upwards, as a plot of the plane would: column `c` of the picture is `ix = c`
//! and row `r` (from the top) is `iy = ny − 1 − r`. A slice of a volume shows its two remaining
//! axes the same way (the lower-numbered one to the right, the other upwards).

use std::io::{BufWriter, Write};
use std::path::Path;

use ndarray::{ArrayView2, Axis, Ix2};

use super::temp_file::TempFile;
use crate::{Element, Error, Result, Scalar};

/// How data values map to gray levels.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Window {
    /// From the image's smallest finite value (black) to its largest (white). A constant image
    /// is black.
    #[default]
    Auto,
    /// From `min` (black) to `max` (white); values outside are clipped.
    Range {
        /// The value shown black.
        min: f64,
        /// The value shown white.
        max: f64,
    },
}

/// An 8-bit grayscale picture, row by row from the top.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrayImage {
    /// Pixels per row.
    pub width: usize,
    /// Number of rows.
    pub height: usize,
    /// `width × height` gray levels, row-major, top row first.
    pub pixels: Vec<u8>,
}

impl GrayImage {
    /// The gray level at `row` (from the top) and `col` (from the left).
    pub fn get(&self, row: usize, col: usize) -> Option<u8> {
        (row < self.height && col < self.width).then(|| self.pixels[row * self.width + col])
    }
}

/// The window's `(black, white)` values for the image `a`.
fn resolve_window<T: Scalar>(a: &ArrayView2<'_, T>, window: Window) -> Result<(f64, f64)> {
    match window {
        Window::Range { min, max } => {
            if !(min.is_finite() && max.is_finite() && min < max) {
                return Err(Error::invalid(format!(
                    "PNG window needs finite min < max, got [{min}, {max}]"
                )));
            }
            Ok((min, max))
        }
        Window::Auto => {
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            for v in a.iter().map(|v| v.f64()).filter(|v| v.is_finite()) {
                lo = lo.min(v);
                hi = hi.max(v);
            }
            Ok((lo, hi))
        }
    }
}

/// Gray levels of a 2D array `[x, y]` (see the module documentation for the orientation).
fn gray8<T: Scalar>(a: ArrayView2<'_, T>, window: Window) -> Result<GrayImage> {
    let (lo, hi) = resolve_window(&a, window)?;
    let (nx, ny) = a.dim();
    let scale = if hi > lo { 255.0 / (hi - lo) } else { 0.0 };
    let mut pixels = Vec::with_capacity(nx * ny);
    for row in 0..ny {
        let iy = ny - 1 - row;
        for ix in 0..nx {
            let v = a[[ix, iy]].f64();
            // NaN maps to 0 (`as` saturates and sends NaN to 0); ±∞ are clipped.
            pixels.push(((v - lo) * scale).round().clamp(0.0, 255.0) as u8);
        }
    }
    Ok(GrayImage {
        width: nx,
        height: ny,
        pixels,
    })
}

/// The host array of a tensor element with `ndim` axes.
fn host_array<'a, T: Scalar>(
    x: &'a Element<T>,
    ndim: usize,
    what: &str,
) -> Result<ndarray::ArrayViewD<'a, T>> {
    let a = x.as_array()?;
    if a.ndim() != ndim {
        return Err(Error::invalid(format!(
            "{what} needs a {ndim}D element, got shape {:?}",
            a.shape()
        )));
    }
    Ok(a)
}

/// The 8-bit picture of a 2D host element (`[x, y]`), displayed as ODL's `show()` does: x to the
/// right, y upwards.
///
/// ```
/// use rodl::io::{to_gray8, Window};
/// let space = rodl::rn::<f64>(&[3, 2])?; // x: 3 columns, y: 2 rows
/// let x = space.element_from_vec(vec![0.0, 1.0, 0.0, 0.5, 0.0, 0.0])?; // [ix, iy], C order
/// let img = to_gray8(&x, Window::Auto)?;
/// assert_eq!((img.width, img.height), (3, 2));
/// assert_eq!(img.pixels, vec![255, 128, 0, 0, 0, 0]); // top row: iy = 1
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn to_gray8<T: Scalar>(x: &Element<T>, window: Window) -> Result<GrayImage> {
    let a = host_array(x, 2, "to_gray8")?;
    let a = a
        .into_dimensionality::<Ix2>()
        .map_err(|e| Error::invalid(e.to_string()))?;
    gray8(a, window)
}

/// The 8-bit picture of the slice `index` along `axis` of a 3D host element: the two remaining
/// axes in order are shown to the right and upwards (for `axis = 2`: x right, y up). With
/// [`Window::Auto`] the window is the slice's own value range.
pub fn slice_to_gray8<T: Scalar>(
    x: &Element<T>,
    axis: usize,
    index: usize,
    window: Window,
) -> Result<GrayImage> {
    let a = host_array(x, 3, "slice_to_gray8")?;
    if axis >= 3 {
        return Err(Error::invalid(format!(
            "slice axis must be 0, 1 or 2, got {axis}"
        )));
    }
    let n = a.shape()[axis];
    if index >= n {
        return Err(Error::invalid(format!(
            "slice index {index} out of range for axis {axis} of length {n}"
        )));
    }
    let s = a
        .index_axis_move(Axis(axis), index)
        .into_dimensionality::<Ix2>()
        .map_err(|e| Error::invalid(e.to_string()))?;
    gray8(s, window)
}

/// Writes a 2D host element as an 8-bit grayscale PNG (see [`to_gray8`]), atomically.
///
/// ```no_run
/// use rodl::io::{write_png, Window};
/// use rodl::tomo::phantom::shepp_logan;
/// let space = rodl::uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[256, 256])?;
/// write_png("phantom.png", &shepp_logan(&space, true)?, Window::Range { min: 0.0, max: 1.0 })?;
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn write_png<T: Scalar>(path: impl AsRef<Path>, x: &Element<T>, window: Window) -> Result<()> {
    write_gray_png(path, &to_gray8(x, window)?)
}

/// Writes the slice `index` along `axis` of a 3D host element as an 8-bit grayscale PNG (see
/// [`slice_to_gray8`]), atomically.
pub fn write_png_slice<T: Scalar>(
    path: impl AsRef<Path>,
    x: &Element<T>,
    axis: usize,
    index: usize,
    window: Window,
) -> Result<()> {
    write_gray_png(path, &slice_to_gray8(x, axis, index, window)?)
}

/// Writes a [`GrayImage`] as an 8-bit grayscale PNG. The data go to a temporary file in the
/// target's directory that is renamed onto `path` once complete and synced: on any error the
/// temporary file is removed and an existing file at `path` is left as it was.
pub fn write_gray_png(path: impl AsRef<Path>, image: &GrayImage) -> Result<()> {
    let path = path.as_ref();
    let io_err = |e: &dyn std::fmt::Display| Error::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let (w32, h32) = png_size(image)?;
    let (temp, file) = TempFile::create(path).map_err(|e| io_err(&e))?;
    let mut out = BufWriter::new(file);
    encode(&mut out, image, w32, h32).map_err(|e| io_err(&e))?;
    out.flush().map_err(|e| io_err(&e))?;
    let file = out.into_inner().map_err(|e| io_err(e.error()))?;
    file.sync_all().map_err(|e| io_err(&e))?;
    drop(file);
    temp.commit(path).map_err(|e| io_err(&e))
}

/// The checked width and height of `image` for a PNG.
fn png_size(image: &GrayImage) -> Result<(u32, u32)> {
    let (w, h) = (image.width, image.height);
    if w == 0 || h == 0 || Some(image.pixels.len()) != w.checked_mul(h) {
        return Err(Error::invalid(format!(
            "a {w} × {h} image needs {w} × {h} pixels, got {}",
            image.pixels.len()
        )));
    }
    match (u32::try_from(w), u32::try_from(h)) {
        (Ok(a), Ok(b)) if a < 1 << 31 && b < 1 << 31 => Ok((a, b)),
        _ => Err(Error::invalid(format!("{w} × {h} is too large for PNG"))),
    }
}

fn encode<W: Write>(out: W, image: &GrayImage, w: u32, h: u32) -> std::io::Result<()> {
    let mut encoder = ::png::Encoder::new(out, w, h);
    encoder.set_color(::png::ColorType::Grayscale);
    encoder.set_depth(::png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
    writer
        .write_image_data(&image.pixels)
        .map_err(std::io::Error::other)?;
    writer.finish().map_err(std::io::Error::other)
}

/// Encodes a [`GrayImage`] as an 8-bit grayscale PNG into `out` (a file the caller manages,
/// a buffer, …); [`write_gray_png`] writes one to a path atomically.
///
/// ```
/// use rodl::io::{encode_gray_png, GrayImage};
/// let image = GrayImage { width: 2, height: 1, pixels: vec![0, 255] };
/// let mut bytes = Vec::new();
/// encode_gray_png(&mut bytes, &image)?;
/// assert!(bytes.starts_with(b"\x89PNG"));
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn encode_gray_png<W: Write>(out: W, image: &GrayImage) -> Result<()> {
    let (w, h) = png_size(image)?;
    encode(out, image, w, h).map_err(|e| Error::invalid(format!("cannot encode the PNG: {e}")))
}
