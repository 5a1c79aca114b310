//! The CUDA kernels (`kernels/ray_joseph.cu`) run on the CPU through the stand-in of
//! `tools/kernel-harness/cpu` (every CUDA thread a host thread; the same IEEE arithmetic), so
//! that their logic is tested on machines without a GPU:
//! - on whole volumes the production and 64-bit kernels agree with the last commit's copy of
//!   them (forwards bit for bit);
//! - the 2D lanes transpose agrees with the atomic one;
//! - 2D and 3D batches in one launch (forwards; scattering, gathering and profile transposes)
//!   agree with one entry at a time;
//! - a transform split into slabs along axis 0 adds up to the whole transform within 1e-6
//!   (relative L2, forward and transpose) for 2D parallel and fan beams and 3D cone (flat and
//!   tilted detectors, the profile transpose's both paths) and parallel beams.
//!
//! Needs bash and g++ 12 or later.

use std::process::Command;

#[test]
fn cuda_kernels_on_the_cpu_stand_in_add_up_over_slabs_to_the_whole_transform() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("bash")
        .arg(format!("{root}/tools/kernel-harness/cpu/run.sh"))
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("SUMMARY: ok"),
        "the CPU stand-in of the kernels failed:\n{stdout}\n{stderr}"
    );
}
