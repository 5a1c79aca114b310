//! Diagnostics for users' own operators: `check_adjoint` accepts exact adjoints and catches wrong
//! ones by many orders of magnitude, `check_linearity` catches non-linear operators, and the
//! proptest strategies make a user's adjointness property test a few lines.

mod common;

use std::sync::Arc;

use proptest::prelude::*;
use rodl::diagnostics::strategies::{element_pair, tensor_space};
use rodl::{
    check_adjoint, check_linearity, rn, uniform_discr, Element, Error, LinOp, LinearOperator,
    LinearOperatorExt, Operator, Result, Space,
};

use common::*;

/// How the adjoint of [`CumSum`] is (mis)implemented.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Adjoint {
    /// The true adjoint: the reversed cumulative sum.
    Exact,
    /// Off by a factor 1 + 1e-3.
    Scaled,
    /// "Transposed" wrongly: the forward cumulative sum again.
    NotTransposed,
    /// Exact except for the last entry, which is dropped.
    DropsLast,
}

/// The cumulative sum over the entries in C order, on any tensor space (same space in and out,
/// so the weights cancel).
struct CumSum {
    space: Space<f64>,
    reverse: bool,
    adjoint: Adjoint,
}

impl CumSum {
    fn new(space: Space<f64>, adjoint: Adjoint) -> Self {
        Self {
            space,
            reverse: false,
            adjoint,
        }
    }
}

impl Operator<f64> for CumSum {
    fn domain(&self) -> &Space<f64> {
        &self.space
    }
    fn range(&self) -> &Space<f64> {
        &self.space
    }
    fn evaluate(&self, x: &Element<f64>, out: &mut Element<f64>) -> Result<()> {
        let (x, o) = (x.as_slice()?, out.as_slice_mut()?);
        let mut acc = 0.0;
        let n = x.len();
        for k in 0..n {
            let i = if self.reverse { n - 1 - k } else { k };
            acc += x[i];
            o[i] = acc;
        }
        Ok(())
    }
    fn is_linear(&self) -> bool {
        true
    }
}

impl LinearOperator<f64> for CumSum {
    fn adjoint(&self) -> Result<LinOp<f64>> {
        let rev = |reverse| CumSum {
            space: self.space.clone(),
            reverse,
            adjoint: Adjoint::Exact,
        };
        let exact: LinOp<f64> = Arc::new(rev(!self.reverse));
        Ok(match self.adjoint {
            Adjoint::Exact => exact,
            Adjoint::Scaled => rodl::LinearOperatorExt::scaled(&exact, 1.0 + 1e-3).unwrap(),
            Adjoint::NotTransposed => Arc::new(rev(self.reverse)),
            Adjoint::DropsLast => {
                let n = self.space.size();
                let mut mask = self.space.one()?;
                mask.as_slice_mut()?[n - 1] = 0.0;
                let m: LinOp<f64> =
                    Arc::new(rodl::MultiplyOperator::new(self.space.clone(), mask)?);
                rodl::LinearOperatorExt::compose(&m, &exact)?
            }
        })
    }
}

/// Samples a discretised function into plain ℝⁿ: the identity on the data. Its adjoint must
/// divide by the cell volume — a classic mistake is to forget that.
struct Sample {
    discr: Space<f64>,
    plain: Space<f64>,
    forget_weight: bool,
}

impl Operator<f64> for Sample {
    fn domain(&self) -> &Space<f64> {
        &self.discr
    }
    fn range(&self) -> &Space<f64> {
        &self.plain
    }
    fn evaluate(&self, x: &Element<f64>, out: &mut Element<f64>) -> Result<()> {
        out.as_slice_mut()?.copy_from_slice(x.as_slice()?);
        Ok(())
    }
    fn is_linear(&self) -> bool {
        true
    }
}

struct SampleAdjoint {
    discr: Space<f64>,
    plain: Space<f64>,
    factor: f64,
}

impl Operator<f64> for SampleAdjoint {
    fn domain(&self) -> &Space<f64> {
        &self.plain
    }
    fn range(&self) -> &Space<f64> {
        &self.discr
    }
    fn evaluate(&self, y: &Element<f64>, out: &mut Element<f64>) -> Result<()> {
        for (o, v) in out.as_slice_mut()?.iter_mut().zip(y.as_slice()?) {
            *o = self.factor * v;
        }
        Ok(())
    }
    fn is_linear(&self) -> bool {
        true
    }
}

impl LinearOperator<f64> for SampleAdjoint {
    fn adjoint(&self) -> Result<LinOp<f64>> {
        Ok(Arc::new(Sample {
            discr: self.discr.clone(),
            plain: self.plain.clone(),
            forget_weight: false,
        }))
    }
}

impl LinearOperator<f64> for Sample {
    fn adjoint(&self) -> Result<LinOp<f64>> {
        let w = self.discr.weight()?;
        Ok(Arc::new(SampleAdjoint {
            discr: self.discr.clone(),
            plain: self.plain.clone(),
            factor: if self.forget_weight { 1.0 } else { 1.0 / w },
        }))
    }
}

fn sample(forget_weight: bool) -> Sample {
    let discr = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 2.0], &[8, 6]).unwrap();
    let plain = rn::<f64>(&[8, 6]).unwrap();
    Sample {
        discr,
        plain,
        forget_weight,
    }
}

// ------------------------------------------------------------------ check_adjoint

#[test]
fn exact_adjoints_pass() {
    let s = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[7, 5]).unwrap();
    let r = check_adjoint(&CumSum::new(s, Adjoint::Exact), 5, 1).unwrap();
    assert!(r.max_rel_error <= 1e-14, "{}", r.max_rel_error);
    assert_eq!(r.trials, 5);
    let r = check_adjoint(&sample(false), 5, 2).unwrap();
    assert!(r.max_rel_error <= 1e-15, "{}", r.max_rel_error);
    // ‖Sample‖ = 1/√(cell volume): ‖x‖² = w Σx² while ‖Sx‖² = Σx²
    let want = 1.0 / (1.0f64 / 48.0 * 2.0).sqrt();
    assert!(
        (r.opnorm - want).abs() <= 1e-12 * want,
        "{} vs {want}",
        r.opnorm
    );
}

#[test]
fn deliberately_wrong_adjoints_are_caught() {
    let s = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[7, 5]).unwrap();
    let tol = adjoint_tol::<f64>();
    for (wrong, at_least) in [
        (Adjoint::Scaled, 1e-6),
        (Adjoint::NotTransposed, 1e-2),
        (Adjoint::DropsLast, 1e-6),
    ] {
        let op = CumSum::new(s.clone(), wrong);
        let r = check_adjoint(&op, 5, 3).unwrap();
        assert!(
            r.max_rel_error > at_least && r.max_rel_error > 1e6 * tol,
            "{wrong:?}: error only {:e}",
            r.max_rel_error
        );
    }
    // the adjoint that forgets the weight of the discretised space is off by a factor 1/w ≈ 24
    let r = check_adjoint(&sample(true), 3, 4).unwrap();
    assert!(r.max_rel_error > 1e-2, "error only {:e}", r.max_rel_error);
}

#[test]
fn adjoint_of_adjoint_is_checked_too() {
    let op = sample(false);
    let adj = op.adjoint().unwrap();
    let r = check_adjoint(adj.as_ref(), 3, 5).unwrap();
    assert!(r.max_rel_error <= 1e-15, "{}", r.max_rel_error);
    let bad = sample(true).adjoint().unwrap();
    assert!(check_adjoint(bad.as_ref(), 3, 5).unwrap().max_rel_error > 1e-2);
}

#[test]
fn check_adjoint_is_seeded() {
    let s = rn::<f64>(&[20]).unwrap();
    let op = CumSum::new(s, Adjoint::Scaled);
    let a = check_adjoint(&op, 3, 11).unwrap();
    let b = check_adjoint(&op, 3, 11).unwrap();
    let c = check_adjoint(&op, 3, 12).unwrap();
    assert_eq!(a.max_rel_error, b.max_rel_error);
    assert_ne!(a.max_rel_error, c.max_rel_error);
    // zero trials still run one
    assert_eq!(check_adjoint(&op, 0, 1).unwrap().trials, 1);
}

/// A linear operator that does not override `Operator::is_linear` (which says `false`).
struct ForgotIsLinear(Space<f64>);

impl Operator<f64> for ForgotIsLinear {
    fn domain(&self) -> &Space<f64> {
        &self.0
    }
    fn range(&self) -> &Space<f64> {
        &self.0
    }
    fn evaluate(&self, x: &Element<f64>, out: &mut Element<f64>) -> Result<()> {
        self.0.assign(x, out)
    }
}

impl LinearOperator<f64> for ForgotIsLinear {
    fn adjoint(&self) -> Result<LinOp<f64>> {
        Ok(Arc::new(rodl::IdentityOperator::new(self.0.clone())))
    }
}

/// Implementing `LinearOperator` is what makes an operator linear: `check_adjoint` and the
/// algebra of `LinOp`s do not consult `is_linear`.
#[test]
fn linear_operators_need_no_is_linear_override() {
    let op = ForgotIsLinear(rn(&[3]).unwrap());
    assert!(!op.is_linear());
    let report = check_adjoint(&op, 2, 0).unwrap();
    assert!(report.max_rel_error < 1e-15, "{report:?}");
    let shared: LinOp<f64> = Arc::new(ForgotIsLinear(rn(&[3]).unwrap()));
    assert!(shared.compose(&shared).unwrap().is_linear());
    assert!(shared.scaled(2.0).unwrap().is_linear());
    assert!(shared.as_op().is_linear());
    assert!(ForgotIsLinear(rn(&[3]).unwrap())
        .plus(&shared)
        .unwrap()
        .is_linear());
}

/// An adjoint with the right shapes but the wrong weighting is a space mismatch.
#[test]
fn adjoint_on_the_wrong_space_is_refused() {
    let s = uniform_discr::<f64>(&[0.0], &[1.0], &[4]).unwrap();
    let t = rn::<f64>(&[4]).unwrap();
    struct WrongSpace(Space<f64>, Space<f64>);
    impl Operator<f64> for WrongSpace {
        fn domain(&self) -> &Space<f64> {
            &self.0
        }
        fn range(&self) -> &Space<f64> {
            &self.0
        }
        fn evaluate(&self, x: &Element<f64>, out: &mut Element<f64>) -> Result<()> {
            self.0.assign(x, out)
        }
        fn is_linear(&self) -> bool {
            true
        }
    }
    impl LinearOperator<f64> for WrongSpace {
        fn adjoint(&self) -> Result<LinOp<f64>> {
            Ok(Arc::new(rodl::IdentityOperator::new(self.1.clone())))
        }
    }
    assert!(matches!(
        check_adjoint(&WrongSpace(s, t), 1, 0),
        Err(Error::SpaceMismatch { .. })
    ));
}

// ------------------------------------------------------------------ check_linearity

/// x ↦ x + `shift` (affine) or x ↦ x + `eps`·x² (slightly non-linear).
struct Perturbed {
    space: Space<f64>,
    shift: f64,
    eps: f64,
}

impl Operator<f64> for Perturbed {
    fn domain(&self) -> &Space<f64> {
        &self.space
    }
    fn range(&self) -> &Space<f64> {
        &self.space
    }
    fn evaluate(&self, x: &Element<f64>, out: &mut Element<f64>) -> Result<()> {
        for (o, v) in out.as_slice_mut()?.iter_mut().zip(x.as_slice()?) {
            *o = v + self.shift + self.eps * v * v;
        }
        Ok(())
    }
}

#[test]
fn check_linearity_separates_linear_from_nonlinear() {
    let s = uniform_discr::<f64>(&[0.0], &[1.0], &[30]).unwrap();
    let lin = CumSum::new(s.clone(), Adjoint::Exact);
    let e = check_linearity(&lin, 4, 0).unwrap();
    assert!(e <= 1e-15, "{e}");
    for (shift, eps, at_least) in [(1.0, 0.0, 1e-2), (0.0, 1e-6, 1e-8), (1e-9, 0.0, 1e-11)] {
        let op = Perturbed {
            space: s.clone(),
            shift,
            eps,
        };
        let e = check_linearity(&op, 4, 0).unwrap();
        assert!(e > at_least, "shift {shift}, eps {eps}: error only {e:e}");
    }
}

// ------------------------------------------------------------------ the strategies, as a user would

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// A user's adjointness property test in a few lines.
    #[test]
    fn users_operator_is_adjoint(space in tensor_space::<f64>(1..=3, 1..=6), seed in any::<u64>()) {
        let r = check_adjoint(&CumSum::new(space, Adjoint::Exact), 2, seed).unwrap();
        prop_assert!(r.max_rel_error <= 1e-12);
    }

    /// …and the same with elements drawn by the strategies instead of `check_adjoint`'s own.
    #[test]
    fn users_operator_is_adjoint_on_drawn_elements(
        (space, (x, y)) in tensor_space::<f64>(1..=3, 1..=6).prop_flat_map(|s| (Just(s.clone()), element_pair(s)))
    ) {
        let op = CumSum::new(space.clone(), Adjoint::Exact);
        let lhs = space.inner(&op.apply(&x).unwrap(), &y).unwrap();
        let rhs = space.inner(&x, &op.adjoint().unwrap().apply(&y).unwrap()).unwrap();
        let scale = op.norm_estimate().unwrap() * space.norm(&x).unwrap() * space.norm(&y).unwrap();
        prop_assert!((lhs - rhs).abs() <= 1e-13 * scale);
    }

    /// A wrong adjoint fails on every random space with more than one entry.
    #[test]
    fn wrong_adjoint_is_caught_on_random_spaces(space in tensor_space::<f64>(1..=3, 2..=6), seed in any::<u64>()) {
        let r = check_adjoint(&CumSum::new(space, Adjoint::NotTransposed), 3, seed).unwrap();
        prop_assert!(r.max_rel_error > 1e-6, "error only {:e}", r.max_rel_error);
    }
}
