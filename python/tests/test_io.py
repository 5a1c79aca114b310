"""rodl.io: scans written by other people's code (tifffile, ESRF's nxtomo, h5py) read by rodl,
preprocessed and reconstructed; the centre found; the readers' errors; tensors in and out."""

import json
import math

import numpy as np
import pytest

import rodl

NU, NV, VIEWS = 48, 4, 120
SHIFT = 3.4  # the rotation axis' offset from the detector's centre, in pixels
I0, DARK = 20000.0, 100.0
MU, RADIUS, CENTRE = 0.02, 9.0, (4.0, -3.0)  # per pixel, pixels, pixels
ANGLES = (np.arange(VIEWS) + 0.5) * math.pi / VIEWS


def line_integrals():
    """The ball's parallel projections in closed form, on a detector of 1-pixel cells whose
    centre is SHIFT pixels along u from the rotation axis: [angle, u, v]."""
    u = (np.arange(NU) + 0.5 - NU / 2) + SHIFT
    c = CENTRE[0] * np.cos(ANGLES) + CENTRE[1] * np.sin(ANGLES)
    d2 = RADIUS**2 - (u[None, :] - c[:, None]) ** 2
    chord = 2 * MU * np.sqrt(np.clip(d2, 0, None))
    return np.repeat(chord[:, :, None], NV, axis=2)


def counts(y):
    return np.round(I0 * np.exp(-y) + DARK)


def image(frame):
    """rodl's [u, v] (v from the bottom) as an image's [row, column] (rows from the top)."""
    return np.ascontiguousarray(frame.T[::-1])


@pytest.fixture
def tiff_scan(tmp_path):
    tifffile = pytest.importorskip("tifffile")
    y = line_integrals()
    (tmp_path / "proj").mkdir()
    raw = counts(y).astype(np.uint16)
    for a in range(VIEWS):
        tifffile.imwrite(tmp_path / "proj" / f"p_{a:04d}.tif", image(raw[a]))
    flat = np.full((NU, NV), I0 + DARK)
    tifffile.imwrite(tmp_path / "flat.tif", np.stack([image(flat)] * 3).astype(np.uint16), photometric="minisblack")
    tifffile.imwrite(tmp_path / "dark.tif", np.stack([image(np.full((NU, NV), DARK))] * 2).astype(np.uint16), photometric="minisblack")
    return tmp_path, raw, y


def reconstruct(y, space, geometry):
    ray = rodl.RayTransform(space, geometry)
    return rodl.fbp_op(ray)(y.astype(np.float32))


def test_a_tiff_scan_reads_preprocesses_finds_its_centre_and_reconstructs(tiff_scan):
    path, raw, y = tiff_scan
    scan = rodl.io.read_tiff(path / "proj", ANGLES, flats=path / "flat.tif", darks=path / "dark.tif")
    assert scan.format == "tiff" and scan.detector_shape == (NU, NV)
    assert scan.pixel_size == (None, None) and scan.source_distance is None
    np.testing.assert_array_equal(scan.projections, raw.astype(np.float32))
    assert scan.flats.shape == (3, NU, NV) and scan.darks.shape == (2, NU, NV)
    np.testing.assert_allclose(scan.angles, ANGLES, rtol=0, atol=0)

    data = rodl.io.neg_log(rodl.io.flat_field(scan.projections, scan.flats, scan.darks))
    assert data.dtype == np.float32
    assert np.abs(data - y).max() < 2e-4  # the counts' rounding

    axis, offset = rodl.io.find_centre(data, scan.angles)
    assert abs(offset - SHIFT) < 0.1, offset
    assert abs(axis - ((NU - 1) / 2 - offset)) < 1e-9

    # A TIFF stack records no pixel size: asking for a geometry names it.
    with pytest.raises(OSError, match="pixel_size"):
        scan.geometry_json()
    space, geometry = rodl.io.scan_geometry(scan, det_offset_px=offset, pixel_size=1e-3)
    assert tuple(space.shape) == (NU, NU, NV) and geometry.data_shape == (VIEWS, NU, NV)
    spec = json.loads(scan.geometry_json(det_offset_px=offset, pixel_size=1e-3))
    assert spec["geometry"]["kind"] == "parallel3d"
    assert abs(spec["geometry"]["det_offset"][0] - offset) < 1e-9  # 1 mm pixels

    # From the file equals from the clean line integrals to the counts' rounding.
    x_file = reconstruct(data, space, geometry)
    x_clean = reconstruct(y, space, geometry)
    rel = np.linalg.norm(x_file - x_clean) / np.linalg.norm(x_clean)
    assert rel < 2e-3, rel
    # The ball is where it was, with its attenuation (per mm: pixels of 1 mm).
    h = np.arange(NU) + 0.5 - NU / 2
    inside = (h[:, None] - CENTRE[0]) ** 2 + (h[None, :] - CENTRE[1]) ** 2 < (RADIUS - 2) ** 2
    assert abs(x_file[:, :, 1][inside].mean() - MU) < 0.05 * MU
    # Without the centre it is worse.
    _, g0 = rodl.io.scan_geometry(scan, pixel_size=1e-3)
    truth = np.where(inside, MU, 0.0)
    err = lambda x: np.linalg.norm((x[:, :, 1] - truth)[inside])
    assert err(reconstruct(data, space, g0)) > 2 * err(x_file)


def test_preprocessing_removes_zingers_and_stripes():
    rng = np.random.default_rng(1)
    frames = np.full((3, 16, 8), 1000.0, dtype=np.float32) + rng.normal(0, 5, (3, 16, 8)).astype(np.float32)
    frames[1, 5, 3] = 5000.0
    frames[2, 9, 6] = 3000.0
    clean, n = rodl.io.remove_zingers(frames, 500.0)
    assert n == 2 and abs(clean[1, 5, 3] - 1000) < 30 and abs(clean[2, 9, 6] - 1000) < 30
    assert np.array_equal(np.delete(clean.ravel(), [1 * 128 + 5 * 8 + 3, 2 * 128 + 9 * 8 + 6]),
                          np.delete(frames.ravel(), [1 * 128 + 5 * 8 + 3, 2 * 128 + 9 * 8 + 6]))
    # A stripe: one detector column off by a constant in every view.
    y = line_integrals().astype(np.float32)
    striped = y.copy()
    striped[:, 20, :] += 0.05
    fixed = rodl.io.remove_stripes(striped, 5)
    assert np.abs(fixed - y)[:, 20].mean() < 0.2 * 0.05
    with pytest.raises(ValueError, match="odd"):
        rodl.io.remove_stripes(striped, 4)


def test_errors_are_exceptions_with_the_file_named(tmp_path, tiff_scan):
    path, _, _ = tiff_scan
    with pytest.raises(OSError, match="angles"):
        rodl.io.read_tiff(path / "proj", ANGLES[:-1])
    with pytest.raises(OSError, match="nothing"):
        rodl.io.read_tiff(tmp_path / "nothing", ANGLES)
    bad = path / "proj" / "p_0007.tif"
    bad.write_bytes(bad.read_bytes()[:200])
    with pytest.raises(OSError, match="p_0007.tif"):
        rodl.io.read_tiff(path / "proj", ANGLES)
    with pytest.raises(ValueError, match="3D"):
        rodl.io.remove_stripes(np.ones((3, 4)), 3)
    with pytest.raises(ValueError, match="beam"):
        rodl.io.read_tiff(path / "flat.tif", ANGLES[:3]).geometry_json(beam="fan", pixel_size=1e-3)
    with pytest.raises(ValueError, match="floor"):
        rodl.io.neg_log(np.ones(3), floor=0.0)
    if not rodl.io.HDF5_BUILT:
        with pytest.raises(NotImplementedError, match="HDF5"):
            rodl.io.read_nxtomo(tmp_path / "x.nx")


def test_tensors_come_back_as_tensors_on_their_device():
    torch = pytest.importorskip("torch")
    t = torch.full((2, 4, 3), 50.0)
    f = torch.full((1, 4, 3), 100.0)
    out = rodl.io.neg_log(rodl.io.flat_field(t, f))
    assert isinstance(out, torch.Tensor) and out.device == t.device
    assert torch.allclose(out, torch.full((2, 4, 3), math.log(2.0)))
    clean, n = rodl.io.remove_zingers(t, 10.0)
    assert isinstance(clean, torch.Tensor) and n == 0


def test_the_gpu_forms_refuse_host_tensors_and_other_dtypes():
    # rodl.io hands CUDA tensors to these (tests/test_io_gpu.py); host memory never reaches them.
    torch = pytest.importorskip("torch")
    from rodl import _rodl

    with pytest.raises(ValueError, match="CUDA tensor"):
        _rodl._neg_log_cuda(torch.ones(3).__dlpack__(), 0, 1e-6)
    with pytest.raises(TypeError, match="float32"):
        _rodl._remove_stripes_cuda(torch.ones((2, 3, 1), dtype=torch.float64).__dlpack__(), 0, 3)
    with pytest.raises(ValueError, match="3D"):
        _rodl._remove_zingers_cuda(torch.ones((2, 3)).__dlpack__(), 0, 1.0)


needs_hdf5 = pytest.mark.skipif(not rodl.io.HDF5_BUILT, reason="a build without HDF5 (cargo feature hdf5)")


@needs_hdf5
def test_an_nxtomo_file_written_by_esrf_nxtomo_reads_and_reconstructs(tmp_path):
    pytest.importorskip("nxtomo")
    import pint
    from nxtomo.application.nxtomo import NXtomo
    from nxtomo.nxobject.nxdetector import ImageKey

    y = line_integrals()
    raw = counts(y)
    frames = [image(np.full((NU, NV), DARK))] * 2 + [image(np.full((NU, NV), I0 + DARK))] * 3
    frames += [image(raw[a]) for a in range(VIEWS)]
    keys = [ImageKey.DARK_FIELD] * 2 + [ImageKey.FLAT_FIELD] * 3 + [ImageKey.PROJECTION] * VIEWS
    nx = NXtomo()
    nx.instrument.detector.data = np.stack(frames).astype(np.uint16)
    nx.instrument.detector.image_key_control = keys
    ureg = pint.get_application_registry()
    nx.sample.rotation_angle = np.concatenate([np.zeros(5), np.degrees(ANGLES)]) * ureg.degree
    nx.instrument.detector.x_pixel_size = 1.0 * ureg.millimeter
    nx.instrument.detector.y_pixel_size = 1.0 * ureg.millimeter
    nx.instrument.beam.incident_energy = 17500.0 * ureg.eV
    nx.save(file_path=str(tmp_path / "scan.nx"), data_path="entry0000")

    scan = rodl.io.read_nxtomo(tmp_path / "scan.nx")
    assert scan.format == "nxtomo" and scan.projections.shape == (VIEWS, NU, NV)
    np.testing.assert_array_equal(scan.projections, raw.astype(np.float32))
    np.testing.assert_allclose(scan.angles, ANGLES, atol=1e-12)
    assert scan.pixel_size == (1e-3, 1e-3)
    assert scan.energy == pytest.approx(17.5)  # keV, from eV
    data = rodl.io.neg_log(rodl.io.flat_field(scan.projections, scan.flats, scan.darks))
    _, offset = rodl.io.find_centre(data, scan.angles)
    assert abs(offset - SHIFT) < 0.1
    space, geometry = rodl.io.scan_geometry(scan, det_offset_px=offset, beam="parallel")
    x = reconstruct(data, space, geometry)
    x_clean = reconstruct(y, space, geometry)
    assert np.linalg.norm(x - x_clean) / np.linalg.norm(x_clean) < 2e-3


@needs_hdf5
def test_a_dxchange_file_written_by_h5py_reads(tmp_path):
    h5py = pytest.importorskip("h5py")
    y = line_integrals()
    raw = counts(y)
    with h5py.File(tmp_path / "dx.h5", "w") as f:
        f["exchange/data"] = np.stack([image(raw[a]) for a in range(VIEWS)]).astype(np.uint16)
        f["exchange/data_white"] = np.stack([image(np.full((NU, NV), I0 + DARK))] * 2).astype(np.uint16)
        f["exchange/data_dark"] = np.stack([image(np.full((NU, NV), DARK))] * 2).astype(np.uint16)
        f["exchange/theta"] = np.degrees(ANGLES)
    scan = rodl.io.read_dxchange(tmp_path / "dx.h5")
    assert scan.format == "dxchange"
    np.testing.assert_array_equal(scan.projections, raw.astype(np.float32))
    np.testing.assert_allclose(scan.angles, ANGLES, atol=1e-12)
    # A missing key is named.
    with h5py.File(tmp_path / "bad.h5", "w") as f:
        f["exchange/data"] = np.zeros((2, NV, NU), dtype=np.uint16)
    with pytest.raises(OSError, match="theta"):
        rodl.io.read_dxchange(tmp_path / "bad.h5")


def test_the_module_examples_run():
    import doctest

    assert doctest.testmod(rodl.io).failed == 0
