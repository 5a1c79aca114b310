//! NeXus files with an NXtomo entry (ESRF, Diamond, PSI, …).

use std::path::Path;

use ::hdf5::LocationType;

use super::opened::{sealed, Hdf5Layout, Hdf5Scan};
use super::util::{h5_err, join, DatasetFrames, H5};
use crate::io::frames::read_all_frames;
use crate::io::{Frames, ScanFormat, ScanInfo};
use crate::{Error, Result};

/// A NeXus file's NXtomo entry, opened for reading: the metadata, flats and darks are read at
/// [`NxTomoFile::open`]; the projections are a [`FrameStack`](crate::io::FrameStack) read in chunks of views (HDF5
/// hyperslabs), or all at once by [`NxTomoFile::read_scan`].
///
/// The layout is that of the NXtomo application definition as ESRF's `nxtomo` package writes
/// it (paths relative to the entry, an `NXentry` group whose `definition` is `NXtomo`):
///
/// | path | use |
/// |---|---|
/// | `instrument/detector/data` | frames `[frame, row, column]`, integers or floats |
/// | `instrument/detector/image_key_control` (else `image_key`) | per frame: 0 projection, 1 flat, 2 dark (−1 alignment and 3 invalid frames are skipped) |
/// | `sample/rotation_angle` | per frame, in its `units` (degrees when absent) |
/// | `instrument/detector/x_pixel_size`, `y_pixel_size` | detector pixel size along u (columns) and v (rows) |
/// | `sample/x_pixel_size`, `y_pixel_size` | the sample-plane pixel size (NXtomo ≥ 1.5) |
/// | `instrument/detector/distance` | sample–detector distance |
/// | `instrument/source/distance` | source–sample distance (NXtomo ≥ 1.4; its magnitude is used) |
///
/// Lengths are converted by their `units` attribute (metres when absent, as NeXus prescribes).
/// What the file lacks stays missing in the [`ScanInfo`] (building a geometry that needs it is
/// an error naming the key); a missing `data`, `image_key` or `rotation_angle`, counts that
/// disagree with the number of frames, unknown image keys, non-numeric data, a truncated file
/// — each is an [`Error::Io`] naming the file and the HDF5 path.
///
/// ```no_run
/// use rodl::io::{NxTomoFile, ScanGeometryOptions};
/// let scan = NxTomoFile::open("sample.nx")?.read_scan()?;
/// let geometry = scan.info.geometry(&ScanGeometryOptions::default())?;
/// # Ok::<(), rodl::Error>(())
/// ```
pub type NxTomoFile = Hdf5Scan<NxTomo>;

/// The NXtomo layout of NeXus files ([`NxTomoFile`]).
pub enum NxTomo {}

impl sealed::Sealed for NxTomo {}
impl Hdf5Layout for NxTomo {
    const NAME: &'static str = "NxTomoFile";
}

/// Whether the group `key` is an NXentry with the NXtomo definition.
fn is_nxtomo_entry(h5: &H5, key: &str) -> bool {
    let class = h5.attr_text(key, "NX_class");
    if class.as_deref() != Some("NXentry") {
        return false;
    }
    let def_key = join(key, "definition");
    let def = h5
        .text(&def_key)
        .or_else(|| h5.attr_text(key, "definition"));
    def.is_some_and(|d| d.eq_ignore_ascii_case("NXtomo"))
}

impl Hdf5Scan<NxTomo> {
    /// The HDF5 paths of the file's NXtomo entries (`NXentry` groups at the root whose
    /// `definition` is `NXtomo`).
    pub fn entries(path: impl AsRef<Path>) -> Result<Vec<String>> {
        let h5 = H5::open(path.as_ref())?;
        Self::entries_of(&h5)
    }

    fn entries_of(h5: &H5) -> Result<Vec<String>> {
        let names = h5
            .file
            .member_names()
            .map_err(|e| h5_err(&h5.path, "/", e))?;
        Ok(names
            .into_iter()
            .map(|n| join("/", &n))
            .filter(|k| h5.kind(k) == Some(LocationType::Group) && is_nxtomo_entry(h5, k))
            .collect())
    }

    /// Opens the file's only NXtomo entry (an error lists them when there are several).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let h5 = H5::open(path)?;
        let entries = Self::entries_of(&h5)?;
        match entries.as_slice() {
            [one] => Self::read(h5, &one.clone()),
            [] => Err(Error::Io {
                path: path.to_path_buf(),
                message: "no NXtomo entry: no group at the root has NX_class = NXentry and \
                          definition = NXtomo"
                    .into(),
            }),
            many => Err(Error::Io {
                path: path.to_path_buf(),
                message: format!(
                    "{} NXtomo entries ({}): open one with NxTomoFile::open_entry",
                    many.len(),
                    many.join(", ")
                ),
            }),
        }
    }

    /// Opens the NXtomo entry `entry` (an HDF5 path such as `/entry0000`).
    pub fn open_entry(path: impl AsRef<Path>, entry: &str) -> Result<Self> {
        let h5 = H5::open(path.as_ref())?;
        let entry = join("/", entry.trim_start_matches('/'));
        h5.group(&entry)?;
        if !is_nxtomo_entry(&h5, &entry) {
            return Err(h5_err(
                &h5.path,
                &entry,
                "is not an NXentry with definition NXtomo",
            ));
        }
        Self::read(h5, &entry)
    }

    fn read(h5: H5, entry: &str) -> Result<Self> {
        let key = |rel: &str| join(entry, rel);
        let data_key = key("instrument/detector/data");
        let (all, frames) = DatasetFrames::open(&h5, &data_key)?;
        let control_key = key("instrument/detector/image_key_control");
        let image_key = key("instrument/detector/image_key");
        let (keys_at, keys) = match h5.dataset_opt(&control_key)? {
            Some(_) => (control_key.clone(), h5.integers(&control_key)?),
            None => (image_key.clone(), h5.integers(&image_key)?),
        };
        if keys.len() != frames {
            return Err(h5_err(
                &h5.path,
                &keys_at,
                format!(
                    "has {} entries but `{data_key}` has {frames} frames",
                    keys.len()
                ),
            ));
        }
        let (mut proj, mut flat, mut dark) = (Vec::new(), Vec::new(), Vec::new());
        for (k, &v) in keys.iter().enumerate() {
            match v {
                0 => proj.push(k),
                1 => flat.push(k),
                2 => dark.push(k),
                -1 | 3 => {}
                other => {
                    return Err(h5_err(
                        &h5.path,
                        &keys_at,
                        format!(
                            "frame {k} has the image key {other}; NXtomo keys are 0 \
                             (projection), 1 (flat), 2 (dark), 3 (invalid), −1 (alignment)"
                        ),
                    ))
                }
            }
        }
        if proj.is_empty() {
            return Err(h5_err(
                &h5.path,
                &keys_at,
                "marks no frame as a projection (0)",
            ));
        }
        let angle_key = key("sample/rotation_angle");
        let all_angles = h5.angles(&angle_key)?;
        if all_angles.len() != frames {
            return Err(h5_err(
                &h5.path,
                &angle_key,
                format!(
                    "has {} angles but `{data_key}` has {frames} frames",
                    all_angles.len()
                ),
            ));
        }
        let angles = proj.iter().map(|&k| all_angles[k]).collect();
        let info = ScanInfo {
            path: h5.path.clone(),
            format: ScanFormat::NxTomo {
                entry: entry.to_string(),
            },
            angles,
            projection_positions: Some(proj.clone()),
            detector_shape: all.shape,
            pixel_size: [
                h5.length(&key("instrument/detector/x_pixel_size"))?,
                h5.length(&key("instrument/detector/y_pixel_size"))?,
            ],
            sample_pixel_size: [
                h5.length(&key("sample/x_pixel_size"))?,
                h5.length(&key("sample/y_pixel_size"))?,
            ],
            source_distance: h5.length(&key("instrument/source/distance"))?,
            detector_distance: h5.length(&key("instrument/detector/distance"))?,
            energy: match h5.energy(&key("instrument/beam/incident_energy"))? {
                e if e.value.is_some() => e,
                _ => h5.energy(&key("beam/incident_energy"))?,
            },
        };
        let read_some = |frames: Vec<usize>| -> Result<Frames> {
            let mut stack = all.select(frames.clone());
            Ok(Frames {
                data: read_all_frames(&mut stack)?,
                positions: Some(frames),
            })
        };
        let flats = read_some(flat)?;
        let darks = read_some(dark)?;
        let projections = all.select(proj);
        Ok(Self::new(info, flats, darks, projections))
    }
}
