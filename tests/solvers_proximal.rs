//! Proximal solvers: PDHG, linearized ADMM and Douglas–Rachford on total-variation denoising
//! against one long reference run (checked by its duality gap), FISTA on a LASSO problem
//! against its O(1/k²) bound and a long reference, callbacks, and argument errors.

use std::sync::{Arc, OnceLock};

use ndarray::{Array1, Array2};
use rand::Rng;
use rodl::solvers::functional::{Func, FunctionalExt, GroupL1Norm, L1Norm, L2NormSquared};
use rodl::solvers::iterative::{
    admm_linearized, douglas_rachford_pd, fista, pdhg, pdhg_stepsize, pdhg_with_dual, AdmmOptions,
    DouglasRachfordOptions, FistaOptions, PdhgOptions,
};
use rodl::solvers::{Control, IterationInfo, SolverInfo};
use rodl::{
    rn, uniform_discr, Element, Error, Gradient, LinOp, LinearOperator, Operator, Result, Space,
};

mod common;

// ------------------------------------------------------------------ TV denoising

/// min_x ½‖x − d‖² + λ ∫|∇x|₂ on a 32×32 image: a square and a disc plus Gaussian noise.
struct Tv {
    space: Space<f64>,
    truth: Element<f64>,
    data: Element<f64>,
    grad: LinOp<f64>,
    f: Func<f64>,
    g: Func<f64>,
}

const LAMBDA: f64 = 0.01;

fn tv() -> Tv {
    let space = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[32, 32]).unwrap();
    let truth = space
        .element_from_fn(|p| {
            let inside = |a: f64| (0.25..0.75).contains(&a);
            let square = if inside(p[0]) && inside(p[1]) {
                1.0
            } else {
                0.0
            };
            let r2 = (p[0] - 0.6).powi(2) + (p[1] - 0.4).powi(2);
            square + if r2 < 0.15 * 0.15 { 0.5 } else { 0.0 }
        })
        .unwrap();
    let mut data = space.random_normal(&mut common::rng(1)).unwrap();
    space.axpby(1.0, &truth, 0.1, &mut data).unwrap();
    let grad: LinOp<f64> = Arc::new(Gradient::new(space.clone()).unwrap());
    let l2: Func<f64> = Arc::new(L2NormSquared::new(space.clone()));
    let f = l2
        .translated(data.try_clone().unwrap())
        .unwrap()
        .scaled(0.5)
        .unwrap();
    let gl1: Func<f64> = Arc::new(GroupL1Norm::new(grad.range().clone()).unwrap());
    let g = gl1.scaled(LAMBDA).unwrap();
    Tv {
        space,
        truth,
        data,
        grad,
        f,
        g,
    }
}

impl Tv {
    fn objective(&self, x: &Element<f64>) -> f64 {
        self.f.value(x).unwrap() + self.g.value(&self.grad.apply(x).unwrap()).unwrap()
    }

    fn rel_error(&self, x: &Element<f64>) -> f64 {
        let r = &reference().x;
        self.space.dist(x, r).unwrap() / self.space.norm(r).unwrap()
    }
}

struct Reference {
    x: Element<f64>,
    objective: f64,
    gap: f64,
}

/// 8000 iterations of plain PDHG, with the primal–dual gap of the final pair.
fn reference() -> &'static Reference {
    static REF: OnceLock<Reference> = OnceLock::new();
    REF.get_or_init(|| {
        let p = tv();
        let mut x = p.space.zero().unwrap();
        let mut y = p.grad.range().zero().unwrap();
        let opts = PdhgOptions::for_operator(p.grad.as_ref()).unwrap();
        let f = p.f.as_ref();
        pdhg_with_dual(
            p.grad.as_ref(),
            &mut x,
            &mut y,
            f,
            p.g.as_ref(),
            8000,
            &opts,
            &mut (),
        )
        .unwrap();
        // gap = f(x) + g(∇x) + f*(−∇*y) + g*(y) ≥ 0, zero exactly at a saddle point.
        let mut lty = p.grad.adjoint().unwrap().apply(&y).unwrap();
        p.space.scale(-1.0, &mut lty).unwrap();
        let objective = p.objective(&x);
        let gap = objective
            + p.f.convex_conj().unwrap().value(&lty).unwrap()
            + p.g.convex_conj().unwrap().value(&y).unwrap();
        Reference { x, objective, gap }
    })
}

#[test]
fn reference_is_a_saddle_point() {
    let r = reference();
    eprintln!(
        "reference: objective {}, duality gap {:.2e}",
        r.objective, r.gap
    );
    assert!(
        r.gap >= -1e-12 && r.gap < 1e-7 * r.objective,
        "duality gap {:e} at objective {}",
        r.gap,
        r.objective
    );
    // Denoising did something sensible: closer to the truth than the data, and smoother.
    let p = tv();
    let err_data = p.space.dist(&p.data, &p.truth).unwrap();
    let err_x = p.space.dist(&r.x, &p.truth).unwrap();
    assert!(err_x < 0.6 * err_data, "{err_x} vs {err_data}");
    let tv_of = |x: &Element<f64>| p.g.value(&p.grad.apply(x).unwrap()).unwrap() / LAMBDA;
    assert!(tv_of(&r.x) < 0.5 * tv_of(&p.data));
}

#[test]
fn pdhg_converges_to_the_reference_with_decreasing_objective() {
    let p = tv();
    let (tau, sigma) = pdhg_stepsize(p.grad.as_ref()).unwrap();
    let n = p.grad.norm_estimate().unwrap();
    assert!((tau * sigma * n * n - 0.99 * 0.99).abs() < 1e-12);
    let opts = PdhgOptions::for_operator(p.grad.as_ref())
        .unwrap()
        .objective(true);
    let mut objectives = Vec::new();
    let mut cb = |_: &Element<f64>, info: &IterationInfo| -> Result<Control> {
        assert_eq!(info.iteration, objectives.len() + 1);
        objectives.push(info.objective.expect("objective requested"));
        Ok(Control::Continue)
    };
    let mut x = p.space.zero().unwrap();
    let done = pdhg(
        p.grad.as_ref(),
        &mut x,
        p.f.as_ref(),
        p.g.as_ref(),
        2000,
        &opts,
        &mut cb,
    )
    .unwrap()
    .iterations;
    assert_eq!(done, 2000);
    assert_eq!(objectives.len(), 2000);
    let err = p.rel_error(&x);
    eprintln!("pdhg, 2000 iterations: relative distance to the reference {err:.2e}");
    assert!(err < 2e-5, "relative distance {err:e}");
    // The reported objective is f(x) + g(∇x) at the returned iterate.
    let last = *objectives.last().unwrap();
    assert!((last - p.objective(&x)).abs() <= 1e-14 * last);
    // Monotone at the coarse scale, and down to the reference objective.
    let r = reference();
    let marks = [10, 30, 100, 300, 1000, 2000];
    for w in marks.windows(2) {
        let (a, b) = (objectives[w[0] - 1], objectives[w[1] - 1]);
        assert!(
            b <= a + 1e-9 * r.objective,
            "objective rose from {a} (it. {}) to {b} (it. {})",
            w[0],
            w[1]
        );
    }
    assert!(objectives[0] > 3.0 * r.objective, "{}", objectives[0]);
    assert!(
        (last - r.objective).abs() < 5e-6 * r.objective,
        "{last} vs {}",
        r.objective
    );
}

#[test]
fn pdhg_acceleration_and_over_relaxation() {
    let p = tv();
    let n = p.grad.norm_estimate().unwrap();
    let run = |opts: &PdhgOptions, iters| {
        let mut x = p.space.zero().unwrap();
        pdhg(
            p.grad.as_ref(),
            &mut x,
            p.f.as_ref(),
            p.g.as_ref(),
            iters,
            opts,
            &mut (),
        )
        .unwrap();
        p.rel_error(&x)
    };
    let plain = PdhgOptions::for_operator(p.grad.as_ref()).unwrap();
    // f is 1-strongly convex: adaptive steps from τ₀ = 1 gain a lot early on.
    let accel = PdhgOptions::new(1.0, 0.98 / (n * n)).gamma_primal(1.0);
    let (e_plain, e_accel) = (run(&plain, 100), run(&accel, 100));
    eprintln!("100 iterations: plain {e_plain:.2e}, accelerated {e_accel:.2e}");
    assert!(e_accel < 0.1 * e_plain);
    let e_accel_long = run(&accel, 1000);
    assert!(
        e_accel_long < 0.2 * e_accel && e_accel_long < 1e-3,
        "{e_accel_long:e}"
    );
    // Without over-relaxation (θ = 0, Arrow–Hurwicz) it still converges here, more slowly.
    let e_theta0 = run(&plain.clone().theta(0.0), 300);
    assert!(e_theta0 < 0.1, "{e_theta0:e}");
}

#[test]
fn pdhg_dual_start_and_callback_stop() {
    let p = tv();
    let opts = PdhgOptions::for_operator(p.grad.as_ref()).unwrap();
    // Two halves with the dual carried over equal one run.
    let (mut x1, mut y1) = (p.space.zero().unwrap(), p.grad.range().zero().unwrap());
    let (f, g, l) = (p.f.as_ref(), p.g.as_ref(), p.grad.as_ref());
    pdhg_with_dual(l, &mut x1, &mut y1, f, g, 100, &opts, &mut ()).unwrap();
    // Continuing with the dual carried over is close to one run of 200 iterations (only the
    // extrapolated point x̄ restarts at x), much closer than a restart from a zero dual.
    let (mut x2, mut y2) = (x1.try_clone().unwrap(), y1.try_clone().unwrap());
    pdhg_with_dual(l, &mut x2, &mut y2, f, g, 100, &opts, &mut ()).unwrap();
    let mut x_restart = x1.try_clone().unwrap();
    pdhg(l, &mut x_restart, f, g, 100, &opts, &mut ()).unwrap();
    let mut x200 = p.space.zero().unwrap();
    pdhg(l, &mut x200, f, g, 200, &opts, &mut ()).unwrap();
    let warm = p.space.dist(&x2, &x200).unwrap();
    let cold = p.space.dist(&x_restart, &x200).unwrap();
    eprintln!("warm start {warm:.2e}, cold restart {cold:.2e} from 200 straight iterations");
    assert!(warm < 0.01 * cold, "warm {warm:e}, cold {cold:e}");
    // Stop after 7 iterations.
    let mut calls = 0;
    let mut stop = |_: &Element<f64>, info: &IterationInfo| -> Result<Control> {
        calls += 1;
        assert_eq!(info.objective, None);
        Ok(if info.iteration == 7 {
            Control::Stop
        } else {
            Control::Continue
        })
    };
    let mut x = p.space.zero().unwrap();
    assert_eq!(
        pdhg(l, &mut x, f, g, 50, &opts, &mut stop)
            .unwrap()
            .iterations,
        7
    );
    assert_eq!(calls, 7);
    let mut x7 = p.space.zero().unwrap();
    pdhg(l, &mut x7, f, g, 7, &opts, &mut ()).unwrap();
    assert_eq!(p.space.dist(&x, &x7).unwrap(), 0.0);
}

#[test]
fn admm_linearized_reaches_the_reference() {
    let p = tv();
    let opts = AdmmOptions::for_operator(p.grad.as_ref(), 100.0)
        .unwrap()
        .objective(true);
    let n = p.grad.norm_estimate().unwrap();
    assert!((opts.tau - 0.99 * 100.0 / (n * n)).abs() < 1e-15);
    let mut last = f64::NAN;
    let mut cb = |_: &Element<f64>, info: &IterationInfo| -> Result<Control> {
        last = info.objective.unwrap();
        Ok(Control::Continue)
    };
    let mut x = p.space.zero().unwrap();
    let f = p.f.as_ref();
    admm_linearized(
        p.grad.as_ref(),
        &mut x,
        f,
        p.g.as_ref(),
        2000,
        &opts,
        &mut cb,
    )
    .unwrap();
    let err = p.rel_error(&x);
    eprintln!("admm_linearized, 2000 iterations: relative distance to the reference {err:.2e}");
    assert!(err < 1e-5, "relative distance {err:e}");
    let r = reference();
    eprintln!("admm objective {last}, reference {}", r.objective);
    assert!((last - r.objective).abs() < 5e-6 * r.objective);
}

#[test]
fn douglas_rachford_reaches_the_reference() {
    let p = tv();
    let opts = DouglasRachfordOptions::for_operator(p.grad.as_ref()).unwrap();
    let mut x = p.space.zero().unwrap();
    let (f, g, l) = (p.f.as_ref(), p.g.as_ref(), p.grad.as_ref());
    douglas_rachford_pd(l, &mut x, f, g, 3000, &opts, &mut ()).unwrap();
    let err = p.rel_error(&x);
    eprintln!("douglas_rachford_pd, 3000 iterations: relative distance to the reference {err:.2e}");
    assert!(err < 1e-5, "relative distance {err:e}");
    // Relaxed (λ = 1.5), with the callback seeing the primal estimate and the objective.
    let mut seen = Vec::new();
    let mut cb = |x: &Element<f64>, info: &IterationInfo| -> Result<Control> {
        seen.push((x.try_clone()?, info.objective.unwrap()));
        Ok(if info.iteration == 1500 {
            Control::Stop
        } else {
            Control::Continue
        })
    };
    let relaxed = opts.clone().lambda(1.5).objective(true);
    let mut x = p.space.zero().unwrap();
    assert_eq!(
        douglas_rachford_pd(l, &mut x, f, g, 3000, &relaxed, &mut cb)
            .unwrap()
            .iterations,
        1500
    );
    let (last, obj) = seen.last().unwrap();
    assert_eq!(
        p.space.dist(&x, last).unwrap(),
        0.0,
        "x holds the last primal estimate"
    );
    assert!((obj - p.objective(&x)).abs() <= 1e-14 * obj);
    assert!(p.rel_error(&x) < 1e-4, "{:e}", p.rel_error(&x));
}

// ------------------------------------------------------------------ LASSO with FISTA

/// A dense matrix between `rn` spaces.
struct Dense {
    a: Array2<f64>,
    domain: Space<f64>,
    range: Space<f64>,
}

impl Dense {
    fn new(a: Array2<f64>) -> Self {
        let (m, n) = a.dim();
        Self {
            a,
            domain: rn(&[n]).unwrap(),
            range: rn(&[m]).unwrap(),
        }
    }
}

impl Operator<f64> for Dense {
    fn domain(&self) -> &Space<f64> {
        &self.domain
    }
    fn range(&self) -> &Space<f64> {
        &self.range
    }
    fn evaluate(&self, x: &Element<f64>, out: &mut Element<f64>) -> Result<()> {
        let x = Array1::from(x.as_slice()?.to_vec());
        out.as_slice_mut()?
            .copy_from_slice(self.a.dot(&x).as_slice().unwrap());
        Ok(())
    }
    fn is_linear(&self) -> bool {
        true
    }
}

impl LinearOperator<f64> for Dense {
    fn adjoint(&self) -> Result<LinOp<f64>> {
        Ok(Arc::new(Dense::new(self.a.t().to_owned())))
    }
}

struct Lasso {
    space: Space<f64>,
    f: Func<f64>,
    g: Func<f64>,
    lipschitz: f64,
}

/// min_x ½‖A x − b‖² + 0.05 ‖x‖₁ with a 30×50 Gaussian A and a 5-sparse truth.
fn lasso() -> Lasso {
    let mut rng = common::rng(11);
    let (m, n) = (30, 50);
    let a = Array2::from_shape_fn((m, n), |_| {
        rng.sample::<f64, _>(rand_distr::StandardNormal) / (m as f64).sqrt()
    });
    let op = Dense::new(a);
    let space = op.domain.clone();
    let mut truth = vec![0.0; n];
    for (k, v) in [(3, 1.0), (11, -2.0), (20, 0.5), (33, 1.5), (47, -1.0)] {
        truth[k] = v;
    }
    let mut b = op.apply(&space.element_from_vec(truth).unwrap()).unwrap();
    let noise = op.range.random_normal(&mut rng).unwrap();
    op.range.axpby(0.01, &noise, 1.0, &mut b).unwrap();
    let norm = op.norm_estimate().unwrap();
    let op: LinOp<f64> = Arc::new(op);
    let l2: Func<f64> = Arc::new(L2NormSquared::new(op.range().clone()));
    let f = l2
        .translated(b)
        .unwrap()
        .scaled(0.5)
        .unwrap()
        .compose(op)
        .unwrap();
    let l1: Func<f64> = Arc::new(L1Norm::new(space.clone()));
    Lasso {
        space,
        f,
        g: l1.scaled(0.05).unwrap(),
        // ∇f = A*(A x − b) is ‖A‖²-Lipschitz; a margin over the power-method estimate.
        lipschitz: 1.01 * norm * norm,
    }
}

#[test]
fn fista_on_lasso_meets_its_rate_and_the_reference() {
    let p = lasso();
    let s = &p.space;
    let (f, g) = (p.f.as_ref(), p.g.as_ref());
    // Reference: a long run, checked by its fixed-point residual.
    let opts = FistaOptions::new(p.lipschitz);
    let mut xr = s.zero().unwrap();
    fista(&mut xr, f, g, 20_000, &opts, &mut ()).unwrap();
    let step = 1.0 / p.lipschitz;
    let mut t = f.gradient(&xr).unwrap();
    s.axpby(1.0, &xr, -step, &mut t).unwrap();
    let fixed = g.proximal(step, &t).unwrap();
    let res = s.dist(&fixed, &xr).unwrap();
    assert!(
        res < 1e-13 * s.norm(&xr).unwrap(),
        "fixed-point residual {res:e}"
    );
    let f_star = f.value(&xr).unwrap() + g.value(&xr).unwrap();
    let nnz = xr.as_slice().unwrap().iter().filter(|v| **v != 0.0).count();
    assert!(
        (3..=20).contains(&nnz),
        "{nnz} non-zeros: not a sparse solution"
    );

    // F(x_k) − F* ≤ 2 L ‖x₀ − x*‖² / (k + 1)².
    let x0 = s.zero().unwrap();
    let d0 = s.dist(&x0, &xr).unwrap();
    let mut gaps = Vec::new();
    let mut cb = |_: &Element<f64>, info: &IterationInfo| -> Result<Control> {
        gaps.push(info.objective.unwrap() - f_star);
        Ok(Control::Continue)
    };
    let mut x = x0.try_clone().unwrap();
    fista(&mut x, f, g, 2000, &opts.clone().objective(true), &mut cb).unwrap();
    for (i, gap) in gaps.iter().enumerate() {
        let k = (i + 1) as f64;
        let bound = 2.0 * p.lipschitz * d0 * d0 / ((k + 1.0) * (k + 1.0));
        assert!(
            *gap <= bound + 1e-14,
            "iteration {k}: gap {gap:e} above the bound {bound:e}"
        );
        assert!(
            *gap >= -1e-12,
            "iteration {k}: below the reference objective by {gap:e}"
        );
    }
    // Much faster than the bound in practice, and at the reference after 2000 iterations.
    assert!(gaps[99] < 1e-2 * 2.0 * p.lipschitz * d0 * d0 / (101.0 * 101.0));
    let err = s.dist(&x, &xr).unwrap() / s.norm(&xr).unwrap();
    eprintln!(
        "fista, 2000 iterations: gap {:.2e}, relative distance {err:.2e}",
        gaps[1999]
    );
    assert!(err < 1e-6, "relative distance {err:e}");
    // The unaccelerated proximal gradient method (ISTA) is far behind after 100 iterations.
    let mut xi = s.zero().unwrap();
    for _ in 0..100 {
        let mut t = f.gradient(&xi).unwrap();
        s.axpby(1.0, &xi, -step, &mut t).unwrap();
        g.proximal_into(step, &t, &mut xi).unwrap();
    }
    let ista_gap = f.value(&xi).unwrap() + g.value(&xi).unwrap() - f_star;
    assert!(
        gaps[99] < 0.5 * ista_gap,
        "fista {:e}, ista {ista_gap:e}",
        gaps[99]
    );
}

// ------------------------------------------------------------------ errors

#[test]
fn invalid_arguments_are_errors() {
    let p = tv();
    let (f, g, l) = (p.f.as_ref(), p.g.as_ref(), p.grad.as_ref());
    let mut x = p.space.zero().unwrap();
    let bad = |r: Result<SolverInfo>, what: &str| {
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{what}: {r:?}");
    };
    bad(
        pdhg(l, &mut x, f, g, 5, &PdhgOptions::new(0.0, 1.0), &mut ()),
        "τ = 0",
    );
    bad(
        pdhg(
            l,
            &mut x,
            f,
            g,
            5,
            &PdhgOptions::new(1.0, f64::NAN),
            &mut (),
        ),
        "σ = NaN",
    );
    bad(
        pdhg(
            l,
            &mut x,
            f,
            g,
            5,
            &PdhgOptions::new(1.0, 1.0).theta(1.5),
            &mut (),
        ),
        "θ > 1",
    );
    bad(
        pdhg(
            l,
            &mut x,
            f,
            g,
            5,
            &PdhgOptions::new(1.0, 1.0).gamma_primal(-1.0),
            &mut (),
        ),
        "γ < 0",
    );
    bad(
        fista(&mut x, f, f, 5, &FistaOptions::new(0.0), &mut ()),
        "L = 0",
    );
    bad(
        admm_linearized(l, &mut x, f, g, 5, &AdmmOptions::new(-1.0, 1.0), &mut ()),
        "τ < 0",
    );
    let dr = DouglasRachfordOptions::new(1.0, 1.0).lambda(2.0);
    bad(
        douglas_rachford_pd(l, &mut x, f, g, 5, &dr, &mut ()),
        "λ = 2",
    );
    // f and g swapped: the domains do not match the operator.
    let opts = PdhgOptions::new(0.01, 0.01);
    assert!(matches!(
        pdhg(l, &mut x, g, f, 5, &opts, &mut ()),
        Err(Error::SpaceMismatch { .. })
    ));
    assert!(fista(&mut x, f, g, 5, &FistaOptions::new(1.0), &mut ()).is_err());
    // x outside the domain.
    let mut wrong = rn::<f64>(&[5]).unwrap().zero().unwrap();
    assert!(pdhg(l, &mut wrong, f, g, 5, &opts, &mut ()).is_err());
    // A composed functional has no conjugate: PDHG cannot take it as g.
    let composed = p.g.compose(p.grad.clone()).unwrap();
    let id: LinOp<f64> = Arc::new(rodl::IdentityOperator::new(p.space.clone()));
    let r = pdhg(id.as_ref(), &mut x, f, composed.as_ref(), 5, &opts, &mut ());
    assert!(matches!(r, Err(Error::Unsupported(_))), "{r:?}");
    // Zero iterations leave x untouched.
    let mut y = p.data.try_clone().unwrap();
    assert_eq!(
        pdhg(l, &mut y, f, g, 0, &opts, &mut ()).unwrap().iterations,
        0
    );
    assert_eq!(p.space.dist(&y, &p.data).unwrap(), 0.0);
}

/// PDHG with unequal steps (τ ≠ σ, τσ‖∇‖² < 1) converges to the same saddle point.
#[test]
fn pdhg_converges_with_unequal_steps() {
    let p = tv();
    let n = p.grad.norm_estimate().unwrap();
    // Measured: 2.9e-5 (τ = 16σ), 1.4e-5 (τ = 4σ), 1.6e-5 (σ = 4τ); σ = 16τ is much slower
    // here (3.9e-3).
    for (tau, label, bound) in [
        (4.0 / n, "τ = 16σ", 5e-5),
        (2.0 / n, "τ = 4σ", 3e-5),
        (0.5 / n, "σ = 4τ", 3e-5),
    ] {
        let sigma = 0.98 / (tau * n * n);
        let opts = PdhgOptions::new(tau, sigma);
        let mut x = p.space.zero().unwrap();
        pdhg(
            p.grad.as_ref(),
            &mut x,
            p.f.as_ref(),
            p.g.as_ref(),
            2000,
            &opts,
            &mut (),
        )
        .unwrap();
        let err = p.rel_error(&x);
        eprintln!("pdhg {label}, 2000 iterations: relative distance to the reference {err:.2e}");
        assert!(err < bound, "{label}: relative distance {err:e}");
    }
}

/// The first iterates of PDHG with τ ≠ σ against Chambolle and Pock's update rules, evaluated
/// here with the functionals' proximal operators: `y ← prox_{σg*}(y + σLx̄)`,
/// `x ← prox_{τf}(x − τL*y)`, `x̄ ← x + θ(x − x_old)`. A τ/σ mix-up anywhere changes them.
#[test]
fn pdhg_iterates_follow_the_update_rules_with_unequal_steps() {
    let p = tv();
    let n = p.grad.norm_estimate().unwrap();
    let (tau, sigma, theta) = (0.3, 0.9 / (0.3 * n * n), 0.7);
    assert!((tau - sigma).abs() > 0.1);
    let opts = PdhgOptions::new(tau, sigma).theta(theta);
    let adj = p.grad.adjoint().unwrap();
    let g_conj = p.g.convex_conj().unwrap();
    let (dom, ran) = (&p.space, p.grad.range());
    let mut x = p.truth.try_clone().unwrap();
    let mut xbar = x.try_clone().unwrap();
    let mut y = ran.zero().unwrap();
    for k in 1..=4 {
        let mut t = p.grad.apply(&xbar).unwrap();
        ran.axpby(1.0, &y, sigma, &mut t).unwrap();
        y = g_conj.proximal(sigma, &t).unwrap();
        let mut s = adj.apply(&y).unwrap();
        dom.axpby(1.0, &x, -tau, &mut s).unwrap();
        let x_new = p.f.proximal(tau, &s).unwrap();
        xbar = x_new.try_clone().unwrap();
        dom.axpby(-theta, &x, 1.0 + theta, &mut xbar).unwrap();
        x = x_new;
        let mut got = p.truth.try_clone().unwrap();
        pdhg(
            p.grad.as_ref(),
            &mut got,
            p.f.as_ref(),
            p.g.as_ref(),
            k,
            &opts,
            &mut (),
        )
        .unwrap();
        let d = dom.dist(&got, &x).unwrap() / dom.norm(&x).unwrap();
        assert!(d < 1e-13, "iteration {k}: {d:e}");
    }
}

/// The balanced set-up on the stack `K = (I; ∇)` of TV denoising with `f = 0`: the gradient
/// block is scaled to the identity's norm, `g = (½‖· − d‖², (λ/μ) ‖|·|‖₁)`, and PDHG with the
/// returned steps reaches the reference minimiser. Argument errors are errors.
#[test]
fn balanced_pdhg_blocks_reach_the_minimiser() {
    use rodl::solvers::functional::{SeparableSum, ZeroFunctional};
    use rodl::IdentityOperator;
    let p = tv();
    let id: LinOp<f64> = Arc::new(IdentityOperator::new(p.space.clone()));
    let grad_bound = (2.0 * 4.0 * 32.0f64 * 32.0).sqrt(); // ‖∇‖² ≤ Σₖ 4/hₖ²
    let b = PdhgOptions::balanced(vec![(id, 1.0), (p.grad.clone(), grad_bound)], 1.0).unwrap();
    assert_eq!(b.factors, vec![1.0, 1.0 / grad_bound]);
    let mu = b.factors[1];
    let l2: Func<f64> = Arc::new(L2NormSquared::new(p.space.clone()));
    let fit = l2
        .translated(p.data.try_clone().unwrap())
        .unwrap()
        .scaled(0.5)
        .unwrap();
    let gl1: Func<f64> = Arc::new(GroupL1Norm::new(p.grad.range().clone()).unwrap());
    let g = SeparableSum::new(vec![fit, gl1.scaled(LAMBDA / mu).unwrap()]).unwrap();
    let f = ZeroFunctional::new(p.space.clone());
    let mut x = p.space.zero().unwrap();
    pdhg(
        b.operator.as_ref(),
        &mut x,
        &f,
        &g,
        6000,
        &b.options,
        &mut (),
    )
    .unwrap();
    let err = p.rel_error(&x);
    eprintln!("balanced pdhg, 6000 iterations: relative distance to the reference {err:.2e}");
    assert!(err < 5e-4, "relative distance {err:e}"); // measured 2.4e-4

    let id: LinOp<f64> = Arc::new(IdentityOperator::new(p.space.clone()));
    assert!(PdhgOptions::balanced::<f64>(vec![], 1.0).is_err());
    assert!(PdhgOptions::balanced(vec![(id.clone(), 0.0)], 1.0).is_err());
    assert!(PdhgOptions::balanced(vec![(id.clone(), f64::NAN)], 1.0).is_err());
    assert!(PdhgOptions::balanced(vec![(id, 1.0)], -1.0).is_err());
}
