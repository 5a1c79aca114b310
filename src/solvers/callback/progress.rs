//! A terminal progress bar (indicatif; behind the `progress` feature), with a plain-text
//! fallback for logs.

use std::io::{IsTerminal, Write};

use super::{Callback, Control, IterationInfo};
use crate::{Element, Result, Scalar};

/// A progress bar over the solver's iterations, drawn on standard error, showing the latest
/// residual or objective. The bar is left in place when the solver finishes or stops early.
///
/// **When standard error is not a terminal** (output redirected to a file or a pipe, a CI log,
/// a batch job) [`ProgressBar::new`] draws nothing at all. For logs, use
/// [`ProgressBar::with_log_fallback`]: the bar on a terminal, otherwise a plain line every few
/// iterations; or [`ProgressBar::lines`] to always write plain lines to a writer of your
/// choice.
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
    lines: Option<Lines>,
}

/// Plain progress lines, one every `every` iterations and one at the last.
struct Lines {
    every: usize,
    out: Box<dyn Write + Send>,
}

const TEMPLATE: &str = "{bar:40} {pos}/{len} [{elapsed_precise} < {eta}] {msg}";

impl ProgressBar {
    /// A bar for `total` iterations on standard error; draws nothing when standard error is not
    /// a terminal.
    pub fn new(total: usize) -> Self {
        Self::wrap(indicatif::ProgressBar::new(total as u64))
    }

    /// A bar for `total` iterations that draws nothing (for tests and batch jobs).
    pub fn hidden(total: usize) -> Self {
        let bar = indicatif::ProgressBar::hidden();
        bar.set_length(total as u64);
        Self::wrap(bar)
    }

    /// A bar on standard error when it is a terminal; otherwise plain lines on standard error
    /// (as [`ProgressBar::lines`]), one every `every` iterations and one at the last.
    pub fn with_log_fallback(total: usize, every: usize) -> Self {
        if std::io::stderr().is_terminal() {
            Self::new(total)
        } else {
            Self::lines(total, every, std::io::stderr())
        }
    }

    /// Plain-text progress for logs, whatever the output is: a line such as
    /// `iteration 20/100 residual 1.000e-1` written to `out` every `every` iterations (`every`
    /// is at least one) and at the last one; no bar is drawn. Write errors are ignored
    /// (progress output never stops a solver).
    ///
    /// ```
    /// use std::io::Write;
    /// use std::sync::{Arc, Mutex};
    /// use rodl::solvers::callback::{Callback, IterationInfo, ProgressBar};
    ///
    /// /// A writer into a shared buffer.
    /// #[derive(Clone, Default)]
    /// struct Log(Arc<Mutex<Vec<u8>>>);
    /// impl Write for Log {
    ///     fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
    ///         self.0.lock().unwrap().extend_from_slice(b);
    ///         Ok(b.len())
    ///     }
    ///     fn flush(&mut self) -> std::io::Result<()> { Ok(()) }
    /// }
    ///
    /// let log = Log::default();
    /// let mut bar = ProgressBar::lines(4, 2, log.clone());
    /// let x = rodl::rn::<f32>(&[1])?.zero()?;
    /// for k in 1..=4 {
    ///     let info = IterationInfo { iteration: k, objective: Some(k as f64), residual: None };
    ///     bar.call(&x, &info)?;
    /// }
    /// let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    /// assert_eq!(text, "iteration 2/4 objective 2.000e0\niteration 4/4 objective 4.000e0\n");
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn lines(total: usize, every: usize, out: impl Write + Send + 'static) -> Self {
        let mut bar = Self::hidden(total);
        bar.lines = Some(Lines {
            every: every.max(1),
            out: Box::new(out),
        });
        bar
    }

    fn wrap(bar: indicatif::ProgressBar) -> Self {
        let style = indicatif::ProgressStyle::with_template(TEMPLATE)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        let bar = bar
            .with_style(style)
            .with_finish(indicatif::ProgressFinish::AndLeave);
        Self { bar, lines: None }
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
        let last = self
            .bar
            .length()
            .is_some_and(|n| info.iteration as u64 >= n);
        if let Some(lines) = &mut self.lines {
            if last || info.iteration % lines.every == 0 {
                let total = self.bar.length().unwrap_or(0);
                let sep = if msg.is_empty() { "" } else { " " };
                let _ = writeln!(lines.out, "iteration {}/{total}{sep}{msg}", info.iteration);
                let _ = lines.out.flush();
            }
        }
        self.bar.set_message(msg);
        if last {
            self.bar.finish();
        }
        Ok(Control::Continue)
    }
}
