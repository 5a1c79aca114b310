//! Acquisition geometries with ODL's conventions, all converted to one per-view vector form.
//!
//! Conventions (as in ODL): angles are the midpoints of a uniform partition of
//! `[min, max]`; rotation is counter-clockwise about the axis (default `z`). At angle 0 a
//! parallel beam runs along `+y` with the detector's `u` axis along `+x` (and `v` along the
//! rotation axis in 3D); fan and cone sources sit at `−src_radius·e_y` and the detector centre at
//! `+det_radius·e_y`. A helical `pitch` is the shift along the axis per full turn.

mod footprint;
mod helpers;
mod spec;
mod subset;
mod vec;

pub use helpers::{cone_beam_geometry, parallel_beam_geometry};
pub use spec::{
    AngleSpec, DetectorSpec, GeometryKind, GeometrySpec, TomoSpec, ViewSpec, VolumeSpec,
    MAX_GEOMETRY_FILE_BYTES, MAX_GEOMETRY_MAGNITUDE,
};
pub use vec::{Beam, VecGeometry, View};

use crate::{Error, Result, UniformPartition};

/// A tomographic acquisition geometry: the per-view vectors the projectors use and the
/// partition of the data (angles × detector) that gives the data space and its weighting.
#[derive(Clone, Debug, PartialEq)]
pub struct Geometry {
    vec: VecGeometry,
    data_partition: UniformPartition,
    spec: Option<GeometrySpec>,
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
            std::mem::size_of::<View>() + std::mem::size_of::<f64>(),
        )?;
        let thetas = angles.coord_vector(0)?;
        let views = thetas
            .iter()
            .map(|&t| {
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
                match setup.beam {
                    Beam::Parallel => View {
                        src: ry,
                        det_center: center,
                        det_u,
                        det_v,
                    },
                    Beam::Point => View {
                        src: lift(ry.map(|x| -x * setup.src_radius)),
                        det_center: lift(axpy(setup.det_radius, ry, center)),
                        det_u,
                        det_v,
                    },
                }
            })
            .collect();
        let vec = VecGeometry::new(setup.ndim, setup.beam, detector.shape(), views)?;
        let mut lo = angles.min_pt().to_vec();
        let mut hi = angles.max_pt().to_vec();
        let mut shape = angles.shape().to_vec();
        lo.extend_from_slice(detector.min_pt());
        hi.extend_from_slice(detector.max_pt());
        shape.extend_from_slice(detector.shape());
        let data_partition = UniformPartition::new(&lo, &hi, &shape)?;
        Ok(Self {
            vec,
            data_partition,
            spec,
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
        };
        Self::build(setup, angles, detector, None)
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
