//! Preprocessing on the GPU (`kernels/preprocess.cu` through `rodl::preprocess`'s element
//! functions) against the host functions on the same random data of realistic shapes: flat
//! field (several flats and darks; flats before and after the scan, interpolated; grouped flats
//! at positions; dead pixels) bit for bit, fused with `−log` within 2 ulp, zinger removal and
//! stripe removal (with ties) exactly.
//!
//! Built only with the `cuda` feature. These tests FAIL (they do not skip) when no GPU can be
//! used: run them where there is one.
#![cfg(feature = "cuda")]

use std::sync::Mutex;

use ndarray::{Array3, ArrayD};
use rand::Rng;
use rodl::io::Frames;
use rodl::preprocess::{
    neg_log, neg_log_element, remove_stripes_sorting, remove_stripes_sorting_element,
    remove_zingers, remove_zingers_element, FlatField, ZingerOptions, NEG_LOG_FLOOR,
};
use rodl::{uniform_discr, Device, Element, Space};

mod common;

const GPU: Device = Device::Cuda(0);

/// One GPU test at a time (they share the device with the other suites' tests in this binary).
static DEVICE: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    DEVICE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The space of arrays of `shape` on the GPU.
fn gpu_space(shape: &[usize]) -> Space<f32> {
    let lo = vec![0.0; shape.len()];
    let hi = vec![1.0; shape.len()];
    uniform_discr::<f32>(&lo, &hi, shape)
        .unwrap()
        .with_device(GPU)
        .unwrap_or_else(|e| panic!("these tests need CUDA device 0: {e}"))
}

fn on_gpu(a: &Array3<f32>) -> Element<f32> {
    gpu_space(a.shape()).element(a.clone().into_dyn()).unwrap()
}

fn back(x: Element<f32>) -> ArrayD<f32> {
    x.into_host().unwrap().into_array().unwrap()
}

/// Raw counts `[k, nu, nv]` around 1000 with a dark level near 100.
fn counts(seed: u64, shape: [usize; 3], level: f32) -> Array3<f32> {
    let mut rng = common::rng(seed);
    Array3::from_shape_fn(shape, |_| level * rng.gen_range(0.2f32..1.1) + 100.0)
}

fn frames(seed: u64, shape: [usize; 3], level: f32, positions: Option<Vec<usize>>) -> Frames {
    Frames {
        data: counts(seed, shape, level),
        positions,
    }
}

/// Bitwise equality (NaN equal to NaN of the same bits), with the first difference named.
fn assert_bits(got: &ArrayD<f32>, want: &ArrayD<f32>, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}");
    for (i, (g, w)) in got.iter().zip(want.iter()).enumerate() {
        assert!(
            g.to_bits() == w.to_bits(),
            "{what}: entry {i}: GPU {g:e}, host {w:e}"
        );
    }
}

/// Equality within `ulps` units in the last place of the host's value.
fn assert_ulps(got: &ArrayD<f32>, want: &ArrayD<f32>, ulps: f32, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}");
    for (i, (g, w)) in got.iter().zip(want.iter()).enumerate() {
        let ulp = f32::from_bits(w.abs().to_bits() + 1) - w.abs();
        assert!(
            g == w || (g - w).abs() <= ulps * ulp.max(f32::MIN_POSITIVE),
            "{what}: entry {i}: GPU {g:e}, host {w:e}"
        );
    }
}

fn check_flat_field(ff: &FlatField, p: &Array3<f32>, positions: Option<&[f64]>, what: &str) {
    let mut host = p.clone();
    let report = ff.apply(host.view_mut(), positions).unwrap();
    let mut x = on_gpu(p);
    let gpu = ff.apply_element(&mut x, positions).unwrap();
    assert_eq!(gpu, report, "{what}: bad pixels");
    assert_bits(&back(x), &host.clone().into_dyn(), what);
    // Fused with −log.
    neg_log(host.view_mut(), NEG_LOG_FLOOR);
    let mut x = on_gpu(p);
    let gpu = ff
        .apply_neg_log_element(&mut x, positions, NEG_LOG_FLOOR)
        .unwrap();
    assert_eq!(gpu, report, "{what} + -log: bad pixels");
    assert_ulps(&back(x), &host.into_dyn(), 2.0, &format!("{what} + -log"));
}

#[test]
fn flat_field_and_neg_log_on_the_gpu_equal_the_host() {
    let _g = lock();
    let (k, nu, nv) = (90, 320, 24);
    let mut p = counts(1, [k, nu, nv], 900.0);
    // Values at and below the dark (transmission ≤ 0: the clamp of −log).
    p[[3, 5, 7]] = 100.0;
    p[[4, 6, 8]] = 20.0;
    let darks = frames(2, [3, nu, nv], 0.0, None);
    let mut flats = frames(3, [5, nu, nv], 1000.0, None);
    // A dead pixel (flat = dark) and a saturated one (flat below the dark).
    for f in 0..5 {
        flats.data[[f, 10, 3]] = darks.data.index_axis(ndarray::Axis(0), 0)[[10, 3]];
        flats.data[[f, 11, 4]] = 50.0;
    }
    let ff = FlatField::new(&flats, &darks).unwrap();
    check_flat_field(&ff, &p, None, "one flat group");

    // Flats before and after, interpolated by projection index.
    let after = frames(4, [4, nu, nv], 1100.0, None);
    let ff = FlatField::before_after(&flats, &after, &darks, k).unwrap();
    check_flat_field(&ff, &p, None, "flats before and after");

    // Three groups of flats at acquisition positions, projections between and beyond them.
    let grouped = frames(5, [6, nu, nv], 1000.0, Some(vec![0, 1, 50, 51, 200, 201]));
    let ff = FlatField::new(&grouped, &darks).unwrap();
    assert_eq!(ff.num_groups(), 3);
    let positions: Vec<f64> = (0..k).map(|j| -3.0 + 2.5 * j as f64).collect();
    check_flat_field(&ff, &p, Some(&positions), "grouped flats at positions");

    // Without darks.
    let ff = FlatField::without_darks(&flats).unwrap();
    check_flat_field(&ff, &p, None, "no darks");
}

#[test]
fn neg_log_on_the_gpu_is_the_host_s_to_two_ulp_with_the_clamp() {
    let _g = lock();
    let mut rng = common::rng(7);
    let mut t = Array3::from_shape_fn([40, 256, 16], |_| rng.gen_range(-0.1f32..1.5));
    t[[0, 0, 0]] = f32::NAN;
    t[[0, 0, 1]] = 0.0;
    t[[0, 0, 2]] = 1.0;
    t[[0, 0, 3]] = f32::INFINITY;
    t[[0, 0, 4]] = 1e-7;
    for floor in [NEG_LOG_FLOOR, 1e-3, -1.0] {
        let mut host = t.clone();
        neg_log(host.view_mut(), floor);
        let mut x = on_gpu(&t);
        neg_log_element(&mut x, floor).unwrap();
        assert_ulps(&back(x), &host.into_dyn(), 2.0, &format!("floor {floor}"));
    }
}

#[test]
fn zinger_removal_on_the_gpu_equals_the_host_exactly() {
    let _g = lock();
    let mut rng = common::rng(11);
    let (k, nu, nv) = (12, 200, 64);
    // Quantised counts (many ties in the windows), zingers, dead spots, NaN and -0/+0.
    let mut f = Array3::from_shape_fn([k, nu, nv], |_| {
        (rng.gen_range(900.0f32..1100.0) / 8.0).round() * 8.0
    });
    for _ in 0..400 {
        let (a, b, c) = (
            rng.gen_range(0..k),
            rng.gen_range(0..nu),
            rng.gen_range(0..nv),
        );
        f[[a, b, c]] = [30000.0, 10.0, f32::NAN, -0.0, 0.0][rng.gen_range(0..5)];
    }
    // Edges and corners.
    f[[0, 0, 0]] = 50000.0;
    f[[1, nu - 1, nv - 1]] = 50000.0;
    for opts in [
        ZingerOptions::new(500.0),
        ZingerOptions {
            size: 5,
            threshold: 300.0,
            both_signs: true,
        },
        ZingerOptions {
            size: 3,
            threshold: 0.0,
            both_signs: true,
        },
    ] {
        let mut host = f.clone();
        let n = remove_zingers(host.view_mut(), &opts).unwrap();
        let mut x = on_gpu(&f);
        let m = remove_zingers_element(&mut x, &opts).unwrap();
        assert_eq!(m, n, "{opts:?}: pixels replaced");
        assert!(n > 0);
        assert_bits(&back(x), &host.into_dyn(), &format!("{opts:?}"));
    }
}

#[test]
fn stripe_removal_on_the_gpu_equals_the_host_exactly() {
    let _g = lock();
    let mut rng = common::rng(13);
    let (na, nu, nv) = (361, 192, 6);
    // A smooth sinogram with offset columns, noise and quantised values (ties in the sorts).
    let mut s = Array3::from_shape_fn([na, nu, nv], |(a, u, v)| {
        let x = (u as f32 * 0.07 + v as f32).sin() + a as f32 * 0.002;
        ((x + rng.gen_range(-0.01f32..0.01)) * 256.0).round() / 256.0
    });
    for u in [10, 11, 50, 191] {
        for a in 0..na {
            for v in 0..nv {
                s[[a, u, v]] += 0.3;
            }
        }
    }
    s[[0, 0, 0]] = -0.0;
    s[[1, 0, 0]] = 0.0;
    for size in [3, 5, 21] {
        let mut host = s.clone();
        remove_stripes_sorting(host.view_mut(), size).unwrap();
        let mut x = on_gpu(&s);
        remove_stripes_sorting_element(&mut x, size).unwrap();
        assert_bits(&back(x), &host.into_dyn(), &format!("size {size}"));
    }
}

#[test]
fn device_preprocessing_stays_on_the_device_and_checks_its_arguments() {
    let _g = lock();
    let p = counts(17, [4, 16, 8], 900.0);
    let mut x = on_gpu(&p);
    neg_log_element(&mut x, NEG_LOG_FLOOR).unwrap();
    assert_eq!(x.device(), GPU);
    assert!(remove_stripes_sorting_element(&mut x, 4).is_err());
    assert!(remove_stripes_sorting_element(&mut x, 17).is_err());
    assert!(remove_zingers_element(&mut x, &ZingerOptions::new(-1.0)).is_err());
    let darks = frames(18, [1, 16, 9], 0.0, None);
    let flats = frames(19, [1, 16, 9], 1000.0, None);
    let ff = FlatField::new(&flats, &darks).unwrap();
    assert!(ff.apply_element(&mut x, None).is_err());
    assert!(ff.apply_element(&mut x, Some(&[0.0])).is_err());
    let flat2d = gpu_space(&[16, 8]);
    let mut y = flat2d
        .element(ndarray::Array2::<f32>::ones([16, 8]).into_dyn())
        .unwrap();
    assert!(remove_zingers_element(&mut y, &ZingerOptions::new(1.0)).is_err());
}
