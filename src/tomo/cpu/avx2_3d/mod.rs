//! The windowed Joseph kernels for 3D `f32` volumes on x86-64 with AVX2: groups of eight rays
//! of a detector column ([`window`]), and whole columns that share their in-plane track
//! ([`column`](mod@column)), on the class layout of [`layout`] and the tap routes of [`routes`].

mod column;
mod layout;
mod routes;
mod window;

pub(crate) use window::{available, forward, transpose};
