"""from_odl against ODL 1.0 itself: 2D on the CPU (astra_cpu) against ODL's ray transform, 3D
geometry objects against rodl's own JSON path (ASTRA's 3D projectors need a GPU)."""

import numpy as np
import pytest

import rodl

odl = pytest.importorskip("odl")
tomo = pytest.importorskip("odl.applications.tomo")
pytest.importorskip("astra")


def rel(a, b):
    return np.linalg.norm(np.asarray(a) - np.asarray(b)) / np.linalg.norm(np.asarray(b))


def odl_case(space, geometry):
    A = tomo.RayTransform(space, geometry, impl="astra_cpu")
    x = odl.phantom.shepp_logan(space, modified=True)
    y = odl.phantom.white_noise(A.range, seed=1)
    return A, x, y


def test_space_conversion():
    for dtype in ["float32", "float64"]:
        s = odl.uniform_discr([-1, -2], [3, 2], [10, 12], dtype=dtype)
        r = rodl.from_odl(s)
        assert r.shape == (10, 12) and r.dtype == np.dtype(dtype)
        assert r.min_pt == [-1.0, -2.0] and r.max_pt == [3.0, 2.0]
        assert r.cell_volume == pytest.approx(s.cell_volume)
        x = odl.phantom.white_noise(s, seed=0)
        assert r.inner(x.asarray(), x.asarray()) == pytest.approx(s.inner(x, x), rel=1e-5)


def test_parallel2d_matches_odl_joseph():
    # ODL's astra_cpu backend takes float32 only
    space = odl.uniform_discr([-1, -1], [1, 1], [64, 64], dtype="float32")
    geometry = tomo.parallel_beam_geometry(space, 90)
    A, x, y = odl_case(space, geometry)
    ours = rodl.from_odl(A)
    assert isinstance(ours, rodl.RayTransform) and ours.backend == "cpu"
    assert rel(ours(x.asarray()), A(x).asarray()) <= 1e-3
    assert rel(ours.adjoint(y.asarray()), A.adjoint(y).asarray()) <= 1e-3


def test_parallel2d_with_shifted_angles():
    space = odl.uniform_discr([-1, -1], [1, 1], [48, 48], dtype="float32")
    geometry = tomo.Parallel2dGeometry(odl.uniform_partition(0.3, 0.3 + np.pi, 60), odl.uniform_partition(-1.5, 1.5, 70))
    A, x, y = odl_case(space, geometry)
    ours = rodl.from_odl(A)
    assert rel(ours(x.asarray()), A(x).asarray()) <= 1e-3
    assert rel(ours.adjoint(y.asarray()), A.adjoint(y).asarray()) <= 1e-3


def test_offcentre_detector_follows_odls_geometry():
    """A detector partition not centred on 0 (here [-1.2, 1.8]): rodl places every pixel where
    ODL's geometry says (det_refpoint + u det_axis). ODL 1.0's astra_cpu backend does not — it
    centres the detector, shifting its sinogram by the partition's midpoint (0.3) — so the
    check is against the geometry, with a blob whose projection peaks where the geometry puts
    its centre."""
    space = odl.uniform_discr([-1, -1], [1, 1], [96, 96], dtype="float32")
    geometry = tomo.Parallel2dGeometry(odl.uniform_partition(0, np.pi, 6), odl.uniform_partition(-1.2, 1.8, 150))
    blob = space.element(lambda p: np.exp(-200 * ((p[0] - 0.3) ** 2 + (p[1] - 0.1) ** 2)))
    ours = rodl.RayTransform(rodl.from_odl(space), rodl.from_odl(geometry))
    sino = ours(blob.asarray())
    u = geometry.det_partition.grid.coord_vectors[0]
    for i, a in enumerate(geometry.angles):
        expected = (np.array([0.3, 0.1]) - geometry.det_refpoint(a)) @ geometry.det_axis(a)
        assert abs(u[np.argmax(sino[i])] - expected) <= 0.025


def test_fan_beam_matches_odl_to_the_model_difference():
    space = odl.uniform_discr([-1, -1], [1, 1], [64, 64], dtype="float32")
    geometry = tomo.cone_beam_geometry(space, src_radius=4, det_radius=2, num_angles=120)
    A, x, _ = odl_case(space, geometry)
    ours = rodl.from_odl(A)
    # ASTRA's CPU fan-beam projector is the line-length model, rodl's is Joseph's: 3.7e-2 on
    # this sharp-edged phantom (tests/data/odl/README.md), smooth data agree much better.
    assert rel(ours(x.asarray()), A(x).asarray()) <= 5e-2
    smooth = odl.phantom.gaussian_blur(x, 2.0) if hasattr(odl.phantom, "gaussian_blur") else None
    blob = space.element(lambda p: np.exp(-4 * (p[0] ** 2 + (p[1] - 0.2) ** 2)))
    assert rel(ours(blob.asarray()), A(blob).asarray()) <= 1e-2
    del smooth


def test_fan_beam_with_detector_shift_function():
    space = odl.uniform_discr([-1, -1], [1, 1], [48, 48], dtype="float32")
    apart = odl.uniform_partition(0, 2 * np.pi, 90)
    dpart = odl.uniform_partition(-3, 3, 80)
    geometry = tomo.FanBeamGeometry(apart, dpart, 4, 2, det_shift_func=lambda a: [0.0, 0.15])
    A, _, _ = odl_case(space, geometry)
    ours = rodl.from_odl(A)
    blob = space.element(lambda p: np.exp(-4 * ((p[0] - 0.1) ** 2 + (p[1] - 0.2) ** 2)))
    assert rel(ours(blob.asarray()), A(blob).asarray()) <= 1e-2
    # the same scan without the shift differs: the shift was carried over
    plain = rodl.from_odl(tomo.FanBeamGeometry(apart, dpart, 4, 2))
    assert not np.allclose(plain.vectors, ours.geometry.vectors)


def test_fbp_and_cgls_after_from_odl():
    space = odl.uniform_discr([-1, -1], [1, 1], [64, 64], dtype="float32")
    A = tomo.RayTransform(space, tomo.parallel_beam_geometry(space, 90), impl="astra_cpu")
    phantom = odl.phantom.shepp_logan(space, modified=True)
    data = A(phantom)
    ray = rodl.from_odl(A)
    ours = rodl.fbp_op(ray, "Hann")(data.asarray())
    theirs = tomo.fbp_op(A, filter_type="Hann")(data).asarray()
    assert rel(ours, theirs) < 0.05
    x = ray.domain.zero()
    rodl.cgls(ray, x, data.asarray(), niter=10)
    x_odl = A.domain.zero()
    odl.solvers.conjugate_gradient_normal(A, x_odl, data, niter=10)
    assert rel(x, x_odl.asarray()) < 1e-2


def test_fbp_applies_no_parker_weights_unless_asked_as_odl():
    """A port of ODL's short-scan fan-beam example word for word: `rodl.fbp_op(ray)` is ODL's
    `fbp_op(A)` (no Parker weights), and the weights come only with `parker=q`."""
    space = odl.uniform_discr([-20, -20], [20, 20], [64, 64], dtype="float32")
    apart = odl.uniform_partition(0, np.pi + 0.7, 120)  # a short scan: pi + fan angle (0.64) + 0.06
    geometry = tomo.FanBeamGeometry(apart, odl.uniform_partition(-40, 40, 128), src_radius=80, det_radius=40)
    A = tomo.RayTransform(space, geometry, impl="astra_cpu")
    phantom = odl.phantom.shepp_logan(space, modified=True)
    data = A(phantom)
    ray = rodl.from_odl(A)
    ours = rodl.fbp_op(ray, "Hann")(data.asarray())
    theirs = tomo.fbp_op(A, filter_type="Hann")(data).asarray()
    # the back-projection models differ (ASTRA's CPU fan beam: line lengths; rodl: Joseph's),
    # 8.5e-2 here; with Parker weights on one side only they would differ by 0.28
    assert rel(ours, theirs) < 0.12
    weighted = rodl.fbp_op(ray, "Hann", parker=0.25)(data.asarray())
    assert rel(weighted, ours) > 0.2
    assert rel(weighted, phantom.asarray()) < rel(ours, phantom.asarray())  # what the weights are for on a short scan


def json_path_twin(geometry_kind, space, **kw):
    """The same scan built through rodl's JSON constructors."""
    s = rodl.from_odl(space)
    g = geometry_kind(**kw)
    return s, g


@pytest.mark.parametrize(
    "make_odl,make_rodl",
    [
        (
            lambda ap, dp: tomo.Parallel3dAxisGeometry(ap, dp),
            lambda ap, dp: rodl.Parallel3dAxisGeometry(ap, dp),
        ),
        (
            lambda ap, dp: tomo.ConeBeamGeometry(ap, dp, 5, 3),
            lambda ap, dp: rodl.ConeBeamGeometry(ap, dp, 5, 3),
        ),
        (
            lambda ap, dp: tomo.ConeBeamGeometry(ap, dp, 5, 3, pitch=0.7),
            lambda ap, dp: rodl.ConeBeamGeometry(ap, dp, 5, 3, pitch=0.7),
        ),
        (
            lambda ap, dp: tomo.ConeBeamGeometry(ap, dp, 5, 3, det_shift_func=lambda a: [0.0, 0.2, -0.1]),
            # ODL's shift [d, u, v] moves the detector by -u along its u axis
            lambda ap, dp: rodl.ConeBeamGeometry(ap, dp, 5, 3, det_offset=(-0.2, -0.1)),
        ),
    ],
    ids=["parallel3d", "cone", "helical", "cone-shifted"],
)
def test_3d_geometries_match_rodls_json_path(make_odl, make_rodl):
    space = odl.uniform_discr([-1, -1, -1], [1, 1, 1], [12, 12, 10], dtype="float32")
    apart = (0.0, 2 * np.pi, 24)
    dpart = ([-2.0, -1.5], [2.0, 1.5], [20, 14])
    g_odl = make_odl(odl.uniform_partition(*apart), odl.uniform_partition(*dpart))
    g_rodl = make_rodl(rodl.uniform_partition(*apart), rodl.uniform_partition(*dpart))
    g_conv = rodl.from_odl(g_odl)
    np.testing.assert_allclose(g_conv.vectors, g_rodl.vectors, rtol=0, atol=1e-12)
    s = rodl.from_odl(space)
    a, b = rodl.RayTransform(s, g_conv), rodl.RayTransform(s, g_rodl)
    assert a.range == b.range
    x = odl.phantom.shepp_logan(space, modified=True).asarray()
    np.testing.assert_allclose(a(x), b(x), rtol=0, atol=1e-5)
    y = np.random.default_rng(0).standard_normal(a.range.shape).astype("float32")
    np.testing.assert_allclose(a.adjoint(y), b.adjoint(y), rtol=0, atol=1e-4)


def test_ray_transform_backend_follows_odl_impl_unless_given():
    space = odl.uniform_discr([-1, -1], [1, 1], [8, 8])
    A = tomo.RayTransform(space, tomo.parallel_beam_geometry(space, 4), impl="astra_cpu")
    assert rodl.from_odl(A).backend == "cpu"
    assert rodl.from_odl(A, backend="cpu", threads=1).backend == "cpu"
    assert rodl.from_odl(A, dtype="float32").dtype == np.float32


def test_unsupported_odl_objects_raise_naming_what_is_missing():
    space = odl.uniform_discr([-1, -1], [1, 1], [8, 8])
    apart = odl.uniform_partition(0, 2 * np.pi, 10)
    # A spherical detector whose latitudes are off its equator has no rodl counterpart.
    sphere = tomo.ConeBeamGeometry(
        apart, odl.uniform_partition([-0.5, -0.2], [0.5, 0.4], [8, 6]), 4, 2, det_curvature_radius=(6, 6)
    )
    with pytest.raises(NotImplementedError, match="equator"):
        rodl.from_odl(sphere)
    euler = tomo.Parallel3dEulerGeometry(
        odl.uniform_partition([0, 0], [np.pi, np.pi], [4, 3]), odl.uniform_partition([-1, -1], [1, 1], [8, 8])
    )
    with pytest.raises(NotImplementedError, match="Euler"):
        rodl.from_odl(euler)
    # Angles spaced in any way convert (each view from its own angle): a non-uniform
    # partition and one with nodes on the boundary.
    for apart in [odl.nonuniform_partition([0.0, 0.1, 0.5, 1.7]), odl.uniform_partition(0, np.pi, 10, nodes_on_bdry=True)]:
        g = rodl.from_odl(tomo.Parallel2dGeometry(apart, odl.uniform_partition(-1, 1, 8)))
        assert g.num_views == apart.size
    # ... but not a detector sampled off its cell midpoints.
    on_bdry = tomo.Parallel2dGeometry(
        odl.uniform_partition(0, np.pi, 10), odl.uniform_partition(-1, 1, 8, nodes_on_bdry=True)
    )
    with pytest.raises(NotImplementedError, match="midpoints"):
        rodl.from_odl(on_bdry)
    with pytest.raises(NotImplementedError, match="impl=.rodl."):
        rodl.from_odl(odl.uniform_discr([0], [1], [4], dtype="complex64"))
    with pytest.raises(TypeError, match="expected an ODL"):
        rodl.from_odl(42)
    with pytest.raises(NotImplementedError, match="weighted"):
        rodl.from_odl(odl.uniform_discr([0], [1], [4], weighting=2.0))
    del space


@pytest.mark.parametrize(
    "ndim,curvature,extra,make_rodl",
    [
        (2, 6.0, {}, lambda ap, dp: rodl.FanBeamGeometry(ap, dp, 4, 2, det_curvature_radius=6.0)),
        (2, 3.0, {}, lambda ap, dp: rodl.FanBeamGeometry(ap, dp, 4, 2, det_curvature_radius=3.0)),
        (3, (6.0, None), {}, lambda ap, dp: rodl.ConeBeamGeometry(ap, dp, 4, 2, det_curvature_radius=(6.0, None))),
        (
            3,
            (6.0, None),
            {"pitch": 0.7},
            lambda ap, dp: rodl.ConeBeamGeometry(ap, dp, 4, 2, pitch=0.7, det_curvature_radius=(6.0, None)),
        ),
        (3, (5.0, 5.0), {}, lambda ap, dp: rodl.ConeBeamGeometry(ap, dp, 4, 2, det_curvature_radius=(5.0, 5.0))),
    ],
    ids=["fan-arc", "fan-arc-tight", "cylinder", "helical-cylinder", "sphere"],
)
def test_curved_odl_geometries_convert(ndim, curvature, extra, make_rodl):
    """ODL 1.0's curved detectors (det_curvature_radius) convert view by view and project as
    rodl's own curved constructors (ODL itself cannot project them with ASTRA)."""
    apart = (0.3, 0.3 + 2 * np.pi, 24)
    dpart = (-0.45, 0.35, 20) if ndim == 2 else ([-0.45, -0.3], [0.35, 0.3], [20, 14])
    g_odl = (tomo.FanBeamGeometry if ndim == 2 else tomo.ConeBeamGeometry)(
        odl.uniform_partition(*apart),
        odl.uniform_partition(*dpart),
        4,
        2,
        det_curvature_radius=curvature,
        **extra,
    )
    g_rodl = make_rodl(rodl.uniform_partition(*apart), rodl.uniform_partition(*dpart))
    g_conv = rodl.from_odl(g_odl)
    assert g_conv.det_curvature_radius == g_rodl.det_curvature_radius == (curvature if ndim == 2 else tuple(curvature))
    with pytest.raises(NotImplementedError, match="curved"):
        g_conv.vectors
    lo, hi = [-1.0] * ndim, [1.0] * ndim
    s = rodl.uniform_discr(lo, hi, [12] * ndim, dtype="float64")
    a, b = rodl.RayTransform(s, g_conv), rodl.RayTransform(s, g_rodl)
    assert a.range == b.range
    x = np.random.default_rng(1).random(s.shape)
    np.testing.assert_allclose(a(x), b(x), rtol=0, atol=1e-10)
    y = np.random.default_rng(0).standard_normal(a.range.shape)
    np.testing.assert_allclose(a.adjoint(y), b.adjoint(y), rtol=0, atol=1e-9)
