"""rodl.io.paganin against an independent NumPy implementation of Paganin et al.'s filter and
a closed form, and rodl.io.find_centre_cone on a cone-beam scan of a cylinder computed in
closed form here; tensors in and out; errors as exceptions."""

import math

import numpy as np
import pytest

import rodl

HC_KEV_M = 1.239841984e-9


def numpy_paganin(t, delta_beta, energy, distance, pixel):
    """The filter with numpy.fft on frames padded with their edge values to 2x (one size
    per axis here: 2n, not rodl's fast sizes, which the result does not depend on)."""
    lam = HC_KEV_M / energy
    a = math.pi * lam * distance * delta_beta
    out = np.empty_like(t, dtype=np.float64)
    nu, nv = t.shape[1:]
    pu, pv = 2 * nu, 2 * nv
    fu = np.fft.fftfreq(pu, d=pixel)
    fv = np.fft.fftfreq(pv, d=pixel)
    h = 1.0 / (1.0 + a * (fu[:, None] ** 2 + fv[None, :] ** 2))
    ou, ov = (pu - nu) // 2, (pv - nv) // 2
    for k, frame in enumerate(t.astype(np.float64)):
        padded = np.pad(frame, ((ou, pu - nu - ou), (ov, pv - nv - ov)), mode="edge")
        f = np.fft.ifft2(np.fft.fft2(padded) * h).real
        out[k] = f[ou : ou + nu, ov : ov + nv]
    return out


def test_paganin_matches_numpy_and_a_closed_form():
    rng = np.random.default_rng(3)
    nu, nv = 40, 24
    u = np.arange(nu)[:, None] - 19.5
    v = np.arange(nv)[None, :] - 11.5
    disc = (u**2 + v**2 < 36).astype(np.float64)
    t = np.stack([0.9 - 0.3 * disc, 0.8 - 0.2 * np.roll(disc, 3, axis=0)])
    t = (t + 0.01 * rng.standard_normal(t.shape)).astype(np.float32)
    args = (80.0, 20.0, 0.2, 1.5e-6)
    got = rodl.io.paganin(t, *args)
    assert got.dtype == np.float32 and got.shape == t.shape
    want = numpy_paganin(t, *args)
    assert np.max(np.abs(got - want)) < 2e-6
    # The closed form: 1/(1 + a|f|^2) inverts 1 - a/(4 pi^2) Laplacian; a Gaussian G in
    # 1 - A (G - c Lap G) comes back as 1 - A G.
    lam = HC_KEV_M / 20.0
    px = 1.5e-6
    c = math.pi * lam * 0.2 * 80.0 / (4 * math.pi**2)
    x = (np.arange(96)[:, None] - 47.5) * px
    y = (np.arange(80)[None, :] - 39.5) * px
    s = 6 * px
    g = np.exp(-(x**2 + y**2) / (2 * s * s))
    lap = g * ((x**2 + y**2) / s**4 - 2 / s**2)
    frames = (1 - 0.3 * (g - c * lap))[None].astype(np.float32)
    got = rodl.io.paganin(frames, 80.0, 20.0, 0.2, (px, px))
    assert np.max(np.abs(got[0] - (1 - 0.3 * g))) < 5e-6
    # Magnification M: the same as the distance times M.
    m = rodl.io.paganin(t, 80.0, 20.0, 0.1, 1.5e-6, magnification=2.0)
    assert np.max(np.abs(m - rodl.io.paganin(t, *args))) < 1e-6


def test_paganin_errors_are_value_errors():
    t = np.ones((1, 8, 8), np.float32)
    with pytest.raises(ValueError, match="delta_beta"):
        rodl.io.paganin(t, -1.0, 20.0, 0.2, 1e-6)
    with pytest.raises(ValueError, match="energy"):
        rodl.io.paganin(t, 10.0, 0.0, 0.2, 1e-6)
    with pytest.raises(ValueError, match="pixel_size"):
        rodl.io.paganin(t, 10.0, 20.0, 0.2, "wide")
    with pytest.raises(ValueError, match="3D"):
        rodl.io.paganin(np.ones((8, 8), np.float32), 10.0, 20.0, 0.2, 1e-6)


def cone_scan(shift_px, na=180, nu=64, nv=4, rs=120.0, rd=60.0):
    """Line integrals through a cylinder of radius 9 about (4, -3) (units of the detector
    pixel), over a full turn, the detector shifted by ``shift_px``: rodl's geometry (source at
    -rs e_y rotated counter-clockwise by the angle, detector at +rd e_y)."""
    angles = 2 * math.pi * (np.arange(na) + 0.5) / na
    uw = (np.arange(nu) - (nu - 1) / 2) + shift_px
    s, c = np.sin(angles)[:, None], np.cos(angles)[:, None]
    src = np.stack([rs * s, -rs * c], -1)
    det = np.stack([uw * c - rd * s, uw * s + rd * c], -1)
    d = det - src
    o = np.array([4.0, -3.0]) - src
    dist = np.abs(o[..., 0] * d[..., 1] - o[..., 1] * d[..., 0]) / np.hypot(d[..., 0], d[..., 1])
    chord = 0.02 * 2 * np.sqrt(np.clip(81 - dist**2, 0, None))
    return angles, np.repeat(chord[:, :, None], nv, axis=2).astype(np.float32)


def test_the_centre_of_a_cone_scan_is_found():
    angles, p = cone_scan(3.4)
    axis, offset = rodl.io.find_centre_cone(p, angles, 120.0, 60.0, 1.0)
    assert abs(offset - 3.4) < 0.05
    assert abs(axis + offset - 31.5) < 1e-9
    _, offset = rodl.io.find_centre_cone(p, list(angles), 120.0, 60.0, 1.0, rows=(1, 3))
    assert abs(offset - 3.4) < 0.05
    with pytest.raises(ValueError, match="half a turn"):
        rodl.io.find_centre_cone(p[:40], angles[:40], 120.0, 60.0, 1.0)
    with pytest.raises(ValueError, match="src_radius"):
        rodl.io.find_centre_cone(p, angles, -1.0, 60.0, 1.0)


def test_tensors_in_and_out():
    torch = pytest.importorskip("torch")
    angles, p = cone_scan(-2.2)
    _, offset = rodl.io.find_centre_cone(torch.from_numpy(p), torch.from_numpy(angles), 120.0, 60.0, 1.0)
    assert abs(offset + 2.2) < 0.05
    t = torch.full((2, 16, 8), 0.7)
    out = rodl.io.paganin(t, 50.0, 20.0, 0.1, 1e-6)
    assert isinstance(out, torch.Tensor) and out.device == t.device
    assert torch.allclose(out, t, atol=1e-6)
