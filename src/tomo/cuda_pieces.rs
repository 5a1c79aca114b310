//! The CUDA ray transform in pieces (crate feature `cuda`): a plan of view groups × volume slabs
//! ([`super::split`]), each piece's kernels set up for its views on its slab ([`ray_piece`]:
//! only the band of detector rows that can reach the slab is launched), run by the backend's
//! [`Runner`] with the data streamed through the copy lanes
//! (`crate::backend::cuda::pieces`).

use std::ops::Range;

use super::cuda::{ray_piece, CudaRay};
use super::geometry::VecGeometry;
use super::gpu_interface::GpuRay;
use super::gpu_interface::{GpuPieces, In, Out};
use super::grid::Grid;
use crate::backend::cuda::pieces::Runner;
use crate::{Error, Result};

/// The ray transform of one GPU as a plan of pieces (see the [module](self)).
pub(crate) struct PieceRunner(Runner);

impl GpuPieces for PieceRunner {
    /// The runner of `geom` on `grid` on GPU `id` in the pieces `slabs` (along `axis`) ×
    /// `groups` (each list covering its axis in order). One piece is the whole transform (with
    /// its fast 2D transpose).
    fn new(
        id: usize,
        geom: &VecGeometry,
        grid: &Grid,
        axis: usize,
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
        if axis >= geom.ndim()
            || !covers(&slabs, grid.shape[axis])
            || !covers(&groups, geom.num_views())
        {
            return Err(Error::invalid(format!(
                "pieces {slabs:?} (along axis {axis}) × {groups:?} do not cover a grid of {:?} \
                 cells and {} views",
                &grid.shape[..geom.ndim()],
                geom.num_views()
            )));
        }
        let mut rays = Vec::with_capacity(slabs.len() * groups.len());
        if slabs.len() == 1 && groups.len() == 1 {
            rays.push(CudaRay::new(id, geom, grid)?);
        } else {
            for g in &groups {
                for s in &slabs {
                    rays.push(ray_piece(id, geom, g.clone(), grid, axis, s.clone())?);
                }
            }
        }
        let view_len = geom.nu() * geom.nv();
        Runner::new(id, grid.shape, axis, slabs, groups, rays, view_len).map(PieceRunner)
    }

    fn set_deterministic(&mut self, on: bool) {
        self.0.set_deterministic(on)
    }

    fn axis(&self) -> usize {
        self.0.axis()
    }

    fn slabs(&self) -> &[Range<usize>] {
        self.0.slabs()
    }

    fn groups(&self) -> &[Range<usize>] {
        self.0.groups()
    }

    fn device_bytes(&self, host_volume: bool, host_data: bool, forward: bool) -> u128 {
        self.0.device_bytes(host_volume, host_data, forward)
    }

    fn forward(&self, vol: In<'_>, sino: Out<'_>) -> Result<()> {
        self.0.forward(vol, sino)
    }

    fn transpose(&self, sino: In<'_>, vol: Out<'_>) -> Result<()> {
        self.0.transpose(sino, vol)
    }
}

#[cfg(test)]
mod tests {
    //! Pieces against the whole transform (needs a GPU). The timing of layouts is
    //! `benches/pieces_profile.rs` (`CudaOptions::with_pieces`).
    use super::*;
    use crate::backend::cuda::DeviceTensor;
    use crate::backend::{BackendStorage, DeviceBackend};
    use crate::tomo::Geometry;
    use crate::{uniform_discr, UniformPartition};

    /// The cone problem of the benches at `n` (n³ on [-1, 1]³, n views, detector 3n/2 × n; the
    /// ODL conventions: circular about axis 2).
    fn small_cone(n: usize) -> Result<(Geometry, Grid)> {
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
        Ok((geometry, Grid::of(space.partition()?)))
    }

    /// ‖a − b‖ / ‖b‖.
    fn rel(a: &[f32], b: &[f32]) -> f64 {
        let num: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
        let den: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
        (num / den).sqrt()
    }

    /// Slabs along axes 0, 1 and 2 (strided for 1 and 2) with device-resident and host data
    /// equal the whole transform; the slabs along axis 2 launch bands of rows. Needs a GPU
    /// (the crate's unit tests with the `cuda` feature run only where one is).
    #[test]
    fn slabs_along_every_axis_equal_the_whole_with_device_and_host_data() -> Result<()> {
        let n = 40;
        let (geometry, grid) = small_cone(n)?;
        let geom = geometry.vec();
        let nvol = n * n * n;
        let nsino = geom.num_views() * geom.nu() * geom.nv();
        let x: Vec<f32> = (0..nvol)
            .map(|i| ((i * 7919) % 1000) as f32 / 1000.0)
            .collect();
        let y: Vec<f32> = (0..nsino)
            .map(|i| ((i * 104729) % 997) as f32 / 997.0)
            .collect();
        let one = |r: Range<usize>| std::iter::once(r).collect::<Vec<_>>();
        let whole = PieceRunner::new(0, geom, &grid, 0, one(0..n), one(0..geom.num_views()))?;
        let (mut fw, mut aw) = (vec![0.0f32; nsino], vec![0.0f32; nvol]);
        whole.forward(In::Host(&x), Out::Host(&mut fw))?;
        whole.transpose(In::Host(&y), Out::Host(&mut aw))?;
        let on_gpu =
            |v: &[f32]| DeviceTensor::from_host(0, ndarray::ArrayView1::from(v).into_dyn());
        let (dx, dy) = (on_gpu(&x)?, on_gpu(&y)?);
        let mut ds = DeviceTensor::<f32>::zeros(0, &[nsino])?;
        let mut dv = DeviceTensor::<f32>::zeros(0, &[nvol])?;
        for axis in 0..3 {
            let slabs = vec![0..12, 12..13, 13..28, 28..n];
            let groups = vec![0..7, 7..geom.num_views()];
            let r = PieceRunner::new(0, geom, &grid, axis, slabs, groups)?;
            let (mut f, mut a) = (vec![0.0f32; nsino], vec![0.0f32; nvol]);
            r.forward(In::Host(&x), Out::Host(&mut f))?;
            r.transpose(In::Host(&y), Out::Host(&mut a))?;
            let (ef, ea) = (rel(&f, &fw), rel(&a, &aw));
            r.forward(In::Device(&dx), Out::Device(&mut ds))?;
            r.transpose(In::Device(&dy), Out::Device(&mut dv))?;
            let (f_dev, a_dev) = (ds.to_host()?, dv.to_host()?);
            let flat = |a: &ndarray::ArrayD<f32>| a.iter().copied().collect::<Vec<f32>>();
            let (efd, ead) = (rel(&flat(&f_dev), &fw), rel(&flat(&a_dev), &aw));
            eprintln!(
                "axis {axis}: host forward {ef:.1e}, adjoint {ea:.1e}; device forward {efd:.1e},                  adjoint {ead:.1e}"
            );
            assert!(
                ef <= 1e-6 && ea <= 1e-6 && efd <= 1e-6 && ead <= 1e-6,
                "axis {axis}"
            );
        }
        Ok(())
    }
}
