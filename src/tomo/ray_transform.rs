//! The ray transform: line integrals of a volume along the rays of a geometry.

use std::sync::Arc;

use super::backend::Backend;
use super::geometry::Geometry;
use super::grid::Grid;
use super::projector::{self, Projector};
use crate::operator::NormCache;
use crate::{Device, Element, Error, Result, Scalar, Space};

struct Inner<T: Scalar> {
    domain: Space<T>,
    range: Space<T>,
    geometry: Geometry,
    projector: Box<dyn Projector<T>>,
    /// `w_range / w_domain`: the factor turning the transpose into the weighted adjoint.
    adjoint_scale: f64,
    norm: NormCache,
}

/// The ray transform `A`: a volume ↦ its line integrals (world units) along the rays of a
/// geometry, discretised with Joseph's method (linear interpolation along each ray's dominant
/// axis). Its [`adjoint`](crate::LinearOperator::adjoint) is the exact transpose of the same model,
/// scaled to the weighted inner products as ODL does: `A* = (w_data / w_volume) Aᵀ`.
///
/// The range is the data space over (angles × detector) with weight `Δθ · Δu (· Δv)`.
///
/// ```
/// use rodl::tomo::{parallel_beam_geometry, Backend, RayTransform};
/// use rodl::{check_adjoint, uniform_discr, LinearOperator, Operator};
/// let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[32, 32])?;
/// let geometry = parallel_beam_geometry(&space, Some(20))?;
/// let ray = RayTransform::new(space.clone(), geometry, Backend::default())?;
/// let sino = ray.apply(&space.one()?)?;
/// assert_eq!(sino.shape().unwrap(), &[20, 47]);
/// assert!(check_adjoint(&ray, 2, 1)?.max_rel_error < 1e-13);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct RayTransform<T: Scalar> {
    inner: Arc<Inner<T>>,
}

/// The adjoint of a [`RayTransform`] (the exact, weighted transpose: back-projection).
pub struct RayBackProjection<T: Scalar> {
    inner: Arc<Inner<T>>,
}

impl<T: Scalar> RayTransform<T> {
    /// A ray transform on the discretised volume `domain` for `geometry`, computing on
    /// `backend`.
    ///
    /// The range lives on the domain's device, with one exception: on the CUDA backend, a
    /// device-resident domain whose data (the range's elements) would take more than the
    /// memory budget ([`CudaOptions`](super::CudaOptions)) gets a host-resident range, and
    /// the transform streams the data's view groups through the budget while the volume stays
    /// on the device (see [`RayTransform::pieces`]). A host domain always has a host range.
    ///
    /// Errors when the domain is not a discretised space of the geometry's dimension, when the
    /// backend cannot be used, or when a CUDA domain's device differs from the backend's.
    pub fn new(domain: Space<T>, geometry: Geometry, backend: Backend) -> Result<Self> {
        let grid = Grid::of(Self::check_domain(&domain, &geometry)?);
        Self::on_grid(domain, geometry, backend, grid)
    }

    /// The partition of `domain`, checked to be a discretised space of `geometry`'s dimension.
    pub(crate) fn check_domain<'a>(
        domain: &'a Space<T>,
        geometry: &Geometry,
    ) -> Result<&'a crate::UniformPartition> {
        let part = domain.partition().map_err(|_| {
            Error::invalid(format!(
                "the ray transform needs a discretised (uniform_discr) volume, got {domain}"
            ))
        })?;
        if part.ndim() != geometry.ndim() {
            return Err(Error::Geometry(format!(
                "a {}D geometry needs a {}D volume, got {domain}",
                geometry.ndim(),
                geometry.ndim()
            )));
        }
        Ok(part)
    }

    /// [`Self::new`] with the projectors set up on `grid` (the domain's shape; for a slab of a
    /// larger volume, that volume's cell sides: see [`super::split`]).
    pub(crate) fn on_grid(
        domain: Space<T>,
        geometry: Geometry,
        backend: Backend,
        grid: Grid,
    ) -> Result<Self> {
        let projector = projector::build::<T>(&backend, domain.device(), geometry.vec(), &grid)?;
        let range = Space::<T>::from_partition(geometry.data_partition().clone());
        let range = match projector.range_device() {
            Device::Cpu => range,
            d => range.with_device(d)?,
        };
        let adjoint_scale = range.weight()? / domain.weight()?;
        Ok(Self {
            inner: Arc::new(Inner {
                domain,
                range,
                geometry,
                projector,
                adjoint_scale,
                norm: NormCache::new(),
            }),
        })
    }

    /// The geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.inner.geometry
    }

    /// The pieces the transform computes in — slabs of the volume × view groups — where it
    /// splits its work: a host-resident domain or range on the CUDA backend, planned at
    /// construction under the memory budget ([`CudaOptions`](super::CudaOptions)). `None` where
    /// it computes the whole at once (the CPU backend, device-resident domain and range).
    ///
    /// The slabs run along [`PieceLayout::slab_axis`](super::PieceLayout::slab_axis): for a 3D
    /// geometry the volume axis best aligned with the detector's rows axis `v` over all views —
    /// the rotation axis of circular and helical scans (axis 2, `z`, for ODL's geometries), so
    /// that a slab is seen by a band of detector rows only; for a 2D geometry, or when only the
    /// views are grouped, axis 0.
    ///
    /// ```
    /// use rodl::tomo::{parallel_beam_geometry, Backend, RayTransform};
    /// use rodl::uniform_discr;
    /// let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16])?;
    /// let ray = RayTransform::new(space.clone(), parallel_beam_geometry(&space, Some(8))?, Backend::default())?;
    /// assert!(ray.pieces().is_none());
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn pieces(&self) -> Option<super::PieceLayout> {
        self.inner.projector.pieces()
    }
}

/// What the 2D fan-beam FBP ([`crate::tomo::fbp`]) needs of the transform behind it.
impl<T: Scalar> RayTransform<T> {
    /// Another handle of the same transform (the same projector and spaces).
    pub(crate) fn shared(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }

    /// `w_range / w_domain`, the factor of the adjoint over the transpose.
    pub(crate) fn adjoint_scale(&self) -> f64 {
        self.inner.adjoint_scale
    }

    /// Whether [`Self::transpose_weighted`] runs (a projector with the kernel).
    pub(crate) fn has_weighted_transpose(&self) -> bool {
        self.inner.projector.has_weighted_transpose()
    }

    /// The projector's weighted transpose (see `Projector::transpose_weighted`) into `out`, a
    /// volume of the domain; `Ok(false)` where the projector has none.
    pub(crate) fn transpose_weighted(&self, rows: [&[T]; 3], out: &mut Element<T>) -> Result<bool> {
        let vol = out.storage_mut("RayTransform weighted transpose: volume")?;
        self.inner.projector.transpose_weighted(rows, vol)
    }
}

impl<T: Scalar> Inner<T> {
    fn forward(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let vol = x.storage("RayTransform: volume")?;
        let sino = out.storage_mut("RayTransform: sinogram")?;
        self.projector.forward(vol, sino)
    }

    fn backward(&self, y: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let sino = y.storage("RayTransform adjoint: sinogram")?;
        let vol = out.storage_mut("RayTransform adjoint: volume")?;
        self.projector.transpose(sino, vol)?;
        self.domain.scale(T::of(self.adjoint_scale), out)
    }

    /// The most entries of a batch in one pass (the projector's).
    fn max_batch(&self) -> usize {
        self.projector.max_batch()
    }

    /// Checks a batch's tensors: `batch` entries of `inner` in `outer` (shape `[batch, …]`).
    fn check_batch(what: &str, e: &Element<T>, inner: &Space<T>, batch: usize) -> Result<()> {
        let mut want = vec![batch];
        want.extend_from_slice(inner.shape()?);
        let got = e.shape()?;
        if got == want.as_slice() {
            return Ok(());
        }
        Err(Error::Shape {
            context: format!("{what}: a batch of {batch}"),
            expected: want,
            got: got.to_vec(),
        })
    }

    fn forward_batch(&self, x: &Element<T>, out: &mut Element<T>, batch: usize) -> Result<()> {
        Self::check_batch("RayTransform: volumes", x, &self.domain, batch)?;
        Self::check_batch("RayTransform: sinograms", out, &self.range, batch)?;
        let vol = x.storage("RayTransform: volumes")?;
        let sino = out.storage_mut("RayTransform: sinograms")?;
        self.projector.forward_batch(vol, sino, batch)
    }

    fn backward_batch(&self, y: &Element<T>, out: &mut Element<T>, batch: usize) -> Result<()> {
        Self::check_batch("RayTransform adjoint: sinograms", y, &self.range, batch)?;
        Self::check_batch("RayTransform adjoint: volumes", out, &self.domain, batch)?;
        let sino = y.storage("RayTransform adjoint: sinograms")?;
        let vol = out.storage_mut("RayTransform adjoint: volumes")?;
        self.projector.transpose_batch(sino, vol, batch)?;
        vol.scale_inplace(T::of(self.adjoint_scale))
    }
}

crate::operator::forward_backward_pair!(RayTransform, RayBackProjection, batched);
