//! Times 2D fan-beam FBP on the CPU (the case of #39: a 300² volume, 360 views × 512 flat
//! detector pixels, `f32`), with the back-projection alone for comparison.
//!
//! ```text
//! cargo run --release --example fan_fbp_timing            # 300², 360 × 512
//! cargo run --release --example fan_fbp_timing 512 512 727
//! cargo run --release --example fan_fbp_timing 300 360 512 f64
//! ```
//!
//! Prints the median of ten calls (after one warm-up), in milliseconds, of the FBP, of the same
//! FBP as three back-projections (what a handle that hides the ray transform gets from
//! `fbp_op_with`, and what `fbp_op` ran before the weighted back-projection), and of the ray
//! transform's adjoint alone.

use std::f64::consts::PI;
use std::time::Instant;

use rodl::prelude::*;
use rodl::tomo::{fbp_op_with, Geometry};
use rodl::UniformPartition;

fn median_ms(mut f: impl FnMut() -> rodl::Result<()>) -> rodl::Result<f64> {
    f()?;
    let mut t = Vec::new();
    for _ in 0..10 {
        let s = Instant::now();
        f()?;
        t.push(s.elapsed().as_secs_f64() * 1e3);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = |k: usize, d: usize| -> Result<usize, Box<dyn std::error::Error>> {
        Ok(match std::env::args().nth(k) {
            Some(a) => a.parse()?,
            None => d,
        })
    };
    let (n, views, pixels) = (arg(1, 300)?, arg(2, 360)?, arg(3, 512)?);
    if std::env::args().nth(4).as_deref() == Some("f64") {
        run::<f64>(n, views, pixels)
    } else {
        run::<f32>(n, views, pixels)
    }
}

fn run<T: Scalar>(n: usize, views: usize, pixels: usize) -> Result<(), Box<dyn std::error::Error>> {
    let space = uniform_discr::<T>(&[-20.0, -20.0], &[20.0, 20.0], &[n, n])?;
    let geometry = Geometry::fan_flat(
        &UniformPartition::new(&[0.0], &[2.0 * PI], &[views])?,
        &UniformPartition::new(&[-40.0], &[40.0], &[pixels])?,
        40.0,
        40.0,
        0.0,
    )?;
    let ray = std::sync::Arc::new(RayTransform::new(
        space.clone(),
        geometry.clone(),
        Backend::default(),
    )?);
    let fbp = fbp_op(ray.as_ref(), &FbpOptions::default())?;
    let handle: LinOp<T> = ray.clone();
    let three = fbp_op_with(
        handle.scaled(T::one())?.as_ref(),
        &geometry,
        &FbpOptions::default(),
    )?;
    let data = ray.apply(&space.one()?)?;
    let mut rec = space.zero()?;
    let back = ray.adjoint()?;
    let t_fbp = median_ms(|| fbp.apply_into(&data, &mut rec))?;
    let t_three = median_ms(|| three.apply_into(&data, &mut rec))?;
    let t_adj = median_ms(|| back.apply_into(&data, &mut rec))?;
    println!(
        "fan FBP {n}², {views} × {pixels}, {}: {t_fbp:.1} ms (three back-projections {t_three:.1} ms, \
         adjoint alone {t_adj:.1} ms)",
        std::any::type_name::<T>()
    );
    Ok(())
}
