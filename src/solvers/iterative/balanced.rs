//! The balanced set-up of PDHG for a stack of operator blocks, `K = (μ₀ L₀; μ₁ L₁; …)`, and
//! the choice of its step ratio `τ/σ`.

use std::sync::Arc;

use super::PdhgOptions;
use crate::{
    AsLinearOperator, BroadcastOperator, Element, Error, LinOp, LinearOperatorExt, Result, Scalar,
};

/// The residual at the minimiser that [`auto_step_ratio`] assumes, relative to the data:
/// `‖A x* − y‖ ≈ 0.07 ‖y‖`.
///
/// Calibrated on TV-regularised tomography of the modified Shepp–Logan phantom with about 6 %
/// noise: 2D parallel beam on `[-1, 1]²` (128², Poisson noise) and on `[-20, 20]²` (256²,
/// Gaussian noise: `rodl demo`'s scan), and 3D cone beam (48³). The best fixed ratios of the
/// three differ by a factor of about 15 (roughly 20–40, 3 and 1–2.5). Taking the residual at
/// the noise level instead gives ratios 2 to 4 times larger, with which the iterates overshoot
/// and settle more slowly. The best ratio hardly moves with the noise level (1.8 % to 18 % in
/// the first case), so the constant need not match the data's noise.
///
/// What the estimate gives, measured (PSNR against the phantom; the minimiser's PSNR is taken
/// from a long run):
///
/// | problem | ratio | PSNR after 200 iterations | best fixed ratio tried | long run |
/// |---|---|---|---|---|
/// | `examples/reconstruct_tv` (128² parallel beam, λ = 4e-5) | 38 | 31.17 dB | 25: 31.23 dB | 31.22 dB |
/// | `examples/reconstruct_tv_cone` (32³ cone beam, 40 views, λ = 3e-4) | 4.9 | 35.65 dB | 2: 35.77 dB (of 1, 1.5, 2, 3, 5, 10) | 35.75 dB (2000 it.) |
///
/// So after 200 iterations the estimate was 0.06 dB and 0.12 dB short of the best fixed ratio
/// tried, and 0.05 dB and 0.10 dB short of the long run; equal steps (ratio 1) were 3.8 dB
/// short in the first problem and 0.26 dB in the second. The cone-beam row is
/// `cargo run --release --example reconstruct_tv_cone -- 32 200 RATIO` (`auto` or a number)
/// on the CPU. PSNR after a fixed number of iterations compares paths, not only convergence: it
/// can pass through a peak above the minimiser's (the same cone-beam problem gives 36.39 dB
/// after 100 iterations with the estimate, 35.48 dB with ratio 2), so a single count can show
/// either ratio ahead.
pub const AUTO_RELATIVE_RESIDUAL: f64 = 0.07;

/// How the ratio `r = τ/σ` of PDHG's primal and dual steps is chosen.
///
/// `τ σ` is fixed by the convergence condition (`τ σ ‖K‖² < 1`), so `r` is the one free choice,
/// and a poor one costs many iterations: see [`auto_step_ratio`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum StepRatio {
    /// [`auto_step_ratio`] of the data term's operator and data (the default): one application
    /// of the adjoint.
    #[default]
    Auto,
    /// A given ratio (finite and positive).
    Fixed(f64),
}

impl StepRatio {
    /// The ratio for the data term `½ ‖A x − y‖²` with the operator `op` and the data `y`:
    /// [`auto_step_ratio`] for [`StepRatio::Auto`], the given value for
    /// [`StepRatio::Fixed`] (an error unless it is finite and positive).
    pub fn resolve<T: Scalar>(
        self,
        op: &(impl AsLinearOperator<T> + ?Sized),
        y: &Element<T>,
    ) -> Result<f64> {
        let op = op.as_linear();
        match self {
            StepRatio::Auto => auto_step_ratio(op, y),
            StepRatio::Fixed(r) => {
                check_ratio(r, "StepRatio::Fixed")?;
                Ok(r)
            }
        }
    }
}

/// The step ratio `r = τ/σ` for PDHG on a problem whose first block is the data term
/// `½ ‖A x − y‖²` (start `x = 0`, dual start 0), estimated from the data:
///
/// ```text
/// r = ( ‖y‖² / ‖A* y‖  ÷  c ‖y‖ )²  =  ( ‖y‖ / (c ‖A* y‖) )²,   c = AUTO_RELATIVE_RESIDUAL
/// ```
///
/// Where it comes from: after `N` iterations PDHG's (ergodic) primal–dual gap is bounded by
/// `(‖x₀ − x*‖²/τ + ‖y₀ − y*‖²/σ) / N`; with both starts 0 and `τ σ` fixed by the convergence
/// condition, the bound is smallest for `τ/σ = (‖x*‖ / ‖y*‖)²`, the squared ratio of the
/// primal and the dual solution's sizes. Both are estimated from the data:
/// * primal: `‖x*‖ ≈ ‖y‖² / ‖A* y‖`, the norm of the multiple `x̂ = s A* y` of the
///   back-projection that has `⟨A x̂, y⟩ = ‖y‖²` (by Cauchy–Schwarz a lower bound of `‖x‖` for
///   every `x` with `A x = y`; about 0.6 ‖x‖ for a tomographic phantom, where `A* y` is a
///   blurred image);
/// * dual: the dual variable of `½ ‖· − y‖²` at the solution is the residual `A x* − y`,
///   taken as [`AUTO_RELATIVE_RESIDUAL`] `· ‖y‖` (the dual variables of regularisers scaled by
///   [`PdhgOptions::balanced`] are bounded by their weights and are usually far smaller).
///
/// The ratio does not change when the data are scaled (`y → s y`, with the regulariser's weight
/// scaled alike), it scales as `1/a²` when the operator and the data are scaled by `a` (the
/// dual variable scales by `a`, the image not), and it converges as the volume and the data are
/// sampled more finely, since the norms are the spaces' weighted ones. A hand-picked ratio is
/// tied to the units of one problem.
///
/// Cost: one application of `A*` and two norms. Returns 1 when `y` or `A* y` is zero (then
/// `x* = 0` and any ratio does). Errors when `y` is not in `A`'s range or has non-finite
/// values.
///
/// ```
/// use rodl::solvers::iterative::{auto_step_ratio, AUTO_RELATIVE_RESIDUAL};
/// use rodl::{uniform_discr, ScalingOperator};
/// let s = uniform_discr::<f64>(&[0.0], &[1.0], &[8])?;
/// let y = s.element_from_fn(|p| 1.0 + p[0])?;
/// // A = 4 I: A* y = 4 y, so r = (1 / (4 c))².
/// let r = auto_step_ratio(&ScalingOperator::new(s.clone(), 4.0), &y)?;
/// assert!((r - (0.25 / AUTO_RELATIVE_RESIDUAL).powi(2)).abs() < 1e-12 * r);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn auto_step_ratio<T: Scalar>(
    op: &(impl AsLinearOperator<T> + ?Sized),
    y: &Element<T>,
) -> Result<f64> {
    let op = op.as_linear();
    op.range().check_member(y, "auto_step_ratio: data")?;
    let y_norm = op.range().norm(y)?;
    if !y_norm.is_finite() {
        return Err(Error::invalid(
            "auto_step_ratio: the data have non-finite values",
        ));
    }
    if y_norm == 0.0 {
        return Ok(1.0);
    }
    let back = op.adjoint()?.apply(y)?;
    let back_norm = op.domain().norm(&back)?;
    if !back_norm.is_finite() {
        return Err(Error::invalid(
            "auto_step_ratio: the back-projection A* y has non-finite values",
        ));
    }
    if back_norm == 0.0 {
        return Ok(1.0);
    }
    let r = (y_norm / (AUTO_RELATIVE_RESIDUAL * back_norm)).powi(2);
    if r.is_finite() && r > 0.0 {
        Ok(r)
    } else {
        // ‖y‖ and ‖A* y‖ at the ends of the f64 range.
        Err(Error::invalid(format!(
            "auto_step_ratio: no finite ratio from ‖y‖ = {y_norm:e} and ‖A* y‖ = {back_norm:e}"
        )))
    }
}

fn check_ratio(r: f64, what: &str) -> Result<()> {
    if r.is_finite() && r > 0.0 {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{what}: the step ratio must be finite and positive, got {r}"
        )))
    }
}

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
    /// [`Bounds`](crate::solvers::tv::Bounds)) and the step ratio `r = τ/σ`: see
    /// [`BalancedPdhg`]. Errors for no blocks, blocks on different domains, and norms or ratios
    /// that are not finite and positive.
    ///
    /// The ratio matters as much as the balancing: `r = 1` (equal steps) is right only when the
    /// image and the dual variables have comparable sizes. When block 0 is the data term
    /// `½ ‖L₀ x − y‖²`, take [`auto_step_ratio`]`(L₀, y)` (or
    /// [`StepRatio::Auto`]`.resolve(L₀, y)`); on a 128² TV reconstruction of a Shepp–Logan
    /// phantom from 2D parallel-beam data, `r = 1` needs about 3 times the iterations.
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
        check_ratio(step_ratio, "PdhgOptions::balanced")?;
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
