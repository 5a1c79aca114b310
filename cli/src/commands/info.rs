//! `rodl info`: what a geometry file describes — kind, shapes, sampling (angle step, detector
//! cell, voxel size) and the detector's coverage of the volume.

use std::f64::consts::PI;
use std::path::Path;

use rodl::tomo::{Beam, GeometryKind};

use super::Setup;
use crate::coverage::coverage;
use crate::Failure;

/// `rodl info`.
pub fn run(geometry: &Path) -> Result<(), Failure> {
    let setup = Setup::load(geometry)?;
    let mut text = describe(&setup)?.join("\n");
    text.push('\n');
    crate::term::print(&text)
}

fn fmt_list(v: &[f64]) -> String {
    let items: Vec<String> = v.iter().map(|x| format!("{}", round_sig(*x))).collect();
    format!("[{}]", items.join(", "))
}

/// `x` rounded to 6 significant digits, for display.
fn round_sig(x: f64) -> Shown {
    Shown(round_sig_f64(x))
}

/// A number for display: plain between 1e-4 and 1e7, else in scientific notation.
#[derive(Clone, Copy)]
struct Shown(f64);

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let x = self.0;
        if x == 0.0 || !x.is_finite() || (1e-4..1e7).contains(&x.abs()) {
            write!(f, "{x}")
        } else {
            write!(f, "{x:e}")
        }
    }
}

fn round_sig_f64(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let digits = 6 - 1 - x.abs().log10().floor() as i32;
    let p = 10f64.powi(digits.clamp(-300, 300));
    (x * p).round() / p
}

fn norm(a: [f64; 3]) -> f64 {
    (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt()
}

/// The lines `rodl info` prints.
pub fn describe(setup: &Setup) -> Result<Vec<String>, Failure> {
    let spec = &setup.spec;
    let gspec = &spec.geometry;
    let geometry = &setup.geometry;
    let vec = geometry.vec();
    let ndim = geometry.ndim();
    let kind = serde_json::to_value(gspec.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{:?}", gspec.kind).to_lowercase());
    let space = spec.volume.space::<f64>()?;
    let cells = space.cell_sides()?;
    let beam = match vec.beam() {
        Beam::Parallel => "parallel beam",
        Beam::Point => {
            if ndim == 2 {
                "fan beam"
            } else {
                "cone beam"
            }
        }
    };
    let data_axes = if ndim == 2 {
        "[angle, u]"
    } else {
        "[angle, u, v]"
    };
    let data_shape = setup.data_shape();
    let mut out = vec![];
    out.push(format!("geometry: {kind} ({ndim}D, {beam})"));
    let voxels: u128 = spec.volume.shape.iter().map(|&n| n as u128).product();
    out.push(format!(
        "volume:   shape {:?} ({voxels} voxels), min_pt {}, max_pt {}",
        spec.volume.shape,
        fmt_list(&spec.volume.min_pt),
        fmt_list(&spec.volume.max_pt),
    ));
    out.push(format!(
        "          voxel size {} (cell sides)",
        fmt_list(&cells)
    ));
    let values: u128 = data_shape.iter().map(|&n| n as u128).product();
    out.push(format!(
        "data:     shape {data_shape:?} {data_axes} ({values} values)"
    ));
    // The spaces' weights, and what turns a TV weight of plain sums into rodl's (see
    // `rodl::solvers::tv`): λ = λₛ · w_data · h / w_volume.
    let (w_vol, w_data) = (
        space.cell_volume()?,
        geometry.data_partition().cell_volume(),
    );
    let h = cells.iter().cloned().fold(f64::INFINITY, f64::min);
    out.push(format!(
        "weights:  volume {} (voxel volume), data {} (angle step × pixel size); a TV weight \
         λₛ of plain sums is λₛ × {} here",
        round_sig(w_vol),
        round_sig(w_data),
        round_sig(w_data * h / w_vol)
    ));

    // Angles.
    if let Some(a) = &gspec.angles {
        let step = (a.max - a.min) / a.count as f64;
        out.push(format!(
            "angles:   {} in [{}, {}] rad ({}°), step {} rad ({}°)",
            a.count,
            round_sig(a.min),
            round_sig(a.max),
            round_sig((a.max - a.min).to_degrees()),
            round_sig(step),
            round_sig(step.to_degrees()),
        ));
    } else {
        out.push(format!("views:    {} (given one by one)", vec.num_views()));
    }

    // Detector.
    let v0 = vec.views()[0];
    let mut pixel = vec![norm(v0.det_u)];
    if ndim == 3 {
        pixel.push(norm(v0.det_v));
    }
    let det_shape = vec.det_shape();
    let extent: Vec<f64> = det_shape
        .iter()
        .zip(&pixel)
        .map(|(&n, &d)| n as f64 * d)
        .collect();
    out.push(format!(
        "detector: {det_shape:?} pixels of size {}, extent {}",
        fmt_list(&pixel),
        fmt_list(&extent)
    ));
    if let Some(r) = vec.detector().radius() {
        let shape = match vec.detector() {
            rodl::tomo::Detector::Spherical { .. } => "spherical",
            _ if ndim == 2 => "an arc",
            _ => "cylindrical",
        };
        out.push(format!(
            "          curved: {shape}, curvature radius {} (sizes and extent are arc lengths \
             at the pixel centres)",
            round_sig(r)
        ));
    }
    let mut magnification = 1.0;
    if let (Some(rs), Some(rd)) = (gspec.src_radius, gspec.det_radius) {
        magnification = (rs + rd) / rs;
        let at_centre: Vec<f64> = pixel.iter().map(|p| p / magnification).collect();
        let mut line = format!(
            "source:   src_radius {}, det_radius {}, magnification {}, pixel size at the \
             rotation axis {}",
            round_sig(rs),
            round_sig(rd),
            round_sig(magnification),
            fmt_list(&at_centre)
        );
        if let Some(p) = gspec.pitch.filter(|p| *p != 0.0) {
            line.push_str(&format!(", helical pitch {}", round_sig(p)));
        }
        if let Some(o) = &gspec.src_offsets {
            line.push_str(&format!(
                ", flying focal spot of {} source offsets (used cyclically)",
                o.len()
            ));
        }
        out.push(line);
    }

    // Sampling compared with ODL's helpers (parallel_beam_geometry / cone_beam_geometry).
    let min_cell = cells[..2].iter().cloned().fold(f64::INFINITY, f64::min);
    let axis = gspec.axis.unwrap_or([0.0, 0.0, 1.0]);
    let an = norm(axis);
    let rho = corners_radius(
        &spec.volume.min_pt,
        &spec.volume.max_pt,
        axis.map(|a| a / an),
    );
    if gspec.kind != GeometryKind::Vec {
        // Parallel beams: ⌈πρ/Δx⌉ over π; point sources: ⌈2πρ/Δx · r/(r + ρ)⌉ over 2π
        // (r = src_radius + det_radius), as ODL's helpers choose them.
        let (count, full, over) = match (vec.beam(), gspec.src_radius, gspec.det_radius) {
            (Beam::Point, Some(rs), Some(rd)) => {
                let r = rs + rd;
                (
                    format!("⌈2πρ/Δx · r/(r + ρ)⌉ (r = {})", round_sig(r)),
                    (2.0 * PI * rho / min_cell * r / (r + rho)).ceil(),
                    "2π",
                )
            }
            _ => ("⌈πρ/Δx⌉".to_string(), (rho * PI / min_cell).ceil(), "π"),
        };
        let full = round_sig(full);
        let mut ratio = format!("{}", round_sig(pixel[0] / magnification / min_cell));
        if ndim == 3 {
            ratio = format!(
                "{ratio} (u), {} (v, against the z side)",
                round_sig(pixel[1] / magnification / cells[2])
            );
        }
        out.push(format!(
            "sampling: detector pixel at the axis / voxel side = {ratio}; {} angles (ODL's \
             helpers take {count} = {full} over {over} for this volume, ρ = {})",
            vec.num_views(),
            round_sig(rho),
        ));
    }

    // Coverage.
    if vec.detector().is_curved() {
        // The corners' shadows on a curved detector do not bound the volume's shadow.
        out.push(format!(
            "coverage: not computed for a curved detector ({:?})",
            vec.detector()
        ));
        return Ok(out);
    }
    let c = coverage(vec, &spec.volume.min_pt, &spec.volume.max_pt);
    let mut line = format!(
        "coverage: the whole volume (its bounding box) projects onto the detector in {} of {} \
         views ({}%)",
        c.covered,
        c.views,
        round_sig((c.percent() * 10.0).round() / 10.0)
    );
    if c.covered < c.views {
        let over = |x: f64| round_sig((x * 100.0).round() / 100.0);
        let mut parts = vec![];
        if c.overhang[0] > 0.0 {
            parts.push(format!("{} pixels along u", over(c.overhang[0])));
        }
        if ndim == 3 && c.overhang[1] > 0.0 {
            parts.push(format!("{} pixels along v", over(c.overhang[1])));
        }
        if !parts.is_empty() {
            line.push_str(&format!(
                "; it sticks out past the detector by up to {}",
                parts.join(" and ")
            ));
        }
        if gspec.pitch.is_some_and(|p| p != 0.0) {
            line.push_str(" (a helical scan sees a part of the volume in each view)");
        }
    }
    out.push(line);
    if c.behind_source > 0 {
        out.push(format!(
            "warning:  the source lies inside or next to the volume in {} views",
            c.behind_source
        ));
    }
    Ok(out)
}

/// The largest distance of a corner of the box `[min_pt, max_pt]` from the line through the
/// origin along the unit vector `axis` (in 2D: from the origin).
fn corners_radius(min_pt: &[f64], max_pt: &[f64], axis: [f64; 3]) -> f64 {
    let n = min_pt.len();
    let mut rho: f64 = 0.0;
    for mask in 0..1usize << n {
        let mut p = [0.0; 3];
        for k in 0..n {
            p[k] = if mask >> k & 1 == 1 {
                max_pt[k]
            } else {
                min_pt[k]
            };
        }
        let along = if n == 3 {
            p[0] * axis[0] + p[1] * axis[1] + p[2] * axis[2]
        } else {
            0.0
        };
        let perp = [
            p[0] - along * axis[0],
            p[1] - along * axis[1],
            p[2] - along * axis[2],
        ];
        rho = rho.max(norm(perp));
    }
    rho
}
