//! A callback that records what the solver reports.

use super::{Callback, Control, IterationInfo};
use crate::{Element, Result, Scalar};

/// Records the [`IterationInfo`] of every iteration: the residual and objective history.
///
/// ```
/// use rodl::solvers::callback::{Callback, IterationInfo, ResidualHistory};
/// let mut h = ResidualHistory::new();
/// let x = rodl::rn::<f64>(&[1])?.zero()?;
/// h.call(&x, &IterationInfo { iteration: 1, residual: Some(0.5), objective: None })?;
/// h.call(&x, &IterationInfo { iteration: 2, residual: Some(0.25), objective: None })?;
/// assert_eq!(h.residuals(), vec![0.5, 0.25]);
/// assert!(h.objectives().is_empty());
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct ResidualHistory {
    entries: Vec<IterationInfo>,
}

impl ResidualHistory {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Everything reported, one entry per call.
    pub fn entries(&self) -> &[IterationInfo] {
        &self.entries
    }

    /// Number of calls recorded.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The iteration numbers recorded.
    pub fn iterations(&self) -> Vec<usize> {
        self.entries.iter().map(|e| e.iteration).collect()
    }

    /// The residuals reported, in order (iterations without one are skipped).
    pub fn residuals(&self) -> Vec<f64> {
        self.entries.iter().filter_map(|e| e.residual).collect()
    }

    /// The objective values reported, in order (iterations without one are skipped).
    pub fn objectives(&self) -> Vec<f64> {
        self.entries.iter().filter_map(|e| e.objective).collect()
    }

    /// Forgets everything recorded.
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

impl<T: Scalar> Callback<T> for ResidualHistory {
    fn call(&mut self, _x: &Element<T>, info: &IterationInfo) -> Result<Control> {
        self.entries.push(info.clone());
        Ok(Control::Continue)
    }
}
