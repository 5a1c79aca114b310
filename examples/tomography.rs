//! Tomography demo: phantom → sinogram → back-projection → iterative reconstruction.
//!
//! ```text
//! cargo run --release --example tomography -- [OUT_DIR] [--shepp-logan]
//! ```
//!
//! Builds a 2D parallel-beam ray transform, projects a phantom (Gaussian blobs on 128 × 128 by
//! default; `--shepp-logan` uses ODL's modified Shepp–Logan phantom and geometry from
//! `tests/data/odl/par2d_64*`), back-projects the sinogram with the exact adjoint, checks
//! `⟨A x, y⟩ = ⟨x, A* y⟩`, and runs Landweber and CGLS iterations written against the operator
//! interface. Timings are printed; the phantom, sinogram, back-projection and reconstructions
//! are written as `.npy` files into OUT_DIR (default `target/tomography-demo`).

use std::error::Error;
use std::path::{Path, PathBuf};
use std::time::Instant;

use ndarray::ArrayD;
use ndarray_npy::{read_npy, write_npy};
use rodl::prelude::*;
use rodl::tomo::phantom::{gaussian_phantom, GaussianBlob};

type Real = f32;

/// Errors of the demo.
type DemoResult<T> = Result<T, Box<dyn Error>>;

/// A test case: the volume, the geometry and the phantom.
struct Case {
    space: Space<Real>,
    geometry: Geometry,
    phantom: Element<Real>,
}

/// Iterations of each reconstruction method.
const ITERATIONS: usize = 20;

fn main() -> DemoResult<()> {
    let total = Instant::now();
    let mut out_dir = PathBuf::from("target/tomography-demo");
    let mut shepp_logan = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--shepp-logan" => shepp_logan = true,
            "-h" | "--help" => {
                println!("usage: tomography [OUT_DIR] [--shepp-logan]");
                return Ok(());
            }
            s if s.starts_with('-') => return Err(format!("unknown option {s}").into()),
            s => out_dir = PathBuf::from(s),
        }
    }
    std::fs::create_dir_all(&out_dir)?;

    let Case {
        space,
        geometry,
        phantom,
    } = if shepp_logan {
        shepp_logan_case()?
    } else {
        blob_case()?
    };
    let ray = RayTransform::new(space.clone(), geometry, Backend::default())?;
    println!("volume  {space}");
    println!("data    {}", ray.range());
    println!("threads {}", rayon::current_num_threads());

    // Forward projection and back-projection (best of three runs each).
    let mut sino = ray.range().zero()?;
    let t_fwd = best_of(3, || ray.apply_into(&phantom, &mut sino))?;
    let adjoint = ray.adjoint()?;
    let mut backprojection = space.zero()?;
    let t_adj = best_of(3, || adjoint.apply_into(&sino, &mut backprojection))?;
    println!("forward  A x : {:8.2} ms", t_fwd * 1e3);
    println!("adjoint  A* y: {:8.2} ms", t_adj * 1e3);

    // The adjoint is the exact adjoint of the discretised forward operator.
    let t = Instant::now();
    let report = check_adjoint(&ray, 3, 2024)?;
    println!(
        "adjoint check: max |<Ax,y> - <x,A*y>| / (|A| |x| |y|) = {:.2e} over {} pairs \
         (rounding unit of {}: {:.1e}), |A| ~ {:.4} ({:.0} ms)",
        report.max_rel_error,
        report.trials,
        std::any::type_name::<Real>(),
        Real::EPSILON,
        report.opnorm,
        t.elapsed().as_secs_f64() * 1e3
    );

    let landweber = landweber(&ray, &sino, &phantom)?;
    let cgls = cgls(&ray, &sino, &phantom)?;

    save(&out_dir, "phantom.npy", &phantom)?;
    save(&out_dir, "sinogram.npy", &sino)?;
    save(&out_dir, "backprojection.npy", &backprojection)?;
    save(&out_dir, "landweber.npy", &landweber)?;
    save(&out_dir, "cgls.npy", &cgls)?;
    println!(
        "\nwrote phantom, sinogram, back-projection and reconstructions (.npy) to {} \
         ({:.1} s in all)",
        out_dir.display(),
        total.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Gaussian blobs on [-1, 1]² with 128 × 128 cells, 160 parallel-beam angles over [0, π).
fn blob_case() -> DemoResult<Case> {
    let space = uniform_discr::<Real>(&[-1.0, -1.0], &[1.0, 1.0], &[128, 128])?;
    let geometry = parallel_beam_geometry(&space, Some(160))?;
    let blob = |x: f64, y: f64, sigma: f64, amplitude: f64| GaussianBlob {
        center: [x, y, 0.0],
        sigma,
        amplitude,
    };
    let blobs = [
        blob(0.0, 0.0, 0.45, 1.0),
        blob(-0.3, 0.35, 0.12, 0.8),
        blob(0.4, -0.2, 0.08, -0.5),
        blob(0.25, 0.45, 0.04, 1.5),
        blob(-0.45, -0.4, 0.15, 0.6),
    ];
    let phantom = gaussian_phantom(&space, &blobs)?;
    Ok(Case {
        space,
        geometry,
        phantom,
    })
}

/// ODL's modified Shepp–Logan phantom with the geometry of `tests/data/odl/par2d_64.json`.
fn shepp_logan_case() -> DemoResult<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/odl");
    let spec = TomoSpec::from_file(dir.join("par2d_64.json"))?;
    let space = spec.volume.space::<Real>()?;
    let image: ArrayD<Real> = read_npy(dir.join("par2d_64_image.npy"))?;
    let phantom = space.element(image)?;
    Ok(Case {
        space,
        geometry: spec.geometry.build()?,
        phantom,
    })
}

/// Landweber iteration `x ← x + ω A*(y − A x)` with `ω = 1/‖A‖²`, from `x = 0`.
fn landweber<A: LinearOperator<Real>>(
    ray: &A,
    y: &Element<Real>,
    truth: &Element<Real>,
) -> DemoResult<Element<Real>> {
    let (domain, range) = (ray.domain(), ray.range());
    let adjoint = ray.adjoint()?;
    let omega = 1.0 / ray.norm_estimate()?.powi(2);
    let y_norm = range.norm(y)?;
    let mut x = domain.zero()?;
    let mut residual = range.zero()?;
    let mut gradient = domain.zero()?;
    println!("\nLandweber, ω = 1/‖A‖² = {omega:.4e}");
    println!("  iter   ‖y − Ax‖/‖y‖   ‖x − x_true‖/‖x_true‖");
    let start = Instant::now();
    for k in 0..=ITERATIONS {
        ray.apply_into(&x, &mut residual)?; // residual = A x
        range.axpby(1.0, y, -1.0, &mut residual)?; // residual = y − A x
        if k % 5 == 0 {
            print_progress(k, range.norm(&residual)? / y_norm, &x, truth, domain)?;
        }
        if k == ITERATIONS {
            break;
        }
        adjoint.apply_into(&residual, &mut gradient)?;
        domain.axpby(omega as Real, &gradient, 1.0, &mut x)?; // x += ω A*(y − A x)
    }
    println!(
        "  ({ITERATIONS} iterations in {:.0} ms)",
        start.elapsed().as_secs_f64() * 1e3
    );
    Ok(x)
}

/// CGLS (conjugate gradients on the normal equations `A*A x = A* y`), from `x = 0`.
fn cgls<A: LinearOperator<Real>>(
    ray: &A,
    y: &Element<Real>,
    truth: &Element<Real>,
) -> DemoResult<Element<Real>> {
    let (domain, range) = (ray.domain(), ray.range());
    let adjoint = ray.adjoint()?;
    let y_norm = range.norm(y)?;
    let mut x = domain.zero()?;
    let mut r = range.zero()?;
    range.assign(y, &mut r)?; // r = y − A·0
    let mut s = adjoint.apply(&r)?;
    let mut p = domain.zero()?;
    domain.assign(&s, &mut p)?;
    let mut q = range.zero()?;
    let mut gamma = domain.inner(&s, &s)?;
    println!("\nCGLS");
    println!("  iter   ‖y − Ax‖/‖y‖   ‖x − x_true‖/‖x_true‖");
    let start = Instant::now();
    for k in 0..=ITERATIONS {
        if k % 5 == 0 {
            print_progress(k, range.norm(&r)? / y_norm, &x, truth, domain)?;
        }
        if k == ITERATIONS {
            break;
        }
        ray.apply_into(&p, &mut q)?;
        let qq = range.inner(&q, &q)?;
        if qq == 0.0 || gamma == 0.0 {
            break;
        }
        let alpha = gamma / qq;
        domain.axpby(alpha as Real, &p, 1.0, &mut x)?; // x += α p
        range.axpby(-alpha as Real, &q, 1.0, &mut r)?; // r −= α A p
        adjoint.apply_into(&r, &mut s)?; // s = A* r
        let gamma_new = domain.inner(&s, &s)?;
        domain.axpby(1.0, &s, (gamma_new / gamma) as Real, &mut p)?; // p = s + β p
        gamma = gamma_new;
    }
    println!(
        "  ({ITERATIONS} iterations in {:.0} ms)",
        start.elapsed().as_secs_f64() * 1e3
    );
    Ok(x)
}

fn print_progress(
    k: usize,
    rel_residual: f64,
    x: &Element<Real>,
    truth: &Element<Real>,
    domain: &Space<Real>,
) -> rodl::Result<()> {
    let rel_error = domain.dist(x, truth)? / domain.norm(truth)?;
    println!("  {k:4}   {rel_residual:14.3e}   {rel_error:14.3e}");
    Ok(())
}

/// The shortest wall time of `runs` calls, in seconds.
fn best_of(runs: usize, mut f: impl FnMut() -> rodl::Result<()>) -> rodl::Result<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let t = Instant::now();
        f()?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok(best)
}

fn save(dir: &Path, name: &str, x: &Element<Real>) -> DemoResult<()> {
    write_npy(dir.join(name), &x.as_array()?)?;
    Ok(())
}
