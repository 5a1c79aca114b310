//! Multi-device benchmarks (criterion), with the device list as the parameter:
//!
//! - `multi/batch16_cone256/{forward,adjoint}/<devices>`: a batch of 16 cone_256 volumes (360
//!   views) through [`DataParallel`], one replica of one factory per device entry;
//! - `multi/cone_1024/{forward,adjoint}/<devices>`: one 1024³ cone problem (1024 views, detector
//!   1536 × 1024, the extents of cone_512) split by views over the devices
//!   ([`MultiDeviceRayTransform`]).
//!
//! The devices come from `RODL_BENCH_DEVICES` (comma-separated, e.g. `cuda:0,cuda:1`, or
//! `cuda:0,cuda:0` to exercise the splitting on one GPU); without it, every usable GPU. With
//! no GPU and no list the benchmarks are skipped with a message (the CPU would take minutes per
//! sample). Batches and volumes are host data, as the two operators define them, so every
//! sample is timed with the wall clock and includes the transfers. Throughput against one
//! device: compare the medians for `cuda:0` and for the list.
//!
//! ```text
//! RODL_BENCH_DEVICES=cuda:0 cargo bench --features cuda --bench multi_device
//! RODL_BENCH_DEVICES=cuda:0,cuda:1 cargo bench --features cuda --bench multi_device
//! ```

use std::time::Duration;

mod common;

use common::cone;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use rodl::factory::{LinFactory, SpaceDescExt};
use rodl::parallel::DataParallel;
use rodl::tomo::{CpuOptions, MultiDeviceRayTransform, RayTransform};
use rodl::{Device, LinearOperator};

/// The environment variable naming the devices.
const DEVICES_ENV: &str = "RODL_BENCH_DEVICES";

/// The device list and its label in the benchmark ids, or why there is none.
fn devices() -> Result<(Vec<Device>, String), String> {
    let list = match std::env::var(DEVICES_ENV) {
        Ok(text) => text
            .split(',')
            .map(|d| d.parse::<Device>().map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?,
        Err(_) => Device::cuda_devices().map_err(|e| {
            format!("no GPU ({e}) and no {DEVICES_ENV}: the multi-device benchmarks are skipped")
        })?,
    };
    let label = list
        .iter()
        .map(|d| d.to_string().replace(':', ""))
        .collect::<Vec<_>>()
        .join("+");
    Ok((list, label))
}

/// Times `apply_into` of `op` and of its adjoint on random data under `name`.
fn bench_pair<O: LinearOperator<f32>>(c: &mut Criterion, name: &str, label: &str, op: &O) {
    let adj = op.adjoint().expect("adjoint");
    let mut rng = rand::thread_rng();
    let x = op.domain().random_normal(&mut rng).expect("input");
    let y = op.range().random_normal(&mut rng).expect("data");
    let mut out_y = op.range().zero().expect("range element");
    let mut out_x = op.domain().zero().expect("domain element");
    // The first calls build the replicas (and compile the kernels): not timed.
    op.apply_into(&x, &mut out_y).expect("forward");
    adj.apply_into(&y, &mut out_x).expect("adjoint");
    let mut group = c.benchmark_group("multi");
    group.bench_function(BenchmarkId::new(format!("{name}/forward"), label), |b| {
        b.iter(|| op.apply_into(&x, &mut out_y).expect("forward"))
    });
    group.bench_function(BenchmarkId::new(format!("{name}/adjoint"), label), |b| {
        b.iter(|| adj.apply_into(&y, &mut out_x).expect("adjoint"))
    });
    group.finish();
}

fn multi(c: &mut Criterion) {
    let (devices, label) = match devices() {
        Ok(d) => d,
        Err(why) => {
            eprintln!("{why}");
            return;
        }
    };
    let filter_allows = |id: &str| {
        // Skip building a case that a name filter on the command line leaves out: the 1024³
        // problem alone needs 10 GiB of host memory.
        let args: Vec<String> = std::env::args()
            .skip(1)
            .filter(|a| !a.starts_with('-'))
            .collect();
        args.is_empty()
            || args
                .iter()
                .any(|a| id.contains(a.as_str()) || a.contains(id.trim_start_matches("multi/")))
    };

    if filter_allows("multi/batch16_cone256") {
        let (space, geometry) = cone(256, 360);
        let factory: LinFactory<f32> =
            RayTransform::factory(space.desc(), geometry, CpuOptions::default()).expect("factory");
        let op = DataParallel::new(factory, &devices, 16).expect("data parallel");
        bench_pair(c, "batch16_cone256", &label, &op);
    }
    if filter_allows("multi/cone_1024") {
        let (space, geometry) = cone(1024, 1024);
        let op = MultiDeviceRayTransform::<f32>::new(
            space.desc(),
            geometry,
            CpuOptions::default(),
            &devices,
        )
        .expect("multi-device ray transform");
        bench_pair(c, "cone_1024", &label, &op);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
    targets = multi
}
criterion_main!(benches);
