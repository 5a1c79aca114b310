//! The Shepp–Logan phantom in 2D and 3D with ODL's parameters.
//!
//! The ellipses are those of Shepp and Logan (1974) as tabulated by ODL
//! (`odl.phantom.shepp_logan_ellipsoids`); the 3D ellipsoids are ODL's extension (Kak & Slaney).
//! The modified phantom ("Toft's" contrast-enhanced values) is the one ODL's examples and tests
//! use; like ODL, the two "−0.2" ellipses get `+5e-17` so that the f64 phantom is nowhere
//! negative.

use super::ellipsoid::{ellipse_phantom, ellipsoid_phantom, Ellipse, Ellipsoid};
use crate::{Element, Error, Result, Scalar, Space};

/// Semi-axes, centres and rotation (radians) of the 2D ellipses, without their values.
fn geometry_2d() -> [[f64; 5]; 10] {
    let r18 = 18f64.to_radians();
    [
        [0.6900, 0.9200, 0.0000, 0.0000, 0.0],
        [0.6624, 0.8740, 0.0000, -0.0184, 0.0],
        [0.1100, 0.3100, 0.2200, 0.0000, -r18],
        [0.1600, 0.4100, -0.2200, 0.0000, r18],
        [0.2100, 0.2500, 0.0000, 0.3500, 0.0],
        [0.0460, 0.0460, 0.0000, 0.1000, 0.0],
        [0.0460, 0.0460, 0.0000, -0.1000, 0.0],
        [0.0460, 0.0230, -0.0800, -0.6050, 0.0],
        [0.0230, 0.0230, 0.0000, -0.6060, 0.0],
        [0.0230, 0.0460, 0.0600, -0.6050, 0.0],
    ]
}

/// Semi-axes (3) and centres (3) of the 3D ellipsoids; their angle φ equals the 2D rotation.
fn geometry_3d() -> [[f64; 6]; 10] {
    [
        [0.6900, 0.9200, 0.810, 0.0000, 0.0000, 0.0],
        [0.6624, 0.8740, 0.780, 0.0000, -0.0184, 0.0],
        [0.1100, 0.3100, 0.220, 0.2200, 0.0000, 0.0],
        [0.1600, 0.4100, 0.280, -0.2200, 0.0000, 0.0],
        [0.2100, 0.2500, 0.410, 0.0000, 0.3500, 0.0],
        [0.0460, 0.0460, 0.050, 0.0000, 0.1000, 0.0],
        [0.0460, 0.0460, 0.050, 0.0000, -0.1000, 0.0],
        [0.0460, 0.0230, 0.050, -0.0800, -0.6050, 0.0],
        [0.0230, 0.0230, 0.020, 0.0000, -0.6060, 0.0],
        [0.0230, 0.0460, 0.020, 0.0600, -0.6050, 0.0],
    ]
}

/// The values of the ten ellipses: Shepp and Logan's, or the modified (higher-contrast) ones.
fn values(modified: bool) -> [f64; 10] {
    if modified {
        [
            1.0,
            -0.8,
            -0.2 + 5e-17,
            -0.2 + 5e-17,
            0.1,
            0.1,
            0.1,
            0.1,
            0.1,
            0.1,
        ]
    } else {
        [2.0, -0.98, -0.02, -0.02, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01]
    }
}

/// The ten ellipses of the 2D Shepp–Logan phantom (ODL's `shepp_logan_ellipsoids(2, modified)`).
pub fn shepp_logan_ellipses(modified: bool) -> Vec<Ellipse> {
    geometry_2d()
        .iter()
        .zip(values(modified))
        .map(|(g, v)| Ellipse::from_params([v, g[0], g[1], g[2], g[3], g[4]]))
        .collect()
}

/// The ten ellipsoids of the 3D Shepp–Logan phantom (ODL's
/// `shepp_logan_ellipsoids(3, modified)`).
pub fn shepp_logan_ellipsoids(modified: bool) -> Vec<Ellipsoid> {
    geometry_3d()
        .iter()
        .zip(geometry_2d())
        .zip(values(modified))
        .map(|((g, g2), v)| {
            Ellipsoid::from_params([v, g[0], g[1], g[2], g[3], g[4], g[5], g2[4], 0.0, 0.0])
        })
        .collect()
}

/// The Shepp–Logan phantom on a 2D or 3D discretised space, as ODL's
/// `odl.phantom.shepp_logan(space, modified)`.
///
/// The phantom fills the space: its reference box `[-1, 1]^d` is stretched onto the first and
/// last sample points of each axis (so a non-square space gives a stretched head). With
/// `modified = true` the values are the high-contrast ones (background 0, skull 1, brain 0.2).
/// Samples agree with ODL's bit for bit, in f32 and f64.
///
/// ```
/// use rodl::tomo::phantom::shepp_logan;
/// let space = rodl::uniform_discr::<f32>(&[-1.0, -1.0], &[1.0, 1.0], &[64, 64])?;
/// let x = shepp_logan(&space, true)?;
/// let a = x.as_array()?;
/// assert_eq!(a[[0, 0]], 0.0); // outside the head
/// assert_eq!(a[[32, 3]], 1.0); // skull, below the centre
/// assert!((a[[32, 20]] - 0.2).abs() < 1e-6); // brain
/// # Ok::<(), rodl::Error>(())
/// ```
pub fn shepp_logan<T: Scalar>(space: &Space<T>, modified: bool) -> Result<Element<T>> {
    match space.partition().map(|p| p.ndim()) {
        Ok(2) => ellipse_phantom(space, &shepp_logan_ellipses(modified)),
        Ok(3) => ellipsoid_phantom(space, &shepp_logan_ellipsoids(modified)),
        Ok(n) => Err(Error::invalid(format!(
            "shepp_logan needs a 2D or 3D space, got a {n}D one"
        ))),
        Err(_) => Err(Error::invalid(format!(
            "shepp_logan needs a discretised space (uniform_discr), got {space}"
        ))),
    }
}
