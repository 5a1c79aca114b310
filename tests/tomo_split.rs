//! The piece planner (`rodl::tomo::split`): plans cover every (view, slice) once with pieces
//! that fit the budget and are as few as possible, and the pieces' ray transforms add up to the
//! whole transform (forward, and the adjoint on each slab) for every geometry kind, with slabs
//! along and across the rays' dominant axes, rays through slab borders and rays on diagonals.

use std::f64::consts::PI;
use std::ops::Range;

use proptest::prelude::*;
use rand::SeedableRng;
use rodl::tomo::split::{piece_transform, plan, slab_space, SplitPlan, SplitProblem};
use rodl::tomo::{Backend, Beam, Geometry, RayTransform, VecGeometry, View};
use rodl::{uniform_discr, Device, Error, LinearOperator, Operator, Space, UniformPartition};

mod common;

fn part(lo: f64, hi: f64, n: usize) -> UniformPartition {
    UniformPartition::new(&[lo], &[hi], &[n]).unwrap()
}

/// A volume and a geometry of each kind, 3D volumes of odd sizes and a tilted vector detector,
/// and a cone rotating about x, the volume's first axis (its slabs across the rotation axis).
fn cases() -> Vec<(&'static str, Space<f64>, Geometry)> {
    let mut cases = common::geometry_cases::<f64>([12, 11, 10], 0.01);
    let v3 = cases.last().unwrap().1.clone();
    let det3 = UniformPartition::new(&[-1.8, -1.2], &[1.8, 1.2], &[20, 14]).unwrap();
    cases.push((
        "cone about x",
        v3,
        Geometry::cone_flat(
            &part(0.0, 2.0 * PI, 9),
            &det3,
            6.0,
            4.0,
            0.0,
            [1.0, 0.0, 0.0],
            [0.1, 0.0],
        )
        .unwrap(),
    ));
    cases
}

/// Random values on `space`.
fn random(space: &Space<f64>, seed: u64) -> Vec<f64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    space
        .random_normal(&mut rng)
        .unwrap()
        .as_slice()
        .unwrap()
        .to_vec()
}

/// `max |a − b| / max |b|`.
fn rel_err(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let err = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    if scale == 0.0 {
        err
    } else {
        err / scale
    }
}

/// The forward transform of `x` and the adjoint of `y` computed piece by piece: each piece
/// projects its padded slab of `x` (halo cells zero) onto its views, and back-projects its
/// views' rows of `y` onto its padded slab, of which the slab's own cells are kept.
fn by_pieces(
    space: &Space<f64>,
    geometry: &Geometry,
    split: &SplitPlan,
    x: &[f64],
    y: &[f64],
) -> (Vec<f64>, Vec<f64>) {
    let slice: usize = space.shape().unwrap()[1..].iter().product();
    let cells_per_view: usize = geometry.data_shape()[1..].iter().product();
    let mut ax = vec![0.0; y.len()];
    let mut aty = vec![0.0; x.len()];
    for piece in split.pieces() {
        let ray =
            piece_transform(space, geometry, piece, split.halo(), Backend::default()).unwrap();
        let (_, cells) = slab_space(space, piece.slab.clone(), split.halo()).unwrap();
        let mut xs = ray.domain().zero().unwrap();
        let xs_data = xs.as_slice_mut().unwrap();
        let own = |r: &Range<usize>| (r.start - cells.start) * slice..(r.end - cells.start) * slice;
        xs_data[own(&piece.slab)]
            .copy_from_slice(&x[piece.slab.start * slice..piece.slab.end * slice]);
        let rows = piece.views.start * cells_per_view..piece.views.end * cells_per_view;
        let yp = ray.apply(&xs).unwrap();
        ax[rows.clone()]
            .iter_mut()
            .zip(yp.as_slice().unwrap())
            .for_each(|(s, v)| *s += v);
        let ys = ray.range().element_from_vec(y[rows].to_vec()).unwrap();
        let back = ray.adjoint().unwrap().apply(&ys).unwrap();
        let back = &back.as_slice().unwrap()[own(&piece.slab)];
        aty[piece.slab.start * slice..piece.slab.end * slice]
            .iter_mut()
            .zip(back)
            .for_each(|(s, v)| *s += v);
    }
    (ax, aty)
}

/// The relative errors (forward, adjoint) of the pieces of `split` against the whole transform.
fn errors(space: &Space<f64>, geometry: &Geometry, split: &SplitPlan, seed: u64) -> (f64, f64) {
    let ray = RayTransform::new(space.clone(), geometry.clone(), Backend::default()).unwrap();
    let x = random(space, seed);
    let y = random(ray.range(), seed + 1);
    let ax = ray
        .apply(&space.element_from_vec(x.clone()).unwrap())
        .unwrap();
    let aty = ray
        .adjoint()
        .unwrap()
        .apply(&ray.range().element_from_vec(y.clone()).unwrap())
        .unwrap();
    let (px, py) = by_pieces(space, geometry, split, &x, &y);
    (
        rel_err(&px, ax.as_slice().unwrap()),
        rel_err(&py, aty.as_slice().unwrap()),
    )
}

fn problem(space: &Space<f64>, geometry: &Geometry, halo: usize) -> SplitProblem {
    SplitProblem::of(space, geometry).unwrap().with_halo(halo)
}

/// For every geometry kind, slabs of 1, 2, 3, 5 slices with view groups of 1 to all views, with
/// no halo and with a halo of one cell: the pieces add up to the whole transform.
#[test]
fn pieces_add_up_for_every_geometry_kind() {
    for (name, space, geometry) in cases() {
        let mut worst = (0.0f64, 0.0f64);
        for halo in [0, 1] {
            let p = problem(&space, &geometry, halo);
            let slice = p.slice_cells() as u64 * 8;
            let view = p.cells_per_view as u64 * 8;
            for (t, g) in [(1, 1), (2, 3), (3, 2), (5, 100), (1, 100), (100, 4)] {
                let slices = (t + 2 * halo as u64).min(p.volume_shape[0] as u64);
                let budget = slices * slice + g.min(p.views as u64) * view;
                let split = plan(&p, budget).unwrap();
                assert!(split.max_piece_bytes() <= budget as u128);
                let (f, a) = errors(&space, &geometry, &split, t * 10 + g);
                assert!(
                    f <= 1e-12 && a <= 1e-12,
                    "{name}, halo {halo}, {} slabs × {} groups: forward {f:e}, adjoint {a:e}",
                    split.slabs().len(),
                    split.view_groups().len()
                );
                worst = (worst.0.max(f), worst.1.max(a));
            }
        }
        println!(
            "{name}: max relative error of the pieces, forward {:.1e}, adjoint {:.1e}",
            worst.0, worst.1
        );
    }
}

/// Parallel rays along the volume's first axis (the slabs' axis: they march through the slabs
/// plane by plane), across it (every ray lies in one slab or on the border of two: the detector
/// pixels are centred on cell borders) and on the diagonal of square cells, where the dominant
/// axis is a tie that rounding of the slab's cell side would break otherwise.
#[test]
fn rays_along_across_and_on_slab_borders() {
    let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16]).unwrap();
    let h = 2.0 / 16.0;
    let dirs: [[f64; 3]; 5] = [
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [1.0, 1.0, 0.0],
        [1.0, -1.0, 0.0],
        [0.7, 1.0, 0.0],
    ];
    let views: Vec<View> = dirs
        .iter()
        .map(|&d| {
            // det_u ⟂ d, of length h: pixel centres on the cell borders for the axis directions.
            let n = (d[0] * d[0] + d[1] * d[1]).sqrt();
            View {
                src: d,
                det_center: [0.0; 3],
                det_u: [-d[1] / n * h, d[0] / n * h, 0.0],
                det_v: [0.0; 3],
            }
        })
        .collect();
    let geometry =
        Geometry::from_vec(VecGeometry::new(2, Beam::Parallel, &[17], views).unwrap()).unwrap();
    let p = problem(&space, &geometry, 0);
    for t in [1u64, 2, 3, 7] {
        let budget = t * p.slice_cells() as u64 * 8 + 17 * 8;
        let split = plan(&p, budget).unwrap();
        let (f, a) = errors(&space, &geometry, &split, t);
        assert!(f <= 1e-12 && a <= 1e-12, "slabs of {t}: {f:e}, {a:e}");
    }
    // 3D diagonals of cubic cells (tie of the dominant axis between x and y): a sub-space on
    // the slab's own extent rounds its cell side along x differently for most slabs, which
    // turns these rays to march along y, a different Joseph sum (2 % off in this case);
    // `piece_transform` keeps the volume's cell sides.
    for (lo, n) in [(-1.1f64, 10usize), (0.1, 14)] {
        let hi = lo + 2.2;
        let space = uniform_discr::<f64>(&[lo; 3], &[hi; 3], &[n; 3]).unwrap();
        let (h, c) = (2.2 / n as f64, lo + 1.1);
        let view = |d: [f64; 3], u: [f64; 3], v: [f64; 3]| View {
            src: d,
            det_center: [c; 3],
            det_u: u.map(|x| x * h),
            det_v: v.map(|x| x * h),
        };
        let views = vec![
            view([1.0, 1.0, 0.3], [-1.0, 1.0, 0.0], [0.0, -0.3, 1.0]),
            view([1.0, -1.0, 0.7], [1.0, 1.0, 0.0], [-0.7, 0.0, 1.0]),
        ];
        let vec = VecGeometry::new(3, Beam::Parallel, &[2 * n, 2 * n], views).unwrap();
        let geometry = Geometry::from_vec(vec).unwrap();
        let p = problem(&space, &geometry, 0);
        for t in 1..5u64 {
            let budget = t * p.slice_cells() as u64 * 8 + 2 * p.cells_per_view as u64 * 8;
            let split = plan(&p, budget).unwrap();
            let (f, a) = errors(&space, &geometry, &split, t);
            assert!(
                f <= 1e-12 && a <= 1e-12,
                "diagonal, slabs of {t}: {f:e}, {a:e}"
            );
        }
    }
    // 3D parallel beams about z: rays across the slabs and along them.
    let v3 = uniform_discr::<f64>(&[-1.0; 3], &[1.0; 3], &[8, 8, 8]).unwrap();
    let det = UniformPartition::new(&[-1.5, -1.5], &[1.5, 1.5], &[12, 12]).unwrap();
    let par = Geometry::parallel_3d(&part(0.0, PI, 8), &det, [0.0, 0.0, 1.0], [0.0; 2]).unwrap();
    let p = problem(&v3, &par, 0);
    for t in [1u64, 3] {
        let budget = t * p.slice_cells() as u64 * 8 + 2 * p.cells_per_view as u64 * 8;
        let split = plan(&p, budget).unwrap();
        let (f, a) = errors(&v3, &par, &split, t);
        assert!(f <= 1e-12 && a <= 1e-12, "3D slabs of {t}: {f:e}, {a:e}");
    }
}

/// The plan takes the fewest pieces, and among those the fewest slabs: the whole volume with
/// view groups when it fits; one piece when everything fits.
#[test]
fn plans_prefer_the_whole_volume_and_few_pieces() {
    let p = SplitProblem::new(&[100, 50, 50], 360, 80 * 60, 4);
    let (vol, sino) = (100 * 50 * 50 * 4u64, 360 * 80 * 60 * 4u64);
    assert!(plan(&p, vol + sino).unwrap().is_whole());
    let split = plan(&p, vol + sino / 3).unwrap();
    assert_eq!(split.slabs().len(), 1);
    assert_eq!(split.slabs()[0], 0..100);
    assert_eq!(split.view_groups().len(), 3, "{:?}", split.view_groups());
    // Half the volume and one view: slabs.
    let split = plan(&p, vol / 2 + 80 * 60 * 4).unwrap();
    assert!(split.slabs().len() >= 2);
    // Errors: nothing fits, an empty problem.
    let one = 50 * 50 * 4 + 80 * 60 * 4;
    assert!(plan(&p, one).is_ok());
    let e = plan(&p, one - 1).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    assert!(e.to_string().contains("smallest piece"), "{e}");
    let e = plan(&p.clone().with_overhead(1), one).unwrap_err();
    assert!(e.to_string().contains("overhead"), "{e}");
    let e = plan(&p.clone().on(Device::Cuda(0)), 10).unwrap_err();
    assert!(e.to_string().contains("cuda:0"), "{e}");
    assert!(plan(&SplitProblem::new(&[0, 4], 3, 4, 4), 1 << 20).is_err());
    assert!(plan(&SplitProblem::new(&[4, 4], 0, 4, 4), 1 << 20).is_err());
    // Huge sizes neither overflow nor panic.
    let huge = SplitProblem::new(
        &[usize::MAX, usize::MAX, usize::MAX],
        usize::MAX,
        usize::MAX,
        8,
    );
    assert!(plan(&huge, u64::MAX).is_err());
    let wide = SplitProblem::new(&[1 << 40, 1], 1 << 40, 1, 4);
    let split = plan(&wide, 1 << 30).unwrap();
    assert!(split.pieces().len() >= 2);
}

#[test]
fn slab_spaces_are_checked_and_keep_the_cells() {
    let space = uniform_discr::<f64>(&[-1.0, 0.0], &[1.0, 2.0], &[10, 4]).unwrap();
    let (sub, cells) = slab_space(&space, 3..6, 1).unwrap();
    assert_eq!(cells, 2..7);
    assert_eq!(sub.shape().unwrap(), &[5, 4]);
    assert!((sub.min_pt().unwrap()[0] - (-0.6)).abs() < 1e-15);
    assert!((sub.cell_volume().unwrap() - space.cell_volume().unwrap()).abs() < 1e-15);
    let (sub, cells) = slab_space(&space, 0..10, 2).unwrap();
    assert_eq!((sub, cells), (space.clone(), 0..10));
    assert!(slab_space(&space, 4..4, 0).is_err());
    assert!(slab_space(&space, 8..11, 0).is_err());
    assert!(slab_space(&rodl::rn::<f64>(&[4, 4]).unwrap(), 0..2, 0).is_err());
}

/// The least number of pieces over all slab thicknesses and group sizes, by brute force.
fn fewest_pieces(p: &SplitProblem, budget: u64) -> Option<usize> {
    let n0 = p.volume_shape[0];
    let mut best = None;
    for t in 1..=n0 {
        for g in 1..=p.views {
            // The worst-placed slab of thickness t (its halo within the volume).
            let slices = (t + 2 * p.halo).min(n0) as u128;
            let bytes = (slices * p.slice_cells() * p.volume_buffers as u128
                + (g * p.cells_per_view * p.data_buffers) as u128)
                * p.elem_size as u128
                + p.overhead as u128;
            if bytes <= budget as u128 {
                let n = n0.div_ceil(t) * p.views.div_ceil(g);
                best = Some(best.map_or(n, |b: usize| b.min(n)));
            }
        }
    }
    best
}

fn kind_geometry(kind: usize, na: usize, nu: usize, nv: usize, off: f64) -> Geometry {
    let angles = part(0.1, 0.1 + 2.0 * PI, na);
    if kind < 2 {
        let det = part(-1.7 + off, 1.7 + off, nu);
        return if kind == 0 {
            Geometry::parallel_2d(&angles, &det).unwrap()
        } else {
            Geometry::fan_flat(&angles, &det, 4.0, 2.0, off).unwrap()
        };
    }
    let det = UniformPartition::new(&[-1.7, -1.5], &[1.7, 1.5], &[nu, nv]).unwrap();
    let z = [0.0, 0.0, 1.0];
    match kind {
        2 => Geometry::parallel_3d(&angles, &det, [0.3, 0.0, 1.0], [off, 0.0]).unwrap(),
        3 => Geometry::cone_flat(&angles, &det, 4.0, 2.0, 0.0, z, [off, 0.0]).unwrap(),
        4 => Geometry::cone_flat(&angles, &det, 4.0, 2.0, 0.5, z, [0.0, off]).unwrap(),
        _ => {
            let views = (0..na)
                .map(|k| {
                    let t = 0.5 + k as f64 * 0.7;
                    View {
                        src: [4.0 * t.cos(), 4.0 * t.sin(), off],
                        det_center: [-2.0 * t.cos(), -2.0 * t.sin(), 0.1],
                        det_u: [-0.25 * t.sin(), 0.25 * t.cos(), 0.02],
                        det_v: [0.01, 0.03, 0.25],
                    }
                })
                .collect();
            Geometry::from_vec(VecGeometry::new(3, Beam::Point, &[nu, nv], views).unwrap()).unwrap()
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random problems and budgets: the pieces cover every (view, slice) exactly once, each
    /// fits, their number is the least possible, and plans that fail have no piece that fits.
    #[test]
    fn plans_cover_fit_and_are_minimal(
        shape in prop::collection::vec(1usize..40, 1..4),
        views in 1usize..60,
        cells in 1usize..200,
        elem in prop::sample::select(vec![4usize, 8]),
        halo in 0usize..3,
        overhead in 0u64..2000,
        frac in 0.0f64..1.2,
        buffers in (1usize..3, 1usize..3),
    ) {
        let p = SplitProblem::new(&shape, views, cells, elem)
            .with_halo(halo)
            .with_overhead(overhead)
            .with_buffers(buffers.0, buffers.1);
        let slice = p.slice_cells() as u64;
        let whole = (shape[0] as u64 * slice * buffers.0 as u64
            + (views * cells * buffers.1) as u64)
            * elem as u64
            + overhead;
        let budget = (whole as f64 * frac) as u64;
        match plan(&p, budget) {
            Err(e) => {
                prop_assert!(matches!(e, Error::OutOfMemory { .. }), "{}", e);
                prop_assert_eq!(fewest_pieces(&p, budget), None);
            }
            Ok(split) => {
                let mut seen = vec![0u8; views * shape[0]];
                for piece in split.pieces() {
                    prop_assert!(p.piece_bytes(piece) <= budget as u128);
                    for v in piece.views.clone() {
                        for s in piece.slab.clone() {
                            seen[v * shape[0] + s] += 1;
                        }
                    }
                }
                prop_assert!(seen.iter().all(|&n| n == 1));
                prop_assert_eq!(Some(split.pieces().len()), fewest_pieces(&p, budget));
                prop_assert!(split.max_piece_bytes() <= budget as u128);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// Random volumes, geometries of every kind and budgets: the pieces add up to the whole
    /// transform, forward and adjoint.
    #[test]
    fn random_splits_add_up(
        kind in 0usize..6,
        n in (1usize..14, 1usize..12, 1usize..9),
        ext in (0.4f64..1.5, 0.4f64..1.5, 0.4f64..1.5),
        (na, nu, nv) in (1usize..7, 1usize..14, 1usize..10),
        off in -0.3f64..0.3,
        halo in 0usize..2,
        (t, g) in (1usize..14, 1usize..7),
        seed in 0u64..1000,
    ) {
        let space = if kind < 2 {
            uniform_discr::<f64>(&[-ext.0, -ext.1], &[ext.0 * 0.9, ext.1], &[n.0, n.1]).unwrap()
        } else {
            uniform_discr::<f64>(&[-ext.0, -ext.1, -ext.2], &[ext.0, ext.1 * 0.8, ext.2], &[n.0, n.1, n.2]).unwrap()
        };
        let geometry = kind_geometry(kind, na, nu, nv, off);
        let p = problem(&space, &geometry, halo);
        let slices = (t + 2 * halo).min(n.0) as u64;
        let budget = (slices * p.slice_cells() as u64 + g.min(na) as u64 * p.cells_per_view as u64) * 8;
        let split = plan(&p, budget).unwrap();
        let (f, a) = errors(&space, &geometry, &split, seed);
        prop_assert!(f <= 1e-12 && a <= 1e-12, "forward {:e}, adjoint {:e}", f, a);
    }
}

/// FBP in pieces: on each slab, the sum over view groups of `fbp_op_views` of the pieces equals
/// the whole FBP there: parallel beams over a half turn (Parker weights per view), the exact
/// three-term fan-beam FBP, a short fan scan and FDK.
#[test]
fn fbp_adds_up_over_pieces() {
    use rodl::tomo::{fbp_op, fbp_op_views, FbpOptions};
    let v2 = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[20, 18]).unwrap();
    let v3 = uniform_discr::<f64>(&[-1.0; 3], &[1.0; 3], &[10, 9, 8]).unwrap();
    let det2 = part(-2.0, 2.0, 30);
    let det3 = UniformPartition::new(&[-2.5, -2.5], &[2.5, 2.5], &[16, 14]).unwrap();
    let z = [0.0, 0.0, 1.0];
    let cases = [
        (
            v2.clone(),
            Geometry::parallel_2d(&part(0.0, 1.2 * PI, 12), &det2).unwrap(),
        ),
        (
            v2.clone(),
            Geometry::fan_flat(&part(0.0, 2.0 * PI, 14), &det2, 4.0, 2.0, 0.0).unwrap(),
        ),
        (
            v2,
            Geometry::fan_flat(&part(0.0, 1.6 * PI, 14), &det2, 4.0, 2.0, 0.0).unwrap(),
        ),
        (
            v3,
            Geometry::cone_flat(&part(0.0, 2.0 * PI, 10), &det3, 5.0, 3.0, 0.0, z, [0.0; 2])
                .unwrap(),
        ),
    ];
    let options = FbpOptions::default();
    for (k, (space, geometry)) in cases.into_iter().enumerate() {
        let ray = RayTransform::new(space.clone(), geometry.clone(), Backend::default()).unwrap();
        let y = random(ray.range(), k as u64);
        let whole = fbp_op(&ray, &options)
            .unwrap()
            .apply(&ray.range().element_from_vec(y.clone()).unwrap())
            .unwrap();
        let p = problem(&space, &geometry, 0);
        let budget = 3 * p.slice_cells() as u64 * 8 + 4 * p.cells_per_view as u64 * 8;
        let split = plan(&p, budget).unwrap();
        assert!(split.slabs().len() > 1 && split.view_groups().len() > 1);
        let slice = p.slice_cells() as usize;
        let mut sum = vec![0.0; space.size()];
        for piece in split.pieces() {
            let ray = piece_transform(&space, &geometry, piece, 0, Backend::default()).unwrap();
            let fbp = fbp_op_views(&ray, &geometry, piece.views.clone(), &options).unwrap();
            let rows = &y[piece.views.start * p.cells_per_view..piece.views.end * p.cells_per_view];
            let x = fbp
                .apply(&ray.range().element_from_vec(rows.to_vec()).unwrap())
                .unwrap();
            sum[piece.slab.start * slice..piece.slab.end * slice]
                .iter_mut()
                .zip(x.as_slice().unwrap())
                .for_each(|(s, v)| *s += v);
        }
        let err = rel_err(&sum, whole.as_slice().unwrap());
        assert!(err <= 1e-12, "case {k}: {err:e}");
    }
    // A view range that is not the transform's is an error.
    let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[8, 8]).unwrap();
    let geometry = Geometry::parallel_2d(&part(0.0, PI, 6), &part(-1.5, 1.5, 12)).unwrap();
    let ray = RayTransform::new(
        space,
        geometry.select_views(0..3).unwrap(),
        Backend::default(),
    )
    .unwrap();
    assert!(fbp_op_views(&ray, &geometry, 0..4, &options).is_err());
    assert!(fbp_op_views(&ray, &geometry, 4..7, &options).is_err());
    assert!(fbp_op_views(&ray, &geometry, 3..6, &options).is_ok());
}
