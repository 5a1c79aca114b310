//! Composition of callbacks: pairs, borrows and lists.

use std::fmt;
use std::marker::PhantomData;

use super::{Callback, Control, IterationInfo};
use crate::{Element, Result, Scalar};

/// Two callbacks called one after the other ([`Callback::and`]); the solver stops when either
/// answers [`Control::Stop`]. Both are always called, so a history or a printout stays complete.
pub struct And<A, B, T> {
    /// The callback called first.
    pub first: A,
    /// The callback called second.
    pub second: B,
    _t: PhantomData<fn() -> T>,
}

impl<A, B, T> And<A, B, T> {
    /// `first` followed by `second`.
    pub fn new(first: A, second: B) -> Self {
        Self {
            first,
            second,
            _t: PhantomData,
        }
    }

    /// The two callbacks back.
    pub fn into_parts(self) -> (A, B) {
        (self.first, self.second)
    }
}

impl<A: fmt::Debug, B: fmt::Debug, T> fmt::Debug for And<A, B, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("And")
            .field("first", &self.first)
            .field("second", &self.second)
            .finish()
    }
}

impl<T: Scalar, A: Callback<T>, B: Callback<T>> Callback<T> for And<A, B, T> {
    fn call(&mut self, x: &Element<T>, info: &IterationInfo) -> Result<Control> {
        let a = self.first.call(x, info)?;
        let b = self.second.call(x, info)?;
        Ok(a.or_stop(b))
    }
}

/// A borrowed callback ([`Callback::by_ref`]): composes like an owned one while the original
/// stays with the caller.
pub struct ByRef<'a, T: Scalar> {
    inner: &'a mut dyn Callback<T>,
}

impl<'a, T: Scalar> ByRef<'a, T> {
    /// Forwards to `inner`.
    pub fn new(inner: &'a mut dyn Callback<T>) -> Self {
        Self { inner }
    }
}

impl<T: Scalar> Callback<T> for ByRef<'_, T> {
    fn call(&mut self, x: &Element<T>, info: &IterationInfo) -> Result<Control> {
        self.inner.call(x, info)
    }
}

/// Any number of callbacks, called in order; the solver stops when any answers
/// [`Control::Stop`] (all are still called).
///
/// ```
/// use rodl::solvers::callback::{Callback, CallbackList, Control, IterationInfo, ResidualHistory};
/// use rodl::{rn, Element, Result};
/// let mut history = ResidualHistory::new();
/// let mut calls = 0;
/// {
///     let mut list = CallbackList::new()
///         .with(history.by_ref())
///         .with(|_x: &Element<f32>, _i: &IterationInfo| -> Result<Control> {
///             calls += 1;
///             Ok(Control::Continue)
///         });
///     let x = rn::<f32>(&[3])?.zero()?;
///     list.call(&x, &IterationInfo { iteration: 1, ..Default::default() })?;
///     assert_eq!(list.len(), 2);
/// }
/// assert_eq!((history.len(), calls), (1, 1));
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct CallbackList<'a, T: Scalar> {
    items: Vec<Box<dyn Callback<T> + 'a>>,
}

impl<'a, T: Scalar> CallbackList<'a, T> {
    /// An empty list (a callback that does nothing).
    pub fn new() -> Self {
        Self { items: Vec::new() }
    }

    /// Appends a callback.
    pub fn push(&mut self, callback: impl Callback<T> + 'a) -> &mut Self {
        self.items.push(Box::new(callback));
        self
    }

    /// The list with `callback` appended.
    pub fn with(mut self, callback: impl Callback<T> + 'a) -> Self {
        self.push(callback);
        self
    }

    /// Number of callbacks.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

impl<T: Scalar> Default for CallbackList<'_, T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Scalar> Callback<T> for CallbackList<'_, T> {
    fn call(&mut self, x: &Element<T>, info: &IterationInfo) -> Result<Control> {
        let mut control = Control::Continue;
        for c in &mut self.items {
            control = control.or_stop(c.call(x, info)?);
        }
        Ok(control)
    }
}
