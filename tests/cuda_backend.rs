//! The CUDA backend against the host code, on a real GPU (device 0).
//!
//! Built only with the `cuda` feature. These tests FAIL (they do not skip) when no GPU can be
//! used: run them where there is one. `--nocapture` shows timing figures.
#![cfg(feature = "cuda")]

use std::sync::Arc;
use std::time::Instant;

use ndarray::{ArrayD, IxDyn};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rodl::{
    check_adjoint, rn, uniform_discr, weighted_rn, Device, Divergence, Element, Error, Gradient,
    Laplacian, LinOp, LinearOperatorExt, Operator, PointwiseNorm, Scalar, Space,
};

const GPU: Device = Device::Cuda(0);

fn on_gpu<T: Scalar>(s: &Space<T>) -> Space<T> {
    s.with_device(GPU)
        .unwrap_or_else(|e| panic!("these tests need CUDA device 0: {e}"))
}

fn gpu_el<T: Scalar>(x: &Element<T>) -> Element<T> {
    x.to_device(GPU)
        .unwrap_or_else(|e| panic!("copy to the GPU failed: {e}"))
}

/// Largest |a − b| and largest |b| over all entries (recursing into product elements).
fn diff<T: Scalar>(a: &Element<T>, b: &Element<T>) -> (f64, f64) {
    let a = a.to_host().unwrap();
    let b = b.to_host().unwrap();
    if b.is_product() {
        let (pa, pb) = (a.parts().unwrap(), b.parts().unwrap());
        assert_eq!(pa.len(), pb.len());
        return pa
            .iter()
            .zip(pb)
            .map(|(a, b)| diff(a, b))
            .fold((0.0, 0.0), |(d, m), (d2, m2)| (d.max(d2), m.max(m2)));
    }
    let (sa, sb) = (a.as_slice().unwrap(), b.as_slice().unwrap());
    assert_eq!(sa.len(), sb.len());
    sa.iter()
        .zip(sb)
        .fold((0.0f64, 0.0f64), |(d, m), (&x, &y)| {
            (d.max((x.f64() - y.f64()).abs()), m.max(y.f64().abs()))
        })
}

/// Asserts that a GPU result matches the host's to `rel` (relative to the largest host entry).
fn assert_close<T: Scalar>(what: &str, gpu: &Element<T>, cpu: &Element<T>, rel: f64) {
    assert_eq!(gpu.device(), GPU, "{what}: result is not on the GPU");
    let (d, m) = diff(gpu, cpu);
    assert!(
        d <= rel * m.max(f64::MIN_POSITIVE),
        "{what}: max |gpu − cpu| = {d:e} with max |cpu| = {m:e} (allowed {rel:e} relative)"
    );
    if d > 0.0 {
        eprintln!(
            "{what}: <{}> equal to {:.1e} relative, not bitwise",
            T::NAME,
            d / m
        );
    }
}

fn tol<T: Scalar>() -> f64 {
    if T::NAME == "f32" {
        1e-6
    } else {
        1e-14
    }
}

// ------------------------------------------------------------------ availability

#[test]
fn gpu_is_available() {
    GPU.check_available()
        .unwrap_or_else(|e| panic!("CUDA device 0 must be usable for this test suite: {e}"));
    let s = on_gpu(&rn::<f32>(&[4]).unwrap());
    assert_eq!(s.device(), GPU);
    assert!(s.to_string().ends_with("on cuda:0"), "{s}");
}

#[test]
fn every_gpu_is_listed() {
    let gpus = Device::cuda_devices().expect("a GPU is expected on this machine");
    assert_eq!(gpus[0], Device::Cuda(0));
    assert!(gpus.windows(2).all(|w| w[0] < w[1]), "{gpus:?}");
}

#[test]
fn absent_device_is_a_clean_error() {
    for r in [
        Device::Cuda(99).check_available(),
        rn::<f32>(&[4])
            .unwrap()
            .with_device(Device::Cuda(99))
            .map(|_| ()),
        rn::<f32>(&[4])
            .unwrap()
            .one()
            .unwrap()
            .to_device(Device::Cuda(99))
            .map(|_| ()),
    ] {
        match r {
            Err(Error::CudaUnavailable(msg)) => {
                assert!(msg.contains("cuda:99"), "unclear message: {msg}")
            }
            other => panic!("expected CudaUnavailable, got {other:?}"),
        }
    }
}

// ------------------------------------------------------------------ vector operations

fn vector_ops_match_host<T: Scalar>(shape: &[usize], seed: u64) {
    let cpu = weighted_rn::<T>(shape, 0.5).unwrap();
    let gpu = on_gpu(&cpu);
    let mut rng = StdRng::seed_from_u64(seed);
    let x = cpu.random_normal(&mut rng).unwrap();
    let y = cpu.random_normal(&mut rng).unwrap();
    // A divisor kept away from zero: |y| + 0.5.
    let mut yd = cpu.zero().unwrap();
    cpu.abs(&y, &mut yd).unwrap();
    let half = cpu.full(T::of(0.5)).unwrap();
    let yd = {
        let mut o = cpu.zero().unwrap();
        cpu.add(&yd, &half, &mut o).unwrap();
        o
    };
    let (gx, gy, gyd) = (gpu_el(&x), gpu_el(&y), gpu_el(&yd));
    assert!(gpu.contains(&gx) && !cpu.contains(&gx));
    let (a, b) = (T::of(1.7), T::of(-0.3));
    let t = tol::<T>();
    let ctx = format!("{shape:?}");

    let (mut c, mut g) = (cpu.zero().unwrap(), gpu.zero().unwrap());
    cpu.lincomb(a, &x, b, &y, &mut c).unwrap();
    gpu.lincomb(a, &gx, b, &gy, &mut g).unwrap();
    assert_close(&format!("lincomb {ctx}"), &g, &c, t);

    cpu.multiply(&x, &y, &mut c).unwrap();
    gpu.multiply(&gx, &gy, &mut g).unwrap();
    assert_close(&format!("multiply {ctx}"), &g, &c, t);

    cpu.divide(&x, &yd, &mut c).unwrap();
    gpu.divide(&gx, &gyd, &mut g).unwrap();
    assert_close(&format!("divide {ctx}"), &g, &c, t);

    cpu.add(&x, &y, &mut c).unwrap();
    gpu.add(&gx, &gy, &mut g).unwrap();
    assert_close(&format!("add {ctx}"), &g, &c, t);

    cpu.sub(&x, &y, &mut c).unwrap();
    gpu.sub(&gx, &gy, &mut g).unwrap();
    assert_close(&format!("sub {ctx}"), &g, &c, t);

    cpu.scaled(a, &x, &mut c).unwrap();
    gpu.scaled(a, &gx, &mut g).unwrap();
    assert_close(&format!("scaled {ctx}"), &g, &c, t);

    cpu.abs(&x, &mut c).unwrap();
    gpu.abs(&gx, &mut g).unwrap();
    assert_close(&format!("abs {ctx}"), &g, &c, t);

    cpu.assign(&y, &mut c).unwrap();
    gpu.assign(&gy, &mut g).unwrap();
    assert_close(&format!("assign {ctx}"), &g, &c, 0.0);

    // In place: y ← a x + b y, then y ← a y.
    let (mut cy, mut gyy) = (y.try_clone().unwrap(), gy.try_clone().unwrap());
    cpu.axpby(a, &x, b, &mut cy).unwrap();
    gpu.axpby(a, &gx, b, &mut gyy).unwrap();
    assert_close(&format!("axpby {ctx}"), &gyy, &cy, t);
    cpu.scale(b, &mut cy).unwrap();
    gpu.scale(b, &mut gyy).unwrap();
    assert_close(&format!("scale {ctx}"), &gyy, &cy, t);
    // The originals are untouched (try_clone is deep).
    assert_close(&format!("try_clone {ctx}"), &gy, &y, 0.0);

    for v in [T::of(1.25), T::zero(), T::of(-3.0)] {
        cpu.fill(&mut c, v).unwrap();
        gpu.fill(&mut g, v).unwrap();
        assert_close(&format!("fill {ctx}"), &g, &c, 0.0);
    }
    assert_close(
        &format!("one {ctx}"),
        &gpu.one().unwrap(),
        &cpu.one().unwrap(),
        0.0,
    );
    assert_close(
        &format!("full {ctx}"),
        &gpu.full(T::of(-2.5)).unwrap(),
        &cpu.full(T::of(-2.5)).unwrap(),
        0.0,
    );

    // Reductions accumulate in f64 on both sides; only the summation order differs.
    let (nx, ny) = (cpu.norm(&x).unwrap(), cpu.norm(&y).unwrap());
    let close = |what: &str, g: f64, c: f64, scale: f64| {
        assert!(
            (g - c).abs() <= 1e-12 * scale.max(1e-300),
            "{what} {ctx}: gpu {g} cpu {c}"
        );
    };
    close(
        "inner",
        gpu.inner(&gx, &gy).unwrap(),
        cpu.inner(&x, &y).unwrap(),
        nx * ny,
    );
    close("norm", gpu.norm(&gx).unwrap(), nx, nx);
    close(
        "dist",
        gpu.dist(&gx, &gy).unwrap(),
        cpu.dist(&x, &y).unwrap(),
        nx + ny,
    );
    let sum_abs = {
        let mut o = cpu.zero().unwrap();
        cpu.abs(&x, &mut o).unwrap();
        cpu.integral(&o).unwrap()
    };
    close(
        "integral",
        gpu.integral(&gx).unwrap(),
        cpu.integral(&x).unwrap(),
        sum_abs,
    );
}

#[test]
fn vector_ops_match_host_f32() {
    for (k, shape) in [
        vec![1],
        vec![7],
        vec![33, 31],
        vec![10, 3, 5],
        vec![(1 << 20) + 3],
    ]
    .iter()
    .enumerate()
    {
        vector_ops_match_host::<f32>(shape, 10 + k as u64);
    }
}

#[test]
fn vector_ops_match_host_f64() {
    for (k, shape) in [vec![1], vec![129, 17], vec![(1 << 19) + 11]]
        .iter()
        .enumerate()
    {
        vector_ops_match_host::<f64>(shape, 20 + k as u64);
    }
}

#[test]
fn product_space_ops_on_gpu() {
    let cpu = rn::<f32>(&[50, 20]).unwrap().power(3).unwrap();
    let gpu = on_gpu(&cpu);
    assert_eq!(gpu.device(), GPU);
    let mut rng = StdRng::seed_from_u64(5);
    let (x, y) = (
        cpu.random_normal(&mut rng).unwrap(),
        cpu.random_normal(&mut rng).unwrap(),
    );
    let (gx, gy) = (gpu_el(&x), gpu_el(&y));
    let (mut c, mut g) = (cpu.zero().unwrap(), gpu.zero().unwrap());
    cpu.lincomb(2.0, &x, 3.0, &y, &mut c).unwrap();
    gpu.lincomb(2.0, &gx, 3.0, &gy, &mut g).unwrap();
    assert_close("product lincomb", &g, &c, 1e-6);
    let (gi, ci) = (gpu.inner(&gx, &gy).unwrap(), cpu.inner(&x, &y).unwrap());
    assert!((gi - ci).abs() < 1e-9 * cpu.norm(&x).unwrap() * cpu.norm(&y).unwrap());
}

#[test]
fn reductions_accumulate_in_f64() {
    // 2^24 + 1 ones: an f32 accumulator would stop at 2^24.
    let n = (1usize << 24) + 1;
    let s = on_gpu(&rn::<f32>(&[n]).unwrap());
    let one = s.one().unwrap();
    assert_eq!(s.integral(&one).unwrap(), n as f64);
    assert_eq!(s.norm(&one).unwrap().powi(2).round(), n as f64);
    let two = s.full(2.0).unwrap();
    assert_eq!(s.inner(&one, &two).unwrap(), 2.0 * n as f64);
    assert_eq!(s.dist(&one, &two).unwrap().powi(2).round(), n as f64);
    // Weighted spaces scale by the weight.
    let w = on_gpu(&weighted_rn::<f32>(&[1000], 0.25).unwrap());
    assert_eq!(w.integral(&w.one().unwrap()).unwrap(), 250.0);
}

#[test]
fn out_of_memory_is_an_error_not_a_panic() {
    // 2^40 f32 = 4 TiB, far beyond any GPU.
    let s = on_gpu(&rn::<f32>(&[1 << 40]).unwrap());
    match s.zero() {
        Err(e @ Error::OutOfMemory { .. }) => {
            let Error::OutOfMemory {
                bytes,
                limit,
                device,
                ..
            } = &e
            else {
                unreachable!()
            };
            assert_eq!(*bytes, 4u128 << 40);
            assert!(*limit > 0 && (*limit as u128) < *bytes, "{e}");
            assert_eq!(*device, rodl::Device::Cuda(0));
            assert!(e.to_string().contains("cuda:0"), "{e}");
        }
        other => panic!("expected an out-of-memory error, got {other:?}"),
    }
    // The device stays usable.
    let t = on_gpu(&rn::<f32>(&[1000]).unwrap());
    assert_eq!(t.integral(&t.one().unwrap()).unwrap(), 1000.0);
}

// ------------------------------------------------------------------ transfers

fn round_trip<T: Scalar>(n: usize) {
    let cpu = rn::<T>(&[n]).unwrap();
    let x = cpu
        .element_from_vec(
            (0..n)
                .map(|i| T::of((i % 1_000_003) as f64 * 0.5 - 7.0))
                .collect(),
        )
        .unwrap();
    let g = gpu_el(&x);
    assert_eq!(g.device(), GPU);
    assert_eq!(g.shape().unwrap(), &[n]);
    let back = g.to_host().unwrap();
    assert_eq!(back.device(), Device::Cpu);
    assert!(
        back.as_slice().unwrap() == x.as_slice().unwrap(),
        "round trip of {n} {} changed the data",
        T::NAME
    );
    // GPU → same GPU is a deep copy.
    let g2 = g.to_device(GPU).unwrap();
    assert_close("gpu→gpu", &g2, &x, 0.0);
}

#[test]
fn transfers_round_trip() {
    for n in [1, 5, 1000, (1 << 20) - 1, 1 << 20, (3 << 21) + 12345] {
        round_trip::<f32>(n);
    }
    for n in [3, (1 << 19) + 1, (3 << 20) + 7] {
        round_trip::<f64>(n);
    }
}

#[test]
fn product_elements_move_between_devices() {
    let cpu = Space::product(vec![
        rn::<f32>(&[3]).unwrap(),
        uniform_discr::<f32>(&[0.0, 0.0], &[1.0, 1.0], &[4, 5]).unwrap(),
    ])
    .unwrap();
    let gpu = on_gpu(&cpu);
    let x = cpu.random_normal(&mut StdRng::seed_from_u64(9)).unwrap();
    let g = gpu_el(&x);
    assert!(gpu.contains(&g));
    assert!(g.parts().unwrap().iter().all(|p| p.device() == GPU));
    assert_close("product round trip", &g, &x, 0.0);
    assert!(cpu.contains(&g.to_host().unwrap()));
}

#[test]
fn host_data_in_any_layout_and_gpu_access_errors() {
    let s = rn::<f64>(&[3, 4]).unwrap();
    let g = on_gpu(&s);
    // A transposed (non-C-order) host array of the right shape.
    let a = ArrayD::from_shape_fn(IxDyn(&[4, 3]), |i| (i[0] * 10 + i[1]) as f64);
    let t = a.t().to_owned().into_dyn();
    let x = g.element(t.clone()).unwrap();
    assert_eq!(x.to_host().unwrap().as_array().unwrap(), t.view());
    // Host-only accessors say where the data lives.
    let e = x.as_array().unwrap_err().to_string();
    assert!(e.contains("cuda:0") && e.contains("to_host"), "{e}");
    assert!(x.as_slice().is_err());
    assert!(x.try_clone().unwrap().into_array().is_err());
    // Element reductions: the sum runs on the GPU, min and max need host data.
    assert_eq!(x.sum().unwrap(), t.sum());
    let e = x.max().unwrap_err().to_string();
    assert!(e.contains("cuda:0") && e.contains("to_host"), "{e}");
    assert!(x.min().is_err());
    assert_eq!(x.to_host().unwrap().max().unwrap(), 32.0);
    assert_eq!(x.shape().unwrap(), &[3, 4]);
    // Wrong shape.
    assert!(g.element(ArrayD::zeros(IxDyn(&[4, 3]))).is_err());
}

/// `Element::copy_range_to_slice` of a GPU element: ranges below and above the staging
/// threshold (1 MiB: direct and through the pinned buffers), at odd offsets, equal the host's
/// values; a range beyond the element is an error, not a fault.
#[test]
fn ranges_copied_down_equal_the_host() {
    let n = (1usize << 19) + 77; // 2 MiB of f32
    let cpu = rn::<f32>(&[n]).unwrap();
    let x = cpu
        .element_from_vec((0..n).map(|i| (i % 1013) as f32 - 500.0).collect())
        .unwrap();
    let g = gpu_el(&x);
    let host = x.as_slice().unwrap();
    for (offset, len) in [
        (0, 0),
        (3, 5),
        (1001, 4097),
        (7, (1 << 18) + 3),
        (13, n - 13),
    ] {
        let mut out = vec![0.0f32; len];
        g.copy_range_to_slice(offset, &mut out).unwrap();
        assert!(out == host[offset..offset + len], "{offset} {len}");
    }
    let mut out = vec![0.0f32; 10];
    assert!(g.copy_range_to_slice(n - 9, &mut out).is_err());
    assert!(g.copy_range_to_slice(usize::MAX, &mut out).is_err());
}

#[test]
fn large_transfers_and_ops() {
    // 2^28 + 3 f32 = 1 GiB through the pinned staging buffers, both ways.
    let n = (1usize << 28) + 3;
    let cpu = rn::<f32>(&[n]).unwrap();
    let gpu = on_gpu(&cpu);
    let x = cpu
        .element_from_vec((0..n).map(|i| (i % 4099) as f32 - 2049.0).collect())
        .unwrap();
    let t0 = Instant::now();
    let g = gpu_el(&x);
    let t_up = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let back = g.to_host().unwrap();
    let t_down = t0.elapsed().as_secs_f64();
    assert!(back.as_slice().unwrap() == x.as_slice().unwrap());
    let gb = (n * 4) as f64 / 1e9;
    eprintln!(
        "figures: host→gpu {:.1} GB/s, gpu→host {:.1} GB/s ({gb:.2} GB)",
        gb / t_up,
        gb / t_down
    );
    let (c, d) = (cpu.norm(&x).unwrap(), gpu.norm(&g).unwrap());
    assert!((c - d).abs() <= 1e-12 * c, "{c} {d}");
}

#[test]
fn indices_beyond_2_pow_31() {
    // 2^31 + 77 f32 entries (8.6 GB per element): 64-bit indexing everywhere.
    let n = (1usize << 31) + 77;
    let s = on_gpu(&rn::<f32>(&[n]).unwrap());
    let one = s.one().unwrap();
    assert_eq!(s.integral(&one).unwrap(), n as f64);
    {
        let mut out = s.full(5.0).unwrap();
        s.lincomb(2.0, &one, -0.5, &s.full(4.0).unwrap(), &mut out)
            .unwrap();
        assert_eq!(s.norm(&out).unwrap(), 0.0);
        s.axpby(1.0, &one, 1.0, &mut out).unwrap();
        assert_eq!(s.integral(&out).unwrap(), n as f64);
    }
    // Finite differences of ones: non-zero only at the ends, which lie past index 2^31.
    let grad = Gradient::new(s.clone()).unwrap();
    let g = grad.apply(&one).unwrap();
    assert_eq!(grad.range().integral(&g).unwrap(), -1.0);
    assert_eq!(grad.range().norm(&g).unwrap(), 1.0);
    drop(g);
    let lap = Laplacian::new(s.clone()).unwrap();
    let l = lap.apply(&one).unwrap();
    assert_eq!(s.integral(&l).unwrap(), -2.0);
    assert!((s.norm(&l).unwrap() - 2f64.sqrt()).abs() < 1e-15);
}

// ------------------------------------------------------------------ default operators

fn operators_match_host<T: Scalar>(cpu: &Space<T>, seed: u64) {
    let gpu = on_gpu(cpu);
    let mut rng = StdRng::seed_from_u64(seed);
    let x = cpu.random_normal(&mut rng).unwrap();
    let gx = gpu_el(&x);
    let t = tol::<T>();
    let name = cpu.to_string();

    let (gc, gg) = (
        Gradient::new(cpu.clone()).unwrap(),
        Gradient::new(gpu.clone()).unwrap(),
    );
    let (dc, dg) = (gc.apply(&x).unwrap(), gg.apply(&gx).unwrap());
    assert_close(&format!("Gradient on {name}"), &dg, &dc, t);

    let v = gc.range().random_normal(&mut rng).unwrap();
    let gv = gpu_el(&v);
    let (divc, divg) = (
        Divergence::new(cpu.clone()).unwrap(),
        Divergence::new(gpu.clone()).unwrap(),
    );
    assert_close(
        &format!("Divergence on {name}"),
        &divg.apply(&gv).unwrap(),
        &divc.apply(&v).unwrap(),
        t,
    );

    let (lc, lg) = (
        Laplacian::new(cpu.clone()).unwrap(),
        Laplacian::new(gpu.clone()).unwrap(),
    );
    assert_close(
        &format!("Laplacian on {name}"),
        &lg.apply(&gx).unwrap(),
        &lc.apply(&x).unwrap(),
        t,
    );

    for p in [1.0, 2.0, f64::INFINITY, 1.5] {
        let (pc, pg) = (
            PointwiseNorm::new(gc.range().clone(), p).unwrap(),
            PointwiseNorm::new(gg.range().clone(), p).unwrap(),
        );
        assert_close(
            &format!("PointwiseNorm p={p} on {name}"),
            &pg.apply(&gv).unwrap(),
            &pc.apply(&v).unwrap(),
            t,
        );
    }
}

fn operator_spaces<T: Scalar>() -> Vec<Space<T>> {
    vec![
        uniform_discr(&[0.0], &[3.0], &[17]).unwrap(),
        uniform_discr(&[-1.0, -2.0], &[1.0, 3.0], &[37, 23]).unwrap(),
        uniform_discr(&[0.0, 0.0, -1.0], &[1.2, 0.9, 1.0], &[12, 9, 14]).unwrap(),
        uniform_discr(&[0.0; 4], &[1.0, 2.0, 3.0, 4.0], &[3, 4, 5, 6]).unwrap(),
        rn(&[5, 4]).unwrap(),
        rn(&[1, 6]).unwrap(),
        uniform_discr(&[0.0, 0.0], &[1.0, 1.0], &[1024, 1000]).unwrap(),
    ]
}

#[test]
fn default_operators_match_host_f32() {
    for (k, s) in operator_spaces::<f32>().iter().enumerate() {
        operators_match_host(s, 100 + k as u64);
    }
}

#[test]
fn default_operators_match_host_f64() {
    for (k, s) in operator_spaces::<f64>().iter().enumerate() {
        operators_match_host(s, 200 + k as u64);
    }
}

#[test]
fn adjoints_are_exact_on_gpu() {
    let s32 = on_gpu(&uniform_discr::<f32>(&[-1.0, 0.0], &[1.0, 3.0], &[64, 48]).unwrap());
    let grad = Gradient::new(s32.clone()).unwrap();
    let r = check_adjoint(&grad, 4, 1).unwrap();
    eprintln!(
        "Gradient<f32> on GPU: adjoint error {:.2e}",
        r.max_rel_error
    );
    assert!(r.max_rel_error < 1e-5, "{r:?}");
    let lap = Laplacian::new(s32.clone()).unwrap();
    let r = check_adjoint(&lap, 4, 2).unwrap();
    eprintln!(
        "Laplacian<f32> on GPU: adjoint error {:.2e}",
        r.max_rel_error
    );
    assert!(r.max_rel_error < 1e-5, "{r:?}");
    let div = Divergence::new(s32.clone()).unwrap();
    assert!(check_adjoint(&div, 3, 3).unwrap().max_rel_error < 1e-5);

    let s64 = on_gpu(&uniform_discr::<f64>(&[0.0; 3], &[1.0, 2.0, 0.5], &[20, 16, 12]).unwrap());
    let grad = Gradient::new(s64.clone()).unwrap();
    let r = check_adjoint(&grad, 3, 4).unwrap();
    assert!(r.max_rel_error < 1e-12, "{r:?}");
    let lap = Laplacian::new(s64).unwrap();
    assert!(check_adjoint(&lap, 3, 5).unwrap().max_rel_error < 1e-12);

    // −div ∘ grad through the operator algebra, on the GPU; its norm matches the host's.
    let cpu = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[40, 30]).unwrap();
    let norm_of = |s: &Space<f64>| {
        let g: LinOp<f64> = Arc::new(Gradient::new(s.clone()).unwrap());
        let op = g.adjoint().unwrap().compose(&g).unwrap();
        assert!(check_adjoint(op.as_ref(), 2, 6).unwrap().max_rel_error < 1e-12);
        op.norm_estimate().unwrap()
    };
    let (nc, ng) = (norm_of(&cpu), norm_of(&on_gpu(&cpu)));
    assert!((nc - ng).abs() <= 1e-6 * nc, "opnorm cpu {nc} gpu {ng}");
}

/// The finite-difference operators' batches (one launch per batch, parts along a leading axis
/// for the power space) equal the host's batches bit for bit, f32 and f64, 1 to 3 axes.
#[test]
fn finite_difference_batches_match_the_host_bit_for_bit() {
    fn case<T: Scalar>() {
        for shape in [vec![7], vec![5, 6], vec![3, 4, 5]] {
            let d = shape.len();
            let max: Vec<f64> = (0..d).map(|k| 0.7 * (k + 1) as f64).collect();
            let host = uniform_discr::<T>(&vec![0.0; d], &max, &shape).unwrap();
            let ops = |s: &Space<T>| -> Vec<LinOp<T>> {
                let g: LinOp<T> = Arc::new(Gradient::new(s.clone()).unwrap());
                vec![
                    g.clone(),
                    Arc::new(Divergence::new(s.clone()).unwrap()),
                    Arc::new(Laplacian::new(s.clone()).unwrap()),
                    g.adjoint().unwrap().compose(&g).unwrap(),
                ]
            };
            for (hc, gc) in ops(&host).into_iter().zip(ops(&on_gpu(&host))) {
                let batch = 3;
                let xs = rn::<T>(&hc.domain().batch_shape(batch).unwrap()).unwrap();
                let ys = rn::<T>(&hc.range().batch_shape(batch).unwrap()).unwrap();
                let mut rng = StdRng::seed_from_u64(11);
                let x = xs.random_normal(&mut rng).unwrap();
                let mut want = ys.zero().unwrap();
                hc.batched()
                    .unwrap()
                    .apply_batch(&x, &mut want, batch)
                    .unwrap();
                let mut got = on_gpu(&ys).zero().unwrap();
                let form = gc.batched().unwrap();
                form.apply_batch(&gpu_el(&x), &mut got, batch).unwrap();
                let got = got.to_host().unwrap();
                assert_eq!(
                    got.as_slice().unwrap(),
                    want.as_slice().unwrap(),
                    "{}",
                    gc.name()
                );
                // A host tensor for a GPU operator is refused.
                let mut out = ys.zero().unwrap();
                assert!(
                    form.apply_batch(&x, &mut out, batch).is_err(),
                    "{}",
                    gc.name()
                );
            }
        }
    }
    case::<f32>();
    case::<f64>();
}

// ------------------------------------------------------------------ device mismatches

#[test]
fn mixing_devices_is_an_error() {
    let cpu = uniform_discr::<f32>(&[0.0, 0.0], &[1.0, 1.0], &[8, 8]).unwrap();
    let gpu = on_gpu(&cpu);
    let mismatch = |r: rodl::Result<()>, what: &str| match r {
        Err(Error::DeviceMismatch { .. }) => {}
        other => panic!("{what}: expected DeviceMismatch, got {other:?}"),
    };
    let (xc, xg) = (cpu.one().unwrap(), gpu.one().unwrap());

    let grad = Gradient::new(gpu.clone()).unwrap();
    mismatch(grad.apply(&xc).map(|_| ()), "GPU operator on host input");
    let mut host_out = grad
        .range()
        .with_device(Device::Cpu)
        .unwrap()
        .zero()
        .unwrap();
    mismatch(
        grad.apply_into(&xg, &mut host_out),
        "GPU operator into host output",
    );

    let mut out = gpu.zero().unwrap();
    mismatch(
        gpu.lincomb(1.0, &xg, 1.0, &xc, &mut out),
        "lincomb of mixed devices",
    );
    mismatch(cpu.norm(&xg).map(|_| ()), "host space, GPU element");
    mismatch(
        Space::product(vec![cpu.clone(), gpu.clone()]).map(|_| ()),
        "product of host and GPU spaces",
    );
    let gc: LinOp<f32> = Arc::new(Gradient::new(cpu.clone()).unwrap());
    let gg: LinOp<f32> = Arc::new(Gradient::new(gpu.clone()).unwrap());
    mismatch(
        gc.adjoint().unwrap().compose(&gg).map(|_| ()),
        "composition across devices",
    );
    // Moving data is explicit and works.
    let moved = xc.to_device(GPU).unwrap();
    assert!(gpu.contains(&moved));
    assert!(grad.apply(&moved).is_ok());
}

// ------------------------------------------------------------------ figures

#[test]
fn throughput_figures() {
    // Not a pass/fail benchmark: prints achieved memory throughput (run with --nocapture).
    let n = 1usize << 28;
    let s = on_gpu(&rn::<f32>(&[n]).unwrap());
    let x = s.full(1.0).unwrap();
    let y = s.full(2.0).unwrap();
    let mut out = s.zero().unwrap();
    s.lincomb(1.0, &x, 1.0, &y, &mut out).unwrap();
    s.norm(&out).unwrap(); // warm-up, synchronises
    let reps = 20;
    let t0 = Instant::now();
    for _ in 0..reps {
        s.lincomb(0.5, &x, 0.25, &y, &mut out).unwrap();
    }
    s.norm(&out).unwrap();
    let t = t0.elapsed().as_secs_f64();
    let bytes = (reps * 3 * 4 * n + 4 * n) as f64;
    eprintln!("figures: lincomb f32 2^28: {:.0} GB/s", bytes / t / 1e9);
    let t0 = Instant::now();
    for _ in 0..reps {
        s.inner(&x, &y).unwrap();
    }
    let t = t0.elapsed().as_secs_f64();
    eprintln!(
        "figures: inner f32 2^28: {:.0} GB/s ({:.2} ms per call)",
        (reps * 2 * 4 * n) as f64 / t / 1e9,
        t / reps as f64 * 1e3
    );

    let v = on_gpu(&uniform_discr::<f32>(&[0.0; 3], &[1.0; 3], &[512, 512, 512]).unwrap());
    let x = v.one().unwrap();
    let grad = Gradient::new(v.clone()).unwrap();
    let lap = Laplacian::new(v.clone()).unwrap();
    let div = Divergence::new(v.clone()).unwrap();
    let pn = PointwiseNorm::new(grad.range().clone(), 2.0).unwrap();
    let mut g = grad.range().zero().unwrap();
    let mut o = v.zero().unwrap();
    grad.apply_into(&x, &mut g).unwrap();
    let m = (512usize * 512 * 512) as f64;
    // Reading back one number waits for all queued work (one stream per device).
    let tiny = on_gpu(&rn::<f32>(&[1]).unwrap());
    let sync_el = tiny.one().unwrap();
    let sync = || tiny.norm(&sync_el).unwrap();
    let time = |f: &mut dyn FnMut(), bytes_per_voxel: f64, what: &str| {
        f();
        sync();
        let t0 = Instant::now();
        for _ in 0..5 {
            f();
        }
        sync();
        let t = t0.elapsed().as_secs_f64() / 5.0;
        eprintln!(
            "figures: {what} 512³ f32: {:.2} ms ({:.0} GB/s min traffic)",
            t * 1e3,
            bytes_per_voxel * m / t / 1e9
        );
    };
    time(
        &mut || grad.apply_into(&x, &mut g).unwrap(),
        16.0,
        "Gradient",
    );
    time(
        &mut || div.apply_into(&g, &mut o).unwrap(),
        16.0,
        "Divergence",
    );
    time(
        &mut || lap.apply_into(&x, &mut o).unwrap(),
        8.0,
        "Laplacian",
    );
    time(
        &mut || pn.apply_into(&g, &mut o).unwrap(),
        16.0,
        "PointwiseNorm",
    );
}
