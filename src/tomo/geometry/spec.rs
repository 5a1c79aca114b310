//! Plain, serialisable descriptions of a volume and a geometry (the CLI's geometry JSON).

use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};

use super::{Beam, Detector, Geometry, VecGeometry, View};
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
#[serde(
    deny_unknown_fields,
    expecting = "an object with the keys \"volume\" and \"geometry\""
)]
pub struct TomoSpec {
    /// The volume (domain of the ray transform).
    pub volume: VolumeSpec,
    /// The acquisition geometry.
    pub geometry: GeometrySpec,
}

/// A uniformly discretised box.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an object with the keys \"min_pt\", \"max_pt\" and \"shape\""
)]
pub struct VolumeSpec {
    /// Lower corner.
    pub min_pt: Vec<f64>,
    /// Upper corner.
    pub max_pt: Vec<f64>,
    /// Cells per axis.
    #[serde(deserialize_with = "whole_numbers")]
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
#[serde(
    deny_unknown_fields,
    expecting = "an object with the keys \"min\", \"max\" and \"count\""
)]
pub struct AngleSpec {
    /// Start of the angle interval.
    pub min: f64,
    /// End of the angle interval.
    pub max: f64,
    /// Number of angles.
    #[serde(deserialize_with = "whole_number")]
    pub count: usize,
}

/// A uniformly partitioned detector: `[u]` in 2D, `[u, v]` in 3D.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an object with the key \"shape\" (and \"min\", \"max\")"
)]
pub struct DetectorSpec {
    /// Lower corner (not used by the `vec` kind).
    #[serde(default)]
    pub min: Option<Vec<f64>>,
    /// Upper corner (not used by the `vec` kind).
    #[serde(default)]
    pub max: Option<Vec<f64>>,
    /// Pixels per axis.
    #[serde(deserialize_with = "whole_numbers")]
    pub shape: Vec<usize>,
}

/// One view of a `vec` geometry (see [`View`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an object with the keys \"src\", \"det_center\", \"det_u\" (and \"det_v\")"
)]
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
#[serde(
    deny_unknown_fields,
    expecting = "an object with the keys \"kind\", \"detector\" and those of its kind"
)]
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
    /// The detector's curvature, ODL's `det_curvature_radius` (fanflat, cone, point-beam vec;
    /// default flat): a number for a 2D arc, a pair for 3D (`[r, null]` a cylinder, `[r, r]` a
    /// sphere). With it, `detector.min`/`max` are ODL's curved parameters (radians along u;
    /// along v a height, or a latitude on a sphere); see [`Geometry::fan_curved`] and
    /// [`Geometry::cone_curved`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub det_curvature_radius: Option<CurvatureSpec>,
    /// Per-view source offsets, used cyclically (fanflat, cone): ODL's flying focal spot
    /// shifts, `[towards the source, along u]` in 2D and `[towards the source, along u, along
    /// the axis]` in 3D, in world units (see [`Geometry::with_src_offsets`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_offsets: Option<Vec<Vec<f64>>>,
}

/// The `det_curvature_radius` of a geometry file: one radius (2D) or ODL's pair `(r_u, r_v)`
/// (3D; `null` for flat along that axis).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "a curvature radius (a number) or a pair of them (numbers or null)"
)]
pub enum CurvatureSpec {
    /// One radius: the arc of a 2D fan beam.
    Radius(f64),
    /// ODL's list of radii (`null`: flat along that axis).
    Radii(Vec<Option<f64>>),
}

impl CurvatureSpec {
    /// The radii as ODL lists them.
    pub fn radii(&self) -> Vec<Option<f64>> {
        match self {
            CurvatureSpec::Radius(r) => vec![Some(*r)],
            CurvatureSpec::Radii(r) => r.clone(),
        }
    }
}

/// The message of an error without its kind's prefix.
fn plain(e: &Error) -> String {
    match e {
        Error::InvalidArgument(m) | Error::Geometry(m) | Error::Config(m) => {
            m.strip_prefix("partition: ").unwrap_or(m).to_string()
        }
        e => e.to_string(),
    }
}

fn need<'a, T>(v: &'a Option<T>, name: &str, kind: GeometryKind) -> Result<&'a T> {
    v.as_ref().ok_or_else(|| {
        Error::Config(format!(
            "a geometry of kind {} needs the key `geometry.{name}`",
            format!("{kind:?}").to_lowercase()
        ))
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

/// The largest magnitude of a length or an angle in a geometry file: beyond it, distances and
/// their squares would overflow in float32 computations.
pub const MAX_GEOMETRY_MAGNITUDE: f64 = 1e15;

/// The largest geometry file read, in bytes.
pub const MAX_GEOMETRY_FILE_BYTES: u64 = 256 << 20;

/// A whole number (`90`, or `90.0` as some JSON writers print it), at least 0.
fn whole_number<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<usize, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    as_whole(&v).map_err(serde::de::Error::custom)
}

/// A list of whole numbers (see [`whole_number`]).
fn whole_numbers<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Vec<usize>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    match &v {
        serde_json::Value::Array(items) => items
            .iter()
            .map(as_whole)
            .collect::<std::result::Result<_, _>>()
            .map_err(serde::de::Error::custom),
        other => Err(serde::de::Error::custom(format!(
            "expected a list of whole numbers, got {}",
            describe_value(other)
        ))),
    }
}

fn as_whole(v: &serde_json::Value) -> std::result::Result<usize, String> {
    let bad = || format!("expected a whole number ≥ 0, got {}", describe_value(v));
    let serde_json::Value::Number(n) = v else {
        return Err(bad());
    };
    if let Some(k) = n.as_u64() {
        return usize::try_from(k).map_err(|_| bad());
    }
    match n.as_f64() {
        // Integral floats up to 2^53 are exact; beyond, no count is meant.
        Some(x) if x >= 0.0 && x.fract() == 0.0 && x <= 9_007_199_254_740_992.0 => Ok(x as usize),
        _ => Err(bad()),
    }
}

/// A JSON value for messages: numbers and short strings as written, else the type.
fn describe_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::String(s) if s.chars().count() <= 20 => format!("the string {s:?}"),
        serde_json::Value::String(_) => "a string".into(),
        serde_json::Value::Null => "null".into(),
        serde_json::Value::Bool(b) => b.to_string(),
        serde_json::Value::Array(_) => "a list".into(),
        serde_json::Value::Object(_) => "an object".into(),
    }
}

/// A number for messages: as written between 1e-4 and 1e7, else in scientific notation.
fn num(x: f64) -> String {
    if x == 0.0 || (1e-4..1e7).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// Errors unless `x` (the value of `key`) is finite and at most [`MAX_GEOMETRY_MAGNITUDE`] in magnitude.
fn check_number(key: &str, x: f64) -> Result<()> {
    if !x.is_finite() || x.abs() > MAX_GEOMETRY_MAGNITUDE {
        return Err(Error::Config(format!(
            "`{key}` is {}; lengths and angles must be finite and at most \
             {MAX_GEOMETRY_MAGNITUDE:e} in magnitude",
            num(x)
        )));
    }
    Ok(())
}

fn check_numbers(key: &str, xs: &[f64]) -> Result<()> {
    for (i, &x) in xs.iter().enumerate() {
        check_number(&format!("{key}[{i}]"), x)?;
    }
    Ok(())
}

/// Checks a box `[min, max]` with `shape` cells given under `key` (`volume`, …): lengths agree,
/// numbers are in range, `min < max` and no axis is empty.
fn check_box(
    key: &str,
    min: &[f64],
    max: &[f64],
    shape: &[usize],
    lo: &str,
    hi: &str,
) -> Result<()> {
    for (name, len) in [(lo, min.len()), (hi, max.len())] {
        if len != shape.len() {
            return Err(Error::Config(format!(
                "`{key}.{name}` has {len} entries but `{key}.shape` has {}: they must agree",
                shape.len()
            )));
        }
    }
    check_numbers(&format!("{key}.{lo}"), min)?;
    check_numbers(&format!("{key}.{hi}"), max)?;
    for i in 0..shape.len() {
        if min[i] >= max[i] {
            return Err(Error::Config(format!(
                "`{key}.{hi}[{i}]` ({}) must be larger than `{key}.{lo}[{i}]` ({})",
                num(max[i]),
                num(min[i])
            )));
        }
        if shape[i] == 0 {
            return Err(Error::Config(format!(
                "`{key}.shape[{i}]` must be at least 1"
            )));
        }
    }
    Ok(())
}

/// Turns a JSON error at `path` into a message that names the key.
fn json_error(e: serde_path_to_error::Error<serde_json::Error>) -> Error {
    let path = e.path().to_string();
    let inner = e.into_inner();
    let text = inner
        .to_string()
        .replace("expected f64", "expected a number")
        .replace("expected usize", "expected a whole number")
        .replace("expected a sequence", "expected a list")
        .replace(
            "expected an array of length 3",
            "expected a list of 3 numbers",
        )
        .replace("expected a string", "expected text in quotes");
    let text = if path.ends_with("kind") && text.starts_with("expected value") {
        text.replacen(
            "expected value",
            "expected one of \"parallel2d\", \"fanflat\", \"parallel3d\", \"cone\", \"vec\"",
            1,
        )
    } else {
        text
    };
    if path.is_empty() || path == "." {
        Error::Config(text)
    } else {
        Error::Config(format!("`{path}`: {text}"))
    }
}

impl TomoSpec {
    /// Parses the JSON text (a leading UTF-8 byte-order mark is skipped); unknown keys are
    /// errors, and every error names the key concerned.
    pub fn from_json(text: &str) -> Result<Self> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut de = serde_json::Deserializer::from_str(text);
        let spec: TomoSpec = serde_path_to_error::deserialize(&mut de).map_err(json_error)?;
        de.end().map_err(|e| Error::Config(e.to_string()))?;
        Ok(spec)
    }

    /// Reads and parses a geometry JSON file: a regular file of at most [`MAX_GEOMETRY_FILE_BYTES`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let io = |message: String| Error::Io {
            path: path.to_path_buf(),
            message,
        };
        let meta = std::fs::metadata(path).map_err(|e| io(e.to_string()))?;
        if !meta.is_file() {
            return Err(io("not a regular file".into()));
        }
        if meta.len() > MAX_GEOMETRY_FILE_BYTES {
            return Err(io(format!(
                "{} bytes, more than the {MAX_GEOMETRY_FILE_BYTES} bytes a geometry file may have",
                meta.len()
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| io(e.to_string()))?;
        TomoSpec::from_json(&text).map_err(|e| match e {
            Error::Config(m) => Error::Config(format!("{}: {m}", path.display())),
            e => e,
        })
    }

    /// The JSON text of this description.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self).map_err(|e| Error::Config(e.to_string()))
    }
}

impl VolumeSpec {
    /// Checks the description: as many corners' entries as axes, finite numbers of at most
    /// [`MAX_GEOMETRY_MAGNITUDE`], `min_pt < max_pt` and at least one cell per axis; errors name the key.
    pub fn check(&self) -> Result<()> {
        if self.shape.is_empty() {
            return Err(Error::Config("`volume.shape` must not be empty".into()));
        }
        check_box(
            "volume",
            &self.min_pt,
            &self.max_pt,
            &self.shape,
            "min_pt",
            "max_pt",
        )
    }

    /// The discretised volume space (on the CPU), after [`VolumeSpec::check`].
    pub fn space<T: Scalar>(&self) -> Result<Space<T>> {
        self.check()?;
        uniform_discr(&self.min_pt, &self.max_pt, &self.shape)
    }
}

impl GeometrySpec {
    /// Checks the numbers of the description: finite and at most [`MAX_GEOMETRY_MAGNITUDE`].
    fn check_numbers(&self) -> Result<()> {
        if let Some(a) = &self.angles {
            check_number("geometry.angles.min", a.min)?;
            check_number("geometry.angles.max", a.max)?;
        }
        for (key, v) in [
            ("geometry.detector.min", &self.detector.min),
            ("geometry.detector.max", &self.detector.max),
            ("geometry.det_offset", &self.det_offset),
        ] {
            if let Some(v) = v {
                check_numbers(key, v)?;
            }
        }
        for (key, v) in [
            ("geometry.src_radius", self.src_radius),
            ("geometry.det_radius", self.det_radius),
            ("geometry.pitch", self.pitch),
        ] {
            if let Some(v) = v {
                check_number(key, v)?;
            }
        }
        if let Some(a) = &self.axis {
            check_numbers("geometry.axis", a)?;
        }
        if let Some(c) = &self.det_curvature_radius {
            for (i, r) in c.radii().iter().enumerate() {
                let key = match c {
                    CurvatureSpec::Radius(_) => "geometry.det_curvature_radius".to_string(),
                    CurvatureSpec::Radii(_) => format!("geometry.det_curvature_radius[{i}]"),
                };
                if let Some(r) = *r {
                    check_number(&key, r)?;
                    if r <= 0.0 {
                        return Err(Error::Config(format!(
                            "`{key}` is {}; a curvature radius must be positive (null or no \
                             key for a flat detector)",
                            num(r)
                        )));
                    }
                }
            }
        }
        for (k, o) in self.src_offsets.iter().flatten().enumerate() {
            check_numbers(&format!("geometry.src_offsets[{k}]"), o)?;
        }
        for (k, v) in self.views.iter().flatten().enumerate() {
            check_numbers(&format!("geometry.views[{k}].src"), &v.src)?;
            check_numbers(&format!("geometry.views[{k}].det_center"), &v.det_center)?;
            check_numbers(&format!("geometry.views[{k}].det_u"), &v.det_u)?;
            if let Some(d) = &v.det_v {
                check_numbers(&format!("geometry.views[{k}].det_v"), d)?;
            }
        }
        Ok(())
    }

    /// Builds and checks the geometry.
    pub fn build(&self) -> Result<Geometry> {
        self.check_numbers()?;
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
                "a {ndim}D geometry needs `geometry.detector.shape` with {} entries, got {}",
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
                ("src_offsets", self.src_offsets.is_some()),
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
        if a.count == 0 {
            return Err(Error::Config(
                "`geometry.angles.count` must be at least 1".into(),
            ));
        }
        if a.min >= a.max {
            return Err(Error::Config(format!(
                "`geometry.angles.max` ({}) must be larger than `geometry.angles.min` ({})",
                num(a.max),
                num(a.min)
            )));
        }
        let angles = UniformPartition::new(&[a.min], &[a.max], &[a.count])
            .map_err(|e| Error::Config(format!("`geometry.angles`: {}", plain(&e))))?;
        let dmin = need(&self.detector.min, "detector.min", kind)?;
        let dmax = need(&self.detector.max, "detector.max", kind)?;
        check_box(
            "geometry.detector",
            dmin,
            dmax,
            &self.detector.shape,
            "min",
            "max",
        )?;
        let det = UniformPartition::new(dmin, dmax, &self.detector.shape)
            .map_err(|e| Error::Config(format!("`geometry.detector`: {}", plain(&e))))?;
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
        let parallel = matches!(kind, GeometryKind::Parallel2d | GeometryKind::Parallel3d);
        for (key, given) in [
            ("det_curvature_radius", self.det_curvature_radius.is_some()),
            ("src_offsets", self.src_offsets.is_some()),
        ] {
            if parallel && given {
                return Err(Error::Config(format!(
                    "`{key}` is only valid for fan and cone geometries"
                )));
            }
        }
        let radii = self.curvature(ndim)?;
        let curve = |e: Error| match e {
            Error::Geometry(m) => Error::Config(format!("`geometry.det_curvature_radius`: {m}")),
            e => e,
        };
        let g = match kind {
            GeometryKind::Parallel2d => Geometry::parallel_2d_offset(&angles, &det, offset[0])?,
            GeometryKind::Fanflat => match radii[0] {
                None => Geometry::fan_flat(
                    &angles,
                    &det,
                    *need(&self.src_radius, "src_radius", kind)?,
                    *need(&self.det_radius, "det_radius", kind)?,
                    offset[0],
                )?,
                Some(r) => Geometry::fan_curved(
                    &angles,
                    &det,
                    *need(&self.src_radius, "src_radius", kind)?,
                    *need(&self.det_radius, "det_radius", kind)?,
                    r,
                    offset[0],
                )
                .map_err(curve)?,
            },
            GeometryKind::Parallel3d => Geometry::parallel_3d(&angles, &det, axis, offset)?,
            GeometryKind::Cone => Geometry::cone_curved(
                &angles,
                &det,
                *need(&self.src_radius, "src_radius", kind)?,
                *need(&self.det_radius, "det_radius", kind)?,
                [radii[0], radii[1]],
                self.pitch.unwrap_or(0.0),
                axis,
                offset,
            )
            .map_err(curve)?,
            GeometryKind::Vec => unreachable!("handled above"),
        };
        let g = match &self.src_offsets {
            None => g,
            Some(list) => {
                let offsets = list
                    .iter()
                    .enumerate()
                    .map(|(k, o)| {
                        if o.len() != ndim {
                            return Err(Error::Config(format!(
                                "`geometry.src_offsets[{k}]` must have {ndim} entries (towards \
                                 the source, along u{}), got {}",
                                if ndim == 3 { ", along the axis" } else { "" },
                                o.len()
                            )));
                        }
                        Ok([o[0], o[1], *o.get(2).unwrap_or(&0.0)])
                    })
                    .collect::<Result<Vec<_>>>()?;
                if offsets.is_empty() {
                    return Err(Error::Config(
                        "`geometry.src_offsets` must not be empty (leave the key out for none)"
                            .into(),
                    ));
                }
                g.with_src_offsets(&offsets)?
            }
        };
        Ok(g.with_spec(self.clone()))
    }

    /// ODL's `det_curvature_radius` of the description for an `ndim`-dimensional geometry:
    /// `ndim − 1` radii (`None`: flat along that axis).
    fn curvature(&self, ndim: usize) -> Result<Vec<Option<f64>>> {
        let Some(c) = &self.det_curvature_radius else {
            return Ok(vec![None; ndim - 1]);
        };
        let radii = c.radii();
        if radii.len() != ndim - 1 {
            return Err(Error::Config(format!(
                "`geometry.det_curvature_radius` of a {ndim}D geometry must be {}, got {} \
                 entries",
                if ndim == 2 {
                    "one number (the arc's radius)"
                } else {
                    "a pair [r, null] (cylinder) or [r, r] (sphere)"
                },
                radii.len()
            )));
        }
        Ok(radii)
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
        let detector =
            Detector::from_curvature(ndim, &self.curvature(ndim)?).map_err(|e| match e {
                Error::Geometry(m) => {
                    Error::Config(format!("`geometry.det_curvature_radius`: {m}"))
                }
                e => e,
            })?;
        let vec = VecGeometry::new(ndim, beam, &self.detector.shape, views)?
            .with_detector(detector)
            .map_err(|e| match e {
                Error::Geometry(m) => {
                    Error::Config(format!("`geometry.det_curvature_radius`: {m}"))
                }
                e => e,
            })?;
        Ok(Geometry::from_vec(vec)?.with_spec(self.clone()))
    }
}
