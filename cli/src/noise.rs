//! Simulated measurement noise for `rodl project --noise`: `gaussian:REL` or
//! `poisson:PHOTONS`, through `rodl::tomo::phantom::noise`.

use std::fmt;
use std::str::FromStr;

use rand::rngs::StdRng;
use rand::SeedableRng;
use rodl::tomo::phantom::noise::{
    add_gaussian_noise, transmission_noise, NoiseLevel, MAX_POISSON_MEAN,
};
use rodl::{Element, Result, Scalar, Space};

use crate::Failure;

/// The largest relative Gaussian noise level (a noise a million times the data).
const MAX_RELATIVE: f64 = 1e6;

/// A noise model of the command line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Noise {
    /// Additive Gaussian noise whose norm is this fraction of the data's norm
    /// (`gaussian:0.05` is 5 %).
    Gaussian(f64),
    /// Transmission (Beer–Lambert) noise: Poisson counts with this many incident photons per
    /// detector pixel, returned as noisy line integrals.
    Poisson(f64),
}

impl FromStr for Noise {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let bad = || {
            format!(
                "expected gaussian:REL (0 ≤ REL ≤ 1e6, e.g. gaussian:0.05) or poisson:PHOTONS \
                 (0 < PHOTONS ≤ 1e15, e.g. poisson:1e4); got {s:?}"
            )
        };
        let (kind, value) = s.split_once(':').ok_or_else(bad)?;
        let value: f64 = value.trim().parse().map_err(|_| bad())?;
        match kind.trim().to_ascii_lowercase().as_str() {
            "gaussian" | "gauss" | "normal" if (0.0..=MAX_RELATIVE).contains(&value) => {
                Ok(Noise::Gaussian(value))
            }
            "poisson" if value > 0.0 && value <= MAX_POISSON_MEAN => Ok(Noise::Poisson(value)),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for Noise {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Noise::Gaussian(r) => write!(f, "{}% Gaussian noise", 100.0 * r),
            Noise::Poisson(p) => write!(f, "Poisson noise, {p:e} photons per pixel"),
        }
    }
}

impl Noise {
    /// Noisy data from the clean host element `data` of `space`, drawn with the seed `seed`.
    pub fn apply<T: Scalar>(
        &self,
        space: &Space<T>,
        data: &Element<T>,
        seed: u64,
    ) -> Result<Element<T>> {
        let mut rng = StdRng::seed_from_u64(seed);
        match *self {
            Noise::Gaussian(rel) => {
                add_gaussian_noise(space, data, NoiseLevel::Relative(rel), &mut rng)
            }
            Noise::Poisson(photons) => transmission_noise(space, data, photons, &mut rng),
        }
    }

    /// [`Noise::apply`] in place on `data` (the flat entries of a clean element, in order), in
    /// chunks of `chunk` entries: the same draws in the same order as on the whole (the
    /// relative Gaussian level's σ taken over all of `data`), so the same noisy data, holding
    /// only two chunks in memory at a time.
    pub fn apply_in_place<T: Scalar>(&self, data: &mut [T], chunk: usize, seed: u64) -> Result<()> {
        let mut rng = StdRng::seed_from_u64(seed);
        // The relative Gaussian level's σ, over all of the data.
        let sigma = match *self {
            Noise::Gaussian(rel) => NoiseLevel::Relative(rel).sigma_over(&[&*data])?,
            Noise::Poisson(_) => 0.0,
        };
        for part in data.chunks_mut(chunk.max(1)) {
            let space = rodl::rn::<T>(&[part.len()])?;
            let clean = space.element_from_vec(part.to_vec())?;
            let noisy = match *self {
                Noise::Gaussian(_) => {
                    add_gaussian_noise(&space, &clean, NoiseLevel::Absolute(sigma), &mut rng)?
                }
                Noise::Poisson(photons) => transmission_noise(&space, &clean, photons, &mut rng)?,
            };
            part.copy_from_slice(noisy.as_slice()?);
        }
        Ok(())
    }

    /// A failure of [`Noise::apply`] in the command line's words (the library's message names
    /// its function).
    pub fn failure(&self, e: &rodl::Error) -> Failure {
        let message = crate::error_message(e);
        let message = message
            .strip_prefix("transmission_noise: ")
            .or_else(|| message.strip_prefix("add_gaussian_noise: "))
            .unwrap_or(&message);
        let option = match self {
            Noise::Gaussian(_) => "gaussian",
            Noise::Poisson(_) => "poisson",
        };
        Failure::new(format!("--noise {option}: {message}"))
    }
}

#[cfg(test)]
mod tests {
    use super::Noise;

    #[test]
    fn noise_specs_parse() {
        assert_eq!("gaussian:0.05".parse(), Ok(Noise::Gaussian(0.05)));
        assert_eq!("Poisson:1e4".parse(), Ok(Noise::Poisson(1e4)));
        assert!("poisson:0".parse::<Noise>().is_err());
        assert!("gaussian:-1".parse::<Noise>().is_err());
        assert!("gaussian:inf".parse::<Noise>().is_err());
        assert!("gaussian:1e38".parse::<Noise>().is_err());
        assert!("poisson:1e300".parse::<Noise>().is_err());
        assert!("uniform:1".parse::<Noise>().is_err());
        assert!("gaussian".parse::<Noise>().is_err());
    }
}
