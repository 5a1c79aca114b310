//! The CUDA ray transform on a real GPU: agreement with the CPU projector for every geometry
//! kind, exact adjointness on device-resident spaces, host-space round trips, device checks and
//! 64-bit indexing. These tests FAIL (they do not skip) without a GPU.
#![cfg(feature = "cuda")]

mod common;

use rodl::tomo::{Backend, Geometry, RayTransform};
use std::sync::Arc;

use rodl::{
    check_adjoint, uniform_discr, Device, LinOp, LinearOperator, LinearOperatorExt, Operator,
    Space, UniformPartition,
};

/// Seed of the random inputs (fixed, so that a failure replays).
const SEED: u64 = 20_260_101;

fn rel(a: &[f32], b: &[f32]) -> f64 {
    let num: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
    let den: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    (num / den).sqrt()
}

#[test]
fn cuda_matches_cpu_for_every_geometry() {
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(SEED);
    for case in common::ODL_CASES {
        let s = common::odl_case(case);
        let host = s.volume.space::<f32>().unwrap();
        let gpu = host.with_device(Device::Cuda(0)).unwrap();
        let g = s.geometry.build().unwrap();
        let cpu_op = RayTransform::new(host.clone(), g.clone(), Backend::default()).unwrap();
        let gpu_op = RayTransform::new(gpu.clone(), g, Backend::cuda(0)).unwrap();
        assert_eq!(gpu_op.range().device(), Device::Cuda(0));
        let x = host.random_normal(&mut rng).unwrap();
        let y = cpu_op.range().random_normal(&mut rng).unwrap();
        let fx_cpu = cpu_op.apply(&x).unwrap();
        let fx_gpu = gpu_op
            .apply(&x.to_device(Device::Cuda(0)).unwrap())
            .unwrap();
        assert_eq!(fx_gpu.device(), Device::Cuda(0));
        let ef = rel(
            fx_gpu.to_host().unwrap().as_slice().unwrap(),
            fx_cpu.as_slice().unwrap(),
        );
        let at_cpu = cpu_op.adjoint().unwrap().apply(&y).unwrap();
        let at_gpu = gpu_op
            .adjoint()
            .unwrap()
            .apply(&y.to_device(Device::Cuda(0)).unwrap())
            .unwrap();
        let ea = rel(
            at_gpu.to_host().unwrap().as_slice().unwrap(),
            at_cpu.as_slice().unwrap(),
        );
        eprintln!("{case}: CPU vs CUDA forward {ef:.2e}, adjoint {ea:.2e}");
        assert!(
            ef <= 1e-5 && ea <= 1e-5,
            "{case}: forward {ef}, adjoint {ea}"
        );
    }
}

#[test]
fn cuda_adjoint_is_exact_on_device_spaces() {
    for case in common::ODL_CASES {
        let s = common::odl_case(case);
        let gpu = common::odl_volume_on_gpu(&s);
        let op = RayTransform::new(gpu, s.geometry.build().unwrap(), Backend::cuda(0)).unwrap();
        let r = check_adjoint(&op, common::sized(3, 1), 11).unwrap();
        eprintln!(
            "{case}: CUDA adjoint relative error {:.2e}",
            r.max_rel_error
        );
        assert!(r.max_rel_error <= 1e-5, "{case}: {}", r.max_rel_error);
    }
}

#[test]
fn host_spaces_with_cuda_backend_copy_in_and_out() {
    let s = common::odl_case("cone3d_32");
    let host = s.volume.space::<f32>().unwrap();
    let g = s.geometry.build().unwrap();
    let cpu_op = RayTransform::new(host.clone(), g.clone(), Backend::default()).unwrap();
    let gpu_op = RayTransform::new(host.clone(), g, Backend::cuda(0)).unwrap();
    assert_eq!(gpu_op.range().device(), Device::Cpu);
    let x = host.one().unwrap();
    let a = gpu_op.apply(&x).unwrap();
    let b = cpu_op.apply(&x).unwrap();
    assert!(rel(a.as_slice().unwrap(), b.as_slice().unwrap()) <= 1e-5);
}

#[test]
fn device_mismatch_and_f64_are_errors() {
    let s = common::odl_case("par2d_64");
    let gpu = common::odl_volume_on_gpu(&s);
    let g = s.geometry.build().unwrap();
    assert!(RayTransform::new(gpu.clone(), g.clone(), Backend::cuda(1)).is_err());
    assert!(RayTransform::new(gpu, g.clone(), Backend::default()).is_err());
    let host64 = s.volume.space::<f64>().unwrap();
    assert!(RayTransform::new(host64, g.clone(), Backend::cuda(0)).is_err());
    assert!(RayTransform::new(s.volume.space::<f32>().unwrap(), g, Backend::cuda(4096)).is_err());
}

/// A volume of more than 2³¹ voxels: 64-bit indexing in both directions.
#[test]
fn more_than_2_pow_31_voxels() {
    let n = [2600usize, 2000, 500]; // 2.6e9 voxels (10.4 GB); x index > 2147 is past 2³¹
    let space: Space<f32> = uniform_discr(&[-1.0, -1.0, -0.25], &[1.0, 1.0, 0.25], &n)
        .unwrap()
        .with_device(Device::Cuda(0))
        .unwrap();
    // One view at angle 0 (the midpoint of [-0.01, 0.01]): rays along +y.
    let angles = UniformPartition::new(&[-0.01], &[0.01], &[1]).unwrap();
    let det = UniformPartition::new(&[-1.5, -0.3], &[1.5, 0.3], &[64, 16]).unwrap();
    let g = Geometry::parallel_3d(&angles, &det, [0.0, 0.0, 1.0], [0.0, 0.0]).unwrap();
    let op = RayTransform::new(space.clone(), g, Backend::cuda(0)).unwrap();
    let y = op
        .apply(&space.one().unwrap())
        .unwrap()
        .to_host()
        .unwrap()
        .into_array()
        .unwrap();
    // Rays along y with |x| < 0.95 and |z| < 0.25 cross the box over its full length 2, also
    // those at x > 0.66 whose voxels lie past index 2³¹.
    for iu in 12..=51 {
        for iv in 3..=12 {
            let c = y[[0, iu, iv]];
            assert!((c - 2.0).abs() < 1e-3, "line integral {c} at ({iu}, {iv})");
        }
    }
    // The back-projection of ones is symmetric in x, and voxels past 2³¹ are written.
    let ones = op.range().one().unwrap();
    let bp = op.adjoint().unwrap().apply(&ones).unwrap();
    drop(ones);
    let host = bp.to_host().unwrap().into_array().unwrap();
    drop(bp);
    let flat = host.as_slice().unwrap();
    let half = n[0] / 2 * n[1] * n[2];
    let left: f64 = flat[..half].iter().map(|&v| v as f64).sum();
    let right: f64 = flat[half..].iter().map(|&v| v as f64).sum();
    let past = flat[1usize << 31..].iter().filter(|&&v| v != 0.0).count();
    eprintln!(
        "back-projection: left {left:.6e}, right {right:.6e}, non-zero voxels past 2^31: {past}"
    );
    assert!(
        left > 0.0 && ((left - right) / left).abs() < 1e-5,
        "left {left}, right {right}"
    );
    assert!(past > 0);
}

/// CUDA against the CPU projector (forward and adjoint, relative error at most 1e-5) and the
/// adjoint identity on device spaces, for the geometry `g` on the host space `host`.
fn agrees_with_cpu(what: &str, host: &Space<f32>, g: Geometry) {
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(SEED);
    let gpu = host.with_device(Device::Cuda(0)).unwrap();
    let cpu_op = RayTransform::new(host.clone(), g.clone(), Backend::default()).unwrap();
    let gpu_op = RayTransform::new(gpu, g, Backend::cuda(0)).unwrap();
    let x = host.random_normal(&mut rng).unwrap();
    let y = cpu_op.range().random_normal(&mut rng).unwrap();
    let fx = gpu_op
        .apply(&x.to_device(Device::Cuda(0)).unwrap())
        .unwrap()
        .to_host()
        .unwrap();
    let ef = rel(
        fx.as_slice().unwrap(),
        cpu_op.apply(&x).unwrap().as_slice().unwrap(),
    );
    let aty = gpu_op
        .adjoint()
        .unwrap()
        .apply(&y.to_device(Device::Cuda(0)).unwrap())
        .unwrap()
        .to_host()
        .unwrap();
    let ea = rel(
        aty.as_slice().unwrap(),
        cpu_op
            .adjoint()
            .unwrap()
            .apply(&y)
            .unwrap()
            .as_slice()
            .unwrap(),
    );
    let adj = check_adjoint(&gpu_op, 2, 5).unwrap().max_rel_error;
    eprintln!("{what}: CPU vs CUDA forward {ef:.2e}, adjoint {ea:.2e}; adjoint identity {adj:.2e}");
    assert!(
        ef <= 1e-5 && ea <= 1e-5 && adj <= 1e-5,
        "{what}: forward {ef}, adjoint {ea}, adjoint identity {adj}"
    );
}

/// The shared-memory 2D forward off the benchmark shape: more than 128 planes (partial sums of
/// several blocks added atomically), a non-square grid, view and detector counts that are not
/// multiples of the block's 8 × 32 rays, detector cells much coarser than the voxels (taps
/// outside the staged window, read from the volume), fan beams (rays of both axes in a block).
#[test]
fn cuda_2d_slab_forward_matches_cpu_off_the_benchmark_shape() {
    let host: Space<f32> = uniform_discr(&[-1.0, -0.75], &[1.0, 0.75], &[200, 150]).unwrap();
    let angles = UniformPartition::new(&[0.0], &[std::f64::consts::PI], &[45]).unwrap();
    let fine = UniformPartition::new(&[-1.3], &[1.3], &[299]).unwrap();
    let coarse = UniformPartition::new(&[-3.0], &[3.0], &[41]).unwrap();
    let g = Geometry::parallel_2d_offset(&angles, &fine, 0.05).unwrap();
    agrees_with_cpu("parallel 2D, fine detector", &host, g);
    let g = Geometry::parallel_2d(&angles, &coarse).unwrap();
    agrees_with_cpu("parallel 2D, coarse detector", &host, g);
    let full = UniformPartition::new(&[0.0], &[2.0 * std::f64::consts::PI], &[37]).unwrap();
    let fan_det = UniformPartition::new(&[-4.0], &[4.0], &[333]).unwrap();
    let g = Geometry::fan_flat(&full, &fan_det, 1.6, 2.0, 0.1).unwrap();
    agrees_with_cpu("fan 2D", &host, g);
}

/// The warp-aggregated 3D transpose off the benchmark shape: detector row counts that are not
/// multiples of 32 (warps spanning two detector columns or two views), rows finer and coarser
/// than the voxels, more than one segment of 64 planes, a non-cubic grid.
#[test]
fn cuda_3d_warp_transpose_matches_cpu_off_the_benchmark_shape() {
    let host: Space<f32> =
        uniform_discr(&[-1.0, -0.6, -0.7], &[1.0, 0.6, 0.7], &[72, 40, 48]).unwrap();
    let angles = UniformPartition::new(&[0.0], &[2.0 * std::f64::consts::PI], &[13]).unwrap();
    let det = UniformPartition::new(&[-2.2, -1.5], &[2.2, 1.5], &[45, 37]).unwrap();
    let g = Geometry::cone_flat(&angles, &det, 3.0, 2.0, 0.0, [0.0, 0.0, 1.0], [0.0, 0.0]).unwrap();
    agrees_with_cpu("cone, 45 x 37 detector", &host, g);
    let fine = UniformPartition::new(&[-1.6, -1.2], &[1.6, 1.2], &[51, 83]).unwrap();
    let g = Geometry::parallel_3d(&angles, &fine, [0.0, 0.3, 1.0], [0.02, -0.01]).unwrap();
    agrees_with_cpu("parallel 3D, tilted axis, 51 x 83 detector", &host, g);
}

/// The 3D transpose's shared-profile path (warps of 32 detector rows of one column whose rays
/// share their in-plane track, merged in shared memory and added with vector atomics) off the
/// benchmark shape: more than one segment of 128 planes, a non-cubic grid, rows 1.04 to 1.8
/// voxels apart at the planes (and, for the wider detector, some warps more than the profile
/// holds, which take the other path), a helical cone, an untilted parallel beam (rows along the
/// axis share their track), and a grid whose contiguous axis is not a multiple of 4 (no vector
/// atomics: the other path everywhere).
#[test]
fn cuda_3d_profile_transpose_matches_cpu_off_the_benchmark_shape() {
    let host: Space<f32> =
        uniform_discr(&[-1.0, -0.8, -0.6], &[1.0, 0.8, 0.6], &[160, 64, 48]).unwrap();
    // Under a sanitizer 3 views: the same shapes (and paths), fewer rays.
    let views = common::sized(11, 3);
    let full = UniformPartition::new(&[0.0], &[2.0 * std::f64::consts::PI], &[views]).unwrap();
    let det = UniformPartition::new(&[-2.6, -1.792], &[2.6, 1.792], &[52, 64]).unwrap();
    let g = Geometry::cone_flat(&full, &det, 5.0, 3.0, 0.0, [0.0, 0.0, 1.0], [0.0, 0.0]).unwrap();
    agrees_with_cpu("cone, 52 x 64 detector, 160 x 64 x 48 grid", &host, g);
    let wide = UniformPartition::new(&[-2.6, -2.4], &[2.6, 2.4], &[52, 64]).unwrap();
    let g =
        Geometry::cone_flat(&full, &wide, 5.0, 3.0, 0.3, [0.0, 0.0, 1.0], [0.1, -0.05]).unwrap();
    agrees_with_cpu("helical cone, 52 x 64 detector", &host, g);
    let par = UniformPartition::new(&[-1.4, -0.7], &[1.4, 0.7], &[41, 32]).unwrap();
    let g = Geometry::parallel_3d(&full, &par, [0.0, 0.0, 1.0], [0.0, 0.0]).unwrap();
    agrees_with_cpu("parallel 3D, axis z, 41 x 32 detector", &host, g);
    let odd: Space<f32> =
        uniform_discr(&[-1.0, -0.8, -0.6], &[1.0, 0.8, 0.6], &[40, 32, 50]).unwrap();
    let g = Geometry::cone_flat(&full, &det, 5.0, 3.0, 0.0, [0.0, 0.0, 1.0], [0.0, 0.0]).unwrap();
    agrees_with_cpu("cone, 50 cells along the contiguous axis", &odd, g);
}

/// `batch` entries through the batched form against one entry at a time through `apply`.
fn batched_matches_entries(op: &dyn Operator<f32>, batch: usize, seed: u64) -> f64 {
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed);
    let (dom, ran) = (op.domain(), op.range());
    let mut shape = vec![batch];
    shape.extend_from_slice(dom.shape().unwrap());
    let xs = rodl::rn::<f32>(&shape)
        .unwrap()
        .random_normal(&mut rng)
        .unwrap();
    let mut out_shape = vec![batch];
    out_shape.extend_from_slice(ran.shape().unwrap());
    let out_space = rodl::rn::<f32>(&out_shape)
        .unwrap()
        .with_device(Device::Cuda(0))
        .unwrap();
    let mut out = out_space.zero().unwrap();
    let b = op.batched().expect("a batched form");
    b.apply_batch(&xs.to_device(Device::Cuda(0)).unwrap(), &mut out, batch)
        .unwrap();
    let got = out.to_host().unwrap();
    let got = got.as_slice().unwrap();
    let xs = xs.as_slice().unwrap();
    let (n_in, n_out) = (dom.size(), ran.size());
    let host_dom = dom.with_device(Device::Cpu).unwrap();
    let mut worst = 0.0f64;
    for k in 0..batch {
        let x = host_dom
            .element_from_vec(xs[k * n_in..(k + 1) * n_in].to_vec())
            .unwrap()
            .to_device(Device::Cuda(0))
            .unwrap();
        let want = op.apply(&x).unwrap().to_host().unwrap();
        worst = worst.max(rel(
            &got[k * n_out..(k + 1) * n_out],
            want.as_slice().unwrap(),
        ));
    }
    worst
}

#[test]
fn batched_2d_parallel_beam_matches_one_entry_at_a_time() {
    let part = |lo: f64, hi: f64, n: usize| UniformPartition::new(&[lo], &[hi], &[n]).unwrap();
    // Sizes off the 16- and 32-pixel tiles, detectors finer and coarser than the cells, few and
    // many views (the views split over blocks or not); batches of one launch and of two (11 > 8
    // entries per launch of the batched transpose).
    for (k, &(n0, n1, views, det, w)) in [
        (33, 47, 31, 41, 3.0),
        (64, 64, 90, 96, 2.9),
        (17, 70, 8, 23, 2.0),
        (128, 96, 200, 60, 3.2),
    ]
    .iter()
    .enumerate()
    {
        let host = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[n0, n1]).unwrap();
        let gpu = host.with_device(Device::Cuda(0)).unwrap();
        let g = Geometry::parallel_2d(
            &part(0.0, std::f64::consts::PI, views),
            &part(-w / 2.0, w / 2.0, det),
        )
        .unwrap();
        let ray: LinOp<f32> = Arc::new(RayTransform::new(gpu, g, Backend::cuda(0)).unwrap());
        let adj = ray.adjoint().unwrap();
        let scaled_adj = adj.scaled(0.25).unwrap();
        // The normal operator: a composition of two batched forms through a batched sinogram.
        let normal = adj.compose(&ray).unwrap();
        for batch in [1, 3, 8, 11] {
            let seed = SEED + (10 * k + batch) as u64;
            let ef = batched_matches_entries(ray.as_ref(), batch, seed);
            let ea = batched_matches_entries(adj.as_ref(), batch, seed + 1);
            let es = batched_matches_entries(scaled_adj.as_ref(), batch, seed + 2);
            let en = batched_matches_entries(normal.as_ref(), batch, seed + 3);
            assert!(
                ef < 1e-6 && ea < 1e-6 && es < 1e-6 && en < 1e-6,
                "{n0}x{n1}, {views} views x {det}, batch {batch}: {ef:.1e} {ea:.1e} {es:.1e} {en:.1e}"
            );
        }
    }
}

#[test]
fn batched_form_checks_its_tensors_and_exists_only_where_it_is_one_launch() {
    let s = common::odl_case("par2d_64");
    let gpu = common::odl_volume_on_gpu(&s);
    let ray =
        RayTransform::new(gpu.clone(), s.geometry.build().unwrap(), Backend::cuda(0)).unwrap();
    let b = ray
        .batched()
        .expect("2D parallel beams have a batched form");
    assert!(b.max_batch() > 100, "{}", b.max_batch());
    // Wrong batch sizes and shapes are errors.
    let x = gpu.zero().unwrap();
    let mut y = ray.range().zero().unwrap();
    assert!(b.apply_batch(&x, &mut y, 1).is_err(), "no batch axis");
    let mut shape = vec![2];
    shape.extend_from_slice(gpu.shape().unwrap());
    let xs = rodl::rn::<f32>(&shape)
        .unwrap()
        .with_device(Device::Cuda(0))
        .unwrap()
        .zero()
        .unwrap();
    let mut ys = ray.range().zero().unwrap();
    assert!(
        b.apply_batch(&xs, &mut ys, 2).is_err(),
        "output without batch axis"
    );
    assert!(b.apply_batch(&xs, &mut ys, 0).is_err());
    // 3D detectors of fewer than 32 rows (helical_32: 24) go one entry at a time (their
    // forward is not the chunked kernel).
    let s = common::odl_case("helical_32");
    let gpu = common::odl_volume_on_gpu(&s);
    let op = RayTransform::new(gpu, s.geometry.build().unwrap(), Backend::cuda(0)).unwrap();
    assert!(op.batched().is_none());
    assert!(op.adjoint().unwrap().batched().is_none());
}

/// The ODL case `case`'s ray transform and its adjoint through their batched forms against one
/// entry at a time, for each of `batches` (relative L2 within 1e-6).
fn batched_case_matches_entries(case: &str, batches: &[usize], seed: u64) {
    let s = common::odl_case(case);
    let gpu = common::odl_volume_on_gpu(&s);
    let ray = RayTransform::new(gpu, s.geometry.build().unwrap(), Backend::cuda(0)).unwrap();
    let adj = ray.adjoint().unwrap();
    assert!(ray.batched().is_some() && adj.batched().is_some(), "{case}");
    for &batch in batches {
        let ef = batched_matches_entries(&ray, batch, seed + 2 * batch as u64);
        let ea = batched_matches_entries(adj.as_ref(), batch, seed + 2 * batch as u64 + 1);
        assert!(
            ef < 1e-6 && ea < 1e-6,
            "{case}, batch {batch}: {ef:.1e} {ea:.1e}"
        );
    }
}

#[test]
fn batched_2d_fan_beam_matches_one_entry_at_a_time() {
    batched_case_matches_entries("fan2d_64", &[1, 3, 8], SEED + 100);
}

#[test]
fn batched_3d_geometries_match_one_entry_at_a_time() {
    // Detectors of 48 and 40 rows: the chunked kernels with a batch axis.
    for case in ["cone3d_32", "par3d_32"] {
        batched_case_matches_entries(case, &[1, 2, 3], SEED + 200);
    }
}

/// Curved detectors (#35) on the GPU against the CPU projector (forward and adjoint within
/// 1e-5, adjoint identity on device spaces): a fan-beam arc off-centre with a flying focal
/// spot, a circular cone with a cylindrical detector, a helical one with a flying focal spot in
/// φ and z, and a spherical detector with its rows off the equator; then host-space data under
/// a budget that splits the transform into pieces, against the device-resident transform.
#[test]
fn cuda_curved_detectors_match_cpu() {
    use std::f64::consts::PI;
    let p = |lo: &[f64], hi: &[f64], n: &[usize]| UniformPartition::new(lo, hi, n).unwrap();
    let plane: Space<f32> = uniform_discr(&[-1.0, -0.8], &[1.0, 0.8], &[96, 80]).unwrap();
    let arc = Geometry::fan_curved(
        &p(&[0.1], &[0.1 + 2.0 * PI], &[41]),
        &p(&[-0.5], &[0.45], &[123]),
        3.0,
        2.5,
        4.5,
        0.05,
    )
    .unwrap()
    .with_src_offsets(&[[0.0, 0.02, 0.0], [0.01, -0.02, 0.0]])
    .unwrap();
    agrees_with_cpu("fan arc, offset, flying focal spot", &plane, arc);
    let vol: Space<f32> =
        uniform_discr(&[-1.0, -0.9, -0.8], &[1.0, 0.9, 0.8], &[48, 40, 36]).unwrap();
    let full = p(&[0.0], &[2.0 * PI], &[19]);
    let det = p(&[-0.45, -1.3], &[0.45, 1.3], &[70, 45]);
    let cone = |angles: &UniformPartition, radii, pitch, offset| {
        Geometry::cone_curved(
            angles,
            &det,
            4.0,
            3.0,
            radii,
            pitch,
            [0.0, 0.0, 1.0],
            offset,
        )
        .unwrap()
    };
    agrees_with_cpu(
        "cone, cylindrical detector",
        &vol,
        cone(&full, [Some(7.0), None], 0.0, [0.0, 0.0]),
    );
    let helix = cone(
        &p(&[0.0], &[4.0 * PI], &[37]),
        [Some(7.0), None],
        0.6,
        [0.03, -0.05],
    )
    .with_src_offsets(&[[0.0, 0.03, 0.0], [0.0, -0.03, 0.02]])
    .unwrap();
    agrees_with_cpu(
        "helical cone, cylindrical detector, flying focal spot",
        &vol,
        helix.clone(),
    );
    let sdet = p(&[-0.4, -0.2], &[0.4, 0.3], &[64, 40]);
    let sphere = Geometry::cone_curved(
        &full,
        &sdet,
        4.0,
        3.0,
        [Some(7.0), Some(7.0)],
        0.0,
        [0.0, 0.0, 1.0],
        [0.05, 0.1],
    )
    .unwrap();
    agrees_with_cpu("cone, spherical detector off the equator", &vol, sphere);

    // Host data under a small budget (pieces) equal the device-resident transform.
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(SEED);
    let whole = RayTransform::new(
        vol.with_device(Device::Cuda(0)).unwrap(),
        helix.clone(),
        Backend::cuda(0),
    )
    .unwrap();
    let bytes = (vol.size() * 4) as u64;
    let pieces =
        RayTransform::new(vol.clone(), helix, Backend::cuda_with_budget(0, bytes)).unwrap();
    let x = vol.random_normal(&mut rng).unwrap();
    let y = pieces.range().random_normal(&mut rng).unwrap();
    let a = whole
        .apply(&x.to_device(Device::Cuda(0)).unwrap())
        .unwrap()
        .to_host()
        .unwrap();
    let b = pieces.apply(&x).unwrap();
    let ef = rel(b.as_slice().unwrap(), a.as_slice().unwrap());
    let c = whole
        .adjoint()
        .unwrap()
        .apply(&y.to_device(Device::Cuda(0)).unwrap())
        .unwrap()
        .to_host()
        .unwrap();
    let d = pieces.adjoint().unwrap().apply(&y).unwrap();
    let ea = rel(d.as_slice().unwrap(), c.as_slice().unwrap());
    eprintln!("helical cylindrical, host data under a {bytes} B budget: forward {ef:.2e}, adjoint {ea:.2e} against the whole");
    assert!(
        ef <= 1e-6 && ea <= 1e-6,
        "pieces: forward {ef}, adjoint {ea}"
    );
}

/// The bits of a host copy of `e`.
fn bits(e: &rodl::Element<f32>) -> Vec<u32> {
    e.to_host()
        .unwrap()
        .as_slice()
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

/// `CudaOptions::deterministic` (#36): forward and transpose bitwise equal over 20 runs, for
/// 2D parallel (the tables' transposes, view shares summed in order) and fan beams, a cone
/// with at least 32 detector rows (the chunked kernels) and a curved one, device-resident and
/// with host data in pieces; within 1e-6 of the default kernels; batches of the 2D parallel
/// beam bitwise equal to one entry at a time.
#[test]
fn deterministic_results_are_bitwise_reproducible() {
    use rodl::tomo::CudaOptions;
    use std::f64::consts::PI;
    let p = |lo: &[f64], hi: &[f64], n: &[usize]| UniformPartition::new(lo, hi, n).unwrap();
    let det = Backend::Cuda(CudaOptions::new(0).deterministic(true));
    let mut cases: Vec<(String, Space<f32>, Geometry)> = Vec::new();
    for case in ["par2d_64", "fan2d_64", "cone3d_32"] {
        let s = common::odl_case(case);
        cases.push((
            case.into(),
            s.volume.space::<f32>().unwrap(),
            s.geometry.build().unwrap(),
        ));
    }
    // Under a sanitizer 64² and 45 views (still the tables' tile kernels, more than one tile).
    let (n, views, cells) = common::sized((200, 180, 283), (64, 45, 91));
    let plane: Space<f32> = uniform_discr(&[-1.0, -1.0], &[1.0, 1.0], &[n, n]).unwrap();
    let par =
        Geometry::parallel_2d(&p(&[0.0], &[PI], &[views]), &p(&[-1.5], &[1.5], &[cells])).unwrap();
    cases.push((format!("parallel 2D {n}², {views} views"), plane, par));
    let vol: Space<f32> = uniform_discr(&[-1.0; 3], &[1.0; 3], &[40, 40, 40]).unwrap();
    let cyl = Geometry::cone_curved(
        &p(&[0.0], &[2.0 * PI], &[24]),
        &p(&[-0.45, -1.3], &[0.45, 1.3], &[60, 48]),
        4.0,
        3.0,
        [Some(7.0), None],
        0.0,
        [0.0, 0.0, 1.0],
        [0.0, 0.0],
    )
    .unwrap();
    cases.push(("cone, cylindrical detector, 48 rows".into(), vol, cyl));
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(SEED + 300);
    for (name, host, g) in cases {
        let gpu = host.with_device(Device::Cuda(0)).unwrap();
        let op = RayTransform::new(gpu.clone(), g.clone(), det.clone()).unwrap();
        let plain = RayTransform::new(gpu, g.clone(), Backend::cuda(0)).unwrap();
        let x = host
            .random_normal(&mut rng)
            .unwrap()
            .to_device(Device::Cuda(0))
            .unwrap();
        let y = op.range().random_normal(&mut rng).unwrap();
        let (fx, aty) = (
            op.apply(&x).unwrap(),
            op.adjoint().unwrap().apply(&y).unwrap(),
        );
        let (f0, a0) = (bits(&fx), bits(&aty));
        // Under a sanitizer two runs (racecheck instruments every launch: minutes per run).
        for run in 1..common::repeats(common::sized(20, 2)) {
            assert_eq!(
                bits(&op.apply(&x).unwrap()),
                f0,
                "{name}: forward run {run}"
            );
            assert_eq!(
                bits(&op.adjoint().unwrap().apply(&y).unwrap()),
                a0,
                "{name}: transpose run {run}"
            );
        }
        let host_of = |e: &rodl::Element<f32>| e.to_host().unwrap().as_slice().unwrap().to_vec();
        let ef = rel(&host_of(&fx), &host_of(&plain.apply(&x).unwrap()));
        let ea = rel(
            &host_of(&aty),
            &host_of(&plain.adjoint().unwrap().apply(&y).unwrap()),
        );
        let adj = check_adjoint(&op, common::sized(2, 1), 7)
            .unwrap()
            .max_rel_error;
        eprintln!("{name}: deterministic vs default forward {ef:.1e}, transpose {ea:.1e}; adjoint identity {adj:.1e}");
        assert!(
            ef <= 1e-6 && ea <= 1e-6 && adj <= 1e-5,
            "{name}: {ef} {ea} {adj}"
        );
        // Host data in pieces (a budget of a quarter of the volume).
        let budget = (host.size() as u64) * 4 / 4;
        let pieces = RayTransform::new(
            host.clone(),
            g,
            Backend::Cuda(
                CudaOptions::new(0)
                    .with_memory_budget(budget)
                    .deterministic(true),
            ),
        )
        .unwrap();
        let xh = x.to_host().unwrap();
        let yh = y.to_host().unwrap();
        let (pf, pa) = (
            bits(&pieces.apply(&xh).unwrap()),
            bits(&pieces.adjoint().unwrap().apply(&yh).unwrap()),
        );
        for run in 1..common::repeats(common::sized(5, 2)) {
            assert_eq!(
                bits(&pieces.apply(&xh).unwrap()),
                pf,
                "{name}: pieces forward run {run}"
            );
            assert_eq!(
                bits(&pieces.adjoint().unwrap().apply(&yh).unwrap()),
                pa,
                "{name}: pieces transpose run {run}"
            );
        }
        if let (Some(_), Some(_)) = (op.batched(), op.adjoint().unwrap().batched()) {
            for &batch in common::sized(&[2usize, 3, 9][..], &[3][..]) {
                let ef = batched_matches_entries(&op, batch, SEED + batch as u64);
                let ea = batched_matches_entries(
                    op.adjoint().unwrap().as_ref(),
                    batch,
                    SEED + 50 + batch as u64,
                );
                eprintln!("{name}: deterministic batch {batch} vs entries: forward {ef:.1e}, transpose {ea:.1e}");
                assert!(ef == 0.0 && ea == 0.0, "{name}, batch {batch}: {ef} {ea}");
            }
        }
    }
}
