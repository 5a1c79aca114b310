//! `rodl`: tomography with rodl on `.npy` files.
//!
//! ```text
//! rodl demo        [--output-dir DIR] [--size N] [--device D]
//! rodl phantom     --geometry G.json --output x.npy [--kind K] [--png x.png]
//! rodl project     --geometry G.json --input x.npy --output y.npy [--noise MODEL --seed N]
//! rodl backproject --geometry G.json --input y.npy --output x.npy
//! rodl fbp         --geometry G.json --input y.npy --output x.npy [--filter F] [--png x.png]
//! rodl reconstruct --geometry G.json --input y.npy --output x.npy --algorithm A --iterations N
//! rodl scan        IN (scan.nxs | scan.h5 | tiff-folder) -o OUT [--format npy|tiff|h5] [--algorithm A]
//! rodl info        --geometry G.json
//! ```
//!
//! Errors are reported as one line on stderr (`rodl: error: …`); the exit status is 2 for a
//! usage error (an option or its value) and 1 for any other failure. A closed standard output
//! (broken pipe) ends the command quietly with status 1. The output files of a command are
//! written as one unit: all of them or none (see [`output`]).

mod algorithm;
mod args;
mod commands;
mod coverage;
mod fbp_options;
#[cfg(test)]
mod fuzz;
mod image;
mod io;
mod limits;
mod noise;
mod out_of_core;
mod output;
mod scan_cone;
mod scan_input;
mod scan_options;
mod scan_outputs;
mod scan_slabs;
mod scan_steps;
mod stages;
mod streamed;
mod term;

use std::path::Path;
use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};
use commands::transform::Direction;

/// How a failure ends the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// A usage error (an option or its value): status 2.
    Usage,
    /// Any other failure: status 1.
    Error,
    /// Standard output was closed by its reader: no message, status 1.
    BrokenPipe,
}

/// A failure reported to the user as one line.
#[derive(Debug)]
pub struct Failure {
    message: String,
    exit: Exit,
}

impl Failure {
    /// A failure with this message (exit status 1).
    pub fn new(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            exit: Exit::Error,
        }
    }

    /// The message.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn message(&self) -> &str {
        &self.message
    }

    /// A usage error: an option or its value is wrong (exit status 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            exit: Exit::Usage,
        }
    }

    /// Standard output is a closed pipe: the command ends quietly.
    pub fn broken_pipe() -> Self {
        Failure {
            message: String::new(),
            exit: Exit::BrokenPipe,
        }
    }

    /// `"{action} {path}: {err}"`, for I/O errors.
    pub fn io(action: &str, path: &Path, err: &std::io::Error) -> Self {
        Failure::new(format!("{action} {}: {}", path.display(), io_message(err)))
    }
}

/// An I/O error's message without the OS error number (`No space left on device`).
pub fn io_message(err: &std::io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// The message of a library error without the prefix of its kind ("invalid argument: ",
/// "invalid configuration: ", …), which would stack with the command's own context.
pub fn error_message(e: &rodl::Error) -> String {
    match e {
        rodl::Error::InvalidArgument(m) | rodl::Error::Config(m) | rodl::Error::Geometry(m) => {
            m.strip_prefix("partition: ").unwrap_or(m).to_string()
        }
        rodl::Error::Io { path, message } => format!("{}: {message}", path.display()),
        e => e.to_string(),
    }
}

impl From<rodl::Error> for Failure {
    fn from(e: rodl::Error) -> Self {
        Failure::new(error_message(&e))
    }
}

/// Joins a possibly multi-line message into one line, and writes numbers of more than 12
/// digits in scientific notation (`1e308`, not 309 digits) — except in quoted words, which
/// repeat what the user typed.
fn one_line(text: &str) -> String {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|w| {
            if w.contains(['\'', '"', '`']) {
                w.to_string()
            } else {
                shorten_numbers(w)
            }
        })
        .collect();
    words.join(" ")
}

/// Rewrites every run of more than 12 digits (with an optional fraction) in `word` as
/// `{:e}` with at most 6 significant digits.
fn shorten_numbers(word: &str) -> String {
    let bytes = word.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                i += 1;
            }
            let run = &word[start..i];
            let digits = run.bytes().filter(u8::is_ascii_digit).count();
            match run.trim_end_matches('.').parse::<f64>() {
                Ok(x) if digits > 12 && run.matches('.').count() <= 1 => {
                    let short = format!("{x:.5e}");
                    let (mantissa, exp) = short.split_once('e').unwrap_or((&short, "0"));
                    let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
                    out.push_str(&format!("{mantissa}e{exp}"));
                    if run.ends_with('.') {
                        out.push('.');
                    }
                }
                _ => out.push_str(run),
            }
        } else {
            let c = word[i..].chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
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
        Command::Scan(args) => commands::scan::run(&args),
        Command::Info { geometry } => commands::info::run(&geometry),
    }
}

/// Reports `failure` on stderr (errors writing it are ignored: there is nowhere else to say
/// it) and returns its exit status.
fn report(failure: &Failure) -> ExitCode {
    match failure.exit {
        Exit::BrokenPipe => ExitCode::FAILURE,
        exit => {
            term::error_line(&format!("rodl: error: {}", one_line(&failure.message)));
            ExitCode::from(if exit == Exit::Usage { 2 } else { 1 })
        }
    }
}

fn main() -> ExitCode {
    stages::mark_process_start();
    output::install_signal_cleanup();
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
                let text = e.render().to_string();
                if e.use_stderr() {
                    term::error_line(text.trim_end());
                    return ExitCode::from(2);
                }
                return match term::print(&text) {
                    Ok(()) if e.exit_code() == 0 => ExitCode::SUCCESS,
                    Ok(()) => ExitCode::from(2),
                    Err(f) => report(&f),
                };
            }
            return report(&Failure::usage(format!(
                "{} (see `rodl --help`)",
                clap_message(&e)
            )));
        }
    };
    // `--verbose`: the time at the end of `main`, after the outputs' commit and every drop,
    // so that a timing can tell those from the process's start and exit.
    let verbose = std::env::args_os()
        .skip(1)
        .any(|a| a == "-v" || a == "--verbose");
    match run(cli) {
        Ok(()) => {
            if let (true, Some(t)) = (verbose, stages::since_process_start()) {
                term::note(&format!("rodl: end of main at {t:.3} s"));
            }
            ExitCode::SUCCESS
        }
        Err(f) => report(&f),
    }
}
