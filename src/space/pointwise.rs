//! Pointwise (elementwise) functions of elements: `out[i] = f(x[i])` and `out[i] = f(x[i], y[i])`,
//! on every device and recursively over product-space parts.

use super::Space;
use crate::backend::{Map2Op, MapOp};
use crate::element::ElementKind;
use crate::{Element, Error, Result, Scalar};

pub use crate::backend::op::{Pointwise, Pointwise2};

fn structure_mix() -> Error {
    Error::invalid("pointwise operation: operands of different structure")
}

fn map_rec<T: Scalar>(op: MapOp, p: [T; 2], x: &Element<T>, out: &mut Element<T>) -> Result<()> {
    match (&x.kind, &mut out.kind) {
        (ElementKind::Product(xs), ElementKind::Product(os)) => xs
            .iter()
            .zip(os.iter_mut())
            .try_for_each(|(x, o)| map_rec(op, p, x, o)),
        (ElementKind::Tensor(xa), ElementKind::Tensor(oa)) => oa.map(op, p, xa),
        _ => Err(structure_mix()),
    }
}

fn map_inplace_rec<T: Scalar>(op: MapOp, p: [T; 2], x: &mut Element<T>) -> Result<()> {
    match &mut x.kind {
        ElementKind::Product(xs) => xs.iter_mut().try_for_each(|x| map_inplace_rec(op, p, x)),
        ElementKind::Tensor(xa) => xa.map_inplace(op, p),
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
        (ElementKind::Tensor(xa), ElementKind::Tensor(ya), ElementKind::Tensor(oa)) => {
            oa.map2(op, xa, ya)
        }
        _ => Err(structure_mix()),
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
        let (code, p) = op.lower()?;
        self.check_member(x, "pointwise")?;
        self.check_member(out, "pointwise")?;
        map_rec(code, p, x, out)
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
        let (code, p) = op.lower()?;
        self.check_member(x, "pointwise_inplace")?;
        map_inplace_rec(code, p, x)
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
