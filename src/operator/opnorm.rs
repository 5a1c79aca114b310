//! Operator-norm estimation by power iteration.

use rand::SeedableRng;

use super::{LinearOperator, Operator};
use crate::{Error, Result, Scalar};

/// Estimates ‖A‖ by power iteration on `A*A`, starting from a seeded random vector.
///
/// Stops after `max_iter` iterations or when the estimate changes by less than `rtol`
/// (relative). The estimate approaches ‖A‖ from below.
pub fn power_method_opnorm<T: Scalar, A, B>(
    op: &A,
    adjoint: &B,
    max_iter: usize,
    rtol: f64,
    seed: u64,
) -> Result<f64>
where
    A: LinearOperator<T> + ?Sized,
    B: Operator<T> + ?Sized,
{
    let dom = op.domain();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut x = dom.random_normal(&mut rng)?;
    let mut ax = op.range().zero()?;
    let mut est = 0.0f64;
    for _ in 0..max_iter.max(1) {
        let nx = dom.norm(&x)?;
        if nx == 0.0 || !nx.is_finite() {
            return if nx == 0.0 {
                Ok(0.0)
            } else {
                Err(Error::invalid("power iteration diverged"))
            };
        }
        dom.scale(T::of(1.0 / nx), &mut x)?;
        op.apply_into(&x, &mut ax)?;
        let new = op.range().norm(&ax)?;
        adjoint.apply_into(&ax, &mut x)?;
        let done = (new - est).abs() <= rtol * new;
        est = new;
        if done {
            break;
        }
    }
    Ok(est)
}
