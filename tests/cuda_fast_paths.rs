//! The CUDA ray transform (`f32`, host-space domain: copy in, compute, copy out) against the
//! plain `f64` CPU kernels, entry by entry, forward and transpose, on the medium sizes of
//! `fast_path_cases` (odd sizes around lane, row, plane and view-block boundaries, detectors
//! narrower and wider than the volume, 2–120 pixels). These tests FAIL (they do not skip)
//! without a GPU. Inputs are seeded (case index + a fixed base), so a failure replays.
#![cfg(feature = "cuda")]

mod fast_path_cases;

use fast_path_cases::{cases_2d, cases_3d, random_cases, Case};
use rodl::tomo::Backend;

/// Largest entry error relative to the largest reference entry. Measured on an H200 over all 89
/// cases: forward 2.8e-6, transpose 3.4e-6 (the CPU `f32` fast paths: below 4e-6); a planted
/// detector-index bug costs at least 1e-2.
const TOL: f64 = 8e-6;

fn check(cases: &[Case], what: &str) {
    fast_path_cases::check(cases, Backend::cuda(0), 2000, TOL, what);
}

#[test]
fn cuda_2d_matches_f64_entrywise() {
    check(&cases_2d(), "CUDA 2D");
}

#[test]
fn cuda_3d_matches_f64_entrywise() {
    check(&cases_3d(), "CUDA 3D");
}

#[test]
fn cuda_random_sizes_match_f64_entrywise() {
    check(&random_cases(2, 40, 7), "CUDA random 2D");
    check(&random_cases(3, 16, 8), "CUDA random 3D");
}
