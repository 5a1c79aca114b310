"""rodl's cone beam with a cylindrical detector against ASTRA 2.5's ``cyl_cone_vec`` on the GPU
(issue #35 item 5). Marker ``gpu``; skipped where ASTRA is not installed (a peer to compare
with, not a dependency: ``../shared/tools/device-anchors`` stages it for the GPU machine).

Both sides get the same per-view vectors: rodl's ``Geometry.from_vectors`` takes the frame at
the detector's centre pixel with the pixel pitch as arc length, which is ASTRA's
``cyl_cone_vec`` form (plus the radius). The flat ``cone_vec`` comparison of the same vectors
measures how far the two discretisations differ anyway (rodl: Joseph with exact adjoint;
ASTRA: texture-interpolated ray marching); the curved comparison must not differ more.

``astra_setup`` is shared with ``benches/python/astra_cyl_cone.py``.
"""

import numpy as np
import pytest

import rodl

pytestmark = pytest.mark.gpu


def cone_vectors(n, views, src=4.0, det=4.0, pitch=0.0):
    """rodl's per-view vectors of cone_512's sampling scaled to ``n`` (volume ``[-1, 1]³``,
    ``n`` views over a full turn, a ``1.5 n × n`` detector of 2.8284 × 2.8859 half-widths),
    and the detector shape."""
    nu, nv = 3 * n // 2, n
    space = rodl.uniform_discr([-1.0] * 3, [1.0] * 3, [n] * 3, dtype="float32")
    g = rodl.ConeBeamGeometry(
        rodl.uniform_partition(0.0, 2 * np.pi, views),
        rodl.uniform_partition([-2.8284, -2.8859], [2.8284, 2.8859], [nu, nv]),
        src,
        det,
        pitch=pitch,
    )
    return space, g.vectors, (nu, nv)


def astra_setup(space, vectors, det_shape, radius=None):
    """ASTRA's volume and projection geometries for rodl's ``space`` and per-view
    ``vectors`` (``radius``: a cylindrical detector, ``cyl_cone_vec``; else ``cone_vec``),
    and the functions taking rodl's arrays to ASTRA's layout and back.

    ASTRA's volume array is ``[z, y, x]`` and rodl's ``[x, y, z]``: as ODL does, rodl's array
    is handed over as it is and the coordinates are reversed (ASTRA's x is rodl's z).
    ASTRA's data are ``[row (v), view, column (u)]``, rodl's ``[view, u, v]``. A cylindrical
    detector in ASTRA curves towards the side of ``u × v``: where that points away from the
    source, u is mirrored (its vector negated, rodl's columns reversed)."""
    import astra

    nx, ny, nz = space.shape
    lo, hi = space.min_pt, space.max_pt
    vol_geom = astra.create_vol_geom(ny, nz, nx, lo[2], hi[2], lo[1], hi[1], lo[0], hi[0])
    v = np.asarray(vectors, dtype=np.float64).copy()
    a = v.reshape(len(v), 4, 3)[:, :, ::-1].reshape(len(v), 12).copy()  # (x, y, z) -> (z, y, x)
    nu, nv = det_shape
    mirror = False
    if radius is not None:
        s, d, u, w = a[:, 0:3], a[:, 3:6], a[:, 6:9], a[:, 9:12]
        towards_source = np.einsum("ij,ij->i", np.cross(u, w), s - d)
        if np.all(towards_source < 0):
            mirror = True
            a[:, 6:9] = -u
        elif not np.all(towards_source > 0):
            raise ValueError("views disagree on the detector's orientation")
        a = np.hstack([a, np.full((len(a), 1), float(radius))])
        proj_geom = astra.create_proj_geom("cyl_cone_vec", nv, nu, a)
    else:
        proj_geom = astra.create_proj_geom("cone_vec", nv, nu, a)

    def to_astra(data):
        d = np.asarray(data, dtype=np.float32)
        if mirror:
            d = d[:, ::-1, :]
        return np.ascontiguousarray(d.transpose(2, 0, 1))

    def from_astra(sino):
        d = np.asarray(sino).transpose(1, 2, 0)
        if mirror:
            d = d[:, ::-1, :]
        return np.ascontiguousarray(d)

    return vol_geom, proj_geom, to_astra, from_astra


def smooth_phantom(space):
    """Gaussians (smooth, so that the two discretisations agree closely) plus rodl's
    Shepp–Logan scaled down (edges, where they differ most)."""
    x, y, z = np.meshgrid(*[np.linspace(lo, hi, n) for lo, hi, n in zip(space.min_pt, space.max_pt, space.shape)],
                          indexing="ij")
    f = np.zeros(space.shape)
    for (cx, cy, cz, r, a) in [(0.2, -0.1, 0.1, 0.35, 1.0), (-0.4, 0.3, -0.2, 0.2, 0.7), (0.1, 0.45, 0.5, 0.15, 0.5)]:
        f += a * np.exp(-((x - cx) ** 2 + (y - cy) ** 2 + (z - cz) ** 2) / (2 * r * r))
    return (f + 0.2 * np.asarray(rodl.shepp_logan(space))).astype(np.float32)


def astra_forward(vol, vol_geom, proj_geom):
    import astra

    i, sino = astra.create_sino3d_gpu(vol, proj_geom, vol_geom)
    astra.data3d.delete(i)
    return sino


def astra_backward(sino, vol_geom, proj_geom):
    import astra

    i, vol = astra.create_backprojection3d_gpu(sino, proj_geom, vol_geom)
    astra.data3d.delete(i)
    return vol


def relative(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def compare(n, views, radius, pitch=0.0):
    """rodl (CUDA) against ASTRA for one geometry: (forward relative difference, scale of
    ASTRA's forward against rodl's, back-projection relative difference after the best scale)."""
    space, vectors, shape = cone_vectors(n, views, pitch=pitch)
    curvature = None if radius is None else (float(radius), None)
    geometry = rodl.Geometry.from_vectors("point", shape, vectors, det_curvature_radius=curvature)
    ray = rodl.RayTransform(space, geometry, backend="cuda:0")
    vol_geom, proj_geom, to_astra, from_astra = astra_setup(space, vectors, shape, radius)
    f = smooth_phantom(space)
    ours = np.asarray(ray(f))
    theirs = from_astra(astra_forward(f, vol_geom, proj_geom))
    scale = float(np.vdot(theirs, ours) / np.vdot(ours, ours))
    y = ours + 0.1 * np.random.default_rng(3).standard_normal(ours.shape).astype(np.float32)
    bp = np.asarray(ray.adjoint(y))
    bp_theirs = astra_backward(to_astra(y), vol_geom, proj_geom)
    k = float(np.vdot(bp_theirs, bp) / np.vdot(bp, bp))
    return relative(ours, theirs), scale, relative(k * bp, bp_theirs)


@pytest.fixture(scope="module")
def astra():
    astra = pytest.importorskip("astra", reason="ASTRA 2.5 is not installed (a peer, not a dependency)")
    if not astra.use_cuda():
        pytest.fail("ASTRA finds no GPU")
    return astra


def test_flat_layout_matches_astra_cone_vec(astra):
    """The layout mapping is right: rodl's flat detector against ASTRA's ``cone_vec``."""
    fwd, scale, bp = compare(48, 72, None)
    print(f"flat cone_vec: forward {fwd:.2e}, scale {scale:.5f}, back-projection {bp:.2e}")
    assert abs(scale - 1) < 5e-3
    assert fwd < 1.5e-2


@pytest.mark.parametrize("pitch", [0.0, 0.5])
def test_cylindrical_detector_matches_astra_cyl_cone_vec(astra, pitch):
    """rodl's cylindrical detector (radius = source to detector, a clinical arc centred on the
    focal spot) against ASTRA's ``cyl_cone_vec``, circular and helical: as close as the flat
    detectors of the two are."""
    flat, _, _ = compare(48, 72, None, pitch)
    fwd, scale, bp = compare(48, 72, 8.0, pitch)
    print(f"pitch {pitch}: cyl_cone_vec forward {fwd:.2e} (flat {flat:.2e}), scale {scale:.5f}, back-projection {bp:.2e}")
    assert abs(scale - 1) < 5e-3
    assert fwd < 1.5 * flat + 2e-3
    # Not asserted: ASTRA's back-projection is not the transpose of its forward (2.2 % off for
    # flat detectors); for cyl_cone_vec it differs from rodl's exact adjoint by 0.41 (pitch 0)
    # and 0.48 (pitch 0.5) relative after the best scale (H100, 2026-12-06), while the forwards
    # agree as closely as the flat ones. rodl's adjoint is checked exact in its own tests.


def test_cylinder_of_other_radius_matches_astra(astra):
    """A lab-CT cylinder whose axis is not at the source (radius 12 > source to detector 8)."""
    flat, _, _ = compare(40, 60, None)
    fwd, scale, _ = compare(40, 60, 12.0)
    print(f"radius 12: forward {fwd:.2e} (flat {flat:.2e}), scale {scale:.5f}")
    assert abs(scale - 1) < 5e-3
    assert fwd < 1.5 * flat + 2e-3
