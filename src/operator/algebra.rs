//! Operator arithmetic: composition, sums and differences, scalar multiples.
//!
//! Each composite is generic over the kind of its parts: built from [`Op`]s it is a general
//! operator, built from [`LinOp`]s it is a linear operator whose adjoint is assembled from the
//! parts' adjoints.
//!
//! The builders ([`OperatorExt`], [`LinearOperatorExt`]) work on shared handles (`&Op`,
//! `&LinOp`) and, for linear operators, on concrete ones too: `Gradient::new(s)?.scaled(mu)?`
//! moves the gradient into a new [`LinOp`], no `Arc::new` needed.

use std::sync::Arc;

use super::{
    check_same_space, BatchedOperator, LinOp, LinearOperator, NormCache, Op, Operator,
    OperatorKind, Scratch,
};
use crate::storage::Storage;
use crate::{Element, Error, Result, Scalar, Space};

/// Errors unless the factor of a scalar multiple is finite.
fn check_factor<T: Scalar>(c: T, what: &str) -> Result<()> {
    if c.f64().is_finite() {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{what}: the factor must be finite, got {}",
            c.f64()
        )))
    }
}

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

impl<T: Scalar, P: ?Sized + OperatorKind<T>> Operator<T> for Composition<T, P> {
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
        self.left.kind_is_linear() && self.right.kind_is_linear()
    }
    fn batched(&self) -> Option<&dyn BatchedOperator<T>> {
        // Both factors batched, through a space with a batched form (a tensor space or a power
        // of one): the batch passes through a batched intermediate.
        let both = self.left.batched().is_some() && self.right.batched().is_some();
        (both && self.right.range().batch_shape(1).is_ok())
            .then_some(self as &dyn BatchedOperator<T>)
    }
    fn name(&self) -> String {
        format!("({} ∘ {})", self.left.name(), self.right.name())
    }
}

/// A zeroed element of `batch` entries of `space` as one tensor ([`Space::batch_shape`]), on
/// its device: the intermediate of a batched composition or sum.
fn batch_of<T: Scalar>(space: &Space<T>, batch: usize) -> Result<Element<T>> {
    let shape = space.batch_shape(batch)?;
    Ok(Element::tensor(Storage::full(
        space.device(),
        &shape,
        T::zero(),
    )?))
}

/// Errors unless `batch` is 1 to `max` entries (`name`: the operator's).
fn check_batch_size(name: &str, batch: usize, max: usize) -> Result<()> {
    if batch == 0 || batch > max {
        return Err(Error::invalid(format!(
            "{name}: a batch of {batch} (1 to {max} in one pass)"
        )));
    }
    Ok(())
}

/// The batched forms of two operators, or the error of a form that is missing.
fn both_batched<'a, T: Scalar, P: ?Sized + OperatorKind<T>>(
    a: &'a P,
    b: &'a P,
) -> Result<(&'a dyn BatchedOperator<T>, &'a dyn BatchedOperator<T>)> {
    let form = |p: &'a P| {
        p.batched()
            .ok_or_else(|| Error::Unsupported(format!("{} has no batched form", p.name())))
    };
    Ok((form(a)?, form(b)?))
}

impl<T: Scalar, P: ?Sized + OperatorKind<T>> BatchedOperator<T> for Composition<T, P> {
    fn max_batch(&self) -> usize {
        both_batched(&*self.left, &*self.right).map_or(1, |(l, r)| l.max_batch().min(r.max_batch()))
    }
    fn apply_batch(&self, x: &Element<T>, out: &mut Element<T>, batch: usize) -> Result<()> {
        let (l, r) = both_batched(&*self.left, &*self.right)?;
        check_batch_size(&self.name(), batch, self.max_batch())?;
        let mut t = batch_of(self.right.range(), batch)?;
        r.apply_batch(x, &mut t, batch)?;
        l.apply_batch(&t, out, batch)
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

impl<T: Scalar, P: ?Sized + OperatorKind<T>> Operator<T> for OperatorSum<T, P> {
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
        self.a.kind_is_linear() && self.b.kind_is_linear()
    }
    fn batched(&self) -> Option<&dyn BatchedOperator<T>> {
        let both = self.a.batched().is_some() && self.b.batched().is_some();
        (both && self.range().batch_shape(1).is_ok()).then_some(self as &dyn BatchedOperator<T>)
    }
    fn name(&self) -> String {
        let op = if self.sign > T::zero() { "+" } else { "-" };
        format!("({} {op} {})", self.a.name(), self.b.name())
    }
}

impl<T: Scalar, P: ?Sized + OperatorKind<T>> BatchedOperator<T> for OperatorSum<T, P> {
    fn max_batch(&self) -> usize {
        both_batched(&*self.a, &*self.b).map_or(1, |(a, b)| a.max_batch().min(b.max_batch()))
    }
    fn apply_batch(&self, x: &Element<T>, out: &mut Element<T>, batch: usize) -> Result<()> {
        let (a, b) = both_batched(&*self.a, &*self.b)?;
        check_batch_size(&self.name(), batch, self.max_batch())?;
        a.apply_batch(x, out, batch)?;
        let mut t = batch_of(self.range(), batch)?;
        b.apply_batch(x, &mut t, batch)?;
        out.storage_mut("operator sum: the batch")?.axpby(
            self.sign,
            t.storage("operator sum: the batch")?,
            T::one(),
        )
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
    /// `c·A`; errors unless `c` is finite.
    pub fn left(scalar: T, op: Arc<P>) -> Result<Self> {
        check_factor(scalar, "scalar multiple")?;
        Ok(Self {
            op,
            scalar,
            right: false,
            tmp: None,
        })
    }

    /// `A·c`, i.e. x ↦ A(c·x); errors unless `c` is finite.
    pub fn right(op: Arc<P>, scalar: T) -> Result<Self> {
        check_factor(scalar, "scalar multiple")?;
        let tmp = Some(Scratch::new(op.domain().clone()));
        Ok(Self {
            op,
            scalar,
            right: true,
            tmp,
        })
    }
}

impl<T: Scalar, P: ?Sized + OperatorKind<T>> Operator<T> for ScalarMultiple<T, P> {
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
        self.op.kind_is_linear()
    }
    fn batched(&self) -> Option<&dyn BatchedOperator<T>> {
        // c·A(x) = A(c·x) for a linear A; the batched form scales the output.
        let same = !self.right || self.op.kind_is_linear();
        (same && self.op.batched().is_some()).then_some(self as &dyn BatchedOperator<T>)
    }
    fn name(&self) -> String {
        if self.right {
            format!("({} · {})", self.op.name(), self.scalar)
        } else {
            format!("({} · {})", self.scalar, self.op.name())
        }
    }
}

impl<T: Scalar, P: ?Sized + OperatorKind<T>> BatchedOperator<T> for ScalarMultiple<T, P> {
    fn max_batch(&self) -> usize {
        self.op.batched().map_or(1, |b| b.max_batch())
    }
    fn apply_batch(&self, x: &Element<T>, out: &mut Element<T>, batch: usize) -> Result<()> {
        let inner = self
            .op
            .batched()
            .ok_or_else(|| Error::Unsupported(format!("{} has no batched form", self.op.name())))?;
        inner.apply_batch(x, out, batch)?;
        out.storage_mut("scalar multiple: the batch")?
            .scale_inplace(self.scalar)
    }
}

impl<T: Scalar> LinearOperator<T> for ScalarMultiple<T, dyn LinearOperator<T>> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        Ok(Arc::new(ScalarMultiple::left(
            self.scalar,
            self.op.adjoint()?,
        )?))
    }
    fn norm_estimate(&self) -> Result<f64> {
        Ok(self.scalar.f64().abs() * self.op.norm_estimate()?)
    }
    fn norm_estimate_with(&self, max_iter: usize, rtol: f64) -> Result<f64> {
        Ok(self.scalar.f64().abs() * self.op.norm_estimate_with(max_iter, rtol)?)
    }
}

/// Operator arithmetic on shared general operators.
///
/// Implemented for [`Op`] (the methods borrow it). A concrete linear operator gets the same
/// methods from [`LinearOperatorExt`], with a linear result; a concrete non-linear one becomes
/// an [`Op`] with `Arc::new(op) as Op<T>`.
pub trait OperatorExt<T: Scalar> {
    /// `self ∘ right`.
    fn compose(&self, right: &Op<T>) -> Result<Op<T>>;
    /// `self + other`.
    fn plus(&self, other: &Op<T>) -> Result<Op<T>>;
    /// `self - other`.
    fn minus(&self, other: &Op<T>) -> Result<Op<T>>;
    /// `c · self` (x ↦ c·self(x)); errors unless `c` is finite.
    fn scaled(&self, c: T) -> Result<Op<T>>;
    /// `self · c` (x ↦ self(c·x)); errors unless `c` is finite.
    fn right_scaled(&self, c: T) -> Result<Op<T>>;
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
    fn scaled(&self, c: T) -> Result<Op<T>> {
        Ok(Arc::new(ScalarMultiple::left(c, self.clone())?))
    }
    fn right_scaled(&self, c: T) -> Result<Op<T>> {
        Ok(Arc::new(ScalarMultiple::right(self.clone(), c)?))
    }
    fn neg(&self) -> Op<T> {
        Arc::new(ScalarMultiple {
            op: self.clone(),
            scalar: -T::one(),
            right: false,
            tmp: None,
        })
    }
}

/// How the receiver of an algebra method ([`LinearOperatorExt`],
/// [`FunctionalExt`](crate::solvers::functional::FunctionalExt)) is held. A type parameter that
/// is always inferred; user code never names it.
pub mod receiver {
    /// A concrete operator or functional, moved into the result.
    #[derive(Debug)]
    pub enum Owned {}
    /// A shared handle (`&LinOp<T>`, `&Func<T>`), whose reference count the result shares.
    #[derive(Debug)]
    pub enum Shared {}
}

/// Operator arithmetic on linear operators; results are [`LinOp`]s with exact adjoints.
///
/// Implemented for concrete linear operators, which move into the result
/// (`Gradient::new(s)?.scaled(mu)?`), and for shared ones, `&LinOp<T>`, which are cloned
/// (`grad.compose(&a)?` with `grad: LinOp<T>` leaves `grad` usable). The second parameter,
/// [`receiver::Owned`] or [`receiver::Shared`], tells the two apart and is always inferred;
/// operands can be of either kind too.
///
/// ```
/// use std::sync::Arc;
/// use rodl::{rn, LinOp, LinearOperatorExt, Operator, ScalingOperator};
/// let s = rn::<f64>(&[3])?;
/// let a: LinOp<f64> = Arc::new(ScalingOperator::new(s.clone(), 2.0));
/// let c = ScalingOperator::new(s.clone(), 5.0) // a concrete operator …
///     .compose(&a)? // … composed with a shared one
///     .minus(&a)?
///     .scaled(0.5)?; // 0.5 (5·2 − 2) = 4
/// let y = c.adjoint()?.apply(&s.one()?)?;
/// assert_eq!(y.as_slice()?, &[4.0, 4.0, 4.0]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub trait LinearOperatorExt<T: Scalar, K = receiver::Shared>: Sized {
    /// The operator as a shared [`LinOp`] (moved into an `Arc`, or the handle cloned).
    fn into_linop(self) -> LinOp<T>;

    /// `self ∘ right`.
    fn compose<K2>(self, right: impl IntoLinOp<T, K2>) -> Result<LinOp<T>> {
        Ok(Arc::new(Composition::new(
            self.into_linop(),
            right.into_shared_linop(),
        )?))
    }
    /// `self + other`.
    fn plus<K2>(self, other: impl IntoLinOp<T, K2>) -> Result<LinOp<T>> {
        Ok(Arc::new(OperatorSum::sum(
            self.into_linop(),
            other.into_shared_linop(),
        )?))
    }
    /// `self - other`.
    fn minus<K2>(self, other: impl IntoLinOp<T, K2>) -> Result<LinOp<T>> {
        Ok(Arc::new(OperatorSum::difference(
            self.into_linop(),
            other.into_shared_linop(),
        )?))
    }
    /// `c · self`; errors unless `c` is finite.
    fn scaled(self, c: T) -> Result<LinOp<T>> {
        Ok(Arc::new(ScalarMultiple::left(c, self.into_linop())?))
    }
    /// `-self`.
    fn neg(self) -> LinOp<T> {
        Arc::new(ScalarMultiple {
            op: self.into_linop(),
            scalar: -T::one(),
            right: false,
            tmp: None,
        })
    }
    /// The same operator as a general [`Op`], whose [`Operator::is_linear`] is `true`.
    // The name predates the owned receivers; on a `&LinOp` it borrows, as `as_*` suggests.
    #[allow(clippy::wrong_self_convention)]
    fn as_op(self) -> Op<T> {
        Arc::new(AsGeneral(self.into_linop()))
    }
}

/// Anything that is or holds a linear operator, taken by value and kept as a [`LinOp`]: a
/// concrete linear operator (moved into an `Arc`), a [`LinOp`] or an `Arc<Op>` of a concrete
/// one (moved), or a reference to either (its reference count shared). What the algebra's operands
/// ([`LinearOperatorExt::compose`], …), [`TvProblem::new`](crate::solvers::tv::TvProblem::new)
/// and [`FunctionalExt::compose`](crate::solvers::functional::FunctionalExt::compose) take;
/// `K` ([`receiver::Owned`] or [`receiver::Shared`]) is always inferred.
///
/// A borrowed concrete operator (`&op`) is none of these — the result must keep the operator,
/// and rodl never clones one: pass it by value, or share it first (`let op = op.into_linop();`)
/// and pass `&op` as often as needed.
///
/// ```
/// use rodl::{rn, IntoLinOp, LinOp, LinearOperatorExt, Operator, ScalingOperator};
/// fn keep<K>(op: impl IntoLinOp<f64, K>) -> LinOp<f64> {
///     op.into_shared_linop()
/// }
/// let s = rn::<f64>(&[2])?;
/// let two: LinOp<f64> = keep(ScalingOperator::new(s.clone(), 2.0)); // concrete, moved
/// let again = keep(&two); // &LinOp, shared
/// let sum = two.plus(keep(again))?; // LinOp by value, moved
/// assert_eq!(sum.apply(&s.one()?)?.as_slice()?, &[4.0, 4.0]);
/// # Ok::<(), rodl::Error>(())
/// ```
///
/// A borrowed concrete operator is refused ("`&ScalingOperator<f64>` cannot be kept as a linear
/// operator on `f64`", with the note above):
///
/// ```compile_fail
/// use rodl::{rn, LinearOperatorExt, ScalingOperator};
/// let s = rn::<f64>(&[2])?;
/// let two = ScalingOperator::new(s.clone(), 2.0);
/// let sum = ScalingOperator::new(s, 1.0).plus(&two)?; // `two` (by value) or `&two.into_linop()`
/// # Ok::<(), rodl::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be kept as a linear operator on `{T}`",
    label = "expected a linear operator by value, a `LinOp<{T}>` or a `&LinOp<{T}>`",
    note = "a borrowed concrete operator cannot be kept: pass it by value, or share it first (`let op = op.into_linop();`) and pass `&op`"
)]
pub trait IntoLinOp<T: Scalar, K = receiver::Shared> {
    /// The operator as a [`LinOp`].
    fn into_shared_linop(self) -> LinOp<T>;
}

impl<T: Scalar, O: LinearOperator<T> + 'static> IntoLinOp<T, receiver::Owned> for O {
    fn into_shared_linop(self) -> LinOp<T> {
        Arc::new(self)
    }
}

impl<T: Scalar> IntoLinOp<T, receiver::Shared> for &LinOp<T> {
    fn into_shared_linop(self) -> LinOp<T> {
        self.clone()
    }
}

impl<T: Scalar> IntoLinOp<T, receiver::Shared> for LinOp<T> {
    fn into_shared_linop(self) -> LinOp<T> {
        self
    }
}

impl<T: Scalar, O: LinearOperator<T> + 'static> IntoLinOp<T, receiver::Shared> for Arc<O> {
    fn into_shared_linop(self) -> LinOp<T> {
        self
    }
}

impl<T: Scalar, O: LinearOperator<T> + 'static> IntoLinOp<T, receiver::Shared> for &Arc<O> {
    fn into_shared_linop(self) -> LinOp<T> {
        self.clone()
    }
}

impl<T: Scalar, O: LinearOperator<T> + 'static> LinearOperatorExt<T, receiver::Owned> for O {
    fn into_linop(self) -> LinOp<T> {
        Arc::new(self)
    }
}

impl<T: Scalar> LinearOperatorExt<T, receiver::Shared> for &LinOp<T> {
    fn into_linop(self) -> LinOp<T> {
        self.clone()
    }
}

/// A linear operator seen as a general one: forwards everything, and says it is linear.
struct AsGeneral<T: Scalar>(LinOp<T>);

impl<T: Scalar> Operator<T> for AsGeneral<T> {
    fn domain(&self) -> &Space<T> {
        self.0.domain()
    }
    fn range(&self) -> &Space<T> {
        self.0.range()
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.0.evaluate(x, out)
    }
    fn is_linear(&self) -> bool {
        true
    }
    fn name(&self) -> String {
        self.0.name()
    }
    fn apply_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.0.apply_into(x, out)
    }
}
