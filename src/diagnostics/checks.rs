//! Randomised adjointness and linearity checks.

use rand::{Rng, SeedableRng};

use crate::operator::{check_same_space, LinearOperator, Operator};
use crate::{Error, Result, Scalar};

/// The outcome of [`check_adjoint`].
#[derive(Clone, Debug)]
pub struct AdjointReport {
    /// Largest `|⟨Ax, y⟩ − ⟨x, A*y⟩| / (‖A‖ ‖x‖ ‖y‖)` over the trials.
    pub max_rel_error: f64,
    /// The operator-norm estimate used for the scaling.
    pub opnorm: f64,
    /// Number of random pairs tried.
    pub trials: usize,
}

/// Compares `⟨Ax, y⟩` with `⟨x, A*y⟩` on `trials` pairs of standard-normal elements drawn from a
/// generator seeded with `seed`, and reports the largest error relative to `‖A‖ ‖x‖ ‖y‖`.
///
/// A correct adjoint gives a value near the rounding unit of the scalar type.
///
/// Errors with [`Error::NotLinear`] when the operator's [`Operator::is_linear`] says `false`
/// (a [`LinearOperator`] implementation that forgot to override it), and with
/// [`Error::SpaceMismatch`] when the adjoint's domain is not the operator's range or its range not
/// the operator's domain.
///
/// ```
/// use rodl::{check_adjoint, uniform_discr, Gradient};
/// let s = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 2.0], &[5, 7])?;
/// let report = check_adjoint(&Gradient::new(s)?, 5, 42)?;
/// assert!(report.max_rel_error < 1e-13);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn check_adjoint<T: Scalar, A: LinearOperator<T> + ?Sized>(
    op: &A,
    trials: usize,
    seed: u64,
) -> Result<AdjointReport> {
    if !op.is_linear() {
        return Err(Error::NotLinear(format!(
            "check_adjoint: {}::is_linear() returns false; a LinearOperator must return true",
            op.name()
        )));
    }
    let adj = op.adjoint()?;
    check_same_space(
        op.range(),
        adj.domain(),
        "check_adjoint: adjoint domain vs range",
    )?;
    check_same_space(
        op.domain(),
        adj.range(),
        "check_adjoint: adjoint range vs domain",
    )?;
    let opnorm = op.norm_estimate()?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (dom, ran) = (op.domain(), op.range());
    let mut ax = ran.zero()?;
    let mut aty = dom.zero()?;
    let mut worst = 0.0f64;
    for _ in 0..trials.max(1) {
        let x = dom.random_normal(&mut rng)?;
        let y = ran.random_normal(&mut rng)?;
        op.apply_into(&x, &mut ax)?;
        adj.apply_into(&y, &mut aty)?;
        let lhs = ran.inner(&ax, &y)?;
        let rhs = dom.inner(&x, &aty)?;
        let scale = opnorm * dom.norm(&x)? * ran.norm(&y)?;
        let err = if scale > 0.0 {
            (lhs - rhs).abs() / scale
        } else {
            (lhs - rhs).abs()
        };
        worst = worst.max(err);
    }
    Ok(AdjointReport {
        max_rel_error: worst,
        opnorm,
        trials: trials.max(1),
    })
}

/// Checks `A(a x + b y) = a A(x) + b A(y)` on `trials` random pairs and scalars and returns the
/// largest error relative to `|a| ‖Ax‖ + |b| ‖Ay‖ + ‖A(ax+by)‖`.
pub fn check_linearity<T: Scalar, A: Operator<T> + ?Sized>(
    op: &A,
    trials: usize,
    seed: u64,
) -> Result<f64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (dom, ran) = (op.domain(), op.range());
    let mut z = dom.zero()?;
    let mut worst = 0.0f64;
    for _ in 0..trials.max(1) {
        let x = dom.random_normal(&mut rng)?;
        let y = dom.random_normal(&mut rng)?;
        let a = T::of(rng.gen_range(-2.0..2.0));
        let b = T::of(rng.gen_range(-2.0..2.0));
        dom.lincomb(a, &x, b, &y, &mut z)?;
        let az = op.apply(&z)?;
        let ax = op.apply(&x)?;
        let ay = op.apply(&y)?;
        let mut comb = ran.zero()?;
        ran.lincomb(a, &ax, b, &ay, &mut comb)?;
        let scale =
            a.f64().abs() * ran.norm(&ax)? + b.f64().abs() * ran.norm(&ay)? + ran.norm(&az)?;
        let err = ran.dist(&az, &comb)?;
        worst = worst.max(if scale > 0.0 { err / scale } else { err });
    }
    Ok(worst)
}
