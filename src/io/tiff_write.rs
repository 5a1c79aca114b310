//! Volumes out as TIFF stacks: one file per slice along z, as 32-bit floats or scaled to 16-bit
//! unsigned integers with the scale recorded (see [`write_volume_tiff`]).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use ndarray::{ArrayView3, Ix3};
use tiff::encoder::{colortype, TiffEncoder};
use tiff::tags::Tag;

use super::png::Window;
use super::temp_file::TempFile;
use crate::{Element, Error, Result, Scalar};

/// The pixel format of the slices that [`write_volume_tiff`] writes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TiffSliceFormat {
    /// 32-bit floats, the values as they are.
    F32,
    /// 16-bit unsigned integers: the window's lower end maps to 0 and its upper end to 65535
    /// (values outside are clipped, NaN is stored as 0); [`Window::Auto`] is the smallest and
    /// largest finite value of the whole volume, so all slices share one scale.
    U16(Window),
}

/// What [`write_volume_tiff`] wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct TiffVolume {
    /// The slice files, `z = 0, 1, …`.
    pub files: Vec<PathBuf>,
    /// A stored value `s` stands for `offset + scale · s` (for [`TiffSliceFormat::F32`]: 0).
    pub offset: f64,
    /// See [`TiffVolume::offset`] (for [`TiffSliceFormat::F32`]: 1; for a constant volume in 16
    /// bit: 0).
    pub scale: f64,
}

/// Writes a 3D host element `[x, y, z]` as a TIFF stack in the folder `dir` (created if
/// missing): one file `{prefix}{z}.tif` per slice along z (`z` zero-padded to at least 4
/// digits), each slice an image with x to the right and y upwards (row 0 is the largest y), as
/// [`crate::io::write_png_slice`] shows it with `axis = 2`.
///
/// Every file's `ImageDescription` tag records the slice and the scale as JSON, e.g.
/// `{"rodl_volume_slice": 3, "slices": 64, "offset": -0.5, "scale": 1.5e-5}` (a stored value
/// `s` stands for `offset + scale · s`). The slices are written to temporary files in `dir` that
/// are renamed onto their names only once all are complete: on any error no slice file of this
/// call is left behind, half-written or not.
///
/// ```
/// use rodl::io::{write_volume_tiff, TiffSliceFormat, Window};
/// let dir = tempfile::tempdir()?;
/// let space = rodl::uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[4, 3, 2])?;
/// let x = space.element_from_vec((0..24).map(|i| i as f32).collect())?;
/// let out = write_volume_tiff(dir.path(), "rec_", &x, TiffSliceFormat::U16(Window::Auto))?;
/// assert_eq!(out.files.len(), 2);
/// assert!(out.files[1].ends_with("rec_0001.tif"));
/// assert!((out.scale - 23.0 / 65535.0).abs() < 1e-12);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_volume_tiff<T: Scalar>(
    dir: impl AsRef<Path>,
    prefix: &str,
    volume: &Element<T>,
    format: TiffSliceFormat,
) -> Result<TiffVolume> {
    let dir = dir.as_ref();
    let a = volume.as_array()?;
    let a = a.into_dimensionality::<Ix3>().map_err(|_| {
        Error::invalid(format!(
            "write_volume_tiff needs a 3D element, got shape {:?}",
            volume
                .as_array()
                .map(|a| a.shape().to_vec())
                .unwrap_or_default()
        ))
    })?;
    let (nx, ny, nz) = a.dim();
    let (w, h) = match (u32::try_from(nx), u32::try_from(ny)) {
        (Ok(w), Ok(h)) if (nx as u64) * (ny as u64) * 4 < u32::MAX as u64 => (w, h),
        _ => {
            return Err(Error::invalid(format!(
                "a slice of {nx} × {ny} pixels is too large for a TIFF file"
            )))
        }
    };
    if prefix.contains(['/', '\\']) {
        return Err(Error::invalid(format!(
            "the file prefix {prefix:?} must not contain a path separator"
        )));
    }
    let io = |path: &Path, e: &dyn std::fmt::Display| Error::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, &e))?;
    let (offset, scale) = match format {
        TiffSliceFormat::F32 => (0.0, 1.0),
        TiffSliceFormat::U16(window) => {
            let (lo, hi) = match window {
                Window::Range { min, max } => {
                    if !(min.is_finite() && max.is_finite() && min < max) {
                        return Err(Error::invalid(format!(
                            "a 16-bit window needs finite min < max, got [{min}, {max}]"
                        )));
                    }
                    (min, max)
                }
                Window::Auto => {
                    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
                    for v in a.iter().map(|v| v.f64()).filter(|v| v.is_finite()) {
                        lo = lo.min(v);
                        hi = hi.max(v);
                    }
                    if lo > hi {
                        (0.0, 0.0)
                    } else {
                        (lo, hi)
                    }
                }
            };
            (lo, (hi - lo) / 65535.0)
        }
    };
    let target = Target {
        dir,
        prefix,
        slices: nz,
        size: (w, h),
        format,
        offset,
        scale,
    };
    let done = target.write(0, a)?;
    let mut files = Vec::with_capacity(nz);
    for (temp, path) in done {
        temp.commit(&path).map_err(|e| io(&path, &e))?;
        files.push(path);
    }
    Ok(TiffVolume {
        files,
        offset,
        scale,
    })
}

/// Where and how slices go: the folder, the file names' prefix, the number of slices of the whole
/// volume (for the names' digits and the descriptions), the pixel size and format, and the
/// stored values' offset and scale.
struct Target<'a> {
    dir: &'a Path,
    prefix: &'a str,
    slices: usize,
    size: (u32, u32),
    format: TiffSliceFormat,
    offset: f64,
    scale: f64,
}

/// Slices per task of [`Target::write`]: a task reads each `(x, y)` of its slab once, taking the
/// consecutive values of its slices from one cache line.
const SLICES_PER_TASK: usize = 8;

impl Target<'_> {
    /// Writes the slices `z0 ..` of the volume from `slab = [nx, ny, k]` into temporary files,
    /// by all cores at once (groups of [`SLICES_PER_TASK`] consecutive slices per task, each
    /// slice gathered, encoded and synced); returns them in order with their final paths. On an
    /// error the files written are removed (their [`TempFile`]s dropped).
    fn write<T: Scalar>(
        &self,
        z0: usize,
        slab: ArrayView3<'_, T>,
    ) -> Result<Vec<(TempFile, PathBuf)>> {
        use rayon::prelude::*;
        let k = slab.dim().2;
        let groups: Vec<std::ops::Range<usize>> = (0..k)
            .step_by(SLICES_PER_TASK)
            .map(|j| j..(j + SLICES_PER_TASK).min(k))
            .collect();
        let written: Vec<Vec<(TempFile, PathBuf)>> = groups
            .into_par_iter()
            .map(|g| self.write_group(z0, &slab, g))
            .collect::<Result<_>>()?;
        Ok(written.into_iter().flatten().collect())
    }

    /// The slices `js` of `slab` (the volume's slices `z0 + j`), one after the other.
    fn write_group<T: Scalar>(
        &self,
        z0: usize,
        slab: &ArrayView3<'_, T>,
        js: std::ops::Range<usize>,
    ) -> Result<Vec<(TempFile, PathBuf)>> {
        let (nx, ny, _) = slab.dim();
        // Row-major images (row 0 is the largest y), gathered in one pass over the slab.
        let mut images: Vec<Vec<T>> = js.clone().map(|_| Vec::with_capacity(nx * ny)).collect();
        for r in 0..ny {
            let iy = ny - 1 - r;
            for ix in 0..nx {
                let lane = slab.slice(ndarray::s![ix, iy, js.clone()]);
                for (image, &v) in images.iter_mut().zip(lane.iter()) {
                    image.push(v);
                }
            }
        }
        let digits = self.slices.saturating_sub(1).to_string().len().max(4);
        let mut out = Vec::with_capacity(js.len());
        for (j, image) in js.zip(images) {
            let z = z0 + j;
            let path = self.dir.join(format!("{}{z:0digits$}.tif", self.prefix));
            let io = |e: &dyn std::fmt::Display| Error::Io {
                path: path.clone(),
                message: e.to_string(),
            };
            let (temp, file) = TempFile::create(&path).map_err(|e| io(&e))?;
            self.encode(file, z, &image).map_err(|e| io(&e))?;
            out.push((temp, path));
        }
        Ok(out)
    }

    /// Encodes the row-major image of slice `z` into `file` and syncs it.
    fn encode<T: Scalar>(
        &self,
        file: File,
        z: usize,
        image: &[T],
    ) -> std::result::Result<(), Box<dyn std::error::Error>> {
        let (w, h) = self.size;
        let description = format!(
            "{{\"rodl_volume_slice\": {z}, \"slices\": {}, \"offset\": {:e}, \"scale\": {:e}}}",
            self.slices, self.offset, self.scale
        );
        let mut out = BufWriter::with_capacity(1 << 20, file);
        {
            let mut tiff = TiffEncoder::new(&mut out)?;
            match self.format {
                TiffSliceFormat::F32 => {
                    let data: Vec<f32> = image.iter().map(|v| v.f64() as f32).collect();
                    let mut image = tiff.new_image::<colortype::Gray32Float>(w, h)?;
                    image
                        .encoder()
                        .write_tag(Tag::ImageDescription, description.as_str())?;
                    image.write_data(&data)?;
                }
                TiffSliceFormat::U16(_) => {
                    let inv = if self.scale > 0.0 {
                        1.0 / self.scale
                    } else {
                        0.0
                    };
                    // NaN maps to 0 (`as` saturates and sends NaN to 0).
                    let data: Vec<u16> = image
                        .iter()
                        .map(|v| ((v.f64() - self.offset) * inv).round().clamp(0.0, 65535.0) as u16)
                        .collect();
                    let mut image = tiff.new_image::<colortype::Gray16>(w, h)?;
                    image
                        .encoder()
                        .write_tag(Tag::ImageDescription, description.as_str())?;
                    image.write_data(&data)?;
                }
            }
        }
        out.flush()?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(())
    }
}

/// A TIFF stack written slab by slab: the files and the `ImageDescription` of
/// [`write_volume_tiff`] (32-bit floats, or 16 bit in a fixed [`Window::Range`]: a slab does
/// not know the whole volume's range), each slice into a temporary file of `dir` as it comes
/// ([`TiffStackWriter::write_slices`]), all renamed onto their names by
/// [`TiffStackWriter::commit`]. Dropped before that, it removes its temporary files: an error
/// midway leaves no slice behind.
///
/// ```
/// use ndarray::Array3;
/// use rodl::io::{TiffSliceFormat, TiffStackWriter};
/// let dir = tempfile::tempdir()?;
/// let mut w = TiffStackWriter::create(dir.path(), "rec_", [4, 3, 5], TiffSliceFormat::F32)?;
/// w.write_slices(0, Array3::<f32>::zeros([4, 3, 2]).view())?;
/// w.write_slices(2, Array3::<f32>::ones([4, 3, 3]).view())?;
/// let files = w.commit()?;
/// assert_eq!(files.len(), 5);
/// assert!(files[4].ends_with("rec_0004.tif"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TiffStackWriter {
    dir: PathBuf,
    prefix: String,
    shape: [usize; 3],
    size: (u32, u32),
    format: TiffSliceFormat,
    offset: f64,
    scale: f64,
    done: Vec<(TempFile, PathBuf)>,
}

impl TiffStackWriter {
    /// A writer of the stack of a volume of `shape = [nx, ny, nz]` in `dir` (created if
    /// missing), files `{prefix}{z}.tif` as [`write_volume_tiff`] names them.
    /// [`TiffSliceFormat::U16`] needs a [`Window::Range`].
    pub fn create(
        dir: impl AsRef<Path>,
        prefix: &str,
        shape: [usize; 3],
        format: TiffSliceFormat,
    ) -> Result<Self> {
        let dir = dir.as_ref();
        let [nx, ny, _] = shape;
        let size = match (u32::try_from(nx), u32::try_from(ny)) {
            (Ok(w), Ok(h)) if (nx as u64) * (ny as u64) * 4 < u32::MAX as u64 => (w, h),
            _ => {
                return Err(Error::invalid(format!(
                    "a slice of {nx} × {ny} pixels is too large for a TIFF file"
                )))
            }
        };
        if prefix.contains(['/', '\\']) {
            return Err(Error::invalid(format!(
                "the file prefix {prefix:?} must not contain a path separator"
            )));
        }
        let (offset, scale) =
            match format {
                TiffSliceFormat::F32 => (0.0, 1.0),
                TiffSliceFormat::U16(Window::Range { min, max })
                    if min.is_finite() && max.is_finite() && min < max =>
                {
                    (min, (max - min) / 65535.0)
                }
                TiffSliceFormat::U16(_) => return Err(Error::invalid(
                    "a TIFF stack written by slabs in 16 bit needs a fixed window (finite min < \
                     max): the whole volume's range is not known before its last slab",
                )),
            };
        std::fs::create_dir_all(dir).map_err(|e| Error::Io {
            path: dir.to_path_buf(),
            message: e.to_string(),
        })?;
        Ok(Self {
            dir: dir.to_path_buf(),
            prefix: prefix.to_string(),
            shape,
            size,
            format,
            offset,
            scale,
            done: Vec::new(),
        })
    }

    /// Writes the slices `z0 .. z0 + k` from `slab = [nx, ny, k]` (each once) to temporary
    /// files.
    pub fn write_slices(&mut self, z0: usize, slab: ArrayView3<'_, f32>) -> Result<()> {
        let [nx, ny, nz] = self.shape;
        let (a, b, k) = slab.dim();
        if (a, b) != (nx, ny) || z0.checked_add(k).is_none_or(|end| end > nz) {
            return Err(Error::shape(
                format!("TiffStackWriter::write_slices at z = {z0}"),
                &[nx, ny, nz.saturating_sub(z0)],
                &[a, b, k],
            ));
        }
        let target = Target {
            dir: &self.dir,
            prefix: &self.prefix,
            slices: nz,
            size: self.size,
            format: self.format,
            offset: self.offset,
            scale: self.scale,
        };
        let written = target.write(z0, slab)?;
        self.done.extend(written);
        Ok(())
    }

    /// The temporary files of the slices written so far, in order (for a caller that removes
    /// them on a signal).
    pub fn temporary_files(&self) -> Vec<&Path> {
        self.done.iter().map(|(t, _)| t.path()).collect()
    }

    /// The number of slices written so far.
    pub fn written(&self) -> usize {
        self.done.len()
    }

    /// Renames the slices written onto their names; returns their paths in the order written.
    pub fn commit(self) -> Result<Vec<PathBuf>> {
        let mut files = Vec::with_capacity(self.done.len());
        for (temp, path) in self.done {
            temp.commit(&path).map_err(|e| Error::Io {
                path: path.clone(),
                message: e.to_string(),
            })?;
            files.push(path);
        }
        Ok(files)
    }
}
