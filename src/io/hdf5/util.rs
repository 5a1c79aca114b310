//! Reading HDF5 datasets and attributes with errors that name the file and the HDF5 path.

use std::ops::Range;
use std::path::{Path, PathBuf};

use ::hdf5::types::{FixedAscii, FixedUnicode, TypeDescriptor, VarLenAscii, VarLenUnicode};
use ::hdf5::{Dataset, File, Group, LocationType};
use ndarray::{s, ArrayViewMut3, Axis, Ix3};

use crate::io::frames::{check_read, check_rows, put_image, FrameStack};
use crate::io::FileValue;
use crate::memory::check_host_array;
use crate::{Error, Result};

/// An [`Error::Io`] for `path` about the HDF5 object `key`.
pub(crate) fn h5_err(path: &Path, key: &str, message: impl std::fmt::Display) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        message: format!("`{key}`: {message}"),
    }
}

/// An open HDF5 file and its path, for messages.
pub(crate) struct H5 {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
}

/// `a/b` joined as an absolute HDF5 path.
pub(crate) fn join(parent: &str, name: &str) -> String {
    if parent.ends_with('/') {
        format!("{parent}{name}")
    } else {
        format!("{parent}/{name}")
    }
}

impl H5 {
    /// Opens `path` read-only; a missing, truncated or non-HDF5 file is an [`Error::Io`].
    pub(crate) fn open(path: &Path) -> Result<Self> {
        let io = |m: String| Error::Io {
            path: path.to_path_buf(),
            message: m,
        };
        let meta = std::fs::metadata(path).map_err(|e| io(e.to_string()))?;
        if !meta.is_file() {
            return Err(io("not a regular file".into()));
        }
        let file = File::open(path).map_err(|e| {
            io(format!(
                "not a readable HDF5 file (truncated, or another format): {e}"
            ))
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
        })
    }

    /// What `key` is: a group, a dataset, or nothing.
    pub(crate) fn kind(&self, key: &str) -> Option<LocationType> {
        if !link_exists(&self.file, key) {
            return None;
        }
        self.file.loc_type_by_name(key).ok()
    }

    /// The group `key`.
    pub(crate) fn group(&self, key: &str) -> Result<Group> {
        match self.kind(key) {
            Some(LocationType::Group) => {
                self.file.group(key).map_err(|e| h5_err(&self.path, key, e))
            }
            Some(_) => Err(h5_err(&self.path, key, "is not a group")),
            None => Err(h5_err(&self.path, key, "not found in the file")),
        }
    }

    /// The dataset `key`, or an error naming it ("not found", "is a group").
    pub(crate) fn dataset(&self, key: &str) -> Result<Dataset> {
        match self.kind(key) {
            Some(LocationType::Dataset) => self
                .file
                .dataset(key)
                .map_err(|e| h5_err(&self.path, key, e)),
            Some(_) => Err(h5_err(&self.path, key, "is not a dataset")),
            None => Err(h5_err(&self.path, key, "not found in the file")),
        }
    }

    /// The dataset `key` if it exists.
    pub(crate) fn dataset_opt(&self, key: &str) -> Result<Option<Dataset>> {
        match self.kind(key) {
            None => Ok(None),
            Some(_) => self.dataset(key).map(Some),
        }
    }

    /// The numbers of the dataset `key` as f64 (integers or floats; anything else is an error).
    pub(crate) fn numbers(&self, key: &str) -> Result<Vec<f64>> {
        let ds = self.dataset(key)?;
        self.numbers_of(&ds, key)
    }

    pub(crate) fn numbers_of(&self, ds: &Dataset, key: &str) -> Result<Vec<f64>> {
        check_numeric(&self.path, key, ds)?;
        check_host_array(&[ds.size()], 8)?;
        ds.read_raw::<f64>()
            .map_err(|e| h5_err(&self.path, key, format!("cannot be read: {e}")))
    }

    /// The integers of the dataset `key` (integer types only).
    pub(crate) fn integers(&self, key: &str) -> Result<Vec<i64>> {
        let ds = self.dataset(key)?;
        let d = descriptor(&self.path, key, &ds)?;
        if !matches!(
            d,
            TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_) | TypeDescriptor::Enum(_)
        ) {
            return Err(h5_err(
                &self.path,
                key,
                format!("holds {}, expected integers", describe(&d)),
            ));
        }
        check_host_array(&[ds.size()], 8)?;
        ds.read_raw::<i64>()
            .map_err(|e| h5_err(&self.path, key, format!("cannot be read: {e}")))
    }

    /// The text of the attribute `name` of the object `key`, if it exists and is a string.
    pub(crate) fn attr_text(&self, key: &str, name: &str) -> Option<String> {
        let attr = match self.kind(key)? {
            LocationType::Group => self.file.group(key).ok()?.attr(name).ok()?,
            LocationType::Dataset => self.file.dataset(key).ok()?.attr(name).ok()?,
            _ => return None,
        };
        read_text(&attr)
    }

    /// The text of the dataset `key`, if it is a string dataset.
    pub(crate) fn text(&self, key: &str) -> Option<String> {
        let ds = self.file.dataset(key).ok()?;
        read_text(&ds)
    }

    /// A single length at `key` (a scalar or a one-element, or constant, array) converted to
    /// metres by its `units` attribute (metres when absent, as NeXus' NX_LENGTH default).
    /// Absent: [`FileValue::missing`].
    pub(crate) fn length(&self, key: &str) -> Result<FileValue> {
        if self.kind(key).is_none() {
            return Ok(FileValue::missing(key));
        }
        let v = self.single(key)?;
        let factor = match self.attr_text(key, "units") {
            None => 1.0,
            Some(u) => length_factor(&u).ok_or_else(|| {
                h5_err(
                    &self.path,
                    &format!("{key}@units"),
                    format!("unknown length unit {u:?} (m, cm, mm, um, µm, nm)"),
                )
            })?,
        };
        Ok(FileValue::found(key, v * factor))
    }

    /// An energy at `key` in keV, by its `units` attribute (eV, keV, MeV); a value without
    /// units counts as missing (under the key `KEY@units`).
    pub(crate) fn energy(&self, key: &str) -> Result<FileValue> {
        if self.kind(key).is_none() {
            return Ok(FileValue::missing(key));
        }
        let v = self.single(key)?;
        let Some(u) = self.attr_text(key, "units") else {
            return Ok(FileValue::missing(format!("{key}@units")));
        };
        let factor = match u.trim() {
            "keV" | "kev" | "KeV" => 1.0,
            "eV" | "ev" => 1e-3,
            "MeV" => 1e3,
            _ => {
                return Err(h5_err(
                    &self.path,
                    &format!("{key}@units"),
                    format!("unknown energy unit {u:?} (eV, keV, MeV)"),
                ))
            }
        };
        Ok(FileValue::found(key, v * factor))
    }

    /// One number at `key`: a scalar, or an array whose entries are all equal.
    pub(crate) fn single(&self, key: &str) -> Result<f64> {
        let v = self.numbers(key)?;
        match v.first() {
            None => Err(h5_err(&self.path, key, "is empty")),
            Some(&x) if v.iter().all(|&y| y == x || (y.is_nan() && x.is_nan())) => Ok(x),
            Some(_) => Err(h5_err(
                &self.path,
                key,
                format!("holds {} different values, expected one", v.len()),
            )),
        }
    }

    /// Angles at `key` in radians, converted by the `units` attribute (degrees when absent).
    pub(crate) fn angles(&self, key: &str) -> Result<Vec<f64>> {
        let v = self.numbers(key)?;
        let factor = match self.attr_text(key, "units") {
            None => std::f64::consts::PI / 180.0,
            Some(u) => angle_factor(&u).ok_or_else(|| {
                h5_err(
                    &self.path,
                    &format!("{key}@units"),
                    format!("unknown angle unit {u:?} (degree, rad)"),
                )
            })?,
        };
        if let Some(k) = v.iter().position(|a| !a.is_finite()) {
            return Err(h5_err(&self.path, key, format!("angle {k} is {}", v[k])));
        }
        Ok(v.into_iter().map(|a| a * factor).collect())
    }
}

fn link_exists(file: &File, key: &str) -> bool {
    // Every intermediate group must exist too (H5Lexists fails otherwise).
    let mut at = String::new();
    for part in key.trim_start_matches('/').split('/') {
        at = join(if at.is_empty() { "/" } else { &at }, part);
        if !file.link_exists(&at) {
            return false;
        }
    }
    true
}

fn read_text(c: &::hdf5::Container) -> Option<String> {
    let d = c.dtype().ok()?.to_descriptor().ok()?;
    let text = match d {
        TypeDescriptor::VarLenUnicode => c.read_raw::<VarLenUnicode>().ok()?.first()?.to_string(),
        TypeDescriptor::VarLenAscii => c.read_raw::<VarLenAscii>().ok()?.first()?.to_string(),
        TypeDescriptor::FixedAscii(_) => {
            c.read_raw::<FixedAscii<1024>>().ok()?.first()?.to_string()
        }
        TypeDescriptor::FixedUnicode(_) => c
            .read_raw::<FixedUnicode<1024>>()
            .ok()?
            .first()?
            .to_string(),
        _ => return None,
    };
    Some(text.trim_end_matches('\0').trim().to_string())
}

/// The element type of `ds`.
pub(crate) fn descriptor(path: &Path, key: &str, ds: &Dataset) -> Result<TypeDescriptor> {
    ds.dtype()
        .and_then(|t| t.to_descriptor())
        .map_err(|e| h5_err(path, key, format!("has an unreadable element type: {e}")))
}

/// A description of an element type for messages.
pub(crate) fn describe(d: &TypeDescriptor) -> String {
    match d {
        TypeDescriptor::Integer(s) => format!("{}-bit signed integers", *s as usize * 8),
        TypeDescriptor::Unsigned(s) => format!("{}-bit unsigned integers", *s as usize * 8),
        TypeDescriptor::Float(s) => format!("{}-bit floats", *s as usize * 8),
        TypeDescriptor::Boolean => "booleans".into(),
        TypeDescriptor::Enum(_) => "enumerated values".into(),
        // h5py (and NumPy's other HDF5 writers) store complex numbers as a compound {r, i}.
        TypeDescriptor::Compound(c)
            if c.fields.len() == 2
                && c.fields[0].name == "r"
                && c.fields[1].name == "i"
                && c.fields
                    .iter()
                    .all(|f| matches!(f.ty, TypeDescriptor::Float(_))) =>
        {
            "complex numbers (a compound of `r` and `i`)".into()
        }
        TypeDescriptor::Compound(_) => "compound values".into(),
        TypeDescriptor::FixedAscii(_)
        | TypeDescriptor::FixedUnicode(_)
        | TypeDescriptor::VarLenAscii
        | TypeDescriptor::VarLenUnicode => "strings".into(),
        other => format!("values of type {other}"),
    }
}

/// Errors unless `ds` holds integers or floats.
pub(crate) fn check_numeric(path: &Path, key: &str, ds: &Dataset) -> Result<()> {
    let d = descriptor(path, key, ds)?;
    match d {
        TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_) | TypeDescriptor::Float(_) => {
            Ok(())
        }
        d => Err(h5_err(
            path,
            key,
            format!("holds {}, expected integers or floats", describe(&d)),
        )),
    }
}

/// Metres per `unit`.
pub(crate) fn length_factor(unit: &str) -> Option<f64> {
    let u = unit.trim();
    Some(match u {
        "m" | "meter" | "meters" | "metre" | "metres" => 1.0,
        "cm" | "centimeter" | "centimeters" | "centimetre" | "centimetres" => 1e-2,
        "mm" | "millimeter" | "millimeters" | "millimetre" | "millimetres" => 1e-3,
        "um" | "µm" | "μm" | "micron" | "microns" | "micrometer" | "micrometers" | "micrometre"
        | "micrometres" => 1e-6,
        "nm" | "nanometer" | "nanometers" | "nanometre" | "nanometres" => 1e-9,
        _ => return None,
    })
}

/// Radians per `unit`.
pub(crate) fn angle_factor(unit: &str) -> Option<f64> {
    Some(match unit.trim() {
        "degree" | "degrees" | "deg" | "°" => std::f64::consts::PI / 180.0,
        "rad" | "radian" | "radians" => 1.0,
        _ => return None,
    })
}

/// A 3D dataset of frames `[frame, row, col]` read as a [`FrameStack`] of the frames `frames`
/// (indices into the dataset), consecutive runs by hyperslabs.
pub(crate) struct DatasetFrames {
    pub(crate) path: PathBuf,
    pub(crate) key: String,
    pub(crate) ds: Dataset,
    pub(crate) frames: Vec<usize>,
    /// `[nu, nv]` = `[cols, rows]`.
    pub(crate) shape: [usize; 2],
}

impl DatasetFrames {
    /// The frame dataset `key`: 3D, integers or floats; returns it with its frame count.
    pub(crate) fn open(h5: &H5, key: &str) -> Result<(Self, usize)> {
        let ds = h5.dataset(key)?;
        check_numeric(&h5.path, key, &ds)?;
        let shape = ds.shape();
        if shape.len() != 3 {
            return Err(h5_err(
                &h5.path,
                key,
                format!("has the shape {shape:?}; frames must be 3D [frames, rows, columns]"),
            ));
        }
        if shape[1] == 0 || shape[2] == 0 {
            return Err(h5_err(
                &h5.path,
                key,
                format!("has empty frames (shape {shape:?})"),
            ));
        }
        Ok((
            Self {
                path: h5.path.clone(),
                key: key.to_string(),
                ds,
                frames: (0..shape[0]).collect(),
                shape: [shape[2], shape[1]],
            },
            shape[0],
        ))
    }

    /// The same dataset restricted to `frames`.
    pub(crate) fn select(&self, frames: Vec<usize>) -> Self {
        Self {
            path: self.path.clone(),
            key: self.key.clone(),
            ds: self.ds.clone(),
            frames,
            shape: self.shape,
        }
    }
}

impl FrameStack for DatasetFrames {
    fn source(&self) -> &Path {
        &self.path
    }

    fn len(&self) -> usize {
        self.frames.len()
    }

    fn frame_shape(&self) -> [usize; 2] {
        self.shape
    }

    fn read_into(&mut self, first: usize, mut out: ArrayViewMut3<'_, f32>) -> Result<()> {
        check_read(self, first, &out)?;
        let k = out.shape()[0];
        let wanted = &self.frames[first..first + k];
        let mut j = 0;
        while j < k {
            // A run of consecutive frames: one hyperslab.
            let start = wanted[j];
            let mut end = j + 1;
            while end < k && wanted[end] == wanted[end - 1] + 1 {
                end += 1;
            }
            let n = end - j;
            let block = self
                .ds
                .read_slice::<f32, _, Ix3>(s![start..start + n, .., ..])
                .map_err(|e| {
                    h5_err(
                        &self.path,
                        &self.key,
                        format!(
                            "frames {start}..{} cannot be read (truncated file?): {e}",
                            start + n
                        ),
                    )
                })?;
            for (t, img) in block.axis_iter(Axis(0)).enumerate() {
                let frame = out.index_axis_mut(Axis(0), j + t);
                match img.as_slice() {
                    Some(sl) => put_image(sl, frame),
                    None => put_image(&img.iter().copied().collect::<Vec<_>>(), frame),
                }
            }
            j = end;
        }
        Ok(())
    }

    fn read_rows_into(
        &mut self,
        first: usize,
        rows: Range<usize>,
        mut out: ArrayViewMut3<'_, f32>,
    ) -> Result<()> {
        let [nu, nv] = self.shape;
        check_rows(&self.path, nv, &rows, [nu, rows.len()], &out)?;
        let k = out.shape()[0];
        if first
            .checked_add(k)
            .is_none_or(|end| end > self.frames.len())
        {
            return Err(Error::invalid(format!(
                "frames {first}..{} of {}: it has {} frames",
                first.saturating_add(k),
                self.path.display(),
                self.frames.len()
            )));
        }
        if rows.is_empty() {
            return Ok(());
        }
        // v = nv − 1 − image row: the rows v ∈ a..b are the image rows nv − b .. nv − a.
        let (r0, r1) = (nv - rows.end, nv - rows.start);
        let wanted = &self.frames[first..first + k];
        let mut j = 0;
        while j < k {
            let start = wanted[j];
            let mut end = j + 1;
            while end < k && wanted[end] == wanted[end - 1] + 1 {
                end += 1;
            }
            let n = end - j;
            // One hyperslab: the run of frames, the rows, every column.
            let block = self
                .ds
                .read_slice::<f32, _, Ix3>(s![start..start + n, r0..r1, ..])
                .map_err(|e| {
                    h5_err(
                        &self.path,
                        &self.key,
                        format!(
                            "rows {}..{} of frames {start}..{} cannot be read (truncated \
                             file?): {e}",
                            rows.start,
                            rows.end,
                            start + n
                        ),
                    )
                })?;
            for (t, img) in block.axis_iter(Axis(0)).enumerate() {
                let frame = out.index_axis_mut(Axis(0), j + t);
                match img.as_slice() {
                    Some(sl) => put_image(sl, frame),
                    None => put_image(&img.iter().copied().collect::<Vec<_>>(), frame),
                }
            }
            j = end;
        }
        Ok(())
    }
}
