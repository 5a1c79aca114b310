//! Real scalar types that spaces and operators are generic over.

use std::fmt::{Debug, Display};
use std::iter::Sum;
use std::ops::{AddAssign, MulAssign, SubAssign};

use num_traits::{Float, FromPrimitive, ToPrimitive};

/// A real floating-point scalar: `f32` or `f64`.
///
/// Computations run in the scalar type; reductions (inner products, norms) accumulate in `f64`
/// and geometry maths is done in `f64`.
pub trait Scalar:
    Float
    + FromPrimitive
    + ToPrimitive
    + Default
    + Debug
    + Display
    + Send
    + Sync
    + Sum
    + AddAssign
    + SubAssign
    + MulAssign
    + ndarray::ScalarOperand
    + 'static
{
    /// The type's name, `"f32"` or `"f64"`.
    const NAME: &'static str;
    /// Relative rounding unit of the type.
    const EPS: f64;
    /// Converts from `f64` (rounding to nearest).
    fn of(v: f64) -> Self;
    /// Converts to `f64` exactly.
    fn f64(self) -> f64;
    /// Converts an index (exact below 2^24 for f32).
    fn from_index(i: usize) -> Self;
    /// Truncates towards zero to an index (saturating; for already-floored values).
    fn as_isize(self) -> isize;
}

impl Scalar for f32 {
    const NAME: &'static str = "f32";
    const EPS: f64 = f32::EPSILON as f64;
    #[inline(always)]
    fn of(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn from_index(i: usize) -> Self {
        i as f32
    }
    #[inline(always)]
    fn as_isize(self) -> isize {
        self as isize
    }
}

impl Scalar for f64 {
    const NAME: &'static str = "f64";
    const EPS: f64 = f64::EPSILON;
    #[inline(always)]
    fn of(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_index(i: usize) -> Self {
        i as f64
    }
    #[inline(always)]
    fn as_isize(self) -> isize {
        self as isize
    }
}
