//! Stand-in for the CUDA backend when the crate is built without the `cuda` feature.
//!
//! [`DeviceTensor`] is uninhabited and implements the same backend traits as the real one, so the
//! compiler checks this stub against them; every way to make one, and every device-wide call,
//! returns [`Error::CudaUnavailable`].

use std::convert::Infallible;
use std::marker::PhantomData;

use ndarray::{ArrayD, ArrayViewD};

use super::{
    BackendStorage, Binary, DeviceBackend, Map2Op, MapOp, PointwiseBackend, Reduction,
    StencilBackend, Unary,
};
use crate::{Device, Error, Result, Scalar, ScalarFamily};

/// The error of every CUDA entry point in a build without the `cuda` feature.
pub(crate) fn unavailable() -> Error {
    Error::CudaUnavailable(
        "rodl was built without its `cuda` feature (enable it: `features = [\"cuda\"]` on the \
         rodl dependency in Cargo.toml, or `--features rodl/cuda`; `--features cuda` in rodl's \
         own checkout)"
            .into(),
    )
}

/// A tensor in GPU memory; uninhabited without the `cuda` feature.
pub(crate) struct DeviceTensor<T>(Infallible, PhantomData<T>);

/// The [`ScalarFamily`] of device tensors.
pub(crate) struct DeviceTensorOf;

impl ScalarFamily for DeviceTensorOf {
    type Of<T: Scalar> = DeviceTensor<T>;
}

/// The CUDA runtime calls; all fail without the `cuda` feature.
pub(crate) struct Cuda;

impl super::Runtime for Cuda {
    fn check_available(_id: usize) -> Result<()> {
        Err(unavailable())
    }
    fn device_count() -> Result<usize> {
        Err(unavailable())
    }
    fn synchronize(_id: usize) -> Result<()> {
        Err(unavailable())
    }
    unsafe fn run_on_stream(
        _id: usize,
        _stream: u64,
        _f: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        Err(unavailable())
    }

    fn time(_id: usize, _f: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
        Err(unavailable())
    }

    fn memory_info(_id: usize) -> Result<(u64, u64)> {
        Err(unavailable())
    }
}

impl<T: Scalar> BackendStorage<T> for DeviceTensor<T> {
    fn device(&self) -> Device {
        match self.0 {}
    }
    fn shape(&self) -> &[usize] {
        match self.0 {}
    }
    fn try_clone(&self) -> Result<Self> {
        match self.0 {}
    }
    fn to_host(&self) -> Result<ArrayD<T>> {
        match self.0 {}
    }
    fn copy_range_to(&self, _offset: usize, _out: &mut [T]) -> Result<()> {
        match self.0 {}
    }
    fn binary(&mut self, _op: Binary<T>, _x: &Self, _y: &Self) -> Result<()> {
        match self.0 {}
    }
    fn mul_repeated(&mut self, _factor: &Self, _x: &Self) -> Result<()> {
        match self.0 {}
    }
    fn axpby(&mut self, _a: T, _x: &Self, _b: T) -> Result<()> {
        match self.0 {}
    }
    fn unary(&mut self, _op: Unary<T>, _x: &Self) -> Result<()> {
        match self.0 {}
    }
    fn fill(&mut self, _v: T) -> Result<()> {
        match self.0 {}
    }
    fn scale_inplace(&mut self, _s: T) -> Result<()> {
        match self.0 {}
    }
    fn reduce(&self, _op: Reduction, _y: &Self) -> Result<f64> {
        match self.0 {}
    }
}

impl<T: Scalar> PointwiseBackend<T> for DeviceTensor<T> {
    fn map(&mut self, _op: MapOp, _p: [T; 2], _x: &Self) -> Result<()> {
        match self.0 {}
    }
    fn map_inplace(&mut self, _op: MapOp, _p: [T; 2]) -> Result<()> {
        match self.0 {}
    }
    fn map2(&mut self, _op: Map2Op, _x: &Self, _y: &Self) -> Result<()> {
        match self.0 {}
    }
}

impl<T: Scalar> StencilBackend<T> for DeviceTensor<T> {
    fn gradient(&self, _outs: &mut [&mut Self], _w: &[f64]) -> Result<()> {
        match self.0 {}
    }
    fn divergence(_parts: &[&Self], out: &mut Self, _w: &[f64]) -> Result<()> {
        match out.0 {}
    }
    fn laplacian(&self, _out: &mut Self, _w: &[f64], _centre: f64) -> Result<()> {
        match self.0 {}
    }
    fn pointwise_norm(_parts: &[&Self], out: &mut Self, _exponent: f64) -> Result<()> {
        match out.0 {}
    }
    fn gradient_batch(&self, _out: &mut Self, _w: &[f64]) -> Result<()> {
        match self.0 {}
    }
    fn divergence_batch(&self, _out: &mut Self, _w: &[f64]) -> Result<()> {
        match self.0 {}
    }
    fn laplacian_batch(&self, _out: &mut Self, _w: &[f64], _centre: f64) -> Result<()> {
        match self.0 {}
    }
}

impl<T: Scalar> DeviceBackend<T> for DeviceTensor<T> {
    fn from_host(_id: usize, _a: ArrayViewD<'_, T>) -> Result<Self> {
        Err(unavailable())
    }
    fn zeros(_id: usize, _shape: &[usize]) -> Result<Self> {
        Err(unavailable())
    }
    fn to_device(&self, _id: usize) -> Result<Self> {
        match self.0 {}
    }
}

impl<T> DeviceTensor<T> {
    /// Never succeeds: a build without CUDA has no device memory.
    ///
    /// # Safety
    /// Nothing to uphold; `unsafe` to match the CUDA build.
    pub(crate) unsafe fn borrow_raw(_id: usize, _ptr: u64, _shape: &[usize]) -> Result<Self> {
        Err(unavailable())
    }

    /// Uninhabited.
    pub(crate) fn release_borrowed(self) -> u64 {
        match self.0 {}
    }

    /// Uninhabited.
    pub(crate) fn device_ordinal(&self) -> usize {
        match self.0 {}
    }
}

/// The preprocessing kernels; unreachable without the `cuda` feature (no device tensor exists).
pub(crate) mod preprocess {
    use super::DeviceTensor;
    use crate::Result;

    /// Flat-field normalisation (see the CUDA backend).
    pub(crate) fn flat_field(
        x: &mut DeviceTensor<f32>,
        _dark: &[f64],
        _groups: &[f64],
        _per_view: &[f64],
        _log_floor: Option<f32>,
    ) -> Result<u64> {
        match x.0 {}
    }

    /// `−log` (see the CUDA backend).
    pub(crate) fn neg_log(x: &mut DeviceTensor<f32>, _floor: f32) -> Result<()> {
        match x.0 {}
    }

    /// Zinger removal (see the CUDA backend).
    pub(crate) fn zingers(
        x: &mut DeviceTensor<f32>,
        _r: usize,
        _threshold: f32,
        _both_signs: bool,
    ) -> Result<u64> {
        match x.0 {}
    }

    /// Stripe removal (see the CUDA backend).
    pub(crate) fn stripes(x: &mut DeviceTensor<f32>, _size: usize) -> Result<()> {
        match x.0 {}
    }
}
