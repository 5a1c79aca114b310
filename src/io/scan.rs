//! A tomographic scan as read from a file — projections, flats, darks, angles and what the file
//! records about the geometry — and the rodl geometry built from it (see [`ScanInfo::geometry`]).

use std::path::{Path, PathBuf};

use ndarray::Array3;

use super::frames::{read_all_frames, FrameStack};
use super::temp_file::TempFile;
use super::tiff_read::TiffStack;
use crate::tomo::geometry::{
    AngleSpec, DetectorSpec, GeometryKind, GeometrySpec, TomoSpec, VolumeSpec,
};
use crate::tomo::Geometry;
use crate::{Error, Result};

/// A value that a scan file may record, with the key it is (or would be) read from.
#[derive(Clone, Debug, PartialEq)]
pub struct FileValue {
    /// Where the value lives: an HDF5 path such as `/entry/instrument/detector/x_pixel_size`,
    /// or a description for formats without keys (TIFF).
    pub key: String,
    /// The value in SI units (metres for lengths), when the file records it.
    pub value: Option<f64>,
}

impl FileValue {
    /// A value the file records under `key`.
    pub fn found(key: impl Into<String>, value: f64) -> Self {
        Self {
            key: key.into(),
            value: Some(value),
        }
    }

    /// A value the file does not record (it would be under `key`).
    pub fn missing(key: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            value: None,
        }
    }

    /// The value, or an [`Error::Io`] for `path` naming the key and what needs it.
    pub fn require(&self, path: &Path, needed_for: &str) -> Result<f64> {
        self.value.ok_or_else(|| Error::Io {
            path: path.to_path_buf(),
            message: format!("no `{}` in the file: {needed_for} needs it", self.key),
        })
    }
}

/// The file format a scan came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScanFormat {
    /// A TIFF stack (no metadata: angles and sizes come from the caller).
    Tiff,
    /// A NeXus file with an NXtomo entry (the entry's HDF5 path).
    NxTomo {
        /// The HDF5 path of the NXentry, e.g. `/entry0000`.
        entry: String,
    },
    /// A Data Exchange (DXchange) file.
    DxChange,
}

/// What a scan file says about the acquisition, apart from the pixel data.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanInfo {
    /// The file (or folder) read.
    pub path: PathBuf,
    /// Its format.
    pub format: ScanFormat,
    /// The rotation angle of each projection, in radians, in the order of the projections.
    pub angles: Vec<f64>,
    /// Where each projection was taken in the acquisition sequence (frame numbers counting
    /// flats and darks too), when the file says; used to interpolate flats taken before and
    /// after (see [`crate::preprocess::FlatField`]).
    pub projection_positions: Option<Vec<usize>>,
    /// The detector's shape `[nu, nv]` (image columns, image rows).
    pub detector_shape: [usize; 2],
    /// The detector's pixel size along u and v (metres), in the detector plane.
    pub pixel_size: [FileValue; 2],
    /// The pixel size along u and v projected into the sample (metres): the effective pixel
    /// size of a magnifying detector. Parallel-beam geometries use it when recorded.
    pub sample_pixel_size: [FileValue; 2],
    /// The distance from the source to the rotation axis (metres).
    pub source_distance: FileValue,
    /// The distance from the rotation axis to the detector (metres).
    pub detector_distance: FileValue,
    /// The X-ray energy in keV (phase retrieval needs it, see
    /// [`crate::preprocess::PaganinOptions`]).
    pub energy: FileValue,
}

/// A stack of flat or dark frames and where they were taken.
#[derive(Clone, Debug, PartialEq)]
pub struct Frames {
    /// The frames `[frames, nu, nv]`.
    pub data: Array3<f32>,
    /// Where each frame was taken in the acquisition sequence, when the file says.
    pub positions: Option<Vec<usize>>,
}

impl Frames {
    /// No frames of a detector of shape `[nu, nv]`.
    pub fn empty(detector_shape: [usize; 2]) -> Self {
        Self {
            data: Array3::zeros([0, detector_shape[0], detector_shape[1]]),
            positions: None,
        }
    }

    /// The number of frames.
    pub fn len(&self) -> usize {
        self.data.shape()[0]
    }

    /// Whether there are no frames.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A scan in memory: projections `[angle, u, v]` (raw detector counts, as `f32`), flats, darks
/// and the [`ScanInfo`].
#[derive(Clone, Debug, PartialEq)]
pub struct Scan {
    /// What the file says about the acquisition.
    pub info: ScanInfo,
    /// The projections `[angle, u, v]`.
    pub projections: Array3<f32>,
    /// Flat fields (beam, no sample).
    pub flats: Frames,
    /// Dark fields (no beam).
    pub darks: Frames,
}

impl Scan {
    /// Reads a scan kept as TIFF stacks (see [`TiffStack`]): the projections, and optionally
    /// flats and darks from stacks of their own. A TIFF stack records no angles, pixel sizes or
    /// distances: `angles` (radians, one per projection) come from the caller, and the sizes
    /// can be set on [`Scan::info`] afterwards (until then, building a geometry is an error
    /// naming what is missing).
    ///
    /// ```no_run
    /// use rodl::io::{FileValue, Scan};
    /// let angles: Vec<f64> = (0..900).map(|k| k as f64 * std::f64::consts::PI / 900.0).collect();
    /// let mut scan = Scan::from_tiff("scan/proj", Some("scan/flat".as_ref()), Some("scan/dark".as_ref()), angles)?;
    /// for axis in 0..2 {
    ///     scan.info.sample_pixel_size[axis] = FileValue::found("pixel size (given)", 6.5e-6);
    /// }
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn from_tiff(
        projections: impl AsRef<Path>,
        flats: Option<&Path>,
        darks: Option<&Path>,
        angles: Vec<f64>,
    ) -> Result<Self> {
        let path = projections.as_ref();
        let mut stack = TiffStack::open(path)?;
        let shape = stack.frame_shape();
        let info = ScanInfo::for_tiff(path, shape, angles, stack.len())?;
        let read_other = |p: Option<&Path>, what: &str| -> Result<Frames> {
            let Some(p) = p else {
                return Ok(Frames::empty(shape));
            };
            let mut s = TiffStack::open(p)?;
            if s.frame_shape() != shape {
                return Err(Error::Io {
                    path: p.to_path_buf(),
                    message: format!(
                        "{what} of {} × {} pixels, but the projections have {} × {}",
                        s.frame_shape()[0],
                        s.frame_shape()[1],
                        shape[0],
                        shape[1]
                    ),
                });
            }
            Ok(Frames {
                data: read_all_frames(&mut s)?,
                positions: None,
            })
        };
        let flats = read_other(flats, "flats")?;
        let darks = read_other(darks, "darks")?;
        let projections = read_all_frames(&mut stack)?;
        Ok(Self {
            info,
            projections,
            flats,
            darks,
        })
    }
}

/// The key text of TIFF stacks' missing values.
const TIFF_NONE: &str = "(a TIFF stack records none: set it on ScanInfo)";

impl ScanInfo {
    /// The information of a TIFF stack at `path` with frames of `detector_shape` and `frames`
    /// projections at `angles` (radians): no sizes or distances.
    pub fn for_tiff(
        path: &Path,
        detector_shape: [usize; 2],
        angles: Vec<f64>,
        frames: usize,
    ) -> Result<Self> {
        if angles.len() != frames {
            return Err(Error::Io {
                path: path.to_path_buf(),
                message: format!(
                    "{frames} projections but {} angles were given",
                    angles.len()
                ),
            });
        }
        let none = |what: &str| FileValue::missing(format!("{what} {TIFF_NONE}"));
        Ok(Self {
            path: path.to_path_buf(),
            format: ScanFormat::Tiff,
            angles,
            projection_positions: None,
            detector_shape,
            pixel_size: [none("pixel_size[u]"), none("pixel_size[v]")],
            sample_pixel_size: [none("sample_pixel_size[u]"), none("sample_pixel_size[v]")],
            source_distance: none("source_distance"),
            detector_distance: none("detector_distance"),
            energy: none("energy"),
        })
    }
}

/// Which beam a geometry built from a scan has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BeamChoice {
    /// A cone beam when the file records a source distance, else a parallel beam. (A
    /// synchrotron file that records the source distance, tens of metres, thus gives a cone
    /// beam of that distance; ask for [`BeamChoice::Parallel`] to ignore it.)
    #[default]
    FromFile,
    /// A parallel beam (source and detector distances are not used).
    Parallel,
    /// A cone beam: the file must record the source and detector distances.
    Cone,
}

/// The world length unit of a geometry built from a scan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LengthUnit {
    /// Metres.
    Metre,
    /// Millimetres.
    #[default]
    Millimetre,
    /// Micrometres.
    Micrometre,
    /// The pixel size in the sample plane along u (parallel: the sample pixel size; cone: the
    /// detector pixel size divided by the magnification), so that voxels of size 1 match the
    /// detector's sampling.
    SamplePixel,
}

/// How [`ScanInfo::geometry`] builds a geometry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScanGeometryOptions {
    /// Parallel or cone beam.
    pub beam: BeamChoice,
    /// The world length unit.
    pub unit: LengthUnit,
    /// The detector shift along u, in detector pixels: the `det_offset` that puts the rotation
    /// axis where it was (the value of [`crate::preprocess::CentreEstimate::det_offset_px`]).
    pub det_offset_px: f64,
    /// Angles within this fraction of their mean spacing of a uniform grid are written as that
    /// grid (a `parallel3d`/`cone` geometry with `angles`); others give a `vec` geometry, one
    /// view per angle. Default `1e-3`.
    pub uniform_tolerance: f64,
}

impl Default for ScanGeometryOptions {
    fn default() -> Self {
        Self {
            beam: BeamChoice::FromFile,
            unit: LengthUnit::Millimetre,
            det_offset_px: 0.0,
            uniform_tolerance: 1e-3,
        }
    }
}

/// The resolved lengths of a geometry, in world units.
struct Lengths {
    cone: Option<(f64, f64)>,
    /// Detector-plane pixel sizes (u, v).
    det: [f64; 2],
    /// Sample-plane pixel sizes (u, v).
    sample: [f64; 2],
}

impl ScanInfo {
    fn lengths(&self, opts: &ScanGeometryOptions) -> Result<Lengths> {
        let path = &self.path;
        let cone = match opts.beam {
            BeamChoice::Parallel => false,
            BeamChoice::Cone => true,
            BeamChoice::FromFile => self.source_distance.value.is_some(),
        };
        let positive = |v: f64, key: &str| -> Result<f64> {
            if v.is_finite() && v > 0.0 {
                Ok(v)
            } else {
                Err(Error::Io {
                    path: path.clone(),
                    message: format!("`{key}` is {v}: it must be a positive length"),
                })
            }
        };
        let (det_m, sample_m, radii_m) = if cone {
            let what = "a cone-beam geometry";
            let src = self.source_distance.require(path, what)?.abs();
            let det = self.detector_distance.require(path, what)?.abs();
            let src = positive(src, &self.source_distance.key)?;
            let du = positive(
                self.pixel_size[0].require(path, what)?,
                &self.pixel_size[0].key,
            )?;
            let dv = positive(
                self.pixel_size[1].require(path, what)?,
                &self.pixel_size[1].key,
            )?;
            let mag = (src + det) / src;
            ([du, dv], [du / mag, dv / mag], Some((src, det)))
        } else {
            let what = "a parallel-beam geometry";
            let mut s = [0.0; 2];
            for k in 0..2 {
                s[k] = match (self.sample_pixel_size[k].value, self.pixel_size[k].value) {
                    (Some(v), _) => positive(v, &self.sample_pixel_size[k].key)?,
                    (None, Some(v)) => positive(v, &self.pixel_size[k].key)?,
                    (None, None) => {
                        return Err(Error::Io {
                            path: path.clone(),
                            message: format!(
                                "no `{}` and no `{}` in the file: {what} needs a pixel size",
                                self.sample_pixel_size[k].key, self.pixel_size[k].key
                            ),
                        })
                    }
                };
            }
            (s, s, None)
        };
        let scale = match opts.unit {
            LengthUnit::Metre => 1.0,
            LengthUnit::Millimetre => 1e3,
            LengthUnit::Micrometre => 1e6,
            LengthUnit::SamplePixel => 1.0 / sample_m[0],
        };
        Ok(Lengths {
            cone: radii_m.map(|(s, d)| (s * scale, d * scale)),
            det: det_m.map(|x| x * scale),
            sample: sample_m.map(|x| x * scale),
        })
    }

    /// The geometry description (rodl's geometry JSON) of the scan: a `parallel3d` or `cone`
    /// geometry (see [`BeamChoice`]) about the z axis, with a flat detector of
    /// [`ScanInfo::detector_shape`] pixels centred on the beam and shifted along u by
    /// [`ScanGeometryOptions::det_offset_px`] pixels, and the file's angles (a uniform `angles`
    /// partition whose midpoints are the angles, or one `vec` view per angle where the angles
    /// are not uniform; a `vec` geometry's data space weighs each view 1 instead of the angle
    /// step). A value the geometry needs that the file lacks is an [`Error::Io`] naming the
    /// file and the key.
    pub fn geometry_spec(&self, opts: &ScanGeometryOptions) -> Result<GeometrySpec> {
        let path = &self.path;
        let n = self.angles.len();
        if n == 0 {
            return Err(Error::Io {
                path: path.clone(),
                message: "the scan has no projections".into(),
            });
        }
        if let Some(bad) = self.angles.iter().find(|a| !a.is_finite()) {
            return Err(Error::Io {
                path: path.clone(),
                message: format!("a rotation angle is {bad}"),
            });
        }
        if !opts.det_offset_px.is_finite() {
            return Err(Error::invalid(format!(
                "det_offset_px must be finite, got {}",
                opts.det_offset_px
            )));
        }
        let len = self.lengths(opts)?;
        let [nu, nv] = self.detector_shape;
        let half = [0.5 * nu as f64 * len.det[0], 0.5 * nv as f64 * len.det[1]];
        let offset = [opts.det_offset_px * len.det[0], 0.0];
        let kind = if len.cone.is_some() {
            GeometryKind::Cone
        } else {
            GeometryKind::Parallel3d
        };
        let (src_radius, det_radius) = match len.cone {
            Some((s, d)) => (Some(s), Some(d)),
            None => (None, None),
        };
        if let Some(angles) = uniform_angles(&self.angles, opts.uniform_tolerance) {
            return Ok(GeometrySpec {
                kind,
                angles: Some(angles),
                detector: DetectorSpec {
                    min: Some(vec![-half[0], -half[1]]),
                    max: Some(vec![half[0], half[1]]),
                    shape: vec![nu, nv],
                },
                src_radius,
                det_radius,
                pitch: None,
                axis: None,
                det_offset: Some(offset.to_vec()),
                beam: None,
                views: None,
                det_curvature_radius: None,
                src_offsets: None,
            });
        }
        let views = self
            .angles
            .iter()
            .map(|&t| {
                let (s, c) = t.sin_cos();
                let rx = [c, s, 0.0];
                let ry = [-s, c, 0.0];
                let shift = |r: f64| [0, 1, 2].map(|i| offset[0] * rx[i] + r * ry[i]);
                let (src, det_center) = match len.cone {
                    None => (ry.to_vec(), shift(0.0).to_vec()),
                    Some((rs, rd)) => (ry.map(|x| -rs * x).to_vec(), shift(rd).to_vec()),
                };
                crate::tomo::geometry::ViewSpec {
                    src,
                    det_center,
                    det_u: rx.map(|x| x * len.det[0]).to_vec(),
                    det_v: Some(vec![0.0, 0.0, len.det[1]]),
                }
            })
            .collect();
        Ok(GeometrySpec {
            kind: GeometryKind::Vec,
            angles: None,
            detector: DetectorSpec {
                min: None,
                max: None,
                shape: vec![nu, nv],
            },
            src_radius: None,
            det_radius: None,
            pitch: None,
            axis: None,
            det_offset: None,
            beam: Some(
                if len.cone.is_some() {
                    "point"
                } else {
                    "parallel"
                }
                .into(),
            ),
            views: Some(views),
            det_curvature_radius: None,
            src_offsets: None,
        })
    }

    /// The rodl geometry of the scan (see [`ScanInfo::geometry_spec`]); its
    /// [`Geometry::spec`] is the description, so it can be written as geometry JSON.
    pub fn geometry(&self, opts: &ScanGeometryOptions) -> Result<Geometry> {
        self.geometry_spec(opts)?.build()
    }

    /// A reconstruction volume for the scan: `nu × nu × nv` voxels of the sample-plane pixel
    /// size, centred on the rotation axis (the detector's field of view).
    pub fn volume_spec(&self, opts: &ScanGeometryOptions) -> Result<VolumeSpec> {
        let len = self.lengths(opts)?;
        let [nu, nv] = self.detector_shape;
        let hu = 0.5 * nu as f64 * len.sample[0];
        let hv = 0.5 * nv as f64 * len.sample[1];
        Ok(VolumeSpec {
            min_pt: vec![-hu, -hu, -hv],
            max_pt: vec![hu, hu, hv],
            shape: vec![nu, nu, nv],
        })
    }

    /// The volume (default: [`ScanInfo::volume_spec`]) and geometry of the scan, as in rodl's
    /// geometry JSON.
    pub fn tomo_spec(
        &self,
        opts: &ScanGeometryOptions,
        volume: Option<VolumeSpec>,
    ) -> Result<TomoSpec> {
        let geometry = self.geometry_spec(opts)?;
        geometry.build()?;
        let volume = match volume {
            Some(v) => v,
            None => self.volume_spec(opts)?,
        };
        volume.check()?;
        Ok(TomoSpec { volume, geometry })
    }

    /// Writes [`ScanInfo::tomo_spec`] as geometry JSON to `path`, atomically.
    pub fn write_geometry_json(
        &self,
        path: impl AsRef<Path>,
        opts: &ScanGeometryOptions,
        volume: Option<VolumeSpec>,
    ) -> Result<()> {
        let path = path.as_ref();
        let text = self.tomo_spec(opts, volume)?.to_json()?;
        write_text(path, &text)
    }
}

/// Writes `text` to `path` atomically.
fn write_text(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    let io = |e: std::io::Error| Error::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let (temp, mut file) = TempFile::create(path).map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    file.write_all(b"\n").map_err(io)?;
    file.sync_all().map_err(io)?;
    drop(file);
    temp.commit(path).map_err(io)
}

/// The uniform angle partition whose midpoints are `angles` (increasing, at least 2, each within
/// `tolerance` of the mean spacing of the grid), if there is one.
fn uniform_angles(angles: &[f64], tolerance: f64) -> Option<AngleSpec> {
    let n = angles.len();
    if n < 2 {
        return None;
    }
    let step = (angles[n - 1] - angles[0]) / (n - 1) as f64;
    if !(step > 0.0) {
        return None;
    }
    let ok = angles
        .iter()
        .enumerate()
        .all(|(k, &a)| (a - (angles[0] + k as f64 * step)).abs() <= tolerance * step);
    ok.then(|| AngleSpec {
        min: angles[0] - 0.5 * step,
        max: angles[n - 1] + 0.5 * step,
        count: n,
    })
}
