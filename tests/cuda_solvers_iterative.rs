//! Iterative solvers on device-resident data on a real GPU: the same iterations as on the CPU,
//! with every element staying on the device. These tests FAIL (they do not skip) without a
//! GPU.
#![cfg(feature = "cuda")]

use rodl::solvers::callback::ResidualHistory;
use rodl::solvers::iterative::{cgls, mlem, osem, sirt, RaySubsets, SirtOptions};
use rodl::solvers::{Control, IterationInfo};
use rodl::tomo::{parallel_beam_geometry, Backend, RayTransform};
use rodl::{uniform_discr, Device, Element, Operator, Space};

const GPU: Device = Device::Cuda(0);

/// A 64² parallel-beam problem in f32: host and device transforms of the same geometry, a
/// positive phantom and its (CPU-computed) data on the host.
struct Problem {
    host: Space<f32>,
    cpu: RayTransform<f32>,
    gpu: RayTransform<f32>,
    data: Element<f32>,
    geometry: rodl::tomo::Geometry,
}

fn problem() -> Problem {
    let host = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[64, 64]).unwrap();
    let geometry = parallel_beam_geometry(&host, Some(90)).unwrap();
    let cpu = RayTransform::new(host.clone(), geometry.clone(), Backend::default()).unwrap();
    let device_space = host.with_device(GPU).unwrap();
    let gpu = RayTransform::new(device_space, geometry.clone(), Backend::cuda(0)).unwrap();
    let phantom = host
        .element_from_fn(|p| {
            let inside = (p[0] / 0.6).powi(2) + (p[1] / 0.8).powi(2) < 1.0;
            0.2 + if inside { 1.0 } else { 0.0 }
                + 0.5 * (-8.0 * (p[0] * p[0] + p[1] * p[1])).exp() as f32
        })
        .unwrap();
    let data = cpu.apply(&phantom).unwrap();
    Problem {
        host,
        cpu,
        gpu,
        data,
        geometry,
    }
}

/// `‖a − b‖ / ‖b‖` of a device element `a` against a host element `b`.
fn rel_to_host(space: &Space<f32>, a: &Element<f32>, b: &Element<f32>) -> f64 {
    assert_eq!(a.device(), GPU, "the iterate left the device");
    let a = a.to_host().unwrap();
    space.dist(&a, b).unwrap() / space.norm(b).unwrap()
}

#[test]
fn cgls_on_the_gpu_matches_the_cpu() {
    let p = problem();
    let n = 15;
    let mut x_cpu = p.host.zero().unwrap();
    let mut h_cpu = ResidualHistory::new();
    assert_eq!(
        cgls(&p.cpu, &mut x_cpu, &p.data, n, &mut h_cpu)
            .unwrap()
            .iterations,
        n
    );

    let data = p.data.to_device(GPU).unwrap();
    let mut x = p.gpu.domain().zero().unwrap();
    let mut h_gpu = ResidualHistory::new();
    assert_eq!(
        cgls(&p.gpu, &mut x, &data, n, &mut h_gpu)
            .unwrap()
            .iterations,
        n
    );
    let err = rel_to_host(&p.host, &x, &x_cpu);
    // CG amplifies rounding: f32 iterates on two devices (different summation orders) differ by
    // about as much as an f32 run differs from the f64 one. So the GPU run must be as close to
    // the f64 iterate as the CPU f32 run is, up to a small factor.
    let host64 = p.host.with_scalar::<f64>();
    let cpu64 = RayTransform::new(host64.clone(), p.geometry.clone(), Backend::default()).unwrap();
    let data64 = cpu64
        .range()
        .element(p.data.as_array().unwrap().mapv(f64::from))
        .unwrap();
    let mut x64 = host64.zero().unwrap();
    assert_eq!(
        cgls(&cpu64, &mut x64, &data64, n, &mut ())
            .unwrap()
            .iterations,
        n
    );
    let to64 = |x: &Element<f32>| {
        host64
            .element(x.as_array().unwrap().mapv(f64::from))
            .unwrap()
    };
    let rel64 =
        |x: &Element<f32>| host64.dist(&to64(x), &x64).unwrap() / host64.norm(&x64).unwrap();
    let (e_cpu, e_gpu) = (rel64(&x_cpu), rel64(&x.to_host().unwrap()));
    println!(
        "CGLS ({n} iterations, 64², 90 angles, f32): GPU vs CPU {err:.2e}; \
         vs the f64 iterate: CPU f32 {e_cpu:.2e}, GPU f32 {e_gpu:.2e}"
    );
    assert!(
        e_gpu <= 3.0 * e_cpu + 1e-5,
        "GPU {e_gpu:e} vs CPU {e_cpu:e}"
    );
    // The residuals b − A x of iterates that differ by δx differ by at most ‖A‖‖δx‖, about
    // 1e-3 ‖b‖ here: late residuals are small, so they are compared relative to ‖b‖.
    let data_norm = p.cpu.range().norm(&p.data).unwrap();
    for (a, b) in h_gpu.residuals().iter().zip(h_cpu.residuals()) {
        assert!(
            (a - b).abs() <= 1e-2 * data_norm,
            "residuals {a} vs {b} (‖b‖ = {data_norm})"
        );
    }
}

#[test]
fn sirt_mlem_and_osem_on_the_gpu_match_the_cpu() {
    let p = problem();
    let data = p.data.to_device(GPU).unwrap();
    let opts = SirtOptions {
        nonnegative: true,
        ..Default::default()
    };

    let mut x_cpu = p.host.zero().unwrap();
    sirt(&p.cpu, &mut x_cpu, &p.data, 10, &opts, &mut ()).unwrap();
    let mut x = p.gpu.domain().zero().unwrap();
    sirt(&p.gpu, &mut x, &data, 10, &opts, &mut ()).unwrap();
    let e_sirt = rel_to_host(&p.host, &x, &x_cpu);

    let mut x_cpu = p.host.one().unwrap();
    mlem(&p.cpu, &mut x_cpu, &p.data, 10, &mut ()).unwrap();
    let mut x = p.gpu.domain().one().unwrap();
    mlem(&p.gpu, &mut x, &data, 10, &mut ()).unwrap();
    let e_mlem = rel_to_host(&p.host, &x, &x_cpu);

    let sub_cpu = RaySubsets::new(&p.cpu, 4, Backend::default()).unwrap();
    let sub_gpu = RaySubsets::new(&p.gpu, 4, Backend::cuda(0)).unwrap();
    let blocks_cpu = sub_cpu.split_data(&p.data).unwrap();
    let blocks_gpu = sub_gpu.split_data(&data).unwrap();
    assert!(blocks_gpu.iter().all(|b| b.device() == GPU));
    let mut x_cpu = p.host.one().unwrap();
    osem(sub_cpu.operators(), &mut x_cpu, &blocks_cpu, 3, &mut ()).unwrap();
    let mut x = p.gpu.domain().one().unwrap();
    let mut calls = 0;
    let mut count = |x: &Element<f32>, _i: &IterationInfo| -> rodl::Result<Control> {
        assert_eq!(x.device(), GPU);
        calls += 1;
        Ok(Control::Continue)
    };
    osem(sub_gpu.operators(), &mut x, &blocks_gpu, 3, &mut count).unwrap();
    let e_osem = rel_to_host(&p.host, &x, &x_cpu);
    println!(
        "GPU vs CPU relative difference: SIRT {e_sirt:.2e}, MLEM {e_mlem:.2e}, OSEM {e_osem:.2e}"
    );
    assert_eq!(calls, 3);
    assert!(e_sirt < 1e-4 && e_mlem < 1e-4 && e_osem < 1e-4);
}
