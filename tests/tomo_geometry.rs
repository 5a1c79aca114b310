//! Geometry conventions (ODL's), the data space and its weighting, single-point phantoms that
//! land on the detector pixel the geometry predicts, the geometry JSON, and clean errors for bad
//! geometries and backends.

use std::f64::consts::PI;
use std::panic::{catch_unwind, AssertUnwindSafe};

use rodl::tomo::{
    cone_beam_geometry, parallel_beam_geometry, Backend, Beam, Geometry, GeometryKind,
    RayTransform, TomoSpec, VecGeometry, View,
};
use rodl::{uniform_discr, Device, Error, Operator, Space, UniformPartition};

fn part(lo: &[f64], hi: &[f64], n: &[usize]) -> UniformPartition {
    UniformPartition::new(lo, hi, n).unwrap()
}

/// A partition with one angle, exactly `theta`.
fn one_angle(theta: f64) -> UniformPartition {
    part(&[theta - 0.25], &[theta + 0.25], &[1])
}

fn assert_vec(got: [f64; 3], want: [f64; 3], what: &str) {
    for k in 0..3 {
        assert!(
            (got[k] - want[k]).abs() <= 1e-12 * (1.0 + want[k].abs()),
            "{what}: got {got:?}, want {want:?}"
        );
    }
}

fn normalized(a: [f64; 3]) -> [f64; 3] {
    let n = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
    a.map(|x| x / n)
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

// ---------------------------------------------------------------------------------------------
// Conventions
// ---------------------------------------------------------------------------------------------

#[test]
fn parallel2d_at_angle_zero_looks_along_y_with_u_along_x() {
    let det = part(&[-1.0], &[1.0], &[10]);
    let g = Geometry::parallel_2d(&one_angle(0.0), &det).unwrap();
    let v = g.vec().views()[0];
    assert_eq!(g.vec().beam(), Beam::Parallel);
    assert_vec(normalized(v.src), [0.0, 1.0, 0.0], "ray direction at 0");
    assert_vec(
        v.det_u,
        [0.2, 0.0, 0.0],
        "detector u axis at 0 (pixel spacing)",
    );
    assert_vec(v.det_center, [0.0, 0.0, 0.0], "detector centre at 0");
    // A shifted detector partition and an offset move the centre along +u.
    let det = part(&[-0.5], &[1.5], &[10]);
    let g = Geometry::parallel_2d_offset(&one_angle(0.0), &det, 0.25).unwrap();
    assert_vec(
        g.vec().views()[0].det_center,
        [0.75, 0.0, 0.0],
        "shifted centre",
    );
}

#[test]
fn rotation_is_counter_clockwise() {
    let det = part(&[-1.0], &[1.0], &[10]);
    let g = Geometry::parallel_2d(&one_angle(PI / 2.0), &det).unwrap();
    let v = g.vec().views()[0];
    assert_vec(normalized(v.src), [-1.0, 0.0, 0.0], "ray direction at π/2");
    assert_vec(v.det_u, [0.0, 0.2, 0.0], "u axis at π/2");

    let g = Geometry::fan_flat(&one_angle(PI / 2.0), &det, 3.0, 2.0, 0.0).unwrap();
    let v = g.vec().views()[0];
    assert_vec(v.src, [3.0, 0.0, 0.0], "fan source at π/2");
    assert_vec(v.det_center, [-2.0, 0.0, 0.0], "fan detector at π/2");
    assert_vec(v.det_u, [0.0, 0.2, 0.0], "fan u axis at π/2");
}

#[test]
fn angles_are_cell_midpoints() {
    let angles = part(&[0.0], &[PI], &[6]);
    let det = part(&[-1.0], &[1.0], &[4]);
    let g = Geometry::parallel_2d(&angles, &det).unwrap();
    assert_eq!(g.vec().num_views(), 6);
    for (k, v) in g.vec().views().iter().enumerate() {
        let t = (k as f64 + 0.5) * PI / 6.0;
        assert_vec(
            normalized(v.src),
            [-t.sin(), t.cos(), 0.0],
            &format!("view {k}"),
        );
        assert_vec(v.det_u, [0.5 * t.cos(), 0.5 * t.sin(), 0.0], "u axis");
    }
}

#[test]
fn fan_and_cone_source_and_detector_at_angle_zero() {
    let g =
        Geometry::fan_flat(&one_angle(0.0), &part(&[-2.0], &[2.0], &[8]), 5.0, 3.0, 0.0).unwrap();
    let v = g.vec().views()[0];
    assert_eq!(g.vec().beam(), Beam::Point);
    assert_vec(v.src, [0.0, -5.0, 0.0], "fan source");
    assert_vec(v.det_center, [0.0, 3.0, 0.0], "fan detector centre");
    assert_vec(v.det_u, [0.5, 0.0, 0.0], "fan u axis");

    let det = part(&[-2.0, -1.0], &[2.0, 1.0], &[8, 4]);
    let g = Geometry::cone_flat(
        &one_angle(0.0),
        &det,
        5.0,
        3.0,
        0.0,
        [0.0, 0.0, 1.0],
        [0.0, 0.0],
    )
    .unwrap();
    let v = g.vec().views()[0];
    assert_vec(v.src, [0.0, -5.0, 0.0], "cone source");
    assert_vec(v.det_center, [0.0, 3.0, 0.0], "cone detector centre");
    assert_vec(v.det_u, [0.5, 0.0, 0.0], "cone u axis");
    assert_vec(v.det_v, [0.0, 0.0, 0.5], "cone v axis");
    // Offsets move the detector along u and v.
    let g = Geometry::cone_flat(
        &one_angle(0.0),
        &det,
        5.0,
        3.0,
        0.0,
        [0.0, 0.0, 1.0],
        [0.3, -0.2],
    )
    .unwrap();
    assert_vec(
        g.vec().views()[0].det_center,
        [0.3, 3.0, -0.2],
        "offset cone detector",
    );
}

#[test]
fn parallel3d_conventions() {
    let det = part(&[-1.0, -1.0], &[1.0, 1.0], &[4, 8]);
    let g = Geometry::parallel_3d(&one_angle(0.0), &det, [0.0, 0.0, 1.0], [0.0, 0.0]).unwrap();
    let v = g.vec().views()[0];
    assert_vec(normalized(v.src), [0.0, 1.0, 0.0], "ray direction");
    assert_vec(v.det_u, [0.5, 0.0, 0.0], "u axis");
    assert_vec(v.det_v, [0.0, 0.0, 0.25], "v axis");
    // About any axis: rays and u are perpendicular to the axis, v is along it, and the frame
    // turns counter-clockwise about the axis.
    let axis = normalized([0.3, -0.5, 0.8]);
    let angles = part(&[0.0], &[2.0 * PI], &[8]);
    let g = Geometry::parallel_3d(&angles, &det, [0.3, -0.5, 0.8], [0.0, 0.0]).unwrap();
    for (k, v) in g.vec().views().iter().enumerate() {
        let d = normalized(v.src);
        let u = normalized(v.det_u);
        assert!(dot(d, axis).abs() < 1e-12, "view {k}: ray not ⟂ axis");
        assert!(dot(u, axis).abs() < 1e-12, "view {k}: u not ⟂ axis");
        assert!(dot(u, d).abs() < 1e-12, "view {k}: u not ⟂ ray");
        assert_vec(normalized(v.det_v), axis, "v along the axis");
        // Counter-clockwise about the axis: u × ray = axis (as e_x × e_y = e_z).
        let c = [
            u[1] * d[2] - u[2] * d[1],
            u[2] * d[0] - u[0] * d[2],
            u[0] * d[1] - u[1] * d[0],
        ];
        assert_vec(c, axis, "u × ray");
    }
    let v0 = g.vec().views()[0];
    let v1 = g.vec().views()[1];
    let turn = dot(normalized(v0.src), normalized(v1.src)).acos();
    assert!((turn - PI / 4.0).abs() < 1e-12, "turn {turn}");
}

#[test]
fn helical_pitch_shifts_source_and_detector_along_the_axis() {
    let pitch = 0.8;
    let angles = part(&[0.0], &[4.0 * PI], &[8]);
    let det = part(&[-2.0, -1.0], &[2.0, 1.0], &[8, 4]);
    let g =
        Geometry::cone_flat(&angles, &det, 5.0, 3.0, pitch, [0.0, 0.0, 1.0], [0.0, 0.1]).unwrap();
    for (k, v) in g.vec().views().iter().enumerate() {
        let t = (k as f64 + 0.5) * PI / 2.0;
        let shift = pitch * t / (2.0 * PI);
        assert_vec(
            v.src,
            [5.0 * t.sin(), -5.0 * t.cos(), shift],
            &format!("source {k}"),
        );
        assert_vec(
            v.det_center,
            [-3.0 * t.sin(), 3.0 * t.cos(), shift + 0.1],
            &format!("detector {k}"),
        );
    }
    // After one full turn the source is `pitch` higher.
    let angles = part(&[0.0], &[4.0 * PI], &[2]);
    let g =
        Geometry::cone_flat(&angles, &det, 5.0, 3.0, pitch, [0.0, 0.0, 1.0], [0.0, 0.0]).unwrap();
    let (a, b) = (g.vec().views()[0].src, g.vec().views()[1].src);
    assert_vec(b, [a[0], a[1], a[2] + pitch], "one turn later");
}

#[test]
fn data_shape_and_space() {
    let angles = part(&[0.0], &[PI], &[7]);
    let g = Geometry::parallel_2d(&angles, &part(&[-1.0], &[1.0], &[5])).unwrap();
    assert_eq!(g.data_shape(), vec![7, 5]);
    let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[4, 6]).unwrap();
    let ray = RayTransform::new(space.clone(), g, Backend::default()).unwrap();
    assert_eq!(ray.range().shape().unwrap(), &[7, 5]);
    let y = ray.apply(&space.one().unwrap()).unwrap();
    assert_eq!(y.shape().unwrap(), &[7, 5]);

    let det = part(&[-1.0, -2.0], &[1.0, 2.0], &[5, 3]);
    let g = Geometry::cone_flat(&angles, &det, 4.0, 2.0, 0.0, [0.0, 0.0, 1.0], [0.0, 0.0]).unwrap();
    assert_eq!(g.data_shape(), vec![7, 5, 3]);
    let space = uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[4, 3, 2]).unwrap();
    let ray = RayTransform::new(space, g, Backend::default()).unwrap();
    assert_eq!(ray.range().shape().unwrap(), &[7, 5, 3]);
}

#[test]
fn data_space_weight_is_angle_times_pixel_cell() {
    let angles = part(&[0.2], &[2.0], &[9]);
    let space2 = uniform_discr::<f64>(&[-1.0, -2.0], &[1.0, 1.0], &[4, 6]).unwrap();
    let det1 = part(&[-1.0], &[2.0], &[12]);
    let g = Geometry::fan_flat(&angles, &det1, 5.0, 1.0, 0.0).unwrap();
    let ray = RayTransform::new(space2.clone(), g, Backend::default()).unwrap();
    let want = (1.8 / 9.0) * (3.0 / 12.0);
    assert!((ray.range().weight().unwrap() - want).abs() < 1e-15 * want);
    assert_eq!(ray.range().partition().unwrap().cell_volume(), want);

    let space3 = uniform_discr::<f64>(&[-1.0; 3], &[1.0; 3], &[3, 3, 3]).unwrap();
    let det2 = part(&[-1.0, 0.0], &[2.0, 0.5], &[12, 5]);
    let g = Geometry::parallel_3d(&angles, &det2, [1.0, 1.0, 0.0], [0.1, 0.2]).unwrap();
    let ray = RayTransform::new(space3.clone(), g, Backend::default()).unwrap();
    let want = (1.8 / 9.0) * (3.0 / 12.0) * (0.5 / 5.0);
    assert!((ray.range().weight().unwrap() - want).abs() < 1e-15 * want);

    // A vector geometry: unit weight per view times the first view's pixel area.
    let view = View {
        src: [0.0, 0.0, 1.0],
        det_center: [0.0; 3],
        det_u: [0.3, 0.4, 0.0],
        det_v: [0.0, 0.0, 0.2],
    };
    let vg = VecGeometry::new(3, Beam::Parallel, &[4, 5], vec![view; 3]).unwrap();
    let g = Geometry::from_vec(vg).unwrap();
    let ray = RayTransform::new(space3, g, Backend::default()).unwrap();
    assert!((ray.range().weight().unwrap() - 0.5 * 0.2).abs() < 1e-15);
    assert_eq!(ray.range().shape().unwrap(), &[3, 4, 5]);
}

#[test]
fn parallel_beam_geometry_helper_matches_odl() {
    let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[512, 512]).unwrap();
    let g = parallel_beam_geometry(&space, Some(512)).unwrap();
    assert_eq!(g.data_shape(), vec![512, 727]);
    let p = g.data_partition();
    let r = 2f64.sqrt();
    assert!((p.min_pt()[1] + r).abs() < 1e-12, "{:?}", p.min_pt());
    assert!((p.max_pt()[1] - r).abs() < 1e-12, "{:?}", p.max_pt());
    assert!(p.min_pt()[0].abs() < 1e-15 && (p.max_pt()[0] - PI).abs() < 1e-15);
    // Default angle count: ⌈ω ρ⌉ = ⌈π/h · √2⌉ with h = 2/512.
    let g = parallel_beam_geometry(&space, None).unwrap();
    assert_eq!(g.data_shape()[0], (PI * 256.0 * r).ceil() as usize);
}

// ---------------------------------------------------------------------------------------------
// Single-point phantoms
// ---------------------------------------------------------------------------------------------

/// A volume that is zero except for the voxel `idx`, and that voxel's centre.
fn point_phantom(space: &Space<f64>, idx: &[usize]) -> (rodl::Element<f64>, Vec<f64>) {
    let shape = space.shape().unwrap().to_vec();
    let mut flat = 0;
    for (k, &i) in idx.iter().enumerate() {
        flat = flat * shape[k] + i;
    }
    let mut data = vec![0.0; space.size()];
    data[flat] = 1.0;
    let h = space.cell_sides().unwrap();
    let lo = space.min_pt().unwrap();
    let centre = idx
        .iter()
        .enumerate()
        .map(|(k, &i)| lo[k] + (i as f64 + 0.5) * h[k])
        .collect();
    (space.element_from_vec(data).unwrap(), centre)
}

/// Centroid and arg-max (as fractional/integer indices) of a non-negative 1D profile.
fn centroid_argmax(p: &[f64]) -> (f64, usize) {
    let s: f64 = p.iter().sum();
    assert!(s > 0.0, "the point was not seen");
    let c = p.iter().enumerate().map(|(i, v)| i as f64 * v).sum::<f64>() / s;
    let m = (0..p.len())
        .max_by(|&a, &b| p[a].partial_cmp(&p[b]).unwrap())
        .unwrap();
    (c, m)
}

#[test]
fn point_projects_onto_the_predicted_parallel2d_pixel() {
    let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[21, 21]).unwrap();
    let (x, p) = point_phantom(&space, &[15, 6]);
    // Pixels a quarter of a voxel wide, so that sums over the detector approximate integrals.
    let (dmin, dmax, nu, offset) = (-1.5, 1.5, 127usize, 0.13);
    let du = (dmax - dmin) / nu as f64;
    let angles = part(&[0.0], &[2.0 * PI], &[12]);
    let g = Geometry::parallel_2d_offset(&angles, &part(&[dmin], &[dmax], &[nu]), offset).unwrap();
    let ray = RayTransform::new(space.clone(), g, Backend::default()).unwrap();
    let y = ray.apply(&x).unwrap();
    let y = y.as_slice().unwrap();
    let h = space.cell_sides().unwrap();
    let (mut worst_c, mut worst_mass) = (0.0f64, 0.0f64);
    for k in 0..12 {
        let t = (k as f64 + 0.5) * PI / 6.0;
        // u coordinate of the point: its component along e_u = (cos θ, sin θ).
        let u = p[0] * t.cos() + p[1] * t.sin();
        let want = (u - offset - dmin) / du - 0.5;
        let row = &y[k * nu..(k + 1) * nu];
        let (c, m) = centroid_argmax(row);
        assert!(
            (c - want).abs() < 0.1,
            "view {k}: centroid {c}, want {want}"
        );
        assert!(
            (m as f64 - want).abs() <= 1.0,
            "view {k}: argmax {m}, want {want}"
        );
        // Line integrals in world units: ∫ (Ax)(θ, u) du ≈ ∫ x = voxel area.
        let mass = row.iter().sum::<f64>() * du;
        worst_c = worst_c.max((c - want).abs());
        worst_mass = worst_mass.max((mass / (h[0] * h[1]) - 1.0).abs());
        assert!(
            (mass / (h[0] * h[1]) - 1.0).abs() < 0.05,
            "view {k}: mass {mass}"
        );
    }
    eprintln!(
        "parallel2d point: worst centroid offset {worst_c:.3} px (pixel {du:.4}), worst mass error {worst_mass:.2e}"
    );
}

#[test]
fn point_projects_onto_the_predicted_fan_pixel() {
    let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[21, 21]).unwrap();
    let (x, p) = point_phantom(&space, &[4, 13]);
    let (rs, rd, dmin, dmax, nu, offset) = (3.0, 2.0, -3.0, 3.0, 41usize, -0.2);
    let du = (dmax - dmin) / nu as f64;
    let angles = part(&[0.0], &[2.0 * PI], &[10]);
    let g = Geometry::fan_flat(&angles, &part(&[dmin], &[dmax], &[nu]), rs, rd, offset).unwrap();
    let ray = RayTransform::new(space, g, Backend::default()).unwrap();
    let y = ray.apply(&x).unwrap();
    let y = y.as_slice().unwrap();
    let mut worst = 0.0f64;
    for k in 0..10 {
        let t = (k as f64 + 0.5) * PI / 5.0;
        let (eu, en) = ([t.cos(), t.sin()], [-t.sin(), t.cos()]);
        // Magnified position of the point on the detector line.
        let pu = p[0] * eu[0] + p[1] * eu[1];
        let pn = p[0] * en[0] + p[1] * en[1];
        let u = pu * (rs + rd) / (rs + pn);
        let want = (u - offset - dmin) / du - 0.5;
        let (c, m) = centroid_argmax(&y[k * nu..(k + 1) * nu]);
        worst = worst.max((c - want).abs());
        assert!(
            (c - want).abs() < 0.3,
            "view {k}: centroid {c}, want {want}"
        );
        assert!(
            (m as f64 - want).abs() <= 1.0,
            "view {k}: argmax {m}, want {want}"
        );
    }
    eprintln!("fanflat point: worst centroid offset {worst:.3} px");
}

#[test]
fn point_projects_onto_the_predicted_cone_pixel() {
    let space = uniform_discr::<f64>(&[-1.0; 3], &[1.0; 3], &[12, 12, 12]).unwrap();
    let (x, p) = point_phantom(&space, &[8, 3, 9]);
    let (rs, rd) = (3.0, 2.0);
    let (umin, umax, nu) = (-2.5, 2.5, 40usize);
    let (vmin, vmax, nv) = (-2.0, 2.0, 32usize);
    let (du, dv) = ((umax - umin) / nu as f64, (vmax - vmin) / nv as f64);
    let offset = [0.1, -0.15];
    let mut worst = 0.0f64;
    for pitch in [0.0, 0.5] {
        let angles = part(&[0.0], &[2.0 * PI], &[6]);
        let det = part(&[umin, vmin], &[umax, vmax], &[nu, nv]);
        let g = Geometry::cone_flat(&angles, &det, rs, rd, pitch, [0.0, 0.0, 1.0], offset).unwrap();
        let ray = RayTransform::new(space.clone(), g, Backend::default()).unwrap();
        let y = ray.apply(&x).unwrap();
        let y = y.as_slice().unwrap();
        for k in 0..6 {
            let t = (k as f64 + 0.5) * PI / 3.0;
            let z = pitch * t / (2.0 * PI);
            let (eu, en) = ([t.cos(), t.sin()], [-t.sin(), t.cos()]);
            let pu = p[0] * eu[0] + p[1] * eu[1];
            let pn = p[0] * en[0] + p[1] * en[1];
            let mag = (rs + rd) / (rs + pn);
            let (u, v) = (pu * mag, (p[2] - z) * mag);
            let want = [
                (u - offset[0] - umin) / du - 0.5,
                (v - offset[1] - vmin) / dv - 0.5,
            ];
            let img = &y[k * nu * nv..(k + 1) * nu * nv];
            let prof_u: Vec<f64> = (0..nu)
                .map(|i| img[i * nv..(i + 1) * nv].iter().sum())
                .collect();
            let prof_v: Vec<f64> = (0..nv)
                .map(|j| (0..nu).map(|i| img[i * nv + j]).sum())
                .collect();
            for (axis, prof) in [prof_u, prof_v].iter().enumerate() {
                let (c, m) = centroid_argmax(prof);
                let w = want[axis];
                worst = worst.max((c - w).abs());
                assert!(
                    (c - w).abs() < 0.15,
                    "pitch {pitch}, view {k}, axis {axis}: centroid {c}, want {w}"
                );
                assert!(
                    (m as f64 - w).abs() <= 1.0,
                    "pitch {pitch}, view {k}, axis {axis}: argmax {m}, want {w}"
                );
            }
        }
    }
    eprintln!("cone point (circular and helical): worst centroid offset {worst:.3} px");
}

// ---------------------------------------------------------------------------------------------
// Geometry JSON
// ---------------------------------------------------------------------------------------------

const SPECS: &[&str] = &[
    r#"{"volume": {"min_pt": [-1, -2], "max_pt": [1, 1], "shape": [16, 12]},
        "geometry": {"kind": "parallel2d", "angles": {"min": 0, "max": 3.0, "count": 10},
                     "detector": {"min": [-2], "max": [2.5], "shape": [20]}, "det_offset": [0.1]}}"#,
    r#"{"volume": {"min_pt": [-1, -1], "max_pt": [1, 1], "shape": [8, 8]},
        "geometry": {"kind": "fanflat", "angles": {"min": 0, "max": 6.28, "count": 12},
                     "detector": {"min": [-3], "max": [3], "shape": [24]},
                     "src_radius": 4, "det_radius": 2}}"#,
    r#"{"volume": {"min_pt": [-1, -1, -1], "max_pt": [1, 1, 1], "shape": [4, 5, 6]},
        "geometry": {"kind": "parallel3d", "angles": {"min": 0, "max": 3.14, "count": 5},
                     "detector": {"min": [-2, -1], "max": [2, 1], "shape": [8, 4]},
                     "axis": [0, 1, 1], "det_offset": [0.1, -0.2]}}"#,
    r#"{"volume": {"min_pt": [-1, -1, -1], "max_pt": [1, 1, 1], "shape": [4, 4, 4]},
        "geometry": {"kind": "cone", "angles": {"min": 0, "max": 12.5, "count": 7},
                     "detector": {"min": [-3, -2], "max": [3, 2], "shape": [10, 6]},
                     "src_radius": 5, "det_radius": 1.5, "pitch": 0.7}}"#,
    r#"{"volume": {"min_pt": [-1, -1], "max_pt": [1, 1], "shape": [8, 8]},
        "geometry": {"kind": "vec", "beam": "point", "detector": {"shape": [6]},
                     "views": [{"src": [0, -4], "det_center": [0, 2], "det_u": [0.5, 0]},
                               {"src": [4, 0], "det_center": [-2, 0], "det_u": [0, 0.5]}]}}"#,
    r#"{"volume": {"min_pt": [-1, -1, -1], "max_pt": [1, 1, 1], "shape": [4, 4, 4]},
        "geometry": {"kind": "vec", "beam": "parallel", "detector": {"shape": [6, 3]},
                     "views": [{"src": [0, 1, 0], "det_center": [0, 0, 0], "det_u": [0.5, 0, 0],
                                "det_v": [0, 0, 0.5]}]}}"#,
];

#[test]
fn json_round_trip() {
    for text in SPECS {
        let spec = TomoSpec::from_json(text).unwrap();
        let back = TomoSpec::from_json(&spec.to_json().unwrap()).unwrap();
        assert_eq!(back, spec);
        let g = spec.geometry.build().unwrap();
        assert_eq!(g.spec(), Some(&spec.geometry));
        assert_eq!(back.geometry.build().unwrap(), g);
        // The geometry fits the volume: the ray transform builds and applies.
        let space = spec.volume.space::<f64>().unwrap();
        let ray = RayTransform::new(space.clone(), g, Backend::cpu_threads(1)).unwrap();
        ray.apply(&space.one().unwrap()).unwrap();
    }
}

#[test]
fn json_matches_direct_construction() {
    let spec = TomoSpec::from_json(SPECS[3]).unwrap();
    assert_eq!(spec.geometry.kind, GeometryKind::Cone);
    let direct = Geometry::cone_flat(
        &part(&[0.0], &[12.5], &[7]),
        &part(&[-3.0, -2.0], &[3.0, 2.0], &[10, 6]),
        5.0,
        1.5,
        0.7,
        [0.0, 0.0, 1.0],
        [0.0, 0.0],
    )
    .unwrap();
    let g = spec.geometry.build().unwrap();
    assert_eq!(g.vec(), direct.vec());
    assert_eq!(g.data_partition(), direct.data_partition());
}

#[test]
fn odl_reference_specs_parse_and_round_trip() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/odl");
    let mut n = 0;
    for name in [
        "par2d_64",
        "fan2d_64",
        "par3d_32",
        "cone3d_32",
        "helical_32",
    ] {
        let path = dir.join(format!("{name}.json"));
        assert!(
            path.exists(),
            "missing ODL reference spec {}",
            path.display()
        );
        let spec = TomoSpec::from_file(&path).unwrap();
        assert_eq!(TomoSpec::from_json(&spec.to_json().unwrap()).unwrap(), spec);
        spec.geometry.build().unwrap();
        n += 1;
    }
    assert!(n > 0, "no ODL reference specs in {}", dir.display());
    let missing = TomoSpec::from_file(dir.join("no_such_file.json"));
    assert!(matches!(missing, Err(Error::Io { .. })), "{missing:?}");
}

fn config_err(text: &str) -> String {
    match TomoSpec::from_json(text) {
        Err(Error::Config(m)) => m,
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

fn build_err(text: &str) -> String {
    let spec = TomoSpec::from_json(text).unwrap();
    match spec.geometry.build() {
        Err(e) => e.to_string(),
        Ok(g) => panic!(
            "expected an error, got a geometry of shape {:?}",
            g.data_shape()
        ),
    }
}

/// `SPECS[0]` with `from` replaced by `to`.
fn edit(k: usize, from: &str, to: &str) -> String {
    assert!(SPECS[k].contains(from), "{from} not in spec {k}");
    SPECS[k].replacen(from, to, 1)
}

#[test]
fn json_unknown_keys_are_errors() {
    let m = config_err(&edit(1, r#""src_radius""#, r#""src_radus""#));
    assert!(m.contains("src_radus"), "{m}");
    let m = config_err(&edit(
        0,
        r#""shape": [16, 12]"#,
        r#""shape": [16, 12], "dtype": "f4""#,
    ));
    assert!(m.contains("dtype"), "{m}");
    let m = config_err(&edit(0, r#""count": 10"#, r#""count": 10, "step": 1"#));
    assert!(m.contains("step"), "{m}");
    let m = config_err(&edit(0, r#""geometry""#, r#""backend": "cpu", "geometry""#));
    assert!(m.contains("backend"), "{m}");
    let m = config_err(&edit(0, r#""kind": "parallel2d""#, r#""kind": "parallel""#));
    assert!(m.contains("parallel"), "{m}");
}

#[test]
fn json_missing_keys_are_named() {
    let m = config_err(&edit(0, r#""kind": "parallel2d", "#, ""));
    assert!(m.contains("kind"), "{m}");
    let m = config_err(&edit(0, r#", "count": 10"#, ""));
    assert!(m.contains("count"), "{m}");
    let m = config_err(&edit(0, r#""shape": [16, 12]"#, r#""shape_": [16, 12]"#));
    assert!(m.contains("shape"), "{m}");
    assert!(
        config_err(r#"{"volume": {"min_pt": [0], "max_pt": [1], "shape": [1]}}"#)
            .contains("geometry")
    );
    // Keys that only some kinds need are named when the geometry is built.
    let m = build_err(&edit(1, r#""src_radius": 4, "#, ""));
    assert!(m.contains("src_radius"), "{m}");
    let m = build_err(&edit(3, r#", "det_radius": 1.5"#, ""));
    assert!(m.contains("det_radius"), "{m}");
    let m = build_err(&edit(
        0,
        r#""angles": {"min": 0, "max": 3.0, "count": 10},"#,
        "",
    ));
    assert!(m.contains("angles"), "{m}");
    let m = build_err(&edit(0, r#""min": [-2], "#, ""));
    assert!(m.contains("detector.min"), "{m}");
    let m = build_err(&edit(4, r#""beam": "point", "#, ""));
    assert!(m.contains("beam"), "{m}");
    let m = build_err(&edit(5, r#""det_v": [0, 0, 0.5]"#, r#""det_v": null"#));
    assert!(m.contains("det_v"), "{m}");
}

#[test]
fn json_inconsistent_geometries_are_errors() {
    let cases = [
        // Kind vs detector dimension.
        edit(0, r#""shape": [20]"#, r#""shape": [20, 4]"#),
        edit(3, r#""shape": [10, 6]"#, r#""shape": [10]"#),
        // Keys that do not belong to the kind.
        edit(0, r#""det_offset""#, r#""src_radius": 3, "det_offset""#),
        edit(1, r#""src_radius""#, r#""pitch": 1, "src_radius""#),
        edit(1, r#""src_radius""#, r#""axis": [0, 0, 1], "src_radius""#),
        edit(0, r#""det_offset": [0.1]"#, r#""det_offset": [0.1, 0.2]"#),
        // Invalid values.
        edit(1, r#""src_radius": 4"#, r#""src_radius": 0"#),
        edit(1, r#""src_radius": 4"#, r#""src_radius": -4"#),
        edit(1, r#""det_radius": 2"#, r#""det_radius": -1"#),
        edit(2, r#""axis": [0, 1, 1]"#, r#""axis": [0, 0, 0]"#),
        edit(0, r#""count": 10"#, r#""count": 0"#),
        edit(0, r#""shape": [20]"#, r#""shape": [0]"#),
        edit(0, r#""max": 3.0"#, r#""max": -1.0"#),
        edit(
            0,
            r#""min": [-2], "max": [2.5]"#,
            r#""min": [2.5], "max": [-2]"#,
        ),
        edit(4, r#""beam": "point""#, r#""beam": "pencil""#),
        edit(4, r#""det_u": [0.5, 0]}"#, r#""det_u": [0, 0]}"#),
        edit(4, r#""det_u": [0.5, 0]}"#, r#""det_u": [0.5, 0, 0]}"#),
        format!(
            "{}\"views\": []}}}}",
            &SPECS[4][..SPECS[4].find("\"views\"").unwrap()]
        ),
        edit(5, r#""src": [0, 1, 0]"#, r#""src": [0, 0, 0]"#),
        edit(5, r#""shape": [6, 3]"#, r#""shape": [6, 3, 2]"#),
        edit(5, r#""shape": [6, 3]"#, r#""shape": [6, 0]"#),
        // Keys of the other kinds in a vec geometry, and vec keys in the other kinds: an error
        // rather than silently ignored.
        edit(
            4,
            r#""beam""#,
            r#""angles": {"min": 0, "max": 1, "count": 2}, "beam""#,
        ),
        edit(
            4,
            r#""beam""#,
            r#""src_radius": 3, "det_radius": 1, "beam""#,
        ),
        edit(4, r#""beam""#, r#""det_offset": [0.5], "beam""#),
        edit(5, r#""beam""#, r#""axis": [1, 0, 0], "beam""#),
        edit(5, r#""beam""#, r#""pitch": 1, "beam""#),
        edit(1, r#""src_radius""#, r#""beam": "point", "src_radius""#),
        edit(0, r#""det_offset""#, r#""views": [], "det_offset""#),
    ];
    for text in &cases {
        // Either parsing or building must fail, with a message, never a panic.
        let r = catch_unwind(|| TomoSpec::from_json(text).and_then(|s| s.geometry.build()));
        match r {
            Ok(Err(e)) => assert!(!e.to_string().is_empty()),
            Ok(Ok(_)) => panic!("accepted an invalid geometry:\n{text}"),
            Err(_) => panic!("panicked on:\n{text}"),
        }
    }
}

#[test]
fn json_volume_and_geometry_dimension_mismatch_is_an_error() {
    // A 2D geometry with a 3D volume, and a 3D geometry with a 2D volume.
    let spec2 = TomoSpec::from_json(SPECS[0]).unwrap();
    let spec3 = TomoSpec::from_json(SPECS[3]).unwrap();
    let r = RayTransform::new(
        spec3.volume.space::<f64>().unwrap(),
        spec2.geometry.build().unwrap(),
        Backend::default(),
    );
    assert!(matches!(r, Err(Error::Geometry(_))), "{:?}", r.err());
    let r = RayTransform::new(
        spec2.volume.space::<f32>().unwrap(),
        spec3.geometry.build().unwrap(),
        Backend::default(),
    );
    assert!(matches!(r, Err(Error::Geometry(_))), "{:?}", r.err());
    // A non-discretised domain.
    let r = RayTransform::new(
        rodl::rn::<f64>(&[8, 8]).unwrap(),
        spec2.geometry.build().unwrap(),
        Backend::default(),
    );
    assert!(r.is_err());
}

// ---------------------------------------------------------------------------------------------
// Errors of the direct constructors and the backends
// ---------------------------------------------------------------------------------------------

#[test]
fn invalid_geometries_are_errors() {
    let a = part(&[0.0], &[PI], &[4]);
    let d1 = part(&[-1.0], &[1.0], &[8]);
    let d2 = part(&[-1.0, -1.0], &[1.0, 1.0], &[8, 4]);
    let z = [0.0, 0.0, 1.0];
    let geo = |r: rodl::Result<Geometry>| matches!(r, Err(Error::Geometry(_)));
    // Radii.
    for (rs, rd) in [
        (0.0, 1.0),
        (-1.0, 1.0),
        (f64::NAN, 1.0),
        (f64::INFINITY, 1.0),
        (2.0, -0.5),
        (2.0, f64::NAN),
    ] {
        assert!(geo(Geometry::fan_flat(&a, &d1, rs, rd, 0.0)), "{rs} {rd}");
        assert!(geo(Geometry::cone_flat(&a, &d2, rs, rd, 0.0, z, [0.0; 2])));
    }
    // Axis and pitch.
    for axis in [[0.0; 3], [f64::NAN, 0.0, 1.0], [f64::INFINITY, 0.0, 0.0]] {
        assert!(geo(Geometry::parallel_3d(&a, &d2, axis, [0.0; 2])));
        assert!(geo(Geometry::cone_flat(
            &a, &d2, 3.0, 1.0, 0.0, axis, [0.0; 2]
        )));
    }
    assert!(geo(Geometry::cone_flat(
        &a,
        &d2,
        3.0,
        1.0,
        f64::NAN,
        z,
        [0.0; 2]
    )));
    // Partitions of the wrong dimension.
    assert!(geo(Geometry::parallel_2d(&a, &d2)));
    assert!(geo(Geometry::fan_flat(&a, &d2, 3.0, 1.0, 0.0)));
    assert!(geo(Geometry::parallel_3d(&a, &d1, z, [0.0; 2])));
    assert!(geo(Geometry::cone_flat(
        &a, &d1, 3.0, 1.0, 0.0, z, [0.0; 2]
    )));
    assert!(geo(Geometry::parallel_2d(&d2, &d1)));
    // Zero counts never make a partition.
    assert!(UniformPartition::new(&[0.0], &[PI], &[0]).is_err());
    assert!(UniformPartition::new(&[-1.0, -1.0], &[1.0, 1.0], &[4, 0]).is_err());
    // Vector geometries.
    let view = View {
        src: [0.0, 1.0, 0.0],
        det_center: [0.0; 3],
        det_u: [0.1, 0.0, 0.0],
        det_v: [0.0, 0.0, 0.1],
    };
    let vg = |ndim, beam, shape: &[usize], views: Vec<View>| {
        matches!(
            VecGeometry::new(ndim, beam, shape, views),
            Err(Error::Geometry(_))
        )
    };
    assert!(vg(3, Beam::Point, &[4, 4], vec![]));
    assert!(vg(3, Beam::Point, &[4, 0], vec![view]));
    assert!(vg(3, Beam::Point, &[4], vec![view]));
    assert!(vg(2, Beam::Point, &[4, 4], vec![view]));
    assert!(vg(4, Beam::Point, &[4, 4, 4], vec![view]));
    assert!(vg(1, Beam::Point, &[], vec![view]));
    let bad = |f: fn(&mut View)| {
        let mut v = view;
        f(&mut v);
        vec![view, v]
    };
    assert!(vg(3, Beam::Parallel, &[4, 4], bad(|v| v.src = [0.0; 3])));
    assert!(vg(3, Beam::Point, &[4, 4], bad(|v| v.det_u = [0.0; 3])));
    assert!(vg(3, Beam::Point, &[4, 4], bad(|v| v.det_v = [0.0; 3])));
    assert!(vg(
        3,
        Beam::Point,
        &[4, 4],
        bad(|v| v.det_center[1] = f64::NAN)
    ));
    assert!(vg(2, Beam::Point, &[4], bad(|v| v.src[0] = f64::INFINITY)));
    // In 2D only the first two components count.
    assert!(vg(
        2,
        Beam::Parallel,
        &[4],
        bad(|v| v.src = [0.0, 0.0, 1.0])
    ));
    assert!(vg(2, Beam::Point, &[4], bad(|v| v.det_u = [0.0, 0.0, 1.0])));
    // Helpers: a cone source inside the volume.
    let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[8, 8]).unwrap();
    assert!(geo(cone_beam_geometry(&space, 1.2, 1.0, Some(8))));
    let ok = cone_beam_geometry(&space, 1.5, 1.0, Some(8)).unwrap();
    assert_eq!(ok.data_shape()[0], 8);
    let line = uniform_discr::<f64>(&[-1.0], &[1.0], &[8]).unwrap();
    assert!(parallel_beam_geometry(&line, Some(8)).is_err());
}

fn small_case() -> (Space<f64>, Geometry) {
    let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[8, 8]).unwrap();
    let g = parallel_beam_geometry(&space, Some(6)).unwrap();
    (space, g)
}

#[test]
fn cpu_backend_with_zero_threads_is_an_error() {
    let (space, g) = small_case();
    let r = RayTransform::new(space.clone(), g.clone(), Backend::cpu_threads(0));
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{:?}", r.err());
    for n in [1, 3] {
        let ray = RayTransform::new(space.clone(), g.clone(), Backend::cpu_threads(n)).unwrap();
        ray.apply(&space.one().unwrap()).unwrap();
    }
}

#[test]
fn cuda_backend_never_panics() {
    let (space, g) = small_case();
    for device in [0, 1, 4096] {
        let r = catch_unwind(AssertUnwindSafe(|| {
            RayTransform::new(space.clone(), g.clone(), Backend::cuda(device))
        }))
        .unwrap_or_else(|_| panic!("Backend::cuda({device}) panicked"));
        if !cfg!(feature = "cuda") {
            assert!(
                matches!(r, Err(Error::CudaUnavailable(_))),
                "cuda({device}) without the feature: {:?}",
                r.err()
            );
        } else if device == 4096 {
            assert!(r.is_err(), "cuda:4096 accepted");
        }
    }
    let r = catch_unwind(AssertUnwindSafe(|| {
        RayTransform::new(space.with_scalar::<f32>(), g.clone(), Backend::cuda(0)).map(|_| ())
    }))
    .expect("panicked");
    if !cfg!(feature = "cuda") {
        assert!(r.is_err());
    }
}

/// A CUDA-resident domain needs the CUDA backend on the same device: the CPU backend or a CUDA
/// backend on another GPU is a device-mismatch error. Runs only where a CUDA space can be made
/// (feature `cuda` and a GPU); elsewhere it checks that the space cannot be made.
#[test]
fn device_space_with_mismatched_backend_is_an_error() {
    let (space, g) = small_case();
    let space = space.with_scalar::<f32>();
    let cuda = match catch_unwind(|| space.with_device(Device::Cuda(0))).expect("panicked") {
        Ok(s) => s,
        Err(e) => {
            assert!(matches!(e, Error::CudaUnavailable(_)), "{e:?}");
            eprintln!("no CUDA space available ({e}); device-mismatch checks skipped");
            return;
        }
    };
    let r = RayTransform::new(cuda.clone(), g.clone(), Backend::default());
    assert!(
        matches!(r, Err(Error::DeviceMismatch { .. })),
        "{:?}",
        r.err()
    );
    let r = RayTransform::new(cuda.clone(), g.clone(), Backend::cuda(1));
    assert!(
        matches!(r, Err(Error::DeviceMismatch { .. })),
        "{:?}",
        r.err()
    );
    // A host-domain operator refuses device-resident input.
    let host = RayTransform::new(space.clone(), g, Backend::default()).unwrap();
    let x = cuda.one().unwrap();
    assert!(host.apply(&x).is_err());
}

#[test]
fn sizes_that_cannot_fit_are_errors_not_aborts() {
    // 1e12 views: the views are checked before they are computed.
    let angles = UniformPartition::new(&[0.0], &[3.0], &[1_000_000_000_000]).unwrap();
    let det = UniformPartition::new(&[-1.0], &[1.0], &[8]).unwrap();
    let e = Geometry::parallel_2d(&angles, &det).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    assert!(e.to_string().contains("1000000000000 views"), "{e}");
    // A volume of a million squared: the space exists, its elements cannot.
    let space =
        rodl::uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[1_000_000, 1_000_000]).unwrap();
    for r in [space.zero(), space.one(), space.element_from_fn(|_| 0.0)] {
        let e = r.err().unwrap();
        assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
        assert!(e.to_string().contains("[1000000, 1000000]"), "{e}");
    }
    let e = rodl::tomo::phantom::shepp_logan(&space, true).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
}

#[test]
fn json_numbers_read_exactly_and_messages_name_the_key() {
    // Floats round-trip exactly (the last digit counts).
    let x = 0.1f64 + 0.2;
    let text = format!(
        r#"{{"volume":{{"min_pt":[-1,-1],"max_pt":[{x},1],"shape":[4,4]}},
        "geometry":{{"kind":"parallel2d","angles":{{"min":0,"max":{x},"count":90.0}},
        "detector":{{"min":[-1.5],"max":[1.5],"shape":[5.0]}}}}}}"#
    );
    let spec = TomoSpec::from_json(&format!("\u{feff}{text}")).unwrap();
    assert_eq!(spec.volume.max_pt[0], x);
    assert_eq!(spec.geometry.angles.as_ref().unwrap().max, x);
    assert_eq!(spec.geometry.angles.as_ref().unwrap().count, 90);
    let m = config_err(&text.replace("\"count\":90.0", "\"count\":90.5"));
    assert!(
        m.starts_with("`geometry.angles.count`: expected a whole number"),
        "{m}"
    );
    let m = config_err(r#"{"volume": 1, "geometry": {}}"#);
    assert!(m.contains("`volume`") && !m.contains("VolumeSpec"), "{m}");
    let spec = TomoSpec::from_json(&text.replace("\"min\":0", "\"min\":-1e300")).unwrap();
    let e = spec.geometry.build().unwrap_err().to_string();
    assert!(e.contains("`geometry.angles.min` is -1e300"), "{e}");
}

/// Guards the curved constructors' errors (issue #35): bad radii, ODL's unequal pairs, a fan
/// arc's partition beyond a full circle, a sphere's latitudes beyond a pole, and the flying focal
/// spot's misuse (parallel beams, vector geometries, non-finite or axial offsets in 2D); each
/// an `Error::Geometry`, never a panic. Also: `cone_curved` with `[None, None]` is `cone_flat`,
/// and a single-point phantom at the centre lands on the centre pixel of an arc about the source.
#[test]
fn curved_constructor_errors_and_flat_pairs() {
    let ang = part(&[0.0], &[2.0 * PI], &[8]);
    let arc = part(&[-0.5], &[0.5], &[11]);
    let det = part(&[-0.5, -1.0], &[0.5, 1.0], &[11, 6]);
    let bad = |r: rodl::Result<Geometry>, what: &str| match r {
        Err(Error::Geometry(m)) => assert!(!m.is_empty(), "{what}"),
        other => panic!("{what}: expected Error::Geometry, got {other:?}"),
    };
    for r in [0.0, -2.0, f64::NAN, f64::INFINITY] {
        let got = catch_unwind(|| Geometry::fan_curved(&ang, &arc, 4.0, 2.0, r, 0.0)).unwrap();
        if r.is_infinite() {
            // An infinite radius is ODL's flat detector.
            assert!(!got.unwrap().vec().detector().is_curved());
        } else {
            bad(got, &format!("fan radius {r}"));
        }
    }
    bad(
        Geometry::fan_curved(&ang, &arc, 4.0, 2.0, 6.0, f64::NAN),
        "NaN offset",
    );
    bad(
        Geometry::fan_curved(&ang, &part(&[-3.3], &[3.3], &[11]), 4.0, 2.0, 6.0, 0.0),
        "arc beyond 2π",
    );
    let cone = |radii, det: &UniformPartition| {
        Geometry::cone_curved(&ang, det, 4.0, 2.0, radii, 0.0, [0.0, 0.0, 1.0], [0.0; 2])
    };
    bad(cone([Some(6.0), Some(5.0)], &det), "unequal radii");
    bad(cone([None, Some(5.0)], &det), "flat along u");
    bad(
        cone(
            [Some(6.0), Some(6.0)],
            &part(&[-0.5, -0.2], &[0.5, 1.6], &[11, 6]),
        ),
        "beyond the pole",
    );
    // Latitudes off the equator (ODL allows them): sub-geometries keep the frames, ray for ray.
    let sphere = cone(
        [Some(6.0), Some(6.0)],
        &part(&[-0.5, -0.2], &[0.5, 0.6], &[11, 6]),
    )
    .unwrap();
    let sub = sphere.select_views(2..5).unwrap();
    for k in 0..3 {
        for (iu, iv) in [(0, 0), (10, 5), (4, 2)] {
            assert_eq!(sub.vec().ray(k, iu, iv), sphere.vec().ray(k + 2, iu, iv));
        }
    }
    let flat = Geometry::cone_flat(&ang, &det, 4.0, 2.0, 0.0, [0.0, 0.0, 1.0], [0.0; 2]).unwrap();
    assert_eq!(cone([None, None], &det).unwrap().vec(), flat.vec());

    let par = Geometry::parallel_2d(&ang, &arc).unwrap();
    bad(par.with_src_offsets(&[[0.1, 0.0, 0.0]]), "parallel beam");
    let fan = Geometry::fan_curved(&ang, &arc, 4.0, 2.0, 6.0, 0.0).unwrap();
    bad(fan.with_src_offsets(&[[f64::NAN, 0.0, 0.0]]), "NaN offset");
    bad(
        fan.with_src_offsets(&[[0.0, 0.0, 0.1]]),
        "axial offset in 2D",
    );
    let v = Geometry::from_vec(fan.vec().clone()).unwrap();
    bad(v.with_src_offsets(&[[0.1, 0.0, 0.0]]), "vector geometry");
    assert_eq!(fan.with_src_offsets(&[]).unwrap().vec(), fan.vec());
    // A curved detector with a parallel beam is refused by the vector form.
    let pv = par.vec().clone();
    bad(
        pv.with_detector(rodl::tomo::Detector::Cylindrical { radius: 5.0 })
            .and_then(Geometry::from_vec),
        "parallel beam",
    );

    // The arc about the source (radius src + det): the centre pixel's ray passes the origin.
    let arc = part(&[-0.5], &[0.5], &[11]);
    let g = Geometry::fan_curved(&ang, &arc, 4.0, 2.0, 6.0, 0.0).unwrap();
    for k in 0..8 {
        let (q, d) = g.vec().ray(k, 5, 0);
        let src = g.vec().views()[k].src;
        // Every pixel at distance 6 from the source: equiangular.
        for iu in 0..11 {
            let (p, _) = g.vec().ray(k, iu, 0);
            let r = ((p[0] - src[0]).powi(2) + (p[1] - src[1]).powi(2)).sqrt();
            assert!((r - 6.0).abs() < 1e-13, "view {k} pixel {iu}: {r}");
        }
        let cross = q[0] * d[1] - q[1] * d[0];
        assert!(
            cross.abs() < 1e-12,
            "view {k}: the central ray misses the origin"
        );
    }
}
