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

/// `cone(n, angles)` with a cylindrical detector about the source (radius 8, the clinical
/// arrangement) over the same fan and rows: (3n/2) columns over the fan angles ±atan(2.8284/8),
/// n rows over [-2.8859, 2.8859].
pub fn cone_cyl(n: usize, angles: usize) -> (Space<f32>, Geometry) {
    let space = uniform_discr::<f32>(&[-1.0; 3], &[1.0; 3], &[n, n, n]).unwrap();
    let half = (2.8284f64 / 8.0).atan();
    let g = Geometry::cone_curved(
        &part(&[0.0], &[2.0 * PI], &[angles]),
        &part(&[-half, -2.8859], &[half, 2.8859], &[3 * n / 2, n]),
        4.0,
        4.0,
        [Some(8.0), None],
        0.0,
        [0.0, 0.0, 1.0],
        [0.0, 0.0],
    )
    .unwrap();
    (space, g)
}

/// Volume [-1,1]², 512², 512 angles over [0, 2π), 727 pixels, source and detector radius 4:
/// a flat detector over [-2.8284, 2.8284] (`curved = false`) or an arc about the source over
/// the same fan angles (`curved = true`).
pub fn fan_512(curved: bool) -> (Space<f32>, Geometry) {
    let space = uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[512, 512]).unwrap();
    let angles = part(&[0.0], &[2.0 * PI], &[512]);
    let g = if curved {
        let half = (2.8284f64 / 8.0).atan();
        Geometry::fan_curved(
            &angles,
            &part(&[-half], &[half], &[727]),
            4.0,
            4.0,
            8.0,
            0.0,
        )
    } else {
        Geometry::fan_flat(&angles, &part(&[-2.8284], &[2.8284], &[727]), 4.0, 4.0, 0.0)
    }
    .unwrap();
    (space, g)
}
