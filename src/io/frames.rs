//! Stacks of detector frames (projections, flats, darks) read in chunks of frames.
//!
//! Orientation: a detector image is stored as rows × columns, row 0 at the top; rodl's data
//! convention is `[angle, u, v]` with `u` along the detector's rows (the image's columns, left
//! to right) and `v` along the rotation axis, upwards. A frame of `rows × cols` pixels therefore
//! becomes an array `[u, v] = [cols, rows]` with `u = col` and `v = rows − 1 − row` (the top row
//! of the image is the highest `v`), the way [`crate::io::write_png`] shows `[x, y]` arrays.

use std::ops::Range;
use std::path::Path;

use ndarray::{s, Array3, ArrayView3, ArrayViewMut2, ArrayViewMut3, Axis};

use crate::memory::check_host_array;
use crate::{Error, Result};

/// The default size of one chunk of frames read at a time, in bytes (256 MiB).
pub const DEFAULT_CHUNK_BYTES: usize = 256 << 20;

/// A stack of detector frames of one shape, read frame range by frame range, so that a stack
/// larger than memory can be streamed (see [`for_each_chunk`]).
pub trait FrameStack {
    /// The file (or folder, or pattern) the frames come from, for messages.
    fn source(&self) -> &Path;

    /// The number of frames.
    fn len(&self) -> usize;

    /// Whether the stack has no frames.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The shape `[nu, nv]` of one frame (image columns, image rows).
    fn frame_shape(&self) -> [usize; 2];

    /// Reads the frames `first .. first + out.shape()[0]` into `out` (`[frames, nu, nv]`).
    fn read_into(&mut self, first: usize, out: ArrayViewMut3<'_, f32>) -> Result<()>;

    /// Reads the detector rows `rows` (of `v`, 0 the image's bottom row) of the frames
    /// `first .. first + out.shape()[0]` into `out` (`[frames, nu, rows.len()]`), so that a
    /// slab of rows can be streamed without holding whole frames. The default reads one whole
    /// frame at a time and keeps the rows; readers that can read rows alone (HDF5 hyperslabs)
    /// do so.
    fn read_rows_into(
        &mut self,
        first: usize,
        rows: Range<usize>,
        out: ArrayViewMut3<'_, f32>,
    ) -> Result<()> {
        read_rows_by_frames(self, first, rows, out)
    }
}

/// [`FrameStack::read_rows_into`] by whole frames: one frame at a time read and its rows kept.
pub(crate) fn read_rows_by_frames<S: FrameStack + ?Sized>(
    stack: &mut S,
    first: usize,
    rows: Range<usize>,
    mut out: ArrayViewMut3<'_, f32>,
) -> Result<()> {
    let [nu, nv] = stack.frame_shape();
    check_rows(stack.source(), nv, &rows, [nu, rows.len()], &out)?;
    check_host_array(&[1, nu, nv], std::mem::size_of::<f32>())?;
    let mut frame = Array3::<f32>::zeros([1, nu, nv]);
    for (j, mut o) in out.axis_iter_mut(Axis(0)).enumerate() {
        stack.read_into(first + j, frame.view_mut())?;
        o.assign(&frame.slice(s![0, .., rows.clone()]));
    }
    Ok(())
}

/// Errors unless the frames `first .. first + k` exist.
pub(crate) fn check_read_count(stack: &dyn FrameStack, first: usize, k: usize) -> Result<()> {
    if first.checked_add(k).is_none_or(|end| end > stack.len()) {
        return Err(Error::invalid(format!(
            "frames {first}..{} of {}: it has {} frames",
            first.saturating_add(k),
            stack.source().display(),
            stack.len()
        )));
    }
    Ok(())
}

/// Errors unless `rows` lie in `0..nv` and `out` is `[k, shape[0], shape[1]]`.
pub(crate) fn check_rows(
    source: &Path,
    nv: usize,
    rows: &Range<usize>,
    shape: [usize; 2],
    out: &ArrayViewMut3<'_, f32>,
) -> Result<()> {
    if rows.start > rows.end || rows.end > nv {
        return Err(Error::invalid(format!(
            "rows {}..{} of {}: its frames have {nv} rows",
            rows.start,
            rows.end,
            source.display()
        )));
    }
    let (k, a, b) = out.dim();
    if [a, b] != shape {
        return Err(Error::shape(
            format!("reading rows of {}", source.display()),
            &[k, shape[0], shape[1]],
            &[k, a, b],
        ));
    }
    Ok(())
}

/// Errors unless `out` is `[k, nu, nv]` for the stack's frame shape and `first + k` frames exist.
pub(crate) fn check_read(
    stack: &dyn FrameStack,
    first: usize,
    out: &ArrayViewMut3<'_, f32>,
) -> Result<()> {
    let [nu, nv] = stack.frame_shape();
    let (k, a, b) = out.dim();
    if (a, b) != (nu, nv) {
        return Err(Error::shape(
            format!("reading frames of {}", stack.source().display()),
            &[k, nu, nv],
            &[k, a, b],
        ));
    }
    if first.checked_add(k).is_none_or(|end| end > stack.len()) {
        return Err(Error::invalid(format!(
            "frames {first}..{} of {}: it has {} frames",
            first.saturating_add(k),
            stack.source().display(),
            stack.len()
        )));
    }
    Ok(())
}

/// Reads the frames `range` of `stack` into a new array `[frames, nu, nv]`, after checking
/// that it fits in the host-memory limit (see [`crate::memory`]).
pub fn read_frames(stack: &mut dyn FrameStack, range: Range<usize>) -> Result<Array3<f32>> {
    let [nu, nv] = stack.frame_shape();
    if range.start > range.end || range.end > stack.len() {
        return Err(Error::invalid(format!(
            "frames {}..{} of {}: it has {} frames",
            range.start,
            range.end,
            stack.source().display(),
            stack.len()
        )));
    }
    let shape = [range.end - range.start, nu, nv];
    check_host_array(&shape, std::mem::size_of::<f32>())?;
    let mut out = Array3::<f32>::zeros(shape);
    stack.read_into(range.start, out.view_mut())?;
    Ok(out)
}

/// Reads every frame of `stack` (see [`read_frames`]).
pub fn read_all_frames(stack: &mut dyn FrameStack) -> Result<Array3<f32>> {
    let n = stack.len();
    read_frames(stack, 0..n)
}

/// The number of frames of `frame_shape` (at least 1) in a chunk of at most `chunk_bytes`.
pub fn frames_per_chunk(frame_shape: [usize; 2], chunk_bytes: usize) -> usize {
    let frame = frame_shape[0]
        .saturating_mul(frame_shape[1])
        .saturating_mul(std::mem::size_of::<f32>())
        .max(1);
    (chunk_bytes / frame).max(1)
}

/// Streams `stack` in chunks of at most `frames_per_chunk` frames: one buffer of that size is
/// allocated (after a memory check) and `f(first, chunk)` is called for each chunk in order,
/// `chunk` holding the frames `first .. first + chunk.shape()[0]`.
///
/// ```no_run
/// use rodl::io::{for_each_chunk, frames_per_chunk, FrameStack, TiffStack, DEFAULT_CHUNK_BYTES};
/// let mut stack = TiffStack::open("scan/proj_*.tif")?;
/// let per_chunk = frames_per_chunk(stack.frame_shape(), DEFAULT_CHUNK_BYTES);
/// let mut total = 0.0f64;
/// for_each_chunk(&mut stack, per_chunk, |_first, chunk| {
///     total += chunk.iter().map(|&x| x as f64).sum::<f64>();
///     Ok(())
/// })?;
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn for_each_chunk(
    stack: &mut dyn FrameStack,
    frames_per_chunk: usize,
    mut f: impl FnMut(usize, ArrayView3<'_, f32>) -> Result<()>,
) -> Result<()> {
    let n = stack.len();
    let [nu, nv] = stack.frame_shape();
    let per = frames_per_chunk.clamp(1, n.max(1));
    check_host_array(&[per, nu, nv], std::mem::size_of::<f32>())?;
    let mut buf = Array3::<f32>::zeros([per, nu, nv]);
    let mut first = 0;
    while first < n {
        let k = per.min(n - first);
        let mut chunk = buf.slice_mut(s![..k, .., ..]);
        stack.read_into(first, chunk.view_mut())?;
        f(first, chunk.view())?;
        first += k;
    }
    Ok(())
}

/// A pixel type that a frame can be converted from.
pub(crate) trait PixelValue: Copy {
    fn to_f32(self) -> f32;
}

macro_rules! pixel_value {
    ($($t:ty),*) => {$(
        impl PixelValue for $t {
            #[inline]
            fn to_f32(self) -> f32 {
                self as f32
            }
        }
    )*};
}
pixel_value!(u8, u16, u32, i8, i16, i32, f32, f64);

/// Stores a row-major image `rows × cols` (`image[row * cols + col]`) into `out = [u, v] =
/// [cols, rows]` with the orientation of the module documentation.
pub(crate) fn put_image<P: PixelValue>(image: &[P], mut out: ArrayViewMut2<'_, f32>) {
    let (nu, nv) = out.dim();
    debug_assert_eq!(image.len(), nu * nv);
    for (row, line) in image.chunks_exact(nu).enumerate() {
        let mut col_out = out.index_axis_mut(Axis(1), nv - 1 - row);
        for (o, &p) in col_out.iter_mut().zip(line) {
            *o = p.to_f32();
        }
    }
}
