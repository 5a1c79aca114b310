//! Factory algebra: the factories of composites, sums, scalar multiples and adjoints.
//!
//! A composite factory checks its operands' descriptions when it is assembled; its build
//! function builds the operands on the device and combines them with the operator algebra
//! ([`crate::OperatorExt`], [`crate::LinearOperatorExt`]). Written once for both kinds of
//! factory: combining linear factories gives a linear factory.

use super::{Factory, LinFactory, OpFactory, OperatorHandle, SpaceDesc};
use crate::{Error, Op, Result, Scalar};

fn check_same(expected: &SpaceDesc, got: &SpaceDesc, context: &str) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(Error::SpaceMismatch {
            context: context.into(),
            expected: expected.to_string(),
            got: got.to_string(),
        })
    }
}

impl<O: OperatorHandle> Factory<O> {
    /// The factory of `self ∘ right`; errors unless `right`'s range is `self`'s domain.
    pub fn compose(&self, right: &Self) -> Result<Self> {
        check_same(
            self.domain(),
            right.range(),
            "composed factory (left domain vs right range)",
        )?;
        let (l, r) = (self.clone(), right.clone());
        Ok(Self::assemble(
            right.domain().clone(),
            self.range().clone(),
            format!("({} ∘ {})", self.describe(), right.describe()),
            self.is_linear() && right.is_linear(),
            move |d| l.build(d)?.compose(&r.build(d)?),
        ))
    }

    /// The factory of `self + other`; errors unless the domains and the ranges agree.
    pub fn plus(&self, other: &Self) -> Result<Self> {
        self.sum(other, false)
    }

    /// The factory of `self - other`; errors unless the domains and the ranges agree.
    pub fn minus(&self, other: &Self) -> Result<Self> {
        self.sum(other, true)
    }

    fn sum(&self, other: &Self, subtract: bool) -> Result<Self> {
        check_same(self.domain(), other.domain(), "sum factory (domains)")?;
        check_same(self.range(), other.range(), "sum factory (ranges)")?;
        let (a, b) = (self.clone(), other.clone());
        let sign = if subtract { "-" } else { "+" };
        Ok(Self::assemble(
            self.domain().clone(),
            self.range().clone(),
            format!("({} {sign} {})", self.describe(), other.describe()),
            self.is_linear() && other.is_linear(),
            move |d| {
                let (x, y) = (a.build(d)?, b.build(d)?);
                if subtract {
                    x.minus(&y)
                } else {
                    x.plus(&y)
                }
            },
        ))
    }

    /// The factory of `c · self` (x ↦ c·self(x)).
    pub fn scaled(&self, c: O::Scalar) -> Self {
        let f = self.clone();
        Self::assemble(
            self.domain().clone(),
            self.range().clone(),
            format!("({c} · {})", self.describe()),
            self.is_linear(),
            move |d| f.build(d)?.scaled(c),
        )
    }

    /// The factory of `self · c` (x ↦ self(c·x); for a linear factory the same as
    /// [`scaled`](Factory::scaled)).
    pub fn right_scaled(&self, c: O::Scalar) -> Self {
        let f = self.clone();
        Self::assemble(
            self.domain().clone(),
            self.range().clone(),
            format!("({} · {c})", self.describe()),
            self.is_linear(),
            move |d| f.build(d)?.right_scaled(c),
        )
    }

    /// The factory of `-self`.
    pub fn neg(&self) -> Self {
        self.scaled(-<O::Scalar as num_traits::One>::one())
    }
}

impl<T: Scalar> LinFactory<T> {
    /// The factory of the adjoint `self*`: it builds `self`'s operator and takes its adjoint.
    ///
    /// ```
    /// use rodl::factory::{LinFactory, SpaceDesc};
    /// use rodl::{Device, Gradient, Operator};
    /// let grad: LinFactory<f32> = Gradient::factory(SpaceDesc::rn(&[4, 4]))?;
    /// let div = grad.adjoint(); // −div, on the power space
    /// assert_eq!(div.domain(), grad.range());
    /// assert_eq!(div.build(Device::Cpu)?.range().shape()?, &[4, 4]);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn adjoint(&self) -> Self {
        let f = self.clone();
        Self::assemble(
            self.range().clone(),
            self.domain().clone(),
            format!("{}*", self.describe()),
            true,
            move |d| f.build(d)?.adjoint(),
        )
    }

    /// The same factory as a general [`OpFactory`] (its operators as [`Op`]s; it stays
    /// [`is_linear`](Factory::is_linear)).
    pub fn general(&self) -> OpFactory<T> {
        let f = self.clone();
        Factory::assemble(
            self.domain().clone(),
            self.range().clone(),
            self.describe().to_string(),
            true,
            move |d| -> Result<Op<T>> { Ok(f.build(d)?) },
        )
    }
}
