//! `interop::apply_to_cuda_memory` on a real GPU: the work goes to the caller's stream, in its
//! order — shown by results read back on that stream, by a CUDA graph captured on it and
//! replayed with new inputs, and by calls from two threads on two streams at once; a capture in
//! global mode on another thread is a clear [`Error::GraphCapture`], one in thread-local mode
//! leaves rodl running. These tests FAIL (they do not skip) without a GPU. They run under any
//! number of test threads: those that capture take [`common::gpu_alone`] (a global-mode capture
//! forbids every other thread's allocations), the others [`common::gpu_shared`].
#![cfg(feature = "cuda")]

mod common;

use std::sync::Arc;

use cudarc::driver::{sys, CudaContext, CudaSlice, CudaStream, DevicePtr};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rodl::interop::apply_to_cuda_memory;
use std::f64::consts::PI;

use rodl::tomo::{fbp_op, parallel_beam_geometry, Backend, FbpOptions, Geometry, RayTransform};
use rodl::{
    uniform_discr, Device, Divergence, Error, Gradient, LinOp, LinearOperatorExt, UniformPartition,
};

const GPU: Device = Device::Cuda(0);

/// The operators under test, all on GPU 0: a ray transform (batched kernels), its normal
/// operator (a composition with a temporary kept across calls), FBP (cuFFT), and the gradient,
/// the divergence and `∇*∇` (batched through a power space, parts along a leading axis).
fn operators() -> Vec<(&'static str, LinOp<f32>)> {
    let host = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[40, 40]).unwrap();
    let space = host
        .with_device(GPU)
        .unwrap_or_else(|e| panic!("these tests need CUDA device 0: {e}"));
    let g = parallel_beam_geometry(&space, Some(36)).unwrap();
    let rt = RayTransform::new(space.clone(), g, Backend::cuda(0)).unwrap();
    let fbp = fbp_op(&rt, &FbpOptions::default()).unwrap();
    let a: LinOp<f32> = Arc::new(rt);
    let normal = a.adjoint().unwrap().compose(&a).unwrap();
    let grad: LinOp<f32> = Arc::new(Gradient::new(space.clone()).unwrap());
    let fan_space = space.clone();
    let div: LinOp<f32> = Arc::new(Divergence::new(space).unwrap());
    let grad_normal = grad.adjoint().unwrap().compose(&grad).unwrap();
    // The exact fan-beam FBP: three back-projections with volume factors, summed.
    let part = |a: f64, b: f64, n| UniformPartition::new(&[a], &[b], &[n]).unwrap();
    let fan = Geometry::fan_flat(
        &part(0.0, 2.0 * PI, 48),
        &part(-2.5, 2.5, 64),
        3.0,
        2.0,
        0.0,
    )
    .unwrap();
    let fan_rt = RayTransform::new(fan_space, fan, Backend::cuda(0)).unwrap();
    let fan_fbp = fbp_op(&fan_rt, &FbpOptions::default()).unwrap();
    for op in [&a, &normal, &fbp, &grad, &div, &grad_normal, &fan_fbp] {
        assert!(op.batched().is_some(), "{} has no batched form", op.name());
    }
    vec![
        ("ray transform", a),
        ("normal operator", normal),
        ("FBP", fbp),
        ("gradient", grad),
        ("divergence", div),
        ("gradient* ∘ gradient", grad_normal),
        ("exact fan-beam FBP", fan_fbp),
    ]
}

/// A stream of another "library": a context object of its own on the primary context.
fn foreign_stream() -> Arc<CudaStream> {
    let ctx = CudaContext::new(0).expect("CUDA device 0");
    // SAFETY: every buffer of this context is used on its one stream only.
    unsafe { ctx.disable_event_tracking() };
    ctx.new_stream().expect("a stream")
}

fn addr(s: &Arc<CudaStream>, b: &CudaSlice<f32>) -> u64 {
    b.device_ptr(s).0
}

/// `batch` random inputs of `op`, one after the other.
fn inputs(op: &LinOp<f32>, batch: usize, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..batch * op.domain().size())
        .map(|_| rng.gen_range(-1.0..1.0))
        .collect()
}

/// `op` applied to each entry of `x` through rodl's own API (rodl's stream).
fn reference(op: &LinOp<f32>, x: &[f32]) -> Vec<f32> {
    x.chunks(op.domain().size())
        .flat_map(|e| common::flatten(&op.apply(&common::element_of(op.domain(), e)).unwrap()))
        .collect()
}

fn rel(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    let num: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
    let den: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    (num / den.max(f64::MIN_POSITIVE)).sqrt()
}

/// Applies `op` to the `batch` inputs at `x` into `out`, on `stream`.
fn apply_on(op: &LinOp<f32>, s: &Arc<CudaStream>, x: &CudaSlice<f32>, out: &CudaSlice<f32>) {
    let batch = x.len() / op.domain().size();
    // SAFETY: both buffers are live allocations of device 0's primary context with room for
    // `batch` entries, not overlapping; the stream is live and outlives the work.
    unsafe {
        apply_to_cuda_memory(
            op.as_ref(),
            addr(s, x),
            addr(s, out),
            batch,
            s.cu_stream() as u64,
        )
    }
    .unwrap();
}

#[test]
fn results_read_back_on_the_callers_stream_match() {
    let _gpu = common::gpu_shared();
    let s = foreign_stream();
    for (name, op) in operators() {
        let batch = 3;
        let host = inputs(&op, batch, 1);
        let x = s.clone_htod(&host).unwrap();
        let out = s.alloc_zeros::<f32>(batch * op.range().size()).unwrap();
        apply_on(&op, &s, &x, &out);
        // Read on the caller's stream, right after the call: no other synchronisation.
        let got = s.clone_dtoh(&out).unwrap();
        let e = rel(&got, &reference(&op, &host));
        eprintln!("{name}: on the caller's stream vs rodl's own {e:.1e}");
        assert!(e < 1e-6, "{name}: {e}");
    }
}

/// rodl's kernels are recorded into a graph captured on the caller's stream (global capture
/// mode, as `torch.cuda.graph` uses): nothing runs at capture, and each replay computes the
/// inputs the buffer holds then.
#[test]
fn a_graph_captured_on_the_callers_stream_replays_the_operator() {
    let _gpu = common::gpu_alone();
    let s = foreign_stream();
    for (name, op) in operators() {
        let batch = 2;
        let first = inputs(&op, batch, 2);
        let mut x = s.clone_htod(&first).unwrap();
        let mut out = s.alloc_zeros::<f32>(batch * op.range().size()).unwrap();
        // Warm up outside the capture (kernels compiled, caches made), as with any capture.
        apply_on(&op, &s, &x, &out);
        s.memset_zeros(&mut out).unwrap();
        s.synchronize().unwrap();
        s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
            .unwrap();
        apply_on(&op, &s, &x, &out);
        let graph = s
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .unwrap_or_else(|e| panic!("{name}: capture failed: {e:?}"))
            .expect("a graph");
        assert!(
            s.clone_dtoh(&out).unwrap().iter().all(|v| *v == 0.0),
            "{name}: the capture ran work"
        );
        for seed in [3, 4] {
            let host = inputs(&op, batch, seed);
            s.memcpy_htod(&host, &mut x).unwrap();
            graph.launch().unwrap();
            let e = rel(&s.clone_dtoh(&out).unwrap(), &reference(&op, &host));
            eprintln!("{name}: graph replay (inputs {seed}) vs rodl's own {e:.1e}");
            assert!(e < 1e-6, "{name}: {e}");
        }
    }
}

/// Two threads, each on a stream of its own, call the same operators at once (sharing their
/// cached temporaries): every result is right.
#[test]
fn two_threads_on_two_streams_at_once() {
    let _gpu = common::gpu_shared();
    let ops = operators();
    let want: Vec<(Vec<f32>, Vec<f32>)> = ops
        .iter()
        .map(|(_, op)| {
            let x = inputs(op, 2, 7);
            let y = reference(op, &x);
            (x, y)
        })
        .collect();
    std::thread::scope(|sc| {
        for _ in 0..2 {
            sc.spawn(|| {
                let s = foreign_stream();
                for _ in 0..20 {
                    for ((name, op), (x, y)) in ops.iter().zip(&want) {
                        let dx = s.clone_htod(x).unwrap();
                        let out = s.alloc_zeros::<f32>(y.len()).unwrap();
                        apply_on(op, &s, &dx, &out);
                        let e = rel(&s.clone_dtoh(&out).unwrap(), y);
                        assert!(e < 1e-6, "{name}: {e}");
                    }
                }
            });
        }
    });
}

/// Begins a capture in `mode` on a foreign stream on another thread, runs `during` here while
/// it lasts, then ends it; returns what `during` gave and whether the capture made a graph.
fn beside_a_capture<R>(mode: sys::CUstreamCaptureMode, during: impl FnOnce() -> R) -> (R, bool) {
    let begun = std::sync::Barrier::new(2);
    let done = std::sync::Barrier::new(2);
    std::thread::scope(|sc| {
        let capture = sc.spawn(|| {
            let s = foreign_stream();
            let mut buf = s.alloc_zeros::<f32>(256).unwrap();
            s.synchronize().unwrap();
            s.begin_capture(mode).unwrap();
            // Some work of the capturing library's own, recorded into its graph.
            s.memset_zeros(&mut buf).unwrap();
            begun.wait();
            done.wait();
            let graph = s.end_capture(sys::CUgraphInstantiate_flags(0));
            match graph {
                Ok(Some(g)) => {
                    g.launch().unwrap();
                    s.synchronize().unwrap();
                    true
                }
                _ => false,
            }
        });
        begun.wait();
        let r = during();
        done.wait();
        (r, capture.join().unwrap())
    })
}

/// While another thread captures in global mode (`torch.cuda.graph`'s default), a rodl call
/// fails at once with [`Error::GraphCapture`] naming the mode and the remedy — not a driver
/// error string — and the next call after the capture works.
#[test]
fn a_global_capture_on_another_thread_is_a_clear_error() {
    let _gpu = common::gpu_alone();
    let ops = operators();
    let (name, op) = &ops[0];
    let x = common::element_of(op.domain(), &inputs(op, 1, 5));
    let want = common::flatten(&op.apply(&x).unwrap());
    let (r, _) = beside_a_capture(
        sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
        || op.apply(&x),
    );
    match r {
        Err(e @ Error::GraphCapture(_)) => {
            let msg = e.to_string();
            eprintln!("{name} beside a global capture: {msg}");
            for word in ["global mode", "thread_local", "relaxed"] {
                assert!(msg.contains(word), "{word} missing from {msg}");
            }
        }
        Err(e) => panic!("{name}: expected a graph-capture error, got {e}"),
        Ok(_) => panic!("{name}: ran beside a global-mode capture"),
    }
    // After the capture, nothing of it is left to fail the next call.
    let again = common::flatten(&op.apply(&x).unwrap());
    assert!(rel(&again, &want) < 1e-6, "{name} after the capture");
}

/// A capture in thread-local mode (the remedy) lets rodl run on other threads, with every
/// result right, and stays valid: its graph is made and replays.
#[test]
fn a_thread_local_capture_on_another_thread_leaves_rodl_running() {
    let _gpu = common::gpu_alone();
    let ops = operators();
    let want: Vec<(Vec<f32>, Vec<f32>)> = ops
        .iter()
        .map(|(_, op)| {
            let x = inputs(op, 2, 9);
            let y = reference(op, &x);
            (x, y)
        })
        .collect();
    let (errors, made) = beside_a_capture(
        sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
        || {
            ops.iter()
                .zip(&want)
                .map(|((name, op), (x, y))| (*name, rel(&reference(op, x), y)))
                .collect::<Vec<_>>()
        },
    );
    for (name, e) in errors {
        eprintln!("{name} beside a thread-local capture: {e:.1e}");
        assert!(e < 1e-6, "{name}: {e}");
    }
    assert!(made, "the thread-local capture was invalidated");
}
