//! Proximal solvers on a GPU: PDHG total-variation denoising (and linearized ADMM and
//! Douglas–Rachford on the same problem) on a CUDA space against the same f32 computation on
//! the CPU.
//!
//! Built only with the `cuda` feature. These tests FAIL (they do not skip) when no GPU can be
//! used: run them where there is one. `--nocapture` shows the differences and timings.
#![cfg(feature = "cuda")]

use std::sync::Arc;
use std::time::Instant;

use rodl::solvers::functional::{Func, FunctionalExt, GroupL1Norm, L2NormSquared};
use rodl::solvers::iterative::{
    admm_linearized, douglas_rachford_pd, pdhg, AdmmOptions, DouglasRachfordOptions, PdhgOptions,
};
use rodl::{uniform_discr, Device, Element, Gradient, LinOp, Space};

mod common;

const GPU: Device = Device::Cuda(0);

/// ½‖x − d‖² + 0.01 TV(x) on a 64×64 image in f32, on the device of `space`.
struct Problem {
    space: Space<f32>,
    grad: LinOp<f32>,
    f: Func<f32>,
    g: Func<f32>,
}

fn host_data() -> (Space<f32>, Element<f32>) {
    let space = uniform_discr::<f32>(&[0.0, 0.0], &[1.0, 1.0], &[64, 64]).unwrap();
    let truth = space
        .element_from_fn(|p| {
            let inside = |a: f64| (0.25..0.75).contains(&a);
            if inside(p[0]) && inside(p[1]) {
                1.0
            } else {
                0.0
            }
        })
        .unwrap();
    let mut data = space.random_normal(&mut common::rng(3)).unwrap();
    space.axpby(1.0, &truth, 0.1, &mut data).unwrap();
    (space, data)
}

fn problem(space: &Space<f32>, data: Element<f32>) -> Problem {
    let grad: LinOp<f32> = Arc::new(Gradient::new(space.clone()).unwrap());
    let l2: Func<f32> = Arc::new(L2NormSquared::new(space.clone()));
    let gl1: Func<f32> = Arc::new(GroupL1Norm::new(grad.range().clone()).unwrap());
    Problem {
        space: space.clone(),
        f: l2.translated(data).unwrap().scaled(0.5).unwrap(),
        g: gl1.scaled(0.01).unwrap(),
        grad,
    }
}

fn pair() -> (Problem, Problem) {
    let (cpu_space, data) = host_data();
    let gpu_space = cpu_space
        .with_device(GPU)
        .unwrap_or_else(|e| panic!("these tests need CUDA device 0: {e}"));
    let gpu_data = data.to_device(GPU).unwrap();
    (problem(&cpu_space, data), problem(&gpu_space, gpu_data))
}

/// ‖gpu − cpu‖ / ‖cpu‖, after copying the GPU result to the host.
fn rel_diff(cpu: &Problem, x_cpu: &Element<f32>, x_gpu: &Element<f32>) -> f64 {
    assert_eq!(x_gpu.device(), GPU, "the iterate left the GPU");
    let back = x_gpu.to_host().unwrap();
    cpu.space.dist(&back, x_cpu).unwrap() / cpu.space.norm(x_cpu).unwrap()
}

#[test]
fn pdhg_tv_denoising_on_gpu_matches_cpu() {
    let (cpu, gpu) = pair();
    // One set of steps for both (the norm estimates differ in their last bits).
    let opts = PdhgOptions::for_operator(cpu.grad.as_ref())
        .unwrap()
        .objective(true);
    let niter = 300;
    let run = |p: &Problem| {
        let mut x = p.space.zero().unwrap();
        let mut last = 0.0;
        let mut cb = |_: &Element<f32>, info: &rodl::solvers::IterationInfo| {
            last = info.objective.unwrap();
            Ok(rodl::solvers::Control::Continue)
        };
        let t0 = Instant::now();
        pdhg(
            p.grad.as_ref(),
            &mut x,
            p.f.as_ref(),
            p.g.as_ref(),
            niter,
            &opts,
            &mut cb,
        )
        .unwrap();
        p.space.device().synchronize().unwrap();
        (x, last, t0.elapsed())
    };
    let (x_cpu, obj_cpu, t_cpu) = run(&cpu);
    let (x_gpu, obj_gpu, t_gpu) = run(&gpu);
    let d = rel_diff(&cpu, &x_cpu, &x_gpu);
    eprintln!(
        "pdhg {niter} iterations: gpu vs cpu {d:.2e} relative; objective {obj_gpu} vs {obj_cpu}; \
         cpu {t_cpu:?}, gpu {t_gpu:?}"
    );
    assert!(d < 1e-5, "gpu and cpu differ by {d:e}");
    assert!((obj_gpu - obj_cpu).abs() < 1e-5 * obj_cpu.abs());
    // It denoised: the objective went down from its value at 0.
    let zero = cpu.space.zero().unwrap();
    assert!(obj_cpu < 0.5 * cpu.f.value(&zero).unwrap());
}

#[test]
fn admm_and_douglas_rachford_on_gpu_match_cpu() {
    let (cpu, gpu) = pair();
    let admm = AdmmOptions::for_operator(cpu.grad.as_ref(), 100.0).unwrap();
    let dr = DouglasRachfordOptions::for_operator(cpu.grad.as_ref()).unwrap();
    let solve = |p: &Problem, which: u8| {
        let mut x = p.space.zero().unwrap();
        let (f, g, l) = (p.f.as_ref(), p.g.as_ref(), p.grad.as_ref());
        match which {
            0 => admm_linearized(l, &mut x, f, g, 200, &admm, &mut ()).unwrap(),
            _ => douglas_rachford_pd(l, &mut x, f, g, 200, &dr, &mut ()).unwrap(),
        };
        x
    };
    for (which, name) in [(0, "admm_linearized"), (1, "douglas_rachford_pd")] {
        let d = rel_diff(&cpu, &solve(&cpu, which), &solve(&gpu, which));
        eprintln!("{name} 200 iterations: gpu vs cpu {d:.2e} relative");
        assert!(d < 1e-5, "{name}: gpu and cpu differ by {d:e}");
    }
}
