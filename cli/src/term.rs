//! The terminal streams without panics: `println!` and `eprintln!` panic when a stream cannot
//! be written (a closed pipe, a full disk), so the tool writes through these functions instead.
//!
//! Standard output carries results (`rodl info`, the demo's summary): a reader that went away
//! (broken pipe) ends the command quietly with a non-zero status, as Unix tools do, and any
//! other failure (a full device) is a one-line error. Standard error carries notes, warnings
//! and the error line itself: when it cannot be written there is nowhere to report that, so
//! those writes are best-effort.

use std::io::{ErrorKind, Write};

use crate::Failure;

/// Writes `text` to standard output and flushes it.
pub fn print(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| match e.kind() {
            ErrorKind::BrokenPipe => Failure::broken_pipe(),
            _ => Failure::new(format!(
                "cannot write to the standard output: {}",
                crate::io_message(&e)
            )),
        })
}

/// Writes `line` and a newline to standard error, ignoring failures.
pub fn error_line(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
    let _ = err.flush();
}

/// A note on standard error (`--verbose` reports, warnings), best-effort.
pub fn note(line: &str) {
    error_line(line);
}
