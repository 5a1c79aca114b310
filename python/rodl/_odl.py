"""``from_odl``: ODL's spaces, geometries and ray transforms as rodl's.

A geometry is converted exactly, whatever its parameters: rodl samples ODL's own description of
every view (``src_position``, ``det_point_position``, ``det_to_src``) at the angles of its motion
grid, which carries over shifts (``det_shift_func``, ``src_shift_func``), translations,
``offset_along_axis``, pitch, tilted axes and initial orientations as ODL computes them. The data
space keeps ODL's partition, so its weighting and the adjoint are ODL's. Angles may be spaced
in any way (``nonuniform_partition``, random angles, subsets such as ``geometry[i::20]``, nodes
on the boundary); FBP weights views at such angles by their share of the angle range (half the
distance to each neighbour, periodic when the partition spans a full turn: give
``nonuniform_partition`` its ``min_pt=0, max_pt=2*np.pi`` for a full scan). What
rodl cannot represent raises ``NotImplementedError`` naming it: curved detectors, non-uniform or
non-midpoint detector partitions, more than one motion parameter (Euler angles).
"""

import numpy as np

from ._rodl import Geometry, RayTransform, Space, uniform_discr


def _odl_name(obj) -> str:
    return type(obj).__name__


def _uniform_midpoints(part, what: str):
    """(min_pt, max_pt, shape) of an ODL partition that is uniform with midpoint samples."""
    if not getattr(part, "is_uniform", False):
        raise NotImplementedError(
            f"{what}: only uniform partitions are supported (rodl's spaces are uniform), got "
            f"{part!r}"
        )
    lo = np.asarray(part.min_pt, dtype=float).reshape(-1)
    hi = np.asarray(part.max_pt, dtype=float).reshape(-1)
    shape = tuple(int(n) for n in part.shape)
    for k, coords in enumerate(part.grid.coord_vectors):
        cell = (hi[k] - lo[k]) / shape[k]
        mids = lo[k] + (np.arange(shape[k]) + 0.5) * cell
        if not np.allclose(coords, mids, rtol=0, atol=1e-9 * max(1.0, abs(cell) * shape[k])):
            raise NotImplementedError(
                f"{what}: axis {k} is not sampled at cell midpoints (ODL's nodes_on_bdry); "
                f"rodl samples cells at their midpoints"
            )
    return lo, hi, shape


def _space(space, dtype=None) -> Space:
    name = _odl_name(space)
    if not hasattr(space, "partition") or not hasattr(space, "cell_volume"):
        raise NotImplementedError(f"from_odl: {name} is not a DiscretizedSpace")
    # ODL's dtype_identifier names the dtype for every array backend (NumPy's dtype, or
    # torch.float32 for ODL's 'pytorch' spaces, which NumPy cannot read).
    ident = str(getattr(space, "dtype_identifier", "") or np.dtype(space.dtype).name)
    if getattr(space, "is_complex", False) or ident not in ("float32", "float64"):
        raise NotImplementedError(
            f"from_odl: only real float32/float64 spaces are supported, got dtype {space.dtype}"
            + (
                "; for a complex space, convert its real_space, or let ODL project the real and "
                "imaginary parts with odl's RayTransform(space, geometry, impl='rodl') after "
                "`import rodl.odl`"
                if getattr(space, "is_complex", False)
                else ""
            )
        )
    lo, hi, shape = _uniform_midpoints(space.partition, "from_odl(space)")
    weighting = getattr(space, "weighting", None)
    const = getattr(weighting, "const", None)
    if const is None or not np.isclose(float(const), float(space.cell_volume), rtol=1e-12):
        raise NotImplementedError(
            "from_odl: only spaces weighted by their cell volume (ODL's default) are supported, "
            f"got {weighting!r}"
        )
    exponent = getattr(weighting, "exponent", 2.0)
    if exponent != 2.0:
        raise NotImplementedError(f"from_odl: only L2 spaces are supported, got exponent {exponent}")
    return uniform_discr(list(lo), list(hi), list(shape), dtype=dtype or ident)


def _geometry(geometry) -> Geometry:
    name = _odl_name(geometry)
    for attr in ("motion_partition", "det_partition", "det_point_position"):
        if not hasattr(geometry, attr):
            raise NotImplementedError(f"from_odl: {name} is not an ODL tomography geometry")
    if geometry.motion_partition.ndim != 1:
        raise NotImplementedError(
            f"from_odl: {name} has {geometry.motion_partition.ndim} motion parameters per view "
            "(Euler angles); rodl supports rotations about one axis (one angle per view)"
        )
    detector = _odl_name(geometry.detector)
    curved = {"CircularDetector": 2, "CylindricalDetector": 3, "SphericalDetector": 3}
    if detector not in ("Flat1dDetector", "Flat2dDetector") and detector not in curved:
        raise NotImplementedError(
            f"from_odl: {name} has a {detector}; rodl supports flat, circular, cylindrical and "
            "spherical detectors"
        )
    # The angles may be any 1D partition (non-uniform, random, a subset such as geometry[i::20],
    # nodes on the boundary): every view is given by its vectors at its own angle, and the data
    # space spans the partition's cells [min_pt, max_pt] in as many cells as there are views,
    # which is ODL's constant weighting of such a data space (its extent over the count).
    mpart = geometry.motion_partition
    alo = np.asarray(mpart.min_pt, dtype=float).reshape(-1)
    ahi = np.asarray(mpart.max_pt, dtype=float).reshape(-1)
    dlo, dhi, dshape = _uniform_midpoints(geometry.det_partition, "from_odl: the detector")
    ndim = int(geometry.ndim)
    angles = np.asarray(geometry.motion_grid.coord_vectors[0], dtype=float)
    mid = 0.5 * (dlo + dhi)
    cells = (dhi - dlo) / np.asarray(dshape)
    point = hasattr(geometry, "src_position")
    radius = None
    if detector in curved:
        radius = float(geometry.detector.radius)
        if detector == "SphericalDetector" and abs(mid[1]) > 1e-12 * max(1.0, abs(cells[1])):
            raise NotImplementedError(
                f"from_odl: {name} has a spherical detector whose latitudes are not centred on "
                f"its equator (midpoint {mid[1]}); rodl's spherical detectors are"
            )
    rows = []
    for a in angles:
        param = mid if ndim == 3 else mid[0]
        centre = np.asarray(geometry.det_point_position(a, param), float)
        axes = []
        if radius is not None:
            # The tangents at the centre pixel, the pixel pitches as arc length (exact:
            # ODL's points are det_refpoint + rotation · surface).
            deriv = np.reshape(geometry.detector.surface_deriv(param), (ndim - 1, ndim))
            rot = np.asarray(geometry.rotation_matrix(a), float)
            axes = [rot @ deriv[k] * cells[k] for k in range(ndim - 1)]
        for k in range(ndim - 1 if radius is None else 0):
            step = mid.copy()
            step[k] += cells[k]
            p = np.asarray(geometry.det_point_position(a, step if ndim == 3 else step[0]), float)
            axes.append(p - centre)
        if point:
            src = np.asarray(geometry.src_position(a), float)
        else:
            d = np.asarray(geometry.det_to_src(a, mid if ndim == 3 else mid[0]), float)
            src = -d / np.linalg.norm(d)
            # Where the detector sits along the rays does not change a parallel beam's line
            # integrals: put its centre on the plane through the origin, as rodl's own
            # parallel geometries do.
            centre = centre - np.dot(centre, src) * src
        rows.append(np.concatenate([src.reshape(-1), centre.reshape(-1)] + [v.reshape(-1) for v in axes]))
    vectors = np.array(rows, dtype=float)
    if not np.all(np.isfinite(vectors)):
        raise ValueError(f"from_odl: {name} gives non-finite source or detector positions")
    partition = (
        [float(alo[0])] + [float(v) for v in dlo],
        [float(ahi[0])] + [float(v) for v in dhi],
    )
    curvature = None
    if radius is not None:
        curvature = {"CircularDetector": radius, "CylindricalDetector": (radius, None),
                     "SphericalDetector": (radius, radius)}[detector]
        if not point:
            raise NotImplementedError(f"from_odl: {name} has a curved detector with parallel beams")
        _check_curved(geometry, name, angles, dlo, cells, dshape, radius, detector, vectors, ndim)
    return Geometry.from_vectors(
        "point" if point else "parallel", list(dshape), vectors, partition, curvature
    )


def _check_curved(geometry, name, angles, dlo, cells, dshape, radius, detector, vectors, ndim):
    """Guards the conversion of a curved detector: rodl's pixels (its surface through the centre
    pixel, curving towards the source, written out here) at the corners of every view's
    detector are ODL's ``det_point_position``; a detector that curves away from its source (an
    unusual ``det_axes_init``) raises."""
    corners = [[0], [dshape[0] - 1]] if ndim == 2 else [
        [i, j] for i in (0, dshape[0] - 1) for j in (0, dshape[1] - 1)]
    mid_index = (np.asarray(dshape, float) - 1) / 2
    worst = 0.0
    scale = radius + float(np.max(np.abs(vectors)))
    for k, a in enumerate(angles):
        row = vectors[k]
        src, c = row[:ndim], row[ndim:2 * ndim]
        du = row[2 * ndim:3 * ndim]
        eu = du / np.linalg.norm(du)
        if ndim == 3:
            dv = row[3 * ndim:4 * ndim]
            ev = dv / np.linalg.norm(dv)
            n = np.cross(ev, eu)
        else:
            ev = np.zeros(2)
            n = np.array([-eu[1], eu[0]])
        if np.dot(n, c - src) < 0:
            n = -n
        for idx in corners:
            off = (np.asarray(idx, float) - mid_index) * cells  # parameters from the centre
            phi = off[0]
            if detector == "SphericalDetector":
                th = off[1]
                q = c + radius * (np.cos(th) * np.sin(phi) * eu + np.sin(th) * ev
                                  + (np.cos(th) * np.cos(phi) - 1) * n)
            else:
                q = c + radius * np.sin(phi) * eu + radius * (np.cos(phi) - 1) * n
                if ndim == 3:
                    q = q + off[1] * ev
            param = [dlo[i] + (idx[i] + 0.5) * cells[i] for i in range(ndim - 1)]
            want = np.asarray(geometry.det_point_position(a, param if ndim == 3 else param[0]), float)
            worst = max(worst, float(np.max(np.abs(q - want))))
    if not worst <= 1e-9 * scale:
        raise NotImplementedError(
            f"from_odl: {name}'s {detector} does not curve towards its source as rodl's curved "
            f"detectors do (pixels off by {worst:.3g})"
        )


def from_odl(obj, backend=None, threads=None, device=None, dtype=None):
    """The rodl counterpart of an ODL object.

    - a ``DiscretizedSpace`` (``odl.uniform_discr``) → ``rodl.Space`` (same box, shape, dtype
      and weighting; ``dtype`` overrides the dtype);
    - a geometry (``Parallel2dGeometry``, ``FanBeamGeometry``, ``Parallel3dAxisGeometry``,
      ``ConeBeamGeometry`` with pitch, shifts and offsets, …) → ``rodl.Geometry``, view by view
      as ODL computes the views, on ODL's data partition;
    - a ``RayTransform`` → ``rodl.RayTransform`` on the converted space and geometry, on
      ``backend`` (default: ``"cuda"`` when ODL's ``impl`` is ``"astra_cuda"``, else
      ``"cpu"``), with ``threads``/``device`` as ``rodl.RayTransform`` takes them.

    Arrays need no conversion: ODL's ``element.asarray()`` (or ``np.asarray(element)``) is what
    rodl's operators take, with the same axis order. Unsupported objects raise
    ``NotImplementedError`` naming what rodl is missing; objects that are not ODL's raise
    ``TypeError``.
    """
    if hasattr(obj, "geometry") and hasattr(obj, "domain") and hasattr(obj, "range"):
        space = _space(obj.domain, dtype)
        geometry = _geometry(obj.geometry)
        if backend is None:
            impl = str(getattr(obj, "impl", "") or "")
            backend = "cuda" if "cuda" in impl else "cpu"
        return RayTransform(space, geometry, backend=backend, threads=threads, device=device)
    if hasattr(obj, "partition") and hasattr(obj, "cell_volume"):
        return _space(obj, dtype)
    if hasattr(obj, "motion_partition"):
        return _geometry(obj)
    raise TypeError(
        f"from_odl: expected an ODL DiscretizedSpace, geometry or RayTransform, got "
        f"{type(obj).__module__}.{_odl_name(obj)}"
    )
