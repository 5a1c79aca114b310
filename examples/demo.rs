//! rodl demo: discretised spaces, operator algebra, exact adjoints, and a small solver that only
//! talks to the operator interface.
//!
//! Run with `cargo run --release --example demo`.

use std::sync::Arc;

use rand::SeedableRng;
use rodl::prelude::*;
use rodl::{diagonal_operator, BroadcastOperator};

fn main() -> Result<()> {
    println!("rodl demo: spaces, operators, adjoints\n");

    // ------------------------------------------------------------------ spaces and elements
    let n = 128;
    let x: Space<f64> = uniform_discr(&[-1.0, -1.0], &[1.0, 1.0], &[n, n])?;
    println!("space X        = {x}");
    println!(
        "cell volume    = {:e} (the weight of the inner product)",
        x.cell_volume()?
    );
    let r2 = x.element_from_fn(|p| p[0] * p[0] + p[1] * p[1])?;
    println!(
        "∫ (x² + y²)    = {:.10}   (exact 8/3 = {:.10}, midpoint rule)",
        x.integral(&r2)?,
        8.0 / 3.0
    );
    println!(
        "‖1‖²           = {:.12}   (the area)",
        x.norm(&x.one()?)?.powi(2)
    );

    // ------------------------------------------------------------------ operators and algebra
    let grad: LinOp<f64> = Arc::new(Gradient::new(x.clone())?);
    let id: LinOp<f64> = Arc::new(IdentityOperator::new(x.clone()));
    let lambda = 1e-3;
    // A = I + λ ∇*∇ (symmetric positive definite)
    let a = id.plus(&grad.adjoint()?.compose(&grad)?.scaled(lambda)?)?;
    println!("\noperator A     = {}", a.name());
    let h = 2.0 / n as f64;
    let formula = 2f64.sqrt() * 2.0 * (std::f64::consts::PI / (2 * n + 1) as f64).cos() / h;
    println!(
        "‖∇‖            ≈ {:.6} (100 power iterations, from below; exact {formula:.6})",
        grad.norm_estimate()?
    );

    // product-space operators: (x ↦ (∇x, w·x)) and a block diagonal
    let w = x.element_from_fn(|p| (-4.0 * (p[0] * p[0] + p[1] * p[1])).exp())?;
    let mul: LinOp<f64> = Arc::new(MultiplyOperator::new(x.clone(), w)?);
    let stacked: LinOp<f64> = Arc::new(BroadcastOperator::new(vec![grad.clone(), mul.clone()])?);
    let diag = diagonal_operator(vec![grad.clone(), mul.clone()])?;
    println!(
        "(∇, w·)        : X → X² × X, {} values in, {} out",
        stacked.domain().size(),
        stacked.range().size()
    );

    // ------------------------------------------------------------------ adjoint checks
    println!("\nadjoint check  |⟨Ax,y⟩ − ⟨x,A*y⟩| / (‖A‖‖x‖‖y‖), 3 random pairs:");
    let ops: Vec<(&str, LinOp<f64>)> = vec![
        ("gradient", grad.clone()),
        ("A = I + λ∇*∇", a.clone()),
        ("(∇, w·)", stacked.clone()),
        ("diag(∇, w·)", diag),
        ("(∇ ∘ w·)*", grad.compose(&mul)?.adjoint()?),
    ];
    for (name, op) in &ops {
        let r = check_adjoint(op.as_ref(), 3, 42)?;
        println!(
            "  {name:<14} ‖A‖ ≈ {:>10.4}   error {:.1e}",
            r.opnorm, r.max_rel_error
        );
    }
    // single precision works the same way
    let x32 = x.with_scalar::<f32>();
    let r = check_adjoint(&Gradient::new(x32)?, 3, 42)?;
    println!("  gradient, f32  error {:.1e}", r.max_rel_error);

    // ------------------------------------------------------------------ a solver
    // Smooth a noisy image: solve (I + λ∇*∇) u = f by conjugate gradients.
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let truth = x.element_from_fn(|p| {
        if p[0].abs() < 0.5 && p[1].abs() < 0.5 {
            1.0
        } else {
            0.0
        }
    })?;
    let noise = x.random_normal(&mut rng)?;
    let mut f = x.zero()?;
    x.lincomb(1.0, &truth, 0.3, &noise, &mut f)?;
    let u = conjugate_gradient(a.as_ref(), &f, 50)?;
    println!(
        "\ndenoising      ‖f − truth‖ = {:.4},  ‖u − truth‖ = {:.4}",
        x.dist(&f, &truth)?,
        x.dist(&u, &truth)?
    );
    Ok(())
}

/// Conjugate gradients for a symmetric positive definite operator, starting from 0. Uses only
/// the operator interface and the space's vector operations.
fn conjugate_gradient(
    op: &dyn LinearOperator<f64>,
    b: &Element<f64>,
    iters: usize,
) -> Result<Element<f64>> {
    let s = op.domain();
    let mut u = s.zero()?;
    let mut r = b.try_clone()?;
    let mut p = b.try_clone()?;
    let mut ap = s.zero()?;
    let mut rr = s.inner(&r, &r)?;
    let r0 = rr.sqrt();
    for k in 0..iters {
        op.apply_into(&p, &mut ap)?;
        let alpha = rr / s.inner(&p, &ap)?;
        s.axpby(alpha, &p, 1.0, &mut u)?;
        s.axpby(-alpha, &ap, 1.0, &mut r)?;
        let rr_new = s.inner(&r, &r)?;
        if k % 10 == 9 {
            println!(
                "  CG iteration {:>3}: relative residual {:.2e}",
                k + 1,
                rr_new.sqrt() / r0
            );
        }
        s.axpby(1.0, &r, rr_new / rr, &mut p)?;
        rr = rr_new;
    }
    Ok(u)
}
