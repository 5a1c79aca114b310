//! Diagnostics for users' own operators: adjointness and linearity checks, and (with the
//! `proptest` feature) proptest strategies that draw random spaces and elements; image-quality
//! figures of merit (PSNR, SSIM, relative error) for reconstructions.

mod checks;
pub mod quality;
#[cfg(feature = "proptest")]
pub mod strategies;

pub use checks::{check_adjoint, check_adjoint_with, check_linearity, AdjointReport};
pub use quality::{psnr, relative_error, ssim};
