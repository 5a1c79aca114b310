//! Adjointness of the ray transform over random geometries of every kind: parallel 2D, fan,
//! parallel 3D about a random axis, circular and helical cone, vector geometries with random
//! per-view vectors (parallel and point beams, 2D and 3D), and curved detectors: fan beams with
//! an arc, circular and helical cone beams with a cylindrical detector and cone beams with a
//! spherical one (random curvature radii, sometimes centred on the source; random flying focal
//! spots).
//!
//! Volumes are random anisotropic, off-centre boxes; angle ranges and counts, detector extents,
//! pixel counts and offsets are random, so that detectors often see only part of the volume and
//! volumes are often only partly hit. Sources stay outside the volume's bounding ball.
//!
//! The bar (issue): `|⟨Ax, y⟩ − ⟨x, A*y⟩| / (‖A‖ ‖x‖ ‖y‖) ≤ 1e-12` in f64 and `≤ 1e-5` in f32.
//! A deliberately wrong back-projection (scaled, shifted, voxel-driven) must be flagged.

use std::f64::consts::PI;
use std::sync::Arc;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{FileFailurePersistence, TestRunner};
use rodl::tomo::{Backend, Beam, Geometry, RayTransform, VecGeometry, View};
use rodl::{
    check_adjoint, uniform_discr, Element, Error, Gradient, LinOp, LinearOperator,
    LinearOperatorExt, Operator, Result, Scalar, ScalingOperator, Space, UniformPartition,
};

/// The adjointness bar: 1e-12 relative in f64, 1e-5 in f32.
fn tol<T: Scalar>() -> f64 {
    if T::EPS < 1e-10 {
        1e-12
    } else {
        1e-5
    }
}

// ---------------------------------------------------------------------------------------------
// Random cases
// ---------------------------------------------------------------------------------------------

/// A volume box: `uniform_discr(min, max, shape)`.
#[derive(Clone, Debug)]
struct Vol {
    min: Vec<f64>,
    max: Vec<f64>,
    shape: Vec<usize>,
}

impl Vol {
    /// Radius of the ball about the origin that holds the whole box.
    fn radius(&self) -> f64 {
        self.min
            .iter()
            .zip(&self.max)
            .map(|(a, b)| a.abs().max(b.abs()).powi(2))
            .sum::<f64>()
            .sqrt()
    }
}

/// A 1D uniform partition `[min, max]` with `n` cells.
#[derive(Clone, Copy, Debug)]
struct Part1 {
    min: f64,
    max: f64,
    n: usize,
}

impl Part1 {
    fn part(&self) -> UniformPartition {
        UniformPartition::new(&[self.min], &[self.max], &[self.n]).unwrap()
    }
}

fn part2(u: Part1, v: Part1) -> UniformPartition {
    UniformPartition::new(&[u.min, v.min], &[u.max, v.max], &[u.n, v.n]).unwrap()
}

/// A geometry description, kept plain so that proptest can shrink and print it.
#[derive(Clone, Debug)]
enum Geo {
    Parallel2d {
        angles: Part1,
        det: Part1,
        offset: f64,
    },
    Fan {
        angles: Part1,
        det: Part1,
        src_radius: f64,
        det_radius: f64,
        offset: f64,
    },
    Parallel3d {
        angles: Part1,
        det: (Part1, Part1),
        axis: [f64; 3],
        offset: [f64; 2],
    },
    Cone {
        angles: Part1,
        det: (Part1, Part1),
        src_radius: f64,
        det_radius: f64,
        pitch: f64,
        axis: [f64; 3],
        offset: [f64; 2],
    },
    Vec {
        ndim: usize,
        beam: Beam,
        det_shape: Vec<usize>,
        views: Vec<View>,
    },
    /// A fan beam with an arc detector (`det` in radians on the arc).
    FanArc {
        angles: Part1,
        det: Part1,
        src_radius: f64,
        det_radius: f64,
        curvature: f64,
        offset: f64,
        src_offsets: Vec<[f64; 3]>,
    },
    /// A cone beam with a cylindrical (`[Some(r), None]`) or spherical (`[Some(r), Some(r)]`)
    /// detector.
    ConeCurved {
        angles: Part1,
        det: (Part1, Part1),
        src_radius: f64,
        det_radius: f64,
        curvature: [Option<f64>; 2],
        pitch: f64,
        axis: [f64; 3],
        offset: [f64; 2],
        src_offsets: Vec<[f64; 3]>,
    },
}

impl Geo {
    fn build(&self) -> Result<Geometry> {
        match self {
            Geo::Parallel2d {
                angles,
                det,
                offset,
            } => Geometry::parallel_2d_offset(&angles.part(), &det.part(), *offset),
            Geo::Fan {
                angles,
                det,
                src_radius,
                det_radius,
                offset,
            } => Geometry::fan_flat(
                &angles.part(),
                &det.part(),
                *src_radius,
                *det_radius,
                *offset,
            ),
            Geo::Parallel3d {
                angles,
                det,
                axis,
                offset,
            } => Geometry::parallel_3d(&angles.part(), &part2(det.0, det.1), *axis, *offset),
            Geo::Cone {
                angles,
                det,
                src_radius,
                det_radius,
                pitch,
                axis,
                offset,
            } => Geometry::cone_flat(
                &angles.part(),
                &part2(det.0, det.1),
                *src_radius,
                *det_radius,
                *pitch,
                *axis,
                *offset,
            ),
            Geo::Vec {
                ndim,
                beam,
                det_shape,
                views,
            } => Geometry::from_vec(VecGeometry::new(*ndim, *beam, det_shape, views.clone())?),
            Geo::FanArc {
                angles,
                det,
                src_radius,
                det_radius,
                curvature,
                offset,
                src_offsets,
            } => Geometry::fan_curved(
                &angles.part(),
                &det.part(),
                *src_radius,
                *det_radius,
                *curvature,
                *offset,
            )?
            .with_src_offsets(src_offsets),
            Geo::ConeCurved {
                angles,
                det,
                src_radius,
                det_radius,
                curvature,
                pitch,
                axis,
                offset,
                src_offsets,
            } => Geometry::cone_curved(
                &angles.part(),
                &part2(det.0, det.1),
                *src_radius,
                *det_radius,
                *curvature,
                *pitch,
                *axis,
                *offset,
            )?
            .with_src_offsets(src_offsets),
        }
    }
}

/// One random test case: a volume, a geometry and the CPU backend's thread count.
#[derive(Clone, Debug)]
struct Case {
    vol: Vol,
    geo: Geo,
    threads: usize,
}

impl Case {
    fn space<T: Scalar>(&self) -> Space<T> {
        uniform_discr::<T>(&self.vol.min, &self.vol.max, &self.vol.shape).unwrap()
    }

    fn ray<T: Scalar>(&self) -> RayTransform<T> {
        self.ray_with::<T>(self.threads)
    }

    fn ray_with<T: Scalar>(&self, threads: usize) -> RayTransform<T> {
        let geometry = self.geo.build().expect("valid random geometry");
        RayTransform::new(self.space::<T>(), geometry, Backend::cpu_threads(threads))
            .expect("valid random ray transform")
    }
}

/// Largest sizes of the random cases: volume cells per axis, detector pixels per axis, angles.
#[derive(Clone, Copy, Debug)]
struct Sz {
    vol2: usize,
    vol3: usize,
    det2: usize,
    det3: usize,
    angles2: usize,
    angles3: usize,
}

/// The sizes of the main properties (2D up to 24², 3D up to 12³).
const FULL: Sz = Sz {
    vol2: 24,
    vol3: 12,
    det2: 24,
    det3: 12,
    angles2: 12,
    angles3: 8,
};

/// Sizes small enough to build the full matrices of `A` and `A*`.
const SMALL: Sz = Sz {
    vol2: 8,
    vol3: 5,
    det2: 10,
    det3: 6,
    angles2: 6,
    angles3: 4,
};

/// An anisotropic, off-centre box with `ndim` axes of 1..=`max_n` cells.
fn vol(ndim: usize, max_n: usize) -> impl Strategy<Value = Vol> {
    (
        vec(1usize..=max_n, ndim),
        vec(-2.0f64..1.5, ndim),
        vec(0.2f64..3.0, ndim),
    )
        .prop_map(|(shape, min, ext)| {
            let max = min.iter().zip(&ext).map(|(a, e)| a + e).collect();
            Vol { min, max, shape }
        })
}

/// Random angle partitions, sometimes with midpoints at multiples of π/2 (axis-aligned rays).
fn angles(max_n: usize) -> impl Strategy<Value = Part1> {
    prop_oneof![
        6 => (-2.0 * PI..2.0 * PI, 0.05..4.0 * PI, 1..=max_n)
            .prop_map(|(min, ext, n)| Part1 { min, max: min + ext, n }),
        1 => (0usize..4).prop_map(|k| {
            // One angle at exactly k·π/2.
            let c = k as f64 * PI / 2.0;
            Part1 { min: c - 0.1, max: c + 0.1, n: 1 }
        }),
        1 => Just(Part1 { min: -PI / 4.0, max: 7.0 * PI / 4.0, n: 4 }),
        1 => Just(Part1 { min: 0.0, max: PI, n: 2 }), // π/4 and 3π/4: diagonal rays
    ]
}

/// A detector axis: centre in [−1, 1], width in [0.2, 6], 1..=`max_n` pixels.
fn det_axis(max_n: usize) -> impl Strategy<Value = Part1> {
    (-1.0f64..1.0, 0.2f64..6.0, 1..=max_n).prop_map(|(c, w, n)| Part1 {
        min: c - w / 2.0,
        max: c + w / 2.0,
        n,
    })
}

fn unit3() -> impl Strategy<Value = [f64; 3]> {
    prop_oneof![
        4 => [-1.0f64..1.0, -1.0f64..1.0, -1.0f64..1.0]
            .prop_filter("non-degenerate", |a| a.iter().map(|x| x * x).sum::<f64>() > 0.04)
            .prop_map(|a| {
                let n = a.iter().map(|x| x * x).sum::<f64>().sqrt();
                a.map(|x| x / n)
            }),
        1 => prop_oneof![
            Just([1.0, 0.0, 0.0]),
            Just([0.0, 1.0, 0.0]),
            Just([0.0, 0.0, 1.0]),
            Just([0.0, 0.0, -1.0]),
            Just([-1.0, 0.0, 0.0]),
        ],
    ]
}

fn axis() -> impl Strategy<Value = [f64; 3]> {
    prop_oneof![1 => Just([0.0, 0.0, 1.0]), 3 => unit3()]
}

/// Source radius: outside the volume's bounding ball, up to three times its radius.
fn src_radius(v: &Vol) -> impl Strategy<Value = f64> {
    let r = v.radius();
    (1.05f64..3.0).prop_map(move |f| f * r + 0.05)
}

fn threads() -> impl Strategy<Value = usize> {
    1usize..=3
}

fn parallel2d(sz: Sz) -> BoxedStrategy<Case> {
    (
        vol(2, sz.vol2),
        angles(sz.angles2),
        det_axis(sz.det2),
        -1.0f64..1.0,
        threads(),
    )
        .prop_map(|(vol, angles, det, offset, threads)| Case {
            vol,
            geo: Geo::Parallel2d {
                angles,
                det,
                offset,
            },
            threads,
        })
        .boxed()
}

fn fanflat(sz: Sz) -> BoxedStrategy<Case> {
    vol(2, sz.vol2)
        .prop_flat_map(move |vol| {
            let rs = src_radius(&vol);
            (
                Just(vol),
                angles(sz.angles2),
                det_axis(sz.det2),
                rs,
                0.0f64..3.0,
                -1.0f64..1.0,
                threads(),
            )
        })
        .prop_map(
            |(vol, angles, det, src_radius, det_radius, offset, threads)| Case {
                vol,
                geo: Geo::Fan {
                    angles,
                    det,
                    src_radius,
                    det_radius,
                    offset,
                },
                threads,
            },
        )
        .boxed()
}

fn parallel3d(sz: Sz) -> BoxedStrategy<Case> {
    (
        vol(3, sz.vol3),
        angles(sz.angles3),
        (det_axis(sz.det3), det_axis(sz.det3)),
        axis(),
        [-1.0f64..1.0, -1.0f64..1.0],
        threads(),
    )
        .prop_map(|(vol, angles, det, axis, offset, threads)| Case {
            vol,
            geo: Geo::Parallel3d {
                angles,
                det,
                axis,
                offset,
            },
            threads,
        })
        .boxed()
}

fn cone(sz: Sz, helical: bool) -> BoxedStrategy<Case> {
    vol(3, sz.vol3)
        .prop_flat_map(move |vol| {
            let rs = src_radius(&vol);
            let pitch = if helical {
                prop_oneof![-3.0f64..-0.05, 0.05f64..3.0].boxed()
            } else {
                Just(0.0).boxed()
            };
            (
                Just(vol),
                angles(sz.angles3),
                (det_axis(sz.det3), det_axis(sz.det3)),
                rs,
                0.0f64..3.0,
                pitch,
                axis(),
                [-1.0f64..1.0, -1.0f64..1.0],
                threads(),
            )
        })
        .prop_map(
            |(vol, angles, det, src_radius, det_radius, pitch, axis, offset, threads)| Case {
                vol,
                geo: Geo::Cone {
                    angles,
                    det,
                    src_radius,
                    det_radius,
                    pitch,
                    axis,
                    offset,
                },
                threads,
            },
        )
        .boxed()
}

/// A random detector-axis vector (pixel spacing) of length 0.02..0.4.
fn det_vec(ndim: usize) -> impl Strategy<Value = [f64; 3]> {
    (unit3(), 0.02f64..0.4, 0.0..2.0 * PI).prop_map(move |(d, len, phi)| {
        if ndim == 2 {
            [len * phi.cos(), len * phi.sin(), 0.0]
        } else {
            d.map(|x| x * len)
        }
    })
}

/// A random ray direction (any length; axis-aligned now and then).
fn direction(ndim: usize) -> impl Strategy<Value = [f64; 3]> {
    (unit3(), 0.3f64..3.0, 0.0..2.0 * PI, 0usize..8).prop_map(move |(d, len, phi, k)| {
        if ndim == 2 {
            if k < 2 {
                // Exactly axis-aligned in 2D.
                [[len, 0.0, 0.0], [0.0, -len, 0.0]][k]
            } else {
                [len * phi.cos(), len * phi.sin(), 0.0]
            }
        } else {
            d.map(|x| x * len)
        }
    })
}

fn point(ndim: usize, r: f64) -> impl Strategy<Value = [f64; 3]> {
    [-r..r, -r..r, -r..r].prop_map(move |mut p| {
        if ndim == 2 {
            p[2] = 0.0;
        }
        p
    })
}

fn vec_geometry(sz: Sz, ndim: usize, beam: Beam) -> BoxedStrategy<Case> {
    let (max_n, max_det, max_views) = if ndim == 2 {
        (sz.vol2, sz.det2, sz.angles2)
    } else {
        (sz.vol3, sz.det3, sz.angles3)
    };
    vol(ndim, max_n)
        .prop_flat_map(move |vol| {
            let r = vol.radius();
            let view = (
                direction(ndim),
                1.05f64..3.0,
                point(ndim, 1.5),
                det_vec(ndim),
                det_vec(ndim),
            )
                .prop_map(move |(dir, f, c, du, dv)| {
                    let dv = if ndim == 2 { [0.0; 3] } else { dv };
                    let src = match beam {
                        Beam::Parallel => dir,
                        Beam::Point => {
                            // Outside the volume's bounding ball.
                            let n = dir.iter().map(|x| x * x).sum::<f64>().sqrt();
                            dir.map(|x| -x / n * (f * r + 0.05))
                        }
                    };
                    View {
                        src,
                        det_center: c,
                        det_u: du,
                        det_v: dv,
                    }
                });
            (
                Just(vol),
                vec(1usize..=max_det, ndim - 1),
                vec(view, 1..=max_views),
                threads(),
            )
        })
        .prop_map(move |(vol, det_shape, views, threads)| Case {
            vol,
            geo: Geo::Vec {
                ndim,
                beam,
                det_shape,
                views,
            },
            threads,
        })
        .boxed()
}

/// A curved detector's angle axis (radians on the arc): centre in [−0.3, 0.3], width in
/// [0.1, 1.4], 1..=`max_n` pixels.
fn arc_axis(max_n: usize) -> impl Strategy<Value = Part1> {
    (-0.3f64..0.3, 0.1f64..1.4, 1..=max_n).prop_map(|(c, w, n)| Part1 {
        min: c - w / 2.0,
        max: c + w / 2.0,
        n,
    })
}

/// A sphere's latitudes: centred on its equator or at up to ±0.4, width in [0.1, 1.2].
fn latitude_axis(max_n: usize) -> impl Strategy<Value = Part1> {
    (prop_oneof![Just(0.0), -0.4f64..0.4], 0.1f64..1.2, 1..=max_n).prop_map(|(c, w, n)| Part1 {
        min: c - w / 2.0,
        max: c + w / 2.0,
        n,
    })
}

/// A curvature radius for source–detector distance `d`: `d` itself (the arc about the source,
/// as in clinical scanners) or 0.5..4 times it.
fn curvature(d: f64) -> impl Strategy<Value = f64> {
    prop_oneof![1 => Just(d), 2 => (0.5f64..4.0).prop_map(move |f| f * d)]
}

/// No flying focal spot, or one to three offsets of up to 0.1 (the axial one in 3D only).
fn src_offsets(ndim: usize) -> impl Strategy<Value = Vec<[f64; 3]>> {
    prop_oneof![
        1 => Just(Vec::new()),
        1 => vec([-0.1f64..0.1, -0.1f64..0.1, -0.1f64..0.1], 1..=3).prop_map(move |mut v| {
            if ndim == 2 {
                v.iter_mut().for_each(|o| o[2] = 0.0);
            }
            v
        }),
    ]
}

fn fan_arc(sz: Sz) -> BoxedStrategy<Case> {
    vol(2, sz.vol2)
        .prop_flat_map(move |vol| (Just(vol.clone()), src_radius(&vol), 0.0f64..3.0))
        .prop_flat_map(move |(vol, rs, rd)| {
            (
                Just((vol, rs, rd)),
                angles(sz.angles2),
                arc_axis(sz.det2),
                curvature(rs + rd),
                -0.5f64..0.5,
                src_offsets(2),
                threads(),
            )
        })
        .prop_map(
            |(
                (vol, src_radius, det_radius),
                angles,
                det,
                curvature,
                offset,
                src_offsets,
                threads,
            )| {
                Case {
                    vol,
                    geo: Geo::FanArc {
                        angles,
                        det,
                        src_radius,
                        det_radius,
                        curvature,
                        offset,
                        src_offsets,
                    },
                    threads,
                }
            },
        )
        .boxed()
}

/// Cone beams with a cylindrical (`spherical = false`; circular or helical) or spherical
/// detector.
fn cone_curved(sz: Sz, helical: bool, spherical: bool) -> BoxedStrategy<Case> {
    vol(3, sz.vol3)
        .prop_flat_map(move |vol| (Just(vol.clone()), src_radius(&vol), 0.0f64..3.0))
        .prop_flat_map(move |(vol, rs, rd)| {
            let pitch = if helical {
                prop_oneof![-3.0f64..-0.05, 0.05f64..3.0].boxed()
            } else {
                Just(0.0).boxed()
            };
            let v_axis = if spherical {
                latitude_axis(sz.det3).boxed()
            } else {
                det_axis(sz.det3).boxed()
            };
            (
                Just((vol, rs, rd)),
                angles(sz.angles3),
                (arc_axis(sz.det3), v_axis),
                curvature(rs + rd),
                pitch,
                axis(),
                [-0.5f64..0.5, -0.5f64..0.5],
                src_offsets(3),
                threads(),
            )
        })
        .prop_map(
            move |(
                (vol, src_radius, det_radius),
                angles,
                det,
                r,
                pitch,
                axis,
                offset,
                src_offsets,
                threads,
            )| Case {
                vol,
                geo: Geo::ConeCurved {
                    angles,
                    det,
                    src_radius,
                    det_radius,
                    curvature: [Some(r), spherical.then_some(r)],
                    pitch,
                    axis,
                    offset,
                    src_offsets,
                },
                threads,
            },
        )
        .boxed()
}

/// The curved-detector kinds, with their names.
fn curved_kinds(sz: Sz) -> Vec<(&'static str, BoxedStrategy<Case>)> {
    vec![
        ("fan arc", fan_arc(sz)),
        ("cone cylindrical", cone_curved(sz, false, false)),
        ("helical cylindrical", cone_curved(sz, true, false)),
        ("cone spherical", cone_curved(sz, false, true)),
        ("helical spherical", cone_curved(sz, true, true)),
    ]
}

/// Every kind, with its name.
fn kinds(sz: Sz) -> Vec<(&'static str, BoxedStrategy<Case>)> {
    vec![
        ("parallel2d", parallel2d(sz)),
        ("fanflat", fanflat(sz)),
        ("parallel3d", parallel3d(sz)),
        ("cone circular", cone(sz, false)),
        ("cone helical", cone(sz, true)),
        ("vec 2D parallel", vec_geometry(sz, 2, Beam::Parallel)),
        ("vec 2D point", vec_geometry(sz, 2, Beam::Point)),
        ("vec 3D parallel", vec_geometry(sz, 3, Beam::Parallel)),
        ("vec 3D point", vec_geometry(sz, 3, Beam::Point)),
    ]
    .into_iter()
    .chain(curved_kinds(sz))
    .collect()
}

fn any_case(sz: Sz) -> BoxedStrategy<Case> {
    let all: Vec<_> = kinds(sz).into_iter().map(|(_, s)| s).collect();
    proptest::strategy::Union::new(all).boxed()
}

/// `n` cases drawn deterministically from `strategy`.
fn samples(strategy: &BoxedStrategy<Case>, n: usize) -> Vec<Case> {
    let mut runner = TestRunner::deterministic();
    (0..n)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The properties
// ---------------------------------------------------------------------------------------------

/// The adjoint error (`check_adjoint`) and the norm estimate of the case's ray transform.
fn adjoint_error<T: Scalar>(case: &Case, seed: u64) -> (f64, f64) {
    let ray = case.ray::<T>();
    let r = check_adjoint(&ray, 2, seed).unwrap();
    (r.max_rel_error, r.opnorm)
}

fn check_case(case: &Case, seed: u64) -> std::result::Result<(), TestCaseError> {
    let (e64, n64) = adjoint_error::<f64>(case, seed);
    prop_assert!(
        e64 <= tol::<f64>(),
        "f64 adjoint error {e64:.3e} (‖A‖ ≈ {n64:.3e})"
    );
    let (e32, n32) = adjoint_error::<f32>(case, seed);
    prop_assert!(
        e32 <= tol::<f32>(),
        "f32 adjoint error {e32:.3e} (‖A‖ ≈ {n32:.3e})"
    );
    Ok(())
}

/// `cases` cases; failures are saved next to this file (`tomo_adjoint.proptest-regressions`).
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn parallel2d_adjoint(case in parallel2d(FULL), seed in any::<u64>()) {
        check_case(&case, seed)?;
    }

    #[test]
    fn fanflat_adjoint(case in fanflat(FULL), seed in any::<u64>()) {
        check_case(&case, seed)?;
    }

    #[test]
    fn parallel3d_adjoint(case in parallel3d(FULL), seed in any::<u64>()) {
        check_case(&case, seed)?;
    }

    #[test]
    fn cone_circular_adjoint(case in cone(FULL, false), seed in any::<u64>()) {
        check_case(&case, seed)?;
    }

    #[test]
    fn cone_helical_adjoint(case in cone(FULL, true), seed in any::<u64>()) {
        check_case(&case, seed)?;
    }

    #[test]
    fn vec2d_adjoint(
        case in prop_oneof![vec_geometry(FULL, 2, Beam::Parallel), vec_geometry(FULL, 2, Beam::Point)],
        seed in any::<u64>(),
    ) {
        check_case(&case, seed)?;
    }

    #[test]
    fn vec3d_adjoint(
        case in prop_oneof![vec_geometry(FULL, 3, Beam::Parallel), vec_geometry(FULL, 3, Beam::Point)],
        seed in any::<u64>(),
    ) {
        check_case(&case, seed)?;
    }
}

/// `|⟨Ax, y⟩ − ⟨x, A*y⟩| / (‖Ax‖ ‖y‖)` for random normal `x` and `y` (the larger of
/// `‖Ax‖ ‖y‖` and `‖x‖ ‖A*y‖` in the denominator; 0 when both products vanish and so does the
/// difference, infinity when only they do).
fn pair_error<T: Scalar>(case: &Case, seed: u64) -> f64 {
    let ray = case.ray::<T>();
    let mut rng = rand_rng(seed);
    let x = ray.domain().random_normal(&mut rng).unwrap();
    let y = ray.range().random_normal(&mut rng).unwrap();
    let ax = ray.apply(&x).unwrap();
    let aty = ray.adjoint().unwrap().apply(&y).unwrap();
    let (dom, ran) = (ray.domain(), ray.range());
    let diff = (ran.inner(&ax, &y).unwrap() - dom.inner(&x, &aty).unwrap()).abs();
    let scale = (ran.norm(&ax).unwrap() * ran.norm(&y).unwrap())
        .max(dom.norm(&x).unwrap() * dom.norm(&aty).unwrap());
    if diff == 0.0 {
        0.0
    } else if scale == 0.0 {
        f64::INFINITY
    } else {
        diff / scale
    }
}

proptest! {
    #![proptest_config(config(32))]

    /// Curved detectors (issue #35): the CPU transform's adjoint to rounding,
    /// `|⟨Ax, y⟩ − ⟨x, A*y⟩| / (‖Ax‖ ‖y‖) ≤ 1e-12` in f64 (and 1e-5 in f32), for fan arcs.
    #[test]
    fn fan_arc_adjoint(case in fan_arc(FULL), seed in any::<u64>()) {
        let e = pair_error::<f64>(&case, seed);
        prop_assert!(e <= 1e-12, "f64 error {e:.3e}");
        check_case(&case, seed)?;
    }

    /// The same for cylindrical cone-beam detectors, circular and helical.
    #[test]
    fn cone_cylindrical_adjoint(
        case in prop_oneof![cone_curved(FULL, false, false), cone_curved(FULL, true, false)],
        seed in any::<u64>(),
    ) {
        let e = pair_error::<f64>(&case, seed);
        prop_assert!(e <= 1e-12, "f64 error {e:.3e}");
        check_case(&case, seed)?;
    }

    /// The same for spherical cone-beam detectors, circular and helical.
    #[test]
    fn cone_spherical_adjoint(
        case in prop_oneof![cone_curved(FULL, false, true), cone_curved(FULL, true, true)],
        seed in any::<u64>(),
    ) {
        let e = pair_error::<f64>(&case, seed);
        prop_assert!(e <= 1e-12, "f64 error {e:.3e}");
        check_case(&case, seed)?;
    }
}

/// Prints the largest `|⟨Ax, y⟩ − ⟨x, A*y⟩| / (‖Ax‖ ‖y‖)` of each curved kind over a fixed
/// sample (f64 and f32) and asserts the bars.
#[test]
fn curved_adjoint_summary() {
    const N: usize = 32;
    for (name, strategy) in curved_kinds(FULL) {
        let (mut m64, mut m32) = (0.0f64, 0.0f64);
        let mut hit = 0;
        for (k, case) in samples(&strategy, N).iter().enumerate() {
            let e64 = pair_error::<f64>(case, k as u64);
            let e32 = pair_error::<f32>(case, k as u64);
            assert!(e64 <= 1e-12, "{name}: f64 error {e64:.3e} for {case:?}");
            assert!(e32 <= 1e-5, "{name}: f32 error {e32:.3e} for {case:?}");
            m64 = m64.max(e64);
            m32 = m32.max(e32);
            hit += usize::from(coverage(case).is_some());
        }
        assert!(
            hit > N / 2,
            "{name}: only {hit} of {N} cases hit the volume"
        );
        eprintln!(
            "{name:<20} {N} cases: max f64 {m64:.3e}, max f32 {m32:.3e}; volume hit in {hit}"
        );
    }
}

proptest! {
    #![proptest_config(config(24))]

    /// `(A*)* = A` bit for bit, and `A*` passes the adjoint check itself.
    #[test]
    fn adjoint_of_adjoint_is_forward(case in any_case(FULL), seed in any::<u64>()) {
        let ray = case.ray::<f64>();
        let space = ray.domain().clone();
        let x = space.random_normal(&mut rand_rng(seed)).unwrap();
        let aa = ray.adjoint().unwrap().adjoint().unwrap();
        prop_assert!(aa.domain() == ray.domain() && aa.range() == ray.range());
        let y1 = ray.apply(&x).unwrap();
        let y2 = aa.apply(&x).unwrap();
        prop_assert_eq!(y1.as_slice().unwrap(), y2.as_slice().unwrap());
        let r = check_adjoint(ray.adjoint().unwrap().as_ref(), 2, seed).unwrap();
        prop_assert!(r.max_rel_error <= tol::<f64>(), "A* adjoint error {:.3e}", r.max_rel_error);
    }

    /// The ray transform inside operator algebra: `grad ∘ A*`, `A ∘ (c I)`, `A* ∘ A`,
    /// `A ∘ grad*` and `2 A − A` pass the adjoint check.
    #[test]
    fn operator_algebra_with_ray_transform(case in any_case(FULL), c in 0.1f64..3.0, seed in any::<u64>()) {
        let ray: LinOp<f64> = Arc::new(case.ray::<f64>());
        let space = ray.domain().clone();
        let grad: LinOp<f64> = Arc::new(Gradient::new(space.clone()).unwrap());
        let scaling: LinOp<f64> = Arc::new(ScalingOperator::new(space, c));
        let adj = ray.adjoint().unwrap();
        let ops: Vec<(&str, LinOp<f64>)> = vec![
            ("grad ∘ A*", grad.compose(&adj).unwrap()),
            ("A ∘ cI", ray.compose(&scaling).unwrap()),
            ("A* ∘ A", adj.compose(&ray).unwrap()),
            ("A ∘ grad*", ray.compose(grad.adjoint().unwrap()).unwrap()),
            ("2A − A", ray.scaled(2.0).unwrap().minus(&ray).unwrap()),
        ];
        for (name, op) in ops {
            let r = check_adjoint(op.as_ref(), 2, seed).unwrap();
            prop_assert!(r.max_rel_error <= tol::<f64>(), "{}: adjoint error {:.3e}", name, r.max_rel_error);
        }
    }

    /// The thread count changes results at most by rounding: the forward projection (one
    /// accumulator per ray) is bit for bit the same with 1 and 3 threads, the back-projection
    /// (whose summation order follows the view blocks and slabs) agrees to rounding, and a
    /// repeated run with the same thread count is bit for bit the same.
    #[test]
    fn thread_count_changes_results_only_by_rounding(case in any_case(FULL), seed in any::<u64>()) {
        let (r1, r3) = (case.ray_with::<f64>(1), case.ray_with::<f64>(3));
        let mut rng = rand_rng(seed);
        let x = r1.domain().random_normal(&mut rng).unwrap();
        let y = r1.range().random_normal(&mut rng).unwrap();
        let (y1, y3) = (r1.apply(&x).unwrap(), r3.apply(&x).unwrap());
        prop_assert_eq!(y1.as_slice().unwrap(), y3.as_slice().unwrap());
        let b1 = r1.adjoint().unwrap().apply(&y).unwrap();
        let b3 = r3.adjoint().unwrap().apply(&y).unwrap();
        let again = r3.adjoint().unwrap().apply(&y).unwrap();
        prop_assert_eq!(b3.as_slice().unwrap(), again.as_slice().unwrap());
        let vol = r1.domain();
        let d = vol.dist(&b1, &b3).unwrap();
        let n = vol.norm(&b1).unwrap();
        prop_assert!(d <= 1e-14 * n, "1 vs 3 threads: ‖Δ‖ = {:.3e}, ‖A*y‖ = {:.3e}", d, n);
    }
}

/// Builds the dense matrices of `A` and `A*` column by column (unit vectors in, one apply
/// each) and returns the largest entrywise `|A*ⱼᵢ − (w_data / w_vol) Aᵢⱼ|` relative to the
/// largest entry, how many entries are exactly zero in one matrix but not in the other, and how
/// many entries of `A` are non-zero.
fn entrywise_error<T: Scalar>(case: &Case) -> (f64, usize, usize) {
    let ray = case.ray::<T>();
    let (dom, ran) = (ray.domain().clone(), ray.range().clone());
    let (n, m) = (dom.size(), ran.size());
    let unit = |space: &Space<T>, k: usize| {
        let mut v = vec![T::zero(); space.size()];
        v[k] = T::one();
        space.element_from_vec(v).unwrap()
    };
    let mut a = vec![0.0f64; m * n]; // a[i * n + j] = A_ij
    for j in 0..n {
        let col = ray.apply(&unit(&dom, j)).unwrap();
        for (i, v) in col.as_slice().unwrap().iter().enumerate() {
            a[i * n + j] = v.f64();
        }
    }
    let adj = ray.adjoint().unwrap();
    let scale = ran.weight().unwrap() / dom.weight().unwrap();
    let big = a.iter().fold(0.0f64, |x, v| x.max(v.abs())) * scale;
    let (mut worst, mut pattern) = (0.0f64, 0);
    for i in 0..m {
        let col = adj.apply(&unit(&ran, i)).unwrap();
        for (j, v) in col.as_slice().unwrap().iter().enumerate() {
            let (b, at) = (v.f64(), scale * a[i * n + j]);
            worst = worst.max((b - at).abs());
            if (b == 0.0) != (at == 0.0) {
                pattern += 1;
            }
        }
    }
    let nnz = a.iter().filter(|&&v| v != 0.0).count();
    (if big > 0.0 { worst / big } else { worst }, pattern, nnz)
}

proptest! {
    #![proptest_config(config(48))]

    /// On small cases of every kind, the matrix of `A*` is the transpose of the matrix of `A`
    /// (times the weight ratio) entry by entry — so no mismatch can hide in a few entries (at the
    /// volume's or detector's edges) below the global bound of `check_adjoint`.
    #[test]
    fn adjoint_matrix_is_the_transpose(case in any_case(SMALL)) {
        let (e64, _, _) = entrywise_error::<f64>(&case);
        prop_assert!(e64 <= 1e-13, "f64 entrywise error {:.3e}", e64);
        let (e32, _, _) = entrywise_error::<f32>(&case);
        prop_assert!(e32 <= 1e-5, "f32 entrywise error {:.3e}", e32);
    }
}

fn rand_rng(seed: u64) -> rand::rngs::StdRng {
    rand::SeedableRng::seed_from_u64(seed)
}

/// How much of the volume the geometry sees: `None` when no ray hits it, `Some(true)` when
/// every voxel is hit, `Some(false)` when only part of it is.
fn coverage(case: &Case) -> Option<bool> {
    let ray = case.ray::<f64>();
    let ones = ray.range().one().unwrap();
    let b = ray.adjoint().unwrap().apply(&ones).unwrap();
    let hit = b.as_slice().unwrap().iter().filter(|&&v| v != 0.0).count();
    match hit {
        0 => None,
        h => Some(h == ray.domain().size()),
    }
}

/// Summary over a fixed, deterministic sample of every kind: prints the largest adjoint errors
/// in f64 and f32 and how often volumes were fully, partly or not hit; asserts the bars.
#[test]
fn adjoint_error_summary() {
    const N: usize = 32;
    let mut worst = (0.0f64, 0.0f64);
    let (mut full, mut partial, mut missed) = (0, 0, 0);
    eprintln!(
        "kind              cases   max err f64   max err f32   full/partial/missed   entrywise f64 (zero-pattern diffs of non-zeros)"
    );
    for (index, (name, strategy)) in kinds(FULL).into_iter().enumerate() {
        let (mut m64, mut m32) = (0.0f64, 0.0f64);
        let (mut f, mut p, mut z) = (0, 0, 0);
        for (k, case) in samples(&strategy, N).iter().enumerate() {
            let e64 = adjoint_error::<f64>(case, k as u64).0;
            let e32 = adjoint_error::<f32>(case, k as u64).0;
            assert!(
                e64 <= tol::<f64>(),
                "{name}: f64 error {e64:.3e} for {case:?}"
            );
            assert!(
                e32 <= tol::<f32>(),
                "{name}: f32 error {e32:.3e} for {case:?}"
            );
            m64 = m64.max(e64);
            m32 = m32.max(e32);
            match coverage(case) {
                Some(true) => f += 1,
                Some(false) => p += 1,
                None => z += 1,
            }
        }
        // Entrywise transpose error on small cases of the same kind.
        let small = kinds(SMALL).swap_remove(index).1;
        let (mut ew, mut pat, mut nnz) = (0.0f64, 0, 0);
        for case in samples(&small, 8) {
            let (e, p, nz) = entrywise_error::<f64>(&case);
            assert!(e <= 1e-13, "{name}: entrywise error {e:.3e} for {case:?}");
            ew = ew.max(e);
            pat += p;
            nnz += nz;
        }
        assert!(nnz > 0, "{name}: the small samples never hit the volume");
        eprintln!(
            "{name:<17} {N:>5}   {m64:>11.3e}   {m32:>11.3e}   {f:>2}/{p:>2}/{z:>2}            {ew:>9.3e} ({pat} of {nnz})"
        );
        worst = (worst.0.max(m64), worst.1.max(m32));
        full += f;
        partial += p;
        missed += z;
    }
    eprintln!(
        "all kinds: max f64 {:.3e}, max f32 {:.3e}; volumes fully hit {full}, partly hit {partial}, missed {missed}",
        worst.0, worst.1
    );
    // The strategies must exercise both fully and partly seen volumes.
    assert!(
        full > 0 && partial > 0,
        "coverage {full}/{partial}/{missed}"
    );
}

// ---------------------------------------------------------------------------------------------
// Proof that the check can fail
// ---------------------------------------------------------------------------------------------

/// A linear operator with the ray transform's forward and a user-given (wrong) "adjoint".
struct Unmatched {
    forward: LinOp<f64>,
    back: LinOp<f64>,
}

impl Operator<f64> for Unmatched {
    fn domain(&self) -> &Space<f64> {
        self.forward.domain()
    }
    fn range(&self) -> &Space<f64> {
        self.forward.range()
    }
    fn evaluate(&self, x: &Element<f64>, out: &mut Element<f64>) -> Result<()> {
        self.forward.apply_into(x, out)
    }
    fn is_linear(&self) -> bool {
        true
    }
}

impl LinearOperator<f64> for Unmatched {
    fn adjoint(&self) -> Result<LinOp<f64>> {
        Ok(self.back.clone())
    }
}

/// A voxel-driven 2D parallel-beam back-projection (linear interpolation on the detector),
/// `b(p) = Σ_θ Δθ · y(θ, p·e_u(θ))`: a good approximation of the adjoint, but not the exact
/// transpose of Joseph's forward projection — the usual unmatched pair.
struct VoxelDriven {
    data: Space<f64>,
    volume: Space<f64>,
    angles: Part1,
    det: Part1,
}

impl Operator<f64> for VoxelDriven {
    fn domain(&self) -> &Space<f64> {
        &self.data
    }
    fn range(&self) -> &Space<f64> {
        &self.volume
    }
    fn evaluate(&self, y: &Element<f64>, out: &mut Element<f64>) -> Result<()> {
        let y = y.as_slice()?;
        let thetas = self.angles.part().coord_vector(0)?;
        let dtheta = (self.angles.max - self.angles.min) / self.angles.n as f64;
        let du = (self.det.max - self.det.min) / self.det.n as f64;
        let nu = self.det.n;
        let pts = self.volume.points()?;
        let o = out.as_slice_mut()?;
        for (k, v) in o.iter_mut().enumerate() {
            let (px, py) = (pts[[k, 0]], pts[[k, 1]]);
            let mut acc = 0.0;
            for (a, t) in thetas.iter().enumerate() {
                let u = px * t.cos() + py * t.sin();
                let f = (u - self.det.min) / du - 0.5;
                let i = f.floor();
                let w = f - i;
                let i = i as isize;
                for (j, wj) in [(i, 1.0 - w), (i + 1, w)] {
                    if j >= 0 && (j as usize) < nu {
                        acc += wj * y[a * nu + j as usize];
                    }
                }
            }
            *v = acc * dtheta;
        }
        Ok(())
    }
    fn is_linear(&self) -> bool {
        true
    }
}

impl LinearOperator<f64> for VoxelDriven {
    fn adjoint(&self) -> Result<LinOp<f64>> {
        Err(Error::Unsupported("test back-projector".into()))
    }
}

/// Deliberately wrong back-projections are flagged: the true adjoint times 1.02, the adjoint of
/// a detector shifted by half a pixel, and a voxel-driven back-projection.
#[test]
fn wrong_back_projections_are_flagged() {
    let angles = Part1 {
        min: 0.0,
        max: PI,
        n: 16,
    };
    let det = Part1 {
        min: -1.5,
        max: 1.5,
        n: 31,
    };
    let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[20, 20]).unwrap();
    let geometry =
        |offset: f64| Geometry::parallel_2d_offset(&angles.part(), &det.part(), offset).unwrap();
    let ray: LinOp<f64> =
        Arc::new(RayTransform::new(space.clone(), geometry(0.0), Backend::default()).unwrap());
    let truth = check_adjoint(ray.as_ref(), 10, 3).unwrap().max_rel_error;
    assert!(truth <= tol::<f64>(), "true adjoint: {truth:.3e}");

    let du = (det.max - det.min) / det.n as f64;
    let shifted = RayTransform::new(space.clone(), geometry(0.5 * du), Backend::default())
        .unwrap()
        .adjoint()
        .unwrap();
    let voxel: LinOp<f64> = Arc::new(VoxelDriven {
        data: ray.range().clone(),
        volume: space.clone(),
        angles,
        det,
    });
    let wrong: Vec<(&str, LinOp<f64>)> = vec![
        ("1.02 · A*", ray.adjoint().unwrap().scaled(1.02).unwrap()),
        ("half-pixel shifted A*", shifted),
        ("voxel-driven", voxel),
    ];
    eprintln!("true adjoint: {truth:.3e}");
    for (name, back) in wrong {
        let op = Unmatched {
            forward: ray.clone(),
            back,
        };
        let err = check_adjoint(&op, 10, 3).unwrap().max_rel_error;
        eprintln!("{name}: adjoint error {err:.3e}");
        assert!(err > 1e-6, "{name} was not flagged: {err:.3e}");
        assert!(
            err > 1e6 * truth.max(1e-16),
            "{name}: {err:.3e} vs {truth:.3e}"
        );
    }
}
