"""The installed wheel, from a fresh venv (``python -I wheel-smoke.py VENV``, run by
``wheel-check``): rodl is imported from VENV, was built with CUDA, and a tiny ray transform,
its FBP and its adjoint check work on the CPU; a GPU request raises rodl.CudaUnavailableError
where there is no usable GPU and agrees with the CPU where there is one; `import
rodl.distributed` raises ImportError saying how to build with MPI."""

import os
import sys

import numpy as np

import rodl

venv = os.path.realpath(sys.argv[1])
assert os.path.realpath(rodl.__file__).startswith(venv), f"rodl imported from {rodl.__file__}"
assert rodl.CUDA_BUILT, "the wheel must be built with the CUDA backend"

space = rodl.uniform_discr([-1, -1], [1, 1], [32, 32], dtype="float32")
geometry = rodl.parallel_beam_geometry(space, num_angles=24)
ray = rodl.RayTransform(space, geometry)
phantom = rodl.shepp_logan(space)
data = ray(phantom)
assert data.shape == geometry.data_shape and data.dtype == np.float32, (data.shape, data.dtype)
report = rodl.check_adjoint(ray)
assert report["max_rel_error"] < 1e-4, report
rec = rodl.fbp_op(ray, filter_type="Hann")(data)
error = rodl.relative_error(rec, phantom)
assert error < 0.6, error
print(f"rodl {rodl.__version__} from {os.path.dirname(rodl.__file__)}")
print(f"CPU: data {data.shape}, FBP relative error {error:.3f}, adjoint error {report['max_rel_error']:.1e}")

try:
    gpu = rodl.RayTransform(space, geometry, backend="cuda")
except rodl.CudaUnavailableError as e:
    print(f"no usable GPU (rodl.CudaUnavailableError, as expected without one): {e}")
else:
    d = gpu(phantom)
    diff = float(np.abs(d - data).max() / np.abs(data).max())
    assert diff < 1e-4, diff
    print(f"GPU: {gpu.backend}, data agrees with the CPU's to {diff:.1e}")

# The wheel is built without MPI: rodl.distributed says how to get it.
assert not rodl.MPI_BUILT, "the wheel is built without the mpi feature"
try:
    import rodl.distributed  # noqa: F401
except ImportError as e:
    assert "--features mpi" in str(e), e
    print(f"rodl.distributed without MPI (ImportError, as expected): {str(e)[:60]}...")
else:
    raise AssertionError("import rodl.distributed must raise ImportError in a wheel without MPI")
