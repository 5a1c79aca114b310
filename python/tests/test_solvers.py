import numpy as np
import pytest

import rodl


@pytest.fixture(scope="module")
def problem():
    space = rodl.uniform_discr([-1, -1], [1, 1], [48, 48], dtype="float32")
    ray = rodl.RayTransform(space, rodl.parallel_beam_geometry(space, 60))
    phantom = rodl.shepp_logan(space)
    return space, ray, phantom, ray(phantom)


def test_cgls_in_place_with_callback(problem):
    space, ray, phantom, data = problem
    x = space.zero()
    seen = []
    info = rodl.cgls(ray, x, data, niter=15, callback=lambda it: seen.append(it.copy()))
    assert info["iterations"] == 15 and info["stop"] == "maxiterations"
    assert len(seen) == 15
    np.testing.assert_array_equal(seen[-1], x)
    assert info["residual"] < 0.1 * ray.range.norm(data)
    assert rodl.psnr(x, phantom) > 20


def test_callback_stop_iteration_and_errors(problem):
    space, ray, _, data = problem
    x = space.zero()
    count = [0]

    def stop_at_three(_):
        count[0] += 1
        if count[0] == 3:
            raise StopIteration

    info = rodl.cgls(ray, x, data, niter=50, callback=stop_at_three)
    assert info["iterations"] == 3 and info["stop"] == "callbackstopped"

    def boom(_):
        raise KeyError("from the callback")

    y = space.zero()
    with pytest.raises(KeyError, match="from the callback"):
        rodl.sirt(ray, y, data, niter=10, callback=boom)
    assert np.any(y != 0)  # the iterate of the first iteration was written back
    with pytest.raises(TypeError, match="callable"):
        rodl.cgls(ray, space.zero(), data, niter=2, callback=3)


def test_every_solver_reconstructs(problem):
    space, ray, phantom, data = problem
    results = {}
    for name, run in {
        "landweber": lambda x: rodl.landweber(ray, x, data, niter=60),
        "sirt": lambda x: rodl.sirt(ray, x, data, niter=60, nonnegative=True),
        "mlem": lambda x: rodl.mlem(ray, x, data, niter=40),
        "osem": lambda x: rodl.osem(ray, x, data, niter=8, subsets=6),
        "pdhg_tv": lambda x: rodl.pdhg_tv(ray, x, data, 1e-4, niter=150),
        "fista_tv": lambda x: rodl.fista_tv(ray, x, data, 1e-4, niter=100),
    }.items():
        x = space.one() if name in ("mlem", "osem") else space.zero()
        info = run(x)
        assert info["iterations"] > 0
        results[name] = rodl.psnr(x, phantom)
    for name, p in results.items():
        assert p > 17, (name, p)
    assert results["pdhg_tv"] > 25


def test_progress_bar_writes_log_lines_when_not_a_terminal(problem, capfd):
    space, ray, _, data = problem
    rodl.cgls(ray, space.zero(), data, niter=10, progress=True)
    err = capfd.readouterr().err
    assert "10/10" in err


def test_solver_argument_errors(problem):
    space, ray, _, data = problem
    with pytest.raises(TypeError, match="dtype float32"):
        rodl.cgls(ray, np.zeros(space.shape), data)  # float64 iterate for a float32 operator
    with pytest.raises(ValueError, match="expected shape"):
        rodl.cgls(ray, np.zeros((3, 3), dtype="float32"), data)
    with pytest.raises(ValueError, match="rhs"):
        rodl.cgls(ray, space.zero(), np.zeros((2, 2)))
    ro = space.zero()
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="x"):
        rodl.cgls(ray, ro, data, niter=2)
    with pytest.raises(ValueError, match="relaxation"):
        rodl.sirt(ray, space.zero(), data, relaxation=3.0)
    with pytest.raises(ValueError, match="subsets"):
        rodl.osem(ray, space.one(), data, subsets=0)
    with pytest.raises(TypeError, match="RayTransform"):
        rodl.osem(rodl.IdentityOperator(space), space.one(), space.one())
    with pytest.raises(ValueError):
        rodl.pdhg_tv(ray, space.zero(), data, -1.0)
    with pytest.raises(ValueError, match="niter"):
        rodl.cgls(ray, space.zero(), data, niter=10**12)
