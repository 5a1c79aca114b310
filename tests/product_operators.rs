//! Operators on product spaces: block matrices, diagonal, broadcast, reduction, component
//! projection and embedding, pointwise norm — values, exact adjoints on random spaces, errors.

mod common;

use std::sync::Arc;

use proptest::prelude::*;
use rodl::diagnostics::strategies::{tensor_space, weighted_space};
use rodl::{
    check_linearity, diagonal_operator, rn, uniform_discr, weighted_rn, BlockOperator,
    BroadcastOperator, ComponentEmbedding, ComponentProjection, Element, Error, Gradient, LinOp,
    LinearOperator, LinearOperatorExt, Op, Operator, OperatorExt, PointwiseNorm, ReductionOperator,
    Result, Scalar, ScalingOperator, Space,
};

use common::*;

type Blocks = Vec<Vec<Option<LinOp<f64>>>>;
type LinBlock = BlockOperator<f64, dyn LinearOperator<f64>>;

fn scaling(s: &Space<f64>, c: f64) -> LinOp<f64> {
    Arc::new(ScalingOperator::new(s.clone(), c))
}

fn pair(p: &Space<f64>, a: Vec<f64>, b: Vec<f64>) -> Element<f64> {
    let parts = p.parts().unwrap();
    p.product_element(vec![
        parts[0].element_from_vec(a).unwrap(),
        parts[1].element_from_vec(b).unwrap(),
    ])
    .unwrap()
}

fn part_values(x: &Element<f64>) -> Vec<Vec<f64>> {
    x.parts().unwrap().iter().map(values).collect()
}

// ------------------------------------------------------------------ values

#[test]
fn block_operator_values_and_adjoint() {
    let s = rn::<f64>(&[2]).unwrap();
    let b: Blocks = vec![
        vec![Some(scaling(&s, 2.0)), Some(scaling(&s, 3.0))],
        vec![None, Some(scaling(&s, 5.0))],
    ];
    let op: LinOp<f64> = Arc::new(LinBlock::new(b).unwrap());
    let p = s.power(2).unwrap();
    assert_eq!(op.domain(), &p);
    assert_eq!(op.range(), &p);
    let x = pair(&p, vec![1.0, 2.0], vec![3.0, 4.0]);
    // (2x₁ + 3x₂, 5x₂)
    assert_eq!(
        part_values(&op.apply(&x).unwrap()),
        vec![vec![11.0, 16.0], vec![15.0, 20.0]]
    );
    // transpose: (2y₁, 3y₁ + 5y₂)
    let y = pair(&p, vec![1.0, 1.0], vec![1.0, -1.0]);
    assert_eq!(
        part_values(&op.adjoint().unwrap().apply(&y).unwrap()),
        vec![vec![2.0, 2.0], vec![8.0, -2.0]]
    );
    assert!(op.is_linear());
}

#[test]
fn block_operator_with_empty_rows_and_columns() {
    let s = rn::<f64>(&[2]).unwrap();
    let t = weighted_rn::<f64>(&[3], 2.0).unwrap();
    let dom = Space::product(vec![s.clone(), t.clone()]).unwrap();
    let ran = Space::product(vec![s.clone(), t.clone(), s.clone()]).unwrap();
    // column 1 and rows 1, 2 are empty
    let b: Blocks = vec![
        vec![Some(scaling(&s, -1.0)), None],
        vec![None, None],
        vec![None, None],
    ];
    let op = LinBlock::with_spaces(b, dom.clone(), ran.clone()).unwrap();
    let x = pair(&dom, vec![1.0, 2.0], vec![3.0, 4.0, 5.0]);
    let mut out = ran.full(9.0).unwrap(); // overwritten, also the zero rows
    op.apply_into(&x, &mut out).unwrap();
    assert_eq!(
        part_values(&out),
        vec![vec![-1.0, -2.0], vec![0.0; 3], vec![0.0; 2]]
    );
    let r = rodl::check_adjoint(&op, 3, 0).unwrap();
    assert!(r.max_rel_error <= 1e-15, "{}", r.max_rel_error);
}

#[test]
fn diagonal_broadcast_reduction_values() {
    let s = rn::<f64>(&[2]).unwrap();
    let p = s.power(2).unwrap();
    let x = pair(&p, vec![1.0, 2.0], vec![3.0, 4.0]);
    let v = s.element_from_vec(vec![1.0, -1.0]).unwrap();

    let d = diagonal_operator(vec![scaling(&s, 2.0), scaling(&s, -3.0)]).unwrap();
    assert_eq!(
        part_values(&d.apply(&x).unwrap()),
        vec![vec![2.0, 4.0], vec![-9.0, -12.0]]
    );
    assert_eq!(
        part_values(&d.adjoint().unwrap().apply(&x).unwrap()),
        vec![vec![2.0, 4.0], vec![-9.0, -12.0]]
    );

    let b: LinOp<f64> =
        Arc::new(BroadcastOperator::new(vec![scaling(&s, 2.0), scaling(&s, 3.0)]).unwrap());
    assert_eq!(b.domain(), &s);
    assert_eq!(b.range(), &p);
    assert_eq!(
        part_values(&b.apply(&v).unwrap()),
        vec![vec![2.0, -2.0], vec![3.0, -3.0]]
    );
    // Broadcast* = Reduction of the adjoints: 2x₁ + 3x₂
    assert_eq!(
        values(&b.adjoint().unwrap().apply(&x).unwrap()),
        vec![11.0, 16.0]
    );

    let r: LinOp<f64> =
        Arc::new(ReductionOperator::new(vec![scaling(&s, 2.0), scaling(&s, 3.0)]).unwrap());
    assert_eq!(r.domain(), &p);
    assert_eq!(values(&r.apply(&x).unwrap()), vec![11.0, 16.0]);
    assert_eq!(
        part_values(&r.adjoint().unwrap().apply(&v).unwrap()),
        vec![vec![2.0, -2.0], vec![3.0, -3.0]]
    );
}

#[test]
fn projection_and_embedding_values() {
    let s = rn::<f64>(&[2]).unwrap();
    let t = rn::<f64>(&[3]).unwrap();
    let p = Space::product(vec![s.clone(), t.clone()]).unwrap();
    let x = pair(&p, vec![1.0, 2.0], vec![3.0, 4.0, 5.0]);

    let pr = ComponentProjection::new(p.clone(), 1).unwrap();
    assert_eq!(pr.range(), &t);
    assert_eq!(values(&pr.apply(&x).unwrap()), vec![3.0, 4.0, 5.0]);
    let em = pr.adjoint().unwrap();
    let y = t.element_from_vec(vec![7.0, 8.0, 9.0]).unwrap();
    let mut out = p.full(1.0).unwrap();
    em.apply_into(&y, &mut out).unwrap();
    assert_eq!(part_values(&out), vec![vec![0.0, 0.0], vec![7.0, 8.0, 9.0]]);
    let em0 = ComponentEmbedding::new(p.clone(), 0).unwrap();
    assert_eq!(em0.domain(), &s);
    assert_eq!(
        values(&em0.adjoint().unwrap().apply(&x).unwrap()),
        vec![1.0, 2.0]
    );
    assert_eq!(pr.norm_estimate().unwrap(), 1.0);
    assert_eq!(em0.norm_estimate().unwrap(), 1.0);
}

#[test]
fn pointwise_norm_values() {
    let s = rn::<f64>(&[2]).unwrap();
    let p = s.power(2).unwrap();
    let g = pair(&p, vec![3.0, 0.0], vec![-4.0, -2.0]);
    for (e, want) in [
        (1.0, [7.0, 2.0]),
        (2.0, [5.0, 2.0]),
        (f64::INFINITY, [4.0, 2.0]),
        (3.0, [91f64.cbrt(), 2.0]),
    ] {
        let n = PointwiseNorm::new(p.clone(), e).unwrap().apply(&g).unwrap();
        assert_close(&values(&n), &want, 4.0 * f64::EPSILON);
    }
    let op = PointwiseNorm::new(p.clone(), 2.0).unwrap();
    assert!(!op.is_linear());
    assert!(check_linearity(&op, 3, 0).unwrap() > 1e-3);
}

#[test]
fn total_variation_pipeline() {
    // |∇x| as a general operator: PointwiseNorm ∘ Gradient
    let s = uniform_discr::<f64>(&[0.0, 0.0], &[4.0, 4.0], &[4, 4]).unwrap();
    let grad: Op<f64> = Arc::new(Gradient::new(s.clone()).unwrap());
    let pn: Op<f64> = Arc::new(PointwiseNorm::new(grad.range().clone(), 2.0).unwrap());
    let tv = pn.compose(&grad).unwrap();
    assert!(!tv.is_linear());
    // x = 3 i + 4 j: gradient (3, 4) in the interior, |∇x| = 5 there
    let x = s.element_from_fn(|p| 3.0 * p[0] + 4.0 * p[1]).unwrap();
    let y = tv.apply(&x).unwrap();
    let a = y.as_array().unwrap();
    for i in 0..3 {
        for j in 0..3 {
            assert!((a[[i, j]] - 5.0).abs() < 1e-13, "{}", a[[i, j]]);
        }
    }
}

// ------------------------------------------------------------------ errors

#[test]
fn block_construction_errors() {
    let s = rn::<f64>(&[2]).unwrap();
    let t = rn::<f64>(&[3]).unwrap();
    let (a, c) = (scaling(&s, 2.0), scaling(&t, 2.0));
    let some = |o: &LinOp<f64>| Some(o.clone());

    // no blocks at all
    assert!(matches!(
        LinBlock::new(vec![]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(LinBlock::new(vec![vec![]]).is_err());
    // ragged rows
    assert!(LinBlock::new(vec![vec![some(&a), some(&a)], vec![some(&a)]]).is_err());
    // an empty column or row: spaces cannot be inferred
    assert!(LinBlock::new(vec![vec![some(&a), None], vec![some(&a), None]]).is_err());
    assert!(LinBlock::new(vec![vec![some(&a), some(&a)], vec![None, None]]).is_err());
    // blocks in one column with different domains, in one row with different ranges
    assert!(matches!(
        LinBlock::new(vec![vec![some(&a)], vec![some(&c)]]),
        Err(Error::SpaceMismatch { .. })
    ));
    assert!(LinBlock::new(vec![vec![some(&a), some(&c)]]).is_err());

    let p = s.power(2).unwrap();
    let b = || vec![vec![some(&a), None], vec![None, some(&a)]];
    // non-product spaces, wrong number of parts, parts that do not fit the blocks
    assert!(LinBlock::with_spaces(b(), s.clone(), p.clone()).is_err());
    assert!(LinBlock::with_spaces(b(), p.clone(), s.clone()).is_err());
    assert!(LinBlock::with_spaces(b(), s.power(3).unwrap(), p.clone()).is_err());
    assert!(LinBlock::with_spaces(b(), p.clone(), s.power(1).unwrap()).is_err());
    let q = Space::product(vec![s.clone(), t.clone()]).unwrap();
    assert!(matches!(
        LinBlock::with_spaces(b(), q.clone(), p.clone()),
        Err(Error::SpaceMismatch { .. })
    ));
    assert!(LinBlock::with_spaces(b(), p.clone(), q).is_err());
    assert!(LinBlock::with_spaces(b(), p.clone(), p.clone()).is_ok());
}

#[test]
fn other_product_construction_errors() {
    let s = rn::<f64>(&[2]).unwrap();
    let t = rn::<f64>(&[3]).unwrap();
    let (a, c) = (scaling(&s, 2.0), scaling(&t, 2.0));
    let grad: LinOp<f64> = Arc::new(Gradient::new(s.clone()).unwrap());

    assert!(diagonal_operator::<f64>(vec![]).is_err());
    assert!(BroadcastOperator::<f64, dyn LinearOperator<f64>>::new(vec![]).is_err());
    assert!(ReductionOperator::<f64, dyn LinearOperator<f64>>::new(vec![]).is_err());
    // broadcast needs one domain, reduction one range
    assert!(matches!(
        BroadcastOperator::new(vec![a.clone(), c.clone()]),
        Err(Error::SpaceMismatch { .. })
    ));
    assert!(BroadcastOperator::new(vec![a.clone(), grad.clone()]).is_ok());
    assert!(ReductionOperator::new(vec![a.clone(), c.clone()]).is_err());
    assert!(ReductionOperator::new(vec![a.clone(), grad.clone()]).is_err());
    // projections and embeddings need a product space and an index in range
    let p = Space::product(vec![s.clone(), t.clone()]).unwrap();
    assert!(ComponentProjection::new(p.clone(), 2).is_err());
    assert!(ComponentEmbedding::new(p.clone(), 5).is_err());
    assert!(ComponentProjection::new(s.clone(), 0).is_err());
    assert!(ComponentEmbedding::new(s.clone(), 0).is_err());
    // pointwise norm: exponent in [1, ∞], a power space of a tensor space
    let s2 = s.power(2).unwrap();
    for e in [0.5, 0.0, -1.0, f64::NAN] {
        assert!(PointwiseNorm::new(s2.clone(), e).is_err(), "exponent {e}");
    }
    assert!(PointwiseNorm::new(s.clone(), 2.0).is_err());
    assert!(PointwiseNorm::new(p.clone(), 2.0).is_err());
    assert!(PointwiseNorm::new(s2.power(2).unwrap(), 2.0).is_err());
    let n1 = PointwiseNorm::new(s.power(1).unwrap(), 1.0).unwrap();
    assert_eq!(n1.range(), &s);
}

#[test]
fn product_apply_errors() {
    let s = rn::<f64>(&[2]).unwrap();
    let t = rn::<f64>(&[3]).unwrap();
    let p = s.power(2).unwrap();
    let wrong_parts = Space::product(vec![s.clone(), t.clone()])
        .unwrap()
        .one()
        .unwrap();
    let ops: Vec<LinOp<f64>> = vec![
        diagonal_operator(vec![scaling(&s, 2.0), scaling(&s, 3.0)]).unwrap(),
        Arc::new(ReductionOperator::new(vec![scaling(&s, 2.0), scaling(&s, 3.0)]).unwrap()),
        Arc::new(ComponentProjection::new(p.clone(), 1).unwrap()),
    ];
    for op in &ops {
        assert_eq!(op.domain(), &p);
        assert!(op.apply(&s.one().unwrap()).is_err(), "{}", op.name());
        assert!(op.apply(&s.power(3).unwrap().one().unwrap()).is_err());
        assert!(op.apply(&wrong_parts).is_err());
        assert!(op.apply(&p.power(2).unwrap().one().unwrap()).is_err());
        let mut bad_out = t.zero().unwrap();
        assert!(op.apply_into(&p.one().unwrap(), &mut bad_out).is_err());
    }
    let b = BroadcastOperator::new(vec![scaling(&s, 2.0), scaling(&s, 3.0)]).unwrap();
    assert!(b.apply(&p.one().unwrap()).is_err());
    let mut out = s.power(3).unwrap().zero().unwrap();
    assert!(b.apply_into(&s.one().unwrap(), &mut out).is_err());
    let e = ComponentEmbedding::new(p.clone(), 0).unwrap();
    assert!(e.apply(&t.one().unwrap()).is_err());
    let mut out = Space::product(vec![s.clone(), t.clone()])
        .unwrap()
        .zero()
        .unwrap();
    assert!(e.apply_into(&s.one().unwrap(), &mut out).is_err());
    let pn = PointwiseNorm::new(p.clone(), 2.0).unwrap();
    assert!(pn.apply(&wrong_parts).is_err());
    assert!(pn.apply(&s.one().unwrap()).is_err());
}

#[test]
fn nonlinear_blocks() {
    let s = rn::<f64>(&[2]).unwrap();
    let p = s.power(2).unwrap();
    let pn: Op<f64> = Arc::new(PointwiseNorm::new(p.clone(), 2.0).unwrap());
    let lin: Op<f64> = scaling(&s, 2.0);
    let b = BlockOperator::<f64, dyn Operator<f64>>::new(vec![vec![Some(pn.clone())]]).unwrap();
    assert!(!b.is_linear());
    let r = ReductionOperator::<f64, dyn Operator<f64>>::new(vec![pn.clone(), pn.clone()]).unwrap();
    assert!(!r.is_linear());
    let bc = BroadcastOperator::<f64, dyn Operator<f64>>::new(vec![lin.clone(), lin]).unwrap();
    assert!(bc.is_linear());
    let g = pair(&p, vec![3.0, 0.0], vec![4.0, 1.0]);
    let y = b
        .apply(&b.domain().product_element(vec![g]).unwrap())
        .unwrap();
    assert_eq!(values(y.part(0).unwrap()), vec![5.0, 1.0]);
}

// ------------------------------------------------------------------ random spaces

fn fixture<T: Scalar>() -> impl Strategy<Value = (Space<T>, Space<T>, u64, f64)> {
    (
        tensor_space::<T>(1..=3, 1..=5),
        weighted_space::<T>(1..=2, 1..=4),
        any::<u64>(),
        -3.0f64..3.0,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn product_operators_adjoint_f64((x, y, seed, c) in fixture::<f64>()) {
        let w = x.random_normal(&mut rng(seed ^ 2)).unwrap();
        let ops = product_ops(&x, &y, w, c);
        assert_adjoints(&ops, seed, adjoint_tol::<f64>());
        assert_linear(&ops, seed, adjoint_tol::<f64>());
    }

    #[test]
    fn product_operators_adjoint_f32((x, y, seed, c) in fixture::<f32>()) {
        let w = x.random_normal(&mut rng(seed ^ 2)).unwrap();
        let ops = product_ops(&x, &y, w, c as f32);
        assert_adjoints(&ops, seed, adjoint_tol::<f32>());
        assert_linear(&ops, seed, adjoint_tol::<f32>());
    }

    /// Projection after embedding is the identity; embedding after projection keeps one part.
    #[test]
    fn projection_embedding_roundtrip((x, y, seed, _c) in fixture::<f64>()) {
        let p = Space::product(vec![x.clone(), y.clone(), x.clone()]).unwrap();
        let mut r = rng(seed);
        let v = p.random_normal(&mut r).unwrap();
        for i in 0..3 {
            let pr = ComponentProjection::new(p.clone(), i).unwrap();
            let em = ComponentEmbedding::new(p.clone(), i).unwrap();
            let part = pr.apply(&v).unwrap();
            prop_assert_eq!(pr.range().dist(&part, v.part(i).unwrap()).unwrap(), 0.0);
            let back = em.apply(&part).unwrap();
            for k in 0..3 {
                let sk = p.part(k).unwrap();
                let want = if k == i { sk.norm(v.part(k).unwrap()).unwrap() } else { 0.0 };
                prop_assert_eq!(sk.norm(back.part(k).unwrap()).unwrap(), want);
            }
        }
    }
}

/// An operator whose adjoint has the wrong spaces does not slip through the block transpose.
struct BadAdjointSpaces(Space<f64>, Space<f64>);

impl Operator<f64> for BadAdjointSpaces {
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

impl LinearOperator<f64> for BadAdjointSpaces {
    fn adjoint(&self) -> Result<LinOp<f64>> {
        Ok(Arc::new(ScalingOperator::new(self.1.clone(), 1.0)))
    }
}

#[test]
fn adjoints_with_wrong_spaces_are_errors() {
    let s = rn::<f64>(&[2]).unwrap();
    let t = rn::<f64>(&[3]).unwrap();
    let bad: LinOp<f64> = Arc::new(BadAdjointSpaces(s.clone(), t));
    let d = diagonal_operator(vec![bad.clone(), scaling(&s, 1.0)]).unwrap();
    assert!(d.adjoint().is_err()); // the transposed blocks do not fit the spaces
    let b: LinOp<f64> = Arc::new(BroadcastOperator::new(vec![bad.clone(), bad.clone()]).unwrap());
    let r: LinOp<f64> = Arc::new(ReductionOperator::new(vec![bad.clone(), bad.clone()]).unwrap());
    let c = bad.compose(&bad).unwrap();
    for op in [&bad, &d, &b, &r, &c] {
        assert!(
            rodl::check_adjoint(op.as_ref(), 1, 0).is_err(),
            "{}",
            op.name()
        );
    }
}
