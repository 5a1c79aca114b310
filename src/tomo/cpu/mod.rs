//! Joseph's method on the CPU: ray-driven forward projection (parallel over views) and its exact
//! transpose (parallel over volume slabs along each ray's dominant axis, so no two threads write
//! the same voxel: no atomics, no per-thread volume copies).
//!
//! The rays of a view are set up once per call ([`ray`]; grouped by dominant axis, stored as
//! structure-of-arrays in [`view_rays`]). For `f32` on x86-64 with AVX2 the windowed kernels run
//! ([`avx2_2d`], [`avx2_3d`]: groups of eight rays fetch their taps with row loads and lane
//! permutes, in blocks of planes). Within them, 2D parallel beams bin their rays by offset and
//! need no permutes (`avx2_2d::bins`; detectors much finer than the cells: a cell-by-cell
//! gather, `avx2_2d::gather`), and 3D detector columns that share their in-plane track
//! interpolate along it once per plane, on whole rows (`avx2_3d::column`). Otherwise, and for
//! classes the windowed 3D kernels do not take, the plane-major kernels of [`planes`] (every
//! plane visited by all rays of a class while it is in cache; portable, with an AVX2 gather
//! version for `f32`). All use the same per-plane interpolation coordinates and weights, so
//! every forward has its exact transpose.
//!
//! The modules form layers, each importing only from those below it: this dispatcher; the
//! kernel groups ([`avx2_2d`], [`avx2_3d`], which also take [`planes`]' per-plane kernels); the
//! shared data and tools ([`view_rays`], [`lanes`], [`send_ptr`]); the ray set-up ([`ray`]).

#[cfg(target_arch = "x86_64")]
mod avx2_2d;
#[cfg(target_arch = "x86_64")]
mod avx2_3d;
#[cfg(target_arch = "x86_64")]
mod lanes;
mod planes;
mod ray;
mod send_ptr;
mod view_rays;

use crate::tomo::geometry::VecGeometry;
use crate::tomo::grid::Grid;
use crate::Scalar;

/// Forward projection: `sino[view, u, v] = w · Σ_planes interp(vol)`, by the windowed `f32`
/// kernels where they run, else by the plane-major kernels.
pub(crate) fn forward<T: Scalar>(geom: &VecGeometry, grid: &Grid, vol: &[T], sino: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    if let (Some(vol), Some(sino)) = (T::as_f32_slice(vol), T::as_f32_slice_mut(sino)) {
        if avx2_2d::available(geom, grid) {
            return avx2_2d::forward(geom, grid, vol, sino);
        }
        if avx2_3d::available(geom, grid) {
            return avx2_3d::forward(geom, grid, vol, sino);
        }
    }
    planes::forward(geom, grid, vol, sino)
}

/// The exact transpose of [`forward`]: `vol = Σ_rays w · sino · interpᵀ`; `tasks` is the number
/// of slabs of planes per dominant axis that the slab-parallel kernels aim at.
pub(crate) fn transpose<T: Scalar>(
    geom: &VecGeometry,
    grid: &Grid,
    sino: &[T],
    vol: &mut [T],
    tasks: usize,
) {
    #[cfg(target_arch = "x86_64")]
    if let (Some(sino), Some(vol)) = (T::as_f32_slice(sino), T::as_f32_slice_mut(vol)) {
        if avx2_2d::available(geom, grid) {
            return avx2_2d::transpose(geom, grid, sino, vol);
        }
        if avx2_3d::available(geom, grid) {
            return avx2_3d::transpose(geom, grid, sino, vol, tasks);
        }
    }
    planes::transpose(geom, grid, sino, vol, tasks)
}

/// The weighted transpose of 2D fan-beam FBP, `vol[x] = Σ_rays w · interpᵀ · (c₀ − x₀ c₁ −
/// x₁ c₂)`, `c_k` the ray's entry of `rows[k]` (each shaped as the sinogram) and `x` the
/// voxel's centre: the exact transpose's taps and weights, one pass instead of three (the
/// windowed `f32` kernel `avx2_2d::weighted` where it runs, else the plane-major
/// `planes::weighted`); `tasks` as for [`transpose`]. Returns `false`, leaving `vol` as it
/// is, for a 3D geometry.
pub(crate) fn transpose_weighted<T: Scalar>(
    geom: &VecGeometry,
    grid: &Grid,
    rows: [&[T]; 3],
    vol: &mut [T],
    tasks: usize,
) -> bool {
    if geom.ndim() != 2 {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    if let (Some(r0), Some(r1), Some(r2), Some(vol)) = (
        T::as_f32_slice(rows[0]),
        T::as_f32_slice(rows[1]),
        T::as_f32_slice(rows[2]),
        T::as_f32_slice_mut(vol),
    ) {
        if avx2_2d::available(geom, grid) {
            avx2_2d::transpose_weighted(geom, grid, [r0, r1, r2], vol);
            return true;
        }
    }
    planes::transpose_weighted(geom, grid, rows, vol, tasks);
    true
}

/// Whether [`transpose_weighted`] runs for this geometry (2D).
pub(crate) fn has_weighted_transpose(geom: &VecGeometry) -> bool {
    geom.ndim() == 2
}
