"""Writes small scan files with other people's writers, for rodl's reader tests.

    python3 write_scan_files.py tiff OUT   # TIFF stacks with tifffile
    python3 write_scan_files.py hdf5 OUT   # NXtomo and DXchange files with h5py

The pixel values follow formulas that the Rust tests (tests/io_tiff.rs, tests/io_hdf5.rs)
recompute: frame k, image row r, image column c.
"""

import os
import sys

import numpy as np

ROWS, COLS = 5, 7


def u16_value(k, r, c):
    return (k * 131 + r * 17 + c * 3) % 65536


def frames(n, fn, dtype):
    k, r, c = np.meshgrid(np.arange(n), np.arange(ROWS), np.arange(COLS), indexing="ij")
    return fn(k, r, c).astype(dtype)


def write_tiff(out):
    import tifffile

    os.makedirs(out, exist_ok=True)
    # 12 single-page 16-bit files named without zero padding (natural order), some compressed.
    d = os.path.join(out, "u16")
    os.makedirs(d, exist_ok=True)
    data = frames(12, u16_value, np.uint16)
    for k in range(12):
        comp = "zlib" if k % 3 == 1 else None
        tifffile.imwrite(os.path.join(d, f"proj_{k}.tif"), data[k], compression=comp)
    # One multi-page 8-bit file.
    d = os.path.join(out, "u8")
    os.makedirs(d, exist_ok=True)
    tifffile.imwrite(
        os.path.join(d, "stack.tif"),
        frames(4, lambda k, r, c: (k * 31 + r * 7 + c) % 256, np.uint8),
        photometric="minisblack",
    )
    # 32-bit float pages, one per file, .tiff extension.
    d = os.path.join(out, "f32")
    os.makedirs(d, exist_ok=True)
    f = frames(3, lambda k, r, c: k + 0.5 * r + 0.25 * c - 3.0, np.float32)
    for k in range(3):
        tifffile.imwrite(os.path.join(d, f"f_{k:03d}.tiff"), f[k])
    # Pixel types rodl refuses.
    d = os.path.join(out, "refused")
    os.makedirs(d, exist_ok=True)
    tifffile.imwrite(os.path.join(d, "int16.tif"), np.zeros((ROWS, COLS), np.int16))
    tifffile.imwrite(os.path.join(d, "float64.tif"), np.zeros((ROWS, COLS), np.float64))
    tifffile.imwrite(
        os.path.join(d, "rgb.tif"), np.zeros((ROWS, COLS, 3), np.uint8), photometric="rgb"
    )
    tifffile.imwrite(os.path.join(d, "int64.tif"), np.zeros((ROWS, COLS), np.int64))
    tifffile.imwrite(os.path.join(d, "uint32.tif"), np.zeros((ROWS, COLS), np.uint32))
    tifffile.imwrite(os.path.join(d, "int8.tif"), np.zeros((ROWS, COLS), np.int8))
    tifffile.imwrite(os.path.join(d, "complex64.tif"), np.zeros((ROWS, COLS), np.complex64))
    tifffile.imwrite(
        os.path.join(d, "rgb16.tif"), np.zeros((ROWS, COLS, 3), np.uint16), photometric="rgb"
    )
    # Mixed sizes and mixed pixel types.
    d = os.path.join(out, "mixed_size")
    os.makedirs(d, exist_ok=True)
    tifffile.imwrite(os.path.join(d, "a.tif"), np.zeros((ROWS, COLS), np.uint16))
    tifffile.imwrite(os.path.join(d, "b.tif"), np.zeros((ROWS + 1, COLS), np.uint16))
    d = os.path.join(out, "mixed_type")
    os.makedirs(d, exist_ok=True)
    tifffile.imwrite(os.path.join(d, "a.tif"), np.zeros((ROWS, COLS), np.uint16))
    tifffile.imwrite(os.path.join(d, "b.tif"), np.zeros((ROWS, COLS), np.uint8))


def nx_value(k, r, c):
    return (k * 131 + r * 17 + c * 3) % 4096 + 100


# The acquisition sequence of the NXtomo file: 2 darks, 3 flats, 20 projections, 3 flats,
# 1 alignment projection.
NX_KEYS = [2] * 2 + [1] * 3 + [0] * 20 + [1] * 3 + [-1]


def write_nx_entry(f, name, source_distance, data_dtype=np.uint16, string_angles=False):
    n = len(NX_KEYS)
    e = f.create_group(name)
    e.attrs["NX_class"] = "NXentry"
    e.attrs["definition"] = "NXtomo"
    e["definition"] = "NXtomo"
    inst = e.create_group("instrument")
    inst.attrs["NX_class"] = "NXinstrument"
    det = inst.create_group("detector")
    det.attrs["NX_class"] = "NXdetector"
    det["data"] = frames(n, nx_value, data_dtype)
    control = np.array(NX_KEYS, np.int32)
    det["image_key_control"] = control
    key = control.copy()
    key[key == -1] = 0
    det["image_key"] = key
    det["x_pixel_size"] = 6.5
    det["x_pixel_size"].attrs["units"] = "um"
    det["y_pixel_size"] = 13.0
    det["y_pixel_size"].attrs["units"] = "µm"
    det["distance"] = 250.0
    det["distance"].attrs["units"] = "mm"
    beam = inst.create_group("beam")
    beam.attrs["NX_class"] = "NXbeam"
    beam["incident_energy"] = 19.5
    beam["incident_energy"].attrs["units"] = "keV"
    if source_distance is not None:
        src = inst.create_group("source")
        src.attrs["NX_class"] = "NXsource"
        src["distance"] = source_distance
        src["distance"].attrs["units"] = "m"
    sample = e.create_group("sample")
    sample.attrs["NX_class"] = "NXsample"
    angles = np.zeros(n)
    proj = np.flatnonzero(np.array(NX_KEYS) == 0)
    angles[proj] = np.arange(len(proj)) * 9.0  # 0°, 9°, …, 171°
    angles[-1] = 90.0
    sample["rotation_angle"] = angles.astype("S8") if string_angles else angles
    sample["rotation_angle"].attrs["units"] = "degree"
    sample["x_pixel_size"] = 3.25e-6
    sample["x_pixel_size"].attrs["units"] = "m"
    sample["y_pixel_size"] = 6.5e-6
    sample["y_pixel_size"].attrs["units"] = "m"


def write_hdf5(out):
    import h5py

    os.makedirs(out, exist_ok=True)
    with h5py.File(os.path.join(out, "nxtomo.nx"), "w") as f:
        write_nx_entry(f, "entry0000", 0.5)
    with h5py.File(os.path.join(out, "two_entries.nx"), "w") as f:
        write_nx_entry(f, "entry0000", None)
        write_nx_entry(f, "entry0001", None)
    with h5py.File(os.path.join(out, "dxchange.h5"), "w") as f:
        ex = f.create_group("exchange")
        ex["data"] = frames(12, lambda k, r, c: k + 0.5 * r + 0.25 * c, np.float32)
        ex["data_white"] = frames(3, lambda k, r, c: 100.0 + k + r + c, np.float32)
        ex["data_dark"] = frames(2, lambda k, r, c: 10.0 + k, np.float32)
        ex["theta"] = np.arange(12) * 15.0  # degrees, no units attribute
        det = f.create_group("measurement/instrument/detector")
        det["pixel_size_x"] = 1.3
        det["pixel_size_x"].attrs["units"] = "um"
        det["pixel_size_y"] = 1.3  # no units: counts as missing
    # Element types rodl refuses: complex (h5py's compound {r, i}) and string datasets.
    refused = os.path.join(out, "refused")
    os.makedirs(refused, exist_ok=True)
    with h5py.File(os.path.join(refused, "complex_data.nx"), "w") as f:
        write_nx_entry(f, "entry0000", 0.5, data_dtype=np.complex64)
    with h5py.File(os.path.join(refused, "string_angles.nx"), "w") as f:
        write_nx_entry(f, "entry0000", 0.5, string_angles=True)
    pair = np.dtype([("angle", np.float64), ("flag", np.int32)])
    for name, field, value in [
        ("bool_data.h5", "data", np.zeros((12, ROWS, COLS), bool)),
        ("compound_theta.h5", "theta", np.zeros(12, pair)),
        ("string_white.h5", "data_white", np.array([[["w"] * COLS] * ROWS] * 3, "S4")),
    ]:
        with h5py.File(os.path.join(refused, name), "w") as f:
            ex = f.create_group("exchange")
            ex["data"] = frames(12, lambda k, r, c: k + 0.5 * r + 0.25 * c, np.float32)
            ex["data_white"] = frames(3, lambda k, r, c: 100.0 + k + r + c, np.float32)
            ex["data_dark"] = frames(2, lambda k, r, c: 10.0 + k, np.float32)
            ex["theta"] = np.arange(12) * 15.0
            del ex[field]
            ex[field] = value


if __name__ == "__main__":
    what, out = sys.argv[1], sys.argv[2]
    {"tiff": write_tiff, "hdf5": write_hdf5}[what](out)
