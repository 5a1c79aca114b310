//! Spaces: tensor spaces, discretised function spaces on uniform partitions, product spaces.
//!
//! A [`Space`] is a cheap-to-clone description (shape, weighting, partition, device) that makes
//! and combines its [`Element`]s. All vector-space arithmetic goes through the space, which checks
//! that the elements belong to it and dispatches to the backend of its device.

mod across;
mod partition;
mod pointwise;
mod vector_ops;

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use ndarray::{ArrayD, IxDyn};
use rand::Rng;
use rand_distr::StandardNormal;

#[cfg(feature = "mpi")]
pub(crate) use across::check_counts;
pub use across::{Across, Communicator};
pub use partition::UniformPartition;
pub use pointwise::{Pointwise, Pointwise2};

use crate::element::ElementKind;
use crate::storage::Storage;
use crate::{Device, Element, Error, Result, Scalar};

/// A vector space whose elements rodl operators map between.
///
/// Three kinds exist: tensor spaces [`rn`] (optionally with a constant weight), discretised
/// function spaces [`uniform_discr`] (weighted by the cell volume, so the inner product is a
/// Riemann sum), and product spaces [`Space::product`] / [`Space::power`].
///
/// ```
/// use rodl::{uniform_discr, Space};
/// let x_space = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 2.0], &[4, 8])?;
/// assert_eq!(x_space.cell_volume()?, 0.0625);
/// let one = x_space.one()?;
/// // ‖1‖² = ∫ 1 dx = area of the domain
/// assert!((x_space.norm(&one)?.powi(2) - 2.0).abs() < 1e-14);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct Space<T: Scalar> {
    inner: Arc<SpaceKind<T>>,
    _t: PhantomData<fn() -> T>,
}

enum SpaceKind<T: Scalar> {
    Tensor(TensorSpec),
    Product(Vec<Space<T>>),
}

/// Description of a tensor space: shape, constant weight, optional partition, device, and the
/// communicator of a rank's share of a distributed space.
#[derive(Clone, Debug, PartialEq)]
struct TensorSpec {
    shape: Vec<usize>,
    weight: f64,
    partition: Option<UniformPartition>,
    device: Device,
    /// `Some` for a rank's share: reductions are summed over its ranks.
    across: Option<Across>,
}

impl<T: Scalar> Clone for Space<T> {
    fn clone(&self) -> Self {
        Space {
            inner: Arc::clone(&self.inner),
            _t: PhantomData,
        }
    }
}

impl<T: Scalar> PartialEq for Space<T> {
    fn eq(&self, other: &Self) -> bool {
        if Arc::ptr_eq(&self.inner, &other.inner) {
            return true;
        }
        match (&*self.inner, &*other.inner) {
            (SpaceKind::Tensor(a), SpaceKind::Tensor(b)) => a == b,
            (SpaceKind::Product(a), SpaceKind::Product(b)) => a == b,
            _ => false,
        }
    }
}

/// The tensor space ℝⁿ of the given shape on the CPU, with the plain (unweighted) inner product.
///
/// ```
/// let s = rodl::rn::<f32>(&[3, 4])?;
/// assert_eq!(s.shape()?, &[3, 4]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn rn<T: Scalar>(shape: &[usize]) -> Result<Space<T>> {
    weighted_rn(shape, 1.0)
}

/// The tensor space ℝⁿ with inner product `weight · Σ xᵢ yᵢ`.
pub fn weighted_rn<T: Scalar>(shape: &[usize], weight: f64) -> Result<Space<T>> {
    check_shape(shape)?;
    if !(weight.is_finite() && weight > 0.0) {
        return Err(Error::invalid(format!(
            "weight must be finite and positive, got {weight}"
        )));
    }
    Ok(Space::from_kind(SpaceKind::Tensor(TensorSpec {
        shape: shape.to_vec(),
        weight,
        partition: None,
        device: Device::Cpu,
        across: None,
    })))
}

/// A discretised function space on `[min_pt, max_pt]` with `shape` cells, on the CPU.
///
/// Elements hold the function values at the cell midpoints; the inner product is weighted by the
/// cell volume, so that `⟨x, y⟩ ≈ ∫ x y`.
///
/// ```
/// use rodl::uniform_discr;
/// let s = uniform_discr::<f64>(&[-1.0], &[1.0], &[4])?;
/// let x = s.element_from_fn(|p| p[0])?;
/// assert_eq!(x.as_array()?.as_slice().unwrap(), &[-0.75, -0.25, 0.25, 0.75]);
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn uniform_discr<T: Scalar>(
    min_pt: &[f64],
    max_pt: &[f64],
    shape: &[usize],
) -> Result<Space<T>> {
    let partition = UniformPartition::new(min_pt, max_pt, shape)?;
    Ok(Space::from_partition(partition))
}

fn check_shape(shape: &[usize]) -> Result<()> {
    if shape.is_empty() {
        return Err(Error::invalid("a tensor space needs at least one axis"));
    }
    if shape.contains(&0) {
        return Err(Error::invalid(format!(
            "a tensor space needs non-zero axis lengths, got {shape:?}"
        )));
    }
    // Elements must be allocatable: the byte size of the largest scalar type (f64) times the
    // number of entries must fit in `isize` (beyond that, allocation would panic).
    let max_len = isize::MAX as usize / std::mem::size_of::<f64>();
    crate::memory::entries(shape)
        .filter(|&n| n <= max_len)
        .ok_or_else(|| Error::invalid(format!("shape {shape:?} has too many entries")))?;
    Ok(())
}

impl<T: Scalar> Space<T> {
    fn from_kind(kind: SpaceKind<T>) -> Self {
        Space {
            inner: Arc::new(kind),
            _t: PhantomData,
        }
    }

    /// The discretised space of a partition (weight = cell volume), on the CPU.
    pub fn from_partition(partition: UniformPartition) -> Self {
        Space::from_kind(SpaceKind::Tensor(TensorSpec {
            shape: partition.shape().to_vec(),
            weight: partition.cell_volume(),
            partition: Some(partition),
            device: Device::Cpu,
            across: None,
        }))
    }

    /// This tensor space as one rank's share of a space distributed over the ranks of
    /// `across`: the same shape, weighting, partition and device, with inner products, norms,
    /// distances, integrals and extrema ([`Space::max`], [`Space::min`]) summed (or taken)
    /// over the ranks, so that they are those of the whole distributed space. Every such
    /// reduction is collective (every rank calls it); see [`crate::distributed`].
    ///
    /// ```
    /// use rodl::distributed::{Across, SingleRank};
    /// let share = rodl::rn::<f64>(&[3])?.local_share(Across::new(SingleRank))?;
    /// assert_eq!(share.norm(&share.full(2.0)?)?, 12f64.sqrt());
    /// assert!(share.across().is_some());
    /// # Ok::<(), rodl::Error>(())
    /// ```
    ///
    /// Errors for a product space (make shares of its parts and their product instead).
    pub fn local_share(&self, across: Across) -> Result<Self> {
        let t = self.tensor()?;
        Ok(Space::from_kind(SpaceKind::Tensor(TensorSpec {
            across: Some(across),
            ..t.clone()
        })))
    }

    /// One rank's part of this tensor space, the cells `cells` along `axis`, as a share over
    /// `across` ([`Space::local_share`]): the shape cut to `cells` (which may be empty: a rank
    /// with nothing), the whole space's weight, the partition of those cells, the same device.
    ///
    /// ```
    /// use rodl::distributed::{Across, SingleRank};
    /// let s = rodl::uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[4, 6])?;
    /// let part = s.local_part(1, 2..5, Across::new(SingleRank))?;
    /// assert_eq!(part.shape()?, &[4, 3]);
    /// assert_eq!(part.min_pt()?, &[0.0, 2.0 / 6.0]);
    /// let none = s.local_part(0, 4..4, Across::new(SingleRank))?;
    /// assert_eq!(none.size(), 0);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn local_part(
        &self,
        axis: usize,
        cells: std::ops::Range<usize>,
        across: Across,
    ) -> Result<Self> {
        let t = self.tensor()?;
        let n = *t
            .shape
            .get(axis)
            .ok_or_else(|| Error::invalid(format!("local_part: axis {axis} of {self}")))?;
        if cells.start > cells.end || cells.end > n {
            return Err(Error::invalid(format!(
                "local_part: the cells {cells:?} are not within 0..{n} of axis {axis} of {self}"
            )));
        }
        let mut shape = t.shape.clone();
        shape[axis] = cells.len();
        let partition = match &t.partition {
            Some(p) if !cells.is_empty() => Some(p.cells(axis, cells)?),
            _ => None,
        };
        Space::share_of_shape(&shape, t.weight, partition, t.device, across)
    }

    /// A rank's share of `shape` (which may have empty axes: a rank with no part of the
    /// data), weight `weight`, on `device`, with `partition` when it has one (of `shape`).
    fn share_of_shape(
        shape: &[usize],
        weight: f64,
        partition: Option<UniformPartition>,
        device: Device,
        across: Across,
    ) -> Result<Self> {
        if shape.is_empty() || !(weight.is_finite() && weight > 0.0) {
            return Err(Error::invalid(format!(
                "a share space needs at least one axis and a positive weight, got {shape:?} and \
                 {weight}"
            )));
        }
        if !shape.contains(&0) {
            check_shape(shape)?;
        }
        if partition.as_ref().is_some_and(|p| p.shape() != shape) {
            return Err(Error::invalid("share space: the partition's shape differs"));
        }
        Ok(Space::from_kind(SpaceKind::Tensor(TensorSpec {
            shape: shape.to_vec(),
            weight,
            partition,
            device,
            across: Some(across),
        })))
    }

    /// The communicator of a rank's share ([`Space::local_share`]); for a product space, that
    /// of its shared parts. `None` for an ordinary (whole, or replicated) space.
    pub fn across(&self) -> Option<&Across> {
        match &*self.inner {
            SpaceKind::Tensor(t) => t.across.as_ref(),
            SpaceKind::Product(p) => p.iter().find_map(|s| s.across()),
        }
    }

    /// The product space `parts[0] × parts[1] × …`; its inner product is the sum of the parts'.
    ///
    /// All parts must live on the same device.
    pub fn product(parts: Vec<Space<T>>) -> Result<Self> {
        if parts.is_empty() {
            return Err(Error::invalid("a product space needs at least one part"));
        }
        let d = parts[0].device();
        if let Some(a) = parts.iter().find_map(|p| p.across()) {
            if let Some(p) = parts.iter().find(|p| p.across().is_some_and(|b| b != a)) {
                return Err(Error::Unsupported(format!(
                    "a product space of shares over different communicators ({p} and a part \
                     over {a:?})"
                )));
            }
        }
        if let Some(p) = parts.iter().find(|p| p.device() != d) {
            return Err(Error::device_mismatch("product space", d, p.device()));
        }
        Ok(Space::from_kind(SpaceKind::Product(parts)))
    }

    /// The power space `self^n`.
    pub fn power(&self, n: usize) -> Result<Self> {
        crate::memory::check_host_alloc(
            &format!("a power space of {n} parts"),
            n,
            std::mem::size_of::<Self>(),
        )?;
        Space::product(vec![self.clone(); n])
    }

    /// The same space on another device (a new space; this one is unchanged).
    ///
    /// Errors when the device cannot be used (see [`Device::check_available`]).
    pub fn with_device(&self, device: Device) -> Result<Self> {
        device.check_available()?;
        Ok(match &*self.inner {
            SpaceKind::Tensor(t) => Space::from_kind(SpaceKind::Tensor(TensorSpec {
                device,
                ..t.clone()
            })),
            SpaceKind::Product(p) => Space::from_kind(SpaceKind::Product(
                p.iter()
                    .map(|s| s.with_device(device))
                    .collect::<Result<Vec<_>>>()?,
            )),
        })
    }

    /// The same space with another scalar type.
    pub fn with_scalar<U: Scalar>(&self) -> Space<U> {
        match &*self.inner {
            SpaceKind::Tensor(t) => Space::from_kind(SpaceKind::Tensor(t.clone())),
            SpaceKind::Product(p) => Space::from_kind(SpaceKind::Product(
                p.iter().map(|s| s.with_scalar::<U>()).collect(),
            )),
        }
    }

    /// The device this space's elements live on.
    pub fn device(&self) -> Device {
        match &*self.inner {
            SpaceKind::Tensor(t) => t.device,
            SpaceKind::Product(p) => p[0].device(),
        }
    }

    /// Whether this is a product space.
    pub fn is_product(&self) -> bool {
        matches!(&*self.inner, SpaceKind::Product(_))
    }

    /// The parts of a product space.
    pub fn parts(&self) -> Result<&[Space<T>]> {
        match &*self.inner {
            SpaceKind::Product(p) => Ok(p),
            SpaceKind::Tensor(_) => Err(Error::invalid(format!("{self} is not a product space"))),
        }
    }

    /// One part of a product space.
    pub fn part(&self, i: usize) -> Result<&Space<T>> {
        let p = self.parts()?;
        p.get(i)
            .ok_or_else(|| Error::invalid(format!("part {i} out of range for {} parts", p.len())))
    }

    fn tensor(&self) -> Result<&TensorSpec> {
        match &*self.inner {
            SpaceKind::Tensor(t) => Ok(t),
            SpaceKind::Product(_) => Err(Error::invalid(format!(
                "{self} is a product space, not a tensor space"
            ))),
        }
    }

    /// Shape of a tensor space.
    pub fn shape(&self) -> Result<&[usize]> {
        Ok(&self.tensor()?.shape)
    }

    /// The shape of `batch` elements as one tensor, the batch axis first: `[batch, …shape]`
    /// for a tensor space, `[batch, parts, …shape]` for a power of a tensor space (each
    /// entry's parts one after the other, as `rodl.torch` lays them out). Errors for other
    /// product spaces, which have no batched form.
    ///
    /// ```
    /// use rodl::uniform_discr;
    /// let s = uniform_discr::<f32>(&[0.0, 0.0], &[1.0, 1.0], &[4, 5])?;
    /// assert_eq!(s.batch_shape(3)?, vec![3, 4, 5]);
    /// assert_eq!(s.power(2)?.batch_shape(3)?, vec![3, 2, 4, 5]);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn batch_shape(&self, batch: usize) -> Result<Vec<usize>> {
        let mut shape = vec![batch];
        match &*self.inner {
            SpaceKind::Tensor(t) => shape.extend_from_slice(&t.shape),
            SpaceKind::Product(p) => {
                let first = p
                    .first()
                    .filter(|f| !f.is_product())
                    .ok_or_else(|| Error::Unsupported(format!("{self} has no batched form")))?;
                if p.iter().any(|q| q != first) {
                    return Err(Error::Unsupported(format!(
                        "{self} has no batched form (its parts differ)"
                    )));
                }
                shape.push(p.len());
                shape.extend_from_slice(first.shape()?);
            }
        }
        Ok(shape)
    }

    /// Number of axes of a tensor space.
    pub fn ndim(&self) -> Result<usize> {
        Ok(self.tensor()?.shape.len())
    }

    /// Total number of scalars in an element (summed over parts for a product space).
    pub fn size(&self) -> usize {
        match &*self.inner {
            SpaceKind::Tensor(t) => t.shape.iter().product(),
            SpaceKind::Product(p) => p.iter().map(|s| s.size()).sum(),
        }
    }

    /// The constant weight of a tensor space's inner product (1 for `rn`, the cell volume for
    /// `uniform_discr`).
    pub fn weight(&self) -> Result<f64> {
        Ok(self.tensor()?.weight)
    }

    /// The partition of a discretised space.
    pub fn partition(&self) -> Result<&UniformPartition> {
        self.tensor()?
            .partition
            .as_ref()
            .ok_or_else(|| Error::invalid(format!("{self} is not a discretised space")))
    }

    /// Cell side lengths of a discretised space.
    pub fn cell_sides(&self) -> Result<Vec<f64>> {
        Ok(self.partition()?.cell_sides())
    }

    /// Cell volume of a discretised space.
    pub fn cell_volume(&self) -> Result<f64> {
        Ok(self.partition()?.cell_volume())
    }

    /// Lower corner of a discretised space's domain.
    pub fn min_pt(&self) -> Result<&[f64]> {
        Ok(self.partition()?.min_pt())
    }

    /// Upper corner of a discretised space's domain.
    pub fn max_pt(&self) -> Result<&[f64]> {
        Ok(self.partition()?.max_pt())
    }

    /// The cell midpoints of a discretised space, one row per point in C order (`size × ndim`).
    pub fn points(&self) -> Result<ndarray::Array2<f64>> {
        let p = self.partition()?;
        let coords = (0..p.ndim())
            .map(|a| p.coord_vector(a))
            .collect::<Result<Vec<_>>>()?;
        let n = self.size();
        let d = p.ndim();
        crate::memory::check_host_array(&[n, d], std::mem::size_of::<f64>())?;
        let mut out = ndarray::Array2::zeros((n, d));
        for (k, idx) in ndarray::indices(p.shape()).into_iter().enumerate() {
            for a in 0..d {
                out[[k, a]] = coords[a][idx[a]];
            }
        }
        Ok(out)
    }

    // ---------------------------------------------------------------- element construction

    /// An element filled with `value`.
    pub fn full(&self, value: T) -> Result<Element<T>> {
        match &*self.inner {
            SpaceKind::Tensor(t) => Ok(Element::tensor(Storage::full(t.device, &t.shape, value)?)),
            SpaceKind::Product(p) => Ok(Element::product(
                p.iter().map(|s| s.full(value)).collect::<Result<_>>()?,
            )),
        }
    }

    /// The zero element.
    pub fn zero(&self) -> Result<Element<T>> {
        self.full(T::zero())
    }

    /// The element that is 1 everywhere.
    pub fn one(&self) -> Result<Element<T>> {
        self.full(T::one())
    }

    /// An element from host data (copied to the space's device when that is a GPU).
    pub fn element(&self, data: ArrayD<T>) -> Result<Element<T>> {
        let t = self.tensor()?;
        if data.shape() != t.shape.as_slice() {
            return Err(Error::shape("Space::element", &t.shape, data.shape()));
        }
        Ok(Element::tensor(Storage::from_host(t.device, data)?))
    }

    /// An element from a flat vector in C order.
    pub fn element_from_vec(&self, data: Vec<T>) -> Result<Element<T>> {
        let shape = self.shape()?.to_vec();
        let n: usize = shape.iter().product();
        if data.len() != n {
            return Err(Error::shape("Space::element_from_vec", &[n], &[data.len()]));
        }
        let a = ArrayD::from_shape_vec(IxDyn(&shape), data)
            .map_err(|e| Error::invalid(e.to_string()))?;
        self.element(a)
    }

    /// A product-space element from its parts (each checked against its part space).
    pub fn product_element(&self, parts: Vec<Element<T>>) -> Result<Element<T>> {
        let e = Element::product(parts);
        self.check_member(&e, "Space::product_element")?;
        Ok(e)
    }

    /// The discretisation of a function: `f` gets the coordinates of each cell midpoint.
    pub fn element_from_fn(&self, f: impl Fn(&[f64]) -> T) -> Result<Element<T>> {
        let p = self.partition()?;
        let coords = (0..p.ndim())
            .map(|a| p.coord_vector(a))
            .collect::<Result<Vec<_>>>()?;
        crate::memory::check_host_array(p.shape(), std::mem::size_of::<T>())?;
        let mut pt = vec![0.0; p.ndim()];
        let a = ArrayD::from_shape_fn(IxDyn(p.shape()), |idx| {
            for (k, c) in pt.iter_mut().enumerate() {
                *c = coords[k][idx[k]];
            }
            f(&pt)
        });
        self.element(a)
    }

    /// An element with independent standard-normal entries.
    pub fn random_normal<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<Element<T>> {
        match &*self.inner {
            SpaceKind::Tensor(t) => {
                crate::memory::check_host_array(&t.shape, std::mem::size_of::<T>())?;
                let a = ArrayD::from_shape_simple_fn(IxDyn(&t.shape), || {
                    T::of(rng.sample::<f64, _>(StandardNormal))
                });
                self.element(a)
            }
            SpaceKind::Product(p) => Ok(Element::product(
                p.iter()
                    .map(|s| s.random_normal(rng))
                    .collect::<Result<_>>()?,
            )),
        }
    }

    /// Whether `x` has this space's structure, shape and device.
    pub fn contains(&self, x: &Element<T>) -> bool {
        match (&*self.inner, &x.kind) {
            (SpaceKind::Tensor(t), ElementKind::Tensor(d)) => {
                t.device == d.device() && d.shape() == t.shape.as_slice()
            }
            (SpaceKind::Product(p), ElementKind::Product(e)) => {
                p.len() == e.len() && p.iter().zip(e).all(|(s, x)| s.contains(x))
            }
            _ => false,
        }
    }

    /// Errors unless `x` belongs to this space. `context` names the check in the error; it is
    /// formatted only when the check fails, so a hot path can pass
    /// `format_args!("{name}: input")` at no cost.
    ///
    /// ```
    /// let s = rodl::rn::<f64>(&[3])?;
    /// let x = rodl::rn::<f64>(&[4])?.zero()?;
    /// let name = "my operator";
    /// let e = s.check_member(&x, format_args!("{name}: input")).unwrap_err();
    /// assert!(e.to_string().contains("my operator: input"));
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn check_member(&self, x: &Element<T>, context: impl fmt::Display) -> Result<()> {
        if self.contains(x) {
            return Ok(());
        }
        if x.device() != self.device() {
            return Err(Error::device_mismatch(context, self.device(), x.device()));
        }
        Err(Error::SpaceMismatch {
            context: context.to_string(),
            expected: self.to_string(),
            got: describe_element(x),
        })
    }
}

fn describe_element<T: Scalar>(x: &Element<T>) -> String {
    match &x.kind {
        ElementKind::Product(p) => format!(
            "product element with parts [{}]",
            p.iter()
                .map(describe_element)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => format!(
            "tensor of shape {:?} on {}",
            x.shape().unwrap_or(&[]),
            x.device()
        ),
    }
}

impl<T: Scalar> fmt::Display for Space<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.inner {
            SpaceKind::Tensor(t) => {
                match &t.partition {
                    Some(p) => write!(
                        f,
                        "uniform_discr({:?}, {:?}, {:?})",
                        p.min_pt(),
                        p.max_pt(),
                        p.shape()
                    )?,
                    None if t.weight == 1.0 => write!(f, "rn({:?})", t.shape)?,
                    None => write!(f, "rn({:?}, weight={})", t.shape, t.weight)?,
                }
                write!(f, "<{}>", T::NAME)?;
                if t.device != Device::Cpu {
                    write!(f, " on {}", t.device)?;
                }
                if let Some(a) = &t.across {
                    write!(f, " (share of rank {} of {})", a.rank(), a.size())?;
                }
                Ok(())
            }
            SpaceKind::Product(p) => {
                if p.iter().all(|s| *s == p[0]) {
                    write!(f, "({})^{}", p[0], p.len())
                } else {
                    write!(
                        f,
                        "({})",
                        p.iter()
                            .map(|s| s.to_string())
                            .collect::<Vec<_>>()
                            .join(" × ")
                    )
                }
            }
        }
    }
}

impl<T: Scalar> fmt::Debug for Space<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Space({self})")
    }
}
