//! rodl's errors as Python exceptions.

use pyo3::exceptions::{
    PyMemoryError, PyNotImplementedError, PyOSError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::{create_exception, PyErr};

create_exception!(
    rodl,
    CudaUnavailableError,
    PyRuntimeError,
    "A GPU was asked for but none can be used (no driver, no device, or a build without CUDA)."
);

create_exception!(
    rodl,
    GraphCaptureError,
    PyRuntimeError,
    "A CUDA graph capture in global mode on another thread forbade a call rodl needs; capture \
     with capture_error_mode=\"thread_local\" (or \"relaxed\") to run rodl beside it."
);

create_exception!(
    rodl,
    DistributedError,
    PyRuntimeError,
    "A collective call of a distributed computation (rodl.distributed) failed on one of the \
     ranks: every rank raises this error, whose message names the rank that failed first and \
     what went wrong there."
);

/// Registers the package's own exception types.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add(
        "CudaUnavailableError",
        m.py().get_type::<CudaUnavailableError>(),
    )?;
    m.add("GraphCaptureError", m.py().get_type::<GraphCaptureError>())?;
    m.add("DistributedError", m.py().get_type::<DistributedError>())?;
    Ok(())
}

/// The Python exception for a rodl error, with rodl's message: `ValueError` for bad values,
/// shapes and spaces, `TypeError` for a non-linear operator where a linear one is needed,
/// `NotImplementedError` for what rodl does not support, `OSError` for files, `MemoryError`
/// for sizes that cannot be allocated, `CudaUnavailableError` (a `RuntimeError`) when no GPU
/// can be used, `GraphCaptureError` (a `RuntimeError`) when another thread's global-mode CUDA
/// graph capture forbade a call, `DistributedError` (a `RuntimeError`) when a collective call of
/// a distributed computation failed on one of the ranks, and `RuntimeError` for the rest.
pub fn to_py(e: rodl::Error) -> PyErr {
    use rodl::Error as E;
    let msg = e.to_string();
    match e {
        E::Shape { .. }
        | E::SpaceMismatch { .. }
        | E::DeviceMismatch { .. }
        | E::InvalidArgument(_)
        | E::Geometry(_)
        | E::Config(_) => PyValueError::new_err(msg),
        E::NotLinear(_) => PyTypeError::new_err(msg),
        E::Unsupported(_) => PyNotImplementedError::new_err(msg),
        E::CudaUnavailable(_) => CudaUnavailableError::new_err(msg),
        E::GraphCapture(_) => GraphCaptureError::new_err(msg),
        E::Distributed { .. } => DistributedError::new_err(msg),
        E::Io { .. } => PyOSError::new_err(msg),
        E::OutOfMemory { .. } => PyMemoryError::new_err(msg),
        _ => PyRuntimeError::new_err(msg),
    }
}

/// `Result<T, rodl::Error>` → `PyResult<T>`.
pub trait IntoPyResult<T> {
    /// Converts the error with [`to_py`].
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for rodl::Result<T> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

/// A `ValueError` with `msg`.
pub fn value_error(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

/// A `TypeError` with `msg`.
pub fn type_error(msg: impl Into<String>) -> PyErr {
    PyTypeError::new_err(msg.into())
}
