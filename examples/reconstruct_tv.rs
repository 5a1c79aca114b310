//! Total-variation regularised reconstruction of a noisy Shepp–Logan sinogram by PDHG
//! (Chambolle–Pock), with PSNR, SSIM and timing, and PNGs of the phantom and the result.
//!
//! ```text
//! cargo run --release --example reconstruct_tv -- [OUT_DIR] [--device cuda:0] [--size N] [--angles N]
//! ```
//!
//! The data (see `reconstruct_common`): modified Shepp–Logan phantom, 2D parallel beam with
//! ODL's `parallel_beam_geometry` sampling, seeded Poisson noise. The problem, as in ODL's
//! `pdhg_tomography` example:
//!
//! ```text
//! min_{x ≥ 0}  ½ ‖A x − y‖² + λ ‖ |∇x|₂ ‖₁
//! ```
//!
//! (isotropic TV), solved with the library's recipe [`rodl::solvers::tv::pdhg_tv`] in its
//! default set-up: PDHG on `f(x) + g(K x)` with `f = ι_{x ≥ 0}`, `K = (A, μ∇)` and
//! `g = SeparableSum(½ ‖· − y‖², (λ/μ) GroupL1Norm)`. The factor `μ = ‖A‖ / ‖∇‖` balances the
//! two blocks of `K` (on `[-1, 1]²` the gradient's norm is about 60 times the ray
//! transform's); it changes the path of PDHG, not the minimiser. The norms are the recipe's
//! upper bounds ([`rodl::solvers::tv::Bounds`]), so `‖K‖ ≤ √2 ‖A‖`, and the steps are
//! `τ = 0.99 √r / ‖K‖`, `σ = 0.99 / (√r ‖K‖)`, so that `τ σ ‖K‖² < 1`, with the ratio
//! `r = τ/σ` estimated from the data ([`rodl::solvers::iterative::auto_step_ratio`]; about 38
//! here, as good as the best hand-tuned ratio: equal steps, `r = 1`, need about three times
//! the iterations). `examples/reconstruct_tv_cone.rs` builds the same solver from the
//! functionals.
//!
//! The objective is printed every `PRINT_EVERY` iterations (computed in the callback by
//! [`rodl::solvers::tv::TvProblem::objective`]; one extra application of `A` and `∇` each time).
//! With `--device cuda:N` the same code runs with the spaces on that GPU (Gradient, ray
//! transform, proximal steps and reductions all stay on the device); without a usable GPU it
//! stops with a one-line error.

mod reconstruct_common;

use std::time::Instant;

use reconstruct_common::{
    exit_on_error, parse_args, save_png, timed, ExampleResult, Problem, Real,
};
use rodl::prelude::*;
use rodl::solvers::iterative::auto_step_ratio;

/// PDHG iterations.
const ITERATIONS: usize = 200;
/// Weight `λ` of the total variation. The data term is measured in the sinogram space's
/// weighted norm (cells of `Δθ × Δu`) and TV as `∫ |∇x|₂` over `[-1, 1]²`; λ near 3e-5 gives
/// the best PSNR, near 5e-5 the best SSIM for this noise level.
const LAMBDA: f64 = 4e-5;
/// Print the objective every this many iterations.
const PRINT_EVERY: usize = 25;

fn main() {
    exit_on_error(run());
}

fn run() -> ExampleResult<()> {
    let Some(args) = parse_args("reconstruct_tv", 128)? else {
        return Ok(());
    };
    std::fs::create_dir_all(&args.out_dir)?;
    let problem = Problem::new(&args)?;
    let (space, data, device) = (&problem.space, &problem.data, args.device);

    // The problem and its norm bounds.
    let t = Instant::now();
    let ray: LinOp<Real> = problem.ray.clone();
    let tv = TvProblem::new(ray, data, LAMBDA)?;
    let b = tv.bounds();
    let k_norm = std::f64::consts::SQRT_2 * b.ray;
    let ratio = auto_step_ratio(problem.ray.as_ref(), data)?; // what the default set-up uses
    println!(
        "norms      |A| <= {:.4}, |grad| <= {:.2}, mu = {:.3e}, |K| <= {k_norm:.4}, \
         tau/sigma = {ratio:.2} ({:.2} s)",
        b.ray,
        b.grad,
        b.ray / b.grad,
        t.elapsed().as_secs_f64()
    );

    // Print the objective every PRINT_EVERY iterations.
    let start = Instant::now();
    let mut progress = |x: &Element<Real>, info: &IterationInfo| -> rodl::Result<Control> {
        if info.iteration % PRINT_EVERY == 0 || info.iteration == 1 {
            println!(
                "  iter {:4}   objective {:12.6e}   {:6.2} s",
                info.iteration,
                tv.objective(x)?,
                start.elapsed().as_secs_f64()
            );
        }
        Ok(Control::Continue)
    };

    println!("PDHG, lambda = {LAMBDA:e}, {ITERATIONS} iterations from x = 0");
    let mut x = space.zero()?;
    let options = PdhgTvOptions::default();
    let (n, seconds) = timed(device, || {
        Ok(pdhg_tv(&tv, &mut x, ITERATIONS, &options, &mut progress)?.iterations)
    })?;
    let (psnr, ssim) = problem.quality(&x)?;
    println!(
        "\nTV-PDHG: {n} iterations in {seconds:.2} s ({:.1} ms per iteration)",
        1e3 * seconds / n.max(1) as f64
    );
    println!("  PSNR {psnr:.2} dB, SSIM {ssim:.4} against the phantom");

    let p1 = save_png(&args.out_dir, "phantom.png", &problem.phantom)?;
    let p2 = save_png(&args.out_dir, "tv_pdhg.png", &x)?;
    println!("wrote {} and {}", p1.display(), p2.display());
    Ok(())
}
