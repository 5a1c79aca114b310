//! FBP, CGLS and SIRT from an ODL geometry file: the scan described in JSON (what the
//! README's Python snippet writes from ODL's objects), the sinogram as `.npy`, and the
//! reconstructions compared with the phantom (the data are noise-free, so FBP uses the plain
//! ramp; on noisy data take a smoother window such as `FilterType::Hann`).
//!
//! ```text
//! cargo run --release --example from_geometry_file -- [CASE | GEOMETRY.json SINOGRAM.npy [IMAGE.npy]]
//! ```
//!
//! By default it reads `tests/data/odl/par2d_64.json` and the sinogram that ODL 1.0 with ASTRA
//! computed for it; `CASE` picks another of those cases (`fan2d_64`, `par3d_32`, `cone3d_32`,
//! `helical_32`: FBP is FDK for cone beams). Each case has ODL's phantom next to it, which the
//! reconstructions are compared with.

use std::path::PathBuf;
use std::time::Instant;

use ndarray::ArrayD;
use ndarray_npy::read_npy;
use rodl::diagnostics::relative_error;
use rodl::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let case = |name: &str, suffix: &str| PathBuf::from(format!("tests/data/odl/{name}{suffix}"));
    let (geometry, sinogram, image) = match args.as_slice() {
        [] => (
            case("par2d_64", ".json"),
            case("par2d_64", "_sino.npy"),
            Some(case("par2d_64", "_image.npy")),
        ),
        [name] => (
            case(name, ".json"),
            case(name, "_sino.npy"),
            Some(case(name, "_image.npy")),
        ),
        [g, s] => (g.into(), s.into(), None),
        [g, s, i] => (g.into(), s.into(), Some(i.into())),
        _ => {
            return Err(
                "usage: from_geometry_file [CASE | GEOMETRY.json SINOGRAM.npy [IMAGE.npy]]".into(),
            )
        }
    };

    // The geometry file gives the volume space and the geometry; the data go into the range.
    let spec = TomoSpec::from_file(&geometry)?;
    let space: Space<f32> = spec.volume.space()?;
    let ray = RayTransform::new(space.clone(), spec.geometry.build()?, Backend::default())?;
    let y = ray
        .range()
        .element(read_npy::<_, ArrayD<f32>>(&sinogram)?)?;
    let phantom = match &image {
        Some(p) => Some(space.element(read_npy::<_, ArrayD<f32>>(p)?)?),
        None => None,
    };
    println!(
        "{}: volume {:?}, data {:?}",
        geometry.display(),
        space.shape()?,
        ray.range().shape()?
    );

    let report = |name: &str, x: &Element<f32>, t: Instant| -> rodl::Result<()> {
        let seconds = t.elapsed().as_secs_f64();
        match &phantom {
            Some(p) => println!(
                "  {name:<18} {seconds:6.2} s   relative error {:.3}   PSNR {:.2} dB",
                relative_error(&space, x, p)?,
                psnr(&space, x, p, None)?
            ),
            None => println!("  {name:<18} {seconds:6.2} s"),
        }
        Ok(())
    };

    let t = Instant::now();
    let x = fbp_op(&ray, &FbpOptions::new(FilterType::RamLak))?.apply(&y)?;
    report("FBP (Ram-Lak)", &x, t)?;

    let t = Instant::now();
    let mut x = space.zero()?;
    cgls(&ray, &mut x, &y, 10, &mut ())?;
    report("CGLS, 10 it.", &x, t)?;

    let t = Instant::now();
    let mut x = space.zero()?;
    let options = SirtOptions {
        relaxation: 1.9,
        nonnegative: true,
    };
    sirt(&ray, &mut x, &y, 50, &options, &mut ())?;
    report("SIRT, 50 it., x≥0", &x, t)?;
    Ok(())
}
