//! Functionals: Moreau's identity, biconjugation, optimality of the proximal points, gradients
//! against finite differences, the Fenchel–Young inequality (and equality at proximal pairs),
//! values against direct formulas, and argument errors.

use std::sync::Arc;

use rand::rngs::StdRng;
use rodl::solvers::functional::{
    ConstantFunctional, Func, Functional, FunctionalExt, GroupL1Norm, Huber, IndicatorBox,
    IndicatorBoxConvexConj, IndicatorGroupLinfUnitBall, IndicatorL2UnitBall,
    IndicatorNonnegativity, IndicatorZero, KullbackLeibler, KullbackLeiblerConvexConj, L1Norm,
    L2Norm, L2NormSquared, LeftScalarMult, MoreauEnvelope, QuadraticPerturbation, RightScalarMult,
    SeparableSum, Translation, ZeroFunctional,
};
use rodl::{
    rn, uniform_discr, weighted_rn, Element, Error, Gradient, LinOp, Pointwise, Scalar, Space,
};

mod common;

// ------------------------------------------------------------------ helpers

fn d2() -> Space<f64> {
    // Cells of 1/3 × 2/5: weight 2/15.
    uniform_discr(&[-1.0, -1.0], &[1.0, 1.0], &[6, 5]).unwrap()
}

fn r7() -> Space<f64> {
    weighted_rn(&[7], 0.7).unwrap()
}

fn randn(s: &Space<f64>, scale: f64, rng: &mut StdRng) -> Element<f64> {
    let mut x = s.random_normal(rng).unwrap();
    s.scale(scale, &mut x).unwrap();
    x
}

/// |N(0,1)| + `shift`, with the first entry set to `first`.
fn positive(s: &Space<f64>, shift: f64, first: Option<f64>, rng: &mut StdRng) -> Element<f64> {
    let x = s.random_normal(rng).unwrap();
    let mut y = s.zero().unwrap();
    s.abs(&x, &mut y).unwrap();
    s.pointwise_inplace(Pointwise::AddScalar(shift), &mut y)
        .unwrap();
    if let Some(v) = first {
        y.as_slice_mut().unwrap()[0] = v;
    }
    y
}

fn prior(rng: &mut StdRng) -> Element<f64> {
    // A prior with a zero entry, to exercise the 0·ln 0 conventions.
    positive(&d2(), 0.2, Some(0.0), rng)
}

fn lin(s: &Space<f64>, a: f64, x: &Element<f64>, b: f64, y: &Element<f64>) -> Element<f64> {
    let mut out = s.zero().unwrap();
    s.lincomb(a, x, b, y, &mut out).unwrap();
    out
}

/// `|a − b| ≤ tol · (1 + |a| + |b|)`, with equal infinities accepted.
fn close(a: f64, b: f64, tol: f64) -> bool {
    a == b || (a - b).abs() <= tol * (1.0 + a.abs() + b.abs())
}

/// Makes a test point in a space.
type PointFn = fn(&Space<f64>, &mut StdRng) -> Element<f64>;

struct Case {
    name: &'static str,
    f: Func<f64>,
    /// Typical size of points to test at.
    scale: f64,
    /// Points where `f` is differentiable, for the gradient check (`None`: not differentiable).
    smooth_at: Option<PointFn>,
}

fn gaussian(s: &Space<f64>, rng: &mut StdRng) -> Element<f64> {
    randn(s, 1.5, rng)
}

fn kl_points(s: &Space<f64>, rng: &mut StdRng) -> Element<f64> {
    positive(s, 0.3, None, rng)
}

fn kl_conj_points(s: &Space<f64>, rng: &mut StdRng) -> Element<f64> {
    // 1 − (|N| + 0.3) < 1
    let p = positive(s, 0.3, None, rng);
    let mut y = s.zero().unwrap();
    s.scaled(-1.0, &p, &mut y).unwrap();
    s.pointwise_inplace(Pointwise::AddScalar(1.0), &mut y)
        .unwrap();
    y
}

fn catalogue(rng: &mut StdRng) -> Vec<Case> {
    let (d, r) = (d2(), r7());
    let v = d.power(2).unwrap();
    let g = prior(rng);
    let a = randn(&d, 1.0, rng);
    let u = randn(&d, 1.0, rng);
    let l1: Func<f64> = Arc::new(L1Norm::new(d.clone()));
    let kl: Func<f64> =
        Arc::new(KullbackLeibler::new(d.clone(), Some(g.try_clone().unwrap())).unwrap());
    let huber: Func<f64> = Arc::new(Huber::new(d.clone(), 0.3).unwrap());
    let l2sq: Func<f64> = Arc::new(L2NormSquared::new(d.clone()));
    let gl1: Func<f64> = Arc::new(GroupL1Norm::new(v.clone()).unwrap());
    let boxf: Func<f64> = Arc::new(IndicatorBox::new(d.clone(), -0.5, 1.5).unwrap());
    let case = |name, f: Func<f64>, scale, smooth_at| Case {
        name,
        f,
        scale,
        smooth_at,
    };
    let smooth: Option<PointFn> = Some(gaussian);
    vec![
        case("L1Norm", l1.clone(), 1.5, smooth),
        case("L2Norm", Arc::new(L2Norm::new(r.clone())), 1.0, smooth),
        case("L2NormSquared", l2sq.clone(), 1.5, smooth),
        case("Huber", huber.clone(), 1.0, smooth),
        case(
            "Huber on a vector field",
            Arc::new(Huber::new(v.clone(), 0.4).unwrap()),
            1.0,
            smooth,
        ),
        case("GroupL1Norm", gl1.clone(), 1.5, smooth),
        case("KullbackLeibler", kl.clone(), 2.0, Some(kl_points)),
        case(
            "KullbackLeiblerConvexConj",
            Arc::new(
                KullbackLeiblerConvexConj::new(d.clone(), Some(g.try_clone().unwrap())).unwrap(),
            ),
            2.0,
            Some(kl_conj_points),
        ),
        case("IndicatorBox", boxf.clone(), 2.0, None),
        case(
            "IndicatorBoxConvexConj",
            Arc::new(IndicatorBoxConvexConj::new(d.clone(), -1.0, 2.0).unwrap()),
            2.0,
            None,
        ),
        case(
            "IndicatorNonnegativity",
            Arc::new(IndicatorNonnegativity::new(r.clone())),
            2.0,
            None,
        ),
        case(
            "IndicatorZero",
            Arc::new(IndicatorZero::with_constant(r.clone(), 1.5).unwrap()),
            1.0,
            None,
        ),
        case(
            "IndicatorL2UnitBall",
            Arc::new(IndicatorL2UnitBall::new(r.clone())),
            1.0,
            None,
        ),
        case(
            "IndicatorGroupLinfUnitBall",
            Arc::new(IndicatorGroupLinfUnitBall::new(v.clone()).unwrap()),
            1.5,
            None,
        ),
        case(
            "ZeroFunctional",
            Arc::new(ZeroFunctional::new(r.clone())),
            1.0,
            smooth,
        ),
        case(
            "ConstantFunctional",
            Arc::new(ConstantFunctional::new(r.clone(), 2.5).unwrap()),
            1.0,
            smooth,
        ),
        case(
            "SeparableSum",
            Arc::new(
                SeparableSum::new(vec![l1.clone(), Arc::new(L2NormSquared::new(r.clone()))])
                    .unwrap(),
            ),
            1.5,
            smooth,
        ),
        case(
            "Translation",
            Arc::new(Translation::new(l1.clone(), a.try_clone().unwrap()).unwrap()),
            1.5,
            smooth,
        ),
        case(
            "LeftScalarMult",
            Arc::new(LeftScalarMult::new(huber.clone(), 2.5).unwrap()),
            1.0,
            smooth,
        ),
        case(
            "RightScalarMult",
            Arc::new(RightScalarMult::new(l1.clone(), -1.7).unwrap()),
            1.5,
            smooth,
        ),
        case(
            "RightScalarMult of KL",
            Arc::new(RightScalarMult::new(kl.clone(), 0.8).unwrap()),
            2.0,
            Some(kl_points),
        ),
        case(
            "QuadraticPerturbation",
            Arc::new(
                QuadraticPerturbation::new(l1.clone(), 0.7, Some(u.try_clone().unwrap())).unwrap(),
            ),
            1.5,
            smooth,
        ),
        case(
            "QuadraticPerturbation of a box",
            Arc::new(QuadraticPerturbation::new(boxf, 0.4, None).unwrap()),
            2.0,
            None,
        ),
        case(
            "MoreauEnvelope",
            Arc::new(MoreauEnvelope::new(gl1, 0.5).unwrap()),
            1.5,
            smooth,
        ),
        case(
            "Huber via FunctionalExt",
            huber
                .scaled(0.5)
                .unwrap()
                .translated(a)
                .unwrap()
                .perturbed(0.0, Some(u))
                .unwrap(),
            1.0,
            smooth,
        ),
        case(
            "KL translated",
            kl.translated(randn(&d, 0.1, rng))
                .unwrap()
                .scaled_argument(1.2)
                .unwrap(),
            2.0,
            None,
        ),
        case(
            "L2NormSquared conjugate",
            l2sq.convex_conj().unwrap(),
            1.5,
            smooth,
        ),
    ]
}

const SIGMAS: [f64; 3] = [0.25, 1.0, 3.0];

// ------------------------------------------------------------------ properties

#[test]
fn moreau_identity() {
    let mut rng = common::rng(1);
    for c in catalogue(&mut rng) {
        let s = c.f.domain().clone();
        let conj = c.f.convex_conj().unwrap();
        for sigma in SIGMAS {
            for _ in 0..3 {
                let x = randn(&s, c.scale, &mut rng);
                // x = prox_{σf}(x) + σ prox_{f*/σ}(x/σ)
                let p = c.f.proximal(sigma, &x).unwrap();
                let xs = lin(&s, 1.0 / sigma, &x, 0.0, &x);
                let q = conj.proximal(1.0 / sigma, &xs).unwrap();
                let sum = lin(&s, 1.0, &p, sigma, &q);
                let err = s.dist(&sum, &x).unwrap() / s.norm(&x).unwrap().max(1.0);
                assert!(
                    err < 1e-13,
                    "{} σ = {sigma}: Moreau identity off by {err:e}",
                    c.name
                );
            }
        }
    }
}

#[test]
fn biconjugate_acts_as_the_functional() {
    let mut rng = common::rng(2);
    for c in catalogue(&mut rng) {
        let s = c.f.domain().clone();
        let cc = c.f.convex_conj().unwrap().convex_conj().unwrap();
        for sigma in SIGMAS {
            let x = randn(&s, c.scale, &mut rng);
            let p = c.f.proximal(sigma, &x).unwrap();
            let pc = cc.proximal(sigma, &x).unwrap();
            let err = s.dist(&p, &pc).unwrap() / s.norm(&p).unwrap().max(1.0);
            assert!(
                err < 1e-13,
                "{} σ = {sigma}: prox of f** off by {err:e}",
                c.name
            );
            // Values at a random point and at a point of the domain (a proximal point).
            for y in [&x, &p] {
                let (a, b) = (c.f.value(y).unwrap(), cc.value(y).unwrap());
                assert!(close(a, b, 1e-12), "{}: f = {a}, f** = {b}", c.name);
            }
        }
    }
}

#[test]
fn proximal_points_minimise_the_proximal_objective() {
    let mut rng = common::rng(3);
    for c in catalogue(&mut rng) {
        let s = c.f.domain().clone();
        for sigma in SIGMAS {
            let x = randn(&s, c.scale, &mut rng);
            let obj = |z: &Element<f64>| {
                let d = s.dist(z, &x).unwrap();
                c.f.value(z).unwrap() + d * d / (2.0 * sigma)
            };
            let z = c.f.proximal(sigma, &x).unwrap();
            let best = obj(&z);
            assert!(best.is_finite(), "{}: f(prox) = {best}", c.name);
            for eps in [1e-1, 1e-3, 1e-5] {
                for _ in 0..4 {
                    let delta = randn(&s, eps, &mut rng);
                    let w = lin(&s, 1.0, &z, 1.0, &delta);
                    // Also a perturbed point moved back into the domain of f.
                    let w2 = c.f.proximal(0.5, &w).unwrap();
                    for w in [&w, &w2] {
                        let o = obj(w);
                        assert!(
                            best <= o + 1e-12 * (1.0 + best.abs()),
                            "{} σ = {sigma} ε = {eps}: objective {best} at the prox, {o} nearby",
                            c.name
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn gradients_match_finite_differences() {
    let mut rng = common::rng(4);
    let mut checked = 0;
    for c in catalogue(&mut rng) {
        let Some(point) = c.smooth_at else { continue };
        let s = c.f.domain().clone();
        for _ in 0..3 {
            let x = point(&s, &mut rng);
            let v = randn(&s, 1.0, &mut rng);
            let g = c.f.gradient(&x).unwrap();
            let dd = s.inner(&g, &v).unwrap();
            let h = 1e-6;
            let fp = c.f.value(&lin(&s, 1.0, &x, h, &v)).unwrap();
            let fm = c.f.value(&lin(&s, 1.0, &x, -h, &v)).unwrap();
            let fd = (fp - fm) / (2.0 * h);
            let tol = 1e-7 * (1.0 + dd.abs() + c.f.value(&x).unwrap().abs());
            assert!(
                (fd - dd).abs() <= tol,
                "{}: directional derivative {dd}, finite difference {fd}",
                c.name
            );
        }
        checked += 1;
    }
    assert!(
        checked >= 15,
        "only {checked} differentiable functionals checked"
    );
}

#[test]
fn composition_value_and_gradient() {
    // f(x) = ‖∇x − b‖² and its gradient 2 ∇*(∇x − b).
    let mut rng = common::rng(5);
    let d = d2();
    let grad: LinOp<f64> = Arc::new(Gradient::new(d.clone()).unwrap());
    let v = grad.range().clone();
    let b = randn(&v, 1.0, &mut rng);
    let f: Func<f64> = Arc::new(L2NormSquared::new(v.clone()));
    let fa = f
        .translated(b.try_clone().unwrap())
        .unwrap()
        .compose(grad.clone())
        .unwrap();
    let x = randn(&d, 1.0, &mut rng);
    let r = lin(&v, 1.0, &grad.apply(&x).unwrap(), -1.0, &b);
    assert!(close(
        fa.value(&x).unwrap(),
        v.inner(&r, &r).unwrap(),
        1e-14
    ));
    let mut want = grad.adjoint().unwrap().apply(&r).unwrap();
    d.scale(2.0, &mut want).unwrap();
    let got = fa.gradient(&x).unwrap();
    assert!(d.dist(&got, &want).unwrap() <= 1e-14 * d.norm(&want).unwrap());
    // Finite differences too.
    let w = randn(&d, 1.0, &mut rng);
    let h = 1e-6;
    let fd = (fa.value(&lin(&d, 1.0, &x, h, &w)).unwrap()
        - fa.value(&lin(&d, 1.0, &x, -h, &w)).unwrap())
        / (2.0 * h);
    let dd = d.inner(&got, &w).unwrap();
    assert!(close(fd, dd, 1e-7), "{fd} vs {dd}");
    // No proximal operator nor conjugate: a clear error.
    assert!(matches!(fa.proximal(1.0, &x), Err(Error::Unsupported(_))));
    assert!(matches!(fa.convex_conj(), Err(Error::Unsupported(_))));
    // The range of the operator must be the functional's domain.
    let wrong: Func<f64> = Arc::new(L2NormSquared::new(d.clone()));
    assert!(wrong.compose(grad).is_err());
}

#[test]
fn fenchel_young_inequality_and_equality() {
    let mut rng = common::rng(6);
    for c in catalogue(&mut rng) {
        let s = c.f.domain().clone();
        let conj = c.f.convex_conj().unwrap();
        for sigma in SIGMAS {
            // Points of the domains of f and f*: proximal points of random points.
            let x = c.f.proximal(sigma, &randn(&s, c.scale, &mut rng)).unwrap();
            let y = conj.proximal(sigma, &randn(&s, c.scale, &mut rng)).unwrap();
            let (fx, fy, xy) = (
                c.f.value(&x).unwrap(),
                conj.value(&y).unwrap(),
                s.inner(&x, &y).unwrap(),
            );
            assert!(
                fx.is_finite() && fy.is_finite(),
                "{}: f(x) = {fx}, f*(y) = {fy}",
                c.name
            );
            assert!(
                fx + fy >= xy - 1e-12 * (1.0 + fx.abs() + fy.abs() + xy.abs()),
                "{}: f(x) + f*(y) = {} < ⟨x, y⟩ = {xy}",
                c.name,
                fx + fy
            );
            // Equality for p = prox_{σf}(x₀), q = prox_{f*/σ}(x₀/σ) = (x₀ − p)/σ ∈ ∂f(p).
            let x0 = randn(&s, c.scale, &mut rng);
            let p = c.f.proximal(sigma, &x0).unwrap();
            let q = conj
                .proximal(1.0 / sigma, &lin(&s, 1.0 / sigma, &x0, 0.0, &x0))
                .unwrap();
            let (fp, fq, pq) = (
                c.f.value(&p).unwrap(),
                conj.value(&q).unwrap(),
                s.inner(&p, &q).unwrap(),
            );
            assert!(
                close(fp + fq, pq, 1e-11),
                "{} σ = {sigma}: f(p) + f*(q) = {fp} + {fq}, ⟨p, q⟩ = {pq}",
                c.name
            );
        }
    }
}

// ------------------------------------------------------------------ values

fn host(x: &Element<f64>) -> Vec<f64> {
    x.as_slice().unwrap().to_vec()
}

#[test]
fn values_match_direct_formulas() {
    let mut rng = common::rng(7);
    let d = d2();
    let w = 2.0 / 15.0;
    let x = randn(&d, 1.5, &mut rng);
    let xv = host(&x);
    let v = |f: &dyn Functional<f64>, x: &Element<f64>| f.value(x).unwrap();
    let sum = |it: &mut dyn Iterator<Item = f64>| it.sum::<f64>();
    let tol = 1e-13;

    let l1 = w * sum(&mut xv.iter().map(|a| a.abs()));
    assert!(close(v(&L1Norm::new(d.clone()), &x), l1, tol));
    assert!(close(
        v(
            &IndicatorBoxConvexConj::new(d.clone(), -1.0, 1.0).unwrap(),
            &x
        ),
        l1,
        tol
    ));
    let sq = w * sum(&mut xv.iter().map(|a| a * a));
    assert!(close(v(&L2NormSquared::new(d.clone()), &x), sq, tol));
    assert!(close(v(&L2Norm::new(d.clone()), &x), sq.sqrt(), tol));
    let gamma = 0.7;
    let hub = w * sum(&mut xv.iter().map(|a| {
        if a.abs() <= gamma {
            a * a / (2.0 * gamma)
        } else {
            a.abs() - gamma / 2.0
        }
    }));
    assert!(close(
        v(&Huber::new(d.clone(), gamma).unwrap(), &x),
        hub,
        tol
    ));
    // Support function of [−1, 2]: 2 y⁺ − y⁻.
    let supp = w * sum(&mut xv.iter().map(|&a| if a > 0.0 { 2.0 * a } else { -a }));
    assert!(close(
        v(
            &IndicatorBoxConvexConj::new(d.clone(), -1.0, 2.0).unwrap(),
            &x
        ),
        supp,
        tol
    ));

    // Group L1 over a vector field with two components.
    let vs = d.power(2).unwrap();
    let y = randn(&vs, 1.0, &mut rng);
    let (y0, y1) = (host(y.part(0).unwrap()), host(y.part(1).unwrap()));
    let gl1 = w * sum(&mut y0.iter().zip(&y1).map(|(a, b)| (a * a + b * b).sqrt()));
    assert!(close(
        v(&GroupL1Norm::new(vs.clone()).unwrap(), &y),
        gl1,
        tol
    ));
    let hubv = w * sum(&mut y0.iter().zip(&y1).map(|(a, b)| {
        let m = (a * a + b * b).sqrt();
        if m <= gamma {
            m * m / (2.0 * gamma)
        } else {
            m - gamma / 2.0
        }
    }));
    assert!(close(
        v(&Huber::new(vs.clone(), gamma).unwrap(), &y),
        hubv,
        tol
    ));

    // Kullback–Leibler with a zero in the prior.
    let g = prior(&mut rng);
    let gv = host(&g);
    let p = positive(&d, 0.1, None, &mut rng);
    let pv = host(&p);
    let kl = w * sum(&mut gv
        .iter()
        .zip(&pv)
        .map(|(&g, &x)| x - g + if g > 0.0 { g * (g / x).ln() } else { 0.0 }));
    let klf = KullbackLeibler::new(d.clone(), Some(g.try_clone().unwrap())).unwrap();
    assert!(close(v(&klf, &p), kl, tol));
    assert_eq!(v(&klf, &g), 0.0, "KL(g) must be 0");
    let mut neg = p.try_clone().unwrap();
    neg.as_slice_mut().unwrap()[0] = -0.1; // where g = 0: still outside the domain
    assert_eq!(v(&klf, &neg), f64::INFINITY);
    let mut zero = p.try_clone().unwrap();
    zero.as_slice_mut().unwrap()[1] = 0.0; // where g > 0
    assert_eq!(v(&klf, &zero), f64::INFINITY);
    // Its conjugate: −∫ g ln(1 − y) for y ≤ 1.
    let q = kl_conj_points(&d, &mut rng);
    let qv = host(&q);
    let klc = w * sum(&mut gv.iter().zip(&qv).map(|(&g, &y)| -g * (1.0 - y).ln()));
    let klcf = KullbackLeiblerConvexConj::new(d.clone(), Some(g)).unwrap();
    assert!(close(v(&klcf, &q), klc, tol));
    let mut one = q.try_clone().unwrap();
    one.as_slice_mut().unwrap()[0] = 1.0; // y = 1 where g = 0: finite
    assert!(v(&klcf, &one).is_finite());
    one.as_slice_mut().unwrap()[0] = 1.5; // y > 1: outside
    assert_eq!(v(&klcf, &one), f64::INFINITY);

    // Indicators.
    let b = IndicatorBox::new(d.clone(), -3.0, 3.0).unwrap();
    let inside = d.full(2.9).unwrap();
    assert_eq!(v(&b, &inside), 0.0);
    assert_eq!(v(&b, &d.full(3.5).unwrap()), f64::INFINITY);
    assert_eq!(v(&IndicatorNonnegativity::new(d.clone()), &inside), 0.0);
    assert_eq!(
        v(&IndicatorNonnegativity::new(d.clone()), &x),
        f64::INFINITY
    );
    let ball = IndicatorL2UnitBall::new(d.clone());
    let unit = lin(&d, 1.0 / d.norm(&x).unwrap(), &x, 0.0, &x);
    assert_eq!(v(&ball, &unit), 0.0);
    assert_eq!(v(&ball, &lin(&d, 1.01, &unit, 0.0, &x)), f64::INFINITY);
}

#[test]
fn single_precision_agrees_with_double() {
    let mut rng = common::rng(8);
    let d = uniform_discr::<f32>(&[0.0, 0.0], &[1.0, 2.0], &[8, 6]).unwrap();
    let v = d.power(2).unwrap();
    let fs: Vec<(Func<f32>, Space<f32>)> = vec![
        (Arc::new(L1Norm::new(d.clone())), d.clone()),
        (Arc::new(Huber::new(d.clone(), 0.3).unwrap()), d.clone()),
        (Arc::new(GroupL1Norm::new(v.clone()).unwrap()), v.clone()),
        (
            Arc::new(KullbackLeibler::new(d.clone(), None).unwrap()),
            d.clone(),
        ),
        (
            Arc::new(IndicatorGroupLinfUnitBall::new(v.clone()).unwrap()),
            v,
        ),
    ];
    for (f, s) in fs {
        let conj = f.convex_conj().unwrap();
        let x = s.random_normal(&mut rng).unwrap();
        let sigma = 0.7;
        let p = f.proximal(sigma, &x).unwrap();
        let mut xs = s.zero().unwrap();
        s.scaled(1.0 / sigma as f32, &x, &mut xs).unwrap();
        let q = conj.proximal(1.0 / sigma, &xs).unwrap();
        let mut sum = s.zero().unwrap();
        s.lincomb(1.0, &p, sigma as f32, &q, &mut sum).unwrap();
        let err = s.dist(&sum, &x).unwrap() / s.norm(&x).unwrap();
        assert!(
            err < 20.0 * f32::EPS,
            "{}: Moreau identity off by {err:e} in f32",
            f.name()
        );
        assert!(f.value(&p).unwrap().is_finite(), "{}", f.name());
    }
}

#[test]
fn invalid_arguments_are_errors() {
    let d = d2();
    let r = rn::<f64>(&[3]).unwrap();
    let l1: Func<f64> = Arc::new(L1Norm::new(d.clone()));
    let x = d.one().unwrap();
    let bad = |r: Result<(), Error>, what: &str| {
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{what}: {r:?}");
    };
    bad(Huber::new(d.clone(), 0.0).map(|_| ()), "Huber γ = 0");
    bad(
        IndicatorBox::new(d.clone(), 1.0, -1.0).map(|_| ()),
        "box lo > hi",
    );
    bad(
        IndicatorBox::new(d.clone(), f64::INFINITY, f64::INFINITY).map(|_| ()),
        "box at ∞",
    );
    bad(
        LeftScalarMult::new(l1.clone(), 0.0).map(|_| ()),
        "left scaling by 0",
    );
    bad(
        LeftScalarMult::new(l1.clone(), -1.0).map(|_| ()),
        "left scaling by −1",
    );
    bad(
        RightScalarMult::new(l1.clone(), 0.0).map(|_| ()),
        "right scaling by 0",
    );
    bad(
        QuadraticPerturbation::new(l1.clone(), -0.1, None).map(|_| ()),
        "negative quadratic",
    );
    bad(MoreauEnvelope::new(l1.clone(), 0.0).map(|_| ()), "μ = 0");
    bad(
        ConstantFunctional::new(d.clone(), f64::NAN).map(|_| ()),
        "NaN constant",
    );
    let mut neg = d.one().unwrap();
    neg.as_slice_mut().unwrap()[3] = -1.0;
    bad(
        KullbackLeibler::new(d.clone(), Some(neg)).map(|_| ()),
        "negative prior",
    );
    for sigma in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        bad(l1.proximal(sigma, &x).map(|_| ()), "σ ≤ 0");
    }
    // Elements of another space.
    assert!(l1.proximal(1.0, &r.one().unwrap()).is_err());
    assert!(l1.value(&r.one().unwrap()).is_err());
    assert!(Translation::new(l1.clone(), r.one().unwrap()).is_err());
    // A product space that is not a power space has no pointwise norm.
    let mixed = Space::product(vec![d.clone(), r.clone()]).unwrap();
    assert!(GroupL1Norm::new(mixed).is_err());
    // Non-differentiable functionals say so.
    let ib: Func<f64> = Arc::new(IndicatorBox::new(d.clone(), 0.0, 1.0).unwrap());
    assert!(matches!(ib.gradient(&x), Err(Error::Unsupported(_))));
}

#[test]
fn scalar_type_is_generic() {
    fn norm_of_one<T: Scalar>() -> f64 {
        let s = rn::<T>(&[4]).unwrap();
        L1Norm::new(s.clone()).value(&s.one().unwrap()).unwrap()
    }
    assert_eq!(norm_of_one::<f32>(), 4.0);
    assert_eq!(norm_of_one::<f64>(), 4.0);
}

/// The builders work on concrete functionals (moved into the result, no `Arc::new`) and give
/// the same functionals as the shared forms.
#[test]
fn builders_on_concrete_functionals_match_the_shared_forms() {
    let mut rng = common::rng(17);
    let r = d2();
    let d = randn(&r, 1.0, &mut rng);
    let owned = L2NormSquared::new(r.clone())
        .translated(d.try_clone().unwrap())
        .unwrap()
        .scaled(0.5)
        .unwrap();
    let l2: Func<f64> = Arc::new(L2NormSquared::new(r.clone()));
    let shared = l2
        .translated(d.try_clone().unwrap())
        .unwrap()
        .scaled(0.5)
        .unwrap();
    assert_eq!(owned.name(), shared.name());
    let x = randn(&r, 1.0, &mut rng);
    assert_eq!(owned.value(&x).unwrap(), shared.value(&x).unwrap());
    // ½‖x − d‖²
    let res = lin(&r, 1.0, &x, -1.0, &d);
    assert!(close(
        owned.value(&x).unwrap(),
        0.5 * r.inner(&res, &res).unwrap(),
        1e-14
    ));
    let (a, b) = (owned.gradient(&x).unwrap(), shared.gradient(&x).unwrap());
    assert_eq!(r.dist(&a, &b).unwrap(), 0.0);
    let (a, b) = (
        owned.proximal(0.7, &x).unwrap(),
        shared.proximal(0.7, &x).unwrap(),
    );
    assert_eq!(r.dist(&a, &b).unwrap(), 0.0);
    // The shared functional stays usable, and the other builders take concrete ones too.
    assert!(l2.scaled(2.0).is_ok());
    let grad: LinOp<f64> = Arc::new(Gradient::new(r.clone()).unwrap());
    let tv = GroupL1Norm::new(grad.range().clone())
        .unwrap()
        .compose(grad.clone())
        .unwrap();
    assert!(tv.value(&x).unwrap() > 0.0);
    assert!(L1Norm::new(r.clone()).moreau_envelope(0.5).is_ok());
    assert!(L1Norm::new(r.clone()).scaled_argument(2.0).is_ok());
    assert!(L1Norm::new(r.clone()).perturbed(0.5, None).is_ok());
    // One fallibility for `scaled`: a factor that is not finite and positive is an error.
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            L1Norm::new(r.clone()).scaled(bad),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(l2.scaled(bad), Err(Error::InvalidArgument(_))));
    }
}
