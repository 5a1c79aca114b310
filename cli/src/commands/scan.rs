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
//! A cone scan that does not fit in the memory limit is reconstructed out of core through a
//! file of line integrals ([`crate::scan_cone`]).
//!
//! Outputs: the `.npy` volume, `--geometry-out` and `--data-out` are written as one unit
//! ([`crate::output`]); a TIFF stack or an HDF5 volume is written atomically by the library
//! first (each all or nothing), then the other outputs are committed.

use std::ops::Range;
use std::time::Instant;

use ndarray::{s, Array3, Axis};
use rodl::distributed::Across;
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
use crate::scan_input::{self, ScanInput};
use crate::scan_options::{BeamArg, CentreArg, TiffDepth, VolumeFormat};
use crate::scan_outputs::{prepare_outputs, Prepared};
use crate::scan_steps::{
    centre_shift, find_centre, note_centre, paganin_options, rows_spec, shifted_json,
};
use crate::stages::Stages;
use crate::Failure;

/// The filter of `--filter`.
fn parse_filter(args: &ScanArgs) -> Result<FilterType, Failure> {
    args.filter
        .parse()
        .map_err(|e| Failure::usage(format!("--filter: {}", crate::error_message(&e))))
}

/// The output format (`--format` or the output's name), checked against the build.
fn output_format(args: &ScanArgs) -> Result<VolumeFormat, Failure> {
    let format = args
        .format
        .unwrap_or_else(|| VolumeFormat::from_path(&args.output));
    if format == VolumeFormat::H5 && !cfg!(feature = "hdf5") {
        return Err(Failure::usage(
            "--format h5: this rodl was built without HDF5 support (build it with \
             `--features hdf5`); write .npy or a TIFF stack",
        ));
    }
    Ok(format)
}

/// The detector rows of `--rows` (all `nv` without it).
fn rows_asked(args: &ScanArgs, nv: usize) -> Result<Range<usize>, Failure> {
    match args.rows {
        Some(r) if r.end > nv => Err(Failure::usage(format!(
            "--rows {}:{}: the detector has {nv} rows",
            r.start, r.end
        ))),
        Some(r) => Ok(r.start..r.end),
        None => Ok(0..nv),
    }
}

/// Whether the beam of `input` is a cone (`--beam`, else a source distance in the file).
fn is_cone(args: &ScanArgs, input: &ScanInput) -> bool {
    match args.beam {
        BeamArg::Cone => true,
        BeamArg::Parallel => false,
        BeamArg::Auto => input.info.source_distance.value.is_some(),
    }
}

/// Why a scan is reconstructed whole instead of by slabs (`None`: by slabs): a cone beam's
/// rows are not independent, the phase retrieval filters along the rows, `--data-out` and a
/// 16-bit TIFF stack scaled to the volume's range need the whole.
fn whole_because(args: &ScanArgs, format: VolumeFormat, cone: bool) -> Option<&'static str> {
    if cone {
        Some(
            "the rows of a cone beam are not independent (each ray crosses several slices), \
             so they are not streamed in slabs",
        )
    } else if args.paganin.0.is_some() {
        Some("--paganin filters whole frames (along the rows too), so they are not streamed in slabs")
    } else if args.data_out.is_some() {
        Some("--data-out writes all the preprocessed rows at once (leave it out to stream slabs)")
    } else if format == VolumeFormat::Tiff && args.tiff_depth == TiffDepth::Uint16 {
        Some(
            "--tiff-depth uint16 scales every slice by the whole volume's range (write \
             --tiff-depth float32, .npy or .h5 to stream slabs)",
        )
    } else {
        None
    }
}

/// `rodl scan`.
pub fn run(args: &ScanArgs) -> Result<(), Failure> {
    #[cfg(feature = "mpi")]
    if crate::scan_slabs::under_mpirun() {
        return run_mpi(args);
    }
    let settings = settings(args)?;
    let filter = parse_filter(args)?;
    let format = output_format(args)?;
    let compute = Compute::from_args(&args.compute)?;
    let prepared = prepare_outputs(args, format)?;
    let mut stages = Stages::new(compute.device);
    let t = Instant::now();
    let mut input = scan_input::open(args)?;
    stages.add("read", t.elapsed().as_secs_f64());
    let [nu, nv] = input.info.detector_shape;
    let n = input.projections.len();
    let rows = rows_asked(args, nv)?;
    let cone = is_cone(args, &input);
    let Some(why) = whole_because(args, format, cone) else {
        let across = Across::new(rodl::distributed::SingleRank);
        return by_slabs(
            args,
            &across,
            input,
            rows,
            settings.as_ref(),
            filter,
            format,
            &compute,
            Some(prepared),
            stages,
        );
    };
    if args.slab_rows.is_some() {
        return Err(Failure::usage(format!("--slab-rows: {why}")));
    }
    if args.verbose {
        crate::term::note(&summary(args, &input, [n, nu, nv], &rows));
    }
    if let Err(e) = check_memory(n, nu, rows.len(), settings.is_some(), args.memory, why) {
        // A cone scan that does not fit goes out of core (FDK through a file).
        if !cone {
            return Err(e);
        }
        if let Some(reason) = crate::scan_cone::refused(args, format, settings.is_some()) {
            return Err(Failure::new(format!("{}; {reason}", e.message())));
        }
        let cone_scan = crate::scan_cone::ConeScan {
            args,
            rows,
            filter,
            format,
            compute: &compute,
            limit: args.memory.unwrap_or(u64::MAX).min(host_memory_limit()),
        };
        return cone_scan.run(input, prepared, &mut stages);
    }
    let Prepared {
        mut outputs,
        npy: npy_slot,
        geometry: geometry_slot,
        data: data_slot,
    } = prepared;
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
    let det_offset_px = centre_shift(args, data.view(), &input.info.angles, &unshifted, cone)?;
    stages.add("preprocess", t.elapsed().as_secs_f64());
    let json = shifted_json(&input.info, &opts, det_offset_px, rows.clone(), nv)?;
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

/// The `--verbose` line that describes the scan: its file, format, projections of `nu × nv`
/// pixels, flats, darks and the detector rows reconstructed.
fn summary(
    args: &ScanArgs,
    input: &ScanInput,
    [n, nu, nv]: [usize; 3],
    rows: &std::ops::Range<usize>,
) -> String {
    format!(
        "rodl: scan {} ({}): {n} projections of {nu} × {nv} pixels (u × v), {} flats, {} \
         darks; rows {}..{}",
        args.input.display(),
        input.format,
        input.flats.len(),
        input.darks.len(),
        rows.start,
        rows.end
    )
}

/// Errors unless the preprocessed rows and the volume fit in the host-memory limit (and
/// `--memory`); `why` says why they are reconstructed whole.
fn check_memory(
    n: usize,
    nu: usize,
    rows: usize,
    iterative: bool,
    memory: Option<u64>,
    why: &str,
) -> Result<(), Failure> {
    let data = (n as u128) * (nu as u128) * (rows as u128) * 4;
    let volume = (nu as u128) * (nu as u128) * (rows as u128) * 4;
    // FBP: the data, their filtered copy, the volume and its host copy; iterative methods
    // keep a few vectors of each.
    let need = if iterative {
        3 * data + 4 * volume
    } else {
        2 * data + 2 * volume
    };
    let limit = memory.unwrap_or(u64::MAX).min(host_memory_limit()) as u128;
    if need > limit {
        let per_row = need / rows.max(1) as u128;
        let fit = (limit / per_row.max(1)).max(1);
        return Err(Failure::new(format!(
            "reconstructing {rows} detector rows needs about {} in memory, more than the limit \
             of {} ({}); {why}: reconstruct at most {fit} rows at a time with --rows A:B",
            format_bytes(need),
            format_bytes(limit),
            if memory.is_some_and(|m| (m as u128) == limit) {
                "--memory".to_string()
            } else {
                rodl::memory::MEMORY_LIMIT_ENV.to_string()
            }
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
    input.check_flats(args)?;
    let flat_field = if args.flat_field {
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

/// `mpirun -np N rodl scan …` (feature `mpi`): every rank opens the scan, rank 0 prepares the
/// outputs, and the parallel-beam pipeline runs by slabs over the ranks
/// ([`crate::scan_slabs`]). What is reconstructed whole (a cone beam, `--paganin`,
/// `--data-out`, a 16-bit TIFF stack) is refused, on every rank alike.
#[cfg(feature = "mpi")]
fn run_mpi(args: &ScanArgs) -> Result<(), Failure> {
    use std::sync::Arc;
    let world = Arc::new(rodl::distributed::MpiComm::world()?);
    let local_rank = world.local_rank();
    let across = Across::from_arc(world);
    let rank = across.rank();
    let opened = crate::scan_slabs::agree(
        &across,
        (|| {
            let settings = settings(args)?;
            let filter = parse_filter(args)?;
            let format = output_format(args)?;
            // `--device cuda` without a number: one GPU per rank of a node.
            let mut device = args.compute.clone();
            if matches!(device.device.trim(), "cuda" | "gpu") {
                device.device = format!("cuda:{local_rank}");
            }
            let compute = Compute::from_args(&device)?;
            let stages = Stages::new(compute.device);
            let input = scan_input::open(args)?;
            let rows = rows_asked(args, input.info.detector_shape[1])?;
            if let Some(why) = whole_because(args, format, is_cone(args, &input)) {
                return Err(Failure::usage(format!(
                    "rodl scan under mpirun splits a parallel-beam scan into slabs of rows, \
                     and {why}: run it on one process"
                )));
            }
            Ok((settings, filter, format, compute, stages, input, rows))
        })(),
    )?;
    let (settings, filter, format, compute, stages, input, rows) = opened;
    let prepared = crate::scan_slabs::agree(
        &across,
        if rank == 0 {
            prepare_outputs(args, format).map(Some)
        } else {
            Ok(None)
        },
    )?;
    by_slabs(
        args,
        &across,
        input,
        rows,
        settings.as_ref(),
        filter,
        format,
        &compute,
        prepared,
        stages,
    )
}

/// Bytes from rank 0 to every rank (`local` is rank 0's; the others' are ignored).
fn from_rank_zero(across: &Across, local: Vec<u8>) -> Result<Vec<u8>, Failure> {
    if across.size() == 1 {
        return Ok(local);
    }
    let mine = if across.rank() == 0 {
        local
    } else {
        Vec::new()
    };
    let mut all = across.comm().all_gather(&mine)?;
    if all.is_empty() {
        return Err(Failure::new("internal error: nothing gathered"));
    }
    Ok(all.swap_remove(0))
}

/// The parallel-beam scan by slabs ([`crate::scan_slabs`]), on one process or over the ranks
/// of `across`: the centre found once (rank 0) and shared, the slabs sized by the memory
/// budget, read, preprocessed and reconstructed in a pipeline and written into the output.
/// `prepared`: the outputs, on rank 0.
#[allow(clippy::too_many_arguments)]
fn by_slabs(
    args: &ScanArgs,
    across: &Across,
    mut input: ScanInput,
    rows: Range<usize>,
    settings: Option<&Settings>,
    filter: FilterType,
    format: VolumeFormat,
    compute: &Compute,
    prepared: Option<Prepared>,
    mut stages: Stages,
) -> Result<(), Failure> {
    use crate::scan_slabs::{agree, Method, Pre, Preprocessing, Sink, Work};
    let (rank, size) = (across.rank(), across.size());
    let [nu, nv] = input.info.detector_shape;
    let n = input.projections.len();
    let pre = Pre::of(args);
    let halo = pre.halo();
    let opts = ScanGeometryOptions {
        beam: rodl::io::BeamChoice::Parallel,
        ..ScanGeometryOptions::default()
    };
    let checked = input
        .check_flats(args)
        .and_then(|()| Ok(input.info.geometry_spec(&opts)?));
    let unshifted = agree(across, checked)?;
    if args.verbose && rank == 0 {
        crate::term::note(&summary(args, &input, [n, nu, nv], &rows));
    }
    let (flats, darks, positions) = input.take_frames();
    let prep = Preprocessing {
        pre: &pre,
        flats: &flats,
        darks: &darks,
        positions: positions.as_deref(),
        source: &args.input,
    };

    // The centre: rank 0 finds it from the central rows, every rank takes its value.
    let t = Instant::now();
    let found = match (args.centre, rank) {
        (CentreArg::Off, _) => Ok((0.0, None)),
        (CentreArg::Shift(x), _) => Ok((x, None)),
        (CentreArg::Auto, 0) => (|| {
            let keep = crate::scan_slabs::centre_rows(&rows);
            let read = crate::scan_slabs::with_halo(&keep, halo, nv);
            let raw = crate::scan_slabs::read_rows(input.projections.as_mut(), read.clone())?;
            let (data, _) = prep.apply(raw, &read, &keep)?;
            let c = find_centre(data.view(), &input.info.angles, &unshifted, false)?;
            Ok((c.det_offset_px(), Some(c)))
        })(),
        (CentreArg::Auto, _) => Ok((0.0, None)),
    };
    let (offset, centre) = agree(across, found)?;
    let shared = from_rank_zero(across, offset.to_le_bytes().to_vec())?;
    let det_offset_px = match <[u8; 8]>::try_from(shared.as_slice()) {
        Ok(b) => f64::from_le_bytes(b),
        Err(_) => return Err(Failure::new("internal error: the centre was not shared")),
    };
    stages.add("preprocess", t.elapsed().as_secs_f64());
    if args.verbose && rank == 0 {
        note_centre(det_offset_px, centre.as_ref());
    }
    let opts = ScanGeometryOptions {
        det_offset_px,
        ..opts
    };
    let spec = input.info.tomo_spec(&opts, None)?;
    let whole = rows_spec(spec.clone(), rows.clone(), nv);
    let shape: [usize; 3] = match whole.volume.shape.as_slice() {
        &[a, b, c] => [a, b, c],
        other => {
            return Err(Failure::new(format!(
                "internal error: a volume of shape {other:?}"
            )))
        }
    };

    // The slabs.
    let held = (flats.data.len() + darks.data.len()) as u128 * 4;
    let limit = args.memory.unwrap_or(u64::MAX).min(host_memory_limit()) as u128;
    let budget = limit.saturating_sub(held);
    let planned = (|| {
        let fit = crate::scan_slabs::rows_per_slab(
            n,
            nu,
            shape[0] * shape[1],
            halo,
            settings.is_some(),
            budget,
        )?;
        // At most --slab-rows; else at least one slab per rank and, for the pipeline to
        // overlap, a few slabs per rank of at least a few MiB of raw rows each.
        let per = fit.min(rows.len()).min(match args.slab_rows {
            Some(r) => r,
            None => {
                let row_bytes = (n * nu * 4).max(1);
                let pipelined = rows
                    .len()
                    .div_ceil(crate::scan_slabs::PIPELINE_SLABS * size)
                    .max(crate::scan_slabs::MIN_SLAB_BYTES.div_ceil(row_bytes));
                rows.len().div_ceil(size).min(pipelined)
            }
        });
        let exact = settings.is_none_or(|s| s.algorithm == crate::algorithm::Algorithm::Sirt);
        if !exact && per < rows.len() {
            return Err(Failure::new(format!(
                "{} couples the slices of the volume (its step sizes or its TV term are the \
                 whole volume's), so it reconstructs all {} rows at once{}; reconstruct with \
                 fbp or sirt (slice by slice), fewer --rows, or a larger --memory",
                args.algorithm,
                rows.len(),
                if size > 1 {
                    format!(", not over {size} ranks")
                } else {
                    format!(
                        ", which needs more than the memory budget of {}",
                        format_bytes(budget)
                    )
                }
            )));
        }
        Ok(per.max(1))
    })();
    let per = agree(across, planned)?;
    let all = crate::scan_slabs::slabs(&rows, per);
    let share = crate::scan_slabs::share(all.len(), rank, size);
    let work = Work {
        mine: all[share].to_vec(),
        first_row: rows.start,
        rounds: crate::scan_slabs::share(all.len(), 0, size).len(),
        bar: rank == 0 && !args.quiet,
    };
    let method = Method {
        spec: &spec,
        nv,
        compute,
        filter,
        settings,
    };
    if args.verbose && rank == 0 {
        crate::term::note(&format!(
            "rodl: {} slabs of at most {per} rows{} (memory budget {})",
            all.len(),
            if size > 1 {
                format!(" over {size} ranks")
            } else {
                String::new()
            },
            format_bytes(budget)
        ));
    }
    let json = whole.to_json()?;
    let wall = Instant::now();
    let stack = input.projections.as_mut();
    let mut prepared = prepared;
    let times = match format {
        VolumeFormat::Npy => {
            // Rank 0 creates the file (header, size) in place; every rank maps it.
            let temp = prepared
                .as_ref()
                .and_then(|p| p.outputs.temp_path(p.npy?))
                .map(|p| p.as_os_str().as_encoded_bytes().to_vec())
                .unwrap_or_default();
            let temp = from_rank_zero(across, temp)?;
            let mut times = None;
            let mut entered = false;
            let mut body = |file: &std::fs::File| -> Result<(), Failure> {
                entered = true;
                let mut map = agree(
                    across,
                    crate::io::MappedOutput::create::<f32>(file, &shape).map_err(write_failure),
                )?;
                agree(across, Ok(()))?;
                let data = map.data_mut::<f32>().map_err(write_failure)?;
                let view = ndarray::ArrayViewMut3::from_shape(shape, data)
                    .map_err(|e| Failure::new(format!("internal error: {e}")))?;
                let mut sink = Sink::Npy(view);
                times = Some(crate::scan_slabs::run(
                    across, &work, stack, &prep, &method, &mut sink,
                )?);
                agree(
                    across,
                    map.flush()
                        .map_err(|e| Failure::io("cannot write", &args.output, &e)),
                )
            };
            match prepared.as_mut() {
                Some(p) => {
                    let slot = p
                        .npy
                        .ok_or_else(|| Failure::new("internal error: no .npy output"))?;
                    let r = p
                        .outputs
                        .write_in_place(slot, "a volume written by slabs", |file| {
                            body(file).map_err(crate::output::WriteError::Failure)
                        });
                    if !entered {
                        // The other ranks wait for the file.
                        agree(
                            across,
                            r.as_ref()
                                .map(|_| ())
                                .map_err(|f| Failure::new(f.message())),
                        )?;
                        agree(across, Ok(()))?;
                    }
                    r?;
                }
                None => {
                    agree(across, Ok(()))?;
                    let path =
                        std::path::PathBuf::from(String::from_utf8(temp).map_err(|_| {
                            Failure::new("the output's temporary path is not UTF-8")
                        })?);
                    let mapped = (|| -> Result<memmap2::MmapMut, Failure> {
                        let file = std::fs::OpenOptions::new()
                            .read(true)
                            .write(true)
                            .open(&path)
                            .map_err(|e| Failure::io("cannot open", &path, &e))?;
                        // SAFETY: rank 0's new temporary file, sized before this point and not
                        // truncated until every rank has flushed its map (agreed below).
                        unsafe { memmap2::MmapMut::map_mut(&file) }
                            .map_err(|e| Failure::io("cannot map", &path, &e))
                    })();
                    let mut map = agree(across, mapped)?;
                    let view = <ndarray::ArrayViewMutD<'_, f32> as ndarray_npy::ViewMutNpyExt>::view_mut_npy(&mut map)
                        .map_err(|e| Failure::new(format!("{}: {e}", path.display())))
                        .and_then(|v| {
                            v.into_dimensionality::<ndarray::Ix3>()
                                .map_err(|e| Failure::new(format!("{}: {e}", path.display())))
                        })?;
                    let mut sink = Sink::Npy(view);
                    times = Some(crate::scan_slabs::run(
                        across, &work, stack, &prep, &method, &mut sink,
                    )?);
                    drop(sink);
                    agree(
                        across,
                        map.flush()
                            .map_err(|e| Failure::io("cannot write", &path, &e)),
                    )?;
                }
            }
            times.ok_or_else(|| Failure::new("internal error: no slab ran"))?
        }
        VolumeFormat::Tiff => {
            let created = rodl::io::TiffStackWriter::create(
                &args.output,
                "slice_",
                shape,
                rodl::io::TiffSliceFormat::F32,
            )
            .map_err(Failure::from);
            let mut sink = Sink::Tiff(agree(across, created)?);
            let times = crate::scan_slabs::run(across, &work, stack, &prep, &method, &mut sink)?;
            let Sink::Tiff(writer) = sink else {
                return Err(Failure::new("internal error: the TIFF writer"));
            };
            // Every rank has written its slices: each renames its own.
            agree(across, writer.commit().map(|_| ()).map_err(Failure::from))?;
            times
        }
        VolumeFormat::H5 => h5_by_slabs(args, across, &work, stack, &prep, &method, &whole)?,
    };
    let wall = wall.elapsed().as_secs_f64();
    let committed = match prepared {
        Some(mut p) => (|| {
            if let Some(slot) = p.geometry {
                p.outputs
                    .write_bytes(slot, format!("{json}\n").as_bytes())?;
            }
            p.outputs.commit()
        })(),
        None => Ok(()),
    };
    agree(across, committed)?;
    stages.add("read", times.read);
    stages.add("preprocess", times.preprocess);
    stages.add("set-up", times.set_up);
    stages.add("compute", times.compute);
    stages.add("write", times.write);
    if times.bad_pixels > 0 && !args.quiet && rank == 0 {
        crate::term::note(&format!(
            "rodl: warning: {} pixels had a flat no brighter than the dark and were set to \
             transmission 1",
            times.bad_pixels
        ));
    }
    if args.verbose && rank == 0 {
        let io = times.read + times.write;
        let work = times.preprocess + times.set_up + times.compute;
        crate::term::note(&format!(
            "rodl: {} {:?} -> {} {:?} on {}: {}",
            args.algorithm,
            [n, nu, rows.len()],
            args.output.display(),
            shape,
            compute.device,
            stages.describe()
        ));
        crate::term::note(&format!(
            "rodl: overlap: slabs {wall:.3} s wall, read + write {io:.3} s, preprocess + \
             reconstruct {work:.3} s: {:.2} × the larger",
            wall / io.max(work).max(1e-9)
        ));
    }
    Ok(())
}

/// A write error as a failure naming no path (the callers' errors name theirs).
fn write_failure(e: crate::output::WriteError) -> Failure {
    match e {
        crate::output::WriteError::Io(e) => Failure::new(crate::io_message(&e)),
        crate::output::WriteError::Failure(f) => f,
    }
}

/// The HDF5 volume by slabs: rank 0 writes it, the other ranks' slabs gathered to it.
#[cfg(feature = "hdf5")]
fn h5_by_slabs(
    args: &ScanArgs,
    across: &Across,
    work: &crate::scan_slabs::Work,
    stack: &mut (dyn rodl::io::FrameStack + Send),
    prep: &crate::scan_slabs::Preprocessing<'_>,
    method: &crate::scan_slabs::Method<'_>,
    whole: &TomoSpec,
) -> Result<crate::scan_slabs::Times, Failure> {
    use crate::scan_slabs::{agree, Sink};
    let created = if across.rank() == 0 {
        (|| {
            let space = whole.volume.space::<f32>()?;
            Ok(Some(rodl::io::Hdf5VolumeWriter::create(
                &args.output,
                &args.dataset,
                &space,
            )?))
        })()
    } else {
        Ok(None)
    };
    let created = agree(across, created)?;
    if let Some(w) = &created {
        // A signal removes it (see `crate::output::install_signal_cleanup`).
        crate::output::created_temporary(w.temporary_file());
    }
    let mut sink = Sink::H5(created);
    let times = crate::scan_slabs::run(across, work, stack, prep, method, &mut sink)?;
    let Sink::H5(writer) = sink else {
        return Err(Failure::new("internal error: the HDF5 writer"));
    };
    let committed = match writer {
        Some(w) => w.commit().map_err(Failure::from),
        None => Ok(()),
    };
    agree(across, committed)?;
    Ok(times)
}

/// Without HDF5 support (refused before any work).
#[cfg(not(feature = "hdf5"))]
fn h5_by_slabs(
    _args: &ScanArgs,
    _across: &Across,
    _work: &crate::scan_slabs::Work,
    _stack: &mut (dyn rodl::io::FrameStack + Send),
    _prep: &crate::scan_slabs::Preprocessing<'_>,
    _method: &crate::scan_slabs::Method<'_>,
    _whole: &TomoSpec,
) -> Result<crate::scan_slabs::Times, Failure> {
    Err(Failure::new("this rodl was built without HDF5 support"))
}
