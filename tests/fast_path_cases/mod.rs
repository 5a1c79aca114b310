//! Medium-size cases for the entry-by-entry comparison of the `f32` fast paths (AVX2 kernels on
//! the CPU, the CUDA kernels on a GPU) against the plain `f64` plane-major CPU kernels.
//!
//! The sizes cross the kernels' lane (8), row-pad (16), plane-block (4, 16), view-block (4, 32,
//! 64) and chunk boundaries: odd sizes around each of them, detectors narrower and wider than the
//! volume, 2–120 pixels, more views than every block. Each comparison is per entry, relative to
//! the largest entry of the reference (not normalised by the operator norm), so an error in a
//! single detector pixel or a single voxel row shows.
#![allow(dead_code)]

use std::f64::consts::PI;

use rand::{Rng, SeedableRng};
use rodl::tomo::{Backend, Geometry, RayTransform};
use rodl::{uniform_discr, LinearOperator, Operator, UniformPartition};

/// A geometry of one case, described plainly so that a failure message names it.
#[derive(Clone, Debug)]
pub enum Geo {
    /// 2D parallel beam: `views` angles over `[a0, a1]`, `det` pixels over `[-w/2, w/2] + off`.
    Par2 {
        a: (f64, f64),
        views: usize,
        det: usize,
        w: f64,
        off: f64,
    },
    /// 2D flat fan beam.
    Fan {
        a: (f64, f64),
        views: usize,
        det: usize,
        w: f64,
        src: f64,
        dst: f64,
        off: f64,
    },
    /// 3D parallel beam about `axis`, detector `(nu, nv)` pixels of extent `(wu, wv)`.
    Par3 {
        a: (f64, f64),
        views: usize,
        det: (usize, usize),
        w: (f64, f64),
        axis: [f64; 3],
        off: [f64; 2],
    },
    /// 3D flat cone beam (helical when `pitch != 0`).
    Cone {
        a: (f64, f64),
        views: usize,
        det: (usize, usize),
        w: (f64, f64),
        src: f64,
        dst: f64,
        pitch: f64,
        axis: [f64; 3],
        off: [f64; 2],
    },
}

fn part(lo: &[f64], hi: &[f64], n: &[usize]) -> UniformPartition {
    UniformPartition::new(lo, hi, n).unwrap()
}

impl Geo {
    /// The geometry.
    pub fn build(&self) -> Geometry {
        match *self {
            Geo::Par2 {
                a,
                views,
                det,
                w,
                off,
            } => Geometry::parallel_2d_offset(
                &part(&[a.0], &[a.1], &[views]),
                &part(&[-w / 2.0], &[w / 2.0], &[det]),
                off,
            ),
            Geo::Fan {
                a,
                views,
                det,
                w,
                src,
                dst,
                off,
            } => Geometry::fan_flat(
                &part(&[a.0], &[a.1], &[views]),
                &part(&[-w / 2.0], &[w / 2.0], &[det]),
                src,
                dst,
                off,
            ),
            Geo::Par3 {
                a,
                views,
                det,
                w,
                axis,
                off,
            } => Geometry::parallel_3d(
                &part(&[a.0], &[a.1], &[views]),
                &part(
                    &[-w.0 / 2.0, -w.1 / 2.0],
                    &[w.0 / 2.0, w.1 / 2.0],
                    &[det.0, det.1],
                ),
                axis,
                off,
            ),
            Geo::Cone {
                a,
                views,
                det,
                w,
                src,
                dst,
                pitch,
                axis,
                off,
            } => Geometry::cone_flat(
                &part(&[a.0], &[a.1], &[views]),
                &part(
                    &[-w.0 / 2.0, -w.1 / 2.0],
                    &[w.0 / 2.0, w.1 / 2.0],
                    &[det.0, det.1],
                ),
                src,
                dst,
                pitch,
                axis,
                off,
            ),
        }
        .unwrap()
    }
}

/// One case: a volume `[-1, 1]^d` scaled by `ext` per axis, its cell counts, and a geometry.
#[derive(Clone, Debug)]
pub struct Case {
    pub shape: Vec<usize>,
    pub ext: Vec<f64>,
    pub geo: Geo,
}

const Z: [f64; 3] = [0.0, 0.0, 1.0];

fn c2(nx: usize, ny: usize, geo: Geo) -> Case {
    Case {
        shape: vec![nx, ny],
        ext: vec![1.0, 1.0],
        geo,
    }
}

fn c3(shape: [usize; 3], geo: Geo) -> Case {
    Case {
        shape: shape.to_vec(),
        ext: vec![1.0, 1.0, 1.0],
        geo,
    }
}

/// The 2D cases: parallel beams (the binned and gathered kernels), fan beams (the windowed
/// scatter), all directions (both dominant axes), axis-aligned and diagonal views.
pub fn cases_2d() -> Vec<Case> {
    let par = |views, det, w, off| Geo::Par2 {
        a: (0.0, PI),
        views,
        det,
        w,
        off,
    };
    let fan = |views, det, w, off| Geo::Fan {
        a: (0.0, 2.0 * PI),
        views,
        det,
        w,
        src: 3.0,
        dst: 2.0,
        off,
    };
    vec![
        // Detector as wide as the volume's diagonal, sizes around 8/16-lane rows.
        c2(16, 16, par(5, 23, 2.9, 0.0)),
        c2(17, 15, par(33, 17, 2.9, 0.0)),
        c2(23, 31, par(65, 9, 2.9, 0.1)),
        c2(33, 47, par(130, 41, 3.0, 0.0)),
        c2(64, 63, par(67, 96, 2.9, 0.0)),
        c2(96, 95, par(129, 120, 2.9, -0.05)),
        // Detector narrower than the volume (every ray full length) and much wider.
        c2(48, 49, par(37, 31, 1.1, 0.0)),
        c2(81, 40, par(9, 2, 0.7, 0.2)),
        c2(40, 81, par(9, 3, 0.3, -0.2)),
        c2(25, 26, par(70, 120, 6.0, 0.0)),
        c2(57, 7, par(41, 64, 4.0, 0.3)),
        // Few pixels; pixel pitch unlike the cell size (rays much more than a cell apart).
        c2(32, 32, par(17, 2, 2.8, 0.0)),
        c2(71, 69, par(24, 7, 2.8, 0.0)),
        // Exactly axis-aligned and diagonal views (angle midpoints at k·π/4).
        Case {
            shape: vec![41, 39],
            ext: vec![1.0, 1.0],
            geo: Geo::Par2 {
                a: (-PI / 8.0, 15.0 * PI / 8.0),
                views: 8,
                det: 57,
                w: 2.9,
                off: 0.0,
            },
        },
        // Anisotropic cells.
        Case {
            shape: vec![50, 20],
            ext: vec![1.0, 0.6],
            geo: par(45, 70, 2.5, 0.0),
        },
        // Fan beams: the windowed scatter and lane-by-lane fallbacks.
        c2(16, 17, fan(7, 25, 5.0, 0.0)),
        c2(33, 31, fan(66, 47, 5.0, 0.1)),
        c2(64, 65, fan(129, 97, 5.5, 0.0)),
        c2(95, 48, fan(40, 120, 5.5, -0.2)),
        c2(47, 49, fan(35, 15, 1.5, 0.0)),
        c2(40, 40, fan(20, 2, 4.0, 0.0)),
    ]
}

/// The 3D cases: parallel beams about z (the column kernels), cone and helical beams (column and
/// group kernels), a tilted axis (groups that do not share their track), detectors narrower
/// and wider than the volume.
pub fn cases_3d() -> Vec<Case> {
    let par = |views, det, w, off| Geo::Par3 {
        a: (0.0, PI),
        views,
        det,
        w,
        axis: Z,
        off,
    };
    let cone = |views, det, w, pitch, off| Geo::Cone {
        a: (0.0, 2.0 * PI),
        views,
        det,
        w,
        src: 3.0,
        dst: 2.0,
        pitch,
        axis: Z,
        off,
    };
    vec![
        c3([16, 16, 16], par(5, (23, 17), (2.9, 2.5), [0.0, 0.0])),
        c3([17, 23, 9], par(9, (25, 33), (2.9, 2.5), [0.05, 0.0])),
        c3([33, 31, 18], par(13, (47, 19), (3.0, 2.2), [0.0, 0.1])),
        c3([24, 25, 40], par(6, (9, 70), (1.2, 2.4), [0.0, 0.0])),
        c3([20, 19, 21], par(7, (2, 5), (0.5, 0.5), [0.1, -0.1])),
        c3([32, 33, 17], cone(8, (48, 20), (5.0, 2.6), 0.0, [0.0, 0.0])),
        c3(
            [25, 23, 33],
            cone(11, (41, 49), (5.0, 5.0), 0.0, [0.1, -0.05]),
        ),
        c3(
            [17, 16, 47],
            cone(13, (33, 64), (5.0, 4.0), 0.8, [0.0, 0.0]),
        ),
        c3([40, 41, 16], cone(5, (17, 9), (1.5, 0.9), 0.0, [0.0, 0.0])),
        c3([18, 18, 18], cone(6, (96, 2), (7.0, 1.0), 0.0, [0.0, 0.1])),
        Case {
            shape: vec![24, 23, 25],
            ext: vec![1.0, 1.0, 1.0],
            geo: Geo::Par3 {
                a: (0.0, PI),
                views: 7,
                det: (37, 35),
                w: (3.2, 3.2),
                axis: [0.3, -0.2, 1.0],
                off: [0.05, 0.1],
            },
        },
        Case {
            shape: vec![21, 22, 20],
            ext: vec![1.0, 1.0, 1.0],
            geo: Geo::Cone {
                a: (0.0, 2.0 * PI),
                views: 6,
                det: (40, 36),
                w: (5.0, 5.0),
                src: 3.0,
                dst: 2.0,
                pitch: 0.0,
                axis: [1.0, 0.2, 0.1],
                off: [0.0, 0.0],
            },
        },
    ]
}

/// `n` seeded random cases of dimension `d`: 16–96 cells per axis in 2D (16–40 in 3D), 2–120
/// detector pixels (2–64 per axis in 3D), 1–140 views (1–24 in 3D), detector widths from a
/// third to twice the volume's diagonal, all four geometry kinds.
pub fn random_cases(d: usize, n: usize, seed: u64) -> Vec<Case> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let a0 = rng.gen_range(-PI..PI);
            let a = (a0, a0 + rng.gen_range(0.3..2.0 * PI));
            let off = rng.gen_range(-0.3..0.3);
            let w = rng.gen_range(0.5..6.0);
            if d == 2 {
                let shape = vec![rng.gen_range(16..=96), rng.gen_range(16..=96)];
                let (views, det) = (rng.gen_range(1..=140), rng.gen_range(2..=120));
                let geo = if rng.gen_bool(0.5) {
                    Geo::Par2 {
                        a,
                        views,
                        det,
                        w,
                        off,
                    }
                } else {
                    Geo::Fan {
                        a,
                        views,
                        det,
                        w: 1.7 * w,
                        src: 3.0,
                        dst: 2.0,
                        off,
                    }
                };
                Case {
                    shape,
                    ext: vec![1.0, 1.0],
                    geo,
                }
            } else {
                let shape = (0..3).map(|_| rng.gen_range(16..=40)).collect();
                let views = rng.gen_range(1..=24);
                let det = (rng.gen_range(2..=64), rng.gen_range(2..=64));
                let w = (w, rng.gen_range(0.5..5.0));
                let off = [off, rng.gen_range(-0.3..0.3)];
                let geo = if rng.gen_bool(0.4) {
                    Geo::Par3 {
                        a,
                        views,
                        det,
                        w,
                        axis: Z,
                        off,
                    }
                } else {
                    let pitch = if rng.gen_bool(0.5) {
                        0.0
                    } else {
                        rng.gen_range(-1.0..1.0)
                    };
                    Geo::Cone {
                        a,
                        views,
                        det,
                        w: (1.7 * w.0, 1.7 * w.1),
                        src: 3.0,
                        dst: 2.0,
                        pitch,
                        axis: Z,
                        off,
                    }
                };
                Case {
                    shape,
                    ext: vec![1.0, 1.0, 1.0],
                    geo,
                }
            }
        })
        .collect()
}

/// Per-entry comparison of one computation against its reference: the largest entry error
/// relative to the largest reference entry.
#[derive(Clone, Copy, Debug)]
pub struct Spread {
    pub worst: f64,
    pub at: usize,
    pub max_ref: f64,
}

/// `max_i |got_i − want_i| / max_i |want_i|` with the index of the worst entry.
pub fn spread(got: &[f64], want: &[f64]) -> Spread {
    assert_eq!(got.len(), want.len());
    let max_ref = want.iter().fold(0f64, |m, v| m.max(v.abs()));
    let mut worst = 0f64;
    let mut at = 0;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let e = (g - w).abs();
        // NaN counts as the worst error.
        if e > worst || e.is_nan() {
            worst = e;
            at = i;
        }
    }
    Spread {
        worst: if max_ref > 0.0 {
            worst / max_ref
        } else {
            worst
        },
        at,
        max_ref,
    }
}

/// Results of one case: the forward and the transpose under test and their `f64` references.
pub struct Outcome {
    pub fwd: Spread,
    pub adj: Spread,
    pub data_shape: Vec<usize>,
    pub shape: Vec<usize>,
}

/// Runs `case` with the `f32` backend `fast` and the `f64` CPU reference on the same seeded
/// random inputs (entries in `[0.5, 1.5]`, so that no ray or voxel has a zero reference).
pub fn run(case: &Case, fast: Backend, seed: u64) -> Outcome {
    let d = case.shape.len();
    let lo: Vec<f64> = case.ext.iter().map(|e| -e).collect();
    let s32 = uniform_discr::<f32>(&lo, &case.ext, &case.shape).unwrap();
    let s64 = uniform_discr::<f64>(&lo, &case.ext, &case.shape).unwrap();
    assert_eq!(s32.shape().unwrap().len(), d);
    let g = case.geo.build();
    let a32 = RayTransform::new(s32.clone(), g.clone(), fast).unwrap();
    let a64 = RayTransform::new(s64.clone(), g.clone(), Backend::cpu_threads(2)).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let nx = s32.size();
    let ny = a32.range().size();
    let x: Vec<f32> = (0..nx).map(|_| rng.gen_range(0.5f32..1.5)).collect();
    let y: Vec<f32> = (0..ny).map(|_| rng.gen_range(0.5f32..1.5)).collect();
    let up = |v: &[f32]| v.iter().map(|&a| a as f64).collect::<Vec<f64>>();
    let fx32 = a32
        .apply(&s32.element_from_vec(x.clone()).unwrap())
        .unwrap();
    let fx64 = a64.apply(&s64.element_from_vec(up(&x)).unwrap()).unwrap();
    let r32 = a32.range().clone();
    let r64 = a64.range().clone();
    let ty32 = a32
        .adjoint()
        .unwrap()
        .apply(&r32.element_from_vec(y.clone()).unwrap())
        .unwrap();
    let ty64 = a64
        .adjoint()
        .unwrap()
        .apply(&r64.element_from_vec(up(&y)).unwrap())
        .unwrap();
    let host = |e: rodl::Element<f32>| {
        let e = e.to_host().unwrap();
        up(e.as_slice().unwrap())
    };
    let fwd = spread(&host(fx32), fx64.as_slice().unwrap());
    let adj = spread(&host(ty32), ty64.as_slice().unwrap());
    Outcome {
        fwd,
        adj,
        data_shape: g.data_shape(),
        shape: case.shape.clone(),
    }
}

/// Row-major multi-index of flat index `i` in `shape`.
pub fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for k in (0..shape.len()).rev() {
        idx[k] = i % shape[k];
        i /= shape[k];
    }
    idx
}

/// Runs every case with `backend` (inputs seeded `seed_base + k`), prints each case's worst
/// entries and the overall worst, and fails listing every case whose forward or transpose is
/// off by more than `tol` (or NaN).
pub fn check(cases: &[Case], backend: Backend, seed_base: u64, tol: f64, what: &str) {
    let mut fails = Vec::new();
    let (mut wf, mut wa) = (0f64, 0f64);
    for (k, c) in cases.iter().enumerate() {
        let o = run(c, backend.clone(), seed_base + k as u64);
        wf = wf.max(o.fwd.worst);
        wa = wa.max(o.adj.worst);
        eprintln!(
            "{what} case {k:2} vol {:?} data {:?}: forward {:.2e}, transpose {:.2e}",
            o.shape, o.data_shape, o.fwd.worst, o.adj.worst
        );
        if o.fwd.worst.is_nan() || o.fwd.worst > tol {
            fails.push(format!(
                "case {k} {c:?}: forward entry {:?} off by {:.3e} of max {:.3e}",
                unravel(o.fwd.at, &o.data_shape),
                o.fwd.worst,
                o.fwd.max_ref
            ));
        }
        if o.adj.worst.is_nan() || o.adj.worst > tol {
            fails.push(format!(
                "case {k} {c:?}: transpose voxel {:?} off by {:.3e} of max {:.3e}",
                unravel(o.adj.at, &o.shape),
                o.adj.worst,
                o.adj.max_ref
            ));
        }
    }
    eprintln!("{what}: worst forward {wf:.2e}, worst transpose {wa:.2e}");
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}
