#!/usr/bin/env python3
"""Writes the geometry reference data that tests/tomo_odl_geometry.rs reads, from ODL 1.0's own
geometry classes and helpers (run with the ODL that the numbers should come from):

    python3 tests/data/odl/make_geometry_reference.py

* geometry_positions.json: scans of every kind that start at an angle other than 0 (helical
  scans too, with offsets and tilted axes), each with its rodl geometry-file spec and, per view,
  ODL's angle, source position (point beams) or unit ray direction (parallel beams, ODL's
  `-det_to_src`), and the positions `det_point_position(angle, param)` of the detector's corner
  pixels.
* curved_positions.json: the same for fan beams with an arc detector (`det_curvature_radius=r`)
  and cone beams with cylindrical `(r, None)` and spherical `(r, r)` detectors, circular and
  helical, some with a flying focal spot (`src_shift_func=flying_focal_spot(...)`, rodl's
  `src_offsets`), with the positions of every pixel, not only the corners.
* geometry_helpers.json: ODL's `parallel_beam_geometry` and `cone_beam_geometry` for several
  volumes and radii: angle and detector partitions (ODL's defaults and given angle counts), and
  the cases that ODL refuses.

How rodl's `det_offset` maps onto ODL: for parallel beams (no shift function in ODL) it is the
detector partition shifted by the offset; for fan and cone beams it is
`det_shift_func = [0, -offset_u, offset_v]` (ODL's second shift axis is `-u` at angle 0).
"""

import json
import os

import numpy as np
import odl
from odl.applications import tomo

HERE = os.path.dirname(os.path.abspath(__file__))
TAU = 2 * np.pi


def floats(a):
    return [float(x) for x in np.ravel(a)]


def pad3(p):
    p = floats(p)
    return p + [0.0] * (3 - len(p))


def case(name, kind, amin, amax, count, dmin, dmax, shape, offset, src=None, det=None,
         pitch=None, axis=None, curvature=None, ffs=None, every_pixel=False):
    ndim = 2 if kind in ("parallel2d", "fanflat") else 3
    apart = odl.uniform_partition(amin, amax, count)
    parallel = kind.startswith("parallel")
    if parallel:
        # rodl's offset is a shift of the detector along its axes: ODL's partition shifted.
        lo = np.add(dmin, offset)
        hi = np.add(dmax, offset)
    else:
        lo, hi = dmin, dmax
    dpart = odl.uniform_partition(lo, hi, shape)
    extra = {}
    if curvature is not None:
        extra["det_curvature_radius"] = curvature
    if ffs is not None:
        extra["src_shift_func"] = lambda a: tomo.flying_focal_spot(a, apart=apart, shifts=ffs)
    if kind == "parallel2d":
        g = tomo.Parallel2dGeometry(apart, dpart)
    elif kind == "parallel3d":
        g = tomo.Parallel3dAxisGeometry(apart, dpart, axis=axis or (0, 0, 1))
    elif kind == "fanflat":
        g = tomo.FanBeamGeometry(apart, dpart, src, det,
                                 det_shift_func=lambda a: [0.0, -offset[0]], **extra)
    else:
        g = tomo.ConeBeamGeometry(apart, dpart, src, det, pitch=pitch or 0.0,
                                  axis=axis or (0, 0, 1),
                                  det_shift_func=lambda a: [0.0, -offset[0], offset[1]],
                                  **extra)
    spec = {"kind": kind, "angles": {"min": amin, "max": amax, "count": count},
            "detector": {"min": list(dmin), "max": list(dmax), "shape": list(shape)},
            "det_offset": list(offset)}
    if src is not None:
        spec["src_radius"] = src
        spec["det_radius"] = det
    if pitch is not None:
        spec["pitch"] = pitch
    if axis is not None:
        spec["axis"] = list(axis)
    if curvature is not None:
        spec["det_curvature_radius"] = curvature
    if ffs is not None:
        spec["src_offsets"] = [list(s) for s in ffs]
    coords = [dpart.grid.coord_vectors[k] for k in range(ndim - 1)]
    corners = [[0], [shape[0] - 1]] if ndim == 2 else [
        [0, 0], [shape[0] - 1, 0], [0, shape[1] - 1], [shape[0] - 1, shape[1] - 1]]
    if every_pixel:
        corners = [[i] for i in range(shape[0])] if ndim == 2 else [
            [i, j] for i in range(shape[0]) for j in range(shape[1])]
    views = []
    for a in g.angles:
        a = float(a)
        v = {"angle": a}
        if parallel:
            d = -np.asarray(g.det_to_src(a, dpart.mid_pt if ndim == 3 else dpart.mid_pt[0]))
            v["ray"] = pad3(d / np.linalg.norm(d))
        else:
            v["src"] = pad3(g.src_position(a))
        pix = []
        for idx in corners:
            param = [coords[k][idx[k]] for k in range(ndim - 1)]
            pos = g.det_point_position(a, param if ndim == 3 else param[0])
            pix.append({"index": idx, "pos": pad3(pos)})
        v["pixels"] = pix
        views.append(v)
    return {"name": name, "spec": spec, "views": views}


def positions():
    return [
        case("parallel2d_from_1", "parallel2d", 1.0, 1.0 + np.pi, 5, [-1.2], [1.8], [6], [0.25]),
        case("parallel2d_negative_start", "parallel2d", -2.0, -2.0 + TAU, 7, [-1.0], [1.0], [5],
             [-0.4]),
        case("fanflat_from_1", "fanflat", 1.0, 1.0 + TAU, 6, [-2.0], [3.0], [5], [0.3],
             src=5.0, det=3.0),
        case("parallel3d_from_1", "parallel3d", 1.0, 1.0 + np.pi, 5, [-1.0, -0.5], [1.5, 1.0],
             [5, 4], [0.2, -0.1]),
        case("parallel3d_tilted_axis", "parallel3d", 0.5, 0.5 + TAU, 6, [-1.0, -1.0], [1.0, 1.0],
             [4, 3], [0.1, 0.3], axis=[0.3, -0.5, 0.8]),
        case("cone_from_1", "cone", 1.0, 1.0 + TAU, 6, [-2.0, -1.0], [2.0, 1.5], [5, 4],
             [0.3, -0.2], src=5.0, det=3.0),
        case("helical_from_1", "cone", 1.0, 1.0 + 2 * TAU, 8, [-2.0, -1.0], [2.0, 1.0], [5, 4],
             [0.0, 0.1], src=5.0, det=3.0, pitch=0.8),
        case("helical_negative_start_tilted", "cone", -2.5, -2.5 + TAU, 5, [-1.5, -1.0],
             [2.5, 2.0], [4, 3], [-0.2, 0.4], src=6.0, det=2.0, pitch=-1.3,
             axis=[0.2, 0.1, 1.0]),
    ]


def curved():
    q = np.pi / 4
    return [
        case("fan_arc_about_source", "fanflat", 1.0, 1.0 + TAU, 6, [-0.4], [0.4], [7], [0.0],
             src=5.0, det=3.0, curvature=8.0, every_pixel=True),
        case("fan_arc_odl_docstring", "fanflat", 0.0, TAU, 4, [-np.pi / 2], [np.pi / 2], [10],
             [0.0], src=1.0, det=5.0, curvature=10.0, every_pixel=True),
        case("fan_arc_offset_asymmetric", "fanflat", -0.7, -0.7 + np.pi, 5, [-0.3], [0.5], [6],
             [0.25], src=6.0, det=2.5, curvature=4.0, every_pixel=True),
        case("fan_arc_ffs", "fanflat", 0.3, 0.3 + TAU, 6, [-0.5], [0.5], [5], [0.0],
             src=5.0, det=3.0, curvature=8.0, ffs=[(0.1, 0.0), (0.0, 0.05), (-0.02, -0.07)],
             every_pixel=True),
        case("cone_cylindrical", "cone", 1.0, 1.0 + TAU, 5, [-0.5, -1.0], [0.5, 1.5], [5, 4],
             [0.2, -0.1], src=5.0, det=3.0, curvature=[8.0, None], every_pixel=True),
        case("helical_cylindrical_ffs", "cone", 1.0, 1.0 + 2 * TAU, 8, [-0.6, -1.0],
             [0.4, 1.0], [5, 4], [0.0, 0.1], src=5.0, det=3.0, pitch=0.8,
             curvature=[8.0, None], ffs=[(0.0, 0.05, 0.0), (0.0, -0.05, 0.02)],
             every_pixel=True),
        case("helical_cylindrical_tilted", "cone", -2.5, -2.5 + TAU, 5, [-0.4, -1.0],
             [0.6, 2.0], [4, 3], [-0.2, 0.4], src=6.0, det=2.0, pitch=-1.3,
             axis=[0.2, 0.1, 1.0], curvature=[3.5, None], every_pixel=True),
        case("cone_spherical", "cone", 0.5, 0.5 + TAU, 5, [-0.6, -q], [0.4, q], [5, 4],
             [0.1, 0.2], src=5.0, det=3.0, curvature=[8.0, 8.0], every_pixel=True),
        case("cone_spherical_off_equator", "cone", 0.2, 0.2 + TAU, 4, [-0.4, -0.1], [0.5, 0.5],
             [4, 5], [0.1, -0.1], src=5.0, det=3.0, curvature=[7.0, 7.0], every_pixel=True),
        case("helical_spherical_ffs", "cone", 1.0, 1.0 + 2 * TAU, 6, [-0.5, -0.3], [0.5, 0.3],
             [4, 5], [0.0, 0.0], src=5.0, det=3.0, pitch=1.1, curvature=[6.0, 6.0],
             ffs=[(0.03, 0.0, 0.0), (0.0, 0.0, 0.04)], every_pixel=True),
    ]


def partition(p):
    return {"min": floats(p.min_pt), "max": floats(p.max_pt), "shape": [int(n) for n in p.shape]}


def described(g):
    return {"angles": partition(g.motion_partition), "detector": partition(g.det_partition)}


def helpers():
    vols = [
        ([-1, -1], [1, 1], [20, 20]),
        ([-3, -1], [2, 4], [17, 23]),
        ([0, 0], [1, 2], [10, 30]),
        ([-1, -1, -1], [1, 1, 1], [16, 16, 16]),
        ([-2, -1, -0.5], [1, 1.5, 2], [12, 10, 9]),
        ([-1, -1, -3], [1, 1, 3], [8, 8, 20]),
    ]
    radii = [(5.0, 5.0), (3.0, 9.0), (4.0, 2.0), (12.0, 0.0), (7.5, 1.25)]
    out = []
    for lo, hi, shape in vols:
        space = odl.uniform_discr(lo, hi, shape)
        vol = {"min_pt": [float(x) for x in lo], "max_pt": [float(x) for x in hi],
               "shape": shape}
        out.append({"helper": "parallel_beam_geometry", "volume": vol, "num_angles": None,
                    **described(tomo.parallel_beam_geometry(space))})
        out.append({"helper": "parallel_beam_geometry", "volume": vol, "num_angles": 37,
                    **described(tomo.parallel_beam_geometry(space, num_angles=37))})
        for rs, rd in radii:
            entry = {"helper": "cone_beam_geometry", "volume": vol, "src_radius": rs,
                     "det_radius": rd}
            try:
                out.append({**entry, "num_angles": None,
                            **described(tomo.cone_beam_geometry(space, rs, rd))})
                out.append({**entry, "num_angles": 23,
                            **described(tomo.cone_beam_geometry(space, rs, rd, num_angles=23))})
            except ValueError as e:
                out.append({**entry, "num_angles": 23, "odl_error": str(e)})
    return out


def main():
    meta = {"odl_version": odl.__version__, "generator": "tests/data/odl/make_geometry_reference.py"}
    with open(os.path.join(HERE, "geometry_positions.json"), "w") as f:
        json.dump({**meta, "cases": positions()}, f, indent=1)
        f.write("\n")
    with open(os.path.join(HERE, "curved_positions.json"), "w") as f:
        json.dump({**meta, "cases": curved()}, f, separators=(",", ":"))
        f.write("\n")
    with open(os.path.join(HERE, "geometry_helpers.json"), "w") as f:
        json.dump({**meta, "cases": helpers()}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
