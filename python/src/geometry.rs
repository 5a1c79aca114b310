//! Acquisition geometries: from the JSON geometry format (every kind: parallel 2D/3D, fan,
//! cone, helical, vec) and from per-view vectors on a given data partition (what `from_odl`
//! uses).

use numpy::{PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::errors::{value_error, IntoPyResult};
use crate::scalar::{Any, Dtype};
use crate::space::PySpace;
use rodl::tomo::{Beam, Detector, Geometry, GeometrySpec, TomoSpec, VecGeometry, View};
use rodl::{Space, UniformPartition};

/// An acquisition geometry: where the source and the detector are for every view.
///
/// Build one with the constructors of the package (`rodl.Parallel2dGeometry`,
/// `rodl.FanBeamGeometry`, `rodl.Parallel3dAxisGeometry`, `rodl.ConeBeamGeometry`,
/// `rodl.parallel_beam_geometry`, …), from rodl's JSON geometry format
/// (`Geometry.from_json`), from per-view vectors (`Geometry.from_vectors`) or from an ODL
/// geometry (`rodl.from_odl`).
#[pyclass(name = "Geometry", module = "rodl", frozen)]
#[derive(Clone)]
pub struct PyGeometry {
    pub inner: Geometry,
}

fn beam_name(b: Beam) -> &'static str {
    match b {
        Beam::Parallel => "parallel",
        Beam::Point => "point",
    }
}

#[pymethods]
impl PyGeometry {
    /// The geometry described by the JSON text of rodl's geometry format: either the
    /// `"geometry"` object alone or a whole geometry file (`{"volume": …, "geometry": …}`,
    /// whose volume is ignored here; `read_geometry_file` returns both).
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Self> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| value_error(format!("geometry JSON: {e}")))?;
        let spec: GeometrySpec = if value.get("geometry").is_some() {
            TomoSpec::from_json(text).py()?.geometry
        } else {
            serde_json::from_value(value).map_err(|e| value_error(format!("geometry JSON: {e}")))?
        };
        Ok(Self {
            inner: spec.build().py()?,
        })
    }

    /// A geometry given view by view. `vectors` has one row per view: `[src(3), det_center(3),
    /// det_u(3), det_v(3)]` (3D) or `[src(2), det_center(2), det_u(2)]` (2D), where `src` is the
    /// source position (`beam="point"`) or the ray direction (`beam="parallel"`), `det_center`
    /// the detector's centre and `det_u`, `det_v` the vectors from one pixel to the next (as in
    /// ASTRA's vector geometries, with u first). `partition`, a tuple `(min_pt, max_pt)` over
    /// the views and the detector axes, sets the data space's cells (its weighting); without it
    /// the views have unit weight and the detector cells are the pixel sizes.
    /// `det_curvature_radius` (ODL's: a number in 2D, a pair `(r, None)` cylindrical or `(r, r)`
    /// spherical in 3D) makes the detector curved: each view's vectors are then the frame at
    /// its centre pixel (`det_u`, `det_v` the tangents there, the pixel pitches as arc length),
    /// and the surface curves towards the source.
    #[staticmethod]
    #[pyo3(signature = (beam, det_shape, vectors, partition=None, det_curvature_radius=None))]
    fn from_vectors(
        beam: &str,
        det_shape: Vec<i64>,
        vectors: &Bound<'_, PyAny>,
        partition: Option<(Vec<f64>, Vec<f64>)>,
        det_curvature_radius: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let det_shape = crate::count::counts("det_shape", &det_shape)?;
        let ndim = det_shape.len() + 1;
        // 'fan' names the 2D point-source beam and 'cone' the 3D one; either in the other
        // dimension is a mistake, not a synonym.
        let beam = match (beam, ndim) {
            ("parallel", _) => Beam::Parallel,
            ("point", _) | ("fan", 2) | ("cone", 3) => Beam::Point,
            ("fan", _) | ("cone", _) => {
                return Err(value_error(format!(
                    "beam {beam:?} does not fit det_shape {det_shape:?}: 'fan' is the 2D \
                     point-source beam (one detector axis), 'cone' the 3D one (two axes); \
                     'point' is either"
                )))
            }
            (other, _) => {
                return Err(value_error(format!(
                    "beam must be 'parallel', 'point', 'fan' (2D) or 'cone' (3D), got {other:?}"
                )))
            }
        };
        if ndim != 2 && ndim != 3 {
            return Err(value_error(format!(
                "det_shape must have 1 (2D) or 2 (3D) entries, got {}",
                det_shape.len()
            )));
        }
        let a = crate::array::read::<f64>(vectors, "vectors")?;
        let a = a.as_array();
        let width = if ndim == 2 { 6 } else { 12 };
        if a.ndim() != 2 || a.shape()[1] != width || a.shape()[0] == 0 {
            return Err(value_error(format!(
                "vectors: a {ndim}D geometry needs an array of shape (views, {width}), got {:?}",
                a.shape()
            )));
        }
        let d = ndim;
        let views = a
            .outer_iter()
            .map(|row| {
                let get = |k: usize| -> [f64; 3] {
                    let mut v = [0.0; 3];
                    for i in 0..d {
                        v[i] = row[k * d + i];
                    }
                    v
                };
                View {
                    src: get(0),
                    det_center: get(1),
                    det_u: get(2),
                    det_v: if d == 3 { get(3) } else { [0.0; 3] },
                }
            })
            .collect();
        let radii: Vec<Option<f64>> = match det_curvature_radius {
            None => Vec::new(),
            Some(r) => match r.extract::<f64>() {
                Ok(x) => vec![Some(x)],
                Err(_) => r.extract::<Vec<Option<f64>>>().map_err(|_| {
                    value_error(
                        "det_curvature_radius must be a number or a sequence of numbers or None",
                    )
                })?,
            },
        };
        let detector = Detector::from_curvature(ndim, &radii).py()?;
        let vec = VecGeometry::new(ndim, beam, &det_shape, views)
            .and_then(|v| v.with_detector(detector))
            .py()?;
        let inner = match partition {
            None => Geometry::from_vec(vec).py()?,
            Some((lo, hi)) => {
                let part = UniformPartition::new(&lo, &hi, &vec.data_shape()).py()?;
                Geometry::from_vec_on(vec, part).py()?
            }
        };
        Ok(Self { inner })
    }

    /// ODL's `det_curvature_radius`: `None` for a flat detector, a number for a 2D arc, a
    /// pair `(r, None)` (cylinder) or `(r, r)` (sphere) in 3D.
    #[getter]
    fn det_curvature_radius(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let vec = self.inner.vec();
        let d = vec.detector();
        let Some(r) = d.radius() else {
            return Ok(None);
        };
        Ok(Some(if vec.ndim() == 2 {
            r.into_pyobject(py)?.into_any().unbind()
        } else {
            let pair = d.curvature(3);
            PyTuple::new(py, pair)?.into_any().unbind()
        }))
    }

    /// Number of space dimensions (2 or 3).
    #[getter]
    fn ndim(&self) -> usize {
        self.inner.ndim()
    }

    /// `'parallel'` or `'point'` (fan and cone beams).
    #[getter]
    fn beam(&self) -> &'static str {
        beam_name(self.inner.vec().beam())
    }

    /// Shape of the projection data: `(views, nu)` or `(views, nu, nv)`.
    #[getter]
    fn data_shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.data_shape())
    }

    /// Detector shape: `(nu,)` or `(nu, nv)`.
    #[getter]
    fn det_shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.vec().det_shape())
    }

    /// Number of views.
    #[getter]
    fn num_views(&self) -> usize {
        self.inner.vec().num_views()
    }

    /// The data partition `(min_pt, max_pt, shape)`: views (angles) × detector.
    #[getter]
    fn data_partition(&self) -> (Vec<f64>, Vec<f64>, Vec<usize>) {
        let p = self.inner.data_partition();
        (p.min_pt().to_vec(), p.max_pt().to_vec(), p.shape().to_vec())
    }

    /// The per-view vectors, one row per view, as `from_vectors` takes them (flat detectors
    /// only: `NotImplementedError` for a curved one, whose pixels the vectors do not give).
    #[getter]
    fn vectors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        if self.inner.vec().detector().is_curved() {
            return Err(pyo3::exceptions::PyNotImplementedError::new_err(format!(
                "Geometry.vectors: the geometry has a curved detector ({:?}); its per-view \
                 vectors describe a flat one",
                self.inner.vec().detector()
            )));
        }
        let d = self.inner.ndim();
        let rows: Vec<Vec<f64>> = self
            .inner
            .vec()
            .views()
            .iter()
            .map(|v| {
                let mut r = Vec::with_capacity(4 * d);
                let parts: &[[f64; 3]] = if d == 3 {
                    &[v.src, v.det_center, v.det_u, v.det_v]
                } else {
                    &[v.src, v.det_center, v.det_u]
                };
                for p in parts {
                    r.extend_from_slice(&p[..d]);
                }
                r
            })
            .collect();
        let n = rows.len();
        let w = rows.first().map(|r| r.len()).unwrap_or(0);
        let flat: Vec<f64> = rows.into_iter().flatten().collect();
        numpy::PyArray1::from_vec(py, flat).reshape([n, w])
    }

    /// The data space (ODL's `RayTransform.range`): the uniform discretisation of the data
    /// partition, with its cell volume as weighting.
    #[pyo3(signature = (dtype=None))]
    fn data_space(&self, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PySpace> {
        let dtype = match dtype {
            Some(d) => Dtype::parse(d)?,
            None => Dtype::F64,
        };
        let p = self.inner.data_partition().clone();
        Ok(PySpace {
            inner: match dtype {
                Dtype::F32 => Any::F32(Space::from_partition(p)),
                Dtype::F64 => Any::F64(Space::from_partition(p)),
            },
        })
    }

    /// The JSON text in rodl's geometry format, for the geometries built from it (`None` for
    /// those built from vectors).
    fn to_json(&self) -> PyResult<Option<String>> {
        match self.inner.spec() {
            Some(s) => serde_json::to_string_pretty(s)
                .map(Some)
                .map_err(|e| value_error(e.to_string())),
            None => Ok(None),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Geometry(ndim={}, beam='{}', data_shape={:?})",
            self.inner.ndim(),
            beam_name(self.inner.vec().beam()),
            self.inner.data_shape()
        )
    }
}

/// Reads a geometry file (`{"volume": …, "geometry": …}`, the format of the `rodl` tool) and
/// returns `(space, geometry)`.
#[pyfunction]
#[pyo3(signature = (path, dtype=None))]
fn read_geometry_file(
    path: std::path::PathBuf,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<(PySpace, PyGeometry)> {
    let spec = TomoSpec::from_file(&path).py()?;
    let dtype = match dtype {
        Some(d) => Dtype::parse(d)?,
        None => Dtype::F64,
    };
    let space = PySpace {
        inner: match dtype {
            Dtype::F32 => Any::F32(spec.volume.space().py()?),
            Dtype::F64 => Any::F64(spec.volume.space().py()?),
        },
    };
    let geometry = PyGeometry {
        inner: spec.geometry.build().py()?,
    };
    Ok((space, geometry))
}

/// ODL's `parallel_beam_geometry(space, num_angles)`: a parallel beam over `[0, π)` that sees
/// all of `space`, sampled as ODL samples it.
#[pyfunction]
#[pyo3(signature = (space, num_angles=None))]
fn parallel_beam_geometry(space: &PySpace, num_angles: Option<i64>) -> PyResult<PyGeometry> {
    let num_angles = crate::count::opt_count("num_angles", num_angles)?;
    let inner = crate::scalar::each!(&space.inner, s => rodl::tomo::parallel_beam_geometry(s, num_angles).py()?);
    Ok(PyGeometry { inner })
}

/// ODL's `cone_beam_geometry(space, src_radius, det_radius, num_angles)`: a full-scan fan
/// (2D) or circular cone (3D) beam with a flat detector that sees all of `space`.
#[pyfunction]
#[pyo3(signature = (space, src_radius, det_radius, num_angles=None))]
fn cone_beam_geometry(
    space: &PySpace,
    src_radius: f64,
    det_radius: f64,
    num_angles: Option<i64>,
) -> PyResult<PyGeometry> {
    let num_angles = crate::count::opt_count("num_angles", num_angles)?;
    let inner = crate::scalar::each!(&space.inner, s => rodl::tomo::cone_beam_geometry(s, src_radius, det_radius, num_angles).py()?);
    Ok(PyGeometry { inner })
}

/// Registers the geometry type and helpers.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGeometry>()?;
    m.add_function(wrap_pyfunction!(read_geometry_file, m)?)?;
    m.add_function(wrap_pyfunction!(parallel_beam_geometry, m)?)?;
    m.add_function(wrap_pyfunction!(cone_beam_geometry, m)?)?;
    Ok(())
}
