//! Elements of spaces: data stored on the space's device.

use std::fmt;

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD};

use crate::backend::Reduction;
use crate::storage::Storage;
use crate::{Device, Error, Result, Scalar};

/// An element of a [`Space`](crate::Space): a tensor on the space's device, or one element per
/// part of a product space.
///
/// Elements are made by their space ([`Space::zero`](crate::Space::zero),
/// [`Space::element`](crate::Space::element), …) and combined through it
/// ([`Space::lincomb`](crate::Space::lincomb), …). They hold data only; the space holds the
/// geometry and the inner product.
///
/// ```
/// use rodl::{rn, Space};
/// let x = rn::<f64>(&[2, 3])?.one()?;
/// assert_eq!(x.as_array()?.sum(), 6.0);
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct Element<T: Scalar> {
    pub(crate) kind: ElementKind<T>,
}

pub(crate) enum ElementKind<T: Scalar> {
    Tensor(Storage<T>),
    Product(Vec<Element<T>>),
}

impl<T: Scalar> Element<T> {
    pub(crate) fn tensor(s: Storage<T>) -> Self {
        Element {
            kind: ElementKind::Tensor(s),
        }
    }

    pub(crate) fn product(parts: Vec<Element<T>>) -> Self {
        Element {
            kind: ElementKind::Product(parts),
        }
    }

    /// Whether this is an element of a product space.
    pub fn is_product(&self) -> bool {
        matches!(self.kind, ElementKind::Product(_))
    }

    /// The device the data lives on (for a product element: that of its first part).
    pub fn device(&self) -> Device {
        match &self.kind {
            ElementKind::Tensor(s) => s.device(),
            ElementKind::Product(p) => p.first().map_or(Device::Cpu, |e| e.device()),
        }
    }

    /// The tensor shape; errors for a product element (as [`Space::shape`](crate::Space::shape)
    /// does for a product space).
    pub fn shape(&self) -> Result<&[usize]> {
        match &self.kind {
            ElementKind::Tensor(s) => Ok(s.shape()),
            ElementKind::Product(_) => Err(Error::invalid(
                "shape() needs a tensor element, got a product-space element",
            )),
        }
    }

    /// The plain (unweighted) sum of all entries, over all parts of a product element,
    /// accumulated in f64. Runs on the element's device; for the weighted sum (the integral
    /// on a discretised space) use [`Space::integral`](crate::Space::integral).
    ///
    /// ```
    /// use rodl::{uniform_discr, Space};
    /// let s = uniform_discr::<f32>(&[0.0], &[2.0], &[4])?; // cells of width 0.5
    /// let x = s.element_from_vec(vec![1.0, -2.0, 3.5, 0.5])?;
    /// assert_eq!(x.sum()?, 3.0);
    /// assert_eq!(s.integral(&x)?, 1.5);
    /// assert_eq!((x.min()?, x.max()?), (-2.0, 3.5));
    /// let pair = Space::product(vec![s.clone(), s.clone()])?.product_element(vec![x.try_clone()?, s.one()?])?;
    /// assert_eq!((pair.sum()?, pair.min()?, pair.max()?), (7.0, -2.0, 3.5));
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn sum(&self) -> Result<f64> {
        match &self.kind {
            ElementKind::Tensor(s) => s.reduce(Reduction::Sum, s),
            ElementKind::Product(p) => p.iter().map(|e| e.sum()).sum(),
        }
    }

    /// The smallest entry (over all parts of a product element), as f64; NaN when an entry is
    /// NaN. Needs host data: errors for an element on a GPU (call [`Element::to_host`] first).
    pub fn min(&self) -> Result<f64> {
        self.extremum("min", f64::INFINITY, f64::min)
    }

    /// The largest entry (over all parts of a product element), as f64; NaN when an entry is
    /// NaN. Needs host data: errors for an element on a GPU (call [`Element::to_host`] first).
    pub fn max(&self) -> Result<f64> {
        self.extremum("max", f64::NEG_INFINITY, f64::max)
    }

    fn extremum(&self, what: &str, start: f64, pick: fn(f64, f64) -> f64) -> Result<f64> {
        match &self.kind {
            ElementKind::Tensor(s) => {
                let h = s.host().ok_or_else(|| self.not_host(what))?;
                let mut acc = start;
                for v in h.slice() {
                    let v = v.f64();
                    if v.is_nan() {
                        return Ok(f64::NAN);
                    }
                    acc = pick(acc, v);
                }
                Ok(acc)
            }
            ElementKind::Product(p) => {
                let mut acc = start;
                for e in p {
                    let v = e.extremum(what, start, pick)?;
                    if v.is_nan() {
                        return Ok(f64::NAN);
                    }
                    acc = pick(acc, v);
                }
                Ok(acc)
            }
        }
    }

    /// The storage of a tensor element (for backend dispatch inside the crate).
    pub(crate) fn storage(&self, what: &str) -> Result<&Storage<T>> {
        match &self.kind {
            ElementKind::Tensor(s) => Ok(s),
            ElementKind::Product(_) => Err(Error::invalid(format!(
                "{what}: needs a tensor element, got a product-space element"
            ))),
        }
    }

    /// The storage of a tensor element, mutable.
    pub(crate) fn storage_mut(&mut self, what: &str) -> Result<&mut Storage<T>> {
        match &mut self.kind {
            ElementKind::Tensor(s) => Ok(s),
            ElementKind::Product(_) => Err(Error::invalid(format!(
                "{what}: needs a tensor element, got a product-space element"
            ))),
        }
    }

    /// The storages of a product element's parts.
    pub(crate) fn part_storages(&self, what: &str) -> Result<Vec<&Storage<T>>> {
        self.parts()?.iter().map(|p| p.storage(what)).collect()
    }

    /// The storages of a product element's parts, mutable.
    pub(crate) fn part_storages_mut(&mut self, what: &str) -> Result<Vec<&mut Storage<T>>> {
        self.parts_mut()?
            .iter_mut()
            .map(|p| p.storage_mut(what))
            .collect()
    }

    /// Read access to a host tensor's data.
    ///
    /// Errors for product elements and for elements on a GPU (use [`Element::to_host`]).
    pub fn as_array(&self) -> Result<ArrayViewD<'_, T>> {
        match &self.kind {
            ElementKind::Tensor(s) => s.host_view().ok_or_else(|| self.not_host("as_array")),
            ElementKind::Product(_) => Err(self.not_host("as_array")),
        }
    }

    /// Write access to a host tensor's data.
    pub fn as_array_mut(&mut self) -> Result<ArrayViewMutD<'_, T>> {
        let err = self.not_host("as_array_mut");
        match &mut self.kind {
            ElementKind::Tensor(s) => s.host_view_mut().ok_or(err),
            ElementKind::Product(_) => Err(err),
        }
    }

    /// The host tensor's data as a flat slice in C order.
    pub fn as_slice(&self) -> Result<&[T]> {
        match &self.kind {
            ElementKind::Tensor(s) => s
                .host()
                .map(|h| h.slice())
                .ok_or_else(|| self.not_host("as_slice")),
            ElementKind::Product(_) => Err(self.not_host("as_slice")),
        }
    }

    /// The host tensor's data as a mutable flat slice in C order.
    pub fn as_slice_mut(&mut self) -> Result<&mut [T]> {
        let err = self.not_host("as_slice_mut");
        match &mut self.kind {
            ElementKind::Tensor(s) => s.host_mut().map(|h| h.slice_mut()).ok_or(err),
            ElementKind::Product(_) => Err(err),
        }
    }

    /// Consumes a host tensor element and returns its array.
    pub fn into_array(self) -> Result<ArrayD<T>> {
        match self.kind {
            ElementKind::Tensor(s) => s.into_host().ok_or_else(|| {
                Error::invalid("element lives on a GPU: call to_host() before into_array()")
            }),
            ElementKind::Product(_) => Err(Error::invalid(
                "a product-space element has no single array: use into_parts()",
            )),
        }
    }

    /// The parts of a product-space element.
    pub fn parts(&self) -> Result<&[Element<T>]> {
        match &self.kind {
            ElementKind::Product(p) => Ok(p),
            _ => Err(Error::invalid("parts() needs a product-space element")),
        }
    }

    /// Mutable access to the parts of a product-space element.
    pub fn parts_mut(&mut self) -> Result<&mut [Element<T>]> {
        match &mut self.kind {
            ElementKind::Product(p) => Ok(p),
            _ => Err(Error::invalid("parts_mut() needs a product-space element")),
        }
    }

    /// One part of a product-space element.
    pub fn part(&self, i: usize) -> Result<&Element<T>> {
        let p = self.parts()?;
        let n = p.len();
        p.get(i)
            .ok_or_else(|| Error::invalid(format!("part {i} out of range for {n} parts")))
    }

    /// Consumes a product-space element and returns its parts.
    pub fn into_parts(self) -> Result<Vec<Element<T>>> {
        match self.kind {
            ElementKind::Product(p) => Ok(p),
            _ => Err(Error::invalid("into_parts() needs a product-space element")),
        }
    }

    /// A deep copy on the same device (may fail on GPU memory exhaustion).
    pub fn try_clone(&self) -> Result<Self> {
        Ok(match &self.kind {
            ElementKind::Tensor(s) => Element::tensor(s.try_clone()?),
            ElementKind::Product(p) => Element::product(
                p.iter()
                    .map(|e| e.try_clone())
                    .collect::<Result<Vec<_>>>()?,
            ),
        })
    }

    /// Copies the values `offset..offset + out.len()` of a tensor element (flat, in C order)
    /// into `out`, from host memory or a GPU (an explicit device → host transfer that returns
    /// when the values are in `out`): a large result taken out in pieces — written to a file
    /// piece by piece while the next is copied, say — without a whole host copy.
    ///
    /// Errors for product elements and for a range beyond the element.
    ///
    /// ```
    /// let x = rodl::rn::<f32>(&[2, 3])?.element_from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])?;
    /// let mut row = [0.0; 3];
    /// x.copy_range_to_slice(3, &mut row)?; // the second row
    /// assert_eq!(row, [4.0, 5.0, 6.0]);
    /// assert!(x.copy_range_to_slice(4, &mut row).is_err());
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn copy_range_to_slice(&self, offset: usize, out: &mut [T]) -> Result<()> {
        self.storage("copy_range_to_slice")?
            .copy_range_to(offset, out)
    }

    /// A copy of the data in host memory (explicit device → host transfer).
    pub fn to_host(&self) -> Result<Self> {
        self.to_device(Device::Cpu)
    }

    /// The element in host memory, without a copy when it already lives there (a GPU
    /// element's data are copied down). Use it instead of [`Element::to_host`] to take a
    /// result out of a computation: `to_host` always copies.
    ///
    /// ```
    /// let x = rodl::rn::<f32>(&[3])?.element_from_vec(vec![1.0, 2.0, 3.0])?;
    /// let before = x.as_slice()?.as_ptr();
    /// let h = x.into_host()?;
    /// assert_eq!(h.as_slice()?.as_ptr(), before); // moved, not copied
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn into_host(self) -> Result<Self> {
        match self.kind {
            ElementKind::Tensor(s) if s.device() == Device::Cpu => Ok(Element::tensor(s)),
            ElementKind::Tensor(s) => Ok(Element::tensor(s.to_device(Device::Cpu)?)),
            ElementKind::Product(p) => Ok(Element::product(
                p.into_iter()
                    .map(Element::into_host)
                    .collect::<Result<Vec<_>>>()?,
            )),
        }
    }

    /// A copy of the data on `device` (explicit transfer; a copy also when already there).
    pub fn to_device(&self, device: Device) -> Result<Self> {
        Ok(match (&self.kind, device) {
            (ElementKind::Tensor(s), d) => Element::tensor(s.to_device(d)?),
            (ElementKind::Product(p), d) => Element::product(
                p.iter()
                    .map(|e| e.to_device(d))
                    .collect::<Result<Vec<_>>>()?,
            ),
        })
    }

    fn not_host(&self, what: &str) -> Error {
        match &self.kind {
            ElementKind::Product(_) => Error::invalid(format!(
                "{what}() needs a tensor element, got a product-space element"
            )),
            _ => Error::invalid(format!(
                "{what}() needs host data but the element lives on {}: call to_host() first",
                self.device()
            )),
        }
    }
}

impl<T: Scalar> fmt::Debug for Element<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ElementKind::Tensor(s) => s.fmt(f),
            ElementKind::Product(p) => f.debug_list().entries(p.iter()).finish(),
        }
    }
}
