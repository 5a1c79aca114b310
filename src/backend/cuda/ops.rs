//! GPU kernels of the default operators: finite differences (Gradient, Divergence, Laplacian) and
//! the pointwise norm. Each matches the host code in `src/operator/default/` bit for bit (same
//! operation order, no fused multiply-add).

use std::sync::Arc;

use cudarc::driver::{DevicePtr, DevicePtrMut, DeviceRepr, PushKernelArg, SyncOnDrop};

use super::context::{driver_err, KernelSource};
use super::tensor::DeviceTensor;
use crate::backend::{check_stencil_batch, BackendStorage, StencilBackend, StencilBatch};
use crate::{Error, Result, Scalar};

const FINITE_DIFF: KernelSource = KernelSource {
    name: "finite_diff",
    prelude: &[],
    code: include_str!("../../../kernels/finite_diff.cu"),
    options: &["--fmad=false"],
};

const POINTWISE_NORM: KernelSource = KernelSource {
    name: "pointwise_norm",
    prelude: &[],
    code: include_str!("../../../kernels/pointwise_norm.cu"),
    options: &["--fmad=false"],
};

/// Most axes the finite-difference kernels handle.
const FD_MAXD: usize = 8;
/// Most components the pointwise-norm kernel handles.
const PN_MAXP: usize = 16;

/// Kernel parameters of `kernels/finite_diff.cu` (same layout as its `FdParams`).
#[repr(C)]
#[derive(Clone, Copy)]
struct FdParams {
    ptr: [u64; FD_MAXD],
    shape: [u64; FD_MAXD],
    stride: [u64; FD_MAXD],
    w: [f64; FD_MAXD],
    /// Values of all entries.
    n: u64,
    /// Values per entry.
    entry: u64,
    /// Distance between two entries' parts (gradient outputs, divergence inputs).
    pstride: u64,
    centre: f64,
    ndim: i32,
    pad: i32,
}

// SAFETY: plain old data with the layout of the CUDA struct.
unsafe impl DeviceRepr for FdParams {}

/// Kernel parameters of `kernels/pointwise_norm.cu` (same layout as its `PnParams`).
#[repr(C)]
#[derive(Clone, Copy)]
struct PnParams {
    ptr: [u64; PN_MAXP],
    n: u64,
    p: f64,
    nparts: i32,
    mode: i32,
}

// SAFETY: plain old data with the layout of the CUDA struct.
unsafe impl DeviceRepr for PnParams {}

impl FdParams {
    fn new(shape: &[usize], w: &[f64], what: &str) -> Result<Self> {
        let d = shape.len();
        if d > FD_MAXD {
            return Err(Error::Unsupported(format!(
                "{what} on a GPU handles at most {FD_MAXD} axes, got {d}"
            )));
        }
        if w.len() != d {
            return Err(Error::invalid(format!(
                "{what}: {} weights for {d} axes",
                w.len()
            )));
        }
        let mut p = FdParams {
            ptr: [0; FD_MAXD],
            shape: [1; FD_MAXD],
            stride: [0; FD_MAXD],
            w: [0.0; FD_MAXD],
            n: shape.iter().product::<usize>() as u64,
            entry: shape.iter().product::<usize>() as u64,
            pstride: 0,
            centre: 0.0,
            ndim: d as i32,
            pad: 0,
        };
        let mut stride = 1u64;
        for k in (0..d).rev() {
            p.shape[k] = shape[k] as u64;
            p.stride[k] = stride;
            stride *= shape[k] as u64;
        }
        p.w[..d].copy_from_slice(w);
        Ok(p)
    }

    /// The parameters of a batch: `x` is `[batch, …shape]`; with `parts`, the gradient's
    /// outputs or the divergence's inputs are one tensor `[batch, parts, …shape]` at `at`.
    fn batch(
        x: &[usize],
        w: &[f64],
        what: &str,
        parts: Option<(u64, usize)>,
        bytes: usize,
    ) -> Result<Self> {
        let (&batch, shape) = x
            .split_first()
            .ok_or_else(|| Error::invalid(format!("{what}: a batch needs a leading axis")))?;
        let mut p = Self::new(shape, w, what)?;
        p.n = p.entry * batch as u64;
        if let Some((at, d)) = parts {
            p.pstride = p.entry * d as u64;
            for k in 0..d {
                p.ptr[k] = at + k as u64 * p.entry * bytes as u64;
            }
        }
        Ok(p)
    }

    fn kernel(&self, base: &str, x: &DeviceTensor<impl Scalar>) -> String {
        let t = x.dtype().pick("f32", "f64");
        // The largest index: of the values, or of the parts of the last entry.
        let span = self.n.max(self.pstride * (self.n / self.entry.max(1)));
        let i = if span <= u32::MAX as u64 {
            "u32"
        } else {
            "u64"
        };
        format!("{base}_{t}_{i}")
    }
}

fn check_like<T: Scalar>(a: &DeviceTensor<T>, b: &DeviceTensor<T>, what: &str) -> Result<()> {
    a.check_same_device(b, what)?;
    if a.shape() != b.shape() {
        return Err(Error::shape(what, a.shape(), b.shape()));
    }
    Ok(())
}

impl<T: Scalar> StencilBackend<T> for DeviceTensor<T> {
    /// Forward differences with zero padding: `outs[k] = (x[i + e_k] − x[i]) · w[k]`
    /// (`w[k] = 1/h_k`), one output per axis.
    fn gradient(&self, outs: &mut [&mut Self], w: &[f64]) -> Result<()> {
        let x = self;
        let mut p = FdParams::new(x.shape(), w, "Gradient")?;
        if outs.len() != x.shape().len() {
            return Err(Error::invalid(format!(
                "Gradient: {} outputs for {} axes",
                outs.len(),
                x.shape().len()
            )));
        }
        for o in outs.iter() {
            check_like(x, o, "Gradient")?;
        }
        let stream = &x.ctx().stream();
        let mut guards: Vec<SyncOnDrop<'_>> = Vec::with_capacity(outs.len());
        for (k, o) in outs.iter_mut().enumerate() {
            let (ptr, g) = o.slice_mut().device_ptr_mut(stream);
            p.ptr[k] = ptr;
            guards.push(g);
        }
        // SAFETY: the outputs hold `p.n` values each, as does `x`.
        unsafe { launch_fd("grad", &[x], None, &p) }
    }

    /// Backward differences summed over the axes: `out = Σ_k (g_k[i] − g_k[i − e_k]) · w[k]`
    /// with `g_k = 0` before the grid (`w[k] = 1/h_k`).
    fn divergence(parts: &[&Self], out: &mut Self, w: &[f64]) -> Result<()> {
        let mut p = FdParams::new(out.shape(), w, "Divergence")?;
        if parts.len() != out.shape().len() {
            return Err(Error::invalid(format!(
                "Divergence: {} components for {} axes",
                parts.len(),
                out.shape().len()
            )));
        }
        for g in parts {
            check_like(out, g, "Divergence")?;
        }
        let stream = &out.ctx().stream();
        let mut guards: Vec<SyncOnDrop<'_>> = Vec::with_capacity(parts.len());
        for (k, g) in parts.iter().enumerate() {
            let (ptr, guard) = g.slice().device_ptr(stream);
            p.ptr[k] = ptr;
            guards.push(guard);
        }
        // SAFETY: the components hold `p.n` values each, as does `out`.
        unsafe { launch_fd("div", &[], Some(out), &p) }
    }

    /// The zero-padded Laplacian `out = centre · x + Σ_k w[k] (x[i + e_k] + x[i − e_k])`
    /// (`w[k] = 1/h_k²`, `centre = Σ_k −2/h_k²`, neighbours outside the grid left out).
    fn laplacian(&self, out: &mut Self, w: &[f64], centre: f64) -> Result<()> {
        let x = self;
        let mut p = FdParams::new(x.shape(), w, "Laplacian")?;
        p.centre = centre;
        check_like(x, out, "Laplacian")?;
        // SAFETY: `x` and `out` hold `p.n` values each.
        unsafe { launch_fd("lap", &[x], Some(out), &p) }
    }

    /// The pointwise `exponent`-norm of the components: `out[i] = (Σ_k |g_k[i]|^p)^{1/p}`.
    fn pointwise_norm(parts: &[&Self], out: &mut Self, exponent: f64) -> Result<()> {
        if parts.is_empty() || parts.len() > PN_MAXP {
            return Err(Error::Unsupported(format!(
                "PointwiseNorm on a GPU handles 1 to {PN_MAXP} components, got {}",
                parts.len()
            )));
        }
        for g in parts {
            check_like(out, g, "PointwiseNorm")?;
        }
        let mode = if exponent == 1.0 {
            0
        } else if exponent == 2.0 {
            1
        } else if exponent.is_infinite() {
            2
        } else {
            3
        };
        let mut q = PnParams {
            ptr: [0; PN_MAXP],
            n: out.len() as u64,
            p: exponent,
            nparts: parts.len() as i32,
            mode,
        };
        let ctx = Arc::clone(out.ctx());
        let stream = &ctx.stream();
        let f = ctx.function(&POINTWISE_NORM, out.dtype().pick("pnorm_f32", "pnorm_f64"))?;
        let mut guards: Vec<SyncOnDrop<'_>> = Vec::with_capacity(parts.len());
        for (k, g) in parts.iter().enumerate() {
            let (ptr, guard) = g.slice().device_ptr(stream);
            q.ptr[k] = ptr;
            guards.push(guard);
        }
        let cfg = ctx.launch_cfg(out.len());
        let mut l = stream.launch_builder(&f);
        l.arg(out.slice_mut()).arg(&q);
        // SAFETY: the components hold `q.n` values each, as does `out`.
        unsafe { l.launch(cfg) }.map_err(driver_err("pointwise norm kernel"))?;
        drop(guards);
        Ok(())
    }

    /// The gradients of a batch in one launch: `x` `[batch, …shape]`, `out` `[batch, d, …shape]`.
    fn gradient_batch(&self, out: &mut Self, w: &[f64]) -> Result<()> {
        let x = self;
        check_stencil_batch(StencilBatch::Gradient, x.shape(), out.shape(), w)?;
        x.check_same_device(out, "Gradient")?;
        let stream = &x.ctx().stream();
        let bytes = std::mem::size_of::<T>();
        let (at, g) = out.slice_mut().device_ptr_mut(stream);
        let p = FdParams::batch(x.shape(), w, "Gradient", Some((at, w.len())), bytes)?;
        // SAFETY: `x` holds `p.n` values and `out` `d · p.n` (shapes checked), the parts of
        // entry b at `at + (b · d + k) · entry`.
        let r = unsafe { launch_fd("grad", &[x], None, &p) };
        drop(g);
        r
    }

    /// The divergences of a batch in one launch: `self` `[batch, d, …shape]`, `out`
    /// `[batch, …shape]`.
    fn divergence_batch(&self, out: &mut Self, w: &[f64]) -> Result<()> {
        check_stencil_batch(StencilBatch::Divergence, self.shape(), out.shape(), w)?;
        self.check_same_device(out, "Divergence")?;
        let stream = &out.ctx().stream();
        let bytes = std::mem::size_of::<T>();
        let (at, g) = self.slice().device_ptr(stream);
        let p = FdParams::batch(out.shape(), w, "Divergence", Some((at, w.len())), bytes)?;
        // SAFETY: `out` holds `p.n` values and the input `d · p.n` (shapes checked).
        let r = unsafe { launch_fd("div", &[], Some(out), &p) };
        drop(g);
        r
    }

    /// The Laplacians of a batch in one launch: both `[batch, …shape]`.
    fn laplacian_batch(&self, out: &mut Self, w: &[f64], centre: f64) -> Result<()> {
        let x = self;
        check_stencil_batch(StencilBatch::Laplacian, x.shape(), out.shape(), w)?;
        x.check_same_device(out, "Laplacian")?;
        let mut p = FdParams::batch(x.shape(), w, "Laplacian", None, 0)?;
        p.centre = centre;
        // SAFETY: `x` and `out` hold `p.n` values each (shapes checked).
        unsafe { launch_fd("lap", &[x], Some(out), &p) }
    }
}

/// Launches the finite-difference kernel `base` (`grad`, `div` or `lap`) over `p.n` values with
/// the arguments `ins`, then `out`, then `p`, on the stream of the first tensor's device.
///
/// # Safety
/// The tensors and the addresses in `p` must hold what the kernel reads and writes for `p`.
unsafe fn launch_fd<T: Scalar>(
    base: &str,
    ins: &[&DeviceTensor<T>],
    out: Option<&mut DeviceTensor<T>>,
    p: &FdParams,
) -> Result<()> {
    let Some(like) = ins.first().copied().or(out.as_deref()) else {
        return Err(Error::invalid("a finite-difference kernel without tensors"));
    };
    let (ctx, name) = (Arc::clone(like.ctx()), p.kernel(base, like));
    let f = ctx.function(&FINITE_DIFF, &name)?;
    let cfg = ctx.launch_cfg(p.n as usize);
    let stream = ctx.stream();
    let mut l = stream.launch_builder(&f);
    for x in ins {
        l.arg(x.slice());
    }
    if let Some(o) = out {
        l.arg(o.slice_mut());
    }
    l.arg(p);
    // SAFETY: forwarded to the caller.
    unsafe { l.launch(cfg) }.map_err(driver_err(&format!("the {base} kernel")))?;
    Ok(())
}
