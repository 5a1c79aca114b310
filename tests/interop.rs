//! `interop::apply_to_cuda_memory` refuses, before touching any memory, what it cannot run on
//! the caller's GPU memory (no GPU needed).

use std::sync::Arc;

use rodl::interop::apply_to_cuda_memory;
use rodl::{uniform_discr, Error, Gradient, LinOp};

#[test]
fn host_operators_are_refused_before_the_memory_is_touched() {
    let s = uniform_discr::<f32>(&[0.0, 0.0], &[1.0, 1.0], &[8, 8]).unwrap();
    let g: LinOp<f32> = Arc::new(Gradient::new(s).unwrap());
    // SAFETY: the call errors on the operator's devices before it reads the addresses (which
    // address nothing).
    let r = unsafe { apply_to_cuda_memory(g.as_ref(), 0x1000, 0x2000, 4, 0) };
    match r {
        Err(Error::DeviceMismatch { got, .. }) => assert!(got.contains("cpu"), "{got}"),
        other => panic!("expected a device mismatch, got {other:?}"),
    }
}
