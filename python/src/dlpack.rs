//! Tensors of other libraries through the DLPack protocol (`__dlpack__` capsules): their data
//! pointer, device, dtype and layout, read without taking the tensor over.

use std::ffi::c_void;

use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods};

use crate::errors::{type_error, value_error};

/// DLPack's `DLDevice`.
#[repr(C)]
#[derive(Clone, Copy)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

/// DLPack's `DLDataType`.
#[repr(C)]
#[derive(Clone, Copy)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

/// DLPack's `DLTensor`.
#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *const i64,
    strides: *const i64,
    byte_offset: u64,
}

/// DLPack's `DLManagedTensor` (the layout of a `"dltensor"` capsule's pointer).
#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

const KDL_CPU: i32 = 1;
const KDL_CUDA: i32 = 2;
const KDL_FLOAT: u8 = 2;

/// Where a tensor lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Host memory.
    Cpu,
    /// CUDA device memory of this ordinal.
    Cuda(usize),
}

/// What rodl needs of a tensor: the address of its first entry, where it is, the bytes per
/// entry and its shape (C-contiguous; others are refused).
#[derive(Clone, Debug)]
pub struct TensorRef {
    pub ptr: u64,
    pub place: Place,
    pub bits: u8,
    pub shape: Vec<usize>,
}

/// Reads a `"dltensor"` capsule (the result of `tensor.__dlpack__(stream=…)`). The capsule
/// keeps its name, so its producer's destructor frees it as usual; the caller keeps the tensor
/// itself alive for as long as the memory is used.
pub fn read(capsule: &Bound<'_, PyAny>, what: &str) -> PyResult<TensorRef> {
    let cap = capsule
        .cast::<PyCapsule>()
        .map_err(|_| type_error(format!("{what}: expected a DLPack capsule")))?;
    let name = cap.name()?;
    // SAFETY: the name is read at once, while the capsule is referenced.
    let ok = name
        .map(|n| unsafe { n.as_cstr() }.to_bytes() == b"dltensor")
        .unwrap_or(false);
    if !ok {
        return Err(value_error(format!(
            "{what}: the DLPack capsule was already consumed or is not a DLPack tensor"
        )));
    }
    let raw = cap.pointer_checked(Some(c"dltensor"))?;
    // SAFETY: a live capsule named "dltensor" holds a DLManagedTensor (the DLPack protocol);
    // it is only read here, while the capsule is referenced.
    let t = unsafe { &(*(raw.as_ptr() as *const DlManagedTensor)).dl_tensor };
    let ndim =
        usize::try_from(t.ndim).map_err(|_| value_error(format!("{what}: negative ndim")))?;
    let shape: Vec<i64> = if ndim == 0 {
        Vec::new()
    } else {
        // SAFETY: DLPack's shape holds ndim entries.
        unsafe { std::slice::from_raw_parts(t.shape, ndim) }.to_vec()
    };
    let shape: Vec<usize> = shape
        .iter()
        .map(|&n| usize::try_from(n).map_err(|_| value_error(format!("{what}: negative size"))))
        .collect::<PyResult<_>>()?;
    if !t.strides.is_null() && ndim > 0 {
        // SAFETY: DLPack's strides, when given, hold ndim entries (in elements).
        let strides = unsafe { std::slice::from_raw_parts(t.strides, ndim) };
        let mut want = 1i64;
        for k in (0..ndim).rev() {
            if shape[k] > 1 && strides[k] != want {
                return Err(value_error(format!(
                    "{what}: the tensor is not C-contiguous (call .contiguous() first)"
                )));
            }
            want *= shape[k] as i64;
        }
    }
    if t.dtype.code != KDL_FLOAT
        || t.dtype.lanes != 1
        || !(t.dtype.bits == 32 || t.dtype.bits == 64)
    {
        return Err(type_error(format!(
            "{what}: expected float32 or float64 data, got DLPack dtype code {} with {} bits",
            t.dtype.code, t.dtype.bits
        )));
    }
    let place = match t.device.device_type {
        KDL_CPU => Place::Cpu,
        KDL_CUDA => Place::Cuda(t.device.device_id as usize),
        other => {
            return Err(value_error(format!(
                "{what}: tensors on DLPack device type {other} are not supported (CPU or CUDA)"
            )))
        }
    };
    Ok(TensorRef {
        ptr: t.data as u64 + t.byte_offset,
        place,
        bits: t.dtype.bits,
        shape,
    })
}
