//! A terminal progress bar (indicatif; behind the `progress` feature).

use super::{Callback, Control, IterationInfo};
use crate::{Element, Result, Scalar};

/// A progress bar over the solver's iterations, drawn on standard error when it is a terminal
/// (nothing is drawn otherwise), showing the latest residual or objective. The bar is left in
/// place when the solver finishes or stops early.
///
/// ```
/// use rodl::solvers::callback::{Callback, IterationInfo, ProgressBar};
/// let mut bar = ProgressBar::hidden(10);
/// let x = rodl::rn::<f32>(&[1])?.zero()?;
/// bar.call(&x, &IterationInfo { iteration: 3, residual: Some(0.1), objective: None })?;
/// assert_eq!(bar.position(), 3);
/// assert_eq!(bar.message(), "residual 1.000e-1");
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct ProgressBar {
    bar: indicatif::ProgressBar,
}

const TEMPLATE: &str = "{bar:40} {pos}/{len} [{elapsed_precise} < {eta}] {msg}";

impl ProgressBar {
    /// A bar for `total` iterations on standard error.
    pub fn new(total: usize) -> Self {
        Self::wrap(indicatif::ProgressBar::new(total as u64))
    }

    /// A bar for `total` iterations that draws nothing (for tests and batch jobs).
    pub fn hidden(total: usize) -> Self {
        let bar = indicatif::ProgressBar::hidden();
        bar.set_length(total as u64);
        Self::wrap(bar)
    }

    fn wrap(bar: indicatif::ProgressBar) -> Self {
        let style = indicatif::ProgressStyle::with_template(TEMPLATE)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        let bar = bar
            .with_style(style)
            .with_finish(indicatif::ProgressFinish::AndLeave);
        Self { bar }
    }

    /// The last iteration shown.
    pub fn position(&self) -> u64 {
        self.bar.position()
    }

    /// The message shown after the bar.
    pub fn message(&self) -> String {
        self.bar.message()
    }

    /// The underlying indicatif bar (to restyle it, or to add it to a `MultiProgress`).
    pub fn inner(&self) -> &indicatif::ProgressBar {
        &self.bar
    }
}

impl<T: Scalar> Callback<T> for ProgressBar {
    fn call(&mut self, _x: &Element<T>, info: &IterationInfo) -> Result<Control> {
        self.bar.set_position(info.iteration as u64);
        let msg = match (info.residual, info.objective) {
            (Some(r), _) => format!("residual {r:.3e}"),
            (None, Some(f)) => format!("objective {f:.3e}"),
            (None, None) => String::new(),
        };
        self.bar.set_message(msg);
        if self
            .bar
            .length()
            .is_some_and(|n| info.iteration as u64 >= n)
        {
            self.bar.finish();
        }
        Ok(Control::Continue)
    }
}
