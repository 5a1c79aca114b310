//! Operator factories: an operator description that builds the operator for a device on
//! demand (`factory.build("cuda:1")`), the maintainers' answer to data parallelism (one replica
//! per device, no settable device property). `rodl.torch.OperatorModule.from_op_factory` keeps
//! one built operator per device.
//!
//! A factory carries per-backend options (`rodl::tomo::BackendOptions`: CPU threads; the CUDA
//! memory budget and deterministic kernels) for the parts that take them (ray transforms, FBP)
//! and applies the ones of the device's kind when it builds. `with_options` gives the same
//! factory with other options: every factory remembers how it was made (a tree of its parts),
//! so composites are remade from their remade parts.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::backend_options::{backend_options, options_dict};
use crate::errors::{type_error, value_error, IntoPyResult};
use crate::geometry::PyGeometry;
use crate::operator::PyOperator;
use crate::scalar::{each, pair, Any, Dtype};
use crate::space::PySpace;
use rodl::factory::{LinFactory, SpaceDescExt};
use rodl::tomo::{Backend, BackendOptions, FbpOptions, RayTransform};
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
/// Ray transforms and FBP carry per-backend options (`threads` on the CPU; `memory_budget` and
/// `deterministic` on a GPU), applied for the kind of device they are built for.
#[pyclass(name = "Factory", module = "rodl", frozen)]
#[derive(Clone)]
pub struct PyFactory {
    pub inner: AnyFactory,
    node: Node,
}

/// Makes a factory of given options.
type Make = Arc<dyn Fn(&BackendOptions) -> PyResult<AnyFactory> + Send + Sync>;
/// Makes a factory from another.
type Unary = Arc<dyn Fn(&AnyFactory) -> PyResult<AnyFactory> + Send + Sync>;
/// Makes a factory from two others.
type Binary = Arc<dyn Fn(&AnyFactory, &AnyFactory) -> PyResult<AnyFactory> + Send + Sync>;

/// How a factory was made: what `with_options` remakes.
#[derive(Clone)]
enum Node {
    /// Takes no options (gradients, identities, ...).
    Plain,
    /// Takes options (ray transforms, FBP): these, and how to make it with others.
    Leaf { options: BackendOptions, make: Make },
    /// Made from one factory (adjoint, scalings, negation).
    Unary(Arc<PyFactory>, Unary),
    /// Made from two (composition, sum, difference).
    Binary(Arc<PyFactory>, Arc<PyFactory>, Binary),
}

/// Options to change: `None` keeps a part's own.
#[derive(Clone, Default)]
struct Patch {
    threads: Option<Option<usize>>,
    memory_budget: Option<Option<u64>>,
    deterministic: Option<bool>,
}

impl Patch {
    fn apply(&self, o: &BackendOptions) -> BackendOptions {
        let mut o = o.clone();
        if let Some(t) = self.threads {
            o.cpu.threads = t;
        }
        if let Some(b) = self.memory_budget {
            o.cuda.memory_budget = b;
        }
        if let Some(d) = self.deterministic {
            o.cuda.deterministic = d;
        }
        o
    }
}

fn wrap<T: Scalar>(f: LinFactory<T>) -> PyFactory
where
    AnyFactory: From<LinFactory<T>>,
{
    PyFactory {
        inner: f.into(),
        node: Node::Plain,
    }
}

impl PyFactory {
    /// A factory that takes options: made by `make` with `options`.
    fn leaf(options: BackendOptions, make: Make) -> PyResult<Self> {
        Ok(PyFactory {
            inner: make(&options)?,
            node: Node::Leaf { options, make },
        })
    }

    /// `f(self)`, remade from `self` by `with_options`.
    fn unary(&self, f: Unary) -> PyResult<Self> {
        Ok(PyFactory {
            inner: f(&self.inner)?,
            node: Node::Unary(Arc::new(self.clone()), f),
        })
    }

    /// `f(self, other)`, remade from both by `with_options`.
    fn binary(&self, other: &PyFactory, f: Binary) -> PyResult<Self> {
        Ok(PyFactory {
            inner: f(&self.inner, &other.inner)?,
            node: Node::Binary(Arc::new(self.clone()), Arc::new(other.clone()), f),
        })
    }

    /// The same factory with `patch` applied to every part that takes options.
    fn patched(&self, patch: &Patch) -> PyResult<Self> {
        match &self.node {
            Node::Plain => Ok(self.clone()),
            Node::Leaf { options, make } => Self::leaf(patch.apply(options), Arc::clone(make)),
            Node::Unary(a, f) => a.patched(patch)?.unary(Arc::clone(f)),
            Node::Binary(a, b, f) => a.patched(patch)?.binary(&b.patched(patch)?, Arc::clone(f)),
        }
    }

    /// The options of its first part that takes options, if any.
    pub(crate) fn backend_options(&self) -> Option<&BackendOptions> {
        match &self.node {
            Node::Plain => None,
            Node::Leaf { options, .. } => Some(options),
            Node::Unary(a, _) => a.backend_options(),
            Node::Binary(a, b, _) => a.backend_options().or_else(|| b.backend_options()),
        }
    }
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
    backend: BackendOptions,
) -> rodl::Result<LinFactory<T>> {
    let ray = RayTransform::<T>::factory(space.desc(), geometry.clone(), backend.clone())?;
    let (data, vol) = (ray.range().clone(), ray.domain().clone());
    let g = geometry.clone();
    let desc = format!("FBP ({}) for {}", opts.filter.name(), ray.describe());
    Ok(rodl::factory::Factory::from_fn(
        data,
        vol.clone(),
        desc,
        move |d| {
            let op = RayTransform::new(vol.build(d)?, g.clone(), Backend::for_device(d, &backend))?;
            let fbp: LinOp<T> = rodl::tomo::fbp_op(&op, &opts)?;
            Ok(fbp)
        },
    ))
}

#[pymethods]
impl PyFactory {
    /// The factory of `RayTransform(space, geometry)`: built for `"cpu"` it computes on the CPU
    /// (`threads` worker threads, one per core by default), for `"cuda:N"` on that GPU with
    /// domain and range there, within `memory_budget` bytes of its memory (default: the free
    /// memory less a margin) and, with `deterministic=True`, with bitwise reproducible kernels
    /// (the CPU's are always).
    #[staticmethod]
    #[pyo3(signature = (space, geometry, threads=None, memory_budget=None, deterministic=false))]
    fn ray_transform(
        space: &PySpace,
        geometry: &PyGeometry,
        threads: Option<i64>,
        memory_budget: Option<i64>,
        deterministic: bool,
    ) -> PyResult<Self> {
        let options = backend_options(threads, memory_budget, deterministic)?;
        let (space, g) = (space.inner.clone(), geometry.inner.clone());
        Self::leaf(
            options,
            Arc::new(move |o: &BackendOptions| {
                let o = o.clone();
                Ok(
                    each!(&space, s => RayTransform::<S>::factory(s.desc(), g.clone(), o).py()?.into()),
                )
            }),
        )
    }

    /// The factory of `fbp_op(RayTransform(space, geometry), …)` (see `rodl.fbp_op`; no Parker
    /// weights unless `parker=q` is given, as in ODL), with the backend options of
    /// `Factory.ray_transform`.
    #[staticmethod]
    #[pyo3(signature = (space, geometry, filter_type="Ram-Lak", frequency_scaling=1.0, padding=true, parker=None, threads=None, memory_budget=None, deterministic=false))]
    #[allow(clippy::too_many_arguments)]
    fn fbp(
        space: &PySpace,
        geometry: &PyGeometry,
        filter_type: &str,
        frequency_scaling: f64,
        padding: bool,
        parker: Option<f64>,
        threads: Option<i64>,
        memory_budget: Option<i64>,
        deterministic: bool,
    ) -> PyResult<Self> {
        let opts = crate::tomo::options(filter_type, frequency_scaling, padding, parker)?;
        let options = backend_options(threads, memory_budget, deterministic)?;
        let (space, g) = (space.inner.clone(), geometry.inner.clone());
        Self::leaf(
            options,
            Arc::new(move |o: &BackendOptions| {
                Ok(each!(&space, s => fbp_factory(s, &g, opts.clone(), o.clone()).py()?.into()))
            }),
        )
    }

    /// The per-backend options it applies when it builds (`{"threads", "memory_budget",
    /// "deterministic"}`: those of its first part that takes options), or `None` when no part
    /// takes any.
    #[getter]
    fn options<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.backend_options()
            .map(|o| options_dict(py, o))
            .transpose()
    }

    /// The same factory with other backend options for every part that takes them: keywords
    /// `threads` (CPU worker threads), `memory_budget` (bytes per GPU) and `deterministic`
    /// (bitwise reproducible GPU kernels); `None` restores a default, a keyword left out keeps
    /// each part's own.
    #[pyo3(signature = (**options))]
    fn with_options(&self, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut patch = Patch::default();
        if let Some(d) = options {
            for (k, v) in d.iter() {
                let key: String = k.extract()?;
                match key.as_str() {
                    "threads" => {
                        let t = crate::count::opt_count("threads", v.extract::<Option<i64>>()?)?;
                        if t == Some(0) {
                            return Err(value_error("threads must be at least 1"));
                        }
                        patch.threads = Some(t);
                    }
                    "memory_budget" => {
                        let b =
                            crate::count::opt_count("memory_budget", v.extract::<Option<i64>>()?)?;
                        patch.memory_budget = Some(b.map(|b| b as u64));
                    }
                    "deterministic" => {
                        patch.deterministic = Some(v.extract::<Option<bool>>()?.unwrap_or(false));
                    }
                    other => {
                        return Err(type_error(format!(
                            "with_options: unknown option {other:?} (threads, memory_budget, \
                             deterministic)"
                        )))
                    }
                }
            }
        }
        self.patched(&patch)
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
        self.unary(Arc::new(|f: &AnyFactory| {
            Ok(match f {
                Any::F32(f) => Any::F32(f.adjoint()),
                Any::F64(f) => Any::F64(f.adjoint()),
            })
        }))
        .expect("the adjoint of a factory cannot fail")
    }

    fn __matmul__(&self, other: &Bound<'_, PyAny>) -> PyResult<Self> {
        let o = other
            .extract::<PyRef<'_, PyFactory>>()
            .map_err(|_| type_error("@ composes two factories"))?;
        self.binary(
            &o,
            Arc::new(|a: &AnyFactory, b: &AnyFactory| {
                pair!(a, b, "composition", (a, b) => Ok(a.compose(b).py()?.into()))
            }),
        )
    }

    fn __mul__(&self, other: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(c) = other.extract::<f64>() {
            return self.unary(Arc::new(move |f: &AnyFactory| {
                Ok(each!(f, a => a.right_scaled(c as S).into()))
            }));
        }
        self.__matmul__(other)
    }

    fn __rmul__(&self, other: f64) -> PyResult<Self> {
        self.unary(Arc::new(move |f: &AnyFactory| {
            Ok(each!(f, a => a.scaled(other as S).into()))
        }))
    }

    fn __add__(&self, other: &Bound<'_, PyAny>) -> PyResult<Self> {
        let o = other
            .extract::<PyRef<'_, PyFactory>>()
            .map_err(|_| type_error("+ adds two factories"))?;
        self.binary(
            &o,
            Arc::new(|a: &AnyFactory, b: &AnyFactory| {
                pair!(a, b, "sum", (a, b) => Ok(a.plus(b).py()?.into()))
            }),
        )
    }

    fn __sub__(&self, other: &Bound<'_, PyAny>) -> PyResult<Self> {
        let o = other
            .extract::<PyRef<'_, PyFactory>>()
            .map_err(|_| type_error("- subtracts two factories"))?;
        self.binary(
            &o,
            Arc::new(|a: &AnyFactory, b: &AnyFactory| {
                pair!(a, b, "difference", (a, b) => Ok(a.minus(b).py()?.into()))
            }),
        )
    }

    fn __neg__(&self) -> PyResult<Self> {
        self.unary(Arc::new(|f: &AnyFactory| Ok(each!(f, a => a.neg().into()))))
    }

    fn __repr__(&self) -> String {
        let desc = each!(&self.inner, f => f.describe().to_string());
        match self.backend_options() {
            None => format!("Factory({desc})"),
            Some(o) => format!(
                "Factory({desc}; threads={}, memory_budget={}, deterministic={})",
                o.cpu.threads.map_or("None".into(), |t| t.to_string()),
                o.cuda
                    .memory_budget
                    .map_or("None".into(), |b| b.to_string()),
                if o.cuda.deterministic {
                    "True"
                } else {
                    "False"
                }
            ),
        }
    }
}

/// Registers the factory type.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFactory>()?;
    Ok(())
}
