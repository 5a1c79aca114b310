//! The ray transform (CPU or CUDA backend, chosen at construction) and FBP/FDK.

use std::sync::Arc;

use pyo3::prelude::*;

use crate::errors::{value_error, IntoPyResult};
use crate::geometry::PyGeometry;
use crate::operator::PyOperator;
use crate::scalar::{each, Any};
use crate::space::PySpace;
use rodl::tomo::{Backend, CpuOptions, CudaOptions, FbpOptions, FilterType, RayTransform};
use rodl::LinOp;

/// The backend named by `backend` (`"cpu"`, `"cuda"`, `"cuda:N"`) with its options.
pub(crate) fn parse_backend(
    backend: &str,
    threads: Option<usize>,
    device: Option<usize>,
    memory_budget: Option<u64>,
    deterministic: bool,
) -> PyResult<Backend> {
    let b = backend.trim().to_lowercase();
    if b == "cpu" {
        if device.is_some() {
            return Err(value_error(
                "device= is an option of the CUDA backend, not of 'cpu'",
            ));
        }
        if memory_budget.is_some() {
            return Err(value_error(
                "memory_budget= is an option of the CUDA backend, not of 'cpu'",
            ));
        }
        if threads == Some(0) {
            return Err(value_error("threads must be at least 1"));
        }
        // The CPU kernels are deterministic: `deterministic=True` asks for nothing more.
        return Ok(Backend::Cpu(CpuOptions { threads }));
    }
    let id = if b == "cuda" {
        device.unwrap_or(0)
    } else if let Some(n) = b.strip_prefix("cuda:") {
        let id: usize = n.parse().map_err(|_| {
            value_error(format!(
                "backend {backend:?}: expected 'cuda:N' with a GPU number N"
            ))
        })?;
        if device.is_some_and(|d| d != id) {
            return Err(value_error(format!(
                "backend {backend:?} and device={} disagree",
                device.unwrap_or_default()
            )));
        }
        id
    } else {
        return Err(value_error(format!(
            "unknown backend {backend:?}: use 'cpu', 'cuda' or 'cuda:N'"
        )));
    };
    if threads.is_some() {
        return Err(value_error(
            "threads= is an option of the CPU backend, not of CUDA",
        ));
    }
    let mut o = CudaOptions::new(id).deterministic(deterministic);
    o.memory_budget = memory_budget;
    Ok(Backend::Cuda(o))
}

/// The ray transform (ODL's `RayTransform`) from a volume space to the geometry's data space,
/// computed on the backend chosen here: `backend="cpu"` (rayon, `threads` worker threads, one
/// per core by default) or `"cuda"` / `"cuda:N"` (GPU `device`; the arrays stay NumPy arrays in
/// host memory and travel to the GPU and back, in pieces within `memory_budget` bytes of its
/// memory, by default its free memory less a margin; `deterministic=True`: bitwise reproducible
/// kernels, which the CPU's always are). Joseph's model; the adjoint is its exact transpose in
/// the weighted inner products. Asking for a GPU where none can be used raises
/// `CudaUnavailableError`.
#[pyclass(name = "RayTransform", module = "rodl", extends = PyOperator, frozen)]
pub struct PyRayTransform {
    geometry: PyGeometry,
    /// The transform itself (the operator of the base class is the same, shared).
    pub ray: Any<Arc<RayTransform<f32>>, Arc<RayTransform<f64>>>,
    /// The backend it was built with (for transforms derived from it, such as OSEM's subsets).
    pub backend: Backend,
}

#[pymethods]
impl PyRayTransform {
    #[new]
    #[pyo3(signature = (space, geometry, backend="cpu", threads=None, device=None, memory_budget=None, deterministic=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        space: &PySpace,
        geometry: &PyGeometry,
        backend: &str,
        threads: Option<i64>,
        device: Option<i64>,
        memory_budget: Option<i64>,
        deterministic: bool,
    ) -> PyResult<PyClassInitializer<Self>> {
        let threads = crate::count::opt_count("threads", threads)?;
        let device = crate::count::opt_count("device", device)?;
        let budget = crate::count::opt_count("memory_budget", memory_budget)?.map(|b| b as u64);
        let be = parse_backend(backend, threads, device, budget, deterministic)?;
        let g = geometry.inner.clone();
        let (inner, ray) = match &space.inner {
            Any::F32(s) => {
                let s = s.clone();
                let ray = Arc::new(py.detach(|| RayTransform::new(s, g, be.clone())).py()?);
                let op: LinOp<f32> = ray.clone();
                (Any::F32(op), Any::F32(ray))
            }
            Any::F64(s) => {
                let s = s.clone();
                let ray = Arc::new(py.detach(|| RayTransform::new(s, g, be.clone())).py()?);
                let op: LinOp<f64> = ray.clone();
                (Any::F64(op), Any::F64(ray))
            }
        };
        Ok(
            PyClassInitializer::from(PyOperator { inner }).add_subclass(Self {
                geometry: geometry.clone(),
                ray,
                backend: be,
            }),
        )
    }

    /// The geometry.
    #[getter]
    fn geometry(&self) -> PyGeometry {
        self.geometry.clone()
    }

    /// The backend: `'cpu'` or `'cuda:N'`.
    #[getter]
    fn backend(&self) -> String {
        crate::backend_options::backend_name(&self.backend)
    }

    /// Its backend's options, `{"threads", "memory_budget", "deterministic"}` (on the CPU
    /// `deterministic` is `True`: its kernels always are).
    #[getter]
    fn options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let mut o = rodl::tomo::BackendOptions::from(&self.backend);
        if matches!(self.backend, Backend::Cpu(_)) {
            o.cuda.deterministic = true;
        }
        let d = crate::backend_options::options_dict(py, &o)?;
        if matches!(self.backend, Backend::Cpu(_)) {
            d.set_item("memory_budget", py.None())?;
        }
        Ok(d)
    }
}

fn parse_filter(name: &str) -> PyResult<FilterType> {
    let key = |s: &str| s.to_lowercase().replace(['-', '_', ' '], "");
    FilterType::ALL
        .into_iter()
        .find(|f| key(f.name()) == key(name))
        .ok_or_else(|| {
            value_error(format!(
                "unknown filter {name:?}: use one of {}",
                FilterType::ALL
                    .map(|f| format!("'{}'", f.name()))
                    .join(", ")
            ))
        })
}

pub(crate) fn options(
    filter_type: &str,
    frequency_scaling: f64,
    padding: bool,
    parker: Option<f64>,
) -> PyResult<FbpOptions> {
    Ok(FbpOptions::new(parse_filter(filter_type)?)
        .with_frequency_scaling(frequency_scaling)
        .with_padding(padding)
        .with_parker(parker))
}

fn ray_of<'a>(ray_trafo: &'a Bound<'_, PyAny>) -> PyResult<PyRef<'a, PyRayTransform>> {
    ray_trafo
        .extract::<PyRef<'_, PyRayTransform>>()
        .map_err(|_| value_error("expected a rodl.RayTransform"))
}

/// Filtered back-projection for `ray_trafo` (ODL's `fbp_op`; FDK for circular cone beams): the
/// adjoint of the ray transform after the filter `filter_type` (`'Ram-Lak'`, `'Shepp-Logan'`,
/// `'Cosine'`, `'Hamming'`, `'Hann'`), cut off at `frequency_scaling` × Nyquist, rows
/// zero-padded unless `padding=False`.
///
/// As in ODL's `fbp_op`, no redundancy weights are applied by default (`parker=None`: every scan
/// is scaled as ODL's `fbp_op` scales it), so a short fan- or cone-beam scan needs them asked for:
/// `parker=q` turns on Parker's weights with transition parameter `q` in `(0, 1]` (1: Parker's
/// original weights; ODL's `parker_weighting` defaults to 0.25).
#[pyfunction]
#[pyo3(signature = (ray_trafo, filter_type="Ram-Lak", frequency_scaling=1.0, padding=true, parker=None))]
fn fbp_op(
    py: Python<'_>,
    ray_trafo: &Bound<'_, PyAny>,
    filter_type: &str,
    frequency_scaling: f64,
    padding: bool,
    parker: Option<f64>,
) -> PyResult<PyOperator> {
    let opts = options(filter_type, frequency_scaling, padding, parker)?;
    let rt = ray_of(ray_trafo)?;
    let inner =
        each!(&rt.ray, r => py.detach(|| rodl::tomo::fbp_op(r.as_ref(), &opts)).py()?.into());
    Ok(PyOperator { inner })
}

/// The FBP filter alone, on the ray transform's data space (ODL's `fbp_filter_op`): linear,
/// with its exact adjoint. `fbp_op(ray)` is `ray.adjoint * fbp_filter(ray)`; the arguments are
/// `fbp_op`'s (no Parker weights unless `parker=q` is given, as in ODL).
#[pyfunction]
#[pyo3(signature = (ray_trafo, filter_type="Ram-Lak", frequency_scaling=1.0, padding=true, parker=None))]
fn fbp_filter(
    py: Python<'_>,
    ray_trafo: &Bound<'_, PyAny>,
    filter_type: &str,
    frequency_scaling: f64,
    padding: bool,
    parker: Option<f64>,
) -> PyResult<PyOperator> {
    let opts = options(filter_type, frequency_scaling, padding, parker)?;
    let rt = ray_of(ray_trafo)?;
    let inner = each!(&rt.ray, r => py.detach(|| rodl::tomo::fbp_filter_op(r.as_ref(), &opts)).py()?.into());
    Ok(PyOperator { inner })
}

/// Registers the ray transform and FBP.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRayTransform>()?;
    m.add_function(wrap_pyfunction!(fbp_op, m)?)?;
    m.add_function(wrap_pyfunction!(fbp_filter, m)?)?;
    Ok(())
}
