//! The two floating-point types of the package and dispatch over them.

use pyo3::prelude::*;

use crate::errors::value_error;

/// `float32` or `float64`: the scalar type of a space and of everything built on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// `numpy.float32`.
    F32,
    /// `numpy.float64`.
    F64,
}

impl Dtype {
    /// Parses a NumPy dtype, a type or a name (`"float32"`, `numpy.float64`, …).
    pub fn parse(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let np = obj.py().import("numpy")?;
        let dt = np.getattr("dtype")?.call1((obj,)).map_err(|_| {
            value_error(format!(
                "dtype must be float32 or float64, got {}",
                obj.repr().map(|r| r.to_string()).unwrap_or_default()
            ))
        })?;
        let name: String = dt.getattr("name")?.extract()?;
        match name.as_str() {
            "float32" => Ok(Dtype::F32),
            "float64" => Ok(Dtype::F64),
            other => Err(value_error(format!(
                "dtype must be float32 or float64, got {other}"
            ))),
        }
    }

    /// The NumPy name.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "float32",
            Dtype::F64 => "float64",
        }
    }
}

/// A value of one of the two scalar types: `Any::F32(x)` or `Any::F64(x)`, for the package's
/// wrappers of generic rodl types (`Any<Space<f32>, Space<f64>>`, …).
#[derive(Clone)]
pub enum Any<A, B> {
    /// The `float32` variant.
    F32(A),
    /// The `float64` variant.
    F64(B),
}

/// `each!(value, x => expr)`: evaluates `expr` with `x` bound to the inner value of an
/// [`Any`], whichever variant it is (the expression is compiled once per scalar type; `S` is
/// the scalar type in it).
macro_rules! each {
    ($v:expr, $x:ident => $body:expr) => {
        match $v {
            $crate::scalar::Any::F32($x) => {
                #[allow(unused)]
                type S = f32;
                $body
            }
            $crate::scalar::Any::F64($x) => {
                #[allow(unused)]
                type S = f64;
                $body
            }
        }
    };
}
pub(crate) use each;

/// `pair!(a, b, (x, y) => expr)`: like [`each!`] for two values that must have the same scalar
/// type (else a `ValueError` naming `what`).
macro_rules! pair {
    ($a:expr, $b:expr, $what:expr, ($x:ident, $y:ident) => $body:expr) => {
        match ($a, $b) {
            ($crate::scalar::Any::F32($x), $crate::scalar::Any::F32($y)) => {
                #[allow(unused)]
                type S = f32;
                $body
            }
            ($crate::scalar::Any::F64($x), $crate::scalar::Any::F64($y)) => {
                #[allow(unused)]
                type S = f64;
                $body
            }
            _ => Err($crate::errors::value_error(format!(
                "{}: the operands have different dtypes (float32 and float64)",
                $what
            ))),
        }
    };
}
pub(crate) use pair;

/// `with_dtype!(dtype, body)`: evaluates `body` with the type alias `S` set to the scalar type
/// of a [`Dtype`].
macro_rules! with_dtype {
    ($d:expr, $body:expr) => {
        match $d {
            $crate::scalar::Dtype::F32 => {
                #[allow(unused)]
                type S = f32;
                $body
            }
            $crate::scalar::Dtype::F64 => {
                #[allow(unused)]
                type S = f64;
                $body
            }
        }
    };
}
pub(crate) use with_dtype;
