//! What an iterative solver returns: how many iterations it did, the final residual where it
//! has one, and why it stopped.

/// Why an iterative solver stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// It did the number of iterations it was asked for (also when that number is 0).
    MaxIterations,
    /// The solver's own residual vanished: the iterate solves the problem (to rounding).
    Converged,
    /// The callback answered [`Control::Stop`](crate::solvers::Control::Stop).
    CallbackStopped,
    /// A step could not be taken (e.g. a conjugate-gradient direction with zero curvature while
    /// the residual is not zero); the iterate is the last one computed.
    Breakdown,
}

/// The outcome of an iterative solver (the iterate itself is updated in place).
///
/// ```
/// use rodl::solvers::iterative::{cgls, StopReason};
/// use rodl::{rn, ScalingOperator};
/// let s = rn::<f64>(&[3])?;
/// let a = ScalingOperator::new(s.clone(), 2.0);
/// let mut x = s.zero()?;
/// let info = cgls(&a, &mut x, &s.one()?, 10, &mut ())?;
/// // one singular value: CGLS is exact after one iteration and stops there
/// assert_eq!((info.iterations, info.stop), (1, StopReason::Converged));
/// assert_eq!(info.residual, Some(0.0));
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct SolverInfo {
    /// The number of iterations done.
    pub iterations: usize,
    /// The norm of the solver's residual at the final iterate, for the solvers that have it
    /// for free (CG, CGLS, Landweber, SIRT: `‖b − A x‖`); `None` for the others, or when no
    /// iteration was done.
    pub residual: Option<f64>,
    /// Why the solver stopped.
    pub stop: StopReason,
}

impl SolverInfo {
    /// `iterations` done, the final `residual`, stopped for `stop`.
    pub(crate) fn new(iterations: usize, residual: Option<f64>, stop: StopReason) -> Self {
        Self {
            iterations,
            residual,
            stop,
        }
    }

    /// The usual end of a loop over `niter` iterations: `MaxIterations`, or `CallbackStopped`
    /// when the callback asked to stop after iteration `k`.
    pub(crate) fn after(k: usize, stopped: bool, residual: Option<f64>) -> Self {
        let stop = if stopped {
            StopReason::CallbackStopped
        } else {
            StopReason::MaxIterations
        };
        Self::new(k, residual, stop)
    }

    /// No iteration asked for.
    pub(crate) fn none() -> Self {
        Self::new(0, None, StopReason::MaxIterations)
    }
}
