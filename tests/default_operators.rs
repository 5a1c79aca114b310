//! The default operators: values on hand-computed examples (ODL's conventions), exact adjoints on
//! random spaces, operator norms, and error cases.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use proptest::prelude::*;
use rodl::diagnostics::strategies::{tensor_space, weighted_space};
use rodl::{
    power_method_opnorm, rn, uniform_discr, Divergence, Element, Error, Gradient, IdentityOperator,
    Laplacian, LinOp, LinearOperator, MultiplyOperator, NormCache, Operator, Result, Scalar,
    ScalingOperator, Space, ZeroOperator,
};

use common::*;

// ------------------------------------------------------------------ hand-computed values

#[test]
fn identity_zero_scaling_multiply_values() {
    let s = rn::<f64>(&[3]).unwrap();
    let y = rn::<f64>(&[2, 2]).unwrap();
    let x = s.element_from_vec(vec![1.0, -2.0, 3.5]).unwrap();

    let id = IdentityOperator::new(s.clone());
    assert_eq!(id.apply(&x).unwrap().as_slice().unwrap(), &[1.0, -2.0, 3.5]);

    let zero = ZeroOperator::new(s.clone(), y.clone());
    assert_eq!(zero.range(), &y);
    let mut out = y.full(7.0).unwrap();
    zero.apply_into(&x, &mut out).unwrap();
    assert_eq!(out.as_slice().unwrap(), &[0.0; 4]);

    let sc = ScalingOperator::new(s.clone(), -2.0);
    assert_eq!(
        sc.apply(&x).unwrap().as_slice().unwrap(),
        &[-2.0, 4.0, -7.0]
    );

    let w = s.element_from_vec(vec![2.0, 0.5, -1.0]).unwrap();
    let m = MultiplyOperator::new(s.clone(), w).unwrap();
    assert_eq!(m.apply(&x).unwrap().as_slice().unwrap(), &[2.0, -1.0, -3.5]);
    // self-adjoint
    let madj = m.adjoint().unwrap();
    assert_eq!(
        madj.apply(&x).unwrap().as_slice().unwrap(),
        &[2.0, -1.0, -3.5]
    );
}

/// ODL's own unit test (`test_forward_diff`, `test_backward_diff` in `odl/test/discr/diff_ops_test.py`):
/// `finite_diff([0, 3, 5, 6], method='forward', pad_mode='constant') == [3, 2, 1, -6]` and the
/// backward difference is `[0, 3, 2, 1]`.
#[test]
fn gradient_and_divergence_match_odl_1d() {
    let s = rn::<f64>(&[4]).unwrap();
    let x = s.element_from_vec(vec![0.0, 3.0, 5.0, 6.0]).unwrap();
    let g = Gradient::new(s.clone()).unwrap().apply(&x).unwrap();
    assert_eq!(g.parts().unwrap().len(), 1);
    assert_eq!(
        g.part(0).unwrap().as_slice().unwrap(),
        &[3.0, 2.0, 1.0, -6.0]
    );

    let div = Divergence::new(s.clone()).unwrap();
    let v = div.domain().product_element(vec![x]).unwrap();
    let d = div.apply(&v).unwrap();
    assert_eq!(d.as_slice().unwrap(), &[0.0, 3.0, 2.0, 1.0]);
}

#[test]
fn gradient_2d_forward_differences_with_zero_padding_and_cell_sides() {
    // cells of side (1, 0.5)
    let s = uniform_discr::<f64>(&[0.0, 0.0], &[3.0, 1.0], &[3, 2]).unwrap();
    assert_eq!(s.cell_sides().unwrap(), vec![1.0, 0.5]);
    let x = s
        .element_from_vec(vec![1.0, 2.0, 3.0, 5.0, 4.0, 0.0])
        .unwrap();
    let g = Gradient::new(s.clone()).unwrap().apply(&x).unwrap();
    // ∂₀: x[i+1, j] − x[i, j], last row −x[2, j]
    assert_eq!(
        g.part(0).unwrap().as_slice().unwrap(),
        &[2.0, 3.0, 1.0, -5.0, -4.0, 0.0]
    );
    // ∂₁: (x[i, j+1] − x[i, j]) / 0.5, last column −x[i, 1] / 0.5
    assert_eq!(
        g.part(1).unwrap().as_slice().unwrap(),
        &[2.0, -4.0, 4.0, -10.0, -8.0, 0.0]
    );
}

#[test]
fn gradient_of_linear_function_is_its_slope_in_the_interior() {
    let s = uniform_discr::<f64>(&[-1.0, 0.0], &[1.0, 3.0], &[8, 6]).unwrap();
    let x = s.element_from_fn(|p| 3.0 * p[0] - 2.0 * p[1]).unwrap();
    let g = Gradient::new(s.clone()).unwrap().apply(&x).unwrap();
    let g0 = g.part(0).unwrap().as_array().unwrap();
    let g1 = g.part(1).unwrap().as_array().unwrap();
    for i in 0..7 {
        for j in 0..5 {
            assert!((g0[[i, j]] - 3.0).abs() < 1e-13, "{}", g0[[i, j]]);
            assert!((g1[[i, j]] + 2.0).abs() < 1e-13, "{}", g1[[i, j]]);
        }
    }
}

#[test]
fn divergence_2d_backward_differences_with_zero_padding() {
    let s = uniform_discr::<f64>(&[0.0, 0.0], &[3.0, 1.0], &[3, 2]).unwrap();
    let div = Divergence::new(s.clone()).unwrap();
    let g0 = s
        .element_from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        .unwrap();
    let g1 = s
        .element_from_vec(vec![1.0, 1.0, 2.0, 3.0, 0.0, -1.0])
        .unwrap();
    let g = div.domain().product_element(vec![g0, g1]).unwrap();
    let d = div.apply(&g).unwrap();
    // (g0[i] − g0[i−1]) + (g1[j] − g1[j−1]) / 0.5, zero before the grid
    assert_eq!(d.as_slice().unwrap(), &[3.0, 2.0, 6.0, 4.0, 2.0, 0.0]);
}

#[test]
fn laplacian_is_zero_padded_second_difference() {
    // ODL: Laplacian = forward − backward difference (pad 0): [0,3,5,6] ↦ [3,2,1,−6] − [0,3,2,1]
    let s = rn::<f64>(&[4]).unwrap();
    let x = s.element_from_vec(vec![0.0, 3.0, 5.0, 6.0]).unwrap();
    let l = Laplacian::new(s).unwrap().apply(&x).unwrap();
    assert_eq!(l.as_slice().unwrap(), &[3.0, -1.0, -1.0, -7.0]);

    // 2D with cell sides (1, 0.5): Σ_k (x[i+e_k] − 2x[i] + x[i−e_k]) / h_k²
    let s = uniform_discr::<f64>(&[0.0, 0.0], &[3.0, 1.0], &[3, 2]).unwrap();
    let x = s
        .element_from_vec(vec![1.0, 2.0, 3.0, 5.0, 4.0, 0.0])
        .unwrap();
    let l = Laplacian::new(s).unwrap().apply(&x).unwrap();
    assert_eq!(
        l.as_slice().unwrap(),
        &[1.0, -11.0, -5.0, -36.0, -37.0, 21.0]
    );
}

#[test]
fn single_cell_axes() {
    // n = 1 along an axis: the forward difference is −x/h, the second difference −2x/h².
    let s = uniform_discr::<f64>(&[0.0, 0.0], &[0.5, 3.0], &[1, 3]).unwrap();
    let x = s.element_from_vec(vec![1.0, 2.0, 4.0]).unwrap();
    let g = Gradient::new(s.clone()).unwrap().apply(&x).unwrap();
    assert_eq!(g.part(0).unwrap().as_slice().unwrap(), &[-2.0, -4.0, -8.0]);
    assert_eq!(g.part(1).unwrap().as_slice().unwrap(), &[1.0, 2.0, -4.0]);
    let l = Laplacian::new(s).unwrap().apply(&x).unwrap();
    // axis 0: −2x/0.25 = −8x = [−8, −16, −32]; axis 1: [2−2, 4−4+1, −8+2] = [0, 1, −6]
    assert_eq!(l.as_slice().unwrap(), &[-8.0, -15.0, -38.0]);
}

#[test]
fn divergence_is_exactly_minus_gradient_adjoint() {
    let s = uniform_discr::<f64>(&[0.0, -1.0, 2.0], &[1.0, 1.0, 2.5], &[4, 5, 3]).unwrap();
    let grad = Gradient::new(s.clone()).unwrap();
    let div = Divergence::new(s.clone()).unwrap();
    assert_eq!(div.domain(), grad.range());
    assert_eq!(div.range(), grad.domain());
    let mut r = rng(1);
    let g = grad.range().random_normal(&mut r).unwrap();
    let a = grad.adjoint().unwrap().apply(&g).unwrap();
    let b = div.apply(&g).unwrap();
    for (a, b) in a.as_slice().unwrap().iter().zip(b.as_slice().unwrap()) {
        assert_eq!(*a, -*b);
    }
    // and Divergence* = −Gradient, part by part
    let x = s.random_normal(&mut r).unwrap();
    let a = div.adjoint().unwrap().apply(&x).unwrap();
    let b = grad.apply(&x).unwrap();
    for (pa, pb) in a.parts().unwrap().iter().zip(b.parts().unwrap()) {
        for (a, b) in pa.as_slice().unwrap().iter().zip(pb.as_slice().unwrap()) {
            assert_eq!(*a, -*b);
        }
    }
}

// ------------------------------------------------------------------ operator norms

/// ‖D‖ of the zero-padded forward difference on n points with step h is 2cos(π/(2n+1))/h: DᵀD is
/// tridiagonal with diagonal (1, 2, …, 2) and off-diagonal −1, whose eigenvalues are
/// 2 − 2cos((2k−1)π/(2n+1)), k = 1…n.
fn forward_diff_norm(n: usize, h: f64) -> f64 {
    2.0 * (std::f64::consts::PI / (2 * n + 1) as f64).cos() / h
}

/// The zero-padded second difference on n points has eigenvalues −4sin²(kπ/(2(n+1)))/h².
fn second_diff_norm(n: usize, h: f64) -> f64 {
    4.0 * (std::f64::consts::PI / (2 * (n + 1)) as f64).cos().powi(2) / (h * h)
}

fn tight_opnorm<A: LinearOperator<f64> + ?Sized>(op: &A) -> f64 {
    power_method_opnorm(op, op.adjoint().unwrap().as_ref(), 3000, 0.0, 7).unwrap()
}

#[test]
fn forward_difference_norm_formula() {
    for (n, len) in [(1, 1.0), (2, 3.0), (3, 0.3), (5, 2.0), (8, 1.0), (13, 5.0)] {
        let s = uniform_discr::<f64>(&[0.0], &[len], &[n]).unwrap();
        let h = len / n as f64;
        let want = forward_diff_norm(n, h);
        let grad = Gradient::new(s).unwrap();
        let got = tight_opnorm(&grad);
        assert!(
            (got - want).abs() <= 1e-12 * want,
            "n = {n}: power iteration {got}, formula {want}"
        );
    }
}

#[test]
fn default_norm_estimate_approaches_from_below() {
    // n = 5: the two largest eigenvalues of DᵀD differ by a factor 0.77, so 100 iterations with
    // rtol 1e-7 converge; the estimate ‖Ax‖ with ‖x‖ = 1 never exceeds ‖A‖.
    let s = uniform_discr::<f64>(&[0.0], &[1.0], &[5]).unwrap();
    let want = forward_diff_norm(5, 0.2);
    let est = Gradient::new(s).unwrap().norm_estimate().unwrap();
    assert!(
        est <= want * (1.0 + 1e-14) && est >= want * (1.0 - 1e-6),
        "{est} vs {want}"
    );
}

#[test]
fn gradient_and_laplacian_norms_in_2d() {
    let s = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 3.0], &[4, 6]).unwrap();
    let h = s.cell_sides().unwrap();
    let want = (forward_diff_norm(4, h[0]).powi(2) + forward_diff_norm(6, h[1]).powi(2)).sqrt();
    let grad = Gradient::new(s.clone()).unwrap();
    let got = tight_opnorm(&grad);
    assert!((got - want).abs() <= 1e-12 * want, "{got} vs {want}");

    let want = second_diff_norm(4, h[0]) + second_diff_norm(6, h[1]);
    let got = tight_opnorm(&Laplacian::new(s).unwrap());
    assert!((got - want).abs() <= 1e-12 * want, "{got} vs {want}");
}

#[test]
fn scaling_and_multiply_norms() {
    let s = uniform_discr::<f64>(&[0.0], &[2.0], &[5]).unwrap();
    let sc = ScalingOperator::new(s.clone(), -2.5);
    assert_eq!(sc.norm_estimate().unwrap(), 2.5);
    let p = power_method_opnorm(&sc, sc.adjoint().unwrap().as_ref(), 100, 1e-7, 3).unwrap();
    assert!((p - 2.5).abs() <= 1e-14, "{p}");

    let w = s.element_from_vec(vec![1.0, -5.0, 2.0, 0.5, -1.5]).unwrap();
    let m = MultiplyOperator::new(s.clone(), w).unwrap();
    assert!((tight_opnorm(&m) - 5.0).abs() <= 1e-12);
    assert_eq!(
        IdentityOperator::new(s.clone()).norm_estimate().unwrap(),
        1.0
    );
    assert_eq!(
        ZeroOperator::new(s.clone(), s.clone())
            .norm_estimate()
            .unwrap(),
        0.0
    );
    let z = ZeroOperator::new(s.clone(), s);
    assert_eq!(tight_opnorm(&z), 0.0);
}

#[test]
fn norm_estimate_is_cached() {
    let s = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[6, 5]).unwrap();
    let grad = Gradient::new(s).unwrap();
    assert_eq!(grad.norm_cache().unwrap().get(), None);
    let v = grad.norm_estimate().unwrap();
    assert_eq!(grad.norm_cache().unwrap().get(), Some(v));
    assert_eq!(grad.norm_estimate().unwrap(), v);
}

/// Counts its applications, so that the cache can be seen to avoid recomputation.
struct Counting {
    space: Space<f64>,
    calls: Arc<AtomicUsize>,
    cache: NormCache,
}

impl Operator<f64> for Counting {
    fn domain(&self) -> &Space<f64> {
        &self.space
    }
    fn range(&self) -> &Space<f64> {
        &self.space
    }
    fn evaluate(&self, x: &Element<f64>, out: &mut Element<f64>) -> Result<()> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.space.scaled(3.0, x, out)
    }
    fn is_linear(&self) -> bool {
        true
    }
}

impl LinearOperator<f64> for Counting {
    fn adjoint(&self) -> Result<LinOp<f64>> {
        Ok(Arc::new(ScalingOperator::new(self.space.clone(), 3.0)))
    }
    fn norm_cache(&self) -> Option<&NormCache> {
        Some(&self.cache)
    }
}

#[test]
fn norm_cache_avoids_recomputation() {
    let calls = Arc::new(AtomicUsize::new(0));
    let op = Counting {
        space: rn(&[4]).unwrap(),
        calls: calls.clone(),
        cache: NormCache::new(),
    };
    let v = op.norm_estimate().unwrap();
    assert!((v - 3.0).abs() < 1e-14, "{v}");
    let n = calls.load(Ordering::SeqCst);
    assert!(n >= 1);
    assert_eq!(op.norm_estimate().unwrap(), v);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        n,
        "second estimate recomputed"
    );
}

// ------------------------------------------------------------------ error cases

#[test]
fn construction_errors() {
    let s = rn::<f64>(&[3]).unwrap();
    let p = s.power(2).unwrap();
    assert!(matches!(
        Gradient::new(p.clone()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Divergence::new(p.clone()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Laplacian::new(p.clone()),
        Err(Error::InvalidArgument(_))
    ));
    // a factor from another space
    let other = rn::<f64>(&[4]).unwrap();
    assert!(matches!(
        MultiplyOperator::new(s.clone(), other.one().unwrap()),
        Err(Error::SpaceMismatch { .. })
    ));
    assert!(matches!(
        MultiplyOperator::new(s.clone(), p.one().unwrap()),
        Err(Error::SpaceMismatch { .. })
    ));
}

#[test]
fn apply_errors() {
    let s = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[3, 4]).unwrap();
    let t = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 2.0], &[3, 5]).unwrap();
    let grad = Gradient::new(s.clone()).unwrap();
    let lap = Laplacian::new(s.clone()).unwrap();
    let div = Divergence::new(s.clone()).unwrap();

    // input of another shape
    assert!(matches!(
        grad.apply(&t.one().unwrap()),
        Err(Error::SpaceMismatch { .. })
    ));
    assert!(lap.apply(&t.one().unwrap()).is_err());
    // a tensor where a product element is expected, and vice versa
    assert!(div.apply(&s.one().unwrap()).is_err());
    assert!(grad.apply(&grad.range().one().unwrap()).is_err());
    // wrong number of parts
    let p3 = s.power(3).unwrap();
    assert!(div.apply(&p3.one().unwrap()).is_err());
    // output of the wrong space
    let mut out = s.zero().unwrap();
    assert!(grad.apply_into(&s.one().unwrap(), &mut out).is_err());
    let mut out = t.zero().unwrap();
    assert!(lap.apply_into(&s.one().unwrap(), &mut out).is_err());
    // f32 vs f64 are different types entirely: enforced at compile time.
}

// ------------------------------------------------------------------ random spaces

fn fixture<T: Scalar>() -> impl Strategy<Value = (Space<T>, Space<T>, u64, f64)> {
    (
        tensor_space::<T>(1..=3, 1..=6),
        weighted_space::<T>(1..=2, 1..=5),
        any::<u64>(),
        -3.0f64..3.0,
    )
}

fn ops_on<T: Scalar>(x: &Space<T>, y: &Space<T>, seed: u64, c: f64) -> Vec<(String, LinOp<T>)> {
    let w = x.random_normal(&mut rng(seed ^ 0x77)).unwrap();
    default_ops(x, y, w, T::of(c))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn default_operators_adjoint_f64((x, y, seed, c) in fixture::<f64>()) {
        let ops = ops_on(&x, &y, seed, c);
        assert_adjoints(&ops, seed, adjoint_tol::<f64>());
        assert_linear(&ops, seed, adjoint_tol::<f64>());
    }

    #[test]
    fn default_operators_adjoint_f32((x, y, seed, c) in fixture::<f32>()) {
        let ops = ops_on(&x, &y, seed, c);
        assert_adjoints(&ops, seed, adjoint_tol::<f32>());
        assert_linear(&ops, seed, adjoint_tol::<f32>());
    }

    /// ⟨∇x, g⟩ = −⟨x, div g⟩ computed directly (not through `adjoint()`).
    #[test]
    fn divergence_is_negative_transpose_of_gradient((x, _y, seed, _c) in fixture::<f64>()) {
        let grad = Gradient::new(x.clone()).unwrap();
        let div = Divergence::new(x.clone()).unwrap();
        let mut r = rng(seed);
        let u = x.random_normal(&mut r).unwrap();
        let g = grad.range().random_normal(&mut r).unwrap();
        let lhs = grad.range().inner(&grad.apply(&u).unwrap(), &g).unwrap();
        let rhs = -x.inner(&u, &div.apply(&g).unwrap()).unwrap();
        let scale = grad.norm_estimate().unwrap() * x.norm(&u).unwrap() * grad.range().norm(&g).unwrap();
        prop_assert!((lhs - rhs).abs() <= 1e-13 * scale, "{} vs {}", lhs, rhs);
    }

    /// ⟨Δx, y⟩ = ⟨x, Δy⟩ and Δ is negative definite.
    #[test]
    fn laplacian_symmetric_negative((x, _y, seed, _c) in fixture::<f64>()) {
        let lap = Laplacian::new(x.clone()).unwrap();
        let mut r = rng(seed);
        let u = x.random_normal(&mut r).unwrap();
        let v = x.random_normal(&mut r).unwrap();
        let lu = lap.apply(&u).unwrap();
        let lv = lap.apply(&v).unwrap();
        let scale = lap.norm_estimate().unwrap() * x.norm(&u).unwrap() * x.norm(&v).unwrap();
        prop_assert!((x.inner(&lu, &v).unwrap() - x.inner(&u, &lv).unwrap()).abs() <= 1e-13 * scale);
        prop_assert!(x.inner(&lu, &u).unwrap() < 0.0);
    }
}
