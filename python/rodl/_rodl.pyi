"""Type stubs of rodl's compiled core (re-exported by the package ``rodl``).

Checked against the compiled module by ``python -m mypy.stubtest rodl._rodl`` in CI (the
entries it cannot match are in ``python/stubtest-allowlist.txt``, each with its reason). The
classes pyo3 defines without ``subclass`` cannot be subclassed (``@final``); ``Operator``, which
can, has its own instance layout (``@disjoint_base``).
"""

from os import PathLike
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt
from typing_extensions import TypeAlias, disjoint_base, final

__all__ = [
    "__version__",
    "CUDA_BUILT",
    "CudaUnavailableError",
    "GraphCaptureError",
    "DistributedError",
    "Space",
    "uniform_discr",
    "rn",
    "Geometry",
    "read_geometry_file",
    "parallel_beam_geometry",
    "cone_beam_geometry",
    "Operator",
    "IdentityOperator",
    "ScalingOperator",
    "MultiplyOperator",
    "ZeroOperator",
    "Gradient",
    "Divergence",
    "Laplacian",
    "Factory",
    "RayTransform",
    "fbp_op",
    "fbp_filter",
    "shepp_logan",
    "white_noise",
    "add_gaussian_noise",
    "poisson_noise",
    "transmission_noise",
    "cgls",
    "landweber",
    "sirt",
    "mlem",
    "osem",
    "pdhg_tv",
    "fista_tv",
    "check_adjoint",
    "psnr",
    "ssim",
    "relative_error",
    "HDF5_BUILT",
    "Scan",
    "read_tiff",
    "read_nxtomo",
    "read_dxchange",
    "flat_field",
    "neg_log",
    "remove_zingers",
    "remove_stripes",
    "_flat_field_cuda",
    "_neg_log_cuda",
    "_remove_zingers_cuda",
    "_remove_stripes_cuda",
    "find_centre",
    "find_centre_cone",
    "paganin",
    "MPI_BUILT",
    "DistributedRayTransform",
]

__version__: str
CUDA_BUILT: bool

# Aliases of the stubs only (private: the compiled module has no such names).
_ArrayLike: TypeAlias = npt.ArrayLike
_Array: TypeAlias = npt.NDArray[np.floating]
_DType: TypeAlias = Union[str, type, np.dtype]
_Callback: TypeAlias = Callable[[_Array], Any]
_SolverInfo: TypeAlias = Dict[str, Any]

class CudaUnavailableError(RuntimeError): ...
class GraphCaptureError(RuntimeError): ...
class DistributedError(RuntimeError):
    """A collective call of ``rodl.distributed`` failed on one of the ranks; every rank raises
    it, naming the rank that failed first."""

@final
class Space:
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def ndim(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def min_pt(self) -> List[float]: ...
    @property
    def max_pt(self) -> List[float]: ...
    @property
    def cell_sides(self) -> List[float]: ...
    @property
    def cell_volume(self) -> float: ...
    @property
    def weighting(self) -> float: ...
    @property
    def is_product(self) -> bool: ...
    @property
    def is_share(self) -> bool:
        """One rank's share of a distributed space: ``inner``/``norm``/``dist`` are collective."""
    def element(self, data: Optional[_ArrayLike] = None) -> _Array: ...
    def zero(self) -> _Array: ...
    def one(self) -> _Array: ...
    def inner(self, x: _ArrayLike, y: _ArrayLike) -> float: ...
    def norm(self, x: _ArrayLike) -> float: ...
    def dist(self, x: _ArrayLike, y: _ArrayLike) -> float: ...
    def __contains__(self, x: object, /) -> bool: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

def uniform_discr(
    min_pt: Sequence[float], max_pt: Sequence[float], shape: Sequence[int], dtype: Optional[_DType] = None
) -> Space: ...
def rn(shape: Union[int, Sequence[int]], dtype: Optional[_DType] = None, weighting: Optional[float] = None) -> Space: ...

@final
class Geometry:
    @staticmethod
    def from_json(text: str) -> Geometry: ...
    @staticmethod
    def from_vectors(
        beam: str,
        det_shape: Sequence[int],
        vectors: _ArrayLike,
        partition: Optional[Tuple[Sequence[float], Sequence[float]]] = None,
        det_curvature_radius: Union[float, Sequence[Optional[float]], None] = None,
    ) -> Geometry: ...
    @property
    def det_curvature_radius(self) -> Union[float, Tuple[float, Optional[float]], None]: ...
    @property
    def ndim(self) -> int: ...
    @property
    def beam(self) -> str: ...
    @property
    def data_shape(self) -> Tuple[int, ...]: ...
    @property
    def det_shape(self) -> Tuple[int, ...]: ...
    @property
    def num_views(self) -> int: ...
    @property
    def data_partition(self) -> Tuple[List[float], List[float], List[int]]: ...
    @property
    def vectors(self) -> npt.NDArray[np.float64]: ...
    def data_space(self, dtype: Optional[_DType] = None) -> Space: ...
    def to_json(self) -> Optional[str]: ...

def read_geometry_file(path: Union[str, PathLike], dtype: Optional[_DType] = None) -> Tuple[Space, Geometry]: ...
def parallel_beam_geometry(space: Space, num_angles: Optional[int] = None) -> Geometry: ...
def cone_beam_geometry(
    space: Space, src_radius: float, det_radius: float, num_angles: Optional[int] = None
) -> Geometry: ...

@disjoint_base
class Operator:
    @property
    def domain(self) -> Space: ...
    @property
    def range(self) -> Space: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def is_linear(self) -> bool: ...
    @property
    def domain_shape(self) -> List[int]: ...
    @property
    def range_shape(self) -> List[int]: ...
    @property
    def adjoint(self) -> Operator: ...
    @property
    def name(self) -> str: ...
    @property
    def device(self) -> str:
        """Where domain and range live: ``'cpu'`` or ``'cuda:N'``."""
    def __call__(self, x: _ArrayLike, out: Optional[_Array] = None) -> _Array: ...
    # For rodl.torch: DLPack capsules of CUDA tensors, the CUDA stream's handle.
    def _apply_dlpack(self, x: Any, out: Any, stream: int) -> None: ...
    def norm(self, estimate: bool = True, iterations: Optional[int] = None, rtol: Optional[float] = None) -> float: ...
    # Binary operators are one slot each (pyo3): `a.__radd__(b)` is `b + a`, and so on.
    def __matmul__(self, other: Operator, /) -> Operator: ...
    def __rmatmul__(self, other: Operator, /) -> Operator: ...
    def __mul__(self, other: Union[Operator, float], /) -> Operator: ...
    def __rmul__(self, other: float, /) -> Operator: ...
    def __truediv__(self, other: float, /) -> Operator: ...
    def __add__(self, other: Operator, /) -> Operator: ...
    def __radd__(self, other: Operator, /) -> Operator: ...
    def __sub__(self, other: Operator, /) -> Operator: ...
    def __rsub__(self, other: Operator, /) -> Operator: ...
    def __neg__(self) -> Operator: ...

@final
class RayTransform(Operator):
    def __new__(
        cls,
        space: Space,
        geometry: Geometry,
        backend: str = "cpu",
        threads: Optional[int] = None,
        device: Optional[int] = None,
        memory_budget: Optional[int] = None,
        deterministic: bool = False,
    ) -> RayTransform: ...
    @property
    def geometry(self) -> Geometry: ...
    @property
    def backend(self) -> str: ...
    @property
    def options(self) -> Dict[str, Any]:
        """``{"threads", "memory_budget", "deterministic"}`` of its backend."""
        ...

@final
class Factory:
    """A linear operator described independently of a device, built for one by ``build``."""

    @staticmethod
    def ray_transform(
        space: Space,
        geometry: Geometry,
        threads: Optional[int] = None,
        memory_budget: Optional[int] = None,
        deterministic: bool = False,
    ) -> Factory: ...
    @staticmethod
    def fbp(
        space: Space,
        geometry: Geometry,
        filter_type: str = "Ram-Lak",
        frequency_scaling: float = 1.0,
        padding: bool = True,
        parker: Optional[float] = None,
        threads: Optional[int] = None,
        memory_budget: Optional[int] = None,
        deterministic: bool = False,
    ) -> Factory: ...
    @property
    def options(self) -> Optional[Dict[str, Any]]:
        """``{"threads", "memory_budget", "deterministic"}`` applied when it builds (``None``:
        no part takes options)."""
        ...
    def with_options(
        self,
        *,
        threads: Optional[int] = ...,
        memory_budget: Optional[int] = ...,
        deterministic: Optional[bool] = ...,
    ) -> Factory: ...
    @staticmethod
    def gradient(space: Space) -> Factory: ...
    @staticmethod
    def divergence(space: Space) -> Factory: ...
    @staticmethod
    def laplacian(space: Space) -> Factory: ...
    @staticmethod
    def identity(space: Space) -> Factory: ...
    @staticmethod
    def scaling(space: Space, scalar: float) -> Factory: ...
    def build(self, device: str) -> Operator: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def domain_shape(self) -> Optional[List[int]]: ...
    @property
    def range_shape(self) -> Optional[List[int]]: ...
    @property
    def adjoint(self) -> Factory: ...
    def __matmul__(self, other: Factory, /) -> Factory: ...
    def __rmatmul__(self, other: Factory, /) -> Factory: ...
    def __mul__(self, other: Union[Factory, float], /) -> Factory: ...
    def __rmul__(self, other: float, /) -> Factory: ...
    def __add__(self, other: Factory, /) -> Factory: ...
    def __radd__(self, other: Factory, /) -> Factory: ...
    def __sub__(self, other: Factory, /) -> Factory: ...
    def __rsub__(self, other: Factory, /) -> Factory: ...
    def __neg__(self) -> Factory: ...

def IdentityOperator(space: Space) -> Operator: ...
def ScalingOperator(space: Space, scalar: float) -> Operator: ...
def MultiplyOperator(space: Space, factor: _ArrayLike) -> Operator: ...
def ZeroOperator(domain: Space, range: Optional[Space] = None) -> Operator: ...
def Gradient(space: Space) -> Operator: ...
def Divergence(space: Space) -> Operator: ...
def Laplacian(space: Space) -> Operator: ...
def fbp_op(
    ray_trafo: RayTransform,
    filter_type: str = "Ram-Lak",
    frequency_scaling: float = 1.0,
    padding: bool = True,
    parker: Optional[float] = None,
) -> Operator: ...
def fbp_filter(
    ray_trafo: RayTransform,
    filter_type: str = "Ram-Lak",
    frequency_scaling: float = 1.0,
    padding: bool = True,
    parker: Optional[float] = None,
) -> Operator: ...
def shepp_logan(space: Space, modified: bool = True) -> _Array: ...
def white_noise(space: Space, stddev: float = 1.0, seed: Optional[int] = None) -> _Array: ...
def add_gaussian_noise(
    data: _ArrayLike,
    stddev: Optional[float] = None,
    relative: Optional[float] = None,
    seed: Optional[int] = None,
    dtype: Optional[_DType] = None,
) -> _Array: ...
def poisson_noise(intensity: _ArrayLike, seed: Optional[int] = None, dtype: Optional[_DType] = None) -> _Array: ...
def transmission_noise(
    line_integrals: _ArrayLike, photons: float, seed: Optional[int] = None, dtype: Optional[_DType] = None
) -> _Array: ...
def check_adjoint(op: Operator, trials: int = 5, seed: int = 0, opnorm: Optional[float] = None) -> Dict[str, float]: ...
def psnr(x: _ArrayLike, reference: _ArrayLike, data_range: Optional[float] = None) -> float: ...
def ssim(x: _ArrayLike, reference: _ArrayLike, data_range: Optional[float] = None) -> float: ...
def relative_error(x: _ArrayLike, reference: _ArrayLike) -> float: ...
def cgls(
    op: Operator, x: _Array, rhs: _ArrayLike, niter: int = 10, callback: Optional[_Callback] = None, progress: bool = False
) -> _SolverInfo: ...
def landweber(
    op: Operator,
    x: _Array,
    rhs: _ArrayLike,
    niter: int = 10,
    omega: Optional[float] = None,
    callback: Optional[_Callback] = None,
    progress: bool = False,
) -> _SolverInfo: ...
def sirt(
    op: Operator,
    x: _Array,
    rhs: _ArrayLike,
    niter: int = 10,
    relaxation: float = 1.0,
    nonnegative: bool = False,
    callback: Optional[_Callback] = None,
    progress: bool = False,
) -> _SolverInfo: ...
def mlem(
    op: Operator, x: _Array, data: _ArrayLike, niter: int = 10, callback: Optional[_Callback] = None, progress: bool = False
) -> _SolverInfo: ...
def osem(
    ray_trafo: RayTransform,
    x: _Array,
    data: _ArrayLike,
    niter: int = 10,
    subsets: int = 8,
    callback: Optional[_Callback] = None,
    progress: bool = False,
) -> _SolverInfo: ...
def pdhg_tv(
    op: Operator,
    x: _Array,
    data: _ArrayLike,
    lam: float,
    niter: int = 100,
    step_ratio: Optional[float] = None,
    callback: Optional[_Callback] = None,
    progress: bool = False,
) -> _SolverInfo: ...
def fista_tv(
    op: Operator,
    x: _Array,
    data: _ArrayLike,
    lam: float,
    niter: int = 100,
    callback: Optional[_Callback] = None,
    progress: bool = False,
) -> _SolverInfo: ...

# Scanner data in (rodl.io).
HDF5_BUILT: bool

@final
class Scan:
    @property
    def projections(self) -> _Array: ...
    @property
    def flats(self) -> _Array: ...
    @property
    def darks(self) -> _Array: ...
    @property
    def angles(self) -> _Array: ...
    @property
    def path(self) -> str: ...
    @property
    def format(self) -> str: ...
    @property
    def detector_shape(self) -> Tuple[int, int]: ...
    @property
    def pixel_size(self) -> Tuple[Optional[float], Optional[float]]: ...
    @property
    def sample_pixel_size(self) -> Tuple[Optional[float], Optional[float]]: ...
    @property
    def source_distance(self) -> Optional[float]: ...
    @property
    def detector_distance(self) -> Optional[float]: ...
    @property
    def energy(self) -> Optional[float]: ...
    def geometry_json(
        self,
        det_offset_px: float = 0.0,
        beam: str = "auto",
        unit: str = "mm",
        pixel_size: Optional[float] = None,
        source_distance: Optional[float] = None,
        detector_distance: Optional[float] = None,
    ) -> str: ...

def read_tiff(
    projections: Union[str, PathLike],
    angles: Sequence[float],
    flats: Optional[Union[str, PathLike]] = None,
    darks: Optional[Union[str, PathLike]] = None,
) -> Scan: ...
def read_nxtomo(path: Union[str, PathLike], entry: Optional[str] = None) -> Scan: ...
def read_dxchange(path: Union[str, PathLike]) -> Scan: ...
def flat_field(projections: _ArrayLike, flats: _ArrayLike, darks: Optional[_ArrayLike] = None) -> _Array: ...
def neg_log(data: _ArrayLike, floor: float = 1e-6) -> _Array: ...
def remove_zingers(frames: _ArrayLike, threshold: float) -> Tuple[_Array, int]: ...
def remove_stripes(data: _ArrayLike, size: int) -> _Array: ...
def _flat_field_cuda(data: Any, stream: int, flats: _ArrayLike, darks: Optional[_ArrayLike] = None) -> None: ...
def _neg_log_cuda(data: Any, stream: int, floor: float) -> None: ...
def _remove_zingers_cuda(data: Any, stream: int, threshold: float) -> int: ...
def _remove_stripes_cuda(data: Any, stream: int, size: int) -> None: ...
def find_centre(
    data: _ArrayLike,
    angles: Sequence[float],
    max_offset_px: Optional[float] = None,
    max_angle_mismatch: Optional[float] = None,
) -> Tuple[float, float]: ...
def find_centre_cone(
    data: _ArrayLike,
    angles: Sequence[float],
    src_radius: float,
    det_radius: float,
    pixel_size: float,
    max_offset_px: Optional[float] = None,
    rows: Optional[Tuple[int, int]] = None,
) -> Tuple[float, float]: ...
def paganin(
    data: _ArrayLike,
    delta_beta: float,
    energy: float,
    distance: float,
    pixel_size: Union[float, Tuple[float, float]],
    magnification: float = 1.0,
    padding: bool = True,
) -> _Array: ...

# rodl.distributed (the extension's `mpi` feature; without it, construction raises ImportError).
MPI_BUILT: bool

@final
class DistributedRayTransform(Operator):
    """The ray transform distributed over an mpi4py communicator: ``rodl.distributed.RayTransform``.

    ``None`` arguments take their defaults: ``comm=MPI.COMM_WORLD``, ``partition="views"``,
    ``counts`` as even as possible, ``backend="cpu"``, ``deterministic=False``.
    """

    def __new__(
        cls,
        space: Space,
        geometry: Geometry,
        comm: Optional[Any] = None,
        partition: Optional[str] = None,
        counts: Optional[Sequence[int]] = None,
        backend: Optional[str] = None,
        threads: Optional[int] = None,
        device: Optional[int] = None,
        memory_budget: Optional[int] = None,
        deterministic: Optional[bool] = None,
    ) -> DistributedRayTransform: ...
    @property
    def geometry(self) -> Geometry: ...
    @property
    def backend(self) -> str: ...
    @property
    def partition(self) -> str: ...
    @property
    def rank(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def local_rank(self) -> int: ...
    @property
    def counts(self) -> List[int]: ...
    @property
    def ranges(self) -> List[Tuple[int, int]]: ...
    @property
    def range_part(self) -> Tuple[int, int, int]: ...
    @property
    def domain_part(self) -> Optional[Tuple[int, int, int]]: ...
    @property
    def range_slice(self) -> Tuple[slice, ...]: ...
    @property
    def domain_slice(self) -> Tuple[slice, ...]: ...
