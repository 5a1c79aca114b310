//! Solver benchmarks (criterion).
//!
//! * `solvers/cgls_vector_work_cone256`: the vector operations of one CGLS iteration (what
//!   [`cgls`] does besides applying the operator: three `axpby` and three norms) on elements of
//!   the cone_256 problem (256³ volume, 360 × 384 × 256 sinogram), f32 on the CPU;
//! * `solvers/cgls_operator_cone256_8views`: one forward and one adjoint ray transform on 8
//!   of the 360 views of cone_256 on the CPU (the full operator costs about 45 times this: it
//!   takes about half a minute per call on a small machine);
//! * with the `cuda` feature on a GPU machine: `solvers/cgls100_cone256` (100 CGLS iterations on
//!   cone_256 with 360 angles, device-resident, timed with CUDA events), and
//!   `solvers/cuda_cgls_vector_work_cone256` / `solvers/cuda_cgls_operator_cone256` (one
//!   iteration's vector work, one forward + adjoint).
//!
//! Each group ends with a printed summary line: the vector work per CGLS iteration as a
//! fraction of the operator time per iteration (the target: at most 15 %).
//!
//! Filter with e.g. `cargo bench --bench solvers -- solvers/cgls_vector`.

use std::time::Duration;

mod common;

use common::cone;
use criterion::{criterion_group, criterion_main, Criterion};
use rodl::tomo::{Backend, RayTransform};
use rodl::{Device, Element, LinearOperator, Operator, Space};

/// The elements CGLS works on and its per-iteration vector operations, exactly as in
/// `rodl::solvers::iterative::cgls`: `x += α p`, `r −= α q`, `‖q‖²`, `‖s‖²`, `‖r‖`,
/// `p = s + β p`.
struct CglsVectors {
    domain: Space<f32>,
    range: Space<f32>,
    x: Element<f32>,
    p: Element<f32>,
    s: Element<f32>,
    r: Element<f32>,
    q: Element<f32>,
}

impl CglsVectors {
    fn new(domain: &Space<f32>, range: &Space<f32>) -> Self {
        Self {
            domain: domain.clone(),
            range: range.clone(),
            x: domain.zero().unwrap(),
            p: domain.one().unwrap(),
            s: domain.one().unwrap(),
            r: range.one().unwrap(),
            q: range.one().unwrap(),
        }
    }

    fn iteration(&mut self) -> rodl::Result<()> {
        let (d, r) = (&self.domain, &self.range);
        let delta = r.norm(&self.q)?.powi(2);
        let alpha = (1e-3 / delta.max(1.0)) as f32;
        d.axpby(alpha, &self.p, 1.0, &mut self.x)?;
        r.axpby(-alpha, &self.q, 1.0, &mut self.r)?;
        let gamma = d.norm(&self.s)?.powi(2);
        let residual = r.norm(&self.r)?;
        std::hint::black_box((gamma, residual));
        d.axpby(1.0, &self.s, 0.5, &mut self.p)
    }
}

/// The median of `reps` timings of `f` on `device`, in milliseconds.
fn median_ms(device: Device, reps: usize, mut f: impl FnMut() -> rodl::Result<()>) -> f64 {
    let mut t: Vec<f64> = (0..reps)
        .map(|_| device.time(&mut f).unwrap().as_secs_f64() * 1e3)
        .collect();
    t.sort_by(|a, b| a.total_cmp(b));
    t[reps / 2]
}

fn cpu(c: &mut Criterion) {
    let (space, g) = cone(256, 360);
    let full_range = Space::<f32>::from_partition(g.data_partition().clone());
    let mut v = CglsVectors::new(&space, &full_range);
    let sub = g.select_views(0..8).unwrap();
    let ray = RayTransform::new(space.clone(), sub, Backend::default()).unwrap();
    let adj = ray.adjoint().unwrap();
    let vol = space.one().unwrap();
    let mut sino = ray.range().zero().unwrap();
    let mut back = space.zero().unwrap();
    let mut fwd_adj = || -> rodl::Result<()> {
        ray.apply_into(&vol, &mut sino)?;
        adj.apply_into(&sino, &mut back)
    };

    let mut group = c.benchmark_group("solvers");
    group.sample_size(10);
    group.bench_function("cgls_vector_work_cone256", |b| {
        b.iter(|| v.iteration().unwrap())
    });
    group.bench_function("cgls_operator_cone256_8views", |b| {
        b.iter(|| fwd_adj().unwrap())
    });
    group.finish();

    let t_vec = median_ms(Device::Cpu, 5, || v.iteration());
    let t_op = 45.0 * median_ms(Device::Cpu, 3, &mut fwd_adj);
    println!(
        "solvers summary (cpu, cone_256/360, f32): CGLS vector work {t_vec:.1} ms per iteration, \
         operator (forward + adjoint, 45 × 8 views) ≈ {t_op:.0} ms: {:.2} %",
        100.0 * t_vec / t_op
    );
}

#[cfg(feature = "cuda")]
fn cuda(c: &mut Criterion) {
    use criterion::SamplingMode;
    use rodl::solvers::iterative::cgls;
    let device = Device::Cuda(0);
    let (space, g) = cone(256, 360);
    let space = space.with_device(device).expect("CUDA device");
    let ray = RayTransform::new(space.clone(), g, Backend::cuda(0)).expect("ray transform");
    let adj = ray.adjoint().unwrap();
    // Data made on the device: the projection of a constant volume.
    let data = ray.apply(&space.one().unwrap()).unwrap();
    let mut x = space.zero().unwrap();
    let mut v = CglsVectors::new(&space, ray.range());
    let vol = space.one().unwrap();
    let mut sino = ray.range().zero().unwrap();
    let mut back = space.zero().unwrap();
    let mut fwd_adj = || -> rodl::Result<()> {
        ray.apply_into(&vol, &mut sino)?;
        adj.apply_into(&sino, &mut back)
    };

    let mut group = c.benchmark_group("solvers");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.bench_function("cgls100_cone256", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                space.fill(&mut x, 0.0).unwrap();
                total += device
                    .time(|| cgls(&ray, &mut x, &data, 100, &mut ()).map(|_| ()))
                    .unwrap();
            }
            total
        })
    });
    group.sampling_mode(SamplingMode::Auto);
    group.bench_function("cuda_cgls_vector_work_cone256", |b| {
        b.iter_custom(|iters| {
            device
                .time(|| (0..iters).try_for_each(|_| v.iteration()))
                .unwrap()
        })
    });
    group.bench_function("cuda_cgls_operator_cone256", |b| {
        b.iter_custom(|iters| {
            device
                .time(|| (0..iters).try_for_each(|_| fwd_adj()))
                .unwrap()
        })
    });
    group.finish();

    let t_vec = median_ms(device, 5, || v.iteration());
    let t_op = median_ms(device, 3, &mut fwd_adj);
    println!(
        "solvers summary (cuda, cone_256/360, f32): CGLS vector work {t_vec:.3} ms per iteration, \
         operator (forward + adjoint) {t_op:.1} ms: {:.2} %",
        100.0 * t_vec / t_op
    );
}

#[cfg(not(feature = "cuda"))]
fn cuda(_c: &mut Criterion) {}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
    targets = cpu, cuda
}
criterion_main!(benches);
