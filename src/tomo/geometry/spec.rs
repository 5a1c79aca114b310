//! Plain, serialisable descriptions of a volume and a geometry (the CLI's geometry JSON).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{Beam, Geometry, VecGeometry, View};
use crate::{uniform_discr, Error, Result, Scalar, Space, UniformPartition};

/// A reconstruction volume and an acquisition geometry, as in the geometry JSON:
///
/// ```
/// use rodl::tomo::TomoSpec;
/// let spec = TomoSpec::from_json(r#"{
///   "volume": {"min_pt": [-1, -1], "max_pt": [1, 1], "shape": [64, 64]},
///   "geometry": {"kind": "parallel2d", "angles": {"min": 0, "max": 3.14159, "count": 90},
///                "detector": {"min": [-1.5], "max": [1.5], "shape": [95]}}}"#)?;
/// let geometry = spec.geometry.build()?;
/// assert_eq!(geometry.data_shape(), vec![90, 95]);
/// assert!(TomoSpec::from_json(r#"{"volume": {}, "geometry": {}}"#).is_err());
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TomoSpec {
    /// The volume (domain of the ray transform).
    pub volume: VolumeSpec,
    /// The acquisition geometry.
    pub geometry: GeometrySpec,
}

/// A uniformly discretised box.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VolumeSpec {
    /// Lower corner.
    pub min_pt: Vec<f64>,
    /// Upper corner.
    pub max_pt: Vec<f64>,
    /// Cells per axis.
    pub shape: Vec<usize>,
}

/// Geometry kinds of the JSON format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GeometryKind {
    /// 2D parallel beam.
    Parallel2d,
    /// 2D fan beam with a flat detector.
    Fanflat,
    /// 3D parallel beam about an axis.
    Parallel3d,
    /// 3D cone beam with a flat detector (helical with `pitch`).
    Cone,
    /// Per-view vectors (`views`).
    Vec,
}

/// Uniformly partitioned angles: midpoints of `count` cells over `[min, max]` (radians).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AngleSpec {
    /// Start of the angle interval.
    pub min: f64,
    /// End of the angle interval.
    pub max: f64,
    /// Number of angles.
    pub count: usize,
}

/// A uniformly partitioned detector: `[u]` in 2D, `[u, v]` in 3D.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetectorSpec {
    /// Lower corner (not used by the `vec` kind).
    #[serde(default)]
    pub min: Option<Vec<f64>>,
    /// Upper corner (not used by the `vec` kind).
    #[serde(default)]
    pub max: Option<Vec<f64>>,
    /// Pixels per axis.
    pub shape: Vec<usize>,
}

/// One view of a `vec` geometry (see [`View`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewSpec {
    /// Source position (cone/fan) or ray direction (parallel).
    pub src: Vec<f64>,
    /// Detector centre.
    pub det_center: Vec<f64>,
    /// Pixel-spacing vector along u.
    pub det_u: Vec<f64>,
    /// Pixel-spacing vector along v (3D).
    #[serde(default)]
    pub det_v: Option<Vec<f64>>,
}

/// An acquisition geometry in the JSON format; [`GeometrySpec::build`] checks it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeometrySpec {
    /// Which geometry.
    pub kind: GeometryKind,
    /// Angles (all kinds but `vec`).
    #[serde(default)]
    pub angles: Option<AngleSpec>,
    /// Detector partition.
    pub detector: DetectorSpec,
    /// Source–rotation-centre distance (fanflat, cone).
    #[serde(default)]
    pub src_radius: Option<f64>,
    /// Rotation-centre–detector distance (fanflat, cone).
    #[serde(default)]
    pub det_radius: Option<f64>,
    /// Helical pitch: shift along the axis per full turn (cone; default 0).
    #[serde(default)]
    pub pitch: Option<f64>,
    /// Rotation axis (3D kinds; default `[0, 0, 1]`).
    #[serde(default)]
    pub axis: Option<[f64; 3]>,
    /// Detector shift along (u[, v]) in world units (default 0).
    #[serde(default)]
    pub det_offset: Option<Vec<f64>>,
    /// Beam of a `vec` geometry: `"parallel"` or `"point"`.
    #[serde(default)]
    pub beam: Option<String>,
    /// Views of a `vec` geometry.
    #[serde(default)]
    pub views: Option<Vec<ViewSpec>>,
}

fn need<'a, T>(v: &'a Option<T>, name: &str, kind: GeometryKind) -> Result<&'a T> {
    v.as_ref().ok_or_else(|| {
        Error::Config(format!("geometry of kind {kind:?} needs the key `{name}`").to_lowercase())
    })
}

fn vec3(v: &[f64], ndim: usize, name: &str) -> Result<[f64; 3]> {
    if v.len() != ndim {
        return Err(Error::Config(format!(
            "`{name}` must have {ndim} entries, got {}",
            v.len()
        )));
    }
    Ok([v[0], v[1], if ndim == 3 { v[2] } else { 0.0 }])
}

impl TomoSpec {
    /// Parses the JSON text; unknown keys are errors and missing keys are named.
    pub fn from_json(text: &str) -> Result<Self> {
        serde_json::from_str(text).map_err(|e| Error::Config(e.to_string()))
    }

    /// Reads and parses a geometry JSON file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        serde_json::from_str(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display())))
    }

    /// The JSON text of this description.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self).map_err(|e| Error::Config(e.to_string()))
    }
}

impl VolumeSpec {
    /// The discretised volume space (on the CPU).
    pub fn space<T: Scalar>(&self) -> Result<Space<T>> {
        uniform_discr(&self.min_pt, &self.max_pt, &self.shape)
    }
}

impl GeometrySpec {
    /// Builds and checks the geometry.
    pub fn build(&self) -> Result<Geometry> {
        let kind = self.kind;
        let ndim = match kind {
            GeometryKind::Parallel2d | GeometryKind::Fanflat => 2,
            GeometryKind::Parallel3d | GeometryKind::Cone => 3,
            GeometryKind::Vec => match self.detector.shape.len() {
                1 => 2,
                2 => 3,
                n => {
                    return Err(Error::Config(format!(
                        "detector.shape must have 1 or 2 entries, got {n}"
                    )))
                }
            },
        };
        if self.detector.shape.len() != ndim - 1 {
            return Err(Error::Config(format!(
                "a {ndim}D geometry needs detector.shape with {} entries, got {}",
                ndim - 1,
                self.detector.shape.len()
            )));
        }
        let offset = match &self.det_offset {
            None => [0.0, 0.0],
            Some(o) if o.len() == ndim - 1 => [o[0], *o.get(1).unwrap_or(&0.0)],
            Some(o) => {
                return Err(Error::Config(format!(
                    "det_offset must have {} entries, got {}",
                    ndim - 1,
                    o.len()
                )))
            }
        };
        if kind == GeometryKind::Vec {
            let unused = [
                ("angles", self.angles.is_some()),
                ("src_radius", self.src_radius.is_some()),
                ("det_radius", self.det_radius.is_some()),
                ("pitch", self.pitch.is_some()),
                ("axis", self.axis.is_some()),
                ("det_offset", self.det_offset.is_some()),
            ];
            if let Some((key, _)) = unused.iter().find(|(_, given)| *given) {
                return Err(Error::Config(format!(
                    "`{key}` is not valid for vec geometries (each view gives its vectors)"
                )));
            }
            return self.build_vec(ndim);
        }
        if self.beam.is_some() || self.views.is_some() {
            return Err(Error::Config(
                "`beam` and `views` are only valid for vec geometries".into(),
            ));
        }
        let a = need(&self.angles, "angles", kind)?;
        let angles = UniformPartition::new(&[a.min], &[a.max], &[a.count])
            .map_err(|e| Error::Config(format!("angles: {e}")))?;
        let dmin = need(&self.detector.min, "detector.min", kind)?;
        let dmax = need(&self.detector.max, "detector.max", kind)?;
        let det = UniformPartition::new(dmin, dmax, &self.detector.shape)
            .map_err(|e| Error::Config(format!("detector: {e}")))?;
        let axis = self.axis.unwrap_or([0.0, 0.0, 1.0]);
        if ndim == 2 && self.axis.is_some() {
            return Err(Error::Config(
                "`axis` is only valid for 3D geometries".into(),
            ));
        }
        if matches!(kind, GeometryKind::Parallel2d | GeometryKind::Parallel3d)
            && (self.src_radius.is_some() || self.det_radius.is_some())
        {
            return Err(Error::Config(
                "parallel geometries take no src_radius/det_radius".into(),
            ));
        }
        if kind != GeometryKind::Cone && self.pitch.is_some() {
            return Err(Error::Config(
                "`pitch` is only valid for cone geometries".into(),
            ));
        }
        let g = match kind {
            GeometryKind::Parallel2d => Geometry::parallel_2d_offset(&angles, &det, offset[0])?,
            GeometryKind::Fanflat => Geometry::fan_flat(
                &angles,
                &det,
                *need(&self.src_radius, "src_radius", kind)?,
                *need(&self.det_radius, "det_radius", kind)?,
                offset[0],
            )?,
            GeometryKind::Parallel3d => Geometry::parallel_3d(&angles, &det, axis, offset)?,
            GeometryKind::Cone => Geometry::cone_flat(
                &angles,
                &det,
                *need(&self.src_radius, "src_radius", kind)?,
                *need(&self.det_radius, "det_radius", kind)?,
                self.pitch.unwrap_or(0.0),
                axis,
                offset,
            )?,
            GeometryKind::Vec => unreachable!("handled above"),
        };
        Ok(g.with_spec(self.clone()))
    }

    fn build_vec(&self, ndim: usize) -> Result<Geometry> {
        let kind = self.kind;
        let beam = match need(&self.beam, "beam", kind)?.as_str() {
            "parallel" => Beam::Parallel,
            "point" | "cone" | "fan" => Beam::Point,
            other => {
                return Err(Error::Config(format!(
                    "unknown beam {other:?} (parallel or point)"
                )))
            }
        };
        let views = need(&self.views, "views", kind)?
            .iter()
            .map(|v| {
                Ok(View {
                    src: vec3(&v.src, ndim, "src")?,
                    det_center: vec3(&v.det_center, ndim, "det_center")?,
                    det_u: vec3(&v.det_u, ndim, "det_u")?,
                    det_v: match (&v.det_v, ndim) {
                        (Some(d), 3) => vec3(d, 3, "det_v")?,
                        (None, 3) => return Err(Error::Config("3D views need `det_v`".into())),
                        _ => [0.0; 3],
                    },
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let vec = VecGeometry::new(ndim, beam, &self.detector.shape, views)?;
        Ok(Geometry::from_vec(vec)?.with_spec(self.clone()))
    }
}
