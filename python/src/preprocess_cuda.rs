//! `rodl.io`'s preprocessing on PyTorch CUDA tensors, on their GPU: the Python side hands over
//! a float32, C-contiguous copy of the data (a DLPack capsule) and the tensor's current CUDA
//! stream, and each function works in place in that copy with rodl's kernels
//! (`rodl::preprocess`'s element functions through `rodl::interop::with_cuda_memory`) — no
//! round trip through the host. The results equal the host functions' (bit for bit; `−log` to
//! two units in the last place), as `tests/cuda_preprocess.rs` checks.

use pyo3::prelude::*;
use rodl::preprocess::{self, FlatField, ZingerOptions};
use rodl::Element;

use crate::dlpack::{Place, TensorRef};
use crate::errors::{type_error, value_error, IntoPyResult};
use crate::io::to_frames;

/// The float32 CUDA tensor behind the DLPack capsule `data`, checked to have `dims` axes (any
/// number when `None`).
fn gpu_tensor(data: &Bound<'_, PyAny>, dims: Option<usize>) -> PyResult<TensorRef> {
    let t = crate::dlpack::read(data, "data")?;
    if t.bits != 32 {
        return Err(type_error(format!(
            "data: the GPU preprocessing computes in float32, got float{}",
            t.bits
        )));
    }
    if let Some(d) = dims {
        if t.shape.len() != d {
            return Err(value_error(format!(
                "data: expected a {d}D array [frame, u, v], got shape {:?}",
                t.shape
            )));
        }
    }
    if !matches!(t.place, Place::Cuda(_)) {
        return Err(value_error("data: expected a CUDA tensor"));
    }
    Ok(t)
}

/// Runs `f` in place on the CUDA tensor `t` (from [`gpu_tensor`]) on the CUDA `stream` (its
/// handle).
fn on_gpu<R: Send>(
    py: Python<'_>,
    t: TensorRef,
    stream: u64,
    f: impl FnOnce(&mut Element<f32>) -> rodl::Result<R> + Send,
) -> PyResult<R> {
    let Place::Cuda(id) = t.place else {
        return Err(value_error("data: expected a CUDA tensor"));
    };
    py.detach(move || {
        // SAFETY: a live, C-contiguous float32 CUDA tensor of device `id` with this shape (read
        // from its DLPack capsule; the caller keeps it referenced and made it for this call, so
        // nothing else uses it), and `stream` is its current stream there.
        unsafe { rodl::interop::with_cuda_memory::<f32, R>(id, t.ptr, &t.shape, stream, f) }
    })
    .py()
}

/// Flat/dark correction of the projections behind `data` in place (see `flat_field`); the
/// flats and darks are host arrays.
#[pyfunction]
#[pyo3(signature = (data, stream, flats, darks=None))]
fn _flat_field_cuda(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    stream: u64,
    flats: &Bound<'_, PyAny>,
    darks: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let t = gpu_tensor(data, Some(3))?;
    let shape = [t.shape[1], t.shape[2]];
    let flats = to_frames(Some(flats), "flats", shape)?;
    let darks = to_frames(darks, "darks", shape)?;
    let ff = py
        .detach(|| {
            if darks.is_empty() {
                FlatField::without_darks(&flats)
            } else {
                FlatField::new(&flats, &darks)
            }
        })
        .py()?;
    on_gpu(py, t, stream, move |x| {
        ff.apply_element(x, None).map(|_| ())
    })
}

/// `−log` of `data` in place with values below `floor` clamped to it first (see `neg_log`).
#[pyfunction]
fn _neg_log_cuda(py: Python<'_>, data: &Bound<'_, PyAny>, stream: u64, floor: f32) -> PyResult<()> {
    if !(floor.is_finite() && floor > 0.0) {
        return Err(value_error(format!(
            "floor: expected a number > 0, got {floor}"
        )));
    }
    on_gpu(py, gpu_tensor(data, None)?, stream, move |x| {
        preprocess::neg_log_element(x, floor)
    })
}

/// Zinger removal in the frames behind `data` in place (see `remove_zingers`); the count.
#[pyfunction]
fn _remove_zingers_cuda(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    stream: u64,
    threshold: f32,
) -> PyResult<usize> {
    let opts = ZingerOptions::new(threshold);
    on_gpu(py, gpu_tensor(data, Some(3))?, stream, move |x| {
        preprocess::remove_zingers_element(x, &opts)
    })
}

/// Stripe removal by sorting in the line integrals behind `data` in place (see
/// `remove_stripes`).
#[pyfunction]
fn _remove_stripes_cuda(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    stream: u64,
    size: usize,
) -> PyResult<()> {
    on_gpu(py, gpu_tensor(data, Some(3))?, stream, move |x| {
        preprocess::remove_stripes_sorting_element(x, size)
    })
}

/// Registers the GPU forms of the preprocessing functions (private: `rodl.io` calls them).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_flat_field_cuda, m)?)?;
    m.add_function(wrap_pyfunction!(_neg_log_cuda, m)?)?;
    m.add_function(wrap_pyfunction!(_remove_zingers_cuda, m)?)?;
    m.add_function(wrap_pyfunction!(_remove_stripes_cuda, m)?)?;
    Ok(())
}
