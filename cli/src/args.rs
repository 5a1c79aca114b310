//! The command line of `rodl`: subcommands and their arguments (clap).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::algorithm::Algorithm;
use crate::image::ImageArgs;
use crate::limits::{
    parse_iterations, parse_non_negative, parse_positive, parse_seed, parse_threads,
    parse_unit_fraction,
};
use crate::noise::Noise;
use crate::scan_options::{CentreArg, OffOr, ScanAlgorithm, VolumeFormat};

/// Command line of `rodl`.
#[derive(Parser, Debug)]
#[command(
    name = "rodl",
    version,
    about = "Tomography on .npy files: phantoms, projection, back-projection, FBP/FDK and \
             iterative reconstruction, on the CPU or a GPU",
    after_help = "Start with `rodl demo` (no arguments). The geometry file describes the volume \
and the acquisition geometry, e.g.\n  \
{\"volume\": {\"min_pt\": [-1, -1], \"max_pt\": [1, 1], \"shape\": [64, 64]},\n   \
\"geometry\": {\"kind\": \"parallel2d\", \"angles\": {\"min\": 0, \"max\": 3.14159, \"count\": 90},\n   \
\"detector\": {\"min\": [-1.5], \"max\": [1.5], \"shape\": [95]}}}\n\
Kinds: parallel2d, fanflat, parallel3d, cone, vec. Inputs are float32 or float64 .npy files;\n\
the output has the input's precision."
)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Simulate a noisy Shepp–Logan scan, reconstruct it with FBP and iteratively, and report
    /// PSNR, SSIM and timings (writes PNGs and a summary).
    Demo(DemoArgs),
    /// Write a Shepp–Logan phantom on the geometry file's volume.
    Phantom(PhantomArgs),
    /// Forward projection: line integrals of a volume, y = A x (optionally with noise).
    Project(ProjectArgs),
    /// Back-projection with the exact adjoint of `project`: x = A* y.
    Backproject(TransformArgs),
    /// Filtered back-projection (FBP; FDK for cone beams).
    Fbp(FbpArgs),
    /// Iterative reconstruction (CGLS, SIRT, MLEM, OSEM, Landweber, PDHG-TV, FISTA-TV) with a
    /// progress bar.
    Reconstruct(ReconstructArgs),
    /// Scanner data to a volume: read a TIFF stack, NXtomo or DXchange file, normalise by the
    /// flats and darks, take −log, remove zingers and stripes, find the centre of rotation,
    /// reconstruct and write the volume (.npy, TIFF stack or HDF5).
    Scan(Box<ScanArgs>),
    /// Describe a geometry file: shapes, sampling and detector coverage of the volume.
    Info {
        /// The geometry file (JSON).
        #[arg(long, short, value_name = "G.json")]
        geometry: PathBuf,
    },
}

/// Where to compute.
#[derive(Args, Debug, Clone)]
pub struct DeviceArgs {
    /// Compute device: `cpu`, `cuda` (GPU 0; `gpu` is the same) or `cuda:N` (GPU N; also
    /// `gpu:N`). Without a usable GPU, `cuda` is an error.
    #[arg(
        long,
        default_value = "cpu",
        value_name = "DEVICE",
        allow_hyphen_values = true
    )]
    pub device: String,
    /// Worker threads of the CPU backend (default: one per core; at most 4 per core).
    #[arg(long, value_name = "N", value_parser = parse_threads, allow_negative_numbers = true)]
    pub threads: Option<usize>,
}

/// Arguments of `project` and `backproject`.
#[derive(Args, Debug)]
pub struct TransformArgs {
    /// The geometry file (JSON): volume and acquisition geometry.
    #[arg(long, short, value_name = "G.json")]
    pub geometry: PathBuf,
    /// The input array (.npy, float32 or float64).
    #[arg(long, short, value_name = "IN.npy")]
    pub input: PathBuf,
    /// Where to write the result (.npy, same precision as the input).
    #[arg(long, short, value_name = "OUT.npy")]
    pub output: PathBuf,
    /// Where to compute.
    #[command(flatten)]
    pub compute: DeviceArgs,
    /// Compute in pieces with the input and output memory-mapped, even when they fit in memory
    /// (this happens by itself when they do not: see `RODL_MEMORY_LIMIT`).
    #[arg(long)]
    pub out_of_core: bool,
    /// Stream the projection data through the transform in this many groups of views, so
    /// that reading them (`backproject`, `fbp`) or writing them (`project`) overlaps the
    /// computation; 1 turns streaming off. Default: on a GPU groups of about 64 MiB, and no
    /// streaming for data under 128 MiB; on the CPU no streaming.
    #[arg(long, value_name = "N")]
    pub view_groups: Option<usize>,
    /// Report precision, shapes and the compute time on stderr.
    #[arg(long, short)]
    pub verbose: bool,
}

/// Arguments of `project`.
#[derive(Args, Debug)]
pub struct ProjectArgs {
    /// Input, output and device.
    #[command(flatten)]
    pub transform: TransformArgs,
    /// Add simulated noise to the projections: `gaussian:REL` (noise norm = REL × data norm,
    /// e.g. gaussian:0.05) or `poisson:PHOTONS` (transmission counts with PHOTONS incident
    /// photons per pixel, returned as line integrals, e.g. poisson:1e4).
    #[arg(long, value_name = "MODEL", allow_hyphen_values = true)]
    pub noise: Option<Noise>,
    /// Seed of the noise (the same seed gives the same noise).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "noise",
          value_parser = parse_seed, allow_negative_numbers = true)]
    pub seed: u64,
}

/// The phantoms of `rodl phantom`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PhantomKind {
    /// Shepp and Logan's original (low-contrast) phantom.
    SheppLogan,
    /// Toft's contrast-enhanced phantom (ODL's `modified=True`).
    ModifiedSheppLogan,
}

/// Precision of a written array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DtypeArg {
    /// 32-bit floats.
    Float32,
    /// 64-bit floats.
    Float64,
}

/// Arguments of `phantom`.
#[derive(Args, Debug)]
pub struct PhantomArgs {
    /// The geometry file (JSON); only its volume is used (2D or 3D).
    #[arg(long, short, value_name = "G.json")]
    pub geometry: PathBuf,
    /// Where to write the phantom (.npy).
    #[arg(long, short, value_name = "OUT.npy")]
    pub output: PathBuf,
    /// Which phantom (ODL's ellipses, scaled to the volume as ODL does).
    #[arg(long, value_enum, default_value = "modified-shepp-logan")]
    pub kind: PhantomKind,
    /// Precision of the output.
    #[arg(long, value_enum, default_value = "float32")]
    pub dtype: DtypeArg,
    /// PNG picture.
    #[command(flatten)]
    pub image: ImageArgs,
}

/// Arguments of `fbp`.
#[derive(Args, Debug)]
pub struct FbpArgs {
    /// The geometry file (JSON).
    #[arg(long, short, value_name = "G.json")]
    pub geometry: PathBuf,
    /// The projection data (.npy, [angle, u] or [angle, u, v]).
    #[arg(long, short, value_name = "IN.npy")]
    pub input: PathBuf,
    /// Where to write the reconstruction (.npy, same precision as the input).
    #[arg(long, short, value_name = "OUT.npy")]
    pub output: PathBuf,
    /// The filter: ram-lak, shepp-logan, cosine, hamming or hann.
    #[arg(
        long,
        default_value = "ram-lak",
        value_name = "FILTER",
        allow_hyphen_values = true
    )]
    pub filter: String,
    /// Relative cut-off frequency in (0, 1] (1: the detector's Nyquist frequency).
    #[arg(long, default_value_t = 1.0, value_name = "F", value_parser = parse_unit_fraction,
          allow_negative_numbers = true)]
    pub frequency_scaling: f64,
    /// Zero-pad detector rows before filtering (`--padding false` for a circular
    /// convolution).
    #[arg(long, value_name = "BOOL", default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    pub padding: bool,
    /// Redundancy (Parker) weights for scans shorter than a full turn: the transition
    /// parameter Q in (0, 1], or `off`.
    #[arg(
        long,
        value_name = "Q|off",
        default_value = "1",
        allow_hyphen_values = true
    )]
    pub parker: String,
    /// Where to compute.
    #[command(flatten)]
    pub compute: DeviceArgs,
    /// Compute in pieces with the input and output memory-mapped, even when they fit in memory
    /// (this happens by itself when they do not: see `RODL_MEMORY_LIMIT`).
    #[arg(long)]
    pub out_of_core: bool,
    /// Stream the projection data through the transform in this many groups of views, so
    /// that reading them (`backproject`, `fbp`) or writing them (`project`) overlaps the
    /// computation; 1 turns streaming off. Default: on a GPU groups of about 64 MiB, and no
    /// streaming for data under 128 MiB; on the CPU no streaming.
    #[arg(long, value_name = "N")]
    pub view_groups: Option<usize>,
    /// PNG picture.
    #[command(flatten)]
    pub image: ImageArgs,
    /// Under `mpirun -np N` (built with the feature `mpi`): `views` splits the views over the
    /// ranks (each reads and filters only its views; the back-projections are summed, rank 0
    /// writes); `slabs` (parallel beam) gives each rank a slab of the volume along z, which it
    /// reconstructs from the detector rows its rays reach alone (rank 0 writes).
    #[cfg(feature = "mpi")]
    #[arg(long, value_enum, value_name = "PARTITION")]
    pub partition: Option<PartitionArg>,
    /// Report shapes and the compute time on stderr.
    #[arg(long, short)]
    pub verbose: bool,
}

/// Arguments of `reconstruct`.
#[derive(Args, Debug)]
pub struct ReconstructArgs {
    /// The geometry file (JSON).
    #[arg(long, short, value_name = "G.json")]
    pub geometry: PathBuf,
    /// The projection data (.npy, [angle, u] or [angle, u, v]).
    #[arg(long, short, value_name = "IN.npy")]
    pub input: PathBuf,
    /// Where to write the reconstruction (.npy, same precision as the input).
    #[arg(long, short, value_name = "OUT.npy")]
    pub output: PathBuf,
    /// The method.
    #[arg(long, short, value_enum, value_name = "ALGORITHM")]
    pub algorithm: Algorithm,
    /// Number of iterations (OSEM: passes over all subsets), 1 ..= 100000.
    #[arg(long, short = 'n', value_name = "N", value_parser = parse_iterations,
          allow_negative_numbers = true)]
    pub iterations: usize,
    /// OSEM: number of view subsets (default 10, at most the number of views).
    #[arg(long, value_name = "K", value_parser = parse_positive, allow_negative_numbers = true)]
    pub subsets: Option<usize>,
    /// SIRT: clamp the iterate to x ≥ 0 after each update.
    #[arg(long)]
    pub nonnegative: bool,
    /// pdhg-tv, fista-tv: the weight λ of the total variation in ½‖Ax − y‖² + λ TV(x)
    /// (larger: smoother). Both terms are integrals (weighted spaces), so λ does not change
    /// with the grids' resolutions; it scales with the data (y → c·y: λ → c·λ) and with the
    /// noise level. A weight λₛ of plain sums ½Σ(Ax − y)² + λₛΣ|Dx| is λₛ·w_data·h/w_volume
    /// here (`rodl info` prints both weights). `rodl demo`: λ = 0.01.
    #[arg(long, value_name = "λ", value_parser = parse_non_negative,
          allow_negative_numbers = true)]
    pub tv_weight: Option<f64>,
    /// Where to compute.
    #[command(flatten)]
    pub compute: DeviceArgs,
    /// PNG picture.
    #[command(flatten)]
    pub image: ImageArgs,
    /// Under `mpirun -np N` (built with the feature `mpi`): split the work over the ranks by
    /// views (the volume on every rank) or by slabs of the volume along z (each rank its slab
    /// and its detector rows); each rank reads only its share of the input, rank 0 writes
    /// the output. cgls, sirt and landweber.
    #[cfg(feature = "mpi")]
    #[arg(long, value_enum, value_name = "PARTITION")]
    pub partition: Option<PartitionArg>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Report shapes, iterations and the compute time on stderr.
    #[arg(long, short)]
    pub verbose: bool,
}

/// Arguments of `demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Folder for the PNGs, the data and the summary (created if missing).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub output_dir: PathBuf,
    /// Image size N (an N × N phantom), 16 ..= 4096.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = parse_size,
          allow_negative_numbers = true)]
    pub size: usize,
    /// Compute device: `cpu`, `cuda` (or `gpu`), `cuda:N` (default: GPU 0 when one is
    /// usable, else the CPU).
    #[arg(long, value_name = "DEVICE", allow_hyphen_values = true)]
    pub device: Option<String>,
    /// No progress bars.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The demo's smallest image size (SSIM's window needs 11 samples per axis, plus margins).
pub const MIN_SIZE: usize = 16;
/// The demo's largest image size (the demo is meant to be quick).
pub const MAX_SIZE: usize = 4096;

/// `demo --size N`: the demo's documented range.
fn parse_size(text: &str) -> Result<usize, String> {
    crate::limits::whole_in(text, MIN_SIZE as u64, MAX_SIZE as u64).map(|n| n as usize)
}

/// `--memory BYTES`: a size with an optional suffix `K`, `M`, `G`, `T` (powers of 1024).
fn parse_memory(text: &str) -> Result<u64, String> {
    match rodl::memory::parse_bytes(text) {
        Some(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "expected a size in bytes > 0 such as 512M or 8G, got {text:?}"
        )),
    }
}

/// Arguments of `scan`.
#[derive(Args, Debug)]
pub struct ScanArgs {
    /// The scan: an NXtomo (.nx, .nxs, .h5) or DXchange (.h5) file, a folder of TIFF files, or a
    /// pattern of TIFF files (`proj_*.tif`).
    #[arg(value_name = "IN")]
    pub input: PathBuf,
    /// Where to write the volume: a `.npy` file, an `.h5`/`.hdf5`/`.nxs` file, or a folder for
    /// a TIFF stack (see --format).
    #[arg(long, short, value_name = "OUT")]
    pub output: PathBuf,
    /// The output format (default: from the output's name — `.npy`, `.h5`/`.hdf5`/`.nxs`, else
    /// a TIFF stack in the folder OUT).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<VolumeFormat>,
    /// TIFF stacks: 32-bit floats, or 16 bit scaled to the volume's range (the scale is in
    /// each file's ImageDescription).
    #[arg(long, value_name = "float32|uint16", default_value = "float32")]
    pub tiff_depth: crate::scan_options::TiffDepth,
    /// HDF5 output: the dataset written ([z, y, x], float32).
    #[arg(long, value_name = "PATH", default_value = rodl::io::VOLUME_DATASET)]
    pub dataset: String,
    /// NXtomo: the NXentry to read (default: the file's only NXtomo entry).
    #[arg(long, value_name = "NAME")]
    pub entry: Option<String>,
    /// TIFF input: the flat fields (a folder, pattern or file of TIFF frames).
    #[arg(long, value_name = "FLATS")]
    pub flats: Option<PathBuf>,
    /// TIFF input: the dark fields (a folder, pattern or file of TIFF frames).
    #[arg(long, value_name = "DARKS")]
    pub darks: Option<PathBuf>,
    /// The rotation angles in degrees, `START:STOP` with the endpoint excluded (a TIFF stack
    /// records none; default 0:180 for TIFF), or a text file of one angle per line. Overrides
    /// the file's angles.
    #[arg(long, value_name = "START:STOP|FILE", allow_hyphen_values = true)]
    pub angles: Option<String>,
    /// The beam: `auto` (a cone when the file records a source distance), `parallel` or `cone`.
    #[arg(long, value_enum, default_value = "auto")]
    pub beam: crate::scan_options::BeamArg,
    /// The detector's pixel size in mm (both axes; overrides the file's). For a parallel beam
    /// this is the pixel size in the sample.
    #[arg(long, value_name = "MM", value_parser = parse_length)]
    pub pixel_size: Option<f64>,
    /// Cone beam: the source to rotation-axis distance in mm (overrides the file's).
    #[arg(long, value_name = "MM", value_parser = parse_length)]
    pub source_distance: Option<f64>,
    /// Cone beam: the rotation-axis to detector distance in mm (overrides the file's).
    #[arg(long, value_name = "MM", value_parser = parse_length)]
    pub detector_distance: Option<f64>,
    /// Flat/dark normalisation (`--flat-field false`: the data are already transmission or,
    /// with `--log false`, line integrals).
    #[arg(long, value_name = "BOOL", default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    pub flat_field: bool,
    /// −log of the transmission, clamped below at 1e-6 (`--log false`: the data are line
    /// integrals already).
    #[arg(long, value_name = "BOOL", default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    pub log: bool,
    /// Zinger removal in the raw frames, flats and darks: pixels more than T counts above the
    /// median of their 3 × 3 neighbourhood are replaced by it; `off` (the default) keeps them.
    #[arg(long, value_name = "T|off", default_value = "off")]
    pub zingers: OffOr<f64>,
    /// Stripe (ring) removal by sorting (Vo et al. 2018) with a median of this odd width
    /// across the detector, on the line integrals; `off` (the default) keeps them.
    #[arg(long, value_name = "WIDTH|off", default_value = "off")]
    pub stripes: OffOr<usize>,
    /// Single-material phase retrieval (Paganin et al. 2002) with this δ/β, on the
    /// transmission before −log (needs --energy; the propagation distance is the file's
    /// detector distance unless --propagation-distance is given, the pixel size the file's or
    /// --pixel-size; a cone beam's magnification is applied); `off` (the default) skips it.
    /// TomoPy's `alpha` is 1/δ/β.
    #[arg(long, value_name = "DELTA_BETA|off", default_value = "off")]
    pub paganin: OffOr<f64>,
    /// Phase retrieval: the X-ray energy in keV (default: the NXtomo file's
    /// `instrument/beam/incident_energy`).
    #[arg(long, value_name = "KEV", value_parser = parse_energy)]
    pub energy: Option<f64>,
    /// Phase retrieval: the sample-to-detector propagation distance in mm (default: the
    /// file's detector distance, or --detector-distance).
    #[arg(long, value_name = "MM", value_parser = parse_length)]
    pub propagation_distance: Option<f64>,
    /// The centre of rotation: `auto` (found from two opposite views in a parallel beam, from
    /// all pairs of opposite rays near the orbit's plane in a circular cone beam), `off` (the
    /// detector's centre), or a detector shift in pixels.
    #[arg(
        long,
        value_name = "auto|off|PIXELS",
        default_value = "auto",
        allow_hyphen_values = true
    )]
    pub centre: CentreArg,
    /// The reconstruction method.
    #[arg(long, short, value_enum, default_value = "fbp")]
    pub algorithm: ScanAlgorithm,
    /// Iterations of an iterative method.
    #[arg(long, short = 'n', value_name = "N", value_parser = parse_iterations,
          allow_negative_numbers = true)]
    pub iterations: Option<usize>,
    /// pdhg-tv, fista-tv: the weight λ of the total variation (see `rodl reconstruct --help`).
    #[arg(long, value_name = "λ", value_parser = parse_non_negative,
          allow_negative_numbers = true)]
    pub tv_weight: Option<f64>,
    /// FBP: the filter (ram-lak, shepp-logan, cosine, hamming, hann).
    #[arg(long, default_value = "ram-lak", value_name = "FILTER")]
    pub filter: String,
    /// Only the detector rows `A:B` (0 the image's bottom row, B excluded), reconstructed as
    /// the matching slab of the volume.
    #[arg(long, value_name = "A:B")]
    pub rows: Option<crate::scan_options::RowRange>,
    /// The memory budget, e.g. `512M` or `8G` (default: the available memory, or
    /// RODL_MEMORY_LIMIT): a parallel beam's rows are read, preprocessed, reconstructed and
    /// written in slabs that fit in it; a cone beam's FDK beyond it runs out of core (through
    /// a file of line integrals); what else is reconstructed whole (--paganin, --data-out, an
    /// iterative method on a cone beam) must fit in it.
    #[arg(long, value_name = "BYTES", value_parser = parse_memory)]
    pub memory: Option<u64>,
    /// Parallel beam: at most N detector rows per slab (default: as many as --memory holds).
    #[arg(long, value_name = "N", value_parser = crate::limits::parse_positive)]
    pub slab_rows: Option<usize>,
    /// Also write the geometry used (rodl's geometry JSON, the centre as a detector shift), to
    /// rerun `rodl fbp` / `rodl reconstruct` on the data of --data-out.
    #[arg(long, value_name = "G.json")]
    pub geometry_out: Option<PathBuf>,
    /// Also write the preprocessed projection data (line integrals, [angle, u, v], float32).
    #[arg(long, value_name = "DATA.npy")]
    pub data_out: Option<PathBuf>,
    /// Where to compute.
    #[command(flatten)]
    pub compute: DeviceArgs,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Report each stage's time (read, preprocess, set-up, compute, write) and the centre.
    #[arg(long, short)]
    pub verbose: bool,
}

/// An X-ray energy in keV: a finite number > 0.
fn parse_energy(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("expected an energy in keV > 0, got {text:?}")),
    }
}

/// A length in mm: a finite number > 0.
fn parse_length(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("expected a length in mm > 0, got {text:?}")),
    }
}

/// How `rodl reconstruct --partition` splits the work over the ranks of an MPI job.
#[cfg(feature = "mpi")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PartitionArg {
    /// Each rank its views; the volume on every rank.
    Views,
    /// Each rank a slab of the volume along z and its detector rows.
    Slabs,
}
