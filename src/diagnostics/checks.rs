//! Randomised adjointness and linearity checks.

use rand::{Rng, SeedableRng};

use crate::operator::check_same_space;
use crate::{AsLinearOperator, AsOperator, Error, Result, Scalar};

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
/// ‖A‖ is [`LinearOperator::norm_estimate`](crate::LinearOperator::norm_estimate): unless the operator knows or has cached its norm,
/// that is up to 100 power iterations (each one forward and one adjoint application) before the
/// `trials` pairs (one of each per pair). For a large operator give a known norm, or a cheaper
/// estimate, to [`check_adjoint_with`].
///
/// Errors with [`Error::SpaceMismatch`] when the adjoint's domain is not the operator's range or
/// its range not the operator's domain. Any [`LinearOperator`](crate::LinearOperator) is accepted, whatever its
/// [`Operator::is_linear`](crate::Operator::is_linear) says: implementing the trait is what makes an operator linear.
///
/// ```
/// use rodl::{check_adjoint, uniform_discr, Gradient};
/// let s = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 2.0], &[5, 7])?;
/// let report = check_adjoint(&Gradient::new(s)?, 5, 42)?;
/// assert!(report.max_rel_error < 1e-13);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn check_adjoint<T: Scalar, A: AsLinearOperator<T> + ?Sized>(
    op: &A,
    trials: usize,
    seed: u64,
) -> Result<AdjointReport> {
    check_adjoint_with(op, trials, seed, None)
}

/// [`check_adjoint`] with the operator norm used for the scaling given by the caller: `Some(n)`
/// uses `n` (a known norm, or an estimate from
/// [`LinearOperator::norm_estimate_with`](crate::LinearOperator::norm_estimate_with)) and costs only the `trials` forward and adjoint
/// applications; `None` estimates it as [`check_adjoint`] does.
///
/// Errors with [`Error::InvalidArgument`] unless a given norm is finite and positive.
///
/// ```
/// use rodl::diagnostics::check_adjoint_with;
/// use rodl::{uniform_discr, Gradient};
/// let s = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[8, 8])?;
/// // ‖∇‖ ≤ 2√d / h for forward differences with zero padding (d = 2, h = 1/8)
/// let bound = 2.0 * 2f64.sqrt() * 8.0;
/// let report = check_adjoint_with(&Gradient::new(s)?, 3, 1, Some(bound))?;
/// assert_eq!(report.opnorm, bound);
/// assert!(report.max_rel_error < 1e-13);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn check_adjoint_with<T: Scalar, A: AsLinearOperator<T> + ?Sized>(
    op: &A,
    trials: usize,
    seed: u64,
    opnorm: Option<f64>,
) -> Result<AdjointReport> {
    let op = op.as_linear();
    if let Some(n) = opnorm {
        if !(n.is_finite() && n > 0.0) {
            return Err(Error::invalid(format!(
                "check_adjoint_with: the operator norm must be finite and positive, got {n}"
            )));
        }
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
    let opnorm = match opnorm {
        Some(n) => n,
        None => op.norm_estimate()?,
    };
    // One stream for each space: a distributed operator whose domain is replicated (split by
    // views) then draws the same `x` on every rank, whatever the sizes of the ranks' shares of
    // the range (one stream for both made trial 2's `x` differ between the ranks).
    let mut rng_x = rand::rngs::StdRng::seed_from_u64(seed);
    let mut rng_y = rand::rngs::StdRng::seed_from_u64(seed ^ 0x9E37_79B9_7F4A_7C15);
    let (dom, ran) = (op.domain(), op.range());
    let mut ax = ran.zero()?;
    let mut aty = dom.zero()?;
    let mut worst = 0.0f64;
    for _ in 0..trials.max(1) {
        let x = dom.random_normal(&mut rng_x)?;
        let y = ran.random_normal(&mut rng_y)?;
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
pub fn check_linearity<T: Scalar, A: AsOperator<T> + ?Sized>(
    op: &A,
    trials: usize,
    seed: u64,
) -> Result<f64> {
    let op = op.as_operator();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    // The scalars from a stream of their own: the same on every rank of a distributed
    // operator, whatever the sizes of the ranks' shares of the domain.
    let mut rng_ab = rand::rngs::StdRng::seed_from_u64(seed ^ 0x9E37_79B9_7F4A_7C15);
    let (dom, ran) = (op.domain(), op.range());
    let mut z = dom.zero()?;
    let mut worst = 0.0f64;
    for _ in 0..trials.max(1) {
        let x = dom.random_normal(&mut rng)?;
        let y = dom.random_normal(&mut rng)?;
        let a = T::of(rng_ab.gen_range(-2.0..2.0));
        let b = T::of(rng_ab.gen_range(-2.0..2.0));
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
