//! The windowed Joseph kernels for 2D `f32` volumes on x86-64 with AVX2: the plane-blocked
//! driver ([`window`]), parallel-beam views binned by offset ([`bins`]), and the pixel-driven
//! gather transpose ([`gather`]); the weighted transpose of 2D fan-beam FBP ([`weighted`]).

mod bins;
mod gather;
mod weighted;
mod window;

pub(crate) use weighted::transpose_weighted;
pub(crate) use window::{available, forward, transpose};
