//! Vector-space arithmetic through the space: checked, recursive over product parts, dispatched
//! to the backend of the space's device.

use super::{Space, SpaceKind};
use crate::backend::{Binary, Reduction, Unary};
use crate::element::ElementKind;
use crate::{Element, Error, Result, Scalar};

/// Operands whose structure differs from their space's (checked before, so only reachable
/// through a product element whose parts were replaced).
fn structure_mix() -> Error {
    Error::invalid("vector operation: operands of different structure")
}

impl<T: Scalar> Space<T> {
    fn check2(&self, x: &Element<T>, y: &Element<T>, ctx: &str) -> Result<()> {
        self.check_member(x, ctx)?;
        self.check_member(y, ctx)
    }

    // Leaf kernels: the operands have been checked against the space.
    fn leaf_binary(
        op: Binary<T>,
        x: &Element<T>,
        y: &Element<T>,
        out: &mut Element<T>,
    ) -> Result<()> {
        match (&x.kind, &y.kind, &mut out.kind) {
            (ElementKind::Tensor(a), ElementKind::Tensor(b), ElementKind::Tensor(o)) => {
                o.binary(op, a, b)
            }
            _ => Err(structure_mix()),
        }
    }

    fn binary(
        &self,
        op: Binary<T>,
        x: &Element<T>,
        y: &Element<T>,
        out: &mut Element<T>,
        ctx: &str,
    ) -> Result<()> {
        self.check2(x, y, ctx)?;
        self.check_member(out, ctx)?;
        self.binary_rec(op, x, y, out)
    }

    fn binary_rec(
        &self,
        op: Binary<T>,
        x: &Element<T>,
        y: &Element<T>,
        out: &mut Element<T>,
    ) -> Result<()> {
        match (&*self.inner, &x.kind, &y.kind, &mut out.kind) {
            (
                SpaceKind::Product(ps),
                ElementKind::Product(xs),
                ElementKind::Product(ys),
                ElementKind::Product(os),
            ) => {
                for (((s, x), y), o) in ps.iter().zip(xs).zip(ys).zip(os.iter_mut()) {
                    s.binary_rec(op, x, y, o)?;
                }
                Ok(())
            }
            _ => Self::leaf_binary(op, x, y, out),
        }
    }

    fn unary_rec(&self, op: Unary<T>, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        match (&x.kind, &mut out.kind) {
            (ElementKind::Product(xs), ElementKind::Product(os)) => {
                for ((s, x), o) in self.parts()?.iter().zip(xs).zip(os.iter_mut()) {
                    s.unary_rec(op, x, o)?;
                }
                Ok(())
            }
            (ElementKind::Tensor(a), ElementKind::Tensor(o)) => o.unary(op, a),
            _ => Err(structure_mix()),
        }
    }

    fn reduce_rec(&self, op: Reduction, x: &Element<T>, y: &Element<T>) -> Result<f64> {
        match (&*self.inner, &x.kind, &y.kind) {
            (SpaceKind::Product(ps), ElementKind::Product(xs), ElementKind::Product(ys)) => {
                let mut acc = 0.0;
                for ((s, x), y) in ps.iter().zip(xs).zip(ys) {
                    acc += s.reduce_rec(op, x, y)?;
                }
                Ok(acc)
            }
            (SpaceKind::Tensor(t), ElementKind::Tensor(a), ElementKind::Tensor(b)) => {
                Ok(t.weight * a.reduce(op, b)?)
            }
            _ => Err(structure_mix()),
        }
    }

    /// `out = a x + b y`.
    ///
    /// ```
    /// use rodl::rn;
    /// let s = rn::<f64>(&[3])?;
    /// let (x, y) = (s.one()?, s.full(2.0)?);
    /// let mut out = s.zero()?;
    /// s.lincomb(2.0, &x, -1.0, &y, &mut out)?;
    /// assert_eq!(s.norm(&out)?, 0.0);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn lincomb(
        &self,
        a: T,
        x: &Element<T>,
        b: T,
        y: &Element<T>,
        out: &mut Element<T>,
    ) -> Result<()> {
        self.binary(Binary::Lincomb(a, b), x, y, out, "lincomb")
    }

    /// `y = a x + b y`, in place.
    pub fn axpby(&self, a: T, x: &Element<T>, b: T, y: &mut Element<T>) -> Result<()> {
        self.check2(x, y, "axpby")?;
        self.axpby_rec(a, x, b, y)
    }

    fn axpby_rec(&self, a: T, x: &Element<T>, b: T, y: &mut Element<T>) -> Result<()> {
        match (&x.kind, &mut y.kind) {
            (ElementKind::Product(xs), ElementKind::Product(ys)) => {
                for ((s, x), y) in self.parts()?.iter().zip(xs).zip(ys.iter_mut()) {
                    s.axpby_rec(a, x, b, y)?;
                }
                Ok(())
            }
            (ElementKind::Tensor(xa), ElementKind::Tensor(ya)) => ya.axpby(a, xa, b),
            _ => Err(structure_mix()),
        }
    }

    /// `x = a x`, in place.
    pub fn scale(&self, a: T, x: &mut Element<T>) -> Result<()> {
        self.check_member(x, "scale")?;
        Self::scale_rec(a, x)
    }

    fn scale_rec(a: T, x: &mut Element<T>) -> Result<()> {
        match &mut x.kind {
            ElementKind::Product(xs) => xs.iter_mut().try_for_each(|x| Self::scale_rec(a, x)),
            ElementKind::Tensor(xa) => xa.scale_inplace(a),
        }
    }

    /// `out = a x`.
    pub fn scaled(&self, a: T, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.check2(x, out, "scaled")?;
        self.unary_rec(Unary::Scale(a), x, out)
    }

    /// `out = x` (copy).
    pub fn assign(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.scaled(T::one(), x, out)
    }

    /// `out = |x|` elementwise.
    pub fn abs(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.check2(x, out, "abs")?;
        self.unary_rec(Unary::Abs, x, out)
    }

    /// Sets every entry of `x` to `value`.
    pub fn fill(&self, x: &mut Element<T>, value: T) -> Result<()> {
        self.check_member(x, "fill")?;
        Self::fill_rec(x, value)
    }

    fn fill_rec(x: &mut Element<T>, value: T) -> Result<()> {
        match &mut x.kind {
            ElementKind::Product(xs) => xs.iter_mut().try_for_each(|x| Self::fill_rec(x, value)),
            ElementKind::Tensor(xa) => xa.fill(value),
        }
    }

    /// `out = x * y` elementwise.
    pub fn multiply(&self, x: &Element<T>, y: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.binary(Binary::Mul, x, y, out, "multiply")
    }

    /// `out = x / y` elementwise.
    pub fn divide(&self, x: &Element<T>, y: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.binary(Binary::Div, x, y, out, "divide")
    }

    /// `out = x + y`.
    pub fn add(&self, x: &Element<T>, y: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.lincomb(T::one(), x, T::one(), y, out)
    }

    /// `out = x - y`.
    pub fn sub(&self, x: &Element<T>, y: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.lincomb(T::one(), x, -T::one(), y, out)
    }

    /// The weighted inner product `⟨x, y⟩`, accumulated in f64.
    pub fn inner(&self, x: &Element<T>, y: &Element<T>) -> Result<f64> {
        self.check2(x, y, "inner")?;
        self.reduce_rec(Reduction::Inner, x, y)
    }

    /// The norm `‖x‖ = √⟨x, x⟩`.
    pub fn norm(&self, x: &Element<T>) -> Result<f64> {
        self.check_member(x, "norm")?;
        Ok(self.reduce_rec(Reduction::NormSq, x, x)?.sqrt())
    }

    /// The distance `‖x − y‖` (without a temporary).
    pub fn dist(&self, x: &Element<T>, y: &Element<T>) -> Result<f64> {
        self.check2(x, y, "dist")?;
        Ok(self.reduce_rec(Reduction::DistSq, x, y)?.sqrt())
    }

    /// The weighted sum of all entries, `⟨x, 1⟩` (the integral on a discretised space).
    pub fn integral(&self, x: &Element<T>) -> Result<f64> {
        self.check_member(x, "integral")?;
        self.reduce_rec(Reduction::Sum, x, x)
    }
}
