//! Linear operators on NumPy arrays: application (with leading batch axes), the exact adjoint,
//! norms and ODL's operator arithmetic.

use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;

use crate::array::{array_shape, element, read, to_numpy, to_vec, Real};
use crate::collective::{agreed, same_count};
use crate::dlpack::{Place, TensorRef};
use crate::errors::{type_error, value_error, IntoPyResult};
use crate::scalar::{each, pair, Any, Dtype};
use crate::space::PySpace;
use rodl::{LinOp, LinearOperator, LinearOperatorExt, Scalar};

/// A linear operator of either scalar type.
pub type AnyOp = Any<LinOp<f32>, LinOp<f64>>;

/// A linear operator between two spaces, with its exact adjoint (ODL's `Operator` with
/// `is_linear`).
///
/// `op(x)` applies it to an array of the domain's shape, or to a stack of such arrays with any
/// leading (batch) axes: `(*batch, *domain.shape) -> (*batch, *range.shape)`. `op.adjoint` is
/// the adjoint in the spaces' weighted inner products, `⟨op(x), y⟩ = ⟨x, op.adjoint(y)⟩`.
/// Operators combine as in ODL: `a * b` and `a @ b` compose, `c * a` and `a * c` scale, `a + b`
/// and `a - b` add, `-a` negates.
#[pyclass(name = "Operator", module = "rodl", subclass, frozen)]
#[derive(Clone)]
pub struct PyOperator {
    pub inner: AnyOp,
}

impl PyOperator {
    /// Wraps a rodl operator.
    pub fn new<T: Scalar>(op: LinOp<T>) -> Self
    where
        AnyOp: From<LinOp<T>>,
    {
        Self { inner: op.into() }
    }

    /// The scalar type.
    pub fn dtype_enum(&self) -> Dtype {
        match self.inner {
            Any::F32(_) => Dtype::F32,
            Any::F64(_) => Dtype::F64,
        }
    }
}

impl From<LinOp<f32>> for AnyOp {
    fn from(op: LinOp<f32>) -> Self {
        Any::F32(op)
    }
}
impl From<LinOp<f64>> for AnyOp {
    fn from(op: LinOp<f64>) -> Self {
        Any::F64(op)
    }
}

/// Applies `op` to `x`: one element, or a batch along leading axes (computed without the GIL).
pub fn apply<T: Real>(
    py: Python<'_>,
    op: &LinOp<T>,
    x: &Bound<'_, PyAny>,
    out: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let (domain, range) = (op.domain().clone(), op.range().clone());
    // A distributed operator's application is collective: the checks below are agreed first.
    let across = crate::collective::across_of_op(op);
    let across = across.as_ref();
    if domain.is_product() || range.is_product() {
        let xe = agreed(
            py,
            across,
            if out.is_some() {
                Err(value_error(
                    "out= is not supported for operators on product spaces",
                ))
            } else {
                element(&domain, x, "operator input")
            },
        )?;
        let y = py.detach(|| op.apply(&xe)).py()?;
        return to_numpy(py, y);
    }
    let checked = (|| -> PyResult<(Vec<T>, Vec<usize>, usize)> {
        let a = read::<T>(x, "operator input")?;
        let dshape = domain.shape().py()?.to_vec();
        let rshape = range.shape().py()?.to_vec();
        let shape = a.shape().to_vec();
        let d = dshape.len();
        if shape.len() < d || shape[shape.len() - d..] != dshape[..] {
            return Err(value_error(format!(
                "operator input: expected an array of shape {dshape:?} (or (*batch, {})), got \
                 {shape:?}",
                dshape
                    .iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let lead = &shape[..shape.len() - d];
        let batch: usize = lead.iter().product();
        let mut out_shape = lead.to_vec();
        out_shape.extend_from_slice(&rshape);
        if let Some(o) = out {
            out_array::<T>(o, &out_shape)?;
        }
        Ok((to_vec(&a), out_shape, batch))
    })();
    let (data, out_shape, batch) = agreed(py, across, checked)?;
    same_count(py, across, batch, "batches")?;
    let (n_in, n_out) = (domain.size(), range.size());
    let result: Vec<T> = py
        .detach(|| -> rodl::Result<Vec<T>> {
            if batch == 1 {
                let xe = domain.element_from_vec(data)?;
                let y = op.apply(&xe)?.into_host()?;
                return y.into_array().map(|a| a.into_raw_vec_and_offset().0);
            }
            let mut res = Vec::new();
            res.try_reserve_exact(batch * n_out).map_err(|_| {
                rodl::Error::invalid(format!(
                    "cannot allocate the output batch of {} values",
                    batch * n_out
                ))
            })?;
            if domain.device() != rodl::Device::Cpu {
                // A device-resident operator: each input goes up, each result comes back.
                for b in 0..batch {
                    let xe = domain.element_from_vec(data[b * n_in..(b + 1) * n_in].to_vec())?;
                    res.extend_from_slice(op.apply(&xe)?.to_host()?.as_slice()?);
                }
                return Ok(res);
            }
            let mut xe = domain.zero()?;
            let mut ye = range.zero()?;
            for b in 0..batch {
                xe.as_slice_mut()?
                    .copy_from_slice(&data[b * n_in..(b + 1) * n_in]);
                op.apply_into(&xe, &mut ye)?;
                res.extend_from_slice(ye.as_slice()?);
            }
            Ok(res)
        })
        .py()?;
    match out {
        None => crate::array::from_vec(py, result, &out_shape),
        Some(o) => {
            let arr = out_array::<T>(o, &out_shape)?;
            let mut w = arr
                .try_readwrite()
                .map_err(|e| value_error(format!("out: {e}")))?;
            let c_order = w.is_c_contiguous();
            match w.as_slice_mut() {
                Ok(s) if c_order => s.copy_from_slice(&result),
                _ => {
                    for (dst, src) in w.as_array_mut().iter_mut().zip(&result) {
                        *dst = *src;
                    }
                }
            }
            Ok(o.clone().unbind())
        }
    }
}

/// `out` as a NumPy array of `T` and of shape `shape`, or the error saying why not.
fn out_array<'a, 'py, T: Real>(
    out: &'a Bound<'py, PyAny>,
    shape: &[usize],
) -> PyResult<&'a Bound<'py, PyArrayDyn<T>>> {
    let arr = out.cast::<PyArrayDyn<T>>().map_err(|_| {
        type_error(format!(
            "out must be a NumPy array of dtype {}",
            std::any::type_name::<T>()
        ))
    })?;
    if arr.shape() != shape {
        return Err(value_error(format!(
            "out: expected shape {shape:?}, got {:?}",
            arr.shape()
        )));
    }
    Ok(arr)
}

/// Applies `op` to a C-contiguous CUDA tensor `x` (`(*batch, *domain)`) into `out`
/// (`(*batch, *range)`), both on the operator's device, in place, on the caller's
/// `stream` (see `rodl::interop::apply_to_cuda_memory`).
fn apply_dlpack<T: Real>(
    py: Python<'_>,
    op: &LinOp<T>,
    x: &TensorRef,
    out: &TensorRef,
    stream: u64,
) -> PyResult<()> {
    let bits = (8 * std::mem::size_of::<T>()) as u8;
    if x.bits != bits || out.bits != bits {
        return Err(type_error(format!(
            "the operator computes in float{bits}, got float{} input and float{} output",
            x.bits, out.bits
        )));
    }
    let id = match op.domain().device() {
        rodl::Device::Cuda(id) => id,
        d => {
            return Err(value_error(format!(
                "the operator was built for {d}, not for a GPU: build it for the tensor's device"
            )))
        }
    };
    for (t, what) in [(x, "input"), (out, "output")] {
        if t.place != Place::Cuda(id) {
            return Err(value_error(format!(
                "the {what} tensor is on {:?}, the operator on cuda:{id}",
                t.place
            )));
        }
    }
    let dshape = array_shape(op.domain())?;
    let rshape = array_shape(op.range())?;
    let d = dshape.len();
    if x.shape.len() < d || x.shape[x.shape.len() - d..] != dshape[..] {
        return Err(value_error(format!(
            "input: expected shape (*batch, {dshape:?}), got {:?}",
            x.shape
        )));
    }
    let lead = &x.shape[..x.shape.len() - d];
    let mut want = lead.to_vec();
    want.extend_from_slice(&rshape);
    if out.shape != want {
        return Err(value_error(format!(
            "output: expected shape {want:?}, got {:?}",
            out.shape
        )));
    }
    let batch: usize = lead.iter().product();
    let (xp, op_ptr) = (x.ptr, out.ptr);
    py.detach(|| {
        // SAFETY: both tensors are live CUDA tensors of the operator's device with the checked
        // shapes and dtype (the caller keeps them referenced), C-contiguous, and distinct
        // (the output is a fresh tensor); `stream` is the caller's current stream there.
        unsafe {
            rodl::interop::apply_to_cuda_memory(
                op.as_ref() as &dyn rodl::Operator<T>,
                xp,
                op_ptr,
                batch,
                stream,
            )
        }
    })
    .py()
}

fn scalar_of(obj: &Bound<'_, PyAny>) -> Option<f64> {
    if obj.is_instance_of::<PyOperator>() {
        return None;
    }
    obj.extract::<f64>().ok()
}

#[pymethods]
impl PyOperator {
    /// The domain.
    #[getter]
    fn domain(&self) -> PySpace {
        PySpace {
            inner: match &self.inner {
                Any::F32(op) => Any::F32(op.domain().clone()),
                Any::F64(op) => Any::F64(op.domain().clone()),
            },
        }
    }

    /// The range.
    #[getter]
    fn range(&self) -> PySpace {
        PySpace {
            inner: match &self.inner {
                Any::F32(op) => Any::F32(op.range().clone()),
                Any::F64(op) => Any::F64(op.range().clone()),
            },
        }
    }

    /// The NumPy dtype of domain and range.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("numpy")?
            .getattr("dtype")?
            .call1((self.dtype_enum().name(),))
    }

    /// Always `True`: these operators are linear.
    #[getter]
    fn is_linear(&self) -> bool {
        true
    }

    /// Shape of the domain's arrays.
    #[getter]
    fn domain_shape(&self) -> PyResult<Vec<usize>> {
        each!(&self.inner, op => array_shape(op.domain()))
    }

    /// Shape of the range's arrays.
    #[getter]
    fn range_shape(&self) -> PyResult<Vec<usize>> {
        each!(&self.inner, op => array_shape(op.range()))
    }

    /// Applies the operator to `x` (shape `domain.shape`, or `(*batch, *domain.shape)`);
    /// with `out`, writes the result into that array (of the result's shape and dtype) and
    /// returns it.
    #[pyo3(signature = (x, out=None))]
    fn __call__(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        out: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        each!(&self.inner, op => apply(py, op, x, out))
    }

    /// Where the operator's domain and range live: `'cpu'` or `'cuda:N'` (operators built by a
    /// factory for a GPU).
    #[getter]
    fn device(&self) -> String {
        each!(&self.inner, op => op.domain().device().to_string())
    }

    /// For `rodl.torch`: applies the operator to the CUDA tensor behind the DLPack capsule `x`
    /// (`(*batch, *domain.shape)`, C-contiguous, on the operator's device), writing into the
    /// tensor behind `out` (`(*batch, *range.shape)`), on the CUDA `stream` (its
    /// handle) without synchronising. Both tensors must stay referenced by the caller.
    fn _apply_dlpack(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        out: &Bound<'_, PyAny>,
        stream: u64,
    ) -> PyResult<()> {
        let tx = crate::dlpack::read(x, "input")?;
        let to = crate::dlpack::read(out, "output")?;
        each!(&self.inner, op => apply_dlpack(py, op, &tx, &to, stream))
    }

    /// The adjoint, exact in the weighted inner products of domain and range.
    #[getter]
    fn adjoint(&self, py: Python<'_>) -> PyResult<PyOperator> {
        Ok(PyOperator {
            inner: match &self.inner {
                Any::F32(op) => Any::F32(py.detach(|| op.adjoint()).py()?),
                Any::F64(op) => Any::F64(py.detach(|| op.adjoint()).py()?),
            },
        })
    }

    /// The operator norm: known exactly for some operators, else estimated by power
    /// iteration (`iterations` at most, stopping at relative change `rtol`; each costs one
    /// forward and one adjoint application). Cached once known.
    #[pyo3(signature = (estimate=true, iterations=None, rtol=None))]
    fn norm(
        &self,
        py: Python<'_>,
        estimate: bool,
        iterations: Option<i64>,
        rtol: Option<f64>,
    ) -> PyResult<f64> {
        let iterations = crate::count::opt_count("iterations", iterations)?;
        if !estimate {
            return Err(value_error(
                "the exact norm is not known in general: call norm(estimate=True)",
            ));
        }
        each!(&self.inner, op => py.detach(|| match (iterations, rtol) {
            (None, None) => op.norm_estimate(),
            (i, r) => op.norm_estimate_with(i.unwrap_or(100), r.unwrap_or(1e-7)),
        }).py())
    }

    fn __matmul__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyOperator> {
        let o = other
            .extract::<PyRef<'_, PyOperator>>()
            .map_err(|_| type_error("@ composes two operators"))?;
        let inner =
            pair!(&self.inner, &o.inner, "composition", (a, b) => Ok(a.compose(b).py()?.into()))?;
        Ok(PyOperator { inner })
    }

    fn __mul__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyOperator> {
        if let Some(c) = scalar_of(other) {
            let inner = each!(&self.inner, a => a.scaled(c as S).py()?.into());
            return Ok(PyOperator { inner });
        }
        self.__matmul__(other)
    }

    fn __rmul__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyOperator> {
        match scalar_of(other) {
            Some(c) => {
                let inner = each!(&self.inner, a => a.scaled(c as S).py()?.into());
                Ok(PyOperator { inner })
            }
            None => Err(type_error("only numbers multiply operators from the left")),
        }
    }

    fn __truediv__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyOperator> {
        match scalar_of(other) {
            Some(c) if c != 0.0 => {
                let inner = each!(&self.inner, a => a.scaled((1.0 / c) as S).py()?.into());
                Ok(PyOperator { inner })
            }
            _ => Err(value_error("operators divide by non-zero numbers only")),
        }
    }

    fn __add__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyOperator> {
        let o = other
            .extract::<PyRef<'_, PyOperator>>()
            .map_err(|_| type_error("+ adds two operators"))?;
        let inner = pair!(&self.inner, &o.inner, "sum", (a, b) => Ok(a.plus(b).py()?.into()))?;
        Ok(PyOperator { inner })
    }

    fn __sub__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyOperator> {
        let o = other
            .extract::<PyRef<'_, PyOperator>>()
            .map_err(|_| type_error("- subtracts two operators"))?;
        let inner =
            pair!(&self.inner, &o.inner, "difference", (a, b) => Ok(a.minus(b).py()?.into()))?;
        Ok(PyOperator { inner })
    }

    fn __neg__(&self) -> PyResult<PyOperator> {
        let inner = each!(&self.inner, a => a.scaled(-1.0 as S).py()?.into());
        Ok(PyOperator { inner })
    }

    /// rodl's name of the operator.
    #[getter]
    fn name(&self) -> String {
        each!(&self.inner, op => op.name())
    }

    fn __repr__(&self) -> PyResult<String> {
        Ok(format!(
            "Operator({}: {:?} -> {:?}, dtype='{}')",
            self.name(),
            self.domain_shape()?,
            self.range_shape()?,
            self.dtype_enum().name()
        ))
    }
}

fn op_from<T: Scalar, O: LinearOperator<T> + 'static>(op: O) -> LinOp<T> {
    std::sync::Arc::new(op)
}

/// The identity on `space`.
#[pyfunction]
#[pyo3(name = "IdentityOperator")]
fn identity(space: &PySpace) -> PyOperator {
    PyOperator {
        inner: each!(&space.inner, s => op_from(rodl::IdentityOperator::new(s.clone())).into()),
    }
}

/// `x ↦ scalar · x` on `space`.
#[pyfunction]
#[pyo3(name = "ScalingOperator")]
fn scaling(space: &PySpace, scalar: f64) -> PyOperator {
    PyOperator {
        inner: each!(&space.inner, s => op_from(rodl::ScalingOperator::new(s.clone(), scalar as S)).into()),
    }
}

/// `x ↦ factor · x` (entry by entry) on `space`.
#[pyfunction]
#[pyo3(name = "MultiplyOperator")]
fn multiply(space: &PySpace, factor: &Bound<'_, PyAny>) -> PyResult<PyOperator> {
    Ok(PyOperator {
        inner: each!(&space.inner, s => {
            let f = element(s, factor, "MultiplyOperator: factor")?;
            op_from(rodl::MultiplyOperator::new(s.clone(), f).py()?).into()
        }),
    })
}

/// The zero operator from `domain` to `range` (default: `domain`).
#[pyfunction]
#[pyo3(name = "ZeroOperator", signature = (domain, range=None))]
fn zero(domain: &PySpace, range: Option<&PySpace>) -> PyResult<PyOperator> {
    let range = range.unwrap_or(domain);
    let inner = pair!(&domain.inner, &range.inner, "ZeroOperator", (d, r) => {
        Ok(op_from(rodl::ZeroOperator::new(d.clone(), r.clone())).into())
    })?;
    Ok(PyOperator { inner })
}

/// ODL's `Gradient` (forward differences, zero padding): from `space` to the product space of
/// one copy per axis (arrays of shape `(ndim, *shape)`).
#[pyfunction]
#[pyo3(name = "Gradient")]
fn gradient(space: &PySpace) -> PyResult<PyOperator> {
    Ok(PyOperator {
        inner: each!(&space.inner, s => op_from(rodl::Gradient::new(s.clone()).py()?).into()),
    })
}

/// ODL's `Divergence` (backward differences), the negative adjoint of `Gradient`: from the
/// product space of one copy of `space` per axis to `space`.
#[pyfunction]
#[pyo3(name = "Divergence")]
fn divergence(space: &PySpace) -> PyResult<PyOperator> {
    Ok(PyOperator {
        inner: each!(&space.inner, s => op_from(rodl::Divergence::new(s.clone()).py()?).into()),
    })
}

/// ODL's `Laplacian` (the second-difference stencil, zero padding) on `space`.
#[pyfunction]
#[pyo3(name = "Laplacian")]
fn laplacian(space: &PySpace) -> PyResult<PyOperator> {
    Ok(PyOperator {
        inner: each!(&space.inner, s => op_from(rodl::Laplacian::new(s.clone()).py()?).into()),
    })
}

/// Registers the operator type and the elementary operators.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyOperator>()?;
    m.add_function(wrap_pyfunction!(identity, m)?)?;
    m.add_function(wrap_pyfunction!(scaling, m)?)?;
    m.add_function(wrap_pyfunction!(multiply, m)?)?;
    m.add_function(wrap_pyfunction!(zero, m)?)?;
    m.add_function(wrap_pyfunction!(gradient, m)?)?;
    m.add_function(wrap_pyfunction!(divergence, m)?)?;
    m.add_function(wrap_pyfunction!(laplacian, m)?)?;
    Ok(())
}
