//! Benchmark geometries shared by the bench targets (the issues' exact definitions).

#![allow(dead_code)] // each bench target uses a subset

use std::f64::consts::PI;

use rodl::tomo::Geometry;
use rodl::{uniform_discr, Space, UniformPartition};

fn part(lo: &[f64], hi: &[f64], n: &[usize]) -> UniformPartition {
    UniformPartition::new(lo, hi, n).expect("valid partition")
}

/// Volume [-1,1]², 512², 512 angles over [0, π), 727 pixels over [-√2, √2].
pub fn parallel2d_512() -> (Space<f32>, Geometry) {
    let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[512, 512]).unwrap();
    let s2 = 2f64.sqrt();
    let g =
        Geometry::parallel_2d(&part(&[0.0], &[PI], &[512]), &part(&[-s2], &[s2], &[727])).unwrap();
    (space, g)
}

/// Volume [-1,1]³ with n³ voxels; `angles` over [0, 2π); flat detector (3n/2)×n over
/// [-2.8284, 2.8284] × [-2.8859, 2.8859]; source and detector radius 4.
pub fn cone(n: usize, angles: usize) -> (Space<f32>, Geometry) {
    let space = uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[n, n, n]).unwrap();
    let g = Geometry::cone_flat(
        &part(&[0.0], &[2.0 * PI], &[angles]),
        &part(&[-2.8284, -2.8859], &[2.8284, 2.8859], &[3 * n / 2, n]),
        4.0,
        4.0,
        0.0,
        [0.0, 0.0, 1.0],
        [0.0, 0.0],
    )
    .unwrap();
    (space, g)
}
