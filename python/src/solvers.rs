//! The iterative solvers on NumPy arrays, with Python callbacks and a progress bar.
//!
//! Every solver updates its iterate `x` (a writable NumPy array of the domain's shape and
//! dtype) in place, as ODL's solvers do, and returns a dict `{"iterations", "residual",
//! "stop"}`. They compute without the GIL; after each iteration they take it back to call the
//! callback and to check for Ctrl-C (a `KeyboardInterrupt` stops the solver with `x` holding
//! the last iterate).

use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::array::{array_shape, element, to_numpy, Real};
use crate::collective::{across_of_op, agreed};
use crate::errors::{type_error, value_error, IntoPyResult};
use crate::operator::PyOperator;
use crate::scalar::{each, Any};
use crate::tomo::PyRayTransform;
use rodl::solvers::callback::{Callback, Control, IterationInfo, ProgressBar};
use rodl::solvers::iterative::{self as it, SolverInfo};
use rodl::solvers::tv::{PdhgTvOptions, TvProblem};
use rodl::{Across, Element, LinOp};

/// The solver's view of the Python side: the user's callback, Ctrl-C, and an optional progress
/// bar. A Python exception raised in the callback stops the solver and is re-raised.
///
/// For a distributed operator (`rodl.distributed`) the decision is collective: the solver stops
/// on every rank when the callback stops it (or raises) on any, and an exception there is a
/// `rodl.DistributedError` naming that rank on every rank.
struct PyCallback<'a> {
    callback: Option<&'a Py<PyAny>>,
    progress: Option<ProgressBar>,
    error: Option<PyErr>,
    across: Option<Across>,
}

impl<T: Real> Callback<T> for PyCallback<'_> {
    fn call(&mut self, x: &Element<T>, info: &IterationInfo) -> rodl::Result<Control> {
        if let Some(p) = &mut self.progress {
            Callback::<T>::call(p, x, info)?;
        }
        let outcome = Python::attach(|py| -> PyResult<Control> {
            py.check_signals()?;
            if let Some(cb) = self.callback {
                let arr = to_numpy(py, x.try_clone().py()?)?;
                match cb.call1(py, (arr,)) {
                    Ok(_) => {}
                    Err(e) if e.is_instance_of::<PyStopIteration>(py) => return Ok(Control::Stop),
                    Err(e) => return Err(e),
                }
            }
            Ok(Control::Continue)
        });
        let Some(across) = &self.across else {
            return match outcome {
                Ok(c) => Ok(c),
                Err(e) => {
                    self.error = Some(e);
                    Ok(Control::Stop)
                }
            };
        };
        // Collective: every rank learns whether any rank stops, or failed.
        let local = match &outcome {
            Ok(c) => Ok(vec![f64::from(u8::from(matches!(c, Control::Stop)))]),
            Err(e) => Err(rodl::Error::Distributed {
                rank: across.rank(),
                message: Python::attach(|py| {
                    format!("the callback raised {}", crate::collective::describe(py, e))
                }),
            }),
        };
        match across.gather_outcome(local) {
            Ok(all) => Ok(if all.iter().any(|v| v.first() == Some(&1.0)) {
                Control::Stop
            } else {
                Control::Continue
            }),
            Err(e) => {
                self.error = Some(crate::errors::to_py(e));
                Ok(Control::Stop)
            }
        }
    }
}

/// The writable NumPy array `x` of the solver's iterate, checked against `op`'s domain.
fn iterate<'py, T: Real>(
    x: &Bound<'py, PyAny>,
    op: &LinOp<T>,
) -> PyResult<Bound<'py, PyArrayDyn<T>>> {
    let arr = x.cast::<PyArrayDyn<T>>().map_err(|_| {
        type_error(format!(
            "x must be a NumPy array of dtype {} (the operator's), updated in place",
            if std::mem::size_of::<T>() == 4 {
                "float32"
            } else {
                "float64"
            }
        ))
    })?;
    let want = array_shape(op.domain())?;
    if arr.shape() != want.as_slice() {
        return Err(value_error(format!(
            "x: expected shape {want:?} (the operator's domain), got {:?}",
            arr.shape()
        )));
    }
    Ok(arr.clone())
}

fn info_dict<'py>(py: Python<'py>, info: &SolverInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("iterations", info.iterations)?;
    d.set_item("residual", info.residual)?;
    d.set_item("stop", format!("{:?}", info.stop).to_lowercase())?;
    Ok(d)
}

/// Runs `solve` on the iterate `x` with the callback set-up, then writes the iterate back.
#[allow(clippy::too_many_arguments)]
fn run<'py, T: Real>(
    py: Python<'py>,
    op: &LinOp<T>,
    x: &Bound<'py, PyAny>,
    niter: usize,
    callback: Option<Py<PyAny>>,
    progress: bool,
    em_data: Option<&Element<T>>,
    solve: impl FnOnce(&mut Element<T>, &mut dyn Callback<T>) -> rodl::Result<SolverInfo> + Send,
) -> PyResult<Bound<'py, PyDict>> {
    let across = across_of_op(op);
    let checked = (|| {
        let arr = iterate(x, op)?;
        let xe = element(op.domain(), arr.as_any(), "x")?;
        check_values(&xe, "x", "finite", |v| v.is_finite())?;
        if let Some(data) = em_data {
            check_em(&xe, data)?;
        }
        Ok((arr, xe))
    })();
    let (arr, mut xe) = agreed(py, across.as_ref(), checked)?;
    // One progress bar for a distributed solve: rank 0's.
    let progress = progress && across.as_ref().is_none_or(|a| a.rank() == 0);
    let mut cb = PyCallback {
        callback: callback.as_ref(),
        progress: progress.then(|| ProgressBar::with_log_fallback(niter, (niter / 10).max(1))),
        error: None,
        across,
    };
    let result = py.detach(|| solve(&mut xe, &mut cb));
    // Whatever happened, x gets the last iterate.
    let flat = if xe.is_product() {
        Vec::new()
    } else {
        xe.as_slice().py()?.to_vec()
    };
    {
        let mut w = arr
            .try_readwrite()
            .map_err(|e| value_error(format!("x: {e}")))?;
        let mut dst = w.as_array_mut();
        for (d, s) in dst.iter_mut().zip(flat) {
            *d = s;
        }
    }
    if let Some(e) = cb.error {
        return Err(e);
    }
    info_dict(py, &result.py()?)
}

/// The element of `op`'s range holding `data`, which must be finite (a NaN or an infinity
/// would make every iterate NaN). Agreed across the ranks for a distributed operator.
fn data_of<T: Real>(op: &LinOp<T>, data: &Bound<'_, PyAny>, what: &str) -> PyResult<Element<T>> {
    let checked = element(op.range(), data, what).and_then(|e| {
        check_values(&e, what, "finite", |v| v.is_finite())?;
        Ok(e)
    });
    agreed(data.py(), across_of_op(op).as_ref(), checked)
}

/// A `ValueError` naming `what` unless every entry of `e` satisfies `ok` (described as `need`).
fn check_values<T: Real>(
    e: &Element<T>,
    what: &str,
    need: &str,
    ok: impl Fn(f64) -> bool,
) -> PyResult<()> {
    let parts = if e.is_product() {
        e.parts().py()?.iter().collect::<Vec<_>>()
    } else {
        vec![e]
    };
    for p in parts {
        if p.is_product() {
            continue;
        }
        let host = p.to_host().py()?;
        let vals = host.as_slice().py()?;
        let bad = vals.iter().filter(|v| !ok(v.f64())).count();
        if bad > 0 {
            let first = vals
                .iter()
                .map(|v| v.f64())
                .find(|v| !ok(*v))
                .unwrap_or(f64::NAN);
            return Err(value_error(format!(
                "{what} must be {need}: {bad} of its {} entries are not (e.g. {first})",
                vals.len()
            )));
        }
    }
    Ok(())
}

/// MLEM and OSEM need non-negative (Poisson) data and a positive start: a zero entry of the
/// start stays zero, a negative datum has no likelihood.
fn check_em<T: Real>(x: &Element<T>, data: &Element<T>) -> PyResult<()> {
    check_values(data, "data", "non-negative (counts) for MLEM/OSEM", |v| {
        v >= 0.0
    })?;
    check_values(x, "x", "positive everywhere as the MLEM/OSEM start", |v| {
        v > 0.0 && v.is_finite()
    })
}

/// Keyword arguments shared by the solvers.
struct Common {
    niter: usize,
    callback: Option<Py<PyAny>>,
    progress: bool,
}

fn cgls_t<'py, T: Real>(
    py: Python<'py>,
    a: &LinOp<T>,
    x: &Bound<'py, PyAny>,
    rhs: &Bound<'py, PyAny>,
    c: Common,
) -> PyResult<Bound<'py, PyDict>> {
    let b = data_of(a, rhs, "rhs")?;
    let n = c.niter;
    run(py, a, x, n, c.callback, c.progress, None, |xe, cb| {
        it::cgls(a.as_ref(), xe, &b, n, cb)
    })
}

fn landweber_t<'py, T: Real>(
    py: Python<'py>,
    a: &LinOp<T>,
    x: &Bound<'py, PyAny>,
    rhs: &Bound<'py, PyAny>,
    omega: Option<f64>,
    c: Common,
) -> PyResult<Bound<'py, PyDict>> {
    let b = data_of(a, rhs, "rhs")?;
    let n = c.niter;
    let opts = it::LandweberOptions { omega };
    run(py, a, x, n, c.callback, c.progress, None, |xe, cb| {
        it::landweber(a.as_ref(), xe, &b, n, &opts, cb)
    })
}

fn sirt_t<'py, T: Real>(
    py: Python<'py>,
    a: &LinOp<T>,
    x: &Bound<'py, PyAny>,
    rhs: &Bound<'py, PyAny>,
    relaxation: f64,
    nonnegative: bool,
    c: Common,
) -> PyResult<Bound<'py, PyDict>> {
    let b = data_of(a, rhs, "rhs")?;
    let n = c.niter;
    let opts = it::SirtOptions {
        relaxation,
        nonnegative,
    };
    run(py, a, x, n, c.callback, c.progress, None, |xe, cb| {
        it::sirt(a.as_ref(), xe, &b, n, &opts, cb)
    })
}

fn mlem_t<'py, T: Real>(
    py: Python<'py>,
    a: &LinOp<T>,
    x: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
    c: Common,
) -> PyResult<Bound<'py, PyDict>> {
    let b = data_of(a, data, "data")?;
    let n = c.niter;
    run(py, a, x, n, c.callback, c.progress, Some(&b), |xe, cb| {
        it::mlem(a.as_ref(), xe, &b, n, cb)
    })
}

#[allow(clippy::too_many_arguments)]
fn osem_t<'py, T: Real>(
    py: Python<'py>,
    a: &LinOp<T>,
    ray: &rodl::tomo::RayTransform<T>,
    backend: &rodl::tomo::Backend,
    x: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
    subsets: usize,
    c: Common,
) -> PyResult<Bound<'py, PyDict>> {
    let b = data_of(a, data, "data")?;
    let subsets = py
        .detach(|| it::RaySubsets::new(ray, subsets, backend.clone()))
        .py()?;
    let blocks = subsets.split_data(&b).py()?;
    let n = c.niter;
    run(py, a, x, n, c.callback, c.progress, Some(&b), |xe, cb| {
        it::osem(subsets.operators(), xe, &blocks, n, cb)
    })
}

fn tv_t<'py, T: Real>(
    py: Python<'py>,
    a: &LinOp<T>,
    x: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
    lam: f64,
    pdhg: Option<PdhgTvOptions>,
    c: Common,
) -> PyResult<Bound<'py, PyDict>> {
    let b = data_of(a, data, "data")?;
    let problem = py.detach(|| TvProblem::new(a.clone(), &b, lam)).py()?;
    let n = c.niter;
    run(
        py,
        a,
        x,
        n,
        c.callback,
        c.progress,
        None,
        |xe, cb| match &pdhg {
            Some(o) => rodl::solvers::tv::pdhg_tv(&problem, xe, n, o, cb),
            None => rodl::solvers::tv::fista_tv(
                &problem,
                xe,
                n,
                &rodl::solvers::tv::FistaTvOptions::default(),
                cb,
            ),
        },
    )
}

fn common(niter: i64, callback: Option<Py<PyAny>>, progress: bool) -> PyResult<Common> {
    let niter = crate::count::count("niter", niter)?;
    if niter > 100_000_000 {
        return Err(value_error(format!(
            "niter {niter} is beyond any sensible count (at most 1e8)"
        )));
    }
    if let Some(cb) = &callback {
        let ok = Python::attach(|py| cb.bind(py).is_callable());
        if !ok {
            return Err(type_error(
                "callback must be callable (callback(x) -> None)",
            ));
        }
    }
    Ok(Common {
        niter,
        callback,
        progress,
    })
}

/// CGLS (ODL's `conjugate_gradient_normal`): conjugate gradients on `A*A x = A* rhs`, from
/// `x`, updated in place. `callback(x)` is called after every iteration (raise
/// `StopIteration` in it to stop early); `progress=True` shows a progress bar on stderr (or log
/// lines when stderr is not a terminal). Returns `{"iterations", "residual", "stop"}`, the
/// residual being `‖rhs − A x‖`.
#[pyfunction]
#[pyo3(signature = (op, x, rhs, niter=10, callback=None, progress=false))]
fn cgls<'py>(
    py: Python<'py>,
    op: &PyOperator,
    x: &Bound<'py, PyAny>,
    rhs: &Bound<'py, PyAny>,
    niter: i64,
    callback: Option<Py<PyAny>>,
    progress: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let c = common(niter, callback, progress)?;
    each!(&op.inner, a => cgls_t(py, a, x, rhs, c))
}

/// Landweber iteration `x ← x + ω A*(rhs − A x)` with `ω` (default `1/‖A‖²`), in place; as
/// `cgls` for the other arguments.
#[pyfunction]
#[pyo3(signature = (op, x, rhs, niter=10, omega=None, callback=None, progress=false))]
#[allow(clippy::too_many_arguments)]
fn landweber<'py>(
    py: Python<'py>,
    op: &PyOperator,
    x: &Bound<'py, PyAny>,
    rhs: &Bound<'py, PyAny>,
    niter: i64,
    omega: Option<f64>,
    callback: Option<Py<PyAny>>,
    progress: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let c = common(niter, callback, progress)?;
    each!(&op.inner, a => landweber_t(py, a, x, rhs, omega, c))
}

/// SIRT (ASTRA's): `x ← x + λ C A* R (rhs − A x)` with the inverse row and column sums `R`,
/// `C`, relaxation `λ ∈ (0, 2)`, optionally clipped to `x ≥ 0`; in place, as `cgls` for the
/// other arguments.
#[pyfunction]
#[pyo3(signature = (op, x, rhs, niter=10, relaxation=1.0, nonnegative=false, callback=None, progress=false))]
#[allow(clippy::too_many_arguments)]
fn sirt<'py>(
    py: Python<'py>,
    op: &PyOperator,
    x: &Bound<'py, PyAny>,
    rhs: &Bound<'py, PyAny>,
    niter: i64,
    relaxation: f64,
    nonnegative: bool,
    callback: Option<Py<PyAny>>,
    progress: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let c = common(niter, callback, progress)?;
    each!(&op.inner, a => sirt_t(py, a, x, rhs, relaxation, nonnegative, c))
}

/// MLEM (ODL's `mlem`) for Poisson data: `x ← x / A*1 · A*(data / A x)`, from a positive `x`,
/// in place; as `cgls` for the other arguments.
#[pyfunction]
#[pyo3(signature = (op, x, data, niter=10, callback=None, progress=false))]
fn mlem<'py>(
    py: Python<'py>,
    op: &PyOperator,
    x: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
    niter: i64,
    callback: Option<Py<PyAny>>,
    progress: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let c = common(niter, callback, progress)?;
    each!(&op.inner, a => mlem_t(py, a, x, data, c))
}

/// OSEM (ODL's `osmlem`): MLEM over `subsets` subsets of the views of the ray transform
/// `ray_trafo` (each pass visits every subset once), from a positive `x`, in place; as `cgls`
/// for the other arguments.
#[pyfunction]
#[pyo3(signature = (ray_trafo, x, data, niter=10, subsets=8, callback=None, progress=false))]
#[allow(clippy::too_many_arguments)]
fn osem<'py>(
    py: Python<'py>,
    ray_trafo: &Bound<'py, PyAny>,
    x: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
    niter: i64,
    subsets: i64,
    callback: Option<Py<PyAny>>,
    progress: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let rt = ray_trafo
        .extract::<PyRef<'_, PyRayTransform>>()
        .map_err(|_| type_error("osem needs a rodl.RayTransform (its views are split)"))?;
    let c = common(niter, callback, progress)?;
    let subsets = crate::count::count("subsets", subsets)?;
    let op: PyOperator = (**rt.as_super()).clone();
    match (&op.inner, &rt.ray) {
        (Any::F32(a), Any::F32(r)) => osem_t(py, a, r, &rt.backend, x, data, subsets, c),
        (Any::F64(a), Any::F64(r)) => osem_t(py, a, r, &rt.backend, x, data, subsets, c),
        _ => Err(value_error("osem: inconsistent ray transform")),
    }
}

/// Total-variation regularised reconstruction by PDHG (Chambolle–Pock):
/// `min_{x ≥ 0} ½‖A x − data‖² + lam ‖|∇x|₂‖₁` with the data term in the data space's
/// weighted norm and TV as `∫|∇x|` over the volume; blocks balanced and steps set as
/// `rodl::solvers::tv::pdhg_tv` sets them: `step_ratio` = τ/σ, by default estimated from the
/// data (rodl's `StepRatio::Auto`).
/// From `x`, in place; as `cgls` for the other arguments.
#[pyfunction]
#[pyo3(signature = (op, x, data, lam, niter=100, step_ratio=None, callback=None, progress=false))]
#[allow(clippy::too_many_arguments)]
fn pdhg_tv<'py>(
    py: Python<'py>,
    op: &PyOperator,
    x: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
    lam: f64,
    niter: i64,
    step_ratio: Option<f64>,
    callback: Option<Py<PyAny>>,
    progress: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let c = common(niter, callback, progress)?;
    let mut opts = PdhgTvOptions::default();
    if let Some(r) = step_ratio {
        opts.step_ratio = rodl::solvers::iterative::StepRatio::Fixed(r);
    }
    each!(&op.inner, a => tv_t(py, a, x, data, lam, Some(opts), c))
}

/// The same TV problem with TV Huber-smoothed, by FISTA; from `x`, in place; as `cgls` for the
/// other arguments.
#[pyfunction]
#[pyo3(signature = (op, x, data, lam, niter=100, callback=None, progress=false))]
#[allow(clippy::too_many_arguments)]
fn fista_tv<'py>(
    py: Python<'py>,
    op: &PyOperator,
    x: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
    lam: f64,
    niter: i64,
    callback: Option<Py<PyAny>>,
    progress: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let c = common(niter, callback, progress)?;
    each!(&op.inner, a => tv_t(py, a, x, data, lam, None, c))
}

/// Registers the solvers.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cgls, m)?)?;
    m.add_function(wrap_pyfunction!(landweber, m)?)?;
    m.add_function(wrap_pyfunction!(sirt, m)?)?;
    m.add_function(wrap_pyfunction!(mlem, m)?)?;
    m.add_function(wrap_pyfunction!(osem, m)?)?;
    m.add_function(wrap_pyfunction!(pdhg_tv, m)?)?;
    m.add_function(wrap_pyfunction!(fista_tv, m)?)?;
    Ok(())
}
