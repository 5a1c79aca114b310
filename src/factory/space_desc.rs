//! Device-free descriptions of spaces.

use std::fmt;

use crate::{weighted_rn, Device, Error, Result, Scalar, Space, UniformPartition};

/// A plain description of a space without a device or scalar type: what a factory needs to
/// build the space again on any device ([`SpaceDesc::build`]).
///
/// It mirrors the three kinds of [`Space`]: a tensor space ℝⁿ with a constant weight, a
/// discretised space on a uniform partition (weight = cell volume), and a product space.
/// [`SpaceDescExt::desc`] (or [`SpaceDesc::of`]) gives the description of an existing space;
/// building it on the space's device gives a space equal to the original.
///
/// ```
/// use rodl::factory::{SpaceDesc, SpaceDescExt};
/// use rodl::{uniform_discr, Device};
/// let space = uniform_discr::<f32>(&[0.0, 0.0], &[1.0, 2.0], &[4, 8])?;
/// let desc = space.desc();
/// assert_eq!(desc, SpaceDesc::uniform_discr(&[0.0, 0.0], &[1.0, 2.0], &[4, 8])?);
/// assert_eq!(desc.build::<f32>(Device::Cpu)?, space);
/// // A missing GPU is an error, not a panic:
/// assert!(desc.build::<f32>(Device::Cuda(7)).is_err());
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum SpaceDesc {
    /// The tensor space ℝⁿ of `shape` with inner product `weight · Σ xᵢ yᵢ` ([`crate::rn`],
    /// [`crate::weighted_rn`]).
    Tensor {
        /// Shape of an element.
        shape: Vec<usize>,
        /// Constant weight of the inner product.
        weight: f64,
    },
    /// The discretised space on a uniform partition ([`crate::uniform_discr`]).
    Discr(UniformPartition),
    /// The product of these spaces ([`Space::product`]).
    Product(Vec<SpaceDesc>),
}

impl SpaceDesc {
    /// ℝⁿ of `shape` with the plain inner product.
    pub fn rn(shape: &[usize]) -> Self {
        Self::weighted_rn(shape, 1.0)
    }

    /// ℝⁿ of `shape` with inner product `weight · Σ xᵢ yᵢ` (checked when built).
    pub fn weighted_rn(shape: &[usize], weight: f64) -> Self {
        SpaceDesc::Tensor {
            shape: shape.to_vec(),
            weight,
        }
    }

    /// The discretised space on `[min_pt, max_pt]` with `shape` cells.
    pub fn uniform_discr(min_pt: &[f64], max_pt: &[f64], shape: &[usize]) -> Result<Self> {
        Ok(SpaceDesc::Discr(UniformPartition::new(
            min_pt, max_pt, shape,
        )?))
    }

    /// The product of `parts` (checked when built).
    pub fn product(parts: Vec<SpaceDesc>) -> Self {
        SpaceDesc::Product(parts)
    }

    /// The power `self^n`.
    pub fn power(&self, n: usize) -> Self {
        SpaceDesc::Product(vec![self.clone(); n])
    }

    /// The description of `space` (its device and scalar type are dropped).
    pub fn of<T: Scalar>(space: &Space<T>) -> Self {
        if let Ok(parts) = space.parts() {
            return SpaceDesc::Product(parts.iter().map(Self::of).collect());
        }
        if let Ok(p) = space.partition() {
            return SpaceDesc::Discr(p.clone());
        }
        SpaceDesc::Tensor {
            shape: space.shape().map(|s| s.to_vec()).unwrap_or_default(),
            weight: space.weight().unwrap_or(1.0),
        }
    }

    /// Builds the described space with scalar type `T` on `device`.
    ///
    /// Errors when the description is invalid (empty shape, bad weight, empty product) or the
    /// device cannot be used (see [`Device::check_available`]).
    pub fn build<T: Scalar>(&self, device: Device) -> Result<Space<T>> {
        let host = self.build_host::<T>()?;
        if device == Device::Cpu {
            Ok(host)
        } else {
            host.with_device(device)
        }
    }

    fn build_host<T: Scalar>(&self) -> Result<Space<T>> {
        match self {
            SpaceDesc::Tensor { shape, weight } => weighted_rn(shape, *weight),
            SpaceDesc::Discr(p) => Ok(Space::from_partition(p.clone())),
            SpaceDesc::Product(parts) => Space::product(
                parts
                    .iter()
                    .map(|p| p.build_host::<T>())
                    .collect::<Result<Vec<_>>>()?,
            ),
        }
    }

    /// Whether this describes a product space.
    pub fn is_product(&self) -> bool {
        matches!(self, SpaceDesc::Product(_))
    }

    /// The shape of a tensor or discretised space (`None` for a product space).
    pub fn shape(&self) -> Option<&[usize]> {
        match self {
            SpaceDesc::Tensor { shape, .. } => Some(shape),
            SpaceDesc::Discr(p) => Some(p.shape()),
            SpaceDesc::Product(_) => None,
        }
    }

    /// Total number of scalars in an element (summed over the parts of a product space).
    pub fn size(&self) -> usize {
        match self {
            SpaceDesc::Product(parts) => parts.iter().map(|p| p.size()).sum(),
            _ => self.shape().unwrap_or(&[]).iter().product(),
        }
    }

    /// The sizes of the tensor leaves of an element, depth first (one entry for a tensor space).
    pub fn leaf_sizes(&self) -> Vec<usize> {
        match self {
            SpaceDesc::Product(parts) => parts.iter().flat_map(|p| p.leaf_sizes()).collect(),
            _ => vec![self.size()],
        }
    }

    /// The batch space of `n` elements of this space: every tensor leaf gets a leading axis of
    /// length `n` whose inner-product weight is 1, so that `⟨x, y⟩ = Σ_b ⟨x_b, y_b⟩`.
    ///
    /// ℝⁿ of shape `s` and weight `w` becomes ℝⁿ of shape `[n, s…]` and weight `w`; the
    /// discretised space on `[min, max]` becomes the one on `[[0, min…], [n, max…]]` with
    /// `[n, shape…]` cells (unit cells along the batch axis); a product becomes the product of
    /// the batched parts.
    ///
    /// ```
    /// use rodl::factory::SpaceDesc;
    /// use rodl::Device;
    /// let d = SpaceDesc::uniform_discr(&[-1.0], &[1.0], &[4])?.batched(3)?;
    /// let s = d.build::<f64>(Device::Cpu)?;
    /// assert_eq!(s.shape()?, &[3, 4]);
    /// assert_eq!(s.weight()?, 0.5);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn batched(&self, n: usize) -> Result<SpaceDesc> {
        if n == 0 {
            return Err(Error::invalid("a batch needs at least one element"));
        }
        Ok(match self {
            SpaceDesc::Tensor { shape, weight } => {
                let mut s = vec![n];
                s.extend_from_slice(shape);
                SpaceDesc::Tensor {
                    shape: s,
                    weight: *weight,
                }
            }
            SpaceDesc::Discr(p) => {
                let mut lo = vec![0.0];
                let mut hi = vec![n as f64];
                let mut s = vec![n];
                lo.extend_from_slice(p.min_pt());
                hi.extend_from_slice(p.max_pt());
                s.extend_from_slice(p.shape());
                SpaceDesc::Discr(UniformPartition::new(&lo, &hi, &s)?)
            }
            SpaceDesc::Product(parts) => SpaceDesc::Product(
                parts
                    .iter()
                    .map(|p| p.batched(n))
                    .collect::<Result<Vec<_>>>()?,
            ),
        })
    }
}

impl fmt::Display for SpaceDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpaceDesc::Tensor { shape, weight } if *weight == 1.0 => write!(f, "rn({shape:?})"),
            SpaceDesc::Tensor { shape, weight } => write!(f, "rn({shape:?}, weight={weight})"),
            SpaceDesc::Discr(p) => write!(
                f,
                "uniform_discr({:?}, {:?}, {:?})",
                p.min_pt(),
                p.max_pt(),
                p.shape()
            ),
            SpaceDesc::Product(parts) => {
                if !parts.is_empty() && parts.iter().all(|p| *p == parts[0]) {
                    write!(f, "({})^{}", parts[0], parts.len())
                } else {
                    let s: Vec<String> = parts.iter().map(|p| p.to_string()).collect();
                    write!(f, "({})", s.join(" × "))
                }
            }
        }
    }
}

/// Gives a [`Space`] its device-free description: `space.desc()`.
pub trait SpaceDescExt {
    /// The description of this space, without device or scalar type.
    fn desc(&self) -> SpaceDesc;
}

impl<T: Scalar> SpaceDescExt for Space<T> {
    fn desc(&self) -> SpaceDesc {
        SpaceDesc::of(self)
    }
}

/// Errors unless `space` is described by `desc` and lives on `device` (or, with `host_ok`, on
/// the host).
pub(crate) fn check_space<T: Scalar>(
    space: &Space<T>,
    desc: &SpaceDesc,
    device: Device,
    host_ok: bool,
    context: &str,
) -> Result<()> {
    if space.device() != device && !(host_ok && space.device() == Device::Cpu) {
        return Err(Error::device_mismatch(context, device, space.device()));
    }
    let got = SpaceDesc::of(space);
    if got != *desc {
        return Err(Error::SpaceMismatch {
            context: context.into(),
            expected: desc.to_string(),
            got: got.to_string(),
        });
    }
    Ok(())
}
