//! Exact line integrals of ellipse and ellipsoid phantoms, for accuracy tests of projectors.
//!
//! A body placed on a space (see [`ellipse_phantom`](super::ellipse_phantom)) is the set
//! `{x : (x − c)ᵀ M (x − c) <= 1}` in world coordinates, with `M` symmetric positive definite
//! (ODL's per-axis stretching of the reference box turns a rotated ellipse into another ellipse,
//! not always with the same axes). The line `q + t d` (`|d| = 1`) meets it where
//! `a t² + 2 b t + c' <= 0`, `a = dᵀMd`, `b = dᵀM(q − c)`, `c' = (q − c)ᵀM(q − c) − 1`: a chord
//! of length `2 √(b² − a c') / a`, which times the body's value is its line integral.

use ndarray::{ArrayD, IxDyn};
use rayon::prelude::*;

use super::ellipsoid::{Body, Ellipse, Ellipsoid, RefFrame};
use super::shepp_logan::{shepp_logan_ellipses, shepp_logan_ellipsoids};
use crate::tomo::geometry::Geometry;
use crate::{Error, Result, Scalar, Space};

/// A body in world coordinates: `value` on `{x : (x − c)ᵀ M (x − c) <= 1}`.
struct Quadric {
    value: f64,
    c: [f64; 3],
    m: [[f64; 3]; 3],
}

impl Quadric {
    /// Places a reference-coordinate body on the first `ndim` axes of `frame`.
    fn place(body: &Body, frame: &RefFrame, ndim: usize) -> Quadric {
        let rot = body
            .rot
            .unwrap_or([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]);
        let mut c = [0.0; 3];
        let mut m = [[0.0; 3]; 3];
        for j in 0..ndim {
            c[j] = frame.mean[j] + frame.half[j] * body.center[j];
            for l in 0..ndim {
                let s: f64 = (0..3).map(|k| body.scales[k] * rot[k][j] * rot[k][l]).sum();
                m[j][l] = s / (frame.half[j] * frame.half[l]);
            }
        }
        Quadric {
            value: body.value,
            c,
            m,
        }
    }

    /// `value ×` the length of the chord cut from the line through `q` with unit direction `e`.
    fn line_integral(&self, q: [f64; 3], e: [f64; 3], ndim: usize) -> f64 {
        let p = [0, 1, 2].map(|k| if k < ndim { q[k] - self.c[k] } else { 0.0 });
        let (mut a, mut b, mut c) = (0.0, 0.0, -1.0);
        for j in 0..ndim {
            for l in 0..ndim {
                a += e[j] * self.m[j][l] * e[l];
                b += e[j] * self.m[j][l] * p[l];
                c += p[j] * self.m[j][l] * p[l];
            }
        }
        let disc = b * b - a * c;
        if disc > 0.0 && a > 0.0 {
            self.value * 2.0 * disc.sqrt() / a
        } else {
            0.0
        }
    }
}

fn projections<T: Scalar>(
    frame: &RefFrame,
    geometry: &Geometry,
    bodies: &[Body],
) -> Result<ArrayD<T>> {
    let ndim = frame.mean.len();
    if geometry.ndim() != ndim {
        return Err(Error::invalid(format!(
            "a {}D geometry needs a {}D phantom, got a {ndim}D one",
            geometry.ndim(),
            geometry.ndim()
        )));
    }
    let quadrics: Vec<Quadric> = bodies
        .iter()
        .map(|b| Quadric::place(b, frame, ndim))
        .collect();
    let g = geometry.vec();
    let (nu, nv) = (g.nu(), g.nv());
    crate::memory::check_host_array(&g.data_shape(), std::mem::size_of::<T>())?;
    let mut out = ArrayD::<T>::zeros(IxDyn(&g.data_shape()));
    let flat = out
        .as_slice_mut()
        .ok_or_else(|| Error::invalid("projection array is not contiguous"))?;
    flat.par_chunks_mut(nu * nv)
        .enumerate()
        .for_each(|(view, chunk)| {
            for (k, o) in chunk.iter_mut().enumerate() {
                let (q, d) = g.ray(view, k / nv, k % nv);
                let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                let e = d.map(|x| x / n);
                let sum: f64 = quadrics.iter().map(|b| b.line_integral(q, e, ndim)).sum();
                *o = T::of(sum);
            }
        });
    Ok(out)
}

/// The exact line integrals of [`ellipse_phantom`](super::ellipse_phantom)`(space, ellipses)`
/// (the continuous ellipses, not their samples) along the central ray of every detector pixel
/// of a 2D `geometry`, shaped like the data (`[angles, u]`).
///
/// ```
/// use rodl::tomo::{parallel_beam_geometry, phantom::{ellipse_projections, Ellipse}};
/// let space = rodl::uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[100, 100])?;
/// let geometry = parallel_beam_geometry(&space, Some(4))?;
/// // A disk of radius 0.5 in reference units: 0.5 · 0.99 in world units (the reference square
/// // spans the first to the last cell midpoint, ±0.99).
/// let disk = Ellipse::from_params([2.0, 0.5, 0.5, 0.0, 0.0, 0.0]);
/// let y = ellipse_projections::<f64>(&space, &geometry, &[disk])?;
/// let nu = y.shape()[1]; // odd: the middle pixel's ray goes through the centre
/// assert!((y[[0, nu / 2]] - 2.0 * (2.0 * 0.495)).abs() < 1e-12);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn ellipse_projections<T: Scalar>(
    space: &Space<T>,
    geometry: &Geometry,
    ellipses: &[Ellipse],
) -> Result<ArrayD<T>> {
    let frame = RefFrame::of(space, 2, "ellipse_projections")?;
    for e in ellipses {
        e.validate()?;
    }
    let bodies: Vec<Body> = ellipses.iter().map(Ellipse::body).collect();
    projections(&frame, geometry, &bodies)
}

/// The exact line integrals of [`ellipsoid_phantom`](super::ellipsoid_phantom)`(space,
/// ellipsoids)` along the central ray of every detector pixel of a 3D `geometry`, shaped like
/// the data (`[angles, u, v]`).
pub fn ellipsoid_projections<T: Scalar>(
    space: &Space<T>,
    geometry: &Geometry,
    ellipsoids: &[Ellipsoid],
) -> Result<ArrayD<T>> {
    let frame = RefFrame::of(space, 3, "ellipsoid_projections")?;
    for e in ellipsoids {
        e.validate()?;
    }
    let bodies: Vec<Body> = ellipsoids.iter().map(Ellipsoid::body).collect();
    projections(&frame, geometry, &bodies)
}

/// The exact line integrals of [`shepp_logan`](fn@super::shepp_logan)`(space, modified)` (2D or 3D)
/// along the central ray of every detector pixel of `geometry`.
pub fn shepp_logan_projections<T: Scalar>(
    space: &Space<T>,
    geometry: &Geometry,
    modified: bool,
) -> Result<ArrayD<T>> {
    match space.partition().map(|p| p.ndim()) {
        Ok(3) => ellipsoid_projections(space, geometry, &shepp_logan_ellipsoids(modified)),
        _ => ellipse_projections(space, geometry, &shepp_logan_ellipses(modified)),
    }
}
