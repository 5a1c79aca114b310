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

    /// The local sums of `op` over the leaves: (whole or replicated leaves, shared leaves).
    fn reduce_rec(&self, op: Reduction, x: &Element<T>, y: &Element<T>) -> Result<(f64, f64)> {
        match (&*self.inner, &x.kind, &y.kind) {
            (SpaceKind::Product(ps), ElementKind::Product(xs), ElementKind::Product(ys)) => {
                let mut acc = (0.0, 0.0);
                for ((s, x), y) in ps.iter().zip(xs).zip(ys) {
                    let (a, b) = s.reduce_rec(op, x, y)?;
                    acc = (acc.0 + a, acc.1 + b);
                }
                Ok(acc)
            }
            (SpaceKind::Tensor(t), ElementKind::Tensor(a), ElementKind::Tensor(b)) => {
                let v = t.weight * a.reduce(op, b)?;
                Ok(if t.across.is_some() {
                    (0.0, v)
                } else {
                    (v, 0.0)
                })
            }
            _ => Err(structure_mix()),
        }
    }

    /// The reduction `op` of the whole space: the local sums after the membership check
    /// `checked`, the shared leaves' part summed over the ranks (collectively, also when the
    /// check or the local sums failed, so that every rank gets the same outcome).
    fn reduction(
        &self,
        op: Reduction,
        x: &Element<T>,
        y: &Element<T>,
        checked: Result<()>,
    ) -> Result<f64> {
        let local = checked.and_then(|_| self.reduce_rec(op, x, y));
        match self.across() {
            None => local.map(|(whole, shared)| whole + shared),
            Some(across) => {
                let (whole, shared) = match local {
                    Ok((w, s)) => (w, Ok(s)),
                    Err(e) => (0.0, Err(e)),
                };
                Ok(whole + across.sum(shared)?)
            }
        }
    }

    /// The largest entry of `x` over all parts (and, on a share space, all ranks; collective
    /// there), as f64; NaN when an entry is NaN. A GPU element is copied to the host for it.
    pub fn max(&self, x: &Element<T>) -> Result<f64> {
        let local = self.check_member(x, "max").and_then(|_| {
            if x.device() == crate::Device::Cpu {
                x.max()
            } else {
                x.to_host()?.max()
            }
        });
        match self.across() {
            None => local,
            Some(a) => a.max(local),
        }
    }

    /// The smallest entry of `x` over all parts (and, on a share space, all ranks; collective
    /// there), as f64; NaN when an entry is NaN. A GPU element is copied to the host for it.
    pub fn min(&self, x: &Element<T>) -> Result<f64> {
        let local = self.check_member(x, "min").and_then(|_| {
            if x.device() == crate::Device::Cpu {
                x.min()
            } else {
                x.to_host()?.min()
            }
        });
        match self.across() {
            None => local,
            Some(a) => a.min(local),
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
        self.reduction(Reduction::Inner, x, y, self.check2(x, y, "inner"))
    }

    /// The norm `‖x‖ = √⟨x, x⟩`.
    pub fn norm(&self, x: &Element<T>) -> Result<f64> {
        let checked = self.check_member(x, "norm");
        Ok(self.reduction(Reduction::NormSq, x, x, checked)?.sqrt())
    }

    /// The distance `‖x − y‖` (without a temporary).
    pub fn dist(&self, x: &Element<T>, y: &Element<T>) -> Result<f64> {
        let checked = self.check2(x, y, "dist");
        Ok(self.reduction(Reduction::DistSq, x, y, checked)?.sqrt())
    }

    /// The weighted sum of all entries, `⟨x, 1⟩` (the integral on a discretised space).
    pub fn integral(&self, x: &Element<T>) -> Result<f64> {
        let checked = self.check_member(x, "integral");
        self.reduction(Reduction::Sum, x, x, checked)
    }
}
