//! Count arguments (sizes, iteration counts, threads, device ordinals): taken from Python as
//! signed integers so that a negative value is a `ValueError` naming the argument, not pyo3's
//! `OverflowError: can't convert negative int to unsigned`.

use pyo3::prelude::*;

use crate::errors::value_error;

/// `value` as a count, or a `ValueError` naming `name`.
pub fn count(name: &str, value: i64) -> PyResult<usize> {
    usize::try_from(value).map_err(|_| {
        value_error(format!(
            "{name} must be a non-negative integer, got {value}"
        ))
    })
}

/// [`count`] for an optional argument.
pub fn opt_count(name: &str, value: Option<i64>) -> PyResult<Option<usize>> {
    value.map(|v| count(name, v)).transpose()
}

/// [`count`] for each entry of a shape.
pub fn counts(name: &str, values: &[i64]) -> PyResult<Vec<usize>> {
    values
        .iter()
        .map(|&v| {
            usize::try_from(v).map_err(|_| {
                value_error(format!(
                    "{name} must hold non-negative integers, got {values:?}"
                ))
            })
        })
        .collect()
}
