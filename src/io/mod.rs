//! File output: 8-bit grayscale PNG images of 2D elements and of slices of 3D volumes.
//!
//! Files are written atomically (a temporary file in the target's directory, renamed onto the
//! target when complete), so a failed write never leaves a partial file behind.

mod png;

pub use self::png::{
    encode_gray_png, slice_to_gray8, to_gray8, write_gray_png, write_png, write_png_slice,
    GrayImage, Window,
};
