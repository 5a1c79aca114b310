//! Ray-transform benchmarks (criterion). Ids as in the issues:
//! `cpu/parallel2d_512/{forward,adjoint}`, `cpu/cone_256/{forward,adjoint}` and, with the `cuda`
//! feature on a GPU machine, `cuda/...`.
//!
//! Filter with e.g. `cargo bench --bench ray_transform -- cpu/parallel2d`.

use std::f64::consts::PI;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use rodl::tomo::{Backend, Geometry, RayTransform};
use rodl::{uniform_discr, LinearOperator, Operator, Space, UniformPartition};

fn part(lo: &[f64], hi: &[f64], n: &[usize]) -> UniformPartition {
    UniformPartition::new(lo, hi, n).expect("valid partition")
}

/// Volume [-1,1]², 512², 512 angles over [0, π), 727 pixels over [-√2, √2].
fn parallel2d_512() -> (Space<f32>, Geometry) {
    let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[512, 512]).unwrap();
    let s2 = 2f64.sqrt();
    let g =
        Geometry::parallel_2d(&part(&[0.0], &[PI], &[512]), &part(&[-s2], &[s2], &[727])).unwrap();
    (space, g)
}

/// Volume [-1,1]³ with n³ voxels; `angles` over [0, 2π); flat detector (3n/2)×n over
/// [-2.8284, 2.8284] × [-2.8859, 2.8859]; source and detector radius 4.
fn cone(n: usize, angles: usize) -> (Space<f32>, Geometry) {
    let space = uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[n, n, n]).unwrap();
    let g = Geometry::cone_flat(
        &part(&[0.0], &[2.0 * PI], &[angles]),
        &part(&[-2.8284, -2.8859], &[2.8284, 2.8859], &[3 * n / 2, n]),
        4.0,
        4.0,
        0.0,
        [0.0, 0.0, 1.0],
        [0.0, 0.0],
    )
    .unwrap();
    (space, g)
}

fn bench_case(
    c: &mut Criterion,
    prefix: &str,
    name: &str,
    space: Space<f32>,
    g: Geometry,
    backend: Backend,
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
    let x = space.random_normal(&mut rng).unwrap();
    let y = ray.range().random_normal(&mut rng).unwrap();
    let mut sino = ray.range().zero().unwrap();
    let mut vol = space.zero().unwrap();
    // Each sample is timed on the device: CUDA events around the queued calls on a GPU (a plain
    // wall-clock `iter` would time only the asynchronous launches), the wall clock on the CPU.
    let device = space.device();
    let mut group = c.benchmark_group(prefix);
    group.bench_function(format!("{name}/forward"), |b| {
        b.iter_custom(|iters| {
            device
                .time(|| (0..iters).try_for_each(|_| ray.apply_into(&x, &mut sino)))
                .unwrap()
        })
    });
    group.bench_function(format!("{name}/adjoint"), |b| {
        b.iter_custom(|iters| {
            device
                .time(|| (0..iters).try_for_each(|_| adj.apply_into(&y, &mut vol)))
                .unwrap()
        })
    });
    group.finish();
}

fn cpu(c: &mut Criterion) {
    let (s, g) = parallel2d_512();
    bench_case(c, "cpu", "parallel2d_512", s, g, Backend::default());
    let (s, g) = cone(256, 256);
    bench_case(c, "cpu", "cone_256", s, g, Backend::default());
}

#[cfg(feature = "cuda")]
fn cuda(c: &mut Criterion) {
    let (s, g) = parallel2d_512();
    bench_case(c, "cuda", "parallel2d_512", s, g, Backend::cuda(0));
    let (s, g) = cone(256, 360);
    bench_case(c, "cuda", "cone_256", s, g, Backend::cuda(0));
    let (s, g) = cone(512, 512);
    bench_case(c, "cuda", "cone_512", s, g, Backend::cuda(0));
}

#[cfg(not(feature = "cuda"))]
fn cuda(_c: &mut Criterion) {}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
    targets = cpu, cuda
}
criterion_main!(benches);
