//! A callback that keeps copies of the iterates.

use super::{Callback, Control, IterationInfo};
use crate::{Element, Error, Result, Scalar};

/// Keeps a copy of every `k`-th iterate, on the iterate's device or, with
/// [`StoreIterates::on_host`], copied to host memory.
///
/// ```
/// use rodl::solvers::callback::{Callback, IterationInfo, StoreIterates};
/// let s = rodl::rn::<f64>(&[2])?;
/// let mut store = StoreIterates::new().every(2)?;
/// for k in 1..=5 {
///     let x = s.full(k as f64)?;
///     store.call(&x, &IterationInfo { iteration: k, ..Default::default() })?;
/// }
/// assert_eq!(store.iterations(), &[2, 4]);
/// assert_eq!(store.iterates()[1].as_slice()?, &[4.0, 4.0]);
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Debug)]
pub struct StoreIterates<T: Scalar> {
    every: usize,
    to_host: bool,
    iterations: Vec<usize>,
    iterates: Vec<Element<T>>,
}

impl<T: Scalar> Default for StoreIterates<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Scalar> StoreIterates<T> {
    /// Stores every iterate, on its own device.
    pub fn new() -> Self {
        Self {
            every: 1,
            to_host: false,
            iterations: Vec::new(),
            iterates: Vec::new(),
        }
    }

    /// Stores only iterations that are multiples of `k` (`k ≥ 1`).
    pub fn every(mut self, k: usize) -> Result<Self> {
        if k == 0 {
            return Err(Error::invalid("StoreIterates::every: k must be at least 1"));
        }
        self.every = k;
        Ok(self)
    }

    /// Whether to copy the iterates to host memory (an explicit device → host transfer per
    /// stored iterate) instead of keeping them on their device.
    pub fn on_host(mut self, to_host: bool) -> Self {
        self.to_host = to_host;
        self
    }

    /// The stored iterates, oldest first.
    pub fn iterates(&self) -> &[Element<T>] {
        &self.iterates
    }

    /// The iteration number of each stored iterate.
    pub fn iterations(&self) -> &[usize] {
        &self.iterations
    }

    /// Number of stored iterates.
    pub fn len(&self) -> usize {
        self.iterates.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.iterates.is_empty()
    }

    /// Consumes the callback and returns the stored iterates.
    pub fn into_iterates(self) -> Vec<Element<T>> {
        self.iterates
    }
}

impl<T: Scalar> Callback<T> for StoreIterates<T> {
    fn call(&mut self, x: &Element<T>, info: &IterationInfo) -> Result<Control> {
        if info.iteration % self.every == 0 {
            let copy = if self.to_host {
                x.to_host()?
            } else {
                x.try_clone()?
            };
            self.iterates.push(copy);
            self.iterations.push(info.iteration);
        }
        Ok(Control::Continue)
    }
}
