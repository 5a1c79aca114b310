//! Elements of spaces: data stored on the space's device.

use std::fmt;

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD};

use crate::backend::cuda::DeviceTensor;
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
    Host(ArrayD<T>),
    Cuda(DeviceTensor<T>),
    Product(Vec<Element<T>>),
}

impl<T: Scalar> Element<T> {
    pub(crate) fn host(a: ArrayD<T>) -> Self {
        let a = if a.is_standard_layout() {
            a
        } else {
            a.as_standard_layout().into_owned()
        };
        Element {
            kind: ElementKind::Host(a),
        }
    }

    pub(crate) fn product(parts: Vec<Element<T>>) -> Self {
        Element {
            kind: ElementKind::Product(parts),
        }
    }

    pub(crate) fn cuda(t: DeviceTensor<T>) -> Self {
        Element {
            kind: ElementKind::Cuda(t),
        }
    }

    /// Whether this is an element of a product space.
    pub fn is_product(&self) -> bool {
        matches!(self.kind, ElementKind::Product(_))
    }

    /// The device the data lives on (for a product element: that of its first part).
    pub fn device(&self) -> Device {
        match &self.kind {
            ElementKind::Host(_) => Device::Cpu,
            ElementKind::Cuda(t) => t.device(),
            ElementKind::Product(p) => p.first().map_or(Device::Cpu, |e| e.device()),
        }
    }

    /// The tensor shape, or `None` for a product element.
    pub fn shape(&self) -> Option<&[usize]> {
        match &self.kind {
            ElementKind::Host(a) => Some(a.shape()),
            ElementKind::Cuda(t) => Some(t.shape()),
            ElementKind::Product(_) => None,
        }
    }

    /// Read access to a host tensor's data.
    ///
    /// Errors for product elements and for elements on a GPU (use [`Element::to_host`]).
    pub fn as_array(&self) -> Result<ArrayViewD<'_, T>> {
        match &self.kind {
            ElementKind::Host(a) => Ok(a.view()),
            _ => Err(self.not_host("as_array")),
        }
    }

    /// Write access to a host tensor's data.
    pub fn as_array_mut(&mut self) -> Result<ArrayViewMutD<'_, T>> {
        if !matches!(self.kind, ElementKind::Host(_)) {
            return Err(self.not_host("as_array_mut"));
        }
        match &mut self.kind {
            ElementKind::Host(a) => Ok(a.view_mut()),
            _ => Err(Error::invalid("as_array_mut: not a host tensor")),
        }
    }

    /// The host tensor's data as a flat slice in C order.
    pub fn as_slice(&self) -> Result<&[T]> {
        match &self.kind {
            ElementKind::Host(a) => a
                .as_slice()
                .ok_or_else(|| Error::invalid("element data is not contiguous")),
            _ => Err(self.not_host("as_slice")),
        }
    }

    /// The host tensor's data as a mutable flat slice in C order.
    pub fn as_slice_mut(&mut self) -> Result<&mut [T]> {
        if !matches!(self.kind, ElementKind::Host(_)) {
            return Err(self.not_host("as_slice_mut"));
        }
        match &mut self.kind {
            ElementKind::Host(a) => a
                .as_slice_mut()
                .ok_or_else(|| Error::invalid("element data is not contiguous")),
            _ => Err(Error::invalid("as_slice_mut: not a host tensor")),
        }
    }

    /// Consumes a host tensor element and returns its array.
    pub fn into_array(self) -> Result<ArrayD<T>> {
        match self.kind {
            ElementKind::Host(a) => Ok(a),
            ElementKind::Cuda(_) => Err(Error::invalid(
                "element lives on a GPU: call to_host() before into_array()",
            )),
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
            ElementKind::Host(a) => Element::host(a.clone()),
            ElementKind::Cuda(t) => Element::cuda(t.try_clone()?),
            ElementKind::Product(p) => Element::product(
                p.iter()
                    .map(|e| e.try_clone())
                    .collect::<Result<Vec<_>>>()?,
            ),
        })
    }

    /// A copy of the data in host memory (explicit device → host transfer).
    pub fn to_host(&self) -> Result<Self> {
        self.to_device(Device::Cpu)
    }

    /// A copy of the data on `device` (explicit transfer; a copy also when already there).
    pub fn to_device(&self, device: Device) -> Result<Self> {
        Ok(match (&self.kind, device) {
            (ElementKind::Host(a), Device::Cpu) => Element::host(a.clone()),
            (ElementKind::Host(a), Device::Cuda(id)) => {
                Element::cuda(DeviceTensor::from_host(id, a.view())?)
            }
            (ElementKind::Cuda(t), Device::Cpu) => Element::host(t.to_host()?),
            (ElementKind::Cuda(t), Device::Cuda(id)) => Element::cuda(t.to_device(id)?),
            (ElementKind::Product(p), d) => Element::product(
                p.iter()
                    .map(|e| e.to_device(d))
                    .collect::<Result<Vec<_>>>()?,
            ),
        })
    }

    /// The GPU tensor of a CUDA element (for backend dispatch inside the crate).
    pub(crate) fn cuda_tensor(&self, what: &str) -> Result<&DeviceTensor<T>> {
        match &self.kind {
            ElementKind::Cuda(t) => Ok(t),
            _ => Err(self.not_cuda(what)),
        }
    }

    /// The GPU tensor of a CUDA element, mutable.
    pub(crate) fn cuda_tensor_mut(&mut self, what: &str) -> Result<&mut DeviceTensor<T>> {
        if !matches!(self.kind, ElementKind::Cuda(_)) {
            return Err(self.not_cuda(what));
        }
        match &mut self.kind {
            ElementKind::Cuda(t) => Ok(t),
            _ => Err(Error::invalid(format!("{what}: not a GPU tensor"))),
        }
    }

    /// The GPU tensors of a product element whose parts all live on a GPU.
    pub(crate) fn cuda_parts(&self, what: &str) -> Result<Vec<&DeviceTensor<T>>> {
        self.parts()?.iter().map(|p| p.cuda_tensor(what)).collect()
    }

    /// The GPU tensors of a product element whose parts all live on a GPU, mutable.
    pub(crate) fn cuda_parts_mut(&mut self, what: &str) -> Result<Vec<&mut DeviceTensor<T>>> {
        self.parts_mut()?
            .iter_mut()
            .map(|p| p.cuda_tensor_mut(what))
            .collect()
    }

    fn not_cuda(&self, what: &str) -> Error {
        Error::DeviceMismatch {
            context: what.into(),
            expected: "a CUDA device".into(),
            got: match &self.kind {
                ElementKind::Product(_) => "a product-space element".into(),
                _ => self.device().to_string(),
            },
        }
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
            ElementKind::Host(a) => write!(f, "Element(cpu, {a:?})"),
            ElementKind::Cuda(t) => write!(f, "Element({}, shape {:?})", t.device(), t.shape()),
            ElementKind::Product(p) => f.debug_list().entries(p.iter()).finish(),
        }
    }
}
