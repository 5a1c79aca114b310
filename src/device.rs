//! Compute devices that spaces live on.

use std::fmt;
use std::str::FromStr;

use crate::backend::cuda::Cuda;
use crate::backend::Runtime;
use crate::{Error, Result};

/// Where a space's elements are stored and where operators on it compute.
///
/// A space carries its device; an operator's domain and range fix where it computes.
/// Moving data between devices is always explicit.
///
/// ```
/// use rodl::Device;
/// let d: Device = "cuda:1".parse()?;
/// assert_eq!(d, Device::Cuda(1));
/// assert_eq!("cpu".parse::<Device>()?, Device::Cpu);
/// assert!("tpu".parse::<Device>().is_err());
/// # Ok::<(), rodl::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Device {
    /// Host memory; computations use rayon threads.
    #[default]
    Cpu,
    /// The CUDA GPU with this ordinal (needs the crate feature `cuda`).
    Cuda(usize),
}

impl Device {
    /// Whether this is a CUDA device.
    pub fn is_cuda(self) -> bool {
        matches!(self, Device::Cuda(_))
    }

    /// Checks that the device can be used now: always for the CPU; for CUDA, that the crate was
    /// built with the `cuda` feature, that a driver is present and that the ordinal exists.
    pub fn check_available(self) -> Result<()> {
        match self {
            Device::Cpu => Ok(()),
            Device::Cuda(id) => Cuda::check_available(id),
        }
    }

    /// Every CUDA GPU that can be used now, in ordinal order, or why there is none: an
    /// [`Error::CudaUnavailable`] when the crate was built without the `cuda` feature, when no
    /// driver is installed or when it does not initialise. An empty list is an error too (a
    /// driver without devices), so that `Ok` always names at least one GPU. Never panics.
    ///
    /// ```
    /// use rodl::Device;
    /// // Every GPU present, else the CPU with the reason.
    /// let devices = match Device::cuda_devices() {
    ///     Ok(gpus) => gpus,
    ///     Err(why) => {
    ///         eprintln!("running on the CPU: {why}");
    ///         vec![Device::Cpu]
    ///     }
    /// };
    /// assert!(!devices.is_empty());
    /// ```
    pub fn cuda_devices() -> Result<Vec<Device>> {
        let n = Cuda::device_count()?;
        let mut usable = Vec::new();
        let mut last = None;
        for id in 0..n {
            match Cuda::check_available(id) {
                Ok(()) => usable.push(Device::Cuda(id)),
                Err(e) => last = Some(e),
            }
        }
        if usable.is_empty() {
            return Err(last.unwrap_or_else(|| {
                Error::CudaUnavailable("the CUDA driver reports no GPU".into())
            }));
        }
        Ok(usable)
    }
}

impl Device {
    /// Waits until all work queued on this device has finished (a no-op on the CPU, whose
    /// operations return when they are done).
    pub fn synchronize(self) -> Result<()> {
        match self {
            Device::Cpu => Ok(()),
            Device::Cuda(id) => Cuda::synchronize(id),
        }
    }

    /// The time the work queued by `f` takes on this device: measured with two CUDA events
    /// around it on a GPU (so host-side launch overhead that overlaps GPU work does not count),
    /// and with the wall clock on the CPU.
    ///
    /// ```
    /// use rodl::{rn, Device};
    /// let s = rn::<f32>(&[1000])?;
    /// let x = s.one()?;
    /// let t = Device::Cpu.time(|| s.norm(&x).map(|_| ()))?;
    /// assert!(t.as_secs_f64() >= 0.0);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn time(self, mut f: impl FnMut() -> Result<()>) -> Result<std::time::Duration> {
        match self {
            Device::Cpu => {
                let t = std::time::Instant::now();
                f()?;
                Ok(t.elapsed())
            }
            Device::Cuda(id) => {
                let ms = Cuda::time(id, &mut f)?;
                Ok(std::time::Duration::from_secs_f64(ms.max(0.0) / 1e3))
            }
        }
    }
}

impl Device {
    /// The free and total memory of this device in bytes: `cuMemGetInfo` on a GPU (memory
    /// that rodl's pool keeps for reuse counts as used), and the host-memory limit
    /// ([`crate::memory::host_memory_limit`]) as both on the CPU.
    ///
    /// ```
    /// use rodl::Device;
    /// let (free, total) = Device::Cpu.memory_info()?;
    /// assert!(free > 0 && free == total);
    /// # Ok::<(), rodl::Error>(())
    /// ```
    pub fn memory_info(self) -> Result<(u64, u64)> {
        match self {
            Device::Cpu => {
                let limit = crate::memory::host_memory_limit();
                Ok((limit, limit))
            }
            Device::Cuda(id) => Cuda::memory_info(id),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => write!(f, "cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

impl FromStr for Device {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim().to_ascii_lowercase();
        if t == "cpu" {
            return Ok(Device::Cpu);
        }
        if t == "cuda" || t == "gpu" {
            return Ok(Device::Cuda(0));
        }
        if let Some(rest) = t.strip_prefix("cuda:").or_else(|| t.strip_prefix("gpu:")) {
            return rest
                .parse::<usize>()
                .map(Device::Cuda)
                .map_err(|_| Error::invalid(format!("bad device ordinal in {s:?}")));
        }
        Err(Error::invalid(format!(
            "unknown device {s:?} (expected \"cpu\", \"cuda\" or \"cuda:N\")"
        )))
    }
}
