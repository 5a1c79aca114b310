//! A clinical CT scan in miniature: a helical cone beam with a cylindrical detector about the
//! focal spot and a flying focal spot, reconstructed iteratively (CGLS). Prints PSNR and SSIM
//! against the phantom after each block of iterations.
//!
//! ```text
//! cargo run --release --example reconstruct_clinical -- [SIZE] [ITERATIONS]   # 48, 15
//! ```
//!
//! The scan: a 3D modified Shepp–Logan phantom on `[-1, 1]³` (`SIZE² × SIZE·2/3` voxels),
//! three turns of a helix (source at distance 3 from the axis, the detector's centre 3 beyond
//! it, pitch 1 per turn, so the helix covers the volume's height with a margin), a detector on
//! the cylinder about the focal spot (radius 6, axis along the rotation axis: the clinical
//! detector), sampled in fan angle × height, and a flying focal spot alternating between two
//! positions (±0.01 along the detector's `u` direction and along the axis, as ODL's
//! `flying_focal_spot`). The data are the phantom's exact line integrals along each pixel's
//! central ray (`shepp_logan_projections`, independent of rodl's ray model) with 1 % Gaussian
//! noise.
//!
//! **FDK, then CGLS**: rodl's helical FDK (`fbp_op` on a helix of at least one turn with a pitch
//! factor of at most 1, here 0.83) needs a source that moves only along the helix, so it is
//! built on the nominal helix, without the focal spot's offsets (an approximation of 0.01 in
//! the source position); asked for the exact geometry it says why it cannot with
//! `Error::Unsupported` — shown below. CGLS needs only the ray transform and its exact adjoint,
//! which handle helices, curved detectors and focal spot offsets on the CPU and the GPU; it
//! starts from the FDK image. With this noise CGLS is semi-convergent: run it for a few
//! iterations and watch the PSNR.

use std::f64::consts::PI;
use std::time::Instant;

use rand::{rngs::StdRng, SeedableRng};
use rodl::prelude::*;
use rodl::tomo::phantom::noise::{add_gaussian_noise, NoiseLevel};
use rodl::tomo::phantom::shepp_logan_projections;
use rodl::tomo::Geometry;
use rodl::UniformPartition;

/// Source–axis and axis–detector distances.
const R: f64 = 3.0;
const D: f64 = 3.0;
/// Axial advance per turn.
const PITCH: f64 = 1.0;
/// Turns of the helix.
const TURNS: f64 = 3.0;
/// Views per turn.
const VIEWS_PER_TURN: usize = 96;
/// Flying focal spot: the two source offsets (towards the source, along `u`, along the axis).
const FOCAL_SPOTS: [[f64; 3]; 2] = [[0.0, 0.01, 0.01], [0.0, -0.01, -0.01]];
/// CGLS iterations between two reports.
const REPORT_EVERY: usize = 5;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = args.first().map_or(Ok(48), |a| a.parse::<usize>())?;
    let iterations = args.get(1).map_or(Ok(15), |a| a.parse::<usize>())?;
    let nz = (2 * n / 3).max(2);
    let space = uniform_discr::<f32>(&[-1.0, -1.0, -1.0], &[1.0, 1.0, 1.0], &[n, n, nz])?;

    // The helix, symmetric about z = 0; the fan covers the unit disc with a margin, the
    // detector's height a little more than one pitch at the axis.
    let views = (TURNS * VIEWS_PER_TURN as f64) as usize;
    let half_turns = TURNS * PI;
    let angles = UniformPartition::new(&[-half_turns], &[half_turns], &[views])?;
    let fan = 1.1 * (1.0 / R).asin();
    let height = 1.2 * PITCH * (R + D) / R / 2.0;
    let detector = UniformPartition::new(&[-fan, -height], &[fan, height], &[2 * n, n / 2])?;
    // The nominal helix; the scan's source follows it with the flying focal spot's offsets.
    let nominal = Geometry::cone_curved(
        &angles,
        &detector,
        R,
        D,
        [Some(R + D), None],
        PITCH,
        [0.0, 0.0, 1.0],
        [0.0, 0.0],
    )?;
    let geometry = nominal.with_src_offsets(&FOCAL_SPOTS)?;
    let ray = RayTransform::new(space.clone(), geometry.clone(), Backend::default())?;

    let phantom = shepp_logan(&space, true)?;
    let exact = ray.range().element_from_vec(
        shepp_logan_projections(&space, &geometry, true)?
            .iter()
            .copied()
            .collect(),
    )?;
    let mut rng = StdRng::seed_from_u64(1);
    let data = add_gaussian_noise(ray.range(), &exact, NoiseLevel::Relative(0.01), &mut rng)?;
    println!(
        "helical scan: {views} views ({TURNS} turns, pitch {PITCH}), cylindrical detector \
         {} × {} (radius {}), flying focal spot ({} positions); volume {n}² × {nz}",
        2 * n,
        n / 2,
        R + D,
        FOCAL_SPOTS.len()
    );

    if let Err(e) = fbp_op(&ray, &FbpOptions::default()) {
        println!("FDK with the flying focal spot: {e}");
    }
    // Helical FDK on the nominal helix (the focal spot's offsets left out).
    let ray_nominal = RayTransform::new(space.clone(), nominal, Backend::default())?;
    let fdk = fbp_op(&ray_nominal, &FbpOptions::new(FilterType::Hann))?;
    let start = Instant::now();
    let mut x = fdk.apply(
        &ray_nominal
            .range()
            .element_from_vec(data.as_slice()?.to_vec())?,
    )?;
    println!(
        "helical FDK (Hann): PSNR {:.2} dB, SSIM {:.3} ({:.1} s)",
        psnr(&space, &x, &phantom, None)?,
        ssim(&space, &x, &phantom, None)?,
        start.elapsed().as_secs_f64()
    );

    let start = Instant::now();
    cgls(
        &ray,
        &mut x,
        &data,
        iterations,
        &mut from_fn(|x, info| {
            if info.iteration % REPORT_EVERY == 0 || info.iteration == iterations {
                println!(
                    "CGLS {:3} iterations: PSNR {:.2} dB, SSIM {:.3} ({:.1} s)",
                    info.iteration,
                    psnr(&space, x, &phantom, None)?,
                    ssim(&space, x, &phantom, None)?,
                    start.elapsed().as_secs_f64()
                );
            }
            Ok(Control::Continue)
        }),
    )?;
    Ok(())
}
