"""FBP of ODL geometries with non-uniform angles (``nonuniform_partition``, random angles,
subsets such as ``geometry[i::k]``) converted by ``rodl.from_odl``: each view is weighted by its
share of the angle range, so a random scan reconstructs about as well as a uniform one with as
many views, and a uniform scan given through a non-uniform partition as the uniform one."""

import numpy as np
import pytest

import rodl

odl = pytest.importorskip("odl")
tomo = pytest.importorskip("odl.applications.tomo")


def _phantom(n=64):
    c = (np.arange(n) + 0.5) / n * 2 - 1
    x, y = np.meshgrid(c, c, indexing="ij")
    return (((x - 0.2) ** 2 + y**2 < 0.25) * 1.0 + ((x + 0.3) ** 2 + (y - 0.3) ** 2 < 0.04) * 0.5).astype("float64")


def _rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _fan(apart):
    return tomo.FanBeamGeometry(apart, odl.uniform_partition(-3, 3, 96), src_radius=3, det_radius=2)


def _fbp_error(geometry, x):
    ray = rodl.RayTransform(rodl.uniform_discr([-1, -1], [1, 1], x.shape), rodl.from_odl(geometry))
    return _rel(rodl.fbp_op(ray)(ray(x)), x)


def test_random_angles_reconstruct_near_the_uniform_scan():
    x = _phantom()
    rng = np.random.default_rng(3)
    n = 120
    uniform = _fbp_error(_fan(odl.uniform_partition(0, 2 * np.pi, n)), x)
    pts = np.sort(rng.uniform(0, 2 * np.pi, n))
    random = _fbp_error(_fan(odl.nonuniform_partition(pts, min_pt=0, max_pt=2 * np.pi)), x)
    assert random < uniform + 0.1, (random, uniform)


def test_uniform_angles_through_a_nonuniform_partition():
    x = _phantom()
    n = 60
    apart = odl.uniform_partition(0, 2 * np.pi, n)
    pts = np.asarray(apart.coord_vectors[0])
    same = odl.nonuniform_partition(pts, min_pt=0, max_pt=2 * np.pi)
    a, b = _fan(apart), _fan(same)
    s = rodl.uniform_discr([-1, -1], [1, 1], x.shape)
    ra, rb = rodl.RayTransform(s, rodl.from_odl(a)), rodl.RayTransform(s, rodl.from_odl(b))
    y = ra(x)
    np.testing.assert_allclose(rodl.fbp_op(rb)(y), rodl.fbp_op(ra)(y), rtol=0, atol=1e-10)


def test_subsets_reconstruct():
    """``geometry[i::k]``, as in ODL's Kaczmarz example: every k-th view; the FBP of the subset
    is a coarser FBP of the whole (k·Δθ per view)."""
    x = _phantom()
    g = _fan(odl.uniform_partition(0, 2 * np.pi, 240))
    sub = g[1::4]
    whole, part = _fbp_error(g, x), _fbp_error(sub, x)
    assert part < whole + 0.1, (part, whole)
