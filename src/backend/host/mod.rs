//! The host backend: tensors in host memory ([`HostTensor`], a C-ordered ndarray), computed with
//! rayon.

mod stencil;
mod vector;

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, IxDyn};

use super::{
    check_repeated, check_stencil_batch, BackendStorage, Binary, DeviceBackend, Map2Op, MapOp,
    PointwiseBackend, Reduction, StencilBackend, StencilBatch, Unary,
};
use crate::{Device, Error, Result, Scalar};

/// A tensor in host memory, always in standard (C) layout.
pub(crate) struct HostTensor<T>(ArrayD<T>);

impl<T: Scalar> HostTensor<T> {
    /// Wraps an array (copied into standard layout when it is not).
    pub(crate) fn new(a: ArrayD<T>) -> Self {
        if a.is_standard_layout() {
            HostTensor(a)
        } else {
            HostTensor(a.as_standard_layout().into_owned())
        }
    }

    /// A tensor filled with `v` (an error when it would not fit in the host-memory limit).
    pub(crate) fn full(shape: &[usize], v: T) -> Result<Self> {
        crate::memory::check_host_array(shape, std::mem::size_of::<T>())?;
        Ok(HostTensor(ArrayD::from_elem(IxDyn(shape), v)))
    }

    /// The data.
    pub(crate) fn array(&self) -> &ArrayD<T> {
        &self.0
    }

    /// The array.
    pub(crate) fn into_array(self) -> ArrayD<T> {
        self.0
    }

    /// The data as a flat slice in C order.
    pub(crate) fn slice(&self) -> &[T] {
        self.0
            .as_slice()
            .expect("host tensors are kept in standard layout")
    }

    /// The data as a mutable flat slice in C order.
    pub(crate) fn slice_mut(&mut self) -> &mut [T] {
        self.0
            .as_slice_mut()
            .expect("host tensors are kept in standard layout")
    }

    /// A read view of the data.
    pub(crate) fn view(&self) -> ArrayViewD<'_, T> {
        self.0.view()
    }

    /// A write view of the data.
    pub(crate) fn view_mut(&mut self) -> ArrayViewMutD<'_, T> {
        self.0.view_mut()
    }
}

impl<T: Scalar> BackendStorage<T> for HostTensor<T> {
    fn device(&self) -> Device {
        Device::Cpu
    }
    fn shape(&self) -> &[usize] {
        self.0.shape()
    }
    fn try_clone(&self) -> Result<Self> {
        crate::memory::check_host_array(self.0.shape(), std::mem::size_of::<T>())?;
        Ok(HostTensor(self.0.clone()))
    }
    fn to_host(&self) -> Result<ArrayD<T>> {
        crate::memory::check_host_array(self.0.shape(), std::mem::size_of::<T>())?;
        Ok(self.0.clone())
    }
    fn copy_range_to(&self, offset: usize, out: &mut [T]) -> Result<()> {
        out.copy_from_slice(&self.slice()[offset..offset + out.len()]);
        Ok(())
    }
    fn binary(&mut self, op: Binary<T>, x: &Self, y: &Self) -> Result<()> {
        vector::binary(op, x.slice(), y.slice(), self.slice_mut());
        Ok(())
    }
    fn axpby(&mut self, a: T, x: &Self, b: T) -> Result<()> {
        vector::axpby(a, x.slice(), b, self.slice_mut());
        Ok(())
    }
    fn mul_repeated(&mut self, factor: &Self, x: &Self) -> Result<()> {
        let f = factor.slice();
        check_repeated(f.len(), x.slice().len(), self.slice().len())?;
        for (o, xb) in self
            .slice_mut()
            .chunks_mut(f.len())
            .zip(x.slice().chunks(f.len()))
        {
            vector::binary(Binary::Mul, f, xb, o);
        }
        Ok(())
    }
    fn unary(&mut self, op: Unary<T>, x: &Self) -> Result<()> {
        vector::unary(op, x.slice(), self.slice_mut());
        Ok(())
    }
    fn fill(&mut self, v: T) -> Result<()> {
        self.0.fill(v);
        Ok(())
    }
    fn scale_inplace(&mut self, s: T) -> Result<()> {
        vector::scale_inplace(s, self.slice_mut());
        Ok(())
    }
    fn reduce(&self, op: Reduction, y: &Self) -> Result<f64> {
        Ok(vector::reduce(op, self.slice(), y.slice()))
    }
}

impl<T: Scalar> PointwiseBackend<T> for HostTensor<T> {
    fn map(&mut self, op: MapOp, p: [T; 2], x: &Self) -> Result<()> {
        vector::map(op, p, x.slice(), self.slice_mut());
        Ok(())
    }
    fn map_inplace(&mut self, op: MapOp, p: [T; 2]) -> Result<()> {
        vector::map_inplace(op, p, self.slice_mut());
        Ok(())
    }
    fn map2(&mut self, op: Map2Op, x: &Self, y: &Self) -> Result<()> {
        vector::map_binary(op, x.slice(), y.slice(), self.slice_mut());
        Ok(())
    }
}

impl<T: Scalar> StencilBackend<T> for HostTensor<T> {
    fn gradient(&self, outs: &mut [&mut Self], w: &[f64]) -> Result<()> {
        let mut views: Vec<_> = outs.iter_mut().map(|o| o.view_mut()).collect();
        stencil::gradient(self.view(), &mut views, w);
        Ok(())
    }
    fn divergence(parts: &[&Self], out: &mut Self, w: &[f64]) -> Result<()> {
        let views: Vec<_> = parts.iter().map(|p| p.view()).collect();
        stencil::divergence(&views, out.view_mut(), w);
        Ok(())
    }
    fn laplacian(&self, out: &mut Self, w: &[f64], centre: f64) -> Result<()> {
        stencil::laplacian(self.view(), out.view_mut(), w, centre);
        Ok(())
    }
    fn pointwise_norm(parts: &[&Self], out: &mut Self, exponent: f64) -> Result<()> {
        let slices: Vec<_> = parts.iter().map(|p| p.slice()).collect();
        stencil::pointwise_norm(&slices, out.slice_mut(), exponent);
        Ok(())
    }
    fn gradient_batch(&self, out: &mut Self, w: &[f64]) -> Result<()> {
        check_stencil_batch(StencilBatch::Gradient, self.shape(), out.shape(), w)?;
        let x = self.view();
        for (xb, mut ob) in x.outer_iter().zip(out.view_mut().outer_iter_mut()) {
            let mut parts: Vec<_> = ob.outer_iter_mut().collect();
            stencil::gradient(xb, &mut parts, w);
        }
        Ok(())
    }
    fn divergence_batch(&self, out: &mut Self, w: &[f64]) -> Result<()> {
        check_stencil_batch(StencilBatch::Divergence, self.shape(), out.shape(), w)?;
        let x = self.view();
        for (gb, ob) in x.outer_iter().zip(out.view_mut().outer_iter_mut()) {
            let parts: Vec<_> = gb.outer_iter().collect();
            stencil::divergence(&parts, ob, w);
        }
        Ok(())
    }
    fn laplacian_batch(&self, out: &mut Self, w: &[f64], centre: f64) -> Result<()> {
        check_stencil_batch(StencilBatch::Laplacian, self.shape(), out.shape(), w)?;
        let x = self.view();
        for (xb, ob) in x.outer_iter().zip(out.view_mut().outer_iter_mut()) {
            stencil::laplacian(xb, ob, w, centre);
        }
        Ok(())
    }
}

impl<T: Scalar> DeviceBackend<T> for HostTensor<T> {
    fn from_host(id: usize, a: ArrayViewD<'_, T>) -> Result<Self> {
        check_host(id)?;
        Ok(HostTensor::new(a.to_owned()))
    }
    fn zeros(id: usize, shape: &[usize]) -> Result<Self> {
        check_host(id)?;
        HostTensor::full(shape, T::zero())
    }
    fn to_device(&self, id: usize) -> Result<Self> {
        check_host(id)?;
        self.try_clone()
    }
}

fn check_host(id: usize) -> Result<()> {
    if id != 0 {
        return Err(Error::invalid(format!("the host has one device, not {id}")));
    }
    Ok(())
}
