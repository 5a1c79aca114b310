//! Batched forms of operators ([`rodl::BatchedOperator`]): which operators offer one. (Their
//! results are tested on a GPU, where the CUDA ray transform has one: `tests/cuda_ray_transform.rs`.)

use rodl::tomo::{parallel_beam_geometry, Backend, RayTransform};
use rodl::{uniform_discr, Gradient, LinearOperator, LinearOperatorExt, Operator};

#[test]
fn host_operators_have_no_batched_form() {
    let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[16, 16]).unwrap();
    let geometry = parallel_beam_geometry(&space, Some(12)).unwrap();
    let ray = RayTransform::new(space.clone(), geometry, Backend::default()).unwrap();
    assert!(ray.batched().is_none());
    assert!(ray.adjoint().unwrap().batched().is_none());
    assert!(ray.scaled(2.0).unwrap().batched().is_none());
    assert!(Gradient::new(space).unwrap().batched().is_none());
}
