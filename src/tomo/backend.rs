//! Backend options of tomographic operators, given at construction.

use std::ops::Range;

/// The pieces a ray transform computes in (see [`RayTransform::pieces`](super::RayTransform::pieces)):
/// slabs of the volume along one axis × groups of views; every pair is one piece.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PieceLayout {
    /// The volume axis the slabs lie along: for 3D geometries the one best aligned with the
    /// detector's rows axis `v` (the rotation axis of circular and helical scans, axis 2 for
    /// ODL's default), so that each slab is seen by a band of detector rows only.
    pub slab_axis: usize,
    /// Ranges of indices along [`Self::slab_axis`], in order, covering it once.
    pub slabs: Vec<Range<usize>>,
    /// Ranges of views, in order, covering them once.
    pub view_groups: Vec<Range<usize>>,
}

impl PieceLayout {
    /// The number of pieces (slabs × view groups).
    pub fn count(&self) -> usize {
        self.slabs.len() * self.view_groups.len()
    }
}

/// Options of the CPU backend.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuOptions {
    /// Worker threads of the operator's own rayon pool (`None`: one per core).
    pub threads: Option<usize>,
}

/// Options of the CUDA backend.
///
/// # Memory budget
///
/// `memory_budget` bounds the device memory a ray transform takes for the data it copies in
/// and out and for its scratch: with host-resident elements (host spaces on the CUDA backend,
/// ODL's way) the volume and the sinogram travel through pinned staging buffers in pieces
/// — groups of views, slabs of the volume (along the rotation axis for 3D scans, so that
/// each slab's kernels launch only the detector rows that can see it), or both — planned at
/// construction so that every piece's device buffers (two of each kind, so that the transfers
/// of one piece overlap the kernels of the other) fit the budget. The pieces add up to the
/// same Joseph model (the same taps; the sums differ by rounding only), and the adjoint stays
/// the exact transpose. Elements that already live on the device are used in place and are
/// not counted. `None` (the default) takes the device's free memory at construction less
/// [`CudaOptions::DEFAULT_MARGIN_FRACTION`] of it (at least
/// [`CudaOptions::DEFAULT_MARGIN_MIN`]).
///
/// ```
/// use rodl::tomo::{Backend, CudaOptions};
/// let opts = CudaOptions::new(0).with_memory_budget(2 << 30);
/// assert_eq!(opts.memory_budget, Some(2 << 30));
/// assert_eq!(Backend::Cuda(opts), Backend::cuda_with_budget(0, 2 << 30));
/// assert_eq!(CudaOptions::default().memory_budget, None);
/// ```
///
/// # Deterministic results
///
/// `deterministic` makes every forward and transpose bitwise reproducible from run to run,
/// still the exact transpose of the forward (the same taps and weights): float atomics add
/// partial sums in whatever order the GPU's threads run, so with the option the forwards store
/// each ray's whole sum (2D parallel beams through the shared-memory slab forward, about 1.8
/// times the default tile forward's time on parallel2d_512), the 2D parallel-beam transposes write each view share's volume and add
/// them in order, and the scattering transposes add 64-bit fixed-point integers (integer adds
/// are associative), at a scale bounded so that no sum overflows (rounding far below f32's) —
/// in 3D through the default transpose's shared-memory profiles, one integer add per profile
/// cell. In 3D (32-bit voxel indices) two voxels' 32-bit sums share a 64-bit word, bounded by
/// the largest voxel of the transpose of ones, which the first call computes (one more
/// transpose) and the operator keeps: 1.8 times the default transpose's time on cone_512 (an
/// H100, kernel harness), 4 bytes per voxel of scratch device memory during a call; otherwise
/// 64-bit sums per voxel (2.0 times, 8 bytes per voxel, also for the first call's bound). The
/// scratch is not counted in the budget, and batches of 3D and fan-beam transforms run entry
/// by entry.
/// `benches/README.md` has the cost; `rodl.torch` turns it on when
/// `torch.use_deterministic_algorithms(True)` is set.
///
/// ```
/// use rodl::tomo::CudaOptions;
/// assert!(CudaOptions::new(0).deterministic(true).deterministic);
/// assert!(!CudaOptions::default().deterministic);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CudaOptions {
    /// The GPU ordinal. Must match the device of a CUDA-resident domain.
    pub device: usize,
    /// Device memory, in bytes, that a transform's transfers and scratch may take (`None`:
    /// the free memory at construction less a margin). See the type's documentation.
    pub memory_budget: Option<u64>,
    /// Bitwise reproducible forwards and transposes (see the type's documentation).
    pub deterministic: bool,
    /// `[slabs, view_groups]`: host data in that many even pieces instead of the planner's
    /// choice under the budget ([`Self::with_pieces`]); for tuning and profiling a layout.
    pub pieces: Option<[usize; 2]>,
}

impl CudaOptions {
    /// The fraction of the free device memory kept free by the default budget.
    pub const DEFAULT_MARGIN_FRACTION: f64 = 0.1;
    /// The least memory, in bytes, kept free by the default budget (256 MiB).
    pub const DEFAULT_MARGIN_MIN: u64 = 256 << 20;

    /// The options for GPU `device` with the default budget.
    pub fn new(device: usize) -> Self {
        CudaOptions {
            device,
            memory_budget: None,
            deterministic: false,
            pieces: None,
        }
    }

    /// The same options with host data cut into `slabs` even slabs (along the geometry's
    /// [`PieceLayout::slab_axis`]) × `view_groups` even groups of views, instead of the
    /// planner's layout under the budget: for measuring a layout (`benches/pieces_profile.rs`)
    /// or pinning one. The budget still bounds the pieces (an
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) at construction where one does not fit); counts beyond the
    /// cells or views are errors. A transform on device-resident data ignores it.
    ///
    /// ```
    /// use rodl::tomo::CudaOptions;
    /// assert_eq!(CudaOptions::new(0).with_pieces(4, 2).pieces, Some([4, 2]));
    /// ```
    pub fn with_pieces(mut self, slabs: usize, view_groups: usize) -> Self {
        self.pieces = Some([slabs, view_groups]);
        self
    }

    /// The same options with deterministic (bitwise reproducible) results `on` or off.
    pub fn deterministic(mut self, on: bool) -> Self {
        self.deterministic = on;
        self
    }

    /// The same options with a memory budget of `bytes`.
    pub fn with_memory_budget(mut self, bytes: u64) -> Self {
        self.memory_budget = Some(bytes);
        self
    }

    /// The budget for a device with `free` bytes of free memory: the explicit budget, else
    /// `free` less the default margin.
    ///
    /// ```
    /// use rodl::tomo::CudaOptions;
    /// let gib = 1u64 << 30;
    /// assert_eq!(CudaOptions::new(0).budget_for(10 * gib), 9 * gib);
    /// assert_eq!(CudaOptions::new(0).budget_for(gib), gib - (256 << 20));
    /// assert_eq!(CudaOptions::new(0).with_memory_budget(5).budget_for(gib), 5);
    /// ```
    pub fn budget_for(&self, free: u64) -> u64 {
        match self.memory_budget {
            Some(b) => b,
            None => {
                let margin = ((free as f64 * Self::DEFAULT_MARGIN_FRACTION) as u64)
                    .max(Self::DEFAULT_MARGIN_MIN);
                free.saturating_sub(margin)
            }
        }
    }
}

/// Where and how a ray transform computes, fixed at construction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Host computation with rayon.
    Cpu(CpuOptions),
    /// NVIDIA GPU computation (crate feature `cuda`).
    Cuda(CudaOptions),
}

impl Default for Backend {
    fn default() -> Self {
        Backend::Cpu(CpuOptions::default())
    }
}

impl Backend {
    /// The CPU backend with `threads` worker threads.
    pub fn cpu_threads(threads: usize) -> Self {
        Backend::Cpu(CpuOptions {
            threads: Some(threads),
        })
    }

    /// The CUDA backend on GPU `device`.
    pub fn cuda(device: usize) -> Self {
        Backend::Cuda(CudaOptions::new(device))
    }

    /// The CUDA backend on GPU `device` with a memory budget of `bytes` (see [`CudaOptions`]).
    pub fn cuda_with_budget(device: usize, bytes: u64) -> Self {
        Backend::Cuda(CudaOptions::new(device).with_memory_budget(bytes))
    }
}

impl Backend {
    /// The backend that computes on `device` with the options for its kind: [`Backend::Cpu`]
    /// with the CPU options for [`Device::Cpu`](crate::Device::Cpu), [`Backend::Cuda`] on GPU
    /// `id` with the CUDA options for [`Device::Cuda`](crate::Device::Cuda)`(id)` — how a
    /// factory of a ray transform picks its backend
    /// ([`RayTransform::factory`](crate::tomo::RayTransform::factory)). `options` is a
    /// [`BackendOptions`], or [`CpuOptions`] alone (the CUDA options then are the defaults).
    ///
    /// ```
    /// use rodl::tomo::{Backend, BackendOptions, CpuOptions};
    /// use rodl::Device;
    /// let one = CpuOptions { threads: Some(1) };
    /// assert_eq!(Backend::for_device(Device::Cpu, &one), Backend::cpu_threads(1));
    /// assert_eq!(Backend::for_device(Device::Cuda(1), &one), Backend::cuda(1));
    /// let both = BackendOptions::from(one).with_cuda_memory_budget(1 << 30);
    /// assert_eq!(Backend::for_device(Device::Cuda(1), &both), Backend::cuda_with_budget(1, 1 << 30));
    /// assert_eq!(Backend::for_device(Device::Cpu, &both), Backend::cpu_threads(1));
    /// ```
    pub fn for_device(device: crate::Device, options: impl Into<BackendOptions>) -> Self {
        let o = options.into();
        match device {
            crate::Device::Cpu => Backend::Cpu(o.cpu),
            crate::Device::Cuda(id) => Backend::Cuda(CudaOptions {
                device: id,
                memory_budget: o.cuda.memory_budget,
                deterministic: o.cuda.deterministic,
                pieces: None,
            }),
        }
    }
}

/// The options of the CUDA backend that do not name a device: what a factory applies to
/// whichever GPU it builds for (the ordinal comes from the device).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CudaKindOptions {
    /// As [`CudaOptions::memory_budget`]: device memory, in bytes, a transform's transfers and
    /// scratch may take on each GPU (`None`: that GPU's free memory at construction less a
    /// margin).
    pub memory_budget: Option<u64>,
    /// As [`CudaOptions::deterministic`]: bitwise reproducible results.
    pub deterministic: bool,
}

/// Options for each backend kind, carried by a factory and applied to the kind of device it
/// builds for ([`Backend::for_device`]): the CPU options on the CPU, the CUDA options on any
/// GPU. The design card's "per-backend options at construction" for operators built through
/// factories (replicas on several GPUs, `rodl.torch` modules).
///
/// ```
/// use rodl::factory::{LinFactory, SpaceDescExt};
/// use rodl::tomo::{parallel_beam_geometry, BackendOptions, CpuOptions, RayTransform};
/// use rodl::uniform_discr;
/// let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[32, 32])?;
/// let geometry = parallel_beam_geometry(&space, Some(24))?;
/// // Two CPU threads on the CPU; at most 1 GiB on each GPU it is built for.
/// let options = BackendOptions::from(CpuOptions { threads: Some(2) })
///     .with_cuda_memory_budget(1 << 30);
/// let f: LinFactory<f32> = RayTransform::factory(space.desc(), geometry, options)?;
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackendOptions {
    /// Used when built for [`Device::Cpu`](crate::Device::Cpu).
    pub cpu: CpuOptions,
    /// Used when built for any [`Device::Cuda`](crate::Device::Cuda).
    pub cuda: CudaKindOptions,
}

impl BackendOptions {
    /// The same options with a CUDA memory budget of `bytes` per GPU.
    pub fn with_cuda_memory_budget(mut self, bytes: u64) -> Self {
        self.cuda.memory_budget = Some(bytes);
        self
    }

    /// The same options with deterministic CUDA results `on` or off
    /// ([`CudaOptions::deterministic`]).
    pub fn with_cuda_deterministic(mut self, on: bool) -> Self {
        self.cuda.deterministic = on;
        self
    }

    /// The same options with `threads` CPU worker threads.
    pub fn with_cpu_threads(mut self, threads: usize) -> Self {
        self.cpu.threads = Some(threads);
        self
    }
}

impl From<CpuOptions> for BackendOptions {
    fn from(cpu: CpuOptions) -> Self {
        BackendOptions {
            cpu,
            cuda: CudaKindOptions::default(),
        }
    }
}

impl From<&CpuOptions> for BackendOptions {
    fn from(cpu: &CpuOptions) -> Self {
        cpu.clone().into()
    }
}

impl From<&BackendOptions> for BackendOptions {
    fn from(o: &BackendOptions) -> Self {
        o.clone()
    }
}

/// The options of a backend for its own kind (the other kind's are the defaults): a factory
/// built from one configured backend keeps its options on every device of that kind.
impl From<&Backend> for BackendOptions {
    fn from(b: &Backend) -> Self {
        match b {
            Backend::Cpu(cpu) => cpu.clone().into(),
            Backend::Cuda(c) => BackendOptions {
                cpu: CpuOptions::default(),
                cuda: CudaKindOptions {
                    memory_budget: c.memory_budget,
                    deterministic: c.deterministic,
                },
            },
        }
    }
}
