//! `rodl scan` of a parallel beam by slabs of detector rows: the one pipeline that bounds the
//! memory by the budget on one process and splits the work over the ranks of an MPI job.
//!
//! In a parallel beam every detector row is a sinogram of its own, and the volume's slice at
//! that height is reconstructed from it alone: the rows asked for are cut into slabs of
//! consecutive rows, each read from the file alone (HDF5: one hyperslab per run of views;
//! TIFF: each page decoded and its rows kept), preprocessed (zingers with a halo of the rows
//! their window reaches, the flat field, −log and the stripes, all per row), reconstructed and
//! written into its place in the output. The slab's size is the largest that the memory
//! budget holds with the pipeline's buffers ([`rows_per_slab`]), and at most an
//! [`PIPELINE_SLABS`]-th of the rows (per rank) while slabs keep [`MIN_SLAB_BYTES`] of raw
//! rows, so that the stages overlap; `--slab-rows` sets it.
//!
//! Three threads overlap the stages: a reader reads slab `k + 1` while the compute thread
//! preprocesses and reconstructs slab `k` and the main thread writes slab `k − 1`, linked by
//! channels of one slab each, so that at most two raw slabs and two volume slabs wait.
//!
//! The centre of rotation is found once, before the slabs, from the central
//! [`CENTRE_ROWS`] rows of those asked for (all of them when there are fewer), preprocessed
//! the same way, so that every slab — and every rank — reconstructs with the same centre.
//!
//! Outputs are written slab by slab into temporary files that replace the targets only when
//! every slab is written: `.npy` through a memory map of the whole file (each slab's slices are
//! strided runs of it), a TIFF stack one temporary file per slice, HDF5 by hyperslabs of the
//! `[z, y, x]` dataset. An error in any slab leaves no output.
//!
//! Under MPI the slabs are shared out in contiguous runs (rank `r` the `r`-th run; a rank may
//! get none), each rank reads only its rows, and the ranks advance in rounds: in round `i`
//! each writes its `i`-th slab after all agree that it was computed (a failure anywhere ends
//! every rank with the failing rank's number). `.npy`: rank 0 creates the file with its header
//! and size, every rank writes its slices through its own map of it; TIFF: every rank writes
//! its slices' files; HDF5 (a serial libhdf5 has no parallel writes): the round's slabs are
//! gathered and rank 0 writes them. Rank 0 commits the outputs once all have written.

use std::ops::Range;
use std::path::Path;
use std::sync::mpsc::sync_channel;
use std::time::Instant;

use ndarray::{s, Array3, ArrayViewMut3, Axis, Ix3};
use rodl::distributed::Across;
use rodl::io::{FrameStack, Frames, TiffStackWriter};
use rodl::preprocess::{
    neg_log, remove_stripes_sorting, remove_zingers, FlatField, ZingerOptions, NEG_LOG_FLOOR,
};
use rodl::solvers::callback::ProgressBar;
use rodl::tomo::{fbp_op, FbpOptions, FilterType, TomoSpec};
use rodl::Operator;

use crate::algorithm::{reconstruct, Settings};
use crate::commands::{Compute, Setup};
use crate::Failure;

/// The rows the centre of rotation is found from: the central ones of those asked for.
pub const CENTRE_ROWS: usize = 32;

/// The slabs per rank that a scan is cut into by default, so that reading, computing and
/// writing overlap (fewer when slabs would hold less than [`MIN_SLAB_BYTES`]; more when the
/// memory budget needs them).
pub const PIPELINE_SLABS: usize = 8;

/// The least raw bytes of a slab cut for the pipeline's sake (smaller scans are one slab).
pub const MIN_SLAB_BYTES: usize = 16 << 20;

/// The most bytes of one read of a slab's rows (a run of views).
const READ_CHUNK_BYTES: usize = 64 << 20;

/// The per-row preprocessing steps.
#[derive(Clone, Debug)]
pub struct Pre {
    /// Zinger removal in the raw frames, flats and darks.
    pub zingers: Option<ZingerOptions>,
    /// Flat/dark normalisation.
    pub flat_field: bool,
    /// −log of the transmission.
    pub log: bool,
    /// Stripe removal (the median's width).
    pub stripes: Option<usize>,
}

impl Pre {
    /// The steps that the command line asks for.
    pub fn of(args: &crate::args::ScanArgs) -> Pre {
        Pre {
            zingers: args.zingers.0.map(|t| ZingerOptions::new(t as f32)),
            flat_field: args.flat_field,
            log: args.log,
            stripes: args.stripes.0,
        }
    }

    /// The rows beyond a slab's that its preprocessing reads: the zinger window's half side
    /// (the window reaches the neighbouring rows), else none.
    pub fn halo(&self) -> usize {
        self.zingers.map(|z| z.size / 2).unwrap_or(0)
    }
}

/// The rows `keep` with the halo `h` on each side, within `0..nv`.
pub fn with_halo(keep: &Range<usize>, h: usize, nv: usize) -> Range<usize> {
    keep.start.saturating_sub(h)..(keep.end + h).min(nv)
}

/// The central [`CENTRE_ROWS`] of `rows`.
pub fn centre_rows(rows: &Range<usize>) -> Range<usize> {
    let n = rows.len().min(CENTRE_ROWS);
    let a = rows.start + (rows.len() - n) / 2;
    a..a + n
}

/// The rows per slab that the memory `budget` (bytes) holds for `views` views of `nu`
/// columns and volume slices of `slice` voxels, the pipeline's buffers counted: two raw
/// slabs waiting or being read, the one computed (its data, their filtered copy or an
/// iterative method's vectors, the volume and its host copy) and two volume slabs waiting or
/// being written; `halo` rows more are read per slab.
pub fn rows_per_slab(
    views: usize,
    nu: usize,
    slice: usize,
    halo: usize,
    iterative: bool,
    budget: u128,
) -> Result<usize, Failure> {
    let data = views as u128 * nu as u128 * 4;
    let volume = slice as u128 * 4;
    let per_row = if iterative {
        5 * data + 7 * volume
    } else {
        4 * data + 5 * volume
    };
    let fit = (budget / per_row.max(1)) as usize;
    let fit = fit.saturating_sub(2 * halo);
    if fit == 0 {
        return Err(Failure::new(format!(
            "one detector row of {views} views needs about {} in the slab pipeline, more than \
             the memory budget of {} (--memory, {})",
            rodl::memory::format_bytes(per_row * (1 + 2 * halo as u128)),
            rodl::memory::format_bytes(budget),
            rodl::memory::MEMORY_LIMIT_ENV
        )));
    }
    Ok(fit)
}

/// Cuts `rows` into slabs of at most `per` rows.
pub fn slabs(rows: &Range<usize>, per: usize) -> Vec<Range<usize>> {
    let per = per.max(1);
    (rows.start..rows.end)
        .step_by(per)
        .map(|a| a..(a + per).min(rows.end))
        .collect()
}

/// Rank `rank`'s contiguous share of `n` slabs over `size` ranks (the first `n % size` ranks
/// one more).
pub fn share(n: usize, rank: usize, size: usize) -> Range<usize> {
    let size = size.max(1);
    let (q, r) = (n / size, n % size);
    let start = rank * q + rank.min(r);
    start..start + q + usize::from(rank < r)
}

/// Reads the rows `rows` of every view of `stack`, `[views, nu, rows]`.
pub fn read_rows(stack: &mut dyn FrameStack, rows: Range<usize>) -> Result<Array3<f32>, Failure> {
    let [nu, _] = stack.frame_shape();
    let n = stack.len();
    rodl::memory::check_host_array(&[n, nu, rows.len()], 4)?;
    let mut out = Array3::<f32>::zeros([n, nu, rows.len()]);
    let per = (READ_CHUNK_BYTES / (nu * rows.len() * 4).max(1)).max(1);
    let mut first = 0;
    while first < n {
        let k = per.min(n - first);
        stack.read_rows_into(
            first,
            rows.clone(),
            out.slice_mut(s![first..first + k, .., ..]),
        )?;
        first += k;
    }
    Ok(out)
}

/// What every slab's preprocessing needs besides its raw rows.
pub struct Preprocessing<'a> {
    /// The steps.
    pub pre: &'a Pre,
    /// The flat fields (every row).
    pub flats: &'a Frames,
    /// The dark fields (every row).
    pub darks: &'a Frames,
    /// Each projection's position among the flats' (NXtomo), for several flat groups.
    pub positions: Option<&'a [f64]>,
    /// The input, for messages.
    pub source: &'a Path,
}

impl Preprocessing<'_> {
    /// Preprocesses the raw rows `read` (`raw = [views, nu, read]`) and returns the rows
    /// `keep` (within `read`) as line integrals, with the number of pixels whose flat was no
    /// brighter than the dark.
    pub fn apply(
        &self,
        mut raw: Array3<f32>,
        read: &Range<usize>,
        keep: &Range<usize>,
    ) -> Result<(Array3<f32>, usize), Failure> {
        let pre = self.pre;
        if let Some(z) = &pre.zingers {
            remove_zingers(raw.view_mut(), z)?;
        }
        let mut bad = 0;
        if pre.flat_field {
            let crop = |f: &Frames| Frames {
                data: f.data.slice(s![.., .., read.clone()]).to_owned(),
                positions: f.positions.clone(),
            };
            let mut flats = crop(self.flats);
            let mut darks = crop(self.darks);
            if let Some(z) = &pre.zingers {
                remove_zingers(flats.data.view_mut(), z)?;
                remove_zingers(darks.data.view_mut(), z)?;
            }
            let ff = if darks.is_empty() {
                FlatField::without_darks(&flats)?
            } else {
                FlatField::new(&flats, &darks)?
            };
            bad = ff.apply(raw.view_mut(), self.positions)?.bad_pixels;
        }
        let (a, b) = (keep.start - read.start, keep.end - read.start);
        let mut data = if (a, b) == (0, raw.shape()[2]) {
            raw
        } else {
            raw.slice(s![.., .., a..b]).to_owned()
        };
        if pre.log {
            neg_log(data.view_mut(), NEG_LOG_FLOOR);
        }
        if let Some(width) = pre.stripes {
            remove_stripes_sorting(data.view_mut(), width)?;
        }
        if data.iter().any(|v| !v.is_finite()) {
            let view = data
                .axis_iter(Axis(0))
                .position(|v| v.iter().any(|x| !x.is_finite()))
                .unwrap_or(0);
            return Err(Failure::new(format!(
                "{}: the preprocessed data are not finite (first in view {view}, rows \
                 {}..{}): the file holds NaN or infinite values",
                self.source.display(),
                keep.start,
                keep.end
            )));
        }
        Ok((data, bad))
    }
}

/// How each slab is reconstructed.
pub struct Method<'a> {
    /// The whole detector's geometry and volume, the centre applied.
    pub spec: &'a TomoSpec,
    /// The detector's rows.
    pub nv: usize,
    /// Where.
    pub compute: &'a Compute,
    /// FBP's filter.
    pub filter: FilterType,
    /// An iterative method (`None`: FBP).
    pub settings: Option<&'a Settings>,
}

impl Method<'_> {
    /// The volume slab `[nx, ny, rows]` of the preprocessed `data = [views, nu, rows]`, and
    /// the seconds its set-up took.
    pub fn reconstruct(
        &self,
        data: Array3<f32>,
        rows: &Range<usize>,
    ) -> Result<(Array3<f32>, f64), Failure> {
        let t = Instant::now();
        let spec = crate::scan_steps::rows_spec(self.spec.clone(), rows.clone(), self.nv);
        let setup = Setup::from_text(&spec.to_json()?)?;
        let ray = self.compute.ray_transform::<f32>(&setup)?;
        let y = ray.range().element(data.into_dyn())?;
        let set_up = t.elapsed().as_secs_f64();
        let x = match self.settings {
            None => fbp_op(&ray, &FbpOptions::new(self.filter))?.apply(&y)?,
            Some(settings) => {
                let mut bar = ProgressBar::hidden(settings.iterations);
                reconstruct(&ray, &self.compute.backend, &y, settings, &mut bar)?.0
            }
        };
        drop(y);
        let host = x.into_host()?.into_array()?;
        crate::io::check_finite(
            &host.view(),
            "the reconstruction",
            crate::commands::OVERFLOW_HINT,
        )?;
        let host = host
            .into_dimensionality::<Ix3>()
            .map_err(|e| Failure::new(format!("internal error: the volume slab: {e}")))?;
        Ok((host, set_up))
    }
}

/// Where the slabs go.
pub enum Sink<'a> {
    /// The whole `.npy` volume `[nx, ny, nz]`, mapped: a slab's slices are written into it.
    Npy(ArrayViewMut3<'a, f32>),
    /// A TIFF stack (this rank's slices).
    Tiff(TiffStackWriter),
    /// An HDF5 volume that rank 0 writes (`None` on the other ranks: their slabs are
    /// gathered).
    #[cfg(feature = "hdf5")]
    H5(Option<rodl::io::Hdf5VolumeWriter>),
}

impl Sink<'_> {
    /// Collective: writes this rank's slab of this round (`z0`: its first slice in the
    /// output), if it has one.
    #[cfg_attr(not(feature = "hdf5"), allow(unused_variables))]
    pub fn write(
        &mut self,
        across: &Across,
        slab: Option<(usize, Array3<f32>)>,
    ) -> Result<(), Failure> {
        match self {
            Sink::Npy(volume) => {
                if let Some((z0, x)) = slab {
                    let k = x.shape()[2];
                    volume.slice_mut(s![.., .., z0..z0 + k]).assign(&x);
                }
                Ok(())
            }
            Sink::Tiff(w) => match slab {
                Some((z0, x)) => {
                    let before = w.written();
                    let written = w.write_slices(z0, x.view());
                    // A signal removes them (see `crate::output::install_signal_cleanup`).
                    for path in &w.temporary_files()[before..] {
                        crate::output::created_temporary(path);
                    }
                    Ok(written?)
                }
                None => Ok(()),
            },
            #[cfg(feature = "hdf5")]
            Sink::H5(w) => {
                let bytes = match &slab {
                    Some((z0, x)) => {
                        let mut b = Vec::with_capacity(16 + 4 * x.len());
                        b.extend_from_slice(&(*z0 as u64).to_le_bytes());
                        for d in x.shape() {
                            b.extend_from_slice(&(*d as u64).to_le_bytes());
                        }
                        for v in x.iter() {
                            b.extend_from_slice(&v.to_le_bytes());
                        }
                        b
                    }
                    None => Vec::new(),
                };
                let all = if across.size() == 1 {
                    // One process: no copy through the communicator.
                    return match (w, slab) {
                        (Some(w), Some((z0, x))) => Ok(w.write_slab(z0, x.view())?),
                        _ => Ok(()),
                    };
                } else {
                    across.comm().all_gather(&bytes)?
                };
                let Some(w) = w else { return Ok(()) };
                for b in all.iter().filter(|b| b.len() >= 32) {
                    let word = |i: usize| {
                        let mut a = [0u8; 8];
                        a.copy_from_slice(&b[8 * i..8 * i + 8]);
                        u64::from_le_bytes(a) as usize
                    };
                    let (z0, shape) = (word(0), [word(1), word(2), word(3)]);
                    let values: Vec<f32> = b[32..]
                        .chunks_exact(4)
                        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .collect();
                    let x = Array3::from_shape_vec(shape, values).map_err(|e| {
                        Failure::new(format!("internal error: a gathered slab: {e}"))
                    })?;
                    w.write_slab(z0, x.view())?;
                }
                Ok(())
            }
        }
    }
}

/// The seconds of each stage, summed over the slabs (they overlap in time).
#[derive(Clone, Copy, Debug, Default)]
pub struct Times {
    /// Reading the raw rows.
    pub read: f64,
    /// Preprocessing them.
    pub preprocess: f64,
    /// Building each slab's operators.
    pub set_up: f64,
    /// Reconstructing.
    pub compute: f64,
    /// Writing.
    pub write: f64,
    /// Pixels whose flat was no brighter than the dark.
    pub bad_pixels: usize,
}

/// This rank's slabs and the job's rounds.
pub struct Work {
    /// This rank's slabs (detector rows).
    pub mine: Vec<Range<usize>>,
    /// The rows of the output's first slice.
    pub first_row: usize,
    /// The most slabs of any rank.
    pub rounds: usize,
    /// Whether to show the progress bar (rank 0, not `--quiet`).
    pub bar: bool,
}

/// The agreed outcome of `local` on every rank (a failure names its rank when there are
/// several).
pub fn agree<V>(across: &Across, local: Result<V, Failure>) -> Result<V, Failure> {
    if across.size() == 1 {
        return local;
    }
    let rank = across.rank();
    let as_lib = local
        .as_ref()
        .map(|_| ())
        .map_err(|f| rodl::Error::Distributed {
            rank,
            message: f.message().to_string(),
        });
    across.agree(as_lib)?;
    local
}

/// Runs the pipeline over this rank's slabs (collective: every rank runs as many rounds),
/// writing into `sink`.
pub fn run(
    across: &Across,
    work: &Work,
    stack: &mut (dyn FrameStack + Send),
    prep: &Preprocessing<'_>,
    method: &Method<'_>,
    sink: &mut Sink<'_>,
) -> Result<Times, Failure> {
    let halo = prep.pre.halo();
    let nv = stack.frame_shape()[1];
    let bar = if work.bar {
        ProgressBar::new(work.rounds)
    } else {
        ProgressBar::hidden(work.rounds)
    };
    bar.inner().set_message("slabs");
    bar.inner()
        .enable_steady_tick(std::time::Duration::from_millis(250));
    type Slab = Result<(Range<usize>, Array3<f32>), Failure>;
    let outcome = std::thread::scope(|scope| -> Result<Times, Failure> {
        let (raw_tx, raw_rx) = sync_channel::<Slab>(1);
        let (vol_tx, vol_rx) = sync_channel::<Slab>(1);
        let mine = &work.mine;
        let reader = scope.spawn(move || {
            let mut seconds = 0.0;
            for keep in mine {
                let t = Instant::now();
                let read = with_halo(keep, halo, nv);
                let raw = read_rows(stack, read);
                seconds += t.elapsed().as_secs_f64();
                let failed = raw.is_err();
                if raw_tx.send(raw.map(|r| (keep.clone(), r))).is_err() || failed {
                    break;
                }
            }
            seconds
        });
        let worker = scope.spawn(move || {
            let mut times = Times::default();
            for got in raw_rx {
                let done = got.and_then(|(keep, raw)| {
                    let t = Instant::now();
                    let read = with_halo(&keep, halo, nv);
                    let (data, bad) = prep.apply(raw, &read, &keep)?;
                    times.preprocess += t.elapsed().as_secs_f64();
                    times.bad_pixels += bad;
                    let t = Instant::now();
                    let (x, set_up) = method.reconstruct(data, &keep)?;
                    times.set_up += set_up;
                    times.compute += t.elapsed().as_secs_f64() - set_up;
                    Ok((keep, x))
                });
                let failed = done.is_err();
                if vol_tx.send(done).is_err() || failed {
                    break;
                }
            }
            times
        });
        let mut write = 0.0;
        for round in 0..work.rounds {
            let got = if round < mine.len() {
                vol_rx
                    .recv()
                    .unwrap_or_else(|_| Err(Failure::new("internal error: a slab was lost")))
                    .map(Some)
            } else {
                Ok(None)
            };
            let got = agree(across, got)?;
            let t = Instant::now();
            let slab = got.map(|(keep, x)| (keep.start - work.first_row, x));
            let written = sink.write(across, slab);
            agree(across, written)?;
            write += t.elapsed().as_secs_f64();
            bar.inner().inc(1);
        }
        drop(vol_rx);
        let read = reader
            .join()
            .map_err(|_| Failure::new("internal error: the reader thread panicked"))?;
        let mut times = worker
            .join()
            .map_err(|_| Failure::new("internal error: the compute thread panicked"))?;
        times.read = read;
        times.write = write;
        Ok(times)
    });
    bar.inner().finish_and_clear();
    outcome
}

/// Whether this process was started by `mpirun`/`mpiexec` (Open MPI, MPICH, PMIx, Slurm's
/// PMI): then `rodl scan` runs by slabs over the job's ranks.
#[cfg(feature = "mpi")]
pub fn under_mpirun() -> bool {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_RANK",
        "MPI_LOCALNRANKS",
    ]
    .iter()
    .any(|k| std::env::var_os(k).is_some())
}
