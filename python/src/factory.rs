//! Operator factories: an operator description that builds the operator for a device on
//! demand (`factory.build("cuda:1")`), the maintainers' answer to data parallelism (one replica
//! per device, no settable device property). `rodl.torch.OperatorModule.from_op_factory` keeps
//! one built operator per device.

use pyo3::prelude::*;

use crate::errors::{type_error, value_error, IntoPyResult};
use crate::geometry::PyGeometry;
use crate::operator::PyOperator;
use crate::scalar::{each, pair, Any, Dtype};
use crate::space::PySpace;
use rodl::factory::{LinFactory, SpaceDescExt};
use rodl::tomo::{Backend, CpuOptions, FbpOptions, RayTransform};
use rodl::{Device, LinOp, Scalar, Space};

/// A factory of either scalar type.
pub type AnyFactory = Any<LinFactory<f32>, LinFactory<f64>>;

/// Parses `"cpu"`, `"cuda"` (GPU 0) or `"cuda:N"`.
pub fn parse_device(device: &str) -> PyResult<Device> {
    let d = device.trim().to_lowercase();
    if d == "cpu" {
        return Ok(Device::Cpu);
    }
    if d == "cuda" {
        return Ok(Device::Cuda(0));
    }
    if let Some(n) = d.strip_prefix("cuda:") {
        if let Ok(id) = n.parse() {
            return Ok(Device::Cuda(id));
        }
    }
    Err(value_error(format!(
        "unknown device {device:?}: use 'cpu', 'cuda' or 'cuda:N'"
    )))
}

/// A linear operator described independently of a device, built for one on demand: `build`
/// gives the operator with its domain and range on that device (`"cpu"`, `"cuda:N"`), each call
/// a new replica. Factories combine like operators (`a @ b`, `c * a`, `a + b`, `a.adjoint`).
#[pyclass(name = "Factory", module = "rodl", frozen)]
#[derive(Clone)]
pub struct PyFactory {
    pub inner: AnyFactory,
}

fn wrap<T: Scalar>(f: LinFactory<T>) -> PyFactory
where
    AnyFactory: From<LinFactory<T>>,
{
    PyFactory { inner: f.into() }
}

impl From<LinFactory<f32>> for AnyFactory {
    fn from(f: LinFactory<f32>) -> Self {
        Any::F32(f)
    }
}
impl From<LinFactory<f64>> for AnyFactory {
    fn from(f: LinFactory<f64>) -> Self {
        Any::F64(f)
    }
}

fn fbp_factory<T: Scalar>(
    space: &Space<T>,
    geometry: &rodl::tomo::Geometry,
    opts: FbpOptions,
    cpu: CpuOptions,
) -> rodl::Result<LinFactory<T>> {
    let ray = RayTransform::<T>::factory(space.desc(), geometry.clone(), cpu.clone())?;
    let (data, vol) = (ray.range().clone(), ray.domain().clone());
    let g = geometry.clone();
    let desc = format!("FBP ({}) for {}", opts.filter.name(), ray.describe());
    Ok(rodl::factory::Factory::from_fn(
        data,
        vol.clone(),
        desc,
        move |d| {
            let op = RayTransform::new(vol.build(d)?, g.clone(), Backend::for_device(d, &cpu))?;
            let fbp: LinOp<T> = rodl::tomo::fbp_op(&op, &opts)?;
            Ok(fbp)
        },
    ))
}

#[pymethods]
impl PyFactory {
    /// The factory of `RayTransform(space, geometry)`: built for `"cpu"` it computes on the CPU
    /// (`threads` worker threads), for `"cuda:N"` on that GPU with domain and range there.
    #[staticmethod]
    #[pyo3(signature = (space, geometry, threads=None))]
    fn ray_transform(
        space: &PySpace,
        geometry: &PyGeometry,
        threads: Option<i64>,
    ) -> PyResult<Self> {
        let cpu = CpuOptions {
            threads: crate::count::opt_count("threads", threads)?,
        };
        let g = geometry.inner.clone();
        Ok(each!(&space.inner, s => wrap(RayTransform::<S>::factory(s.desc(), g, cpu).py()?)))
    }

    /// The factory of `fbp_op(RayTransform(space, geometry), …)` (see `rodl.fbp_op`; no Parker
    /// weights unless `parker=q` is given, as in ODL).
    #[staticmethod]
    #[pyo3(signature = (space, geometry, filter_type="Ram-Lak", frequency_scaling=1.0, padding=true, parker=None, threads=None))]
    #[allow(clippy::too_many_arguments)]
    fn fbp(
        space: &PySpace,
        geometry: &PyGeometry,
        filter_type: &str,
        frequency_scaling: f64,
        padding: bool,
        parker: Option<f64>,
        threads: Option<i64>,
    ) -> PyResult<Self> {
        let opts = crate::tomo::options(filter_type, frequency_scaling, padding, parker)?;
        let cpu = CpuOptions {
            threads: crate::count::opt_count("threads", threads)?,
        };
        Ok(each!(&space.inner, s => wrap(fbp_factory(s, &geometry.inner, opts, cpu).py()?)))
    }

    /// The factory of `Gradient(space)`.
    #[staticmethod]
    fn gradient(space: &PySpace) -> PyResult<Self> {
        Ok(each!(&space.inner, s => wrap(rodl::Gradient::<S>::factory(s.desc()).py()?)))
    }

    /// The factory of `Divergence(space)`.
    #[staticmethod]
    fn divergence(space: &PySpace) -> PyResult<Self> {
        Ok(each!(&space.inner, s => wrap(rodl::Divergence::<S>::factory(s.desc()).py()?)))
    }

    /// The factory of `Laplacian(space)`.
    #[staticmethod]
    fn laplacian(space: &PySpace) -> PyResult<Self> {
        Ok(each!(&space.inner, s => wrap(rodl::Laplacian::<S>::factory(s.desc()).py()?)))
    }

    /// The factory of `IdentityOperator(space)`.
    #[staticmethod]
    fn identity(space: &PySpace) -> Self {
        each!(&space.inner, s => wrap(rodl::IdentityOperator::<S>::factory(s.desc())))
    }

    /// The factory of `ScalingOperator(space, scalar)`.
    #[staticmethod]
    fn scaling(space: &PySpace, scalar: f64) -> Self {
        each!(&space.inner, s => wrap(rodl::ScalingOperator::<S>::factory(s.desc(), scalar as S)))
    }

    /// Builds the operator for `device` (`"cpu"`, `"cuda"`, `"cuda:N"`): its domain and range
    /// live there. A GPU that cannot be used raises `CudaUnavailableError`.
    fn build(&self, py: Python<'_>, device: &str) -> PyResult<PyOperator> {
        let d = parse_device(device)?;
        Ok(PyOperator {
            inner: match &self.inner {
                Any::F32(f) => Any::F32(py.detach(|| f.build(d)).py()?),
                Any::F64(f) => Any::F64(py.detach(|| f.build(d)).py()?),
            },
        })
    }

    /// The NumPy dtype of the operators it builds.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let name = match self.inner {
            Any::F32(_) => Dtype::F32,
            Any::F64(_) => Dtype::F64,
        }
        .name();
        py.import("numpy")?.getattr("dtype")?.call1((name,))
    }

    /// Shape of the domain's arrays (`None` for product spaces).
    #[getter]
    fn domain_shape(&self) -> Option<Vec<usize>> {
        each!(&self.inner, f => f.domain().shape().map(|s| s.to_vec()))
    }

    /// Shape of the range's arrays (`None` for product spaces).
    #[getter]
    fn range_shape(&self) -> Option<Vec<usize>> {
        each!(&self.inner, f => f.range().shape().map(|s| s.to_vec()))
    }

    /// The factory of the adjoints.
    #[getter]
    fn adjoint(&self) -> Self {
        PyFactory {
            inner: match &self.inner {
                Any::F32(f) => Any::F32(f.adjoint()),
                Any::F64(f) => Any::F64(f.adjoint()),
            },
        }
    }

    fn __matmul__(&self, other: &Bound<'_, PyAny>) -> PyResult<Self> {
        let o = other
            .extract::<PyRef<'_, PyFactory>>()
            .map_err(|_| type_error("@ composes two factories"))?;
        let inner =
            pair!(&self.inner, &o.inner, "composition", (a, b) => Ok(a.compose(b).py()?.into()))?;
        Ok(PyFactory { inner })
    }

    fn __mul__(&self, other: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(c) = other.extract::<f64>() {
            return Ok(PyFactory {
                inner: each!(&self.inner, a => a.right_scaled(c as S).into()),
            });
        }
        self.__matmul__(other)
    }

    fn __rmul__(&self, other: f64) -> Self {
        PyFactory {
            inner: each!(&self.inner, a => a.scaled(other as S).into()),
        }
    }

    fn __add__(&self, other: &Bound<'_, PyAny>) -> PyResult<Self> {
        let o = other
            .extract::<PyRef<'_, PyFactory>>()
            .map_err(|_| type_error("+ adds two factories"))?;
        let inner = pair!(&self.inner, &o.inner, "sum", (a, b) => Ok(a.plus(b).py()?.into()))?;
        Ok(PyFactory { inner })
    }

    fn __sub__(&self, other: &Bound<'_, PyAny>) -> PyResult<Self> {
        let o = other
            .extract::<PyRef<'_, PyFactory>>()
            .map_err(|_| type_error("- subtracts two factories"))?;
        let inner =
            pair!(&self.inner, &o.inner, "difference", (a, b) => Ok(a.minus(b).py()?.into()))?;
        Ok(PyFactory { inner })
    }

    fn __neg__(&self) -> Self {
        PyFactory {
            inner: each!(&self.inner, a => a.neg().into()),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Factory({})",
            each!(&self.inner, f => f.describe().to_string())
        )
    }
}

/// Registers the factory type.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFactory>()?;
    Ok(())
}
