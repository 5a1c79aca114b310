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
use rodl::solvers::iterative::{cgls, conjugate_gradient, landweber};
use rodl::{
    weighted_rn, Element, LinOp, LinearOperator, LinearOperatorExt, Operator, Result,
    ScalingOperator, Space,
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
    let n = cgls(&op, &mut x, &b, 40, &mut history).unwrap();
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
    let n = conjugate_gradient(normal.as_ref(), &mut x, &rhs, 30, &mut history).unwrap();
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
    landweber(&op, &mut x, &b, 3000, None, &mut history).unwrap();
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
    assert!(landweber(&op, &mut wrong, &b, 3, None, &mut ()).is_err());
    let mut x = op.domain.zero().unwrap();
    assert!(landweber(&op, &mut x, &b, 3, Some(-1.0), &mut ()).is_err());
    assert!(landweber(&op, &mut x, &b, 3, Some(f64::NAN), &mut ()).is_err());
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
    .unwrap();
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
        None,
        &mut iterates.by_ref().and(stop.by_ref()),
    )
    .unwrap();
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
        let n = cgls(&op, &mut x, &b, 10, &mut first.and(second)).unwrap();
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
    let n = cgls(&op, &mut x, &b, 8, &mut list).unwrap();
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
