//! Streamed transfers between host arrays and device buffers: two copy streams (one up, one
//! down) with rings of pinned chunks and the events that order them against the compute stream
//! ([`Lanes`]), and the strided places of a piece of an array ([`Runs`]: a slab along any axis
//! of a C-order array, a group of views), gathered and scattered through the pinned chunks or
//! copied on the device with one pitched copy ([`copy_device`]).
//!
//! The host side of a transfer (pageable ↔ pinned) is done by several threads, chunk by chunk,
//! while the DMA of the previous chunk runs; up to [`RING`] chunks are in flight per direction.
//! The ray transform in pieces ([`super::pieces`]) streams its slabs and view groups
//! through them.

use std::ffi::c_void;
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{sys, CudaEvent, CudaStream};

use super::context::{driver_err, par_copy, DeviceCtx, PinnedBuf};
use crate::{Error, Result};

/// Bytes per pinned staging chunk (at most; smaller for small problems).
pub(crate) const CHUNK: usize = 16 << 20;
/// Pinned chunks per direction.
pub(crate) const RING: usize = 4;
/// Bytes of an f32.
const F32: usize = std::mem::size_of::<f32>();

/// Where one piece's values lie in a whole array: `count` runs of `len` values, `pitch` values
/// apart, the first at `offset`; packed one after the other in a piece's buffer. A view group,
/// and a slab along axis 0, is one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Runs {
    offset: usize,
    len: usize,
    pitch: usize,
    count: usize,
}

impl Runs {
    /// One run of `len` values at `offset`.
    pub(crate) fn contiguous(offset: usize, len: usize) -> Self {
        Runs {
            offset,
            len,
            pitch: len,
            count: 1,
        }
    }

    /// The slab `slab` along `axis` of a C-order array of `shape`.
    pub(crate) fn slab(shape: [usize; 3], axis: usize, slab: &Range<usize>) -> Self {
        let outer: usize = shape[..axis].iter().product();
        let inner: usize = shape[axis + 1..].iter().product();
        if outer <= 1 {
            return Self::contiguous(slab.start * inner, slab.len() * inner);
        }
        Runs {
            offset: slab.start * inner,
            len: slab.len() * inner,
            pitch: shape[axis] * inner,
            count: outer,
        }
    }

    /// The index, in the whole array, of the piece's first value.
    pub(crate) fn offset(&self) -> usize {
        self.offset
    }

    /// The values of the piece.
    pub(crate) fn total(&self) -> usize {
        self.len * self.count
    }

    /// Whether the values are one run.
    pub(crate) fn is_contiguous(&self) -> bool {
        self.count <= 1 || self.pitch == self.len
    }

    /// Whether the runs lie within an array of `n` values.
    pub(crate) fn within(&self, n: usize) -> bool {
        self.count == 0
            || (self.count - 1)
                .checked_mul(self.pitch)
                .and_then(|e| e.checked_add(self.offset))
                .and_then(|e| e.checked_add(self.len))
                .is_some_and(|e| e <= n)
    }

    /// Copies the packed values `[x0, x0 + n)` of the piece from the whole array at `whole`
    /// into the packed buffer at `packed`, the runs in parallel.
    ///
    /// # Safety
    /// `whole` must hold the runs and `packed` `n` values, disjoint from them.
    pub(crate) unsafe fn gather(&self, whole: *const f32, packed: *mut f32, x0: usize, n: usize) {
        // SAFETY: the caller's guarantees.
        unsafe { self.copy(whole as usize, packed as usize, x0, n, true) }
    }

    /// Copies the packed values `[x0, x0 + n)` of the piece from the packed buffer at `packed`
    /// into their places in the whole array at `whole`, the runs in parallel.
    ///
    /// # Safety
    /// As [`Self::gather`].
    pub(crate) unsafe fn scatter(&self, packed: *const f32, whole: *mut f32, x0: usize, n: usize) {
        // SAFETY: the caller's guarantees.
        unsafe { self.copy(whole as usize, packed as usize, x0, n, false) }
    }

    /// [`Self::gather`] (`gather`) or [`Self::scatter`] on addresses: only the destination is
    /// written.
    ///
    /// # Safety
    /// As [`Self::gather`].
    unsafe fn copy(&self, whole: usize, packed: usize, x0: usize, n: usize, gather: bool) {
        use rayon::prelude::*;
        if n == 0 {
            return;
        }
        if self.is_contiguous() {
            let w = whole + (self.offset + x0) * F32;
            // SAFETY: the caller's guarantees; one run of at least x0 + n values.
            unsafe {
                if gather {
                    par_copy(w as *const u8, packed as *mut u8, n * F32);
                } else {
                    par_copy(packed as *const u8, w as *mut u8, n * F32);
                }
            }
            return;
        }
        let first = x0 / self.len;
        let last = (x0 + n - 1) / self.len;
        (first..=last).into_par_iter().for_each(|j| {
            let lo = (j * self.len).max(x0);
            let hi = ((j + 1) * self.len).min(x0 + n);
            let src = self.offset + j * self.pitch + (lo - j * self.len);
            // SAFETY: run j holds the values [lo, hi) of the piece at `src` in the whole
            // array, and the packed buffer the same values at lo - x0 (the caller); the runs'
            // ranges are disjoint, so the threads write disjoint memory.
            unsafe {
                let w = (whole as *mut f32).add(src);
                let p = (packed as *mut f32).add(lo - x0);
                if gather {
                    std::ptr::copy_nonoverlapping(w, p, hi - lo);
                } else {
                    std::ptr::copy_nonoverlapping(p, w, hi - lo);
                }
            }
        });
    }
}

/// A ring of pinned chunks and the events of their last transfers.
pub(crate) struct Ring {
    bufs: Vec<PinnedBuf>,
    events: Vec<CudaEvent>,
    chunk: usize,
    next: usize,
}

impl Ring {
    fn new(ctx: &DeviceCtx, chunk: usize) -> Result<Self> {
        let bufs = (0..RING)
            .map(|_| PinnedBuf::new(ctx, chunk))
            .collect::<Result<Vec<_>>>()?;
        let events = (0..RING).map(|_| new_event(ctx)).collect::<Result<_>>()?;
        Ok(Ring {
            bufs,
            events,
            chunk,
            next: 0,
        })
    }

    /// Copies the piece `runs` of `src`, packed, to device address `dst` on `stream`: each
    /// chunk into a free pinned buffer (several threads), then an asynchronous DMA; returns when
    /// the last DMA is queued.
    ///
    /// # Safety
    /// `dst` must address at least `runs.total()` f32 values of this context, not used by other
    /// work until `stream`'s copies are done.
    pub(crate) unsafe fn upload(
        &mut self,
        stream: &CudaStream,
        src: &[f32],
        runs: Runs,
        dst: u64,
    ) -> Result<()> {
        if !runs.within(src.len()) {
            return Err(Error::invalid(format!(
                "a piece {runs:?} beyond an array of {} values",
                src.len()
            )));
        }
        let bytes = runs.total() * F32;
        let mut off = 0usize;
        while off < bytes {
            let i = self.next;
            self.next = (i + 1) % self.bufs.len();
            self.events[i]
                .synchronize()
                .map_err(driver_err("waiting for a staging buffer"))?;
            let n = self.chunk.min(bytes - off);
            // SAFETY: `src` holds the runs (checked above); the pinned buffer holds `chunk` ≥ n
            // bytes (a whole number of values) and its last DMA has finished (the event above).
            unsafe {
                let packed = self.bufs[i].ptr() as *mut f32;
                runs.gather(src.as_ptr(), packed, off / F32, n / F32);
                sys::cuMemcpyHtoDAsync_v2(
                    dst + off as u64,
                    self.bufs[i].ptr() as *const c_void,
                    n,
                    stream.cu_stream(),
                )
            }
            .result()
            .map_err(driver_err("host-to-device copy of a piece"))?;
            self.events[i]
                .record(stream)
                .map_err(driver_err("recording a staging event"))?;
            off += n;
        }
        Ok(())
    }

    /// Copies `runs.total()` packed values from device address `src` into their places `runs`
    /// in `dst` through the pinned buffers on `stream` (up to [`RING`] chunks in flight);
    /// returns when `dst` holds them.
    ///
    /// # Safety
    /// `src` must address at least `runs.total()` f32 values of this context whose writes are
    /// ordered before `stream`'s work.
    pub(crate) unsafe fn download(
        &mut self,
        stream: &CudaStream,
        src: u64,
        dst: &mut [f32],
        runs: Runs,
    ) -> Result<()> {
        if !runs.within(dst.len()) {
            return Err(Error::invalid(format!(
                "a piece {runs:?} beyond an array of {} values",
                dst.len()
            )));
        }
        let bytes = runs.total() * F32;
        let base = dst.as_mut_ptr();
        let chunks = bytes.div_ceil(self.chunk);
        let nb = self.bufs.len();
        let chunk = self.chunk;
        let span = |k: usize| (k * chunk, chunk.min(bytes - k * chunk));
        let issue = |ring: &mut Ring, k: usize| -> Result<()> {
            let (off, n) = span(k);
            let i = k % nb;
            // SAFETY: the pinned buffer holds `chunk` ≥ n bytes and is not being read (its
            // previous chunk was copied out before this one is issued); `src` holds `bytes`.
            unsafe {
                sys::cuMemcpyDtoHAsync_v2(
                    ring.bufs[i].ptr() as *mut c_void,
                    src + off as u64,
                    n,
                    stream.cu_stream(),
                )
            }
            .result()
            .map_err(driver_err("device-to-host copy of a piece"))?;
            ring.events[i]
                .record(stream)
                .map_err(driver_err("recording a staging event"))
        };
        for k in 0..chunks.min(nb) {
            issue(self, k)?;
        }
        for k in 0..chunks {
            let i = k % nb;
            self.events[i]
                .synchronize()
                .map_err(driver_err("device-to-host copy of a piece"))?;
            let (off, n) = span(k);
            // SAFETY: the chunk's DMA has finished; `dst` holds the runs (checked above).
            unsafe { runs.scatter(self.bufs[i].ptr() as *const f32, base, off / F32, n / F32) };
            if k + nb < chunks {
                issue(self, k + nb)?;
            }
        }
        Ok(())
    }
}

pub(crate) fn new_event(ctx: &DeviceCtx) -> Result<CudaEvent> {
    ctx.context()
        .new_event(None)
        .map_err(driver_err("creating an event"))
}

/// The copy streams, the pinned rings and the events of a runner (created on first use).
pub(crate) struct Lanes {
    pub(crate) up: Arc<CudaStream>,
    pub(crate) down: Arc<CudaStream>,
    pub(crate) up_ring: Ring,
    pub(crate) down_ring: Ring,
    /// A streamed input buffer was filled (recorded on `up`).
    pub(crate) ready: [CudaEvent; 2],
    /// The kernels are done with a streamed input buffer (recorded on the compute stream).
    pub(crate) free: [CudaEvent; 2],
    /// The kernels are done with an output buffer (recorded on the compute stream).
    pub(crate) done: [CudaEvent; 2],
    /// A mark on any stream, for one stream to wait for another.
    pub(crate) mark: CudaEvent,
}

impl Lanes {
    pub(crate) fn new(ctx: &DeviceCtx, chunk: usize) -> Result<Self> {
        let stream = || {
            ctx.context()
                .new_stream()
                .map_err(driver_err("creating a copy stream"))
        };
        let two = || -> Result<[CudaEvent; 2]> { Ok([new_event(ctx)?, new_event(ctx)?]) };
        Ok(Lanes {
            up: stream()?,
            down: stream()?,
            up_ring: Ring::new(ctx, chunk)?,
            down_ring: Ring::new(ctx, chunk)?,
            ready: two()?,
            free: two()?,
            done: two()?,
            mark: new_event(ctx)?,
        })
    }

    /// Makes `waiter` wait for the work queued so far on `on`.
    pub(crate) fn order(&self, waiter: &CudaStream, on: &CudaStream) -> Result<()> {
        self.mark
            .record(on)
            .map_err(driver_err("recording an event"))?;
        waiter
            .wait(&self.mark)
            .map_err(driver_err("ordering two streams"))
    }

    /// Waits until both copy streams are idle (so that no copy outlives its buffers).
    pub(crate) fn quiesce(&self) -> Result<()> {
        self.up
            .synchronize()
            .map_err(driver_err("waiting for the uploads"))?;
        self.down
            .synchronize()
            .map_err(driver_err("waiting for the downloads"))
    }
}

/// Copies the piece `runs` between a whole device array at `whole` and a packed device buffer
/// at `packed` (`gather`: whole → packed; else packed → whole) with one pitched copy on
/// `stream`.
///
/// # Safety
/// `whole` must address device memory of the current context holding the runs, `packed` at
/// least `runs.total()` values, both ordered on `stream` with their other users.
pub(crate) unsafe fn copy_device(
    runs: Runs,
    whole: u64,
    packed: u64,
    gather: bool,
    stream: &CudaStream,
) -> Result<()> {
    if runs.total() == 0 {
        return Ok(());
    }
    let at = whole + (runs.offset * F32) as u64;
    let (src, src_pitch, dst, dst_pitch) = if gather {
        (at, runs.pitch * F32, packed, runs.len * F32)
    } else {
        (packed, runs.len * F32, at, runs.pitch * F32)
    };
    let copy = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: std::ptr::null(),
        srcDevice: src,
        srcArray: std::ptr::null_mut(),
        srcPitch: src_pitch,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: std::ptr::null_mut(),
        dstDevice: dst,
        dstArray: std::ptr::null_mut(),
        dstPitch: dst_pitch,
        WidthInBytes: runs.len * F32,
        Height: runs.count,
    };
    // SAFETY: both sides hold `count` rows of `len` values at their pitches (the caller).
    unsafe { sys::cuMemcpy2DAsync_v2(&copy, stream.cu_stream()) }
        .result()
        .map_err(driver_err("a pitched device copy of a slab"))
}

/// Uploads the piece `runs` of `whole` into device buffer `buf` (address `p`) on the upload
/// stream once the kernels that last read that buffer are done (`lanes.free[buf]`), and orders
/// the compute stream after the upload (`lanes.ready[buf]`).
///
/// # Safety
/// `p` must address at least `runs.total()` f32 values of the lanes' device.
pub(crate) unsafe fn upload(
    lanes: &mut Lanes,
    compute: &CudaStream,
    whole: &[f32],
    runs: Runs,
    p: u64,
    buf: usize,
) -> Result<()> {
    lanes
        .up
        .wait(&lanes.free[buf])
        .map_err(driver_err("ordering an upload"))?;
    // SAFETY: the buffer holds the values (the caller), and the kernels that read it last are
    // done (the wait above).
    unsafe { lanes.up_ring.upload(&lanes.up, whole, runs, p)? };
    lanes.ready[buf]
        .record(&lanes.up)
        .map_err(driver_err("recording an upload"))?;
    compute
        .wait(&lanes.ready[buf])
        .map_err(driver_err("ordering a kernel after its upload"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed values of a slab along each axis, copied in chunks that start and end
    /// anywhere in a run (as the pinned buffers cut them), are the slab's, and go back to their
    /// places. Needs no GPU.
    #[test]
    fn runs_copy_any_chunk_of_a_strided_slab() {
        let shape = [5, 7, 9];
        let whole: Vec<f32> = (0..5 * 7 * 9).map(|i| i as f32).collect();
        for axis in 0..3 {
            let slab = 2..5;
            let runs = Runs::slab(shape, axis, &slab);
            assert!(runs.within(whole.len()));
            let want: Vec<f32> = (0..whole.len())
                .filter(|&i| {
                    let idx = [i / 63, i / 9 % 7, i % 9];
                    slab.contains(&idx[axis])
                })
                .map(|i| whole[i])
                .collect();
            assert_eq!(runs.total(), want.len());
            for chunk in [1, 4, 5, 13, want.len()] {
                let mut packed = vec![-1.0f32; want.len()];
                let mut back = vec![0.0f32; whole.len()];
                for x0 in (0..want.len()).step_by(chunk) {
                    let n = chunk.min(want.len() - x0);
                    // SAFETY: `whole` holds the runs (checked), `packed` the chunk's values.
                    unsafe {
                        runs.gather(whole.as_ptr(), packed[x0..].as_mut_ptr(), x0, n);
                        runs.scatter(packed[x0..].as_ptr(), back.as_mut_ptr(), x0, n);
                    }
                }
                assert_eq!(packed, want, "axis {axis}, chunks of {chunk}");
                for (i, (&b, &w)) in back.iter().zip(&whole).enumerate() {
                    let idx = [i / 63, i / 9 % 7, i % 9];
                    let expect = if slab.contains(&idx[axis]) { w } else { 0.0 };
                    assert_eq!(b, expect, "axis {axis}, chunks of {chunk}, value {i}");
                }
            }
        }
        // Runs beyond the array are refused before any copy.
        let last = Runs::slab([5, 7, 9], 2, &(6..9));
        assert!(last.within(5 * 7 * 9) && !last.within(5 * 7 * 9 - 1));
    }
}
