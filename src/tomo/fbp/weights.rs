//! Data weights of FBP: cosine weights of fan and cone beams and Parker's short-scan weights.

use std::f64::consts::PI;

use super::helical::row_window;
use super::setup::{Setup, Source};
use super::smooth_step::smooth_step;
use crate::{Error, Result};

/// A factored weight on data `[views, u, v]`: `uv[i·nv + j] · au[a·nu + i]` (each factor
/// optional).
#[derive(Clone, Debug, Default)]
pub(crate) struct Weights {
    /// Per detector pixel `(u, v)`.
    pub uv: Option<Vec<f64>>,
    /// Per view and detector column `(angle, u)`.
    pub au: Option<Vec<f64>>,
}

impl Weights {
    /// The weights of the views `views` (of `nu` columns each): the per-view factor's rows.
    pub(crate) fn views(&self, views: &std::ops::Range<usize>, nu: usize) -> Weights {
        Weights {
            uv: self.uv.clone(),
            au: self
                .au
                .as_ref()
                .map(|au| au[views.start * nu..views.end * nu].to_vec()),
        }
    }

    /// The same weights times `w[a]` on view `a` (of `nu` columns each).
    pub(crate) fn scale_views(&mut self, w: &[f64], nu: usize) {
        let au = self.au.get_or_insert_with(|| vec![1.0; w.len() * nu]);
        for (row, &wa) in au.chunks_mut(nu).zip(w) {
            row.iter_mut().for_each(|x| *x *= wa);
        }
    }

    /// The weight of view `a`, column `i`, row `j`.
    #[inline]
    pub(crate) fn at(&self, a: usize, i: usize, j: usize, nu: usize, nv: usize) -> f64 {
        let mut w = 1.0;
        if let Some(uv) = &self.uv {
            w *= uv[i * nv + j];
        }
        if let Some(au) = &self.au {
            w *= au[a * nu + i];
        }
        w
    }
}

/// `smooth_step(x / width + shift)`, with a width of zero meaning a hard step at `x = 0`.
fn step_over(x: f64, width: f64, shift: f64) -> f64 {
    if width > 1e-12 {
        smooth_step(x / width + shift)
    } else if x > 0.0 {
        1.0
    } else if x < 0.0 {
        0.0
    } else {
        smooth_step(shift)
    }
}

/// Parker's short-scan weights, generalised to over-scans by Wesarg, Ebert and Bortfeld
/// ("Parker weights revisited", Med. Phys. 29, 2002), `[views, u]`, normalised so that the two
/// measurements of every line add up to 1.
///
/// `gamma[i]` is the fan angle of column `i` (the ray angle is `β + γ`, so the other
/// measurement of ray `(β, γ)` is `(β + π + 2γ, −γ)`), `betas` the views' angles from the start
/// of the scan of length `alen`; `q ∈ (0, 1]` sets the width of the transitions (1: Parker's
/// original weights).
pub(crate) fn parker(betas: &[f64], gamma: &[f64], alen: f64, q: f64) -> Result<Vec<f64>> {
    let delta = gamma.iter().fold(0.0f64, |m, g| m.max(g.abs()));
    let eps = alen - PI - 2.0 * delta;
    if eps < -1e-9 {
        return Err(Error::invalid(format!(
            "a short scan needs an angle range of at least π + fan angle = {:.6} rad, got {alen:.6}",
            PI + 2.0 * delta
        )));
    }
    let eps = eps.max(0.0);
    let width = |g: f64| q * (2.0 * delta - 2.0 * g + eps);
    let mut w = Vec::with_capacity(betas.len() * gamma.len());
    for &b in betas {
        for &g in gamma {
            let s = step_over(b, width(g), -0.5)
                + step_over(b - 2.0 * delta + 2.0 * g - eps, width(g), 0.5)
                - step_over(b - PI + 2.0 * g, width(-g), -0.5)
                - step_over(b - PI - 2.0 * delta - eps, width(-g), 0.5);
            w.push(0.5 * s);
        }
    }
    Ok(w)
}

/// One filter of an FBP plan: weights before and after the (shared) ramp convolution.
pub(crate) struct Term {
    /// Applied before the ramp filter.
    pub before: Weights,
    /// Applied after the ramp filter.
    pub after: Weights,
}

/// How to reconstruct from the data of a geometry with the ray transform's adjoint `A*`.
pub(crate) struct FbpPlan {
    /// The constant factor of the ramp filter.
    pub scale: f64,
    /// The filters. One: `A* F`. Three (exact fan beam): `(A* F₀ − x₁ A* F₁ − x₂ A* F₂) /
    /// (R² − |x|²)`, with `R` = [`FbpPlan::fan_radius`].
    pub terms: Vec<Term>,
    /// The source radius of the exact fan-beam plan.
    pub fan_radius: Option<f64>,
}

/// The FBP plan for `setup` (see the module documentation of [`fbp`](crate::tomo::fbp) for the
/// derivation); `parker_q`: Parker weights with this transition parameter for short scans,
/// `None` for none; `exact_fan`: the three-term exact plan for fan beams, otherwise one filter.
pub(crate) fn fbp_plan(setup: &Setup, parker_q: Option<f64>, exact_fan: bool) -> Result<FbpPlan> {
    let mut plan = plan_of(setup, parker_q, exact_fan)?;
    plan.scale *= setup.cell_ratio;
    // Views at their own angles: each one's angular weight on the data before the filter.
    if let Some(w) = &setup.view_weights {
        for term in &mut plan.terms {
            term.before.scale_views(w, setup.nu);
        }
    }
    Ok(plan)
}

/// [`fbp_plan`] without the views' angular weights.
fn plan_of(setup: &Setup, parker_q: Option<f64>, exact_fan: bool) -> Result<FbpPlan> {
    let alen = setup.alen;
    let (r, d, u, v, central) = match &setup.source {
        Source::Parallel => {
            // Parallel beams see each line again after π: redundancy weights (Parker's with a
            // zero fan angle) for π ≤ α < 2π; each line counts once for α < π.
            let (weights, turns) = match parker_q {
                Some(q) if !setup.full_turn() => {
                    if (alen - PI).abs() > 1e-9 * PI && alen > PI {
                        (
                            Some(parker(&setup.betas, &vec![0.0; setup.nu], alen, q)?),
                            PI,
                        )
                    } else {
                        (None, PI)
                    }
                }
                _ => (None, alen),
            };
            return Ok(FbpPlan {
                scale: 1.0 / (2.0 * turns),
                terms: vec![Term {
                    before: Weights {
                        uv: None,
                        au: weights,
                    },
                    after: Weights::default(),
                }],
                fan_radius: None,
            });
        }
        Source::Point {
            r,
            d,
            u,
            v,
            central,
        } => (*r, *d, u, v, central),
        Source::Arc {
            r,
            gamma,
            central,
            height,
        } => {
            if let Some((d, h)) = height {
                return cylinder_plan(setup, *r, *d, gamma, h, parker_q);
            }
            return arc_plan(setup, *r, gamma, central, parker_q, exact_fan);
        }
    };
    let (nu, nv) = (setup.nu, setup.nv);
    let mut cos = Vec::with_capacity(nu * nv);
    for &ui in u {
        for &vj in v {
            cos.push(d / (d * d + ui * ui + vj * vj).sqrt());
        }
    }
    if let Some(pitch) = setup.helix {
        // Helical FDK: every voxel's rows weighted to one full turn.
        let dv = if v.len() > 1 { v[1] - v[0] } else { 0.0 };
        let window = row_window(v, dv.abs(), r, d, pitch, alen)?;
        let before: Vec<f64> = cos
            .iter()
            .enumerate()
            .map(|(k, c)| c * window[k % nv])
            .collect();
        return Ok(FbpPlan {
            scale: r / (d * 4.0 * PI),
            terms: vec![Term {
                before: Weights {
                    uv: Some(before),
                    au: None,
                },
                after: Weights {
                    uv: Some(cos),
                    au: None,
                },
            }],
            fan_radius: None,
        });
    }
    let parker_w = match parker_q {
        Some(q) if !setup.full_turn() => {
            let gamma: Vec<f64> = u.iter().map(|&ui| ui.atan2(d)).collect();
            Some(parker(&setup.betas, &gamma, alen, q)?)
        }
        _ => None,
    };
    // Parker weights count every line once; without them a full turn counts it twice.
    let turns = if parker_w.is_some() { PI } else { alen };
    let scale = 1.0 / (2.0 * turns);
    if setup.ndim == 3 {
        // FDK: cosine weights on both sides, R/D.
        return Ok(FbpPlan {
            scale: scale * r / d,
            terms: vec![Term {
                before: Weights {
                    uv: Some(cos.clone()),
                    au: parker_w,
                },
                after: Weights {
                    uv: Some(cos),
                    au: None,
                },
            }],
            fan_radius: None,
        });
    }
    let before = Weights {
        uv: Some(cos.clone()),
        au: parker_w,
    };
    if !exact_fan {
        // One filter: the weight 1/U² of fan-beam FBP taken as 1/(U R); the pre-weight 1/cos γ
        // (instead of cos γ) makes the two measurements of each line add up right.
        let before = Weights {
            uv: Some(cos.iter().map(|c| 1.0 / c).collect()),
            au: before.au,
        };
        return Ok(FbpPlan {
            scale,
            terms: vec![Term {
                before,
                after: Weights {
                    uv: Some(cos),
                    au: None,
                },
            }],
            fan_radius: None,
        });
    }
    // Exact fan beam: 1/U² = (2R/U − sec²γ) / (R² − |x|²) and sec²γ = sec²γ (R + x·e_c)/U.
    let t0: Vec<f64> = cos.iter().map(|c| r * r * (2.0 * c - 1.0 / c)).collect();
    let mut terms = vec![Term {
        before: before.clone(),
        after: Weights {
            uv: Some(t0),
            au: None,
        },
    }];
    for k in 0..2 {
        let mut au = Vec::with_capacity(setup.nviews * nu);
        for e in central {
            au.extend(cos.iter().map(|c| r * e[k] / c));
        }
        terms.push(Term {
            before: before.clone(),
            after: Weights {
                uv: None,
                au: Some(au),
            },
        });
    }
    Ok(FbpPlan {
        scale,
        terms,
        fan_radius: Some(r),
    })
}

/// The plan of a fan beam with an arc detector about the source (equiangular): with `L` the
/// distance of `x` from the source, `U = R + x·e_c` its depth along the central ray and
/// `A*y(x) = ∫ y(β, γ(x)) / L dβ` the adjoint on data sampled in `γ`,
/// `f(x) = ∫ Q(β, γ(x)) / L² dβ = A*[Q cos γ / U]` for `Q = (R cos γ · y) ⊛ g`, `g` the
/// equiangular kernel `(γ / sin γ)² h(γ) / 2` (the row filter's `equiangular` taps and the
/// scale `1/(2α)`). `1/U = (R(2 − sec²γ) − (x·e_c) sec²γ) / (R² − |x|²)` splits into three
/// filters (as the flat detector's exact plan); the single-filter plan takes `1/U ≈ 1/R`.
fn arc_plan(
    setup: &Setup,
    r: f64,
    gamma: &[f64],
    central: &[[f64; 3]],
    parker_q: Option<f64>,
    exact_fan: bool,
) -> Result<FbpPlan> {
    let cos: Vec<f64> = gamma.iter().map(|g| g.cos()).collect();
    let parker_w = match parker_q {
        Some(q) if !setup.full_turn() => Some(parker(&setup.betas, gamma, setup.alen, q)?),
        _ => None,
    };
    let turns = if parker_w.is_some() { PI } else { setup.alen };
    let scale = 1.0 / (2.0 * turns);
    let before = Weights {
        uv: Some(cos.iter().map(|c| r * c).collect()),
        au: parker_w,
    };
    if !exact_fan {
        return Ok(FbpPlan {
            scale,
            terms: vec![Term {
                before,
                after: Weights {
                    uv: Some(cos.iter().map(|c| c / r).collect()),
                    au: None,
                },
            }],
            fan_radius: None,
        });
    }
    let mut terms = vec![Term {
        before: before.clone(),
        after: Weights {
            uv: Some(cos.iter().map(|c| r * (2.0 * c - 1.0 / c)).collect()),
            au: None,
        },
    }];
    for k in 0..2 {
        let mut au = Vec::with_capacity(setup.nviews * gamma.len());
        for e in central {
            au.extend(cos.iter().map(|c| e[k] / c));
        }
        terms.push(Term {
            before: before.clone(),
            after: Weights {
                uv: None,
                au: Some(au),
            },
        });
    }
    Ok(FbpPlan {
        scale,
        terms,
        fan_radius: Some(r),
    })
}

/// FDK for a cylindrical detector of radius `d` about the source (circular scan, source
/// radius `r`), rows at heights `h` above the source's plane, columns at fan angles `gamma`:
/// the rows are pre-weighted by `r cos γ · cos κ` (`cos κ = d / √(d² + h²)`, the cone angle),
/// filtered along `γ` with the equiangular kernel, and back-projected with `1/L_p²` (`L_p` the
/// distance from the source across the axis). The adjoint on data sampled in `(γ, h)` is
/// `A*y(x) = ∫ y √(d² + h²) / L_p² dβ`, so the post-weight `1/√(d² + h²)` makes `A* F` exactly
/// this algorithm, which is the equiangular fan-beam FBP in the source's plane.
fn cylinder_plan(
    setup: &Setup,
    r: f64,
    d: f64,
    gamma: &[f64],
    h: &[f64],
    parker_q: Option<f64>,
) -> Result<FbpPlan> {
    // Helical: every voxel's rows weighted to one full turn (no Parker weights).
    let window = match setup.helix {
        Some(pitch) => {
            let dh = if h.len() > 1 { h[1] - h[0] } else { 0.0 };
            Some(row_window(h, dh.abs(), r, d, pitch, setup.alen)?)
        }
        None => None,
    };
    let parker_w = match parker_q {
        Some(q) if !setup.full_turn() && window.is_none() => {
            Some(parker(&setup.betas, gamma, setup.alen, q)?)
        }
        _ => None,
    };
    let turns = if parker_w.is_some() {
        PI
    } else if window.is_some() {
        2.0 * PI
    } else {
        setup.alen
    };
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for g in gamma {
        for (j, hj) in h.iter().enumerate() {
            let len = (d * d + hj * hj).sqrt();
            let w = window.as_ref().map_or(1.0, |w| w[j]);
            before.push(r * g.cos() * d / len * w);
            after.push(1.0 / len);
        }
    }
    Ok(FbpPlan {
        scale: 1.0 / (2.0 * turns),
        terms: vec![Term {
            before: Weights {
                uv: Some(before),
                au: parker_w,
            },
            after: Weights {
                uv: Some(after),
                au: None,
            },
        }],
        fan_radius: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two measurements of every line add up to 1; a line measured once has weight 1.
    #[test]
    fn parker_weights_are_a_partition_of_unity() {
        let delta: f64 = 0.3;
        let gamma = [-delta, -0.2, 0.0, 0.1, delta];
        for (alen, q) in [
            (PI + 2.0 * delta, 1.0),
            (PI + 2.0 * delta + 0.4, 0.25),
            (6.0, 1.0),
        ] {
            let w = |b: f64, g: f64| parker(&[b], &[g, -delta, delta], alen, q).unwrap()[0];
            for k in 0..2000 {
                let b = (k as f64 + 0.5) * alen / 2000.0;
                for &g in &gamma {
                    let wk = w(b, g);
                    assert!((-1e-12..=1.0 + 1e-12).contains(&wk), "{b} {g}: {wk}");
                    let later = b + PI + 2.0 * g;
                    let earlier = b + 2.0 * g - PI;
                    let sum = if later <= alen {
                        wk + w(later, -g)
                    } else if earlier >= 0.0 {
                        wk + w(earlier, -g)
                    } else {
                        wk
                    };
                    assert!((sum - 1.0).abs() < 1e-9, "alen {alen}, β {b}, γ {g}: {sum}");
                }
            }
        }
    }
}
