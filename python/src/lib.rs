//! `rodl._rodl`, the compiled core of the Python package `rodl`: rodl's spaces, operators,
//! geometries, solvers and diagnostics on NumPy arrays. The pure-Python layer (`rodl/`) adds
//! the geometry constructors with keyword arguments, `from_odl` and the PyTorch module.

mod array;
mod backend_options;
mod collective;
mod count;
mod diagnostics;
mod distributed;
mod dlpack;
mod errors;
mod factory;
mod geometry;
mod io;
mod operator;
mod phantom;
mod preprocess_cuda;
mod scalar;
mod solvers;
mod space;
mod tomo;

use pyo3::prelude::*;

/// The compiled core of `rodl` (use the package `rodl`, which re-exports all of it).
#[pymodule]
fn _rodl(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("CUDA_BUILT", cfg!(feature = "cuda"))?;
    errors::register(m)?;
    space::register(m)?;
    geometry::register(m)?;
    operator::register(m)?;
    factory::register(m)?;
    tomo::register(m)?;
    phantom::register(m)?;
    solvers::register(m)?;
    diagnostics::register(m)?;
    io::register(m)?;
    preprocess_cuda::register(m)?;
    distributed::register(m)?;
    Ok(())
}
