//! The CUDA ray transform in pieces (crate feature `cuda`), run from the pieces' kernels that
//! `tomo` sets up: a plan of view groups × volume slabs
//! (`tomo::split`) run with the data streamed through pinned staging buffers on two copy
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
//! by chunk, while the DMA of the previous chunk runs.
//!
//! The slabs lie along one axis of the volume, the geometry's `VecGeometry::slab_axis` for 3D
//! (the rotation axis of circular and helical scans), so that each piece's kernels launch only
//! the band of detector rows that can reach its slab (`tomo::cuda::ray_piece`): the pieces of one
//! view group then set up about as many rays as the whole transform, where slabs across the
//! rotation axis each set up all of them. A slab along axis 0 (and a view group) is one
//! contiguous run of memory; a slab along another axis is a run per line of the axes before
//! it (`Runs`, with the copy streams in
//! [`super::lanes`]): the host side gathers and scatters those runs through the pinned buffers, and
//! device-resident data go through a pitched device copy into and out of a slab buffer.
//! Device-resident inputs and outputs that are contiguous are used in place, so the same code
//! serves every mix of host and device data.

use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::{CudaSlice, DevicePtr};

use super::lanes::{copy_device, upload, Lanes, Runs, CHUNK};
use super::ray::CudaRay;
use super::{device_ctx, driver_err, DeviceCtx};
use crate::backend::host_or_device::{In, Out};
use crate::{Error, Result};

/// Bytes of an f32.
const F32: usize = std::mem::size_of::<f32>();

fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The device address of a buffer.
fn addr(ctx: &DeviceCtx, buf: &CudaSlice<f32>) -> u64 {
    buf.device_ptr(&ctx.stream()).0
}

/// Two (or one) device buffers of `n` values, or none.
fn buffers(ctx: &DeviceCtx, count: usize, n: usize) -> Result<Vec<CudaSlice<f32>>> {
    (0..count).map(|_| ctx.alloc_raw::<f32>(n)).collect()
}

/// The ray transform of one GPU as a plan of pieces: the slabs along one axis of the volume
/// and the view groups, each piece a [`CudaRay`] of its views on its slab.
pub(crate) struct Runner {
    ctx: Arc<DeviceCtx>,
    /// The volume's shape (padded to three axes).
    shape: [usize; 3],
    /// The axis the slabs lie along.
    axis: usize,
    slabs: Vec<Range<usize>>,
    groups: Vec<Range<usize>>,
    /// Group-major: the piece (group g, slab s) is `rays[g * slabs.len() + s]`.
    rays: Vec<CudaRay>,
    /// Values per cell of thickness of a slab (the product of the other axes).
    slice_len: usize,
    /// Values per view of the data.
    view_len: usize,
    lanes: Mutex<Option<Lanes>>,
}

impl Runner {
    /// The runner on GPU `id` of the pieces `rays` (group-major: the piece of view group `g`
    /// and slab `s` is `rays[g * slabs.len() + s]`) of a volume of `shape` (padded to three
    /// axes) in `slabs` along `axis` × the view `groups`, with `view_len` values per view.
    pub(crate) fn new(
        id: usize,
        shape: [usize; 3],
        axis: usize,
        slabs: Vec<Range<usize>>,
        groups: Vec<Range<usize>>,
        rays: Vec<CudaRay>,
        view_len: usize,
    ) -> Result<Self> {
        if rays.len() != slabs.len() * groups.len() || axis >= 3 {
            return Err(Error::invalid(format!(
                "{} pieces for {} slabs × {} view groups (along axis {axis})",
                rays.len(),
                slabs.len(),
                groups.len()
            )));
        }
        Ok(Runner {
            ctx: device_ctx(id)?,
            shape,
            axis,
            slabs,
            groups,
            rays,
            slice_len: shape.iter().product::<usize>() / shape[axis].max(1),
            view_len,
            lanes: Mutex::new(None),
        })
    }

    fn max_slab(&self) -> usize {
        self.slabs.iter().map(|s| s.len()).max().unwrap_or(0) * self.slice_len
    }

    fn max_group(&self) -> usize {
        self.groups.iter().map(|g| g.len()).max().unwrap_or(0) * self.view_len
    }

    /// Where slab `si` lies in the volume.
    fn slab_runs(&self, si: usize) -> Runs {
        Runs::slab(self.shape, self.axis, &self.slabs[si])
    }

    /// Where view group `gi` lies in the data.
    fn group_runs(&self, gi: usize) -> Runs {
        let g = &self.groups[gi];
        Runs::contiguous(g.start * self.view_len, g.len() * self.view_len)
    }

    /// Whether the slabs are not contiguous in the volume (more than one, along an axis other
    /// than the first), so that device-resident volumes go through a slab buffer.
    fn strided(&self) -> bool {
        self.slabs.len() > 1 && (0..self.slabs.len()).any(|s| !self.slab_runs(s).is_contiguous())
    }

    /// Whether a forward piece needs a scratch buffer for its rows (its kernel stores instead
    /// of adding, and more than one slab adds into the rows).
    fn forward_scratch(&self) -> bool {
        self.slabs.len() > 1 && !self.rays.iter().all(CudaRay::forward_adds)
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
        self.shape.iter().product()
    }

    fn data_len(&self) -> usize {
        self.groups.last().map_or(0, |g| g.end) * self.view_len
    }

    /// The slab buffers of a call: two for a host volume in more than one slab (one for one
    /// slab), one for a device volume in strided slabs, none otherwise.
    fn slab_buffers(&self, host_volume: bool) -> Result<Vec<CudaSlice<f32>>> {
        let count = if host_volume {
            self.slabs.len().min(2)
        } else {
            usize::from(self.strided())
        };
        buffers(&self.ctx, count, self.max_slab())
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
        let compute = &ctx.stream();
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
                Out::Device(base) => base.device_addr() + (g.start * self.view_len * F32) as u64,
            };
            for si in 0..ns {
                let sb = if ns > 1 { k % 2 } else { 0 };
                let runs = self.slab_runs(si);
                let vptr = match &vol {
                    In::Device(base) if runs.is_contiguous() => {
                        base.device_addr() + (runs.offset() * F32) as u64
                    }
                    In::Device(base) => {
                        // A strided slab of a device volume: packed into the slab buffer on the
                        // compute stream, ahead of its kernels.
                        let p = addr(ctx, &slab_bufs[0]);
                        // SAFETY: the volume holds the runs (the caller's device data of this
                        // transform) and the buffer max_slab ≥ runs.total() values.
                        unsafe { copy_device(runs, base.device_addr(), p, true, compute)? };
                        p
                    }
                    In::Host(h) => {
                        let p = addr(ctx, &slab_bufs[sb]);
                        if ns > 1 || gi == 0 {
                            // SAFETY: the buffer holds max_slab ≥ runs.total() values.
                            unsafe { upload(lanes, compute, h, runs, p, sb)? };
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
                    let runs = self.group_runs(pg);
                    self.download(lanes, &mut sino, group_bufs, runs, pb)?;
                }
                pending = Some((gi, gb));
            }
        }
        if let Some((pg, pb)) = pending.take() {
            let runs = self.group_runs(pg);
            self.download(lanes, &mut sino, group_bufs, runs, pb)?;
        }
        Ok(())
    }

    /// Puts the values `runs` of an output from device buffer `buf` of `bufs` into their places
    /// once the kernels that wrote it (recorded in `lanes.done[buf]`) are done: a host output
    /// through the pinned buffers, a device output by a pitched copy on the compute stream
    /// where the runs are strided, nothing for a contiguous device output (written in place).
    fn download(
        &self,
        lanes: &mut Lanes,
        out: &mut Out<'_>,
        bufs: &[CudaSlice<f32>],
        runs: Runs,
        buf: usize,
    ) -> Result<()> {
        let h = match out {
            Out::Device(_) if runs.is_contiguous() => return Ok(()),
            Out::Device(base) => {
                // SAFETY: the buffer holds the packed values, written by kernels queued before
                // on the compute stream; the output holds the runs (the caller's device data).
                return unsafe {
                    copy_device(
                        runs,
                        base.device_addr(),
                        addr(&self.ctx, &bufs[0]),
                        false,
                        &self.ctx.stream(),
                    )
                };
            }
            Out::Host(h) => h,
        };
        let buf = buf.min(bufs.len() - 1);
        lanes
            .down
            .wait(&lanes.done[buf])
            .map_err(driver_err("ordering a download"))?;
        // SAFETY: the buffer holds these values, written by kernels ordered before the wait
        // above.
        unsafe {
            lanes
                .down_ring
                .download(&lanes.down, addr(&self.ctx, &bufs[buf]), h, runs)
        }
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
        let compute = &ctx.stream();
        let ns = self.slabs.len();
        let ng = self.groups.len();
        lanes.order(&lanes.up, compute)?;
        lanes.order(&lanes.down, compute)?;
        let mut k = 0usize;
        let mut pending: Option<(usize, usize)> = None; // (slab, buffer) to download
        for si in 0..ns {
            let sb = si % 2;
            let runs = self.slab_runs(si);
            let in_place = matches!(vol, Out::Device(_)) && runs.is_contiguous();
            let vptr = match &vol {
                Out::Device(base) if in_place => base.device_addr() + (runs.offset() * F32) as u64,
                _ => addr(ctx, &slab_bufs[sb.min(slab_bufs.len() - 1)]),
            };
            for (gi, g) in self.groups.iter().enumerate() {
                let gb = if ng > 1 { k % 2 } else { 0 };
                let sptr = match &sino {
                    In::Device(base) => base.device_addr() + (g.start * self.view_len * F32) as u64,
                    In::Host(h) => {
                        let p = addr(ctx, &group_bufs[gb]);
                        if ng > 1 || si == 0 {
                            // SAFETY: the buffer holds max_group ≥ the group's values.
                            unsafe { upload(lanes, compute, h, self.group_runs(gi), p, gb)? };
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
            match &vol {
                Out::Host(_) => {
                    lanes.done[sb]
                        .record(compute)
                        .map_err(driver_err("recording a kernel"))?;
                    if let Some((ps, pb)) = pending.take() {
                        let runs = self.slab_runs(ps);
                        self.download(lanes, &mut vol, slab_bufs, runs, pb)?;
                    }
                    pending = Some((si, sb));
                }
                // A strided slab of a device volume: its buffer into place, on the compute
                // stream before the next slab's kernels reuse it.
                Out::Device(_) if !in_place => {
                    self.download(lanes, &mut vol, slab_bufs, runs, 0)?
                }
                Out::Device(_) => {}
            }
        }
        if let Some((ps, pb)) = pending.take() {
            let runs = self.slab_runs(ps);
            self.download(lanes, &mut vol, slab_bufs, runs, pb)?;
        }
        Ok(())
    }
}

fn host_rows(out: &Out<'_>) -> bool {
    matches!(out, Out::Host(_))
}

impl Runner {
    /// Makes every piece's kernels deterministic ([`CudaRay::set_deterministic_kernels`]); the pieces
    /// run and add up in a fixed order on one stream.
    pub(crate) fn set_deterministic(&mut self, on: bool) {
        for r in &mut self.rays {
            r.set_deterministic_kernels(on);
        }
    }

    /// The axis the slabs lie along.
    pub(crate) fn axis(&self) -> usize {
        self.axis
    }

    /// The slabs along [`Runner::axis`].
    pub(crate) fn slabs(&self) -> &[Range<usize>] {
        &self.slabs
    }

    /// The view groups.
    pub(crate) fn groups(&self) -> &[Range<usize>] {
        &self.groups
    }

    /// The device bytes a call takes beyond device-resident data: the streamed buffers of the
    /// host-resident sides (two of a kind when the kind has more than one piece), the slab
    /// buffer of a device-resident volume in strided slabs, and the forward's scratch rows.
    pub(crate) fn device_bytes(&self, host_volume: bool, host_data: bool, forward: bool) -> u128 {
        let two = |n: usize| if n > 1 { 2u128 } else { 1 };
        let mut b = 0u128;
        if host_volume {
            b += two(self.slabs.len()) * self.max_slab() as u128;
        } else if self.strided() {
            b += self.max_slab() as u128;
        }
        if host_data {
            b += two(self.groups.len()) * self.max_group() as u128;
        }
        if forward && self.forward_scratch() {
            b += self.max_group() as u128;
        }
        b * F32 as u128
    }

    /// `sino = A vol`, piece by piece (see the [module](self)).
    pub(crate) fn forward(&self, vol: In<'_>, sino: Out<'_>) -> Result<()> {
        self.check_len("a volume", in_len(&vol), self.volume_len())?;
        self.check_len("a sinogram", out_len(&sino), self.data_len())?;
        self.ctx.bind()?;
        let mut guard = self.lanes()?;
        let lanes = guard
            .as_mut()
            .ok_or_else(|| Error::Cuda("copy lanes missing".into()))?;
        let ng = self.groups.len();
        let host_sino = matches!(sino, Out::Host(_));
        let slab_bufs = self.slab_buffers(matches!(vol, In::Host(_)))?;
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

    /// `vol = Aᵀ sino`, piece by piece (see the [module](self)).
    pub(crate) fn transpose(&self, sino: In<'_>, vol: Out<'_>) -> Result<()> {
        self.check_len("a sinogram", in_len(&sino), self.data_len())?;
        self.check_len("a volume", out_len(&vol), self.volume_len())?;
        self.ctx.bind()?;
        let mut guard = self.lanes()?;
        let lanes = guard
            .as_mut()
            .ok_or_else(|| Error::Cuda("copy lanes missing".into()))?;
        let ng = self.groups.len();
        let host_sino = matches!(sino, In::Host(_));
        let group_bufs = buffers(
            &self.ctx,
            if host_sino { ng.min(2) } else { 0 },
            self.max_group(),
        )?;
        let slab_bufs = self.slab_buffers(matches!(vol, Out::Host(_)))?;
        let r = self.transpose_pieces(lanes, sino, vol, &group_bufs, &slab_bufs);
        let q = lanes.quiesce();
        r.and(q)
    }
}

/// The values an input holds.
fn in_len(x: &In<'_>) -> usize {
    match x {
        In::Host(h) => h.len(),
        In::Device(t) => t.len(),
    }
}

/// The values an output has room for.
fn out_len(x: &Out<'_>) -> usize {
    match x {
        Out::Host(h) => h.len(),
        Out::Device(t) => t.len(),
    }
}
