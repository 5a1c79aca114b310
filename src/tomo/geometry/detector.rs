//! The detector surface: flat, cylindrical (the fan-beam arc is its 2D case) or spherical, as
//! ODL's `Flat1dDetector`/`Flat2dDetector`, `CircularDetector`/`CylindricalDetector` and
//! `SphericalDetector`. This is the one place that knows where a detector point lies.
//!
//! A detector is placed by a *frame*: a reference point `c` on the surface, the unit tangent
//! `e_u` there, the unit axis `e_v` (3D; `e_z` in 2D) and the outward unit normal `n`, which
//! points away from the source (`e_v × e_u` in ODL's standard frames). ODL's parameters are
//! `(u, v)` lengths on a flat detector, `(φ, h)` (angle, height) on a cylinder of radius `R`
//! and `(φ, θ)` (longitude, latitude) on a sphere of radius `R`, and the points are
//!
//! * flat: `c + u e_u + v e_v`;
//! * cylindrical: `c + R sin φ e_u + h e_v + R (cos φ − 1) n` (the axis of the cylinder along
//!   `e_v`, through `c − R n`);
//! * spherical: `c + R [cos θ sin φ e_u + sin θ e_v + (cos θ cos φ − 1) n]` (centre `c − R n`).
//!
//! In a per-view vector geometry ([`super::View`]) the frame is the view's: `det_center` is the
//! centre pixel's point, `det_u`/`det_v` the tangents there, scaled to the pixel pitch as arc
//! length (`R Δφ`; `Δh` or `R Δθ` along v). Pixel `(i, j)` has the arc-length parameters
//! `(i − (nu − 1)/2) |det_u|`, `(j − (nv − 1)/2) |det_v|`, so a flat detector and a curved one of
//! huge radius with the same vectors have the same pixels (up to rounding). Positive `φ` runs
//! along `+e_u`, as `u` on a flat detector (ODL: "clockwise, by analogy to flat detectors").

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The shape of a detector's surface (ODL's `Detector` classes), shared by all views of a
/// geometry.
///
/// A [`DetectorFrame`] places it: a reference point `c`, the unit tangent `e_u`, the unit axis
/// `e_v` and the unit normal `n` pointing away from the source. ODL's parameters are `(u, v)`
/// lengths on a flat detector, `(φ, h)` (angle, height) on a cylinder of radius `R` and
/// `(φ, θ)` (longitude, latitude) on a sphere of radius `R`; the points are `c + u e_u + v e_v`,
/// `c + R sin φ e_u + h e_v + R (cos φ − 1) n` and
/// `c + R [cos θ sin φ e_u + sin θ e_v + (cos θ cos φ − 1) n]`. Positive `φ` runs along `+e_u`.
///
/// ```
/// use rodl::tomo::Detector;
/// let d = Detector::from_curvature(3, &[Some(10.0), None])?;
/// assert_eq!(d, Detector::Cylindrical { radius: 10.0 });
/// assert_eq!(Detector::from_curvature(3, &[Some(10.0), Some(10.0)])?, Detector::Spherical { radius: 10.0 });
/// assert!(Detector::from_curvature(3, &[Some(10.0), Some(5.0)]).is_err());
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "shape", rename_all = "lowercase", deny_unknown_fields)]
pub enum Detector {
    /// A flat detector (a line in 2D, a plane in 3D).
    #[default]
    Flat,
    /// A cylinder of curvature radius `radius` whose axis runs along the detector's v axis; in
    /// 2D, the arc of a circle (a fan beam's equiangular detector when the source sits at its
    /// centre).
    Cylindrical {
        /// Curvature radius.
        radius: f64,
    },
    /// A sphere of curvature radius `radius` (3D only).
    Spherical {
        /// Curvature radius.
        radius: f64,
    },
}

/// The frame that places a detector surface: reference point, unit tangents and outward
/// normal (see [`Detector`] for the surfaces they place).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DetectorFrame {
    /// The reference point (parameters `(0, 0)`).
    pub center: [f64; 3],
    /// Unit tangent along u.
    pub e_u: [f64; 3],
    /// Unit axis along v (`e_z` in 2D).
    pub e_v: [f64; 3],
    /// Unit outward normal (away from the source): `±e_v × e_u`.
    pub normal: [f64; 3],
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn norm(a: [f64; 3]) -> f64 {
    (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt()
}

fn unit(a: [f64; 3]) -> [f64; 3] {
    let n = norm(a);
    a.map(|x| x / n)
}

/// `cos x − 1` without cancellation.
#[inline]
pub(crate) fn cosm1(x: f64) -> f64 {
    let s = (0.5 * x).sin();
    -2.0 * s * s
}

impl DetectorFrame {
    /// The frame of a view's detector vectors (`det_v` is ignored in 2D). With a source
    /// position `src`, the normal is oriented away from it (a curved detector is concave
    /// towards its source whichever way `det_u` and `det_v` run: the tangents keep their
    /// directions and only the normal may flip).
    pub fn of_view(
        ndim: usize,
        center: [f64; 3],
        det_u: [f64; 3],
        det_v: [f64; 3],
        src: Option<[f64; 3]>,
    ) -> Self {
        let e_u = unit(det_u);
        let e_v = if ndim == 2 {
            [0.0, 0.0, 1.0]
        } else {
            unit(det_v)
        };
        let mut normal = unit(cross(e_v, e_u));
        if let Some(s) = src {
            let away = [0, 1, 2].map(|k| center[k] - s[k]);
            if away[0] * normal[0] + away[1] * normal[1] + away[2] * normal[2] < 0.0 {
                normal = normal.map(|x| -x);
            }
        }
        Self {
            center,
            e_u,
            e_v,
            normal,
        }
    }
}

impl Detector {
    /// The detector of ODL's `det_curvature_radius` (`None` entries: flat along that axis).
    /// 2D (ODL's `FanBeamGeometry`): one radius, `[Some(r)]` an arc of radius `r`, `[None]` flat.
    /// 3D (ODL's `ConeBeamGeometry`): `[None, None]` (or an empty slice) flat, `[Some(r), None]`
    /// a cylinder, `[Some(r), Some(r)]` a sphere; other pairs are errors, as in ODL. An infinite
    /// radius counts as `None`.
    pub fn from_curvature(ndim: usize, radii: &[Option<f64>]) -> Result<Self> {
        let shown = radii
            .iter()
            .map(|r| r.map_or("None".to_string(), |x| x.to_string()))
            .collect::<Vec<_>>()
            .join(", ");
        let r = |k: usize| radii.get(k).copied().flatten().filter(|x| !x.is_infinite());
        let d = match (ndim, radii.len()) {
            (_, 0) => Detector::Flat,
            (2, 1) => match r(0) {
                None => Detector::Flat,
                Some(radius) => Detector::Cylindrical { radius },
            },
            (3, 2) => match (r(0), r(1)) {
                (None, None) => Detector::Flat,
                (Some(radius), None) => Detector::Cylindrical { radius },
                (Some(a), Some(b)) if a == b => Detector::Spherical { radius: a },
                _ => {
                    return Err(Error::Geometry(format!(
                        "det_curvature_radius ({shown}): a 3D detector is flat, cylindrical \
                         (r, None) or spherical (r, r)"
                    )))
                }
            },
            _ => {
                return Err(Error::Geometry(format!(
                    "det_curvature_radius ({shown}): a {ndim}D geometry takes {} radii",
                    ndim - 1
                )))
            }
        };
        d.check(ndim)?;
        Ok(d)
    }

    /// The curvature radius (`None` for a flat detector).
    pub fn radius(&self) -> Option<f64> {
        match *self {
            Detector::Flat => None,
            Detector::Cylindrical { radius } | Detector::Spherical { radius } => Some(radius),
        }
    }

    /// Whether the detector is curved.
    pub fn is_curved(&self) -> bool {
        *self != Detector::Flat
    }

    /// ODL's `det_curvature_radius` of this detector in `ndim` dimensions.
    pub fn curvature(&self, ndim: usize) -> Vec<Option<f64>> {
        match (*self, ndim) {
            (Detector::Flat, 2) => vec![None],
            (Detector::Flat, _) => vec![None, None],
            (Detector::Cylindrical { radius }, 2) => vec![Some(radius)],
            (Detector::Cylindrical { radius }, _) => vec![Some(radius), None],
            (Detector::Spherical { radius }, _) => vec![Some(radius), Some(radius)],
        }
    }

    /// Checks the radius (finite, positive) and that a sphere is 3D.
    pub fn check(&self, ndim: usize) -> Result<()> {
        if let Some(r) = self.radius() {
            if !(r.is_finite() && r > 0.0) {
                return Err(Error::Geometry(format!(
                    "the detector's curvature radius must be positive and finite, got {r}"
                )));
            }
        }
        if matches!(self, Detector::Spherical { .. }) && ndim != 3 {
            return Err(Error::Geometry(
                "a spherical detector needs a 3D geometry".into(),
            ));
        }
        Ok(())
    }

    /// The surface point at ODL's parameters `param` in `frame` (ODL's `surface`, placed by the
    /// frame; `param[1]` unused in 2D).
    pub fn surface(&self, frame: &DetectorFrame, param: [f64; 2]) -> [f64; 3] {
        let (a, b, n) = self.local(param);
        [0, 1, 2]
            .map(|k| frame.center[k] + a * frame.e_u[k] + b * frame.e_v[k] + n * frame.normal[k])
    }

    /// The coordinates `(along e_u, along e_v, along n)` of the point at `param` relative to the
    /// reference point.
    #[inline]
    fn local(&self, param: [f64; 2]) -> (f64, f64, f64) {
        let [p, q] = param;
        match *self {
            Detector::Flat => (p, q, 0.0),
            Detector::Cylindrical { radius } => (radius * p.sin(), q, radius * cosm1(p)),
            Detector::Spherical { radius } => {
                let sp = p.sin();
                let (st, ct) = q.sin_cos();
                (
                    radius * ct * sp,
                    radius * st,
                    radius * (ct * cosm1(p) + cosm1(q)),
                )
            }
        }
    }

    /// The partial derivatives of [`Self::surface`] along the two parameters (ODL's
    /// `surface_deriv`).
    pub fn surface_deriv(&self, frame: &DetectorFrame, param: [f64; 2]) -> [[f64; 3]; 2] {
        let [p, q] = param;
        let (du, dv) = match *self {
            Detector::Flat => ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
            Detector::Cylindrical { radius } => {
                ((radius * p.cos(), 0.0, -radius * p.sin()), (0.0, 1.0, 0.0))
            }
            Detector::Spherical { radius } => {
                let (sp, cp) = p.sin_cos();
                let (st, ct) = q.sin_cos();
                (
                    (radius * ct * cp, 0.0, -radius * ct * sp),
                    (-radius * st * sp, radius * ct, -radius * st * cp),
                )
            }
        };
        let place = |(a, b, n): (f64, f64, f64)| {
            [0, 1, 2].map(|k| a * frame.e_u[k] + b * frame.e_v[k] + n * frame.normal[k])
        };
        [place(du), place(dv)]
    }

    /// The unit normal at `param`, `∂u × ∂v` normalised as ODL's `surface_normal` (for ODL's
    /// standard frames it points from the detector towards the source: `−n`).
    pub fn surface_normal(&self, frame: &DetectorFrame, param: [f64; 2]) -> [f64; 3] {
        let [du, dv] = self.surface_deriv(frame, param);
        unit(cross(du, dv))
    }

    /// The frame of the pixel at ODL's parameters `param` (for a cylinder: any `param`; for a
    /// sphere: `param[1] = 0`), as the frame of reference point `frame`: a cylinder rotated
    /// about its axis, or a sphere about its `e_v` axis, is the same surface.
    pub fn recentre(&self, frame: &DetectorFrame, param: [f64; 2]) -> DetectorFrame {
        match *self {
            Detector::Flat => DetectorFrame {
                center: self.surface(frame, param),
                ..*frame
            },
            Detector::Cylindrical { .. } | Detector::Spherical { .. } => {
                let (s, c) = param[0].sin_cos();
                let center = self.surface(frame, param);
                let e_u = [0, 1, 2].map(|k| c * frame.e_u[k] - s * frame.normal[k]);
                let normal = [0, 1, 2].map(|k| s * frame.e_u[k] + c * frame.normal[k]);
                DetectorFrame {
                    center,
                    e_u,
                    normal,
                    ..*frame
                }
            }
        }
    }

    /// The point of a view's pixel at centred arc-length coordinates `(su, sv)` (world units,
    /// `(i − (nu − 1)/2)|det_u|`, `(j − (nv − 1)/2)|det_v|`), with `det_v` the view's v vector
    /// scaled to one pixel and `cv` the centred row index: the one evaluation the projectors use.
    #[inline]
    pub(crate) fn pixel(
        &self,
        frame: &DetectorFrame,
        su: f64,
        sv: f64,
        cv: f64,
        det_v: &[f64; 3],
        ndim: usize,
    ) -> [f64; 3] {
        let mut q = [0.0; 3];
        match *self {
            Detector::Flat => {
                for k in 0..ndim {
                    q[k] = frame.center[k] + su * frame.e_u[k] + sv * frame.e_v[k];
                }
            }
            Detector::Cylindrical { radius } => {
                let phi = su / radius;
                let (a, n) = (radius * phi.sin(), radius * cosm1(phi));
                // The in-plane part first, then the row: a column of an axis-aligned cylinder
                // keeps bit-identical in-plane coordinates (the set-up shares its work then).
                for k in 0..ndim {
                    q[k] =
                        (frame.center[k] + a * frame.e_u[k] + n * frame.normal[k]) + cv * det_v[k];
                }
            }
            Detector::Spherical { radius } => {
                let (a, b, n) = self.local([su / radius, sv / radius]);
                for k in 0..ndim {
                    q[k] =
                        frame.center[k] + a * frame.e_u[k] + b * frame.e_v[k] + n * frame.normal[k];
                }
            }
        }
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame() -> DetectorFrame {
        // A tilted, right-handed frame: e_u, e_v, n = e_v × e_u.
        let e_u = unit([0.8, 0.6, 0.0]);
        let e_v = unit([-0.12, 0.16, 0.98]);
        let e_v = {
            let d: f64 = (0..3).map(|k| e_u[k] * e_v[k]).sum();
            unit([0, 1, 2].map(|k| e_v[k] - d * e_u[k]))
        };
        DetectorFrame {
            center: [0.3, -1.2, 0.7],
            e_u,
            e_v,
            normal: cross(e_v, e_u),
        }
    }

    fn close(a: [f64; 3], b: [f64; 3], tol: f64) -> bool {
        (0..3).all(|k| (a[k] - b[k]).abs() <= tol)
    }

    /// `surface_deriv` is the derivative of `surface` (central differences), `surface_normal`
    /// is orthogonal to both tangents and points back towards the curvature centre's side
    /// (`−n` at the reference point), for every shape.
    #[test]
    fn derivatives_and_normals_match_the_surface() {
        let f = frame();
        for d in [
            Detector::Flat,
            Detector::Cylindrical { radius: 2.5 },
            Detector::Spherical { radius: 2.5 },
        ] {
            for p in [[0.0, 0.0], [0.4, -0.3], [-1.1, 0.6]] {
                let [du, dv] = d.surface_deriv(&f, p);
                let h = 1e-6;
                let fd = |k: usize| {
                    let (mut a, mut b) = (p, p);
                    a[k] += h;
                    b[k] -= h;
                    let (a, b) = (d.surface(&f, a), d.surface(&f, b));
                    [0, 1, 2].map(|i| (a[i] - b[i]) / (2.0 * h))
                };
                assert!(close(du, fd(0), 1e-8), "{d:?} {p:?} d/du");
                assert!(close(dv, fd(1), 1e-8), "{d:?} {p:?} d/dv");
                let n = d.surface_normal(&f, p);
                let dot = |a: [f64; 3], b: [f64; 3]| (0..3).map(|k| a[k] * b[k]).sum::<f64>();
                assert!(
                    dot(n, du).abs() < 1e-12 && dot(n, dv).abs() < 1e-12,
                    "{d:?}"
                );
            }
            let n0 = d.surface_normal(&f, [0.0, 0.0]);
            assert!(close(n0, f.normal.map(|x| -x), 1e-15), "{d:?}: {n0:?}");
            assert!(close(d.surface(&f, [0.0, 0.0]), f.center, 0.0));
        }
        // Curved points are at the radius from the centre `c − R n`.
        for (d, r) in [
            (Detector::Cylindrical { radius: 2.5 }, 2.5),
            (Detector::Spherical { radius: 2.5 }, 2.5),
        ] {
            let c = [0, 1, 2].map(|k| f.center[k] - r * f.normal[k]);
            let q = d.surface(&f, [0.7, -0.4]);
            let off = [0, 1, 2].map(|k| q[k] - c[k]);
            let along_axis: f64 = (0..3).map(|k| off[k] * f.e_v[k]).sum();
            let len2: f64 = off.iter().map(|x| x * x).sum();
            let dist = match d {
                Detector::Cylindrical { .. } => (len2 - along_axis * along_axis).sqrt(),
                _ => len2.sqrt(),
            };
            assert!((dist - r).abs() < 1e-14, "{d:?}: {dist}");
        }
    }

    /// A frame recentred at `φ₀` gives the same points: `surface(recentre(f, φ₀), (φ, h))` is
    /// `surface(f, (φ₀ + φ, h))` on a cylinder, and on a sphere for any latitude.
    #[test]
    fn recentred_frames_give_the_same_surface() {
        let f = frame();
        for d in [
            Detector::Cylindrical { radius: 1.7 },
            Detector::Spherical { radius: 1.7 },
        ] {
            let g = d.recentre(&f, [0.45, 0.0]);
            for p in [[0.0, 0.0], [0.3, 0.2], [-0.8, -0.5]] {
                let a = d.surface(&g, p);
                let b = d.surface(&f, [0.45 + p[0], p[1]]);
                assert!(close(a, b, 1e-14), "{d:?} {p:?}: {a:?} {b:?}");
            }
        }
    }

    /// ODL's radii: `None` and infinity are flat, unequal pairs and bad radii are errors.
    #[test]
    fn curvature_radii_as_odl_gives_them() {
        assert_eq!(
            Detector::from_curvature(2, &[None]).unwrap(),
            Detector::Flat
        );
        assert_eq!(
            Detector::from_curvature(3, &[Some(f64::INFINITY), None]).unwrap(),
            Detector::Flat
        );
        assert_eq!(
            Detector::from_curvature(2, &[Some(3.0)])
                .unwrap()
                .curvature(2),
            vec![Some(3.0)]
        );
        let s = Detector::from_curvature(3, &[Some(3.0), Some(3.0)]).unwrap();
        assert_eq!(s.curvature(3), vec![Some(3.0), Some(3.0)]);
        for bad in [
            (2, vec![Some(0.0)]),
            (2, vec![Some(-1.0)]),
            (2, vec![Some(f64::NAN)]),
            (2, vec![Some(1.0), None]),
            (3, vec![Some(1.0)]),
            (3, vec![None, Some(1.0)]),
            (3, vec![Some(1.0), Some(2.0)]),
        ] {
            assert!(Detector::from_curvature(bad.0, &bad.1).is_err(), "{bad:?}");
        }
        assert!(Detector::Spherical { radius: 1.0 }.check(2).is_err());
    }
}
