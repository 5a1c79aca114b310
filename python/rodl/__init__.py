"""rodl: tomography and inverse problems on NumPy arrays, computed in Rust.

Spaces, linear operators with exact adjoints, the ray transform on the CPU or an NVIDIA GPU,
FBP/FDK, phantoms and noise, iterative solvers and quality figures, with ODL's names and
conventions. ODL users switch with one line: ``rodl.from_odl(odl_object)`` converts ODL's
spaces, geometries and ray transforms.

>>> import numpy as np, rodl
>>> space = rodl.uniform_discr([-1, -1], [1, 1], [64, 64], dtype="float32")
>>> geometry = rodl.parallel_beam_geometry(space, num_angles=90)
>>> ray = rodl.RayTransform(space, geometry)            # backend="cuda" for a GPU
>>> phantom = rodl.shepp_logan(space)
>>> data = ray(phantom)
>>> data.shape
(90, 93)
>>> fbp = rodl.fbp_op(ray, filter_type="Hann")
>>> x = space.zero()
>>> info = rodl.cgls(ray, x, data, niter=20)
>>> rodl.psnr(x, phantom) > 20
True
"""

from ._rodl import (
    CUDA_BUILT,
    CudaUnavailableError,
    DistributedError,
    GraphCaptureError,
    MPI_BUILT,
    Divergence,
    Factory,
    Geometry,
    Gradient,
    IdentityOperator,
    Laplacian,
    MultiplyOperator,
    Operator,
    RayTransform,
    ScalingOperator,
    Space,
    ZeroOperator,
    __version__,
    add_gaussian_noise,
    cgls,
    check_adjoint,
    cone_beam_geometry,
    fbp_filter,
    fbp_op,
    fista_tv,
    landweber,
    mlem,
    osem,
    parallel_beam_geometry,
    pdhg_tv,
    poisson_noise,
    psnr,
    read_geometry_file,
    relative_error,
    rn,
    shepp_logan,
    sirt,
    ssim,
    transmission_noise,
    uniform_discr,
    white_noise,
)
from ._geometry import (
    ConeBeamGeometry,
    FanBeamGeometry,
    Parallel2dGeometry,
    Parallel3dAxisGeometry,
    Partition,
    VecGeometry,
    uniform_partition,
)
from ._odl import from_odl
from . import io

__all__ = [
    "CUDA_BUILT",
    "ConeBeamGeometry",
    "CudaUnavailableError",
    "DistributedError",
    "GraphCaptureError",
    "MPI_BUILT",
    "Divergence",
    "Factory",
    "FanBeamGeometry",
    "Geometry",
    "Gradient",
    "IdentityOperator",
    "Laplacian",
    "MultiplyOperator",
    "Operator",
    "Parallel2dGeometry",
    "Parallel3dAxisGeometry",
    "Partition",
    "RayTransform",
    "ScalingOperator",
    "Space",
    "VecGeometry",
    "ZeroOperator",
    "__version__",
    "add_gaussian_noise",
    "cgls",
    "check_adjoint",
    "cone_beam_geometry",
    "fbp_filter",
    "fbp_op",
    "fista_tv",
    "from_odl",
    "io",
    "landweber",
    "mlem",
    "osem",
    "parallel_beam_geometry",
    "pdhg_tv",
    "poisson_noise",
    "psnr",
    "read_geometry_file",
    "relative_error",
    "rn",
    "shepp_logan",
    "sirt",
    "ssim",
    "transmission_noise",
    "uniform_discr",
    "uniform_partition",
    "white_noise",
]
