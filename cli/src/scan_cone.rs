//! `rodl scan` of a cone beam whose data and volume do not fit in the memory limit: the
//! out-of-core path of issue #34, item 3.
//!
//! A cone beam's rows are not independent (each ray crosses several slices), so its volume
//! cannot be reconstructed slab by slab from slabs of rows as a parallel beam's is
//! ([`crate::scan_slabs`]). Its preprocessing is row by row all the same, so the scan runs in
//! two passes through a file:
//!
//! 1. The detector rows are read and preprocessed in slabs as a parallel scan's are (zingers
//!    with a halo of rows, flat field, −log, stripes: [`Preprocessing`]) and written into an
//!    `.npy` file of line integrals `[angle, u, rows]`: the `--data-out` file, else a
//!    temporary file next to the output, removed at the end.
//! 2. The centre is found from that file (only the rows near the orbit's plane are read), and
//!    the FDK is computed from it out of core by the tool's pieces ([`crate::out_of_core`]:
//!    volume slabs × view groups, each under the limit), into the `.npy` output in place, or
//!    into a temporary `.npy` volume whose slices then go to the TIFF stack or the HDF5
//!    volume a slab at a time.
//!
//! The pieces add up to the whole transform, so the volume equals the in-memory scan's up to
//! the rounding of the sums. Iterative methods, `--paganin` (it filters whole frames) and a
//! 16-bit TIFF stack (scaled by the whole volume's range) are refused on this path with the
//! reason.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use ndarray::{s, ArrayView3, ArrayViewMut3};
use rodl::io::ScanGeometryOptions;
use rodl::memory::format_bytes;
use rodl::solvers::callback::ProgressBar;
use rodl::tomo::{FbpOptions, FilterType};

use crate::args::ScanArgs;
use crate::commands::{Compute, Setup};
use crate::io::{MappedOutput, NpyFile};
use crate::out_of_core::{self, Job};
use crate::output::{Outputs, WriteError};
use crate::scan_input::ScanInput;
use crate::scan_options::{TiffDepth, VolumeFormat};
use crate::scan_outputs::Prepared;
use crate::scan_slabs::{read_rows, slabs, with_halo, Pre, Preprocessing, Sink};
use crate::scan_steps::{centre_shift, shifted_json};
use crate::stages::Stages;
use crate::Failure;

/// What the cone scan out of core needs from `rodl scan`.
pub struct ConeScan<'a> {
    /// The command line.
    pub args: &'a ScanArgs,
    /// The detector rows reconstructed.
    pub rows: Range<usize>,
    /// FDK's filter.
    pub filter: FilterType,
    /// The volume's format.
    pub format: VolumeFormat,
    /// Where the pieces run.
    pub compute: &'a Compute,
    /// The memory limit (bytes): the smaller of `--memory` and the host's.
    pub limit: u64,
}

/// Why a cone scan cannot take the out-of-core path (`None`: it can), given that it does not
/// fit in memory.
pub fn refused(args: &ScanArgs, format: VolumeFormat, iterative: bool) -> Option<String> {
    if iterative {
        Some(format!(
            "{} keeps several copies of the data and the volume in memory; a cone scan beyond \
             the memory limit is reconstructed out of core by fbp (FDK) only",
            args.algorithm
        ))
    } else if args.paganin.0.is_some() {
        Some(
            "--paganin filters whole frames, which the out-of-core path of a cone scan (by rows) \
             does not hold"
                .into(),
        )
    } else if format == VolumeFormat::Tiff && args.tiff_depth == TiffDepth::Uint16 {
        Some(
            "--tiff-depth uint16 scales the slices by the whole volume's range; a cone scan \
             beyond the memory limit writes --tiff-depth float32, .npy or .h5"
                .into(),
        )
    } else {
        None
    }
}

/// The raw and preprocessed copies of a slab's rows that the first pass holds, per row.
const COPIES_PER_ROW: u128 = 3;

impl ConeScan<'_> {
    /// Runs the scan (see the module's documentation), writing the outputs of `prepared`.
    pub fn run(
        &self,
        mut input: ScanInput,
        prepared: Prepared,
        stages: &mut Stages,
    ) -> Result<(), Failure> {
        let args = self.args;
        let [nu, nv] = input.info.detector_shape;
        let n = input.projections.len();
        let rows = self.rows.clone();
        input.check_flats(args)?;
        let opts = ScanGeometryOptions {
            beam: rodl::io::BeamChoice::Cone,
            ..ScanGeometryOptions::default()
        };
        // The geometry without a shift: its values are checked before the data are read.
        let unshifted = input.info.geometry_spec(&opts)?;
        let Prepared {
            mut outputs,
            npy,
            geometry,
            data,
        } = prepared;
        // Temporary files that are not outputs: removed when this set is dropped.
        let mut scratch = Outputs::new();
        let (data_set, data_slot) = match data {
            Some(slot) => (Set::Outputs, slot),
            None => (
                Set::Scratch,
                scratch.prepare(&beside(&args.output, "line-integrals.npy"))?,
            ),
        };

        // Pass 1: the rows, preprocessed slab by slab into the file of line integrals.
        let pre = Pre::of(args);
        let halo = pre.halo();
        let row_bytes = n as u128 * nu as u128 * 4;
        let held = (input.flats.data.len() + input.darks.data.len()) as u128 * 4;
        let budget = (self.limit as u128).saturating_sub(held);
        let per =
            ((budget / (COPIES_PER_ROW * row_bytes).max(1)) as usize).saturating_sub(2 * halo);
        if per == 0 {
            return Err(Failure::new(format!(
                "one detector row of {n} views needs about {} to preprocess, more than the \
                 memory budget of {} (--memory, {})",
                format_bytes(COPIES_PER_ROW * row_bytes * (1 + 2 * halo as u128)),
                format_bytes(budget),
                rodl::memory::MEMORY_LIMIT_ENV
            )));
        }
        let (flats, darks, positions) = input.take_frames();
        let prep = Preprocessing {
            pre: &pre,
            flats: &flats,
            darks: &darks,
            positions: positions.as_deref(),
            source: &args.input,
        };
        let all = slabs(&rows, per);
        if args.verbose {
            crate::term::note(&format!(
                "rodl: the cone scan does not fit in the memory limit of {}: out of core, the \
                 rows preprocessed in {} slab{} of at most {per} rows into {}",
                format_bytes(self.limit as u128),
                all.len(),
                if all.len() == 1 { "" } else { "s" },
                match data_set {
                    Set::Outputs => format!("--data-out {}", shown(args.data_out.as_deref())),
                    Set::Scratch => "a temporary file".into(),
                }
            ));
        }
        let shape = [n, nu, rows.len()];
        let (mut read_s, mut pre_s, mut bad) = (0.0, 0.0, 0usize);
        let bar = if args.quiet {
            ProgressBar::hidden(all.len())
        } else {
            ProgressBar::new(all.len())
        };
        bar.inner().set_message("preprocessing");
        let stack = input.projections.as_mut();
        let fill = |file: &std::fs::File| -> Result<(), WriteError> {
            let mut map = MappedOutput::create::<f32>(file, &shape)?;
            let mut view = ArrayViewMut3::from_shape(shape, map.data_mut::<f32>()?)
                .map_err(|e| WriteError::Failure(Failure::new(format!("internal error: {e}"))))?;
            for keep in &all {
                let t = Instant::now();
                let read = with_halo(keep, halo, nv);
                let raw = read_rows(stack, read.clone()).map_err(WriteError::Failure)?;
                read_s += t.elapsed().as_secs_f64();
                let t = Instant::now();
                let (x, b) = prep.apply(raw, &read, keep).map_err(WriteError::Failure)?;
                let (a, z) = (keep.start - rows.start, keep.end - rows.start);
                view.slice_mut(s![.., .., a..z]).assign(&x);
                pre_s += t.elapsed().as_secs_f64();
                bad += b;
                bar.inner().inc(1);
            }
            map.flush()?;
            Ok(())
        };
        let why = "the preprocessed data of a cone scan out of core";
        let data_path = match data_set {
            Set::Outputs => {
                outputs.write_in_place(data_slot, why, fill)?;
                outputs.temp_path(data_slot)
            }
            Set::Scratch => {
                scratch.write_in_place(data_slot, why, fill)?;
                scratch.temp_path(data_slot)
            }
        }
        .map(Path::to_path_buf)
        .ok_or_else(|| Failure::new("internal error: the line integrals have no file"))?;
        bar.inner().finish_and_clear();
        stages.add("read", read_s);
        stages.add("preprocess", pre_s);
        if bad > 0 && !args.quiet {
            crate::term::note(&format!(
                "rodl: warning: {bad} pixels had a flat no brighter than the dark and were set \
                 to transmission 1"
            ));
        }
        let file = NpyFile::open(&data_path)?;
        let map = file.map()?;

        // The centre, from the rows near the orbit's plane of the file.
        let t = Instant::now();
        let view = ArrayView3::from_shape(shape, map.data::<f32>()?)
            .map_err(|e| Failure::new(format!("internal error: {e}")))?;
        let det_offset_px = centre_shift(args, view, &input.info.angles, &unshifted, true)?;
        stages.add("preprocess", t.elapsed().as_secs_f64());
        let json = shifted_json(&input.info, &opts, det_offset_px, rows.clone(), nv)?;
        let setup = Setup::from_text(&json)?;
        if let Some(slot) = geometry {
            outputs.write_bytes(slot, format!("{json}\n").as_bytes())?;
        }

        // Pass 2: FDK out of core, into the volume.
        let job = Job::Fbp(FbpOptions::new(self.filter));
        let (volume_outputs, volume_slot) = match (self.format, npy) {
            (VolumeFormat::Npy, Some(slot)) => (&mut outputs, slot),
            (VolumeFormat::Npy, None) => {
                return Err(Failure::new("internal error: no .npy output"));
            }
            _ => {
                let slot = scratch.prepare(&beside(&args.output, "volume.npy"))?;
                (&mut scratch, slot)
            }
        };
        let summary = out_of_core::run_within::<f32>(
            &setup,
            self.compute,
            &job,
            &map,
            volume_outputs,
            volume_slot,
            self.limit,
        )?;
        stages.add("compute", summary.seconds);
        drop(map);
        if args.verbose {
            crate::term::note(&format!("rodl: FDK {}", summary.describe()));
        }
        let volume_shape: [usize; 3] = match setup.volume_shape() {
            &[a, b, c] => [a, b, c],
            other => {
                return Err(Failure::new(format!(
                    "internal error: a volume of shape {other:?}"
                )))
            }
        };
        if self.format != VolumeFormat::Npy {
            let t = Instant::now();
            let path = scratch
                .temp_path(volume_slot)
                .map(Path::to_path_buf)
                .ok_or_else(|| Failure::new("internal error: the volume has no file"))?;
            self.write_slices(&path, &setup, volume_shape)?;
            stages.add("write", t.elapsed().as_secs_f64());
        }
        let t = Instant::now();
        outputs.commit()?;
        stages.add("write", t.elapsed().as_secs_f64());
        drop(scratch);
        if args.verbose {
            crate::term::note(&format!(
                "rodl: {} {:?} -> {} {:?} on {}: {}",
                args.algorithm,
                setup.data_shape(),
                args.output.display(),
                volume_shape,
                self.compute.device,
                stages.describe()
            ));
        }
        Ok(())
    }

    /// Writes the TIFF stack or the HDF5 volume from the `.npy` volume at `path`, a slab of
    /// slices at a time (as many as a tenth of the memory limit holds, twice).
    fn write_slices(&self, path: &Path, setup: &Setup, shape: [usize; 3]) -> Result<(), Failure> {
        let file = NpyFile::open(path)?;
        let map = file.map()?;
        let volume = ArrayView3::from_shape(shape, map.data::<f32>()?)
            .map_err(|e| Failure::new(format!("internal error: {e}")))?;
        let slice = (shape[0] * shape[1] * 4).max(1) as u64;
        let per = ((self.limit / 20) / slice).max(1) as usize;
        let across = rodl::distributed::Across::new(rodl::distributed::SingleRank);
        let mut sink = match self.format {
            VolumeFormat::Tiff => Sink::Tiff(rodl::io::TiffStackWriter::create(
                &self.args.output,
                "slice_",
                shape,
                rodl::io::TiffSliceFormat::F32,
            )?),
            #[cfg(feature = "hdf5")]
            VolumeFormat::H5 => {
                let w = rodl::io::Hdf5VolumeWriter::create(
                    &self.args.output,
                    &self.args.dataset,
                    &setup.spec.volume.space::<f32>()?,
                )?;
                crate::output::created_temporary(w.temporary_file());
                Sink::H5(Some(w))
            }
            _ => {
                let _ = setup;
                return Err(Failure::new(format!(
                    "internal error: slices of a {:?} volume",
                    self.format
                )));
            }
        };
        for z in slabs(&(0..shape[2]), per) {
            let slab = volume.slice(s![.., .., z.clone()]).to_owned();
            sink.write(&across, Some((z.start, slab)))?;
        }
        match sink {
            Sink::Tiff(w) => {
                w.commit()?;
            }
            #[cfg(feature = "hdf5")]
            Sink::H5(Some(w)) => w.commit()?,
            _ => {}
        }
        Ok(())
    }
}

/// Which set of files holds the line integrals.
#[derive(Clone, Copy)]
enum Set {
    /// The outputs (`--data-out`).
    Outputs,
    /// The scratch files.
    Scratch,
}

/// A path next to `output` for a scratch file: `OUTPUT.NAME` beside it (never written: only
/// its temporary file is, and removed).
fn beside(output: &Path, name: &str) -> PathBuf {
    let base = output
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| "rodl".into());
    output.with_file_name(format!("{base}.{name}"))
}

/// A path for a message.
fn shown(p: Option<&Path>) -> String {
    p.map(|p| p.display().to_string()).unwrap_or_default()
}
