//! Callbacks called by the iterative solvers after every iteration.
//!
//! A callback sees the current iterate and an [`IterationInfo`] and answers [`Control`]: go on or
//! stop. Closures `FnMut(&Element<T>, &IterationInfo) -> Result<Control>` are callbacks, `()`
//! is the one that does nothing, and callbacks compose with [`Callback::and`] or a
//! [`CallbackList`]. Ready-made ones: [`PrintIteration`], [`StoreIterates`],
//! [`ResidualHistory`], [`StopAtTolerance`] and, with the `progress` feature, `ProgressBar`
//! (a terminal progress bar).
//!
//! ```
//! use rodl::solvers::callback::{Callback, Control, IterationInfo, ResidualHistory, StopAtTolerance};
//! use rodl::{rn, Element};
//! let s = rn::<f64>(&[2])?;
//! let x = s.one()?;
//! let mut history = ResidualHistory::new();
//! let mut cb = history.by_ref().and(StopAtTolerance::residual(1e-3)?);
//! for (k, r) in [1.0, 1e-2, 1e-4].into_iter().enumerate() {
//!     let info = IterationInfo { iteration: k + 1, residual: Some(r), ..Default::default() };
//!     if cb.call(&x, &info)? == Control::Stop {
//!         break;
//!     }
//! }
//! assert_eq!(history.residuals(), vec![1.0, 1e-2, 1e-4]);
//! # Ok::<(), rodl::Error>(())
//! ```

mod compose;
mod history;
mod print;
#[cfg(feature = "progress")]
mod progress;
mod store;
mod tolerance;

pub use compose::{And, ByRef, CallbackList};
pub use history::ResidualHistory;
pub use print::PrintIteration;
#[cfg(feature = "progress")]
pub use progress::ProgressBar;
pub use store::StoreIterates;
pub use tolerance::StopAtTolerance;

use crate::{Element, Result, Scalar};

/// What a solver reports to its callback after an iteration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IterationInfo {
    /// Number of iterations done so far (1 after the first iteration).
    pub iteration: usize,
    /// Objective value at the current iterate, when the solver knows it cheaply.
    pub objective: Option<f64>,
    /// Norm of the solver's residual at the current iterate (e.g. ‖b − A x‖ for CGLS), when the
    /// solver has it; each solver documents what it reports.
    pub residual: Option<f64>,
}

/// A callback's answer: go on iterating or stop early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Keep iterating.
    Continue,
    /// Stop after this iteration (the iterate stays as it is).
    Stop,
}

impl Control {
    /// `Stop` when either answer is `Stop`.
    pub fn or_stop(self, other: Control) -> Control {
        if self == Control::Stop || other == Control::Stop {
            Control::Stop
        } else {
            Control::Continue
        }
    }
}

/// Called by every solver after each iteration with the current iterate.
///
/// `()` is the callback that does nothing; closures
/// `FnMut(&Element<T>, &IterationInfo) -> Result<Control>` are callbacks. Write a closure as
/// `&mut from_fn(|x, info| …)` ([`from_fn`]): its argument types then need no annotation.
/// A bare closure `&mut |x, info| …` does not compile (rustc reports "implementation of
/// `FnOnce` is not general enough" — a closure passed as `&mut dyn Callback<T>` gets no
/// signature from the trait, so its arguments' lifetimes are not made general); without
/// `from_fn`, annotate every argument and the return type:
///
/// ```
/// use rodl::solvers::callback::{from_fn, Control};
/// use rodl::solvers::iterative::landweber;
/// use rodl::{rn, IdentityOperator};
/// let s = rn::<f64>(&[2])?;
/// let (op, b) = (IdentityOperator::new(s.clone()), s.one()?);
/// let mut x = s.zero()?;
/// let mut residuals = Vec::new();
/// landweber(&op, &mut x, &b, 5, &Default::default(), &mut from_fn(|_x, info| {
///     residuals.push(info.residual);
///     Ok(Control::Continue)
/// }))?;
/// assert_eq!(residuals.len(), 5);
/// # Ok::<(), rodl::Error>(())
/// ```
///
/// The annotated form, here called by hand through `&mut dyn Callback<T>`:
///
/// ```
/// use rodl::solvers::callback::{Callback, Control, IterationInfo};
/// use rodl::{rn, Element, Result};
/// let mut seen = Vec::new();
/// let mut cb = |_x: &Element<f64>, info: &IterationInfo| -> Result<Control> {
///     seen.push(info.iteration);
///     Ok(if info.iteration >= 2 { Control::Stop } else { Control::Continue })
/// };
/// let x = rn::<f64>(&[1])?.zero()?;
/// let dyn_cb: &mut dyn Callback<f64> = &mut cb;
/// for k in 1..=5 {
///     let info = IterationInfo { iteration: k, ..Default::default() };
///     if dyn_cb.call(&x, &info)? == Control::Stop {
///         break;
///     }
/// }
/// assert_eq!(seen, [1, 2]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub trait Callback<T: Scalar> {
    /// Observes iterate `x` after iteration `info.iteration`.
    fn call(&mut self, x: &Element<T>, info: &IterationInfo) -> Result<Control>;

    /// This callback followed by `other`: both are called every time (also when the first
    /// answers `Stop`), and the solver stops when either says so.
    fn and<C: Callback<T>>(self, other: C) -> And<Self, C, T>
    where
        Self: Sized,
    {
        And::new(self, other)
    }

    /// A callback that forwards to this one through a borrow, so that it can be composed and
    /// still be read after the solver returns.
    fn by_ref(&mut self) -> ByRef<'_, T>
    where
        Self: Sized,
    {
        ByRef::new(self)
    }
}

/// A closure as a [`Callback`], with its argument types taken from here: write
/// `&mut from_fn(|x, info| …)` where a bare closure would need `|x: &Element<T>, info:
/// &IterationInfo| -> Result<Control>` (without them rustc reports "implementation of `FnOnce`
/// is not general enough", because a closure's signature is only made general over the
/// arguments' lifetimes where a bound like this one states it).
///
/// ```
/// use rodl::solvers::callback::{from_fn, Control};
/// use rodl::solvers::iterative::cgls;
/// use rodl::{rn, IdentityOperator};
/// let space = rn::<f64>(&[3])?;
/// let op = IdentityOperator::new(space.clone());
/// let rhs = space.one()?;
/// let mut x = space.zero()?;
/// let mut seen = Vec::new();
/// cgls(&op, &mut x, &rhs, 5, &mut from_fn(|_x, info| {
///     seen.push(info.iteration);
///     Ok(Control::Continue)
/// }))?;
/// assert!(!seen.is_empty());
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn from_fn<T: Scalar, F>(f: F) -> F
where
    F: FnMut(&Element<T>, &IterationInfo) -> Result<Control>,
{
    f
}

impl<T: Scalar> Callback<T> for () {
    fn call(&mut self, _x: &Element<T>, _info: &IterationInfo) -> Result<Control> {
        Ok(Control::Continue)
    }
}

impl<T: Scalar, F> Callback<T> for F
where
    F: FnMut(&Element<T>, &IterationInfo) -> Result<Control>,
{
    fn call(&mut self, x: &Element<T>, info: &IterationInfo) -> Result<Control> {
        self(x, info)
    }
}
