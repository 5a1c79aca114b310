//! Pointwise (elementwise) functions of elements: `out[i] = f(x[i])` and `out[i] = f(x[i], y[i])`,
//! on every device and recursively over product-space parts.

use super::Space;
use crate::backend::{host, Map2Op, MapOp};
use crate::element::ElementKind;
use crate::{Element, Error, Result, Scalar};

/// An elementwise function of one element, for [`Space::pointwise`] and
/// [`Space::pointwise_inplace`].
///
/// The functions follow IEEE arithmetic (`Sqrt` of a negative number is NaN, `Recip` of 0 is ∞,
/// `Log` of 0 is −∞); `MaxScalar`, `MinScalar` and `Clamp` ignore a NaN operand as `f64::max`
/// does. On a GPU the arithmetic operations give the host's results exactly; `Exp`, `Log` and
/// `Pow` agree to a few units in the last place.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pointwise<T> {
    /// `x + a`.
    AddScalar(T),
    /// `max(x, a)`.
    MaxScalar(T),
    /// `min(x, a)`.
    MinScalar(T),
    /// `min(max(x, lo), hi)`, the projection onto `[lo, hi]` (needs `lo ≤ hi`; infinite bounds
    /// are allowed).
    Clamp(T, T),
    /// `√x`.
    Sqrt,
    /// `eˣ`.
    Exp,
    /// The natural logarithm `ln x`.
    Log,
    /// The sign: 1 for `x > 0`, −1 for `x < 0`, `x` itself for ±0 and NaN.
    Sign,
    /// `x²`.
    Square,
    /// `1 / x`.
    Recip,
    /// Soft thresholding `sign(x) · max(|x| − t, 0)` (needs `t ≥ 0`): the proximal operator of
    /// `t |·|`.
    SoftThreshold(T),
    /// `xᵃ` (`powf`).
    Pow(T),
    /// The Huber function of `|x|` with parameter `γ > 0`: `x²/(2γ)` for `|x| ≤ γ`,
    /// `|x| − γ/2` beyond.
    Huber(T),
}

/// An elementwise function of two elements, for [`Space::pointwise2`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pointwise2 {
    /// `max(x, y)`.
    Max,
    /// `min(x, y)`.
    Min,
    /// `x / y` where `y ≠ 0`, 0 where `y = 0`.
    DivOrZero,
    /// `x · ln y`, with 0 where `x = 0` (whatever `y`).
    XLogY,
    /// The Kullback–Leibler term `x ln(x/y) − x + y` for `x, y > 0`; `y` where `x = 0 ≤ y`;
    /// `+∞` otherwise (SciPy's `kl_div`).
    KlDiv,
}

impl<T: Scalar> Pointwise<T> {
    /// The backend opcode and parameters, after checking the parameters.
    fn lower(self) -> Result<(MapOp, T, T)> {
        let z = T::zero();
        Ok(match self {
            Pointwise::AddScalar(a) => (MapOp::AddScalar, a, z),
            Pointwise::MaxScalar(a) => (MapOp::MaxScalar, a, z),
            Pointwise::MinScalar(a) => (MapOp::MinScalar, a, z),
            Pointwise::Clamp(lo, hi) => {
                if !(lo <= hi) {
                    return Err(Error::invalid(format!(
                        "Pointwise::Clamp needs lo <= hi, got [{lo}, {hi}]"
                    )));
                }
                (MapOp::Clamp, lo, hi)
            }
            Pointwise::Sqrt => (MapOp::Sqrt, z, z),
            Pointwise::Exp => (MapOp::Exp, z, z),
            Pointwise::Log => (MapOp::Log, z, z),
            Pointwise::Sign => (MapOp::Sign, z, z),
            Pointwise::Square => (MapOp::Square, z, z),
            Pointwise::Recip => (MapOp::Recip, z, z),
            Pointwise::SoftThreshold(t) => {
                if !(t >= z) {
                    return Err(Error::invalid(format!(
                        "Pointwise::SoftThreshold needs a threshold >= 0, got {t}"
                    )));
                }
                (MapOp::SoftThreshold, t, z)
            }
            Pointwise::Pow(p) => (MapOp::Pow, p, z),
            Pointwise::Huber(g) => {
                if !(g > z && g.is_finite()) {
                    return Err(Error::invalid(format!(
                        "Pointwise::Huber needs a finite parameter > 0, got {g}"
                    )));
                }
                (MapOp::Huber, g, z)
            }
        })
    }
}

impl Pointwise2 {
    fn lower(self) -> Map2Op {
        match self {
            Pointwise2::Max => Map2Op::Max,
            Pointwise2::Min => Map2Op::Min,
            Pointwise2::DivOrZero => Map2Op::DivOrZero,
            Pointwise2::XLogY => Map2Op::XLogY,
            Pointwise2::KlDiv => Map2Op::KlDiv,
        }
    }
}

fn device_mix() -> Error {
    Error::DeviceMismatch {
        context: "pointwise operation".into(),
        expected: "all operands on one device".into(),
        got: "operands on different devices".into(),
    }
}

fn slice<T: Scalar>(a: &ndarray::ArrayD<T>) -> Result<&[T]> {
    a.as_slice()
        .ok_or_else(|| Error::invalid("element data is not contiguous"))
}

fn slice_mut<T: Scalar>(a: &mut ndarray::ArrayD<T>) -> Result<&mut [T]> {
    a.as_slice_mut()
        .ok_or_else(|| Error::invalid("element data is not contiguous"))
}

fn map_rec<T: Scalar>(op: MapOp, a: T, b: T, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
    match (&x.kind, &mut out.kind) {
        (ElementKind::Product(xs), ElementKind::Product(os)) => xs
            .iter()
            .zip(os.iter_mut())
            .try_for_each(|(x, o)| map_rec(op, a, b, x, o)),
        (ElementKind::Host(xa), ElementKind::Host(oa)) => {
            host::map(op, a, b, slice(xa)?, slice_mut(oa)?);
            Ok(())
        }
        (ElementKind::Cuda(xa), ElementKind::Cuda(oa)) => oa.map(op, a, b, xa),
        _ => Err(device_mix()),
    }
}

fn map_inplace_rec<T: Scalar>(op: MapOp, a: T, b: T, x: &mut Element<T>) -> Result<()> {
    match &mut x.kind {
        ElementKind::Product(xs) => xs.iter_mut().try_for_each(|x| map_inplace_rec(op, a, b, x)),
        ElementKind::Host(xa) => {
            host::map_inplace(op, a, b, slice_mut(xa)?);
            Ok(())
        }
        ElementKind::Cuda(xa) => xa.map_inplace(op, a, b),
    }
}

fn map2_rec<T: Scalar>(
    op: Map2Op,
    x: &Element<T>,
    y: &Element<T>,
    out: &mut Element<T>,
) -> Result<()> {
    match (&x.kind, &y.kind, &mut out.kind) {
        (ElementKind::Product(xs), ElementKind::Product(ys), ElementKind::Product(os)) => xs
            .iter()
            .zip(ys)
            .zip(os.iter_mut())
            .try_for_each(|((x, y), o)| map2_rec(op, x, y, o)),
        (ElementKind::Host(xa), ElementKind::Host(ya), ElementKind::Host(oa)) => {
            host::map_binary(op, slice(xa)?, slice(ya)?, slice_mut(oa)?);
            Ok(())
        }
        (ElementKind::Cuda(xa), ElementKind::Cuda(ya), ElementKind::Cuda(oa)) => {
            oa.map2(op, xa, ya)
        }
        _ => Err(device_mix()),
    }
}

impl<T: Scalar> Space<T> {
    /// `out = op(x)` elementwise (over all parts of a product space), on the space's device.
    ///
    /// ```
    /// use rodl::{rn, Pointwise};
    /// let s = rn::<f64>(&[4])?;
    /// let x = s.element_from_vec(vec![-2.0, -0.5, 0.5, 3.0])?;
    /// let mut out = s.zero()?;
    /// s.pointwise(Pointwise::SoftThreshold(1.0), &x, &mut out)?;
    /// assert_eq!(out.as_slice()?, &[-1.0, 0.0, 0.0, 2.0]);
    /// s.pointwise(Pointwise::Clamp(-1.0, 1.0), &x, &mut out)?;
    /// assert_eq!(out.as_slice()?, &[-1.0, -0.5, 0.5, 1.0]);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn pointwise(&self, op: Pointwise<T>, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let (code, a, b) = op.lower()?;
        self.check_member(x, "pointwise")?;
        self.check_member(out, "pointwise")?;
        map_rec(code, a, b, x, out)
    }

    /// `x = op(x)` elementwise, in place.
    ///
    /// ```
    /// use rodl::{rn, Pointwise};
    /// let s = rn::<f32>(&[3])?;
    /// let mut x = s.element_from_vec(vec![1.0, 4.0, 9.0])?;
    /// s.pointwise_inplace(Pointwise::Sqrt, &mut x)?;
    /// assert_eq!(x.as_slice()?, &[1.0, 2.0, 3.0]);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn pointwise_inplace(&self, op: Pointwise<T>, x: &mut Element<T>) -> Result<()> {
        let (code, a, b) = op.lower()?;
        self.check_member(x, "pointwise_inplace")?;
        map_inplace_rec(code, a, b, x)
    }

    /// `out = op(x, y)` elementwise (over all parts of a product space).
    ///
    /// ```
    /// use rodl::{rn, Pointwise2};
    /// let s = rn::<f64>(&[3])?;
    /// let x = s.element_from_vec(vec![1.0, 2.0, 3.0])?;
    /// let y = s.element_from_vec(vec![2.0, 0.0, -1.0])?;
    /// let mut out = s.zero()?;
    /// s.pointwise2(Pointwise2::DivOrZero, &x, &y, &mut out)?;
    /// assert_eq!(out.as_slice()?, &[0.5, 0.0, -3.0]);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn pointwise2(
        &self,
        op: Pointwise2,
        x: &Element<T>,
        y: &Element<T>,
        out: &mut Element<T>,
    ) -> Result<()> {
        self.check_member(x, "pointwise2")?;
        self.check_member(y, "pointwise2")?;
        self.check_member(out, "pointwise2")?;
        map2_rec(op.lower(), x, y, out)
    }
}
