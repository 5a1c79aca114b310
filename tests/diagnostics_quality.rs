//! Image-quality figures of merit (rodl::diagnostics::quality): PSNR, SSIM and the relative
//! error, against closed forms, a direct (non-separable) SSIM computation, and values computed
//! by scikit-image 0.26.0 (scipy 1.17.1) for the same formula-defined images:
//!
//! ```python
//! from skimage.metrics import structural_similarity as ssim, peak_signal_noise_ratio as psnr
//! i, j = np.meshgrid(np.arange(24), np.arange(20), indexing='ij')
//! ref = np.sin(0.4*i)*np.cos(0.3*j) + 0.01*i;  x = ref + 0.1*np.sin(1.7*i + 0.9*j)
//! R = ref.max() - ref.min()
//! ssim(ref, x, gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=R)
//! ssim(x, ref, ..., data_range=5.0);  psnr(ref, x, data_range=R)
//! i, j, k = np.meshgrid(np.arange(12), np.arange(13), np.arange(14), indexing='ij')
//! ref3 = np.sin(0.5*i) + np.cos(0.4*j)*np.sin(0.3*k);  x3 = 0.9*ref3 + 0.05*np.cos(i+2*j+3*k)
//! ssim(ref3, x3, ..., data_range=ref3.max() - ref3.min())
//! ```

use ndarray::{ArrayD, Dimension, IxDyn};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rodl::diagnostics::quality::{SSIM_K1, SSIM_K2, SSIM_RADIUS, SSIM_SIGMA};
use rodl::diagnostics::{psnr, relative_error, ssim};
use rodl::tomo::phantom::noise::{add_gaussian_noise, NoiseLevel};
use rodl::{rn, uniform_discr, Element, Error, Space};

fn images_2d() -> (Space<f64>, Element<f64>, Element<f64>) {
    let space = rn::<f64>(&[24, 20]).unwrap();
    let r = ArrayD::from_shape_fn(IxDyn(&[24, 20]), |ix| {
        let (i, j) = (ix[0] as f64, ix[1] as f64);
        (0.4 * i).sin() * (0.3 * j).cos() + 0.01 * i
    });
    let x = ArrayD::from_shape_fn(IxDyn(&[24, 20]), |ix| {
        let (i, j) = (ix[0] as f64, ix[1] as f64);
        r[[ix[0], ix[1]]] + 0.1 * (1.7 * i + 0.9 * j).sin()
    });
    let (re, xe) = (space.element(r).unwrap(), space.element(x).unwrap());
    (space, re, xe)
}

#[test]
fn ssim_and_psnr_match_scikit_image_2d() {
    let (space, r, x) = images_2d();
    let s = ssim(&space, &x, &r, None).unwrap();
    assert!((s - 0.9757561428429711).abs() < 1e-12, "{s}");
    let s5 = ssim(&space, &r, &x, Some(5.0)).unwrap();
    assert!((s5 - 0.9779567563770083).abs() < 1e-12, "{s5}");
    let p = psnr(&space, &x, &r, None).unwrap();
    assert!((p - 29.613891242035265).abs() < 1e-10, "{p}");
    eprintln!(
        "vs scikit-image: ssim {:.1e}, ssim (range 5) {:.1e}, psnr {:.1e}",
        s - 0.9757561428429711,
        s5 - 0.9779567563770083,
        p - 29.613891242035265
    );
}

#[test]
fn ssim_matches_scikit_image_3d() {
    let shape = [12, 13, 14];
    let space = rn::<f64>(&shape).unwrap();
    let r = ArrayD::from_shape_fn(IxDyn(&shape), |ix| {
        let (i, j, k) = (ix[0] as f64, ix[1] as f64, ix[2] as f64);
        (0.5 * i).sin() + (0.4 * j).cos() * (0.3 * k).sin()
    });
    let x = ArrayD::from_shape_fn(IxDyn(&shape), |ix| {
        let (i, j, k) = (ix[0] as f64, ix[1] as f64, ix[2] as f64);
        0.9 * r[[ix[0], ix[1], ix[2]]] + 0.05 * (i + 2.0 * j + 3.0 * k).cos()
    });
    let s = ssim(
        &space,
        &space.element(x).unwrap(),
        &space.element(r).unwrap(),
        None,
    )
    .unwrap();
    assert!((s - 0.9878063233440741).abs() < 1e-12, "{s}");
    eprintln!("vs scikit-image 3D: ssim {:.1e}", s - 0.9878063233440741);
}

/// SSIM straight from the definition: an explicit N-D Gaussian window at every sample,
/// reflected indices, and the mean over the interior.
fn ssim_direct(x: &ArrayD<f64>, y: &ArrayD<f64>, range: f64) -> f64 {
    let r = SSIM_RADIUS as isize;
    let g: Vec<f64> = (-r..=r)
        .map(|k| (-((k * k) as f64) / (2.0 * SSIM_SIGMA * SSIM_SIGMA)).exp())
        .collect();
    let gs: f64 = g.iter().sum();
    let shape = x.shape().to_vec();
    let refl = |i: isize, n: usize| -> usize {
        let n = n as isize;
        (if i < 0 {
            -i - 1
        } else if i >= n {
            2 * n - i - 1
        } else {
            i
        }) as usize
    };
    let (c1, c2) = ((SSIM_K1 * range).powi(2), (SSIM_K2 * range).powi(2));
    let offsets: Vec<Vec<isize>> = ndarray::indices(vec![2 * SSIM_RADIUS + 1; shape.len()])
        .into_iter()
        .map(|o| o.slice().iter().map(|&v| v as isize - r).collect())
        .collect();
    let (mut sum, mut count) = (0.0, 0);
    for idx in ndarray::indices(shape.clone()) {
        let idx = idx.slice().to_vec();
        if idx
            .iter()
            .zip(&shape)
            .any(|(&i, &n)| i < SSIM_RADIUS || i + SSIM_RADIUS >= n)
        {
            continue;
        }
        let mut m = [0.0; 5]; // E x, E y, E x², E y², E xy
        for o in &offsets {
            let w: f64 = o.iter().map(|&k| g[(k + r) as usize] / gs).product();
            let p: Vec<usize> = idx
                .iter()
                .zip(o)
                .zip(&shape)
                .map(|((&i, &k), &n)| refl(i as isize + k, n))
                .collect();
            let (a, b) = (x[p.as_slice()], y[p.as_slice()]);
            for (acc, v) in m.iter_mut().zip([a, b, a * a, b * b, a * b]) {
                *acc += w * v;
            }
        }
        let (vx, vy, vxy) = (m[2] - m[0] * m[0], m[3] - m[1] * m[1], m[4] - m[0] * m[1]);
        sum += (2.0 * m[0] * m[1] + c1) * (2.0 * vxy + c2)
            / ((m[0] * m[0] + m[1] * m[1] + c1) * (vx + vy + c2));
        count += 1;
    }
    sum / count as f64
}

#[test]
fn ssim_matches_the_definition_on_random_images() {
    let mut rng = StdRng::seed_from_u64(11);
    for shape in [vec![17, 23], vec![11, 11], vec![12, 14, 11]] {
        let space = rn::<f64>(&shape).unwrap();
        let r = space.random_normal(&mut rng).unwrap();
        let x = add_gaussian_noise(&space, &r, NoiseLevel::Absolute(0.5), &mut rng).unwrap();
        let got = ssim(&space, &x, &r, Some(4.0)).unwrap();
        let want = ssim_direct(
            &x.as_array().unwrap().to_owned(),
            &r.as_array().unwrap().to_owned(),
            4.0,
        );
        eprintln!("{shape:?}: ssim {got:.6}, direct {want:.6}");
        assert!((got - want).abs() < 1e-12, "{shape:?}: {got} vs {want}");
    }
}

#[test]
fn ssim_closed_forms() {
    let space = uniform_discr::<f64>(&[0.0, 0.0], &[1.0, 1.0], &[16, 16]).unwrap();
    let r = space
        .element_from_fn(|p| (7.0 * p[0]).sin() + p[1])
        .unwrap();
    // identical images: exactly 1
    assert_eq!(ssim(&space, &r, &r, None).unwrap(), 1.0);
    // constant images c₁, c₂: SSIM = (2 c₁ c₂ + C1) / (c₁² + c₂² + C1)
    let (a, b, range) = (0.3, 0.7, 1.0);
    let c1 = (SSIM_K1 * range).powi(2);
    let want = (2.0 * a * b + c1) / (a * a + b * b + c1);
    let got = ssim(
        &space,
        &space.full(a).unwrap(),
        &space.full(b).unwrap(),
        Some(range),
    )
    .unwrap();
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    // symmetric in its arguments for a given range; falls as noise grows
    let mut rng = StdRng::seed_from_u64(1);
    let mut last = 1.0;
    for sigma in [0.02, 0.1, 0.5] {
        let x = add_gaussian_noise(&space, &r, NoiseLevel::Absolute(sigma), &mut rng).unwrap();
        let s = ssim(&space, &x, &r, Some(2.0)).unwrap();
        assert_eq!(s, ssim(&space, &r, &x, Some(2.0)).unwrap());
        assert!(s < last, "σ {sigma}: {s} >= {last}");
        last = s;
    }
    // f32 images give the f64 figure of their values
    let s32 = space.with_scalar::<f32>();
    let r32 = s32
        .element(r.as_array().unwrap().mapv(|v| v as f32))
        .unwrap();
    let x32 = s32
        .element(r.as_array().unwrap().mapv(|v| (v * 0.8) as f32))
        .unwrap();
    let x64 = space
        .element(x32.as_array().unwrap().mapv(|v| v as f64))
        .unwrap();
    let r64 = space
        .element(r32.as_array().unwrap().mapv(|v| v as f64))
        .unwrap();
    assert_eq!(
        ssim(&s32, &x32, &r32, None).unwrap(),
        ssim(&space, &x64, &r64, None).unwrap()
    );
}

#[test]
fn psnr_closed_forms() {
    let space = rn::<f64>(&[50, 40]).unwrap();
    let r = space
        .element_from_vec((0..2000).map(|k| (k % 7) as f64 * 0.5).collect())
        .unwrap(); // range 3
    assert_eq!(psnr(&space, &r, &r, None).unwrap(), f64::INFINITY);
    // a constant offset d: MSE = d², PSNR = 20 log10(R / d)
    for d in [0.03, 0.3, 3.0] {
        let mut x = r.try_clone().unwrap();
        x.as_slice_mut().unwrap().iter_mut().for_each(|v| *v += d);
        let p = psnr(&space, &x, &r, None).unwrap();
        assert!((p - 20.0 * (3.0 / d).log10()).abs() < 1e-10, "{d}: {p}");
        let p1 = psnr(&space, &x, &r, Some(1.0)).unwrap();
        assert!((p1 + 20.0 * d.log10()).abs() < 1e-10, "{d}: {p1}");
    }
    // white noise of standard deviation σ: PSNR ≈ 20 log10(R / σ)
    let x = add_gaussian_noise(
        &space,
        &r,
        NoiseLevel::Absolute(0.1),
        &mut StdRng::seed_from_u64(5),
    )
    .unwrap();
    let p = psnr(&space, &x, &r, None).unwrap();
    assert!((p - 20.0 * 30f64.log10()).abs() < 0.15, "{p}");
}

#[test]
fn relative_error_values() {
    let space = uniform_discr::<f64>(&[0.0], &[2.0], &[10]).unwrap();
    let r = space.element_from_fn(|p| 1.0 + p[0]).unwrap();
    let mut x = space.zero().unwrap();
    space.scaled(1.25, &r, &mut x).unwrap();
    assert!((relative_error(&space, &x, &r).unwrap() - 0.25).abs() < 1e-15);
    assert_eq!(relative_error(&space, &r, &r).unwrap(), 0.0);
    let z = space.zero().unwrap();
    assert_eq!(relative_error(&space, &z, &z).unwrap(), 0.0);
    assert_eq!(relative_error(&space, &r, &z).unwrap(), f64::INFINITY);
    assert_eq!(relative_error(&space, &z, &r).unwrap(), 1.0);
    // product spaces: the norm of the whole element
    let pspace = Space::product(vec![space.clone(), space.clone()]).unwrap();
    let pr = pspace
        .product_element(vec![r.try_clone().unwrap(), r.try_clone().unwrap()])
        .unwrap();
    let px = pspace
        .product_element(vec![x.try_clone().unwrap(), r.try_clone().unwrap()])
        .unwrap();
    let want = 0.25 / 2f64.sqrt();
    assert!((relative_error(&pspace, &px, &pr).unwrap() - want).abs() < 1e-15);
}

#[test]
fn quality_arguments_are_checked() {
    let space = rn::<f64>(&[16, 16]).unwrap();
    let other = rn::<f64>(&[16, 15]).unwrap();
    let x = space.one().unwrap();
    let r = space
        .element_from_vec((0..256).map(|k| k as f64).collect())
        .unwrap();
    // constant reference without a range
    assert!(matches!(
        psnr(&space, &r, &x, None),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        ssim(&space, &r, &x, None),
        Err(Error::InvalidArgument(_))
    ));
    // MSE = mean((k − 1)², k < 256) = 21463.5 with range 1: 10·log10(1 / 21463.5).
    let p = psnr(&space, &r, &x, Some(1.0)).unwrap();
    assert!((p - 10.0 * (1.0f64 / 21463.5).log10()).abs() < 1e-9, "{p}");
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            psnr(&space, &x, &r, Some(bad)),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            ssim(&space, &x, &r, Some(bad)),
            Err(Error::InvalidArgument(_))
        ));
    }
    // not in the space
    let y = other.one().unwrap();
    assert!(matches!(
        psnr(&space, &y, &r, None),
        Err(Error::SpaceMismatch { .. })
    ));
    assert!(matches!(
        ssim(&space, &x, &y, None),
        Err(Error::SpaceMismatch { .. })
    ));
    assert!(matches!(
        relative_error(&space, &x, &y),
        Err(Error::SpaceMismatch { .. })
    ));
    // SSIM needs 11 samples per axis
    let small = rn::<f64>(&[10, 30]).unwrap();
    let s = small
        .element_from_vec((0..300).map(|k| k as f64).collect())
        .unwrap();
    assert!(matches!(
        ssim(&small, &s, &s, None),
        Err(Error::InvalidArgument(_))
    ));
    // non-finite entries
    let mut n = r.try_clone().unwrap();
    n.as_slice_mut().unwrap()[3] = f64::NAN;
    assert!(matches!(
        psnr(&space, &n, &r, None),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        ssim(&space, &n, &r, None),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        psnr(&space, &r, &n, None),
        Err(Error::InvalidArgument(_))
    ));
    // product elements
    let p = Space::product(vec![space.clone(), space.clone()]).unwrap();
    let pe = p.one().unwrap();
    assert!(matches!(
        psnr(&p, &pe, &pe, Some(1.0)),
        Err(Error::InvalidArgument(_))
    ));
}

/// GPU elements: PSNR/SSIM ask for `to_host()`, the relative error runs on the device.
#[cfg(feature = "cuda")]
#[test]
fn quality_on_gpu_elements() {
    let gpu = rodl::Device::Cuda(0);
    let host = rn::<f32>(&[16, 16]).unwrap();
    let space = host.with_device(gpu).expect("needs CUDA device 0");
    let r = host
        .element_from_vec((0..256).map(|k| k as f32).collect())
        .unwrap();
    let x = host
        .element_from_vec((0..256).map(|k| k as f32 * 1.1).collect())
        .unwrap();
    let (rg, xg) = (r.to_device(gpu).unwrap(), x.to_device(gpu).unwrap());
    let e = relative_error(&space, &xg, &rg).unwrap();
    assert!((e - relative_error(&host, &x, &r).unwrap()).abs() < 1e-6);
    match psnr(&space, &xg, &rg, None) {
        Err(e) => assert!(e.to_string().contains("to_host"), "{e}"),
        Ok(v) => panic!("expected an error, got {v}"),
    }
    assert!(ssim(&space, &xg, &rg, None).is_err());
}
