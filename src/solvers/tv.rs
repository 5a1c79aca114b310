//! Ready-made total-variation reconstruction: TV-regularised least squares with a
//! non-negativity constraint,
//!
//! ```text
//! min_{x ≥ 0}  ½ ‖A x − y‖² + λ TV(x),   TV(x) = ∫ |∇x|₂   (isotropic)
//! ```
//!
//! built from the crate's functionals, [`pdhg()`] and [`fista()`] (what `rodl reconstruct
//! --algorithm pdhg-tv | fista-tv` runs). `A` is any linear operator with non-negative entries
//! (a ray transform) whose domain is a discretised space.
//!
//! * [`pdhg_tv`] — PDHG (Chambolle–Pock) on `f(x) + g(K x)` with `f = ι_{x ≥ 0}`,
//!   `K = (A, μ∇)` and `g(y₁, y₂) = ½ ‖y₁ − y‖² + (λ/μ) ‖ |y₂|₂ ‖₁`. The factor `μ = ‖A‖/‖∇‖`
//!   gives both blocks of `K` the same norm (it changes PDHG's path, not the minimiser), so
//!   `‖K‖ ≤ √2 ‖A‖`, and the steps are `τ = 0.99 √r / ‖K‖`, `σ = 0.99 / (√r ‖K‖)`, so that
//!   `τ σ ‖K‖² < 1`. The ratio `r = τ/σ` ([`PdhgTvOptions::step_ratio`]) is by default
//!   estimated from the data, `r = (‖y‖ / (0.07 ‖A* y‖))²` (derived at
//!   [`auto_step_ratio`](crate::solvers::iterative::auto_step_ratio)): the default set-up
//!   converges at full speed without tuning, where equal steps (`r = 1`) can need several
//!   times the iterations.
//! * [`fista_tv`] — FISTA on `f(x) + g(x)` with the smooth `f(x) = ½ ‖A x − y‖² + λ H_γ(∇x)`
//!   (the Huber function `H_γ` smooths TV where `|∇x| < γ`, [`Bounds::huber_gamma`]) and
//!   `g = ι_{x ≥ 0}`; the step is `1/L` with `L = ‖A‖² + λ ‖∇‖² / γ`.
//!
//! The norms are the upper bounds of [`Bounds`], so that the step conditions hold for sure.
//! PDHG's blocks and steps are [`PdhgOptions::balanced`]'s; to build the same solver from the
//! functionals yourself (other data terms, other regularisers), see
//! `examples/reconstruct_tv_cone.rs`.
//!
//! **Choosing λ.** rodl's spaces are weighted (the inner products are Riemann sums), so both
//! terms are integrals: `½ ‖A x − y‖²` over the data's angles and detector, `TV(x) = ∫ |∇x|`
//! over the volume, with `∇` a difference quotient. Hence λ does not change when the volume or
//! the detector is sampled more finely, and it scales with the data: `y → c y` calls for
//! `λ → c λ` (the minimiser scales by `c`). A weight `λₛ` of the plain-sum objective
//! `½ Σ (A x − y)² + λₛ Σ |D x|` (forward differences `D` without `1/h`, the same `A`) is
//! `λ = λₛ · w_data · h / w_volume` here, with `w` the spaces' weights
//! ([`Space::weight`](crate::Space::weight): `Δθ Δu (Δv)` and `hᵈ`). For scale: `rodl demo` uses
//! λ = 0.01 for the modified Shepp–Logan phantom (values up to 1) on [-20, 20]² with 5 % noise.
//!
//! ```
//! use rodl::solvers::tv::{pdhg_tv, PdhgTvOptions, TvProblem};
//! use rodl::tomo::{parallel_beam_geometry, Backend, RayTransform};
//! use rodl::{uniform_discr, LinearOperatorExt, Operator};
//! let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16])?;
//! let ray = RayTransform::new(space.clone(), parallel_beam_geometry(&space, Some(30))?, Backend::default())?;
//! let phantom = space.element_from_fn(|p| if p[0] * p[0] + p[1] * p[1] < 0.5 { 1.0 } else { 0.0 })?;
//! let data = ray.apply(&phantom)?;
//! let problem = TvProblem::new(ray.into_linop(), &data, 1e-4)?;
//! let mut x = space.zero()?;
//! let info = pdhg_tv(&problem, &mut x, 200, &PdhgTvOptions::default(), &mut ())?;
//! assert_eq!(info.iterations, 200);
//! assert!(space.dist(&x, &phantom)? / space.norm(&phantom)? < 0.1);
//! assert!(problem.objective(&x)? < problem.objective(&space.zero()?)?);
//! # Ok::<(), rodl::Error>(())
//! ```

use std::sync::Arc;

use crate::solvers::functional::{
    Func, Functional, FunctionalComposition, FunctionalExt, GroupL1Norm, Huber,
    IndicatorNonnegativity, L2NormSquared, SeparableSum, ZeroFunctional,
};
pub use crate::solvers::iterative::StepRatio;
use crate::solvers::iterative::{fista, pdhg, FistaOptions, PdhgOptions, SolverInfo};
use crate::solvers::Callback;
use crate::{
    AsLinearOperator, BroadcastOperator, Element, Error, Gradient, IntoLinOp, LinOp, Operator,
    Result, Scalar,
};

/// The width of FISTA's Huber smoothing, relative to the image's value scale per voxel side
/// (see [`Bounds::huber_gamma`]).
pub const HUBER_RELATIVE: f64 = 0.01;

/// Upper bounds of the operator norms of a TV problem, and the data's value scale.
///
/// `‖∇‖² ≤ Σₖ 4/hₖ²` for forward differences on cells of sides `hₖ`, and Schur's bound
/// `‖A‖² ≤ max(A 1) · max(A* 1)` for an operator with non-negative entries (two operator
/// applications; in the weighted spaces the adjoint's weights cancel as they should).
#[derive(Clone, Copy, Debug, PartialEq)]
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
    /// Computes the bounds for the operator `op` (non-negative entries, a discretised domain)
    /// and the data `y` (one application of `A` and one of `A*`, and a copy of their results to
    /// the host).
    pub fn new<T: Scalar>(
        op: &(impl AsLinearOperator<T> + ?Sized),
        y: &Element<T>,
    ) -> Result<Bounds> {
        let op = op.as_linear();
        op.range().check_member(y, "tv bounds: data")?;
        // Through the spaces, so that the maxima of distributed data are over all ranks.
        let row = op.range().max(&op.apply(&op.domain().one()?)?)?.max(0.0);
        let col = op
            .domain()
            .max(&op.adjoint()?.apply(&op.range().one()?)?)?
            .max(0.0);
        let cells = op.domain().cell_sides()?;
        let grad = 2.0 * cells.iter().map(|h| h.powi(-2)).sum::<f64>().sqrt();
        let cell = cells.iter().cloned().fold(f64::INFINITY, f64::min);
        let ymax = op.range().max(y)?.max(0.0);
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

/// Errors unless the TV weight `λ` is finite and `≥ 0`.
pub fn check_weight(lambda: f64) -> Result<()> {
    if !(lambda.is_finite() && lambda >= 0.0) {
        return Err(Error::InvalidArgument(format!(
            "the TV weight must be finite and >= 0, got {lambda}"
        )));
    }
    Ok(())
}

/// A TV-regularised least-squares problem `min_{x ≥ 0} ½ ‖A x − y‖² + λ TV(x)`: the operator,
/// the data, the weight and the norm [`Bounds`] (computed once, at construction).
pub struct TvProblem<T: Scalar> {
    op: LinOp<T>,
    data: Element<T>,
    lambda: f64,
    bounds: Bounds,
}

impl<T: Scalar> TvProblem<T> {
    /// The problem for the operator `op` (non-negative entries, a discretised domain), the data
    /// `y` (copied) and the TV weight `lambda ≥ 0`; computes the [`Bounds`].
    ///
    /// `op` is anything that holds a linear operator ([`IntoLinOp`]): a concrete one (`ray`,
    /// moved in), a `LinOp` or a `&LinOp` (shared). The problem keeps it as a `LinOp`
    /// ([`TvProblem::operator`]), from which [`fbp_op`](crate::tomo::fbp_op) still builds an
    /// FBP when it is a ray transform:
    ///
    /// ```
    /// use rodl::prelude::*;
    /// let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16])?;
    /// let ray = RayTransform::new(space.clone(), parallel_beam_geometry(&space, Some(20))?, Backend::default())?;
    /// let data = ray.apply(&shepp_logan(&space, true)?)?;
    /// let problem = TvProblem::new(ray, &data, 1e-3)?; // the ray transform moves in
    /// let fbp = fbp_op(problem.operator(), &FbpOptions::default())?; // … and is still found
    /// let mut x = fbp.apply(&data)?; // start from the FBP
    /// pdhg_tv(&problem, &mut x, 20, &PdhgTvOptions::default(), &mut ())?;
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn new<K>(op: impl IntoLinOp<T, K>, y: &Element<T>, lambda: f64) -> Result<Self> {
        check_weight(lambda)?;
        let op = op.into_shared_linop();
        let bounds = Bounds::new(op.as_ref(), y)?;
        Self::with_bounds(op, y, lambda, bounds)
    }

    /// The problem with given norm bounds (e.g. computed once for several weights); `op` as in
    /// [`TvProblem::new`].
    pub fn with_bounds<K>(
        op: impl IntoLinOp<T, K>,
        y: &Element<T>,
        lambda: f64,
        bounds: Bounds,
    ) -> Result<Self> {
        check_weight(lambda)?;
        let op = op.into_shared_linop();
        op.range().check_member(y, "tv problem: data")?;
        Ok(Self {
            op,
            data: y.try_clone()?,
            lambda,
            bounds,
        })
    }

    /// The operator `A`.
    pub fn operator(&self) -> &LinOp<T> {
        &self.op
    }

    /// The data `y`.
    pub fn data(&self) -> &Element<T> {
        &self.data
    }

    /// The TV weight `λ`.
    pub fn lambda(&self) -> f64 {
        self.lambda
    }

    /// The norm bounds.
    pub fn bounds(&self) -> &Bounds {
        &self.bounds
    }

    /// The objective `½ ‖A x − y‖² + λ TV(x)` at `x` (`+∞` where `x` has a negative entry).
    /// Allocates its temporaries and applies `A` and `∇` once each.
    pub fn objective(&self, x: &Element<T>) -> Result<f64> {
        let space = self.op.domain();
        let grad = Gradient::new(space.clone())?;
        let constraint = IndicatorNonnegativity::new(space.clone()).value(x)?;
        let fit = self.data_fit()?.value(&self.op.apply(x)?)?;
        let tv = GroupL1Norm::new(grad.range().clone())?.value(&grad.apply(x)?)?;
        Ok(constraint + fit + self.lambda * tv)
    }

    /// `½ ‖· − y‖²` on the data space.
    fn data_fit(&self) -> Result<Func<T>> {
        let l2: Func<T> = Arc::new(L2NormSquared::new(self.op.range().clone()));
        l2.translated(self.data.try_clone()?)?.scaled(0.5)
    }
}

/// Options of [`pdhg_tv`].
///
/// ```
/// use rodl::solvers::tv::{PdhgTvOptions, StepRatio};
/// assert_eq!(PdhgTvOptions::default().step_ratio, StepRatio::Auto);
/// let hand_tuned = PdhgTvOptions { step_ratio: StepRatio::Fixed(25.0) };
/// # let _ = hand_tuned;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PdhgTvOptions {
    /// The ratio `r = τ/σ` of the primal and dual steps; `τ σ` stays at `0.99² / ‖K‖²`.
    /// [`StepRatio::Auto`] (the default) estimates it from the data ([`auto_step_ratio`](crate::solvers::iterative::auto_step_ratio): one
    /// more application of `A*` per call); [`StepRatio::Fixed`] sets it.
    pub step_ratio: StepRatio,
}

/// `niter` PDHG iterations for the TV problem from `x` (updated in place), with the balanced
/// set-up of the [module documentation](self) and the step ratio of `options` (by default
/// estimated from the data, which costs one application of `A*`). The callback gets the iterate (no objective:
/// [`TvProblem::objective`] computes it on demand).
pub fn pdhg_tv<T: Scalar>(
    problem: &TvProblem<T>,
    x: &mut Element<T>,
    niter: usize,
    options: &PdhgTvOptions,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    let r = options
        .step_ratio
        .resolve(problem.op.as_ref(), &problem.data)?;
    let bounds = &problem.bounds;
    let lambda = problem.lambda;
    let space = problem.op.domain().clone();
    let grad: LinOp<T> = Arc::new(Gradient::new(space.clone())?);
    let tv: Func<T> = Arc::new(GroupL1Norm::new(grad.range().clone())?);
    let balanced = PdhgOptions::balanced(
        vec![(problem.op.clone(), bounds.ray), (grad, bounds.grad)],
        r,
    )?;
    let mu = balanced.factors[1];
    let g = SeparableSum::new(vec![problem.data_fit()?, tv.scaled_or_zero(lambda / mu)?])?;
    let f = IndicatorNonnegativity::new(space);
    pdhg(
        balanced.operator.as_ref(),
        x,
        &f,
        &g,
        niter,
        &balanced.options,
        callback,
    )
}

/// Options of [`fista_tv`].
///
/// ```
/// use rodl::solvers::tv::FistaTvOptions;
/// assert_eq!(FistaTvOptions::default().huber_gamma, None); // Bounds::huber_gamma
/// let sharper = FistaTvOptions { huber_gamma: Some(1e-3) };
/// # let _ = sharper;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FistaTvOptions {
    /// The Huber width `γ` that smooths TV where `|∇x| < γ` (finite and positive): smaller is
    /// closer to TV and makes the step `1/L`, `L = ‖A‖² + λ ‖∇‖² / γ`, smaller. `None` (the
    /// default) takes [`Bounds::huber_gamma`] of the problem.
    pub huber_gamma: Option<f64>,
}

/// `niter` FISTA iterations for the Huber-smoothed TV problem from `x` (updated in place), as
/// in the [module documentation](self), with the Huber width of `options`. The arguments are
/// [`pdhg_tv`]'s, as the [solvers' rule](crate::solvers) asks.
///
/// ```
/// use rodl::prelude::*;
/// use rodl::solvers::tv::FistaTvOptions;
/// let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16])?;
/// let ray = RayTransform::new(space.clone(), parallel_beam_geometry(&space, Some(20))?, Backend::default())?;
/// let data = ray.apply(&shepp_logan(&space, true)?)?;
/// let problem = TvProblem::new(ray, &data, 1e-4)?;
/// let mut x = space.zero()?;
/// fista_tv(&problem, &mut x, 50, &FistaTvOptions::default(), &mut ())?;
/// assert!(problem.objective(&x)? < problem.objective(&space.zero()?)?);
/// let bad = FistaTvOptions { huber_gamma: Some(0.0) };
/// assert!(fista_tv(&problem, &mut x, 1, &bad, &mut ()).is_err());
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn fista_tv<T: Scalar>(
    problem: &TvProblem<T>,
    x: &mut Element<T>,
    niter: usize,
    options: &FistaTvOptions,
    callback: &mut dyn Callback<T>,
) -> Result<SolverInfo> {
    let bounds = &problem.bounds;
    let lambda = problem.lambda;
    let space = problem.op.domain().clone();
    let a: LinOp<T> = problem.op.clone();
    let grad: LinOp<T> = Arc::new(Gradient::new(space.clone())?);
    let gamma = match options.huber_gamma {
        None => bounds.huber_gamma(),
        Some(g) if g.is_finite() && g > 0.0 => g,
        Some(g) => {
            return Err(Error::invalid(format!(
                "fista_tv: the Huber width must be finite and positive, got {g}"
            )))
        }
    };
    let huber: Func<T> = Arc::new(Huber::new(grad.range().clone(), gamma)?);
    let k: LinOp<T> = Arc::new(BroadcastOperator::new(vec![a, grad])?);
    let sum: Func<T> = Arc::new(SeparableSum::new(vec![
        problem.data_fit()?,
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
            Ok(Arc::new(ZeroFunctional::new(self.domain().clone())))
        } else {
            self.scaled(a)
        }
    }
}
