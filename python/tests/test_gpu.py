"""GPU tests (marker ``gpu``): run with ``pytest -m gpu`` where a GPU is expected; they fail when
none can be used."""

import numpy as np
import pytest

import rodl

pytestmark = pytest.mark.gpu


def test_cuda_float64_is_a_clean_error():
    s = rodl.uniform_discr([-1, -1], [1, 1], [8, 8], dtype="float64")
    with pytest.raises(NotImplementedError):
        ray = rodl.RayTransform(s, rodl.parallel_beam_geometry(s, 4), backend="cuda")
        ray(s.one())


@pytest.mark.parametrize("dtype", ["float32"])
def test_cuda_ray_transform_matches_cpu(dtype):
    from conftest import geometry_cases

    for name, space, geometry in geometry_cases():
        s = rodl.uniform_discr(space.min_pt, space.max_pt, space.shape, dtype=dtype)
        cpu = rodl.RayTransform(s, geometry)
        gpu = rodl.RayTransform(s, geometry, backend="cuda:0")
        x = rodl.shepp_logan(s)
        y = np.random.default_rng(0).standard_normal(cpu.range.shape).astype(dtype)
        for a, b in [(cpu(x), gpu(x)), (cpu.adjoint(y), gpu.adjoint(y))]:
            assert np.linalg.norm(a - b) <= 1e-5 * np.linalg.norm(a), name
        assert rodl.check_adjoint(gpu, trials=2)["max_rel_error"] < 1e-5, name


def test_cuda_fbp_and_solver():
    s = rodl.uniform_discr([-1, -1], [1, 1], [64, 64], dtype="float32")
    g = rodl.parallel_beam_geometry(s, 90)
    cpu, gpu = rodl.RayTransform(s, g), rodl.RayTransform(s, g, backend="cuda")
    p = rodl.shepp_logan(s)
    d = cpu(p)
    a, b = rodl.fbp_op(cpu, "Hann")(d), rodl.fbp_op(gpu, "Hann")(d)
    assert np.linalg.norm(a - b) <= 1e-5 * np.linalg.norm(a)
    x = s.zero()
    rodl.cgls(gpu, x, d, niter=10)
    assert rodl.psnr(x, p) > 20
