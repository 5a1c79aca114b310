"""Writes a synthetic scan with other people's writers, for the tool's `rodl scan` tests.

    python3 write_scan.py FORMAT IN_DIR OUT

IN_DIR holds what the Rust test made: ``proj.npy``, ``flats.npy``, ``darks.npy`` (uint16
frames ``[frame, image row, image column]``, row 0 the top) and ``scan.json`` (the angles in
degrees and, in metres, ``pixel_size``, ``source_distance`` and ``detector_distance``, the
latter two ``null`` for a parallel beam). FORMAT:

- ``nxtomo``: an NXtomo file OUT written by ESRF's ``nxtomo`` package (darks, flats,
  projections in that order); with h5py alone when nxtomo is not installed (exit status 0,
  and "h5py" on stdout instead of "nxtomo");
- ``dxchange``: a DXchange file OUT written by h5py;
- ``tiff``: TIFF stacks written by tifffile: OUT/proj/p_NNNN.tif (one file per view),
  OUT/flats.tif and OUT/darks.tif (multi-page).

Exit status 3: the writer's package is not installed.
"""

import json
import os
import sys

import numpy as np


def load(d):
    with open(os.path.join(d, "scan.json")) as f:
        meta = json.load(f)
    arrays = [np.load(os.path.join(d, n + ".npy")) for n in ("proj", "flats", "darks")]
    return meta, arrays


def write_nxtomo(meta, proj, flats, darks, out):
    try:
        import pint
        from nxtomo import NXtomo
    except ImportError:
        return write_nxtomo_h5py(meta, proj, flats, darks, out)
    u = pint.get_application_registry()
    nx = NXtomo()
    nx.instrument.detector.data = np.concatenate([darks, flats, proj])
    keys = [2] * len(darks) + [1] * len(flats) + [0] * len(proj)
    nx.instrument.detector.image_key_control = np.array(keys)
    angles = np.concatenate([np.zeros(len(darks) + len(flats)), meta["angles_deg"]])
    nx.sample.rotation_angle = angles * u.degree
    nx.instrument.detector.x_pixel_size = meta["pixel_size"] * u.m
    nx.instrument.detector.y_pixel_size = meta["pixel_size"] * u.m
    if meta.get("detector_distance") is not None:
        nx.instrument.detector.distance = meta["detector_distance"] * u.m
    if meta.get("source_distance") is not None:
        nx.instrument.source.distance = meta["source_distance"] * u.m
    if meta.get("energy_kev") is not None:
        nx.instrument.beam.incident_energy = meta["energy_kev"] * u.keV
    nx.save(file_path=out, data_path="entry0000", overwrite=True)
    print("nxtomo")
    return 0


def write_nxtomo_h5py(meta, proj, flats, darks, out):
    try:
        import h5py
    except ImportError:
        return 3
    with h5py.File(out, "w") as f:
        e = f.create_group("entry0000")
        e.attrs["NX_class"] = "NXentry"
        e["definition"] = "NXtomo"
        det = e.create_group("instrument/detector")
        det.attrs["NX_class"] = "NXdetector"
        det["data"] = np.concatenate([darks, flats, proj])
        keys = [2] * len(darks) + [1] * len(flats) + [0] * len(proj)
        det["image_key_control"] = np.array(keys, np.int32)
        for k in ("x_pixel_size", "y_pixel_size"):
            det[k] = meta["pixel_size"]
            det[k].attrs["units"] = "m"
        if meta.get("detector_distance") is not None:
            det["distance"] = meta["detector_distance"]
            det["distance"].attrs["units"] = "m"
        if meta.get("energy_kev") is not None:
            e["instrument/beam/incident_energy"] = meta["energy_kev"]
            e["instrument/beam/incident_energy"].attrs["units"] = "keV"
        if meta.get("source_distance") is not None:
            src = e.create_group("instrument/source")
            src["distance"] = meta["source_distance"]
            src["distance"].attrs["units"] = "m"
        s = e.create_group("sample")
        angles = np.concatenate([np.zeros(len(darks) + len(flats)), meta["angles_deg"]])
        s["rotation_angle"] = angles
        s["rotation_angle"].attrs["units"] = "degree"
    print("h5py")
    return 0


def write_dxchange(meta, proj, flats, darks, out):
    try:
        import h5py
    except ImportError:
        return 3
    with h5py.File(out, "w") as f:
        ex = f.create_group("exchange")
        ex["data"] = proj
        ex["data_white"] = flats
        ex["data_dark"] = darks
        ex["theta"] = np.asarray(meta["angles_deg"], np.float64)
        det = f.create_group("measurement/instrument/detector")
        for k in ("pixel_size_x", "pixel_size_y"):
            det[k] = meta["pixel_size"] * 1e6
            det[k].attrs["units"] = "um"
    print("h5py")
    return 0


def write_tiff(meta, proj, flats, darks, out):
    try:
        import tifffile
    except ImportError:
        return 3
    os.makedirs(os.path.join(out, "proj"), exist_ok=True)
    for k, frame in enumerate(proj):
        tifffile.imwrite(os.path.join(out, "proj", f"p_{k:04d}.tif"), frame)
    tifffile.imwrite(os.path.join(out, "flats.tif"), flats, photometric="minisblack")
    tifffile.imwrite(os.path.join(out, "darks.tif"), darks, photometric="minisblack")
    print("tifffile")
    return 0


if __name__ == "__main__":
    fmt, src, out = sys.argv[1:4]
    meta, (proj, flats, darks) = load(src)
    writer = {"nxtomo": write_nxtomo, "dxchange": write_dxchange, "tiff": write_tiff}[fmt]
    sys.exit(writer(meta, proj, flats, darks, out))
