//! Ray-transform benchmarks (criterion). Ids as in the issues:
//! `cpu/parallel2d_512/{forward,adjoint}`, `cpu/cone_256/{forward,adjoint}`, curved detectors
//! next to their flat counterparts (`cpu/cone_256_cyl`: a cylinder about the source over the
//! same fan and rows; `cpu/fan_512`, `cpu/fan_curved_512`: a flat and an arc detector), and, with
//! the `cuda` feature on a GPU machine, `cuda/...` (curved there too: `cuda/cone_512_cyl` next
//! to `cuda/cone_512`, `cuda/fan_512` and `cuda/fan_curved_512`, `cuda/fdk_512_cyl`), and the
//! deterministic kernels (`CudaOptions::deterministic`): `cuda/{parallel2d_512,cone_256,cone_512}_det`.
//!
//! FBP/FDK on the GPU, each next to the back-projection alone and the filter alone in the same
//! run: `cuda/fdk_512` (FDK on cone_512, device-resident), `cuda/fdk_512/host_data` (host data
//! in, host volume out: the copies included), `cuda/fdk_512/backprojection`,
//! `cuda/fdk_512/filter`, and likewise `cuda/fbp_parallel2d_512{,/backprojection,/filter}`.
//!
//! Filter with e.g. `cargo bench --bench ray_transform -- cpu/parallel2d`.
//!
//! Host-resident data on the GPU: `cuda/cone_512_host/{forward,adjoint}` (host spaces with the
//! CUDA backend: the transform streams the data in pieces) and
//! `cuda/cone_512_host_copy/{forward,adjoint}` (explicit copies to the device and back around
//! the device-resident transform). With `RODL_BENCH_LARGE=1` also the scale benchmarks
//! `cuda/cone_1024/{forward,adjoint}` (device-resident, ~10 GiB on the GPU) and
//! `cuda/cone_1024_budget_2g/{forward,adjoint}` (host data, a 2 GiB device budget), with the
//! fewest samples criterion takes; they need ~30 GiB of host memory.

use std::time::Duration;

mod common;

use common::{cone, cone_cyl, fan_512, parallel2d_512};
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, SamplingMode};
use rodl::tomo::{Backend, Geometry, RayTransform};
use rodl::{LinearOperator, Operator, Space};

/// Benchmarks `f` under `id`, each sample timed on `device` (CUDA events around the queued
/// calls on a GPU, where a wall-clock `iter` would time only the asynchronous launches; the wall
/// clock on the CPU).
fn device_timed(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: impl Into<String>,
    device: rodl::Device,
    mut f: impl FnMut() -> rodl::Result<()>,
) {
    group.bench_function(id.into(), |b| {
        b.iter_custom(|iters| device.time(|| (0..iters).try_for_each(|_| f())).unwrap())
    });
}

fn bench_case(
    c: &mut Criterion,
    prefix: &str,
    name: &str,
    space: Space<f32>,
    g: Geometry,
    backend: Backend,
) {
    bench_case_with(c, prefix, name, space, g, backend, false)
}

/// [`bench_case`]; with `large`, ones instead of random data (drawing billions of normal
/// values would take minutes) and one call per sample.
fn bench_case_with(
    c: &mut Criterion,
    prefix: &str,
    name: &str,
    space: Space<f32>,
    g: Geometry,
    backend: Backend,
    large: bool,
) {
    let space = match backend {
        Backend::Cuda(ref o) => space
            .with_device(rodl::Device::Cuda(o.device))
            .expect("CUDA device"),
        Backend::Cpu(_) => space,
    };
    let ray = RayTransform::new(space.clone(), g, backend).expect("ray transform");
    let adj = ray.adjoint().unwrap();
    let mut rng = rand::thread_rng();
    let (x, y) = if large {
        (space.one().unwrap(), ray.range().one().unwrap())
    } else {
        (
            space.random_normal(&mut rng).unwrap(),
            ray.range().random_normal(&mut rng).unwrap(),
        )
    };
    let mut sino = ray.range().zero().unwrap();
    let mut vol = space.zero().unwrap();
    // Each sample is timed on the device: CUDA events around the queued calls on a GPU (a plain
    // wall-clock `iter` would time only the asynchronous launches), the wall clock on the CPU.
    let device = space.device();
    let mut group = c.benchmark_group(prefix);
    if large {
        group.sampling_mode(SamplingMode::Flat);
    }
    device_timed(&mut group, format!("{name}/forward"), device, || {
        ray.apply_into(&x, &mut sino)
    });
    device_timed(&mut group, format!("{name}/adjoint"), device, || {
        adj.apply_into(&y, &mut vol)
    });
    group.finish();
}

fn cpu(c: &mut Criterion) {
    let (s, g) = parallel2d_512();
    bench_case(c, "cpu", "parallel2d_512", s, g, Backend::default());
    let (s, g) = cone(256, 256);
    bench_case(c, "cpu", "cone_256", s, g, Backend::default());
    let (s, g) = cone_cyl(256, 256);
    bench_case(c, "cpu", "cone_256_cyl", s, g, Backend::default());
    let (s, g) = fan_512(false);
    bench_case(c, "cpu", "fan_512", s, g, Backend::default());
    let (s, g) = fan_512(true);
    bench_case(c, "cpu", "fan_curved_512", s, g, Backend::default());
}

/// FBP (FDK for cone beams) with device-resident data and volume on GPU 0, the same with host
/// data (copies in and out timed by the wall clock), the back-projection alone and the filter
/// alone, under `prefix/name`.
#[cfg(feature = "cuda")]
fn bench_fbp(c: &mut Criterion, prefix: &str, name: &str, space: Space<f32>, g: Geometry) {
    use rodl::tomo::{fbp_filter_op, fbp_op, FbpOptions};
    use std::time::Instant;
    let device = rodl::Device::Cuda(0);
    let space = space.with_device(device).expect("CUDA device");
    let ray = RayTransform::new(space.clone(), g, Backend::cuda(0)).expect("ray transform");
    let options = FbpOptions::default();
    let fbp = fbp_op(&ray, &options).expect("FBP");
    let filter = fbp_filter_op(&ray, &options).expect("FBP filter");
    let adj = ray.adjoint().unwrap();
    let mut rng = rand::thread_rng();
    let y = ray.range().random_normal(&mut rng).unwrap();
    let y_host = y.to_host().unwrap();
    let mut vol = space.zero().unwrap();
    let mut filtered = ray.range().zero().unwrap();
    let mut group = c.benchmark_group(prefix);
    device_timed(&mut group, name.to_string(), device, || {
        fbp.apply_into(&y, &mut vol)
    });
    group.bench_function(format!("{name}/host_data"), |b| {
        b.iter_custom(|iters| {
            let t = Instant::now();
            for _ in 0..iters {
                let rec = fbp.apply(&y_host.to_device(device).unwrap()).unwrap();
                std::hint::black_box(rec.to_host().unwrap());
            }
            t.elapsed()
        })
    });
    device_timed(&mut group, format!("{name}/backprojection"), device, || {
        adj.apply_into(&y, &mut vol)
    });
    device_timed(&mut group, format!("{name}/filter"), device, || {
        filter.apply_into(&y, &mut filtered)
    });
    group.finish();
}

#[cfg(feature = "cuda")]
fn cuda(c: &mut Criterion) {
    let (s, g) = parallel2d_512();
    bench_case(c, "cuda", "parallel2d_512", s, g, Backend::cuda(0));
    let (s, g) = cone(256, 360);
    bench_case(c, "cuda", "cone_256", s, g, Backend::cuda(0));
    let (s, g) = cone(512, 512);
    bench_case(c, "cuda", "cone_512", s, g, Backend::cuda(0));
    // Curved detectors: the same fan angles and rows on a cylinder (arc) about the source.
    let (s, g) = cone_cyl(512, 512);
    bench_case(c, "cuda", "cone_512_cyl", s, g, Backend::cuda(0));
    // Deterministic (bitwise reproducible) kernels next to the default ones.
    let det = Backend::Cuda(rodl::tomo::CudaOptions::new(0).deterministic(true));
    let (s, g) = parallel2d_512();
    bench_case(c, "cuda", "parallel2d_512_det", s, g, det.clone());
    let (s, g) = cone(512, 512);
    bench_case(c, "cuda", "cone_512_det", s, g, det.clone());
    let (s, g) = cone(256, 360);
    bench_case(c, "cuda", "cone_256_det", s, g, det);
    let (s, g) = fan_512(false);
    bench_case(c, "cuda", "fan_512", s, g, Backend::cuda(0));
    let (s, g) = fan_512(true);
    bench_case(c, "cuda", "fan_curved_512", s, g, Backend::cuda(0));
    let (s, g) = cone_cyl(512, 512);
    bench_fbp(c, "cuda", "fdk_512_cyl", s, g);
    let (s, g) = parallel2d_512();
    bench_fbp(c, "cuda", "fbp_parallel2d_512", s, g);
    let (s, g) = cone(512, 512);
    bench_fbp(c, "cuda", "fdk_512", s, g);
    let (s, g) = cone(512, 512);
    bench_host(c, "cone_512_host", s, g, Backend::cuda(0), false);
    let (s, g) = cone(512, 512);
    bench_host_copy(c, "cone_512_host_copy", s, g);
}

/// Host spaces on `backend`: the wall clock of each call, which returns with the result in
/// host memory. `large` as for [`bench_case_with`].
#[cfg(feature = "cuda")]
fn bench_host(
    c: &mut Criterion,
    name: &str,
    space: Space<f32>,
    g: Geometry,
    backend: Backend,
    large: bool,
) {
    let ray = RayTransform::new(space.clone(), g, backend).expect("ray transform");
    let adj = ray.adjoint().unwrap();
    let mut rng = rand::thread_rng();
    let (x, y) = if large {
        (space.one().unwrap(), ray.range().one().unwrap())
    } else {
        (
            space.random_normal(&mut rng).unwrap(),
            ray.range().random_normal(&mut rng).unwrap(),
        )
    };
    let mut sino = ray.range().zero().unwrap();
    let mut vol = space.zero().unwrap();
    let mut group = c.benchmark_group("cuda");
    if large {
        group.sampling_mode(SamplingMode::Flat);
    }
    group.bench_function(format!("{name}/forward"), |b| {
        b.iter(|| ray.apply_into(&x, &mut sino).unwrap())
    });
    group.bench_function(format!("{name}/adjoint"), |b| {
        b.iter(|| adj.apply_into(&y, &mut vol).unwrap())
    });
    group.finish();
}

/// Host data copied explicitly to a device-resident transform and the result copied back.
#[cfg(feature = "cuda")]
fn bench_host_copy(c: &mut Criterion, name: &str, space: Space<f32>, g: Geometry) {
    let gpu = rodl::Device::Cuda(0);
    let dev = space.with_device(gpu).expect("CUDA device");
    let ray = RayTransform::new(dev, g, Backend::cuda(0)).expect("ray transform");
    let adj = ray.adjoint().unwrap();
    let mut rng = rand::thread_rng();
    let x = space.random_normal(&mut rng).unwrap();
    let y = ray
        .range()
        .random_normal(&mut rng)
        .unwrap()
        .to_host()
        .unwrap();
    let mut group = c.benchmark_group("cuda");
    group.bench_function(format!("{name}/forward"), |b| {
        b.iter(|| {
            ray.apply(&x.to_device(gpu).unwrap())
                .unwrap()
                .to_host()
                .unwrap()
        })
    });
    group.bench_function(format!("{name}/adjoint"), |b| {
        b.iter(|| {
            adj.apply(&y.to_device(gpu).unwrap())
                .unwrap()
                .to_host()
                .unwrap()
        })
    });
    group.finish();
}

/// The scale benchmarks (`RODL_BENCH_LARGE=1`): cone_1024 device-resident and with host data
/// under a 2 GiB budget.
#[cfg(feature = "cuda")]
fn cuda_large(c: &mut Criterion) {
    if std::env::var_os("RODL_BENCH_LARGE").is_none() {
        return;
    }
    {
        let (s, g) = cone(1024, 1024);
        bench_case_with(c, "cuda", "cone_1024", s, g, Backend::cuda(0), true);
    }
    let (s, g) = cone(1024, 1024);
    let budget = Backend::cuda_with_budget(0, 2 << 30);
    bench_host(c, "cone_1024_budget_2g", s, g, budget, true);
}

#[cfg(not(feature = "cuda"))]
fn cuda(_c: &mut Criterion) {}

#[cfg(not(feature = "cuda"))]
fn cuda_large(_c: &mut Criterion) {}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
    targets = cpu, cuda
}
criterion_group! {
    name = large;
    config = Criterion::default().sample_size(10).warm_up_time(Duration::from_millis(1)).measurement_time(Duration::from_millis(1));
    targets = cuda_large
}
criterion_main!(benches, large);
