//! The balanced set-up of PDHG for a stack of operator blocks, `K = (μ₀ L₀; μ₁ L₁; …)`.

use std::sync::Arc;

use super::PdhgOptions;
use crate::{BroadcastOperator, Error, LinOp, LinearOperatorExt, Result, Scalar};

/// Operator blocks scaled to one norm and stacked, with PDHG steps for the stack: what
/// [`PdhgOptions::balanced`] gives.
///
/// Problems `min f(x) + Σᵢ gᵢ(Lᵢ x)` (a data term and regularisers) are solved by PDHG on
/// `K = (L₀; L₁; …)`. When the blocks' norms differ by orders of magnitude (a ray transform and
/// a gradient on fine cells, say), plain steps `τ = σ = 0.99/‖K‖` are set by the largest block
/// and PDHG crawls on the others. Scaling block `i` by `μᵢ = ‖L₀‖/‖Lᵢ‖` gives every block the
/// norm `‖L₀‖` without changing the minimiser, when `gᵢ` is replaced by `hᵢ(z) = gᵢ(z/μᵢ)` —
/// for a norm or any 1-homogeneous `gᵢ`, `hᵢ = gᵢ / μᵢ` (`g.scaled(1/μ)`).
pub struct BalancedPdhg<T: Scalar> {
    /// `K = (μ₀ L₀; μ₁ L₁; …)`, the scaled blocks broadcast from their common domain (blocks
    /// with `μᵢ = 1` are used as they are).
    pub operator: LinOp<T>,
    /// The factors `μᵢ = ‖L₀‖ / ‖Lᵢ‖` (`μ₀ = 1`).
    pub factors: Vec<f64>,
    /// `τ = 0.99 √r / ‖K‖`, `σ = 0.99 / (√r ‖K‖)` with the ratio `r = τ/σ` asked for and the
    /// bound `‖K‖ ≤ √n ‖L₀‖` (every scaled block has the norm `‖L₀‖`), so `τ σ ‖K‖² < 1`.
    pub options: PdhgOptions,
}

impl PdhgOptions {
    /// The balanced set-up for the blocks `(Lᵢ, ‖Lᵢ‖)` (norms or upper bounds of them, e.g.
    /// [`LinearOperator::norm_estimate_with`](crate::LinearOperator::norm_estimate_with) or
    /// [`Bounds`](crate::solvers::tv::Bounds)) and the step ratio `r = τ/σ` (1: equal steps; a
    /// larger `r` suits images whose values are large against the data's): see
    /// [`BalancedPdhg`]. Errors for no blocks, blocks on different domains, and norms or ratios
    /// that are not finite and positive.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use rodl::solvers::iterative::PdhgOptions;
    /// use rodl::{uniform_discr, Gradient, IdentityOperator, LinOp, LinearOperator};
    /// let s = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[32, 32])?;
    /// let id: LinOp<f64> = Arc::new(IdentityOperator::new(s.clone()));
    /// let grad: LinOp<f64> = Arc::new(Gradient::new(s.clone())?);
    /// let grad_norm = (8.0f64).sqrt() * 32.0; // ‖∇‖ ≤ √(Σ 4/h²)
    /// let b = PdhgOptions::balanced(vec![(id, 1.0), (grad, grad_norm)], 1.0)?;
    /// assert_eq!(b.factors, vec![1.0, 1.0 / grad_norm]);
    /// assert!(b.operator.norm_estimate()? <= 2f64.sqrt() * (1.0 + 1e-9));
    /// assert_eq!(b.options.tau, 0.99 / 2f64.sqrt());
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn balanced<T: Scalar>(
        blocks: Vec<(LinOp<T>, f64)>,
        step_ratio: f64,
    ) -> Result<BalancedPdhg<T>> {
        if !(step_ratio.is_finite() && step_ratio > 0.0) {
            return Err(Error::invalid(format!(
                "PdhgOptions::balanced: the step ratio must be finite and positive, got \
                 {step_ratio}"
            )));
        }
        let first = match blocks.first() {
            Some((_, n)) => *n,
            None => {
                return Err(Error::invalid(
                    "PdhgOptions::balanced needs at least one operator block",
                ))
            }
        };
        let mut factors = Vec::with_capacity(blocks.len());
        let mut scaled = Vec::with_capacity(blocks.len());
        for (k, (op, norm)) in blocks.into_iter().enumerate() {
            if !(norm.is_finite() && norm > 0.0) {
                return Err(Error::invalid(format!(
                    "PdhgOptions::balanced: the norm of block {k} must be finite and positive, \
                     got {norm}"
                )));
            }
            let mu = first / norm;
            scaled.push(if mu == 1.0 {
                op
            } else {
                (&op).scaled(T::of(mu))?
            });
            factors.push(mu);
        }
        let n = scaled.len() as f64;
        let operator: LinOp<T> = Arc::new(BroadcastOperator::new(scaled)?);
        let k_norm = n.sqrt() * first;
        let r = step_ratio.sqrt();
        Ok(BalancedPdhg {
            operator,
            factors,
            options: PdhgOptions::new(0.99 * r / k_norm, 0.99 / (r * k_norm)),
        })
    }
}
