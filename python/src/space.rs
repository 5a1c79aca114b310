//! Discretised function spaces (`uniform_discr`, `rn`): shapes, cells, weightings and the
//! weighted inner product on NumPy arrays.

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::array::{array_shape, element, to_numpy};
use crate::collective::{across_of, agreed};
use crate::errors::IntoPyResult;
use crate::scalar::{each, Any, Dtype};
use rodl::Space;

/// A space of either scalar type.
pub type AnySpace = Any<Space<f32>, Space<f64>>;

/// A discretised function space (ODL's `DiscretizedSpace`) or `R^n`, on the host.
///
/// Its elements are NumPy arrays of `shape` and `dtype`; `inner`, `norm` and `dist` use the
/// space's weighting (the cell volume for `uniform_discr`, 1 for `rn`), as ODL does. An element
/// of a product space (such as a gradient's range) is an array with the parts along a leading
/// axis.
#[pyclass(name = "Space", module = "rodl", frozen)]
#[derive(Clone)]
pub struct PySpace {
    pub inner: AnySpace,
}

impl PySpace {
    /// The dtype of the space's elements.
    pub fn dtype_enum(&self) -> Dtype {
        match self.inner {
            Any::F32(_) => Dtype::F32,
            Any::F64(_) => Dtype::F64,
        }
    }
}

#[pymethods]
impl PySpace {
    /// Shape of an element's array.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let s = each!(&self.inner, s => array_shape(s)?);
        PyTuple::new(py, s)
    }

    /// Number of axes of an element's array.
    #[getter]
    fn ndim(&self) -> PyResult<usize> {
        Ok(each!(&self.inner, s => array_shape(s)?.len()))
    }

    /// Number of entries of an element.
    #[getter]
    fn size(&self) -> usize {
        each!(&self.inner, s => s.size())
    }

    /// The NumPy dtype of the elements (`float32` or `float64`).
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("numpy")?
            .getattr("dtype")?
            .call1((self.dtype_enum().name(),))
    }

    /// Lower corner of the domain.
    #[getter]
    fn min_pt(&self) -> PyResult<Vec<f64>> {
        each!(&self.inner, s => s.min_pt().map(|v| v.to_vec()).py())
    }

    /// Upper corner of the domain.
    #[getter]
    fn max_pt(&self) -> PyResult<Vec<f64>> {
        each!(&self.inner, s => s.max_pt().map(|v| v.to_vec()).py())
    }

    /// Cell sizes per axis.
    #[getter]
    fn cell_sides(&self) -> PyResult<Vec<f64>> {
        each!(&self.inner, s => s.cell_sides().py())
    }

    /// Volume of one cell (the weighting of `uniform_discr`).
    #[getter]
    fn cell_volume(&self) -> PyResult<f64> {
        each!(&self.inner, s => s.cell_volume().py())
    }

    /// The constant weight of the inner product (of every part, for a product space whose
    /// parts share one weight).
    #[getter]
    fn weighting(&self) -> PyResult<f64> {
        fn weight<T: rodl::Scalar>(s: &Space<T>) -> PyResult<f64> {
            if !s.is_product() {
                return s.weight().py();
            }
            let parts = s.parts().py()?;
            let w = parts.iter().map(weight).collect::<PyResult<Vec<_>>>()?;
            match w.first() {
                Some(&w0) if w.iter().all(|&v| v == w0) => Ok(w0),
                _ => Err(crate::errors::value_error(
                    "the parts of this product space have different weights",
                )),
            }
        }
        each!(&self.inner, s => weight(s))
    }

    /// Whether this is a product space (elements with parts).
    #[getter]
    fn is_product(&self) -> bool {
        each!(&self.inner, s => s.is_product())
    }

    /// The element holding `data` (any array-like, cast to the space's dtype), or the zero
    /// element without `data`. Returns a new NumPy array checked against the space's shape.
    #[pyo3(signature = (data=None))]
    fn element(&self, py: Python<'_>, data: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        each!(&self.inner, s => {
            let x = match data {
                Some(d) => element(s, d, "Space.element")?,
                None => s.zero().py()?,
            };
            to_numpy(py, x)
        })
    }

    /// The zero element.
    fn zero(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        each!(&self.inner, s => to_numpy(py, s.zero().py()?))
    }

    /// The element with every entry 1.
    fn one(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        each!(&self.inner, s => to_numpy(py, s.one().py()?))
    }

    /// The weighted inner product `⟨x, y⟩`. On a share of a distributed space
    /// (`rodl.distributed`) it is the whole space's, summed over the ranks: collective.
    fn inner(&self, py: Python<'_>, x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>) -> PyResult<f64> {
        each!(&self.inner, s => {
            let ab = (|| Ok((element(s, x, "inner: x")?, element(s, y, "inner: y")?)))();
            let (a, b) = agreed(py, across_of(s).as_ref(), ab)?;
            py.detach(|| s.inner(&a, &b)).py()
        })
    }

    /// The weighted norm `‖x‖` (of the whole space on a share: collective, as `inner`).
    fn norm(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<f64> {
        each!(&self.inner, s => {
            let a = agreed(py, across_of(s).as_ref(), element(s, x, "norm: x"))?;
            py.detach(|| s.norm(&a)).py()
        })
    }

    /// The weighted distance `‖x − y‖` (of the whole space on a share: collective, as
    /// `inner`).
    fn dist(&self, py: Python<'_>, x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>) -> PyResult<f64> {
        each!(&self.inner, s => {
            let ab = (|| Ok((element(s, x, "dist: x")?, element(s, y, "dist: y")?)))();
            let (a, b) = agreed(py, across_of(s).as_ref(), ab)?;
            py.detach(|| s.dist(&a, &b)).py()
        })
    }

    /// Whether this is one rank's share of a space distributed over the ranks of a job
    /// (`rodl.distributed`): its elements hold that rank's part, its `inner`, `norm` and
    /// `dist` are the whole space's (collective calls).
    #[getter]
    fn is_share(&self) -> bool {
        each!(&self.inner, s => s.across().is_some())
    }

    /// Whether `x` is an array of this space's shape.
    fn __contains__(&self, x: &Bound<'_, PyAny>) -> bool {
        each!(&self.inner, s => element(s, x, "contains").is_ok())
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        match other.extract::<PyRef<'_, PySpace>>() {
            Ok(o) => match (&self.inner, &o.inner) {
                (Any::F32(a), Any::F32(b)) => a == b,
                (Any::F64(a), Any::F64(b)) => a == b,
                _ => false,
            },
            Err(_) => false,
        }
    }

    fn __hash__(&self) -> u64 {
        0
    }

    fn __repr__(&self) -> String {
        let dtype = self.dtype_enum().name();
        each!(&self.inner, s => {
            if s.is_product() {
                format!("Space(product of {} parts, dtype='{dtype}')", s.parts().map(|p| p.len()).unwrap_or(0))
            } else {
                match (s.min_pt(), s.max_pt(), s.shape()) {
                    (Ok(lo), Ok(hi), Ok(sh)) => {
                        format!("uniform_discr({lo:?}, {hi:?}, {sh:?}, dtype='{dtype}')")
                    }
                    _ => format!("Space(dtype='{dtype}')"),
                }
            }
        })
    }
}

/// A uniformly discretised box `[min_pt, max_pt]` with `shape` cells (ODL's `uniform_discr`):
/// sample points at cell midpoints, inner product weighted by the cell volume.
#[pyfunction]
#[pyo3(signature = (min_pt, max_pt, shape, dtype=None))]
fn uniform_discr(
    min_pt: Vec<f64>,
    max_pt: Vec<f64>,
    shape: Vec<i64>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<PySpace> {
    let shape = crate::count::counts("shape", &shape)?;
    let dtype = match dtype {
        Some(d) => Dtype::parse(d)?,
        None => Dtype::F64,
    };
    let inner = match dtype {
        Dtype::F32 => Any::F32(rodl::uniform_discr(&min_pt, &max_pt, &shape).py()?),
        Dtype::F64 => Any::F64(rodl::uniform_discr(&min_pt, &max_pt, &shape).py()?),
    };
    Ok(PySpace { inner })
}

/// `R^shape` with the unweighted inner product (ODL's `rn`), or a constant `weighting`.
#[pyfunction]
#[pyo3(signature = (shape, dtype=None, weighting=None))]
fn rn(
    shape: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    weighting: Option<f64>,
) -> PyResult<PySpace> {
    let shape: Vec<usize> = match shape.extract::<usize>() {
        Ok(n) => vec![n],
        Err(_) => shape.extract()?,
    };
    let dtype = match dtype {
        Some(d) => Dtype::parse(d)?,
        None => Dtype::F64,
    };
    let w = weighting.unwrap_or(1.0);
    let inner = match dtype {
        Dtype::F32 => Any::F32(rodl::weighted_rn(&shape, w).py()?),
        Dtype::F64 => Any::F64(rodl::weighted_rn(&shape, w).py()?),
    };
    Ok(PySpace { inner })
}

/// Registers the space type and constructors.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySpace>()?;
    m.add_function(wrap_pyfunction!(uniform_discr, m)?)?;
    m.add_function(wrap_pyfunction!(rn, m)?)?;
    Ok(())
}
