//! Tomography: acquisition geometries (ODL conventions), the ray transform with an exact adjoint,
//! and phantoms.

mod backend;
mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
#[cfg(not(feature = "cuda"))]
#[path = "cuda_stub.rs"]
mod cuda;
pub mod fbp;
pub mod geometry;
mod grid;
pub mod phantom;
mod projector;
mod ray_transform;

pub use backend::{Backend, CpuOptions, CudaOptions};
pub use fbp::{fbp_filter_op, fbp_op, fbp_op_with, FbpFilter, FbpOptions, FilterType};
pub use geometry::{
    cone_beam_geometry, parallel_beam_geometry, Beam, Geometry, GeometryKind, GeometrySpec,
    TomoSpec, VecGeometry, View, VolumeSpec,
};
pub use ray_transform::{RayBackProjection, RayTransform};
