//! Data Exchange (DXchange) HDF5 files (APS and others).

use std::path::Path;

use super::opened::{sealed, Hdf5Layout, Hdf5Scan};
use super::util::{h5_err, DatasetFrames, H5};
use crate::io::frames::read_all_frames;
use crate::io::{FileValue, Frames, ScanFormat, ScanInfo};
use crate::Result;

/// The projections.
pub const DX_DATA: &str = "/exchange/data";
/// The flat (white) fields.
pub const DX_WHITE: &str = "/exchange/data_white";
/// The dark fields.
pub const DX_DARK: &str = "/exchange/data_dark";
/// The rotation angles.
pub const DX_THETA: &str = "/exchange/theta";
/// The detector pixel size along u (image columns).
pub const DX_PIXEL_X: &str = "/measurement/instrument/detector/pixel_size_x";
/// The detector pixel size along v (image rows).
pub const DX_PIXEL_Y: &str = "/measurement/instrument/detector/pixel_size_y";

/// A DXchange file opened for reading: `/exchange/data` (projections `[frame, row, column]`),
/// `/exchange/data_white` and `/exchange/data_dark` (flats and darks, optional: absent ones are
/// empty) and `/exchange/theta` (one angle per projection, in its `units`, degrees when absent
/// as the format prescribes). Flats, darks and angles are read at [`DxFile::open`]; the
/// projections are a [`FrameStack`](crate::io::FrameStack) read in chunks of views (hyperslabs).
///
/// The DXchange core has no standard keys for the geometry: the detector pixel size is read
/// from [`DX_PIXEL_X`] and [`DX_PIXEL_Y`] when they carry a length `units` attribute (without
/// it they count as missing, naming `…@units`); distances are never in the file, so a cone
/// geometry needs them set on the [`ScanInfo`]. Missing `data` or `theta`, counts that
/// disagree, frame sizes that disagree, non-numeric data, a truncated file: each is an
/// [`Error::Io`](crate::Error::Io) naming the file and the HDF5 path.
///
/// ```no_run
/// use rodl::io::DxFile;
/// let scan = DxFile::open("tomo_00001.h5")?.read_scan()?;
/// assert_eq!(scan.projections.shape()[0], scan.info.angles.len());
/// # Ok::<(), rodl::Error>(())
/// ```
pub type DxFile = Hdf5Scan<DxChange>;

/// The Data Exchange layout of APS files ([`DxFile`]).
pub enum DxChange {}

impl sealed::Sealed for DxChange {}
impl Hdf5Layout for DxChange {
    const NAME: &'static str = "DxFile";
}

impl Hdf5Scan<DxChange> {
    /// Opens `path` and reads its metadata, flats and darks.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let h5 = H5::open(path.as_ref())?;
        let (projections, n) = DatasetFrames::open(&h5, DX_DATA)?;
        let shape = projections.shape;
        let angles = h5.angles(DX_THETA)?;
        if angles.len() != n {
            return Err(h5_err(
                &h5.path,
                DX_THETA,
                format!(
                    "has {} angles but `{DX_DATA}` has {n} projections",
                    angles.len()
                ),
            ));
        }
        let other = |key: &str| -> Result<Frames> {
            if h5.kind(key).is_none() {
                return Ok(Frames::empty(shape));
            }
            let (mut stack, _) = DatasetFrames::open(&h5, key)?;
            if stack.shape != shape {
                return Err(h5_err(
                    &h5.path,
                    key,
                    format!(
                        "has frames of {} × {} pixels (columns × rows), `{DX_DATA}` of {} × {}",
                        stack.shape[0], stack.shape[1], shape[0], shape[1]
                    ),
                ));
            }
            Ok(Frames {
                data: read_all_frames(&mut stack)?,
                positions: None,
            })
        };
        let flats = other(DX_WHITE)?;
        let darks = other(DX_DARK)?;
        let pixel = |key: &str| -> Result<FileValue> {
            if h5.kind(key).is_some() && h5.attr_text(key, "units").is_none() {
                return Ok(FileValue::missing(format!("{key}@units")));
            }
            h5.length(key)
        };
        let none = |what: &str| {
            FileValue::missing(format!(
                "{what} (DXchange has no standard key: set it on ScanInfo)"
            ))
        };
        let info = ScanInfo {
            path: h5.path.clone(),
            format: ScanFormat::DxChange,
            angles,
            projection_positions: None,
            detector_shape: shape,
            pixel_size: [pixel(DX_PIXEL_X)?, pixel(DX_PIXEL_Y)?],
            sample_pixel_size: [none("sample_pixel_size[u]"), none("sample_pixel_size[v]")],
            source_distance: none("source_distance"),
            detector_distance: none("detector_distance"),
            energy: none("energy"),
        };
        Ok(Self::new(info, flats, darks, projections))
    }
}
