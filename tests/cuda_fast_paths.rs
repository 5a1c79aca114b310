//! The CUDA ray transform (`f32`, host-space domain: copy in, compute, copy out) against the
//! plain `f64` CPU kernels, entry by entry, forward and transpose, on the medium sizes of
//! `fast_path_cases` (odd sizes around lane, row, plane and view-block boundaries, detectors
//! narrower and wider than the volume, 2–120 pixels). These tests FAIL (they do not skip)
//! without a GPU. Inputs are seeded (case index + a fixed base), so a failure replays.
#![cfg(feature = "cuda")]

mod fast_path_cases;

use fast_path_cases::{cases_2d, cases_3d, random_cases, run, unravel, Case};
use rodl::tomo::Backend;

/// Largest entry error relative to the largest reference entry. Measured on an H200 over all 89
/// cases: forward 2.8e-6, transpose 3.4e-6 (the CPU `f32` fast paths: below 4e-6); a planted
/// detector-index bug costs at least 1e-2.
const TOL: f64 = 8e-6;

fn check(cases: &[Case], what: &str) {
    let mut fails = Vec::new();
    for (k, c) in cases.iter().enumerate() {
        let o = run(c, Backend::cuda(0), 2000 + k as u64);
        eprintln!(
            "{what} case {k:2} vol {:?} data {:?}: forward {:.2e}, transpose {:.2e}",
            o.shape, o.data_shape, o.fwd.worst, o.adj.worst
        );
        if o.fwd.worst.is_nan() || o.fwd.worst > TOL {
            fails.push(format!(
                "case {k} {c:?}: forward entry {:?} off by {:.3e} of max {:.3e}",
                unravel(o.fwd.at, &o.data_shape),
                o.fwd.worst,
                o.fwd.max_ref
            ));
        }
        if o.adj.worst.is_nan() || o.adj.worst > TOL {
            fails.push(format!(
                "case {k} {c:?}: transpose voxel {:?} off by {:.3e} of max {:.3e}",
                unravel(o.adj.at, &o.shape),
                o.adj.worst,
                o.adj.max_ref
            ));
        }
    }
    assert!(fails.is_empty(), "{}", fails.join("\n"));
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
