//! Seeded noise (rodl::tomo::phantom::noise): distributions checked by their moments against
//! the model, reproducibility, the transmission (photon-count) model, and argument errors.
//! Bounds are several standard errors wide, so a correct sampler passes for any seed.

use rand::rngs::StdRng;
use rand::SeedableRng;
use rodl::tomo::phantom::noise::{
    add_gaussian_noise, poisson_noise, transmission_noise, white_noise, NoiseLevel,
};
use rodl::{rn, uniform_discr, Element, Error, Space};

fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

fn values(x: &Element<f64>) -> Vec<f64> {
    x.as_slice().unwrap().to_vec()
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (
        m,
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0),
    )
}

#[test]
fn white_noise_has_the_requested_moments() {
    let n = 100_000;
    let space = rn::<f64>(&[n]).unwrap();
    let x = white_noise(&space, 0.3, &mut rng(1)).unwrap();
    let (m, v) = mean_var(&values(&x));
    // standard errors: mean σ/√N = 9.5e-4, standard deviation σ/√(2N) = 6.7e-4
    assert!(m.abs() < 5.0 * 0.3 / (n as f64).sqrt(), "{m}");
    assert!(
        (v.sqrt() - 0.3).abs() < 5.0 * 0.3 / (2.0 * n as f64).sqrt(),
        "{v}"
    );
    // f32 too
    let s32 = rn::<f32>(&[n]).unwrap();
    let y = white_noise(&s32, 2.0, &mut rng(2)).unwrap();
    let y: Vec<f64> = y.as_slice().unwrap().iter().map(|&v| v as f64).collect();
    let (_, v) = mean_var(&y);
    assert!((v.sqrt() - 2.0).abs() < 0.02, "{v}");
}

#[test]
fn noise_is_reproducible_from_the_seed() {
    let space = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[16, 16]).unwrap();
    let x = space.one().unwrap();
    let level = NoiseLevel::Absolute(0.1);
    let a = add_gaussian_noise(&space, &x, level, &mut rng(42)).unwrap();
    let b = add_gaussian_noise(&space, &x, level, &mut rng(42)).unwrap();
    let c = add_gaussian_noise(&space, &x, level, &mut rng(43)).unwrap();
    assert_eq!(values(&a), values(&b));
    assert_ne!(values(&a), values(&c));
    let p = poisson_noise(&space, &space.full(5.0).unwrap(), &mut rng(7)).unwrap();
    let q = poisson_noise(&space, &space.full(5.0).unwrap(), &mut rng(7)).unwrap();
    assert_eq!(values(&p), values(&q));
}

#[test]
fn relative_gaussian_noise_scales_with_the_data_norm() {
    let n = 20_000;
    let space = uniform_discr::<f64>(&[-1.0], &[1.0], &[n]).unwrap();
    let x = space.element_from_fn(|p| 3.0 * p[0] + 1.0).unwrap();
    for rel in [0.01, 0.1] {
        let y = add_gaussian_noise(&space, &x, NoiseLevel::Relative(rel), &mut rng(5)).unwrap();
        let got = space.dist(&x, &y).unwrap() / space.norm(&x).unwrap();
        // ‖n‖/‖x‖ has relative standard deviation 1/√(2N) = 0.5 %
        assert!((got / rel - 1.0).abs() < 0.025, "rel {rel}: got {got}");
    }
    // The resolved σ is level · rms(x): rms of 3p + 1 on [-1, 1] is √(3 + 1) = 2.
    let sigma = NoiseLevel::Relative(0.5).sigma(&x).unwrap();
    assert!((sigma - 1.0).abs() < 1e-6, "{sigma}");
    assert_eq!(NoiseLevel::Absolute(0.25).sigma(&x).unwrap(), 0.25);
}

#[test]
fn gaussian_noise_on_product_elements() {
    let part = rn::<f64>(&[20_000]).unwrap();
    let space = Space::product(vec![part.clone(), part.clone()]).unwrap();
    let x = space.zero().unwrap();
    let y = add_gaussian_noise(&space, &x, NoiseLevel::Absolute(0.5), &mut rng(9)).unwrap();
    for p in y.parts().unwrap() {
        let (_, v) = mean_var(&values(p));
        assert!((v.sqrt() - 0.5).abs() < 0.02, "{v}");
    }
    assert_ne!(values(y.part(0).unwrap()), values(y.part(1).unwrap()));
    let w = white_noise(&space, 1.0, &mut rng(1)).unwrap();
    assert_eq!(w.parts().unwrap().len(), 2);
}

#[test]
fn poisson_noise_has_poisson_statistics() {
    let n = 100_000;
    let space = rn::<f64>(&[n]).unwrap();
    for lambda in [0.7, 3.5, 250.0] {
        let k = values(&poisson_noise(&space, &space.full(lambda).unwrap(), &mut rng(3)).unwrap());
        assert!(k.iter().all(|&v| v >= 0.0 && v.fract() == 0.0));
        let (m, v) = mean_var(&k);
        // mean: standard error √(λ/N); variance: ≈ λ √(2/N) (plus a small excess-kurtosis term)
        assert!(
            (m - lambda).abs() < 5.0 * (lambda / n as f64).sqrt(),
            "λ {lambda}: mean {m}"
        );
        assert!((v / lambda - 1.0).abs() < 0.03, "λ {lambda}: variance {v}");
        // P(k = 0) = e^{−λ}
        let p0 = k.iter().filter(|&&v| v == 0.0).count() as f64 / n as f64;
        let want = (-lambda).exp();
        assert!((p0 - want).abs() < 5.0 * (want * (1.0 - want) / n as f64).sqrt() + 1e-12);
    }
    // A zero intensity gives exactly zero counts; an intensity varying per entry is respected.
    let z = poisson_noise(&space, &space.zero().unwrap(), &mut rng(1)).unwrap();
    assert!(values(&z).iter().all(|&v| v == 0.0));
    let s2 = rn::<f64>(&[2, 50_000]).unwrap();
    let lam = s2
        .element_from_vec([vec![1.0; 50_000], vec![100.0; 50_000]].concat())
        .unwrap();
    let k = values(&poisson_noise(&s2, &lam, &mut rng(4)).unwrap());
    let (m1, _) = mean_var(&k[..50_000]);
    let (m2, _) = mean_var(&k[50_000..]);
    assert!(
        (m1 - 1.0).abs() < 0.03 && (m2 - 100.0).abs() < 0.3,
        "{m1} {m2}"
    );
}

#[test]
fn transmission_noise_follows_beer_lambert_counts() {
    let n = 50_000;
    let space = rn::<f64>(&[n]).unwrap();
    let photons = 1e4;
    for y in [0.0, 1.0, 3.0] {
        let noisy = values(
            &transmission_noise(&space, &space.full(y).unwrap(), photons, &mut rng(8)).unwrap(),
        );
        // Every value is −ln(k / I0) for an integer count k >= 1.
        for &r in &noisy[..100] {
            let k = photons * (-r).exp();
            assert!(
                (k - k.round()).abs() < 1e-6 * k && k.round() >= 1.0,
                "{r} → {k}"
            );
        }
        // Delta method: mean ≈ y + e^y/(2 I0), variance ≈ e^y / I0.
        let (m, v) = mean_var(&noisy);
        let var = y.exp() / photons;
        assert!(
            (m - y - var / 2.0).abs() < 5.0 * (var / n as f64).sqrt() + 0.1 * var,
            "y {y}: {m}"
        );
        assert!((v / var - 1.0).abs() < 0.05, "y {y}: variance {v} vs {var}");
    }
    // Few photons behind a dense object: zero counts are clamped to one, giving ln(I0).
    let noisy =
        values(&transmission_noise(&space, &space.full(10.0).unwrap(), 5.0, &mut rng(2)).unwrap());
    let cap = 5f64.ln();
    assert!(noisy.iter().all(|&r| r <= cap + 1e-12));
    // mean count 5 e^-10 = 2.3e-4: almost all counts are 0
    assert!(noisy.iter().filter(|&&r| (r - cap).abs() < 1e-12).count() > n - 100);
}

#[test]
fn noise_arguments_are_checked() {
    let space = rn::<f64>(&[4]).unwrap();
    let other = rn::<f64>(&[5]).unwrap();
    let x = space.one().unwrap();
    let r = &mut rng(0);
    assert!(matches!(
        white_noise(&space, -1.0, r),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        white_noise(&space, f64::NAN, r),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        add_gaussian_noise(&space, &x, NoiseLevel::Relative(-0.1), r),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        add_gaussian_noise(&other, &x, NoiseLevel::Absolute(0.1), r),
        Err(Error::SpaceMismatch { .. })
    ));
    let neg = space.element_from_vec(vec![1.0, -1.0, 2.0, 3.0]).unwrap();
    assert!(matches!(
        poisson_noise(&space, &neg, r),
        Err(Error::InvalidArgument(_))
    ));
    let nan = space
        .element_from_vec(vec![1.0, f64::NAN, 2.0, 3.0])
        .unwrap();
    assert!(matches!(
        poisson_noise(&space, &nan, r),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        transmission_noise(&space, &nan, 100.0, r),
        Err(Error::InvalidArgument(_))
    ));
    for photons in [0.0, -5.0, f64::INFINITY, 1e300] {
        assert!(matches!(
            transmission_noise(&space, &x, photons, r),
            Err(Error::InvalidArgument(_))
        ));
    }
    let huge = space.full(1e20).unwrap();
    assert!(matches!(
        poisson_noise(&space, &huge, r),
        Err(Error::InvalidArgument(_))
    ));
}

/// GPU elements are refused with a pointer to `to_host()` (needs CUDA device 0).
#[cfg(feature = "cuda")]
#[test]
fn noise_refuses_gpu_elements() {
    let gpu = rodl::Device::Cuda(0);
    let space = rn::<f32>(&[8])
        .unwrap()
        .with_device(gpu)
        .expect("needs CUDA device 0");
    let x = space.one().unwrap();
    let r = &mut rng(0);
    for res in [
        white_noise(&space, 1.0, r).map(|_| ()),
        add_gaussian_noise(&space, &x, NoiseLevel::Absolute(1.0), r).map(|_| ()),
        poisson_noise(&space, &x, r).map(|_| ()),
        transmission_noise(&space, &x, 10.0, r).map(|_| ()),
    ] {
        match res {
            Err(Error::Unsupported(m)) => assert!(m.contains("to_host"), "{m}"),
            other => panic!("expected Unsupported, got {other:?}"),
        }
    }
}

/// `level · rms` of all the entries of `pieces` together, computed here.
fn relative_sigma(level: f64, pieces: &[Vec<f64>]) -> f64 {
    let all: Vec<f64> = pieces.iter().flatten().cloned().collect();
    level * (all.iter().map(|x| x * x).sum::<f64>() / all.len() as f64).sqrt()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Guards the relative noise level over data held in pieces: `sigma_over` of random pieces
    /// of random lengths (some empty) equals `level · rms` of all their entries together, and
    /// the same for the whole data as one piece, to rounding; so a normalisation that counts
    /// the entries or squares of only some pieces fails.
    #[test]
    fn relative_level_over_pieces_is_the_level_over_the_whole(
        pieces in proptest::collection::vec(
            proptest::collection::vec(-5.0..5.0f64, 0..40), 1..6),
        level in 0.01..2.0f64,
    ) {
        let total: usize = pieces.iter().map(Vec::len).sum();
        proptest::prop_assume!(total > 0 && pieces.iter().flatten().any(|x| *x != 0.0));
        let want = relative_sigma(level, &pieces);
        let refs: Vec<&[f64]> = pieces.iter().map(|p| p.as_slice()).collect();
        let got = NoiseLevel::Relative(level).sigma_over(&refs).unwrap();
        let whole: Vec<f64> = pieces.iter().flatten().cloned().collect();
        let one = NoiseLevel::Relative(level).sigma_over(&[&whole]).unwrap();
        proptest::prop_assert!((got - want).abs() <= 1e-14 * want, "{got} vs {want}");
        proptest::prop_assert!((one - want).abs() <= 1e-14 * want, "{one} vs {want}");
    }
}

/// Guards the relative noise level of product elements: the σ of `(a, b, c)` (parts of
/// different sizes and scales, one a product itself) is `level · rms` over all their entries,
/// not over one part; and noise added to the product element has that σ in every part.
#[test]
fn relative_level_over_product_parts_is_the_level_over_the_whole() {
    let s1 = rn::<f64>(&[3]).unwrap();
    let s2 = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 2.0], &[4, 5]).unwrap();
    let inner = Space::product(vec![s1.clone(), s1.clone()]).unwrap();
    let space = Space::product(vec![s1.clone(), s2.clone(), inner.clone()]).unwrap();
    let a = vec![1.0, -2.0, 3.0];
    let b: Vec<f64> = (0..20).map(|k| 10.0 + k as f64).collect();
    let c = vec![0.5, 0.0, -0.5];
    let d = vec![4.0, 4.0, -4.0];
    let x = space
        .product_element(vec![
            s1.element_from_vec(a.clone()).unwrap(),
            s2.element_from_vec(b.clone()).unwrap(),
            inner
                .product_element(vec![
                    s1.element_from_vec(c.clone()).unwrap(),
                    s1.element_from_vec(d.clone()).unwrap(),
                ])
                .unwrap(),
        ])
        .unwrap();
    let want = relative_sigma(0.2, &[a.clone(), b.clone(), c.clone(), d.clone()]);
    let got = NoiseLevel::Relative(0.2).sigma(&x).unwrap();
    assert!((got - want).abs() <= 1e-14 * want, "{got} vs {want}");
    // The levels of single parts are far from it (so the check above discriminates).
    for part in [&a, &b, &d] {
        let alone = relative_sigma(0.2, std::slice::from_ref(part));
        assert!((alone / want - 1.0).abs() > 0.1, "{alone} vs {want}");
    }
    // Noise added to the product: every part gets N(0, σ²) with that σ (a large product so
    // that the sample deviation is within 2 % at 5 standard errors).
    let big = rn::<f64>(&[20_000]).unwrap();
    let small = rn::<f64>(&[20_000]).unwrap();
    let prod = Space::product(vec![big.clone(), small.clone()]).unwrap();
    let x = prod
        .product_element(vec![big.full(3.0).unwrap(), small.full(0.5).unwrap()])
        .unwrap();
    let sigma = 0.1 * ((9.0 + 0.25) / 2.0f64).sqrt();
    let y = add_gaussian_noise(&prod, &x, NoiseLevel::Relative(0.1), &mut rng(11)).unwrap();
    for (k, (px, py)) in x
        .parts()
        .unwrap()
        .iter()
        .zip(y.parts().unwrap())
        .enumerate()
    {
        let r: Vec<f64> = values(py)
            .iter()
            .zip(values(px))
            .map(|(a, b)| a - b)
            .collect();
        let (_, v) = mean_var(&r);
        assert!(
            (v.sqrt() / sigma - 1.0).abs() < 0.025,
            "part {k}: {} vs {sigma}",
            v.sqrt()
        );
    }
}
