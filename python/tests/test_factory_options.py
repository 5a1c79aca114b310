"""Per-backend options carried by factories and applied when they build (#40): CPU threads,
the CUDA memory budget and deterministic kernels, through ``rodl.Factory``, ``RayTransform``
and ``rodl.torch`` (whose modules build deterministic GPU operators while
``torch.use_deterministic_algorithms(True)`` is on). All on the CPU: what reaches a GPU build
is checked through the factories' ``options``."""

import numpy as np
import pytest

import rodl


def _setup(dtype="float32"):
    space = rodl.uniform_discr([-1, -1], [1, 1], [16, 16], dtype=dtype)
    geometry = rodl.parallel_beam_geometry(space, 12)
    return space, geometry


def _image(space, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(space.shape).astype(space.dtype)


def test_ray_transform_factory_carries_its_options():
    space, geometry = _setup()
    f = rodl.Factory.ray_transform(space, geometry, threads=2, memory_budget=1 << 30, deterministic=True)
    assert f.options == {"threads": 2, "memory_budget": 1 << 30, "deterministic": True}
    assert "threads=2" in repr(f) and "deterministic=True" in repr(f)
    default = rodl.Factory.ray_transform(space, geometry)
    assert default.options == {"threads": None, "memory_budget": None, "deterministic": False}


def test_fbp_factory_carries_its_options():
    space, geometry = _setup()
    f = rodl.Factory.fbp(space, geometry, "Hann", threads=1, deterministic=True)
    assert f.options == {"threads": 1, "memory_budget": None, "deterministic": True}
    x = _image(space)
    ray = rodl.RayTransform(space, geometry)
    want = rodl.fbp_op(ray, "Hann")(ray(x))
    np.testing.assert_allclose(f.build("cpu")(ray(x)), want, rtol=1e-5, atol=1e-6)


def test_with_options_replaces_only_what_is_given():
    space, geometry = _setup()
    f = rodl.Factory.ray_transform(space, geometry, threads=2, memory_budget=1000)
    g = f.with_options(deterministic=True)
    assert g.options == {"threads": 2, "memory_budget": 1000, "deterministic": True}
    assert f.options["deterministic"] is False  # the original is unchanged
    h = g.with_options(threads=None, memory_budget=None)
    assert h.options == {"threads": None, "memory_budget": None, "deterministic": True}
    assert f.with_options().options == f.options


def test_with_options_reaches_every_part_of_a_composite():
    space, geometry = _setup()
    ray = rodl.Factory.ray_transform(space, geometry, threads=2)
    comp = 2.0 * (ray.adjoint @ ray) - rodl.Factory.identity(space)
    assert comp.options["threads"] == 2
    one = comp.with_options(threads=1, deterministic=True)
    assert one.options == {"threads": 1, "memory_budget": None, "deterministic": True}
    x = _image(space, 1)
    np.testing.assert_allclose(one.build("cpu")(x), comp.build("cpu")(x), rtol=1e-6, atol=1e-6)
    # Every part was remade: the adjoint's and the right operand's options are the new ones.
    assert (ray.with_options(threads=1).adjoint).options["threads"] == 1


def test_factories_without_options():
    space, _ = _setup()
    g = rodl.Factory.gradient(space)
    assert g.options is None
    assert g.with_options(threads=1).options is None
    x = _image(space)
    np.testing.assert_allclose(g.with_options(threads=1).build("cpu")(x), g.build("cpu")(x))


def test_option_errors_name_the_argument():
    space, geometry = _setup()
    f = rodl.Factory.ray_transform(space, geometry)
    with pytest.raises(TypeError, match="unknown option"):
        f.with_options(thread=2)
    with pytest.raises(ValueError, match="threads"):
        f.with_options(threads=-1)
    with pytest.raises(ValueError, match="threads"):
        f.with_options(threads=0)
    with pytest.raises(ValueError, match="memory_budget"):
        rodl.Factory.ray_transform(space, geometry, memory_budget=-5)
    with pytest.raises(ValueError, match="threads"):
        rodl.Factory.fbp(space, geometry, threads=0)


def test_ray_transform_options():
    space, geometry = _setup()
    ray = rodl.RayTransform(space, geometry, threads=2)
    # The CPU kernels are deterministic whatever was asked.
    assert ray.options == {"threads": 2, "memory_budget": None, "deterministic": True}
    assert rodl.RayTransform(space, geometry, deterministic=True).options["deterministic"]
    with pytest.raises(ValueError, match="memory_budget"):
        rodl.RayTransform(space, geometry, memory_budget=1 << 20)


def test_built_with_threads_computes_the_same():
    space, geometry = _setup("float64")
    x = _image(space, 2)
    want = rodl.RayTransform(space, geometry)(x)
    got = rodl.Factory.ray_transform(space, geometry, threads=1).build("cpu")(x)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


try:
    import torch

    import rodl.torch
except ImportError:  # the torch part needs PyTorch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")


@pytest.fixture
def deterministic_algorithms():
    """``torch.use_deterministic_algorithms(True)`` for the test, restored afterwards."""
    before = torch.are_deterministic_algorithms_enabled()
    warn = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn)


@needs_torch
def test_module_options_replace_the_factory_options():
    space, geometry = _setup()
    f = rodl.Factory.ray_transform(space, geometry, threads=2)
    m = rodl.torch.OperatorModule(f, memory_budget=1 << 28, deterministic=True)
    assert m.factory.options == {"threads": 2, "memory_budget": 1 << 28, "deterministic": True}
    m2 = rodl.torch.OperatorModule.from_op_factory(f, threads=1)
    assert m2.factory.options["threads"] == 1
    with pytest.raises(TypeError, match="Factory"):
        rodl.torch.OperatorModule(rodl.RayTransform(space, geometry), threads=1)


@needs_torch
def test_torch_ray_transform_module():
    space, geometry = _setup()
    m = rodl.torch.RayTransform(space, geometry, threads=1, memory_budget=1 << 30, deterministic=True)
    assert m.factory.options == {"threads": 1, "memory_budget": 1 << 30, "deterministic": True}
    x = torch.from_numpy(_image(space, 3)).requires_grad_()
    y = m(x)
    want = rodl.RayTransform(space, geometry)(x.detach().numpy())
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-6, atol=1e-6)
    y.sum().backward()
    assert x.grad is not None and x.grad.shape == x.shape
    assert m.build_counts() == {"cpu": 1}


@needs_torch
def test_deterministic_algorithms_reach_the_gpu_build(deterministic_algorithms):
    space, geometry = _setup()
    f = rodl.Factory.ray_transform(space, geometry, threads=2)
    m = rodl.torch.OperatorModule(f)
    gpu = m.factory_for("cuda:0")
    assert gpu.options == {"threads": 2, "memory_budget": None, "deterministic": True}
    # The CPU is deterministic already: its factory is the module's own.
    assert m.factory_for("cpu").options["deterministic"] is False
    x = torch.from_numpy(_image(space))
    np.testing.assert_allclose(
        m(x).numpy(), rodl.RayTransform(space, geometry)(x.numpy()), rtol=1e-6, atol=1e-6
    )
    assert m.build_counts() == {"cpu": 1}


@needs_torch
def test_without_deterministic_algorithms_gpu_build_keeps_options():
    space, geometry = _setup()
    assert not torch.are_deterministic_algorithms_enabled()
    m = rodl.torch.OperatorModule(rodl.Factory.ray_transform(space, geometry))
    assert m.factory_for("cuda:0").options["deterministic"] is False
    m2 = rodl.torch.OperatorModule(rodl.Factory.ray_transform(space, geometry, deterministic=True))
    assert m2.factory_for("cuda:1").options["deterministic"] is True
    # A module of one operator has no factory.
    fixed = rodl.torch.OperatorModule(rodl.RayTransform(space, geometry))
    assert fixed.factory_for("cuda:0") is None


@needs_torch
def test_fixed_gpu_ray_transform_without_deterministic_is_refused(monkeypatch):
    """What a module of one GPU ray transform does under the deterministic flag, checked with a
    stand-in (no GPU here): refused without ``deterministic=True``, warned with
    ``warn_only=True``, accepted with it."""

    class FakeRay:
        def __init__(self, deterministic):
            self.options = {"threads": None, "memory_budget": None, "deterministic": deterministic}

    monkeypatch.setattr(rodl.torch, "_RayTransform", FakeRay)
    before = torch.are_deterministic_algorithms_enabled()
    warn = torch.is_deterministic_algorithms_warn_only_enabled()
    try:
        torch.use_deterministic_algorithms(True)
        with pytest.raises(RuntimeError, match="deterministic=True"):
            rodl.torch._check_fixed_deterministic(FakeRay(False), "cuda:0")
        rodl.torch._check_fixed_deterministic(FakeRay(True), "cuda:0")
        torch.use_deterministic_algorithms(True, warn_only=True)
        with pytest.warns(UserWarning, match="deterministic=True"):
            rodl.torch._check_fixed_deterministic(FakeRay(False), "cuda:0")
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn)
