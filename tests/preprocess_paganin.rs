//! Paganin phase retrieval (`rodl::preprocess::paganin`) against closed forms: the filter
//! `1/(1 + a|f|²)` inverts the operator `1 − a/(4π²) ∇²`, so a transmission
//! `1 − A (G − a/(4π²) ∇²G)` of a Gaussian `G` (whose Laplacian is known) must come back as
//! `1 − A G`, in a parallel and a cone beam (the magnification), on non-square pixels; the
//! mean is kept, the identity at `δ/β = 0`, linearity, and the errors.

use std::f64::consts::PI;

use ndarray::Array3;
use rodl::preprocess::{paganin, wavelength_m, PaganinOptions};

/// Frames `[angle, u, v]` of `1 − amp (G − c ∇²G)` with `G` a Gaussian of widths `sigma` (in
/// metres along u and v) about the frame's centre plus `shift` pixels, `c` in square metres, on
/// pixels of `px` metres; and the expected `1 − amp G`.
fn gaussian_frames(
    shape: [usize; 3],
    px: [f64; 2],
    sigma: [f64; 2],
    amp: f64,
    c: f64,
) -> (Array3<f32>, Array3<f32>) {
    let [_, nu, nv] = shape;
    let g = |a: usize, i: usize, j: usize| {
        let shift = a as f64 * 1.5;
        let x = (i as f64 - 0.5 * (nu as f64 - 1.0) - shift) * px[0];
        let y = (j as f64 - 0.5 * (nv as f64 - 1.0) + shift) * px[1];
        let (sx, sy) = (sigma[0], sigma[1]);
        let e = (-(x * x) / (2.0 * sx * sx) - (y * y) / (2.0 * sy * sy)).exp();
        // ∇²G = G ((x² − sx²)/sx⁴ + (y² − sy²)/sy⁴).
        let lap = e * ((x * x - sx * sx) / sx.powi(4) + (y * y - sy * sy) / sy.powi(4));
        (e, lap)
    };
    let input = Array3::from_shape_fn(shape, |(a, i, j)| {
        let (e, lap) = g(a, i, j);
        (1.0 - amp * (e - c * lap)) as f32
    });
    let expect = Array3::from_shape_fn(shape, |(a, i, j)| (1.0 - amp * g(a, i, j).0) as f32);
    (input, expect)
}

fn max_diff(a: &Array3<f32>, b: &Array3<f32>) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (*x as f64 - *y as f64).abs())
        .fold(0.0, f64::max)
}

#[test]
fn a_gaussian_comes_back_from_its_propagated_image() {
    // 20 keV, 0.1 m, δ/β = 40, 1.3 µm × 1.1 µm pixels: a = π λ z δ/β.
    let mut opts = PaganinOptions::new(40.0, 20.0, 0.1, 1.3e-6);
    opts.pixel_size = [1.3e-6, 1.1e-6];
    let a = PI * wavelength_m(20.0) * 0.1 * 40.0;
    assert!((opts.filter_area() - a).abs() < 1e-12 * a);
    let c = a / (4.0 * PI * PI);
    println!(
        "filter length sqrt(a)/2π = {:.2} px",
        c.sqrt() / opts.pixel_size[0]
    );
    let sigma = [5.0 * 1.3e-6, 7.0 * 1.1e-6];
    let (mut t, expect) = gaussian_frames([3, 72, 80], opts.pixel_size, sigma, 0.3, c);
    let before = max_diff(&t, &expect);
    let time = std::time::Instant::now();
    paganin(t.view_mut(), &opts).unwrap();
    let err = max_diff(&t, &expect);
    println!(
        "Paganin, parallel: |retrieved − 1 + A G| ≤ {err:.2e} (input off by {before:.2e}), \
         3 × 72 × 80 in {:.1?}",
        time.elapsed()
    );
    assert!(before > 0.05, "{before}");
    assert!(err < 5e-6, "{err}");

    // A cone beam: magnification M widens the filter by M in detector coordinates.
    let mut cone = opts;
    cone.magnification = 2.5;
    let (mut t, expect) = gaussian_frames([2, 64, 96], cone.pixel_size, sigma, 0.2, 2.5 * c);
    paganin(t.view_mut(), &cone).unwrap();
    let err = max_diff(&t, &expect);
    println!("Paganin, cone beam M = 2.5: ≤ {err:.2e}");
    assert!(err < 5e-6, "{err}");

    // Without padding, on a frame whose edges are flat the result is the same.
    let mut flat = opts;
    flat.padding = false;
    let (mut t, expect) = gaussian_frames([1, 90, 96], opts.pixel_size, sigma, 0.3, c);
    paganin(t.view_mut(), &flat).unwrap();
    let err = max_diff(&t, &expect);
    assert!(err < 5e-5, "unpadded: {err}");
}

#[test]
fn the_filter_keeps_the_mean_and_is_linear() {
    let opts = PaganinOptions::new(300.0, 30.0, 0.5, 2e-6);
    let shape = [2, 33, 17];
    let f = Array3::from_shape_fn(shape, |(a, i, j)| {
        ((a * 7 + i * 13 + j * 5) % 11) as f32 * 0.05 + 0.4
    });
    let g = Array3::from_shape_fn(shape, |(a, i, j)| ((a + i * j) % 7) as f32 * 0.1);
    let run = |x: &Array3<f32>, pad: bool| {
        let mut y = x.clone();
        paganin(
            y.view_mut(),
            &PaganinOptions {
                padding: pad,
                ..opts
            },
        )
        .unwrap();
        y
    };
    // Unpadded, the filter is a circular convolution of unit sum: the mean is kept.
    let fy = run(&f, false);
    let mean = |x: &Array3<f32>| x.iter().map(|&v| v as f64).sum::<f64>() / x.len() as f64;
    assert!(
        (mean(&fy) - mean(&f)).abs() < 1e-6,
        "{} {}",
        mean(&fy),
        mean(&f)
    );
    // A constant frame is unchanged (padded or not).
    let mut k = Array3::from_elem(shape, 0.7f32);
    paganin(k.view_mut(), &opts).unwrap();
    assert!(k.iter().all(|&v| (v - 0.7).abs() < 1e-6));
    // Linear: P(2f + g) = 2 P(f) + P(g).
    let lhs = run(&(&f * 2.0 + &g), true);
    let rhs = &run(&f, true) * 2.0 + &run(&g, true);
    assert!(max_diff(&lhs, &rhs) < 1e-5);
    // δ/β = 0 or a distance of 0: the identity.
    for o in [
        PaganinOptions {
            delta_beta: 0.0,
            ..opts
        },
        PaganinOptions {
            distance: 0.0,
            ..opts
        },
    ] {
        let mut y = f.clone();
        paganin(y.view_mut(), &o).unwrap();
        assert_eq!(y, f);
    }
    // The smoothing is stronger for a larger δ/β.
    let rough = |x: &Array3<f32>| {
        x.windows([1, 2, 1])
            .into_iter()
            .map(|w| (w[[0, 1, 0]] - w[[0, 0, 0]]).abs() as f64)
            .sum::<f64>()
    };
    let strong = {
        let mut y = f.clone();
        paganin(
            y.view_mut(),
            &PaganinOptions {
                delta_beta: 3000.0,
                ..opts
            },
        )
        .unwrap();
        y
    };
    assert!(rough(&strong) < rough(&run(&f, true)) && rough(&run(&f, true)) < rough(&f));
}

#[test]
fn bad_parameters_are_errors() {
    let opts = PaganinOptions::new(300.0, 30.0, 0.5, 2e-6);
    let mut x = Array3::from_elem([1, 8, 8], 1.0f32);
    for (o, needle) in [
        (
            PaganinOptions {
                delta_beta: -1.0,
                ..opts
            },
            "delta_beta",
        ),
        (PaganinOptions::new(300.0, 0.0, 0.5, 2e-6), "wavelength"),
        (
            PaganinOptions {
                distance: f64::NAN,
                ..opts
            },
            "distance",
        ),
        (PaganinOptions::new(300.0, 30.0, 0.5, 0.0), "pixel_size"),
        (
            PaganinOptions {
                magnification: 0.5,
                ..opts
            },
            "magnification",
        ),
    ] {
        let e = paganin(x.view_mut(), &o).unwrap_err();
        assert!(e.to_string().contains(needle), "{e}");
    }
    let mut empty = Array3::<f32>::zeros([2, 0, 4]);
    assert!(paganin(empty.view_mut(), &opts).is_err());
}
