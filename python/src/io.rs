//! Scanner data in (`rodl.io`): TIFF stacks and, in builds with rodl's `hdf5` feature, NXtomo
//! and DXchange files, read by `rodl::io` into a [`PyScan`]; and `rodl::preprocess` on NumPy
//! arrays (flat/dark correction, −log, zingers, stripes, phase retrieval, the centre of
//! rotation of parallel and cone beams).

use std::path::PathBuf;

use ndarray::{Array3, ArrayD, Ix3};
use numpy::{PyArray1, PyArray3};
use pyo3::prelude::*;
use rodl::io::{BeamChoice, FileValue, Frames, LengthUnit, Scan, ScanFormat, ScanGeometryOptions};
use rodl::preprocess::{
    self, CentreOptions, ConeCentreOptions, ConeLengths, FlatField, PaganinOptions, ZingerOptions,
};

use crate::array::read;
use crate::errors::{value_error, IntoPyResult};

/// A scan as read from its file: projections, flats and darks (float32 NumPy arrays
/// `[frame, u, v]`, u the image column and v its row from the bottom), the angles in radians
/// and what the file records about the acquisition (lengths in metres, `None` where it records
/// nothing).
#[pyclass(name = "Scan", module = "rodl._rodl", frozen)]
pub struct PyScan {
    scan: Scan,
}

fn frames<'py>(py: Python<'py>, f: &Frames) -> Bound<'py, PyArray3<f32>> {
    PyArray3::from_array(py, &f.data)
}

fn pair(v: &[FileValue; 2]) -> (Option<f64>, Option<f64>) {
    (v[0].value, v[1].value)
}

fn beam_choice(beam: &str) -> PyResult<BeamChoice> {
    Ok(match beam {
        "auto" => BeamChoice::FromFile,
        "parallel" => BeamChoice::Parallel,
        "cone" => BeamChoice::Cone,
        _ => {
            return Err(value_error(format!(
                "beam: expected \"auto\", \"parallel\" or \"cone\", got {beam:?}"
            )))
        }
    })
}

fn length_unit(unit: &str) -> PyResult<LengthUnit> {
    Ok(match unit {
        "m" => LengthUnit::Metre,
        "mm" => LengthUnit::Millimetre,
        "um" | "µm" => LengthUnit::Micrometre,
        "pixel" => LengthUnit::SamplePixel,
        _ => {
            return Err(value_error(format!(
                "unit: expected \"m\", \"mm\", \"um\" or \"pixel\", got {unit:?}"
            )))
        }
    })
}

/// A length override in metres: finite and > 0.
fn length(name: &str, v: Option<f64>) -> PyResult<Option<f64>> {
    match v {
        Some(x) if !(x.is_finite() && x > 0.0) => Err(value_error(format!(
            "{name}: expected a length in metres > 0, got {x}"
        ))),
        v => Ok(v),
    }
}

#[pymethods]
impl PyScan {
    /// The projections `[angle, u, v]` (float32, as recorded: counts, not yet normalised).
    #[getter]
    fn projections<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray3<f32>> {
        PyArray3::from_array(py, &self.scan.projections)
    }

    /// The flat fields `[frame, u, v]` (none: zero frames).
    #[getter]
    fn flats<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray3<f32>> {
        frames(py, &self.scan.flats)
    }

    /// The dark fields `[frame, u, v]` (none: zero frames).
    #[getter]
    fn darks<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray3<f32>> {
        frames(py, &self.scan.darks)
    }

    /// The rotation angle of each projection, in radians.
    #[getter]
    fn angles<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.scan.info.angles)
    }

    /// The file or folder read.
    #[getter]
    fn path(&self) -> String {
        self.scan.info.path.display().to_string()
    }

    /// `"tiff"`, `"nxtomo"` or `"dxchange"`.
    #[getter]
    fn format(&self) -> &'static str {
        match self.scan.info.format {
            ScanFormat::Tiff => "tiff",
            ScanFormat::NxTomo { .. } => "nxtomo",
            ScanFormat::DxChange => "dxchange",
        }
    }

    /// The detector's shape `(nu, nv)`.
    #[getter]
    fn detector_shape(&self) -> (usize, usize) {
        let [nu, nv] = self.scan.info.detector_shape;
        (nu, nv)
    }

    /// The detector pixel size `(u, v)` in metres, as recorded.
    #[getter]
    fn pixel_size(&self) -> (Option<f64>, Option<f64>) {
        pair(&self.scan.info.pixel_size)
    }

    /// The pixel size in the sample plane `(u, v)` in metres, as recorded.
    #[getter]
    fn sample_pixel_size(&self) -> (Option<f64>, Option<f64>) {
        pair(&self.scan.info.sample_pixel_size)
    }

    /// The source to rotation-axis distance in metres, as recorded.
    #[getter]
    fn source_distance(&self) -> Option<f64> {
        self.scan.info.source_distance.value
    }

    /// The rotation-axis to detector distance in metres, as recorded.
    #[getter]
    fn detector_distance(&self) -> Option<f64> {
        self.scan.info.detector_distance.value
    }

    /// The X-ray energy in keV, as recorded (NXtomo's `beam/incident_energy`).
    #[getter]
    fn energy(&self) -> Option<f64> {
        self.scan.info.energy.value
    }

    /// rodl's geometry JSON (`{"volume": …, "geometry": …}`, the `rodl` tool's format) for
    /// this scan: a parallel-3D or cone geometry from the recorded values, each overridable
    /// (lengths in metres; `pixel_size` sets the detector and the sample pixel size, as
    /// `rodl scan --pixel-size` does), the rotation axis `det_offset_px` detector pixels off
    /// the detector's centre, in the world `unit` (`"mm"`, `"m"`, `"um"` or `"pixel"`); the
    /// volume is the detector's field of view. A value the geometry needs and nobody gives is
    /// an `OSError` naming the file and the key.
    #[pyo3(signature = (det_offset_px=0.0, beam="auto", unit="mm", pixel_size=None,
                        source_distance=None, detector_distance=None))]
    fn geometry_json(
        &self,
        det_offset_px: f64,
        beam: &str,
        unit: &str,
        pixel_size: Option<f64>,
        source_distance: Option<f64>,
        detector_distance: Option<f64>,
    ) -> PyResult<String> {
        if !det_offset_px.is_finite() {
            return Err(value_error("det_offset_px: expected a finite number"));
        }
        let mut info = self.scan.info.clone();
        let given = |v: f64| FileValue::found("given", v);
        if let Some(p) = length("pixel_size", pixel_size)? {
            info.pixel_size = [given(p), given(p)];
            info.sample_pixel_size = [given(p), given(p)];
        }
        if let Some(d) = length("source_distance", source_distance)? {
            info.source_distance = given(d);
        }
        if let Some(d) = length("detector_distance", detector_distance)? {
            info.detector_distance = given(d);
        }
        let opts = ScanGeometryOptions {
            beam: beam_choice(beam)?,
            unit: length_unit(unit)?,
            det_offset_px,
            ..Default::default()
        };
        info.tomo_spec(&opts, None).py()?.to_json().py()
    }

    fn __repr__(&self) -> String {
        let i = &self.scan.info;
        format!(
            "Scan({:?}, format={:?}, {} projections of {} × {}, {} flats, {} darks)",
            i.path.display().to_string(),
            self.format(),
            self.scan.projections.shape()[0],
            i.detector_shape[0],
            i.detector_shape[1],
            self.scan.flats.len(),
            self.scan.darks.len(),
        )
    }
}

/// Reads a scan kept as TIFF stacks (a folder, a pattern such as `proj_*.tif`, or a multi-page
/// file; 8/16-bit integer or float32 pages): the projections, optionally flats and darks, and
/// `angles` (radians, one per projection: a TIFF stack records none).
#[pyfunction]
#[pyo3(signature = (projections, angles, flats=None, darks=None))]
fn read_tiff(
    py: Python<'_>,
    projections: PathBuf,
    angles: Vec<f64>,
    flats: Option<PathBuf>,
    darks: Option<PathBuf>,
) -> PyResult<PyScan> {
    let scan = py
        .detach(|| Scan::from_tiff(&projections, flats.as_deref(), darks.as_deref(), angles))
        .py()?;
    Ok(PyScan { scan })
}

/// Reads a NeXus NXtomo file (`entry`: the NXentry's HDF5 path, default the file's only
/// NXtomo entry): projections, flats and darks by `image_key`, angles, pixel sizes and
/// distances.
#[pyfunction]
#[pyo3(signature = (path, entry=None))]
fn read_nxtomo(py: Python<'_>, path: PathBuf, entry: Option<String>) -> PyResult<PyScan> {
    #[cfg(feature = "hdf5")]
    {
        use rodl::io::NxTomoFile;
        let scan = py
            .detach(|| match entry {
                Some(e) => NxTomoFile::open_entry(&path, &e)?.read_scan(),
                None => NxTomoFile::open(&path)?.read_scan(),
            })
            .py()?;
        Ok(PyScan { scan })
    }
    #[cfg(not(feature = "hdf5"))]
    {
        let _ = (py, entry);
        Err(no_hdf5(&path))
    }
}

/// Reads a Data Exchange (DXchange) file: `/exchange/data`, `data_white`, `data_dark` and
/// `theta`.
#[pyfunction]
fn read_dxchange(py: Python<'_>, path: PathBuf) -> PyResult<PyScan> {
    #[cfg(feature = "hdf5")]
    {
        let scan = py
            .detach(|| rodl::io::DxFile::open(&path)?.read_scan())
            .py()?;
        Ok(PyScan { scan })
    }
    #[cfg(not(feature = "hdf5"))]
    {
        let _ = py;
        Err(no_hdf5(&path))
    }
}

#[cfg(not(feature = "hdf5"))]
fn no_hdf5(path: &std::path::Path) -> PyErr {
    pyo3::exceptions::PyNotImplementedError::new_err(format!(
        "{}: this build of rodl has no HDF5 support (build the package with the cargo feature \
         `hdf5`, over the system libhdf5)",
        path.display()
    ))
}

/// A float32 `[frame, u, v]` copy of an array-like.
fn stack(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Array3<f32>> {
    let a = read::<f32>(obj, what)?;
    let a: ArrayD<f32> = a.as_array().to_owned();
    let shape = a.shape().to_vec();
    a.into_dimensionality::<Ix3>().map_err(|_| {
        value_error(format!(
            "{what}: expected a 3D array [frame, u, v], got shape {shape:?}"
        ))
    })
}

pub(crate) fn to_frames(
    obj: Option<&Bound<'_, PyAny>>,
    what: &str,
    shape: [usize; 2],
) -> PyResult<Frames> {
    match obj {
        None => Ok(Frames::empty(shape)),
        Some(o) => Ok(Frames {
            data: stack(o, what)?,
            positions: None,
        }),
    }
}

/// Flat/dark correction `(p − d̄) / (f̄ − d̄)` of `projections` with the averaged `flats` and
/// `darks` (without darks: `p / f̄`); returns a new float32 array. Pixels whose flat is not
/// above the dark are set to 1.
#[pyfunction]
#[pyo3(signature = (projections, flats, darks=None))]
fn flat_field<'py>(
    py: Python<'py>,
    projections: &Bound<'py, PyAny>,
    flats: &Bound<'py, PyAny>,
    darks: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArray3<f32>>> {
    let mut p = stack(projections, "projections")?;
    let shape = [p.shape()[1], p.shape()[2]];
    let flats = to_frames(Some(flats), "flats", shape)?;
    let darks = to_frames(darks, "darks", shape)?;
    py.detach(|| -> rodl::Result<()> {
        let ff = if darks.is_empty() {
            FlatField::without_darks(&flats)?
        } else {
            FlatField::new(&flats, &darks)?
        };
        ff.apply(p.view_mut(), None)?;
        Ok(())
    })
    .py()?;
    Ok(PyArray3::from_owned_array(py, p))
}

/// `−log(data)` with values below `floor` (default rodl's `NEG_LOG_FLOOR`, 1e-6) clamped to it
/// first (no NaN or Inf from zero or negative transmission); returns a new float32 array.
#[pyfunction]
#[pyo3(signature = (data, floor=1e-6))] // a literal, for the signature Python shows
fn neg_log<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    floor: f32,
) -> PyResult<Bound<'py, numpy::PyArrayDyn<f32>>> {
    if !(floor.is_finite() && floor > 0.0) {
        return Err(value_error(format!(
            "floor: expected a number > 0, got {floor}"
        )));
    }
    let mut a = read::<f32>(data, "data")?.as_array().to_owned();
    py.detach(|| preprocess::neg_log(a.view_mut(), floor));
    Ok(numpy::PyArrayDyn::from_owned_array(py, a))
}

/// Zinger removal in frames `[frame, u, v]`: pixels more than `threshold` above the median of
/// their 3 × 3 neighbourhood are replaced by it. Returns `(frames, count replaced)`.
#[pyfunction]
fn remove_zingers<'py>(
    py: Python<'py>,
    frames: &Bound<'py, PyAny>,
    threshold: f32,
) -> PyResult<(Bound<'py, PyArray3<f32>>, usize)> {
    let mut a = stack(frames, "frames")?;
    let n = py
        .detach(|| preprocess::remove_zingers(a.view_mut(), &ZingerOptions::new(threshold)))
        .py()?;
    Ok((PyArray3::from_owned_array(py, a), n))
}

/// Stripe (ring) removal by sorting (Vo, Atwood and Drakopoulos 2018) on line integrals
/// `[angle, u, v]`, with a median of odd width `size` across the detector; returns a new array.
#[pyfunction]
fn remove_stripes<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    size: usize,
) -> PyResult<Bound<'py, PyArray3<f32>>> {
    let mut a = stack(data, "data")?;
    py.detach(|| preprocess::remove_stripes_sorting(a.view_mut(), size))
        .py()?;
    Ok(PyArray3::from_owned_array(py, a))
}

/// The centre of rotation of a parallel-beam scan from two views 180° apart (line integrals
/// `[angle, u, v]`, `angles` in radians): `(axis_px, det_offset_px)`, where the axis projects
/// onto the detector (a fractional pixel index along u) and the detector shift that a
/// geometry needs (`Scan.geometry_json(det_offset_px=...)`).
#[pyfunction]
#[pyo3(signature = (data, angles, max_offset_px=None, max_angle_mismatch=None))]
fn find_centre<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    angles: Vec<f64>,
    max_offset_px: Option<f64>,
    max_angle_mismatch: Option<f64>,
) -> PyResult<(f64, f64)> {
    let a = stack(data, "data")?;
    let mut opts = CentreOptions {
        max_offset_px,
        ..Default::default()
    };
    if let Some(m) = max_angle_mismatch {
        opts.max_angle_mismatch = m;
    }
    let c = py
        .detach(|| preprocess::find_centre_parallel(a.view(), &angles, &opts))
        .py()?;
    Ok((c.axis_px, c.det_offset_px))
}

/// Single-material phase retrieval (Paganin et al. 2002) of transmission frames
/// `[angle, u, v]` (flat-field corrected, before −log): each frame's Fourier transform divided
/// by `1 + π λ z M (δ/β) |f|²`; returns a new float32 array (still a transmission).
#[pyfunction]
#[pyo3(signature = (data, delta_beta, energy, distance, pixel_size, magnification=1.0,
                    padding=true))]
#[allow(clippy::too_many_arguments)]
fn paganin<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    delta_beta: f64,
    energy: f64,
    distance: f64,
    pixel_size: &Bound<'py, PyAny>,
    magnification: f64,
    padding: bool,
) -> PyResult<Bound<'py, PyArray3<f32>>> {
    let pixel_size: [f64; 2] = match pixel_size.extract::<f64>() {
        Ok(p) => [p, p],
        Err(_) => pixel_size
            .extract::<(f64, f64)>()
            .map(|(u, v)| [u, v])
            .map_err(|_| {
                value_error("pixel_size: expected a number or a pair (u, v) of numbers (metres)")
            })?,
    };
    let opts = PaganinOptions {
        delta_beta,
        wavelength: preprocess::wavelength_m(energy),
        distance,
        pixel_size,
        magnification,
        padding,
    };
    if !(energy.is_finite() && energy > 0.0) {
        return Err(value_error(format!(
            "energy: expected a number of keV > 0, got {energy}"
        )));
    }
    let mut a = stack(data, "data")?;
    py.detach(|| preprocess::paganin(a.view_mut(), &opts))
        .py()?;
    Ok(PyArray3::from_owned_array(py, a))
}

/// The centre of rotation of a circular cone-beam scan (line integrals `[angle, u, v]`,
/// `angles` in radians, the source-to-axis and axis-to-detector distances and the pixel size
/// along u in one unit) from the pairs of opposite rays near the orbit's plane:
/// `(axis_px, det_offset_px)`.
#[pyfunction]
#[pyo3(signature = (data, angles, src_radius, det_radius, pixel_size, max_offset_px=None,
                    rows=None))]
#[allow(clippy::too_many_arguments)]
fn find_centre_cone<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    angles: Vec<f64>,
    src_radius: f64,
    det_radius: f64,
    pixel_size: f64,
    max_offset_px: Option<f64>,
    rows: Option<(usize, usize)>,
) -> PyResult<(f64, f64)> {
    let a = stack(data, "data")?;
    let opts = ConeCentreOptions {
        max_offset_px,
        rows: rows.map(|(lo, hi)| lo..hi),
        ..Default::default()
    };
    let lengths = ConeLengths {
        src_radius,
        det_radius,
        pixel_size,
    };
    let c = py
        .detach(|| preprocess::find_centre_cone(a.view(), &angles, &lengths, &opts))
        .py()?;
    Ok((c.axis_px, c.det_offset_px))
}

// The default of `neg_log` above is the library's.
const _: () = assert!(preprocess::NEG_LOG_FLOOR == 1e-6);

/// Registers `Scan` and the readers and preprocessing functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyScan>()?;
    m.add("HDF5_BUILT", cfg!(feature = "hdf5"))?;
    m.add_function(wrap_pyfunction!(read_tiff, m)?)?;
    m.add_function(wrap_pyfunction!(read_nxtomo, m)?)?;
    m.add_function(wrap_pyfunction!(read_dxchange, m)?)?;
    m.add_function(wrap_pyfunction!(flat_field, m)?)?;
    m.add_function(wrap_pyfunction!(neg_log, m)?)?;
    m.add_function(wrap_pyfunction!(remove_zingers, m)?)?;
    m.add_function(wrap_pyfunction!(remove_stripes, m)?)?;
    m.add_function(wrap_pyfunction!(find_centre, m)?)?;
    m.add_function(wrap_pyfunction!(find_centre_cone, m)?)?;
    m.add_function(wrap_pyfunction!(paganin, m)?)?;
    Ok(())
}
