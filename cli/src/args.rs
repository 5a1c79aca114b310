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
    /// PNG picture.
    #[command(flatten)]
    pub image: ImageArgs,
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
