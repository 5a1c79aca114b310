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

    /// `value` as the same value of `f32` when `Self` is `f32` — the safe way into code that is
    /// written for `f32` only (SIMD kernels, GPU kernels). `F` names the container type
    /// (`[T]`, a `Vec<T>`, a crate type generic over its scalar), see [`ScalarFamily`].
    ///
    /// ```
    /// use rodl::{Scalar, SliceOf};
    /// let x = [1.0f32, 2.0];
    /// assert_eq!(f32::as_f32::<SliceOf>(&x), Some(&x[..]));
    /// assert!(f64::as_f32::<SliceOf>(&[1.0f64]).is_none());
    /// ```
    fn as_f32<F: ScalarFamily + ?Sized>(value: &F::Of<Self>) -> Option<&F::Of<f32>>;

    /// [`Scalar::as_f32`] for mutable access.
    fn as_f32_mut<F: ScalarFamily + ?Sized>(value: &mut F::Of<Self>) -> Option<&mut F::Of<f32>>;

    /// `value` as the same value of `f64` when `Self` is `f64` (as [`Scalar::as_f32`]).
    fn as_f64_mut<F: ScalarFamily + ?Sized>(value: &mut F::Of<Self>) -> Option<&mut F::Of<f64>>;

    /// `value` as the same container of `Self` when `Self` is `f32`; otherwise `value` back.
    fn cast_from_f32<F: ScalarFamily>(
        value: F::Of<f32>,
    ) -> std::result::Result<F::Of<Self>, F::Of<f32>>
    where
        F::Of<f32>: Sized,
        F::Of<Self>: Sized;

    /// `value` as the same container of `Self` when `Self` is `f64`; otherwise `value` back.
    fn cast_from_f64<F: ScalarFamily>(
        value: F::Of<f64>,
    ) -> std::result::Result<F::Of<Self>, F::Of<f64>>
    where
        F::Of<f64>: Sized,
        F::Of<Self>: Sized;

    /// The slice as `&[f32]` when `Self` is `f32`.
    fn as_f32_slice(s: &[Self]) -> Option<&[f32]> {
        Self::as_f32::<SliceOf>(s)
    }

    /// The slice as `&mut [f32]` when `Self` is `f32`.
    fn as_f32_slice_mut(s: &mut [Self]) -> Option<&mut [f32]> {
        Self::as_f32_mut::<SliceOf>(s)
    }
}

/// A type constructor over the scalar type (`T ↦ F::Of<T>`), so that [`Scalar::as_f32`] can
/// turn a container of `Self` into the same container of `f32` without a cast.
pub trait ScalarFamily {
    /// The container of `T`.
    type Of<T: Scalar>: ?Sized;
}

/// The [`ScalarFamily`] of slices `[T]`.
pub struct SliceOf;

impl ScalarFamily for SliceOf {
    type Of<T: Scalar> = [T];
}

impl Scalar for f32 {
    const NAME: &'static str = "f32";
    #[inline(always)]
    fn as_f32<F: ScalarFamily + ?Sized>(value: &F::Of<f32>) -> Option<&F::Of<f32>> {
        Some(value)
    }
    #[inline(always)]
    fn as_f32_mut<F: ScalarFamily + ?Sized>(value: &mut F::Of<f32>) -> Option<&mut F::Of<f32>> {
        Some(value)
    }
    #[inline(always)]
    fn as_f64_mut<F: ScalarFamily + ?Sized>(_value: &mut F::Of<f32>) -> Option<&mut F::Of<f64>> {
        None
    }
    #[inline(always)]
    fn cast_from_f32<F: ScalarFamily>(
        value: F::Of<f32>,
    ) -> std::result::Result<F::Of<f32>, F::Of<f32>>
    where
        F::Of<f32>: Sized,
    {
        Ok(value)
    }
    #[inline(always)]
    fn cast_from_f64<F: ScalarFamily>(
        value: F::Of<f64>,
    ) -> std::result::Result<F::Of<f32>, F::Of<f64>>
    where
        F::Of<f64>: Sized,
        F::Of<f32>: Sized,
    {
        Err(value)
    }
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
    #[inline(always)]
    fn as_f32<F: ScalarFamily + ?Sized>(_value: &F::Of<f64>) -> Option<&F::Of<f32>> {
        None
    }
    #[inline(always)]
    fn as_f32_mut<F: ScalarFamily + ?Sized>(_value: &mut F::Of<f64>) -> Option<&mut F::Of<f32>> {
        None
    }
    #[inline(always)]
    fn as_f64_mut<F: ScalarFamily + ?Sized>(value: &mut F::Of<f64>) -> Option<&mut F::Of<f64>> {
        Some(value)
    }
    #[inline(always)]
    fn cast_from_f32<F: ScalarFamily>(
        value: F::Of<f32>,
    ) -> std::result::Result<F::Of<f64>, F::Of<f32>>
    where
        F::Of<f32>: Sized,
        F::Of<f64>: Sized,
    {
        Err(value)
    }
    #[inline(always)]
    fn cast_from_f64<F: ScalarFamily>(
        value: F::Of<f64>,
    ) -> std::result::Result<F::Of<f64>, F::Of<f64>>
    where
        F::Of<f64>: Sized,
    {
        Ok(value)
    }
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
