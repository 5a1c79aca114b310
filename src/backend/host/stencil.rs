//! Host finite-difference stencils (Gradient, Divergence, Laplacian) and the pointwise norm, with
//! ndarray's `Zip` (parallel above a size threshold). The GPU kernels (`kernels/finite_diff.cu`,
//! `kernels/pointwise_norm.cu`) evaluate the same expressions in the same order.

use ndarray::{ArrayViewD, ArrayViewMutD, Axis, Slice, Zip};

use crate::Scalar;

/// Below this many elements a loop runs on the calling thread: waking rayon's workers costs far
/// more than the loop itself on small grids (tens of µs against well under one).
const PAR_MIN_LEN: usize = 1 << 14;

/// `Zip::par_for_each` for large zips, `Zip::for_each` for small ones.
macro_rules! zip_for_each {
    ($zip:expr, $f:expr) => {{
        let zip = $zip;
        if zip.size() >= PAR_MIN_LEN {
            zip.par_for_each($f)
        } else {
            zip.for_each($f)
        }
    }};
}

/// `out = (x[i+1] − x[i]) · w` along `axis`, with `x[n] = 0`.
fn forward_diff<T: Scalar>(x: ArrayViewD<T>, axis: usize, w: T, mut out: ArrayViewMutD<T>) {
    let ax = Axis(axis);
    let n = x.len_of(ax);
    let (lo, last) = out.view_mut().split_at(ax, n - 1);
    zip_for_each!(
        Zip::from(lo)
            .and(x.slice_axis(ax, Slice::from(1..)))
            .and(x.slice_axis(ax, Slice::from(..n - 1))),
        |o, &a, &b| *o = (a - b) * w
    );
    zip_for_each!(
        Zip::from(last).and(x.slice_axis(ax, Slice::from(n - 1..))),
        |o, &b| *o = -b * w
    );
}

/// `out += (g[i] − g[i−1]) · w` along `axis`, with `g[−1] = 0`.
fn backward_diff_add<T: Scalar>(g: ArrayViewD<T>, axis: usize, w: T, mut out: ArrayViewMutD<T>) {
    let ax = Axis(axis);
    let n = g.len_of(ax);
    let (first, rest) = out.view_mut().split_at(ax, 1);
    zip_for_each!(
        Zip::from(first).and(g.slice_axis(ax, Slice::from(..1))),
        |o, &a| *o += a * w
    );
    zip_for_each!(
        Zip::from(rest)
            .and(g.slice_axis(ax, Slice::from(1..)))
            .and(g.slice_axis(ax, Slice::from(..n - 1))),
        |o, &a, &b| *o += (a - b) * w
    );
}

/// Forward differences along every axis: `outs[k] = (x[i + e_k] − x[i]) · w[k]`, zero padded.
pub(crate) fn gradient<T: Scalar>(x: ArrayViewD<T>, outs: &mut [ArrayViewMutD<T>], w: &[f64]) {
    for (k, o) in outs.iter_mut().enumerate() {
        forward_diff(x.view(), k, T::of(w[k]), o.view_mut());
    }
}

/// `out = Σ_k (g_k[i] − g_k[i − e_k]) · w[k]`, with `g_k = 0` before the grid.
pub(crate) fn divergence<T: Scalar>(parts: &[ArrayViewD<T>], mut out: ArrayViewMutD<T>, w: &[f64]) {
    out.fill(T::zero());
    for (k, g) in parts.iter().enumerate() {
        backward_diff_add(g.view(), k, T::of(w[k]), out.view_mut());
    }
}

/// `out = centre · x + Σ_k (x[i + e_k] + x[i − e_k]) · w[k]`, zero padded.
pub(crate) fn laplacian<T: Scalar>(
    x: ArrayViewD<T>,
    mut out: ArrayViewMutD<T>,
    w: &[f64],
    centre: f64,
) {
    let c = T::of(centre);
    zip_for_each!(Zip::from(&mut out).and(&x), |o, &x| *o = c * x);
    for (k, &wk) in w.iter().enumerate() {
        let ax = Axis(k);
        let n = x.len_of(ax);
        let wk = T::of(wk);
        zip_for_each!(
            Zip::from(out.slice_axis_mut(ax, Slice::from(..n - 1)))
                .and(x.slice_axis(ax, Slice::from(1..))),
            |o, &a| *o += wk * a
        );
        zip_for_each!(
            Zip::from(out.slice_axis_mut(ax, Slice::from(1..)))
                .and(x.slice_axis(ax, Slice::from(..n - 1))),
            |o, &a| *o += wk * a
        );
    }
}

/// `out[i] = ‖(g_0[i], g_1[i], …)‖_p` for `p ∈ [1, ∞]`.
pub(crate) fn pointwise_norm<T: Scalar>(parts: &[&[T]], out: &mut [T], p: f64) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = if p == 1.0 {
            parts
                .iter()
                .map(|g| g[i].abs())
                .fold(T::zero(), |a, b| a + b)
        } else if p == 2.0 {
            parts
                .iter()
                .map(|g| g[i] * g[i])
                .fold(T::zero(), |a, b| a + b)
                .sqrt()
        } else if p.is_infinite() {
            parts.iter().map(|g| g[i].abs()).fold(T::zero(), T::max)
        } else {
            let s: f64 = parts.iter().map(|g| g[i].f64().abs().powf(p)).sum();
            T::of(s.powf(1.0 / p))
        };
    }
}
