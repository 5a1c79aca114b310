//! The names that most programs use, in one import: `use rodl::prelude::*;`.
//!
//! It brings in
//! * spaces and elements: [`Space`], [`Element`], [`Device`], [`uniform_discr`], [`rn`],
//!   [`weighted_rn`], [`UniformPartition`], [`Scalar`];
//! * the operator traits and handles: [`Operator`], [`LinearOperator`] and their algebra
//!   ([`OperatorExt`], [`LinearOperatorExt`]), the shared handles [`Op`] and [`LinOp`], the
//!   bounds that accept any of them ([`AsOperator`], [`AsLinearOperator`], [`IntoLinOp`]), the
//!   default operators [`IdentityOperator`], [`ScalingOperator`], [`MultiplyOperator`],
//!   [`Gradient`], [`Divergence`], [`Laplacian`], [`PointwiseNorm`];
//! * the checks [`check_adjoint`] and [`check_linearity`], and the quality measures [`psnr`],
//!   [`ssim`];
//! * factories: [`LinFactory`], [`OpFactory`], [`SpaceDesc`] and the extension trait
//!   [`SpaceDescExt`] (`space.desc()`), and [`DataParallel`];
//! * tomography: [`RayTransform`], [`Backend`], [`CpuOptions`], [`CudaOptions`], [`Geometry`],
//!   [`TomoSpec`], [`parallel_beam_geometry`], [`cone_beam_geometry`], [`fbp_op`],
//!   [`FbpOptions`], [`FilterType`] and the phantom [`shepp_logan`];
//! * solvers: the iterative solvers [`cgls`](fn@cgls), [`conjugate_gradient`](fn@conjugate_gradient), [`landweber`](fn@landweber), [`sirt`](fn@sirt),
//!   [`mlem`](fn@mlem), [`osem`](fn@osem), [`pdhg`](fn@pdhg), [`fista`](fn@fista) with their options, [`SolverInfo`],
//!   [`StopReason`], the callbacks' [`Callback`], [`Control`], [`IterationInfo`], [`from_fn`]
//!   (and `ProgressBar` with the feature `progress`), the functionals' traits [`Functional`],
//!   [`FunctionalExt`] and handle [`Func`], and TV reconstruction: [`TvProblem`], [`pdhg_tv`],
//!   [`fista_tv`], [`PdhgTvOptions`], [`FistaTvOptions`];
//! * [`Error`] and [`Result`]. `rodl::Result<T, E = Error>` takes the error type as an optional
//!   second parameter, so the glob import leaves `Result<(), Box<dyn std::error::Error>>` and
//!   other two-parameter uses of the standard `Result` working.
//!
//! Anything else stays in its module (`rodl::io`, `rodl::preprocess`, the other functionals in
//! `rodl::solvers::functional`, …); a name you import yourself takes precedence over the glob.
//!
//! ```
//! use rodl::prelude::*;
//!
//! fn main() -> Result<()> {
//!     let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[32, 32])?;
//!     let ray = RayTransform::new(space.clone(), parallel_beam_geometry(&space, Some(30))?, Backend::default())?;
//!     assert!(check_adjoint(&ray, 2, 0)?.max_rel_error < 1e-10);
//!
//!     let phantom = shepp_logan(&space, true)?;
//!     let data = ray.apply(&phantom)?;
//!     let fbp = fbp_op(&ray, &FbpOptions::new(FilterType::Hann))?.apply(&data)?;
//!     let mut x = space.zero()?;
//!     let info = cgls(&ray, &mut x, &data, 10, &mut ())?;
//!     assert_eq!(info.stop, StopReason::MaxIterations);
//!     assert!(psnr(&space, &x, &phantom, None)? > 15.0 && psnr(&space, &fbp, &phantom, None)? > 15.0);
//!
//!     // factories: a description of the space without a device, built per device
//!     let grad: LinFactory<f64> = Gradient::factory(space.desc())?;
//!     let lap = grad.adjoint().compose(&grad)?.build(Device::Cpu)?; // ∇*∇
//!     assert!(check_adjoint(lap.as_ref(), 2, 1)?.max_rel_error < 1e-12);
//!     Ok(())
//! }
//! ```

pub use crate::diagnostics::{check_adjoint, check_linearity, psnr, ssim};
pub use crate::factory::{LinFactory, OpFactory, SpaceDesc, SpaceDescExt};
pub use crate::parallel::DataParallel;
#[cfg(feature = "progress")]
pub use crate::solvers::callback::ProgressBar;
pub use crate::solvers::callback::{from_fn, Callback, Control, IterationInfo};
pub use crate::solvers::functional::{Func, Functional, FunctionalExt};
pub use crate::solvers::iterative::{
    cgls, conjugate_gradient, fista, landweber, mlem, osem, pdhg, sirt, FistaOptions,
    LandweberOptions, PdhgOptions, SirtOptions, SolverInfo, StopReason,
};
pub use crate::solvers::tv::{fista_tv, pdhg_tv, FistaTvOptions, PdhgTvOptions, TvProblem};
pub use crate::tomo::phantom::shepp_logan;
pub use crate::tomo::{
    cone_beam_geometry, fbp_op, parallel_beam_geometry, Backend, CpuOptions, CudaOptions,
    FbpOptions, FilterType, Geometry, RayTransform, TomoSpec,
};
pub use crate::{
    rn, uniform_discr, weighted_rn, AsLinearOperator, AsOperator, Device, Divergence, Element,
    Error, Gradient, IdentityOperator, IntoLinOp, Laplacian, LinOp, LinearOperator,
    LinearOperatorExt, MultiplyOperator, Op, Operator, OperatorExt, PointwiseNorm, Result, Scalar,
    ScalingOperator, Space, UniformPartition,
};
