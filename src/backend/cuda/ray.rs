//! The host side of the ray transform's kernels (`kernels/ray_joseph.cu`: the Joseph model of
//! the CPU projector with its exact transpose): the kernel parameters' layout ([`RayParams`]),
//! one transform's device-resident per-view words and tables ([`CudaRay`]), the choice of
//! kernel for each case and their launches. Tomography fills the parameters from a geometry
//! (`tomo::cuda::ray_piece`) and runs it through its projectors.

use std::sync::{Arc, OnceLock};

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, DeviceRepr, LaunchConfig, PushKernelArg};

use super::context::{device_ctx, driver_err, DeviceCtx, KernelSource};
use super::tensor::DeviceTensor;
use crate::{Error, Result};

const RAY: KernelSource = KernelSource {
    name: "ray_joseph",
    prelude: &[],
    code: include_str!("../../../kernels/ray_joseph.cu"),
    options: &["--fmad=false", "--std=c++17"],
};

/// Planes per segment of the 3D transpose (`joseph_backward3_profile_f32`): on an H200 the 512³
/// cone transpose took 261 / 230 / 248 ms with 64 / 128 / 256 planes per segment (shorter
/// segments keep the written slab smaller, longer ones set each ray up fewer times).
const SEGMENT_PLANES: i32 = 128;

/// Planes per segment of the 3D forward (`joseph_forward3_chunkseg_f32`): on an H200 the 512³
/// cone forward took 200 / 178 / 181 ms with 64 / 128 / 256 planes per segment (229 ms with
/// whole rays in the same order, `joseph_forward3_chunk_f32`).
pub(crate) const FORWARD_SEGMENT_PLANES: i32 = 128;

/// Detector rows per chunk of the chunked 3D kernels (a warp's 32 lanes).
const CHUNK_ROWS: usize = 32;

/// The most entries one launch of `joseph_backward2_gather_f32` takes (`GATHER2_BATCH` in
/// `kernels/ray_joseph.cu`).
const GATHER2_BATCH: usize = 8;

/// The most entries of a 3D batch in one launch of the chunked kernels.
const BATCH3_MAX: usize = 4096;

/// Bytes per `f32`.
const F32: usize = std::mem::size_of::<f32>();

/// Block shape of the shared-memory 2D forward (`joseph_forward2_smem_f32`), the configuration
/// measured on an H200 (parallel2d_512: 0.294 ms against 0.466 ms for four threads per ray).
mod slab {
    /// Threads per block (the kernel's launch bounds).
    pub(super) const THREADS: u32 = 256;
    /// Views per block; a block holds `THREADS / VGROUP` = 32 detector cells of each.
    pub(super) const VGROUP: i32 = 8;
    /// Planes per segment staged in shared memory.
    pub(super) const SEGLEN: i32 = 64;
    /// Cells of the staged window per plane (a multiple of 8).
    pub(super) const WCAP: i32 = 80;
    /// Segments per block (grid z); partial sums of the blocks are added atomically.
    pub(super) const SEGS_PER_BLOCK: i32 = 2;
    /// Dynamic shared memory: the slab plus one window offset per plane (21760 bytes).
    pub(super) const SHARED_BYTES: u32 = ((SEGLEN * (WCAP + 4) + SEGLEN) * 4) as u32;
}

/// The tile forward of 2D parallel beams (`joseph_forward2_tile_f32`): tiles of 64 × 64 pixels
/// staged with a border of 2 zero cells, rows of 69 words (`ft2_smem_bytes(64)` in the kernel).
mod tile2 {
    /// Pixels per side of a tile.
    pub(super) const SIDE: u64 = 64;
    /// Dynamic shared memory: (64 + 4) × (64 + 5) floats (18768 bytes).
    pub(super) const SHARED_BYTES: u32 = 68 * 69 * 4;
    /// Threads per block (the kernel's launch bounds).
    pub(super) const THREADS: u32 = 256;
}

/// Kernel parameters; must match `RayParams` in `kernels/ray_joseph.cu`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct RayParams {
    /// Cells of the volume buffer along each axis (a piece: its slab's along the slab axis).
    pub(crate) shape: [i64; 3],
    /// The whole grid's lower corner.
    pub(crate) vmin: [f64; 3],
    /// The cell sides.
    pub(crate) h: [f64; 3],
    /// 2 or 3.
    pub(crate) ndim: i32,
    /// Detector cells along u.
    pub(crate) nu: i32,
    /// Detector cells along v (1 in 2D).
    pub(crate) nv: i32,
    /// The views of this transform.
    pub(crate) nviews: i32,
    /// 1: parallel beams (the views' sources are directions); 0: point sources.
    pub(crate) parallel: i32,
    /// The first view's index within the launched views (0).
    pub(crate) first_view: i32,
    /// The piece's first cell along each axis in the whole grid (0s for a whole volume): a
    /// piece works in the whole grid's frame, see `tomo::cuda::ray_piece`.
    pub(crate) lo: [i32; 3],
    /// The first detector row the chunked 3D kernels launch (0 for a whole transform).
    pub(crate) row0: i32,
    /// The detector rows they launch from `row0` on (0: all of them).
    pub(crate) rows: i32,
    /// 0: a flat detector (12 doubles per view); 1: cylindrical, 2: spherical (26 per view:
    /// the flat 12, then the frame and the pitches, `VecGeometry::curved_frame_words`).
    pub(crate) detector: i32,
    /// A curved detector's radius.
    pub(crate) radius: f64,
    /// A spherical detector's latitude of its frames' reference point.
    pub(crate) lat0: f64,
}

// SAFETY: plain-old-data with the C layout the kernels expect.
unsafe impl DeviceRepr for RayParams {}

/// The rays of a 2D parallel beam set up once (`joseph_setup2_f32`): `Ray2` (two words: `fb0`
/// and the plane range) and the weight `w` per ray, `View2` (four words) per view.
struct Tables2 {
    rays: CudaSlice<f32>,
    weights: CudaSlice<f32>,
    info: CudaSlice<f32>,
}

/// Device-resident geometry of one ray transform on one GPU.
pub(crate) struct CudaRay {
    ctx: Arc<DeviceCtx>,
    views: CudaSlice<f64>,
    params: RayParams,
    /// The tables of the 2D parallel-beam transposes (`joseph_backward2_lanes_f32` and
    /// `joseph_backward2_gather_f32`).
    tables2: Option<Tables2>,
    /// No ray of the views meets the piece's slab: its forward is zero, its transpose adds
    /// nothing.
    unseen: bool,
    /// Bitwise reproducible results ([`crate::tomo::CudaOptions::deterministic`]): no float atomics
    /// whose order varies ([`Self::set_deterministic_kernels`]).
    deterministic: bool,
    /// The packed deterministic transpose's bound ([`Self::packed_bound`]), once computed;
    /// `None` inside where it cannot be used.
    packed: OnceLock<Option<f64>>,
}

/// How [`CudaRay::scatter_sums`] launches a fixed-point transpose.
#[derive(Clone, Copy)]
enum SumOrder {
    /// The 3D profile transposes: the default transpose's threads, ordered launch.
    Profile,
    /// `joseph_backward_fixed_f32`: in the chunked order (ordered launch) or one thread per
    /// (segment, ray) (grid-stride).
    Scatter { chunked: bool },
}

impl Drop for CudaRay {
    fn drop(&mut self) {
        // The geometry buffer is freed on this thread: make the device current first.
        let _ = self.ctx.bind();
    }
}

impl CudaRay {
    /// Uploads a transform's per-view `words` (12 doubles per view for a flat detector, 26 for
    /// a curved one) with its kernel parameters `params` to GPU `id` and compiles the kernels;
    /// `unseen`: no ray of the views meets the piece's slab (its forward is zero, its transpose
    /// adds nothing). The parameters come from the geometry (`tomo::cuda::ray_piece`).
    pub(crate) fn upload(
        id: usize,
        params: RayParams,
        words: &[f64],
        unseen: bool,
    ) -> Result<Self> {
        let ctx = device_ctx(id)?;
        let views = ctx
            .stream()
            .clone_htod(words)
            .map_err(driver_err("uploading the geometry"))?;
        // Compile now, so that a compilation problem shows at construction.
        ctx.function(&RAY, "joseph_forward_f32")?;
        Ok(Self {
            ctx,
            views,
            params,
            tables2: None,
            unseen,
            deterministic: false,
            packed: OnceLock::new(),
        })
    }

    /// Sets every ray of a 2D parallel beam up once on the device (`joseph_setup2_f32`) for
    /// the 2D transposes.
    fn setup_tables2(&self) -> Result<Tables2> {
        let rays = self.params.nviews as usize * self.params.nu as usize;
        let mut table = self.ctx.alloc_raw::<f32>(2 * rays)?;
        let mut weights = self.ctx.alloc_raw::<f32>(rays)?;
        let mut info = self.ctx.alloc_raw::<f32>(4 * self.params.nviews as usize)?;
        let name = "joseph_setup2_f32";
        let f = self.ctx.function(&RAY, name)?;
        let stream = &self.ctx.stream();
        let mut b = stream.launch_builder(&f);
        b.arg(&self.views)
            .arg(&self.params)
            .arg(&mut table)
            .arg(&mut weights)
            .arg(&mut info);
        // SAFETY: the signature is (const double* views, RayParams, Ray2* rays, float* weights,
        // View2* info); `table` holds 2 words per ray, `weights` one and `info` 4 words per view
        // (Ray2 is two and View2 four 4-byte fields).
        unsafe { b.launch(self.ctx.launch_cfg(rays)) }.map_err(driver_err(name))?;
        Ok(Tables2 {
            rays: table,
            weights,
            info,
        })
    }

    fn rays(&self) -> usize {
        self.params.nviews as usize * self.params.nu as usize * self.params.nv as usize
    }

    /// Segments of `planes` planes along the longest axis of the grid.
    fn segments(&self, planes: i32) -> usize {
        let n_max = self.params.shape.iter().copied().max().unwrap_or(1) as usize;
        n_max.div_ceil(planes as usize)
    }

    /// Threads of the chunked 3D kernels: the rays with the detector rows rounded up to whole
    /// chunks of [`CHUNK_ROWS`].
    fn chunked_rays(&self) -> usize {
        let band = if self.params.rows > 0 {
            self.params.rows
        } else {
            self.params.nv - self.params.row0
        };
        let rows = (band.max(0) as usize).div_ceil(CHUNK_ROWS) * CHUNK_ROWS;
        self.params.nviews as usize * self.params.nu as usize * rows
    }

    /// Whether every voxel index (and the out-of-grid neighbours the kernels form before their
    /// bounds checks) fits in an `i32`, so that the 32-bit kernels apply.
    fn fits_i32(&self) -> bool {
        let [_, n1, n2] = self.params.shape.map(|n| n as u64);
        // A piece indexes in the whole grid's frame, with its own buffer's strides: up to its
        // slab's end.
        let [e0, e1, e2] =
            [0, 1, 2].map(|k| self.params.shape[k] as u64 + self.params.lo[k] as u64);
        let (s0, s1) = (n1 * n2, n2);
        e0 * s0 + e1 * s1 + e2 + s0 + s1 + 1 < i32::MAX as u64
    }

    /// The volume address the kernels take for a buffer at `vol`: a piece's slab buffer
    /// shifted back by its first cells `lo` (in its own strides) (the kernels index in the whole grid's frame and
    /// touch only the slab's cells); a whole volume's unchanged. Wrapping arithmetic: the
    /// shifted address is never dereferenced below the slab.
    fn kernel_volume(&self, vol: u64) -> u64 {
        vol.wrapping_sub(self.lo_offset() * F32 as u64)
    }

    /// The offset, in voxels of the piece's own buffer, of its first cells `lo`.
    fn lo_offset(&self) -> u64 {
        let [_, n1, n2] = self.params.shape.map(|n| n.max(1) as u64);
        let [l0, l1, l2] = self.params.lo.map(|l| l as u64);
        l0 * n1 * n2 + l1 * n2 + l2
    }

    /// Launches kernel `name` with `threads` threads (grid-stride, at most 32 blocks per
    /// multiprocessor) on `(input, output, views, params, count, extra…)`.
    fn launch(
        &self,
        name: &str,
        threads: usize,
        input: u64,
        output: u64,
        extra: &[i32],
    ) -> Result<()> {
        self.launch_with(
            name,
            self.ctx.launch_cfg(threads),
            input,
            output,
            extra,
            None,
        )
    }

    /// [`Self::launch`] with one block per 256 of the `threads` (the chunked kernels, whose
    /// thread order is their cache locality: the blocks in flight hold neighbouring threads).
    fn launch_ordered(
        &self,
        name: &str,
        threads: usize,
        input: u64,
        output: u64,
        extra: &[i32],
    ) -> Result<()> {
        self.launch_with(
            name,
            self.ctx.launch_cfg_ordered(threads),
            input,
            output,
            extra,
            None,
        )
    }

    /// Launches kernel `name` in `cfg` on `(input, output, views, params, count, extra…)`,
    /// followed by `(bound, ymax)` for the fixed-point transposes (`sums`).
    fn launch_with(
        &self,
        name: &str,
        cfg: LaunchConfig,
        input: u64,
        output: u64,
        extra: &[i32],
        sums: Option<(f64, u64)>,
    ) -> Result<()> {
        let f = self.ctx.function(&RAY, name)?;
        let stream = &self.ctx.stream();
        let mut b = stream.launch_builder(&f);
        let count = self.params.nviews;
        b.arg(&input)
            .arg(&output)
            .arg(&self.views)
            .arg(&self.params)
            .arg(&count);
        for e in extra {
            b.arg(e);
        }
        if let Some((bound, ymax)) = &sums {
            b.arg(bound).arg(ymax);
        }
        // SAFETY: the kernel's signature is (const float*, float*, const double*, RayParams, int)
        // followed by the ints `extra` for the kernels that take them and, for the fixed-point
        // transposes, (double bound, const unsigned* ymax) (the pointers are passed as their
        // 64-bit device addresses; a fixed-point transpose's output is its scratch of integer
        // sums); the buffers hold the volume and the data of this geometry (checked by the
        // caller).
        unsafe { b.launch(cfg) }.map_err(driver_err(name))?;
        Ok(())
    }

    /// `sino = A vol` for `batch` 2D parallel beams (volumes and sinograms one after the other)
    /// through `joseph_forward2_tile_f32`: a block stages a tile of 64 × 64 pixels in shared
    /// memory and marches over it the rays of a share of the views that reach it (the tables'
    /// rays, each lane its own plane range), adding each tile's partial sums times `w` into the
    /// zeroed sinogram with atomics (not for the deterministic mode: their order varies). The
    /// views are split so that about eight blocks per multiprocessor run. H100
    /// (`tools/kernel-harness/par2d_forward.cu`): parallel2d_512 0.168 ms against 0.289 ms for
    /// the slab forward (`joseph_forward2_smem_f32`), 1.10 against 2.18 ms at batch 8; the
    /// learned primal-dual operator's 256² forward 0.048 against 0.088 ms.
    fn forward2_tile(&self, vol: u64, sino: u64, g: &Tables2, batch: usize) -> Result<()> {
        let name = "joseph_forward2_tile_f32";
        self.zero(sino, self.rays() * batch, "clearing the sinogram")?;
        let (n0, n1) = (self.params.shape[0] as u64, self.params.shape[1] as u64);
        if n0 == 0 || n1 == 0 || batch == 0 {
            return Ok(());
        }
        let f = self.ctx.function(&RAY, name)?;
        let tiles = n0.div_ceil(tile2::SIDE) * n1.div_ceil(tile2::SIDE);
        // About 8 blocks per multiprocessor, a view or more per share (H100, kernel harness: 97 ×
        // 131 pixels, 45 views, 6 tiles: 0.083 ms with shares of at least 8 views, 0.051 ms with
        // 32 shares).
        let want = 8 * u64::from(self.ctx.sm_count());
        let most = (self.params.nviews as u64).clamp(1, 64);
        let split = want.div_ceil(tiles * batch as u64).clamp(1, most);
        let (Ok(gx), Ok(gz)) = (u32::try_from(tiles), u16::try_from(batch)) else {
            return Err(Error::Unsupported(format!(
                "{name}: {tiles} tiles of a batch of {batch} exceed the launch grid"
            )));
        };
        let split_arg = split as i32; // ≤ 64
        let cfg = LaunchConfig {
            grid_dim: (gx, split as u32, u32::from(gz)),
            block_dim: (tile2::THREADS, 1, 1),
            shared_mem_bytes: tile2::SHARED_BYTES,
        };
        let stream = &self.ctx.stream();
        let mut b = stream.launch_builder(&f);
        b.arg(&vol)
            .arg(&sino)
            .arg(&g.rays)
            .arg(&g.weights)
            .arg(&g.info)
            .arg(&self.params)
            .arg(&split_arg);
        // SAFETY: the signature is (const float* vol, float* sino, const Ray2*, const float*
        // weights, const View2*, RayParams, int split); `vol` and `sino` hold `batch` volumes and
        // sinograms of this geometry (checked by the callers; grid z is the entry), the tables
        // were built for it by `setup_tables2` (one `Ray2` and weight per ray, one `View2` per
        // view; 32-bit pixel indices and planes below 32768), blocks of 256 threads (the launch
        // bounds) with the dynamic shared memory the kernel indexes (below the 48 KB a launch
        // takes without opting in), `sino` zeroed above.
        unsafe { b.launch(cfg) }.map_err(driver_err(name))?;
        Ok(())
    }

    /// Launches `joseph_forward2_smem_f32` (2D, 32-bit indices) with the [`slab`] block shape on
    /// a grid of (views / 8, detector cells / 32, segment pairs) blocks, zeroing `sino` first
    /// when more than one block adds into a ray. Returns `false` (launching nothing) when the
    /// grid or the shared memory does not fit the device.
    fn forward2_smem(&self, vol: u64, sino: u64, batch: usize) -> Result<bool> {
        let name = if batch == 1 {
            "joseph_forward2_smem_f32"
        } else {
            "joseph_forward2_smem_batch_f32"
        };
        let f = self.ctx.function(&RAY, name)?;
        // The dynamic shared memory a launch may take without opting in (48 KB less the static
        // part on current GPUs); the slab stays below it.
        let max_shared = f
            .get_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
            .map_err(driver_err(name))?;
        if i64::from(slab::SHARED_BYTES) > i64::from(max_shared) {
            return Ok(false);
        }
        let p = &self.params;
        // Sizes are positive (checked at construction); u64 for the unsigned rounding up.
        let n_max = p.shape[0].max(p.shape[1]).max(1) as u64;
        let segments = n_max.div_ceil(slab::SEGLEN as u64);
        // Deterministic: every segment of a ray in one block, which stores the ray's sum.
        let per_block = if self.deterministic {
            i32::try_from(segments.max(1)).unwrap_or(i32::MAX)
        } else {
            slab::SEGS_PER_BLOCK
        };
        let rays_per_block = u64::from(slab::THREADS) / slab::VGROUP as u64;
        let grid = (
            (p.nviews as u64).div_ceil(slab::VGROUP as u64),
            (p.nu as u64).div_ceil(rays_per_block),
            segments.div_ceil(per_block as u64),
        );
        let (Ok(gx), Ok(gy), Ok(gz), Ok(zsegs)) = (
            u32::try_from(grid.0),
            u16::try_from(grid.1),
            u16::try_from(grid.2 * batch as u64),
            i32::try_from(grid.2),
        ) else {
            return Ok(false);
        };
        if gx == 0 || gy == 0 || gz == 0 {
            return Ok(true); // no rays: nothing to compute
        }
        let stream = &self.ctx.stream();
        if zsegs > 1 {
            self.zero(sino, self.rays() * batch, "clearing the sinogram")?;
        }
        let count = p.nviews;
        let mut b = stream.launch_builder(&f);
        b.arg(&vol)
            .arg(&sino)
            .arg(&self.views)
            .arg(p)
            .arg(&count)
            .arg(&slab::SEGLEN)
            .arg(&slab::VGROUP)
            .arg(&slab::WCAP)
            .arg(&per_block);
        if batch > 1 {
            b.arg(&zsegs);
        }
        let cfg = LaunchConfig {
            grid_dim: (gx, u32::from(gy), u32::from(gz)),
            block_dim: (slab::THREADS, 1, 1),
            shared_mem_bytes: slab::SHARED_BYTES,
        };
        // SAFETY: the signature is (const float*, float*, const double*, RayParams, int count,
        // int seglen, int vgroup, int wcap, int segs_per_block), with `int zsegs` after them for
        // the batch kernel; the buffers hold `batch` volumes and data of this geometry (checked
        // by the callers), grid z is `zsegs` blocks per entry; the block has THREADS = 256
        // threads (the launch bounds, a multiple of 32 and of VGROUP) and the dynamic shared
        // memory the kernel indexes, (SEGLEN * (WCAP + 4) + SEGLEN) floats, within the
        // function's limit (checked above).
        unsafe { b.launch(cfg) }.map_err(driver_err(name))?;
        Ok(true)
    }

    /// `sino = A vol` on the device.
    ///
    /// Kernels (`kernels/ray_joseph.cu`), all visiting the same taps with the same weights:
    /// - 2D parallel beams of a whole grid with 32-bit indices (the tables set up), not
    ///   deterministic: `joseph_forward2_tile_f32` ([`Self::forward2_tile`]), the tiles'
    ///   partial sums added atomically into the zeroed sinogram.
    /// - Other 2D cases, 32-bit voxel indices: `joseph_forward2_smem_f32`, blocks of 8 views × 32 detector
    ///   cells marching through shared-memory slabs of 64 planes × 80 cells, two segments per
    ///   block (see [`slab`]): with more than 128 planes the blocks' partial sums are added
    ///   atomically into the zeroed sinogram, otherwise each ray's sum is stored as
    ///   `joseph_forward2_i32_f32` forms it. Taps outside the staged window are read from the
    ///   volume, so the taps and weights are those of the other kernels for any geometry.
    ///   Where its grid or shared memory does not fit the device: `joseph_forward2_seg4_f32`,
    ///   four threads per ray.
    /// - 3D, 32-bit voxel indices, at least 32 detector rows: `joseph_forward3_chunkseg_f32`,
    ///   one thread per (segment of [`FORWARD_SEGMENT_PLANES`] planes, ray), in the order
    ///   (chunk of 32 detector rows, segment, view, column, row) with one block per 256 threads,
    ///   so that the rays in flight come from a few neighbouring views and their taps stay in a
    ///   slab of one band of the volume, which L2 holds; the segments' partial sums are added
    ///   atomically into the zeroed sinogram; a piece's launch covers only the detector rows
    ///   that can reach its slab (`tomo::cuda::ray_piece`). With fewer rows `joseph_forward3_i32_f32`,
    ///   one thread per ray.
    /// - Otherwise (64-bit indices): `joseph_forward_f32`, one thread per ray.
    pub(crate) fn forward(
        &self,
        vol: &DeviceTensor<f32>,
        sino: &mut DeviceTensor<f32>,
    ) -> Result<()> {
        let stream = &self.ctx.stream();
        let (v, _v) = vol.slice().device_ptr(stream);
        let (s, _s) = sino.slice_mut().device_ptr_mut(stream);
        // SAFETY: the tensors hold this geometry's volume and data (checked by the caller) and
        // stay borrowed while the kernels are queued on the device's stream.
        unsafe { self.forward_raw(v, s, false) }
    }

    /// Whether [`Self::forward_raw`] can add into the data (the 3D chunked forward, which adds
    /// its segments' partial sums atomically); the other kernels store each ray's sum.
    pub(crate) fn forward_adds(&self) -> bool {
        self.params.ndim == 3 && self.fits_i32() && self.params.nv as usize >= CHUNK_ROWS
    }

    /// `sino = A vol` (or `sino += A vol` with `accumulate`, only where
    /// [`Self::forward_adds`]) at device addresses, queued on the device's stream. The kernels
    /// are those of [`Self::forward`].
    ///
    /// # Safety
    /// `vol` and `sino` must address device memory of this context holding this transform's
    /// volume and data (f32), not written by other work until the queued kernels are done.
    pub(crate) unsafe fn forward_raw(&self, vol: u64, sino: u64, accumulate: bool) -> Result<()> {
        if accumulate && !self.forward_adds() {
            return Err(Error::Cuda(
                "this forward kernel stores its sums and cannot add into the data".into(),
            ));
        }
        let rays = self.rays();
        if self.unseen {
            if !accumulate {
                self.zero(sino, rays, "clearing the sinogram")?;
            }
            return Ok(());
        }
        let vol = self.kernel_volume(vol);
        match (self.params.ndim, self.fits_i32()) {
            (2, true) => {
                if let (Some(g), false) = (&self.tables2, self.deterministic) {
                    return self.forward2_tile(vol, sino, g, 1);
                }
                if self.forward2_smem(vol, sino, 1)? {
                    return Ok(());
                }
                self.launch("joseph_forward2_seg4_f32", 4 * rays, vol, sino, &[])
            }
            (3, true) if self.params.nv as usize >= CHUNK_ROWS => {
                if !accumulate {
                    self.zero(sino, rays, "clearing the sinogram")?;
                }
                // Deterministic: whole rays (one segment), so that each ray adds its one sum.
                let planes = if self.deterministic {
                    self.params.shape.iter().copied().max().unwrap_or(1).max(1) as i32
                } else {
                    FORWARD_SEGMENT_PLANES
                };
                let threads = self.chunked_rays() * self.segments(planes);
                let name = "joseph_forward3_chunkseg_f32";
                self.launch_ordered(name, threads, vol, sino, &[planes])
            }
            (3, true) => self.launch("joseph_forward3_i32_f32", rays, vol, sino, &[]),
            _ => self.launch("joseph_forward_f32", rays, vol, sino, &[]),
        }
    }

    /// Sets `n` f32 values at device address `ptr` to zero, queued on the device's stream.
    fn zero(&self, ptr: u64, n: usize, what: &str) -> Result<()> {
        // SAFETY: the callers pass a buffer of at least `n` f32 values of this context, used
        // only by work on its stream.
        unsafe { self.ctx.zero_words(ptr, n, what) }
    }

    /// `dst += src` for `n` f32 values at device addresses, queued on the device's stream.
    ///
    /// # Safety
    /// Both must address `n` f32 values of this context.
    pub(crate) unsafe fn add_raw(&self, src: u64, dst: u64, n: usize) -> Result<()> {
        let name = "joseph_add_f32";
        let f = self.ctx.function(&RAY, name)?;
        let stream = &self.ctx.stream();
        let count = n as u64;
        let mut b = stream.launch_builder(&f);
        b.arg(&src).arg(&dst).arg(&count);
        // SAFETY: the signature is (const float* src, float* dst, unsigned long long n), a
        // grid-stride loop; the caller guarantees n values in both buffers.
        unsafe { b.launch(self.ctx.launch_cfg(n)) }.map_err(driver_err(name))?;
        Ok(())
    }

    /// `vol = Aᵀ sino` on the device (unscaled transpose): the forward's taps scattered with
    /// atomic adds into the zeroed volume, or gathered per tile of pixels.
    ///
    /// Kernels (`kernels/ray_joseph.cu`):
    /// - 2D parallel beams, 32-bit indices: `joseph_backward2_lanes_f32`: blocks of 256 threads
    ///   own tiles of 32 × 32 pixels, each warp a copy of the tile in shared memory and a share
    ///   of the views; for a view, the warp stages the rays that can reach the tile (their
    ///   set-up tabled once at construction by `joseph_setup2_f32`) with their products
    ///   `c = w · y`, and lane `l` owns the tile's `l`-th plane and steps through the rays of that
    ///   plane, adding `c · weight` (the forward's taps and weights): no atomics. The copies are
    ///   summed per pixel and stored, or added into the zeroed volume where the views are split
    ///   over blocks to fill the GPU. See [`Self::transpose_entries`] for batches. H200, kernel
    ///   harness: parallel2d_512 0.295 ms (0.40 ms for the broadcast-only lanes kernel before it,
    ///   0.55 ms for the shared-atomic tile kernel, 1.69 ms for the scattering kernel); criterion
    ///   `cuda/parallel2d_512/adjoint` 0.295 ms.
    /// - 3D, 32-bit voxel indices: `joseph_backward3_profile_f32`, one thread per (segment of
    ///   [`SEGMENT_PLANES`] planes, ray), in the order of the forward's kernel (the writes of
    ///   the threads in flight land in a slab of one band of the volume, which L2 holds). A warp holds 32 rows of one detector column; where they share their
    ///   in-plane track (circular and helical cones, parallel beams), it merges its taps at each
    ///   plane into a shared-memory profile and adds it to the volume with 16-byte vector
    ///   atomics, each touched voxel once; other warps merge neighbouring rows' shared taps
    ///   and scatter with scalar atomics.
    /// - Otherwise: `joseph_backward_atomic_f32`, one thread per ray, 64-bit indices.
    ///
    /// Deterministic ([`Self::set_deterministic_kernels`]): 2D parallel beams through
    /// `joseph_backward2_lanes_f32` (batches entry by entry), each view share into its own
    /// volume, the shares added in order; everything else through [`Self::transpose_fixed`]. The
    /// forwards then store whole rays' sums (one segment per ray; in 2D all segments of a ray
    /// in one block).
    pub(crate) fn transpose(
        &self,
        sino: &DeviceTensor<f32>,
        vol: &mut DeviceTensor<f32>,
    ) -> Result<()> {
        let stream = &self.ctx.stream();
        let (s, _s) = sino.slice().device_ptr(stream);
        let (v, _v) = vol.slice_mut().device_ptr_mut(stream);
        // SAFETY: the tensors hold this geometry's data and volume (checked by the caller) and
        // stay borrowed while the kernels are queued on the device's stream.
        unsafe { self.transpose_raw(s, v, false) }
    }

    /// `vol = Aᵀ sino` (or `vol += Aᵀ sino` with `accumulate`: the scattering kernels without
    /// the zeroing, never the 2D tables' kernels) at device addresses, queued on the device's stream.
    ///
    /// # Safety
    /// As [`Self::forward_raw`].
    pub(crate) unsafe fn transpose_raw(&self, sino: u64, vol: u64, accumulate: bool) -> Result<()> {
        if let (Some(g), false) = (&self.tables2, accumulate) {
            return self.transpose2(sino, vol, g, 1);
        }
        if self.deterministic {
            return self.transpose_fixed(sino, vol, accumulate);
        }
        if !accumulate {
            let voxels = self.params.shape.iter().product::<i64>() as usize;
            self.zero(vol, voxels, "clearing the volume")?;
        }
        if self.unseen {
            return Ok(());
        }
        let vol = self.kernel_volume(vol);
        let rays = self.rays();
        match (self.params.ndim, self.fits_i32()) {
            (3, true) => {
                let threads = self.chunked_rays() * self.segments(SEGMENT_PLANES);
                let name = "joseph_backward3_profile_f32";
                self.launch_ordered(name, threads, sino, vol, &[SEGMENT_PLANES])
            }
            _ => self.launch("joseph_backward_atomic_f32", rays, sino, vol, &[]),
        }
    }

    /// A bound `K` with `|(Aᵀ y)_i| ≤ K · max|y|` for every voxel of this launch's rays: each
    /// ray adds at most one tap (weight ≤ 1) to a voxel, with its weight `w ≤ √ndim · max h`
    /// (the step along the dominant axis over the direction's share of it); doubled as margin.
    /// The fixed-point transpose scales its sums to stay below 2⁶² under it.
    fn fixed_bound(&self) -> f64 {
        let p = &self.params;
        let h = p.h[..p.ndim as usize]
            .iter()
            .copied()
            .fold(0.0f64, f64::max);
        2.0 * self.rays() as f64 * h * f64::from(p.ndim).sqrt()
    }

    /// The deterministic scattering transpose (`vol = Aᵀ sino`, or `+=` with `accumulate`):
    /// `joseph_absmax_f32` finds `max|y|`, then the contributions are added as fixed-point
    /// integers (integer atomics are associative: the same bits in any order) into a zeroed
    /// scratch, and turned into floats (NaN everywhere for non-finite data):
    /// - in 3D with 32-bit voxel indices, once [`Self::packed_bound`] is known (computed by the
    ///   first call without `accumulate`), two voxels' 32-bit sums per 64-bit word
    ///   ([`Self::transpose_packed`]; 4 bytes of scratch per voxel);
    /// - otherwise 64-bit sums per voxel at the scale that [`Self::fixed_bound`] keeps in
    ///   range (8 bytes of scratch per voxel), in 3D with 32-bit voxel indices by
    ///   `joseph_backward3_profile_fixed_f32` (the default transpose's warps and shared-memory
    ///   profiles, each profile cell one integer atomic), otherwise by
    ///   `joseph_backward_fixed_f32` (every tap one integer atomic), and `joseph_fixed_to_f32`.
    ///
    /// # Safety
    /// As [`Self::forward_raw`].
    unsafe fn transpose_fixed(&self, sino: u64, vol: u64, accumulate: bool) -> Result<()> {
        let voxels = self.params.shape.iter().product::<i64>().max(0) as usize;
        if self.unseen {
            if !accumulate {
                self.zero(vol, voxels, "clearing the volume")?;
            }
            return Ok(());
        }
        if self.packs() {
            let bound = match self.packed.get() {
                Some(b) => *b,
                // SAFETY: `vol` holds the piece's `voxels` values and is overwritten below.
                None if !accumulate => unsafe { self.packed_bound(vol, voxels)? },
                None => None,
            };
            if let Some(bound) = bound {
                // SAFETY: as this function's.
                return unsafe { self.transpose_packed(sino, vol, voxels, bound, accumulate) };
            }
        }
        let stream = &self.ctx.stream();
        let ymax = self.ctx.alloc_raw::<u32>(1)?;
        let (ymax_at, _m) = ymax.device_ptr(stream);
        self.absmax(sino, self.rays(), ymax_at)?;
        // SAFETY: as this function's; `ymax` holds max|y|.
        unsafe { self.transpose_fixed64(sino, ymax_at, vol, voxels, accumulate) }
    }

    /// The 64-bit form of [`Self::transpose_fixed`] with `max|y|` at `ymax_at` (`sino` 0 for the
    /// transpose of ones, in 3D with 32-bit indices): a zeroed scratch of 64-bit sums, the
    /// fixed-point transpose at the scale that [`Self::fixed_bound`] keeps in range, the sums
    /// into `vol` as floats (`+=` with `accumulate`).
    ///
    /// # Safety
    /// As [`Self::forward_raw`]; `ymax_at` one word of this context.
    unsafe fn transpose_fixed64(
        &self,
        sino: u64,
        ymax_at: u64,
        vol: u64,
        voxels: usize,
        accumulate: bool,
    ) -> Result<()> {
        let stream = &self.ctx.stream();
        let acc = self.ctx.alloc_raw::<u64>(voxels)?;
        let (acc_at, _a) = acc.device_ptr(stream);
        self.zero(acc_at, 2 * voxels, "clearing the fixed-point sums")?;
        let bound = self.fixed_bound();
        let kernel_acc = acc_at.wrapping_sub(self.lo_offset() * 8);
        let (name, order) = if self.params.ndim == 3 && self.fits_i32() {
            // The default transpose's warps and profiles, added in fixed point (its threads,
            // launched as it is).
            ("joseph_backward3_profile_fixed_f32", SumOrder::Profile)
        } else {
            // Every tap scattered, in the chunked order of the other chunked kernels where
            // there are enough rows.
            let chunked = self.params.ndim == 3 && self.params.nv as usize >= CHUNK_ROWS;
            ("joseph_backward_fixed_f32", SumOrder::Scatter { chunked })
        };
        // SAFETY: `acc` is this piece's scratch of 64-bit sums shifted back by its first cells
        // as the volume is (the kernels touch only the piece's cells), `sino` this geometry's
        // data (or 0: the profile kernels' transpose of ones).
        unsafe { self.scatter_sums(name, order, sino, kernel_acc, bound, ymax_at)? };
        let name = "joseph_fixed_to_f32";
        self.sums_to_f32(name, acc_at, vol, voxels, bound, ymax_at, accumulate)
    }

    /// Whether the deterministic transpose may pack two voxels' sums per word: 3D with 32-bit
    /// voxel indices (the profile transpose), the piece's first cell even (so that its words
    /// pair the same voxels as the whole grid's frame).
    fn packs(&self) -> bool {
        self.params.ndim == 3 && self.fits_i32() && self.lo_offset() % 2 == 0
    }

    /// `*out = max(*out, bits of |x[i]|)` over `n` values at `x` (`joseph_absmax_f32`), `out`
    /// zeroed first; queued on the device's stream.
    fn absmax(&self, x: u64, n: usize, out: u64) -> Result<()> {
        self.zero(out, 1, "clearing the data's bound")?;
        let name = "joseph_absmax_f32";
        let f = self.ctx.function(&RAY, name)?;
        let stream = &self.ctx.stream();
        let mut b = stream.launch_builder(&f);
        let count = n as u64;
        b.arg(&x).arg(&count).arg(&out);
        // SAFETY: (const float* x, unsigned long long n, unsigned* out): the callers pass `n`
        // values at `x` and one word at `out`; grid-stride.
        unsafe { b.launch(self.ctx.launch_cfg(n)) }.map_err(driver_err(name))?;
        Ok(())
    }

    /// Launches the fixed-point transpose `name` on `(sino, acc, views, params, count, seglen[,
    /// chunked], bound, ymax)`: the 3D profile transposes (`joseph_backward3_profile_fixed_f32`,
    /// `joseph_backward3_profile_packed_f32`) with the default transpose's threads and ordered
    /// launch, or the scattering `joseph_backward_fixed_f32` (which takes `chunked`) in the
    /// chunked order or one thread per (segment, ray); `sino` 0 for the transpose of ones (the
    /// profile kernels only).
    ///
    /// # Safety
    /// `acc` must be the kernel's scratch for this piece (shifted back by its first cells),
    /// `sino` this geometry's data or 0, `ymax` one word.
    unsafe fn scatter_sums(
        &self,
        name: &str,
        order: SumOrder,
        sino: u64,
        acc: u64,
        bound: f64,
        ymax: u64,
    ) -> Result<()> {
        let (threads, extra): (usize, &[i32]) = match order {
            SumOrder::Profile => (
                self.chunked_rays() * self.segments(SEGMENT_PLANES),
                &[SEGMENT_PLANES],
            ),
            SumOrder::Scatter { chunked: true } => (
                self.chunked_rays() * self.segments(SEGMENT_PLANES),
                &[SEGMENT_PLANES, 1],
            ),
            SumOrder::Scatter { chunked: false } => (
                self.rays() * self.segments(SEGMENT_PLANES),
                &[SEGMENT_PLANES, 0],
            ),
        };
        if threads == 0 {
            return Ok(());
        }
        let cfg = match order {
            SumOrder::Scatter { chunked: false } => self.ctx.launch_cfg(threads),
            _ => self.ctx.launch_cfg_ordered(threads),
        };
        // (const float* sino, unsigned long long* acc, const double* views, RayParams, int
        // count, int seglen[, int chunked], double bound, const unsigned* ymax) — `chunked` for
        // joseph_backward_fixed_f32 alone — with the scratch as the caller promises.
        self.launch_with(name, cfg, sino, acc, extra, Some((bound, ymax)))
    }

    /// The packed transpose's bound, computed once: the largest voxel of the transpose of
    /// ones, i.e. of every voxel's sum of weights, so that `max|y|` times it bounds every
    /// voxel's sum of magnitudes (each contribution is at most `max|y|` times the same
    /// contribution with `y = 1`); computed exactly by the 64-bit fixed-point profile
    /// transpose, and widened by 2⁻¹⁰ for the floats' rounding of the products. `vol` (the
    /// piece's `voxels` values) holds the transpose of ones meanwhile. `None` where the largest
    /// voxel is not a positive finite number (no ray meets the piece).
    ///
    /// # Safety
    /// `vol` must address the piece's `voxels` f32 values of this context, free to overwrite.
    unsafe fn packed_bound(&self, vol: u64, voxels: usize) -> Result<Option<f64>> {
        let stream = &self.ctx.stream();
        let one = stream
            .clone_htod(&[1.0f32.to_bits()])
            .map_err(driver_err("copying the data's bound to the device"))?;
        let top = self.ctx.alloc_raw::<u32>(1)?;
        let (one_at, _o) = one.device_ptr(stream);
        let (top_at, _t) = top.device_ptr(stream);
        // SAFETY: no data (the profile kernel's y = 1, [`Self::packs`] holds), max|y| = 1;
        // `vol` as the caller promises.
        unsafe { self.transpose_fixed64(0, one_at, vol, voxels, false)? };
        self.absmax(vol, voxels, top_at)?;
        let bits = stream
            .clone_dtoh(&top)
            .map_err(driver_err("reading the packed transpose's bound"))?;
        let largest = f64::from(f32::from_bits(bits.first().copied().unwrap_or(0)));
        let widened = largest * (1.0 + 1.0 / 1024.0);
        let b = (widened.is_finite() && widened > 0.0).then_some(widened);
        let _ = self.packed.set(b);
        Ok(b)
    }

    /// The packed deterministic transpose: `max|y|`, then `joseph_backward3_profile_packed_f32`
    /// adds two neighbouring voxels' 32-bit fixed-point sums per 64-bit word at the scale that
    /// puts `bound · max|y|` at most at 2³⁰ (the word is exact modulo 2⁶⁴; each sum stays
    /// inside ±2³¹), and `joseph_packed_to_f32` turns them into floats. One H100, kernel
    /// harness, cone_512: 439 ms against 496 ms for the 64-bit form and 244 ms for the default
    /// transpose.
    ///
    /// # Safety
    /// As [`Self::forward_raw`]; [`Self::packs`] holds.
    unsafe fn transpose_packed(
        &self,
        sino: u64,
        vol: u64,
        voxels: usize,
        bound: f64,
        accumulate: bool,
    ) -> Result<()> {
        let stream = &self.ctx.stream();
        let words = voxels.div_ceil(2);
        let acc = self.ctx.alloc_raw::<u64>(words)?;
        let ymax = self.ctx.alloc_raw::<u32>(1)?;
        let (acc_at, _a) = acc.device_ptr(stream);
        let (ymax_at, _m) = ymax.device_ptr(stream);
        self.zero(acc_at, 2 * words, "clearing the packed sums")?;
        self.absmax(sino, self.rays(), ymax_at)?;
        // The piece's first cell is even: its words start at the whole frame's word lo / 2.
        let kernel_acc = acc_at.wrapping_sub(self.lo_offset() / 2 * 8);
        let name = "joseph_backward3_profile_packed_f32";
        // SAFETY: `acc` holds the piece's voxels in pairs, shifted back as the volume is.
        unsafe { self.scatter_sums(name, SumOrder::Profile, sino, kernel_acc, bound, ymax_at)? };
        let name = "joseph_packed_to_f32";
        self.sums_to_f32(name, acc_at, vol, voxels, bound, ymax_at, accumulate)
    }

    /// `vol = acc / scale` (or `vol +=` with `accumulate`) over `voxels` values: the
    /// fixed-point sums of [`Self::transpose_fixed`] as floats (`joseph_fixed_to_f32`), or of
    /// [`Self::transpose_packed`] (`joseph_packed_to_f32`, `acc` holding the voxels in pairs).
    #[allow(clippy::too_many_arguments)]
    fn sums_to_f32(
        &self,
        name: &str,
        acc_at: u64,
        vol: u64,
        voxels: usize,
        bound: f64,
        ymax_at: u64,
        accumulate: bool,
    ) -> Result<()> {
        let f = self.ctx.function(&RAY, name)?;
        let stream = &self.ctx.stream();
        let mut b = stream.launch_builder(&f);
        let nv = voxels as u64;
        let add = i32::from(accumulate);
        b.arg(&acc_at)
            .arg(&vol)
            .arg(&nv)
            .arg(&bound)
            .arg(&ymax_at)
            .arg(&add);
        // SAFETY: (const unsigned long long* acc, float* vol, unsigned long long n, double
        // bound, const unsigned* ymax, int accumulate), for both kernels: `acc` holds the
        // piece's `voxels` sums (64-bit each, or two per word), `vol` its `voxels` values;
        // grid-stride.
        unsafe { b.launch(self.ctx.launch_cfg(voxels)) }.map_err(driver_err(name))?;
        Ok(())
    }

    /// `dst = Σₖ parts[k]` (or `dst +=` with `accumulate`) over `count` partial buffers of `n`
    /// values each, added in the order `k = 0, 1, …` (`joseph_sum_parts_f32`): the
    /// deterministic 2D transposes' view shares.
    fn sum_parts(
        &self,
        parts: u64,
        dst: u64,
        n: usize,
        count: usize,
        accumulate: bool,
    ) -> Result<()> {
        let name = "joseph_sum_parts_f32";
        let f = self.ctx.function(&RAY, name)?;
        let stream = &self.ctx.stream();
        let mut b = stream.launch_builder(&f);
        let (n64, c, add) = (n as u64, count as i32, i32::from(accumulate));
        b.arg(&parts).arg(&dst).arg(&n64).arg(&c).arg(&add);
        // SAFETY: (const float* part, float* dst, unsigned long long n, int parts, int
        // accumulate): the callers pass `count · n` values at `parts` and `n` at `dst`.
        unsafe { b.launch(self.ctx.launch_cfg(n)) }.map_err(driver_err(name))?;
        Ok(())
    }

    /// Errors unless `batch` entries fit one launch and the buffers hold `batch` volumes and
    /// sinograms of this geometry.
    fn check_batch(&self, batch: usize, vol_len: usize, sino_len: usize) -> Result<()> {
        let p = &self.params;
        let vol = (p.shape[0] * p.shape[1] * p.shape[2].max(1)) as usize;
        let sino = self.rays();
        if batch == 0 || batch > self.batch_limit() {
            return Err(Error::invalid(format!(
                "a batch of {batch} for the CUDA ray transform (1 to {} in one launch)",
                self.batch_limit()
            )));
        }
        if vol_len != batch * vol || sino_len != batch * sino {
            return Err(Error::invalid(format!(
                "the CUDA ray transform's batch buffers hold {vol_len} and {sino_len} values, \
                 not {batch} × {vol} and {batch} × {sino}"
            )));
        }
        Ok(())
    }

    /// The 2D parallel-beam transpose of `batch` sinograms. One entry: `joseph_backward2_lanes_f32`
    /// on the sinogram itself (it forms `c = w · y` as it stages the rays). A batch: `c = w · y`
    /// per ray (`joseph_weigh2_f32`, the scattering transpose's product), then
    /// `joseph_backward2_gather_f32` ([`Self::launch_gather2`]). `sino` and `vol` are device
    /// addresses of `batch` sinograms and volumes of this geometry (the callers' checks).
    fn transpose2(&self, sino: u64, vol: u64, g: &Tables2, batch: usize) -> Result<()> {
        if batch == 1 {
            return self.launch_lanes2(sino, vol, g);
        }
        if self.deterministic {
            // Entry by entry through the lanes kernel, so that an entry's sums are formed the
            // same way in a batch of any size as alone.
            let rays = self.params.nviews as usize * self.params.nu as usize;
            let voxels = (self.params.shape[0] * self.params.shape[1]) as usize;
            for e in 0..batch {
                let (s, v) = ((e * rays * F32) as u64, (e * voxels * F32) as u64);
                self.launch_lanes2(sino + s, vol + v, g)?;
            }
            return Ok(());
        }
        let rays = self.params.nviews as usize * self.params.nu as usize;
        let total = rays * batch;
        let (Ok(n), Ok(per)) = (u32::try_from(total), u32::try_from(rays)) else {
            return Err(Error::Unsupported(format!(
                "a batch of {batch} sinograms of {rays} rays exceeds the 2D transpose's range"
            )));
        };
        let mut cw = self.ctx.alloc_raw::<f32>(total)?;
        let weigh = "joseph_weigh2_f32";
        let fw = self.ctx.function(&RAY, weigh)?;
        {
            let stream = &self.ctx.stream();
            let mut b = stream.launch_builder(&fw);
            b.arg(&sino).arg(&g.weights).arg(&mut cw).arg(&n).arg(&per);
            // SAFETY: the signature is (const float* sino, const float* weights, float* c,
            // unsigned n, unsigned rays); `sino` and `cw` hold n = batch × rays values (< 2³²,
            // checked), `weights` one per ray.
            unsafe { b.launch(self.ctx.launch_cfg(total)) }.map_err(driver_err(weigh))?;
        }
        self.launch_gather2(&cw, vol, g, batch)
    }

    /// The view share of the 2D transposes: where `blocks` blocks would not fill the GPU
    /// (`per_sm` per multiprocessor), the views are split over up to `most` blocks per tile (at
    /// least 8 views each), whose sums are added into the zeroed volume.
    fn split2(&self, blocks: u64, most: u64, per_sm: u64) -> u64 {
        let want = per_sm * u64::from(self.ctx.sm_count());
        let nviews = self.params.nviews as u64;
        want.div_ceil(blocks.max(1))
            .clamp(1, most.min((nviews / 8).max(1)))
    }

    /// The 2D transpose of one sinogram at `sino` into the volume at `vol` through
    /// `joseph_backward2_lanes_f32`: blocks of 256 threads own 32 × 32 pixels, lanes the tile's
    /// planes, no atomics; each lane steps through the rays of its own plane from a staged copy
    /// of the view's rays and products `c = w · y`. The views are split up to 16 ways
    /// ([`Self::split2`]). H200 (`tools/kernel-harness/par2d_adjoint.cu`): see the kernel's
    /// notes in `kernels/ray_joseph.cu`.
    fn launch_lanes2(&self, sino: u64, vol: u64, g: &Tables2) -> Result<()> {
        let (n0, n1) = (self.params.shape[0] as u64, self.params.shape[1] as u64);
        if n0 == 0 || n1 == 0 {
            return Ok(());
        }
        let name = "joseph_backward2_lanes_f32";
        let f = self.ctx.function(&RAY, name)?;
        let tiles = n0.div_ceil(32) * n1.div_ceil(32);
        // H200 (kernel harness): parallel2d_512 0.295 ms at 16 shares, 0.296 ms at 8.
        let split = self.split2(tiles, 16, 32);
        let Ok(gx) = u32::try_from(tiles) else {
            return Err(Error::Unsupported(format!(
                "{name}: {tiles} tiles exceed the launch grid"
            )));
        };
        let stream = &self.ctx.stream();
        let pixels = (n0 * n1) as usize;
        // Deterministic: each view share stores into its own volume, summed in order after.
        let parts = if self.deterministic && split > 1 {
            Some(self.ctx.alloc_raw::<f32>(split as usize * pixels)?)
        } else {
            None
        };
        let parts_at = parts.as_ref().map(|p| p.device_ptr(stream));
        let (target, split_arg) = match &parts_at {
            Some((at, _)) => (*at, -(split as i32)),
            None => {
                if split > 1 {
                    self.zero(vol, pixels, "clearing the volume")?;
                }
                (vol, split as i32)
            }
        };
        let cfg = LaunchConfig {
            grid_dim: (gx, split as u32, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = stream.launch_builder(&f);
        b.arg(&sino)
            .arg(&g.weights)
            .arg(&target)
            .arg(&g.rays)
            .arg(&g.info)
            .arg(&self.params)
            .arg(&split_arg);
        // SAFETY: the signature is (const float* sino, const float* weights, float* vol, const
        // Ray2*, const View2*, RayParams, int split); `sino` holds one value per ray of this
        // geometry and `vol` one volume (checked by the callers), the tables (and `weights`,
        // one per ray) were built for it by `setup_tables2`; 32-bit pixel indices (fits_i32)
        // and planes below 32768; blocks of 256 threads (the launch bounds), one per tile of
        // 32 × 32 pixels and view share, batch entry 0; with a negative split `target` holds
        // one volume per share.
        unsafe { b.launch(cfg) }.map_err(driver_err(name))?;
        if let Some((at, _)) = &parts_at {
            self.sum_parts(*at, vol, pixels, split as usize, false)?;
        }
        Ok(())
    }

    /// Launches the 2D transposes over `batch` entries of `cw` (rows of `w · y`, one value per
    /// ray each) into `batch` volumes at `vol` through `joseph_backward2_gather_f32` in chunks
    /// of [`GATHER2_BATCH`] entries (a pixel per thread, the search for its rays paid once for
    /// the chunk), the views split up to 4 ways ([`Self::split2`]). H200
    /// (`tools/kernel-harness/par2d_adjoint.cu`): the learned primal-dual operator 0.35 ms at
    /// batch 8, against 0.82 ms for the shared-atomic tile kernel it replaced.
    fn launch_gather2(
        &self,
        cw: &CudaSlice<f32>,
        vol: u64,
        g: &Tables2,
        batch: usize,
    ) -> Result<()> {
        let (n0, n1) = (self.params.shape[0] as u64, self.params.shape[1] as u64);
        if n0 == 0 || n1 == 0 || batch == 0 {
            return Ok(());
        }
        let stream = &self.ctx.stream();
        let voxels = (n0 * n1) as usize;
        let per = self.params.nviews as usize * self.params.nu as usize;
        let (cw_at, _cw) = cw.device_ptr(stream);
        let name = "joseph_backward2_gather_f32";
        let f = self.ctx.function(&RAY, name)?;
        let (gx, gy) = (n1.div_ceil(16), n0.div_ceil(16));
        let split = self.split2(gx * gy, 4, 16);
        // Deterministic: each view share stores into its own volumes, summed in order after.
        let parts = if self.deterministic && split > 1 {
            Some(
                self.ctx
                    .alloc_raw::<f32>(split as usize * GATHER2_BATCH.min(batch) * voxels)?,
            )
        } else {
            None
        };
        let parts_at = parts.as_ref().map(|p| p.device_ptr(stream));
        if split > 1 && parts_at.is_none() {
            self.zero(vol, voxels * batch, "clearing the volumes")?;
        }
        let (Ok(gx), Ok(gy)) = (u32::try_from(gx), u32::try_from(gy)) else {
            return Err(Error::Unsupported(format!(
                "{name}: {n0} × {n1} pixels exceed the launch grid"
            )));
        };
        let split_arg = if parts_at.is_some() {
            -(split as i32)
        } else {
            split as i32
        };
        let cfg = LaunchConfig {
            grid_dim: (gx, gy, split as u32),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        for first in (0..batch).step_by(GATHER2_BATCH) {
            let entries = (batch - first).min(GATHER2_BATCH) as i32;
            let src = cw_at + (first * per * F32) as u64;
            let dst = vol + (first * voxels * F32) as u64;
            let target = parts_at.as_ref().map_or(dst, |(at, _)| *at);
            let mut b = stream.launch_builder(&f);
            b.arg(&src)
                .arg(&target)
                .arg(&g.rays)
                .arg(&g.info)
                .arg(&self.params)
                .arg(&split_arg)
                .arg(&entries);
            // SAFETY: the signature is (const float* cw, float* vol, const Ray2*, const View2*,
            // RayParams, int split, int batch); from entry `first` on, `cw` holds `entries`
            // rows of one value per ray and `vol` `entries` volumes of this geometry (checked by
            // the callers), entries ≤ GATHER2_BATCH; the tables were built for it by
            // `setup_tables2`; 32-bit pixel indices (fits_i32) and planes below 32768; blocks
            // of 256 threads (the launch bounds), one per 16 × 16 pixels and view share; with
            // a negative split `target` holds `split × entries` volumes.
            unsafe { b.launch(cfg) }.map_err(driver_err(name))?;
            if let Some((at, _)) = &parts_at {
                self.sum_parts(*at, dst, entries as usize * voxels, split as usize, false)?;
            }
        }
        Ok(())
    }
}

impl CudaRay {
    /// The same transform with the tables of the 2D parallel-beam transposes set up, where
    /// they apply (a whole 2D parallel beam with 32-bit indices and at most 32767 cells per
    /// axis).
    pub(crate) fn with_tables2(self) -> Result<Self> {
        let mut ray = self;
        let short = |n: i64| n < 32768; // plane indices packed in 16 bits
        if ray.params.ndim == 2
            && ray.params.parallel == 1
            && ray.fits_i32()
            && short(ray.params.shape[0])
            && short(ray.params.shape[1])
        {
            ray.tables2 = Some(ray.setup_tables2()?);
        }
        Ok(ray)
    }

    /// Makes every forward and transpose bitwise reproducible from run to run (`on`), or lets
    /// them add partial sums with float atomics (the default, faster): see
    /// [`Self::forward`] and [`Self::transpose`].
    pub(crate) fn set_deterministic_kernels(&mut self, on: bool) {
        self.deterministic = on;
    }

    /// The most entries [`Self::forward_entries`] and [`Self::transpose_entries`] take in one
    /// launch sequence: 1 unless the volume is whole with 32-bit indices and the geometry 2D
    /// (then limited by the launch grids of the batched forward) or 3D with at least
    /// [`CHUNK_ROWS`] detector rows (the chunked kernels' batch axis: [`BATCH3_MAX`]).
    pub(crate) fn batch_limit(&self) -> usize {
        // Deterministic: batches only where the transpose gathers (2D parallel beams' tables);
        // the batched scattering kernels add with float atomics.
        if !self.fits_i32()
            || (self.deterministic && self.tables2.is_none())
            || self.params.lo != [0; 3]
            || (self.params.row0, self.params.rows) != (0, self.params.nv)
        {
            return 1;
        }
        if self.params.ndim == 3 {
            // The chunked kernels take a batch axis (grid-stride over the entries' threads).
            return if self.params.nv as usize >= CHUNK_ROWS {
                BATCH3_MAX
            } else {
                1
            };
        }
        let p = &self.params;
        let n_max = p.shape[0].max(p.shape[1]).max(1) as u64;
        let zsegs = n_max
            .div_ceil(slab::SEGLEN as u64)
            .div_ceil(slab::SEGS_PER_BLOCK as u64)
            .max(1);
        if (p.nu as u64).div_ceil(u64::from(slab::THREADS) / slab::VGROUP as u64) > 65535 {
            return 1;
        }
        (65535 / zsegs).max(1) as usize
    }

    /// `sino[b] = A vol[b]` for `batch` entries stored one after the other in `vol` and `sino`,
    /// in one launch (2D geometries, and 3D ones with at least [`CHUNK_ROWS`] detector rows;
    /// `batch ≤` [`Self::batch_limit`]); otherwise only
    /// `batch == 1`, as [`Self::forward`].
    pub(crate) fn forward_entries(
        &self,
        vol: &DeviceTensor<f32>,
        sino: &mut DeviceTensor<f32>,
        batch: usize,
    ) -> Result<()> {
        if batch == 1 {
            return self.forward(vol, sino);
        }
        self.check_batch(batch, vol.slice().len(), sino.slice().len())?;
        let stream = &self.ctx.stream();
        let (v, _v) = vol.slice().device_ptr(stream);
        let (s, _s) = sino.slice_mut().device_ptr_mut(stream);
        // The tensors hold `batch` volumes and data of this geometry (checked above) and stay
        // borrowed while the kernel is queued on the device's stream.
        if self.params.ndim == 3 {
            // batch_limit > 1: the chunked forward (nv ≥ CHUNK_ROWS), entries one after the other.
            self.zero(s, self.rays() * batch, "clearing the sinograms")?;
            let threads = self.chunked_rays() * self.segments(FORWARD_SEGMENT_PLANES) * batch;
            let name = "joseph_forward3_chunkseg_batch_f32";
            let entries = batch as i32; // ≤ BATCH3_MAX (check_batch)
            return self.launch_ordered(name, threads, v, s, &[FORWARD_SEGMENT_PLANES, entries]);
        }
        if let (Some(g), false) = (&self.tables2, self.deterministic) {
            return self.forward2_tile(v, s, g, batch);
        }
        if self.forward2_smem(v, s, batch)? {
            return Ok(());
        }
        Err(Error::Unsupported(format!(
            "the CUDA ray transform cannot take a batch of {batch} in one launch here"
        )))
    }

    /// `vol[b] = Aᵀ sino[b]` for `batch` entries stored one after the other, in one launch
    /// sequence (2D geometries, and 3D ones with at least [`CHUNK_ROWS`] detector rows through
    /// `joseph_backward3_profile_batch_f32`; `batch ≤` [`Self::batch_limit`]); otherwise only
    /// `batch == 1`, as [`Self::transpose`]. Other 2D geometries than parallel beams (fan
    /// beams) scatter every entry's rays in one launch (`joseph_backward_atomic_batch_f32`).
    /// A 2D parallel-beam batch goes through
    /// `joseph_backward2_gather_f32`, a pixel per thread and up to eight entries per launch:
    /// the rays that reach the pixel and their weights are found once for all the entries
    /// (H200, kernel harness: the learned primal-dual operator at batch 8 in 0.35 ms, 0.82 ms
    /// with the tile kernel it replaced).
    pub(crate) fn transpose_entries(
        &self,
        sino: &DeviceTensor<f32>,
        vol: &mut DeviceTensor<f32>,
        batch: usize,
    ) -> Result<()> {
        if batch == 1 {
            return self.transpose(sino, vol);
        }
        self.check_batch(batch, vol.slice().len(), sino.slice().len())?;
        let stream = &self.ctx.stream();
        let (s, _s) = sino.slice().device_ptr(stream);
        let (v, _v) = vol.slice_mut().device_ptr_mut(stream);
        // The tensors hold `batch` data and volumes of this geometry (checked above) and stay
        // borrowed while the kernels are queued on the device's stream.
        if let Some(g) = &self.tables2 {
            return self.transpose2(s, v, g, batch);
        }
        let voxels = self.params.shape.iter().product::<i64>() as usize;
        self.zero(v, voxels * batch, "clearing the volumes")?;
        if self.params.ndim == 3 {
            // batch_limit > 1: the profile transpose (nv ≥ CHUNK_ROWS), entries one after the other.
            let threads = self.chunked_rays() * self.segments(SEGMENT_PLANES) * batch;
            let name = "joseph_backward3_profile_batch_f32";
            let entries = batch as i32; // ≤ BATCH3_MAX (check_batch)
            return self.launch_ordered(name, threads, s, v, &[SEGMENT_PLANES, entries]);
        }
        // Other 2D geometries (fan beams): one thread per ray and entry, scattering into the
        // zeroed volumes.
        let name = "joseph_backward_atomic_batch_f32";
        let f = self.ctx.function(&RAY, name)?;
        let count = self.params.nviews;
        let entries = i32::try_from(batch)
            .map_err(|_| Error::invalid(format!("a batch of {batch} entries")))?;
        let mut b = stream.launch_builder(&f);
        b.arg(&s)
            .arg(&v)
            .arg(&self.views)
            .arg(&self.params)
            .arg(&count)
            .arg(&entries);
        // SAFETY: the signature is (const float* sino, float* vol, const double* views,
        // RayParams, int count, int batch), a grid-stride loop over batch × rays with 64-bit
        // indices; the buffers hold `batch` data and volumes of this geometry (checked above).
        unsafe { b.launch(self.ctx.launch_cfg(self.rays() * batch)) }.map_err(driver_err(name))?;
        Ok(())
    }
}
