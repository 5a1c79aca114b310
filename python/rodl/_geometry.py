"""Geometry constructors with keyword arguments, named as ODL names its geometry classes.

Each builds a description in rodl's JSON geometry format and checks it in Rust; every kind
of the format is here: parallel beam in 2D and 3D, fan beam, cone beam (circular or helical)
and per-view vectors.
"""

import json
import math
from typing import NamedTuple, Optional, Sequence, Tuple, Union

from ._rodl import Geometry


class Partition(NamedTuple):
    """A uniform partition of a box into ``shape`` cells, sampled at cell midpoints (ODL's
    ``uniform_partition``)."""

    min_pt: Tuple[float, ...]
    max_pt: Tuple[float, ...]
    shape: Tuple[int, ...]


def _tuple(v, kind):
    if isinstance(v, (int, float)):
        return (kind(v),)
    return tuple(kind(x) for x in v)


def uniform_partition(min_pt, max_pt, shape) -> Partition:
    """The partition of ``[min_pt, max_pt]`` into ``shape`` equal cells (numbers for 1D)."""
    lo, hi, n = _tuple(min_pt, float), _tuple(max_pt, float), _tuple(shape, int)
    if not (len(lo) == len(hi) == len(n)):
        raise ValueError(
            f"uniform_partition: min_pt, max_pt and shape have different lengths "
            f"({len(lo)}, {len(hi)}, {len(n)})"
        )
    if any(k < 1 for k in n):
        raise ValueError(f"uniform_partition: shape must hold positive cell counts, got {n}")
    if not all(math.isfinite(v) for v in lo + hi):
        raise ValueError(f"uniform_partition: min_pt and max_pt must be finite, got {lo}, {hi}")
    if any(a >= b for a, b in zip(lo, hi)):
        raise ValueError(f"uniform_partition: min_pt must lie below max_pt, got {lo}, {hi}")
    return Partition(lo, hi, n)


def _finite(who: str, **values) -> None:
    """A ``ValueError`` naming the constructor and the argument unless every value is finite."""
    for name, v in values.items():
        for x in _tuple(v, float):
            if not math.isfinite(x):
                raise ValueError(f"{who}: {name} must be finite, got {v}")


PartitionLike = Union[Partition, Tuple[float, float, int]]


def _angles(apart: PartitionLike) -> dict:
    p = apart if isinstance(apart, Partition) else uniform_partition(*apart)
    if len(p.shape) != 1:
        raise ValueError(f"the angle partition must be 1D, got {len(p.shape)}D")
    return {"min": p.min_pt[0], "max": p.max_pt[0], "count": p.shape[0]}


def _detector(dpart, ndim: int) -> dict:
    p = dpart if isinstance(dpart, Partition) else uniform_partition(*dpart)
    if len(p.shape) != ndim - 1:
        raise ValueError(
            f"a {ndim}D geometry needs a {ndim - 1}D detector partition, got {len(p.shape)}D"
        )
    return {"min": list(p.min_pt), "max": list(p.max_pt), "shape": list(p.shape)}


def _build(who: str, spec: dict) -> Geometry:
    """The geometry of ``spec`` (rodl's JSON format, checked in Rust); an inconsistent one is a
    ``ValueError`` naming the constructor, not the JSON the user never wrote."""
    try:
        return Geometry.from_json(json.dumps(spec, allow_nan=False))
    except ValueError as e:
        msg = str(e)
        for prefix in ("geometry JSON: ", "invalid configuration: ", "invalid geometry: "):
            if msg.startswith(prefix):
                msg = msg[len(prefix):]
        raise ValueError(f"{who}: {msg}") from None


def _offset(v, n: int):
    t = _tuple(v, float)
    if len(t) != n:
        raise ValueError(f"det_offset must have {n} entries, got {len(t)}")
    return list(t)


def Parallel2dGeometry(apart: PartitionLike, dpart: PartitionLike, det_offset: float = 0.0) -> Geometry:
    """2D parallel beam (ODL's ``Parallel2dGeometry`` with its default orientation): angles
    ``apart`` (radians), detector ``dpart``, the detector shifted by ``det_offset`` along u."""
    _finite("Parallel2dGeometry", det_offset=det_offset)
    return _build(
        "Parallel2dGeometry",
        {
            "kind": "parallel2d",
            "angles": _angles(apart),
            "detector": _detector(dpart, 2),
            "det_offset": _offset(det_offset, 1),
        }
    )


def _curved(spec: dict, det_curvature_radius, src_offsets, ndim: int) -> dict:
    """Adds ODL's ``det_curvature_radius`` and the flying focal spot's ``src_offsets`` to a
    fan or cone ``spec`` (``None``: leave them out)."""
    if det_curvature_radius is not None:
        if ndim == 2:
            spec["det_curvature_radius"] = float(det_curvature_radius)
        else:
            spec["det_curvature_radius"] = [
                None if r is None else float(r) for r in det_curvature_radius
            ]
    if src_offsets is not None:
        spec["src_offsets"] = [[float(x) for x in o] for o in src_offsets]
    return spec


def FanBeamGeometry(
    apart: PartitionLike,
    dpart: PartitionLike,
    src_radius: float,
    det_radius: float,
    det_offset: float = 0.0,
    det_curvature_radius: Optional[float] = None,
    src_offsets: Optional[Sequence[Sequence[float]]] = None,
) -> Geometry:
    """2D fan beam (ODL's ``FanBeamGeometry``): the source at ``src_radius`` from the rotation
    centre, the detector at ``det_radius`` opposite. With ``det_curvature_radius`` the detector
    is an arc of that radius (its centre towards the source; ``src_radius + det_radius``: the
    equiangular detector about the source) and ``dpart`` partitions its angle (radians), as in
    ODL. ``src_offsets``: a flying focal spot, per-view source shifts ``(towards the source,
    along u)`` used cyclically (ODL's ``flying_focal_spot`` shifts)."""
    _finite("FanBeamGeometry", src_radius=src_radius, det_radius=det_radius, det_offset=det_offset)
    return _build(
        "FanBeamGeometry",
        _curved(
            {
                "kind": "fanflat",
                "angles": _angles(apart),
                "detector": _detector(dpart, 2),
                "src_radius": float(src_radius),
                "det_radius": float(det_radius),
                "det_offset": _offset(det_offset, 1),
            },
            det_curvature_radius,
            src_offsets,
            2,
        ),
    )


def Parallel3dAxisGeometry(
    apart: PartitionLike,
    dpart: PartitionLike,
    axis: Sequence[float] = (0.0, 0.0, 1.0),
    det_offset: Sequence[float] = (0.0, 0.0),
) -> Geometry:
    """3D parallel beam rotating about ``axis`` (ODL's ``Parallel3dAxisGeometry``)."""
    _finite("Parallel3dAxisGeometry", axis=axis, det_offset=det_offset)
    return _build(
        "Parallel3dAxisGeometry",
        {
            "kind": "parallel3d",
            "angles": _angles(apart),
            "detector": _detector(dpart, 3),
            "axis": list(_tuple(axis, float)),
            "det_offset": _offset(det_offset, 2),
        }
    )


def ConeBeamGeometry(
    apart: PartitionLike,
    dpart: PartitionLike,
    src_radius: float,
    det_radius: float,
    pitch: float = 0.0,
    axis: Sequence[float] = (0.0, 0.0, 1.0),
    det_offset: Sequence[float] = (0.0, 0.0),
    det_curvature_radius: Optional[Tuple[Optional[float], Optional[float]]] = None,
    src_offsets: Optional[Sequence[Sequence[float]]] = None,
) -> Geometry:
    """3D cone beam (ODL's ``ConeBeamGeometry``), circular or, with ``pitch`` (shift along
    ``axis`` per full turn), helical. ``det_curvature_radius`` as in ODL: ``(r, None)`` a
    cylindrical detector, ``(r, r)`` a spherical one (``dpart`` then partitions ODL's curved
    parameters: angle × height, or longitude × latitude). ``src_offsets``: a flying focal spot,
    per-view source shifts ``(towards the source, along u, along the axis)``."""
    _finite("ConeBeamGeometry", src_radius=src_radius, det_radius=det_radius, pitch=pitch, axis=axis,
            det_offset=det_offset)
    return _build(
        "ConeBeamGeometry",
        _curved(
            {
                "kind": "cone",
                "angles": _angles(apart),
                "detector": _detector(dpart, 3),
                "src_radius": float(src_radius),
                "det_radius": float(det_radius),
                "pitch": float(pitch),
                "axis": list(_tuple(axis, float)),
                "det_offset": _offset(det_offset, 2),
            },
            det_curvature_radius,
            src_offsets,
            3,
        ),
    )


def VecGeometry(det_shape, vectors, beam: str = "point", partition=None) -> Geometry:
    """A geometry given view by view (ASTRA's vector geometries): one row of ``vectors`` per
    view, ``[src, det_center, det_u(, det_v)]`` (``src`` a position for ``beam="point"``, a ray
    direction for ``beam="parallel"``; ``det_u``, ``det_v`` the pixel-spacing vectors). See
    ``Geometry.from_vectors``."""
    return Geometry.from_vectors(beam, list(_tuple(det_shape, int)), vectors, partition)
