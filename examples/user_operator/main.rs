//! A user-defined linear operator — a detector blur on sinograms — plugged into rodl: the
//! operator traits ([`DetectorBlur`] in `blur.rs`), the adjoint and linearity checks, the
//! algebra on concrete types (blur ∘ ray transform, no `Arc` wrapping) and a CGLS
//! reconstruction through the composed forward model.
//!
//! ```text
//! cargo run --release --example user_operator
//! ```
//!
//! The same operator has a property test, `tests/user_operator.rs`: `check_adjoint` on random
//! spaces and kernels drawn with `rodl::diagnostics::strategies` (feature `proptest`).

mod blur;

use blur::DetectorBlur;
use rodl::prelude::*;

fn main() -> rodl::Result<()> {
    let space = uniform_discr::<f64>(&[-1.0, -1.0], &[1.0, 1.0], &[64, 64])?;
    let ray = RayTransform::new(
        space.clone(),
        parallel_beam_geometry(&space, Some(90))?,
        Backend::default(),
    )?;
    let blur = DetectorBlur::new(ray.range().clone(), vec![0.1, 0.2, 0.4, 0.2, 0.1])?;

    // Checks of the user's operator: near 1e-16 in f64 when the adjoint is right.
    let adj = check_adjoint(&blur, 5, 0)?;
    let lin = check_linearity(&blur, 5, 0)?;
    println!(
        "blur:           adjoint error {:.1e}, linearity error {:.1e}, |B| ~ {:.4}",
        adj.max_rel_error, lin, adj.opnorm
    );

    // The forward model y = B A x; its adjoint A* B* is assembled from the parts.
    let model = blur.compose(ray)?;
    let report = check_adjoint(model.as_ref(), 3, 1)?;
    println!(
        "blur o ray:     adjoint error {:.1e}, |BA| ~ {:.4}",
        report.max_rel_error, report.opnorm
    );

    // Blurred data, and CGLS through the model (10 iterations, from 0).
    let phantom = shepp_logan(&space, true)?;
    let data = model.apply(&phantom)?;
    let mut x = space.zero()?;
    cgls(model.as_ref(), &mut x, &data, 10, &mut ())?;
    println!(
        "CGLS, 10 it.:   relative error {:.3} against the phantom",
        space.dist(&x, &phantom)? / space.norm(&phantom)?
    );
    Ok(())
}
