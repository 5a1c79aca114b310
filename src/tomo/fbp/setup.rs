//! What FBP needs to know about a geometry: the rotation, the detector sampling, and for point
//! sources the source and detector distances, derived from the per-view vectors and checked to
//! describe a circular scan (at the angle partition's angles, or at any angles with the
//! angular weights of [`super::quadrature`]).

use std::f64::consts::PI;

use super::super::geometry::{Beam, Detector, Geometry, View};
use super::quadrature::{period, quadrature, Quadrature};
use crate::{Error, Result};

/// Source placement of an FBP geometry.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    /// Parallel beams.
    Parallel,
    /// A point source on a circle about the rotation axis, with a flat detector.
    Point {
        /// Distance of the source from the rotation axis.
        r: f64,
        /// Distance of the source from the detector plane.
        d: f64,
        /// Coordinate of each detector column along u, measured from the foot of the source on
        /// the detector and signed so that the fan angle `γ = atan(u / d)` turns with the scan.
        u: Vec<f64>,
        /// Coordinate of each detector row along v from the source's foot (`[0]` in 2D).
        v: Vec<f64>,
        /// Each view's central direction (unit, from the source through the axis to the
        /// detector).
        central: Vec<[f64; 3]>,
    },
    /// A 2D fan beam whose detector is an arc about the source (equiangular): the data rows
    /// are sampled in the fan angle.
    Arc {
        /// Distance of the source from the rotation centre.
        r: f64,
        /// The fan angle of each detector column, signed so that it turns with the scan (the
        /// ray angle is `β + γ`).
        gamma: Vec<f64>,
        /// Each view's central direction (unit, from the source through the centre).
        central: Vec<[f64; 3]>,
        /// 3D (a cylinder about the source, axis along the rotation axis): the detector's
        /// radius and each row's height above the source's plane (`[0]` in 2D).
        height: Option<(f64, Vec<f64>)>,
    },
}

/// The scan as FBP sees it.
#[derive(Clone, Debug)]
pub(crate) struct Setup {
    pub ndim: usize,
    pub nviews: usize,
    pub nu: usize,
    pub nv: usize,
    /// Detector spacing along u.
    pub du: f64,
    /// Length of the angle interval (`max − min` of the angle partition).
    pub alen: f64,
    /// Each view's rotation angle from the start of the angle interval.
    pub betas: Vec<f64>,
    pub source: Source,
    /// A helical scan: the source's shift along the rotation axis per radian (`None` for a
    /// circular scan).
    pub helix: Option<f64>,
    /// Views not at the angle partition's angles: each view's angular weight `ω_k` (its share
    /// of the range over the partition's cell, [`super::quadrature`]); `None` for views at the
    /// partition's angles (weight 1).
    pub view_weights: Option<Vec<f64>>,
    /// The detector cells the filter works with (`du`, and the row spacing in 3D) over those of
    /// the data partition, which the adjoint weights by: 1 for the library's geometries, other
    /// values for views given as vectors on another partition (a curved detector's arc length
    /// instead of its angle, say).
    pub cell_ratio: f64,
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
fn norm(a: [f64; 3]) -> f64 {
    dot(a, a).sqrt()
}
fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn unit(a: [f64; 3]) -> [f64; 3] {
    let n = norm(a);
    a.map(|x| x / n)
}

/// The source's shift along the axis per radian of a scan whose source heights are `height(k)`
/// at the angles `betas` (from the first view to the last; 0 for one view or a circular scan);
/// the caller checks every view against it.
fn helix_of(betas: &[f64], height: impl Fn(usize) -> f64) -> f64 {
    let last = betas.len().saturating_sub(1);
    let span = betas[last] - betas[0];
    if last == 0 || span == 0.0 {
        return 0.0;
    }
    let pitch = (height(last) - height(0)) / span;
    // Rounding of a circular scan's heights is no helix.
    if pitch.abs() * span <= 1e-12 * (1.0 + height(0).abs()) {
        0.0
    } else {
        pitch
    }
}

/// The rotation sense (±1) of views whose unit directions `dirs` turn about `axis` at the
/// angle partition's angles (`betas`, from the start of a range `alen`), or `None` when they
/// are at other angles (non-uniform, random, a subset, views given as vectors).
fn partition_angles(dirs: &[[f64; 3]], axis: [f64; 3], betas: &[f64], alen: f64) -> Option<f64> {
    if dirs.len() < 2 {
        return Some(1.0);
    }
    let mut phi = 0.0;
    let mut phis = vec![0.0];
    for k in 1..dirs.len() {
        let (a, b) = (dirs[k - 1], dirs[k]);
        phi += dot(axis, cross(a, b)).atan2(dot(a, b));
        phis.push(phi);
    }
    let sense = if phis[1] < 0.0 { -1.0 } else { 1.0 };
    let scale = 1.0f64.max(alen);
    (0..dirs.len())
        .all(|k| (sense * phis[k] - (betas[k] - betas[0])).abs() <= 1e-6 * scale)
        .then_some(sense)
}

/// The detector cells `du` (and `dv` in 3D) over the data partition's.
fn cell_ratio(part: &crate::UniformPartition, du: f64, dv: f64, ndim: usize) -> f64 {
    let mut r = du / part.cell_side(1);
    if ndim == 3 {
        r *= dv / part.cell_side(2);
    }
    r
}

fn unsupported(what: &str) -> Error {
    Error::Unsupported(format!(
        "FBP needs a circular or helical scan (at any angles) with a detector that turns with \
         it (parallel_2d, fan_flat, parallel_3d, cone_flat): {what}"
    ))
}

/// Per-view placement of a point source relative to the detector.
struct PointView {
    d: f64,
    u0: f64,
    v0: f64,
    r: f64,
    height: f64,
    su: f64,
    /// Distance of the source from `−r · normal` (0 when the central ray meets the axis).
    skew: f64,
}

impl Setup {
    /// Analyses `geometry`. Views at the angle partition's angles take their angles from it;
    /// views at other angles (non-uniform, random, subsets, views given as vectors) take them
    /// from their vectors, with per-view angular weights ([`super::quadrature`]). Errors with
    /// [`Error::Unsupported`] for geometries FBP cannot handle (views that do not form a
    /// circular scan or a helix whose source shifts uniformly along the axis, tilted detectors).
    pub(crate) fn new(geometry: &Geometry) -> Result<Self> {
        let g = geometry.vec();
        match g.detector() {
            Detector::Flat => {}
            Detector::Cylindrical { radius } => return Self::arc(geometry, radius),
            d => {
                // The weights below are those of a flat detector.
                return Err(Error::Unsupported(format!(
                    "FDK for a {d:?} detector is not implemented; reconstruct it iteratively \
                     (the ray transform supports it on the CPU)"
                )));
            }
        }
        let part = geometry.data_partition();
        let ndim = g.ndim();
        let views = g.views();
        let nviews = views.len();
        let (nu, nv) = (g.nu(), g.nv());
        let alen = part.max_pt()[0] - part.min_pt()[0];
        let betas: Vec<f64> = part
            .coord_vector(0)?
            .iter()
            .map(|t| t - part.min_pt()[0])
            .collect();
        let du = norm(views[0].det_u);
        let dv = norm(views[0].det_v);
        let tol = 1e-6;
        let ez = [0.0, 0.0, 1.0];
        let eu0 = unit(views[0].det_u);
        // The rotation axis: e_z in 2D, the detector's v axis in 3D.
        let axis = if ndim == 2 {
            ez
        } else {
            if dv == 0.0 || dot(eu0, unit(views[0].det_v)).abs() > tol {
                return Err(unsupported("the detector axes are not orthogonal"));
            }
            unit(views[0].det_v)
        };
        // The unit detector normal of each view, pointing away from the source side.
        let normal = |v: &View| -> [f64; 3] {
            let eu = unit(v.det_u);
            let n = unit(cross(axis, eu));
            let towards = match g.beam() {
                Beam::Parallel => v.src,
                Beam::Point => sub(v.det_center, v.src),
            };
            if dot(n, towards) < 0.0 {
                n.map(|x| -x)
            } else {
                n
            }
        };
        let normals: Vec<[f64; 3]> = views.iter().map(normal).collect();
        for v in views {
            if (norm(v.det_u) - du).abs() > tol * du
                || dot(unit(v.det_u), axis).abs() > tol
                || (ndim == 3
                    && ((norm(v.det_v) - dv).abs() > tol * dv
                        || dot(unit(v.det_v), axis).abs() < 1.0 - tol))
            {
                return Err(unsupported("the detector does not keep its size and axes"));
            }
        }
        // Rotation angles from the vectors, unwrapped, against the angle partition; views at
        // other angles get the angular quadrature of their own angles.
        let (sense, angles) = match partition_angles(&normals, axis, &betas, alen) {
            Some(sense) => (sense, None),
            None => (
                1.0,
                Some(quadrature(
                    &normals,
                    axis,
                    period(matches!(g.beam(), Beam::Parallel)),
                    alen,
                    part.cell_side(0),
                )),
            ),
        };
        let axis = axis.map(|x| sense * x);
        let mut helix = None;
        let source = match g.beam() {
            Beam::Parallel => {
                for (v, n) in views.iter().zip(&normals) {
                    if dot(unit(v.src), *n) < 1.0 - tol {
                        return Err(unsupported("the rays are not normal to the detector"));
                    }
                }
                Source::Parallel
            }
            Beam::Point => {
                let place = |v: &View, n: [f64; 3]| -> PointView {
                    let d = dot(sub(v.det_center, v.src), n);
                    let foot = [0, 1, 2].map(|k| v.src[k] + d * n[k]);
                    let off = sub(v.det_center, foot);
                    let eu = unit(v.det_u);
                    let along = dot(v.src, axis);
                    let radial = [0, 1, 2].map(|k| v.src[k] - along * axis[k]);
                    PointView {
                        d,
                        u0: dot(off, eu),
                        v0: if ndim == 3 {
                            dot(off, unit(v.det_v))
                        } else {
                            0.0
                        },
                        r: norm(radial),
                        height: along,
                        su: dot(axis, cross(n, eu)),
                        skew: norm([0, 1, 2].map(|k| radial[k] + norm(radial) * n[k])),
                    }
                };
                let p0 = place(&views[0], normals[0]);
                if !(p0.d > 0.0 && p0.r > 0.0) {
                    return Err(unsupported(
                        "the source lies on the detector or on the axis",
                    ));
                }
                if p0.skew > 1e-6 * (p0.d + p0.r) {
                    return Err(unsupported(
                        "the detector is not perpendicular to the line from the source to the axis",
                    ));
                }
                let scale = p0.d + p0.r;
                let pitch = helix_of(&betas, |k| place(&views[k], normals[k]).height);
                for (k, (v, n)) in views.iter().zip(&normals).enumerate() {
                    let p = place(v, *n);
                    let same = |a: f64, b: f64| (a - b).abs() <= 1e-6 * scale;
                    if !(same(p.d, p0.d)
                        && same(p.u0, p0.u0)
                        && same(p.v0, p0.v0)
                        && same(p.r, p0.r)
                        && same(p.height, p0.height + pitch * (betas[k] - betas[0]))
                        && (p.su - p0.su).abs() < tol)
                    {
                        return Err(unsupported(
                            "the source or detector moves other than by rotation and a \
                             uniform shift along the axis (general vector geometry)",
                        ));
                    }
                }
                helix = (pitch != 0.0).then_some(pitch);
                let su = p0.su.signum();
                let u = (0..nu)
                    .map(|i| su * (p0.u0 + (i as f64 - 0.5 * (nu as f64 - 1.0)) * du))
                    .collect();
                let v = (0..nv)
                    .map(|j| p0.v0 + (j as f64 - 0.5 * (nv as f64 - 1.0)) * dv)
                    .collect();
                Source::Point {
                    r: p0.r,
                    d: p0.d,
                    u,
                    v,
                    central: normals,
                }
            }
        };
        Ok(Self::with_angles(
            Self {
                ndim,
                nviews,
                nu,
                nv,
                du,
                alen,
                betas,
                source,
                view_weights: None,
                cell_ratio: cell_ratio(part, du, dv, ndim),
                helix,
            },
            angles,
        ))
    }

    /// The set-up with the views' own angles, range and weights where they are given.
    fn with_angles(mut self, angles: Option<Quadrature>) -> Self {
        if let Some(q) = angles {
            self.betas = q.betas;
            self.alen = q.alen;
            self.view_weights = Some(q.weights);
        }
        self
    }

    /// A fan beam with an arc detector of radius `radius` (2D), or a circular cone beam with
    /// a cylindrical detector about the rotation axis's direction (3D): it must be centred on a
    /// source that turns on a circle about the origin with the angle partition's angles.
    fn arc(geometry: &Geometry, radius: f64) -> Result<Self> {
        let g = geometry.vec();
        let part = geometry.data_partition();
        let views = g.views();
        let (nviews, nu, nv) = (views.len(), g.nu(), g.nv());
        let ndim = g.ndim();
        let alen = part.max_pt()[0] - part.min_pt()[0];
        let betas: Vec<f64> = part
            .coord_vector(0)?
            .iter()
            .map(|t| t - part.min_pt()[0])
            .collect();
        let arc = |what: &str| {
            Error::Unsupported(format!(
                "FBP for an arc or cylindrical detector needs it centred on the source (radius \
                 src_radius + det_radius, no detector offset along u) and a circular or helical \
                 scan whose source moves only along its circle or helix (no flying focal spot): \
                 {what}"
            ))
        };
        let ez = if ndim == 2 {
            [0.0, 0.0, 1.0]
        } else {
            unit(views[0].det_v)
        };
        let tol = 1e-9;
        // The part of `a` across the axis.
        let across = |a: [f64; 3]| {
            let t = dot(a, ez);
            [0, 1, 2].map(|k| a[k] - t * ez[k])
        };
        let r = norm(across(views[0].src));
        let src_height = dot(views[0].src, ez);
        let dgamma = norm(views[0].det_u) / radius;
        let central: Vec<[f64; 3]> = views
            .iter()
            .map(|v| unit(across(v.src.map(|x| -x))))
            .collect();
        // The rotation sense and angles from the sources, against the angle partition; views
        // at other angles get the angular quadrature of their own angles.
        let (sense, angles) = match partition_angles(&central, ez, &betas, alen) {
            Some(sense) => (sense, None),
            None => (
                1.0,
                Some(quadrature(
                    &central,
                    ez,
                    period(false),
                    alen,
                    part.cell_side(0),
                )),
            ),
        };
        let axis = ez.map(|x| sense * x);
        let signed = |e: [f64; 3], w: [f64; 3]| dot(axis, cross(e, w)).atan2(dot(e, w));
        let v0 = &views[0];
        let gamma_c = signed(central[0], across(sub(v0.det_center, v0.src)));
        let su = dot(axis, cross(central[0], unit(v0.det_u))).signum();
        let h0 = dot(sub(v0.det_center, v0.src), ez);
        let pitch = if ndim == 3 {
            helix_of(&betas, |k| sense * dot(views[k].src, ez))
        } else {
            0.0
        };
        for (k, (v, e)) in views.iter().zip(&central).enumerate() {
            let w = across(sub(v.det_center, v.src));
            if (norm(across(v.src)) - r).abs() > tol * r
                || (sense * (dot(v.src, ez) - src_height) - pitch * (betas[k] - betas[0])).abs()
                    > tol * r
                || (dot(sub(v.det_center, v.src), ez) - h0).abs() > tol * r
                || (ndim == 3 && dot(unit(v.det_v), ez) < 1.0 - tol)
                || (norm(w) - radius).abs() > tol * radius
                || (signed(*e, w) - gamma_c).abs() > tol
                || (norm(v.det_u) / radius - dgamma).abs() > tol * dgamma
                || dot(axis, cross(*e, unit(v.det_u))).signum() != su
            {
                return Err(arc(&format!("view {k}")));
            }
        }
        let gamma = (0..nu)
            .map(|i| gamma_c + su * (i as f64 - 0.5 * (nu as f64 - 1.0)) * dgamma)
            .collect();
        let dv = norm(views[0].det_v);
        let height = (ndim == 3).then(|| {
            let h = (0..nv)
                .map(|j| h0 + (j as f64 - 0.5 * (nv as f64 - 1.0)) * dv)
                .collect();
            (radius, h)
        });
        Ok(Self::with_angles(
            Self {
                ndim,
                nviews,
                nu,
                nv,
                du: dgamma,
                alen,
                betas,
                source: Source::Arc {
                    r,
                    gamma,
                    central,
                    height,
                },
                view_weights: None,
                cell_ratio: cell_ratio(part, dgamma, dv, ndim),
                helix: (pitch != 0.0).then_some(pitch),
            },
            angles,
        ))
    }

    /// The scan of the views `views` only (in range), as the filter of those views' data sees
    /// it: the angle interval stays the whole scan's (its weights and constants are the whole
    /// scan's), the per-view parts are those views'.
    pub(crate) fn views(&self, views: &std::ops::Range<usize>) -> Setup {
        let mut s = self.clone();
        s.nviews = views.len();
        s.betas = self.betas[views.clone()].to_vec();
        if let Source::Point { central, .. } | Source::Arc { central, .. } = &mut s.source {
            *central = central[views.clone()].to_vec();
        }
        if let Some(w) = &mut s.view_weights {
            *w = w[views.clone()].to_vec();
        }
        s
    }

    /// Whether the angles cover a full turn (up to rounding).
    pub(crate) fn full_turn(&self) -> bool {
        self.alen >= 2.0 * PI * (1.0 - 1e-9)
    }
}
