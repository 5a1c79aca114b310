"""Shared fixtures of the Python tests. GPU tests carry the marker ``gpu`` and fail (not skip)
when no GPU can be used: run them only where one is expected (``pytest -m gpu``); the default
run deselects them."""

import pathlib

import numpy as np
import pytest

import rodl

DATA = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "odl"


def pytest_collection_modifyitems(config, items):
    if config.getoption("-m"):
        return
    skip = pytest.mark.skip(reason="GPU test: run with `pytest -m gpu` on a machine with a GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def geometry_cases():
    """(name, space, geometry) for every geometry kind, small."""
    s2 = rodl.uniform_discr([-1, -1], [1, 1], [20, 24])
    s3 = rodl.uniform_discr([-1, -1, -1], [1, 1, 1], [10, 12, 8])
    ap = rodl.uniform_partition(0, np.pi, 17)
    af = rodl.uniform_partition(0, 2 * np.pi, 19)
    d1 = rodl.uniform_partition(-1.6, 1.6, 27)
    d2 = rodl.uniform_partition([-1.6, -1.2], [1.6, 1.2], [21, 13])
    views = []
    for k, a in enumerate(np.linspace(0, 2 * np.pi, 15, endpoint=False)):
        c, s = np.cos(a), np.sin(a)
        views.append([-3 * s, 3 * c, 0.1 * k, 2 * s, -2 * c, 0.05, 0.15 * c, 0.15 * s, 0, 0, 0, 0.2])
    return [
        ("parallel2d", s2, rodl.Parallel2dGeometry(ap, d1, det_offset=0.1)),
        ("fanflat", s2, rodl.FanBeamGeometry(af, d1, 4.0, 2.0)),
        ("parallel3d", s3, rodl.Parallel3dAxisGeometry(ap, d2, axis=(0.1, 0.2, 1.0))),
        ("cone", s3, rodl.ConeBeamGeometry(af, d2, 4.0, 2.0)),
        ("helical", s3, rodl.ConeBeamGeometry(rodl.uniform_partition(0, 4 * np.pi, 23), d2, 4.0, 2.0, pitch=0.8)),
        ("vec", s3, rodl.VecGeometry((14, 12), np.array(views), beam="point")),
    ]
