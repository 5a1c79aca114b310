//! Factories, `DataParallel` and `MultiDeviceRayTransform` on every visible GPU (and mixed with
//! the CPU), compared with CPU results. Like the other CUDA tests these FAIL (they do not skip)
//! without a GPU. Run on a multi-GPU machine with
//! `cargo test --features cuda --test cuda_multi_device -- --nocapture`.
#![cfg(feature = "cuda")]

use rand::SeedableRng;
use rodl::factory::{LinFactory, SpaceDescExt};
use rodl::parallel::DataParallel;
use rodl::tomo::{
    cone_beam_geometry, parallel_beam_geometry, Backend, CpuOptions, Geometry,
    MultiDeviceRayTransform, RayTransform,
};
use rodl::{
    check_adjoint, uniform_discr, Device, Element, Error, Gradient, LinearOperator, Operator, Space,
};

/// The visible GPUs: the ordinals from 0 up to the first one that cannot be used.
fn gpus() -> Vec<Device> {
    let found: Vec<Device> = (0..64)
        .map(Device::Cuda)
        .take_while(|d| d.check_available().is_ok())
        .collect();
    assert!(
        !found.is_empty(),
        "no usable GPU: {:?}",
        Device::Cuda(0).check_available()
    );
    eprintln!("GPUs: {found:?}");
    found
}

fn rng(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed)
}

fn rel(space: &Space<f32>, a: &Element<f32>, b: &Element<f32>) -> f64 {
    space.dist(a, b).unwrap() / space.norm(b).unwrap().max(1e-30)
}

/// Element `b` of a host batch of the tensor space `inner`.
fn sample(inner: &Space<f32>, batch: &Element<f32>, b: usize) -> Element<f32> {
    let n = inner.size();
    inner
        .element_from_vec(batch.as_slice().unwrap()[b * n..(b + 1) * n].to_vec())
        .unwrap()
}

fn volume_2d() -> Space<f32> {
    uniform_discr(&[-1.0, -1.0], &[1.0, 1.0], &[64, 64]).unwrap()
}

fn volume_3d() -> Space<f32> {
    uniform_discr(&[-1.0, -1.0, -1.0], &[1.0, 1.0, 1.0], &[32, 32, 32]).unwrap()
}

/// The device lists to try: all GPUs, all GPUs with the CPU in the middle, and every GPU twice.
fn device_lists() -> Vec<Vec<Device>> {
    let g = gpus();
    let mut mixed = vec![g[0], Device::Cpu];
    mixed.extend_from_slice(&g[1..]);
    let twice: Vec<Device> = g.iter().chain(&g).copied().collect();
    vec![g, mixed, twice]
}

#[test]
fn data_parallel_ray_transform_on_all_gpus_matches_cpu() {
    let space = volume_2d();
    let geometry = parallel_beam_geometry(&space, Some(60)).unwrap();
    let factory: LinFactory<f32> =
        RayTransform::factory(space.desc(), geometry.clone(), CpuOptions::default()).unwrap();
    let cpu = RayTransform::new(space.clone(), geometry, Backend::default()).unwrap();
    let cpu_adj = cpu.adjoint().unwrap();
    for devices in device_lists() {
        let batch = 2 * devices.len() + 1; // uneven
        let op = DataParallel::new(factory.clone(), &devices, batch).unwrap();
        op.warm_up().unwrap();
        assert_eq!(op.build_counts(), vec![1; devices.len()]);
        let x = op.domain().random_normal(&mut rng(1)).unwrap();
        let y = op.range().random_normal(&mut rng(2)).unwrap();
        let ax = op.apply(&x).unwrap();
        let aty = op.adjoint().unwrap().apply(&y).unwrap();
        for b in 0..batch {
            let want = cpu.apply(&sample(&space, &x, b)).unwrap();
            let got = sample(cpu.range(), &ax, b);
            let e = rel(cpu.range(), &got, &want);
            assert!(e <= 1e-5, "{devices:?} element {b}: forward {e:e}");
            let want = cpu_adj.apply(&sample(cpu.range(), &y, b)).unwrap();
            let got = sample(&space, &aty, b);
            let e = rel(&space, &got, &want);
            assert!(e <= 1e-5, "{devices:?} element {b}: adjoint {e:e}");
        }
        let r = check_adjoint(&op, 2, 3).unwrap();
        assert!(r.max_rel_error <= 1e-5, "{devices:?}: {}", r.max_rel_error);
        assert_eq!(op.build_counts(), vec![1; devices.len()]);
        eprintln!("DataParallel on {devices:?}: ok");
    }
}

#[test]
fn data_parallel_composite_on_all_gpus_matches_cpu() {
    let space = volume_2d();
    let grad: LinFactory<f32> = Gradient::factory(space.desc()).unwrap();
    let lap = grad.adjoint().compose(&grad).unwrap().scaled(-1.0);
    let cpu = lap.build(Device::Cpu).unwrap();
    for devices in device_lists() {
        let op = DataParallel::new(lap.clone(), &devices, 3 * devices.len() - 1).unwrap();
        let x = op.domain().random_normal(&mut rng(4)).unwrap();
        let ax = op.apply(&x).unwrap();
        for b in 0..op.batch_size() {
            let want = cpu.apply(&sample(&space, &x, b)).unwrap();
            let e = rel(&space, &sample(&space, &ax, b), &want);
            assert!(e <= 1e-5, "{devices:?} element {b}: {e:e}");
        }
    }
}

fn multi_matches(space: Space<f32>, geometry: Geometry, what: &str) {
    let multi_on = |devices: &[Device]| {
        MultiDeviceRayTransform::<f32>::new(
            space.desc(),
            geometry.clone(),
            CpuOptions::default(),
            devices,
        )
    };
    let cpu = RayTransform::new(space.clone(), geometry.clone(), Backend::default()).unwrap();
    let x = space.random_normal(&mut rng(5)).unwrap();
    let y = cpu.range().random_normal(&mut rng(6)).unwrap();
    let ax = cpu.apply(&x).unwrap();
    let aty = cpu.adjoint().unwrap().apply(&y).unwrap();
    for devices in device_lists() {
        let multi = multi_on(&devices).unwrap();
        let t = std::time::Instant::now();
        let mx = multi.apply(&x).unwrap();
        let tf = t.elapsed();
        let t = std::time::Instant::now();
        let maty = multi.adjoint().unwrap().apply(&y).unwrap();
        let ta = t.elapsed();
        let ef = rel(cpu.range(), &mx, &ax);
        let ea = rel(&space, &maty, &aty);
        eprintln!(
            "{what} on {devices:?} ({:?}): forward {ef:.2e} ({tf:?}), adjoint {ea:.2e} ({ta:?})",
            multi.view_ranges()
        );
        assert!(ef <= 1e-5 && ea <= 1e-5, "{what} on {devices:?}");
        let r = check_adjoint(&multi, 2, 7).unwrap();
        assert!(
            r.max_rel_error <= 1e-5,
            "{what} on {devices:?}: {}",
            r.max_rel_error
        );
    }
    // Against one GPU.
    let one = multi_on(&[Device::Cuda(0)]).unwrap();
    let e = rel(cpu.range(), &one.apply(&x).unwrap(), &ax);
    assert!(e <= 1e-5, "{what} on cuda:0 alone: {e:e}");
}

#[test]
fn multi_device_ray_transform_on_all_gpus_matches_cpu_2d() {
    let space = volume_2d();
    let g = parallel_beam_geometry(&space, Some(90)).unwrap();
    multi_matches(space, g, "parallel 2D");
}

#[test]
fn multi_device_ray_transform_on_all_gpus_matches_cpu_cone() {
    let space = volume_3d();
    let g = cone_beam_geometry(&space, 4.0, 2.0, Some(48)).unwrap();
    multi_matches(space, g, "cone");
}

#[test]
fn a_missing_gpu_ordinal_is_a_clean_error() {
    let n = gpus().len();
    let space = volume_2d();
    let geometry = parallel_beam_geometry(&space, Some(10)).unwrap();
    let missing = Device::Cuda(n);
    assert!(matches!(
        MultiDeviceRayTransform::<f32>::new(
            space.desc(),
            geometry.clone(),
            CpuOptions::default(),
            &[Device::Cuda(0), missing]
        ),
        Err(Error::CudaUnavailable(_))
    ));
    let lin: LinFactory<f32> =
        RayTransform::factory(space.desc(), geometry, CpuOptions::default()).unwrap();
    let op = DataParallel::new(lin, &[Device::Cuda(0), missing], 2).unwrap();
    assert!(matches!(
        op.apply(&op.domain().zero().unwrap()),
        Err(Error::CudaUnavailable(_))
    ));
}
