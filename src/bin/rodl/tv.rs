//! Total-variation regularised least squares for `pdhg-tv` and `fista-tv`:
//!
//! ```text
//! min_{x ≥ 0}  ½ ‖A x − y‖² + λ TV(x),   TV(x) = ∫ |∇x|₂   (isotropic)
//! ```
//!
//! built from `rodl::solvers` (functionals, `pdhg`, `fista`) and the library's operators.
//!
//! * **PDHG** (Chambolle–Pock) on `f(x) + g(K x)` with `f = ι_{x ≥ 0}`, `K = (A, μ∇)` and
//!   `g(y₁, y₂) = ½ ‖y₁ − y‖² + (λ/μ) ‖ |y₂|₂ ‖₁`. The factor `μ = ‖A‖/‖∇‖` gives both blocks of
//!   `K` the same norm (it changes PDHG's path, not the minimiser), and `τ = σ = 0.99/‖K‖`
//!   with `‖K‖ ≤ √2 ‖A‖`.
//! * **FISTA** on `f(x) + g(x)` with the smooth `f(x) = ½ ‖A x − y‖² + λ H_γ(∇x)` (the Huber
//!   function `H_γ` smooths TV where `|∇x| < γ`) and `g = ι_{x ≥ 0}`; the step is `1/L` with
//!   `L = ‖A‖² + λ ‖∇‖² / γ`.
//!
//! The norms are upper bounds, so that the step conditions hold for sure: `‖∇‖² ≤ Σₖ 4/hₖ²`
//! for forward differences on cells of sides `hₖ`, and Schur's bound
//! `‖A‖² ≤ max(A 1) · max(A* 1)` for an operator with non-negative entries (two operator
//! applications; in the weighted spaces the adjoint's weights cancel as they should).

use std::sync::Arc;

use rodl::solvers::functional::{
    Func, FunctionalComposition, FunctionalExt, GroupL1Norm, Huber, IndicatorNonnegativity,
    L2NormSquared, SeparableSum,
};
use rodl::solvers::iterative::{fista, pdhg, FistaOptions, PdhgOptions};
use rodl::solvers::Callback;
use rodl::tomo::RayTransform;
use rodl::{
    BroadcastOperator, Element, Gradient, LinOp, LinearOperator, LinearOperatorExt, Operator,
    Result, Scalar,
};

/// The width of FISTA's Huber smoothing, relative to the image's value scale per voxel side
/// (see [`Bounds::huber_gamma`]).
pub const HUBER_RELATIVE: f64 = 0.01;

/// Upper bounds of the operator norms, and the data's value scale.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// `‖A‖` (Schur's bound).
    pub ray: f64,
    /// `‖∇‖`.
    pub grad: f64,
    /// The smallest cell side.
    pub cell: f64,
    /// `max(y) / max(A 1)`: the data's largest line integral over the longest ray through the
    /// volume, an estimate of the image's values.
    pub value_scale: f64,
}

impl Bounds {
    /// Computes the bounds for `ray` and the data `y` (one application of `A` and one of
    /// `A*`, and a copy of their results to the host).
    pub fn new<T: Scalar>(ray: &RayTransform<T>, y: &Element<T>) -> Result<Bounds> {
        let host_max = |x: &Element<T>| -> Result<f64> {
            let h = x.to_host()?;
            Ok(h.as_slice()?.iter().map(|v| v.f64()).fold(0.0, f64::max))
        };
        let row = host_max(&ray.apply(&ray.domain().one()?)?)?;
        let col = host_max(&ray.adjoint()?.apply(&ray.range().one()?)?)?;
        let cells = ray.domain().cell_sides()?;
        let grad = 2.0 * cells.iter().map(|h| h.powi(-2)).sum::<f64>().sqrt();
        let cell = cells.iter().cloned().fold(f64::INFINITY, f64::min);
        let ymax = host_max(y)?;
        Ok(Bounds {
            ray: (row * col).sqrt(),
            grad,
            cell,
            value_scale: if row > 0.0 { ymax / row } else { 0.0 },
        })
    }

    /// FISTA's Huber width `γ`: [`HUBER_RELATIVE`] of the value scale per smallest cell side
    /// (an edge of height `v` has `|∇x| ≈ v / h`), and at least a tiny positive number.
    pub fn huber_gamma(&self) -> f64 {
        (HUBER_RELATIVE * self.value_scale / self.cell).max(1e-12)
    }
}

/// Checks the TV weight.
pub fn check_weight(lambda: f64) -> Result<()> {
    if !(lambda.is_finite() && lambda >= 0.0) {
        return Err(rodl::Error::InvalidArgument(format!(
            "the TV weight must be finite and >= 0, got {lambda}"
        )));
    }
    Ok(())
}

/// `½ ‖· − y‖²` on the data space.
fn data_fit<T: Scalar>(ray: &RayTransform<T>, y: &Element<T>) -> Result<Func<T>> {
    let l2: Func<T> = Arc::new(L2NormSquared::new(ray.range().clone()));
    l2.translated(y.try_clone()?)?.scaled(0.5)
}

/// `niter` PDHG iterations for TV-regularised least squares from `x` (updated in place).
pub fn pdhg_tv<T: Scalar>(
    ray: &Arc<RayTransform<T>>,
    y: &Element<T>,
    x: &mut Element<T>,
    lambda: f64,
    niter: usize,
    callback: &mut dyn Callback<T>,
) -> Result<usize> {
    check_weight(lambda)?;
    let bounds = Bounds::new(ray, y)?;
    let space = ray.domain().clone();
    let a: LinOp<T> = ray.clone();
    let grad: LinOp<T> = Arc::new(Gradient::new(space.clone())?);
    let mu = bounds.ray / bounds.grad;
    let k: LinOp<T> = Arc::new(BroadcastOperator::new(vec![a, grad.scaled(T::of(mu))?])?);
    let tv: Func<T> = Arc::new(GroupL1Norm::new(grad.range().clone())?);
    let g = SeparableSum::new(vec![data_fit(ray, y)?, tv.scaled_or_zero(lambda / mu)?])?;
    let f = IndicatorNonnegativity::new(space);
    let step = 0.99 / (std::f64::consts::SQRT_2 * bounds.ray);
    pdhg(
        x,
        &f,
        &g,
        k.as_ref(),
        niter,
        &PdhgOptions::new(step, step),
        callback,
    )
}

/// `niter` FISTA iterations for Huber-smoothed TV-regularised least squares from `x`
/// (updated in place).
pub fn fista_tv<T: Scalar>(
    ray: &Arc<RayTransform<T>>,
    y: &Element<T>,
    x: &mut Element<T>,
    lambda: f64,
    niter: usize,
    callback: &mut dyn Callback<T>,
) -> Result<usize> {
    check_weight(lambda)?;
    let bounds = Bounds::new(ray, y)?;
    let space = ray.domain().clone();
    let a: LinOp<T> = ray.clone();
    let grad: LinOp<T> = Arc::new(Gradient::new(space.clone())?);
    let gamma = bounds.huber_gamma();
    let huber: Func<T> = Arc::new(Huber::new(grad.range().clone(), gamma)?);
    let k: LinOp<T> = Arc::new(BroadcastOperator::new(vec![a, grad])?);
    let sum: Func<T> = Arc::new(SeparableSum::new(vec![
        data_fit(ray, y)?,
        huber.scaled_or_zero(lambda)?,
    ])?);
    let f = FunctionalComposition::new(sum, k)?;
    let g = IndicatorNonnegativity::new(space);
    let lipschitz = bounds.ray.powi(2) + lambda * bounds.grad.powi(2) / gamma;
    fista(x, &f, &g, niter, &FistaOptions::new(lipschitz), callback)
}

/// `a · f`, where `a = 0` gives the zero functional (`LeftScalarMult` needs `a > 0`).
trait ScaledOrZero<T: Scalar> {
    fn scaled_or_zero(&self, a: f64) -> Result<Func<T>>;
}

impl<T: Scalar> ScaledOrZero<T> for Func<T> {
    fn scaled_or_zero(&self, a: f64) -> Result<Func<T>> {
        if a == 0.0 {
            Ok(Arc::new(rodl::solvers::functional::ZeroFunctional::new(
                self.domain().clone(),
            )))
        } else {
            self.scaled(a)
        }
    }
}
