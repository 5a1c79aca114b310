//! Atomic file output: a temporary file next to the target, renamed onto it once complete.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A temporary file next to the target, removed on drop unless renamed onto the target.
pub(crate) struct TempFile {
    path: PathBuf,
    committed: bool,
}

/// Distinguishes the temporary files of concurrent writes from one process.
static TEMP_COUNTER: AtomicUsize = AtomicUsize::new(0);

impl TempFile {
    /// Creates a new, empty temporary file in `target`'s directory (a hidden name that contains
    /// the target's name, the process id and a counter).
    pub(crate) fn create(target: &Path) -> std::io::Result<(TempFile, File)> {
        let name = target.file_name().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name")
        })?;
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let pid = std::process::id();
        loop {
            let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!(".{}.rodl-tmp-{pid}-{n}", name.to_string_lossy()));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => {
                    return Ok((
                        TempFile {
                            path,
                            committed: false,
                        },
                        file,
                    ))
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The temporary file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the temporary file onto `target`.
    pub(crate) fn commit(mut self, target: &Path) -> std::io::Result<()> {
        fs::rename(&self.path, target)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_file(&self.path);
        }
    }
}
