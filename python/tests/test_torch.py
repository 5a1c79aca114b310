"""rodl.torch on the CPU: gradcheck in float64, shapes and batching, the module's per-device
cache under DataParallel-shaped code, torch.compile, and the error cases."""

import numpy as np
import pytest

import rodl

torch = pytest.importorskip("torch")
rt = pytest.importorskip("rodl.torch")


def space(dtype="float64", n=12):
    return rodl.uniform_discr([-1, -1], [1, 1], [n, n], dtype=dtype)


def ops(s):
    g = rodl.parallel_beam_geometry(s, 8)
    ray = rodl.Factory.ray_transform(s, g)
    return {
        "ray": ray,
        "fbp": rodl.Factory.fbp(s, g, filter_type="Hann"),
        "gradient": rodl.Factory.gradient(s),
        "composition": 2.0 * (rodl.Factory.gradient(s) @ ray.adjoint @ ray) * 0.5,
        "laplacian+id": rodl.Factory.laplacian(s) + rodl.Factory.identity(s),
    }


@pytest.mark.parametrize("name", ["ray", "fbp", "gradient", "composition", "laplacian+id"])
def test_gradcheck_and_double_backward(name):
    f = ops(space())[name]
    m = rt.OperatorModule.from_op_factory(f)
    shape = tuple(m.operator_for("cpu").domain_shape)
    x = torch.randn((2,) + shape, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(m, (x,))
    assert torch.autograd.gradgradcheck(m, (x,))


def test_backward_is_the_euclidean_transpose():
    s = space()
    op = rodl.RayTransform(s, rodl.parallel_beam_geometry(s, 8))
    x = torch.randn(12, 12, dtype=torch.float64, requires_grad=True)
    y = torch.randn(tuple(op.range_shape), dtype=torch.float64)
    (rt.apply(op, x) * y).sum().backward()
    ratio = s.weighting / op.range.weighting
    np.testing.assert_allclose(x.grad.numpy(), ratio * op.adjoint(y.numpy()), rtol=1e-12, atol=1e-12)
    # ⟨A x, y⟩ = ⟨x, Aᵀ y⟩ in plain sums
    lhs = float((rt.apply(op, x.detach()) * y).sum())
    rhs = float((x.detach() * x.grad).sum())
    assert lhs == pytest.approx(rhs, rel=1e-12)


def test_any_leading_axes_and_non_contiguous_input():
    s = space("float32", 16)
    m = rt.OperatorModule.from_op_factory(rodl.Factory.ray_transform(s, rodl.parallel_beam_geometry(s, 10)))
    op = m.operator_for("cpu")
    x = torch.randn(3, 2, 16, 16)
    y = m(x)
    assert y.shape == (3, 2) + tuple(op.range_shape) and y.dtype == torch.float32
    np.testing.assert_array_equal(y[2, 1].numpy(), op(x[2, 1].numpy()))
    xt = torch.randn(16, 16).t()  # non-contiguous
    assert not xt.is_contiguous()
    np.testing.assert_array_equal(m(xt).numpy(), op(xt.contiguous().numpy()))
    assert m(torch.randn(0, 16, 16)).shape == (0,) + tuple(op.range_shape)


def test_batched_fbp_matches_each_entry():
    """FBP on a batch (leading axes) gives each entry's reconstruction and each entry's
    gradient: 2D parallel beams, a 2D fan beam and 3D cone beams (FDK)."""
    s2 = space("float64", 16)
    s3 = rodl.uniform_discr([-1] * 3, [1] * 3, [8, 8, 8], dtype="float64")
    for s, g in [
        (s2, rodl.parallel_beam_geometry(s2, 12)),
        (s2, rodl.cone_beam_geometry(s2, 4.0, 2.0, 16)),
        (s3, rodl.cone_beam_geometry(s3, 4.0, 2.0, 10)),
    ]:
        m = rt.OperatorModule.from_op_factory(rodl.Factory.fbp(s, g, filter_type="Hann"))
        op = m.operator_for("cpu")
        x = torch.randn((3, 2) + tuple(op.domain_shape), dtype=torch.float64, requires_grad=True)
        y = m(x)
        assert y.shape == (3, 2) + tuple(op.range_shape)
        w = torch.randn_like(y)
        (y * w).sum().backward()
        t = rt.OperatorModule.from_op_factory(rodl.Factory.fbp(s, g, filter_type="Hann").adjoint)
        ratio = op.domain.weighting / op.range.weighting  # the Euclidean transpose
        for i in range(3):
            for j in range(2):
                np.testing.assert_allclose(
                    y[i, j].detach().numpy(), op(x[i, j].detach().numpy()), rtol=1e-12, atol=1e-12
                )
                want = ratio * t.operator_for("cpu")(w[i, j].numpy())
                np.testing.assert_allclose(x.grad[i, j].numpy(), want, rtol=1e-10, atol=1e-10)


def test_one_build_per_device_shared_by_replicas():
    s = space("float32")
    m = rt.OperatorModule.from_op_factory(rodl.Factory.ray_transform(s, rodl.parallel_beam_geometry(s, 6)))
    net = torch.nn.Sequential(torch.nn.Identity(), m)
    dp = torch.nn.DataParallel(net)  # without GPUs: the module itself
    for _ in range(3):
        dp(torch.randn(4, 12, 12))
    assert m.build_counts() == {"cpu": 1}
    import copy

    twin = copy.copy(m)  # how DataParallel replicates: the cache is shared
    twin(torch.randn(12, 12))
    assert m.build_counts() == {"cpu": 1}
    assert net.to("cpu")[1] is m


def test_training_step_reduces_the_loss():
    s = space("float32", 16)
    g = rodl.parallel_beam_geometry(s, 12)
    ray = rt.OperatorModule.from_op_factory(rodl.Factory.ray_transform(s, g))
    truth = torch.from_numpy(rodl.shepp_logan(s))
    data = ray(truth)
    x = torch.zeros(16, 16, requires_grad=True)
    opt = torch.optim.Adam([x], lr=0.05)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = ((ray(x) - data) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]


def test_torch_compile_keeps_the_op_in_one_graph():
    s = space("float32")
    m = rt.OperatorModule.from_op_factory(rodl.Factory.ray_transform(s, rodl.parallel_beam_geometry(s, 6)))
    x = torch.randn(2, 12, 12, requires_grad=True)
    compiled = torch.compile(m, fullgraph=True, backend="aot_eager")
    y = compiled(x)
    torch.testing.assert_close(y, m(x))
    y.sum().backward()
    assert x.grad is not None and x.grad.shape == x.shape


def test_gradients_stay_right_with_the_compile_caches_across_processes(tmp_path):
    """torch's on-disk FX-graph and AOTAutograd caches hand a graph compiled in one process to the
    next: the gradient must be right in both processes (rodl's handles are unique to their
    process, so a cached graph never names another process's operators)."""
    import json
    import os
    import pathlib
    import subprocess
    import sys

    script = pathlib.Path(__file__).parent / "scripts" / "compiled_gradient.py"
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "cache"),
               TORCHINDUCTOR_FX_GRAPH_CACHE="1", TORCHINDUCTOR_AUTOGRAD_CACHE="1")
    for run in (1, 2):
        p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"run {run}: {p.stderr[-3000:]}"
        err = json.loads(p.stdout.strip().splitlines()[-1])["max_rel_error"]
        assert err < 1e-5, f"run {run}: the gradient is off by {err}"


def test_apply_traces_with_fullgraph():
    s = space("float32")
    op = rodl.RayTransform(s, rodl.parallel_beam_geometry(s, 6))

    def f(x):
        return rt.apply(op, x) * 2

    x = torch.randn(2, 12, 12, requires_grad=True)
    y = torch.compile(f, fullgraph=True, backend="aot_eager")(x)
    torch.testing.assert_close(y, 2 * rt.apply(op, x))
    y.sum().backward()
    assert x.grad is not None and x.grad.shape == x.shape


def test_an_unknown_handle_is_a_clear_error():
    with pytest.raises(RuntimeError, match="no operator has the handle"):
        torch.ops.rodl.apply(torch.zeros(3), 4)


def test_errors():
    s = space("float32")
    m = rt.OperatorModule.from_op_factory(rodl.Factory.ray_transform(s, rodl.parallel_beam_geometry(s, 6)))
    with pytest.raises(TypeError, match="float32"):
        m(torch.randn(12, 12, dtype=torch.float64))
    with pytest.raises(ValueError, match="shape"):
        m(torch.randn(3, 5))
    with pytest.raises(TypeError):
        rt.OperatorModule("not an operator")
    fixed = rt.OperatorModule(rodl.Gradient(s))
    assert fixed(torch.randn(12, 12)).shape == (2, 12, 12)
    with pytest.raises(ValueError, match="factory"):
        fixed.operator_for("cuda:0")
    with pytest.raises((ValueError, RuntimeError)):
        m.operator_for("tpu")
    try:
        m.operator_for("cuda:0")
    except rodl.CudaUnavailableError as e:  # no GPU here (CI)
        assert "CUDA" in str(e)
