//! Operator arithmetic: composition, sums and differences, scalar multiples.
//!
//! Each composite is generic over the kind of its parts: built from [`Op`]s it is a general
//! operator, built from [`LinOp`]s it is a linear operator whose adjoint is assembled from the
//! parts' adjoints.

use std::sync::Arc;

use super::{check_same_space, LinOp, LinearOperator, NormCache, Op, Operator, Scratch};
use crate::{Element, Result, Scalar, Space};

/// The composition `left ∘ right`: x ↦ left(right(x)).
pub struct Composition<T: Scalar, P: ?Sized> {
    left: Arc<P>,
    right: Arc<P>,
    tmp: Scratch<T>,
    norm: NormCache,
}

impl<T: Scalar, P: ?Sized + Operator<T>> Composition<T, P> {
    /// Errors when `right`'s range is not `left`'s domain.
    pub fn new(left: Arc<P>, right: Arc<P>) -> Result<Self> {
        check_same_space(
            left.domain(),
            right.range(),
            "composition (left domain vs right range)",
        )?;
        let tmp = Scratch::new(right.range().clone());
        Ok(Self {
            left,
            right,
            tmp,
            norm: NormCache::new(),
        })
    }
}

impl<T: Scalar, P: ?Sized + Operator<T>> Operator<T> for Composition<T, P> {
    fn domain(&self) -> &Space<T> {
        self.right.domain()
    }
    fn range(&self) -> &Space<T> {
        self.left.range()
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.tmp.with(|t| {
            self.right.evaluate(x, t)?;
            self.left.evaluate(t, out)
        })
    }
    fn is_linear(&self) -> bool {
        self.left.is_linear() && self.right.is_linear()
    }
    fn name(&self) -> String {
        format!("({} ∘ {})", self.left.name(), self.right.name())
    }
}

impl<T: Scalar> LinearOperator<T> for Composition<T, dyn LinearOperator<T>> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        Ok(Arc::new(Composition::new(
            self.right.adjoint()?,
            self.left.adjoint()?,
        )?))
    }
    fn norm_cache(&self) -> Option<&NormCache> {
        Some(&self.norm)
    }
}

/// The sum `a + s·b` with `s = ±1`: x ↦ a(x) + s·b(x).
pub struct OperatorSum<T: Scalar, P: ?Sized> {
    a: Arc<P>,
    b: Arc<P>,
    sign: T,
    tmp: Scratch<T>,
    norm: NormCache,
}

impl<T: Scalar, P: ?Sized + Operator<T>> OperatorSum<T, P> {
    /// `a + b`; errors unless both have the same domain and the same range.
    pub fn sum(a: Arc<P>, b: Arc<P>) -> Result<Self> {
        Self::with_sign(a, b, T::one())
    }

    /// `a - b`; errors unless both have the same domain and the same range.
    pub fn difference(a: Arc<P>, b: Arc<P>) -> Result<Self> {
        Self::with_sign(a, b, -T::one())
    }

    fn with_sign(a: Arc<P>, b: Arc<P>, sign: T) -> Result<Self> {
        check_same_space(a.domain(), b.domain(), "operator sum (domains)")?;
        check_same_space(a.range(), b.range(), "operator sum (ranges)")?;
        let tmp = Scratch::new(a.range().clone());
        Ok(Self {
            a,
            b,
            sign,
            tmp,
            norm: NormCache::new(),
        })
    }
}

impl<T: Scalar, P: ?Sized + Operator<T>> Operator<T> for OperatorSum<T, P> {
    fn domain(&self) -> &Space<T> {
        self.a.domain()
    }
    fn range(&self) -> &Space<T> {
        self.a.range()
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.a.evaluate(x, out)?;
        self.tmp.with(|t| {
            self.b.evaluate(x, t)?;
            self.range().axpby(self.sign, t, T::one(), out)
        })
    }
    fn is_linear(&self) -> bool {
        self.a.is_linear() && self.b.is_linear()
    }
    fn name(&self) -> String {
        let op = if self.sign > T::zero() { "+" } else { "-" };
        format!("({} {op} {})", self.a.name(), self.b.name())
    }
}

impl<T: Scalar> LinearOperator<T> for OperatorSum<T, dyn LinearOperator<T>> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        Ok(Arc::new(OperatorSum::with_sign(
            self.a.adjoint()?,
            self.b.adjoint()?,
            self.sign,
        )?))
    }
    fn norm_cache(&self) -> Option<&NormCache> {
        Some(&self.norm)
    }
}

/// A scalar multiple: `c·A` (left, x ↦ c·A(x)) or `A·c` (right, x ↦ A(c·x)).
///
/// For linear operators both are the same; for non-linear ones they differ.
pub struct ScalarMultiple<T: Scalar, P: ?Sized> {
    op: Arc<P>,
    scalar: T,
    right: bool,
    tmp: Option<Scratch<T>>,
}

impl<T: Scalar, P: ?Sized + Operator<T>> ScalarMultiple<T, P> {
    /// `c·A`.
    pub fn left(scalar: T, op: Arc<P>) -> Self {
        Self {
            op,
            scalar,
            right: false,
            tmp: None,
        }
    }

    /// `A·c`, i.e. x ↦ A(c·x).
    pub fn right(op: Arc<P>, scalar: T) -> Self {
        let tmp = Some(Scratch::new(op.domain().clone()));
        Self {
            op,
            scalar,
            right: true,
            tmp,
        }
    }
}

impl<T: Scalar, P: ?Sized + Operator<T>> Operator<T> for ScalarMultiple<T, P> {
    fn domain(&self) -> &Space<T> {
        self.op.domain()
    }
    fn range(&self) -> &Space<T> {
        self.op.range()
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        match (&self.tmp, self.right) {
            (Some(tmp), true) => tmp.with(|t| {
                self.domain().scaled(self.scalar, x, t)?;
                self.op.evaluate(t, out)
            }),
            _ => {
                self.op.evaluate(x, out)?;
                self.range().scale(self.scalar, out)
            }
        }
    }
    fn is_linear(&self) -> bool {
        self.op.is_linear()
    }
    fn name(&self) -> String {
        if self.right {
            format!("({} · {})", self.op.name(), self.scalar)
        } else {
            format!("({} · {})", self.scalar, self.op.name())
        }
    }
}

impl<T: Scalar> LinearOperator<T> for ScalarMultiple<T, dyn LinearOperator<T>> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        Ok(Arc::new(ScalarMultiple::left(
            self.scalar,
            self.op.adjoint()?,
        )))
    }
    fn norm_estimate(&self) -> Result<f64> {
        Ok(self.scalar.f64().abs() * self.op.norm_estimate()?)
    }
}

/// Operator arithmetic on shared general operators.
pub trait OperatorExt<T: Scalar> {
    /// `self ∘ right`.
    fn compose(&self, right: &Op<T>) -> Result<Op<T>>;
    /// `self + other`.
    fn plus(&self, other: &Op<T>) -> Result<Op<T>>;
    /// `self - other`.
    fn minus(&self, other: &Op<T>) -> Result<Op<T>>;
    /// `c · self` (x ↦ c·self(x)).
    fn scaled(&self, c: T) -> Op<T>;
    /// `self · c` (x ↦ self(c·x)).
    fn right_scaled(&self, c: T) -> Op<T>;
    /// `-self`.
    fn neg(&self) -> Op<T>;
}

impl<T: Scalar> OperatorExt<T> for Op<T> {
    fn compose(&self, right: &Op<T>) -> Result<Op<T>> {
        Ok(Arc::new(Composition::new(self.clone(), right.clone())?))
    }
    fn plus(&self, other: &Op<T>) -> Result<Op<T>> {
        Ok(Arc::new(OperatorSum::sum(self.clone(), other.clone())?))
    }
    fn minus(&self, other: &Op<T>) -> Result<Op<T>> {
        Ok(Arc::new(OperatorSum::difference(
            self.clone(),
            other.clone(),
        )?))
    }
    fn scaled(&self, c: T) -> Op<T> {
        Arc::new(ScalarMultiple::left(c, self.clone()))
    }
    fn right_scaled(&self, c: T) -> Op<T> {
        Arc::new(ScalarMultiple::right(self.clone(), c))
    }
    fn neg(&self) -> Op<T> {
        self.scaled(-T::one())
    }
}

/// Operator arithmetic on shared linear operators; results are linear with exact adjoints.
///
/// ```
/// use std::sync::Arc;
/// use rodl::{rn, LinOp, LinearOperatorExt, Operator, ScalingOperator};
/// let s = rn::<f64>(&[3])?;
/// let a: LinOp<f64> = Arc::new(ScalingOperator::new(s.clone(), 2.0));
/// let b: LinOp<f64> = Arc::new(ScalingOperator::new(s.clone(), 5.0));
/// let c = a.compose(&b)?.minus(&a)?.scaled(0.5); // 0.5 (2·5 − 2) = 4
/// let y = c.adjoint()?.apply(&s.one()?)?;
/// assert_eq!(y.as_slice()?, &[4.0, 4.0, 4.0]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub trait LinearOperatorExt<T: Scalar> {
    /// `self ∘ right`.
    fn compose(&self, right: &LinOp<T>) -> Result<LinOp<T>>;
    /// `self + other`.
    fn plus(&self, other: &LinOp<T>) -> Result<LinOp<T>>;
    /// `self - other`.
    fn minus(&self, other: &LinOp<T>) -> Result<LinOp<T>>;
    /// `c · self`.
    fn scaled(&self, c: T) -> LinOp<T>;
    /// `-self`.
    fn neg(&self) -> LinOp<T>;
    /// The same operator as a general [`Op`].
    fn as_op(&self) -> Op<T>;
}

impl<T: Scalar> LinearOperatorExt<T> for LinOp<T> {
    fn compose(&self, right: &LinOp<T>) -> Result<LinOp<T>> {
        Ok(Arc::new(Composition::new(self.clone(), right.clone())?))
    }
    fn plus(&self, other: &LinOp<T>) -> Result<LinOp<T>> {
        Ok(Arc::new(OperatorSum::sum(self.clone(), other.clone())?))
    }
    fn minus(&self, other: &LinOp<T>) -> Result<LinOp<T>> {
        Ok(Arc::new(OperatorSum::difference(
            self.clone(),
            other.clone(),
        )?))
    }
    fn scaled(&self, c: T) -> LinOp<T> {
        Arc::new(ScalarMultiple::left(c, self.clone()))
    }
    fn neg(&self) -> LinOp<T> {
        self.scaled(-T::one())
    }
    fn as_op(&self) -> Op<T> {
        self.clone()
    }
}
