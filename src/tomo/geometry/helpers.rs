//! ODL-style helpers that choose the detector sampling from the volume.

use std::f64::consts::PI;

use super::Geometry;
use crate::{Error, Result, Scalar, Space, UniformPartition};

fn radius_and_omega<T: Scalar>(space: &Space<T>) -> Result<(f64, f64)> {
    let p = space.partition()?;
    if p.ndim() != 2 && p.ndim() != 3 {
        return Err(Error::Geometry(format!(
            "need a 2D or 3D volume, got {}D",
            p.ndim()
        )));
    }
    let (lo, hi) = (p.min_pt(), p.max_pt());
    let mut rho: f64 = 0.0;
    for x in [lo[0], hi[0]] {
        for y in [lo[1], hi[1]] {
            rho = rho.max(x.hypot(y));
        }
    }
    let min_side = p.cell_sides()[..2]
        .iter()
        .cloned()
        .fold(f64::INFINITY, f64::min);
    Ok((rho, PI / min_side))
}

/// A parallel-beam geometry that samples `space` well (ODL's `parallel_beam_geometry`):
/// angles over `[0, π)`, a detector over `[−ρ, ρ]` (ρ = radius of the volume's bounding circle)
/// with `2⌈ρ ω / π⌉ + 1` pixels (ω = π / smallest cell side), and in 3D a vertical detector
/// axis matching the volume's z extent and sampling. `num_angles = None` picks `⌈ω ρ⌉`.
///
/// ```
/// use rodl::{tomo::parallel_beam_geometry, uniform_discr};
/// let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[512, 512])?;
/// let g = parallel_beam_geometry(&space, Some(512))?;
/// assert_eq!(g.data_shape(), vec![512, 727]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn parallel_beam_geometry<T: Scalar>(
    space: &Space<T>,
    num_angles: Option<usize>,
) -> Result<Geometry> {
    let (rho, omega) = radius_and_omega(space)?;
    let n_u = 2 * (rho * omega / PI).ceil() as usize + 1;
    let n_angles = num_angles.unwrap_or((omega * rho).ceil() as usize);
    let angles = UniformPartition::new(&[0.0], &[PI], &[n_angles])?;
    let p = space.partition()?;
    if p.ndim() == 2 {
        let det = UniformPartition::new(&[-rho], &[rho], &[n_u])?;
        Geometry::parallel_2d(&angles, &det)
    } else {
        let det = UniformPartition::new(
            &[-rho, p.min_pt()[2]],
            &[rho, p.max_pt()[2]],
            &[n_u, p.shape()[2]],
        )?;
        Geometry::parallel_3d(&angles, &det, [0.0, 0.0, 1.0], [0.0, 0.0])
    }
}

/// A full-scan fan-beam (2D) or circular cone-beam (3D) geometry that sees all of `space`
/// (after ODL's `cone_beam_geometry`): a flat detector of width `2ρ(rs + rd)/rs`, and in 3D of
/// height `2 z_max (rs + rd)/(rs − ρ)`, sampled like the parallel-beam helper, with
/// `num_angles` over `[0, 2π)` (`None` picks ODL's `⌈2 ω ρ r / (r + ρ)⌉`, `r = rs + rd`: the
/// angular sampling a fan of rays needs).
pub fn cone_beam_geometry<T: Scalar>(
    space: &Space<T>,
    src_radius: f64,
    det_radius: f64,
    num_angles: Option<usize>,
) -> Result<Geometry> {
    let (rho, omega) = radius_and_omega(space)?;
    if !(src_radius > rho) {
        return Err(Error::Geometry(format!(
            "src_radius {src_radius} must exceed the volume's radius {rho}"
        )));
    }
    let r = src_radius + det_radius;
    let w = 2.0 * rho * r / src_radius;
    let rb = r.hypot(w / 2.0);
    let n_u = 2 * (w * omega * r / (2.0 * PI * rb)).ceil() as usize + 1;
    let n_angles = num_angles.unwrap_or((2.0 * omega * rho * r / (r + rho)).ceil() as usize);
    let angles = UniformPartition::new(&[0.0], &[2.0 * PI], &[n_angles])?;
    let p = space.partition()?;
    if p.ndim() == 2 {
        let det = UniformPartition::new(&[-w / 2.0], &[w / 2.0], &[n_u])?;
        Geometry::fan_flat(&angles, &det, src_radius, det_radius, 0.0)
    } else {
        let zmax = p.min_pt()[2].abs().max(p.max_pt()[2].abs());
        let h = 2.0 * zmax * r / (src_radius - rho);
        let hz = p.cell_sides()[2];
        let n_v = 2 * (h * r / (2.0 * hz * r.hypot(h / 2.0))).ceil() as usize + 1;
        let det = UniformPartition::new(&[-w / 2.0, -h / 2.0], &[w / 2.0, h / 2.0], &[n_u, n_v])?;
        Geometry::cone_flat(
            &angles,
            &det,
            src_radius,
            det_radius,
            0.0,
            [0.0, 0.0, 1.0],
            [0.0, 0.0],
        )
    }
}
