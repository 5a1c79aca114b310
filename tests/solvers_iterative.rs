//! Iterative solvers against dense reference solutions, on small ray-transform problems, and
//! with the callbacks.

mod common;

use std::sync::Arc;

use ndarray::{Array1, Array2};
use rand_distr::{Distribution, StandardNormal};
use rodl::solvers::callback::{
    Callback, CallbackList, Control, IterationInfo, PrintIteration, ProgressBar, ResidualHistory,
    StopAtTolerance, StoreIterates,
};
use rodl::solvers::iterative::{
    cgls, conjugate_gradient, landweber, mlem, osem, sirt, LandweberOptions, RaySubsets,
    SirtOptions, SolverInfo, StopReason,
};
use rodl::tomo::{parallel_beam_geometry, Backend, Geometry, RayTransform};
use rodl::{
    rn, uniform_discr, weighted_rn, Element, LinOp, LinearOperator, LinearOperatorExt,
    MultiplyOperator, Operator, Result, ScalingOperator, Space, UniformPartition,
};

// ------------------------------------------------------------------ a dense matrix operator

/// `x ↦ M x` between weighted tensor spaces; its adjoint is `(w_domain / w_range) Mᵀ`, the
/// adjoint for the weighted inner products.
struct Dense {
    m: Array2<f64>,
    domain: Space<f64>,
    range: Space<f64>,
}

impl Dense {
    fn new(m: Array2<f64>, w_domain: f64, w_range: f64) -> Self {
        let (rows, cols) = m.dim();
        Self {
            domain: weighted_rn(&[cols], w_domain).unwrap(),
            range: weighted_rn(&[rows], w_range).unwrap(),
            m,
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
            .copy_from_slice(self.m.dot(&x).as_slice().unwrap());
        Ok(())
    }
    fn is_linear(&self) -> bool {
        true
    }
}

impl LinearOperator<f64> for Dense {
    fn adjoint(&self) -> Result<LinOp<f64>> {
        let w = self.range.weight()? / self.domain.weight()?;
        Ok(Arc::new(Dense {
            m: self.m.t().mapv(|v| v * w),
            domain: self.range.clone(),
            range: self.domain.clone(),
        }))
    }
}

fn random_matrix(rows: usize, cols: usize, seed: u64) -> Array2<f64> {
    let mut rng = common::rng(seed);
    Array2::from_shape_simple_fn((rows, cols), || StandardNormal.sample(&mut rng))
}

/// Solves the symmetric positive definite system `a x = b` by Cholesky factorisation.
fn cholesky_solve(a: &Array2<f64>, b: &Array1<f64>) -> Array1<f64> {
    let n = a.nrows();
    let mut l = Array2::<f64>::zeros((n, n));
    for j in 0..n {
        let d = a[[j, j]] - (0..j).map(|k| l[[j, k]] * l[[j, k]]).sum::<f64>();
        assert!(d > 0.0, "matrix not positive definite");
        l[[j, j]] = d.sqrt();
        for i in j + 1..n {
            let s = a[[i, j]] - (0..j).map(|k| l[[i, k]] * l[[j, k]]).sum::<f64>();
            l[[i, j]] = s / l[[j, j]];
        }
    }
    let mut y = Array1::<f64>::zeros(n);
    for i in 0..n {
        y[i] = (b[i] - (0..i).map(|k| l[[i, k]] * y[k]).sum::<f64>()) / l[[i, i]];
    }
    let mut x = Array1::<f64>::zeros(n);
    for i in (0..n).rev() {
        x[i] = (y[i] - (i + 1..n).map(|k| l[[k, i]] * x[k]).sum::<f64>()) / l[[i, i]];
    }
    x
}

/// A random least-squares problem `min ‖M x − b‖` (30 × 12, weighted spaces) and its solution
/// from the dense normal equations.
fn least_squares_problem() -> (Dense, Element<f64>, Array1<f64>) {
    let m = random_matrix(30, 12, 7);
    let mut rng = common::rng(8);
    let b = Array1::from_shape_simple_fn(30, || StandardNormal.sample(&mut rng));
    let x_ls = cholesky_solve(&m.t().dot(&m), &m.t().dot(&b));
    let op = Dense::new(m, 0.5, 2.0);
    let b = op.range.element_from_vec(b.to_vec()).unwrap();
    (op, b, x_ls)
}

fn rel_err(x: &Element<f64>, want: &Array1<f64>) -> f64 {
    let got = x.as_slice().unwrap();
    let num: f64 = got.iter().zip(want).map(|(a, b)| (a - b).powi(2)).sum();
    let den: f64 = want.iter().map(|b| b * b).sum();
    (num / den).sqrt()
}

// ------------------------------------------------------------------ CG, CGLS, Landweber

#[test]
fn cgls_matches_dense_least_squares() {
    let (op, b, x_ls) = least_squares_problem();
    let mut x = op.domain.zero().unwrap();
    let mut history = ResidualHistory::new();
    let n = cgls(&op, &mut x, &b, 40, &mut history).unwrap().iterations;
    let err = rel_err(&x, &x_ls);
    println!("CGLS: {n} iterations, relative error {err:.2e}");
    assert!(err < 1e-10, "CGLS error {err:e}");
    assert_eq!(history.len(), n);
    // The reported residual is ‖b − A x‖ in the range's (weighted) norm, and CGLS decreases it.
    let r_true = op.range.dist(&op.apply(&x).unwrap(), &b).unwrap();
    let r_last = *history.residuals().last().unwrap();
    assert!(
        (r_last - r_true).abs() <= 1e-10 * r_true,
        "{r_last} vs {r_true}"
    );
    let res = history.residuals();
    assert!(res.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-12)));
}

#[test]
fn cgls_from_a_nonzero_start_reaches_the_same_solution() {
    let (op, b, x_ls) = least_squares_problem();
    let mut x = op.domain.one().unwrap();
    cgls(&op, &mut x, &b, 40, &mut ()).unwrap();
    assert!(rel_err(&x, &x_ls) < 1e-10);
}

#[test]
fn conjugate_gradient_solves_regularised_normal_equations() {
    let (op, b, _) = least_squares_problem();
    let lambda = 0.3;
    // Dense reference: (MᵀM w_r/w_d + λ I) x = (w_r/w_d) Mᵀ b, the normal equations in the
    // weighted spaces.
    let w = op.range.weight().unwrap() / op.domain.weight().unwrap();
    let mut a = op.m.t().dot(&op.m).mapv(|v| v * w);
    for i in 0..a.nrows() {
        a[[i, i]] += lambda;
    }
    let bv = Array1::from(b.as_slice().unwrap().to_vec());
    let rhs_dense = op.m.t().dot(&bv).mapv(|v| v * w);
    let x_ref = cholesky_solve(&a, &rhs_dense);

    let domain = op.domain.clone();
    let op: LinOp<f64> = Arc::new(op);
    let id: LinOp<f64> = Arc::new(ScalingOperator::new(domain.clone(), lambda));
    let normal = op
        .adjoint()
        .unwrap()
        .compose(&op)
        .unwrap()
        .plus(&id)
        .unwrap();
    let rhs = op.adjoint().unwrap().apply(&b).unwrap();
    let mut x = domain.zero().unwrap();
    let mut history = ResidualHistory::new();
    let n = conjugate_gradient(normal.as_ref(), &mut x, &rhs, 30, &mut history)
        .unwrap()
        .iterations;
    let err = rel_err(&x, &x_ref);
    println!("CG: {n} iterations, relative error {err:.2e}");
    assert!(err < 1e-10, "CG error {err:e}");
    // The reported residual is ‖rhs − A x‖.
    let r_true = domain.dist(&normal.apply(&x).unwrap(), &rhs).unwrap();
    let r_last = *history.residuals().last().unwrap();
    assert!((r_last - r_true).abs() <= 1e-9 * domain.norm(&rhs).unwrap());
}

#[test]
fn conjugate_gradient_rejects_bad_operators() {
    let (op, b, _) = least_squares_problem();
    // Not square.
    let mut x = op.domain.zero().unwrap();
    assert!(conjugate_gradient(&op, &mut x, &b, 5, &mut ()).is_err());
    // Negative definite.
    let neg = ScalingOperator::new(op.domain.clone(), -1.0);
    let rhs = op.domain.one().unwrap();
    assert!(conjugate_gradient(&neg, &mut x, &rhs, 5, &mut ()).is_err());
}

#[test]
fn landweber_converges_to_the_least_squares_solution() {
    let (op, b, x_ls) = least_squares_problem();
    let mut x = op.domain.zero().unwrap();
    let mut history = ResidualHistory::new();
    landweber(
        &op,
        &mut x,
        &b,
        3000,
        &LandweberOptions::default(),
        &mut history,
    )
    .unwrap();
    let err = rel_err(&x, &x_ls);
    println!("Landweber: relative error {err:.2e} after 3000 iterations");
    assert!(err < 1e-10, "Landweber error {err:e}");
    let res = history.residuals();
    assert_eq!(res.len(), 3000);
    assert!(res.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-12)));
}

#[test]
fn solvers_reject_elements_of_other_spaces() {
    let (op, b, _) = least_squares_problem();
    let mut wrong = op.range.zero().unwrap();
    assert!(cgls(&op, &mut wrong, &b, 3, &mut ()).is_err());
    assert!(landweber(
        &op,
        &mut wrong,
        &b,
        3,
        &LandweberOptions::default(),
        &mut ()
    )
    .is_err());
    let mut x = op.domain.zero().unwrap();
    assert!(landweber(&op, &mut x, &b, 3, &LandweberOptions::step(-1.0), &mut ()).is_err());
    assert!(landweber(
        &op,
        &mut x,
        &b,
        3,
        &LandweberOptions::step(f64::NAN),
        &mut ()
    )
    .is_err());
}

// ------------------------------------------------------------------ callbacks

#[test]
fn stop_at_tolerance_stops_cgls_at_the_residual() {
    // A consistent square system: the residual goes to zero.
    let m = random_matrix(12, 12, 3);
    let op = Dense::new(m, 1.0, 1.0);
    let x_true = op
        .domain
        .element_from_vec((0..12).map(f64::from).collect())
        .unwrap();
    let b = op.apply(&x_true).unwrap();
    let tol = 1e-6 * op.range.norm(&b).unwrap();
    let mut history = ResidualHistory::new();
    let mut stop = StopAtTolerance::residual(tol).unwrap();
    let mut x = op.domain.zero().unwrap();
    let n = cgls(
        &op,
        &mut x,
        &b,
        500,
        &mut history.by_ref().and(stop.by_ref()),
    )
    .unwrap()
    .iterations;
    let res = history.residuals();
    assert!(n < 500, "did not stop");
    assert_eq!(stop.stopped_at(), Some(n));
    assert_eq!(res.len(), n);
    assert!(res[n - 1] <= tol && res[n - 2] > tol, "{:?}", &res[n - 2..]);
}

#[test]
fn stop_at_tolerance_on_relative_change() {
    let (op, b, _) = least_squares_problem();
    let mut x = op.domain.zero().unwrap();
    let mut iterates = StoreIterates::new();
    let mut stop = StopAtTolerance::relative_change(&op.domain, 1e-3).unwrap();
    let n = landweber(
        &op,
        &mut x,
        &b,
        1000,
        &LandweberOptions::default(),
        &mut iterates.by_ref().and(stop.by_ref()),
    )
    .unwrap()
    .iterations;
    assert!(n < 1000);
    let it = iterates.iterates();
    let change =
        |k: usize| op.domain.dist(&it[k], &it[k - 1]).unwrap() / op.domain.norm(&it[k]).unwrap();
    assert!(change(n - 1) <= 1e-3 && change(n - 2) > 1e-3);
    // The last stored iterate is the solver's result.
    assert_eq!(op.domain.dist(&it[n - 1], &x).unwrap(), 0.0);
    // Residual mode with a solver that reports none is an error, not a silent no-op.
    let mut r = StopAtTolerance::<f64>::residual(1.0).unwrap();
    let info = IterationInfo {
        iteration: 1,
        ..Default::default()
    };
    assert!(r.call(&x, &info).is_err());
    assert!(StopAtTolerance::<f64>::residual(-1.0).is_err());
    assert!(StopAtTolerance::relative_change(&op.domain, f64::NAN).is_err());
}

#[test]
fn composed_callbacks_are_all_called() {
    let (op, b, _) = least_squares_problem();
    let mut x = op.domain.zero().unwrap();
    let (mut a, mut c) = (0usize, Vec::new());
    {
        // The first stops at iteration 3; the second is still called then.
        let first = |_x: &Element<f64>, i: &IterationInfo| -> Result<Control> {
            a += 1;
            Ok(if i.iteration == 3 {
                Control::Stop
            } else {
                Control::Continue
            })
        };
        let second = |_x: &Element<f64>, i: &IterationInfo| -> Result<Control> {
            c.push(i.iteration);
            Ok(Control::Continue)
        };
        let n = cgls(&op, &mut x, &b, 10, &mut first.and(second))
            .unwrap()
            .iterations;
        assert_eq!(n, 3);
    }
    assert_eq!((a, c), (3, vec![1, 2, 3]));

    // A list: history, printout, progress bar, stored iterates.
    let mut history = ResidualHistory::new();
    let mut store = StoreIterates::new().every(2).unwrap();
    let mut print = PrintIteration::with_writer(Vec::new())
        .every(3)
        .unwrap()
        .prefix("cgls ");
    let mut bar = ProgressBar::hidden(8);
    let mut x = op.domain.zero().unwrap();
    let mut list = CallbackList::new()
        .with(history.by_ref())
        .with(store.by_ref())
        .with(print.by_ref())
        .with(bar.by_ref());
    let n = cgls(&op, &mut x, &b, 8, &mut list).unwrap().iterations;
    drop(list);
    assert_eq!(n, 8);
    assert_eq!(history.iterations(), (1..=8).collect::<Vec<_>>());
    assert_eq!(store.iterations(), &[2, 4, 6, 8]);
    assert_eq!(op.domain.dist(&store.iterates()[3], &x).unwrap(), 0.0);
    let text = String::from_utf8(print.into_writer()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with("cgls iter      3  residual "));
    let printed: f64 = lines[1].rsplit(' ').next().unwrap().parse().unwrap();
    let r6 = history.residuals()[5];
    assert!((printed - r6).abs() <= 1e-6 * r6);
    assert_eq!(bar.position(), 8);
}

// ------------------------------------------------------------------ SIRT, MLEM, OSEM

/// A positive phantom on [-1, 1]² (background 0.2, an ellipse of 1.2, a disc of 1.7), the
/// parallel-beam transform with `angles` views and its exact data.
fn ray_problem(
    n: usize,
    angles: usize,
) -> (Space<f64>, RayTransform<f64>, Element<f64>, Element<f64>) {
    let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[n, n]).unwrap();
    let geometry = parallel_beam_geometry(&space, Some(angles)).unwrap();
    let ray = RayTransform::new(space.clone(), geometry, Backend::default()).unwrap();
    let phantom = space
        .element_from_fn(|p| {
            let mut v = 0.2;
            if (p[0] / 0.6).powi(2) + (p[1] / 0.8).powi(2) < 1.0 {
                v += 1.0;
            }
            if (p[0] - 0.2).powi(2) + (p[1] - 0.3).powi(2) < 0.04 {
                v += 0.5;
            }
            v
        })
        .unwrap();
    let data = ray.apply(&phantom).unwrap();
    (space, ray, phantom, data)
}

/// The matrix of a linear operator on tensor spaces (column j = the image of the j-th unit
/// vector).
fn matrix_of(op: &dyn LinearOperator<f64>) -> Array2<f64> {
    let (n, m) = (op.domain().size(), op.range().size());
    let mut a = Array2::zeros((m, n));
    for j in 0..n {
        let mut e = vec![0.0; n];
        e[j] = 1.0;
        let col = op.apply(&op.domain().element_from_vec(e).unwrap()).unwrap();
        for (i, v) in col.as_slice().unwrap().iter().enumerate() {
            a[[i, j]] = *v;
        }
    }
    a
}

fn inv_or_zero(v: &Array1<f64>) -> Array1<f64> {
    v.mapv(|s| if s == 0.0 { 0.0 } else { 1.0 / s })
}

fn host(x: &Element<f64>) -> Array1<f64> {
    Array1::from(x.as_slice().unwrap().to_vec())
}

fn rel(a: &Array1<f64>, b: &Array1<f64>) -> f64 {
    (a - b).mapv(|v| v * v).sum().sqrt() / b.mapv(|v| v * v).sum().sqrt()
}

#[test]
fn sirt_matches_the_dense_astra_iteration() {
    let (space, ray, _, data) = ray_problem(16, 20);
    let a = matrix_of(&ray);
    let b = host(&data);
    let r = inv_or_zero(&a.dot(&Array1::ones(a.ncols())));
    let c = inv_or_zero(&a.t().dot(&Array1::ones(a.nrows())));
    let opts = SirtOptions {
        relaxation: 1.5,
        nonnegative: true,
    };
    let mut want = Array1::<f64>::zeros(a.ncols());
    for _ in 0..20 {
        let res = &b - &a.dot(&want);
        want = &want + &(opts.relaxation * &c * &a.t().dot(&(&r * &res)));
        want.mapv_inplace(|v| v.max(0.0));
    }
    let mut x = space.zero().unwrap();
    let mut history = ResidualHistory::new();
    assert_eq!(
        sirt(&ray, &mut x, &data, 20, &opts, &mut history)
            .unwrap()
            .iterations,
        20
    );
    let err = rel(&host(&x), &want);
    println!("SIRT vs dense ASTRA formula: relative difference {err:.2e}");
    assert!(err < 1e-12, "{err:e}");
    let r_true = ray.range().dist(&ray.apply(&x).unwrap(), &data).unwrap();
    assert!((history.residuals()[19] - r_true).abs() <= 1e-12 * r_true);
    assert!(sirt(
        &ray,
        &mut x,
        &data,
        1,
        &SirtOptions {
            relaxation: 2.5,
            ..Default::default()
        },
        &mut ()
    )
    .is_err());
}

#[test]
fn sirt_decreases_the_weighted_misfit_and_stays_nonnegative() {
    let (space, ray, phantom, data) = ray_problem(32, 45);
    let row = inv_or_zero(&host(&ray.apply(&space.one().unwrap()).unwrap()));
    let b = host(&data);
    let mut misfits = Vec::new();
    let mut min_x = f64::INFINITY;
    let mut cb = |x: &Element<f64>, _i: &IterationInfo| -> Result<Control> {
        let res = &b - &host(&ray.apply(x)?);
        misfits.push((&row * &res * &res).sum());
        min_x = min_x.min(x.as_slice()?.iter().cloned().fold(f64::INFINITY, f64::min));
        Ok(Control::Continue)
    };
    let mut x = space.zero().unwrap();
    let opts = SirtOptions {
        nonnegative: true,
        ..Default::default()
    };
    sirt(&ray, &mut x, &data, 60, &opts, &mut cb).unwrap();
    assert!(min_x >= 0.0);
    assert!(
        misfits.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-12)),
        "{misfits:?}"
    );
    let misfit = ray.range().dist(&ray.apply(&x).unwrap(), &data).unwrap()
        / ray.range().norm(&data).unwrap();
    let err = space.dist(&x, &phantom).unwrap() / space.norm(&phantom).unwrap();
    println!("SIRT 32², 60 iterations: relative misfit {misfit:.3e}, relative error {err:.3e}");
    assert!(misfit < 0.02 && err < 0.2, "misfit {misfit}, error {err}");
}

#[test]
fn mlem_matches_the_dense_iteration() {
    let (space, ray, _, data) = ray_problem(16, 20);
    let a = matrix_of(&ray);
    let y = host(&data);
    let inv_sens = inv_or_zero(&a.t().dot(&Array1::ones(a.nrows())));
    let mut want = Array1::<f64>::ones(a.ncols());
    for _ in 0..20 {
        let ratio = inv_or_zero(&a.dot(&want)) * &y;
        want = &want * &inv_sens * &a.t().dot(&ratio);
    }
    let mut x = space.one().unwrap();
    assert_eq!(
        mlem(&ray, &mut x, &data, 20, &mut ()).unwrap().iterations,
        20
    );
    let err = rel(&host(&x), &want);
    println!("MLEM vs dense formula: relative difference {err:.2e}");
    assert!(err < 1e-12, "{err:e}");
}

#[test]
fn mlem_keeps_positivity_and_increases_the_likelihood() {
    let (space, ray, phantom, data) = ray_problem(32, 45);
    let y = host(&data);
    let mut loglik = Vec::new();
    let mut min_x = f64::INFINITY;
    let mut cb = |x: &Element<f64>, _i: &IterationInfo| -> Result<Control> {
        let ax = host(&ray.apply(x)?);
        let l: f64 = y
            .iter()
            .zip(&ax)
            .map(|(&y, &m)| if y == 0.0 { -m } else { y * m.ln() - m })
            .sum();
        loglik.push(l);
        min_x = min_x.min(x.as_slice()?.iter().cloned().fold(f64::INFINITY, f64::min));
        Ok(Control::Continue)
    };
    let mut x = space.one().unwrap();
    mlem(&ray, &mut x, &data, 40, &mut cb).unwrap();
    assert_eq!(loglik.len(), 40);
    assert!(min_x > 0.0, "min {min_x}");
    for (k, w) in loglik.windows(2).enumerate() {
        assert!(
            w[1] >= w[0] - 1e-12 * w[0].abs(),
            "likelihood fell at {}: {w:?}",
            k + 2
        );
    }
    let err = space.dist(&x, &phantom).unwrap() / space.norm(&phantom).unwrap();
    println!(
        "MLEM 32², 40 iterations: log-likelihood {:.6e} → {:.6e}, relative error {err:.3e}",
        loglik[0], loglik[39]
    );
    assert!(err < 0.2);
}

#[test]
fn mlem_leaves_unseen_voxels_unchanged() {
    // Four views within 0.3 rad of the y axis and a detector covering only |u| < 0.5: the
    // voxels near x = ±1 are never hit.
    let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16]).unwrap();
    let angles = UniformPartition::new(&[0.0], &[0.3], &[4]).unwrap();
    let det = UniformPartition::new(&[-0.5], &[0.5], &[8]).unwrap();
    let ray = RayTransform::new(
        space.clone(),
        Geometry::parallel_2d(&angles, &det).unwrap(),
        Backend::default(),
    )
    .unwrap();
    let sens = host(
        &ray.adjoint()
            .unwrap()
            .apply(&ray.range().one().unwrap())
            .unwrap(),
    );
    let data = ray.apply(&space.full(2.0).unwrap()).unwrap();
    let mut x = space.full(1.5).unwrap();
    mlem(&ray, &mut x, &data, 5, &mut ()).unwrap();
    let x = host(&x);
    let unseen = sens.iter().filter(|&&s| s == 0.0).count();
    assert!(unseen > 0 && unseen < sens.len());
    for (s, v) in sens.iter().zip(&x) {
        if *s == 0.0 {
            assert_eq!(*v, 1.5);
        } else {
            assert!(v.is_finite() && *v > 0.0 && *v != 1.5);
        }
    }
}

#[test]
fn ray_subsets_stack_to_the_full_transform() {
    let (space, ray, phantom, data) = ray_problem(16, 30);
    let subsets = RaySubsets::new(&ray, 4, Backend::default()).unwrap();
    assert_eq!(subsets.len(), 4);
    let blocks = subsets.split_data(&data).unwrap();
    let full = data.as_array().unwrap();
    let mut covered = [false; 30];
    for ((views, op), block) in subsets.views().iter().zip(subsets.operators()).zip(&blocks) {
        let fwd = op.apply(&phantom).unwrap();
        let want = full.slice(ndarray::s![views.clone(), ..]).into_dyn();
        assert_eq!(block.as_array().unwrap(), want);
        let d = (&fwd.as_array().unwrap() - &want)
            .mapv(f64::abs)
            .fold(0.0f64, |a, &b| a.max(b));
        assert!(d <= 1e-12, "{d}");
        views.clone().for_each(|v| covered[v] = true);
    }
    assert!(covered.iter().all(|&c| c));
    // The subsets' adjoints add up to the full adjoint.
    let mut sum = space.zero().unwrap();
    for (op, block) in subsets.operators().iter().zip(&blocks) {
        let part = op.adjoint().unwrap().apply(block).unwrap();
        space.axpby(1.0, &part, 1.0, &mut sum).unwrap();
    }
    let full_adj = ray.adjoint().unwrap().apply(&data).unwrap();
    assert!(space.dist(&sum, &full_adj).unwrap() <= 1e-12 * space.norm(&full_adj).unwrap());
    assert!(RaySubsets::new(&ray, 0, Backend::default()).is_err());
    assert!(RaySubsets::new(&ray, 31, Backend::default()).is_err());
    assert!(subsets.split_data(&phantom).is_err());
}

#[test]
fn osem_reduces_the_misfit_faster_per_pass_than_mlem() {
    let (space, ray, _, data) = ray_problem(32, 60);
    let subsets = RaySubsets::new(&ray, 4, Backend::default()).unwrap();
    let blocks = subsets.split_data(&data).unwrap();
    let misfit = |x: &Element<f64>| {
        ray.range().dist(&ray.apply(x).unwrap(), &data).unwrap() / ray.range().norm(&data).unwrap()
    };
    let mut m_mlem = Vec::new();
    let mut m_osem = Vec::new();
    let mut x = space.one().unwrap();
    mlem(&ray, &mut x, &data, 5, &mut |x: &Element<f64>,
                                       _i: &IterationInfo|
     -> Result<Control> {
        m_mlem.push(misfit(x));
        Ok(Control::Continue)
    })
    .unwrap();
    let mut x = space.one().unwrap();
    let n = osem(
        subsets.operators(),
        &mut x,
        &blocks,
        5,
        &mut |x: &Element<f64>, _i: &IterationInfo| -> Result<Control> {
            m_osem.push(misfit(x));
            Ok(Control::Continue)
        },
    )
    .unwrap()
    .iterations;
    assert_eq!(n, 5);
    println!("relative misfit per pass, MLEM:    {m_mlem:.3?}");
    println!("relative misfit per pass, OSEM(4): {m_osem:.3?}");
    for k in 0..5 {
        assert!(
            m_osem[k] < 0.7 * m_mlem[k],
            "pass {}: OSEM {} vs MLEM {}",
            k + 1,
            m_osem[k],
            m_mlem[k]
        );
    }
    // Bad subset lists are errors.
    let mut x = space.one().unwrap();
    assert!(osem(subsets.operators(), &mut x, &blocks[..3], 1, &mut ()).is_err());
    assert!(osem::<f64>(&[], &mut x, &[], 1, &mut ()).is_err());
}

// ------------------------------------------------------------------ what the solvers return

#[test]
fn solver_info_says_why_the_solver_stopped() {
    let s = rn::<f64>(&[3]).unwrap();
    let b = s.element_from_vec(vec![1.0, -2.0, 0.5]).unwrap();
    let two = ScalingOperator::new(s.clone(), 2.0);
    let stop_at = |n: usize| {
        move |_: &Element<f64>, i: &IterationInfo| -> Result<Control> {
            Ok(if i.iteration == n {
                Control::Stop
            } else {
                Control::Continue
            })
        }
    };
    // One singular value: CGLS and CG are exact after one iteration and say so.
    let mut x = s.zero().unwrap();
    let info = cgls(&two, &mut x, &b, 10, &mut ()).unwrap();
    assert_eq!((info.iterations, info.stop), (1, StopReason::Converged));
    assert_eq!(info.residual, Some(0.0));
    let mut x = s.zero().unwrap();
    let info = conjugate_gradient(&two, &mut x, &b, 10, &mut ()).unwrap();
    assert_eq!((info.iterations, info.stop), (1, StopReason::Converged));
    // Already solved: no iteration, converged.
    let info = cgls(&two, &mut x, &b, 10, &mut ()).unwrap();
    assert_eq!((info.iterations, info.stop), (0, StopReason::Converged));
    // No iteration asked for.
    let mut x = s.zero().unwrap();
    let none = landweber(&two, &mut x, &b, 0, &LandweberOptions::default(), &mut ()).unwrap();
    assert_eq!(
        (none.iterations, none.residual, none.stop),
        (0, None, StopReason::MaxIterations)
    );
    // All iterations done; the residual is the final ‖b − A x‖.
    let info = landweber(&two, &mut x, &b, 4, &LandweberOptions::step(0.1), &mut ()).unwrap();
    assert_eq!((info.iterations, info.stop), (4, StopReason::MaxIterations));
    let r_true = s.dist(&two.apply(&x).unwrap(), &b).unwrap();
    assert!((info.residual.unwrap() - r_true).abs() <= 1e-15 * r_true);
    // The callback stops it.
    let mut x = s.zero().unwrap();
    let opts = SirtOptions::default();
    let info = sirt(&two, &mut x, &b, 10, &opts, &mut stop_at(3)).unwrap();
    assert_eq!(
        (info.iterations, info.stop),
        (3, StopReason::CallbackStopped)
    );
    let mut x = s.one().unwrap();
    let info: SolverInfo = mlem(&two, &mut x, &s.one().unwrap(), 5, &mut stop_at(2)).unwrap();
    assert_eq!((info.iterations, info.residual), (2, None));
    assert_eq!(info.stop, StopReason::CallbackStopped);
    // A zero-curvature direction while the residual is not zero: CG breaks down. With
    // A = diag(25/16, 0) and b = (4, 3) every step is exact: α = 1, r = (−9/4, 3), β = 9/16,
    // p = (0, 75/16) in the null space of A.
    let s = rn::<f64>(&[2]).unwrap();
    let diag = s.element_from_vec(vec![1.5625, 0.0]).unwrap();
    let semi = MultiplyOperator::new(s.clone(), diag).unwrap();
    let b = s.element_from_vec(vec![4.0, 3.0]).unwrap();
    let mut x = s.zero().unwrap();
    let info = conjugate_gradient(&semi, &mut x, &b, 10, &mut ()).unwrap();
    assert_eq!((info.iterations, info.stop), (1, StopReason::Breakdown));
    assert_eq!(info.residual, Some(3.75));
}

/// Guards OSEM's update exactly: two passes over three uneven subsets (7, 7 and 6 views) equal
/// the dense EM update `x ← x · A_sᵀ(y_s / A_s x) / A_sᵀ 1` applied subset by subset in the
/// subsets' processing order,
/// with `A_s` the subset's rows of the full matrix (to 1e-12), and equal MLEM run one
/// iteration on each subset in turn. A pass that skips, repeats or reorders a subset, or
/// uses another subset's sensitivity, fails by far more.
#[test]
fn osem_passes_are_mlem_subset_by_subset() {
    let (space, ray, _, data) = ray_problem(12, 20);
    let subsets = RaySubsets::new(&ray, 3, Backend::default()).unwrap();
    let blocks = subsets.split_data(&data).unwrap();
    let a = matrix_of(&ray);
    let y = host(&data);
    let nu = a.nrows() / 20;
    let start: Vec<f64> = (0..space.size())
        .map(|k| 0.5 + (k % 7) as f64 * 0.1)
        .collect();
    let mut want = Array1::from(start.clone());
    for _ in 0..2 {
        for views in subsets.views() {
            let rows = views.start * nu..views.end * nu;
            let a_s = a.slice(ndarray::s![rows.clone(), ..]);
            let y_s = y.slice(ndarray::s![rows]);
            let inv_sens = inv_or_zero(&a_s.t().dot(&Array1::ones(a_s.nrows())));
            let ratio = inv_or_zero(&a_s.dot(&want)) * y_s;
            want = &want * &inv_sens * &a_s.t().dot(&ratio);
        }
    }
    let mut sizes: Vec<usize> = subsets.views().iter().map(|v| v.len()).collect();
    sizes.sort();
    assert_eq!(sizes, vec![6, 7, 7]);
    let mut x = space.element_from_vec(start.clone()).unwrap();
    assert_eq!(
        osem(subsets.operators(), &mut x, &blocks, 2, &mut ())
            .unwrap()
            .iterations,
        2
    );
    let err = rel(&host(&x), &want);
    println!("OSEM vs the dense subset-by-subset update: relative difference {err:.2e}");
    assert!(err < 1e-12, "{err:e}");
    let mut m = space.element_from_vec(start).unwrap();
    for _ in 0..2 {
        for (op, b) in subsets.operators().iter().zip(&blocks) {
            mlem(op.as_ref(), &mut m, b, 1, &mut ()).unwrap();
        }
    }
    let err = rel(&host(&x), &host(&m));
    assert!(err < 1e-12, "OSEM vs MLEM per subset: {err:e}");
    // One pass differs from two by far more than the tolerance (the check discriminates).
    let mut one = space.element_from_vec(host(&x).to_vec()).unwrap();
    osem(subsets.operators(), &mut one, &blocks, 1, &mut ()).unwrap();
    assert!(rel(&host(&one), &want) > 1e-3);
}
