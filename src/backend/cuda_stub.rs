//! Stand-in for the CUDA backend when the crate is built without the `cuda` feature: every entry
//! point returns [`crate::Error::CudaUnavailable`], and device tensors
//! cannot exist.

use std::convert::Infallible;
use std::marker::PhantomData;

use ndarray::{ArrayD, ArrayViewD};

use crate::{Device, Error, Result, Scalar};

fn unavailable() -> Error {
    Error::CudaUnavailable(
        "rodl was built without the `cuda` feature (rebuild with `--features cuda`)".into(),
    )
}

pub(crate) fn check_available(_id: usize) -> Result<()> {
    Err(unavailable())
}

/// A tensor in GPU memory; uninhabited without the `cuda` feature.
pub(crate) struct DeviceTensor<T>(Infallible, PhantomData<T>);

impl<T: Scalar> DeviceTensor<T> {
    pub(crate) fn device(&self) -> Device {
        match self.0 {}
    }
    pub(crate) fn shape(&self) -> &[usize] {
        match self.0 {}
    }
    pub(crate) fn try_clone(&self) -> Result<Self> {
        match self.0 {}
    }
    pub(crate) fn to_host(&self) -> Result<ArrayD<T>> {
        match self.0 {}
    }
    pub(crate) fn to_device(&self, _id: usize) -> Result<Self> {
        match self.0 {}
    }
    pub(crate) fn from_host(_id: usize, _a: ArrayViewD<'_, T>) -> Result<Self> {
        Err(unavailable())
    }
    pub(crate) fn zeros(_id: usize, _shape: &[usize]) -> Result<Self> {
        Err(unavailable())
    }
    pub(crate) fn binary(&mut self, _op: super::Binary<T>, _x: &Self, _y: &Self) -> Result<()> {
        match self.0 {}
    }
    pub(crate) fn axpby(&mut self, _a: T, _x: &Self, _b: T) -> Result<()> {
        match self.0 {}
    }
    pub(crate) fn unary(&mut self, _op: super::Unary<T>, _x: &Self) -> Result<()> {
        match self.0 {}
    }
    pub(crate) fn map(&mut self, _op: super::MapOp, _a: T, _b: T, _x: &Self) -> Result<()> {
        match self.0 {}
    }
    pub(crate) fn map_inplace(&mut self, _op: super::MapOp, _a: T, _b: T) -> Result<()> {
        match self.0 {}
    }
    pub(crate) fn map2(&mut self, _op: super::Map2Op, _x: &Self, _y: &Self) -> Result<()> {
        match self.0 {}
    }
    pub(crate) fn fill(&mut self, _v: T) -> Result<()> {
        match self.0 {}
    }
    pub(crate) fn scale_inplace(&mut self, _s: T) -> Result<()> {
        match self.0 {}
    }
    pub(crate) fn reduce(&self, _op: super::Reduction, _y: &Self) -> Result<f64> {
        match self.0 {}
    }
    pub(crate) fn gradient(x: &Self, _outs: &mut [&mut Self], _w: &[f64]) -> Result<()> {
        match x.0 {}
    }
    pub(crate) fn divergence(_parts: &[&Self], out: &mut Self, _w: &[f64]) -> Result<()> {
        match out.0 {}
    }
    pub(crate) fn laplacian(x: &Self, _out: &mut Self, _w: &[f64], _centre: f64) -> Result<()> {
        match x.0 {}
    }
    pub(crate) fn pointwise_norm(_parts: &[&Self], out: &mut Self, _exponent: f64) -> Result<()> {
        match out.0 {}
    }
}
