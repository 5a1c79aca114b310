"""Scanner data in: TIFF stacks, NeXus NXtomo and DXchange files, and their preprocessing.

The readers are rodl's own (``rodl::io`` in Rust): a :class:`Scan` holds the projections,
flats and darks as float32 arrays ``[frame, u, v]`` (u the image column, v its row from the
bottom, rodl's and ODL's data layout), the angles in radians and what the file records (lengths
in metres). NXtomo and DXchange need a build with HDF5 (``HDF5_BUILT``); otherwise they raise
``NotImplementedError``. The preprocessing functions take NumPy arrays or PyTorch tensors and
return new arrays (their input is left as it was). A PyTorch **CUDA** tensor is processed on its
GPU by rodl's kernels, in float32 on the tensor's current stream, with the host's results (bit
for bit; ``neg_log`` to two units in the last place): :func:`flat_field`, :func:`neg_log`,
:func:`remove_zingers` and :func:`remove_stripes`. Other tensors, and the centre finders and
:func:`paganin`, compute on the host and return their result on the tensor's device.

>>> import numpy as np, rodl
>>> counts = np.full((4, 8, 2), 50.0, dtype="float32")
>>> flats = np.full((2, 8, 2), 100.0, dtype="float32")
>>> line_integrals = rodl.io.neg_log(rodl.io.flat_field(counts, flats))
>>> float(line_integrals[0, 0, 0]) == float(np.float32(np.log(2.0)))
True

A whole scan, from the file to a reconstruction::

    scan = rodl.io.read_nxtomo("tomo.nx")
    y = rodl.io.neg_log(rodl.io.flat_field(scan.projections, scan.flats, scan.darks))
    _, offset = rodl.io.find_centre(y, scan.angles)
    space, geometry = rodl.io.scan_geometry(scan, det_offset_px=offset)
    x = rodl.fbp_op(rodl.RayTransform(space, geometry))(y)
"""

import json
import sys
from typing import Any, Callable, Optional, Tuple

from . import _rodl
from ._rodl import HDF5_BUILT, Geometry, Scan, Space, read_dxchange, read_nxtomo, read_tiff

__all__ = [
    "HDF5_BUILT",
    "Scan",
    "find_centre",
    "find_centre_cone",
    "flat_field",
    "neg_log",
    "paganin",
    "read_dxchange",
    "read_nxtomo",
    "read_tiff",
    "remove_stripes",
    "remove_zingers",
    "scan_geometry",
]


def _torch_device(*values: Any) -> Any:
    """The device of the first PyTorch tensor among ``values`` (``None`` if there is none)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    for v in values:
        if isinstance(v, torch.Tensor):
            return v.device
    return None


def _host(value: Any) -> Any:
    """A NumPy view of a PyTorch tensor (copied to the host), anything else unchanged."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return value


def _apply(fn: Callable[..., Any], arrays: Tuple[Any, ...], *rest: Any) -> Any:
    """``fn(*arrays, *rest)`` on host arrays; the first result back on the tensors' device."""
    device = _torch_device(*arrays)
    out = fn(*(_host(a) for a in arrays), *rest)
    if device is None:
        return out
    import torch

    if isinstance(out, tuple):
        return (torch.from_numpy(out[0]).to(device),) + out[1:]
    return torch.from_numpy(out).to(device)


def _cuda_copy(value: Any) -> Any:
    """For a PyTorch CUDA tensor: a float32, C-contiguous copy of it on its device and that
    device's current stream (``(copy, stream)``); for anything else ``None``."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(value, torch.Tensor) or value.device.type != "cuda":
        return None
    if value.is_complex():
        raise TypeError("rodl.io's preprocessing takes real data, got a complex tensor")
    copy = value.detach().to(dtype=torch.float32, memory_format=torch.contiguous_format, copy=True)
    return copy, torch.cuda.current_stream(copy.device).cuda_stream


def _on_gpu(fn: Callable[..., Any], copy: Any, stream: int, *rest: Any) -> Any:
    """``fn`` (one of ``_rodl``'s ``*_cuda`` functions) in place on the tensor ``copy`` on
    ``stream``."""
    # DLPack's stream argument: 1 names the legacy default stream (0 is not allowed there).
    return fn(copy.__dlpack__(stream=stream if stream != 0 else 1), stream, *rest)


def flat_field(projections: Any, flats: Any, darks: Optional[Any] = None) -> Any:
    """Flat/dark correction ``(p - mean(darks)) / (mean(flats) - mean(darks))`` (without darks:
    ``p / mean(flats)``) of ``projections`` ``[angle, u, v]``; pixels whose flat is not above
    the dark are set to 1."""
    gpu = _cuda_copy(projections)
    if gpu is not None:
        copy, stream = gpu
        dark = None if darks is None else _host(darks)
        _on_gpu(_rodl._flat_field_cuda, copy, stream, _host(flats), dark)
        return copy
    if darks is None:
        return _apply(_rodl.flat_field, (projections, flats))
    return _apply(_rodl.flat_field, (projections, flats, darks))


def neg_log(data: Any, floor: float = 1e-6) -> Any:
    """``-log(data)`` with values below ``floor`` clamped to it first (no NaN or Inf)."""
    gpu = _cuda_copy(data)
    if gpu is not None:
        _on_gpu(_rodl._neg_log_cuda, *gpu, floor)
        return gpu[0]
    return _apply(_rodl.neg_log, (data,), floor)


def remove_zingers(frames: Any, threshold: float) -> Any:
    """Replaces pixels more than ``threshold`` above their 3 x 3 median by it; returns
    ``(frames, count)``."""
    gpu = _cuda_copy(frames)
    if gpu is not None:
        return gpu[0], _on_gpu(_rodl._remove_zingers_cuda, *gpu, threshold)
    return _apply(_rodl.remove_zingers, (frames,), threshold)


def remove_stripes(data: Any, size: int) -> Any:
    """Ring removal by sorting (Vo, Atwood, Drakopoulos 2018) on line integrals
    ``[angle, u, v]`` with an odd median width ``size`` across the detector."""
    gpu = _cuda_copy(data)
    if gpu is not None:
        _on_gpu(_rodl._remove_stripes_cuda, *gpu, size)
        return gpu[0]
    return _apply(_rodl.remove_stripes, (data,), size)


def find_centre(
    data: Any,
    angles: Any,
    max_offset_px: Optional[float] = None,
    max_angle_mismatch: Optional[float] = None,
) -> Tuple[float, float]:
    """The centre of rotation of a parallel-beam scan (line integrals ``[angle, u, v]``,
    ``angles`` in radians) from its two views closest to 180 degrees apart (within
    ``max_angle_mismatch`` radians, default 2 degrees): ``(axis_px, det_offset_px)``, the axis'
    fractional pixel index along u and the detector shift for :func:`scan_geometry`."""
    angles = [float(a) for a in _host(angles)]
    return _rodl.find_centre(_host(data), angles, max_offset_px, max_angle_mismatch)


def find_centre_cone(
    data: Any,
    angles: Any,
    src_radius: float,
    det_radius: float,
    pixel_size: float,
    max_offset_px: Optional[float] = None,
    rows: Optional[Tuple[int, int]] = None,
) -> Tuple[float, float]:
    """The centre of rotation of a circular cone-beam scan (line integrals ``[angle, u, v]`` on
    a flat detector, ``angles`` in radians, over a full turn or half a turn plus the fan angle)
    from the pairs of opposite rays in the detector rows near the orbit's plane (``rows``
    ``(start, stop)``; default the middle eighth): ``(axis_px, det_offset_px)`` as for
    :func:`find_centre`. ``src_radius`` (source to axis), ``det_radius`` (axis to detector) and
    ``pixel_size`` (along u) are in one unit, e.g. the scan's ``source_distance``,
    ``detector_distance`` and ``pixel_size[0]``."""
    angles = [float(a) for a in _host(angles)]
    return _rodl.find_centre_cone(
        _host(data), angles, src_radius, det_radius, pixel_size, max_offset_px, rows
    )


def paganin(
    data: Any,
    delta_beta: float,
    energy: float,
    distance: float,
    pixel_size: Any,
    magnification: float = 1.0,
    padding: bool = True,
) -> Any:
    """Single-material phase retrieval (Paganin et al. 2002) of flat-field corrected
    transmission frames ``[angle, u, v]``, before :func:`neg_log`: each frame's Fourier
    transform is divided by ``1 + pi * wavelength * distance * magnification * delta_beta *
    |f|^2``. ``energy`` in keV; ``distance`` (sample to detector) and ``pixel_size`` (a number,
    or ``(u, v)``) in metres; ``magnification`` that of a cone beam (1 for a parallel beam,
    whose pixel size is the sample plane's). Frames are padded with their edge values to twice
    their size unless ``padding=False``. TomoPy's ``retrieve_phase`` ``alpha`` is
    ``1 / delta_beta``. Returns the filtered transmission (float32)."""
    return _apply(
        _rodl.paganin,
        (data,),
        delta_beta,
        energy,
        distance,
        _host(pixel_size),
        magnification,
        padding,
    )


def scan_geometry(
    scan: Scan, dtype: str = "float32", **options: Any
) -> Tuple[Space, Geometry]:
    """``(space, geometry)`` of a scan: the volume (the detector's field of view) and a
    parallel-3D or cone geometry from what the file records. ``options`` are those of
    :meth:`Scan.geometry_json`: ``det_offset_px`` (the centre, from :func:`find_centre`),
    ``beam`` (``"auto"``, ``"parallel"``, ``"cone"``), ``unit`` (``"mm"``, ``"m"``, ``"um"``,
    ``"pixel"``) and overrides of ``pixel_size``, ``source_distance``, ``detector_distance``
    (metres)."""
    text = scan.geometry_json(**options)
    volume = json.loads(text)["volume"]
    space = _rodl.uniform_discr(volume["min_pt"], volume["max_pt"], volume["shape"], dtype=dtype)
    return space, Geometry.from_json(text)
