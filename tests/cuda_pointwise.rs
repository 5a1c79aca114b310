//! `Space::pointwise`, `pointwise_inplace` and `pointwise2` on a GPU against the host, for f32
//! and f64, on tensor and product spaces, including special values (±0, ±∞, NaN).
//!
//! Built only with the `cuda` feature. These tests FAIL (they do not skip) when no GPU can be
//! used: run them where there is one.
#![cfg(feature = "cuda")]

use rand::Rng;
use rodl::{rn, uniform_discr, Device, Element, Pointwise, Pointwise2, Scalar, Space};

mod common;

const GPU: Device = Device::Cuda(0);

fn on_gpu<T: Scalar>(s: &Space<T>) -> Space<T> {
    s.with_device(GPU)
        .unwrap_or_else(|e| panic!("these tests need CUDA device 0: {e}"))
}

/// Host data: special values first, then random values of several magnitudes and signs.
fn data<T: Scalar>(s: &Space<T>, seed: u64) -> Element<T> {
    let mut rng = common::rng(seed);
    let special = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.75,
        -0.75,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1e-30,
    ];
    let n = s.size();
    let v: Vec<T> = (0..n)
        .map(|i| {
            let k = (i + seed as usize) % (n.max(1));
            if k < special.len() {
                T::of(special[k])
            } else {
                let m: f64 = [0.01, 1.0, 30.0][rng.gen_range(0..3)];
                T::of(m * rng.gen_range(-3.0..3.0))
            }
        })
        .collect();
    s.element_from_vec(v).unwrap()
}

/// Flat host values of an element (parts concatenated).
fn flat<T: Scalar>(x: &Element<T>) -> Vec<f64> {
    let x = x.to_host().unwrap();
    if x.is_product() {
        return x.parts().unwrap().iter().flat_map(flat).collect();
    }
    x.as_slice().unwrap().iter().map(|v| v.f64()).collect()
}

/// Entrywise agreement: equal (or both NaN), or within `rel` of each other relative to
/// `max(|host|, scale[i])`.
fn check(what: &str, gpu: &[f64], cpu: &[f64], scale: &[f64], rel: f64, floor: f64) {
    assert_eq!(gpu.len(), cpu.len());
    let mut worst = 0.0f64;
    for (i, (&g, &c)) in gpu.iter().zip(cpu).enumerate() {
        if g == c || (g.is_nan() && c.is_nan()) {
            continue;
        }
        let d = (g - c).abs();
        // Below the smallest normal number of T the relative precision falls: measure those
        // entries against that number (one subnormal step apart is a rounding difference).
        let s = c.abs().max(scale[i]).max(floor);
        assert!(
            d.is_finite() && d <= rel * s,
            "{what}: entry {i}: gpu {g}, cpu {c} (allowed {rel:e} relative to {s})"
        );
        worst = worst.max(d / s);
    }
    if worst > 0.0 {
        eprintln!("{what}: agrees to {worst:.1e} relative, not bitwise");
    }
}

fn transcendental<T>(op: &Pointwise<T>) -> bool {
    matches!(op, Pointwise::Exp | Pointwise::Log | Pointwise::Pow(_))
}

fn ulps<T: Scalar>() -> f64 {
    8.0 * T::EPS
}

fn gpu_matches_host<T: Scalar>(cpu: &Space<T>, seed: u64) {
    let gpu = on_gpu(cpu);
    let make = |s: &Space<T>, seed: u64| -> Element<T> {
        if s.is_product() {
            let parts = s
                .parts()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(k, p)| data(p, seed + 10 * k as u64))
                .collect();
            s.product_element(parts).unwrap()
        } else {
            data(s, seed)
        }
    };
    let x = make(cpu, seed);
    let y = make(cpu, seed + 1);
    let (gx, gy) = (x.to_device(GPU).unwrap(), y.to_device(GPU).unwrap());
    let (fx, fy) = (flat(&x), flat(&y));
    let ones = vec![0.0; fx.len()];
    let (mut c, mut g) = (cpu.zero().unwrap(), gpu.zero().unwrap());
    let ops = [
        Pointwise::AddScalar(T::of(-1.5)),
        Pointwise::MaxScalar(T::of(0.25)),
        Pointwise::MinScalar(T::of(-0.25)),
        Pointwise::Clamp(T::of(-0.75), T::of(2.0)),
        Pointwise::Clamp(T::neg_infinity(), T::zero()),
        Pointwise::Sqrt,
        Pointwise::Exp,
        Pointwise::Log,
        Pointwise::Sign,
        Pointwise::Square,
        Pointwise::Recip,
        Pointwise::SoftThreshold(T::of(0.75)),
        Pointwise::Pow(T::of(1.5)),
        Pointwise::Pow(T::of(-2.0)),
        Pointwise::Huber(T::of(0.5)),
    ];
    for op in ops {
        let what = format!("{op:?} <{}> on {cpu}", T::NAME);
        cpu.pointwise(op, &x, &mut c).unwrap();
        gpu.pointwise(op, &gx, &mut g).unwrap();
        assert_eq!(g.device(), GPU);
        let rel = if transcendental(&op) {
            ulps::<T>()
        } else {
            0.0
        };
        check(
            &what,
            &flat(&g),
            &flat(&c),
            &ones,
            rel,
            <T as num_traits::Float>::min_positive_value().f64(),
        );
        let mut gi = gx.try_clone().unwrap();
        gpu.pointwise_inplace(op, &mut gi).unwrap();
        check(
            &format!("{what} in place"),
            &flat(&gi),
            &flat(&c),
            &ones,
            rel,
            <T as num_traits::Float>::min_positive_value().f64(),
        );
    }
    // KlDiv cancels: compare relative to the size of its terms.
    let scale: Vec<f64> = fx
        .iter()
        .zip(&fy)
        .map(|(a, b)| a.abs().max(b.abs()) * (1.0 + (a / b).abs().ln().abs()))
        .collect();
    for op in [
        Pointwise2::Max,
        Pointwise2::Min,
        Pointwise2::DivOrZero,
        Pointwise2::XLogY,
        Pointwise2::KlDiv,
    ] {
        let what = format!("{op:?} <{}> on {cpu}", T::NAME);
        cpu.pointwise2(op, &x, &y, &mut c).unwrap();
        gpu.pointwise2(op, &gx, &gy, &mut g).unwrap();
        let (rel, sc) = match op {
            Pointwise2::XLogY => (ulps::<T>(), &ones),
            Pointwise2::KlDiv => (ulps::<T>(), &scale),
            _ => (0.0, &ones),
        };
        check(
            &what,
            &flat(&g),
            &flat(&c),
            sc,
            rel,
            <T as num_traits::Float>::min_positive_value().f64(),
        );
    }
}

#[test]
fn pointwise_on_gpu_matches_host_f32() {
    gpu_matches_host(&rn::<f32>(&[1000]).unwrap(), 1);
    // Large enough for several blocks per multiprocessor and the grid-stride loop.
    gpu_matches_host(&rn::<f32>(&[1 << 21]).unwrap(), 2);
}

#[test]
fn pointwise_on_gpu_matches_host_f64() {
    gpu_matches_host(&rn::<f64>(&[37, 41]).unwrap(), 3);
    gpu_matches_host(&rn::<f64>(&[1 << 20]).unwrap(), 4);
}

#[test]
fn pointwise_on_gpu_product_space() {
    let a = uniform_discr::<f32>(&[0.0, 0.0], &[1.0, 1.0], &[16, 24]).unwrap();
    let b = rn::<f32>(&[100]).unwrap();
    let s = Space::product(vec![a.clone(), b, a]).unwrap();
    gpu_matches_host(&s, 5);
}

#[test]
fn pointwise_mixing_devices_is_an_error() {
    let cpu = rn::<f32>(&[8]).unwrap();
    let gpu = on_gpu(&cpu);
    let x = cpu.one().unwrap();
    let mut g = gpu.zero().unwrap();
    assert!(gpu.pointwise(Pointwise::Exp, &x, &mut g).is_err());
    let gx = gpu.one().unwrap();
    assert!(gpu.pointwise2(Pointwise2::Max, &gx, &x, &mut g).is_err());
}
