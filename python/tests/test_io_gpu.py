"""rodl.io's preprocessing on PyTorch CUDA tensors (marker ``gpu``; fails where no GPU can be
used): computed on the tensor's GPU by rodl's kernels, the results equal the host functions'
(bit for bit; ``neg_log`` to two units in the last place), the input is left as it was and the
result stays on the tensor's device."""

import numpy as np
import pytest

import rodl

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu


def counts(seed, shape, level=1000.0):
    rng = np.random.default_rng(seed)
    return (level + rng.normal(0.0, 0.05 * level, shape)).astype(np.float32)


def on_gpu(a):
    return torch.from_numpy(np.ascontiguousarray(a)).to("cuda:0")


def host(t):
    assert isinstance(t, torch.Tensor) and t.device.type == "cuda", t
    assert t.dtype == torch.float32
    return t.cpu().numpy()


def test_flat_field_and_neg_log_on_the_gpu_equal_the_host():
    p, f, d = counts(1, (7, 24, 5), 600.0), counts(2, (3, 24, 5)), counts(3, (2, 24, 5), 50.0)
    f[0, 3, 2] = 10.0  # a flat not above its dark: set to 1, as on the host
    f[1, 3, 2] = f[2, 3, 2] = 10.0
    t = on_gpu(p)
    keep = t.clone()
    for darks in [d, None]:
        want = rodl.io.flat_field(p, f, darks)
        got = rodl.io.flat_field(t, on_gpu(f), None if darks is None else on_gpu(darks))
        assert np.array_equal(host(got), want)
        assert torch.equal(t, keep), "the input tensor was changed"
    y = want.copy()
    y[0, 0, 0], y[1, 1, 1] = 0.0, -3.0  # below the floor: clamped
    np.testing.assert_array_max_ulp(host(rodl.io.neg_log(on_gpu(y))), rodl.io.neg_log(y), maxulp=2)
    got = host(rodl.io.neg_log(on_gpu(y), floor=1e-3))
    np.testing.assert_array_max_ulp(got, rodl.io.neg_log(y, floor=1e-3), maxulp=2)
    assert np.isfinite(got).all()


def test_zingers_and_stripes_on_the_gpu_equal_the_host():
    frames = counts(4, (4, 20, 9))
    frames[1, 5, 3], frames[2, 9, 6], frames[3, 0, 0] = 5000.0, 3000.0, 9000.0
    want, n = rodl.io.remove_zingers(frames, 500.0)
    got, m = rodl.io.remove_zingers(on_gpu(frames), 500.0)
    assert (m, n) == (3, 3)
    assert np.array_equal(host(got), want)
    y = counts(5, (30, 20, 3), 1.0)
    y[:, 7, :] += 0.05
    for size in [3, 5]:
        assert np.array_equal(host(rodl.io.remove_stripes(on_gpu(y), size)), rodl.io.remove_stripes(y, size))


def test_other_dtypes_layouts_and_streams():
    p = counts(6, (5, 12, 4))
    f = counts(7, (2, 12, 4))
    want = rodl.io.flat_field(p, f)
    # float64 and a non-contiguous tensor: processed as a float32 contiguous copy.
    t64 = on_gpu(p.astype(np.float64))
    assert np.array_equal(host(rodl.io.flat_field(t64, f)), rodl.io.flat_field(p.astype(np.float64), f))
    wide = on_gpu(np.ascontiguousarray(p.transpose(0, 2, 1))).transpose(1, 2)
    assert not wide.is_contiguous()
    assert np.array_equal(host(rodl.io.flat_field(wide, f)), want)
    # On a side stream: the work is ordered on it.
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        t = on_gpu(p)
        out = rodl.io.flat_field(t, f)
        out = rodl.io.neg_log(out)
    s.synchronize()
    np.testing.assert_array_max_ulp(host(out), rodl.io.neg_log(want), maxulp=2)


def test_bad_arguments_on_the_gpu_are_exceptions():
    with pytest.raises(ValueError, match="3D"):
        rodl.io.remove_stripes(on_gpu(np.ones((3, 4), np.float32)), 3)
    with pytest.raises(ValueError, match="odd"):
        rodl.io.remove_stripes(on_gpu(np.ones((3, 8, 2), np.float32)), 4)
    with pytest.raises(ValueError, match="floor"):
        rodl.io.neg_log(on_gpu(np.ones(3, np.float32)), floor=0.0)
    with pytest.raises(ValueError):
        rodl.io.flat_field(on_gpu(np.ones((2, 8, 2), np.float32)), np.ones((1, 7, 2), np.float32))
    with pytest.raises(TypeError, match="complex"):
        rodl.io.neg_log(torch.ones(3, dtype=torch.complex64, device="cuda:0"))
