"""Inputs that must not pass silently: each is an exception naming what is wrong."""

import numpy as np
import pytest

import rodl


def ray_and_data():
    s = rodl.uniform_discr([-1, -1], [1, 1], [12, 12])
    ray = rodl.RayTransform(s, rodl.parallel_beam_geometry(s, 8))
    return s, ray, ray(rodl.shepp_logan(s))


def test_complex_arrays_are_type_errors():
    s, ray, d = ray_and_data()
    x = rodl.shepp_logan(s).astype(complex) * (1 + 1j)
    with pytest.raises(TypeError, match="complex"):
        ray(x)
    with pytest.raises(TypeError, match="complex"):
        ray.adjoint(d + 0j)
    with pytest.raises(TypeError, match="complex"):
        ray(x.tolist())


@pytest.mark.parametrize("solver", ["cgls", "landweber", "sirt"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_data_are_refused_before_iterating(solver, bad):
    s, ray, d = ray_and_data()
    d = d.copy()
    d[2, 3] = bad
    x = s.zero()
    with pytest.raises(ValueError, match="rhs must be finite"):
        getattr(rodl, solver)(ray, x, d, niter=2)
    assert np.all(x == 0), "x changed although the solver refused to start"


def test_non_finite_start_and_tv_data_are_refused():
    s, ray, d = ray_and_data()
    x = s.zero()
    x[0, 0] = np.nan
    with pytest.raises(ValueError, match="x must be finite"):
        rodl.cgls(ray, x, d, niter=2)
    d = d.copy()
    d[0, 0] = np.nan
    with pytest.raises(ValueError, match="data must be finite"):
        rodl.pdhg_tv(ray, s.zero(), d, 0.01, niter=2)


@pytest.mark.parametrize("solver", ["mlem", "osem"])
def test_em_needs_non_negative_data_and_a_positive_start(solver):
    s, ray, d = ray_and_data()
    run = getattr(rodl, solver)
    neg = d.copy()
    neg[1, 1] = -0.5
    with pytest.raises(ValueError, match="data must be non-negative"):
        run(ray, s.one(), neg, niter=1)
    with pytest.raises(ValueError, match="x must be positive"):
        run(ray, s.zero(), d, niter=1)
    x = s.one()
    run(ray, x, d, niter=1)
    assert np.all(np.isfinite(x))


def test_negative_counts_name_the_argument():
    s, ray, d = ray_and_data()
    cases = [
        ("niter", lambda: rodl.cgls(ray, s.zero(), d, niter=-1)),
        ("subsets", lambda: rodl.osem(ray, s.one(), d, subsets=-2)),
        ("threads", lambda: rodl.RayTransform(s, rodl.parallel_beam_geometry(s, 8), threads=-1)),
        ("shape", lambda: rodl.uniform_discr([-1, -1], [1, 1], [4, -4])),
        ("num_angles", lambda: rodl.parallel_beam_geometry(s, -3)),
        ("trials", lambda: rodl.check_adjoint(ray, trials=-1)),
        ("threads", lambda: rodl.Factory.ray_transform(s, rodl.parallel_beam_geometry(s, 8), threads=-2)),
    ]
    for name, call in cases:
        with pytest.raises(ValueError, match=name):
            call()


def test_geometry_constructors_name_themselves_not_json():
    det = rodl.uniform_partition(-1, 1, 10)
    with pytest.raises(ValueError, match="FanBeamGeometry: det_radius must be finite") as e:
        rodl.FanBeamGeometry((0, 2 * np.pi, 10), det, 3.0, float("nan"))
    assert "JSON" not in str(e.value)
    with pytest.raises(ValueError, match="uniform_partition: shape") as e:
        rodl.Parallel2dGeometry((0, np.pi, -3), det)
    assert "JSON" not in str(e.value)
    with pytest.raises(ValueError, match="ConeBeamGeometry") as e:
        rodl.ConeBeamGeometry((0, 2 * np.pi, 10), ([-1, -1], [1, 1], [4, 4]), -3.0, 2.0)
    assert "JSON" not in str(e.value)


def test_vector_beam_names_fit_the_dimension():
    v2 = np.tile([0.0, -3, 0, 2, 1, 0], (4, 1))
    v3 = np.tile([0.0, -3, 0, 0, 2, 0, 1, 0, 0, 0, 0, 1], (4, 1))
    assert rodl.Geometry.from_vectors("fan", [8], v2).ndim == 2
    assert rodl.Geometry.from_vectors("cone", [8, 8], v3).ndim == 3
    with pytest.raises(ValueError, match="'fan' is the 2D"):
        rodl.Geometry.from_vectors("fan", [8, 8], v3)
    with pytest.raises(ValueError, match="'cone'"):
        rodl.Geometry.from_vectors("cone", [8], v2)
    with pytest.raises(ValueError, match="beam must be"):
        rodl.Geometry.from_vectors("pencil", [8], v2)
