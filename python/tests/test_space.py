import numpy as np
import pytest

import rodl


def test_uniform_discr_matches_odl_conventions():
    s = rodl.uniform_discr([-1, 0], [1, 2], [4, 8], dtype="float32")
    assert s.shape == (4, 8)
    assert s.dtype == np.float32
    assert s.cell_sides == [0.5, 0.25]
    assert s.cell_volume == 0.125
    assert s.weighting == 0.125
    assert s.min_pt == [-1.0, 0.0] and s.max_pt == [1.0, 2.0]
    x = s.one()
    assert x.dtype == np.float32 and x.shape == (4, 8)
    assert s.inner(x, x) == pytest.approx(4.0)  # ∫ 1 over the box
    assert s.norm(x) == pytest.approx(2.0)
    assert s.dist(x, s.zero()) == pytest.approx(2.0)


def test_default_dtype_is_float64_as_in_odl():
    assert rodl.uniform_discr([0], [1], [3]).dtype == np.float64
    assert rodl.rn(3).dtype == np.float64


def test_rn_is_unweighted():
    s = rodl.rn((2, 3))
    assert s.weighting == 1.0
    assert s.inner(s.one(), s.one()) == 6.0
    w = rodl.rn(4, weighting=0.5)
    assert w.norm(w.one()) == pytest.approx(np.sqrt(2.0))


def test_element_casts_and_checks_shape():
    s = rodl.uniform_discr([0, 0], [1, 1], [2, 3], dtype="float32")
    e = s.element([[1, 2, 3], [4, 5, 6]])
    assert e.dtype == np.float32 and e.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert np.zeros((2, 3)) in s
    assert np.zeros((3, 2)) not in s
    with pytest.raises(ValueError, match=r"shape \[2, 3\]"):
        s.element(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="array of real numbers"):
        s.element("abc")


def test_non_contiguous_input_is_read_in_logical_order():
    s = rodl.rn((3, 4))
    a = np.arange(12.0).reshape(4, 3).T  # Fortran-ordered view
    assert not a.flags.c_contiguous
    np.testing.assert_array_equal(s.element(a), a)


def test_bad_spaces_are_value_errors():
    with pytest.raises(ValueError):
        rodl.uniform_discr([1], [0], [4])
    with pytest.raises(ValueError):
        rodl.uniform_discr([0, 0], [1, 1], [4])
    with pytest.raises(ValueError, match="float32 or float64"):
        rodl.uniform_discr([0], [1], [4], dtype="int32")
    with pytest.raises(ValueError, match="float32 or float64"):
        rodl.uniform_discr([0], [1], [4], dtype="complex64")


def test_equality_and_repr():
    a = rodl.uniform_discr([0], [1], [4])
    assert a == rodl.uniform_discr([0], [1], [4])
    assert a != rodl.uniform_discr([0], [1], [5])
    assert a != rodl.uniform_discr([0], [1], [4], dtype="float32")
    assert "uniform_discr" in repr(a)
