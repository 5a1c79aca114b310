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
