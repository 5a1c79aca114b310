//! Per-backend options from Python's keyword arguments (`threads`, `memory_budget`,
//! `deterministic`) and back to a dict, for factories and ray transforms alike.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::value_error;
use rodl::tomo::BackendOptions;

/// The options from the arguments of a constructor.
pub(crate) fn backend_options(
    threads: Option<i64>,
    memory_budget: Option<i64>,
    deterministic: bool,
) -> PyResult<BackendOptions> {
    let threads = crate::count::opt_count("threads", threads)?;
    if threads == Some(0) {
        return Err(value_error("threads must be at least 1"));
    }
    let mut o = BackendOptions::default().with_cuda_deterministic(deterministic);
    o.cpu.threads = threads;
    if let Some(b) = crate::count::opt_count("memory_budget", memory_budget)? {
        o = o.with_cuda_memory_budget(b as u64);
    }
    Ok(o)
}

/// The options as a dict `{"threads", "memory_budget", "deterministic"}`.
pub(crate) fn options_dict<'py>(
    py: Python<'py>,
    o: &BackendOptions,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("threads", o.cpu.threads)?;
    d.set_item("memory_budget", o.cuda.memory_budget)?;
    d.set_item("deterministic", o.cuda.deterministic)?;
    Ok(d)
}

/// A backend's name as the Python API spells it: `'cpu'` or `'cuda:N'`.
pub(crate) fn backend_name(backend: &rodl::tomo::Backend) -> String {
    match backend {
        rodl::tomo::Backend::Cpu(_) => "cpu".to_string(),
        rodl::tomo::Backend::Cuda(o) => format!("cuda:{}", o.device),
    }
}
