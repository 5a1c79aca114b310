//! A callback that stops the solver once it has converged to a tolerance.

use super::{Callback, Control, IterationInfo};
use crate::{Element, Error, Result, Scalar, Space};

/// Stops the solver when the reported residual, or the relative change of the iterate, falls
/// to a tolerance.
///
/// * [`StopAtTolerance::residual`]: stop when `info.residual ≤ tol`. It is an error to use it
///   with a solver that reports no residual.
/// * [`StopAtTolerance::relative_change`]: stop when `‖x_k − x_{k−1}‖ ≤ tol · ‖x_k‖` in the
///   given space's norm. It keeps a copy of the previous iterate (on its device, allocated at
///   the first call) and compares from the second call on.
///
/// ```
/// use rodl::solvers::callback::{Callback, Control, IterationInfo, StopAtTolerance};
/// let s = rodl::rn::<f64>(&[2])?;
/// let mut stop = StopAtTolerance::relative_change(&s, 1e-3)?;
/// let info = IterationInfo::default();
/// assert_eq!(stop.call(&s.full(1.0)?, &info)?, Control::Continue);
/// assert_eq!(stop.call(&s.full(1.1)?, &info)?, Control::Continue);
/// assert_eq!(stop.call(&s.full(1.1001)?, &info)?, Control::Stop);
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Debug)]
pub struct StopAtTolerance<T: Scalar> {
    tol: f64,
    mode: Mode<T>,
    stopped_at: Option<usize>,
}

#[derive(Debug)]
enum Mode<T: Scalar> {
    Residual,
    RelativeChange {
        space: Space<T>,
        previous: Option<Element<T>>,
    },
}

fn check_tol(tol: f64) -> Result<()> {
    if !(tol.is_finite() && tol >= 0.0) {
        return Err(Error::invalid(format!(
            "StopAtTolerance: the tolerance must be finite and non-negative, got {tol}"
        )));
    }
    Ok(())
}

impl<T: Scalar> StopAtTolerance<T> {
    /// Stops when the solver's reported residual is at most `tol`.
    pub fn residual(tol: f64) -> Result<Self> {
        check_tol(tol)?;
        Ok(Self {
            tol,
            mode: Mode::Residual,
            stopped_at: None,
        })
    }

    /// Stops when `‖x_k − x_{k−1}‖ ≤ tol · ‖x_k‖`, with the norm of `space` (the space of the
    /// iterates).
    pub fn relative_change(space: &Space<T>, tol: f64) -> Result<Self> {
        check_tol(tol)?;
        Ok(Self {
            tol,
            mode: Mode::RelativeChange {
                space: space.clone(),
                previous: None,
            },
            stopped_at: None,
        })
    }

    /// The iteration at which it answered `Stop`, if it did.
    pub fn stopped_at(&self) -> Option<usize> {
        self.stopped_at
    }
}

impl<T: Scalar> Callback<T> for StopAtTolerance<T> {
    fn call(&mut self, x: &Element<T>, info: &IterationInfo) -> Result<Control> {
        let done = match &mut self.mode {
            Mode::Residual => {
                let r = info.residual.ok_or_else(|| {
                    Error::invalid(
                        "StopAtTolerance::residual: the solver reports no residual \
                         (use StopAtTolerance::relative_change)",
                    )
                })?;
                r <= self.tol
            }
            Mode::RelativeChange { space, previous } => match previous {
                None => {
                    space.check_member(x, "StopAtTolerance")?;
                    *previous = Some(x.try_clone()?);
                    false
                }
                Some(prev) => {
                    let change = space.dist(x, prev)?;
                    let size = space.norm(x)?;
                    space.assign(x, prev)?;
                    change <= self.tol * size
                }
            },
        };
        if done {
            self.stopped_at = Some(info.iteration);
            Ok(Control::Stop)
        } else {
            Ok(Control::Continue)
        }
    }
}
