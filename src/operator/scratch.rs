//! A reusable temporary element held by composite operators.

use std::sync::Mutex;

use crate::{Element, Result, Scalar, Space};

/// One cached temporary element of a given space. Taking it while another call holds it
/// allocates a fresh one, so concurrent calls stay correct.
pub(crate) struct Scratch<T: Scalar> {
    space: Space<T>,
    slot: Mutex<Option<Element<T>>>,
}

impl<T: Scalar> Scratch<T> {
    pub(crate) fn new(space: Space<T>) -> Self {
        Self {
            space,
            slot: Mutex::new(None),
        }
    }

    /// Runs `f` with a temporary of the space (contents unspecified on entry).
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Element<T>) -> Result<R>) -> Result<R> {
        let cached = self.slot.lock().ok().and_then(|mut g| g.take());
        let mut tmp = match cached {
            Some(t) => t,
            // Kept across calls: made on rodl's own streams.
            None => crate::backend::lasting(|| self.space.zero())?,
        };
        let r = f(&mut tmp);
        if let Ok(mut g) = self.slot.lock() {
            *g = Some(tmp);
        }
        r
    }
}
