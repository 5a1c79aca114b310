//! Backend options of tomographic operators, given at construction.

/// Options of the CPU backend.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuOptions {
    /// Worker threads of the operator's own rayon pool (`None`: one per core).
    pub threads: Option<usize>,
}

/// Options of the CUDA backend.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CudaOptions {
    /// The GPU ordinal. Must match the device of a CUDA-resident domain.
    pub device: usize,
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
        Backend::Cuda(CudaOptions { device })
    }
}

impl Backend {
    /// The backend that computes on `device`: [`Backend::Cpu`] with the options `cpu` for
    /// [`Device::Cpu`](crate::Device::Cpu), [`Backend::cuda`]`(id)` for
    /// [`Device::Cuda`](crate::Device::Cuda)`(id)` — how a factory of a ray transform picks its
    /// backend ([`RayTransform::factory`](crate::tomo::RayTransform::factory)).
    ///
    /// ```
    /// use rodl::tomo::{Backend, CpuOptions};
    /// use rodl::Device;
    /// let one = CpuOptions { threads: Some(1) };
    /// assert_eq!(Backend::for_device(Device::Cpu, &one), Backend::cpu_threads(1));
    /// assert_eq!(Backend::for_device(Device::Cuda(1), &one), Backend::cuda(1));
    /// ```
    pub fn for_device(device: crate::Device, cpu: &CpuOptions) -> Self {
        match device {
            crate::Device::Cpu => Backend::Cpu(cpu.clone()),
            crate::Device::Cuda(id) => Backend::cuda(id),
        }
    }
}
