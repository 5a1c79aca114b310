//! Image-quality figures of merit: PSNR, SSIM and the relative L2 error of a reconstruction
//! against a reference (ground truth).
//!
//! PSNR and SSIM follow scikit-image (`skimage.metrics.peak_signal_noise_ratio` and
//! `structural_similarity`), with the data range taken from the reference: `max − min` of its
//! entries unless given. They need host tensors (a GPU element gives an error: call
//! [`Element::to_host`] first). [`relative_error`] works on any device and on product elements.

use ndarray::{ArrayD, ArrayViewD, Axis, Dimension};
use rayon::prelude::*;

use crate::{Element, Error, Result, Scalar, Space};

/// Standard deviation of SSIM's Gaussian window (Wang et al. 2004).
pub const SSIM_SIGMA: f64 = 1.5;
/// SSIM's constant `K1` (`C1 = (K1 · data_range)²`).
pub const SSIM_K1: f64 = 0.01;
/// SSIM's constant `K2` (`C2 = (K2 · data_range)²`).
pub const SSIM_K2: f64 = 0.03;
/// Half-width of SSIM's window: `⌊3.5 σ + 0.5⌋` (scikit-image's truncation), so the window has
/// 11 samples per axis.
pub const SSIM_RADIUS: usize = 5;

/// `‖x − reference‖ / ‖reference‖` in the space's norm (for a constant-weight space the plain
/// relative L2 error). Works on any device and on product spaces. A zero reference gives 0 when
/// `x` is zero too and `+∞` otherwise.
///
/// ```
/// use rodl::diagnostics::relative_error;
/// let space = rodl::rn::<f64>(&[3])?;
/// let r = space.element_from_vec(vec![1.0, 2.0, 2.0])?;
/// let x = space.element_from_vec(vec![1.0, 2.0, 2.3])?;
/// assert!((relative_error(&space, &x, &r)? - 0.1).abs() < 1e-12);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn relative_error<T: Scalar>(
    space: &Space<T>,
    x: &Element<T>,
    reference: &Element<T>,
) -> Result<f64> {
    let d = space.dist(x, reference)?;
    let n = space.norm(reference)?;
    Ok(if n > 0.0 {
        d / n
    } else if d == 0.0 {
        0.0
    } else {
        f64::INFINITY
    })
}

/// The host arrays of `x` and `reference`, checked against `space` and each other.
fn host_pair<'a, T: Scalar>(
    space: &Space<T>,
    x: &'a Element<T>,
    reference: &'a Element<T>,
    what: &str,
) -> Result<(ArrayViewD<'a, T>, ArrayViewD<'a, T>)> {
    space.check_member(x, what)?;
    space.check_member(reference, what)?;
    if x.is_product() {
        return Err(Error::invalid(format!(
            "{what} needs tensor elements, got product-space elements (compare the parts)"
        )));
    }
    Ok((x.as_array()?, reference.as_array()?))
}

/// The data range: the given one (finite, > 0), or `max − min` of the reference.
fn data_range<T: Scalar>(
    reference: &ArrayViewD<'_, T>,
    given: Option<f64>,
    what: &str,
) -> Result<f64> {
    let r = match given {
        Some(r) => r,
        None => {
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            for v in reference.iter() {
                let v = v.f64();
                if !v.is_finite() {
                    return Err(Error::invalid(format!(
                        "{what}: the reference has a non-finite entry ({v})"
                    )));
                }
                lo = lo.min(v);
                hi = hi.max(v);
            }
            if !(hi > lo) {
                return Err(Error::invalid(format!(
                    "{what}: the reference is constant, so its data range is 0: \
                     give the data range explicitly"
                )));
            }
            hi - lo
        }
    };
    if !(r.is_finite() && r > 0.0) {
        return Err(Error::invalid(format!(
            "{what}: the data range must be finite and positive, got {r}"
        )));
    }
    Ok(r)
}

/// Peak signal-to-noise ratio in decibels: `10 log10(R² / MSE)`, with `MSE` the mean of the
/// squared differences over all entries and `R` the data range (default: `max − min` of the
/// reference, as `skimage.metrics.peak_signal_noise_ratio(reference, x,
/// data_range=reference.max() - reference.min())`).
///
/// Identical images give `+∞`. Errors on a constant reference without an explicit range, on
/// product elements and on GPU elements.
///
/// ```
/// use rodl::diagnostics::psnr;
/// let space = rodl::rn::<f64>(&[4])?;
/// let r = space.element_from_vec(vec![0.0, 1.0, 2.0, 4.0])?; // range 4
/// let x = space.element_from_vec(vec![0.4, 1.4, 2.4, 4.4])?; // MSE 0.16
/// assert!((psnr(&space, &x, &r, None)? - 20.0).abs() < 1e-12); // 10 log10(16 / 0.16)
/// assert_eq!(psnr(&space, &r, &r, None)?, f64::INFINITY);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn psnr<T: Scalar>(
    space: &Space<T>,
    x: &Element<T>,
    reference: &Element<T>,
    data_range_: Option<f64>,
) -> Result<f64> {
    let (a, r) = host_pair(space, x, reference, "psnr")?;
    let range = data_range(&r, data_range_, "psnr")?;
    let sum: f64 = a
        .iter()
        .zip(r.iter())
        .map(|(u, v)| {
            let d = u.f64() - v.f64();
            d * d
        })
        .sum();
    let mse = sum / a.len() as f64;
    if mse.is_nan() {
        return Err(Error::invalid("psnr: the images have non-finite entries"));
    }
    Ok(if mse == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (range * range / mse).log10()
    })
}

/// The normalised Gaussian window of SSIM (scipy's `gaussian_filter` kernel for σ = 1.5,
/// truncate = 3.5).
fn gaussian_window() -> [f64; 2 * SSIM_RADIUS + 1] {
    let mut w = [0.0; 2 * SSIM_RADIUS + 1];
    for (k, v) in w.iter_mut().enumerate() {
        let x = k as f64 - SSIM_RADIUS as f64;
        *v = (-0.5 / (SSIM_SIGMA * SSIM_SIGMA) * (x * x)).exp();
    }
    let s: f64 = w.iter().sum();
    w.map(|v| v / s)
}

/// Index `i` of a line of length `n` reflected at the ends, edge sample repeated
/// (scipy.ndimage's `mode='reflect'`: `d c b a | a b c d | d c b a`); `n > SSIM_RADIUS`.
#[inline]
fn reflect(i: isize, n: usize) -> usize {
    let n = n as isize;
    if i < 0 {
        (-i - 1) as usize
    } else if i >= n {
        (2 * n - i - 1) as usize
    } else {
        i as usize
    }
}

/// Separable Gaussian filtering along every axis, in place.
fn gaussian_filter(a: &mut ArrayD<f64>, w: &[f64]) {
    let r = SSIM_RADIUS as isize;
    for axis in 0..a.ndim() {
        let n = a.shape()[axis];
        a.lanes_mut(Axis(axis))
            .into_iter()
            .par_bridge()
            .for_each_init(
                || vec![0.0; n],
                |buf, mut lane| {
                    for (b, v) in buf.iter_mut().zip(lane.iter()) {
                        *b = *v;
                    }
                    for (i, out) in lane.iter_mut().enumerate() {
                        let i = i as isize;
                        let mut s = buf[i as usize] * w[SSIM_RADIUS];
                        for j in 1..=r {
                            s += (buf[reflect(i + j, n)] + buf[reflect(i - j, n)])
                                * w[(r + j) as usize];
                        }
                        *out = s;
                    }
                },
            );
    }
}

/// Structural similarity (Wang, Bovik, Sheikh & Simoncelli 2004) of `x` and `reference`,
/// averaged over the image: scikit-image's `structural_similarity(reference, x,
/// gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=R)` with `R` the
/// given range or `max − min` of the reference.
///
/// Local means, variances and the covariance are taken with a Gaussian window (σ = 1.5,
/// truncated at 3.5 σ: 11 samples per axis, reflected at the borders), `K1 = 0.01`,
/// `K2 = 0.03`; the SSIM map is averaged over the samples at least 5 away from every border.
/// Any number of axes is accepted: a 3D volume gets a 3D window (as scikit-image does for a 3D
/// array), not an average over slices. Every axis needs at least 11 samples. Computed in f64
/// (scikit-image computes f32 images in f32, which differs at the 1e-6 level).
///
/// ```
/// use rodl::diagnostics::ssim;
/// let space = rodl::uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[16, 16])?;
/// let r = space.element_from_fn(|p| (6.0 * p[0]).sin() * p[1])?;
/// assert_eq!(ssim(&space, &r, &r, None)?, 1.0);
/// let x = space.element_from_fn(|p| (6.0 * p[0]).sin() * p[1] + 0.2)?;
/// assert!(ssim(&space, &x, &r, None)? < 1.0);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn ssim<T: Scalar>(
    space: &Space<T>,
    x: &Element<T>,
    reference: &Element<T>,
    data_range_: Option<f64>,
) -> Result<f64> {
    let (a, r) = host_pair(space, x, reference, "ssim")?;
    let win = 2 * SSIM_RADIUS + 1;
    if a.shape().iter().any(|&n| n < win) {
        return Err(Error::invalid(format!(
            "ssim needs at least {win} samples along every axis (the Gaussian window), got \
             shape {:?}",
            a.shape()
        )));
    }
    let range = data_range(&r, data_range_, "ssim")?;
    let c1 = (SSIM_K1 * range).powi(2);
    let c2 = (SSIM_K2 * range).powi(2);
    let w = gaussian_window();
    let xf = a.mapv(|v| v.f64());
    let yf = r.mapv(|v| v.f64());
    if xf.iter().chain(yf.iter()).any(|v| !v.is_finite()) {
        return Err(Error::invalid("ssim: the images have non-finite entries"));
    }
    let filtered = |mut m: ArrayD<f64>| {
        gaussian_filter(&mut m, &w);
        m
    };
    let ux = filtered(xf.clone());
    let uy = filtered(yf.clone());
    let uxx = filtered(&xf * &xf);
    let uyy = filtered(&yf * &yf);
    let uxy = filtered(&xf * &yf);
    let pad = SSIM_RADIUS;
    let mut sum = 0.0;
    let mut count = 0usize;
    for (idx, &mx) in ux.indexed_iter() {
        let inside = idx
            .slice()
            .iter()
            .zip(ux.shape())
            .all(|(&i, &n)| i >= pad && i < n - pad);
        if !inside {
            continue;
        }
        let ix = idx.slice();
        let my = uy[ix];
        let vx = uxx[ix] - mx * mx;
        let vy = uyy[ix] - my * my;
        let vxy = uxy[ix] - mx * my;
        let a1 = 2.0 * mx * my + c1;
        let a2 = 2.0 * vxy + c2;
        let b1 = mx * mx + my * my + c1;
        let b2 = vx + vy + c2;
        sum += (a1 * a2) / (b1 * b2);
        count += 1;
    }
    Ok(sum / count as f64)
}
