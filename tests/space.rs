//! Spaces: construction and its errors, partitions, weighted inner products (Riemann sums),
//! vector arithmetic through the space, product spaces, devices.

mod common;

use proptest::prelude::*;
use rodl::diagnostics::strategies::{
    discr_space, element, product_space, space_and_elements, tensor_space, weighted_space,
};
use rodl::{rn, uniform_discr, weighted_rn, Device, Error, Space, UniformPartition};

use common::*;

// ------------------------------------------------------------------ construction

#[test]
fn rn_describes_itself() {
    let s = rn::<f64>(&[3, 4]).unwrap();
    assert_eq!(s.shape().unwrap(), &[3, 4]);
    assert_eq!(s.ndim().unwrap(), 2);
    assert_eq!(s.size(), 12);
    assert_eq!(s.weight().unwrap(), 1.0);
    assert_eq!(s.device(), Device::Cpu);
    assert!(!s.is_product());
    assert_eq!(s.to_string(), "rn([3, 4])<f64>");
    assert_eq!(
        weighted_rn::<f32>(&[2], 0.5).unwrap().to_string(),
        "rn([2], weight=0.5)<f32>"
    );
    // no partition: the discretisation queries error
    assert!(s.partition().is_err());
    assert!(s.cell_sides().is_err());
    assert!(s.cell_volume().is_err());
    assert!(s.min_pt().is_err());
    assert!(s.max_pt().is_err());
    assert!(s.points().is_err());
    assert!(s.element_from_fn(|_| 1.0).is_err());
}

#[test]
fn uniform_discr_describes_itself() {
    let s = uniform_discr::<f64>(&[-1.0, 0.0, 2.0], &[1.0, 3.0, 2.5], &[4, 6, 5]).unwrap();
    assert_eq!(s.shape().unwrap(), &[4, 6, 5]);
    assert_eq!(s.min_pt().unwrap(), &[-1.0, 0.0, 2.0]);
    assert_eq!(s.max_pt().unwrap(), &[1.0, 3.0, 2.5]);
    assert_eq!(s.cell_sides().unwrap(), vec![0.5, 0.5, 0.1]);
    assert!((s.cell_volume().unwrap() - 0.025).abs() < 1e-17);
    assert_eq!(s.weight().unwrap(), s.cell_volume().unwrap());
    assert_eq!(
        s.to_string(),
        "uniform_discr([-1.0, 0.0, 2.0], [1.0, 3.0, 2.5], [4, 6, 5])<f64>"
    );
    let p = s.partition().unwrap();
    assert_eq!(p.ndim(), 3);
    assert_eq!(p.coord_vector(0).unwrap(), vec![-0.75, -0.25, 0.25, 0.75]);
    assert!(p.coord_vector(3).is_err());
    assert_eq!(Space::<f64>::from_partition(p.clone()), s);
}

#[test]
fn points_are_cell_midpoints_in_c_order() {
    let s = uniform_discr::<f64>(&[0.0, 10.0], &[2.0, 13.0], &[2, 3]).unwrap();
    let pts = s.points().unwrap();
    assert_eq!(pts.shape(), &[6, 2]);
    let want = [
        [0.5, 10.5],
        [0.5, 11.5],
        [0.5, 12.5],
        [1.5, 10.5],
        [1.5, 11.5],
        [1.5, 12.5],
    ];
    for (k, w) in want.iter().enumerate() {
        assert_eq!([pts[[k, 0]], pts[[k, 1]]], *w);
    }
}

#[test]
fn invalid_shapes_and_weights_are_errors() {
    for shape in [&[][..], &[0], &[3, 0], &[0, 2, 2]] {
        assert!(
            matches!(rn::<f64>(shape), Err(Error::InvalidArgument(_))),
            "{shape:?}"
        );
    }
    // too many entries to allocate: an error, not a capacity-overflow panic
    assert!(rn::<f64>(&[usize::MAX, 2]).is_err());
    assert!(rn::<f32>(&[1 << 31, 1 << 31]).is_err());
    for w in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(
            matches!(weighted_rn::<f64>(&[2], w), Err(Error::InvalidArgument(_))),
            "weight {w}"
        );
    }
}

#[test]
fn invalid_partitions_are_errors() {
    let bad: [(&[f64], &[f64], &[usize]); 9] = [
        (&[0.0], &[1.0], &[0]),
        (&[], &[], &[]),
        (&[0.0], &[1.0, 2.0], &[3]),
        (&[0.0, 0.0], &[1.0], &[3, 3]),
        (&[0.0], &[1.0], &[3, 3]),
        (&[1.0], &[1.0], &[3]),
        (&[2.0], &[1.0], &[3]),
        (&[f64::NAN], &[1.0], &[3]),
        (&[0.0], &[f64::INFINITY], &[3]),
    ];
    for (lo, hi, n) in bad {
        assert!(
            matches!(
                UniformPartition::new(lo, hi, n),
                Err(Error::InvalidArgument(_))
            ),
            "{lo:?} {hi:?} {n:?}"
        );
        assert!(uniform_discr::<f64>(lo, hi, n).is_err());
    }
    // huge shapes: error instead of an overflow panic
    assert!(uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[usize::MAX, 2]).is_err());
    assert!(uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[1 << 40, 1 << 40]).is_err());
}

#[test]
fn space_equality() {
    let a = uniform_discr::<f64>(&[0.0], &[1.0], &[4]).unwrap();
    assert_eq!(a, uniform_discr::<f64>(&[0.0], &[1.0], &[4]).unwrap());
    assert_ne!(a, uniform_discr::<f64>(&[0.0], &[2.0], &[4]).unwrap());
    assert_ne!(a, uniform_discr::<f64>(&[0.0], &[1.0], &[5]).unwrap());
    // same shape and weight, but one has a partition
    assert_ne!(a, weighted_rn::<f64>(&[4], 0.25).unwrap());
    assert_eq!(
        rn::<f64>(&[4]).unwrap(),
        weighted_rn::<f64>(&[4], 1.0).unwrap()
    );
    assert_ne!(
        rn::<f64>(&[4]).unwrap(),
        weighted_rn::<f64>(&[4], 2.0).unwrap()
    );
    let r = rn::<f64>(&[4]).unwrap();
    assert_eq!(
        a.power(2).unwrap(),
        Space::product(vec![a.clone(), a.clone()]).unwrap()
    );
    assert_ne!(a.power(2).unwrap(), a.power(3).unwrap());
    assert_ne!(
        Space::product(vec![a.clone(), r.clone()]).unwrap(),
        Space::product(vec![r.clone(), a.clone()]).unwrap()
    );
    assert_ne!(a.power(1).unwrap(), a);
}

#[test]
fn with_scalar_keeps_the_description() {
    let a = uniform_discr::<f64>(&[0.0, 1.0], &[1.0, 3.0], &[4, 2]).unwrap();
    let b = a.with_scalar::<f32>();
    assert_eq!(b.shape().unwrap(), a.shape().unwrap());
    assert_eq!(b.weight().unwrap(), a.weight().unwrap());
    assert_eq!(b.partition().unwrap(), a.partition().unwrap());
    assert_eq!(b.with_scalar::<f64>(), a);
    let p = a.power(2).unwrap().with_scalar::<f32>();
    assert_eq!(p, b.power(2).unwrap());
}

#[test]
fn product_spaces() {
    let a = uniform_discr::<f64>(&[0.0], &[1.0], &[4]).unwrap();
    let b = weighted_rn::<f64>(&[2, 3], 2.0).unwrap();
    let p = Space::product(vec![a.clone(), b.clone()]).unwrap();
    assert!(p.is_product());
    assert_eq!(p.parts().unwrap().len(), 2);
    assert_eq!(p.part(1).unwrap(), &b);
    assert_eq!(p.size(), 10);
    assert_eq!(p.device(), Device::Cpu);
    assert_eq!(
        p.to_string(),
        "(uniform_discr([0.0], [1.0], [4])<f64> × rn([2, 3], weight=2)<f64>)"
    );
    assert_eq!(
        a.power(3).unwrap().to_string(),
        "(uniform_discr([0.0], [1.0], [4])<f64>)^3"
    );
    // structure errors
    assert!(p.part(2).is_err());
    assert!(a.parts().is_err());
    assert!(a.part(0).is_err());
    assert!(p.shape().is_err());
    assert!(p.ndim().is_err());
    assert!(p.weight().is_err());
    assert!(p.partition().is_err());
    assert!(p.element_from_vec(vec![0.0; 10]).is_err());
    assert!(p.element(ndarray::ArrayD::zeros(vec![10])).is_err());
    assert!(p.element_from_fn(|_| 0.0).is_err());
    assert!(matches!(
        Space::<f64>::product(vec![]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(a.power(0).is_err());
    // nested products
    let q = Space::product(vec![p.clone(), a.clone()]).unwrap();
    assert_eq!(q.size(), 14);
    let x = q.one().unwrap();
    assert!((q.norm(&x).unwrap().powi(2) - (1.0 + 12.0 + 1.0)).abs() < 1e-14);
}

#[test]
fn product_inner_is_sum_of_parts() {
    let a = uniform_discr::<f64>(&[0.0], &[2.0], &[4]).unwrap(); // weight 0.5
    let b = weighted_rn::<f64>(&[3], 3.0).unwrap();
    let p = Space::product(vec![a.clone(), b.clone()]).unwrap();
    let x = p
        .product_element(vec![
            a.element_from_vec(vec![1.0, 2.0, 3.0, 4.0]).unwrap(),
            b.element_from_vec(vec![1.0, -1.0, 2.0]).unwrap(),
        ])
        .unwrap();
    let y = p
        .product_element(vec![a.full(2.0).unwrap(), b.one().unwrap()])
        .unwrap();
    // 0.5·(2+4+6+8) + 3·(1−1+2)
    assert_eq!(p.inner(&x, &y).unwrap(), 16.0);
    assert_eq!(p.norm(&y).unwrap().powi(2), 0.5 * 16.0 + 3.0 * 3.0);
    assert_eq!(p.integral(&y).unwrap(), 0.5 * 8.0 + 3.0 * 3.0);
}

// ------------------------------------------------------------------ inner products are Riemann sums

#[test]
fn inner_product_is_midpoint_rule() {
    // ∫₀¹ x² dx by the midpoint rule on n cells is exactly 1/3 − 1/(12n²).
    for n in [1usize, 3, 10, 101] {
        let s = uniform_discr::<f64>(&[0.0], &[1.0], &[n]).unwrap();
        let x = s.element_from_fn(|p| p[0]).unwrap();
        let want = 1.0 / 3.0 - 1.0 / (12.0 * (n * n) as f64);
        let got = s.inner(&x, &x).unwrap();
        assert!((got - want).abs() <= 1e-15, "n = {n}: {got} vs {want}");
        let mut sq = s.zero().unwrap();
        s.multiply(&x, &x, &mut sq).unwrap();
        assert!((s.integral(&sq).unwrap() - want).abs() <= 1e-15);
        assert!((s.norm(&x).unwrap() - want.sqrt()).abs() <= 1e-15);
    }
    // the midpoint rule integrates bilinear functions exactly: ∫∫_{[0,1]×[0,2]} x y = 1
    let s = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 2.0], &[7, 3]).unwrap();
    let xy = s.element_from_fn(|p| p[0] * p[1]).unwrap();
    assert!((s.integral(&xy).unwrap() - 1.0).abs() <= 1e-15);
    // ‖1‖² = area
    let s = uniform_discr::<f64>(&[-1.0, 0.0], &[1.0, 5.0], &[3, 8]).unwrap();
    assert!((s.norm(&s.one().unwrap()).unwrap().powi(2) - 10.0).abs() <= 1e-13);
}

#[test]
fn weighted_rn_inner_product() {
    let s = weighted_rn::<f64>(&[3], 2.5).unwrap();
    let x = s.element_from_vec(vec![1.0, 2.0, 3.0]).unwrap();
    let y = s.element_from_vec(vec![-1.0, 0.5, 2.0]).unwrap();
    assert_eq!(s.inner(&x, &y).unwrap(), 2.5 * 6.0);
    assert_eq!(s.norm(&x).unwrap(), (2.5f64 * 14.0).sqrt());
    assert_eq!(
        s.dist(&x, &y).unwrap(),
        (2.5f64 * (4.0 + 2.25 + 1.0)).sqrt()
    );
    assert_eq!(s.integral(&x).unwrap(), 15.0);
}

#[test]
fn f32_reductions_accumulate_in_f64() {
    // 2^24 + 1 + 1 + 1 + 1: an f32 accumulator would stay at 2^24.
    let s = rn::<f32>(&[5]).unwrap();
    let x = s
        .element_from_vec(vec![16_777_216.0, 1.0, 1.0, 1.0, 1.0])
        .unwrap();
    assert_eq!(s.integral(&x).unwrap(), 16_777_220.0);
    assert_eq!(s.inner(&x, &s.one().unwrap()).unwrap(), 16_777_220.0);
    // dist is computed without a temporary in the scalar type
    let y = s
        .element_from_vec(vec![16_777_216.0, 0.0, 0.0, 0.0, 0.0])
        .unwrap();
    assert_eq!(s.dist(&x, &y).unwrap(), 2.0);
}

// ------------------------------------------------------------------ vector arithmetic

#[test]
fn vector_operations_by_hand() {
    let s = rn::<f64>(&[4]).unwrap();
    let x = s.element_from_vec(vec![1.0, -2.0, 3.0, 0.5]).unwrap();
    let y = s.element_from_vec(vec![2.0, 4.0, -1.0, 1.0]).unwrap();
    let mut out = s.zero().unwrap();

    s.lincomb(2.0, &x, -1.0, &y, &mut out).unwrap();
    assert_eq!(out.as_slice().unwrap(), &[0.0, -8.0, 7.0, 0.0]);
    s.add(&x, &y, &mut out).unwrap();
    assert_eq!(out.as_slice().unwrap(), &[3.0, 2.0, 2.0, 1.5]);
    s.sub(&x, &y, &mut out).unwrap();
    assert_eq!(out.as_slice().unwrap(), &[-1.0, -6.0, 4.0, -0.5]);
    s.multiply(&x, &y, &mut out).unwrap();
    assert_eq!(out.as_slice().unwrap(), &[2.0, -8.0, -3.0, 0.5]);
    s.divide(&x, &y, &mut out).unwrap();
    assert_eq!(out.as_slice().unwrap(), &[0.5, -0.5, -3.0, 0.5]);
    s.scaled(-2.0, &x, &mut out).unwrap();
    assert_eq!(out.as_slice().unwrap(), &[-2.0, 4.0, -6.0, -1.0]);
    s.abs(&out.try_clone().unwrap(), &mut out).unwrap();
    assert_eq!(out.as_slice().unwrap(), &[2.0, 4.0, 6.0, 1.0]);
    s.assign(&x, &mut out).unwrap();
    assert_eq!(out.as_slice().unwrap(), x.as_slice().unwrap());
    s.scale(3.0, &mut out).unwrap();
    assert_eq!(out.as_slice().unwrap(), &[3.0, -6.0, 9.0, 1.5]);
    s.axpby(1.0, &x, -0.5, &mut out).unwrap();
    assert_eq!(out.as_slice().unwrap(), &[-0.5, 1.0, -1.5, -0.25]);
    s.fill(&mut out, 7.0).unwrap();
    assert_eq!(out.as_slice().unwrap(), &[7.0; 4]);
    assert_eq!(s.inner(&x, &y).unwrap(), -8.5);
    assert_eq!(s.dist(&x, &x).unwrap(), 0.0);
}

#[test]
fn vector_operations_on_product_spaces() {
    let a = rn::<f64>(&[2]).unwrap();
    let b = weighted_rn::<f64>(&[3], 2.0).unwrap();
    let p = Space::product(vec![a.clone(), b.clone()]).unwrap();
    let x = p
        .product_element(vec![
            a.element_from_vec(vec![1.0, 2.0]).unwrap(),
            b.element_from_vec(vec![3.0, 4.0, 5.0]).unwrap(),
        ])
        .unwrap();
    let y = p.one().unwrap();
    let mut out = p.zero().unwrap();
    p.lincomb(2.0, &x, 1.0, &y, &mut out).unwrap();
    assert_eq!(out.part(0).unwrap().as_slice().unwrap(), &[3.0, 5.0]);
    assert_eq!(out.part(1).unwrap().as_slice().unwrap(), &[7.0, 9.0, 11.0]);
    p.axpby(-1.0, &x, 1.0, &mut out).unwrap();
    assert_eq!(out.part(1).unwrap().as_slice().unwrap(), &[4.0, 5.0, 6.0]);
    p.scale(0.5, &mut out).unwrap();
    assert_eq!(out.part(0).unwrap().as_slice().unwrap(), &[1.0, 1.5]);
    p.fill(&mut out, -1.0).unwrap();
    p.abs(&out.try_clone().unwrap(), &mut out).unwrap();
    assert_eq!(p.dist(&out, &y).unwrap(), 0.0);
    p.multiply(&x, &x, &mut out).unwrap();
    assert_eq!(out.part(1).unwrap().as_slice().unwrap(), &[9.0, 16.0, 25.0]);
    p.divide(&out.try_clone().unwrap(), &x, &mut out).unwrap();
    assert_eq!(p.dist(&out, &x).unwrap(), 0.0);
}

#[test]
fn vector_operations_reject_foreign_elements() {
    let s = rn::<f64>(&[3]).unwrap();
    let t = rn::<f64>(&[4]).unwrap();
    let p = s.power(2).unwrap();
    let q = s.power(3).unwrap();
    let (x, z) = (s.one().unwrap(), t.one().unwrap());
    let mut out = s.zero().unwrap();
    let mut out_t = t.zero().unwrap();

    assert!(matches!(
        s.lincomb(1.0, &x, 1.0, &z, &mut out),
        Err(Error::SpaceMismatch { .. })
    ));
    assert!(s.lincomb(1.0, &x, 1.0, &x, &mut out_t).is_err());
    assert!(s.axpby(1.0, &z, 1.0, &mut out).is_err());
    assert!(s.scale(1.0, &mut out_t).is_err());
    assert!(s.scaled(1.0, &z, &mut out).is_err());
    assert!(s.assign(&x, &mut out_t).is_err());
    assert!(s.abs(&z, &mut out).is_err());
    assert!(s.fill(&mut out_t, 0.0).is_err());
    assert!(s.multiply(&x, &z, &mut out).is_err());
    assert!(s.divide(&z, &x, &mut out).is_err());
    assert!(s.add(&x, &z, &mut out).is_err());
    assert!(s.sub(&z, &x, &mut out).is_err());
    assert!(s.inner(&x, &z).is_err());
    assert!(s.norm(&z).is_err());
    assert!(s.dist(&z, &x).is_err());
    assert!(s.integral(&z).is_err());
    // product structure mismatches
    let (px, qx) = (p.one().unwrap(), q.one().unwrap());
    assert!(s.norm(&px).is_err());
    assert!(p.norm(&x).is_err());
    assert!(p.norm(&qx).is_err());
    assert!(p.inner(&px, &qx).is_err());
    let mut pout = p.zero().unwrap();
    assert!(p
        .lincomb(1.0, &px, 1.0, &px, &mut q.zero().unwrap())
        .is_err());
    assert!(p.assign(&qx, &mut pout).is_err());
    // a product element with a part of the wrong shape
    let bad = Space::product(vec![s.clone(), t.clone()])
        .unwrap()
        .one()
        .unwrap();
    assert!(p.norm(&bad).is_err());
    assert!(p.product_element(bad.into_parts().unwrap()).is_err());
    assert!(p.product_element(vec![]).is_err());
    assert!(p.product_element(vec![x.try_clone().unwrap()]).is_err());
}

// ------------------------------------------------------------------ devices

#[test]
fn devices_parse_and_print() {
    for (s, d) in [
        ("cpu", Device::Cpu),
        (" CPU ", Device::Cpu),
        ("cuda", Device::Cuda(0)),
        ("gpu", Device::Cuda(0)),
        ("cuda:3", Device::Cuda(3)),
        ("gpu:1", Device::Cuda(1)),
    ] {
        assert_eq!(s.parse::<Device>().unwrap(), d, "{s}");
    }
    for s in ["tpu", "cuda:", "cuda:-1", "cuda:x", "", "cuda:1:2"] {
        assert!(
            matches!(s.parse::<Device>(), Err(Error::InvalidArgument(_))),
            "{s}"
        );
    }
    assert_eq!(Device::Cuda(2).to_string(), "cuda:2");
    assert_eq!(Device::Cpu.to_string(), "cpu");
    assert_eq!(Device::default(), Device::Cpu);
    assert!(Device::Cuda(0).is_cuda() && !Device::Cpu.is_cuda());
    assert!(Device::Cpu.check_available().is_ok());
}

#[test]
fn unavailable_devices_are_errors_not_panics() {
    let s = uniform_discr::<f32>(&[0.0], &[1.0], &[4]).unwrap();
    // a device ordinal that cannot exist
    assert!(Device::Cuda(4096).check_available().is_err());
    assert!(s.with_device(Device::Cuda(4096)).is_err());
    assert!(s.power(2).unwrap().with_device(Device::Cuda(4096)).is_err());
    assert!(s.one().unwrap().to_device(Device::Cuda(4096)).is_err());
    if let Err(e) = Device::Cuda(0).check_available() {
        assert!(matches!(e, Error::CudaUnavailable(_)), "{e}");
        assert!(matches!(
            s.with_device(Device::Cuda(0)),
            Err(Error::CudaUnavailable(_))
        ));
    }
    assert_eq!(s.with_device(Device::Cpu).unwrap(), s);
}

/// With a GPU: mixing devices is an error at construction and at apply, never a silent copy.
#[test]
fn mixing_devices_is_an_error() {
    if Device::Cuda(0).check_available().is_err() {
        return; // covered by `unavailable_devices_are_errors_not_panics`
    }
    let cpu = uniform_discr::<f32>(&[0.0], &[1.0], &[4]).unwrap();
    let gpu = cpu.with_device(Device::Cuda(0)).unwrap();
    assert_eq!(gpu.device(), Device::Cuda(0));
    assert_ne!(cpu, gpu);
    assert!(matches!(
        Space::product(vec![cpu.clone(), gpu.clone()]),
        Err(Error::DeviceMismatch { .. })
    ));
    let (xc, xg) = (cpu.one().unwrap(), gpu.one().unwrap());
    assert!(matches!(gpu.norm(&xc), Err(Error::DeviceMismatch { .. })));
    assert!(matches!(cpu.norm(&xg), Err(Error::DeviceMismatch { .. })));
    assert!(xg.as_slice().is_err());
    let back = xg.to_host().unwrap();
    assert_eq!(back.as_slice().unwrap(), &[1.0; 4]);
}

// ------------------------------------------------------------------ laws on random inputs

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn inner_product_laws((s, x, y) in space_and_elements(tensor_space::<f64>(1..=3, 1..=6)), a in -3.0f64..3.0) {
        let xy = s.inner(&x, &y).unwrap();
        prop_assert_eq!(xy, s.inner(&y, &x).unwrap());
        let nx = s.norm(&x).unwrap();
        let ny = s.norm(&y).unwrap();
        prop_assert!((nx * nx - s.inner(&x, &x).unwrap()).abs() <= 1e-14 * nx * nx);
        prop_assert!(xy.abs() <= nx * ny * (1.0 + 1e-14));
        // ⟨a x + y, y⟩ = a ⟨x, y⟩ + ⟨y, y⟩
        let mut z = s.zero().unwrap();
        s.lincomb(a, &x, 1.0, &y, &mut z).unwrap();
        let lhs = s.inner(&z, &y).unwrap();
        let rhs = a * xy + ny * ny;
        prop_assert!((lhs - rhs).abs() <= 1e-13 * (a.abs() * nx * ny + ny * ny));
        // dist = ‖x − y‖
        s.sub(&x, &y, &mut z).unwrap();
        prop_assert!((s.dist(&x, &y).unwrap() - s.norm(&z).unwrap()).abs() <= 1e-14 * (nx + ny));
        // the weight: inner = weight · Σ x y
        let pairs = || x.as_slice().unwrap().iter().zip(y.as_slice().unwrap()).map(|(a, b)| a * b);
        let (raw, abs): (f64, f64) = (pairs().sum(), pairs().map(f64::abs).sum());
        let w = s.weight().unwrap();
        prop_assert!((xy - w * raw).abs() <= 1e-14 * w * abs);
    }

    #[test]
    fn product_space_arithmetic_is_partwise(p in product_space::<f64>(1..=3, 1..=2, 1..=4), seed in any::<u64>()) {
        let mut r = rng(seed);
        let x = p.random_normal(&mut r).unwrap();
        let y = p.random_normal(&mut r).unwrap();
        let mut z = p.zero().unwrap();
        p.lincomb(2.0, &x, -3.0, &y, &mut z).unwrap();
        let mut sum = 0.0;
        for (k, part) in p.parts().unwrap().iter().enumerate() {
            let (xk, yk, zk) = (x.part(k).unwrap(), y.part(k).unwrap(), z.part(k).unwrap());
            let mut w = part.zero().unwrap();
            part.lincomb(2.0, xk, -3.0, yk, &mut w).unwrap();
            prop_assert_eq!(part.dist(&w, zk).unwrap(), 0.0);
            sum += part.inner(xk, yk).unwrap();
        }
        prop_assert!((p.inner(&x, &y).unwrap() - sum).abs() <= 1e-14 * p.norm(&x).unwrap() * p.norm(&y).unwrap());
    }

    #[test]
    fn strategies_draw_members(s in discr_space::<f32>(1..=3, 2..=5), w in weighted_space::<f64>(2..=2, 1..=3)) {
        let d = s.ndim().unwrap();
        prop_assert!((1..=3).contains(&d));
        prop_assert!(s.shape().unwrap().iter().all(|n| (2..=5).contains(n)));
        prop_assert!(s.partition().is_ok());
        prop_assert_eq!(w.ndim().unwrap(), 2);
        let wt = w.weight().unwrap();
        prop_assert!((0.01..=100.0).contains(&wt));
    }

    #[test]
    fn element_strategy_draws_members((s, x) in discr_space::<f64>(1..=2, 1..=4).prop_flat_map(|s| (Just(s.clone()), element(s)))) {
        prop_assert!(s.contains(&x));
        prop_assert!(x.as_slice().unwrap().iter().all(|v| (-1.0..=1.0).contains(v)));
    }
}
