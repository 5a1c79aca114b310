//! Adjoint checks and image-quality figures.

use numpy::PyUntypedArrayMethods;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::array::element;
use crate::errors::IntoPyResult;
use crate::operator::PyOperator;
use crate::scalar::each;

/// Checks `⟨A x, y⟩ = ⟨x, A* y⟩` on `trials` pairs of standard-normal elements (seeded with
/// `seed`) for any linear operator. Returns `{"max_rel_error", "opnorm", "trials"}`, the error
/// relative to `‖A‖ ‖x‖ ‖y‖` (near the rounding unit of the dtype for an exact adjoint). `‖A‖`
/// is `opnorm` when given, else estimated (up to 100 power iterations).
#[pyfunction]
#[pyo3(signature = (op, trials=5, seed=0, opnorm=None))]
fn check_adjoint<'py>(
    py: Python<'py>,
    op: &PyOperator,
    trials: i64,
    seed: u64,
    opnorm: Option<f64>,
) -> PyResult<Bound<'py, PyDict>> {
    let trials = crate::count::count("trials", trials)?;
    let r = each!(&op.inner, a => py.detach(|| rodl::diagnostics::check_adjoint_with(a.as_ref(), trials, seed, opnorm)).py()?);
    let d = PyDict::new(py);
    d.set_item("max_rel_error", r.max_rel_error)?;
    d.set_item("opnorm", r.opnorm)?;
    d.set_item("trials", r.trials)?;
    Ok(d)
}

/// The space `R^shape` in float64 of two arrays of one shape, and the arrays in it.
fn pair_f64(
    x: &Bound<'_, PyAny>,
    reference: &Bound<'_, PyAny>,
) -> PyResult<(rodl::Space<f64>, rodl::Element<f64>, rodl::Element<f64>)> {
    let r = crate::array::read::<f64>(reference, "reference")?;
    let space = rodl::rn::<f64>(r.shape()).py()?;
    drop(r);
    let a = element(&space, x, "x")?;
    let b = element(&space, reference, "reference")?;
    Ok((space, a, b))
}

/// Peak signal-to-noise ratio of `x` against `reference` in dB, with the peak `data_range`
/// (default: the reference's max − min), as scikit-image computes it.
#[pyfunction]
#[pyo3(signature = (x, reference, data_range=None))]
fn psnr(
    x: &Bound<'_, PyAny>,
    reference: &Bound<'_, PyAny>,
    data_range: Option<f64>,
) -> PyResult<f64> {
    let (s, a, b) = pair_f64(x, reference)?;
    rodl::diagnostics::quality::psnr(&s, &a, &b, data_range).py()
}

/// Structural similarity (Gaussian window σ = 1.5, K1 = 0.01, K2 = 0.03) of `x` against
/// `reference`, with `data_range` as in `psnr`.
#[pyfunction]
#[pyo3(signature = (x, reference, data_range=None))]
fn ssim(
    x: &Bound<'_, PyAny>,
    reference: &Bound<'_, PyAny>,
    data_range: Option<f64>,
) -> PyResult<f64> {
    let (s, a, b) = pair_f64(x, reference)?;
    rodl::diagnostics::quality::ssim(&s, &a, &b, data_range).py()
}

/// `‖x − reference‖ / ‖reference‖` (Euclidean).
#[pyfunction]
fn relative_error(x: &Bound<'_, PyAny>, reference: &Bound<'_, PyAny>) -> PyResult<f64> {
    let (s, a, b) = pair_f64(x, reference)?;
    rodl::diagnostics::quality::relative_error(&s, &a, &b).py()
}

/// Registers the diagnostics.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check_adjoint, m)?)?;
    m.add_function(wrap_pyfunction!(psnr, m)?)?;
    m.add_function(wrap_pyfunction!(ssim, m)?)?;
    m.add_function(wrap_pyfunction!(relative_error, m)?)?;
    Ok(())
}
