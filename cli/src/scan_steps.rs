//! The steps of `rodl scan` that need the scan's geometry: the parameters of the phase
//! retrieval (`--paganin`) from the file and the command line, and the centre of rotation
//! (`--centre auto`) of parallel and circular cone beams.

use std::ops::Range;

use ndarray::ArrayView3;
use rodl::io::{ScanGeometryOptions, ScanInfo};
use rodl::preprocess::{
    find_centre_cone, find_centre_parallel, wavelength_m, CentreEstimate, CentreOptions,
    ConeCentreEstimate, ConeCentreOptions, ConeLengths, PaganinOptions,
};
use rodl::tomo::{GeometrySpec, TomoSpec};

use crate::args::ScanArgs;
use crate::scan_options::CentreArg;
use crate::Failure;

/// The options of the phase retrieval `--paganin` asks for (`None` without it), from the
/// command line and what the file records: the propagation distance (the detector distance
/// unless `--propagation-distance`), the pixel size (a parallel beam's sample pixel, a cone
/// beam's detector pixel) and a cone beam's magnification. Errors name the option or the
/// file's key that is missing.
pub fn paganin_options(
    args: &ScanArgs,
    info: &ScanInfo,
    cone: bool,
) -> Result<Option<PaganinOptions>, Failure> {
    let Some(delta_beta) = args.paganin.0 else {
        if args.energy.is_some() || args.propagation_distance.is_some() {
            return Err(Failure::usage(
                "--energy and --propagation-distance apply to the phase retrieval: give \
                 --paganin DELTA_BETA too",
            ));
        }
        return Ok(None);
    };
    if !delta_beta.is_finite() {
        return Err(Failure::usage(format!(
            "--paganin: δ/β must be finite, got {delta_beta}"
        )));
    }
    if !args.log {
        return Err(Failure::usage(
            "--paganin filters transmissions before −log: it cannot run with --log false \
             (data that are line integrals already)",
        ));
    }
    let path = info.path.as_path();
    // `--energy` was put into the info (scan_input::open).
    let energy = info.energy.value.ok_or_else(|| {
        Failure::usage(format!(
            "--paganin needs the X-ray energy: {} records none (`{}`): give --energy KEV",
            path.display(),
            info.energy.key
        ))
    })?;
    let what = "the phase retrieval (--paganin; or give --propagation-distance MM)";
    let distance = match args.propagation_distance {
        Some(mm) => mm * 1e-3,
        None => info.detector_distance.require(path, what)?.abs(),
    };
    let what = "the phase retrieval (--paganin; or give --pixel-size MM)";
    let mut pixel_size = [0.0; 2];
    for (k, p) in pixel_size.iter_mut().enumerate() {
        *p = if cone {
            info.pixel_size[k].require(path, what)?
        } else {
            match info.sample_pixel_size[k].value {
                Some(v) => v,
                None => info.pixel_size[k].require(path, what)?,
            }
        };
    }
    let magnification = if cone {
        let what = "the phase retrieval in a cone beam (its magnification)";
        let src = info.source_distance.require(path, what)?.abs();
        let det = info.detector_distance.require(path, what)?.abs();
        (src + det) / src
    } else {
        1.0
    };
    Ok(Some(PaganinOptions {
        delta_beta,
        wavelength: wavelength_m(energy),
        distance,
        pixel_size,
        magnification,
        padding: true,
    }))
}

/// The centre of rotation found by `--centre auto`.
pub enum FoundCentre {
    /// From the two views of a parallel beam closest to 180° apart.
    Parallel(CentreEstimate),
    /// From the pairs of opposite rays of a circular cone beam.
    Cone(ConeCentreEstimate),
}

impl FoundCentre {
    /// The detector shift found, in pixels.
    pub fn det_offset_px(&self) -> f64 {
        match self {
            FoundCentre::Parallel(c) => c.det_offset_px,
            FoundCentre::Cone(c) => c.det_offset_px,
        }
    }
}

/// Finds the centre of rotation of the preprocessed `data = [angle, u, rows]`; `spec` is the
/// scan's geometry without a detector shift (its lengths, for a cone beam).
pub fn find_centre(
    data: ArrayView3<'_, f32>,
    angles: &[f64],
    spec: &GeometrySpec,
    cone: bool,
) -> Result<FoundCentre, Failure> {
    let hint = |e: rodl::Error| {
        Failure::new(format!(
            "finding the centre of rotation: {} (give --centre PIXELS or --centre off)",
            crate::error_message(&e)
        ))
    };
    if !cone {
        return find_centre_parallel(data, angles, &CentreOptions::default())
            .map(FoundCentre::Parallel)
            .map_err(hint);
    }
    let lengths = cone_lengths(spec).ok_or_else(|| {
        Failure::new(
            "finding the centre of rotation: the geometry is not a circular cone beam with a \
             flat detector (give --centre PIXELS or --centre off)",
        )
    })?;
    find_centre_cone(data, angles, &lengths, &ConeCentreOptions::default())
        .map(FoundCentre::Cone)
        .map_err(hint)
}

/// The source and detector distances and the pixel size along u of a cone-beam geometry
/// description built by [`ScanInfo::geometry_spec`] (a `cone` geometry, or `vec` views of a
/// point source about the z axis).
fn cone_lengths(spec: &GeometrySpec) -> Option<ConeLengths> {
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    if let (Some(src_radius), Some(det_radius), Some(min), Some(max)) = (
        spec.src_radius,
        spec.det_radius,
        spec.detector.min.as_ref(),
        spec.detector.max.as_ref(),
    ) {
        let pixel_size = (max[0] - min[0]) / *spec.detector.shape.first()? as f64;
        return Some(ConeLengths {
            src_radius,
            det_radius,
            pixel_size,
        });
    }
    let view = spec.views.as_ref()?.first()?;
    if spec.beam.as_deref() != Some("point") {
        return None;
    }
    Some(ConeLengths {
        src_radius: norm(&view.src),
        det_radius: norm(&view.det_center),
        pixel_size: norm(&view.det_u),
    })
}

/// The `--verbose` line about the centre of rotation.
pub fn note_centre(det_offset_px: f64, centre: Option<&FoundCentre>) {
    let line = match centre {
        Some(FoundCentre::Parallel(c)) => format!(
            "rodl: centre of rotation: axis at u = {:.2} px, a detector shift of {:.2} px \
             (views {} and {}, {:.3}° from 180° apart)",
            c.axis_px,
            c.det_offset_px,
            c.views.0,
            c.views.1,
            c.angle_mismatch.to_degrees()
        ),
        Some(FoundCentre::Cone(c)) => format!(
            "rodl: centre of rotation: axis at u = {:.3} px, a detector shift of {:.3} px \
             (cone beam: {} pairs of opposite rays in rows {}..{}, rms mismatch {:.3e})",
            c.axis_px, c.det_offset_px, c.pairs, c.rows.start, c.rows.end, c.rms_mismatch
        ),
        None => format!("rodl: centre of rotation: a detector shift of {det_offset_px:.2} px"),
    };
    crate::term::note(&line);
}

/// The scan's volume and geometry restricted to the detector rows `rows` of `nv`: the
/// detector's v range (or, for per-view vectors, each view's detector centre) and the
/// volume's z range shrink to those rows.
pub fn rows_spec(mut spec: TomoSpec, rows: Range<usize>, nv: usize) -> TomoSpec {
    if rows == (0..nv) {
        return spec;
    }
    let (a, b, nv_f) = (rows.start as f64, rows.end as f64, nv as f64);
    let det = &mut spec.geometry.detector;
    if let (Some(min), Some(max)) = (det.min.as_mut(), det.max.as_mut()) {
        let (lo, hi) = (min[1], max[1]);
        let step = (hi - lo) / nv_f;
        min[1] = lo + a * step;
        max[1] = lo + b * step;
    }
    det.shape[1] = rows.len();
    if let Some(views) = spec.geometry.views.as_mut() {
        let shift = 0.5 * (a + b) - 0.5 * nv_f;
        for view in views {
            if let Some(dv) = &view.det_v {
                for (c, d) in view.det_center.iter_mut().zip(dv) {
                    *c += shift * d;
                }
            }
        }
    }
    let vol = &mut spec.volume;
    let (lo, hi) = (vol.min_pt[2], vol.max_pt[2]);
    let step = (hi - lo) / nv_f;
    vol.min_pt[2] = lo + a * step;
    vol.max_pt[2] = lo + b * step;
    vol.shape[2] = rows.len();
    spec
}

/// The detector shift of `--centre` (for `auto`, found in the preprocessed `data` with
/// [`find_centre`]; `unshifted`: the scan's geometry without a shift), noted with `-v`.
pub fn centre_shift(
    args: &ScanArgs,
    data: ArrayView3<'_, f32>,
    angles: &[f64],
    unshifted: &GeometrySpec,
    cone: bool,
) -> Result<f64, Failure> {
    let (det_offset_px, centre) = match args.centre {
        CentreArg::Off => (0.0, None),
        CentreArg::Shift(x) => (x, None),
        CentreArg::Auto => {
            let c = find_centre(data, angles, unshifted, cone)?;
            (c.det_offset_px(), Some(c))
        }
    };
    if args.verbose {
        note_centre(det_offset_px, centre.as_ref());
    }
    Ok(det_offset_px)
}

/// The scan's geometry and volume with the detector shift `det_offset_px`, restricted to the
/// detector rows `rows` of `nv` ([`rows_spec`]), as rodl's geometry JSON.
pub fn shifted_json(
    info: &ScanInfo,
    opts: &ScanGeometryOptions,
    det_offset_px: f64,
    rows: Range<usize>,
    nv: usize,
) -> Result<String, Failure> {
    let opts = ScanGeometryOptions {
        det_offset_px,
        ..*opts
    };
    Ok(rows_spec(info.tomo_spec(&opts, None)?, rows, nv).to_json()?)
}
