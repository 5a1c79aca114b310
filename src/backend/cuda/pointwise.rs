//! Elementwise maps of device tensors (`kernels/pointwise.cu`): the GPU side of
//! [`Space::pointwise`](crate::Space::pointwise) and friends.

use std::sync::Arc;

use cudarc::driver::PushKernelArg;

use super::context::{driver_err, KernelSource};
use super::tensor::DeviceTensor;
use crate::backend::{BackendStorage, Map2Op, MapOp, PointwiseBackend};
use crate::{Error, Result, Scalar};

const POINTWISE: KernelSource = KernelSource {
    name: "pointwise",
    prelude: &crate::backend::op::CUDA_PRELUDE,
    code: include_str!("../../../kernels/pointwise.cu"),
    options: &["--fmad=false"],
};

fn check_like<T: Scalar>(a: &DeviceTensor<T>, b: &DeviceTensor<T>, what: &str) -> Result<()> {
    if a.ctx().id() != b.ctx().id() {
        return Err(Error::device_mismatch(what, a.device(), b.device()));
    }
    if a.len() != b.len() {
        return Err(Error::shape(what, a.shape(), b.shape()));
    }
    Ok(())
}

impl<T: Scalar> PointwiseBackend<T> for DeviceTensor<T> {
    /// `self = f(x)` elementwise, `f` given by `op` and its parameters `a`, `b`.
    fn map(&mut self, op: MapOp, p: [T; 2], x: &Self) -> Result<()> {
        let [a, b] = p;
        check_like(self, x, op.name())?;
        let ctx = Arc::clone(self.ctx());
        let f = ctx.function(&POINTWISE, self.dtype().pick("map_f32", "map_f64"))?;
        let (code, a, b, n) = (op as i32, a.f64(), b.f64(), self.len() as u64);
        let cfg = ctx.launch_cfg(self.len());
        let stream = ctx.stream();
        let mut l = stream.launch_builder(&f);
        l.arg(self.slice_mut())
            .arg(x.slice())
            .arg(&code)
            .arg(&a)
            .arg(&b)
            .arg(&n);
        // SAFETY: `self` and `x` hold `n` values each; the signature matches `map_*`.
        unsafe { l.launch(cfg) }
            .map(|_| ())
            .map_err(driver_err("pointwise kernel"))
    }

    /// `self = f(self)` elementwise.
    fn map_inplace(&mut self, op: MapOp, p: [T; 2]) -> Result<()> {
        let [a, b] = p;
        let ctx = Arc::clone(self.ctx());
        let f = ctx.function(
            &POINTWISE,
            self.dtype().pick("map_inplace_f32", "map_inplace_f64"),
        )?;
        let (code, a, b, n) = (op as i32, a.f64(), b.f64(), self.len() as u64);
        let cfg = ctx.launch_cfg(self.len());
        let stream = ctx.stream();
        let mut l = stream.launch_builder(&f);
        l.arg(self.slice_mut()).arg(&code).arg(&a).arg(&b).arg(&n);
        // SAFETY: `self` holds `n` values; the signature matches `map_inplace_*`.
        unsafe { l.launch(cfg) }
            .map(|_| ())
            .map_err(driver_err("pointwise kernel"))
    }

    /// `self = f(x, y)` elementwise.
    fn map2(&mut self, op: Map2Op, x: &Self, y: &Self) -> Result<()> {
        check_like(self, x, "pointwise operation")?;
        check_like(self, y, "pointwise operation")?;
        let ctx = Arc::clone(self.ctx());
        let f = ctx.function(&POINTWISE, self.dtype().pick("map2_f32", "map2_f64"))?;
        let (code, n) = (op as i32, self.len() as u64);
        let cfg = ctx.launch_cfg(self.len());
        let stream = ctx.stream();
        let mut l = stream.launch_builder(&f);
        l.arg(self.slice_mut())
            .arg(x.slice())
            .arg(y.slice())
            .arg(&code)
            .arg(&n);
        // SAFETY: all three tensors hold `n` values; the signature matches `map2_*`.
        unsafe { l.launch(cfg) }
            .map(|_| ())
            .map_err(driver_err("pointwise kernel"))
    }
}
