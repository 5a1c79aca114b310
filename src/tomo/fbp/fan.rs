//! Exact 2D fan-beam FBP in one back-projection: the filter once, then the ray transform's
//! weighted transpose with the distance weight applied inside.
//!
//! The exact fan-beam plan ([`super::weights::fbp_plan`]) reconstructs by
//! `(A* F₀ y − x₀ A* F₁ y − x₁ A* F₂ y) / (R² − |x|²)`, the three filters `F_k` sharing their
//! pre-weights and ramp and differing in their post-weights `t_k`. So with `Q` the filtered,
//! pre-weighted data (one filter pass), the three back-projections are one back-projection of
//! rays whose taps carry `t₀ Q − x₀ t₁ Q − x₁ t₂ Q` at the voxel's centre `x`
//! (`crate::tomo::cpu::transpose_weighted`), then one division by `R² − |x|²` per voxel: the
//! same operator (equal to the sum of three to rounding) at the cost of about one
//! back-projection instead of three.

use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::operator::FbpFilter;
use super::weights::Weights;
use crate::tomo::RayTransform;
use crate::{Element, LinOp, LinearOperator, Operator, Result, Scalar, Space};

/// The exact 2D fan-beam FBP of a CPU ray transform with the weighted transpose (built by
/// [`fbp_op_views`](super::fbp_op_views) where it runs; the three-term form otherwise).
pub(super) struct FanFbp<T: Scalar> {
    ray: RayTransform<T>,
    /// The pre-weights and ramp of the three terms (no post-weights).
    filter: FbpFilter<T>,
    /// The three terms' post-weights `t_k`, each shaped as the data (`[views][u]`).
    post: [Vec<T>; 3],
    /// `(w_data / w_volume) / (R² − |x|²)` per voxel, 0 where `R² − |x|² ≤ 10⁻⁹ R²`.
    factor: Vec<T>,
    /// The same operator as a sum of three back-projections: its adjoint is this one's.
    exact: LinOp<T>,
    /// The filtered data and the three rows of coefficients, kept between calls.
    scratch: Mutex<Option<(Element<T>, Vec<T>)>>,
}

impl<T: Scalar> FanFbp<T> {
    /// The FBP for `ray` (a CPU transform of the views whose data `filter` filters), the
    /// post-weights `post` of the three terms, the source radius `r` and the three-term
    /// operator `exact`; `None` where the ray transform has no weighted transpose.
    pub(super) fn new(
        ray: &RayTransform<T>,
        filter: FbpFilter<T>,
        post: [&Weights; 3],
        r: f64,
        exact: LinOp<T>,
    ) -> Result<Option<Self>> {
        if !ray.has_weighted_transpose() {
            return Ok(None);
        }
        let data = ray.range();
        let shape = data.shape()?;
        let (nviews, nu) = (shape[0], shape[1]);
        let post = post.map(|w| {
            let mut v = Vec::with_capacity(nviews * nu);
            for a in 0..nviews {
                v.extend((0..nu).map(|i| T::of(w.at(a, i, 0, nu, 1))));
            }
            v
        });
        let scale = ray.adjoint_scale();
        let f = ray.domain().element_from_fn(|p| {
            let den = r * r - (p[0] * p[0] + p[1] * p[1]);
            if den <= 1e-9 * r * r {
                T::zero()
            } else {
                T::of(scale / den)
            }
        })?;
        Ok(Some(Self {
            ray: ray.shared(),
            filter,
            post,
            factor: f.as_slice()?.to_vec(),
            exact,
            scratch: Mutex::new(None),
        }))
    }
}

impl<T: Scalar> Operator<T> for FanFbp<T> {
    fn domain(&self) -> &Space<T> {
        self.ray.range()
    }
    fn range(&self) -> &Space<T> {
        self.ray.domain()
    }
    fn evaluate(&self, y: &Element<T>, out: &mut Element<T>) -> Result<()> {
        let mut guard = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            let q = self.ray.range().zero()?;
            let len = q.as_slice()?.len();
            *guard = Some((q, vec![T::zero(); 3 * len]));
        }
        let Some((q, rows)) = guard.as_mut() else {
            return self.exact.apply_into(y, out);
        };
        self.filter.apply_into(y, q)?;
        let qs = q.as_slice()?;
        let len = qs.len();
        rows.par_chunks_mut(len)
            .zip(self.post.par_iter())
            .for_each(|(row, w)| {
                for ((r, &q), &w) in row.iter_mut().zip(qs).zip(w) {
                    *r = w * q;
                }
            });
        let (r0, rest) = rows.split_at(len);
        let (r1, r2) = rest.split_at(len);
        if !self.ray.transpose_weighted([r0, r1, r2], out)? {
            drop(guard);
            return self.exact.apply_into(y, out);
        }
        out.as_slice_mut()?
            .par_iter_mut()
            .zip(self.factor.par_iter())
            .for_each(|(x, &f)| *x *= f);
        Ok(())
    }
    fn is_linear(&self) -> bool {
        true
    }
    fn name(&self) -> String {
        "FBP (fan beam, one weighted back-projection)".into()
    }
}

impl<T: Scalar> LinearOperator<T> for FanFbp<T> {
    fn adjoint(&self) -> Result<LinOp<T>> {
        self.exact.adjoint()
    }
}

/// The three-term operator and the fast one as a [`LinOp`]: the fast one where it runs.
pub(super) fn fast_or_exact<T: Scalar>(fast: Option<FanFbp<T>>, exact: LinOp<T>) -> LinOp<T> {
    match fast {
        Some(f) => Arc::new(f),
        None => exact,
    }
}
