//! The CPU projector: the Joseph kernels of [`crate::tomo::cpu`] on the operator's own rayon
//! pool.

use std::sync::Arc;

use super::Projector;
use crate::storage::Storage;
use crate::tomo::backend::CpuOptions;
use crate::tomo::cpu;
use crate::tomo::geometry::VecGeometry;
use crate::tomo::grid::Grid;
use crate::{Error, Result, Scalar};

/// Joseph projection on host data, on a thread pool of its own.
pub(crate) struct CpuProjector {
    pool: Arc<rayon::ThreadPool>,
    geometry: VecGeometry,
    grid: Grid,
}

impl CpuProjector {
    /// Starts the thread pool (`opts.threads` workers, or one per core).
    pub(crate) fn new(opts: &CpuOptions, geometry: &VecGeometry, grid: &Grid) -> Result<Self> {
        let mut b = rayon::ThreadPoolBuilder::new();
        if let Some(n) = opts.threads {
            if n == 0 {
                return Err(Error::invalid("CPU backend: threads must be at least 1"));
            }
            b = b.num_threads(n);
        }
        let pool = b
            .build()
            .map_err(|e| Error::invalid(format!("cannot start the thread pool: {e}")))?;
        Ok(Self {
            pool: Arc::new(pool),
            geometry: geometry.clone(),
            grid: *grid,
        })
    }
}

fn host<'a, T: Scalar>(s: &'a Storage<T>, what: &str) -> Result<&'a [T]> {
    s.host().map(|h| h.slice()).ok_or_else(|| {
        Error::device_mismatch(format!("RayTransform (CPU): {what}"), "cpu", s.device())
    })
}

fn host_mut<'a, T: Scalar>(s: &'a mut Storage<T>, what: &str) -> Result<&'a mut [T]> {
    let got = s.device().to_string();
    s.host_mut()
        .map(|h| h.slice_mut())
        .ok_or_else(|| Error::device_mismatch(format!("RayTransform (CPU): {what}"), "cpu", got))
}

impl<T: Scalar> Projector<T> for CpuProjector {
    fn forward(&self, vol: &Storage<T>, sino: &mut Storage<T>) -> Result<()> {
        let vol = host(vol, "volume")?;
        let sino = host_mut(sino, "sinogram")?;
        self.pool
            .install(|| cpu::forward(&self.geometry, &self.grid, vol, sino));
        Ok(())
    }

    fn range_device(&self) -> crate::Device {
        crate::Device::Cpu
    }

    fn has_weighted_transpose(&self) -> bool {
        cpu::has_weighted_transpose(&self.geometry)
    }

    fn transpose_weighted(&self, rows: [&[T]; 3], vol: &mut Storage<T>) -> Result<bool> {
        let vol = host_mut(vol, "volume")?;
        let tasks = 2 * self.pool.current_num_threads();
        Ok(self
            .pool
            .install(|| cpu::transpose_weighted(&self.geometry, &self.grid, rows, vol, tasks)))
    }

    fn transpose(&self, sino: &Storage<T>, vol: &mut Storage<T>) -> Result<()> {
        let sino = host(sino, "sinogram")?;
        let vol = host_mut(vol, "volume")?;
        let tasks = 2 * self.pool.current_num_threads();
        self.pool
            .install(|| cpu::transpose(&self.geometry, &self.grid, sino, vol, tasks));
        Ok(())
    }
}
