//! The ray transform of a job of several ranks: each rank computes its share with a local
//! backend, the ranks exchange what the partition needs (see [`Partition`]).

use std::ops::Range;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::plan::{Partition, Plan};
use super::rows::RowExchange;
use crate::operator::Scratch;
use crate::tomo::geometry::{VecGeometry, View};
use crate::tomo::grid::Grid;
use crate::tomo::{Backend, Geometry, RayTransform};
use crate::{
    Across, Device, Element, Error, LinOp, LinearOperator, NormCache, Operator, Result, Scalar,
    Space,
};

/// The ray transform of a `geometry` on a volume, distributed over the ranks of a job by a
/// [`Plan`]: views or slabs per rank, each rank computing its share with its own `backend`
/// (CPU threads, or `cuda:{local rank}`).
///
/// Its domain and range are this rank's shares ([`Space::local_share`]) where the partition
/// splits them, the whole space where it replicates them:
///
/// | partition | domain (volume) | range (data) |
/// |---|---|---|
/// | [`Partition::Views`] | the whole volume, the same on every rank | this rank's views `[v, nu(, nv)]` |
/// | [`Partition::Slabs`] | this rank's slab `[nx, ny, nz_r]` | this rank's rows `[views, nu, nv_r]` |
///
/// so the solvers ([`cgls`](crate::solvers::iterative::cgls()),
/// [`pdhg`](crate::solvers::iterative::pdhg()), …) run unchanged on every rank and compute the
/// single-process result to rounding: their inner products and norms are summed over the
/// ranks by the share spaces. Forward, adjoint, [`Operator::apply_into`] and construction are
/// collective (every rank calls them, in the same order); a failure on one rank (a wrong
/// shape, a backend error) is an [`Error::Distributed`] naming it on every rank.
///
/// The adjoint is exact in the shares' inner products: by views, `A* y = Σ_r A_r* y_r`, summed
/// by an all-reduce of the volume; by slabs, each rank gathers its band of rows from the ranks
/// that own them, and the forward adds each band's rows onto their owners. The local transforms
/// keep the whole volume's cell sides bit for bit ([`crate::tomo::split`]'s exactness rule), so
/// the slabs add up to the whole transform.
///
/// ```
/// use rodl::distributed::{Across, DistributedRayTransform, Partition, Plan, SingleRank};
/// use rodl::tomo::{parallel_beam_geometry, Backend};
/// use rodl::{uniform_discr, Operator};
/// let space = uniform_discr::<f64>(&[-1.0; 3], &[1.0; 3], &[8, 8, 6])?;
/// let geometry = parallel_beam_geometry(&space, Some(5))?;
/// let plan = Plan::even(Partition::Slabs, 6, 1)?;
/// let ray = DistributedRayTransform::new(&space, &geometry, &plan, Backend::default(),
///     Across::new(SingleRank))?;
/// assert_eq!(ray.domain().shape()?, &[8, 8, 6]);
/// let y = ray.apply(&ray.domain().one()?)?;
/// assert!(ray.range().norm(&y)? > 0.0);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct DistributedRayTransform<T: Scalar> {
    inner: Arc<Inner<T>>,
}

/// The adjoint of a [`DistributedRayTransform`] (from [`LinearOperator::adjoint`]).
pub struct DistributedBackProjection<T: Scalar> {
    inner: Arc<Inner<T>>,
}

struct Inner<T: Scalar> {
    across: Across,
    plan: Plan,
    geometry: Geometry,
    domain: Space<T>,
    range: Space<T>,
    /// This rank's transform (none for a rank without views, or whose slab no ray sees).
    local: Option<(RayTransform<T>, LinOp<T>)>,
    /// The slabs' row bands and owners, and the band buffer ([`Partition::Slabs`]).
    rows: Option<(RowExchange, Option<Scratch<T>>)>,
    norm: NormCache,
}

/// A digest of what every rank must agree on.
fn fingerprint<T: Scalar>(volume: &Space<T>, geometry: &Geometry, plan: &Plan) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(format!("{volume}|{:?}|{plan:?}|", geometry.data_partition()).as_bytes());
    h.update(format!("{:?}|{:?}", geometry.vec(), geometry.vec().detector()).as_bytes());
    h.finalize().to_vec()
}

/// The geometry of the detector rows `rows` of a flat 3D detector: each view's detector centre
/// moved to the band's centre, the data partition's rows cut to the band.
fn row_band(geometry: &Geometry, rows: &Range<usize>) -> Result<Geometry> {
    let vec = geometry.vec();
    let shift = (rows.start + rows.end) as f64 * 0.5 - vec.nv() as f64 * 0.5;
    let views: Vec<View> = vec
        .views()
        .iter()
        .map(|v| {
            let mut w = *v;
            for k in 0..3 {
                w.det_center[k] += shift * v.det_v[k];
            }
            w
        })
        .collect();
    let band = VecGeometry::new(3, vec.beam(), &[vec.nu(), rows.len()], views)?;
    Geometry::from_vec_on(band, geometry.data_partition().cells(2, rows.clone())?)
}

impl<T: Scalar> DistributedRayTransform<T> {
    /// The ray transform of `geometry` on the whole discretised `volume` (every rank passes the
    /// same), split by `plan` (one range per rank of `across`), this rank computing on
    /// `backend`. Collective.
    ///
    /// Errors on every rank ([`Error::Distributed`], naming the first failing rank) when the
    /// ranks disagree on the volume, the geometry or the plan, when the plan is not for this
    /// many ranks or does not cover the views (slices), or when a rank's local transform cannot
    /// be built. [`Partition::Slabs`] needs a 3D geometry with a flat detector whose rotation
    /// axis is the volume's `z` axis, and host-resident data ([`Error::Unsupported`]
    /// otherwise).
    pub fn new(
        volume: &Space<T>,
        geometry: &Geometry,
        plan: &Plan,
        backend: Backend,
        across: Across,
    ) -> Result<Self> {
        let digests = across
            .comm()
            .all_gather(&fingerprint(volume, geometry, plan))?;
        // Every rank sees the same digests, so every rank returns here alike.
        if let Some(rank) = digests.iter().position(|d| *d != digests[0]) {
            return Err(Error::Distributed {
                rank,
                message: "its volume, geometry or plan differs from rank 0's (every rank must \
                          pass the same)"
                    .into(),
            });
        }
        let local = Self::build(volume, geometry, plan, backend, &across);
        across.agree_on(&local)?;
        Ok(Self {
            inner: Arc::new(local?),
        })
    }

    fn build(
        volume: &Space<T>,
        geometry: &Geometry,
        plan: &Plan,
        backend: Backend,
        across: &Across,
    ) -> Result<Inner<T>> {
        let part = RayTransform::check_domain(volume, geometry)?;
        if volume.across().is_some() {
            return Err(Error::invalid(format!(
                "DistributedRayTransform takes the whole volume, got a share ({volume})"
            )));
        }
        if plan.ranks() != across.size() {
            return Err(Error::invalid(format!(
                "a plan for {} ranks on a job of {}",
                plan.ranks(),
                across.size()
            )));
        }
        let me = across.rank();
        let data_part = geometry.data_partition();
        let mine = plan.ranges()[me].clone();
        match plan.partition() {
            Partition::Views => {
                let n = geometry.vec().num_views();
                if plan.total() != n {
                    return Err(Error::invalid(format!(
                        "a plan of {} views for a geometry of {n}",
                        plan.total()
                    )));
                }
                let local = if mine.is_empty() {
                    None
                } else {
                    let ray = RayTransform::new(
                        volume.clone(),
                        geometry.select_views(mine.clone())?,
                        backend,
                    )?;
                    let adj = ray.adjoint()?;
                    Some((ray, adj))
                };
                let device = local
                    .as_ref()
                    .map_or(volume.device(), |l| l.0.range().device());
                let data = Space::<T>::from_partition(data_part.clone());
                let data = if device == Device::Cpu {
                    data
                } else {
                    data.with_device(device)?
                };
                let range = data.local_part(0, mine.clone(), across.clone())?;
                Ok(Inner {
                    across: across.clone(),
                    plan: plan.clone(),
                    geometry: geometry.clone(),
                    domain: volume.clone(),
                    range,
                    local,
                    rows: None,
                    norm: NormCache::new(),
                })
            }
            Partition::Slabs => {
                let vec = geometry.vec();
                if geometry.ndim() != 3 || vec.detector().is_curved() || vec.slab_axis() != 2 {
                    return Err(Error::Unsupported(
                        "a slab partition needs a 3D geometry with a flat detector and its \
                         rotation axis along the volume's z axis (partition by views instead)"
                            .into(),
                    ));
                }
                if volume.device() != Device::Cpu {
                    return Err(Error::Unsupported(format!(
                        "a slab partition keeps its shares on the host, got a volume on {} (the \
                         backend may still be a GPU)",
                        volume.device()
                    )));
                }
                let nz = part.shape()[2];
                if plan.total() != nz {
                    return Err(Error::invalid(format!(
                        "a plan of {} slices for a volume of {nz} along z",
                        plan.total()
                    )));
                }
                let grid = Grid::of(part);
                let views = vec.num_views();
                let bands: Vec<Range<usize>> = plan
                    .ranges()
                    .iter()
                    .map(|slab| {
                        if slab.is_empty() {
                            return 0..0;
                        }
                        let (min, max) = grid.reach_box(2, slab);
                        let b = vec.rows_through(0..views, min, max);
                        if b.is_empty() {
                            0..0
                        } else {
                            b
                        }
                    })
                    .collect();
                let owned = plan.owned_rows(vec.nv());
                let domain = volume.local_part(2, mine.clone(), across.clone())?;
                let range = Space::<T>::from_partition(data_part.clone()).local_part(
                    2,
                    owned[me].clone(),
                    across.clone(),
                )?;
                let band = &bands[me];
                let (local, scratch) = if band.is_empty() {
                    (None, None)
                } else {
                    let ray = RayTransform::on_grid(
                        domain.clone(),
                        row_band(geometry, band)?,
                        backend,
                        grid.slab_along(2, mine.clone()),
                    )?;
                    if ray.range().device() != Device::Cpu {
                        return Err(Error::Unsupported(
                            "a slab partition keeps its data on the host".into(),
                        ));
                    }
                    let adj = ray.adjoint()?;
                    let scratch = Scratch::new(ray.range().clone());
                    (Some((ray, adj)), Some(scratch))
                };
                let exchange = RowExchange {
                    bands,
                    owned,
                    lanes: views * vec.nu(),
                    me,
                    chunk: super::rows::EXCHANGE_CHUNK,
                };
                Ok(Inner {
                    across: across.clone(),
                    plan: plan.clone(),
                    geometry: geometry.clone(),
                    domain,
                    range,
                    local,
                    rows: Some((exchange, scratch)),
                    norm: NormCache::new(),
                })
            }
        }
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.inner.plan
    }

    /// The whole geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.inner.geometry
    }

    /// The communicator.
    pub fn across(&self) -> &Across {
        &self.inner.across
    }

    /// This rank's local ray transform (`None` for a rank with nothing to project): for
    /// [`Partition::Views`] that of its views on the whole volume, for [`Partition::Slabs`]
    /// that of its slab onto the band of rows its rays reach.
    pub fn local(&self) -> Option<&RayTransform<T>> {
        self.inner.local.as_ref().map(|l| &l.0)
    }

    /// The part of the data this rank holds: the axis of the data (`[views, nu(, nv)]`) and the
    /// range along it — its views (axis 0) for [`Partition::Views`], its detector rows
    /// (axis 2) for [`Partition::Slabs`]. What a reader of this rank's share reads.
    pub fn range_part(&self) -> (usize, Range<usize>) {
        match &self.inner.rows {
            Some((ex, _)) => (2, ex.owned[ex.me].clone()),
            None => (
                0,
                self.inner.plan.ranges()[self.inner.across.rank()].clone(),
            ),
        }
    }

    /// The band of detector rows this rank's slab reaches, the rows of [`Self::local`]'s range
    /// ([`Partition::Slabs`]; `None` by views, and for a rank whose slab no ray sees): what a
    /// rank reads to reconstruct its slab alone (a parallel beam's filtered back-projection).
    pub fn band(&self) -> Option<Range<usize>> {
        let (ex, _) = self.inner.rows.as_ref()?;
        let band = ex.bands.get(ex.me)?;
        (!band.is_empty()).then(|| band.clone())
    }

    /// The part of the volume this rank holds: `None` when it holds all of it
    /// ([`Partition::Views`]), else the axis (2, `z`) and its slab's range.
    pub fn domain_part(&self) -> Option<(usize, Range<usize>)> {
        self.inner.rows.as_ref().map(|_| {
            (
                2,
                self.inner.plan.ranges()[self.inner.across.rank()].clone(),
            )
        })
    }

    /// Collective: this rank's share of the data as an element of the range, from its part
    /// `data` (of the shape of [`Operator::range`]; see [`Self::range_part`]). A wrong shape on
    /// any rank is an [`Error::Distributed`] on every rank, naming it.
    pub fn range_element(&self, data: ndarray::ArrayD<T>) -> Result<Element<T>> {
        agreed_element(&self.inner.across, &self.inner.range, data)
    }

    /// Collective: this rank's share (or copy) of the volume as an element of the domain, as
    /// [`Self::range_element`].
    pub fn domain_element(&self, data: ndarray::ArrayD<T>) -> Result<Element<T>> {
        agreed_element(&self.inner.across, &self.inner.domain, data)
    }

    /// The values this rank sends and receives in one application (forward or adjoint):
    /// the volume for [`Partition::Views`]' adjoint (an all-reduce; nothing in the forward),
    /// the rows its band shares with other ranks for [`Partition::Slabs`].
    pub fn exchanged_values(&self) -> (usize, usize) {
        match &self.inner.rows {
            Some((ex, _)) => ex.halo_values(),
            None => (self.inner.domain.size(), self.inner.domain.size()),
        }
    }
}

impl<T: Scalar> Inner<T> {
    /// The outcome of the local checks and work, agreed across the ranks.
    fn agree(&self, local: Result<()>) -> Result<()> {
        self.across.agree(local)
    }

    fn forward(&self, x: &Element<T>, out: &mut Element<T>, checked: Result<()>) -> Result<()> {
        match &self.rows {
            None => {
                let local = checked.and_then(|_| match &self.local {
                    Some((ray, _)) => ray.apply_into(x, out),
                    None => Ok(()),
                });
                self.agree(local)
            }
            Some((ex, scratch)) => {
                let run = |mut band: Option<&mut Element<T>>| -> Result<()> {
                    let local = checked.and_then(|_| {
                        out.as_slice_mut()?;
                        match (&self.local, band.as_deref_mut()) {
                            (Some((ray, _)), Some(b)) => ray.apply_into(x, b),
                            _ => Ok(()),
                        }
                    });
                    self.agree(local)?;
                    let values: &[T] = match band.as_deref() {
                        Some(b) => b.as_slice()?,
                        None => &[],
                    };
                    ex.gather_sum(&self.across, values, out.as_slice_mut()?)
                };
                match scratch {
                    Some(s) => s.with(|b| run(Some(b))),
                    None => run(None),
                }
            }
        }
    }

    fn backward(&self, y: &Element<T>, out: &mut Element<T>, checked: Result<()>) -> Result<()> {
        match &self.rows {
            None => {
                let local = checked.and_then(|_| match &self.local {
                    Some((_, adj)) => adj.apply_into(y, out),
                    None => self.domain.fill(out, T::zero()),
                });
                self.agree(local)?;
                if out.device() == Device::Cpu {
                    self.across.all_sum(out.as_slice_mut()?)
                } else {
                    let mut host = out.to_host()?;
                    self.across.all_sum(host.as_slice_mut()?)?;
                    *out = self.domain.element(host.into_array()?)?;
                    Ok(())
                }
            }
            Some((ex, scratch)) => {
                let run = |mut band: Option<&mut Element<T>>| -> Result<()> {
                    let local = checked.and_then(|_| {
                        y.as_slice()?;
                        out.as_slice_mut().map(|_| ())
                    });
                    self.agree(local)?;
                    let values: &mut [T] = match band.as_deref_mut() {
                        Some(b) => b.as_slice_mut()?,
                        None => &mut [],
                    };
                    ex.scatter(&self.across, y.as_slice()?, values)?;
                    let local = match (&self.local, band.as_deref()) {
                        (Some((_, adj)), Some(b)) => adj.apply_into(b, out),
                        _ => self.domain.fill(out, T::zero()),
                    };
                    self.agree(local)
                };
                match scratch {
                    Some(s) => s.with(|b| run(Some(b))),
                    None => run(None),
                }
            }
        }
    }
}

impl<T: Scalar> Operator<T> for DistributedRayTransform<T> {
    fn domain(&self) -> &Space<T> {
        &self.inner.domain
    }

    fn range(&self) -> &Space<T> {
        &self.inner.range
    }

    fn evaluate(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.inner.forward(x, out, Ok(()))
    }

    fn apply_into(&self, x: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let checked = self
            .inner
            .domain
            .check_member(x, "DistributedRayTransform: input")
            .and_then(|_| {
                self.inner
                    .range
                    .check_member(out, "DistributedRayTransform: output")
            });
        self.inner.forward(x, out, checked)
    }

    fn apply(&self, x: &Element<T>) -> Result<Element<T>> {
        let made = self.inner.range.zero();
        self.inner.across.agree_on(&made)?;
        let mut out = made?;
        self.apply_into(x, &mut out)?;
        Ok(out)
    }

    fn is_linear(&self) -> bool {
        true
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

impl<T: Scalar> LinearOperator<T> for DistributedRayTransform<T> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        Ok(Arc::new(DistributedBackProjection {
            inner: self.inner.clone(),
        }))
    }

    fn norm_cache(&self) -> Option<&NormCache> {
        Some(&self.inner.norm)
    }
}

// The adjoint maps the forward operator's range back to its domain.
#[allow(clippy::misnamed_getters)]
impl<T: Scalar> Operator<T> for DistributedBackProjection<T> {
    fn domain(&self) -> &Space<T> {
        &self.inner.range
    }

    fn range(&self) -> &Space<T> {
        &self.inner.domain
    }

    fn evaluate(&self, y: &Element<T>, out: &mut Element<T>) -> Result<()> {
        self.inner.backward(y, out, Ok(()))
    }

    fn apply_into(&self, y: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let checked = self
            .inner
            .range
            .check_member(y, "DistributedBackProjection: input")
            .and_then(|_| {
                self.inner
                    .domain
                    .check_member(out, "DistributedBackProjection: output")
            });
        self.inner.backward(y, out, checked)
    }

    fn apply(&self, y: &Element<T>) -> Result<Element<T>> {
        let made = self.inner.domain.zero();
        self.inner.across.agree_on(&made)?;
        let mut out = made?;
        self.apply_into(y, &mut out)?;
        Ok(out)
    }

    fn is_linear(&self) -> bool {
        true
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

impl<T: Scalar> LinearOperator<T> for DistributedBackProjection<T> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        Ok(Arc::new(DistributedRayTransform {
            inner: self.inner.clone(),
        }))
    }

    fn norm_cache(&self) -> Option<&NormCache> {
        Some(&self.inner.norm)
    }
}

fn agreed_element<T: Scalar>(
    across: &Across,
    space: &Space<T>,
    data: ndarray::ArrayD<T>,
) -> Result<Element<T>> {
    let made = space.element(data);
    across.agree_on(&made)?;
    made
}
