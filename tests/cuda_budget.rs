//! The CUDA ray transform under a memory budget, on a real GPU: host-resident data computed in
//! pieces (volume slabs × view groups) equal the whole transform to 1e-6 ([`PIECES_TOL`]) and
//! keep the adjoint exact for every geometry kind; so does a device volume whose data stream
//! through host memory; budgets too small for any piece, and device memory that runs out, are
//! errors; 10⁴ calls leave the device memory where the first left it. These tests FAIL (they do
//! not skip) without a GPU. They run under any number of test threads: the memory test reads
//! the device's free memory and takes [`common::gpu_alone`], the others [`common::gpu_shared`].
#![cfg(feature = "cuda")]

mod common;

use rodl::tomo::{Backend, Geometry, RayTransform};
use rodl::{check_adjoint, Device, Error, LinearOperator, Operator, Space};

const SEED: u64 = 20_261_201;

/// Relative L2 tolerance of pieces against the whole transform (the 1e-6). A slab's
/// kernels work in the whole grid's frame (its corner and the slab's first cell), so its rays,
/// taps and weights are the whole transform's bit for bit; only the order of the additions
/// differs (the forward's partial sums per slab, the transpose's atomics). On the CPU stand-in
/// of the kernels (`tools/kernel-harness/cpu`): ≤ 2e-7 for every geometry kind, against
/// 0.6–1.8e-6 when a slab formed its coordinates from its own corner (2.6e-6 measured on an
/// H200 for par2d_64 in 5 × 7 pieces before).
const PIECES_TOL: f64 = 1e-6;
const GPU: Device = Device::Cuda(0);

/// ‖a − b‖ / ‖b‖ and max |a − b| / max |b|.
fn errors(a: &[f32], b: &[f32]) -> (f64, f64) {
    let num: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
    let den: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    let dmax = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() as f64)
        .fold(0.0, f64::max);
    let bmax = b.iter().map(|y| y.abs() as f64).fold(0.0, f64::max);
    ((num / den).sqrt(), dmax / bmax)
}

/// Bytes of the volume and of the data of a case (f32).
fn sizes(space: &Space<f32>, g: &Geometry) -> (u64, u64) {
    let vol: usize = space.shape().unwrap().iter().product();
    let data: usize = g.data_shape().iter().product();
    (4 * vol as u64, 4 * data as u64)
}

/// A `div`-th of the bytes of a case's volume and data.
fn budget_for(case: &str, div: u64) -> u64 {
    let s = common::odl_case(case);
    let (vol, data) = sizes(
        &s.volume.space::<f32>().unwrap(),
        &s.geometry.build().unwrap(),
    );
    (vol + data) / div
}

/// The whole (device-resident) transform and the host-data one with `budget` bytes.
fn pair(case: &str, budget: Option<u64>) -> (Space<f32>, RayTransform<f32>, RayTransform<f32>) {
    let s = common::odl_case(case);
    let host = s.volume.space::<f32>().unwrap();
    let g = s.geometry.build().unwrap();
    let whole =
        RayTransform::new(host.with_device(GPU).unwrap(), g.clone(), Backend::cuda(0)).unwrap();
    let backend = match budget {
        Some(b) => Backend::cuda_with_budget(0, b),
        None => Backend::cuda(0),
    };
    let pieces = RayTransform::new(host.clone(), g, backend).unwrap();
    assert_eq!(pieces.range().device(), Device::Cpu);
    (host, whole, pieces)
}

/// The pieced transform against the whole one on random data: (forward, adjoint) errors.
fn compare(
    host: &Space<f32>,
    whole: &RayTransform<f32>,
    pieces: &RayTransform<f32>,
) -> ((f64, f64), (f64, f64)) {
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(SEED);
    let x = host.random_normal(&mut rng).unwrap();
    let y = pieces.range().random_normal(&mut rng).unwrap();
    let a = pieces.apply(&x).unwrap();
    let b = whole
        .apply(&x.to_device(GPU).unwrap())
        .unwrap()
        .to_host()
        .unwrap();
    let ef = errors(a.as_slice().unwrap(), b.as_slice().unwrap());
    let c = pieces.adjoint().unwrap().apply(&y).unwrap();
    let d = whole
        .adjoint()
        .unwrap()
        .apply(&y.to_device(GPU).unwrap())
        .unwrap()
        .to_host()
        .unwrap();
    let ea = errors(c.as_slice().unwrap(), d.as_slice().unwrap());
    (ef, ea)
}

#[test]
fn pieces_equal_the_whole_transform_for_every_geometry() {
    let _gpu = common::gpu_shared();
    // Under a sanitizer the cases may be shared out among processes (`RODL_TEST_SHARD`).
    for &case in common::shard(&common::ODL_CASES) {
        // From a budget that forces a few pieces down to one of many small ones.
        // Under a sanitizer the largest budget alone: a few pieces still run every piece kernel
        // and copy, where the smallest one's many pieces ran past 450 s per geometry under
        // racecheck (one H100, 2026-12-07).
        for &div in common::sized(&[2u64, 5, 12][..], &[2][..]) {
            let budget = budget_for(case, div);
            let (host, whole, pieces) = pair(case, Some(budget));
            let layout = pieces.pieces().unwrap();
            let (slabs, groups) = (&layout.slabs, &layout.view_groups);
            assert!(layout.count() > 1, "{case} /{div}: one piece");
            // 3D slabs lie along the rotation axis (each seen by a band of detector rows).
            let ndim = host.shape().unwrap().len();
            if slabs.len() > 1 {
                assert_eq!(layout.slab_axis, if ndim == 3 { 2 } else { 0 }, "{case}");
            }
            let (ef, ea) = compare(&host, &whole, &pieces);
            let adj = check_adjoint(&pieces, common::sized(3, 1), 7)
                .unwrap()
                .max_rel_error;
            eprintln!(
                "{case} budget {budget} B: {} slabs (axis {}) × {} groups; forward rel {:.2e} (max {:.2e}), \
                 adjoint rel {:.2e} (max {:.2e}), adjoint identity {adj:.2e}",
                slabs.len(),
                layout.slab_axis,
                groups.len(),
                ef.0,
                ef.1,
                ea.0,
                ea.1
            );
            // Slabs and view groups set their rays up as the whole transform does (only the
            // order of the additions differs).
            assert!(
                ef.0 <= PIECES_TOL && ea.0 <= PIECES_TOL,
                "{case} /{div}: {ef:?} {ea:?}"
            );
            assert!(adj <= 1e-5, "{case} /{div}: adjoint identity {adj}");
        }
    }
}

#[test]
fn host_data_within_the_default_budget_is_one_slab() {
    let _gpu = common::gpu_shared();
    for case in common::ODL_CASES {
        let (host, whole, pieces) = pair(case, None);
        let layout = pieces.pieces().unwrap();
        let (slabs, groups) = (&layout.slabs, &layout.view_groups);
        assert_eq!(slabs.len(), 1, "{case}");
        let ndim = host.shape().unwrap().len();
        assert_eq!(groups.len(), if ndim == 3 { 4 } else { 1 }, "{case}");
        let (ef, ea) = compare(&host, &whole, &pieces);
        assert!(
            ef.0 <= PIECES_TOL && ea.0 <= PIECES_TOL,
            "{case}: {ef:?} {ea:?}"
        );
    }
}

#[test]
fn budgets_without_room_for_a_piece_are_out_of_memory_errors() {
    let _gpu = common::gpu_shared();
    let s = common::odl_case("cone3d_32");
    let host = s.volume.space::<f32>().unwrap();
    let g = s.geometry.build().unwrap();
    // One slice of 32 × 32 values and one view of 64 × 48, twice over, need ~33 kB.
    match RayTransform::new(host, g, Backend::cuda_with_budget(0, 20_000)) {
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
            assert_eq!(*limit, 20_000);
            assert!(*bytes > 20_000, "{e}");
            assert_eq!(*device, GPU);
        }
        Err(e) => panic!("expected an out-of-memory error, got {e}"),
        Ok(_) => panic!("expected an out-of-memory error, got a transform"),
    }
}

#[test]
fn device_memory_running_out_in_a_transform_is_an_error() {
    let _gpu = common::gpu_alone();
    // A device-resident volume of 64³ with 1000 views of 8192 × 8192 cells: 268 GB of data,
    // more than any GPU holds.
    let space = rodl::uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[64, 64, 64])
        .unwrap()
        .with_device(GPU)
        .unwrap();
    let angles = rodl::UniformPartition::new(&[0.0], &[std::f64::consts::PI], &[1000]).unwrap();
    let det = rodl::UniformPartition::new(&[-2.0, -2.0], &[2.0, 2.0], &[8192, 8192]).unwrap();
    let g = Geometry::parallel_3d(&angles, &det, [0.0, 0.0, 1.0], [0.0, 0.0]).unwrap();
    let bytes_of_data = 4 * 1000 * 8192 * 8192;
    let x = space.one().unwrap();
    // A budget beyond the card keeps the data on the device: allocating them runs out there.
    let ray = RayTransform::new(
        space.clone(),
        g.clone(),
        Backend::cuda_with_budget(0, u64::MAX),
    )
    .unwrap();
    assert_eq!(ray.range().device(), GPU);
    match ray.apply(&x) {
        Err(Error::OutOfMemory { device, bytes, .. }) => {
            assert_eq!(device, GPU);
            assert_eq!(bytes, bytes_of_data);
        }
        Err(e) => panic!("expected an out-of-memory error, got {e}"),
        Ok(_) => panic!("expected an out-of-memory error"),
    }
    // The default budget (the free memory) puts the data on the host, where the host-memory
    // limit refuses them before anything is allocated.
    let ray = RayTransform::new(space.clone(), g, Backend::cuda(0)).unwrap();
    assert_eq!(ray.range().device(), Device::Cpu);
    match ray.apply(&x) {
        Err(Error::OutOfMemory { device, .. }) => assert_eq!(device, Device::Cpu),
        Err(e) => panic!("expected an out-of-memory error, got {e}"),
        Ok(_) => panic!("expected an out-of-memory error"),
    }
    // The device stays usable, its memory given back.
    let (host, whole, pieces) = pair("par2d_64", Some(budget_for("par2d_64", 5)));
    let (ef, ea) = compare(&host, &whole, &pieces);
    assert!(ef.0 <= PIECES_TOL && ea.0 <= PIECES_TOL, "{ef:?} {ea:?}");
    let (free, total) = GPU.memory_info().unwrap();
    assert!(
        free > total / 2,
        "free {free} of {total} B after the failed allocation"
    );
}

/// Runs 10⁴ forward and adjoint calls and returns the device's free memory after the first
/// and after the last pair.
fn free_memory_over_calls(x: &rodl::Element<f32>, ray: &RayTransform<f32>) -> (u64, u64) {
    let adj = ray.adjoint().unwrap();
    let mut y = ray.range().zero().unwrap();
    let mut z = ray.domain().zero().unwrap();
    let mut after_first = 0;
    for i in 0..10_000 {
        ray.apply_into(x, &mut y).unwrap();
        adj.apply_into(&y, &mut z).unwrap();
        if i == 0 {
            GPU.synchronize().unwrap();
            after_first = GPU.memory_info().unwrap().0;
        }
    }
    GPU.synchronize().unwrap();
    (after_first, GPU.memory_info().unwrap().0)
}

#[test]
fn device_memory_stays_flat_over_ten_thousand_calls() {
    let _gpu = common::gpu_alone();
    for case in ["par2d_64", "cone3d_32"] {
        // Device-resident data.
        let (host, whole, pieces) = pair(case, Some(budget_for(case, 5)));
        let x = host.one().unwrap();
        let (first, last) = free_memory_over_calls(&x.to_device(GPU).unwrap(), &whole);
        eprintln!("{case} device data: free {first} B after the first call, {last} B after 10^4");
        assert_eq!(first, last, "{case}: device data");
        // Host data in pieces.
        let layout = pieces.pieces().unwrap();
        let (slabs, groups) = (&layout.slabs, &layout.view_groups);
        assert!(layout.count() > 1);
        let (first, last) = free_memory_over_calls(&x, &pieces);
        eprintln!(
            "{case} host data in {} × {} pieces: free {first} B after the first call, {last} B \
             after 10^4",
            slabs.len(),
            groups.len()
        );
        assert_eq!(first, last, "{case}: host data");
    }
}

#[test]
fn a_device_volume_with_data_beyond_the_budget_gets_a_host_range() {
    let _gpu = common::gpu_shared();
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(SEED);
    for case in common::ODL_CASES {
        let s = common::odl_case(case);
        let host = s.volume.space::<f32>().unwrap();
        let g = s.geometry.build().unwrap();
        let (_, data) = sizes(&host, &g);
        let gpu = host.with_device(GPU).unwrap();
        let whole = RayTransform::new(gpu.clone(), g.clone(), Backend::cuda(0)).unwrap();
        let mixed =
            RayTransform::new(gpu.clone(), g, Backend::cuda_with_budget(0, data / 3)).unwrap();
        assert_eq!(mixed.domain().device(), GPU);
        assert_eq!(mixed.range().device(), Device::Cpu, "{case}");
        let layout = mixed.pieces().unwrap();
        assert_eq!(layout.slabs.len(), 1, "{case}");
        assert!(layout.view_groups.len() >= 2, "{case}");
        let x = gpu.random_normal(&mut rng).unwrap();
        let y = mixed.range().random_normal(&mut rng).unwrap();
        let a = mixed.apply(&x).unwrap();
        let b = whole.apply(&x).unwrap().to_host().unwrap();
        let ef = errors(a.as_slice().unwrap(), b.as_slice().unwrap());
        let c = mixed
            .adjoint()
            .unwrap()
            .apply(&y)
            .unwrap()
            .to_host()
            .unwrap();
        let d = whole
            .adjoint()
            .unwrap()
            .apply(&y.to_device(GPU).unwrap())
            .unwrap()
            .to_host()
            .unwrap();
        let ea = errors(c.as_slice().unwrap(), d.as_slice().unwrap());
        let adj = check_adjoint(&mixed, 3, 7).unwrap().max_rel_error;
        eprintln!(
            "{case} device volume, host data in {} groups: forward rel {:.2e}, adjoint rel \
             {:.2e}, adjoint identity {adj:.2e}",
            layout.view_groups.len(),
            ef.0,
            ea.0
        );
        assert!(
            ef.0 <= PIECES_TOL && ea.0 <= PIECES_TOL,
            "{case}: {ef:?} {ea:?}"
        );
        assert!(adj <= 1e-5, "{case}: adjoint identity {adj}");
    }
}

/// A factory carries the CUDA options for every GPU it builds for: a replica built with a
/// budget below its data gets a host range (as `RayTransform::new` with that budget does),
/// and one built with the default options keeps its data on the device.
#[test]
fn a_factory_applies_its_cuda_budget_to_each_replica() {
    use rodl::factory::SpaceDescExt;
    use rodl::tomo::{BackendOptions, CpuOptions};
    let _gpu = common::gpu_shared();
    let s = common::odl_case("par2d_64");
    let host = s.volume.space::<f32>().unwrap();
    let g = s.geometry.build().unwrap();
    let (_, data) = sizes(&host, &g);
    let tight = BackendOptions::from(CpuOptions::default()).with_cuda_memory_budget(data / 3);
    let f = RayTransform::<f32>::factory(host.desc(), g.clone(), tight).unwrap();
    let replica = f.build(GPU).unwrap();
    assert_eq!(replica.domain().device(), GPU);
    assert_eq!(replica.range().device(), Device::Cpu);
    let f = RayTransform::<f32>::factory(host.desc(), g, CpuOptions::default()).unwrap();
    assert_eq!(f.build(GPU).unwrap().range().device(), GPU);
}
