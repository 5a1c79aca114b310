//! The iterative reconstruction methods of `rodl reconstruct` and `rodl demo`, run through
//! `rodl::solvers::iterative` on the ray transform's device.

use std::fmt;
use std::sync::Arc;

use clap::ValueEnum;
use rodl::solvers::iterative::{
    cgls, landweber, mlem, osem, sirt, LandweberOptions, RaySubsets, SirtOptions,
};
use rodl::solvers::tv::{fista_tv, pdhg_tv, FistaTvOptions, PdhgTvOptions, TvProblem};
use rodl::solvers::Callback;
use rodl::tomo::{Backend, RayTransform};
use rodl::{Element, Operator, Scalar};

use crate::Failure;

/// An iterative reconstruction method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Algorithm {
    /// Conjugate gradients on the normal equations (least squares), from x = 0.
    Cgls,
    /// SIRT with ASTRA's weighting, from x = 0 (`--nonnegative` clamps to x ≥ 0).
    Sirt,
    /// MLEM (Poisson maximum likelihood; needs data ≥ 0), from x = 1.
    Mlem,
    /// OSEM: MLEM over `--subsets` ordered view subsets, from x = 1.
    Osem,
    /// Landweber iteration with the step 1/‖A‖², from x = 0.
    Landweber,
    /// PDHG (Chambolle–Pock) for ½‖Ax − y‖² + λ TV(x) with x ≥ 0, from x = 0
    /// (`--tv-weight λ`).
    PdhgTv,
    /// FISTA for ½‖Ax − y‖² + λ TV(x) with x ≥ 0, TV smoothed (Huber) where |∇x| is below
    /// 1 % of the image's value scale per voxel, from x = 0 (`--tv-weight λ`).
    FistaTv,
}

impl Algorithm {
    /// Whether the method needs non-negative data (Poisson likelihood).
    pub fn needs_nonnegative_data(self) -> bool {
        matches!(self, Algorithm::Mlem | Algorithm::Osem)
    }

    /// Whether the method is TV-regularised (and takes a TV weight).
    pub fn is_tv(self) -> bool {
        matches!(self, Algorithm::PdhgTv | Algorithm::FistaTv)
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Algorithm::Cgls => "CGLS",
            Algorithm::Sirt => "SIRT",
            Algorithm::Mlem => "MLEM",
            Algorithm::Osem => "OSEM",
            Algorithm::Landweber => "Landweber",
            Algorithm::PdhgTv => "PDHG-TV",
            Algorithm::FistaTv => "FISTA-TV",
        };
        f.write_str(name)
    }
}

/// The settings of a run.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The method.
    pub algorithm: Algorithm,
    /// Iterations (OSEM: passes over all subsets).
    pub iterations: usize,
    /// OSEM's number of subsets (`None`: 10, or the number of views if smaller).
    pub subsets: Option<usize>,
    /// SIRT: clamp to x ≥ 0.
    pub nonnegative: bool,
    /// The TV weight λ of the TV methods.
    pub tv_weight: Option<f64>,
}

/// OSEM's default number of subsets.
pub const DEFAULT_SUBSETS: usize = 10;

impl Settings {
    /// Errors on settings that do not fit the method or the geometry (`views` views).
    pub fn check(&self, views: usize) -> Result<(), Failure> {
        if self.iterations == 0 {
            return Err(Failure::usage("--iterations must be at least 1"));
        }
        if self.subsets.is_some() && self.algorithm != Algorithm::Osem {
            return Err(Failure::usage(format!(
                "--subsets applies to osem only, not to {}",
                self.algorithm.to_string().to_lowercase()
            )));
        }
        if let Some(k) = self.subsets {
            if k == 0 || k > views {
                return Err(Failure::usage(format!(
                    "--subsets must lie in 1..={views} (the number of views), got {k}"
                )));
            }
        }
        let name = self.algorithm.to_string().to_lowercase();
        match (self.algorithm.is_tv(), self.tv_weight) {
            (true, None) => {
                return Err(Failure::usage(format!(
                    "{name} needs --tv-weight λ, the weight of the total variation (larger: \
                     smoother; it scales with the noise and with the image's values)"
                )))
            }
            (true, Some(w)) => rodl::solvers::tv::check_weight(w).map_err(|_| {
                Failure::usage(format!(
                    "--tv-weight must be a finite number ≥ 0, got {w:e}"
                ))
            })?,
            (false, Some(_)) => {
                return Err(Failure::usage(format!(
                    "--tv-weight applies to pdhg-tv and fista-tv only, not to {name}"
                )))
            }
            (false, None) => {}
        }
        if self.nonnegative && self.algorithm != Algorithm::Sirt {
            return Err(Failure::usage(format!(
                "--nonnegative applies to sirt only (mlem and osem stay non-negative by \
                 themselves), not to {}",
                self.algorithm.to_string().to_lowercase()
            )));
        }
        Ok(())
    }
}

/// Reconstructs from `data` (an element of `ray`'s range, on its device) with `settings`,
/// reporting every iteration to `callback`. Returns the reconstruction (on the device) and the
/// number of iterations done.
pub fn reconstruct<T: Scalar>(
    ray: &Arc<RayTransform<T>>,
    backend: &Backend,
    data: &Element<T>,
    settings: &Settings,
    callback: &mut dyn Callback<T>,
) -> Result<(Element<T>, usize), Failure> {
    let domain = ray.domain();
    let n = settings.iterations;
    let lambda = settings.tv_weight.unwrap_or(0.0);
    let ray_op: &RayTransform<T> = ray;
    let (x, done) = match settings.algorithm {
        Algorithm::Cgls => {
            let mut x = domain.zero()?;
            let k = cgls(ray_op, &mut x, data, n, callback)?;
            (x, k)
        }
        Algorithm::Sirt => {
            let mut x = domain.zero()?;
            let options = SirtOptions {
                nonnegative: settings.nonnegative,
                ..SirtOptions::default()
            };
            let k = sirt(ray_op, &mut x, data, n, &options, callback)?;
            (x, k)
        }
        Algorithm::Landweber => {
            let mut x = domain.zero()?;
            let options = LandweberOptions::default();
            let k = landweber(ray_op, &mut x, data, n, &options, callback)?;
            (x, k)
        }
        Algorithm::Mlem => {
            let mut x = domain.one()?;
            let k = mlem(ray_op, &mut x, data, n, callback)?;
            (x, k)
        }
        Algorithm::Osem => {
            let views = ray.geometry().vec().num_views();
            let k = settings.subsets.unwrap_or(DEFAULT_SUBSETS.min(views));
            let subsets = RaySubsets::new(ray, k, backend.clone())?;
            let blocks = subsets.split_data(data)?;
            let mut x = domain.one()?;
            let k = osem(subsets.operators(), &mut x, &blocks, n, callback)?;
            (x, k)
        }
        Algorithm::PdhgTv => {
            let mut x = domain.zero()?;
            let problem = TvProblem::new(ray.clone(), data, lambda)?;
            let k = pdhg_tv(&problem, &mut x, n, &PdhgTvOptions::default(), callback)?;
            (x, k)
        }
        Algorithm::FistaTv => {
            let mut x = domain.zero()?;
            let problem = TvProblem::new(ray.clone(), data, lambda)?;
            let k = fista_tv(&problem, &mut x, n, &FistaTvOptions::default(), callback).map_err(
                |e| {
                    // The step is 1 / (Lipschitz constant of the gradient), which grows with λ.
                    if crate::error_message(&e).contains("Lipschitz") {
                        Failure::usage(format!(
                            "--tv-weight {lambda:e} is too large for fista-tv (its step size \
                         would vanish); try a smaller weight"
                        ))
                    } else {
                        Failure::from(e)
                    }
                },
            )?;
            (x, k)
        }
    };
    Ok((x, done.iterations))
}
