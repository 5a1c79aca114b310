//! A callback that prints the iteration number, objective and residual.

use std::io::{self, Write};
use std::path::PathBuf;

use super::{Callback, Control, IterationInfo};
use crate::{Element, Error, Result, Scalar};

/// Prints one line every `k`-th iteration: the iteration number and, when the solver reports
/// them, the objective value and the residual. Writes to standard output unless given another
/// writer.
///
/// ```
/// use rodl::solvers::callback::{Callback, IterationInfo, PrintIteration};
/// let mut p = PrintIteration::with_writer(Vec::new()).every(2)?;
/// let x = rodl::rn::<f64>(&[1])?.zero()?;
/// for k in 1..=4 {
///     p.call(&x, &IterationInfo { iteration: k, residual: Some(1.0 / k as f64), objective: None })?;
/// }
/// let text = String::from_utf8(p.into_writer()).unwrap();
/// assert_eq!(text, "iter      2  residual 5.000000e-1\niter      4  residual 2.500000e-1\n");
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct PrintIteration<W: Write = io::Stdout> {
    writer: W,
    every: usize,
    prefix: String,
}

impl PrintIteration<io::Stdout> {
    /// Prints every iteration to standard output.
    pub fn new() -> Self {
        Self::with_writer(io::stdout())
    }
}

impl Default for PrintIteration<io::Stdout> {
    fn default() -> Self {
        Self::new()
    }
}

impl<W: Write> PrintIteration<W> {
    /// Prints every iteration to `writer`.
    pub fn with_writer(writer: W) -> Self {
        Self {
            writer,
            every: 1,
            prefix: String::new(),
        }
    }

    /// Prints only iterations that are multiples of `k` (`k ≥ 1`).
    pub fn every(mut self, k: usize) -> Result<Self> {
        if k == 0 {
            return Err(Error::invalid(
                "PrintIteration::every: k must be at least 1",
            ));
        }
        self.every = k;
        Ok(self)
    }

    /// Starts every line with `prefix` (e.g. the solver's name).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The writer.
    pub fn writer(&self) -> &W {
        &self.writer
    }

    /// Consumes the callback and returns its writer.
    pub fn into_writer(self) -> W {
        self.writer
    }

    /// The line printed for `info` (without the newline).
    pub fn format(&self, info: &IterationInfo) -> String {
        let mut line = format!("{}iter {:6}", self.prefix, info.iteration);
        if let Some(f) = info.objective {
            line.push_str(&format!("  objective {f:.6e}"));
        }
        if let Some(r) = info.residual {
            line.push_str(&format!("  residual {r:.6e}"));
        }
        line
    }
}

impl<T: Scalar, W: Write> Callback<T> for PrintIteration<W> {
    fn call(&mut self, _x: &Element<T>, info: &IterationInfo) -> Result<Control> {
        if info.iteration % self.every == 0 {
            let line = self.format(info);
            writeln!(self.writer, "{line}").map_err(|e| Error::Io {
                path: PathBuf::from("<PrintIteration output>"),
                message: e.to_string(),
            })?;
        }
        Ok(Control::Continue)
    }
}
