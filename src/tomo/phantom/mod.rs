//! Phantoms and simulated measurement noise, for tests, examples and demos.
//!
//! - [`shepp_logan`](fn@shepp_logan): ODL's (modified) Shepp–Logan phantom in 2D and 3D, sample for sample the
//!   same as `odl.phantom.shepp_logan` (the ellipses are scaled to the space's extent as ODL does).
//! - [`ellipse_phantom`] / [`ellipsoid_phantom`]: sums of constant-valued ellipses (2D) or
//!   ellipsoids (3D) given by ODL's parameter lists ([`Ellipse::from_params`],
//!   [`Ellipsoid::from_params`]); their exact line integrals ([`ellipse_projections`],
//!   [`ellipsoid_projections`], [`shepp_logan_projections`]) for accuracy tests.
//! - [`gaussian_phantom`]: sums of Gaussian blobs, smooth, with exact line integrals
//!   ([`gaussian_projections`]).
//! - [`noise`]: seeded additive Gaussian noise and Poisson (photon-count) noise. Like ODL's
//!   `odl.phantom.noise`, it lives here because it simulates data for the same experiments.
//!
//! Phantoms are computed on the host; for a space on a GPU the finished element is copied to the
//! device once (as [`Space::element`](crate::Space::element) does).

mod ellipsoid;
mod gaussian;
mod line_integral;
pub mod noise;
mod shepp_logan;

pub use ellipsoid::{ellipse_phantom, ellipsoid_phantom, Ellipse, Ellipsoid};
pub use gaussian::{gaussian_phantom, gaussian_projections, GaussianBlob};
pub use line_integral::{ellipse_projections, ellipsoid_projections, shepp_logan_projections};
pub use shepp_logan::{shepp_logan, shepp_logan_ellipses, shepp_logan_ellipsoids};
