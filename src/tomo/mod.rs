//! Tomography: acquisition geometries (ODL conventions), the ray transform with an exact adjoint
//! (its factory, its views split across several devices, and the planner that splits it into
//! pieces of volume slabs and view groups), and phantoms.

mod backend;
mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
#[cfg(not(feature = "cuda"))]
#[path = "cuda_stub.rs"]
mod cuda;
#[cfg(feature = "cuda")]
mod cuda_pieces;
#[cfg(not(feature = "cuda"))]
#[path = "cuda_pieces_stub.rs"]
mod cuda_pieces;
pub mod fbp;
pub mod geometry;
mod gpu_interface;
pub(crate) mod grid;
mod multi_device;
pub mod phantom;
mod projector;
mod ray_factory;
mod ray_transform;
pub mod split;

pub use backend::{Backend, BackendOptions, CpuOptions, CudaKindOptions, CudaOptions, PieceLayout};
pub use fbp::{
    fbp_filter_op, fbp_op, fbp_op_views, fbp_op_with, fbp_ops_views, FbpFilter, FbpOptions,
    FbpViews, FilterType, GpuFilterMethod,
};
pub use geometry::{
    cone_beam_geometry, parallel_beam_geometry, Beam, CurvatureSpec, Detector, DetectorFrame,
    Geometry, GeometryKind, GeometrySpec, TomoSpec, VecGeometry, View, VolumeSpec,
    MAX_GEOMETRY_FILE_BYTES, MAX_GEOMETRY_MAGNITUDE,
};
pub use multi_device::{MultiDeviceBackProjection, MultiDeviceRayTransform};
pub use ray_transform::{RayBackProjection, RayTransform};
