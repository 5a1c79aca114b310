//! Batched forms of operators ([`rodl::BatchedOperator`]): which operators offer one, and the
//! batched forms of compositions, sums and scalar multiples of operators that have one (with a
//! batched operator of the test's own on the CPU), and the finite-difference operators' batches
//! against entry-by-entry application on random shapes (the CUDA ray transform's are tested on a
//! GPU: `tests/cuda_ray_transform.rs`, the CUDA stencils' in `tests/cuda_backend.rs`).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rodl::tomo::{parallel_beam_geometry, Backend, RayTransform};
use rodl::{
    rn, uniform_discr, BatchedOperator, Element, Error, Gradient, LinOp, LinearOperator,
    LinearOperatorExt, Operator, Result, Space,
};

#[test]
fn host_operators_have_no_batched_form() {
    let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16]).unwrap();
    let geometry = parallel_beam_geometry(&space, Some(12)).unwrap();
    let ray = RayTransform::new(space.clone(), geometry, Backend::default()).unwrap();
    assert!(ray.batched().is_none());
    assert!(ray.adjoint().unwrap().batched().is_none());
    assert!(ray.scaled(2.0).unwrap().batched().is_none());
    let id: LinOp<f32> = Arc::new(rodl::IdentityOperator::new(space));
    assert!(id.batched().is_none());
}

/// x ↦ k·x with a batched form of at most `max` entries that counts its passes.
struct Scale {
    space: Space<f64>,
    k: f64,
    max: usize,
    passes: Arc<AtomicUsize>,
}

impl Scale {
    fn shared(space: &Space<f64>, k: f64, max: usize, passes: &Arc<AtomicUsize>) -> LinOp<f64> {
        Arc::new(Scale {
            space: space.clone(),
            k,
            max,
            passes: passes.clone(),
        })
    }
}

fn scale_into(k: f64, x: &Element<f64>, out: &mut Element<f64>) -> Result<()> {
    let x = x.as_slice()?;
    let out = out.as_slice_mut()?;
    if x.len() != out.len() {
        return Err(Error::invalid("scale: sizes differ"));
    }
    out.iter_mut().zip(x).for_each(|(o, v)| *o = k * v);
    Ok(())
}

impl Operator<f64> for Scale {
    fn domain(&self) -> &Space<f64> {
        &self.space
    }
    fn range(&self) -> &Space<f64> {
        &self.space
    }
    fn evaluate(&self, x: &Element<f64>, out: &mut Element<f64>) -> Result<()> {
        scale_into(self.k, x, out)
    }
    fn is_linear(&self) -> bool {
        true
    }
    fn batched(&self) -> Option<&dyn BatchedOperator<f64>> {
        Some(self)
    }
    fn name(&self) -> String {
        format!("scale({})", self.k)
    }
}

impl BatchedOperator<f64> for Scale {
    fn max_batch(&self) -> usize {
        self.max
    }
    fn apply_batch(&self, x: &Element<f64>, out: &mut Element<f64>, batch: usize) -> Result<()> {
        if batch == 0 || batch > self.max {
            return Err(Error::invalid("scale: batch size"));
        }
        let n = self.space.size() * batch;
        if x.as_slice()?.len() != n || out.as_slice()?.len() != n {
            return Err(Error::invalid("scale: batch shapes"));
        }
        self.passes.fetch_add(1, Ordering::SeqCst);
        scale_into(self.k, x, out)
    }
}

impl LinearOperator<f64> for Scale {
    fn adjoint(&self) -> Result<LinOp<f64>> {
        Ok(Scale::shared(&self.space, self.k, self.max, &self.passes))
    }
}

/// `batch` entries of shape `shape`: entry b, value i is b + i / 10.
fn batch_of(batch: usize, shape: &[usize]) -> Element<f64> {
    let mut full = vec![batch];
    full.extend_from_slice(shape);
    let n: usize = full.iter().product();
    let per: usize = shape.iter().product();
    let values = (0..n)
        .map(|i| (i / per) as f64 + (i % per) as f64 / 10.0)
        .collect();
    rn::<f64>(&full).unwrap().element_from_vec(values).unwrap()
}

#[test]
fn compositions_sums_and_multiples_of_batched_operators_are_batched() {
    let space = rn::<f64>(&[3, 4]).unwrap();
    let passes = Arc::new(AtomicUsize::new(0));
    let a = Scale::shared(&space, 2.0, 8, &passes);
    let b = Scale::shared(&space, -3.0, 5, &passes);
    let cases: Vec<(&str, LinOp<f64>, f64, usize)> = vec![
        ("a ∘ b", a.compose(&b).unwrap(), -6.0, 2),
        ("a + b", a.plus(&b).unwrap(), -1.0, 2),
        ("a - b", a.minus(&b).unwrap(), 5.0, 2),
        (
            "0.5 · (a ∘ b)",
            a.compose(&b).unwrap().scaled(0.5).unwrap(),
            -3.0,
            2,
        ),
        (
            "(a ∘ b)*",
            a.compose(&b).unwrap().adjoint().unwrap(),
            -6.0,
            2,
        ),
        (
            "(a + b) ∘ a",
            a.plus(&b).unwrap().compose(&a).unwrap(),
            -2.0,
            3,
        ),
    ];
    for (name, op, k, passes_per_call) in cases {
        let form = op
            .batched()
            .unwrap_or_else(|| panic!("{name}: no batched form"));
        assert_eq!(
            form.max_batch(),
            5,
            "{name}: the smaller of the factors' limits"
        );
        for batch in [1, 3, 5] {
            let x = batch_of(batch, &[3, 4]);
            let mut out = batch_of(batch, &[3, 4]);
            let before = passes.load(Ordering::SeqCst);
            form.apply_batch(&x, &mut out, batch).unwrap();
            assert_eq!(
                passes.load(Ordering::SeqCst) - before,
                passes_per_call,
                "{name}: one pass per factor"
            );
            for (o, v) in out.as_slice().unwrap().iter().zip(x.as_slice().unwrap()) {
                assert!(
                    (o - k * v).abs() <= 1e-12 * (1.0 + v.abs()),
                    "{name}: {o} vs {}",
                    k * v
                );
            }
        }
        // Batches above the limit or of no entries are errors.
        let x = batch_of(6, &[3, 4]);
        let mut out = batch_of(6, &[3, 4]);
        assert!(form.apply_batch(&x, &mut out, 6).is_err(), "{name}");
        assert!(form.apply_batch(&x, &mut out, 0).is_err(), "{name}");
    }
}

#[test]
fn a_factor_without_a_batched_form_leaves_the_combination_without_one() {
    let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[4, 5]).unwrap();
    let passes = Arc::new(AtomicUsize::new(0));
    let a = Scale::shared(&space, 2.0, 8, &passes);
    let g: LinOp<f64> = Arc::new(Gradient::new(space.clone()).unwrap());
    let id: LinOp<f64> = Arc::new(rodl::IdentityOperator::new(space));
    assert!(a.plus(&id).unwrap().batched().is_none());
    assert!(a.compose(&id).unwrap().batched().is_none());
    assert!(id
        .compose(g.adjoint().unwrap().compose(&g).unwrap())
        .unwrap()
        .batched()
        .is_none());
    // The gradient and its adjoint have batched forms, and so has their composition (through
    // the power space, batched as [batch, parts, …shape]).
    assert!(g
        .adjoint()
        .unwrap()
        .compose(&g)
        .unwrap()
        .batched()
        .is_some());
}

/// `op` applied entry by entry to the batch `x` (one tensor of the domain's batch shape): the
/// results one after the other (each entry's parts in order).
fn entry_by_entry(op: &LinOp<f64>, x: &[f64], batch: usize) -> Vec<f64> {
    let n = op.domain().size();
    (0..batch)
        .flat_map(|b| {
            let e = common::element_of(op.domain(), &x[b * n..(b + 1) * n]);
            common::flatten(&op.apply(&e).unwrap())
        })
        .collect()
}

fn batched_operators(space: &Space<f64>) -> Vec<(&'static str, LinOp<f64>)> {
    let g: LinOp<f64> = Arc::new(Gradient::new(space.clone()).unwrap());
    let d: LinOp<f64> = Arc::new(rodl::Divergence::new(space.clone()).unwrap());
    let l: LinOp<f64> = Arc::new(rodl::Laplacian::new(space.clone()).unwrap());
    let factor = space.element_from_fn(|p| 1.5 - p[0] * p[0]).unwrap();
    let m: LinOp<f64> = Arc::new(rodl::MultiplyOperator::new(space.clone(), factor).unwrap());
    vec![
        ("gradient", g.clone()),
        ("divergence", d.clone()),
        ("laplacian", l.clone()),
        ("gradient adjoint", g.adjoint().unwrap()),
        (
            "gradient* ∘ gradient",
            g.adjoint().unwrap().compose(&g).unwrap(),
        ),
        ("gradient ∘ divergence", g.compose(&d).unwrap()),
        (
            "laplacian − div ∘ grad",
            l.minus(d.compose(&g).unwrap()).unwrap(),
        ),
        ("multiply ∘ laplacian", m.compose(&l).unwrap()),
        (
            "gradient* ∘ gradient + multiply",
            g.adjoint().unwrap().compose(&g).unwrap().plus(&m).unwrap(),
        ),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// On random grids (1 to 3 axes, random cell sides) and batch sizes, every finite-difference
    /// operator's batch (and a multiplication's) equals its entries applied one by one, bit for
    /// bit (one pass for the whole batch, the same operations per value).
    #[test]
    fn finite_difference_batches_equal_entry_by_entry(
        shape in proptest::collection::vec(1usize..7, 1..4),
        sides in proptest::collection::vec(0.2f64..3.0, 3),
        batch in 1usize..5,
        seed in 0u64..1000,
    ) {
        let d = shape.len();
        let max: Vec<f64> = (0..d).map(|k| sides[k] * shape[k] as f64).collect();
        let space = uniform_discr::<f64>(&vec![0.0; d], &max, &shape).unwrap();
        for (name, op) in batched_operators(&space) {
            let form = op.batched().unwrap_or_else(|| panic!("{name}: no batched form"));
            let n = op.domain().size();
            let x: Vec<f64> = (0..batch * n)
                .map(|i| (((i as u64 + 1) * (seed + 7)) % 97) as f64 / 13.0 - 3.0)
                .collect();
            let xs = rn::<f64>(&op.domain().batch_shape(batch).unwrap()).unwrap();
            let ys = rn::<f64>(&op.range().batch_shape(batch).unwrap()).unwrap();
            let xb = xs.element_from_vec(x.clone()).unwrap();
            let mut out = ys.zero().unwrap();
            form.apply_batch(&xb, &mut out, batch).unwrap();
            let want = entry_by_entry(&op, &x, batch);
            proptest::prop_assert_eq!(out.as_slice().unwrap(), want.as_slice(), "{}", name);
        }
    }
}

#[test]
fn finite_difference_batches_refuse_wrong_shapes_and_empty_batches() {
    let space = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[4, 5]).unwrap();
    let g = Gradient::new(space.clone()).unwrap();
    let form = g.batched().unwrap();
    let x = rn::<f64>(&[3, 4, 5]).unwrap().zero().unwrap();
    // the parts axis missing, the wrong batch, an empty batch
    let mut flat = rn::<f64>(&[3, 4, 5]).unwrap().zero().unwrap();
    assert!(matches!(
        form.apply_batch(&x, &mut flat, 3),
        Err(Error::Shape { .. })
    ));
    let mut two = rn::<f64>(&[2, 2, 4, 5]).unwrap().zero().unwrap();
    assert!(matches!(
        form.apply_batch(&x, &mut two, 3),
        Err(Error::Shape { .. })
    ));
    let mut ok = rn::<f64>(&[3, 2, 4, 5]).unwrap().zero().unwrap();
    assert!(form.apply_batch(&x, &mut ok, 0).is_err());
    form.apply_batch(&x, &mut ok, 3).unwrap();
    // a product of unequal parts has no batched form
    let mixed = Space::product(vec![space.clone(), rn::<f64>(&[3]).unwrap()]).unwrap();
    assert!(mixed.batch_shape(2).is_err());
}
