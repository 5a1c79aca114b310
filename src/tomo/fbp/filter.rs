//! Ramp filters with ODL's frequency windows, and their discrete form along a detector row.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use realfft::num_complex::Complex;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The FBP filters of ODL's `fbp_filter_op`: the ramp `|ξ|` times a window of the normalised
/// frequency `ν = |ξ| / ξ_max` (`ξ_max = π / Δu`, the Nyquist frequency), cut off at
/// `ν > frequency_scaling`.
///
/// With `s` the frequency scaling and `x = ν / s`, the windows are:
///
/// | filter | window |
/// |---|---|
/// | Ram-Lak | `1` |
/// | Shepp-Logan | `sin(π x / 2) / (π x / 2)` |
/// | Cosine | `cos(π x / 2)` |
/// | Hamming | `0.54 + 0.46 cos(π x)` |
/// | Hann | `cos²(π x / 2)` |
///
/// Names parse case-insensitively as ODL spells them (`"Ram-Lak"`, `"shepp-logan"`, …):
///
/// ```
/// use rodl::tomo::FilterType;
/// let f: FilterType = "Shepp-Logan".parse()?;
/// assert_eq!(f, FilterType::SheppLogan);
/// assert_eq!(f.to_string(), "Shepp-Logan");
/// assert!((FilterType::Hann.window(0.5, 1.0) - 0.5).abs() < 1e-15);
/// assert_eq!(FilterType::RamLak.window(0.9, 0.8), 0.0); // beyond the cut-off
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FilterType {
    /// The plain ramp `|ξ|` (band-limited at the Nyquist frequency or the cut-off).
    #[default]
    RamLak,
    /// Ramp times a sinc window.
    SheppLogan,
    /// Ramp times a cosine window.
    Cosine,
    /// Ramp times a Hamming window.
    Hamming,
    /// Ramp times a Hann window.
    Hann,
}

impl FilterType {
    /// All filter types, in ODL's order.
    pub const ALL: [FilterType; 5] = [
        FilterType::RamLak,
        FilterType::SheppLogan,
        FilterType::Cosine,
        FilterType::Hamming,
        FilterType::Hann,
    ];

    /// The name as ODL spells it (`"Ram-Lak"`, `"Shepp-Logan"`, `"Cosine"`, `"Hamming"`,
    /// `"Hann"`).
    pub fn name(self) -> &'static str {
        match self {
            FilterType::RamLak => "Ram-Lak",
            FilterType::SheppLogan => "Shepp-Logan",
            FilterType::Cosine => "Cosine",
            FilterType::Hamming => "Hamming",
            FilterType::Hann => "Hann",
        }
    }

    /// The window at normalised frequency `norm_freq` (`|ξ| / ξ_max`, in `[0, 1]`) for a
    /// frequency scaling `frequency_scaling`; `0` beyond the cut-off.
    pub fn window(self, norm_freq: f64, frequency_scaling: f64) -> f64 {
        let nu = norm_freq.abs();
        if nu > frequency_scaling {
            return 0.0;
        }
        let x = nu / frequency_scaling;
        let half = 0.5 * std::f64::consts::PI * x;
        match self {
            FilterType::RamLak => 1.0,
            FilterType::SheppLogan => {
                if half == 0.0 {
                    1.0
                } else {
                    half.sin() / half
                }
            }
            FilterType::Cosine => half.cos(),
            FilterType::Hamming => 0.54 + 0.46 * (2.0 * half).cos(),
            FilterType::Hann => half.cos().powi(2),
        }
    }
}

impl fmt::Display for FilterType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FilterType {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let key: String = s
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | ' '))
            .collect::<String>()
            .to_lowercase();
        Ok(match key.as_str() {
            "ramlak" | "ramp" => FilterType::RamLak,
            "shepplogan" => FilterType::SheppLogan,
            "cosine" => FilterType::Cosine,
            "hamming" => FilterType::Hamming,
            "hann" | "hanning" => FilterType::Hann,
            _ => {
                return Err(Error::invalid(format!(
                    "unknown FBP filter {s:?} (Ram-Lak, Shepp-Logan, Cosine, Hamming or Hann)"
                )))
            }
        })
    }
}

/// A real, even convolution along rows of `n` samples with spacing `du`, done by real FFTs of
/// length `len`: `out_i = Σ_j t_{i−j} x_j`.
///
/// The kernel is the band-limited ramp sampled in space (`t_0 = π/(2Δu)`,
/// `t_m = −2/(π m² Δu)` for odd `m`, `0` for even `m ≠ 0`: the exact samples of the inverse
/// transform of `|ξ|` on `|ξ| ≤ π/Δu`, times `Δu` for the quadrature), transformed and
/// multiplied by the window. Unlike sampling `|ξ|` on the FFT grid, this keeps the response
/// at zero frequency right, so there is no constant offset in reconstructions.
pub(crate) struct RowFilter {
    n: usize,
    len: usize,
    /// Real multipliers of the bins `0..=len/2`, including `scale` and the inverse FFT's `1/len`.
    spectrum: Vec<f64>,
    r2c: Arc<dyn RealToComplex<f64>>,
    c2r: Arc<dyn ComplexToReal<f64>>,
}

/// The smallest `m ≥ n` whose prime factors are 2, 3 and 5.
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

/// Work buffers of one thread for [`RowFilter::apply_row`].
pub(crate) struct RowBuffers {
    pub(crate) real: Vec<f64>,
    spec: Vec<Complex<f64>>,
    scratch_fwd: Vec<Complex<f64>>,
    scratch_inv: Vec<Complex<f64>>,
}

impl RowFilter {
    /// The filter `filter` (with `frequency_scaling`) times `scale` for rows of `n` samples with
    /// spacing `du`; `padding` zero-pads to at least `2n − 1` (no wrap-around), otherwise the
    /// convolution is circular over `n` samples. `equiangular`: rows sampled in the fan angle
    /// `γ` (spacing `du` in radians) of an arc detector about the source, whose ramp taps
    /// `h(mΔγ)` become `(mΔγ / sin mΔγ)² h(mΔγ)` (the equiangular fan-beam kernel; the rows
    /// must span less than π).
    pub(crate) fn new(
        n: usize,
        du: f64,
        filter: FilterType,
        frequency_scaling: f64,
        padding: bool,
        scale: f64,
        equiangular: bool,
    ) -> Result<Self> {
        if !(frequency_scaling > 0.0 && frequency_scaling <= 1.0) {
            return Err(Error::invalid(format!(
                "frequency_scaling must be in (0, 1], got {frequency_scaling}"
            )));
        }
        if !(du.is_finite() && du > 0.0) {
            return Err(Error::invalid(format!(
                "detector spacing must be positive, got {du}"
            )));
        }
        let len = if padding { fast_len(2 * n - 1) } else { n };
        let mut planner = RealFftPlanner::<f64>::new();
        let r2c = planner.plan_fft_forward(len);
        let c2r = planner.plan_fft_inverse(len);
        // The band-limited ramp in space, one period of length `len`.
        let mut taps = vec![0.0f64; len];
        for (k, t) in taps.iter_mut().enumerate() {
            let m = if k <= len / 2 {
                k as f64
            } else {
                k as f64 - len as f64
            };
            *t = if k == 0 {
                std::f64::consts::PI / (2.0 * du)
            } else if (m as i64) % 2 != 0 {
                -2.0 / (std::f64::consts::PI * m * m * du)
            } else {
                0.0
            };
        }
        if equiangular {
            // The taps that meet data: |m| ≤ n − 1 with padding, |m| ≤ len/2 without.
            let reach = if padding { n - 1 } else { len / 2 };
            if reach as f64 * du >= std::f64::consts::PI {
                return Err(Error::Unsupported(format!(
                    "equiangular FBP needs a fan of less than π, the detector spans {} rad",
                    n as f64 * du
                )));
            }
            for (k, t) in taps.iter_mut().enumerate() {
                let m = if k <= len / 2 {
                    k as f64
                } else {
                    k as f64 - len as f64
                };
                if m != 0.0 && m.abs() <= reach as f64 {
                    let g = m * du;
                    *t *= (g / g.sin()).powi(2);
                }
            }
        }
        let mut spec = r2c.make_output_vec();
        r2c.process(&mut taps, &mut spec)
            .map_err(|e| Error::invalid(format!("FFT: {e}")))?;
        let spectrum = spec
            .iter()
            .enumerate()
            .map(|(j, c)| {
                let nu = 2.0 * j as f64 / len as f64;
                c.re * filter.window(nu, frequency_scaling) * scale / len as f64
            })
            .collect();
        Ok(Self {
            n,
            len,
            spectrum,
            r2c,
            c2r,
        })
    }

    /// The transform length (the padded row length).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The real frequency response at the bins `0 ..= len/2`, the inverse transform's `1/len`
    /// and the filter's scale included: what [`Self::apply_row`] multiplies the spectrum by.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn spectrum(&self) -> &[f64] {
        &self.spectrum
    }

    /// Fresh work buffers.
    pub(crate) fn buffers(&self) -> RowBuffers {
        RowBuffers {
            real: vec![0.0; self.len],
            spec: self.r2c.make_output_vec(),
            scratch_fwd: self.r2c.make_scratch_vec(),
            scratch_inv: self.c2r.make_scratch_vec(),
        }
    }

    /// Filters the row held in `b.real[..n]` in place (the rest of `b.real` is overwritten);
    /// the result is in `b.real[..n]`.
    pub(crate) fn apply_row(&self, b: &mut RowBuffers) {
        b.real[self.n..].fill(0.0);
        // Lengths match the plans, so the FFTs cannot fail.
        let _ = self
            .r2c
            .process_with_scratch(&mut b.real, &mut b.spec, &mut b.scratch_fwd);
        for (c, h) in b.spec.iter_mut().zip(&self.spectrum) {
            *c *= *h;
        }
        // The imaginary parts of the first (and, for even lengths, last) bin are zero already
        // (real, even kernel times the transform of real data).
        b.spec[0].im = 0.0;
        if self.len % 2 == 0 {
            if let Some(last) = b.spec.last_mut() {
                last.im = 0.0;
            }
        }
        let _ = self
            .c2r
            .process_with_scratch(&mut b.spec, &mut b.real, &mut b.scratch_inv);
    }

    /// The convolution's taps `t_d` for `d = −(n−1) ..= n−1` (index `d + n − 1`), i.e. the
    /// Toeplitz matrix the FFT path applies.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn taps(&self) -> Vec<f64> {
        let mut b = self.buffers();
        b.real.fill(0.0);
        // Impulse response of the periodic convolution: filter a unit impulse at 0.
        let mut spec = self.r2c.make_output_vec();
        b.real[0] = 1.0;
        let _ = self
            .r2c
            .process_with_scratch(&mut b.real, &mut spec, &mut b.scratch_fwd);
        for (c, h) in spec.iter_mut().zip(&self.spectrum) {
            *c *= *h;
        }
        spec[0].im = 0.0;
        if self.len % 2 == 0 {
            if let Some(last) = spec.last_mut() {
                last.im = 0.0;
            }
        }
        let _ = self
            .c2r
            .process_with_scratch(&mut spec, &mut b.real, &mut b.scratch_inv);
        let n = self.n as isize;
        let len = self.len as isize;
        (-(n - 1)..n)
            .map(|d| b.real[d.rem_euclid(len) as usize])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_lengths() {
        assert_eq!(fast_len(1), 1);
        assert_eq!(fast_len(7), 8);
        assert_eq!(fast_len(729), 729);
        assert_eq!(fast_len(2 * 365 - 1), 729);
        assert_eq!(fast_len(31), 32);
    }

    /// With padding, the FFT path is the linear convolution with the spatial Ram-Lak taps.
    #[test]
    fn ram_lak_taps_are_the_band_limited_ramp() {
        let du = 0.5;
        let f = RowFilter::new(9, du, FilterType::RamLak, 1.0, true, 1.0, false).unwrap();
        let t = f.taps();
        assert_eq!(t.len(), 17);
        for (k, &v) in t.iter().enumerate() {
            let m = k as i64 - 8;
            let want = if m == 0 {
                std::f64::consts::PI / (2.0 * du)
            } else if m % 2 != 0 {
                -2.0 / (std::f64::consts::PI * (m * m) as f64 * du)
            } else {
                0.0
            };
            assert!((v - want).abs() < 1e-12, "tap {m}: {v} vs {want}");
        }
    }
}
