//! The FBP filter as a linear operator on the data space.

use std::sync::Arc;

use rayon::prelude::*;

use super::cuda::GpuFilter;
use super::filter::RowFilter;
use super::gpu_filter::GpuFbpFilter;
use super::setup::Setup;
use super::weights::{fbp_plan, FbpPlan, Term, Weights};
use super::FbpOptions;
use crate::operator::NormCache;
use crate::storage::Storage;
use crate::tomo::Geometry;
use crate::{
    BatchedOperator, Device, Element, Error, LinOp, LinearOperator, Operator, Result, Scalar, Space,
};

/// The most detector rows (entries × views × rows per view) one batched call filters: the row
/// count stays within 32-bit range, which keeps the GPU kernels' launch grids in theirs.
const MAX_BATCH_ROWS: usize = i32::MAX as usize;

pub(super) struct Inner<T: Scalar> {
    pub(super) space: Space<T>,
    pub(super) row: Arc<RowFilter>,
    pub(super) nviews: usize,
    pub(super) nu: usize,
    pub(super) nv: usize,
    /// Weights applied before the ramp filter (after it in the adjoint).
    pub(super) before: Weights,
    /// Weights applied after the ramp filter (before it in the adjoint).
    pub(super) after: Weights,
    norm: NormCache,
    /// The taps and weights on the space's GPU, for a space on a GPU.
    pub(super) gpu: Option<GpuFilter>,
}

/// The filter of filtered back-projection: on the ray transform's data space, the data are
/// weighted, convolved along the detector's u axis with a ramp filter ([`FilterType`]
/// windows, ODL's `frequency_scaling` and `padding`) and weighted again, with the constant
/// factor that makes `ray_trafo.adjoint() ∘ filter` reconstruct in absolute values (see
/// [`fbp`](crate::tomo::fbp) for the weights of each geometry).
///
/// It is linear, and its [`adjoint`](LinearOperator::adjoint) is exact: the same real, even
/// convolution with the two weights swapped (for full-turn parallel and cone beams the filter is
/// self-adjoint).
///
/// Host data are filtered by real FFTs ([`realfft`]), rows in parallel with rayon; data on a
/// GPU are filtered on the GPU, by batched real FFTs through cuFFT with the same padded length
/// and frequency response, or, where cuFFT cannot be loaded, by a direct (Toeplitz) convolution
/// with the same taps ([`FbpFilter::gpu_method`] says which; `RODL_CUFFT` chooses, see
/// [`GpuFilterMethod`](super::GpuFilterMethod)).
///
/// The filter and its adjoint have a [batched form](Operator::batched): a batch of data is just
/// more detector rows, filtered in the same pass (rayon over the rows of all entries on the
/// host; on a GPU one sequence of launches over the rows of all entries, in the cuFFT path's
/// scratch-sized groups of rows). [`BatchedOperator::max_batch`] is as many entries as keep the
/// rows of a batch (entries × views × rows per view) within `2³¹ − 1`. So
/// [`fbp_op`](super::fbp_op) has a batched form wherever the ray transform's adjoint has one
/// (the CUDA ray transform; the host ray transform has none).
///
/// [`FilterType`]: super::FilterType
///
/// ```
/// use rodl::tomo::{parallel_beam_geometry, FbpFilter, FbpOptions, FilterType};
/// use rodl::{check_adjoint, uniform_discr, Space};
/// let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16])?;
/// let geometry = parallel_beam_geometry(&space, Some(12))?;
/// let data = Space::<f64>::from_partition(geometry.data_partition().clone());
/// let filter = FbpFilter::new(data, &geometry, &FbpOptions::new(FilterType::Hann))?;
/// assert!(check_adjoint(&filter, 2, 0)?.max_rel_error < 1e-13);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct FbpFilter<T: Scalar> {
    inner: Arc<Inner<T>>,
    adjoint: bool,
}

impl<T: Scalar> FbpFilter<T> {
    /// The FBP filter for data of `geometry` in `space` (the range of a ray transform with that
    /// geometry: shape `[angles, u(, v)]`, on any device).
    ///
    /// Errors when the space's shape is not the geometry's data shape, when the options are
    /// invalid, when the geometry is not one FBP handles ([`Error::Unsupported`]: general vector
    /// geometries, helical scans of less than a turn or with a pitch factor above 1), and when a short fan/cone scan covers less than
    /// `π + fan angle` while Parker weights are on.
    pub fn new(space: Space<T>, geometry: &Geometry, options: &FbpOptions) -> Result<Self> {
        let (setup, mut plan, row) = prepare(&space, geometry, options, false)?;
        let term = plan.terms.swap_remove(0);
        Self::from_term(space, row, &setup, term)
    }

    /// The filter `after ⊙ K(before ⊙ y)` with the ramp convolution `row` (shape already
    /// checked).
    pub(crate) fn from_term(
        space: Space<T>,
        row: Arc<RowFilter>,
        setup: &Setup,
        term: Term,
    ) -> Result<Self> {
        let gpu = match space.device() {
            Device::Cuda(id) => Some(GpuFilter::new::<T>(
                id,
                &row,
                setup,
                &term.before,
                &term.after,
            )?),
            Device::Cpu => None,
        };
        Ok(Self {
            inner: Arc::new(Inner {
                space,
                row,
                nviews: setup.nviews,
                nu: setup.nu,
                nv: setup.nv,
                before: term.before,
                after: term.after,
                norm: NormCache::new(),
                gpu,
            }),
            adjoint: false,
        })
    }

    /// How the filter runs on its space's GPU, `None` for a host space: through cuFFT, or by
    /// the direct convolution where cuFFT cannot be loaded or `RODL_CUFFT=off` (see
    /// [`GpuFilterMethod`](super::GpuFilterMethod)). Fixed at construction.
    pub fn gpu_method(&self) -> Option<super::GpuFilterMethod> {
        self.inner.gpu.as_ref().map(|g| g.method())
    }

    /// Whether this is the adjoint of the filter (the weights swapped).
    pub fn is_adjoint(&self) -> bool {
        self.adjoint
    }
}

/// Checks `space` and `options` against `geometry` and plans the reconstruction (`exact_fan`:
/// the three-term exact fan-beam plan): the setup, the plan and the ramp convolution.
pub(super) fn prepare<T: Scalar>(
    space: &Space<T>,
    geometry: &Geometry,
    options: &FbpOptions,
    exact_fan: bool,
) -> Result<(Setup, FbpPlan, Arc<RowFilter>)> {
    let shape = space.shape().map_err(|_| {
        Error::invalid(format!(
            "the FBP filter needs a tensor space of data, got {space}"
        ))
    })?;
    let want = geometry.data_shape();
    if shape != want.as_slice() {
        return Err(Error::shape("FBP filter: data space", &want, shape));
    }
    if let Some(q) = options.parker {
        if !(q > 0.0 && q <= 1.0) {
            return Err(Error::invalid(format!(
                "the Parker parameter q must be in (0, 1], got {q}"
            )));
        }
    }
    let setup = Setup::new(geometry)?;
    let plan = fbp_plan(&setup, options.parker, exact_fan)?;
    let row = Arc::new(RowFilter::new(
        setup.nu,
        setup.du,
        options.filter,
        options.frequency_scaling,
        options.padding,
        plan.scale,
        matches!(setup.source, super::setup::Source::Arc { .. }),
    )?);
    Ok((setup, plan, row))
}

impl<T: Scalar> Inner<T> {
    fn sides(&self, adjoint: bool) -> (&Weights, &Weights) {
        if adjoint {
            (&self.after, &self.before)
        } else {
            (&self.before, &self.after)
        }
    }

    /// The filter on host data of one or more entries (whole views, one after the other),
    /// rows in parallel.
    fn apply_host(&self, x: &[T], out: &mut [T], adjoint: bool) {
        let (pre, post) = self.sides(adjoint);
        let (nviews, nu, nv) = (self.nviews.max(1), self.nu, self.nv);
        let view = nu * nv;
        out.par_chunks_mut(view)
            .zip(x.par_chunks(view))
            .enumerate()
            .for_each_init(
                || self.row.buffers(),
                |b, (k, (o, xa))| {
                    // View `k` of the batch is view `a` of its entry.
                    let a = k % nviews;
                    for j in 0..nv {
                        for i in 0..nu {
                            b.real[i] = xa[i * nv + j].f64() * pre.at(a, i, j, nu, nv);
                        }
                        self.row.apply_row(b);
                        for i in 0..nu {
                            o[i * nv + j] = T::of(b.real[i] * post.at(a, i, j, nu, nv));
                        }
                    }
                },
            );
    }

    /// The most entries of a batch in one call (at least 1).
    fn max_batch(&self) -> usize {
        (MAX_BATCH_ROWS / (self.nviews * self.nv).max(1)).max(1)
    }

    /// Errors unless `batch` is 1 to [`Self::max_batch`] entries and `e` a tensor of `batch`
    /// entries of the data space (shape `[batch, …]`).
    fn check_batch(&self, what: &str, e: &Element<T>, batch: usize) -> Result<()> {
        let max = self.max_batch();
        if batch == 0 || batch > max {
            return Err(Error::invalid(format!(
                "FbpFilter: a batch of {batch} (1 to {max} in one pass)"
            )));
        }
        let mut want = vec![batch];
        want.extend_from_slice(self.space.shape()?);
        let got = e.shape()?;
        if got != want.as_slice() {
            return Err(Error::Shape {
                context: format!("FbpFilter: {what}, a batch of {batch}"),
                expected: want,
                got: got.to_vec(),
            });
        }
        Ok(())
    }

    /// The filter (or its adjoint) of `entries` data one after the other in `x`, into `out`
    /// (lengths checked by the callers).
    fn apply(
        &self,
        x: &Element<T>,
        out: &mut Element<T>,
        adjoint: bool,
        entries: usize,
    ) -> Result<()> {
        let xs = x.storage("FbpFilter: input")?;
        let os = out.storage_mut("FbpFilter: output")?;
        let mismatch = |got: String| Error::device_mismatch("FbpFilter", self.space.device(), got);
        match &self.gpu {
            Some(g) => Storage::on_gpu(g.device(), xs, os, "FbpFilter", |a, b| {
                g.apply(a, b, adjoint, entries)
            }),
            None => {
                let got = format!("{} and {}", xs.device(), os.device());
                let a = xs.host().ok_or_else(|| mismatch(got.clone()))?;
                let o = os.host_mut().ok_or_else(|| mismatch(got))?;
                self.apply_host(a.slice(), o.slice_mut(), adjoint);
                Ok(())
            }
        }
    }
}

impl<T: Scalar> Operator<T> for FbpFilter<T> {
    fn domain(&self) -> &Space<T> {
        &self.inner.space
    }
    fn range(&self) -> &Space<T> {
        &self.inner.space
    }
    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.inner.apply(x, out, self.adjoint, 1)
    }
    fn is_linear(&self) -> bool {
        true
    }
    fn batched(&self) -> Option<&dyn BatchedOperator<T>> {
        (self.inner.max_batch() > 1).then_some(self as &dyn BatchedOperator<T>)
    }
    fn name(&self) -> String {
        if self.adjoint {
            "FbpFilter*".into()
        } else {
            "FbpFilter".into()
        }
    }
}

/// The filter (or its adjoint) of a batch of data: the rows of all entries in one pass. Errors
/// for a batch of 0 or above [`BatchedOperator::max_batch`], for tensors that are not `batch`
/// entries of the data space (shape `[batch, …data shape]`), and for tensors on another device
/// than the space's (host tensors for a GPU space are copied in and out, as in
/// [`Operator::apply`]).
impl<T: Scalar> BatchedOperator<T> for FbpFilter<T> {
    fn max_batch(&self) -> usize {
        self.inner.max_batch()
    }
    fn apply_batch(&self, x: &Element<T>, out: &mut Element<T>, batch: usize) -> Result<()> {
        self.inner.check_batch("input", x, batch)?;
        self.inner.check_batch("output", out, batch)?;
        self.inner.apply(x, out, self.adjoint, batch)
    }
}

impl<T: Scalar> LinearOperator<T> for FbpFilter<T> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        Ok(Arc::new(FbpFilter {
            inner: Arc::clone(&self.inner),
            adjoint: !self.adjoint,
        }))
    }
    fn norm_cache(&self) -> Option<&NormCache> {
        Some(&self.inner.norm)
    }
}
