//! The FBP filter and FBP/FDK on a real GPU (device 0) against the host path.
//!
//! Built only with the `cuda` feature. These tests FAIL (they do not skip) when no GPU can be
//! used: run them where there is one. `--nocapture` shows timing figures.
#![cfg(feature = "cuda")]

mod common;

use std::f64::consts::PI;
use std::time::Instant;

use rodl::tomo::phantom::shepp_logan;
use rodl::tomo::{
    cone_beam_geometry, fbp_op, parallel_beam_geometry, Backend, FbpFilter, FbpOptions, FilterType,
    Geometry, GpuFilterMethod, RayTransform,
};
use rodl::{
    check_adjoint, uniform_discr, Device, Element, LinearOperator, Operator, Scalar, Space,
    UniformPartition,
};

const GPU: Device = Device::Cuda(0);

/// max |a − b| / max |b|.
fn rel<T: Scalar>(a: &Element<T>, b: &Element<T>) -> f64 {
    let a = a.to_host().unwrap();
    let b = b.to_host().unwrap();
    let (a, b) = (a.as_slice().unwrap(), b.as_slice().unwrap());
    let num = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x.f64() - y.f64()).abs()));
    let den = b.iter().fold(0.0f64, |m, y| m.max(y.f64().abs()));
    num / den
}

fn part(min: f64, max: f64, n: usize) -> UniformPartition {
    UniformPartition::new(&[min], &[max], &[n]).unwrap()
}

/// The filter's geometries: under a sanitizer with fewer views and detector cells (the same
/// kinds and kernels; the direct convolution's cost grows with the square of a row's length).
fn geometries() -> Vec<(&'static str, Geometry)> {
    let z = |full: usize, small: usize| common::sized(full, small);
    let s2 = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[48, 48]).unwrap();
    let s3 = uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[24, 24, 24]).unwrap();
    let fan_short = Geometry::fan_flat(
        &part(0.2, 0.2 + PI + 1.2, z(50, 20)),
        &part(-2.5, 2.5, z(77, 33)),
        3.0,
        2.0,
        0.1,
    )
    .unwrap();
    vec![
        (
            "parallel 2D",
            parallel_beam_geometry(&s2, Some(z(40, 12))).unwrap(),
        ),
        ("fan short scan", fan_short),
        (
            "parallel 3D",
            parallel_beam_geometry(&s3, Some(z(20, 8))).unwrap(),
        ),
        (
            "cone",
            cone_beam_geometry(&s3, 4.0, 2.0, Some(z(30, 10))).unwrap(),
        ),
        // Curved detectors (#35): an equiangular fan arc and a cylindrical cone.
        (
            "fan arc",
            Geometry::fan_curved(
                &part(0.0, 2.0 * PI, z(60, 20)),
                &part(-0.55, 0.55, z(81, 33)),
                3.0,
                2.0,
                5.0,
                0.0,
            )
            .unwrap(),
        ),
        (
            "cone cylindrical",
            Geometry::cone_curved(
                &part(0.0, 2.0 * PI, z(30, 10)),
                &UniformPartition::new(&[-0.5, -1.5], &[0.5, 1.5], &[z(40, 20), z(30, 16)])
                    .unwrap(),
                4.0,
                2.0,
                [Some(6.0), None],
                0.0,
                [0.0, 0.0, 1.0],
                [0.0, 0.0],
            )
            .unwrap(),
        ),
        // Helical FDK: two turns, pitch factor 0.5, flat and cylindrical.
        (
            "helical cone",
            Geometry::cone_flat(
                &part(-2.0 * PI, 2.0 * PI, z(60, 24)),
                &UniformPartition::new(&[-2.5, -1.5], &[2.5, 1.5], &[z(40, 20), z(30, 16)])
                    .unwrap(),
                4.0,
                2.0,
                1.0,
                [0.0, 0.0, 1.0],
                [0.0, 0.0],
            )
            .unwrap(),
        ),
        (
            "helical cylindrical",
            Geometry::cone_curved(
                &part(-2.0 * PI, 2.0 * PI, z(60, 24)),
                &UniformPartition::new(&[-0.5, -1.5], &[0.5, 1.5], &[z(40, 20), z(30, 16)])
                    .unwrap(),
                4.0,
                2.0,
                [Some(6.0), None],
                1.0,
                [0.0, 0.0, 1.0],
                [0.0, 0.0],
            )
            .unwrap(),
        ),
    ]
}

fn filter_matches_host<T: Scalar>(tol: f64) {
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(3);
    for (name, g) in geometries() {
        let host = Space::<T>::from_partition(g.data_partition().clone());
        let gpu = host.with_device(GPU).unwrap();
        for f in [FilterType::RamLak, FilterType::Hann] {
            for padding in [true, false] {
                let o = FbpOptions::new(f).with_padding(padding);
                let fc = FbpFilter::new(host.clone(), &g, &o).unwrap();
                let fg = FbpFilter::new(gpu.clone(), &g, &o).unwrap();
                let y = host.random_normal(&mut rng).unwrap();
                let yg = y.to_device(GPU).unwrap();
                let e = rel(&fg.apply(&yg).unwrap(), &fc.apply(&y).unwrap());
                let ea = rel(
                    &fg.adjoint().unwrap().apply(&yg).unwrap(),
                    &fc.adjoint().unwrap().apply(&y).unwrap(),
                );
                eprintln!(
                    "{name} {f} pad {padding} {}: GPU vs host {e:.1e}, adjoint {ea:.1e}",
                    T::NAME
                );
                assert!(e < tol && ea < tol, "{name} {f} {padding}: {e} {ea}");
            }
        }
    }
}

/// The method these tests expect: cuFFT, unless `RODL_CUFFT` turns it off.
fn expected_method() -> GpuFilterMethod {
    let off = std::env::var("RODL_CUFFT")
        .map(|v| {
            ["off", "0", "no", "false", "direct", "none"]
                .contains(&v.trim().to_lowercase().as_str())
        })
        .unwrap_or(false);
    if off {
        GpuFilterMethod::DirectConvolution
    } else {
        GpuFilterMethod::Fft
    }
}

/// On a GPU machine cuFFT is found (or the run asked for the direct convolution), and host
/// spaces have no GPU method.
#[test]
fn gpu_filter_method_is_the_expected_one() {
    let (_, g) = &geometries()[3];
    let host = Space::<f32>::from_partition(g.data_partition().clone());
    let o = FbpOptions::default();
    assert_eq!(
        FbpFilter::new(host.clone(), g, &o).unwrap().gpu_method(),
        None
    );
    let f = FbpFilter::new(host.with_device(GPU).unwrap(), g, &o).unwrap();
    eprintln!("GPU FBP filter method: {:?}", f.gpu_method());
    assert_eq!(f.gpu_method(), Some(expected_method()));
}

#[test]
fn gpu_filter_matches_the_host_f32() {
    filter_matches_host::<f32>(1e-5);
}

#[test]
fn gpu_filter_matches_the_host_f64() {
    filter_matches_host::<f64>(1e-12);
}

#[test]
fn gpu_filter_adjoint_is_exact() {
    for (name, g) in geometries() {
        let data = Space::<f32>::from_partition(g.data_partition().clone())
            .with_device(GPU)
            .unwrap();
        let f = FbpFilter::new(data, &g, &FbpOptions::new(FilterType::Cosine)).unwrap();
        let r = check_adjoint(&f, common::sized(3, 1), 1).unwrap();
        eprintln!("{name}: GPU filter adjoint error {:.1e}", r.max_rel_error);
        assert!(r.max_rel_error < 1e-5, "{name}: {}", r.max_rel_error);
    }
}

/// FBP/FDK with device-resident volumes and data give the host's reconstruction, and the
/// result stays on the device.
#[test]
fn fbp_on_device_spaces_matches_the_host() {
    for (name, g) in geometries() {
        let host = if g.ndim() == 2 {
            uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[48, 48]).unwrap()
        } else {
            uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[24, 24, 24]).unwrap()
        };
        let gpu = host.with_device(GPU).unwrap();
        let rc = RayTransform::new(host.clone(), g.clone(), Backend::default()).unwrap();
        let rg = RayTransform::new(gpu.clone(), g, Backend::cuda(0)).unwrap();
        let x = shepp_logan(&host, true).unwrap();
        let data = rc.apply(&x).unwrap();
        let o = FbpOptions::default();
        let rec_c = fbp_op(&rc, &o).unwrap().apply(&data).unwrap();
        let rec_g = fbp_op(&rg, &o)
            .unwrap()
            .apply(&data.to_device(GPU).unwrap())
            .unwrap();
        assert_eq!(rec_g.device(), GPU);
        let e = rel(&rec_g, &rec_c);
        eprintln!("{name}: FBP on the GPU vs the host {e:.1e}");
        assert!(e < 1e-4, "{name}: {e}");
    }
}

/// The GPU filter on cone data of a 256³ FDK problem (360 views × 384 × 256: more rows than
/// one batch of the cuFFT path's scratch holds) against the host, f32 and f64, and its timing
/// (printed).
#[test]
fn gpu_filter_large_data_matches_the_host_and_timing() {
    fn case<T: Scalar>(tol: f64) {
        let s3 = uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[256, 256, 256]).unwrap();
        let g = cone_beam_geometry(&s3, 4.0, 2.0, Some(360)).unwrap();
        let host = Space::<T>::from_partition(g.data_partition().clone());
        let data = host.with_device(GPU).unwrap();
        let o = FbpOptions::new(FilterType::SheppLogan);
        let f = FbpFilter::new(data.clone(), &g, &o).unwrap();
        let fc = FbpFilter::new(host.clone(), &g, &o).unwrap();
        let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(5);
        let yh = host.random_normal(&mut rng).unwrap();
        let y = yh.to_device(GPU).unwrap();
        let mut out = data.zero().unwrap();
        f.apply_into(&y, &mut out).unwrap();
        let e = rel(&out, &fc.apply(&yh).unwrap());
        let ms = GPU
            .time(|| f.apply_into(&y, &mut out))
            .unwrap()
            .as_secs_f64()
            * 1e3;
        let t = Instant::now();
        f.apply_into(&y, &mut out).unwrap();
        GPU.synchronize().unwrap();
        eprintln!(
            "FBP filter on the GPU ({:?}), {}, data {:?}: GPU vs host {e:.1e}; {ms:.2} ms (wall {:.2} ms)",
            f.gpu_method(),
            T::NAME,
            g.data_shape(),
            t.elapsed().as_secs_f64() * 1e3
        );
        assert!(e < tol, "{}: {e}", T::NAME);
    }
    case::<f32>(1e-5);
    case::<f64>(1e-12);
}

/// max |batched − per entry| / max |per entry| of `op`'s batched form on `batch` random
/// entries (device tensors `[batch, …]`) against `op.apply` entry by entry.
fn batched_vs_entries<T: Scalar>(op: &dyn Operator<T>, batch: usize, seed: u64) -> f64 {
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed);
    let (dom, ran) = (op.domain(), op.range());
    let with_batch = |s: &Space<T>| {
        let mut shape = vec![batch];
        shape.extend_from_slice(s.shape().unwrap());
        rodl::rn::<T>(&shape).unwrap()
    };
    let xs = with_batch(dom).random_normal(&mut rng).unwrap();
    let mut out = with_batch(ran).with_device(GPU).unwrap().zero().unwrap();
    let form = op
        .batched()
        .unwrap_or_else(|| panic!("{}: no batched form", op.name()));
    form.apply_batch(&xs.to_device(GPU).unwrap(), &mut out, batch)
        .unwrap();
    let got = out.to_host().unwrap();
    let (n_in, n_out) = (dom.size(), ran.size());
    let host_dom = dom.with_device(Device::Cpu).unwrap();
    let host_ran = ran.with_device(Device::Cpu).unwrap();
    let mut worst = 0.0f64;
    for k in 0..batch {
        let x = host_dom
            .element_from_vec(xs.as_slice().unwrap()[k * n_in..(k + 1) * n_in].to_vec())
            .unwrap()
            .to_device(GPU)
            .unwrap();
        let want = op.apply(&x).unwrap();
        let g = host_ran
            .element_from_vec(got.as_slice().unwrap()[k * n_out..(k + 1) * n_out].to_vec())
            .unwrap();
        worst = worst.max(rel(&g, &want));
    }
    worst
}

/// The GPU filter's batched form (the rows of all entries in one launch sequence, the cuFFT
/// path's plans for more rows made on the first batch) gives each entry's filter, for every
/// geometry kind, f32 and f64, forward and adjoint, and checks its batch.
#[test]
fn gpu_filter_batch_matches_one_entry_at_a_time() {
    fn case<T: Scalar>(tol: f64) {
        for (name, g) in geometries() {
            let data = Space::<T>::from_partition(g.data_partition().clone())
                .with_device(GPU)
                .unwrap();
            let f = FbpFilter::new(data.clone(), &g, &FbpOptions::new(FilterType::Hann)).unwrap();
            let adj = f.adjoint().unwrap();
            // A batch after a larger one reuses the larger plans.
            for batch in [1, 5, 2, 7] {
                let e = batched_vs_entries::<T>(&f, batch, 40 + batch as u64);
                let ea = batched_vs_entries::<T>(adj.as_ref(), batch, 50 + batch as u64);
                eprintln!(
                    "{name} {}: batch {batch}: {e:.1e}, adjoint {ea:.1e}",
                    T::NAME
                );
                assert!(e < tol && ea < tol, "{name} batch {batch}: {e} {ea}");
            }
            let form = f.batched().unwrap();
            let mut shape = vec![2];
            shape.extend_from_slice(data.shape().unwrap());
            let two = rodl::rn::<T>(&shape).unwrap().with_device(GPU).unwrap();
            let x = two.zero().unwrap();
            let mut y = two.zero().unwrap();
            assert!(form.apply_batch(&x, &mut y, 0).is_err());
            assert!(form.apply_batch(&x, &mut y, 3).is_err());
            assert!(form.apply_batch(&x, &mut y, form.max_batch() + 1).is_err());
            let mut one = data.zero().unwrap();
            assert!(form.apply_batch(&x, &mut one, 2).is_err());
        }
    }
    case::<f32>(1e-6);
    case::<f64>(1e-13);
}

/// FBP/FDK on device spaces has a batched form wherever the ray transform's adjoint has one
/// (2D parallel beams; 3D detectors of at least 32 rows), and it reconstructs a batch as it
/// reconstructs each entry.
#[test]
fn gpu_fbp_batch_matches_one_entry_at_a_time() {
    let s3 = uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[32, 32, 32]).unwrap();
    let mut cases = geometries();
    cases.push((
        "cone, 32 rows or more",
        cone_beam_geometry(&s3, 4.0, 2.0, Some(24)).unwrap(),
    ));
    for (name, g) in cases {
        let host = if g.ndim() == 2 {
            uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[48, 48]).unwrap()
        } else if name.starts_with("cone, 32") {
            s3.clone()
        } else {
            uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[24, 24, 24]).unwrap()
        };
        let vol = host.with_device(GPU).unwrap();
        let ray = RayTransform::new(vol, g, Backend::cuda(0)).unwrap();
        let fbp = fbp_op(&ray, &FbpOptions::default()).unwrap();
        let adjoint_batched = ray.adjoint().unwrap().batched().is_some();
        eprintln!(
            "{name}: back-projection batched {adjoint_batched}, FBP batched {}",
            fbp.batched().is_some()
        );
        if name.starts_with("fan") || !adjoint_batched {
            continue; // the exact fan-beam FBP multiplies by volume factors (no batched form)
        }
        for batch in [1, 3, 4] {
            let e = batched_vs_entries::<f32>(fbp.as_ref(), batch, 60 + batch as u64);
            eprintln!("{name}: FBP batch {batch}: {e:.1e}");
            assert!(e < 1e-5, "{name} batch {batch}: {e}");
        }
    }
}
