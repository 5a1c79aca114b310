//! Elements: construction through the space, data access, product elements, copies, devices.

mod common;

use ndarray::{ArrayD, IxDyn, ShapeBuilder};
use rodl::{rn, uniform_discr, Device, Error, Space};

use common::*;

#[test]
fn element_from_fn_samples_cell_midpoints() {
    let s = uniform_discr::<f64>(&[-1.0, 2.0], &[1.0, 5.0], &[4, 3]).unwrap();
    let x = s.element_from_fn(|p| 10.0 * p[0] + p[1]).unwrap();
    let a = x.as_array().unwrap();
    let xs = [-0.75, -0.25, 0.25, 0.75];
    let ys = [2.5, 3.5, 4.5];
    for (i, &px) in xs.iter().enumerate() {
        for (j, &py) in ys.iter().enumerate() {
            assert_eq!(a[[i, j]], 10.0 * px + py, "[{i}, {j}]");
        }
    }
    // the same points as `points()`, in C order
    let pts = s.points().unwrap();
    for (k, v) in x.as_slice().unwrap().iter().enumerate() {
        assert_eq!(*v, 10.0 * pts[[k, 0]] + pts[[k, 1]]);
    }
    // f32: the function still gets f64 coordinates
    let s = uniform_discr::<f32>(&[0.0], &[1.0], &[2]).unwrap();
    let x = s.element_from_fn(|p| p[0] as f32).unwrap();
    assert_eq!(x.as_slice().unwrap(), &[0.25, 0.75]);
}

#[test]
fn constructors() {
    let s = rn::<f64>(&[2, 3]).unwrap();
    assert_eq!(s.zero().unwrap().as_slice().unwrap(), &[0.0; 6]);
    assert_eq!(s.one().unwrap().as_slice().unwrap(), &[1.0; 6]);
    assert_eq!(s.full(-2.5).unwrap().as_slice().unwrap(), &[-2.5; 6]);
    let v = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let x = s.element_from_vec(v.clone()).unwrap();
    assert_eq!(x.as_slice().unwrap(), v.as_slice());
    assert_eq!(x.as_array().unwrap()[[1, 0]], 4.0);
    assert_eq!(x.shape().unwrap(), &[2usize, 3][..]);
    assert!(!x.is_product());
    assert_eq!(x.device(), Device::Cpu);
    let y = s
        .element(ArrayD::from_shape_vec(IxDyn(&[2, 3]), v.clone()).unwrap())
        .unwrap();
    assert_eq!(y.as_slice().unwrap(), v.as_slice());
    assert_eq!(y.into_array().unwrap().shape(), &[2, 3]);
}

#[test]
fn fortran_order_data_is_stored_in_c_order() {
    let s = rn::<f64>(&[2, 3]).unwrap();
    // column-major: a[[i, j]] = 10 i + j
    let a =
        ArrayD::from_shape_vec(IxDyn(&[2, 3]).f(), vec![0.0, 10.0, 1.0, 11.0, 2.0, 12.0]).unwrap();
    assert_eq!(a[[1, 2]], 12.0);
    let x = s.element(a).unwrap();
    assert_eq!(x.as_slice().unwrap(), &[0.0, 1.0, 2.0, 10.0, 11.0, 12.0]);
    assert_eq!(s.inner(&x, &x).unwrap(), 1.0 + 4.0 + 100.0 + 121.0 + 144.0);
}

#[test]
fn construction_errors() {
    let s = rn::<f64>(&[2, 3]).unwrap();
    assert!(matches!(
        s.element_from_vec(vec![1.0; 5]),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        s.element(ArrayD::zeros(IxDyn(&[3, 2]))),
        Err(Error::Shape { .. })
    ));
    assert!(s.element(ArrayD::zeros(IxDyn(&[6]))).is_err());
    assert!(s.element(ArrayD::zeros(IxDyn(&[2, 3, 1]))).is_err());
}

#[test]
fn mutable_access() {
    let s = rn::<f32>(&[3]).unwrap();
    let mut x = s.zero().unwrap();
    x.as_slice_mut().unwrap()[1] = 2.0;
    x.as_array_mut().unwrap()[[2]] = -1.0;
    assert_eq!(x.as_slice().unwrap(), &[0.0, 2.0, -1.0]);
    assert_eq!(s.integral(&x).unwrap(), 1.0);
}

#[test]
fn product_elements() {
    let a = rn::<f64>(&[2]).unwrap();
    let b = rn::<f64>(&[3]).unwrap();
    let p = Space::product(vec![a.clone(), b.clone()]).unwrap();
    let mut x = p
        .product_element(vec![a.full(1.0).unwrap(), b.full(2.0).unwrap()])
        .unwrap();
    assert!(x.is_product());
    assert!(x.shape().is_err());
    assert_eq!(x.device(), Device::Cpu);
    assert_eq!(x.parts().unwrap().len(), 2);
    assert_eq!(x.part(1).unwrap().as_slice().unwrap(), &[2.0; 3]);
    x.parts_mut().unwrap()[0].as_slice_mut().unwrap()[0] = 5.0;
    assert_eq!(x.part(0).unwrap().as_slice().unwrap(), &[5.0, 1.0]);
    // tensor accessors on a product element, product accessors on a tensor element
    assert!(matches!(x.as_array(), Err(Error::InvalidArgument(_))));
    assert!(x.as_slice().is_err());
    assert!(x.as_array_mut().is_err());
    assert!(x.as_slice_mut().is_err());
    assert!(x.part(2).is_err());
    let t = a.one().unwrap();
    assert!(t.parts().is_err());
    assert!(t.part(0).is_err());
    assert!(a.one().unwrap().parts_mut().is_err());
    assert!(a.one().unwrap().into_parts().is_err());
    let c = x.try_clone().unwrap();
    assert!(c.into_array().is_err());
    let parts = x.into_parts().unwrap();
    assert_eq!(parts[1].as_slice().unwrap(), &[2.0; 3]);
    // Debug output is available for both kinds
    assert!(format!("{:?}", p.one().unwrap()).contains("Element(cpu"));
}

#[test]
fn copies_are_deep() {
    let s = rn::<f64>(&[3]).unwrap();
    let p = s.power(2).unwrap();
    let x = p.one().unwrap();
    let mut c = x.try_clone().unwrap();
    c.parts_mut().unwrap()[1].as_slice_mut().unwrap()[0] = 9.0;
    assert_eq!(x.part(1).unwrap().as_slice().unwrap(), &[1.0; 3]);
    let mut h = x.to_host().unwrap();
    h.parts_mut().unwrap()[0].as_slice_mut().unwrap()[2] = -1.0;
    assert_eq!(x.part(0).unwrap().as_slice().unwrap(), &[1.0; 3]);
    let d = x.to_device(Device::Cpu).unwrap();
    assert_eq!(p.dist(&d, &x).unwrap(), 0.0);
}

#[test]
fn moving_to_an_unavailable_gpu_is_an_error() {
    let s = rn::<f32>(&[3]).unwrap();
    let x = s.one().unwrap();
    assert!(x.to_device(Device::Cuda(4096)).is_err());
    assert!(s
        .power(2)
        .unwrap()
        .one()
        .unwrap()
        .to_device(Device::Cuda(4096))
        .is_err());
    if Device::Cuda(0).check_available().is_err() {
        assert!(matches!(
            x.to_device(Device::Cuda(0)),
            Err(Error::CudaUnavailable(_))
        ));
    }
}

#[test]
fn random_normal_is_seeded_and_standard() {
    let s = rn::<f64>(&[100, 100]).unwrap();
    let a = s.random_normal(&mut rng(5)).unwrap();
    let b = s.random_normal(&mut rng(5)).unwrap();
    let c = s.random_normal(&mut rng(6)).unwrap();
    assert_eq!(s.dist(&a, &b).unwrap(), 0.0);
    assert!(s.dist(&a, &c).unwrap() > 1.0);
    // 10⁴ standard-normal samples: mean within 5σ/√n = 0.05, variance within 5·√(2/n) ≈ 0.07
    let v = a.as_slice().unwrap();
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    assert!(mean.abs() < 0.05, "mean {mean}");
    assert!((var - 1.0).abs() < 0.07, "variance {var}");
    // product spaces draw every part
    let p = Space::product(vec![rn::<f32>(&[4]).unwrap(), rn::<f32>(&[5]).unwrap()]).unwrap();
    let x = p.random_normal(&mut rng(1)).unwrap();
    assert!(p.contains(&x));
    assert!(x
        .parts()
        .unwrap()
        .iter()
        .all(|e| e.as_slice().unwrap().iter().all(|v| *v != 0.0)));
}

/// Element reductions: the plain sum, min and max of the entries, over all parts of a product
/// element; `shape` errors for a product element, as `Space::shape` does for a product space.
#[test]
fn element_reductions_and_shape() {
    let s = uniform_discr::<f32>(&[0.0, 0.0], &[1.0, 1.0], &[2, 3]).unwrap();
    let x = s
        .element_from_vec(vec![1.0, -2.5, 3.0, 0.0, 4.25, -1.0])
        .unwrap();
    assert_eq!(x.sum().unwrap(), 4.75);
    assert_eq!(x.min().unwrap(), -2.5);
    assert_eq!(x.max().unwrap(), 4.25);
    assert_eq!(x.shape().unwrap(), s.shape().unwrap());
    // The sum is unweighted; the integral is weighted.
    assert!((s.integral(&x).unwrap() - 4.75 / 6.0).abs() < 1e-6);

    let t = rn::<f32>(&[2]).unwrap();
    let p = Space::product(vec![s.clone(), t.clone()]).unwrap();
    let y = p
        .product_element(vec![x.try_clone().unwrap(), t.full(-7.0).unwrap()])
        .unwrap();
    assert_eq!(y.sum().unwrap(), 4.75 - 14.0);
    assert_eq!(y.min().unwrap(), -7.0);
    assert_eq!(y.max().unwrap(), 4.25);
    assert!(y.shape().is_err());
    assert!(p.shape().is_err());

    let mut z = t.one().unwrap();
    z.as_slice_mut().unwrap()[1] = f32::NAN;
    assert!(z.min().unwrap().is_nan() && z.max().unwrap().is_nan());
}
