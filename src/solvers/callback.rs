//! Callbacks called by the iterative solvers after every iteration.

use crate::{Element, Result, Scalar};

/// What a solver reports to its callback after an iteration.
#[derive(Clone, Debug, Default)]
pub struct IterationInfo {
    /// Number of iterations done so far (1 after the first iteration).
    pub iteration: usize,
    /// Objective value at the current iterate, when the solver knows it cheaply.
    pub objective: Option<f64>,
    /// Norm of the solver's residual (e.g. ‖Ax − b‖ for CGLS), when the solver has it.
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

/// Called by every solver after each iteration with the current iterate.
///
/// `()` is the callback that does nothing.
pub trait Callback<T: Scalar> {
    /// Observes iterate `x` after iteration `info.iteration`.
    fn call(&mut self, x: &Element<T>, info: &IterationInfo) -> Result<Control>;
}

impl<T: Scalar> Callback<T> for () {
    fn call(&mut self, _x: &Element<T>, _info: &IterationInfo) -> Result<Control> {
        Ok(Control::Continue)
    }
}
