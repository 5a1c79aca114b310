//! Composite factories: composition, sums and differences, scalar multiples, adjoints.
//!
//! Like the operator algebra, each composite is generic over the kind of its parts: built from
//! [`Factory`](super::Factory)s it is a general factory, built from
//! [`LinFactory`]s it is also a linear factory.

use std::marker::PhantomData;
use std::sync::Arc;

use super::{LinFactory, LinearOperatorFactory, OperatorFactory, SpaceDesc};
use crate::operator::{Composition, OperatorSum, ScalarMultiple};
use crate::{Device, Error, LinOp, Op, Result, Scalar};

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

/// The factory of `left ∘ right`: builds both parts on the device and composes them.
pub struct ComposedFactory<T: Scalar, P: ?Sized> {
    left: Arc<P>,
    right: Arc<P>,
    _t: PhantomData<fn() -> T>,
}

impl<T: Scalar, P: ?Sized + OperatorFactory<T>> ComposedFactory<T, P> {
    /// Errors unless `right`'s range is `left`'s domain.
    pub fn new(left: Arc<P>, right: Arc<P>) -> Result<Self> {
        check_same(
            left.domain(),
            right.range(),
            "composed factory (left domain vs right range)",
        )?;
        Ok(Self {
            left,
            right,
            _t: PhantomData,
        })
    }
}

impl<T: Scalar, P: ?Sized + OperatorFactory<T>> OperatorFactory<T> for ComposedFactory<T, P> {
    fn domain(&self) -> &SpaceDesc {
        self.right.domain()
    }
    fn range(&self) -> &SpaceDesc {
        self.left.range()
    }
    fn build(&self, device: Device) -> Result<Op<T>> {
        Ok(Arc::new(Composition::new(
            self.left.build(device)?,
            self.right.build(device)?,
        )?))
    }
    fn describe(&self) -> String {
        format!("({} ∘ {})", self.left.describe(), self.right.describe())
    }
    fn is_linear(&self) -> bool {
        self.left.is_linear() && self.right.is_linear()
    }
}

impl<T: Scalar> LinearOperatorFactory<T> for ComposedFactory<T, dyn LinearOperatorFactory<T>> {
    fn build_linear(&self, device: Device) -> Result<LinOp<T>> {
        Ok(Arc::new(Composition::new(
            self.left.build_linear(device)?,
            self.right.build_linear(device)?,
        )?))
    }
}

/// The factory of `a + s·b` with `s = ±1`.
pub struct SumFactory<T: Scalar, P: ?Sized> {
    a: Arc<P>,
    b: Arc<P>,
    subtract: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T: Scalar, P: ?Sized + OperatorFactory<T>> SumFactory<T, P> {
    /// The factory of `a + b`; errors unless both have the same domain and the same range.
    pub fn sum(a: Arc<P>, b: Arc<P>) -> Result<Self> {
        Self::new(a, b, false)
    }

    /// The factory of `a - b`; errors unless both have the same domain and the same range.
    pub fn difference(a: Arc<P>, b: Arc<P>) -> Result<Self> {
        Self::new(a, b, true)
    }

    fn new(a: Arc<P>, b: Arc<P>, subtract: bool) -> Result<Self> {
        check_same(a.domain(), b.domain(), "sum factory (domains)")?;
        check_same(a.range(), b.range(), "sum factory (ranges)")?;
        Ok(Self {
            a,
            b,
            subtract,
            _t: PhantomData,
        })
    }

    fn combine<Q: ?Sized + crate::Operator<T>>(
        &self,
        a: Arc<Q>,
        b: Arc<Q>,
    ) -> Result<OperatorSum<T, Q>> {
        if self.subtract {
            OperatorSum::difference(a, b)
        } else {
            OperatorSum::sum(a, b)
        }
    }
}

impl<T: Scalar, P: ?Sized + OperatorFactory<T>> OperatorFactory<T> for SumFactory<T, P> {
    fn domain(&self) -> &SpaceDesc {
        self.a.domain()
    }
    fn range(&self) -> &SpaceDesc {
        self.a.range()
    }
    fn build(&self, device: Device) -> Result<Op<T>> {
        Ok(Arc::new(
            self.combine(self.a.build(device)?, self.b.build(device)?)?,
        ))
    }
    fn describe(&self) -> String {
        let op = if self.subtract { "-" } else { "+" };
        format!("({} {op} {})", self.a.describe(), self.b.describe())
    }
    fn is_linear(&self) -> bool {
        self.a.is_linear() && self.b.is_linear()
    }
}

impl<T: Scalar> LinearOperatorFactory<T> for SumFactory<T, dyn LinearOperatorFactory<T>> {
    fn build_linear(&self, device: Device) -> Result<LinOp<T>> {
        Ok(Arc::new(self.combine(
            self.a.build_linear(device)?,
            self.b.build_linear(device)?,
        )?))
    }
}

/// The factory of a scalar multiple: `c·A` (left, x ↦ c·A(x)) or `A·c` (right, x ↦ A(c·x)).
pub struct ScaledFactory<T: Scalar, P: ?Sized> {
    op: Arc<P>,
    scalar: T,
    right: bool,
}

impl<T: Scalar, P: ?Sized + OperatorFactory<T>> ScaledFactory<T, P> {
    /// The factory of `c·A`.
    pub fn left(scalar: T, op: Arc<P>) -> Self {
        Self {
            op,
            scalar,
            right: false,
        }
    }

    /// The factory of `A·c`, i.e. x ↦ A(c·x). (For linear operators the same as `c·A`.)
    pub fn right(op: Arc<P>, scalar: T) -> Self {
        Self {
            op,
            scalar,
            right: true,
        }
    }
}

impl<T: Scalar, P: ?Sized + OperatorFactory<T>> OperatorFactory<T> for ScaledFactory<T, P> {
    fn domain(&self) -> &SpaceDesc {
        self.op.domain()
    }
    fn range(&self) -> &SpaceDesc {
        self.op.range()
    }
    fn build(&self, device: Device) -> Result<Op<T>> {
        let op = self.op.build(device)?;
        Ok(if self.right {
            Arc::new(ScalarMultiple::right(op, self.scalar))
        } else {
            Arc::new(ScalarMultiple::left(self.scalar, op))
        })
    }
    fn describe(&self) -> String {
        if self.right {
            format!("({} · {})", self.op.describe(), self.scalar)
        } else {
            format!("({} · {})", self.scalar, self.op.describe())
        }
    }
    fn is_linear(&self) -> bool {
        self.op.is_linear()
    }
}

impl<T: Scalar> LinearOperatorFactory<T> for ScaledFactory<T, dyn LinearOperatorFactory<T>> {
    fn build_linear(&self, device: Device) -> Result<LinOp<T>> {
        let op = self.op.build_linear(device)?;
        // For a linear operator c·A = A·c; the left form needs no temporary.
        Ok(Arc::new(ScalarMultiple::left(self.scalar, op)))
    }
}

/// The factory of the adjoint `A*`: builds `A` on the device and returns its adjoint.
///
/// ```
/// use std::sync::Arc;
/// use rodl::factory::{AdjointFactory, LinFactory, LinearOperatorFactory, OperatorFactory, ZeroFactory, SpaceDesc};
/// use rodl::Device;
/// let a: LinFactory<f32> = Arc::new(ZeroFactory::new(SpaceDesc::rn(&[2]), SpaceDesc::rn(&[3])));
/// let adj = AdjointFactory::new(a);
/// assert_eq!(OperatorFactory::<f32>::domain(&adj), &SpaceDesc::rn(&[3]));
/// let op = adj.build_linear(Device::Cpu)?;
/// assert_eq!(op.range().shape()?, &[2]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct AdjointFactory<T: Scalar> {
    op: LinFactory<T>,
}

impl<T: Scalar> AdjointFactory<T> {
    /// The factory of `op`'s adjoint.
    pub fn new(op: LinFactory<T>) -> Self {
        Self { op }
    }
}

impl<T: Scalar> OperatorFactory<T> for AdjointFactory<T> {
    fn domain(&self) -> &SpaceDesc {
        self.op.range()
    }
    fn range(&self) -> &SpaceDesc {
        self.op.domain()
    }
    fn build(&self, device: Device) -> Result<Op<T>> {
        Ok(self.build_linear(device)?)
    }
    fn describe(&self) -> String {
        format!("{}*", self.op.describe())
    }
    fn is_linear(&self) -> bool {
        true
    }
}

impl<T: Scalar> LinearOperatorFactory<T> for AdjointFactory<T> {
    fn build_linear(&self, device: Device) -> Result<LinOp<T>> {
        self.op.build_linear(device)?.adjoint()
    }
}
