//! Times the first GPU call of a fresh process, to measure the on-disk kernel cache.
//!
//! ```text
//! cargo build --release --features cuda --example kernel_cache_timing
//! export RODL_KERNEL_CACHE=$(mktemp -d)     # an empty cache: the first run compiles (cold)
//! target/release/examples/kernel_cache_timing    # cold: NVRTC compiles, the cache is filled
//! target/release/examples/kernel_cache_timing    # warm: kernels come from the cache
//! RODL_KERNEL_CACHE=off target/release/examples/kernel_cache_timing   # no cache at all
//! ```
//!
//! Each run builds a small 2D parallel-beam ray transform on `cuda:0` (argument: another device
//! ordinal) and applies it once to host data, then once more: the first call includes creating the
//! device context and getting every kernel it needs (compiled, or loaded from the cache), the
//! second is the steady state. Prints one line of seconds per step.

use std::time::Instant;

use rodl::tomo::{parallel_beam_geometry, Backend, RayTransform};
use rodl::{uniform_discr, Device, Operator};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let start = Instant::now();
    let device: usize = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None => 0,
    };
    let cache = std::env::var("RODL_KERNEL_CACHE").unwrap_or_else(|_| "(default)".into());
    let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[64, 64])?;
    let geometry = parallel_beam_geometry(&space, Some(32))?;
    let x = space.one()?;

    let t = Instant::now();
    let ray = RayTransform::new(space.clone(), geometry, Backend::cuda(device))?;
    let y = ray.apply(&x)?;
    Device::Cuda(device).synchronize()?;
    let first = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let _ = ray.apply(&x)?;
    Device::Cuda(device).synchronize()?;
    let second = t.elapsed().as_secs_f64();

    println!("kernel cache    {cache}");
    println!("first call      {first:.3} s (context, kernels, projection)");
    println!("second call     {second:.3} s");
    println!("process so far  {:.3} s", start.elapsed().as_secs_f64());
    println!("norm of A x     {:.6}", ray.range().norm(&y)?);
    Ok(())
}
