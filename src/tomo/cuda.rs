//! The CUDA ray transform's geometry side (crate feature `cuda`): a geometry's views, grid,
//! slab and detector turned into the parameters and per-view words of the Joseph kernels
//! ([`RayParams`]), uploaded as a [`CudaRay`] (the kernels' host side,
//! [`crate::backend::cuda::ray`]); and [`GpuRay`], the projectors' interface, for it.

use std::ops::Range;

use super::geometry::{Beam, Detector, VecGeometry};
use super::gpu_interface::GpuRay;
use super::grid::Grid;
use crate::backend::cuda::ray::RayParams;
pub(crate) use crate::backend::cuda::ray::{CudaRay, FORWARD_SEGMENT_PLANES};
use crate::backend::cuda::DeviceTensor;
use crate::{Error, Result};

/// The transform of the views `views` of `geom` on the cells `slab` along `axis` of `grid`
/// (the whole range along the other axes), for one piece of a split transform: its data
/// are the rows of those views, its volume the slab's own C-order buffer (shape `slab.len()`
/// along `axis`). Without the 2D transposes' tables (a piece's transpose adds into its slab).
///
/// The kernels work in the whole grid's frame: its corner and cell sides, the slab's first
/// cells `lo` in [`RayParams`] and only the slab's bounds, and the slab's address shifted
/// back by `lo` (`CudaRay::kernel_volume`) so that whole-grid indices land in the slab.
/// Every ray, plane and tap coordinate is then the unsplit transform's, bit for bit (a
/// slab's own corner rounds them differently). A 3D piece's chunked kernels launch only the
/// detector rows whose rays can reach the slab ([`VecGeometry::rows_through`] on the slab
/// widened by a cell each side, [`Grid::reach_box`]); none at all when no ray of its views meets it.
pub(crate) fn ray_piece(
    id: usize,
    geom: &VecGeometry,
    views: Range<usize>,
    grid: &Grid,
    axis: usize,
    slab: Range<usize>,
) -> Result<CudaRay> {
    if axis >= geom.ndim()
        || slab.end > grid.shape[axis]
        || (slab.is_empty() && grid.shape[axis] > 0)
    {
        return Err(Error::invalid(format!(
            "slab {slab:?} along axis {axis} of a grid of {:?} cells",
            &grid.shape[..geom.ndim()]
        )));
    }
    let to_i32 = |n: usize, what: &str| {
        i32::try_from(n)
            .map_err(|_| Error::Unsupported(format!("{what} {n} exceeds the CUDA kernels' range")))
    };
    let chosen = geom.views().get(views.clone()).ok_or_else(|| {
        Error::invalid(format!(
            "views {views:?} of a geometry of {} views",
            geom.num_views()
        ))
    })?;
    let mut shape = grid.shape.map(|n| n as i64);
    shape[axis] = slab.len() as i64;
    let mut lo = [0i32; 3];
    lo[axis] = to_i32(slab.start, "slab offset")?;
    let whole = slab.len() == grid.shape[axis];
    let band = if geom.ndim() == 3 && !whole {
        let (min, max) = grid.reach_box(axis, &slab);
        geom.rows_through(views.clone(), min, max)
    } else {
        0..geom.nv()
    };
    let params = RayParams {
        shape,
        vmin: grid.min,
        h: grid.h,
        ndim: geom.ndim() as i32,
        nu: to_i32(geom.nu(), "detector size")?,
        nv: to_i32(geom.nv(), "detector size")?,
        nviews: to_i32(chosen.len(), "number of views")?,
        parallel: i32::from(geom.beam() == Beam::Parallel),
        first_view: 0,
        lo,
        row0: to_i32(band.start, "detector row")?,
        rows: to_i32(band.len(), "detector rows")?,
        detector: match geom.detector() {
            Detector::Flat => 0,
            Detector::Cylindrical { .. } => 1,
            Detector::Spherical { .. } => 2,
        },
        radius: geom.detector().radius().unwrap_or(0.0),
        lat0: geom.curved_lat0(),
    };
    let mut flat: Vec<f64> = Vec::with_capacity(chosen.len() * 26);
    for (k, v) in views.clone().zip(chosen) {
        flat.extend(
            v.src
                .into_iter()
                .chain(v.det_center)
                .chain(v.det_u)
                .chain(v.det_v),
        );
        if let Some(words) = geom.curved_frame_words(k) {
            flat.extend(words);
        }
    }
    CudaRay::upload(id, params, &flat, band.is_empty())
}

impl GpuRay for CudaRay {
    /// Uploads the per-view vectors to GPU `id` and compiles the kernels (once per device).
    fn new(id: usize, geom: &VecGeometry, grid: &Grid) -> Result<Self> {
        ray_piece(id, geom, 0..geom.num_views(), grid, 0, 0..grid.shape[0])?.with_tables2()
    }

    fn set_deterministic(&mut self, on: bool) {
        self.set_deterministic_kernels(on)
    }

    fn max_batch(&self) -> usize {
        self.batch_limit()
    }

    fn forward_batch(
        &self,
        vol: &DeviceTensor<f32>,
        sino: &mut DeviceTensor<f32>,
        batch: usize,
    ) -> Result<()> {
        self.forward_entries(vol, sino, batch)
    }

    fn transpose_batch(
        &self,
        sino: &DeviceTensor<f32>,
        vol: &mut DeviceTensor<f32>,
        batch: usize,
    ) -> Result<()> {
        self.transpose_entries(sino, vol, batch)
    }
}
