import numpy as np
import pytest

import rodl


def test_psnr_ssim_relative_error():
    r = np.array([[0.0, 1.0], [2.0, 4.0]])
    x = r + 0.4
    assert rodl.psnr(x, r) == pytest.approx(10 * np.log10(16 / 0.16))
    assert rodl.psnr(r, r) == np.inf
    assert rodl.relative_error(x, r) == pytest.approx(np.linalg.norm(x - r) / np.linalg.norm(r))
    img = np.outer(np.sin(np.linspace(0, 3, 32)), np.cos(np.linspace(0, 2, 32)))
    assert rodl.ssim(img, img) == 1.0
    assert rodl.ssim(img + 0.1 * np.random.default_rng(0).standard_normal(img.shape), img) < 0.9
    with pytest.raises(ValueError):
        rodl.psnr(np.zeros(3), np.zeros(4))


def test_phantoms_and_noise_are_seeded():
    s = rodl.uniform_discr([-1, -1], [1, 1], [32, 32], dtype="float32")
    p = rodl.shepp_logan(s)
    assert p.dtype == np.float32 and p.max() == pytest.approx(1.0)
    assert rodl.shepp_logan(s, modified=False).max() == pytest.approx(2.0)
    a, b = rodl.white_noise(s, 0.5, seed=3), rodl.white_noise(s, 0.5, seed=3)
    np.testing.assert_array_equal(a, b)
    assert a.std() == pytest.approx(0.5, rel=0.1)
    g = rodl.add_gaussian_noise(p, relative=0.05, seed=1)
    assert np.linalg.norm(g - p) / np.linalg.norm(p) == pytest.approx(0.05, rel=0.15)
    assert g.dtype == np.float32
    counts = rodl.poisson_noise(np.full((100, 100), 4.0), seed=2)
    assert counts.mean() == pytest.approx(4.0, rel=0.05) and np.all(counts == np.round(counts))
    t = rodl.transmission_noise(np.full((50, 50), 1.0), 1e5, seed=0)
    assert t.mean() == pytest.approx(1.0, rel=0.01)
    with pytest.raises(ValueError, match="exactly one"):
        rodl.add_gaussian_noise(p)
    with pytest.raises(ValueError):
        rodl.white_noise(s, -1.0)
    with pytest.raises(ValueError):
        rodl.poisson_noise(np.full(3, -1.0))


def test_check_adjoint_with_known_norm():
    s = rodl.uniform_discr([0, 0], [1, 1], [8, 8])
    g = rodl.Gradient(s)
    r = rodl.check_adjoint(g, trials=3, seed=1, opnorm=2 * np.sqrt(2) * 8)
    assert r["opnorm"] == 2 * np.sqrt(2) * 8 and r["trials"] == 3 and r["max_rel_error"] < 1e-13
    with pytest.raises(ValueError):
        rodl.check_adjoint(g, opnorm=-1.0)


def test_cuda_request_without_a_gpu_is_a_clean_exception():
    """On a machine without a usable GPU (CI), asking for one raises CudaUnavailableError, a
    RuntimeError, with rodl's message. (On a GPU machine this test has nothing to check.)"""
    s = rodl.uniform_discr([-1, -1], [1, 1], [8, 8], dtype="float32")
    g = rodl.parallel_beam_geometry(s, 4)
    try:
        ray = rodl.RayTransform(s, g, backend="cuda")
    except rodl.CudaUnavailableError as e:
        assert isinstance(e, RuntimeError)
        assert "CUDA" in str(e)
    else:
        assert ray.backend == "cuda:0"
