//! Times FDK on a GPU in a fresh process, step by step, with host data in and a host volume out
//! (what `rodl fbp --device cuda:0` does, without the files).
//!
//! ```text
//! cargo build --release --features cuda --example fdk_timing
//! target/release/examples/fdk_timing            # cone_512 of the benches (n = 512)
//! target/release/examples/fdk_timing 256        # n³ voxels, n angles, (3n/2) × n detector
//! RODL_CUFFT=off target/release/examples/fdk_timing   # the direct-convolution filter
//! ```
//!
//! Prints seconds per step: the device context, the ray transform's construction, the FDK
//! operator's construction (the filter's set-up: cuFFT's loading and plans, or the taps), the
//! upload, the first and second FDK calls and the download.

use std::time::Instant;

use rodl::tomo::{fbp_filter_op, fbp_op, Backend, FbpFilter, FbpOptions, RayTransform};
use rodl::{Device, Operator, Space};

#[path = "../benches/common/mod.rs"]
mod common;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let start = Instant::now();
    let n: usize = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None => 512,
    };
    let gpu = Device::Cuda(0);
    let (host_volume, geometry) = common::cone(n, n);
    let host_data = Space::<f32>::from_partition(geometry.data_partition().clone()).one()?;
    let mut step = Instant::now();
    let mut lap = |what: &str| {
        let _ = gpu.synchronize();
        println!("{what:<28} {:.3} s", step.elapsed().as_secs_f64());
        step = Instant::now();
    };
    lap("host data");
    gpu.check_available()?;
    lap("device context");
    let ray = RayTransform::new(
        host_volume.with_device(gpu)?,
        geometry.clone(),
        Backend::cuda(0),
    )?;
    lap("ray transform");
    let options = FbpOptions::default();
    let fdk = fbp_op(&ray, &options)?;
    lap("FDK operator");
    let y = host_data.to_device(gpu)?;
    lap("upload");
    let x = fdk.apply(&y)?;
    lap("first FDK call");
    let _ = fdk.apply(&y)?;
    lap("second FDK call");
    let xh = x.to_host()?;
    lap("download");
    let filter = fbp_filter_op(&ray, &options)?;
    lap("another FBP filter");
    let method = FbpFilter::new(ray.range().clone(), &geometry, &options)?.gpu_method();
    println!("filter method                {method:?}");
    println!(
        "process                      {:.3} s",
        start.elapsed().as_secs_f64()
    );
    println!("sum of the volume            {:.6e}", xh.sum()?);
    drop(filter);
    Ok(())
}
