//! Seeded measurement noise: additive Gaussian noise and Poisson (photon-count) noise.
//!
//! Every function draws from a caller-supplied random number generator, so a seeded generator
//! (`rand::rngs::StdRng::seed_from_u64(seed)`) gives reproducible data. Noise is drawn on the
//! host and works on host elements (tensors, or product elements whose parts are host tensors).
//! An element on a GPU is refused with [`Error::Unsupported`] rather than copied behind the
//! caller's back: call [`Element::to_host`], add the noise, and move the result back with
//! [`Element::to_device`] — two explicit copies that the caller can see.
//!
//! ```
//! use rand::{rngs::StdRng, SeedableRng};
//! use rodl::tomo::phantom::noise::{add_gaussian_noise, NoiseLevel};
//! let space = rodl::uniform_discr::<f64>(&[0.0], &[1.0], &[1000])?;
//! let x = space.one()?;
//! let mut rng = StdRng::seed_from_u64(7);
//! let y = add_gaussian_noise(&space, &x, NoiseLevel::Relative(0.05), &mut rng)?;
//! let rel = space.dist(&x, &y)? / space.norm(&x)?;
//! assert!((rel - 0.05).abs() < 0.005);
//! # Ok::<(), rodl::Error>(())
//! ```

use ndarray::ArrayD;
use rand::Rng;
use rand_distr::{Distribution, Poisson, StandardNormal};

use crate::{Device, Element, Error, Result, Scalar, Space};

/// The largest Poisson mean accepted (beyond it the sampler is not reliable).
pub const MAX_POISSON_MEAN: f64 = 1e15;

/// How strong additive Gaussian noise is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NoiseLevel {
    /// Standard deviation `σ` of every entry.
    Absolute(f64),
    /// Noise whose Euclidean norm is (in expectation) this fraction of the data's norm:
    /// `σ = level · ‖data‖₂ / √N` over all `N` entries (the data's root mean square). For a
    /// constant-weight space the ratio is the same in the space's own norm.
    Relative(f64),
}

impl NoiseLevel {
    /// The standard deviation this level means for `data` (see [`NoiseLevel::Relative`]).
    pub fn sigma<T: Scalar>(&self, data: &Element<T>) -> Result<f64> {
        let sigma = match *self {
            NoiseLevel::Absolute(s) => s,
            NoiseLevel::Relative(_) => {
                return self.sigma_over(&host_tensors(data, "NoiseLevel::sigma")?);
            }
        };
        if !(sigma.is_finite() && sigma >= 0.0) {
            return Err(Error::invalid(format!(
                "noise standard deviation must be finite and >= 0, got {sigma}"
            )));
        }
        Ok(sigma)
    }
}

/// The host tensors of an element in order (one, or one per part of a product element).
impl NoiseLevel {
    /// [`NoiseLevel::sigma`] for data whose entries are those of `parts` in order (one slice or
    /// several: data held in pieces, e.g. a memory-mapped file).
    pub fn sigma_over<T: Scalar>(&self, parts: &[&[T]]) -> Result<f64> {
        let sigma = match *self {
            NoiseLevel::Absolute(s) => s,
            NoiseLevel::Relative(r) => {
                if !(r.is_finite() && r >= 0.0) {
                    return Err(Error::invalid(format!(
                        "relative noise level must be finite and >= 0, got {r}"
                    )));
                }
                let (mut ss, mut n) = (0.0, 0usize);
                for t in parts {
                    ss += t.iter().map(|v| v.f64() * v.f64()).sum::<f64>();
                    n += t.len();
                }
                r * (ss / n.max(1) as f64).sqrt()
            }
        };
        if !(sigma.is_finite() && sigma >= 0.0) {
            return Err(Error::invalid(format!(
                "noise standard deviation must be finite and >= 0, got {sigma}"
            )));
        }
        Ok(sigma)
    }
}

fn host_tensors<'a, T: Scalar>(x: &'a Element<T>, what: &str) -> Result<Vec<&'a [T]>> {
    if x.is_product() {
        let mut out = vec![];
        for p in x.parts()? {
            out.extend(host_tensors(p, what)?);
        }
        return Ok(out);
    }
    if x.device() != Device::Cpu {
        return Err(on_gpu(what, x.device()));
    }
    x.as_slice().map(|s| vec![s])
}

fn on_gpu(what: &str, device: Device) -> Error {
    Error::Unsupported(format!(
        "{what}: noise is drawn on the host, but the data live on {device}; \
         call to_host() first and to_device() after"
    ))
}

/// Checks that `space` is a host space and `x` belongs to it.
fn check_host<T: Scalar>(space: &Space<T>, x: &Element<T>, what: &str) -> Result<()> {
    space.check_member(x, what)?;
    host_tensors(x, what).map(|_| ())
}

/// A new element of `space` whose entries are `f(entry of x)`, part by part.
fn map_entries<T: Scalar, R: Rng + ?Sized>(
    space: &Space<T>,
    x: &Element<T>,
    rng: &mut R,
    f: &mut impl FnMut(f64, &mut R) -> Result<f64>,
) -> Result<Element<T>> {
    if x.is_product() {
        let parts = space
            .parts()?
            .iter()
            .zip(x.parts()?)
            .map(|(s, p)| map_entries(s, p, rng, f))
            .collect::<Result<Vec<_>>>()?;
        return space.product_element(parts);
    }
    let a = x.as_array()?;
    crate::memory::check_host_array(a.shape(), std::mem::size_of::<T>())?;
    let mut out = ArrayD::<T>::zeros(a.raw_dim());
    for (o, &v) in out.iter_mut().zip(a.iter()) {
        *o = T::of(f(v.f64(), rng)?);
    }
    space.element(out)
}

/// An element of `space` with independent `N(0, stddev²)` entries (ODL's `white_noise`).
pub fn white_noise<T: Scalar, R: Rng + ?Sized>(
    space: &Space<T>,
    stddev: f64,
    rng: &mut R,
) -> Result<Element<T>> {
    if space.device() != Device::Cpu {
        return Err(on_gpu("white_noise", space.device()));
    }
    if !(stddev.is_finite() && stddev >= 0.0) {
        return Err(Error::invalid(format!(
            "noise standard deviation must be finite and >= 0, got {stddev}"
        )));
    }
    let mut x = space.random_normal(rng)?;
    space.scale(T::of(stddev), &mut x)?;
    Ok(x)
}

/// `data + n` with `n` independent Gaussian noise of the given level (a new element).
///
/// ODL has no single function for it: `data + odl.phantom.white_noise(space, stddev=σ)` is
/// the same, and [`white_noise`] is that noise element alone.
pub fn add_gaussian_noise<T: Scalar, R: Rng + ?Sized>(
    space: &Space<T>,
    data: &Element<T>,
    level: NoiseLevel,
    rng: &mut R,
) -> Result<Element<T>> {
    check_host(space, data, "add_gaussian_noise")?;
    let sigma = level.sigma(data)?;
    map_entries(space, data, rng, &mut |v, rng| {
        Ok(v + sigma * rng.sample::<f64, _>(StandardNormal))
    })
}

/// One Poisson draw with mean `lambda` (0 for `lambda == 0`).
fn poisson<R: Rng + ?Sized>(lambda: f64, rng: &mut R, what: &str) -> Result<f64> {
    if !(0.0..=MAX_POISSON_MEAN).contains(&lambda) {
        return Err(Error::invalid(format!(
            "{what}: a Poisson mean must be in [0, {MAX_POISSON_MEAN:e}], got {lambda}"
        )));
    }
    if lambda == 0.0 {
        return Ok(0.0);
    }
    let d = Poisson::new(lambda).map_err(|e| Error::invalid(format!("{what}: {e}")))?;
    Ok(d.sample(rng))
}

/// Poisson noise on an intensity: every entry `λ` is replaced by a draw of `Poisson(λ)` (ODL's
/// `poisson_noise`). Entries must be finite and non-negative (at most [`MAX_POISSON_MEAN`]).
pub fn poisson_noise<T: Scalar, R: Rng + ?Sized>(
    space: &Space<T>,
    intensity: &Element<T>,
    rng: &mut R,
) -> Result<Element<T>> {
    check_host(space, intensity, "poisson_noise")?;
    map_entries(space, intensity, rng, &mut |lambda, rng| {
        poisson(lambda, rng, "poisson_noise")
    })
}

/// Noisy line integrals from a transmission measurement with `photons` incident photons per
/// detector pixel (Beer–Lambert): counts `k ~ Poisson(photons · exp(−y))` for every entry `y` of
/// `line_integrals`, returned as `−ln(max(k, 1) / photons)`.
///
/// Zero counts are clamped to one, so the result is at most `ln(photons)`. The noise is roughly
/// Gaussian with variance `exp(y) / photons` when counts are high.
///
/// ```
/// use rand::{rngs::StdRng, SeedableRng};
/// use rodl::tomo::phantom::noise::transmission_noise;
/// let space = rodl::rn::<f64>(&[10000])?;
/// let y = space.full(2.0)?;
/// let noisy = transmission_noise(&space, &y, 1e4, &mut StdRng::seed_from_u64(1))?;
/// let v = noisy.as_slice()?;
/// let mean = v.iter().sum::<f64>() / v.len() as f64;
/// assert!((mean - 2.0).abs() < 0.01);
/// assert!(v.iter().all(|&x| x <= (1e4f64).ln()));
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn transmission_noise<T: Scalar, R: Rng + ?Sized>(
    space: &Space<T>,
    line_integrals: &Element<T>,
    photons: f64,
    rng: &mut R,
) -> Result<Element<T>> {
    if !(photons.is_finite() && photons > 0.0 && photons <= MAX_POISSON_MEAN) {
        return Err(Error::invalid(format!(
            "transmission_noise: the photon count must be in (0, {MAX_POISSON_MEAN:e}], \
             got {photons}"
        )));
    }
    check_host(space, line_integrals, "transmission_noise")?;
    map_entries(space, line_integrals, rng, &mut |y, rng| {
        if !y.is_finite() {
            return Err(Error::invalid(format!(
                "transmission_noise: line integrals must be finite, got {y}"
            )));
        }
        let k = poisson(photons * (-y).exp(), rng, "transmission_noise")?;
        Ok(-(k.max(1.0) / photons).ln())
    })
}
