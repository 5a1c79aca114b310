//! Geometries and geometry helpers against ODL 1.0's own numbers, not against rodl's code:
//! `tests/data/odl/geometry_positions.json` and `geometry_helpers.json`, written by
//! `tests/data/odl/make_geometry_reference.py` with ODL's `src_position`, `det_to_src`,
//! `det_point_position`, `parallel_beam_geometry` and `cone_beam_geometry`.
//!
//! The scans start at angles other than 0 (helical ones too), so that a lift or rotation
//! measured from the first angle instead of ODL's absolute angle shows.

use std::f64::consts::PI;
use std::path::PathBuf;

use rodl::tomo::{cone_beam_geometry, parallel_beam_geometry, Beam, Geometry, TomoSpec};
use rodl::{uniform_discr, UniformPartition};
use serde_json::Value;

fn load(name: &str) -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/odl")
        .join(name);
    assert!(p.exists(), "missing ODL reference file {}", p.display());
    let text = std::fs::read_to_string(&p).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn nums(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(num).collect()
}

fn counts(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

fn vec3(v: &Value) -> [f64; 3] {
    let x = nums(v);
    [x[0], x[1], x[2]]
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn unit(a: [f64; 3]) -> [f64; 3] {
    let n = dot(a, a).sqrt();
    a.map(|x| x / n)
}

fn part(lo: &[f64], hi: &[f64], n: &[usize]) -> UniformPartition {
    UniformPartition::new(lo, hi, n).unwrap()
}

/// The largest entry of `|a − b|`, relative to `1 + |b|`.
fn diff(a: [f64; 3], b: [f64; 3]) -> f64 {
    (0..3)
        .map(|k| (a[k] - b[k]).abs() / (1.0 + b[k].abs()))
        .fold(0.0, f64::max)
}

/// The geometry of a reference case built with the Rust constructors from the numbers of its
/// spec (read here, not by the geometry-file parser).
fn constructed(spec: &Value) -> Geometry {
    let a = &spec["angles"];
    let angles = part(
        &[num(&a["min"])],
        &[num(&a["max"])],
        &[a["count"].as_u64().unwrap() as usize],
    );
    let d = &spec["detector"];
    let det = part(&nums(&d["min"]), &nums(&d["max"]), &counts(&d["shape"]));
    let off = nums(&spec["det_offset"]);
    let axis = if spec["axis"].is_null() {
        [0.0, 0.0, 1.0]
    } else {
        vec3(&spec["axis"])
    };
    let radius = |k: &str| num(&spec[k]);
    let curvature: Option<Vec<Option<f64>>> = match &spec["det_curvature_radius"] {
        Value::Null => None,
        Value::Array(r) => Some(r.iter().map(|x| x.as_f64()).collect()),
        r => Some(vec![Some(num(r))]),
    };
    let g = match (spec["kind"].as_str().unwrap(), curvature) {
        ("fanflat", Some(r)) => Geometry::fan_curved(
            &angles,
            &det,
            radius("src_radius"),
            radius("det_radius"),
            r[0].unwrap(),
            off[0],
        ),
        ("cone", Some(r)) => Geometry::cone_curved(
            &angles,
            &det,
            radius("src_radius"),
            radius("det_radius"),
            [r[0], r[1]],
            spec["pitch"].as_f64().unwrap_or(0.0),
            axis,
            [off[0], off[1]],
        ),
        (k, Some(_)) => panic!("no curved detector for {k}"),
        (k, None) => flat(k, spec, &angles, &det, &off, axis),
    }
    .unwrap();
    match spec["src_offsets"].as_array() {
        None => g,
        Some(list) => {
            let offsets: Vec<[f64; 3]> = list
                .iter()
                .map(|o| {
                    let o = nums(o);
                    [o[0], o[1], *o.get(2).unwrap_or(&0.0)]
                })
                .collect();
            g.with_src_offsets(&offsets).unwrap()
        }
    }
}

/// A flat-detector reference case built with the Rust constructors.
fn flat(
    kind: &str,
    spec: &Value,
    angles: &UniformPartition,
    det: &UniformPartition,
    off: &[f64],
    axis: [f64; 3],
) -> rodl::Result<Geometry> {
    let (angles, det) = (angles.clone(), det.clone());
    let radius = |k: &str| num(&spec[k]);
    match kind {
        "parallel2d" => Geometry::parallel_2d_offset(&angles, &det, off[0]),
        "fanflat" => Geometry::fan_flat(
            &angles,
            &det,
            radius("src_radius"),
            radius("det_radius"),
            off[0],
        ),
        "parallel3d" => Geometry::parallel_3d(&angles, &det, axis, [off[0], off[1]]),
        "cone" => Geometry::cone_flat(
            &angles,
            &det,
            radius("src_radius"),
            radius("det_radius"),
            spec["pitch"].as_f64().unwrap_or(0.0),
            axis,
            [off[0], off[1]],
        ),
        k => panic!("unknown kind {k}"),
    }
}

/// The same geometry from the geometry file (the parser, then `GeometrySpec::build`).
fn parsed(spec: &Value) -> Geometry {
    let ndim = if spec["detector"]["shape"].as_array().unwrap().len() == 1 {
        2
    } else {
        3
    };
    let text = format!(
        r#"{{"volume": {{"min_pt": {lo:?}, "max_pt": {hi:?}, "shape": {n:?}}}, "geometry": {spec}}}"#,
        lo = vec![-1.0; ndim],
        hi = vec![1.0; ndim],
        n = vec![4; ndim],
    );
    TomoSpec::from_json(&text)
        .unwrap()
        .geometry
        .build()
        .unwrap()
}

/// The largest difference of `g` from ODL's positions in one reference case: angles, sources
/// (point beams) or unit ray directions (parallel beams), and the centres of the detector's
/// corner pixels (for parallel beams across the rays only: where a parallel detector sits
/// along its rays does not matter).
fn worst_difference(g: &Geometry, case: &Value) -> f64 {
    let views = case["views"].as_array().unwrap();
    let vg = g.vec();
    assert_eq!(vg.num_views(), views.len(), "{}", case["name"]);
    let thetas = g.data_partition().coord_vector(0).unwrap();
    let mut worst: f64 = 0.0;
    for (k, v) in views.iter().enumerate() {
        worst = worst.max((thetas[k] - num(&v["angle"])).abs());
        let view = vg.views()[k];
        let ray = match vg.beam() {
            Beam::Point => {
                worst = worst.max(diff(view.src, vec3(&v["src"])));
                None
            }
            Beam::Parallel => {
                let want = vec3(&v["ray"]);
                worst = worst.max(diff(unit(view.src), want));
                Some(want)
            }
        };
        for p in v["pixels"].as_array().unwrap() {
            let idx = counts(&p["index"]);
            let (q, _) = vg.ray(k, idx[0], *idx.get(1).unwrap_or(&0));
            let want = vec3(&p["pos"]);
            let d = match ray {
                None => diff(q, want),
                Some(r) => {
                    let e = sub(q, want);
                    let t = dot(e, r);
                    diff([0, 1, 2].map(|i| e[i] - t * r[i]), [0.0; 3])
                }
            };
            worst = worst.max(d);
        }
    }
    worst
}

/// Guards ODL's conventions at each view's absolute angle for every kind (parallel 2D, fan,
/// parallel 3D about z and a tilted axis, cone, helical cone with a negative start, a negative
/// pitch and a tilted axis; with detector offsets along u and v): sources, ray directions and
/// detector pixel positions agree with ODL's to rounding, whether the geometry is built by the
/// Rust constructors or read from the geometry file.
#[test]
fn positions_match_odl_for_scans_that_start_anywhere() {
    let data = load("geometry_positions.json");
    let cases = data["cases"].as_array().unwrap();
    assert!(cases.len() >= 8, "too few cases");
    let kinds: Vec<&str> = cases
        .iter()
        .map(|c| c["spec"]["kind"].as_str().unwrap())
        .collect();
    for k in ["parallel2d", "fanflat", "parallel3d", "cone"] {
        assert!(kinds.contains(&k), "no {k} case");
    }
    for case in cases {
        let spec = &case["spec"];
        let start = num(&spec["angles"]["min"]);
        assert!(start != 0.0, "{}: starts at 0", case["name"]);
        let direct = constructed(spec);
        let from_file = parsed(spec);
        let (a, b) = (
            worst_difference(&direct, case),
            worst_difference(&from_file, case),
        );
        println!(
            "{}: constructor {a:.1e}, geometry file {b:.1e}",
            case["name"]
        );
        assert!(a <= 1e-12, "{}: constructor off ODL by {a:e}", case["name"]);
        assert!(
            b <= 1e-12,
            "{}: geometry file off ODL by {b:e}",
            case["name"]
        );
    }
}

/// Guards the curved detectors' conventions against ODL 1.0 (`det_curvature_radius`: a fan's
/// arc, cone beams' cylinders `(r, None)` and spheres `(r, r)`, circular and helical, tilted
/// axis, detector offsets, asymmetric partitions, ODL's docstring example) and the flying focal
/// spot (`src_shift_func=flying_focal_spot(...)` as `src_offsets`): every pixel of every view,
/// and every source, agree with ODL's `det_point_position` and `src_position` to rounding,
/// from the constructors and from the geometry file.
#[test]
fn curved_positions_match_odl() {
    let data = load("curved_positions.json");
    let cases = data["cases"].as_array().unwrap();
    let mut seen = (0, 0, 0, 0);
    for case in cases {
        let spec = &case["spec"];
        match &spec["det_curvature_radius"] {
            Value::Array(r) if r[1].is_null() => seen.1 += 1,
            Value::Array(_) => seen.2 += 1,
            _ => seen.0 += 1,
        }
        if !spec["src_offsets"].is_null() {
            seen.3 += 1;
        }
        let direct = constructed(spec);
        let from_file = parsed(spec);
        assert!(direct.vec().detector().is_curved(), "{}", case["name"]);
        let (a, b) = (
            worst_difference(&direct, case),
            worst_difference(&from_file, case),
        );
        println!(
            "{}: constructor {a:.1e}, geometry file {b:.1e}",
            case["name"]
        );
        assert!(a <= 1e-12, "{}: constructor off ODL by {a:e}", case["name"]);
        assert!(
            b <= 1e-12,
            "{}: geometry file off ODL by {b:e}",
            case["name"]
        );
    }
    assert!(
        seen.0 >= 3 && seen.1 >= 3 && seen.2 >= 2 && seen.3 >= 3,
        "too few cases of a kind: {seen:?}"
    );
}

/// Guards the reference itself: a helical scan that lifts the source from its first angle
/// instead of from angle 0 is off ODL's positions by `pitch · θ₀ / 2π` (here ≈ 0.13), far
/// beyond the 1e-12 bound above.
#[test]
fn a_lift_from_the_first_angle_is_far_off_odl() {
    let data = load("geometry_positions.json");
    let case = data["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "helical_from_1")
        .unwrap();
    let spec = &case["spec"];
    let g = constructed(spec);
    let pitch = num(&spec["pitch"]);
    let lift = pitch * g.data_partition().min_pt()[0] / (2.0 * PI);
    let views: Vec<_> = g
        .vec()
        .views()
        .iter()
        .map(|v| {
            let mut w = *v;
            w.src[2] -= lift;
            w.det_center[2] -= lift;
            w
        })
        .collect();
    let wrong = rodl::tomo::VecGeometry::new(3, Beam::Point, &g.vec().det_shape(), views).unwrap();
    let wrong = Geometry::from_vec_on(wrong, g.data_partition().clone()).unwrap();
    let d = worst_difference(&wrong, case);
    assert!(d > 0.05, "{d}");
}

// ---------------------------------------------------------------------------------------------
// Helpers

/// The radius of the volume's bounding box about the z axis (ODL: the largest norm of the
/// corners' (x, y)).
fn rho(lo: &[f64], hi: &[f64]) -> f64 {
    let mut r: f64 = 0.0;
    for x in [lo[0], hi[0]] {
        for y in [lo[1], hi[1]] {
            r = r.max(x.hypot(y));
        }
    }
    r
}

/// Guards `parallel_beam_geometry` and `cone_beam_geometry` against ODL 1.0's own outputs for
/// six volumes (2D and 3D, off-centre, anisotropic cells) and five pairs of radii, with ODL's
/// default angle count and a given one: the angle partition, the detector's u extent and
/// sampling, and the 3D parallel detector's v axis equal ODL's; where ODL refuses (the source
/// inside the volume's circle) rodl errors too. The cone helper's detector height is rodl's own
/// (see `cone_helper_detector_height_sees_the_whole_volume`).
#[test]
fn helpers_match_odl() {
    let data = load("geometry_helpers.json");
    let cases = data["cases"].as_array().unwrap();
    let (mut checked, mut refused) = (0, 0);
    for c in cases {
        let vol = &c["volume"];
        let (lo, hi, shape) = (
            nums(&vol["min_pt"]),
            nums(&vol["max_pt"]),
            counts(&vol["shape"]),
        );
        let space = uniform_discr::<f64>(&lo, &hi, &shape).unwrap();
        let n_angles = c["num_angles"].as_u64().map(|n| n as usize);
        let what = format!("{} {shape:?} {c}", c["helper"]);
        let g = match c["helper"].as_str().unwrap() {
            "parallel_beam_geometry" => parallel_beam_geometry(&space, n_angles),
            "cone_beam_geometry" => cone_beam_geometry(
                &space,
                num(&c["src_radius"]),
                num(&c["det_radius"]),
                n_angles,
            ),
            h => panic!("unknown helper {h}"),
        };
        if !c["odl_error"].is_null() {
            assert!(g.is_err(), "ODL refuses, rodl does not: {what}");
            refused += 1;
            continue;
        }
        let g = g.unwrap();
        let p = g.data_partition();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * (1.0 + b.abs());
        // Angles.
        let a = &c["angles"];
        assert_eq!(p.shape()[0], counts(&a["shape"])[0], "angle count: {what}");
        assert!(close(p.min_pt()[0], nums(&a["min"])[0]), "{what}");
        assert!(close(p.max_pt()[0], nums(&a["max"])[0]), "{what}");
        // Detector along u (and v for parallel beams).
        let d = &c["detector"];
        let (dlo, dhi, dn) = (nums(&d["min"]), nums(&d["max"]), counts(&d["shape"]));
        let axes = if c["helper"] == "parallel_beam_geometry" {
            dn.len()
        } else {
            1
        };
        for k in 0..axes {
            assert_eq!(p.shape()[1 + k], dn[k], "detector axis {k} pixels: {what}");
            assert!(close(p.min_pt()[1 + k], dlo[k]), "detector min {k}: {what}");
            assert!(close(p.max_pt()[1 + k], dhi[k]), "detector max {k}: {what}");
        }
        // Point sources at ODL's radii: the source at −rs·e_y, the detector at +rd·e_y.
        if c["helper"] == "cone_beam_geometry" {
            let (rs, rd) = (num(&c["src_radius"]), num(&c["det_radius"]));
            let v0 = g.vec().views()[0];
            let t = p.coord_vector(0).unwrap()[0];
            let want_src = [rs * t.sin(), -rs * t.cos(), 0.0];
            let want_det = [-rd * t.sin(), rd * t.cos(), 0.0];
            assert!(diff(v0.src, want_src) <= 1e-12, "{what}: {:?}", v0.src);
            assert!(
                diff(v0.det_center, want_det) <= 1e-12,
                "{what}: {:?}",
                v0.det_center
            );
        }
        checked += 1;
    }
    assert!(
        checked >= 40 && refused >= 3,
        "{checked} checked, {refused} refused"
    );
}

/// Guards the cone helper's detector height, rodl's own rule (ODL's is `2 r sin α` for the half
/// cone angle `α`, rounded up to whole magnified voxels, which can leave the corners nearest
/// the source off the detector; rodl's is the tight bound for a flat detector): the
/// top and bottom edges of the volume's bounding box, where they pass nearest the source
/// (`rs − ρ` from it), project onto the detector's edge, `h/2 = z_max (rs + rd) / (rs − ρ)`;
/// every corner of the box projects onto the detector in every view (projected here through
/// the views' vectors); and `v` is sampled by ODL's rule for `u` applied to `v`
/// (`2⌈h ω_z r / (2π R_b)⌉ + 1` pixels, `ω_z = π / Δz`, `R_b = √(r² + (h/2)²)`).
#[test]
fn cone_helper_detector_height_sees_the_whole_volume() {
    let data = load("geometry_helpers.json");
    for c in data["cases"].as_array().unwrap() {
        let vol = &c["volume"];
        let (lo, hi, shape) = (
            nums(&vol["min_pt"]),
            nums(&vol["max_pt"]),
            counts(&vol["shape"]),
        );
        if c["helper"] != "cone_beam_geometry" || shape.len() != 3 || !c["odl_error"].is_null() {
            continue;
        }
        let (rs, rd) = (num(&c["src_radius"]), num(&c["det_radius"]));
        let space = uniform_discr::<f64>(&lo, &hi, &shape).unwrap();
        let g = cone_beam_geometry(&space, rs, rd, Some(90)).unwrap();
        let p = g.data_partition();
        let r = rs + rd;
        let zmax = lo[2].abs().max(hi[2].abs());
        let half = zmax * r / (rs - rho(&lo, &hi));
        let what = format!("{shape:?} {lo:?} {hi:?} rs {rs} rd {rd}");
        assert!((p.min_pt()[2] + half).abs() <= 1e-12 * half, "{what}");
        assert!((p.max_pt()[2] - half).abs() <= 1e-12 * half, "{what}");
        let h = 2.0 * half;
        let dz = (hi[2] - lo[2]) / shape[2] as f64;
        let nv = 2 * (h * (PI / dz) * r / (2.0 * PI * r.hypot(h / 2.0))).ceil() as usize + 1;
        assert_eq!(p.shape()[2], nv, "{what}");
        // Every corner of the box lands on the detector along v.
        let vg = g.vec();
        let nv = vg.nv() as f64;
        let mut worst: f64 = 0.0;
        for v in vg.views() {
            let dv = v.det_v;
            let du = v.det_u;
            let n = unit([
                du[1] * dv[2] - du[2] * dv[1],
                du[2] * dv[0] - du[0] * dv[2],
                du[0] * dv[1] - du[1] * dv[0],
            ]);
            for &x in &[lo[0], hi[0]] {
                for &y in &[lo[1], hi[1]] {
                    for &z in &[lo[2], hi[2]] {
                        let dir = sub([x, y, z], v.src);
                        let t = dot(sub(v.det_center, v.src), n) / dot(dir, n);
                        let q = [0, 1, 2].map(|k| v.src[k] + t * dir[k]);
                        let b = dot(sub(q, v.det_center), dv) / dot(dv, dv);
                        worst = worst.max(b.abs() / (nv / 2.0));
                    }
                }
            }
        }
        assert!(
            worst <= 1.0 + 1e-12,
            "{what}: a corner at {worst} half-heights"
        );
        assert!(worst > 0.95, "{what}: the detector is loose ({worst})");
    }
}
