//! `rodl`: tomography with rodl on `.npy` files.
//!
//! ```text
//! rodl demo        [--output-dir DIR] [--size N] [--device D]
//! rodl phantom     --geometry G.json --output x.npy [--kind K] [--png x.png]
//! rodl project     --geometry G.json --input x.npy --output y.npy [--noise MODEL --seed N]
//! rodl backproject --geometry G.json --input y.npy --output x.npy
//! rodl fbp         --geometry G.json --input y.npy --output x.npy [--filter F] [--png x.png]
//! rodl reconstruct --geometry G.json --input y.npy --output x.npy --algorithm A --iterations N
//! rodl info        --geometry G.json
//! ```
//!
//! Errors are reported as one line on stderr (`rodl: error: …`) with a non-zero exit status;
//! output files are written atomically, so a failed run leaves none behind.

mod algorithm;
mod args;
mod commands;
mod coverage;
mod image;
mod io;
mod noise;

use std::path::Path;
use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};
use commands::transform::Direction;

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
        Command::Demo(args) => commands::demo::run(&args),
        Command::Phantom(args) => commands::phantom::run(&args),
        Command::Project(args) => commands::transform::run(
            &args.transform,
            Direction::Forward,
            args.noise.map(|n| (n, args.seed)),
        ),
        Command::Backproject(args) => commands::transform::run(&args, Direction::Adjoint, None),
        Command::Fbp(args) => commands::fbp::run(&args),
        Command::Reconstruct(args) => commands::reconstruct::run(&args),
        Command::Info { geometry } => commands::info::run(&geometry),
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
