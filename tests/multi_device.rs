//! `MultiDeviceRayTransform`: one ray transform split by views across devices. Several CPU
//! entries stand in for several GPUs. For every geometry kind, the split transform equals the
//! single transform (forward and adjoint, to rounding) and its adjoint is exact; sub-geometries
//! keep the data weighting; bad splits and missing devices are clean errors.

use rodl::factory::SpaceDescExt;
use rodl::tomo::{Backend, CpuOptions, MultiDeviceRayTransform, RayTransform};
use rodl::{check_adjoint, uniform_discr, Device, Error, LinearOperator, Operator, Scalar};

mod common;

use common::{adjoint_tol, rel_dist, rng};

const CPU: Device = Device::Cpu;

fn split_equals_single<T: Scalar>() {
    let tol = 64.0 * T::EPS;
    for (name, space, geometry) in common::geometry_cases::<T>([12, 12, 10], 0.0) {
        let single =
            RayTransform::new(space.clone(), geometry.clone(), Backend::default()).unwrap();
        let single_adj = single.adjoint().unwrap();
        let mut r = rng(17);
        let x = space.random_normal(&mut r).unwrap();
        let y = single.range().random_normal(&mut r).unwrap();
        let ax = single.apply(&x).unwrap();
        let aty = single_adj.apply(&y).unwrap();
        for k in 1..=4 {
            let what = format!("{name} on {k} CPU entries");
            let multi = MultiDeviceRayTransform::<T>::new(
                space.desc(),
                geometry.clone(),
                CpuOptions::default(),
                &vec![CPU; k],
            )
            .unwrap();
            assert_eq!(multi.devices(), vec![CPU; k]);
            assert_eq!(multi.domain(), &space);
            assert_eq!(multi.range(), single.range(), "{what}");
            let ranges = multi.view_ranges();
            assert_eq!(ranges.len(), k);
            assert_eq!(ranges.last().unwrap().end, geometry.vec().num_views());
            let sizes: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);

            let mx = multi.apply(&x).unwrap();
            let ef = rel_dist(multi.range(), &mx, &ax);
            assert!(ef <= tol, "{what}: forward differs by {ef:e}");
            let maty = multi.adjoint().unwrap().apply(&y).unwrap();
            let ea = rel_dist(&space, &maty, &aty);
            assert!(ea <= tol, "{what}: adjoint differs by {ea:e}");
            let rep = check_adjoint(&multi, 2, 23).unwrap();
            assert!(
                rep.max_rel_error <= adjoint_tol::<T>(),
                "{what}: adjoint check {}",
                rep.max_rel_error
            );
            // Repeated calls (cached buffers) give the same results.
            let again = multi.adjoint().unwrap().apply(&y).unwrap();
            assert_eq!(again.as_slice().unwrap(), maty.as_slice().unwrap());
            // The adjoint's adjoint is the transform.
            let back = multi.adjoint().unwrap().adjoint().unwrap();
            assert_eq!(
                back.apply(&x).unwrap().as_slice().unwrap(),
                mx.as_slice().unwrap()
            );
        }
    }
}

#[test]
fn split_transform_equals_single_transform_f64() {
    split_equals_single::<f64>();
}

#[test]
fn split_transform_equals_single_transform_f32() {
    split_equals_single::<f32>();
}

#[test]
fn uneven_view_counts_and_thread_options() {
    let (_, space, geometry) = common::geometry_cases::<f64>([12, 12, 10], 0.0).remove(0); // 11 views
    let single = RayTransform::new(space.clone(), geometry.clone(), Backend::default()).unwrap();
    let x = space.random_normal(&mut rng(2)).unwrap();
    let y = single.range().random_normal(&mut rng(3)).unwrap();
    let multi = MultiDeviceRayTransform::<f64>::with_view_counts(
        space.desc(),
        geometry,
        CpuOptions { threads: Some(1) },
        &[CPU, CPU, CPU],
        &[1, 7, 3],
    )
    .unwrap();
    assert_eq!(multi.cpu_options().threads, Some(1));
    assert_eq!(multi.volume(), &space.desc());
    assert_eq!(multi.view_ranges(), vec![0..1, 1..8, 8..11]);
    let ef = rel_dist(
        multi.range(),
        &multi.apply(&x).unwrap(),
        &single.apply(&x).unwrap(),
    );
    let ea = rel_dist(
        &space,
        &multi.adjoint().unwrap().apply(&y).unwrap(),
        &single.adjoint().unwrap().apply(&y).unwrap(),
    );
    assert!(ef <= 1e-14 && ea <= 1e-14, "{ef:e} {ea:e}");
    assert!(check_adjoint(&multi, 3, 4).unwrap().max_rel_error <= 1e-12);
}

#[test]
fn sub_geometries_are_the_rows_of_the_full_transform() {
    for (name, space, geometry) in common::geometry_cases::<f64>([12, 12, 10], 0.0) {
        let n = geometry.vec().num_views();
        let full = RayTransform::new(space.clone(), geometry.clone(), Backend::default()).unwrap();
        let x = space.random_normal(&mut rng(9)).unwrap();
        let ax = full.apply(&x).unwrap();
        let per_view: usize = geometry.data_shape()[1..].iter().product();
        let w = full.range().weight().unwrap();
        for range in [0..1, 0..n, 1..n, n / 2..n - 1, n - 1..n] {
            let sub_g = geometry.select_views(range.clone()).unwrap();
            assert_eq!(sub_g.vec().views(), &geometry.vec().views()[range.clone()]);
            assert!(sub_g.spec().is_none());
            let sub = RayTransform::new(space.clone(), sub_g, Backend::default()).unwrap();
            let ws = sub.range().weight().unwrap();
            assert!((ws - w).abs() <= 1e-14 * w, "{name} {range:?}: {ws} vs {w}");
            let sx = sub.apply(&x).unwrap();
            assert_eq!(
                sx.as_slice().unwrap(),
                &ax.as_slice().unwrap()[range.start * per_view..range.end * per_view],
                "{name} {range:?}"
            );
        }
        #[allow(clippy::reversed_empty_ranges)]
        let bad_ranges = [0..0, 2..1, 0..n + 1];
        for bad in bad_ranges {
            assert!(geometry.select_views(bad.clone()).is_err(), "{bad:?}");
        }
    }
}

#[test]
fn bad_splits_and_missing_devices_are_clean_errors() {
    let (_, space, geometry) = common::geometry_cases::<f32>([12, 12, 10], 0.0).remove(0); // 11 views
    let cpu = CpuOptions::default;
    let new = |d: &[Device]| {
        MultiDeviceRayTransform::<f32>::new(space.desc(), geometry.clone(), cpu(), d)
    };
    let counts = |d: &[Device], c: &[usize]| {
        MultiDeviceRayTransform::<f32>::with_view_counts(
            space.desc(),
            geometry.clone(),
            cpu(),
            d,
            c,
        )
    };
    // The volume must be a discretised space of the geometry's dimension.
    assert!(MultiDeviceRayTransform::<f32>::new(
        rodl::factory::SpaceDesc::rn(&[8, 8]),
        geometry.clone(),
        cpu(),
        &[CPU]
    )
    .is_err());
    assert!(new(&[]).is_err());
    assert!(new(&[CPU; 12]).is_err()); // more devices than views
    assert!(new(&[CPU; 11]).is_ok());
    assert!(counts(&[CPU, CPU], &[11, 0]).is_err());
    assert!(counts(&[CPU, CPU], &[5, 5]).is_err());
    assert!(counts(&[CPU, CPU], &[11]).is_err());
    // A missing GPU is reported when the transform is built.
    assert!(matches!(
        new(&[CPU, Device::Cuda(7)]),
        Err(Error::CudaUnavailable(_))
    ));
    assert!(matches!(
        new(&[Device::Cuda(7)]),
        Err(Error::CudaUnavailable(_))
    ));
    // Inputs must be host elements of the volume.
    let multi = new(&[CPU, CPU]).unwrap();
    let wrong = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[4, 4])
        .unwrap()
        .one()
        .unwrap();
    assert!(multi.apply(&wrong).is_err());
    assert!(multi.adjoint().unwrap().apply(&wrong).is_err());
}

#[test]
fn norm_estimates_agree() {
    let (_, space, geometry) = common::geometry_cases::<f64>([12, 12, 10], 0.0).remove(1);
    let single = RayTransform::new(space.clone(), geometry.clone(), Backend::default()).unwrap();
    let multi = MultiDeviceRayTransform::<f64>::new(
        space.desc(),
        geometry,
        CpuOptions::default(),
        &[CPU, CPU],
    )
    .unwrap();
    let (a, b) = (
        single.norm_estimate().unwrap(),
        multi.norm_estimate().unwrap(),
    );
    assert!((a - b).abs() <= 1e-6 * a, "{a} vs {b}");
    // Cached: the adjoint shares the estimate.
    assert_eq!(multi.adjoint().unwrap().norm_estimate().unwrap(), b);
}
