//! The `f32` CPU ray transform (AVX2 fast paths on x86-64: windowed, binned and gathered 2D
//! kernels, group and column 3D kernels) against the plain `f64` plane-major kernels, entry by
//! entry, forward and transpose, on medium sizes that cross every lane, row, plane, view and
//! chunk boundary of the kernels (see `fast_path_cases`).
//!
//! The bar is per entry, relative to the largest reference entry: a misplaced tap, a skipped
//! lane group or a wrong detector index changes single entries by a sizeable fraction of a ray
//! sum and fails here even when an adjoint test, normalised by ‖A‖‖x‖‖y‖, would not notice.

mod fast_path_cases;

use fast_path_cases::{cases_2d, cases_3d, random_cases, Case};
use rodl::tomo::Backend;

/// Largest entry error relative to the largest reference entry. The measured spread is below
/// 3.8e-6 (2D, random sizes) and 2e-6 (3D), from `f32` tap positions and sums; one tap misplaced by one cell
/// or one pixel off costs more than 1e-3.
const TOL: f64 = 8e-6;

fn check(cases: &[Case], threads: usize, what: &str) {
    fast_path_cases::check(cases, Backend::cpu_threads(threads), 1000, TOL, what);
}

#[test]
fn fast_paths_2d_match_f64_entrywise() {
    check(&cases_2d(), 2, "2D");
}

#[test]
fn fast_paths_3d_match_f64_entrywise() {
    check(&cases_3d(), 2, "3D");
}

/// One thread: the tasks' split of views and plane slabs differs from the two-thread run.
#[test]
fn fast_paths_single_thread_match_f64_entrywise() {
    let mut cases = cases_2d();
    cases.truncate(6);
    cases.extend(cases_3d().into_iter().take(4));
    check(&cases, 1, "1 thread");
}

/// Seeded random sizes and geometries (replay: the seed is fixed; the failing case is printed).
#[test]
fn fast_paths_random_sizes_match_f64_entrywise() {
    check(&random_cases(2, 40, 7), 2, "random 2D");
    check(&random_cases(3, 16, 8), 2, "random 3D");
}
