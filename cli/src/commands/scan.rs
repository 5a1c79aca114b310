//! `rodl scan`: scanner data to a volume — read, preprocess, find the centre, reconstruct,
//! write.
//!
//! The projections are streamed from the file in chunks of views; each chunk is cleaned of
//! zingers, normalised by the flats and darks and turned into line integrals as it arrives
//! ([`rodl::preprocess`]; with `--paganin` the phase retrieval filters each whole frame before
//! `−log`), keeping only the detector rows asked for (`--rows`), so that memory holds the
//! preprocessed rows, not the raw file. Stripes are then removed row by row, the centre of
//! rotation is found (from the two views closest to 180° apart in a parallel beam, from the
//! pairs of opposite rays near the orbit's plane in a circular cone beam:
//! [`crate::scan_steps`]) and carried into the geometry as a detector shift, and the volume
//! of the rows' slab is
//! reconstructed and written. The geometry built is the file's (see
//! [`rodl::io::ScanInfo::geometry_spec`]) in millimetres, restricted to the rows.
//!
//! Outputs: the `.npy` volume, `--geometry-out` and `--data-out` are written as one unit
//! ([`crate::output`]); a TIFF stack or an HDF5 volume is written atomically by the library
//! first (each all or nothing), then the other outputs are committed.

use std::ops::Range;
use std::time::Instant;

use ndarray::{s, Array3, Axis};
use rodl::io::{
    for_each_chunk, frames_per_chunk, Frames, ScanGeometryOptions, DEFAULT_CHUNK_BYTES,
};
use rodl::memory::{format_bytes, host_memory_limit};
use rodl::preprocess::{
    neg_log, paganin, remove_stripes_sorting, remove_zingers, FlatField, PaganinOptions,
    ZingerOptions, NEG_LOG_FLOOR,
};
use rodl::solvers::callback::ProgressBar;
use rodl::tomo::{fbp_op, FbpOptions, FilterType, TomoSpec};
use rodl::Operator;

use super::{Compute, Setup};
use crate::algorithm::{reconstruct, Settings};
use crate::args::ScanArgs;
use crate::io::{check_finite, write_npy, AnyArray};
use crate::output::{check_distinct, Outputs};
use crate::scan_input::{self, ScanInput};
use crate::scan_options::{BeamArg, CentreArg, TiffDepth, VolumeFormat};
use crate::scan_steps::{find_centre, note_centre, paganin_options};
use crate::stages::Stages;
use crate::Failure;

/// `rodl scan`.
pub fn run(args: &ScanArgs) -> Result<(), Failure> {
    let settings = settings(args)?;
    let filter: FilterType = args
        .filter
        .parse()
        .map_err(|e| Failure::usage(format!("--filter: {}", crate::error_message(&e))))?;
    let format = args
        .format
        .unwrap_or_else(|| VolumeFormat::from_path(&args.output));
    if format == VolumeFormat::H5 && !cfg!(feature = "hdf5") {
        return Err(Failure::usage(
            "--format h5: this rodl was built without HDF5 support (build it with \
             `--features hdf5`); write .npy or a TIFF stack",
        ));
    }
    let compute = Compute::from_args(&args.compute)?;
    let mut inputs = vec![("IN", args.input.as_path())];
    for (name, p) in [("--flats", &args.flats), ("--darks", &args.darks)] {
        if let Some(p) = p {
            inputs.push((name, p.as_path()));
        }
    }
    let mut names = vec![("--output", args.output.as_path())];
    for (name, p) in [
        ("--geometry-out", &args.geometry_out),
        ("--data-out", &args.data_out),
    ] {
        if let Some(p) = p {
            names.push((name, p.as_path()));
        }
    }
    check_distinct(&names, &inputs)?;
    if format == VolumeFormat::Tiff && args.output.is_file() {
        return Err(Failure::new(format!(
            "{} is a file: a TIFF stack is written into a folder (or name a .npy or .h5 output)",
            args.output.display()
        )));
    }
    let mut outputs = Outputs::new();
    let npy_slot = match format {
        VolumeFormat::Npy => Some(outputs.prepare(&args.output)?),
        _ => None,
    };
    let geometry_slot = args
        .geometry_out
        .as_deref()
        .map(|p| outputs.prepare(p))
        .transpose()?;
    let data_slot = args
        .data_out
        .as_deref()
        .map(|p| outputs.prepare(p))
        .transpose()?;

    let mut stages = Stages::new(compute.device);
    let t = Instant::now();
    let mut input = scan_input::open(args)?;
    stages.add("read", t.elapsed().as_secs_f64());
    let [nu, nv] = input.info.detector_shape;
    let n = input.projections.len();
    let rows = match args.rows {
        Some(r) if r.end > nv => {
            return Err(Failure::usage(format!(
                "--rows {}:{}: the detector has {nv} rows",
                r.start, r.end
            )))
        }
        Some(r) => r.start..r.end,
        None => 0..nv,
    };
    check_memory(n, nu, rows.len(), settings.is_some())?;
    if args.verbose {
        crate::term::note(&format!(
            "rodl: scan {} ({}): {n} projections of {nu} × {nv} pixels (u × v), {} flats, {} \
             darks; rows {}..{}",
            args.input.display(),
            input.format,
            input.flats.len(),
            input.darks.len(),
            rows.start,
            rows.end
        ));
    }
    let cone = match args.beam {
        BeamArg::Cone => true,
        BeamArg::Parallel => false,
        BeamArg::Auto => input.info.source_distance.value.is_some(),
    };

    let phase = paganin_options(args, &input.info, cone)?;
    let opts = ScanGeometryOptions {
        beam: if cone {
            rodl::io::BeamChoice::Cone
        } else {
            rodl::io::BeamChoice::Parallel
        },
        ..ScanGeometryOptions::default()
    };
    // The geometry without a shift: its values are checked before the data are read.
    let unshifted = input.info.geometry_spec(&opts)?;

    let data = read_preprocessed(&mut input, rows.clone(), phase.as_ref(), args, &mut stages)?;

    let t = Instant::now();
    let (det_offset_px, centre) = match args.centre {
        CentreArg::Off => (0.0, None),
        CentreArg::Shift(x) => (x, None),
        CentreArg::Auto => {
            let c = find_centre(data.view(), &input.info.angles, &unshifted, cone)?;
            (c.det_offset_px(), Some(c))
        }
    };
    stages.add("preprocess", t.elapsed().as_secs_f64());
    if args.verbose {
        note_centre(det_offset_px, centre.as_ref());
    }
    let opts = ScanGeometryOptions {
        det_offset_px,
        ..opts
    };
    let spec = rows_spec(input.info.tomo_spec(&opts, None)?, rows.clone(), nv);
    let json = spec.to_json()?;
    let setup = Setup::from_text(&json)?;
    if let Some(slot) = geometry_slot {
        outputs.write_bytes(slot, format!("{json}\n").as_bytes())?;
    }
    let data = match data_slot {
        Some(slot) => {
            let t = Instant::now();
            let wrapped = AnyArray::F32(data.into_dyn());
            outputs.write(slot, |w| write_npy(w, &wrapped))?;
            stages.add("write", t.elapsed().as_secs_f64());
            let AnyArray::F32(a) = wrapped else {
                return Err(Failure::new("internal error: the data are float32"));
            };
            a
        }
        None => data.into_dyn(),
    };

    let t = Instant::now();
    let ray = compute.ray_transform::<f32>(&setup)?;
    let y = ray.range().element(data)?;
    let fbp = match settings {
        None => Some(fbp_op(&ray, &FbpOptions::new(filter))?),
        Some(_) => None,
    };
    stages.add("set-up", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let x = match (&fbp, &settings) {
        (Some(fbp), _) => {
            // One step, its elapsed time ticking (the filter and back-projection report no
            // progress of their own).
            let bar = if args.quiet {
                ProgressBar::hidden(1)
            } else {
                ProgressBar::new(1)
            };
            bar.inner().set_message(if cone { "FDK" } else { "FBP" });
            bar.inner()
                .enable_steady_tick(std::time::Duration::from_millis(250));
            let x = fbp.apply(&y)?;
            bar.inner().inc(1);
            bar.inner().finish_and_clear();
            x
        }
        (None, Some(settings)) => {
            let mut bar = if args.quiet {
                ProgressBar::hidden(settings.iterations)
            } else {
                ProgressBar::new(settings.iterations)
            };
            let (x, _) = reconstruct(&ray, &compute.backend, &y, settings, &mut bar)?;
            bar.inner().finish_and_clear();
            x
        }
        (None, None) => {
            return Err(Failure::new(
                "internal error: neither FBP nor an iterative method was chosen",
            ))
        }
    };
    drop(y);
    let host = x.into_host()?;
    stages.add("compute", t.elapsed().as_secs_f64());
    check_finite(
        &host.as_array()?,
        "the reconstruction",
        super::OVERFLOW_HINT,
    )?;

    let t = Instant::now();
    let space = setup.spec.volume.space::<f32>()?;
    match format {
        VolumeFormat::Npy => {
            let array = AnyArray::F32(host.into_array()?);
            let slot = npy_slot.ok_or_else(|| Failure::new("internal error: no .npy output"))?;
            outputs.write(slot, |w| write_npy(w, &array))?;
        }
        VolumeFormat::Tiff => {
            let depth = match args.tiff_depth {
                TiffDepth::Float32 => rodl::io::TiffSliceFormat::F32,
                TiffDepth::Uint16 => rodl::io::TiffSliceFormat::U16(rodl::io::Window::Auto),
            };
            rodl::io::write_volume_tiff(&args.output, "slice_", &host, depth)?;
        }
        VolumeFormat::H5 => write_h5(args, &host, &space)?,
    }
    outputs.commit()?;
    stages.add("write", t.elapsed().as_secs_f64());
    if args.verbose {
        crate::term::note(&format!(
            "rodl: {} {:?} -> {} {:?} on {}: {}",
            args.algorithm,
            setup.data_shape(),
            args.output.display(),
            setup.volume_shape(),
            compute.device,
            stages.describe()
        ));
    }
    Ok(())
}

/// The iterative method's settings, or `None` for FBP (usage errors for options that do not
/// fit the method).
fn settings(args: &ScanArgs) -> Result<Option<Settings>, Failure> {
    let Some(algorithm) = args.algorithm.iterative() else {
        if args.iterations.is_some() || args.tv_weight.is_some() {
            return Err(Failure::usage(
                "--iterations and --tv-weight apply to the iterative methods, not to fbp",
            ));
        }
        return Ok(None);
    };
    let iterations = args.iterations.ok_or_else(|| {
        Failure::usage(format!(
            "{} needs --iterations N",
            args.algorithm.to_string().to_lowercase()
        ))
    })?;
    let settings = Settings {
        algorithm,
        iterations,
        subsets: None,
        nonnegative: false,
        tv_weight: args.tv_weight,
    };
    settings.check(usize::MAX)?;
    Ok(Some(settings))
}

/// Errors unless the preprocessed rows and the volume fit in the host-memory limit.
fn check_memory(n: usize, nu: usize, rows: usize, iterative: bool) -> Result<(), Failure> {
    let data = (n as u128) * (nu as u128) * (rows as u128) * 4;
    let volume = (nu as u128) * (nu as u128) * (rows as u128) * 4;
    // FBP: the data, their filtered copy, the volume and its host copy; iterative methods
    // keep a few vectors of each.
    let need = if iterative {
        3 * data + 4 * volume
    } else {
        2 * data + 2 * volume
    };
    let limit = host_memory_limit() as u128;
    if need > limit {
        let per_row = need / rows.max(1) as u128;
        let fit = (limit / per_row.max(1)).max(1);
        return Err(Failure::new(format!(
            "reconstructing {rows} detector rows needs about {} in memory, more than the limit \
             of {} ({}): reconstruct slabs of at most {fit} rows with --rows A:B",
            format_bytes(need),
            format_bytes(limit),
            rodl::memory::MEMORY_LIMIT_ENV
        )));
    }
    Ok(())
}

/// Streams the projections, keeping `rows`, and preprocesses them: zingers, flat field, the
/// phase retrieval (on whole frames, which it filters along v too), −log per chunk of views,
/// then stripes over all views. Returns `[angle, u, rows]`.
fn read_preprocessed(
    input: &mut ScanInput,
    rows: Range<usize>,
    phase: Option<&PaganinOptions>,
    args: &ScanArgs,
    stages: &mut Stages,
) -> Result<Array3<f32>, Failure> {
    let t = Instant::now();
    let [nu, nv] = input.info.detector_shape;
    let n = input.projections.len();
    let zingers = args.zingers.0.map(|t| ZingerOptions::new(t as f32));
    // The rows corrected before −log: all of them when the phase retrieval filters along v.
    let pre = if phase.is_some() { 0..nv } else { rows.clone() };
    let crop = |f: &Frames| Frames {
        data: f.data.slice(s![.., .., pre.clone()]).to_owned(),
        positions: f.positions.clone(),
    };
    let flat_field = if args.flat_field {
        if input.flats.is_empty() {
            return Err(Failure::new(format!(
                "{} has no flat fields{}: give them, or --flat-field false for data that are \
                 normalised already",
                args.input.display(),
                if input.format == "TIFF" {
                    " (--flats DIR)"
                } else {
                    ""
                }
            )));
        }
        let mut flats = crop(&input.flats);
        let mut darks = crop(&input.darks);
        if let Some(z) = &zingers {
            remove_zingers(flats.data.view_mut(), z)?;
            remove_zingers(darks.data.view_mut(), z)?;
        }
        Some(if darks.is_empty() {
            FlatField::without_darks(&flats)?
        } else {
            FlatField::new(&flats, &darks)?
        })
    } else {
        None
    };
    let positions: Option<Vec<f64>> = input
        .info
        .projection_positions
        .as_ref()
        .map(|p| p.iter().map(|&k| k as f64).collect());
    rodl::memory::check_host_array(&[n, nu, rows.len()], 4)?;
    let mut data = Array3::<f32>::zeros([n, nu, rows.len()]);
    let bar = if args.quiet {
        ProgressBar::hidden(n)
    } else {
        ProgressBar::new(n)
    };
    bar.inner().set_message("reading");
    let per_chunk = frames_per_chunk(input.projections.frame_shape(), DEFAULT_CHUNK_BYTES);
    let mut busy = 0.0;
    let mut bad_pixels = 0usize;
    let log = args.log;
    for_each_chunk(input.projections.as_mut(), per_chunk, |first, chunk| {
        let t = Instant::now();
        let k = chunk.shape()[0];
        let mut out = data.slice_mut(s![first..first + k, .., ..]);
        let at = positions.as_ref().map(|p| &p[first..first + k]);
        // Zingers and the flat field, on the rows kept or (before the phase retrieval) all.
        let correct = |mut frames: ndarray::ArrayViewMut3<'_, f32>| -> rodl::Result<usize> {
            if let Some(z) = &zingers {
                remove_zingers(frames.view_mut(), z)?;
            }
            match &flat_field {
                Some(ff) => Ok(ff.apply(frames, at)?.bad_pixels),
                None => Ok(0),
            }
        };
        match phase {
            Some(opts) => {
                let mut whole = chunk.to_owned();
                bad_pixels += correct(whole.view_mut())?;
                paganin(whole.view_mut(), opts)?;
                out.assign(&whole.slice(s![.., .., rows.clone()]));
            }
            None => {
                out.assign(&chunk.slice(s![.., .., rows.clone()]));
                bad_pixels += correct(out.view_mut())?;
            }
        }
        if log {
            neg_log(out.view_mut(), NEG_LOG_FLOOR);
        }
        bar.inner().inc(k as u64);
        busy += t.elapsed().as_secs_f64();
        Ok(())
    })?;
    bar.inner().finish_and_clear();
    let t_stripes = Instant::now();
    if let Some(width) = args.stripes.0 {
        remove_stripes_sorting(data.view_mut(), width)?;
    }
    busy += t_stripes.elapsed().as_secs_f64();
    stages.add("preprocess", busy);
    stages.add("read", t.elapsed().as_secs_f64() - busy);
    if bad_pixels > 0 && !args.quiet {
        crate::term::note(&format!(
            "rodl: warning: {bad_pixels} pixels had a flat no brighter than the dark and were \
             set to transmission 1"
        ));
    }
    if data.iter().any(|v| !v.is_finite()) {
        let views = data
            .axis_iter(Axis(0))
            .position(|v| v.iter().any(|x| !x.is_finite()))
            .unwrap_or(0);
        return Err(Failure::new(format!(
            "{}: the preprocessed data are not finite (first in view {views}): the file holds \
             NaN or infinite values",
            args.input.display()
        )));
    }
    Ok(data)
}

/// The scan's volume and geometry restricted to the detector rows `rows` of `nv`: the
/// detector's v range (or, for per-view vectors, each view's detector centre) and the
/// volume's z range shrink to those rows.
fn rows_spec(mut spec: TomoSpec, rows: Range<usize>, nv: usize) -> TomoSpec {
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

/// Writes the HDF5 volume.
#[cfg(feature = "hdf5")]
fn write_h5(
    args: &ScanArgs,
    host: &rodl::Element<f32>,
    space: &rodl::Space<f32>,
) -> Result<(), Failure> {
    Ok(rodl::io::write_volume_hdf5(
        &args.output,
        &args.dataset,
        host,
        space,
    )?)
}

/// Without HDF5 support (refused before any work).
#[cfg(not(feature = "hdf5"))]
fn write_h5(
    _args: &ScanArgs,
    _host: &rodl::Element<f32>,
    _space: &rodl::Space<f32>,
) -> Result<(), Failure> {
    Err(Failure::new("this rodl was built without HDF5 support"))
}
