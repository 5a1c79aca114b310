//! NumPy arrays to rodl elements and back.
//!
//! Arrays come in through NumPy's array protocol (any array-like; other real dtypes are cast to
//! the space's), are read in their logical (C) order, and are copied once into the element.
//! Results go out without a copy: the element's buffer becomes the NumPy array's. An element
//! of a product space is one array with the parts stacked along a leading axis when the parts
//! have the same shape (a power space such as a gradient's range), else a list of arrays.

use ndarray::{ArrayD, Axis, IxDyn};
use numpy::{AllowTypeChange, PyArray, PyArrayLikeDyn, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::errors::{value_error, IntoPyResult};
use rodl::{Element, Scalar, Space};

/// The scalar types an array can hold here.
pub trait Real:
    Scalar + numpy::Element + for<'py> pyo3::conversion::FromPyObjectOwned<'py>
{
}
impl Real for f32 {}
impl Real for f64 {}

/// The logical shape of an element of `space` as NumPy sees it: the space's shape, or for a
/// product space of equal parts `(parts, *part_shape)`.
pub fn array_shape<T: Scalar>(space: &Space<T>) -> PyResult<Vec<usize>> {
    if !space.is_product() {
        return space.shape().map(|s| s.to_vec()).py();
    }
    let parts = space.parts().py()?;
    let first = array_shape(&parts[0])?;
    if parts
        .iter()
        .any(|p| array_shape(p).ok().as_ref() != Some(&first))
    {
        return Err(value_error(
            "a product space of parts with different shapes has no single array shape",
        ));
    }
    let mut shape = vec![parts.len()];
    shape.extend(first);
    Ok(shape)
}

/// NumPy's kind letter of an array-like's dtype (`'f'`, `'c'`, …): the array's own, or that of
/// `numpy.asarray(obj)` for other array-likes (lists, tuples, scalars).
fn dtype_kind(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    let dtype = match obj.getattr("dtype") {
        Ok(d) => d,
        Err(_) => obj
            .py()
            .import("numpy")?
            .call_method1("asarray", (obj,))?
            .getattr("dtype")?,
    };
    dtype.getattr("kind")?.extract()
}

/// Reads an array-like as a NumPy array of `T` (casting other real dtypes). A complex array is
/// a `TypeError`: rodl's operators are real, and casting would drop the imaginary part.
pub fn read<'py, T: Real>(
    obj: &Bound<'py, PyAny>,
    what: &str,
) -> PyResult<PyArrayLikeDyn<'py, T, AllowTypeChange>> {
    if dtype_kind(obj).ok().as_deref() == Some("c") {
        return Err(crate::errors::type_error(format!(
            "{what}: a complex array, but rodl's operators are real: apply the operator to the \
             real and imaginary parts (x.real, x.imag) and combine the results, as ODL does"
        )));
    }
    obj.extract::<PyArrayLikeDyn<'py, T, AllowTypeChange>>()
        .map_err(|e| {
            value_error(format!(
                "{what}: expected an array of real numbers, got {} ({e})",
                obj.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })
}

/// The entries of an array in C order.
pub fn to_vec<T: Real>(a: &PyArrayLikeDyn<'_, T, AllowTypeChange>) -> Vec<T> {
    // `as_slice` also accepts Fortran order: only a C-contiguous buffer is in logical order.
    match a.as_slice() {
        Ok(s) if a.is_c_contiguous() => par_copy(s),
        _ => a.as_array().iter().copied().collect(),
    }
}

/// A copy of `s`, made by all cores for large arrays: the copy of a fresh buffer is bound by
/// its first-touch page faults, which one thread takes one at a time (a 512³ float32 volume:
/// several tenths of a second).
fn par_copy<T: Real>(s: &[T]) -> Vec<T> {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 18;
    if s.len() < 4 * CHUNK {
        return s.to_vec();
    }
    // Zeroed memory from the allocator is untouched: its pages are faulted in by the copy.
    let mut v = vec![T::zero(); s.len()];
    v.par_chunks_mut(CHUNK)
        .zip(s.par_chunks(CHUNK))
        .for_each(|(d, src)| d.copy_from_slice(src));
    v
}

/// The element of `space` holding the array-like `obj` (a copy), checked against the space's
/// shape.
pub fn element<T: Real>(
    space: &Space<T>,
    obj: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<Element<T>> {
    if space.is_product() {
        let parts = space.parts().py()?;
        let items: Vec<Bound<'_, PyAny>> =
            if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
                obj.try_iter()?.collect::<PyResult<_>>()?
            } else {
                let a = read::<T>(obj, what)?;
                let shape = a.shape().to_vec();
                if shape.first() != Some(&parts.len()) {
                    return Err(value_error(format!(
                        "{what}: an element of a product space of {} parts needs a leading axis \
                         of that length, got shape {shape:?}",
                        parts.len()
                    )));
                }
                (0..parts.len())
                    .map(|i| a.as_any().get_item(i))
                    .collect::<PyResult<_>>()?
            };
        if items.len() != parts.len() {
            return Err(value_error(format!(
                "{what}: a product space of {} parts needs as many arrays, got {}",
                parts.len(),
                items.len()
            )));
        }
        let elems = parts
            .iter()
            .zip(&items)
            .enumerate()
            .map(|(i, (p, o))| element(p, o, &format!("{what}[{i}]")))
            .collect::<PyResult<Vec<_>>>()?;
        return space.product_element(elems).py();
    }
    let a = read::<T>(obj, what)?;
    let want = space.shape().py()?;
    if a.shape() != want {
        return Err(value_error(format!(
            "{what}: expected an array of shape {want:?}, got {:?}",
            a.shape()
        )));
    }
    space.element_from_vec(to_vec(&a)).py()
}

/// The NumPy array (or list of arrays) of an element, without a copy for a plain element.
pub fn to_numpy<T: Real>(py: Python<'_>, x: Element<T>) -> PyResult<Py<PyAny>> {
    if !x.is_product() {
        let a = x.into_host().py()?.into_array().py()?;
        return Ok(PyArray::from_owned_array(py, a).into_any().unbind());
    }
    let parts = x.into_parts().py()?;
    let arrays = parts
        .into_iter()
        .map(|p| -> PyResult<ArrayD<T>> {
            if p.is_product() {
                return Err(value_error("nested product spaces have no array form"));
            }
            p.into_host().py()?.into_array().py()
        })
        .collect::<PyResult<Vec<_>>>()?;
    let same = arrays.windows(2).all(|w| w[0].shape() == w[1].shape());
    if same && !arrays.is_empty() {
        let views: Vec<_> = arrays.iter().map(|a| a.view()).collect();
        let stacked = ndarray::stack(Axis(0), &views).map_err(|e| value_error(e.to_string()))?;
        return Ok(PyArray::from_owned_array(py, stacked).into_any().unbind());
    }
    let list = PyList::empty(py);
    for a in arrays {
        list.append(PyArray::from_owned_array(py, a))?;
    }
    Ok(list.into_any().unbind())
}

/// A NumPy array of shape `shape` from a vector in C order (no copy).
pub fn from_vec<T: Real>(py: Python<'_>, data: Vec<T>, shape: &[usize]) -> PyResult<Py<PyAny>> {
    let a = ArrayD::from_shape_vec(IxDyn(shape), data).map_err(|e| value_error(e.to_string()))?;
    Ok(PyArray::from_owned_array(py, a).into_any().unbind())
}

/// The scalar type to compute an array-like in: `dtype` when given, else `float32` for a
/// `float32` array and `float64` for anything else.
pub fn dtype_of(
    obj: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<crate::scalar::Dtype> {
    use crate::scalar::Dtype;
    if let Some(d) = dtype {
        return Dtype::parse(d);
    }
    let name = obj
        .getattr("dtype")
        .and_then(|d| d.getattr("name"))
        .and_then(|n| n.extract::<String>());
    Ok(match name.as_deref() {
        Ok("float32") => Dtype::F32,
        _ => Dtype::F64,
    })
}
