//! Asking for a CUDA device never panics. Without the `cuda` feature (as in CI) it is a clean
//! `Error::CudaUnavailable`; with the feature it is that error or, on a machine with a GPU, a
//! working space.

use std::panic::{catch_unwind, AssertUnwindSafe};

use rodl::{rn, Device, Error, Space};

fn ask(device: Device) -> rodl::Result<Space<f32>> {
    rn::<f32>(&[4])?.with_device(device)
}

#[test]
fn cuda_space_request_does_not_panic() {
    let r = catch_unwind(|| ask(Device::Cuda(0))).expect("asking for cuda:0 panicked");
    match r {
        Err(Error::CudaUnavailable(msg)) => {
            assert!(!msg.is_empty());
            if !cfg!(feature = "cuda") {
                assert!(msg.contains("`cuda` feature"), "unclear message: {msg}");
                // how a dependent crate turns it on, not only rodl's own `--features cuda`
                assert!(msg.contains("features = [\"cuda\"]"), "{msg}");
                assert!(msg.contains("--features rodl/cuda"), "{msg}");
            }
            let shown = Error::CudaUnavailable(msg).to_string();
            assert!(shown.starts_with("CUDA is not available"), "{shown}");
        }
        Err(e) => panic!("expected Error::CudaUnavailable, got {e:?}"),
        Ok(space) => {
            if !cfg!(feature = "cuda") {
                panic!("a CUDA space without the `cuda` feature");
            }
            assert_eq!(space.device(), Device::Cuda(0));
        }
    }
}

#[test]
fn absent_ordinal_is_a_clean_error() {
    let r = catch_unwind(|| ask(Device::Cuda(4096))).expect("asking for cuda:4096 panicked");
    match r {
        Err(Error::CudaUnavailable(msg)) => assert!(!msg.is_empty()),
        other => panic!("expected Error::CudaUnavailable, got {other:?}"),
    }
    let r = catch_unwind(|| Device::Cuda(4096).check_available()).expect("check panicked");
    assert!(matches!(r, Err(Error::CudaUnavailable(_))));
}

#[test]
fn transfers_to_an_unavailable_device_fail_cleanly() {
    let x = rn::<f64>(&[3]).unwrap().one().unwrap();
    let r = catch_unwind(AssertUnwindSafe(|| {
        x.to_device(Device::Cuda(4096)).map(|_| ())
    }))
    .expect("panicked");
    assert!(matches!(r, Err(Error::CudaUnavailable(_))), "{r:?}");
    let r = catch_unwind(|| Device::Cuda(0).check_available()).expect("panicked");
    if !cfg!(feature = "cuda") {
        assert!(matches!(r, Err(Error::CudaUnavailable(_))));
    }
}

#[test]
fn listing_gpus_does_not_panic() {
    let r = catch_unwind(Device::cuda_devices).expect("listing the GPUs panicked");
    match r {
        Err(Error::CudaUnavailable(msg)) => assert!(!msg.is_empty()),
        Err(e) => panic!("expected Error::CudaUnavailable, got {e:?}"),
        Ok(gpus) => {
            if !cfg!(feature = "cuda") {
                panic!("GPUs listed without the `cuda` feature");
            }
            assert!(!gpus.is_empty(), "Ok with no GPU");
            assert!(gpus
                .iter()
                .all(|d| d.is_cuda() && d.check_available().is_ok()));
        }
    }
}

/// Curved detectors on the CUDA backend: without a usable GPU a clean
/// `Error::CudaUnavailable` (never a panic, never `Unsupported`); with one, a working transform
/// (tests/cuda_ray_transform.rs checks its values against the CPU).
#[test]
fn curved_detectors_on_the_cuda_backend_need_only_a_gpu() {
    use rodl::tomo::{Backend, Geometry, RayTransform};
    use rodl::{uniform_discr, UniformPartition};
    let angles = UniformPartition::new(&[0.0], &[6.0], &[8]).unwrap();
    let arc = UniformPartition::new(&[-0.4], &[0.4], &[16]).unwrap();
    let fan = Geometry::fan_curved(&angles, &arc, 4.0, 2.0, 6.0, 0.0).unwrap();
    let det = UniformPartition::new(&[-0.4, -1.0], &[0.4, 1.0], &[16, 8]).unwrap();
    let cone = |radii| {
        Geometry::cone_curved(
            &angles,
            &det,
            4.0,
            2.0,
            radii,
            0.5,
            [0.0, 0.0, 1.0],
            [0.0; 2],
        )
        .unwrap()
    };
    let cyl = cone([Some(6.0), None]);
    let sph = cone([Some(6.0), Some(6.0)]);
    let gpu = Device::Cuda(0).check_available().is_ok();
    for (geometry, ndim) in [(fan, 2), (cyl, 3), (sph, 3)] {
        let space =
            uniform_discr::<f32>(&vec![-1.0; ndim], &vec![1.0; ndim], &vec![8; ndim]).unwrap();
        let r = catch_unwind(AssertUnwindSafe(|| {
            RayTransform::new(space.clone(), geometry.clone(), Backend::cuda(0)).map(|_| ())
        }))
        .expect("a curved geometry on CUDA panicked");
        match r {
            Ok(()) => assert!(gpu, "a CUDA transform without a GPU"),
            Err(Error::CudaUnavailable(msg)) => assert!(!gpu && !msg.is_empty(), "{msg}"),
            Err(e) => panic!("expected Error::CudaUnavailable or a transform, got {e:?}"),
        }
        assert!(RayTransform::new(space, geometry, Backend::cpu_threads(1)).is_ok());
    }
}

#[test]
fn lending_memory_to_an_absent_gpu_is_a_clean_error() {
    // `interop::with_cuda_memory` on a GPU that does not exist (or without the `cuda` feature)
    // fails before it lends the memory: the function never runs, nothing panics.
    let mut called = false;
    let r = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: no memory is touched: the call fails before lending it (ordinal 4096).
        unsafe {
            rodl::interop::with_cuda_memory::<f32, ()>(4096, 0x1000, &[4, 3], 0, |_| {
                called = true;
                Ok(())
            })
        }
    }))
    .expect("with_cuda_memory panicked");
    assert!(r.is_err() && !called, "{r:?}");
    // A size beyond the address space is refused before anything else.
    // SAFETY: as above (refused before lending).
    let r = unsafe {
        rodl::interop::with_cuda_memory::<f32, ()>(0, 0x1000, &[usize::MAX, 2], 0, |_| Ok(()))
    };
    let e = r.unwrap_err().to_string();
    assert!(e.contains("overflows"), "{e}");
}
