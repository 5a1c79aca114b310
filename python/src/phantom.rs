//! Phantoms and noise.

use numpy::PyUntypedArrayMethods;
use pyo3::prelude::*;
use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::array::{dtype_of, element, read, to_numpy, Real};
use crate::errors::{value_error, IntoPyResult};
use crate::scalar::{each, with_dtype};
use crate::space::PySpace;
use rodl::tomo::phantom::{self, noise};
use rodl::Space;

fn rng(seed: Option<u64>) -> StdRng {
    match seed {
        Some(s) => StdRng::seed_from_u64(s),
        None => StdRng::from_entropy(),
    }
}

/// The host space `R^shape` of an array-like (for entry-wise functions of plain arrays).
fn rn_of<T: Real>(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Space<T>> {
    let a = read::<T>(obj, what)?;
    rodl::rn::<T>(a.shape()).py()
}

/// The (modified, by default) Shepp–Logan phantom on a 2D or 3D `space` (ODL's
/// `shepp_logan`).
#[pyfunction]
#[pyo3(signature = (space, modified=true))]
fn shepp_logan(py: Python<'_>, space: &PySpace, modified: bool) -> PyResult<Py<PyAny>> {
    each!(&space.inner, s => {
        let x = py.detach(|| phantom::shepp_logan(s, modified)).py()?;
        to_numpy(py, x)
    })
}

/// Gaussian white noise on `space` with standard deviation `stddev` (ODL's `white_noise`),
/// from the generator seeded with `seed` (fresh entropy without one).
#[pyfunction]
#[pyo3(signature = (space, stddev=1.0, seed=None))]
fn white_noise(
    py: Python<'_>,
    space: &PySpace,
    stddev: f64,
    seed: Option<u64>,
) -> PyResult<Py<PyAny>> {
    each!(&space.inner, s => to_numpy(py, noise::white_noise(s, stddev, &mut rng(seed)).py()?))
}

/// `data` plus Gaussian noise: of standard deviation `stddev`, or of `relative` times the data's
/// root mean square (exactly one of the two).
#[pyfunction]
#[pyo3(signature = (data, stddev=None, relative=None, seed=None, dtype=None))]
fn add_gaussian_noise(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    stddev: Option<f64>,
    relative: Option<f64>,
    seed: Option<u64>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let level = match (stddev, relative) {
        (Some(s), None) => noise::NoiseLevel::Absolute(s),
        (None, Some(r)) => noise::NoiseLevel::Relative(r),
        _ => {
            return Err(value_error(
                "add_gaussian_noise: give exactly one of stddev= and relative=",
            ))
        }
    };
    with_dtype!(dtype_of(data, dtype)?, {
        let s = rn_of::<S>(data, "add_gaussian_noise: data")?;
        let x = element(&s, data, "add_gaussian_noise: data")?;
        to_numpy(
            py,
            noise::add_gaussian_noise(&s, &x, level, &mut rng(seed)).py()?,
        )
    })
}

/// Poisson samples with the means `intensity` (ODL's `poisson_noise`).
#[pyfunction]
#[pyo3(signature = (intensity, seed=None, dtype=None))]
fn poisson_noise(
    py: Python<'_>,
    intensity: &Bound<'_, PyAny>,
    seed: Option<u64>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    with_dtype!(dtype_of(intensity, dtype)?, {
        let s = rn_of::<S>(intensity, "poisson_noise: intensity")?;
        let x = element(&s, intensity, "poisson_noise: intensity")?;
        to_numpy(py, noise::poisson_noise(&s, &x, &mut rng(seed)).py()?)
    })
}

/// Line integrals measured with `photons` incident photons per ray: Poisson counts of mean
/// `photons · exp(−p)`, returned as line integrals `−log(counts / photons)` (zero counts are
/// clamped to half a photon).
#[pyfunction]
#[pyo3(signature = (line_integrals, photons, seed=None, dtype=None))]
fn transmission_noise(
    py: Python<'_>,
    line_integrals: &Bound<'_, PyAny>,
    photons: f64,
    seed: Option<u64>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    with_dtype!(dtype_of(line_integrals, dtype)?, {
        let s = rn_of::<S>(line_integrals, "transmission_noise: line_integrals")?;
        let x = element(&s, line_integrals, "transmission_noise: line_integrals")?;
        to_numpy(
            py,
            noise::transmission_noise(&s, &x, photons, &mut rng(seed)).py()?,
        )
    })
}

/// Registers phantoms and noise.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(shepp_logan, m)?)?;
    m.add_function(wrap_pyfunction!(white_noise, m)?)?;
    m.add_function(wrap_pyfunction!(add_gaussian_noise, m)?)?;
    m.add_function(wrap_pyfunction!(poisson_noise, m)?)?;
    m.add_function(wrap_pyfunction!(transmission_noise, m)?)?;
    Ok(())
}
