//! `Space::pointwise`, `pointwise_inplace` and `pointwise2` on the host against plain Rust
//! formulas, entry by entry, including special values (±0, ±∞, NaN) and product spaces.

use rand::Rng;
use rodl::{rn, uniform_discr, weighted_rn, Element, Error, Pointwise, Pointwise2, Scalar, Space};

mod common;

/// Random values of several magnitudes and signs, plus special values.
fn inputs(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = common::rng(seed);
    let mut v: Vec<f64> = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        0.75,
        -0.75,
        2.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1e-30,
        -1e-30,
    ];
    while v.len() < n {
        let s: f64 = [0.01, 1.0, 30.0][rng.gen_range(0..3)];
        v.push(s * rng.gen_range(-3.0..3.0));
    }
    v.truncate(n);
    v
}

fn same(a: f64, b: f64) -> bool {
    // ±0 are not told apart.
    a == b || (a.is_nan() && b.is_nan())
}

fn el<T: Scalar>(s: &Space<T>, v: &[f64]) -> Element<T> {
    s.element_from_vec(v.iter().map(|&x| T::of(x)).collect())
        .unwrap()
}

fn vals<T: Scalar>(x: &Element<T>) -> Vec<f64> {
    x.as_slice().unwrap().iter().map(|v| v.f64()).collect()
}

/// The reference formulas, written independently of the library's.
fn reference<T: Scalar>(op: Pointwise<T>, x: T) -> T {
    let z = T::zero();
    match op {
        Pointwise::AddScalar(a) => x + a,
        Pointwise::MaxScalar(a) => {
            if x.is_nan() || a > x {
                a
            } else {
                x
            }
        }
        Pointwise::MinScalar(a) => {
            if x.is_nan() || a < x {
                a
            } else {
                x
            }
        }
        Pointwise::Clamp(lo, hi) => {
            if x.is_nan() || x < lo {
                lo
            } else if x > hi {
                hi
            } else {
                x
            }
        }
        Pointwise::Sqrt => x.sqrt(),
        Pointwise::Exp => x.exp(),
        Pointwise::Log => x.ln(),
        Pointwise::Sign => {
            if x.is_nan() || x == z {
                x
            } else {
                x.signum()
            }
        }
        Pointwise::Square => x.powi(2),
        Pointwise::Recip => x.recip(),
        Pointwise::SoftThreshold(t) => {
            if x.is_nan() {
                x
            } else {
                x.signum() * (x.abs() - t).max(z)
            }
        }
        Pointwise::Pow(p) => x.powf(p),
        Pointwise::Huber(g) => {
            if x.abs() <= g {
                x * x / (T::of(2.0) * g)
            } else {
                x.abs() - g / T::of(2.0)
            }
        }
    }
}

fn reference2<T: Scalar>(op: Pointwise2, x: T, y: T) -> T {
    let z = T::zero();
    match op {
        Pointwise2::Max => {
            if x.is_nan() || y > x {
                y
            } else {
                x
            }
        }
        Pointwise2::Min => {
            if x.is_nan() || y < x {
                y
            } else {
                x
            }
        }
        Pointwise2::DivOrZero => {
            if y == z {
                z
            } else {
                x / y
            }
        }
        Pointwise2::XLogY => {
            if x == z {
                z
            } else {
                x * y.ln()
            }
        }
        Pointwise2::KlDiv => {
            if x.is_nan() || y.is_nan() {
                T::nan()
            } else if x == z && y >= z {
                y
            } else if x > z && y > z {
                x * (x / y).ln() - x + y
            } else {
                T::infinity()
            }
        }
    }
}

fn ops<T: Scalar>() -> Vec<Pointwise<T>> {
    vec![
        Pointwise::AddScalar(T::of(-1.5)),
        Pointwise::MaxScalar(T::of(0.25)),
        Pointwise::MinScalar(T::of(-0.25)),
        Pointwise::Clamp(T::of(-0.75), T::of(2.0)),
        Pointwise::Clamp(T::zero(), T::infinity()),
        Pointwise::Sqrt,
        Pointwise::Exp,
        Pointwise::Log,
        Pointwise::Sign,
        Pointwise::Square,
        Pointwise::Recip,
        Pointwise::SoftThreshold(T::of(0.75)),
        Pointwise::SoftThreshold(T::zero()),
        Pointwise::Pow(T::of(1.5)),
        Pointwise::Pow(T::of(-2.0)),
        Pointwise::Huber(T::of(0.5)),
    ]
}

const OPS2: [Pointwise2; 5] = [
    Pointwise2::Max,
    Pointwise2::Min,
    Pointwise2::DivOrZero,
    Pointwise2::XLogY,
    Pointwise2::KlDiv,
];

fn check_all<T: Scalar>(s: &Space<T>, n: usize, seed: u64) {
    let xv = inputs(n, seed);
    let mut yv = inputs(n, seed + 1);
    yv.rotate_left(5); // pair special values with other values too
    let (x, y) = (el(s, &xv), el(s, &yv));
    let mut out = s.zero().unwrap();
    for op in ops::<T>() {
        s.pointwise(op, &x, &mut out).unwrap();
        let mut inplace = x.try_clone().unwrap();
        s.pointwise_inplace(op, &mut inplace).unwrap();
        for (i, (&xi, (&o, &p))) in xv
            .iter()
            .zip(vals(&out).iter().zip(&vals(&inplace)))
            .enumerate()
        {
            let want = reference(op, T::of(xi)).f64();
            assert!(
                same(o, want) && same(p, want),
                "{op:?} <{}> entry {i}: f({xi}) = {o} (in place {p}), want {want}",
                T::NAME
            );
        }
    }
    for op in OPS2 {
        s.pointwise2(op, &x, &y, &mut out).unwrap();
        for (i, ((&xi, &yi), &o)) in xv.iter().zip(&yv).zip(&vals(&out)).enumerate() {
            let want = reference2(op, T::of(xi), T::of(yi)).f64();
            assert!(
                same(o, want),
                "{op:?} <{}> entry {i}: f({xi}, {yi}) = {o}, want {want}",
                T::NAME
            );
        }
    }
}

#[test]
fn every_op_matches_plain_rust_f64() {
    check_all(&rn::<f64>(&[7, 9]).unwrap(), 63, 1);
}

#[test]
fn every_op_matches_plain_rust_f32() {
    check_all(&weighted_rn::<f32>(&[50], 0.3).unwrap(), 50, 2);
}

#[test]
fn parallel_path_matches_plain_rust() {
    // Above the host backend's chunk size, the work is split across rayon tasks.
    check_all(&rn::<f64>(&[40_000]).unwrap(), 40_000, 3);
    check_all(&rn::<f32>(&[3, 20_000]).unwrap(), 60_000, 4);
}

#[test]
fn product_spaces_recurse_into_parts() {
    let a = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[3, 4]).unwrap();
    let b = rn::<f64>(&[5]).unwrap();
    let inner = Space::product(vec![a.clone(), b.clone()]).unwrap();
    let s = Space::product(vec![inner, a.clone()]).unwrap();
    let mut rng = common::rng(7);
    let x = s.random_normal(&mut rng).unwrap();
    let y = s.random_normal(&mut rng).unwrap();
    let leaves = |e: &Element<f64>| -> Vec<Element<f64>> {
        let p = e.parts().unwrap();
        let q = p[0].parts().unwrap();
        vec![
            q[0].try_clone().unwrap(),
            q[1].try_clone().unwrap(),
            p[1].try_clone().unwrap(),
        ]
    };
    let spaces = [a.clone(), b, a];
    let mut out = s.zero().unwrap();
    let op = Pointwise::SoftThreshold(0.3);
    s.pointwise(op, &x, &mut out).unwrap();
    let mut inplace = x.try_clone().unwrap();
    s.pointwise_inplace(op, &mut inplace).unwrap();
    let mut out2 = s.zero().unwrap();
    s.pointwise2(Pointwise2::Max, &x, &y, &mut out2).unwrap();
    for (k, sp) in spaces.iter().enumerate() {
        let (xk, yk) = (&leaves(&x)[k], &leaves(&y)[k]);
        let mut want = sp.zero().unwrap();
        sp.pointwise(op, xk, &mut want).unwrap();
        assert_eq!(vals(&leaves(&out)[k]), vals(&want), "part {k}");
        assert_eq!(vals(&leaves(&inplace)[k]), vals(&want), "part {k} in place");
        sp.pointwise2(Pointwise2::Max, xk, yk, &mut want).unwrap();
        assert_eq!(vals(&leaves(&out2)[k]), vals(&want), "part {k} max");
        let m: Vec<f64> = vals(xk)
            .iter()
            .zip(vals(yk))
            .map(|(a, b)| a.max(b))
            .collect();
        assert_eq!(vals(&want), m);
    }
}

#[test]
fn invalid_parameters_and_operands_are_errors() {
    let s = rn::<f64>(&[4]).unwrap();
    let x = s.one().unwrap();
    let mut out = s.zero().unwrap();
    for op in [
        Pointwise::Clamp(1.0, -1.0),
        Pointwise::Clamp(f64::NAN, 1.0),
        Pointwise::SoftThreshold(-0.1),
        Pointwise::SoftThreshold(f64::NAN),
        Pointwise::Huber(0.0),
        Pointwise::Huber(f64::INFINITY),
    ] {
        assert!(
            matches!(
                s.pointwise(op, &x, &mut out),
                Err(Error::InvalidArgument(_))
            ),
            "{op:?} accepted"
        );
        let mut y = x.try_clone().unwrap();
        assert!(s.pointwise_inplace(op, &mut y).is_err(), "{op:?} accepted");
    }
    let other = rn::<f64>(&[5]).unwrap().one().unwrap();
    assert!(matches!(
        s.pointwise(Pointwise::Exp, &other, &mut out),
        Err(Error::SpaceMismatch { .. })
    ));
    assert!(matches!(
        s.pointwise2(Pointwise2::Min, &x, &other, &mut out),
        Err(Error::SpaceMismatch { .. })
    ));
    let mut wrong = other.try_clone().unwrap();
    assert!(s.pointwise_inplace(Pointwise::Exp, &mut wrong).is_err());
}
