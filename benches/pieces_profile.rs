//! Times layouts of the CUDA ray transform on host data: the volume in slabs × the views in
//! groups ([`CudaOptions::with_pieces`]), each piece's data and volume streamed through the
//! copy lanes while the kernels of the previous piece run. A layout the planner would not
//! choose under the default budget shows what it costs; the device-resident transform is the
//! reference (the kernels alone).
//!
//! ```text
//! cargo bench --features cuda --bench pieces_profile                    # cone_256, 1x1 and 4x4
//! cargo bench --features cuda --bench pieces_profile -- 512 1x1,9x11,4x24
//! ```
//!
//! The cone problem of the benches at `n`: `n³` on `[-1, 1]³`, `n` views over a full turn, a
//! `3n/2 × n` detector, circular about axis 2 (so the slabs lie along `z`, the rotation axis).
//! Prints, per layout, the forward and the adjoint on host data (wall clock: the calls return
//! when the host arrays hold the result) and the pieces the transform runs.

use std::time::Instant;

use rodl::tomo::{Backend, CudaOptions, RayTransform};
use rodl::{Device, LinearOperator, Operator};

mod common;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `cargo bench` passes `--bench`; the rest are ours.
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with("--"));
    let n: usize = args.next().map_or(Ok(256), |a| a.parse())?;
    let layouts = args.next().unwrap_or_else(|| "1x1,4x4".into());
    let (host, geometry) = common::cone(n, n);
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;

    // The reference: device-resident data, the whole transform (kernels alone).
    let gpu = Device::Cuda(0);
    let whole = RayTransform::new(host.with_device(gpu)?, geometry.clone(), Backend::cuda(0))?;
    let x = host.one()?.to_device(gpu)?;
    let y = whole.apply(&x)?;
    let adjoint = whole.adjoint()?;
    adjoint.apply(&y)?;
    gpu.synchronize()?;
    let fd = gpu.time(|| whole.apply(&x).map(drop))?.as_secs_f64() * 1e3;
    let ad = gpu.time(|| adjoint.apply(&y).map(drop))?.as_secs_f64() * 1e3;
    println!("cone_{n} device-resident: forward {fd:8.1} ms, adjoint {ad:8.1} ms");
    drop((x, y, adjoint, whole));

    let xh = host.one()?;
    for l in layouts.split(',') {
        let (k, m) = l
            .split_once('x')
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
            .ok_or_else(|| format!("layout {l}: want SLABSxGROUPS, e.g. 4x4"))?;
        let t = Instant::now();
        let ray = RayTransform::new(
            host.clone(),
            geometry.clone(),
            Backend::Cuda(CudaOptions::new(0).with_pieces(k, m)),
        )?;
        let setup = ms(t);
        let pieces = ray.pieces().map_or("whole".to_string(), |p| {
            format!(
                "{} slabs along axis {} x {} view groups",
                p.slabs.len(),
                p.slab_axis,
                p.view_groups.len()
            )
        });
        let adjoint = ray.adjoint()?;
        let yh = ray.apply(&xh)?; // warm-up (kernels, lanes)
        adjoint.apply(&yh)?;
        let t = Instant::now();
        let yh = ray.apply(&xh)?;
        let fh = ms(t);
        let t = Instant::now();
        adjoint.apply(&yh)?;
        let ah = ms(t);
        println!(
            "cone_{n} {k:>3} x {m:>3} ({pieces}): host data forward {fh:8.1} ms, adjoint {ah:8.1} ms (set-up {setup:.0} ms)"
        );
    }
    Ok(())
}
