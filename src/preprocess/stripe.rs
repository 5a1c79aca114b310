//! Stripe (ring-artefact) removal by the sorting-based method of Vo, Atwood and Drakopoulos.

use ndarray::{Array2, ArrayViewMut2, ArrayViewMut3, Axis};
use rayon::prelude::*;

use crate::storage::Storage;
use crate::{Element, Error, Result};

/// Removes stripes from sinograms by the sorting-based method of N. T. Vo, R. C. Atwood and
/// M. Drakopoulos, "Superior techniques for eliminating ring artifacts in X-ray
/// micro-tomography", Optics Express 26(22), 28396–28412 (2018), algorithm 3.
///
/// Each sinogram `[angle, u]` (one detector row `v` of `data = [angle, u, v]`, processed in
/// parallel) is sorted column by column along the angle axis, which turns a detector pixel's
/// constant offset into a stripe of the sorted image while the object's features become smooth;
/// a median filter of width `size` along u then removes the stripe, and the values are put back
/// in their original order. Full stripes (a pixel's response offset at every angle) are removed.
/// `size` must be odd and at least 3, wider than the widest stripe and narrower than the
/// sample's finest features across u: a wider filter also flattens the sample's own profile in
/// the sorted image (Vo et al. use 21–41 on detectors of 2000 pixels and more; rodl's test, on a
/// 192-pixel detector with features of about 3 pixels, uses 5). Run it on the line integrals
/// (after `−log`).
///
/// ```
/// use ndarray::Array3;
/// use rodl::preprocess::remove_stripes_sorting;
/// // A smooth sinogram with one offset column.
/// let mut s = Array3::from_shape_fn([16, 32, 1], |(a, u, _)| (u as f32 * 0.1).sin() + a as f32 * 0.01);
/// let clean = s.clone();
/// for a in 0..16 { s[[a, 10, 0]] += 0.5; }
/// remove_stripes_sorting(s.view_mut(), 5)?;
/// let err = (0..16).map(|a| (s[[a, 10, 0]] - clean[[a, 10, 0]]).abs()).fold(0.0f32, f32::max);
/// assert!(err < 0.05, "{err}");
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn remove_stripes_sorting(mut data: ArrayViewMut3<'_, f32>, size: usize) -> Result<()> {
    check(size, data.dim().1)?;
    data.axis_iter_mut(Axis(2))
        .into_par_iter()
        .for_each(|sino| sort_filter_unsort(sino, size));
    Ok(())
}

/// [`remove_stripes_sorting`] on an element of a space (`[angle, u, v]`, f32) on any device: on
/// a GPU on the device (no host round trip), in two kernels — each value's rank in its column
/// along the angle axis (a stable sort in the host's total order, by counting: `angles`
/// comparisons per value) and the medians of the sorted rows — so the results are the host's
/// exactly. The GPU needs 8 bytes of scratch per value.
pub fn remove_stripes_sorting_element(data: &mut Element<f32>, size: usize) -> Result<()> {
    let shape = data.shape()?.to_vec();
    let &[_, nu, _] = shape.as_slice() else {
        return Err(Error::invalid(format!(
            "stripe removal needs data [angle, u, v], got shape {shape:?}"
        )));
    };
    check(size, nu)?;
    match data.storage_mut("remove_stripes_sorting")? {
        Storage::Host(_) => {
            let a = data
                .as_array_mut()?
                .into_dimensionality::<ndarray::Ix3>()
                .map_err(|e| Error::invalid(e.to_string()))?;
            remove_stripes_sorting(a, size)
        }
        Storage::Cuda(t) => crate::backend::cuda::preprocess::stripes(t, size),
    }
}

/// Errors unless `size` is a valid filter width for `nu` detector pixels.
fn check(size: usize, nu: usize) -> Result<()> {
    if size < 3 || size % 2 == 0 {
        return Err(Error::invalid(format!(
            "the stripe filter size must be odd and at least 3, got {size}"
        )));
    }
    if size > nu {
        return Err(Error::invalid(format!(
            "the stripe filter size {size} is larger than the detector's {nu} pixels"
        )));
    }
    Ok(())
}

/// Algorithm 3 of Vo et al. on one sinogram `[angle, u]`.
fn sort_filter_unsort(mut sino: ArrayViewMut2<'_, f32>, size: usize) {
    let (na, nu) = sino.dim();
    // Sorted values and their angle indices, column by column.
    let mut sorted = Array2::<f32>::zeros([na, nu]);
    let mut index = Array2::<usize>::zeros([na, nu]);
    let mut column: Vec<(f32, usize)> = Vec::with_capacity(na);
    for u in 0..nu {
        column.clear();
        column.extend((0..na).map(|a| (sino[[a, u]], a)));
        column.sort_by(|x, y| x.0.total_cmp(&y.0));
        for (rank, &(v, a)) in column.iter().enumerate() {
            sorted[[rank, u]] = v;
            index[[rank, u]] = a;
        }
    }
    // Median along u of each row of the sorted sinogram, put back in the original order.
    let r = size / 2;
    let mut window = Vec::with_capacity(size);
    for rank in 0..na {
        let row = sorted.row(rank);
        for u in 0..nu {
            window.clear();
            let lo = u.saturating_sub(r);
            let hi = (u + r + 1).min(nu);
            window.extend(row.slice(ndarray::s![lo..hi]).iter().copied());
            let mid = window.len() / 2;
            let (_, &mut med, _) = window.select_nth_unstable_by(mid, f32::total_cmp);
            sino[[index[[rank, u]], u]] = med;
        }
    }
}
