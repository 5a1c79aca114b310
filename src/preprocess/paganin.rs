//! Single-material phase retrieval (Paganin et al. 2002).

use std::sync::Arc;

use ndarray::{s, Array2, ArrayViewMut2, ArrayViewMut3, Axis};
use rayon::prelude::*;
use realfft::num_complex::Complex;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::{Fft, FftPlanner};

use crate::{Error, Result};

/// `h·c` in keV·m: a photon of `E` keV has the wavelength `HC_KEV_M / E` metres (CODATA 2018).
pub const HC_KEV_M: f64 = 1.239_841_984e-9;

/// The wavelength in metres of X-rays of `energy_kev` keV.
///
/// ```
/// let l = rodl::preprocess::wavelength_m(12.398_419_84);
/// assert!((l - 1e-10).abs() < 1e-19); // 1 Å
/// ```
pub fn wavelength_m(energy_kev: f64) -> f64 {
    HC_KEV_M / energy_kev
}

/// The parameters of [`paganin`]: the material's `δ/β`, the X-rays' wavelength, the
/// propagation distance and the detector's pixel size, all lengths in metres.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PaganinOptions {
    /// The ratio `δ/β` of the decrement of the refractive index's real part to its imaginary
    /// part (`n = 1 − δ + iβ`), of the one material the sample is assumed to be made of.
    /// TomoPy's `retrieve_phase` takes its inverse, `alpha = β/δ`.
    pub delta_beta: f64,
    /// The wavelength in metres (see [`wavelength_m`]).
    pub wavelength: f64,
    /// The propagation distance from the sample to the detector in metres (for a cone beam:
    /// the sample-to-detector distance, with [`PaganinOptions::magnification`]).
    pub distance: f64,
    /// The detector's pixel sizes along (u, v) in metres: for a parallel beam the pixel size
    /// in the sample plane (a synchrotron detector's effective pixel), for a cone beam the
    /// detector's own pixel with [`PaganinOptions::magnification`].
    pub pixel_size: [f64; 2],
    /// The geometric magnification `(R₁ + R₂)/R₁` of a cone beam (source to sample `R₁`,
    /// sample to detector `R₂`), `1` for a parallel beam. By the Fresnel scaling theorem a
    /// point source is a parallel beam at the distance `R₂/M` on a grid demagnified by `M`,
    /// so the filter's width is `π λ R₂ M (δ/β)` in detector coordinates.
    pub magnification: f64,
    /// Pad each frame to at least twice its size with its edge values before the Fourier
    /// transform (default `true`), so that the filter does not wrap one edge into the other.
    pub padding: bool,
}

impl PaganinOptions {
    /// The options of a parallel beam: `delta_beta`, the energy in keV, the propagation
    /// distance in metres and the pixel size in metres (square pixels), padded.
    ///
    /// ```
    /// use rodl::preprocess::PaganinOptions;
    /// let o = PaganinOptions::new(250.0, 20.0, 0.1, 1.3e-6);
    /// assert!((o.wavelength - 6.199e-11).abs() < 1e-14);
    /// assert_eq!(o.magnification, 1.0);
    /// ```
    pub fn new(delta_beta: f64, energy_kev: f64, distance_m: f64, pixel_size_m: f64) -> Self {
        Self {
            delta_beta,
            wavelength: wavelength_m(energy_kev),
            distance: distance_m,
            pixel_size: [pixel_size_m, pixel_size_m],
            magnification: 1.0,
            padding: true,
        }
    }

    /// The filter's squared length `a = π λ z M δ/β` (square metres): the transmission's
    /// Fourier transform at spatial frequency `f` (cycles per metre) is divided by
    /// `1 + a |f|²`.
    pub fn filter_area(&self) -> f64 {
        std::f64::consts::PI
            * self.wavelength
            * self.distance
            * self.magnification
            * self.delta_beta
    }

    fn check(&self) -> Result<()> {
        let fields = [
            ("delta_beta", self.delta_beta, true),
            ("wavelength", self.wavelength, false),
            ("distance", self.distance, true),
            ("pixel_size[0]", self.pixel_size[0], false),
            ("pixel_size[1]", self.pixel_size[1], false),
            ("magnification", self.magnification, false),
        ];
        for (name, v, zero_ok) in fields {
            let ok = v.is_finite() && (v > 0.0 || (zero_ok && v == 0.0));
            if !ok {
                return Err(Error::invalid(format!(
                    "Paganin phase retrieval: {name} must be {} and finite, got {v}",
                    if zero_ok { "non-negative" } else { "positive" }
                )));
            }
        }
        if self.magnification < 1.0 {
            return Err(Error::invalid(format!(
                "Paganin phase retrieval: the magnification must be at least 1, got {}",
                self.magnification
            )));
        }
        Ok(())
    }
}

/// Single-material phase retrieval of D. Paganin, S. C. Mayo, T. E. Gureyev, P. R. Miller and
/// S. W. Wilkins, "Simultaneous phase and amplitude extraction from a single defocused image
/// of a homogeneous object", J. Microsc. 206(1), 33–40 (2002), eq. (8), in place on
/// flat-field-corrected transmission frames `data = [angle, u, v]` (each frame `[u, v]`
/// filtered on its own, in parallel).
///
/// Each frame's Fourier transform is divided by `1 + π λ z M (δ/β) |f|²` (`f` the spatial
/// frequency in cycles per metre on the detector, see [`PaganinOptions`]), a low-pass filter
/// that undoes the propagation's edge enhancement of a sample of one material. The result is
/// still a transmission: `−log` of it ([`super::neg_log()`]) is `μ·T`, the line integral of the
/// attenuation `μ = 4πβ/λ` through the projected thickness `T`, so the reconstruction is in
/// the same units as without phase retrieval (multiply by `δ/β · λ/(4π)` for `δ`). The filter
/// keeps the mean (its value at `f = 0` is 1), is the identity for `δ/β = 0` or `z = 0`,
/// and frames are padded with their edge values to a fast FFT size of at least twice their
/// size unless [`PaganinOptions::padding`] is off. TomoPy's `retrieve_phase(tomo, pixel_size,
/// dist, energy, alpha)` applies the same filter with `alpha = 1/(δ/β)` and lengths in cm.
///
/// ```
/// use ndarray::Array3;
/// use rodl::preprocess::{paganin, PaganinOptions};
/// // A flat transmission stays as it is; an edge is smoothed.
/// let mut t = Array3::from_shape_fn([1, 32, 16], |(_, u, _)| if u < 16 { 0.9f32 } else { 0.6 });
/// paganin(t.view_mut(), &PaganinOptions::new(20.0, 25.0, 0.2, 2e-6))?;
/// assert!((t[[0, 2, 8]] - 0.9).abs() < 1e-3 && (t[[0, 29, 8]] - 0.6).abs() < 1e-3);
/// assert!(t[[0, 15, 8]] < 0.88 && t[[0, 16, 8]] > 0.62);
/// # Ok::<(), rodl::Error>(())
/// ```
///
/// Errors: parameters that are not finite or not positive (`δ/β` and the distance may be 0),
/// a magnification below 1, empty frames.
pub fn paganin(mut data: ArrayViewMut3<'_, f32>, opts: &PaganinOptions) -> Result<()> {
    opts.check()?;
    let (_, nu, nv) = data.dim();
    if nu == 0 || nv == 0 {
        return Err(Error::invalid(format!(
            "Paganin phase retrieval needs frames of at least 1 × 1 pixels, got {nu} × {nv}"
        )));
    }
    let a = opts.filter_area();
    if a == 0.0 || data.is_empty() {
        return Ok(());
    }
    let (pu, pv) = if opts.padding {
        (fast_len(2 * nu), fast_len(2 * nv))
    } else {
        (nu, nv)
    };
    crate::memory::check_host_array(&[pu, pv], 16)?;
    let plan = Plan::new(pu, pv, nu, nv, a, opts.pixel_size);
    data.axis_iter_mut(Axis(0)).into_par_iter().for_each_init(
        || plan.scratch(),
        |scratch, frame| plan.apply(frame, scratch),
    );
    Ok(())
}

/// The smallest length `≥ n` whose prime factors are 2, 3 and 5.
fn fast_len(n: usize) -> usize {
    let mut m = n.max(1);
    loop {
        let mut k = m;
        for p in [2, 3, 5] {
            while k % p == 0 {
                k /= p;
            }
        }
        if k == 1 {
            return m;
        }
        m += 1;
    }
}

/// The transforms and the filter of one padded frame size.
struct Plan {
    /// Padded sizes along u and v; the frames' sizes.
    pu: usize,
    pv: usize,
    nu: usize,
    nv: usize,
    /// Real-to-complex transforms along v (contiguous), complex transforms along u.
    r2c: Arc<dyn RealToComplex<f64>>,
    c2r: Arc<dyn ComplexToReal<f64>>,
    fwd: Arc<dyn Fft<f64>>,
    inv: Arc<dyn Fft<f64>>,
    /// `1 / (1 + a |f|²) / (pu · pv)` on the half spectrum `[pu, pv/2 + 1]`.
    filter: Array2<f64>,
}

/// One thread's buffers.
struct Scratch {
    real: Array2<f64>,
    spec: Array2<Complex<f64>>,
    column: Vec<Complex<f64>>,
    fft: Vec<Complex<f64>>,
}

impl Plan {
    fn new(pu: usize, pv: usize, nu: usize, nv: usize, a: f64, pixel: [f64; 2]) -> Self {
        let mut real = RealFftPlanner::<f64>::new();
        let mut complex = FftPlanner::<f64>::new();
        let freq = |k: usize, n: usize, d: f64| {
            let k = if k <= n / 2 {
                k as f64
            } else {
                k as f64 - n as f64
            };
            k / (n as f64 * d)
        };
        let norm = 1.0 / (pu as f64 * pv as f64);
        let filter = Array2::from_shape_fn([pu, pv / 2 + 1], |(i, j)| {
            let fu = freq(i, pu, pixel[0]);
            let fv = j as f64 / (pv as f64 * pixel[1]);
            norm / (1.0 + a * (fu * fu + fv * fv))
        });
        Self {
            pu,
            pv,
            nu,
            nv,
            r2c: real.plan_fft_forward(pv),
            c2r: real.plan_fft_inverse(pv),
            fwd: complex.plan_fft_forward(pu),
            inv: complex.plan_fft_inverse(pu),
            filter,
        }
    }

    fn scratch(&self) -> Scratch {
        let len = self
            .fwd
            .get_inplace_scratch_len()
            .max(self.inv.get_inplace_scratch_len());
        Scratch {
            real: Array2::zeros([self.pu, self.pv]),
            spec: Array2::zeros([self.pu, self.pv / 2 + 1]),
            column: vec![Complex::default(); self.pu],
            fft: vec![Complex::default(); len],
        }
    }

    /// Filters one frame `[u, v]`.
    fn apply(&self, mut frame: ArrayViewMut2<'_, f32>, s: &mut Scratch) {
        let (pu, pv, nu, nv) = (self.pu, self.pv, self.nu, self.nv);
        // Centre the frame in the padded one; repeat its edge values outside.
        let (ou, ov) = ((pu - nu) / 2, (pv - nv) / 2);
        for i in 0..pu {
            let src = i.saturating_sub(ou).min(nu - 1);
            let row = frame.row(src);
            let mut out = s.real.row_mut(i);
            for j in 0..pv {
                out[j] = row[j.saturating_sub(ov).min(nv - 1)] as f64;
            }
        }
        let half = pv / 2 + 1;
        for (mut r, mut c) in s.real.rows_mut().into_iter().zip(s.spec.rows_mut()) {
            let (Some(r), Some(c)) = (r.as_slice_mut(), c.as_slice_mut()) else {
                continue; // standard layout: never
            };
            // The lengths match the plan, so the transform cannot fail.
            let _ = self.r2c.process(r, c);
        }
        for j in 0..half {
            for i in 0..pu {
                s.column[i] = s.spec[[i, j]];
            }
            self.fwd.process_with_scratch(&mut s.column, &mut s.fft);
            for i in 0..pu {
                s.column[i] *= self.filter[[i, j]];
            }
            self.inv.process_with_scratch(&mut s.column, &mut s.fft);
            for i in 0..pu {
                s.spec[[i, j]] = s.column[i];
            }
        }
        for (mut c, mut r) in s.spec.rows_mut().into_iter().zip(s.real.rows_mut()) {
            let (Some(c), Some(r)) = (c.as_slice_mut(), r.as_slice_mut()) else {
                continue;
            };
            // The spectrum of a real row: the DC (and even length's Nyquist) terms are real.
            c[0].im = 0.0;
            if pv % 2 == 0 {
                c[half - 1].im = 0.0;
            }
            let _ = self.c2r.process(c, r);
        }
        frame.assign(
            &s.real
                .slice(s![ou..ou + nu, ov..ov + nv])
                .mapv(|x| x as f32),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::fast_len;

    #[test]
    fn fast_lengths_have_small_factors() {
        assert_eq!(fast_len(1), 1);
        assert_eq!(fast_len(7), 8);
        assert_eq!(fast_len(14), 15);
        assert_eq!(fast_len(2 * 1001), 2025);
    }
}
