//! The data of one tensor element on its device — the one place that matches host against
//! CUDA storage.
//!
//! [`Storage`] is an enum over the backends' tensor types ([`HostTensor`], [`DeviceTensor`]);
//! each operation forwards to the backend traits when all operands live on the same backend,
//! and is a [`Error::DeviceMismatch`] otherwise (an element is never copied silently). Spaces
//! check shapes and recurse over product parts; they reach the data only through this type.

use std::fmt;

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD};

use crate::backend::cuda::DeviceTensor;
use crate::backend::host::HostTensor;
use crate::backend::{
    BackendStorage, Binary, DeviceBackend, Map2Op, MapOp, PointwiseBackend, Reduction,
    StencilBackend, Unary,
};
use crate::{Device, Error, Result, Scalar};

/// A tensor's data: in host memory or in the memory of one GPU.
pub(crate) enum Storage<T: Scalar> {
    /// Host memory (rayon).
    Host(HostTensor<T>),
    /// GPU memory (CUDA).
    Cuda(DeviceTensor<T>),
}

fn mix(what: &str) -> Error {
    Error::device_mismatch(
        what,
        "all operands on one device",
        "operands on different devices",
    )
}

/// The host tensors of `xs`, or `None` unless all live on the host.
fn hosts<'a, T: Scalar>(xs: &[&'a Storage<T>]) -> Option<Vec<&'a HostTensor<T>>> {
    xs.iter()
        .map(|x| match x {
            Storage::Host(h) => Some(h),
            Storage::Cuda(_) => None,
        })
        .collect()
}

/// The device tensors of `xs`, or `None` unless all live on a GPU.
fn cudas<'a, T: Scalar>(xs: &[&'a Storage<T>]) -> Option<Vec<&'a DeviceTensor<T>>> {
    xs.iter()
        .map(|x| match x {
            Storage::Cuda(d) => Some(d),
            Storage::Host(_) => None,
        })
        .collect()
}

impl<T: Scalar> Storage<T> {
    /// Host data on `device` (moved for the CPU, copied to a GPU).
    pub(crate) fn from_host(device: Device, a: ArrayD<T>) -> Result<Self> {
        match device {
            Device::Cpu => Ok(Storage::Host(HostTensor::new(a))),
            Device::Cuda(id) => Ok(Storage::Cuda(DeviceTensor::from_host(id, a.view())?)),
        }
    }

    /// A tensor of `shape` filled with `v` on `device`.
    pub(crate) fn full(device: Device, shape: &[usize], v: T) -> Result<Self> {
        match device {
            Device::Cpu => Ok(Storage::Host(HostTensor::full(shape, v)?)),
            Device::Cuda(id) => {
                let mut d = DeviceTensor::zeros(id, shape)?;
                if v != T::zero() {
                    d.fill(v)?;
                }
                Ok(Storage::Cuda(d))
            }
        }
    }

    /// The device the data lives on.
    pub(crate) fn device(&self) -> Device {
        match self {
            Storage::Host(h) => h.device(),
            Storage::Cuda(d) => d.device(),
        }
    }

    /// The tensor shape.
    pub(crate) fn shape(&self) -> &[usize] {
        match self {
            Storage::Host(h) => h.shape(),
            Storage::Cuda(d) => d.shape(),
        }
    }

    /// A deep copy on the same device.
    pub(crate) fn try_clone(&self) -> Result<Self> {
        Ok(match self {
            Storage::Host(h) => Storage::Host(h.try_clone()?),
            Storage::Cuda(d) => Storage::Cuda(d.try_clone()?),
        })
    }

    /// A copy on `device` (an explicit transfer; a copy also when already there).
    pub(crate) fn to_device(&self, device: Device) -> Result<Self> {
        Ok(match (self, device) {
            (Storage::Host(h), Device::Cpu) => Storage::Host(h.try_clone()?),
            (Storage::Host(h), Device::Cuda(id)) => {
                Storage::Cuda(DeviceTensor::from_host(id, h.view())?)
            }
            (Storage::Cuda(d), Device::Cpu) => Storage::Host(HostTensor::new(d.to_host()?)),
            (Storage::Cuda(d), Device::Cuda(id)) => Storage::Cuda(d.to_device(id)?),
        })
    }

    /// Copies the values `offset..offset + out.len()` (flat, C order) into `out`, from the
    /// host or a GPU; a range beyond the tensor is an error.
    pub(crate) fn copy_range_to(&self, offset: usize, out: &mut [T]) -> Result<()> {
        let len: usize = self.shape().iter().product();
        if offset.checked_add(out.len()).is_none_or(|end| end > len) {
            return Err(Error::invalid(format!(
                "cannot copy values {offset}..{} of a tensor of {len} values",
                offset.saturating_add(out.len())
            )));
        }
        match self {
            Storage::Host(h) => h.copy_range_to(offset, out),
            Storage::Cuda(d) => d.copy_range_to(offset, out),
        }
    }

    /// The host tensor, when the data lives on the host.
    pub(crate) fn host(&self) -> Option<&HostTensor<T>> {
        match self {
            Storage::Host(h) => Some(h),
            Storage::Cuda(_) => None,
        }
    }

    /// The host tensor, mutable, when the data lives on the host.
    pub(crate) fn host_mut(&mut self) -> Option<&mut HostTensor<T>> {
        match self {
            Storage::Host(h) => Some(h),
            Storage::Cuda(_) => None,
        }
    }

    /// The host array, when the data lives on the host.
    pub(crate) fn into_host(self) -> Option<ArrayD<T>> {
        match self {
            Storage::Host(h) => Some(h.into_array()),
            Storage::Cuda(_) => None,
        }
    }

    /// A read view of host data.
    pub(crate) fn host_view(&self) -> Option<ArrayViewD<'_, T>> {
        self.host().map(|h| h.view())
    }

    /// A write view of host data.
    pub(crate) fn host_view_mut(&mut self) -> Option<ArrayViewMutD<'_, T>> {
        self.host_mut().map(|h| h.view_mut())
    }

    /// Memory of another library on CUDA device `id` (see [`DeviceTensor::borrow_raw`]); give
    /// it back with [`Storage::release_borrowed`].
    ///
    /// # Safety
    /// As [`DeviceTensor::borrow_raw`].
    pub(crate) unsafe fn borrow_cuda(id: usize, ptr: u64, shape: &[usize]) -> Result<Self> {
        // SAFETY: forwarded to the caller.
        Ok(Storage::Cuda(unsafe {
            DeviceTensor::borrow_raw(id, ptr, shape)?
        }))
    }

    /// Gives borrowed device memory back without freeing it: its device address, or `None`
    /// for host data (which is dropped as usual).
    pub(crate) fn release_borrowed(self) -> Option<u64> {
        match self {
            Storage::Cuda(t) => Some(t.release_borrowed()),
            Storage::Host(_) => None,
        }
    }

    /// Runs `f` on GPU `id` with `x` and `out` there: device data stays where it is; host data
    /// is copied in, and the result copied out (the ODL-compatible path of a CUDA operator on
    /// host spaces). Operands on different devices, or on another GPU, are an error.
    pub(crate) fn on_gpu(
        id: usize,
        x: &Self,
        out: &mut Self,
        what: &str,
        f: impl FnOnce(&DeviceTensor<T>, &mut DeviceTensor<T>) -> Result<()>,
    ) -> Result<()> {
        let wrong = |x: &Self, out: &Self| {
            Error::device_mismatch(
                what,
                format!("cuda:{id} (or the host)"),
                format!("{} and {}", x.device(), out.device()),
            )
        };
        match (x, &mut *out) {
            (Storage::Cuda(a), Storage::Cuda(b)) => {
                if a.device() != Device::Cuda(id) || b.device() != Device::Cuda(id) {
                    return Err(wrong(x, out));
                }
                f(a, b)
            }
            (Storage::Host(a), Storage::Host(o)) => {
                let dev_in = DeviceTensor::from_host(id, a.view())?;
                let mut dev_out = DeviceTensor::<T>::zeros(id, o.shape())?;
                f(&dev_in, &mut dev_out)?;
                *o = HostTensor::new(dev_out.to_host()?);
                Ok(())
            }
            _ => Err(wrong(x, out)),
        }
    }

    /// `self = op(x, y)` elementwise.
    pub(crate) fn binary(&mut self, op: Binary<T>, x: &Self, y: &Self) -> Result<()> {
        match (self, x, y) {
            (Storage::Host(o), Storage::Host(x), Storage::Host(y)) => o.binary(op, x, y),
            (Storage::Cuda(o), Storage::Cuda(x), Storage::Cuda(y)) => o.binary(op, x, y),
            _ => Err(mix("vector operation")),
        }
    }

    /// `self[b·n + i] = factor[i] · x[b·n + i]` (`n`: the factor's length), for a batch.
    pub(crate) fn mul_repeated(&mut self, factor: &Self, x: &Self) -> Result<()> {
        match (self, factor, x) {
            (Storage::Host(o), Storage::Host(f), Storage::Host(x)) => o.mul_repeated(f, x),
            (Storage::Cuda(o), Storage::Cuda(f), Storage::Cuda(x)) => o.mul_repeated(f, x),
            _ => Err(mix("repeated multiplication")),
        }
    }

    /// `self = a x + b self`.
    pub(crate) fn axpby(&mut self, a: T, x: &Self, b: T) -> Result<()> {
        match (self, x) {
            (Storage::Host(o), Storage::Host(x)) => o.axpby(a, x, b),
            (Storage::Cuda(o), Storage::Cuda(x)) => o.axpby(a, x, b),
            _ => Err(mix("vector operation")),
        }
    }

    /// `self = op(x)` elementwise.
    pub(crate) fn unary(&mut self, op: Unary<T>, x: &Self) -> Result<()> {
        match (self, x) {
            (Storage::Host(o), Storage::Host(x)) => o.unary(op, x),
            (Storage::Cuda(o), Storage::Cuda(x)) => o.unary(op, x),
            _ => Err(mix("vector operation")),
        }
    }

    /// Sets every entry to `v`.
    pub(crate) fn fill(&mut self, v: T) -> Result<()> {
        match self {
            Storage::Host(o) => o.fill(v),
            Storage::Cuda(o) => o.fill(v),
        }
    }

    /// `self *= s`.
    pub(crate) fn scale_inplace(&mut self, s: T) -> Result<()> {
        match self {
            Storage::Host(o) => o.scale_inplace(s),
            Storage::Cuda(o) => o.scale_inplace(s),
        }
    }

    /// Unweighted reduction in f64 (`y` is ignored by `NormSq` and `Sum`).
    pub(crate) fn reduce(&self, op: Reduction, y: &Self) -> Result<f64> {
        match (self, y) {
            (Storage::Host(x), Storage::Host(y)) => x.reduce(op, y),
            (Storage::Cuda(x), Storage::Cuda(y)) => x.reduce(op, y),
            _ => Err(mix("vector operation")),
        }
    }

    /// `self = f(x)` elementwise.
    pub(crate) fn map(&mut self, op: MapOp, p: [T; 2], x: &Self) -> Result<()> {
        match (self, x) {
            (Storage::Host(o), Storage::Host(x)) => o.map(op, p, x),
            (Storage::Cuda(o), Storage::Cuda(x)) => o.map(op, p, x),
            _ => Err(mix("pointwise operation")),
        }
    }

    /// `self = f(self)` elementwise.
    pub(crate) fn map_inplace(&mut self, op: MapOp, p: [T; 2]) -> Result<()> {
        match self {
            Storage::Host(o) => o.map_inplace(op, p),
            Storage::Cuda(o) => o.map_inplace(op, p),
        }
    }

    /// `self = f(x, y)` elementwise.
    pub(crate) fn map2(&mut self, op: Map2Op, x: &Self, y: &Self) -> Result<()> {
        match (self, x, y) {
            (Storage::Host(o), Storage::Host(x), Storage::Host(y)) => o.map2(op, x, y),
            (Storage::Cuda(o), Storage::Cuda(x), Storage::Cuda(y)) => o.map2(op, x, y),
            _ => Err(mix("pointwise operation")),
        }
    }

    /// Forward differences of `self` along every axis into `outs` (weights `w = 1/h`).
    pub(crate) fn gradient(&self, outs: &mut [&mut Self], w: &[f64]) -> Result<()> {
        let mut host: Vec<&mut HostTensor<T>> = Vec::new();
        let mut cuda: Vec<&mut DeviceTensor<T>> = Vec::new();
        for o in outs.iter_mut() {
            match &mut **o {
                Storage::Host(h) => host.push(h),
                Storage::Cuda(d) => cuda.push(d),
            }
        }
        match self {
            Storage::Host(x) if cuda.is_empty() => x.gradient(&mut host, w),
            Storage::Cuda(x) if host.is_empty() => x.gradient(&mut cuda, w),
            _ => Err(mix("Gradient")),
        }
    }

    /// `out = Σ_k backward difference of parts[k] along k` (weights `w = 1/h`).
    pub(crate) fn divergence(parts: &[&Self], out: &mut Self, w: &[f64]) -> Result<()> {
        match out {
            Storage::Host(o) => {
                let p = hosts(parts).ok_or_else(|| mix("Divergence"))?;
                HostTensor::divergence(&p, o, w)
            }
            Storage::Cuda(o) => {
                let p = cudas(parts).ok_or_else(|| mix("Divergence"))?;
                DeviceTensor::divergence(&p, o, w)
            }
        }
    }

    /// The zero-padded Laplacian of `self` into `out` (weights `w = 1/h²`).
    pub(crate) fn laplacian(&self, out: &mut Self, w: &[f64], centre: f64) -> Result<()> {
        match (self, out) {
            (Storage::Host(x), Storage::Host(o)) => x.laplacian(o, w, centre),
            (Storage::Cuda(x), Storage::Cuda(o)) => x.laplacian(o, w, centre),
            _ => Err(mix("Laplacian")),
        }
    }

    /// The stencil `kind` of a batch (shapes as
    /// [`check_stencil_batch`](crate::backend::check_stencil_batch) checks), in one pass.
    pub(crate) fn stencil_batch(
        &self,
        kind: crate::backend::StencilBatch,
        out: &mut Self,
        w: &[f64],
        centre: f64,
    ) -> Result<()> {
        use crate::backend::StencilBatch as K;
        match (self, out) {
            (Storage::Host(x), Storage::Host(o)) => match kind {
                K::Gradient => x.gradient_batch(o, w),
                K::Divergence => x.divergence_batch(o, w),
                K::Laplacian => x.laplacian_batch(o, w, centre),
            },
            (Storage::Cuda(x), Storage::Cuda(o)) => match kind {
                K::Gradient => x.gradient_batch(o, w),
                K::Divergence => x.divergence_batch(o, w),
                K::Laplacian => x.laplacian_batch(o, w, centre),
            },
            _ => Err(mix(&format!("{kind:?}"))),
        }
    }

    /// `out[i] = ‖(parts[0][i], parts[1][i], …)‖_p`.
    pub(crate) fn pointwise_norm(parts: &[&Self], out: &mut Self, exponent: f64) -> Result<()> {
        match out {
            Storage::Host(o) => {
                let p = hosts(parts).ok_or_else(|| mix("PointwiseNorm"))?;
                HostTensor::pointwise_norm(&p, o, exponent)
            }
            Storage::Cuda(o) => {
                let p = cudas(parts).ok_or_else(|| mix("PointwiseNorm"))?;
                DeviceTensor::pointwise_norm(&p, o, exponent)
            }
        }
    }
}

impl<T: Scalar> fmt::Debug for Storage<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Storage::Host(h) => write!(f, "Element(cpu, {:?})", h.array()),
            Storage::Cuda(d) => write!(f, "Element({}, shape {:?})", d.device(), d.shape()),
        }
    }
}
