//! The CUDA ray transform in pieces (crate feature `cuda`): a plan of view groups × volume slabs
//! ([`super::split`]) run with the data streamed through pinned staging buffers on two copy
//! streams (one up, one down) while the kernels run on the device's stream.
//!
//! * Forward: for each view group, its rows of the sinogram stay on the device and the slabs of
//!   the volume stream past them, each piece adding its taps into the rows; the rows then go
//!   back to the host while the next group computes.
//! * Adjoint: for each slab, its part of the volume stays on the device and the view groups of
//!   the sinogram stream past it, each piece's transpose adding into the slab; the slab then
//!   goes back while the next slab computes.
//!
//! Two device buffers of each streamed kind alternate (one in transfer, one in use), ordered by
//! events: a copy waits for the kernels that used its buffer last, a kernel for the copy that
//! filled it. The host side of a transfer (pageable ↔ pinned) is done by several threads, chunk
//! by chunk, while the DMA of the previous chunk runs. Device-resident inputs and outputs are
//! used in place (a slab and a view group are contiguous runs of memory), so the same code
//! serves every mix of host and device data.

use std::ffi::c_void;
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::{sys, CudaEvent, CudaSlice, CudaStream, DevicePtr};

use super::cuda::CudaRay;
use super::geometry::VecGeometry;
use super::grid::Grid;
use crate::backend::cuda::{device_ctx, driver_err, par_copy, DeviceCtx, PinnedBuf};
use crate::{Error, Result};

/// Bytes per pinned staging chunk (at most; smaller for small problems).
const CHUNK: usize = 16 << 20;
/// Pinned chunks per direction.
const RING: usize = 4;
/// Bytes of an f32.
const F32: usize = std::mem::size_of::<f32>();

/// Input data of a piecewise call: host memory, or a device address of the runner's GPU.
pub(crate) enum In<'a> {
    /// Host memory (copied up piece by piece).
    Host(&'a [f32]),
    /// Device memory of the runner's GPU holding all the values (used in place).
    Device(u64),
}

/// Output data of a piecewise call.
pub(crate) enum Out<'a> {
    /// Host memory (copied down piece by piece).
    Host(&'a mut [f32]),
    /// Device memory of the runner's GPU with room for all the values (written in place).
    Device(u64),
}

/// A ring of pinned chunks and the events of their last transfers.
struct Ring {
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

    /// Copies `src` to device address `dst` on `stream`: each chunk into a free pinned buffer
    /// (several threads), then an asynchronous DMA; returns when the last DMA is queued.
    ///
    /// # Safety
    /// `dst` must address at least `src.len()` f32 values of this context, not used by other
    /// work until `stream`'s copies are done.
    unsafe fn upload(&mut self, stream: &CudaStream, src: &[f32], dst: u64) -> Result<()> {
        let bytes = std::mem::size_of_val(src);
        let base = src.as_ptr() as *const u8;
        let mut off = 0usize;
        while off < bytes {
            let i = self.next;
            self.next = (i + 1) % self.bufs.len();
            self.events[i]
                .synchronize()
                .map_err(driver_err("waiting for a staging buffer"))?;
            let n = self.chunk.min(bytes - off);
            // SAFETY: `src` holds `bytes` bytes; the pinned buffer holds `chunk` ≥ n bytes and
            // its last DMA has finished (the event above).
            unsafe {
                par_copy(base.add(off), self.bufs[i].ptr(), n);
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

    /// Copies `dst.len()` values from device address `src` into `dst` through the pinned
    /// buffers on `stream` (up to [`RING`] chunks in flight); returns when `dst` holds them.
    ///
    /// # Safety
    /// `src` must address at least `dst.len()` f32 values of this context whose writes are
    /// ordered before `stream`'s work.
    unsafe fn download(&mut self, stream: &CudaStream, src: u64, dst: &mut [f32]) -> Result<()> {
        let bytes = std::mem::size_of_val(dst);
        let base = dst.as_mut_ptr() as *mut u8;
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
            // SAFETY: the chunk's DMA has finished; `dst` holds `bytes` bytes.
            unsafe { par_copy(self.bufs[i].ptr(), base.add(off), n) };
            if k + nb < chunks {
                issue(self, k + nb)?;
            }
        }
        Ok(())
    }
}

fn new_event(ctx: &DeviceCtx) -> Result<CudaEvent> {
    ctx.context()
        .new_event(None)
        .map_err(driver_err("creating an event"))
}

/// The copy streams, the pinned rings and the events of a runner (created on first use).
struct Lanes {
    up: Arc<CudaStream>,
    down: Arc<CudaStream>,
    up_ring: Ring,
    down_ring: Ring,
    /// A streamed input buffer was filled (recorded on `up`).
    ready: [CudaEvent; 2],
    /// The kernels are done with a streamed input buffer (recorded on the compute stream).
    free: [CudaEvent; 2],
    /// The kernels are done with an output buffer (recorded on the compute stream).
    done: [CudaEvent; 2],
    /// A mark on any stream, for one stream to wait for another.
    mark: CudaEvent,
}

impl Lanes {
    fn new(ctx: &DeviceCtx, chunk: usize) -> Result<Self> {
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
    fn order(&self, waiter: &CudaStream, on: &CudaStream) -> Result<()> {
        self.mark
            .record(on)
            .map_err(driver_err("recording an event"))?;
        waiter
            .wait(&self.mark)
            .map_err(driver_err("ordering two streams"))
    }

    /// Waits until both copy streams are idle (so that no copy outlives its buffers).
    fn quiesce(&self) -> Result<()> {
        self.up
            .synchronize()
            .map_err(driver_err("waiting for the uploads"))?;
        self.down
            .synchronize()
            .map_err(driver_err("waiting for the downloads"))
    }
}

fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The device address of a buffer.
fn addr(ctx: &DeviceCtx, buf: &CudaSlice<f32>) -> u64 {
    buf.device_ptr(ctx.stream()).0
}

/// Two (or one) device buffers of `n` values, or none.
fn buffers(ctx: &DeviceCtx, count: usize, n: usize) -> Result<Vec<CudaSlice<f32>>> {
    (0..count).map(|_| ctx.alloc_raw::<f32>(n)).collect()
}

/// The ray transform of one GPU as a plan of pieces: the slabs along the volume's first axis
/// and the view groups, each piece a [`CudaRay`] of its views on its slab.
pub(crate) struct PieceRunner {
    ctx: Arc<DeviceCtx>,
    slabs: Vec<Range<usize>>,
    groups: Vec<Range<usize>>,
    /// Group-major: the piece (group g, slab s) is `rays[g * slabs.len() + s]`.
    rays: Vec<CudaRay>,
    /// Values per slice of the volume along axis 0.
    slice_len: usize,
    /// Values per view of the data.
    view_len: usize,
    lanes: Mutex<Option<Lanes>>,
}

impl PieceRunner {
    /// The runner of `geom` on `grid` on GPU `id` in the pieces `slabs` × `groups` (each list
    /// covering its axis in order). One piece is the whole transform (with its fast 2D
    /// transpose).
    pub(crate) fn new(
        id: usize,
        geom: &VecGeometry,
        grid: &Grid,
        slabs: Vec<Range<usize>>,
        groups: Vec<Range<usize>>,
    ) -> Result<Self> {
        let covers = |r: &[Range<usize>], n: usize| {
            !r.is_empty()
                && r[0].start == 0
                && r.last().map(|l| l.end) == Some(n)
                && r.windows(2).all(|w| w[0].end == w[1].start)
                && r.iter().all(|x| x.start < x.end)
        };
        if !covers(&slabs, grid.shape[0]) || !covers(&groups, geom.num_views()) {
            return Err(Error::invalid(format!(
                "pieces {slabs:?} × {groups:?} do not cover {} slices and {} views",
                grid.shape[0],
                geom.num_views()
            )));
        }
        let ctx = device_ctx(id)?;
        let mut rays = Vec::with_capacity(slabs.len() * groups.len());
        if slabs.len() == 1 && groups.len() == 1 {
            rays.push(CudaRay::new(id, geom, grid)?);
        } else {
            for g in &groups {
                for s in &slabs {
                    rays.push(CudaRay::piece(id, geom, g.clone(), grid, s.clone())?);
                }
            }
        }
        Ok(PieceRunner {
            ctx,
            slabs,
            groups,
            rays,
            slice_len: grid.shape[1] * grid.shape[2],
            view_len: geom.nu() * geom.nv(),
            lanes: Mutex::new(None),
        })
    }

    /// The slabs along axis 0.
    pub(crate) fn slabs(&self) -> &[Range<usize>] {
        &self.slabs
    }

    /// The view groups.
    pub(crate) fn groups(&self) -> &[Range<usize>] {
        &self.groups
    }

    fn max_slab(&self) -> usize {
        self.slabs.iter().map(|s| s.len()).max().unwrap_or(0) * self.slice_len
    }

    fn max_group(&self) -> usize {
        self.groups.iter().map(|g| g.len()).max().unwrap_or(0) * self.view_len
    }

    /// Whether a forward piece needs a scratch buffer for its rows (its kernel stores instead
    /// of adding, and more than one slab adds into the rows).
    fn forward_scratch(&self) -> bool {
        self.slabs.len() > 1 && !self.rays.iter().all(CudaRay::forward_adds)
    }

    /// The device bytes a call takes beyond device-resident data: the streamed buffers of the
    /// host-resident sides (two of a kind when the kind has more than one piece) and the
    /// forward's scratch rows.
    pub(crate) fn device_bytes(&self, host_volume: bool, host_data: bool, forward: bool) -> u128 {
        let two = |n: usize| if n > 1 { 2u128 } else { 1 };
        let mut b = 0u128;
        if host_volume {
            b += two(self.slabs.len()) * self.max_slab() as u128;
        }
        if host_data {
            b += two(self.groups.len()) * self.max_group() as u128;
        }
        if forward && self.forward_scratch() {
            b += self.max_group() as u128;
        }
        b * F32 as u128
    }

    fn lanes(&self) -> Result<MutexGuard<'_, Option<Lanes>>> {
        let mut g = lock(&self.lanes);
        if g.is_none() {
            let biggest = self.max_slab().max(self.max_group()) * F32;
            *g = Some(Lanes::new(&self.ctx, CHUNK.min(biggest.max(F32)))?);
        }
        Ok(g)
    }

    fn check_len(&self, what: &str, got: usize, want: usize) -> Result<()> {
        if got != want {
            return Err(Error::invalid(format!(
                "{what} of {got} values where the ray transform needs {want}"
            )));
        }
        Ok(())
    }

    fn volume_len(&self) -> usize {
        self.slabs.last().map_or(0, |s| s.end) * self.slice_len
    }

    fn data_len(&self) -> usize {
        self.groups.last().map_or(0, |g| g.end) * self.view_len
    }

    /// `sino = A vol`, piece by piece (see the [module](self)).
    pub(crate) fn forward(&self, vol: In<'_>, sino: Out<'_>) -> Result<()> {
        if let In::Host(h) = &vol {
            self.check_len("a volume", h.len(), self.volume_len())?;
        }
        if let Out::Host(h) = &sino {
            self.check_len("a sinogram", h.len(), self.data_len())?;
        }
        self.ctx.bind()?;
        let mut guard = self.lanes()?;
        let lanes = guard
            .as_mut()
            .ok_or_else(|| Error::Cuda("copy lanes missing".into()))?;
        let ns = self.slabs.len();
        let ng = self.groups.len();
        let host_vol = matches!(vol, In::Host(_));
        let host_sino = matches!(sino, Out::Host(_));
        let slab_bufs = buffers(
            &self.ctx,
            if host_vol { ns.min(2) } else { 0 },
            self.max_slab(),
        )?;
        let group_bufs = buffers(
            &self.ctx,
            if host_sino { ng.min(2) } else { 0 },
            self.max_group(),
        )?;
        let scratch = buffers(
            &self.ctx,
            usize::from(self.forward_scratch()),
            self.max_group(),
        )?;
        let r = self.forward_pieces(lanes, vol, sino, &slab_bufs, &group_bufs, &scratch);
        // No copy may outlive the buffers, whatever happened.
        let q = lanes.quiesce();
        r.and(q)
    }

    fn forward_pieces(
        &self,
        lanes: &mut Lanes,
        vol: In<'_>,
        mut sino: Out<'_>,
        slab_bufs: &[CudaSlice<f32>],
        group_bufs: &[CudaSlice<f32>],
        scratch: &[CudaSlice<f32>],
    ) -> Result<()> {
        let ctx = &*self.ctx;
        let compute = ctx.stream();
        let ns = self.slabs.len();
        // The copy streams start after the buffers' stream-ordered allocation.
        lanes.order(&lanes.up, compute)?;
        lanes.order(&lanes.down, compute)?;
        let mut k = 0usize; // pieces so far
        let mut pending: Option<(usize, usize)> = None; // (group, buffer) to download
        for (gi, g) in self.groups.iter().enumerate() {
            let gb = gi % 2;
            let rows = g.len() * self.view_len;
            let gptr = match &sino {
                Out::Host(_) => addr(ctx, &group_bufs[gb.min(group_bufs.len() - 1)]),
                Out::Device(base) => base + (g.start * self.view_len * F32) as u64,
            };
            for (si, s) in self.slabs.iter().enumerate() {
                let sb = if ns > 1 { k % 2 } else { 0 };
                let vptr = match &vol {
                    In::Device(base) => base + (s.start * self.slice_len * F32) as u64,
                    In::Host(h) => {
                        let p = addr(ctx, &slab_bufs[sb]);
                        if ns > 1 || gi == 0 {
                            let part = &h[s.start * self.slice_len..s.end * self.slice_len];
                            // SAFETY: the buffer holds max_slab ≥ part.len() values.
                            unsafe { upload(lanes, compute, part, p, sb)? };
                        }
                        p
                    }
                };
                let ray = &self.rays[gi * ns + si];
                // SAFETY: `vptr` holds the slab's values and `gptr` the group's rows (device
                // data of this GPU, or this call's buffers); the scratch holds max_group values.
                unsafe {
                    if si == 0 {
                        ray.forward_raw(vptr, gptr, false)?;
                    } else if ray.forward_adds() {
                        ray.forward_raw(vptr, gptr, true)?;
                    } else {
                        let tmp = addr(ctx, &scratch[0]);
                        ray.forward_raw(vptr, tmp, false)?;
                        ray.add_raw(tmp, gptr, rows)?;
                    }
                }
                lanes.free[sb]
                    .record(compute)
                    .map_err(driver_err("recording a kernel"))?;
                k += 1;
            }
            if host_rows(&sino) {
                lanes.done[gb]
                    .record(compute)
                    .map_err(driver_err("recording a kernel"))?;
                if let Some((pg, pb)) = pending.take() {
                    self.download_rows(lanes, &mut sino, group_bufs, pg, pb)?;
                }
                pending = Some((gi, gb));
            }
        }
        if let Some((pg, pb)) = pending.take() {
            self.download_rows(lanes, &mut sino, group_bufs, pg, pb)?;
        }
        Ok(())
    }

    /// Downloads the values `span` of a host output from device buffer `buf` of `bufs` once the
    /// kernels that wrote it (recorded in `lanes.done[buf]`) are done; nothing for a device
    /// output.
    fn download(
        &self,
        lanes: &mut Lanes,
        out: &mut Out<'_>,
        bufs: &[CudaSlice<f32>],
        span: Range<usize>,
        buf: usize,
    ) -> Result<()> {
        let Out::Host(h) = out else {
            return Ok(());
        };
        let buf = buf.min(bufs.len() - 1);
        lanes
            .down
            .wait(&lanes.done[buf])
            .map_err(driver_err("ordering a download"))?;
        let part = &mut h[span];
        // SAFETY: the buffer holds these values, written by kernels ordered before the wait
        // above.
        unsafe {
            lanes
                .down_ring
                .download(&lanes.down, addr(&self.ctx, &bufs[buf]), part)
        }
    }

    /// The rows of view group `gi` into a host output.
    fn download_rows(
        &self,
        lanes: &mut Lanes,
        sino: &mut Out<'_>,
        group_bufs: &[CudaSlice<f32>],
        gi: usize,
        buf: usize,
    ) -> Result<()> {
        let g = &self.groups[gi];
        let span = g.start * self.view_len..g.end * self.view_len;
        self.download(lanes, sino, group_bufs, span, buf)
    }

    /// `vol = Aᵀ sino`, piece by piece (see the [module](self)).
    pub(crate) fn transpose(&self, sino: In<'_>, vol: Out<'_>) -> Result<()> {
        if let In::Host(h) = &sino {
            self.check_len("a sinogram", h.len(), self.data_len())?;
        }
        if let Out::Host(h) = &vol {
            self.check_len("a volume", h.len(), self.volume_len())?;
        }
        self.ctx.bind()?;
        let mut guard = self.lanes()?;
        let lanes = guard
            .as_mut()
            .ok_or_else(|| Error::Cuda("copy lanes missing".into()))?;
        let ns = self.slabs.len();
        let ng = self.groups.len();
        let host_sino = matches!(sino, In::Host(_));
        let host_vol = matches!(vol, Out::Host(_));
        let group_bufs = buffers(
            &self.ctx,
            if host_sino { ng.min(2) } else { 0 },
            self.max_group(),
        )?;
        let slab_bufs = buffers(
            &self.ctx,
            if host_vol { ns.min(2) } else { 0 },
            self.max_slab(),
        )?;
        let r = self.transpose_pieces(lanes, sino, vol, &group_bufs, &slab_bufs);
        let q = lanes.quiesce();
        r.and(q)
    }

    fn transpose_pieces(
        &self,
        lanes: &mut Lanes,
        sino: In<'_>,
        mut vol: Out<'_>,
        group_bufs: &[CudaSlice<f32>],
        slab_bufs: &[CudaSlice<f32>],
    ) -> Result<()> {
        let ctx = &*self.ctx;
        let compute = ctx.stream();
        let ns = self.slabs.len();
        let ng = self.groups.len();
        lanes.order(&lanes.up, compute)?;
        lanes.order(&lanes.down, compute)?;
        let mut k = 0usize;
        let mut pending: Option<(usize, usize)> = None; // (slab, buffer) to download
        for (si, s) in self.slabs.iter().enumerate() {
            let sb = si % 2;
            let vptr = match &vol {
                Out::Host(_) => addr(ctx, &slab_bufs[sb.min(slab_bufs.len() - 1)]),
                Out::Device(base) => base + (s.start * self.slice_len * F32) as u64,
            };
            for (gi, g) in self.groups.iter().enumerate() {
                let gb = if ng > 1 { k % 2 } else { 0 };
                let sptr = match &sino {
                    In::Device(base) => base + (g.start * self.view_len * F32) as u64,
                    In::Host(h) => {
                        let p = addr(ctx, &group_bufs[gb]);
                        if ng > 1 || si == 0 {
                            let rows = &h[g.start * self.view_len..g.end * self.view_len];
                            // SAFETY: the buffer holds max_group ≥ rows.len() values.
                            unsafe { upload(lanes, compute, rows, p, gb)? };
                        }
                        p
                    }
                };
                let ray = &self.rays[gi * ns + si];
                // SAFETY: `sptr` holds the group's rows and `vptr` the slab (device data of
                // this GPU, or this call's buffers).
                unsafe { ray.transpose_raw(sptr, vptr, gi > 0)? };
                lanes.free[gb]
                    .record(compute)
                    .map_err(driver_err("recording a kernel"))?;
                k += 1;
            }
            if let Out::Host(_) = &vol {
                lanes.done[sb]
                    .record(compute)
                    .map_err(driver_err("recording a kernel"))?;
                if let Some((ps, pb)) = pending.take() {
                    self.download_slab(lanes, &mut vol, slab_bufs, ps, pb)?;
                }
                pending = Some((si, sb));
            }
        }
        if let Some((ps, pb)) = pending.take() {
            self.download_slab(lanes, &mut vol, slab_bufs, ps, pb)?;
        }
        Ok(())
    }

    /// Slab `si` into a host output.
    fn download_slab(
        &self,
        lanes: &mut Lanes,
        vol: &mut Out<'_>,
        slab_bufs: &[CudaSlice<f32>],
        si: usize,
        buf: usize,
    ) -> Result<()> {
        let s = &self.slabs[si];
        let span = s.start * self.slice_len..s.end * self.slice_len;
        self.download(lanes, vol, slab_bufs, span, buf)
    }
}

fn host_rows(out: &Out<'_>) -> bool {
    matches!(out, Out::Host(_))
}

/// Uploads `part` into device buffer `buf` (address `p`) on the upload stream once the kernels
/// that last read that buffer are done (`lanes.free[buf]`), and orders the compute stream after
/// the upload (`lanes.ready[buf]`).
///
/// # Safety
/// `p` must address at least `part.len()` f32 values of the lanes' device.
unsafe fn upload(
    lanes: &mut Lanes,
    compute: &CudaStream,
    part: &[f32],
    p: u64,
    buf: usize,
) -> Result<()> {
    lanes
        .up
        .wait(&lanes.free[buf])
        .map_err(driver_err("ordering an upload"))?;
    // SAFETY: the buffer holds the values (the caller), and the kernels that read it last are
    // done (the wait above).
    unsafe { lanes.up_ring.upload(&lanes.up, part, p)? };
    lanes.ready[buf]
        .record(&lanes.up)
        .map_err(driver_err("recording an upload"))?;
    compute
        .wait(&lanes.ready[buf])
        .map_err(driver_err("ordering a kernel after its upload"))
}

#[cfg(test)]
mod tests {
    //! A profile of piece layouts on a GPU (ignored: it needs one, and it measures rather than
    //! checks). `RODL_PIECES_PROFILE=n` sets the cone problem of the benches (n³ volume, n
    //! views, detector 3n/2 × n); `RODL_PIECES_LAYOUTS="9x11,4x24"` the layouts, slabs × view
    //! groups (even splits). Each layout is timed on device-resident data (the pieces' kernels
    //! alone) and on host data (with the transfers).
    use super::*;
    use crate::tomo::split::{even_plan, SplitProblem};
    use crate::tomo::Geometry;
    use crate::{uniform_discr, UniformPartition};
    use std::time::Instant;

    #[test]
    #[ignore]
    fn profile_layouts() -> Result<()> {
        let n: usize = std::env::var("RODL_PIECES_PROFILE")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(256);
        let layouts = std::env::var("RODL_PIECES_LAYOUTS").unwrap_or_else(|_| "1x1,4x4".into());
        let space = uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[n, n, n])?;
        let part = |lo: &[f64], hi: &[f64], k: &[usize]| UniformPartition::new(lo, hi, k);
        let geometry = Geometry::cone_flat(
            &part(&[0.0], &[2.0 * std::f64::consts::PI], &[n])?,
            &part(&[-2.8284, -2.8859], &[2.8284, 2.8859], &[3 * n / 2, n])?,
            4.0,
            4.0,
            0.0,
            [0.0, 0.0, 1.0],
            [0.0, 0.0],
        )?;
        let grid = Grid::of(space.partition()?);
        let geom = geometry.vec();
        let nvol = n * n * n;
        let nsino = geom.num_views() * geom.nu() * geom.nv();
        let hvol = vec![1.0f32; nvol];
        let hsino = vec![1.0f32; nsino];
        let ctx = device_ctx(0)?;
        let dvol = ctx
            .stream()
            .clone_htod(&hvol)
            .map_err(driver_err("upload"))?;
        let dsino = ctx
            .stream()
            .clone_htod(&hsino)
            .map_err(driver_err("upload"))?;
        let (pv, ps) = (addr(&ctx, &dvol), addr(&ctx, &dsino));
        let mut out_vol = vec![0.0f32; nvol];
        let mut out_sino = vec![0.0f32; nsino];
        let sync = || ctx.stream().synchronize().map_err(driver_err("sync"));
        for l in layouts.split(',') {
            let (k, m) = l
                .split_once('x')
                .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
                .ok_or_else(|| Error::invalid(format!("layout {l}")))?;
            let t0 = Instant::now();
            let p = even_plan(&SplitProblem::of(&space, &geometry)?, k, m);
            let r = PieceRunner::new(0, geom, &grid, p.slabs().to_vec(), p.view_groups().to_vec())?;
            let setup = t0.elapsed().as_secs_f64();
            let time = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
                let t = Instant::now();
                f()?;
                sync()?;
                Ok(t.elapsed().as_secs_f64() * 1e3)
            };
            let fd = time(&mut || r.forward(In::Device(pv), Out::Device(ps)))?;
            let ad = time(&mut || r.transpose(In::Device(ps), Out::Device(pv)))?;
            let fh = time(&mut || r.forward(In::Host(&hvol), Out::Host(&mut out_sino)))?;
            let ah = time(&mut || r.transpose(In::Host(&hsino), Out::Host(&mut out_vol)))?;
            let gib = |b: u128| b as f64 / (1u64 << 30) as f64;
            println!(
                "cone_{n} {k:>3} slabs x {m:>3} groups: device data forward {fd:8.1} ms, adjoint \
                 {ad:8.1} ms; host data forward {fh:8.1} ms, adjoint {ah:8.1} ms (set-up {setup:.2} \
                 s, device buffers {:.2} / {:.2} GiB)",
                gib(r.device_bytes(true, true, true)),
                gib(r.device_bytes(true, true, false))
            );
        }
        Ok(())
    }
}
