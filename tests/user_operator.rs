//! The property test of the `user_operator` example's operator: the detector blur's adjoint is
//! exact (to rounding) on random spaces, with random kernels, in f64 and f32.

use proptest::collection::vec;
use proptest::prelude::*;
use rodl::diagnostics::strategies::{discr_space, tensor_space};
use rodl::{check_adjoint, check_linearity};

#[path = "../examples/user_operator/blur.rs"]
mod blur;

use blur::DetectorBlur;

/// A kernel of odd length 1 to 7 with entries in [-1, 1].
fn kernel() -> impl Strategy<Value = Vec<f64>> {
    (0usize..=3).prop_flat_map(|m| vec(-1.0f64..1.0, 2 * m + 1))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn blur_adjoint_is_exact_f64(
        space in discr_space::<f64>(1..=3, 1..=9),
        w in kernel(),
        seed in any::<u64>(),
    ) {
        let op = DetectorBlur::new(space, w).unwrap();
        let report = check_adjoint(&op, 3, seed).unwrap();
        prop_assert!(report.max_rel_error < 1e-14, "{report:?}");
        prop_assert!(check_linearity(&op, 2, seed).unwrap() < 1e-14);
    }

    #[test]
    fn blur_adjoint_is_exact_f32(
        space in tensor_space::<f32>(1..=2, 1..=9),
        w in kernel(),
        seed in any::<u64>(),
    ) {
        let op = DetectorBlur::new(space, w).unwrap();
        let report = check_adjoint(&op, 3, seed).unwrap();
        prop_assert!(report.max_rel_error < 1e-5, "{report:?}");
    }
}

#[test]
fn blur_rejects_even_and_non_finite_kernels() {
    let space = rodl::rn::<f64>(&[4]).unwrap();
    assert!(DetectorBlur::new(space.clone(), vec![0.5, 0.5]).is_err());
    assert!(DetectorBlur::new(space.clone(), vec![]).is_err());
    assert!(DetectorBlur::new(space, vec![f64::NAN]).is_err());
}
