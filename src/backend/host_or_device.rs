//! The data of a call that runs on one GPU, each side on the host or on that GPU: the
//! ray transform in pieces (`cuda::pieces`) takes its input as an [`In`] and writes an [`Out`].

use crate::backend::cuda::DeviceTensor;

/// Input data of a piecewise call: host memory, or a tensor on the runner's GPU.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))] // read by the CUDA build's runner
pub(crate) enum In<'a> {
    /// Host memory (copied up piece by piece).
    Host(&'a [f32]),
    /// A tensor of the runner's GPU holding all the values (used in place).
    Device(&'a DeviceTensor<f32>),
}

/// Output data of a piecewise call.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))] // read by the CUDA build's runner
pub(crate) enum Out<'a> {
    /// Host memory (copied down piece by piece).
    Host(&'a mut [f32]),
    /// A tensor of the runner's GPU with room for all the values (written in place).
    Device(&'a mut DeviceTensor<f32>),
}
