//! Filtered back-projection (FBP) and FDK: `fbp_op(A) = A* ∘ F`, the adjoint of the ray
//! transform after a filter `F` on its data space, as ODL's `fbp_op`.
//!
//! Because the back-projection is the ray transform's own (exact) adjoint, an FBP operator is an
//! ordinary [`LinOp`] that composes with everything and runs wherever the ray transform runs
//! (CPU or GPU, host or device data). The filter has a batched form
//! ([`BatchedOperator`](crate::BatchedOperator)), so FBP has one wherever the ray transform's
//! adjoint has one (the CUDA ray transform; the exact 2D fan-beam form too, whose volume factors
//! are batched [`MultiplyOperator`]s): a batch of sinograms is
//! reconstructed in one pass.
//!
//! # The filter
//!
//! Along the detector's u axis (each detector row of each view on its own), the data are
//! convolved with the ramp `|ξ|` times a window ([`FilterType`], ODL's `filter_type`), cut off at
//! `|ξ| > frequency_scaling · π/Δu`, after zero-padding to at least `2n − 1` samples (`padding`).
//! The ramp is the band-limited ramp sampled in space (see [`FbpFilter`]), so that the response
//! at zero frequency, and hence the mean value of a reconstruction, is right.
//!
//! # Weights and constants, per geometry
//!
//! With `α` the length of the angle interval, the filter is `F = c · W₂ K W₁` (`K` the ramp
//! convolution, `W₁`, `W₂` pointwise weights), chosen so that `A* F A x ≈ x` in absolute values.
//! The adjoint `A* y (x) = ∫ y(β, u(x, β)) J dβ` of the ray transform carries the Jacobian `J`
//! of the rays through `x`: 1 for parallel beams, `D / (U cos γ)` for fan beams and
//! `D² / (U² cos κ)` for cone beams, where `U` is the distance of `x` from the source along the
//! central ray, `D` the source–detector distance, `R` the source–axis distance and `γ`/`κ` the
//! angle of the ray to the central ray. Detector coordinates `u`, `v` are measured from the
//! source's foot on the detector, so detector offsets are taken into account.
//!
//! * **Parallel beam, 2D and 3D** (each `v` row filtered along `u`): `c = 1 / (2α)` for a full
//!   turn (`α ≥ 2π`, exact at `2π`). For `π ≤ α < 2π`, lines seen twice are weighted by
//!   Parker-type redundancy weights (the fan-beam ones below with a zero fan angle) and
//!   `c = 1/(2π)`; for `α < π` (limited angle) every measured line counts once, `c = 1/(2π)`.
//!   At `α = π` this is ODL's `1/(2α)`.
//! * **Cone beam, circular, flat detector (FDK)**: `W₁ = W₂ = cos κ = D / √(D² + u² + v²)`,
//!   `c = R / (D · 2α)`. The adjoint's Jacobian supplies FDK's distance weight `1/U²`, so
//!   `A* F` is exactly Feldkamp's algorithm.
//! * **Fan beam, flat detector**: exact fan-beam FBP back-projects with the weight `1/U²`, the
//!   adjoint only with `1/U`. Since `U = R + x·e_c(β)` and `x·e_u(β) / U = u/D`,
//!   `1/U² = (2R/U − sec²γ) / (R² − |x|²)` and `sec²γ = sec²γ (R + x·e_c(β)) / U`, so
//!   [`fbp_op`] is the exact sum of three back-projections,
//!   `(A* F₀ y − x₁ A* F₁ y − x₂ A* F₂ y) / (R² − |x|²)`, with `W₁ = cos γ` and
//!   `W₂ = R² (2 cos γ − sec γ)`, `R e_c,₁(β) sec γ`, `R e_c,₂(β) sec γ` and `c = 1/(2α)`
//!   (zero outside the source circle). The three filters share `W₁` and the ramp, so on the
//!   CPU it runs as one filter pass and one back-projection whose taps carry the weight
//!   `W₂,₀ − x₁ W₂,₁ − x₂ W₂,₂` at each voxel's centre, then one division by `R² − |x|²`: the
//!   same operator (equal to the sum to rounding, about 2·10⁻⁷ relative in `f32`, 4·10⁻¹⁶ in
//!   `f64`) at about the cost of one back-projection; on a GPU it is the sum. The single
//!   filter of [`fbp_filter_op`] / [`FbpFilter`] takes one factor `1/U` at the centre instead
//!   (`W₁ = sec γ`, `W₂ = cos γ`, so that the two measurements of each line add up right):
//!   `A* F` is then a good
//!   approximation for full turns (errors of order `(|x|/R)²`), not for short scans.
//! * **Fan beam, arc detector about the source (equiangular;
//!   [`Geometry::fan_curved`](crate::tomo::Geometry::fan_curved) with curvature radius
//!   `src_radius + det_radius`)**: the data are sampled in the fan angle `γ`, the adjoint
//!   back-projects with `1/L` (`L` the distance from the source) and the equiangular FBP with
//!   `1/L² = (cos γ / U) / L`. The row filter's ramp taps become `(mΔγ / sin mΔγ)² h(mΔγ)`,
//!   `W₁ = R cos γ`, and `1/U = (R (2 − sec²γ) − (x·e_c) sec²γ) / (R² − |x|²)` gives three
//!   back-projections as above with `W₂ = R (2 cos γ − sec γ)`, `e_c,₁(β) sec γ`,
//!   `e_c,₂(β) sec γ`; the single filter takes `W₂ = cos γ / R`.
//! * **Cone beam, circular, cylindrical detector about the source (FDK)**: rows at height `h`
//!   (cone angle `cos κ = D / √(D² + h²)`) are filtered along `γ` with the equiangular kernel,
//!   `W₁ = R cos γ cos κ`, `W₂ = 1 / √(D² + h²)`, `c = 1/(2α)`: the adjoint on data in
//!   `(γ, h)` back-projects with `√(D² + h²) / L_p²` (`L_p` the distance from the source across
//!   the axis), so `A* F` is the cylindrical FDK with its `1/L_p²`. Other arcs and cylinders
//!   (not about the source, shifted along u, a fan of π or more) and spherical detectors are
//!   `Error::Unsupported`.
//! * **Helical cone beams** (flat detectors and cylinders about the source, at least one turn,
//!   a pitch factor of at most 1): the circular FDK of the detector with a row window that gives
//!   every voxel one full turn of views (its derivation, limits and measured errors are in the
//!   comments of `fbp/helical.rs`); `c` uses `2π` in place of `α`, no Parker weights.
//! * **Views at other angles than the angle partition's** (non-uniform or random angles,
//!   subsets, views given as vectors, as `from_odl` converts them): the views' angles come
//!   from their vectors and each view is weighted by its share of the angular range over the
//!   partition's cell (half the distance to each neighbour; periodic when the partition covers
//!   a full turn or falls short of one by less than the views' mean spacing, as the partition
//!   of a subset `geometry[i::k]` does, `π` for parallel beams, whose angles are taken modulo
//!   `π`; a shorter range is
//!   a short scan starting after the largest gap between the views). ODL's `fbp_op` does not
//!   weight them. A uniform scan given as vectors reconstructs as the uniform one, to rounding.
//!   Short fan and cone scans given as vectors need their angle range in the data partition
//!   ([`Geometry::from_vec_on`](crate::tomo::Geometry::from_vec_on); `from_vec`'s range is the
//!   number of views).
//! * **Short scans** (fan and cone beams with `α < 2π`): Parker's weights (generalised by
//!   Wesarg et al. to over-scans; transition width `q`, [`FbpOptions::parker`]) multiply the
//!   data before the filter, the two measurements of each line adding up to 1, and `c` uses
//!   `π` in place of `α`. They need `α ≥ π + fan angle`.
//!
//! ```
//! use rodl::tomo::{fbp_op, parallel_beam_geometry, Backend, FbpOptions, RayTransform};
//! use rodl::{uniform_discr, Operator};
//! let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[32, 32])?;
//! let geometry = parallel_beam_geometry(&space, None)?;
//! let ray = RayTransform::new(space.clone(), geometry, Backend::default())?;
//! let disc = space.element_from_fn(|p| if p[0] * p[0] + p[1] * p[1] < 0.25 { 1.0 } else { 0.0 })?;
//! let fbp = fbp_op(&ray, &FbpOptions::default())?;
//! let rec = fbp.apply(&ray.apply(&disc)?)?;
//! let centre = rec.as_array()?[[16, 16]];
//! assert!((centre - 1.0).abs() < 0.05, "{centre}");
//! # Ok::<(), rodl::Error>(())
//! ```

mod fan;
mod filter;
mod gpu_filter;
mod gpu_method;
mod helical;
mod operator;
mod quadrature;
mod setup;
mod smooth_step;
mod weights;

#[cfg(feature = "cuda")]
mod cuda;
#[cfg(not(feature = "cuda"))]
#[path = "cuda_stub.rs"]
mod cuda;
#[cfg(feature = "cuda")]
mod cufft;

use std::ops::Range;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use filter::FilterType;
pub use gpu_method::{GpuFilterMethod, CUFFT_ENV};
pub use operator::FbpFilter;

use super::{Geometry, RayTransform};
use crate::{
    AsLinearOperator, Error, LinOp, LinearOperator, LinearOperatorExt, MultiplyOperator, Operator,
    Result, Scalar,
};

/// Options of the FBP filter (ODL's `fbp_filter_op` arguments, plus Parker weighting).
///
/// ```
/// use rodl::tomo::{FbpOptions, FilterType};
/// let o = FbpOptions::new(FilterType::Hamming).with_frequency_scaling(0.8);
/// assert_eq!(o.filter, FilterType::Hamming);
/// assert!(o.padding);
/// assert_eq!(FbpOptions::default().filter, FilterType::RamLak);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FbpOptions {
    /// The filter's window.
    pub filter: FilterType,
    /// Relative cut-off frequency in `(0, 1]` (1: the Nyquist frequency `π/Δu`); windows are
    /// stretched to end there.
    pub frequency_scaling: f64,
    /// Zero-pad rows to at least `2n − 1` samples (no wrap-around). Without padding the
    /// convolution is circular.
    pub padding: bool,
    /// Redundancy weights for angle ranges below `2π` (Parker's for fan and cone beams, their
    /// zero-fan-angle form for parallel beams) with the transition parameter `q ∈ (0, 1]`
    /// (1: Parker's original weights; ODL's `parker_weighting` defaults to 0.25), or `None` for
    /// none: then every scan is scaled by `c = 1/(2α)` as in ODL's `fbp_op`.
    pub parker: Option<f64>,
}

impl Default for FbpOptions {
    fn default() -> Self {
        Self {
            filter: FilterType::RamLak,
            frequency_scaling: 1.0,
            padding: true,
            parker: Some(1.0),
        }
    }
}

impl FbpOptions {
    /// The default options with filter `filter`.
    pub fn new(filter: FilterType) -> Self {
        Self {
            filter,
            ..Self::default()
        }
    }

    /// The same options with frequency scaling `s` (checked when the filter is built).
    pub fn with_frequency_scaling(mut self, s: f64) -> Self {
        self.frequency_scaling = s;
        self
    }

    /// The same options with padding on or off.
    pub fn with_padding(mut self, padding: bool) -> Self {
        self.padding = padding;
        self
    }

    /// The same options with Parker weighting `q` (`None`: off).
    pub fn with_parker(mut self, q: Option<f64>) -> Self {
        self.parker = q;
        self
    }
}

/// The FBP filter on the data space of `ray_trafo` (ODL's `fbp_filter_op`), as a [`LinOp`].
///
/// ```
/// use rodl::tomo::{fbp_filter_op, parallel_beam_geometry, Backend, FbpOptions, RayTransform};
/// use rodl::{check_adjoint, uniform_discr};
/// let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16])?;
/// let ray = RayTransform::new(space.clone(), parallel_beam_geometry(&space, None)?, Backend::default())?;
/// let filter = fbp_filter_op(&ray, &FbpOptions::default())?;
/// assert!(check_adjoint(filter.as_ref(), 2, 0)?.max_rel_error < 1e-13);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn fbp_filter_op<T: Scalar>(
    ray_trafo: &(impl AsLinearOperator<T> + ?Sized),
    options: &FbpOptions,
) -> Result<LinOp<T>> {
    let ray_trafo = ray_transform_of(ray_trafo.as_linear(), "fbp_filter_op")?;
    Ok(Arc::new(FbpFilter::new(
        ray_trafo.range().clone(),
        ray_trafo.geometry(),
        options,
    )?))
}

/// Filtered back-projection for `ray_trafo`: `ray_trafo.adjoint() ∘ fbp_filter_op(ray_trafo)`
/// (ODL's `fbp_op`; FDK for circular cone beams). See the [module documentation](self) for the
/// filter and weights per geometry.
///
/// `ray_trafo` is a [`RayTransform`] behind any handle: `&ray`, a `&LinOp<T>` that holds one
/// (such as [`TvProblem::operator`](crate::solvers::tv::TvProblem::operator)), or a
/// `&dyn LinearOperator<T>`; any other operator is an [`Error::InvalidArgument`] (use
/// [`fbp_op_with`] with its geometry).
///
/// ```
/// use rodl::tomo::{fbp_op, cone_beam_geometry, Backend, FbpOptions, RayTransform};
/// use rodl::{uniform_discr, Operator};
/// let space = uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[16, 16, 16])?;
/// let ray = RayTransform::new(space.clone(), cone_beam_geometry(&space, 4.0, 2.0, Some(40))?, Backend::default())?;
/// let fdk = fbp_op(&ray, &FbpOptions::default())?;
/// assert_eq!(fdk.range(), &space);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn fbp_op<T: Scalar>(
    ray_trafo: &(impl AsLinearOperator<T> + ?Sized),
    options: &FbpOptions,
) -> Result<LinOp<T>> {
    let op = ray_trafo.as_linear();
    fbp_op_with(op, ray_transform_of(op, "fbp_op")?.geometry(), options)
}

/// The [`RayTransform`] behind `op`, or an error naming `what` and the operator.
fn ray_transform_of<'a, T: Scalar>(
    op: &'a dyn LinearOperator<T>,
    what: &str,
) -> Result<&'a RayTransform<T>> {
    op.as_any()
        .and_then(|a| a.downcast_ref::<RayTransform<T>>())
        .ok_or_else(|| {
            Error::invalid(format!(
                "{what} needs a RayTransform, got {}; for another operator use fbp_op_with with its geometry",
                op.name()
            ))
        })
}

/// [`fbp_op`] for any linear operator whose data space is that of `geometry` (a
/// [`MultiDeviceRayTransform`](crate::tomo::MultiDeviceRayTransform), a ray transform built
/// by a factory, …): `ray_trafo.adjoint() ∘ FbpFilter(ray_trafo.range(), geometry)`.
pub fn fbp_op_with<T: Scalar>(
    ray_trafo: &dyn LinearOperator<T>,
    geometry: &Geometry,
    options: &FbpOptions,
) -> Result<LinOp<T>> {
    fbp_op_views(ray_trafo, geometry, 0..geometry.vec().num_views(), options)
}

/// The part of [`fbp_op_with`] that reconstructs from the views `views` of `geometry`:
/// `ray_trafo` is a ray transform of those views only (its range their data, e.g. a piece of
/// [`split`](crate::tomo::split) on a slab of the volume), and the filter and weights are those
/// of the whole scan restricted to the views (the filter works on each view's rows on their
/// own). So the FBP of the whole scan is the sum of these operators over a partition of the
/// views, and on a slab of the volume the FBP of that slab: the way to reconstruct data larger
/// than memory piece by piece.
///
/// Errors as [`fbp_op_with`] does, and when the views are empty, not within the scan, or not
/// those of `ray_trafo`'s range.
///
/// ```
/// use rodl::tomo::{fbp_op, fbp_op_views, parallel_beam_geometry, Backend, FbpOptions, RayTransform};
/// use rodl::{uniform_discr, Operator};
/// let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[24, 24])?;
/// let geometry = parallel_beam_geometry(&space, Some(30))?;
/// let ray = RayTransform::new(space.clone(), geometry.clone(), Backend::default())?;
/// let y = ray.apply(&space.one()?)?;
/// let whole = fbp_op(&ray, &FbpOptions::default())?.apply(&y)?;
/// let mut sum = space.zero()?;
/// for views in [0..12, 12..30] {
///     let part = RayTransform::new(space.clone(), geometry.select_views(views.clone())?, Backend::default())?;
///     let rows = y.as_slice()?[views.start * 35..views.end * 35].to_vec();
///     let x = fbp_op_views(&part, &geometry, views, &FbpOptions::default())?
///         .apply(&part.range().element_from_vec(rows)?)?;
///     space.lincomb(1.0, &sum.try_clone()?, 1.0, &x, &mut sum)?;
/// }
/// assert!(space.dist(&sum, &whole)? <= 1e-12 * space.norm(&whole)?);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn fbp_op_views<T: Scalar>(
    ray_trafo: &dyn LinearOperator<T>,
    geometry: &Geometry,
    views: Range<usize>,
    options: &FbpOptions,
) -> Result<LinOp<T>> {
    fbp_ops_views(&[ray_trafo], geometry, &[views], options)?
        .pop()
        .ok_or_else(|| Error::invalid("fbp_op_views: no operator was built"))
}

/// [`fbp_op_views`] for several groups of views at once: `ray_trafos[k]` is the ray transform of
/// the views `groups[k]`. The whole scan's filter, weights and plan are prepared once (for
/// `fbp_op_views` most of the time of building an operator), so building the operators of `k`
/// groups costs about what one [`fbp_op_with`] does, not `k` times that.
///
/// Errors as [`fbp_op_views`] does for each group, and when the two lists differ in length.
///
/// ```
/// use rodl::tomo::{fbp_op, fbp_ops_views, parallel_beam_geometry, Backend, FbpOptions, RayTransform};
/// use rodl::{uniform_discr, LinearOperator, Operator};
/// let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[24, 24])?;
/// let geometry = parallel_beam_geometry(&space, Some(30))?;
/// let ray = RayTransform::new(space.clone(), geometry.clone(), Backend::default())?;
/// let y = ray.apply(&space.one()?)?;
/// let whole = fbp_op(&ray, &FbpOptions::default())?.apply(&y)?;
/// let groups = [0..10, 10..25, 25..30];
/// let parts: Vec<RayTransform<f64>> = groups
///     .iter()
///     .map(|v| RayTransform::new(space.clone(), geometry.select_views(v.clone())?, Backend::default()))
///     .collect::<Result<_, _>>()?;
/// let refs: Vec<&dyn LinearOperator<f64>> = parts.iter().map(|r| r as &dyn LinearOperator<f64>).collect();
/// let ops = fbp_ops_views(&refs, &geometry, &groups, &FbpOptions::default())?;
/// let mut sum = space.zero()?;
/// for ((op, part), v) in ops.iter().zip(&parts).zip(&groups) {
///     let rows = y.as_slice()?[v.start * 35..v.end * 35].to_vec();
///     let x = op.apply(&part.range().element_from_vec(rows)?)?;
///     space.lincomb(1.0, &sum.try_clone()?, 1.0, &x, &mut sum)?;
/// }
/// assert!(space.dist(&sum, &whole)? <= 1e-12 * space.norm(&whole)?);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn fbp_ops_views<T: Scalar>(
    ray_trafos: &[&dyn LinearOperator<T>],
    geometry: &Geometry,
    groups: &[Range<usize>],
    options: &FbpOptions,
) -> Result<Vec<LinOp<T>>> {
    if ray_trafos.len() != groups.len() {
        return Err(Error::invalid(format!(
            "fbp_ops_views: {} ray transforms for {} groups of views",
            ray_trafos.len(),
            groups.len()
        )));
    }
    let views = FbpViews::new(geometry, options)?;
    ray_trafos
        .iter()
        .zip(groups)
        .map(|(ray_trafo, group)| views.op(*ray_trafo, group))
        .collect()
}

/// The operators of [`fbp_ops_views`] one group at a time: the whole scan's filter, weights and
/// plan prepared once by [`FbpViews::new`], each group's operator built by [`FbpViews::op`] when
/// the caller wants it (for example on a thread of its own, beside the groups already being
/// reconstructed). `FbpViews` is `Send` and `Sync`.
///
/// ```
/// use rodl::tomo::{fbp_op, parallel_beam_geometry, Backend, FbpOptions, FbpViews, RayTransform};
/// use rodl::{uniform_discr, Operator};
/// let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[24, 24])?;
/// let geometry = parallel_beam_geometry(&space, Some(30))?;
/// let ray = RayTransform::new(space.clone(), geometry.clone(), Backend::default())?;
/// let y = ray.apply(&space.one()?)?;
/// let whole = fbp_op(&ray, &FbpOptions::default())?.apply(&y)?;
/// let views = FbpViews::new(&geometry, &FbpOptions::default())?;
/// let mut sum = space.zero()?;
/// for group in [0..10, 10..30] {
///     let part = RayTransform::new(space.clone(), geometry.select_views(group.clone())?, Backend::default())?;
///     let rows = y.as_slice()?[group.start * 35..group.end * 35].to_vec();
///     let x = views.op(&part, &group)?.apply(&part.range().element_from_vec(rows)?)?;
///     space.lincomb(1.0, &sum.try_clone()?, 1.0, &x, &mut sum)?;
/// }
/// assert!(space.dist(&sum, &whole)? <= 1e-12 * space.norm(&whole)?);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct FbpViews {
    /// The scan's number of views and data shape (for the checks of [`FbpViews::op`]).
    views: usize,
    data_shape: Vec<usize>,
    prepared: (setup::Setup, weights::FbpPlan, Arc<filter::RowFilter>),
}

impl FbpViews {
    /// Prepares the whole scan's filter, weights and plan for `geometry` with `options`.
    /// Errors as [`fbp_op_with`] does for the geometry and options.
    pub fn new(geometry: &Geometry, options: &FbpOptions) -> Result<FbpViews> {
        // The set-up needs only the data's shape (a host space of it, for the checks).
        let whole = crate::Space::<f64>::from_partition(geometry.data_partition().clone());
        Ok(FbpViews {
            views: geometry.vec().num_views(),
            data_shape: geometry.data_shape(),
            prepared: operator::prepare(&whole, geometry, options, true)?,
        })
    }

    /// The FBP operator of the views `views` of the scan, for `ray_trafo`, the ray transform
    /// of those views (as [`fbp_op_views`]). Errors when the range is empty or outside the
    /// scan's views, or when the ray transform's data do not have the group's shape.
    pub fn op<T: Scalar>(
        &self,
        ray_trafo: &dyn LinearOperator<T>,
        views: &Range<usize>,
    ) -> Result<LinOp<T>> {
        if views.start >= views.end || views.end > self.views {
            return Err(Error::invalid(format!(
                "fbp_op_views: the view range {views:?} is empty or not within 0..{}",
                self.views
            )));
        }
        let mut want = self.data_shape.clone();
        want[0] = views.len();
        let data = ray_trafo.range();
        if data.shape()? != want.as_slice() {
            return Err(Error::shape(
                "fbp_op_views: the ray transform's data",
                &want,
                data.shape()?,
            ));
        }
        views_op(ray_trafo, views, &self.prepared)
    }
}

/// The operator of [`fbp_op_views`] for the views `views` (checked), from the whole scan's
/// prepared set-up, plan and row filter.
fn views_op<T: Scalar>(
    ray_trafo: &dyn LinearOperator<T>,
    views: &Range<usize>,
    prepared: &(setup::Setup, weights::FbpPlan, Arc<filter::RowFilter>),
) -> Result<LinOp<T>> {
    let (setup, plan, row) = prepared;
    let data = ray_trafo.range().clone();
    let nu = setup.nu;
    let setup = setup.views(views);
    let backward = ray_trafo.adjoint()?;
    let make_filter = |term: &weights::Term| -> Result<FbpFilter<T>> {
        let term = weights::Term {
            before: term.before.views(views, nu),
            after: term.after.views(views, nu),
        };
        FbpFilter::from_term(data.clone(), Arc::clone(row), &setup, term)
    };
    let filter = |term: &weights::Term| -> Result<LinOp<T>> { Ok(Arc::new(make_filter(term)?)) };
    let Some(r) = plan.fan_radius else {
        let first = plan
            .terms
            .first()
            .ok_or_else(|| Error::invalid("empty FBP plan"))?;
        return backward.compose(&filter(first)?);
    };
    // Exact fan beam: (A* F₀ − x₁ A* F₁ − x₂ A* F₂) / (R² − |x|²), zero outside the source
    // circle (never seen by a ray).
    let volume = ray_trafo.domain().clone();
    let factor = |k: Option<usize>| -> Result<LinOp<T>> {
        let f = volume.element_from_fn(|p| {
            let den = r * r - (p[0] * p[0] + p[1] * p[1]);
            if den <= 1e-9 * r * r {
                return T::zero();
            }
            T::of(k.map_or(1.0, |k| -p[k]) / den)
        })?;
        Ok(Arc::new(MultiplyOperator::new(volume.clone(), f)?))
    };
    // The fast form: one filter, one weighted back-projection (a CPU ray transform with the
    // kernel; `fan::FanFbp`), with the terms' post-weights.
    let fast = match ray_trafo
        .as_any()
        .and_then(|a| a.downcast_ref::<RayTransform<T>>())
    {
        Some(ray) if ray.has_weighted_transpose() && plan.terms.len() == 3 => {
            let posts: Vec<weights::Weights> = plan
                .terms
                .iter()
                .map(|t| t.after.views(views, nu))
                .collect();
            let pre = make_filter(&weights::Term {
                before: plan.terms[0].before.clone(),
                after: weights::Weights::default(),
            })?;
            Some((ray.shared(), posts, pre))
        }
        _ => None,
    };
    let mut sum: Option<LinOp<T>> = None;
    for (k, term) in plan.terms.iter().enumerate() {
        let part = factor(k.checked_sub(1))?
            .compose(&backward)?
            .compose(&filter(term)?)?;
        sum = Some(match sum {
            None => part,
            Some(s) => s.plus(&part)?,
        });
    }
    let exact = sum.ok_or_else(|| Error::invalid("empty FBP plan"))?;
    let Some((ray, posts, pre)) = fast else {
        return Ok(exact);
    };
    let fast = fan::FanFbp::new(
        &ray,
        pre,
        [&posts[0], &posts[1], &posts[2]],
        r,
        Arc::clone(&exact),
    )?;
    Ok(fan::fast_or_exact(fast, exact))
}
