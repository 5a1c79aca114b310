//! Phantoms made of constant-valued ellipses (2D) and ellipsoids (3D), placed as ODL places them.
//!
//! ODL gives the bodies in a reference box `[-1, 1]^d` that is stretched onto the space: the
//! first and last *sample points* (cell midpoints) of each axis map to −1 and 1. A sample point
//! belongs to a body when the body's quadratic form is `<= 1` there, and the values of all bodies
//! containing it are added up in order, in the space's scalar type. Every step is done in the
//! same order of floating-point operations as ODL's `ellipsoid_phantom`, so the samples agree
//! with ODL's bit for bit (see `tests/tomo_phantom.rs`).

use ndarray::{Array3, Axis, IxDyn};
use rayon::prelude::*;

use crate::{Element, Error, Result, Scalar, Space};

/// A constant-valued ellipse in ODL's reference square `[-1, 1]²` (see [`ellipse_phantom`]).
///
/// The parameters and their order are ODL's: value, the two semi-axes, the centre, the rotation
/// angle (radians, counter-clockwise: the first semi-axis points along `(cos θ, sin θ)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ellipse {
    /// The value added inside the ellipse.
    pub value: f64,
    /// Semi-axes, in units of half the space's extent (the reference square has side 2).
    pub axes: [f64; 2],
    /// Centre in reference coordinates (`[0, 0]` is the middle of the space).
    pub center: [f64; 2],
    /// Rotation in radians, counter-clockwise.
    pub rotation: f64,
}

impl Ellipse {
    /// An ellipse from ODL's parameter list
    /// `[value, axis_1, axis_2, center_x, center_y, rotation]`.
    pub fn from_params(p: [f64; 6]) -> Self {
        Ellipse {
            value: p[0],
            axes: [p[1], p[2]],
            center: [p[3], p[4]],
            rotation: p[5],
        }
    }

    /// ODL's parameter list `[value, axis_1, axis_2, center_x, center_y, rotation]`.
    pub fn params(&self) -> [f64; 6] {
        [
            self.value,
            self.axes[0],
            self.axes[1],
            self.center[0],
            self.center[1],
            self.rotation,
        ]
    }

    /// Errors unless every parameter is finite and the semi-axes are positive.
    pub fn validate(&self) -> Result<()> {
        check_params(&self.params(), &self.axes, "ellipse")
    }

    /// The ellipse as a 3D body with a dummy z axis (which gives the same roundings as ODL's
    /// 2D formulas: every extra term is an exact zero).
    pub(super) fn body(&self) -> Body {
        let rot = (self.rotation != 0.0).then(|| {
            let (s, c) = self.rotation.sin_cos();
            [[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]]
        });
        Body::new(
            self.value,
            [self.axes[0], self.axes[1], 1.0],
            [self.center[0], self.center[1], 0.0],
            rot,
        )
    }
}

/// A constant-valued ellipsoid in ODL's reference cube `[-1, 1]³` (see [`ellipsoid_phantom`]).
///
/// The parameters and their order are ODL's: value, the three semi-axes, the centre, and the
/// Euler angles `φ, θ, ψ` (radians). Semi-axis `k` points along row `k` of
/// ```text
/// [[ cψ cφ − cθ sφ sψ,   cψ sφ + cθ cφ sψ,  sψ sθ],
///  [−sψ cφ − cθ sφ cψ,  −sψ sφ + cθ cφ cψ,  cψ sθ],
///  [ sθ sφ,             −sθ cφ,              cθ  ]]
/// ```
/// (`c`, `s`: cosine and sine); with `θ = ψ = 0` this is a counter-clockwise rotation by `φ`
/// about the z axis, as for an [`Ellipse`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ellipsoid {
    /// The value added inside the ellipsoid.
    pub value: f64,
    /// Semi-axes, in units of half the space's extent.
    pub axes: [f64; 3],
    /// Centre in reference coordinates.
    pub center: [f64; 3],
    /// Euler angles `[φ, θ, ψ]` in radians.
    pub angles: [f64; 3],
}

impl Ellipsoid {
    /// An ellipsoid from ODL's parameter list `[value, axis_1, axis_2, axis_3, center_x,
    /// center_y, center_z, rotation_phi, rotation_theta, rotation_psi]`.
    pub fn from_params(p: [f64; 10]) -> Self {
        Ellipsoid {
            value: p[0],
            axes: [p[1], p[2], p[3]],
            center: [p[4], p[5], p[6]],
            angles: [p[7], p[8], p[9]],
        }
    }

    /// ODL's parameter list (see [`Ellipsoid::from_params`]).
    pub fn params(&self) -> [f64; 10] {
        let (a, c, r) = (self.axes, self.center, self.angles);
        [
            self.value, a[0], a[1], a[2], c[0], c[1], c[2], r[0], r[1], r[2],
        ]
    }

    /// Errors unless every parameter is finite and the semi-axes are positive.
    pub fn validate(&self) -> Result<()> {
        check_params(&self.params(), &self.axes, "ellipsoid")
    }

    pub(super) fn body(&self) -> Body {
        let [phi, theta, psi] = self.angles;
        let rot = (phi != 0.0 || theta != 0.0 || psi != 0.0).then(|| {
            let (sphi, cphi) = phi.sin_cos();
            let (sth, cth) = theta.sin_cos();
            let (spsi, cpsi) = psi.sin_cos();
            [
                [
                    cpsi * cphi - cth * sphi * spsi,
                    cpsi * sphi + cth * cphi * spsi,
                    spsi * sth,
                ],
                [
                    -spsi * cphi - cth * sphi * cpsi,
                    -spsi * sphi + cth * cphi * cpsi,
                    cpsi * sth,
                ],
                [sth * sphi, -sth * cphi, cth],
            ]
        });
        Body::new(self.value, self.axes, self.center, rot)
    }
}

fn check_params(params: &[f64], axes: &[f64], what: &str) -> Result<()> {
    if params.iter().any(|p| !p.is_finite()) {
        return Err(Error::invalid(format!(
            "{what} parameters must be finite, got {params:?}"
        )));
    }
    if axes.iter().any(|&a| !(a > 0.0)) {
        return Err(Error::invalid(format!(
            "{what} semi-axes must be positive, got {axes:?}"
        )));
    }
    Ok(())
}

/// An ellipse or ellipsoid in reference coordinates, ready for evaluation.
pub(super) struct Body {
    pub(super) value: f64,
    /// `1 / axis²` per axis (ODL's `scales`).
    pub(super) scales: [f64; 3],
    pub(super) center: [f64; 3],
    /// The rotation (rows: the semi-axis directions), `None` when all angles are 0.
    pub(super) rot: Option<[[f64; 3]; 3]>,
    /// Half the extent of the bounding box along each axis.
    half_extent: [f64; 3],
}

impl Body {
    fn new(value: f64, axes: [f64; 3], center: [f64; 3], rot: Option<[[f64; 3]; 3]>) -> Self {
        let sq = axes.map(|a| a * a);
        let half_extent = match rot {
            None => axes,
            Some(m) => [0, 1, 2].map(|k| {
                (0..3)
                    .map(|j| m[j][k] * m[j][k] * sq[j])
                    .sum::<f64>()
                    .sqrt()
            }),
        };
        Body {
            value,
            scales: sq.map(|s| 1.0 / s),
            center,
            rot,
            half_extent,
        }
    }

    /// The quadratic form at reference point `g` (inside when `<= 1`), with ODL's roundings.
    #[inline]
    pub(super) fn radius(&self, g: [f64; 3]) -> f64 {
        let c = self.center;
        let d = [g[0] - c[0], g[1] - c[1], g[2] - c[2]];
        let s = self.scales;
        match &self.rot {
            None => s[0] * (d[0] * d[0]) + (s[1] * (d[1] * d[1]) + s[2] * (d[2] * d[2])),
            Some(m) => {
                let r = [0, 1, 2].map(|k| (m[k][0] * d[0] + m[k][1] * d[1]) + m[k][2] * d[2]);
                (r[0] * r[0]) * s[0] + (r[1] * r[1]) * s[1] + (r[2] * r[2]) * s[2]
            }
        }
    }

    /// The index range (inclusive start, exclusive end) of the samples `coords` (increasing)
    /// that may lie inside along `axis`: a superset of the true range.
    fn index_range(&self, axis: usize, coords: &[f64]) -> (usize, usize) {
        let e = self.half_extent[axis] * (1.0 + 1e-9) + 1e-9;
        let lo = self.center[axis] - e;
        let hi = self.center[axis] + e;
        let start = coords.partition_point(|&g| g < lo);
        let end = coords.partition_point(|&g| g <= hi);
        (start, end.max(start))
    }
}

/// ODL's mapping of a space onto the reference box `[-1, 1]^d`: the sample points of each axis
/// are `numpy.linspace(first, last, n)` (first and last sample computed from the cell bounds as
/// ODL does), shifted by their mean and divided by half their extent. An axis with one cell maps
/// to 0 (a slice through the middle of the phantom).
pub(super) struct RefFrame {
    /// Per axis: world coordinate of the reference origin.
    pub(super) mean: Vec<f64>,
    /// Per axis: world length of one reference unit.
    pub(super) half: Vec<f64>,
    /// Per axis: the samples in reference coordinates.
    pub(super) coords: Vec<Vec<f64>>,
}

impl RefFrame {
    pub(super) fn of<T: Scalar>(space: &Space<T>, ndim: usize, what: &str) -> Result<Self> {
        let p = space.partition().map_err(|_| {
            Error::invalid(format!(
                "{what} needs a discretised space (uniform_discr), got {space}"
            ))
        })?;
        if p.ndim() != ndim {
            return Err(Error::invalid(format!(
                "{what} needs a {ndim}D space, got a {}D one",
                p.ndim()
            )));
        }
        let (mut mean, mut half, mut coords) = (vec![], vec![], vec![]);
        for k in 0..ndim {
            let n = p.shape()[k];
            let (xmin, xmax) = (p.min_pt()[k], p.max_pt()[k]);
            let gmin = xmin + (xmax - xmin) / (2 * n) as f64;
            let gmax = xmax - (xmax - xmin) / (2 * n) as f64;
            let grid: Vec<f64> = if n == 1 {
                vec![gmin]
            } else {
                let step = (gmax - gmin) / (n - 1) as f64;
                (0..n)
                    .map(|i| {
                        if i + 1 == n {
                            gmax
                        } else {
                            i as f64 * step + gmin
                        }
                    })
                    .collect()
            };
            let (m, h) = if n == 1 {
                (gmin, 1.0)
            } else {
                ((gmin + gmax) / 2.0, (gmax - gmin) / 2.0)
            };
            coords.push(grid.iter().map(|&x| (x - m) / h).collect());
            mean.push(m);
            half.push(h);
        }
        Ok(RefFrame { mean, half, coords })
    }
}

/// Samples the sum of `bodies` on `space` (2D bodies carry a dummy z axis).
fn sample<T: Scalar>(space: &Space<T>, frame: &RefFrame, bodies: &[Body]) -> Result<Element<T>> {
    let mut coords = frame.coords.clone();
    if coords.len() == 2 {
        coords.push(vec![0.0]);
    }
    let (nx, ny, nz) = (coords[0].len(), coords[1].len(), coords[2].len());
    crate::memory::check_host_array(space.shape()?, std::mem::size_of::<T>())?;
    let mut a = Array3::<T>::zeros((nx, ny, nz));
    let ranges: Vec<[(usize, usize); 3]> = bodies
        .iter()
        .map(|b| [0, 1, 2].map(|k| b.index_range(k, &coords[k])))
        .collect();
    a.axis_iter_mut(Axis(0))
        .into_par_iter()
        .enumerate()
        .for_each(|(i, mut plane)| {
            for (b, r) in bodies.iter().zip(&ranges) {
                if i < r[0].0 || i >= r[0].1 {
                    continue;
                }
                let v = T::of(b.value);
                for j in r[1].0..r[1].1 {
                    for k in r[2].0..r[2].1 {
                        if b.radius([coords[0][i], coords[1][j], coords[2][k]]) <= 1.0 {
                            let p = &mut plane[[j, k]];
                            *p += v;
                        }
                    }
                }
            }
        });
    let shape = space.shape()?.to_vec();
    let a = a
        .into_shape_with_order(IxDyn(&shape))
        .map_err(|e| Error::invalid(e.to_string()))?;
    space.element(a)
}

/// The sum of constant-valued ellipses sampled on a 2D discretised space, as ODL's
/// `odl.phantom.ellipsoid_phantom(space, ellipses)`.
///
/// The ellipses are given in the reference square `[-1, 1]²`, which is stretched so that the
/// first and last sample points (cell midpoints) of each axis land on −1 and 1. An axis with a
/// single cell gives the slice through the middle.
///
/// ```
/// use rodl::tomo::phantom::{ellipse_phantom, Ellipse};
/// let space = rodl::uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[5, 5])?;
/// let disks = [
///     Ellipse::from_params([1.0, 1.0, 1.0, 0.0, 0.0, 0.0]),
///     Ellipse::from_params([1.0, 0.6, 0.6, 0.0, 0.0, 0.0]),
/// ];
/// let x = ellipse_phantom(&space, &disks)?;
/// assert_eq!(x.as_slice()?[5..10], [0.0, 1.0, 2.0, 1.0, 0.0]);
/// assert_eq!(x.as_slice()?[10..15], [1.0, 2.0, 2.0, 2.0, 1.0]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn ellipse_phantom<T: Scalar>(space: &Space<T>, ellipses: &[Ellipse]) -> Result<Element<T>> {
    let frame = RefFrame::of(space, 2, "ellipse_phantom")?;
    for e in ellipses {
        e.validate()?;
    }
    let bodies: Vec<Body> = ellipses.iter().map(Ellipse::body).collect();
    sample(space, &frame, &bodies)
}

/// The sum of constant-valued ellipsoids sampled on a 3D discretised space, as ODL's
/// `odl.phantom.ellipsoid_phantom(space, ellipsoids)` (reference cube `[-1, 1]³`, placed as in
/// [`ellipse_phantom`]).
pub fn ellipsoid_phantom<T: Scalar>(
    space: &Space<T>,
    ellipsoids: &[Ellipsoid],
) -> Result<Element<T>> {
    let frame = RefFrame::of(space, 3, "ellipsoid_phantom")?;
    for e in ellipsoids {
        e.validate()?;
    }
    let bodies: Vec<Body> = ellipsoids.iter().map(Ellipsoid::body).collect();
    sample(space, &frame, &bodies)
}
