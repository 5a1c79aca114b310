//! Isotropic Gaussian blobs: smooth phantoms with closed-form line integrals.

use ndarray::{ArrayD, IxDyn};

use crate::tomo::geometry::Geometry;
use crate::{Element, Error, Result, Scalar, Space};

/// An isotropic Gaussian `amplitude · exp(−|x − center|² / (2 σ²))`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GaussianBlob {
    /// Centre (the third entry is ignored in 2D).
    pub center: [f64; 3],
    /// Standard deviation σ.
    pub sigma: f64,
    /// Peak value.
    pub amplitude: f64,
}

impl GaussianBlob {
    /// The blob's value at a point (2 or 3 coordinates).
    pub fn value(&self, p: &[f64]) -> f64 {
        let r2: f64 = p
            .iter()
            .zip(self.center)
            .map(|(x, c)| (x - c) * (x - c))
            .sum();
        self.amplitude * (-r2 / (2.0 * self.sigma * self.sigma)).exp()
    }

    /// The line integral along the line through `q` with direction `d` (any length):
    /// `amplitude · σ √(2π) · exp(−dist² / (2σ²))`, `dist` the distance of the centre to the line.
    pub fn line_integral(&self, q: [f64; 3], d: [f64; 3]) -> f64 {
        let dn = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let e = d.map(|x| x / dn);
        let r = [0, 1, 2].map(|k| self.center[k] - q[k]);
        let along = r[0] * e[0] + r[1] * e[1] + r[2] * e[2];
        let dist2 = (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]) - along * along;
        self.amplitude
            * self.sigma
            * (2.0 * std::f64::consts::PI).sqrt()
            * (-dist2.max(0.0) / (2.0 * self.sigma * self.sigma)).exp()
    }
}

/// A sum of Gaussian blobs sampled at the cell midpoints of `space`.
pub fn gaussian_phantom<T: Scalar>(space: &Space<T>, blobs: &[GaussianBlob]) -> Result<Element<T>> {
    space.element_from_fn(|p| T::of(blobs.iter().map(|b| b.value(p)).sum()))
}

/// The exact line integrals of a sum of Gaussian blobs along the central ray of every detector
/// pixel of `geometry`, shaped like the data (`[angles, u(, v)]`).
pub fn gaussian_projections<T: Scalar>(
    geometry: &Geometry,
    blobs: &[GaussianBlob],
) -> Result<ArrayD<T>> {
    let g = geometry.vec();
    if g.ndim() == 2 && blobs.iter().any(|b| b.center[2] != 0.0) {
        return Err(Error::invalid("2D blobs must have center[2] = 0"));
    }
    let shape = g.data_shape();
    crate::memory::check_host_array(&shape, std::mem::size_of::<T>())?;
    let mut out = ArrayD::zeros(IxDyn(&shape));
    let nv = g.nv();
    for (k, o) in out.iter_mut().enumerate() {
        let view = k / (g.nu() * nv);
        let iu = (k / nv) % g.nu();
        let iv = k % nv;
        let (q, d) = g.ray(view, iu, iv);
        *o = T::of(blobs.iter().map(|b| b.line_integral(q, d)).sum());
    }
    Ok(out)
}
