//! The geometry file against the Rust constructors, field by field: for every key of the
//! geometry JSON (README, "Geometry file"; `rodl::tomo::GeometrySpec`), with values other than
//! the defaults, the parsed geometry equals the one that `Geometry::parallel_2d_offset`,
//! `fan_flat`, `parallel_3d`, `cone_flat` or `VecGeometry::new` + `Geometry::from_vec` build
//! with that value; and changing the value changes the geometry, so a key that the parser
//! ignored or misplaced fails here. (The constructors themselves are checked against ODL's
//! numbers in `tests/tomo_odl_geometry.rs`. The Python constructors' arguments are tested with
//! the Python package, not here.)

use proptest::prelude::*;
use rodl::tomo::{Beam, Detector, Geometry, TomoSpec, VecGeometry, View, VolumeSpec};
use rodl::{uniform_discr, UniformPartition};

/// The values of every key of a standard (non-`vec`) geometry.
#[derive(Clone, Debug)]
struct Params {
    kind: &'static str,
    angles: (f64, f64, usize),
    det_min: Vec<f64>,
    det_max: Vec<f64>,
    det_shape: Vec<usize>,
    src_radius: f64,
    det_radius: f64,
    pitch: f64,
    axis: [f64; 3],
    offset: Vec<f64>,
}

impl Params {
    fn ndim(&self) -> usize {
        self.det_shape.len() + 1
    }
    fn point(&self) -> bool {
        matches!(self.kind, "fanflat" | "cone")
    }
}

/// Base values (none of them a default) for each kind.
fn base(kind: &'static str) -> Params {
    let three = matches!(kind, "parallel3d" | "cone");
    Params {
        kind,
        angles: (0.3, 2.9, 7),
        det_min: if three { vec![-1.1, -0.6] } else { vec![-1.1] },
        det_max: if three { vec![1.7, 0.9] } else { vec![1.7] },
        det_shape: if three { vec![9, 5] } else { vec![9] },
        src_radius: 4.5,
        det_radius: 1.75,
        pitch: 0.65,
        axis: [0.2, -0.3, 1.0],
        offset: if three {
            vec![0.21, -0.27]
        } else {
            vec![-0.33]
        },
    }
}

/// The geometry file of `p` (the volume only has to parse).
fn json(p: &Params) -> String {
    let mut g = format!(
        r#""kind": "{}", "angles": {{"min": {:?}, "max": {:?}, "count": {}}},
           "detector": {{"min": {:?}, "max": {:?}, "shape": {:?}}}, "det_offset": {:?}"#,
        p.kind, p.angles.0, p.angles.1, p.angles.2, p.det_min, p.det_max, p.det_shape, p.offset
    );
    if p.point() {
        g += &format!(
            r#", "src_radius": {:?}, "det_radius": {:?}"#,
            p.src_radius, p.det_radius
        );
    }
    if p.kind == "cone" {
        g += &format!(r#", "pitch": {:?}"#, p.pitch);
    }
    if p.ndim() == 3 {
        g += &format!(r#", "axis": {:?}"#, p.axis);
    }
    let n = p.ndim();
    format!(
        r#"{{"volume": {{"min_pt": {:?}, "max_pt": {:?}, "shape": {:?}}}, "geometry": {{{g}}}}}"#,
        vec![-1.0; n],
        vec![1.0; n],
        vec![4; n]
    )
}

fn parsed(text: &str) -> Geometry {
    TomoSpec::from_json(text)
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
        .geometry
        .build()
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The geometry of `p` from the Rust constructors.
fn direct(p: &Params) -> Geometry {
    let angles = UniformPartition::new(&[p.angles.0], &[p.angles.1], &[p.angles.2]).unwrap();
    let det = UniformPartition::new(&p.det_min, &p.det_max, &p.det_shape).unwrap();
    let o = &p.offset;
    match p.kind {
        "parallel2d" => Geometry::parallel_2d_offset(&angles, &det, o[0]),
        "fanflat" => Geometry::fan_flat(&angles, &det, p.src_radius, p.det_radius, o[0]),
        "parallel3d" => Geometry::parallel_3d(&angles, &det, p.axis, [o[0], o[1]]),
        "cone" => Geometry::cone_flat(
            &angles,
            &det,
            p.src_radius,
            p.det_radius,
            p.pitch,
            p.axis,
            [o[0], o[1]],
        ),
        k => panic!("{k}"),
    }
    .unwrap()
}

/// Asserts that two geometries are equal, naming the first field that differs.
fn assert_same(got: &Geometry, want: &Geometry, what: &str) {
    let (a, b) = (got.vec(), want.vec());
    assert_eq!(a.ndim(), b.ndim(), "{what}: ndim");
    assert_eq!(a.beam(), b.beam(), "{what}: beam");
    assert_eq!(a.det_shape(), b.det_shape(), "{what}: detector shape");
    assert_eq!(a.num_views(), b.num_views(), "{what}: number of views");
    for (k, (u, v)) in a.views().iter().zip(b.views()).enumerate() {
        assert_eq!(u.src, v.src, "{what}: view {k} src");
        assert_eq!(u.det_center, v.det_center, "{what}: view {k} det_center");
        assert_eq!(u.det_u, v.det_u, "{what}: view {k} det_u");
        assert_eq!(u.det_v, v.det_v, "{what}: view {k} det_v");
    }
    let (p, q) = (got.data_partition(), want.data_partition());
    assert_eq!(p.min_pt(), q.min_pt(), "{what}: data partition min");
    assert_eq!(p.max_pt(), q.max_pt(), "{what}: data partition max");
    assert_eq!(p.shape(), q.shape(), "{what}: data partition shape");
}

type Vary = (&'static str, fn(&mut Params));

/// One change of every key a kind has (each to another non-default value).
fn variations(p: &Params) -> Vec<Vary> {
    let mut v: Vec<Vary> = vec![
        ("angles.min", |p| p.angles.0 -= 0.45),
        ("angles.max", |p| p.angles.1 += 0.55),
        ("angles.count", |p| p.angles.2 += 3),
        ("detector.min[0]", |p| p.det_min[0] -= 0.3),
        ("detector.max[0]", |p| p.det_max[0] += 0.2),
        ("detector.shape[0]", |p| p.det_shape[0] += 2),
        ("det_offset[0]", |p| p.offset[0] += 0.37),
    ];
    if p.ndim() == 3 {
        v.extend([
            (
                "detector.min[1]",
                (|p| p.det_min[1] -= 0.25) as fn(&mut Params),
            ),
            ("detector.max[1]", |p| p.det_max[1] += 0.35),
            ("detector.shape[1]", |p| p.det_shape[1] += 3),
            ("det_offset[1]", |p| p.offset[1] += 0.41),
            ("axis[0]", |p| p.axis[0] += 0.3),
            ("axis[1]", |p| p.axis[1] += 0.4),
            ("axis[2]", |p| p.axis[2] += 0.7),
        ]);
    }
    if p.point() {
        v.extend([
            ("src_radius", (|p| p.src_radius += 1.25) as fn(&mut Params)),
            ("det_radius", |p| p.det_radius += 0.5),
        ]);
    }
    if p.kind == "cone" {
        v.push(("pitch", |p| p.pitch = -1.3));
    }
    v
}

/// Guards every key of the standard kinds: with the base values and with each key changed,
/// the geometry file gives the constructor's geometry field by field, and each change moves
/// the geometry (so a key that the parser drops cannot pass).
#[test]
fn every_geometry_key_reaches_the_constructor() {
    for kind in ["parallel2d", "fanflat", "parallel3d", "cone"] {
        let b = base(kind);
        let base_geometry = direct(&b);
        assert_same(&parsed(&json(&b)), &base_geometry, &format!("{kind} base"));
        for (key, vary) in variations(&b) {
            let mut p = b.clone();
            vary(&mut p);
            let want = direct(&p);
            let what = format!("{kind}, {key} changed");
            assert_same(&parsed(&json(&p)), &want, &what);
            assert!(want != base_geometry, "{what}: the change has no effect");
        }
    }
}

/// Guards the defaults that the keys override: a file without `det_offset`, `axis` or
/// `pitch` is the constructor's geometry with 0, `e_z` and 0; so the tests above, which give
/// every key, test values other than these.
#[test]
fn omitted_keys_take_their_documented_defaults() {
    let text = r#"{"volume": {"min_pt": [-1, -1, -1], "max_pt": [1, 1, 1], "shape": [4, 4, 4]},
        "geometry": {"kind": "cone", "angles": {"min": 0.3, "max": 2.9, "count": 7},
                     "detector": {"min": [-1.1, -0.6], "max": [1.7, 0.9], "shape": [9, 5]},
                     "src_radius": 4.5, "det_radius": 1.75}}"#;
    let mut p = base("cone");
    p.offset = vec![0.0, 0.0];
    p.axis = [0.0, 0.0, 1.0];
    p.pitch = 0.0;
    assert_same(&parsed(text), &direct(&p), "cone defaults");
    let text = r#"{"volume": {"min_pt": [-1, -1], "max_pt": [1, 1], "shape": [4, 4]},
        "geometry": {"kind": "fanflat", "angles": {"min": 0.3, "max": 2.9, "count": 7},
                     "detector": {"min": [-1.1], "max": [1.7], "shape": [9]},
                     "src_radius": 4.5, "det_radius": 1.75}}"#;
    let mut p = base("fanflat");
    p.offset = vec![0.0];
    assert_same(&parsed(text), &direct(&p), "fanflat defaults");
}

/// Guards the volume keys: `volume.min_pt`, `max_pt` and `shape` give `uniform_discr` of
/// those values (partition and weight), each key changed on its own.
#[test]
fn volume_keys_reach_uniform_discr() {
    let cases: [(Vec<f64>, Vec<f64>, Vec<usize>); 4] = [
        (vec![-1.5, 0.25, -2.0], vec![0.5, 3.0, 1.0], vec![5, 7, 3]),
        (vec![-1.0, 0.25, -2.0], vec![0.5, 3.0, 1.0], vec![5, 7, 3]),
        (vec![-1.5, 0.25, -2.0], vec![0.5, 3.5, 1.0], vec![5, 7, 3]),
        (vec![-1.5, 0.25, -2.0], vec![0.5, 3.0, 1.0], vec![5, 7, 4]),
    ];
    let mut seen = vec![];
    for (lo, hi, n) in cases {
        let text = format!(
            r#"{{"volume": {{"min_pt": {lo:?}, "max_pt": {hi:?}, "shape": {n:?}}},
                "geometry": {{"kind": "parallel2d", "angles": {{"min": 0, "max": 3, "count": 2}},
                              "detector": {{"min": [-1], "max": [1], "shape": [3]}}}}}}"#
        );
        let got = TomoSpec::from_json(&text)
            .unwrap()
            .volume
            .space::<f64>()
            .unwrap();
        let want = uniform_discr::<f64>(&lo, &hi, &n).unwrap();
        assert_eq!(
            got.partition().unwrap(),
            want.partition().unwrap(),
            "{text}"
        );
        assert_eq!(got.weight().unwrap(), want.weight().unwrap(), "{text}");
        let w = (0..3)
            .map(|k| (hi[k] - lo[k]) / n[k] as f64)
            .product::<f64>();
        assert!((got.weight().unwrap() - w).abs() <= 1e-15 * w, "{text}");
        assert!(!seen.contains(&got), "{text}: the change has no effect");
        seen.push(got);
    }
}

/// A `vec` geometry: its beam text and views.
fn vec_json(beam: &str, ndim: usize, views: &[View], shape: &[usize]) -> String {
    let v: Vec<String> = views
        .iter()
        .map(|v| {
            let c = |a: [f64; 3]| format!("{:?}", &a[..ndim]);
            let mut s = format!(
                r#"{{"src": {}, "det_center": {}, "det_u": {}"#,
                c(v.src),
                c(v.det_center),
                c(v.det_u)
            );
            if ndim == 3 {
                s += &format!(r#", "det_v": {}"#, c(v.det_v));
            }
            s + "}"
        })
        .collect();
    format!(
        r#"{{"volume": {{"min_pt": {:?}, "max_pt": {:?}, "shape": {:?}}},
            "geometry": {{"kind": "vec", "beam": "{beam}", "detector": {{"shape": {shape:?}}},
                          "views": [{}]}}}}"#,
        vec![-1.0; ndim],
        vec![1.0; ndim],
        vec![4; ndim],
        v.join(", ")
    )
}

fn vec_views(ndim: usize) -> Vec<View> {
    let z = |x: f64| if ndim == 3 { x } else { 0.0 };
    vec![
        View {
            src: [0.3, -4.1, z(0.2)],
            det_center: [-0.1, 2.2, z(-0.3)],
            det_u: [0.45, 0.05, z(0.02)],
            det_v: [0.0, z(0.03), z(0.35)],
        },
        View {
            src: [3.9, 0.7, z(-0.4)],
            det_center: [-2.05, 0.15, z(0.1)],
            det_u: [-0.04, 0.5, z(-0.01)],
            det_v: [z(0.02), 0.0, z(0.4)],
        },
    ]
}

/// Guards the `vec` kind's keys: `beam` (with its aliases), `detector.shape` and every
/// component of every view vector give `VecGeometry::new` + `Geometry::from_vec` of those
/// values; each component changed on its own changes the geometry.
#[test]
fn every_vec_key_reaches_the_constructor() {
    for ndim in [2, 3] {
        let shape: Vec<usize> = if ndim == 2 { vec![6] } else { vec![6, 4] };
        let views = vec_views(ndim);
        let build = |beam: Beam, views: Vec<View>, shape: &[usize]| {
            Geometry::from_vec(VecGeometry::new(ndim, beam, shape, views).unwrap()).unwrap()
        };
        for (text, beam) in [
            ("parallel", Beam::Parallel),
            ("point", Beam::Point),
            ("cone", Beam::Point),
            ("fan", Beam::Point),
        ] {
            let want = build(beam, views.clone(), &shape);
            let got = parsed(&vec_json(text, ndim, &views, &shape));
            assert_same(&got, &want, &format!("{ndim}D vec, beam {text}"));
        }
        let base = build(Beam::Point, views.clone(), &shape);
        let mut other_shape = shape.clone();
        other_shape[ndim - 2] += 1;
        let got = parsed(&vec_json("point", ndim, &views, &other_shape));
        let want = build(Beam::Point, views.clone(), &other_shape);
        assert_same(&got, &want, &format!("{ndim}D vec, detector.shape"));
        assert!(want != base);
        let vectors = if ndim == 3 { 4 } else { 3 };
        for k in 0..views.len() {
            for field in 0..vectors {
                for c in 0..ndim {
                    let mut changed = views.clone();
                    let v = &mut changed[k];
                    let vector = match field {
                        0 => &mut v.src,
                        1 => &mut v.det_center,
                        2 => &mut v.det_u,
                        _ => &mut v.det_v,
                    };
                    vector[c] += 0.125;
                    let what = format!("{ndim}D vec, views[{k}] vector {field} entry {c}");
                    let want = build(Beam::Point, changed.clone(), &shape);
                    assert_same(
                        &parsed(&vec_json("point", ndim, &changed, &shape)),
                        &want,
                        &what,
                    );
                    assert!(want != base, "{what}: no effect");
                }
            }
        }
    }
}

fn arb_params() -> impl Strategy<Value = Params> {
    (
        prop::sample::select(vec!["parallel2d", "fanflat", "parallel3d", "cone"]),
        -7.0..7.0f64,
        0.1..13.0f64,
        1usize..12,
        prop::collection::vec((-3.0..0.0f64, 0.1..3.0f64, 1usize..9), 2),
        (3.0..9.0f64, 0.0..4.0f64, -2.0..2.0f64),
        prop::array::uniform3(-1.0..1.0f64),
        prop::collection::vec(-0.8..0.8f64, 2),
    )
        .prop_map(|(kind, a0, alen, n, det, (rs, rd, pitch), axis, off)| {
            let three = matches!(kind, "parallel3d" | "cone");
            let k = if three { 2 } else { 1 };
            Params {
                kind,
                angles: (a0, a0 + alen, n),
                det_min: det[..k].iter().map(|d| d.0).collect(),
                det_max: det[..k].iter().map(|d| d.0 + d.1).collect(),
                det_shape: det[..k].iter().map(|d| d.2).collect(),
                src_radius: rs,
                det_radius: rd,
                pitch,
                axis: [axis[0], axis[1], axis[2] + 1.5],
                offset: off[..k].to_vec(),
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Guards the parser with random values of every key of the standard kinds: the geometry
    /// file always gives the constructor's geometry, field by field.
    #[test]
    fn random_geometry_files_match_the_constructors(p in arb_params()) {
        assert_same(&parsed(&json(&p)), &direct(&p), &format!("{p:?}"));
    }
}

// ---------------------------------------------------------------------------------------------
// Curved detectors and flying focal spots (issue #35)
// ---------------------------------------------------------------------------------------------

/// A geometry file around the `geometry` object's text.
fn file(ndim: usize, geometry: &str) -> String {
    format!(
        r#"{{"volume": {{"min_pt": {:?}, "max_pt": {:?}, "shape": {:?}}}, "geometry": {{{geometry}}}}}"#,
        vec![-1.0; ndim],
        vec![1.0; ndim],
        vec![4; ndim]
    )
}

const FAN: &str = r#""kind": "fanflat", "angles": {"min": 0.3, "max": 6.2, "count": 7},
    "detector": {"min": [-0.4], "max": [0.5], "shape": [9]}, "src_radius": 4.5, "det_radius": 1.75,
    "det_offset": [0.1]"#;

const CONE: &str = r#""kind": "cone", "angles": {"min": 0.3, "max": 6.2, "count": 7},
    "detector": {"min": [-0.4, -0.3], "max": [0.5, 0.3], "shape": [9, 5]}, "src_radius": 4.5,
    "det_radius": 1.75, "pitch": 0.65, "det_offset": [0.1, -0.2]"#;

fn fan_parts() -> (UniformPartition, UniformPartition) {
    (
        UniformPartition::new(&[0.3], &[6.2], &[7]).unwrap(),
        UniformPartition::new(&[-0.4], &[0.5], &[9]).unwrap(),
    )
}

fn cone_parts() -> (UniformPartition, UniformPartition) {
    (
        UniformPartition::new(&[0.3], &[6.2], &[7]).unwrap(),
        UniformPartition::new(&[-0.4, -0.3], &[0.5, 0.3], &[9, 5]).unwrap(),
    )
}

fn error_of(text: &str) -> String {
    match TomoSpec::from_json(text).and_then(|s| s.geometry.build()) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e.to_string(),
    }
}

/// Guards `det_curvature_radius`: a number for a fan's arc, ODL's pairs `[r, null]` and
/// `[r, r]` for a cone's cylinder and sphere, `[null, null]` flat; each gives the constructor's
/// geometry (views, detector surface, data partition), and the key survives a round trip
/// through `to_json`.
#[test]
fn det_curvature_radius_reaches_the_constructors() {
    let (ang, det) = fan_parts();
    let text = file(2, &format!(r#"{FAN}, "det_curvature_radius": 6.25"#));
    let g = parsed(&text);
    let want = Geometry::fan_curved(&ang, &det, 4.5, 1.75, 6.25, 0.1).unwrap();
    assert_same(&g, &want, "fan arc");
    assert_eq!(g.vec().detector(), Detector::Cylindrical { radius: 6.25 });
    let spec = TomoSpec {
        volume: VolumeSpec {
            min_pt: vec![-1.0; 2],
            max_pt: vec![1.0; 2],
            shape: vec![4; 2],
        },
        geometry: g.spec().unwrap().clone(),
    };
    let round = TomoSpec::from_json(&spec.to_json().unwrap()).unwrap();
    assert_eq!(round.geometry, spec.geometry, "round trip");
    assert_same(
        &round.geometry.build().unwrap(),
        &want,
        "fan arc after to_json",
    );

    let (ang, det) = cone_parts();
    for (radii, detector) in [
        ("[7.5, null]", [Some(7.5), None]),
        ("[7.5, 7.5]", [Some(7.5), Some(7.5)]),
        ("[null, null]", [None, None]),
    ] {
        let g = parsed(&file(
            3,
            &format!(r#"{CONE}, "det_curvature_radius": {radii}"#),
        ));
        let want = Geometry::cone_curved(
            &ang,
            &det,
            4.5,
            1.75,
            detector,
            0.65,
            [0.0, 0.0, 1.0],
            [0.1, -0.2],
        )
        .unwrap();
        assert_same(&g, &want, radii);
        assert_eq!(g.vec().detector(), want.vec().detector(), "{radii}");
    }
    let flat = parsed(&file(3, CONE));
    let none = parsed(&file(
        3,
        &format!(r#"{CONE}, "det_curvature_radius": [null, null]"#),
    ));
    assert_same(&none, &flat, "[null, null] is flat");
    // A point-beam vec geometry takes it too (the views' vectors are the centre pixel's frame).
    let views = vec_views(3)
        .into_iter()
        .map(|mut v| {
            // Orthogonal det_u and det_v, as a curved detector needs.
            v.det_v = [0.0, 0.0, 0.35];
            v.det_u[2] = 0.0;
            v
        })
        .collect::<Vec<_>>();
    let text = vec_json("point", 3, &views, &[6, 4]).replace(
        r#""kind": "vec""#,
        r#""kind": "vec", "det_curvature_radius": [5.0, null]"#,
    );
    let g = parsed(&text);
    let want = VecGeometry::new(3, Beam::Point, &[6, 4], views)
        .unwrap()
        .with_detector(Detector::Cylindrical { radius: 5.0 })
        .unwrap();
    assert_eq!(g.vec(), &want);
}

/// Guards the errors of `det_curvature_radius`: zero, negative, too large or out-of-range
/// numbers, a wrong type or count, two different radii, a key on a parallel beam, a detector
/// that spans more than a circle (angle partition, or a radius too small for a vec
/// detector's width), a sphere's latitudes beyond the poles. Each message names the key.
#[test]
fn det_curvature_radius_errors() {
    let cases: Vec<(String, usize, &str)> = vec![
        (
            format!(r#"{FAN}, "det_curvature_radius": 0"#),
            2,
            "positive",
        ),
        (
            format!(r#"{FAN}, "det_curvature_radius": -3.0"#),
            2,
            "positive",
        ),
        (
            format!(r#"{FAN}, "det_curvature_radius": 1e16"#),
            2,
            "at most",
        ),
        (
            format!(r#"{FAN}, "det_curvature_radius": 1e999"#),
            2,
            "det_curvature_radius",
        ),
        (
            format!(r#"{FAN}, "det_curvature_radius": "6""#),
            2,
            "curvature radius",
        ),
        (
            format!(r#"{FAN}, "det_curvature_radius": [6.0, null]"#),
            2,
            "one number",
        ),
        (format!(r#"{CONE}, "det_curvature_radius": 6.0"#), 3, "pair"),
        (
            format!(r#"{CONE}, "det_curvature_radius": [6.0, 5.0]"#),
            3,
            "cylindrical",
        ),
        (
            format!(r#"{CONE}, "det_curvature_radius": [null, 5.0]"#),
            3,
            "cylindrical",
        ),
        (
            format!(r#"{CONE}, "det_curvature_radius": [6.0, -1.0]"#),
            3,
            "positive",
        ),
        (
            r#""kind": "parallel2d", "angles": {"min": 0, "max": 3, "count": 4},
               "detector": {"min": [-1], "max": [1], "shape": [4]}, "det_curvature_radius": 5"#
                .to_string(),
            2,
            "fan and cone",
        ),
        (
            FAN.replace(
                r#""min": [-0.4], "max": [0.5]"#,
                r#""min": [-3.5], "max": [3.5]"#,
            ) + r#", "det_curvature_radius": 6.0"#,
            2,
            "2π",
        ),
        (
            CONE.replace(
                r#"[-0.4, -0.3], "max": [0.5, 0.3]"#,
                r#"[-0.4, -1.7], "max": [0.5, 1.7]"#,
            ) + r#", "det_curvature_radius": [6.0, 6.0]"#,
            3,
            "π/2",
        ),
    ];
    for (geometry, ndim, needle) in cases {
        let m = error_of(&file(ndim, &geometry));
        eprintln!("{m}");
        assert!(m.contains(needle), "{needle:?} not in {m:?}\n{geometry}");
        assert!(
            m.contains("det_curvature_radius") || needle == "2π" || needle == "π/2",
            "key not named: {m}"
        );
    }
    // A vec detector 2.7 wide on a circle of radius 0.4 would wrap around.
    let text = vec_json("point", 2, &vec_views(2), &[6]).replace(
        r#""kind": "vec""#,
        r#""kind": "vec", "det_curvature_radius": 0.4"#,
    );
    let m = error_of(&text);
    assert!(
        m.contains("det_curvature_radius") && m.contains("too small"),
        "{m}"
    );
    let text = vec_json("parallel", 2, &vec_views(2), &[6]).replace(
        r#""kind": "vec""#,
        r#""kind": "vec", "det_curvature_radius": 10"#,
    );
    assert!(error_of(&text).contains("point source"));
}

/// Guards `src_offsets` (a flying focal spot): the file gives `with_src_offsets` of the
/// constructor's geometry, each source moves by its offset in the view's frame while the
/// detector stays, and bad lists are errors.
#[test]
fn src_offsets_move_the_source_and_not_the_detector() {
    let (ang, det) = fan_parts();
    let offsets = [[0.1, 0.0, 0.0], [0.0, 0.05, 0.0], [-0.02, -0.04, 0.0]];
    for curved in [false, true] {
        let extra = if curved {
            r#", "det_curvature_radius": 6.25"#
        } else {
            ""
        };
        let text = file(
            2,
            &format!(r#"{FAN}{extra}, "src_offsets": [[0.1, 0.0], [0.0, 0.05], [-0.02, -0.04]]"#),
        );
        let g = parsed(&text);
        let plain = if curved {
            Geometry::fan_curved(&ang, &det, 4.5, 1.75, 6.25, 0.1).unwrap()
        } else {
            Geometry::fan_flat(&ang, &det, 4.5, 1.75, 0.1).unwrap()
        };
        let want = plain.with_src_offsets(&offsets).unwrap();
        assert_same(&g, &want, "fan with src_offsets");
        assert_eq!(g.src_offsets(), &offsets);
        let thetas = g.data_partition().coord_vector(0).unwrap();
        for (k, (a, b)) in plain.vec().views().iter().zip(g.vec().views()).enumerate() {
            assert_eq!(a.det_center, b.det_center, "view {k}: the detector moved");
            assert_eq!(a.det_u, b.det_u, "view {k}: the detector turned");
            for iu in 0..9 {
                assert_eq!(
                    plain.vec().ray(k, iu, 0).0,
                    g.vec().ray(k, iu, 0).0,
                    "pixel {iu}"
                );
            }
            // Towards the source: −e_y turned by θ; along u: e_x turned by θ.
            let (s, c) = thetas[k].sin_cos();
            let o = offsets[k % 3];
            let want = [-o[0] * -s + o[1] * c, -o[0] * c + o[1] * s];
            for (i, w) in want.iter().enumerate() {
                assert!((b.src[i] - a.src[i] - w).abs() < 1e-14, "view {k}");
            }
        }
    }
    // 3D: the axial offset moves the source along the axis.
    let (ang, det) = cone_parts();
    let g = parsed(&file(
        3,
        &format!(
            r#"{CONE}, "det_curvature_radius": [7.5, null], "src_offsets": [[0, 0, 0.03], [0, 0, -0.03]]"#
        ),
    ));
    let plain = Geometry::cone_curved(
        &ang,
        &det,
        4.5,
        1.75,
        [Some(7.5), None],
        0.65,
        [0.0, 0.0, 1.0],
        [0.1, -0.2],
    )
    .unwrap();
    for (k, (a, b)) in plain.vec().views().iter().zip(g.vec().views()).enumerate() {
        let dz = if k % 2 == 0 { 0.03 } else { -0.03 };
        assert!((b.src[2] - a.src[2] - dz).abs() < 1e-15 && (b.src[0] - a.src[0]).abs() < 1e-15);
        assert_eq!(a.det_center, b.det_center);
    }
    for (bad, needle) in [
        (r#""src_offsets": [[0.1]]"#, "2 entries"),
        (r#""src_offsets": [[0.1, 0.0, 0.2]]"#, "2 entries"),
        (r#""src_offsets": []"#, "empty"),
        (r#""src_offsets": [[1e16, 0]]"#, "at most"),
    ] {
        let m = error_of(&file(2, &format!("{FAN}, {bad}")));
        assert!(
            m.contains(needle) && m.contains("src_offsets"),
            "{needle:?} not in {m}"
        );
    }
    let m = error_of(&file(
        2,
        r#""kind": "parallel2d", "angles": {"min": 0, "max": 3, "count": 4},
           "detector": {"min": [-1], "max": [1], "shape": [4]}, "src_offsets": [[0.1, 0]]"#,
    ));
    assert!(m.contains("fan and cone"), "{m}");
    let text = vec_json("point", 2, &vec_views(2), &[6]).replace(
        r#""kind": "vec""#,
        r#""kind": "vec", "src_offsets": [[0.1, 0]]"#,
    );
    assert!(error_of(&text).contains("not valid for vec"));
}
