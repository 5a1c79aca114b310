"""rodl as ODL's ray-transform backend (``impl='rodl'``): ODL's own operator, spaces and
adjoint with rodl computing, for NumPy- and PyTorch-backed ODL spaces."""

import numpy as np
import pytest

odl = pytest.importorskip("odl")
tomo = pytest.importorskip("odl.applications.tomo")
import rodl.odl  # noqa: E402  (registers impl='rodl')


def inner(a, b):
    return float(np.vdot(rodl.odl._host(a).ravel().astype(float), rodl.odl._host(b).ravel().astype(float)))


def test_registered_without_changing_odls_default():
    from odl.applications.tomo.operators.ray_trafo import RAY_TRAFO_IMPLS

    assert "rodl" in RAY_TRAFO_IMPLS
    rodl.odl.register()  # again: harmless
    s = odl.uniform_discr([-1, -1], [1, 1], [16, 16], dtype="float32")
    g = tomo.parallel_beam_geometry(s, 10)
    assert tomo.RayTransform(s, g).impl != "rodl" or list(RAY_TRAFO_IMPLS) == ["rodl"]


@pytest.mark.parametrize("kind", ["par2d", "fan2d", "cone3d", "helical"])
def test_forward_matches_from_odl_and_the_adjoint_is_exact(kind):
    if kind in ("par2d", "fan2d"):
        s = odl.uniform_discr([-1, -1], [1, 1], [24, 20], dtype="float64")
    else:
        s = odl.uniform_discr([-1, -1, -1], [1, 1, 1], [12, 10, 8], dtype="float64")
    a = odl.uniform_partition(0, 2 * np.pi, 15)
    if kind == "par2d":
        g = tomo.Parallel2dGeometry(odl.uniform_partition(0, np.pi, 13), odl.uniform_partition(-1.5, 1.5, 31))
    elif kind == "fan2d":
        g = tomo.FanBeamGeometry(a, odl.uniform_partition(-3, 3, 31), src_radius=4, det_radius=2)
    elif kind == "cone3d":
        g = tomo.ConeBeamGeometry(a, odl.uniform_partition([-3, -2], [3, 2], [21, 13]), src_radius=4, det_radius=2)
    else:
        g = tomo.ConeBeamGeometry(odl.uniform_partition(0, 4 * np.pi, 23), odl.uniform_partition([-3, -2], [3, 2], [21, 13]),
                                  src_radius=4, det_radius=2, pitch=0.5)
    A = tomo.RayTransform(s, g, impl="rodl")
    assert A.impl == "rodl"
    rng = np.random.default_rng(3)
    x = s.element(rng.standard_normal(s.shape))
    y = A.range.element(rng.standard_normal(A.range.shape))
    ax = A(x)
    ref = rodl.from_odl(g)
    want = rodl.RayTransform(rodl.from_odl(s), ref)(x.asarray())
    np.testing.assert_allclose(ax.asarray(), want, rtol=1e-12, atol=1e-12)
    aty = A.adjoint(y)
    # ODL's inner products are its spaces' weighted ones.
    lhs = A.range.inner(ax, y)
    rhs = s.inner(x, aty)
    assert abs(lhs - rhs) <= 1e-12 * max(abs(lhs), A.range.norm(ax) * A.range.norm(y))
    # into `out`, as ODL's solvers call it
    out = A.range.zero()
    A(x, out=out)
    np.testing.assert_array_equal(out.asarray(), ax.asarray())


def test_agrees_with_astra_cpu_in_parallel_beam():
    pytest.importorskip("astra")
    s = odl.uniform_discr([-1, -1], [1, 1], [32, 32], dtype="float32")
    g = tomo.parallel_beam_geometry(s, 36)
    x = odl.core.phantom.shepp_logan(s, modified=True) if hasattr(odl, "core") and hasattr(odl.core, "phantom") else odl.phantom.shepp_logan(s, modified=True)
    a = tomo.RayTransform(s, g, impl="rodl")(x).asarray()
    b = tomo.RayTransform(s, g, impl="astra_cpu")(x).asarray()
    assert np.linalg.norm(a - b) <= 1e-4 * np.linalg.norm(b)


def test_pytorch_backed_odl_spaces():
    torch = pytest.importorskip("torch")
    try:
        s = odl.uniform_discr([-1, -1], [1, 1], [16, 16], dtype="float32", impl="pytorch")
    except Exception as e:  # an ODL without its PyTorch backend
        pytest.skip(f"ODL has no pytorch spaces here: {e}")
    g = tomo.parallel_beam_geometry(s, 12)
    A = tomo.RayTransform(s, g, impl="rodl")
    x = s.element(torch.rand(16, 16))
    y = A(x)
    assert isinstance(y.asarray(), torch.Tensor)
    ref = rodl.RayTransform(rodl.from_odl(s), rodl.from_odl(g))(x.asarray().numpy())
    np.testing.assert_allclose(y.asarray().numpy(), ref, rtol=1e-6, atol=1e-6)
    back = A.adjoint(y)
    assert isinstance(back.asarray(), torch.Tensor)


def test_non_uniform_angles_and_subsets():
    """Non-uniform and random angle partitions and subsets (ODL's Kaczmarz example's
    geometry[i::20]) carry over view by view; ODL's data weighting (extent over count) is kept,
    so the adjoint stays ODL's; FBP weights each view by its share of the angle range."""
    s = odl.uniform_discr([-1, -1], [1, 1], [20, 20], dtype="float64")
    d = odl.uniform_partition(-1.5, 1.5, 25)
    pts = np.linspace(0.2, 3.0, 17) ** 1.4
    g = tomo.Parallel2dGeometry(odl.nonuniform_partition(pts), d)
    rng = np.random.default_rng(5)
    x = s.element(rng.standard_normal(s.shape))
    for geom in [g, tomo.parallel_beam_geometry(s, 40)[1::4]]:
        A = tomo.RayTransform(s, geom, impl="rodl")
        # The adjoint is exact in the constant weighting ODL's data space reports (ODL 1.0's own
        # inner product on a non-uniform partition weighs entries differently from its
        # `weighting.const`, so it is not the reference here).
        R = rodl.from_odl(A)
        assert rodl.check_adjoint(R, trials=3)["max_rel_error"] < 1e-12
        yr = rng.standard_normal(A.range.shape)
        np.testing.assert_array_equal(A.adjoint(A.range.element(yr)).asarray(), R.adjoint(yr))
        # each view is the single-view transform at that angle
        angles = np.asarray(geom.motion_grid.coord_vectors[0])
        for k in (0, len(angles) - 1):
            one = tomo.Parallel2dGeometry(odl.uniform_partition(angles[k] - 0.01, angles[k] + 0.01, 1), geom.det_partition)
            np.testing.assert_allclose(
                A(x).asarray()[k], tomo.RayTransform(s, one, impl="rodl")(x).asarray()[0], rtol=1e-12, atol=1e-12
            )
        assert A.range.weighting.const == pytest.approx(float(rodl.from_odl(A).range.weighting), rel=1e-12)
    ray = rodl.from_odl(tomo.RayTransform(s, g, impl="rodl"))
    rec = rodl.fbp_op(ray)(ray(np.ones(s.shape)))
    assert np.all(np.isfinite(rec))
