//! `rodl`: the ray transform of rodl on `.npy` files.
//!
//! ```text
//! rodl project     --geometry G.json --input x.npy --output y.npy [--device cpu] [--threads N]
//! rodl backproject --geometry G.json --input y.npy --output x.npy [--device cpu] [--threads N]
//! rodl info        --geometry G.json
//! ```
//!
//! Errors are reported as one line on stderr (`rodl: error: …`) with a non-zero exit status;
//! an output file is written atomically, so a failed run leaves none behind.

mod commands;
mod io;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use commands::Direction;

/// Command line of `rodl`.
#[derive(Parser, Debug)]
#[command(
    name = "rodl",
    version,
    about = "Ray transform (forward and exact adjoint) of .npy volumes and projection data",
    after_help = "The geometry file describes the volume and the acquisition geometry, e.g.\n  \
{\"volume\": {\"min_pt\": [-1, -1], \"max_pt\": [1, 1], \"shape\": [64, 64]},\n   \
\"geometry\": {\"kind\": \"parallel2d\", \"angles\": {\"min\": 0, \"max\": 3.14159, \"count\": 90},\n   \
\"detector\": {\"min\": [-1.5], \"max\": [1.5], \"shape\": [95]}}}\n\
Kinds: parallel2d, fanflat, parallel3d, cone, vec. Inputs are float32 or float64 .npy files;\n\
the output has the input's precision."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Forward projection: line integrals of a volume, y = A x.
    Project(TransformArgs),
    /// Back-projection with the exact adjoint of `project`: x = A* y.
    Backproject(TransformArgs),
    /// Print the geometry kind and the volume and data shapes of a geometry file.
    Info {
        /// The geometry file (JSON).
        #[arg(long, short, value_name = "G.json")]
        geometry: PathBuf,
    },
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
    /// Compute device: `cpu`, `cuda` or `cuda:N`.
    #[arg(long, default_value = "cpu", value_name = "DEVICE")]
    pub device: String,
    /// Worker threads of the CPU backend (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Report precision, shapes and the compute time on stderr.
    #[arg(long, short)]
    pub verbose: bool,
}

/// A failure reported to the user as one line.
#[derive(Debug)]
pub struct Failure {
    message: String,
}

impl Failure {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
        }
    }

    /// `"{action} {path}: {err}"`, for I/O errors.
    pub fn io(action: &str, path: &Path, err: &std::io::Error) -> Self {
        Failure::new(format!("{action} {}: {err}", path.display()))
    }
}

impl From<rodl::Error> for Failure {
    fn from(e: rodl::Error) -> Self {
        Failure::new(e.to_string())
    }
}

/// Joins a possibly multi-line message into one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The essential part of a clap error: its text up to the first blank line, without the
/// `error:` prefix.
fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let head = text.split("\n\n").next().unwrap_or(&text);
    let head = head.trim();
    one_line(head.strip_prefix("error:").unwrap_or(head))
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Project(args) => commands::transform(&args, Direction::Forward),
        Command::Backproject(args) => commands::transform(&args, Direction::Adjoint),
        Command::Info { geometry } => commands::info(&geometry),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            eprintln!("rodl: error: {} (see `rodl --help`)", clap_message(&e));
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("rodl: error: {}", one_line(&f.message));
            ExitCode::FAILURE
        }
    }
}
