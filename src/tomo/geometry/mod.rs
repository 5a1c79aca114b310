//! Acquisition geometries with ODL's conventions, all converted to one per-view vector form.
//!
//! Conventions (as in ODL): angles are the midpoints of a uniform partition of
//! `[min, max]`; rotation is counter-clockwise about the axis (default `z`). At angle 0 a
//! parallel beam runs along `+y` with the detector's `u` axis along `+x` (and `v` along the
//! rotation axis in 3D); fan and cone sources sit at `−src_radius·e_y` and the detector centre at
//! `+det_radius·e_y`. A helical `pitch` is the shift along the axis per full turn.

mod detector;
mod footprint;
mod helpers;
mod spec;
mod subset;
mod vec;

pub use detector::{Detector, DetectorFrame};
pub use helpers::{cone_beam_geometry, parallel_beam_geometry};
pub use spec::{
    AngleSpec, CurvatureSpec, DetectorSpec, GeometryKind, GeometrySpec, TomoSpec, ViewSpec,
    VolumeSpec, MAX_GEOMETRY_FILE_BYTES, MAX_GEOMETRY_MAGNITUDE,
};
pub use vec::{Beam, VecGeometry, View};

use std::sync::Arc;

use crate::{Error, Result, UniformPartition};

/// A tomographic acquisition geometry: the per-view vectors the projectors use and the
/// partition of the data (angles × detector) that gives the data space and its weighting.
#[derive(Clone, Debug, PartialEq)]
pub struct Geometry {
    vec: VecGeometry,
    data_partition: UniformPartition,
    spec: Option<GeometrySpec>,
    /// How a standard kind was set up (to rebuild it with source offsets).
    setup: Option<Arc<Setup>>,
}

/// Rotation of `v` about the unit vector `a` by `t` radians (Rodrigues).
fn rotate(a: [f64; 3], t: f64, v: [f64; 3]) -> [f64; 3] {
    let (s, c) = t.sin_cos();
    let cr = cross(a, v);
    let d = dot(a, v);
    [0, 1, 2].map(|i| v[i] * c + cr[i] * s + a[i] * d * (1.0 - c))
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn axpy(a: f64, x: [f64; 3], y: [f64; 3]) -> [f64; 3] {
    [0, 1, 2].map(|i| a * x[i] + y[i])
}

/// The rotation taking `e_z` to the unit vector `axis`, as a function on vectors.
fn from_ez(axis: [f64; 3]) -> impl Fn([f64; 3]) -> [f64; 3] {
    let ez = [0.0, 0.0, 1.0];
    let c = dot(ez, axis);
    let k = cross(ez, axis);
    let s = dot(k, k).sqrt();
    move |v| {
        if s < 1e-15 {
            if c > 0.0 {
                v
            } else {
                [v[0], -v[1], -v[2]] // half turn about x
            }
        } else {
            rotate(k.map(|x| x / s), s.atan2(c), v)
        }
    }
}

/// Frame and source/detector placement shared by the standard kinds.
#[derive(Clone, Debug, PartialEq)]
struct Setup {
    ndim: usize,
    beam: Beam,
    /// Unit rotation axis (e_z in 2D).
    axis: [f64; 3],
    src_radius: f64,
    det_radius: f64,
    pitch: f64,
    /// Detector centre offset along (u, v), in world units, including the partition's midpoint.
    det_shift: [f64; 2],
    /// Pixel sizes along (u, v).
    det_cell: [f64; 2],
    /// The detector surface (curved: `det_shift` is the world offset only, the partition's
    /// midpoint is `det_mid`, in ODL's parameters, and `det_cell` is in those parameters).
    detector: Detector,
    /// Midpoint of the detector partition (curved detectors).
    det_mid: [f64; 2],
    /// Per-view source offsets as ODL's flying focal spot (along detector-to-source, along
    /// the tangent `e_u`, along the axis), in the view's rotated frame, used cyclically; empty
    /// for none.
    src_offsets: Vec<[f64; 3]>,
}

impl Geometry {
    fn build(
        setup: Setup,
        angles: &UniformPartition,
        detector: &UniformPartition,
        spec: Option<GeometrySpec>,
    ) -> Result<Self> {
        let init = from_ez(setup.axis);
        let (e_x, e_y, e_z) = (
            init([1.0, 0.0, 0.0]),
            init([0.0, 1.0, 0.0]),
            init([0.0, 0.0, 1.0]),
        );
        // The views and their angles, checked before they are allocated.
        let count = angles.shape()[0];
        crate::memory::check_host_alloc(
            &format!("a geometry of {count} views"),
            count,
            std::mem::size_of::<View>()
                + std::mem::size_of::<f64>()
                + if setup.detector.is_curved() {
                    // The frames and pitches of a curved detector.
                    std::mem::size_of::<DetectorFrame>() + std::mem::size_of::<[f64; 2]>()
                } else {
                    0
                },
        )?;
        let thetas = angles.coord_vector(0)?;
        let radius = setup.detector.radius().unwrap_or(1.0);
        let sphere = matches!(setup.detector, Detector::Spherical { .. });
        // A sphere's frames sit on its equator, at the latitude 0 of ODL's partition.
        let lat0 = if sphere { setup.det_mid[1] } else { 0.0 };
        let mut frames = Vec::new();
        let views = thetas
            .iter()
            .enumerate()
            .map(|(k, &t)| {
                let (rx, ry, rz) = (
                    rotate(setup.axis, t, e_x),
                    rotate(setup.axis, t, e_y),
                    rotate(setup.axis, t, e_z),
                );
                let shift = setup.pitch * t / (2.0 * std::f64::consts::PI);
                let lift = |p: [f64; 3]| axpy(shift, setup.axis, p);
                let mut center = axpy(setup.det_shift[0], rx, [0.0; 3]);
                if setup.ndim == 3 {
                    center = axpy(setup.det_shift[1], rz, center);
                }
                let det_u = rx.map(|x| x * setup.det_cell[0]);
                let det_v = if setup.ndim == 3 {
                    rz.map(|x| x * setup.det_cell[1])
                } else {
                    [0.0; 3]
                };
                // The source, moved by its (flying focal spot) offset; the detector stays.
                let src = || {
                    let s = lift(ry.map(|x| -x * setup.src_radius));
                    match setup.src_offsets.len() {
                        0 => s,
                        n => {
                            let [a, b, c] = setup.src_offsets[k % n];
                            axpy(c, rz, axpy(b, rx, axpy(-a, ry, s)))
                        }
                    }
                };
                match (setup.beam, setup.detector) {
                    (Beam::Parallel, _) => View {
                        src: ry,
                        det_center: center,
                        det_u,
                        det_v,
                    },
                    (Beam::Point, Detector::Flat) => View {
                        src: src(),
                        det_center: lift(axpy(setup.det_radius, ry, center)),
                        det_u,
                        det_v,
                    },
                    (Beam::Point, curved) => {
                        // ODL's frame at the reference point, turned to the centre column (and
                        // on a cylinder moved along its axis to the centre row).
                        let frame = DetectorFrame {
                            center: lift(axpy(setup.det_radius, ry, center)),
                            e_u: rx,
                            e_v: rz,
                            normal: ry,
                        };
                        let mut f = curved.recentre(&frame, [setup.det_mid[0], 0.0]);
                        let view = if sphere {
                            // The centre pixel at latitude `lat0` and its tangents.
                            let (st, ct) = lat0.sin_cos();
                            let along_v = [0, 1, 2].map(|i| ct * f.e_v[i] - st * f.normal[i]);
                            View {
                                src: src(),
                                det_center: curved.surface(&f, [0.0, lat0]),
                                det_u: f.e_u.map(|x| x * setup.det_cell[0] * radius),
                                det_v: along_v.map(|x| x * setup.det_cell[1] * radius),
                            }
                        } else {
                            f.center = axpy(setup.det_mid[1], rz, f.center);
                            View {
                                src: src(),
                                det_center: f.center,
                                det_u: f.e_u.map(|x| x * setup.det_cell[0] * radius),
                                det_v,
                            }
                        };
                        frames.push(f);
                        view
                    }
                }
            })
            .collect();
        let vec = VecGeometry::new(setup.ndim, setup.beam, detector.shape(), views)?;
        let vec = match (setup.beam, setup.detector.radius()) {
            (Beam::Point, Some(r)) => {
                let along_v = if sphere {
                    setup.det_cell[1] * r
                } else {
                    setup.det_cell[1]
                };
                vec.with_frames(
                    setup.detector,
                    frames,
                    [setup.det_cell[0] * r, along_v],
                    lat0,
                )?
            }
            _ => vec.with_detector(setup.detector)?,
        };
        let mut lo = angles.min_pt().to_vec();
        let mut hi = angles.max_pt().to_vec();
        let mut shape = angles.shape().to_vec();
        lo.extend_from_slice(detector.min_pt());
        hi.extend_from_slice(detector.max_pt());
        shape.extend_from_slice(detector.shape());
        let data_partition = UniformPartition::new(&lo, &hi, &shape)?;
        let setup = Some(Arc::new(setup));
        Ok(Self {
            vec,
            data_partition,
            spec,
            setup,
        })
    }

    fn check_parts(
        angles: &UniformPartition,
        detector: &UniformPartition,
        det_dim: usize,
    ) -> Result<()> {
        if angles.ndim() != 1 {
            return Err(Error::Geometry(format!(
                "the angle partition must be 1D, got {}D",
                angles.ndim()
            )));
        }
        if detector.ndim() != det_dim {
            return Err(Error::Geometry(format!(
                "this geometry needs a {det_dim}D detector partition, got {}D",
                detector.ndim()
            )));
        }
        Ok(())
    }

    fn shift(detector: &UniformPartition, offset: [f64; 2]) -> [f64; 2] {
        let mid = |i: usize| 0.5 * (detector.min_pt()[i] + detector.max_pt()[i]);
        if detector.ndim() == 1 {
            [mid(0) + offset[0], 0.0]
        } else {
            [mid(0) + offset[0], mid(1) + offset[1]]
        }
    }

    fn cells(detector: &UniformPartition) -> [f64; 2] {
        let s = detector.cell_sides();
        [s[0], *s.get(1).unwrap_or(&1.0)]
    }

    fn unit_axis(axis: [f64; 3]) -> Result<[f64; 3]> {
        let n = dot(axis, axis).sqrt();
        if !(n.is_finite() && n > 0.0) {
            return Err(Error::Geometry(format!(
                "rotation axis {axis:?} is not a non-zero vector"
            )));
        }
        Ok(axis.map(|x| x / n))
    }

    fn radii(src_radius: f64, det_radius: f64) -> Result<()> {
        if !(src_radius.is_finite() && src_radius > 0.0) {
            return Err(Error::Geometry(format!(
                "src_radius must be positive, got {src_radius}"
            )));
        }
        if !(det_radius.is_finite() && det_radius >= 0.0) {
            return Err(Error::Geometry(format!(
                "det_radius must be non-negative, got {det_radius}"
            )));
        }
        Ok(())
    }

    /// 2D parallel beam: `angles` (1D partition, radians) × `detector` (1D partition).
    ///
    /// ```
    /// use rodl::{tomo::Geometry, UniformPartition};
    /// let angles = UniformPartition::new(&[0.0], &[std::f64::consts::PI], &[180])?;
    /// let det = UniformPartition::new(&[-1.5], &[1.5], &[128])?;
    /// let g = Geometry::parallel_2d(&angles, &det)?;
    /// assert_eq!(g.data_shape(), vec![180, 128]);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn parallel_2d(angles: &UniformPartition, detector: &UniformPartition) -> Result<Self> {
        Self::parallel_2d_offset(angles, detector, 0.0)
    }

    /// 2D parallel beam with the detector shifted by `offset` along u.
    pub fn parallel_2d_offset(
        angles: &UniformPartition,
        detector: &UniformPartition,
        offset: f64,
    ) -> Result<Self> {
        Self::check_parts(angles, detector, 1)?;
        let setup = Setup {
            ndim: 2,
            beam: Beam::Parallel,
            axis: [0.0, 0.0, 1.0],
            src_radius: 0.0,
            det_radius: 0.0,
            pitch: 0.0,
            det_shift: Self::shift(detector, [offset, 0.0]),
            det_cell: Self::cells(detector),
            detector: Detector::Flat,
            det_mid: [0.0; 2],
            src_offsets: Vec::new(),
        };
        Self::build(setup, angles, detector, None)
    }

    /// 2D fan beam with a flat detector: source at distance `src_radius` from the origin,
    /// detector centre at `det_radius` on the other side; `offset` shifts the detector along u.
    pub fn fan_flat(
        angles: &UniformPartition,
        detector: &UniformPartition,
        src_radius: f64,
        det_radius: f64,
        offset: f64,
    ) -> Result<Self> {
        Self::check_parts(angles, detector, 1)?;
        Self::radii(src_radius, det_radius)?;
        let setup = Setup {
            ndim: 2,
            beam: Beam::Point,
            axis: [0.0, 0.0, 1.0],
            src_radius,
            det_radius,
            pitch: 0.0,
            det_shift: Self::shift(detector, [offset, 0.0]),
            det_cell: Self::cells(detector),
            detector: Detector::Flat,
            det_mid: [0.0; 2],
            src_offsets: Vec::new(),
        };
        Self::build(setup, angles, detector, None)
    }

    /// 3D parallel beam rotating about `axis` (ODL's `Parallel3dAxisGeometry`); `offset`
    /// shifts the detector along (u, v).
    pub fn parallel_3d(
        angles: &UniformPartition,
        detector: &UniformPartition,
        axis: [f64; 3],
        offset: [f64; 2],
    ) -> Result<Self> {
        Self::check_parts(angles, detector, 2)?;
        let setup = Setup {
            ndim: 3,
            beam: Beam::Parallel,
            axis: Self::unit_axis(axis)?,
            src_radius: 0.0,
            det_radius: 0.0,
            pitch: 0.0,
            det_shift: Self::shift(detector, offset),
            det_cell: Self::cells(detector),
            detector: Detector::Flat,
            det_mid: [0.0; 2],
            src_offsets: Vec::new(),
        };
        Self::build(setup, angles, detector, None)
    }

    /// 3D cone beam with a flat detector, circular (`pitch = 0`) or helical (`pitch` = shift
    /// along `axis` per full turn); `offset` shifts the detector along (u, v).
    #[allow(clippy::too_many_arguments)]
    pub fn cone_flat(
        angles: &UniformPartition,
        detector: &UniformPartition,
        src_radius: f64,
        det_radius: f64,
        pitch: f64,
        axis: [f64; 3],
        offset: [f64; 2],
    ) -> Result<Self> {
        Self::check_parts(angles, detector, 2)?;
        Self::radii(src_radius, det_radius)?;
        if !pitch.is_finite() {
            return Err(Error::Geometry(format!(
                "pitch must be finite, got {pitch}"
            )));
        }
        let setup = Setup {
            ndim: 3,
            beam: Beam::Point,
            axis: Self::unit_axis(axis)?,
            src_radius,
            det_radius,
            pitch,
            det_shift: Self::shift(detector, offset),
            det_cell: Self::cells(detector),
            detector: Detector::Flat,
            det_mid: [0.0; 2],
            src_offsets: Vec::new(),
        };
        Self::build(setup, angles, detector, None)
    }

    /// The curved detector of ODL's `det_curvature_radius`, checked against its partition
    /// (ODL's parameters: angles along u, and along v a height or, on a sphere, a latitude).
    fn curved_setup(
        ndim: usize,
        detector: &UniformPartition,
        radii: &[Option<f64>],
    ) -> Result<(Detector, [f64; 2])> {
        let d = Detector::from_curvature(ndim, radii)?;
        let mid = |i: usize| 0.5 * (detector.min_pt()[i] + detector.max_pt()[i]);
        let det_mid = if ndim == 2 {
            [mid(0), 0.0]
        } else {
            [mid(0), mid(1)]
        };
        let span = |i: usize| detector.max_pt()[i] - detector.min_pt()[i];
        if d.is_curved() && span(0) > 2.0 * std::f64::consts::PI {
            return Err(Error::Geometry(format!(
                "a curved detector's partition along u is in radians (the angle at the \
                 curvature centre) and spans at most 2π, got {}",
                span(0)
            )));
        }
        if let Detector::Spherical { .. } = d {
            let (lo, hi) = (detector.min_pt()[1], detector.max_pt()[1]);
            if lo < -std::f64::consts::FRAC_PI_2 || hi > std::f64::consts::FRAC_PI_2 {
                return Err(Error::Geometry(format!(
                    "a spherical detector's latitudes (partition along v, radians) lie in \
                     [−π/2, π/2], got [{lo}, {hi}]"
                )));
            }
        }
        Ok((d, det_mid))
    }

    /// 2D fan beam with a curved detector: ODL 1.0's
    /// `FanBeamGeometry(apart, dpart, src_radius, det_radius, det_curvature_radius=r)`, an arc
    /// of radius `det_curvature_radius` through the detector's reference point (at
    /// `det_radius` from the rotation centre, opposite the source) whose centre lies
    /// `det_curvature_radius` towards the source. `detector` partitions the angle `φ` on the
    /// arc (radians, seen from its centre; `φ > 0` along the flat detector's `+u`), so the
    /// data space's weighting is `Δθ · Δφ` as in ODL. With `det_curvature_radius =
    /// src_radius + det_radius` the arc is centred on the source: the equiangular detector of
    /// clinical scanners. `offset` shifts the whole arc along `u` (world units, as for
    /// [`fan_flat`](Self::fan_flat)).
    ///
    /// ```
    /// use std::f64::consts::PI;
    /// use rodl::{tomo::Geometry, UniformPartition};
    /// // As ODL's docstring example: at angle 0 the point at φ is (0, 5) + 10 (sin φ, cos φ − 1).
    /// let angles = UniformPartition::new(&[-0.1], &[0.1], &[1])?; // one view, at angle 0
    /// let det = UniformPartition::new(&[-PI / 2.0], &[PI / 2.0], &[10])?;
    /// let g = Geometry::fan_curved(&angles, &det, 1.0, 5.0, 10.0, 0.0)?;
    /// let (q, _) = g.vec().ray(0, 6, 0); // φ = 1.5 · π/10
    /// let phi = 0.15 * PI;
    /// assert!((q[0] - 10.0 * phi.sin()).abs() < 1e-12 && (q[1] - 5.0 - 10.0 * (phi.cos() - 1.0)).abs() < 1e-12);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn fan_curved(
        angles: &UniformPartition,
        detector: &UniformPartition,
        src_radius: f64,
        det_radius: f64,
        det_curvature_radius: f64,
        offset: f64,
    ) -> Result<Self> {
        Self::check_parts(angles, detector, 1)?;
        Self::radii(src_radius, det_radius)?;
        if !offset.is_finite() {
            return Err(Error::Geometry(format!(
                "the detector offset must be finite, got {offset}"
            )));
        }
        let (det, det_mid) = Self::curved_setup(2, detector, &[Some(det_curvature_radius)])?;
        let setup = Setup {
            ndim: 2,
            beam: Beam::Point,
            axis: [0.0, 0.0, 1.0],
            src_radius,
            det_radius,
            pitch: 0.0,
            det_shift: [offset, 0.0],
            det_cell: Self::cells(detector),
            detector: det,
            det_mid,
            src_offsets: Vec::new(),
        };
        Self::build(setup, angles, detector, None)
    }

    /// 3D cone beam, circular or helical (`pitch`), with the detector of ODL 1.0's
    /// `ConeBeamGeometry(..., det_curvature_radius=(r_u, r_v))`: `[None, None]` flat (as
    /// [`cone_flat`](Self::cone_flat)), `[Some(r), None]` a cylinder of radius `r` with its
    /// axis along `v` (the rotation axis), `[Some(r), Some(r)]` a sphere of radius `r`; both
    /// pass through the reference point at `det_radius` and have their centre (axis) `r`
    /// towards the source. `detector` partitions ODL's parameters: on a cylinder the angle `φ`
    /// (radians) × the height `h`, on a sphere longitude `φ` × latitude `θ` (radians, within
    /// `[−π/2, π/2]`; the equator through the reference point). The data space's weighting is that of these parameters, as in
    /// ODL. `offset` shifts the whole detector along `(u, v)` (world units). A clinical
    /// scanner's detector is the cylinder of radius `src_radius + det_radius`.
    ///
    /// ```
    /// use std::f64::consts::PI;
    /// use rodl::{tomo::Geometry, UniformPartition};
    /// let angles = UniformPartition::new(&[0.0], &[4.0 * PI], &[10])?;
    /// let det = UniformPartition::new(&[-PI / 2.0, -1.0], &[PI / 2.0, 1.0], &[20, 20])?;
    /// let g = Geometry::cone_curved(&angles, &det, 5.0, 10.0, [Some(10.0), None], 0.0, [0.0, 0.0, 1.0], [0.0; 2])?;
    /// // The last column sits at φ = π/2 − π/40 on the cylinder of radius 10 about the origin.
    /// let (q, _) = g.vec().ray(0, 19, 19);
    /// assert!((q[0].hypot(q[1]) - 10.0).abs() < 1e-12 && (q[2] - 0.95).abs() < 1e-12);
    /// assert!(Geometry::cone_curved(&angles, &det, 5.0, 10.0, [Some(10.0), Some(5.0)], 0.0, [0.0, 0.0, 1.0], [0.0; 2]).is_err());
    /// # Ok::<(), rodl::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn cone_curved(
        angles: &UniformPartition,
        detector: &UniformPartition,
        src_radius: f64,
        det_radius: f64,
        det_curvature_radius: [Option<f64>; 2],
        pitch: f64,
        axis: [f64; 3],
        offset: [f64; 2],
    ) -> Result<Self> {
        Self::check_parts(angles, detector, 2)?;
        let (det, det_mid) = Self::curved_setup(3, detector, &det_curvature_radius)?;
        if !det.is_curved() {
            return Self::cone_flat(
                angles, detector, src_radius, det_radius, pitch, axis, offset,
            );
        }
        Self::radii(src_radius, det_radius)?;
        if !pitch.is_finite() {
            return Err(Error::Geometry(format!(
                "pitch must be finite, got {pitch}"
            )));
        }
        if !offset.iter().all(|x| x.is_finite()) {
            return Err(Error::Geometry(format!(
                "the detector offset must be finite, got {offset:?}"
            )));
        }
        let setup = Setup {
            ndim: 3,
            beam: Beam::Point,
            axis: Self::unit_axis(axis)?,
            src_radius,
            det_radius,
            pitch,
            det_shift: offset,
            det_cell: Self::cells(detector),
            detector: det,
            det_mid,
            src_offsets: Vec::new(),
        };
        Self::build(setup, angles, detector, None)
    }

    /// The same fan or cone geometry with per-view source offsets: ODL's flying focal spot
    /// (`src_shift_func=lambda a: flying_focal_spot(a, apart, shifts)`). Offset `k % n` (of
    /// `n = offsets.len()`) moves the source of view `k` by `s[0]` from the detector towards
    /// the source, `s[1]` along the detector's `u` direction (the tangent of the source
    /// circle) and, in 3D, `s[2]` along the rotation axis, all in the view's rotated frame
    /// and in world units; the detector stays where it is. In 2D `s[2]` must be 0. An empty
    /// list removes the offsets. Errors for parallel beams, geometries not built by a fan or
    /// cone constructor (a vector geometry holds its sources itself) and non-finite offsets.
    ///
    /// ```
    /// use std::f64::consts::PI;
    /// use rodl::{tomo::Geometry, UniformPartition};
    /// let angles = UniformPartition::new(&[0.0], &[2.0 * PI], &[4])?;
    /// let det = UniformPartition::new(&[-1.0], &[1.0], &[8])?;
    /// let g = Geometry::fan_flat(&angles, &det, 4.0, 2.0, 0.0)?;
    /// let ffs = g.with_src_offsets(&[[0.0, 0.1, 0.0], [0.0, -0.1, 0.0]])?;
    /// let (a, b) = (g.vec().views()[1], ffs.vec().views()[1]); // view 1: offset −0.1 along u
    /// assert_eq!(a.det_center, b.det_center);
    /// let du = a.det_u.map(|x| x / 0.25); // unit u direction
    /// let moved: f64 = (0..2).map(|k| (b.src[k] - a.src[k]) * du[k]).sum();
    /// assert!((moved + 0.1).abs() < 1e-12);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn with_src_offsets(&self, offsets: &[[f64; 3]]) -> Result<Self> {
        let Some(setup) = &self.setup else {
            return Err(Error::Geometry(
                "source offsets need a fan or cone geometry from its constructor (a vector \
                 geometry gives each view's source itself)"
                    .into(),
            ));
        };
        if setup.beam != Beam::Point {
            return Err(Error::Geometry(
                "source offsets (a flying focal spot) need a fan or cone beam".into(),
            ));
        }
        for (k, s) in offsets.iter().enumerate() {
            if !s.iter().all(|x| x.is_finite()) {
                return Err(Error::Geometry(format!(
                    "source offset {k} is not finite: {s:?}"
                )));
            }
            if setup.ndim == 2 && s[2] != 0.0 {
                return Err(Error::Geometry(format!(
                    "source offset {k}: a 2D geometry has no axial offset, got {}",
                    s[2]
                )));
            }
        }
        let mut setup = (**setup).clone();
        setup.src_offsets = offsets.to_vec();
        let p = &self.data_partition;
        let angles = UniformPartition::new(&p.min_pt()[..1], &p.max_pt()[..1], &p.shape()[..1])?;
        let detector = UniformPartition::new(&p.min_pt()[1..], &p.max_pt()[1..], &p.shape()[1..])?;
        let spec = self.spec.clone().map(|mut s| {
            s.src_offsets = (!offsets.is_empty())
                .then(|| offsets.iter().map(|o| o[..setup.ndim].to_vec()).collect());
            s
        });
        Self::build(setup, &angles, &detector, spec)
    }

    /// The per-view source offsets of [`with_src_offsets`](Self::with_src_offsets) (empty for
    /// none).
    pub fn src_offsets(&self) -> &[[f64; 3]] {
        self.setup.as_ref().map_or(&[], |s| &s.src_offsets)
    }

    /// A geometry given view by view on a given data partition (the angle axis, then the
    /// detector axes): for scans whose views sit at known angles, so that the data space's
    /// weighting `Δθ · Δu (· Δv)` is the scanner's (as for a geometry converted from ODL, whose
    /// data space is the uniform discretisation of its angle and detector partition). The
    /// partition's shape must be the views' data shape; its cells only set the data space's
    /// weighting and FBP's angle range, the rays are the views'.
    ///
    /// ```
    /// use rodl::tomo::{Beam, Geometry, VecGeometry, View};
    /// use rodl::UniformPartition;
    /// let view = View { src: [0.0, 1.0, 0.0], det_center: [0.0; 3], det_u: [0.1, 0.0, 0.0], det_v: [0.0; 3] };
    /// let vec = VecGeometry::new(2, Beam::Parallel, &[16], vec![view; 4])?;
    /// let part = UniformPartition::new(&[0.0, -0.8], &[3.14, 0.8], &[4, 16])?;
    /// let g = Geometry::from_vec_on(vec.clone(), part)?;
    /// assert_eq!(g.data_shape(), vec![4, 16]);
    /// let wrong = UniformPartition::new(&[0.0, -0.8], &[3.14, 0.8], &[5, 16])?;
    /// assert!(Geometry::from_vec_on(vec, wrong).is_err());
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn from_vec_on(vec: VecGeometry, data_partition: UniformPartition) -> Result<Self> {
        if data_partition.shape() != vec.data_shape().as_slice() {
            return Err(Error::Geometry(format!(
                "the data partition has the shape {:?}, the views need {:?}",
                data_partition.shape(),
                vec.data_shape()
            )));
        }
        Ok(Self {
            vec,
            data_partition,
            spec: None,
            setup: None,
        })
    }

    /// A geometry given view by view. The data partition is `[0, views]` along the view axis
    /// (unit weight per view) times a detector of the first view's pixel sizes, centred at 0.
    pub fn from_vec(vec: VecGeometry) -> Result<Self> {
        let v0 = vec.views()[0];
        let len = |a: [f64; 3]| dot(a, a).sqrt();
        let cells = [len(v0.det_u), len(v0.det_v)];
        let mut lo = vec![0.0];
        let mut hi = vec![vec.num_views() as f64];
        for (k, &n) in vec.det_shape().iter().enumerate() {
            lo.push(-0.5 * n as f64 * cells[k]);
            hi.push(0.5 * n as f64 * cells[k]);
        }
        let data_partition = UniformPartition::new(&lo, &hi, &vec.data_shape())?;
        Ok(Self {
            vec,
            data_partition,
            spec: None,
            setup: None,
        })
    }

    pub(crate) fn with_spec(mut self, spec: GeometrySpec) -> Self {
        self.spec = Some(spec);
        self
    }

    /// The description this geometry was built from, when it came from a [`GeometrySpec`].
    pub fn spec(&self) -> Option<&GeometrySpec> {
        self.spec.as_ref()
    }

    /// The per-view vector form.
    pub fn vec(&self) -> &VecGeometry {
        &self.vec
    }

    /// The partition of the data: angles (or views) × detector.
    pub fn data_partition(&self) -> &UniformPartition {
        &self.data_partition
    }

    /// Space dimension (2 or 3).
    pub fn ndim(&self) -> usize {
        self.vec.ndim()
    }

    /// Shape of projection data: `[angles, nu]` or `[angles, nu, nv]`.
    pub fn data_shape(&self) -> Vec<usize> {
        self.vec.data_shape()
    }
}
