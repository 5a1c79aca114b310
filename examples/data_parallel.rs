//! Factories and `DataParallel`: one ray-transform factory (a device-free description), a batch
//! of images projected with one replica per device via `stack` / `unstack`, the batched
//! adjoint and a composite factory (the normal operator `A* A`), each compared with applying a
//! single replica image by image.
//!
//! ```text
//! cargo run --release --example data_parallel -- [BATCH] [--cpu]
//! cargo run --release --features cuda --example data_parallel      # every GPU present
//! ```
//!
//! The factory is built on every usable GPU (`Device::cuda_devices`). Where there is none — no
//! `cuda` feature, no driver, no device — it says why and falls back to two CPU "devices" (two
//! replicas on the host), as it does with `--cpu`; there the batched results equal the
//! image-by-image ones exactly. The GPU projector agrees with the CPU one to about 1e-6
//! relative.

use std::time::Instant;

use rodl::prelude::*;

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let mut batch = 6;
    let mut cpu = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--cpu" => cpu = true,
            n => batch = n.parse()?,
        }
    }
    let devices: Vec<Device> = match Device::cuda_devices() {
        Ok(gpus) if !cpu => gpus,
        Ok(_) => vec![Device::Cpu, Device::Cpu],
        Err(why) => {
            println!("no GPU to use ({why}): running on two CPU replicas instead");
            vec![Device::Cpu, Device::Cpu]
        }
    };

    // One factory: the volume's description, the geometry and the CPU options.
    let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[128, 128])?;
    let geometry = parallel_beam_geometry(&space, Some(180))?;
    let ray: LinFactory<f32> =
        RayTransform::factory(space.desc(), geometry, CpuOptions::default())?;
    let normal = ray.adjoint().compose(&ray)?; // A* A, a factory too

    // A batch of images: the phantom at different intensities.
    let phantom = shepp_logan(&space, true)?;
    let images = (0..batch)
        .map(|k| {
            let mut x = phantom.try_clone()?;
            space.scale(1.0 + k as f32, &mut x)?;
            Ok(x)
        })
        .collect::<Result<Vec<Element<f32>>>>()?;

    // Batched: one replica per device entry, built at first use.
    let batched = DataParallel::new(ray.clone(), &devices, batch)?;
    let t = Instant::now();
    let sinograms = batched.unstack(&batched.apply(&batched.stack(&images)?)?)?;
    let backs = batched.unstack(&batched.adjoint()?.apply(&batched.stack(&sinograms)?)?)?;
    println!(
        "{batch} images on {devices:?}: projected and back-projected in {:.2} s, replicas built {:?}",
        t.elapsed().as_secs_f64(),
        batched.build_counts()
    );
    println!(
        "adjoint check of the batched operator: {:.1e}",
        check_adjoint(&batched, 2, 0)?.max_rel_error
    );
    let normal_batched = DataParallel::new(normal, &devices, batch)?;
    let normals =
        normal_batched.unstack(&normal_batched.apply(&normal_batched.stack(&images)?)?)?;

    // The same image by image with one replica on the CPU.
    let single = ray.build(Device::Cpu)?;
    let adjoint = single.adjoint()?;
    let t = Instant::now();
    let mut worst = [0.0f64; 3];
    for (k, x) in images.iter().enumerate() {
        let y = single.apply(x)?;
        let b = adjoint.apply(&y)?;
        let range = single.range();
        worst[0] = worst[0].max(range.dist(&y, &sinograms[k])? / range.norm(&y)?);
        worst[1] = worst[1].max(space.dist(&b, &backs[k])? / space.norm(&b)?);
        worst[2] = worst[2].max(space.dist(&b, &normals[k])? / space.norm(&b)?);
    }
    println!(
        "image by image: {:.2} s; largest relative difference from the batch: forward {:.1e}, \
         adjoint {:.1e}, A*A {:.1e}",
        t.elapsed().as_secs_f64(),
        worst[0],
        worst[1],
        worst[2]
    );
    Ok(())
}
