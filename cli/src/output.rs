//! The output files of one command, written as one unit.
//!
//! Every output is first written in full to a hidden temporary file next to its target
//! (`.NAME.rodl-tmp-PID-K`); only when all of them are complete are they renamed onto their
//! targets, one after the other ([`Outputs::commit`]). An existing file at a target is kept as
//! a hard link until all renames have succeeded, so that if one fails the files already
//! replaced are put back: a failed command leaves every existing file as it was and no new
//! file behind. A replaced file keeps its permissions (and, for root, its owner).
//!
//! Targets that are not regular files are never replaced: a symbolic link is followed (the
//! file it points to is written, atomically like any other; a dangling link is refused), and
//! a character device or a FIFO (`/dev/null`, `/dev/stdout` on a pipe) is written through
//! directly; such writes cannot be undone.
//!
//! On SIGINT, SIGTERM or SIGHUP the temporary files are removed before the process exits
//! ([`install_signal_cleanup`]); the renames of [`Outputs::commit`] are not interrupted.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

pub use crate::io::WriteError;
use crate::Failure;

/// The temporary files that exist now, removed on a signal.
static TEMPORARIES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Distinguishes the temporary files of one process.
static COUNTER: AtomicUsize = AtomicUsize::new(0);

fn temporaries() -> MutexGuard<'static, Vec<PathBuf>> {
    TEMPORARIES.lock().unwrap_or_else(|e| e.into_inner())
}

fn forget(path: &Path) {
    temporaries().retain(|p| p != path);
}

/// Removes the temporary files and exits on SIGINT, SIGTERM and SIGHUP (status 128 + the
/// signal's number, as a shell reports a process killed by it).
///
/// SIGXFSZ (a write beyond the file-size limit, `ulimit -f`) is ignored, so that the write fails
/// with an error (`File too large`) that the command reports, removing its temporary files,
/// instead of killing the process and leaving them behind.
pub fn install_signal_cleanup() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    // SAFETY: setting a signal's disposition to SIG_IGN installs no handler code; it runs
    // before any thread that could write a file is started.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("rodl-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                // Waits for a commit in progress: its renames complete first.
                let mut temps = temporaries();
                for path in temps.iter() {
                    let _ = fs::remove_file(path);
                }
                // Then the folders created for outputs, now empty (see `created_folder`).
                for path in temps.drain(..).rev() {
                    let _ = fs::remove_dir(path);
                }
                std::process::exit(128 + signal);
            }
        });
}

/// Registers a folder just created for outputs, so that a signal removes it (when empty)
/// with the temporary files; [`forget_folder`] ends that.
pub fn created_folder(path: &Path) {
    temporaries().push(path.to_path_buf());
}

/// Registers a temporary file that a library writer created (a slice of a TIFF stack or an
/// HDF5 volume written by slabs), so that a signal removes it.
pub fn created_temporary(path: &Path) {
    temporaries().push(path.to_path_buf());
}

/// Forgets a folder registered with [`created_folder`].
pub fn forget_folder(path: &Path) {
    forget(path);
}

/// What a target path is.
enum Target {
    /// A regular file to replace, or a new file: written to a temporary file and renamed.
    File {
        /// The path to rename onto (symbolic links resolved).
        path: PathBuf,
        /// The existing file's metadata, if there is one.
        existing: Option<fs::Metadata>,
    },
    /// A device or FIFO, written through.
    Through(PathBuf),
}

/// Looks at `path` without opening it: follows symbolic links, refuses directories and
/// dangling links.
fn classify(path: &Path) -> Result<Target, Failure> {
    let fail = |why: &str| Failure::new(format!("cannot write {}: {why}", path.display()));
    if path.file_name().is_none() {
        return Err(fail("not a file name"));
    }
    let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(fail("it is a directory")),
        Ok(m) if m.is_file() => Ok(Target::File {
            path: if is_link {
                fs::canonicalize(path).map_err(|e| Failure::io("cannot write", path, &e))?
            } else {
                path.to_path_buf()
            },
            existing: Some(m),
        }),
        // Opened through the path as given: `/dev/stdout` on a pipe resolves to no file name.
        Ok(m) if m.file_type().is_char_device() || m.file_type().is_fifo() => {
            Ok(Target::Through(path.to_path_buf()))
        }
        Ok(_) => Err(fail(
            "it is neither a regular file nor a character device or FIFO",
        )),
        Err(_) if is_link => Err(fail("it is a symbolic link to a missing file or folder")),
        Err(_) => {
            let dir = parent(path);
            match fs::metadata(&dir) {
                Ok(m) if m.is_dir() => Ok(Target::File {
                    path: path.to_path_buf(),
                    existing: None,
                }),
                Ok(_) => Err(fail(&format!("{} is not a directory", dir.display()))),
                Err(_) => Err(fail(&format!(
                    "the folder {} does not exist",
                    dir.display()
                ))),
            }
        }
    }
}

fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A file's identity for comparisons: device and inode when it exists, else the canonical
/// folder and the name.
#[derive(PartialEq, Eq, Debug)]
enum Identity {
    Inode(u64, u64),
    Path(PathBuf),
    Unknown(PathBuf),
}

fn identity(path: &Path) -> Identity {
    if let Ok(m) = fs::metadata(path) {
        return Identity::Inode(m.dev(), m.ino());
    }
    let resolved = fs::canonicalize(parent(path))
        .ok()
        .zip(path.file_name())
        .map(|(d, n)| d.join(n));
    match resolved {
        Some(p) => Identity::Path(p),
        None => Identity::Unknown(path.to_path_buf()),
    }
}

fn is_char_device(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device())
}

/// Errors (a usage error) when two outputs, or an output and an input, are the same file.
/// `outputs` and `inputs` pair an option's name (`--png`) with its path. Character devices
/// (`/dev/null`) may be given more than once.
pub fn check_distinct(outputs: &[(&str, &Path)], inputs: &[(&str, &Path)]) -> Result<(), Failure> {
    for (i, (name, path)) in outputs.iter().enumerate() {
        let id = identity(path);
        for (other, input) in inputs {
            if identity(input) == id {
                return Err(Failure::usage(format!(
                    "{name} {} is also the {other} file: an output must not overwrite an input",
                    path.display()
                )));
            }
        }
        for (other, earlier) in &outputs[..i] {
            if identity(earlier) == id && !is_char_device(path) {
                return Err(Failure::usage(format!(
                    "{name} {} is also another output of the command ({other})",
                    path.display()
                )));
            }
        }
    }
    Ok(())
}

/// Checks early, before any work, that `path` can be an output (see the module's rules).
pub fn check_target(path: &Path) -> Result<(), Failure> {
    classify(path).map(|_| ())
}

/// One output of an [`Outputs`] set.
struct Staged {
    /// The path as given, for messages.
    shown: PathBuf,
    /// The final path (symbolic links resolved).
    target: PathBuf,
    /// The temporary file (`None`: written through to `target`).
    temp: Option<PathBuf>,
    /// The open file until it is written.
    file: Option<File>,
    /// Whether it has been written.
    written: bool,
}

/// A handle on one output of an [`Outputs`] set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot(usize);

/// The outputs of one command: prepared, written, then committed all together (see the
/// module's documentation). Dropping the set uncommitted removes its temporary files.
#[derive(Default)]
pub struct Outputs {
    staged: Vec<Staged>,
}

impl Outputs {
    /// An empty set.
    pub fn new() -> Outputs {
        Outputs::default()
    }

    /// Prepares the output `path`: creates its temporary file (or opens the device), so that
    /// a missing or read-only folder fails before any work.
    pub fn prepare(&mut self, path: &Path) -> Result<Slot, Failure> {
        let (target, temp, file) = match classify(path)? {
            Target::Through(target) => {
                // O_NONBLOCK: a FIFO without a reader fails at once instead of blocking.
                let file = OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&target)
                    .map_err(|e| match e.raw_os_error() {
                        Some(libc::ENXIO) => Failure::new(format!(
                            "cannot write {}: it is a FIFO that nothing reads",
                            path.display()
                        )),
                        _ => Failure::io("cannot write", path, &e),
                    })?;
                clear_nonblocking(&file);
                (target, None, file)
            }
            Target::File {
                path: target,
                existing,
            } => {
                let (temp, file) =
                    create_temp(&target).map_err(|e| Failure::io("cannot write", path, &e))?;
                if let Some(m) = existing {
                    // Keep the replaced file's permissions and, where allowed, its owner.
                    let _ = file.set_permissions(m.permissions());
                    let _ = std::os::unix::fs::fchown(&file, Some(m.uid()), Some(m.gid()));
                }
                (target, Some(temp), file)
            }
        };
        self.staged.push(Staged {
            shown: path.to_path_buf(),
            target,
            temp,
            file: Some(file),
            written: false,
        });
        Ok(Slot(self.staged.len() - 1))
    }

    /// Writes the output `slot` with `write` (given a buffered writer), then flushes and syncs
    /// it. Errors name the output's path.
    pub fn write(
        &mut self,
        slot: Slot,
        write: impl FnOnce(&mut dyn Write) -> Result<(), WriteError>,
    ) -> Result<(), Failure> {
        let staged = self
            .staged
            .get_mut(slot.0)
            .ok_or_else(|| Failure::new("internal error: no such output"))?;
        let shown = staged.shown.clone();
        let file = staged.file.take().ok_or_else(|| {
            Failure::new(format!("internal error: {} written twice", shown.display()))
        })?;
        let mut out = BufWriter::new(file);
        let fail_io = |e: &std::io::Error| Failure::io("cannot write", &shown, e);
        match write(&mut out) {
            Ok(()) => {}
            Err(WriteError::Io(e)) => return Err(fail_io(&e)),
            Err(WriteError::Failure(f)) => return Err(f),
        }
        let file = out.into_inner().map_err(|e| fail_io(e.error()))?;
        if staged.temp.is_some() {
            file.sync_all().map_err(|e| fail_io(&e))?;
        }
        staged.written = true;
        Ok(())
    }

    /// Writes the output `slot` in place: `write` is given its temporary file (open for reading
    /// and writing, empty), to size and fill it as it likes (by a memory map: data larger than
    /// memory); then the file is synced. An output that is written through (a device or FIFO)
    /// cannot be written in place: that is an error naming `why` ("a result computed in
    /// pieces"), before `write` runs.
    pub fn write_in_place(
        &mut self,
        slot: Slot,
        why: &str,
        write: impl FnOnce(&File) -> Result<(), WriteError>,
    ) -> Result<(), Failure> {
        let staged = self
            .staged
            .get_mut(slot.0)
            .ok_or_else(|| Failure::new("internal error: no such output"))?;
        let shown = staged.shown.clone();
        if staged.temp.is_none() {
            return Err(Failure::new(format!(
                "cannot write {}: {why} is written in place into a regular file, and this is \
                 a device or FIFO",
                shown.display()
            )));
        }
        let file = staged.file.take().ok_or_else(|| {
            Failure::new(format!("internal error: {} written twice", shown.display()))
        })?;
        let fail_io = |e: &std::io::Error| Failure::io("cannot write", &shown, e);
        match write(&file) {
            Ok(()) => {}
            Err(WriteError::Io(e)) => return Err(fail_io(&e)),
            Err(WriteError::Failure(f)) => return Err(f),
        }
        file.sync_all().map_err(|e| fail_io(&e))?;
        staged.written = true;
        Ok(())
    }

    /// The temporary file of the output `slot` (`None` for one written through): for the
    /// other ranks of an MPI job that write into it in place, and to know whether it can be
    /// written in place.
    pub fn temp_path(&self, slot: Slot) -> Option<&Path> {
        self.staged.get(slot.0)?.temp.as_deref()
    }

    /// Writes `array` as the `.npy` output `slot`: into a regular file by all cores at once,
    /// its write-back to the disk started chunk by chunk ([`crate::io::write_npy_file`]),
    /// then synced; into a device or FIFO through a buffered writer.
    pub fn write_array(&mut self, slot: Slot, array: &crate::io::AnyArray) -> Result<(), Failure> {
        let through = self.staged.get(slot.0).is_some_and(|s| s.temp.is_none());
        if through {
            return self.write(slot, |w| crate::io::write_npy(w, array));
        }
        self.write_in_place(slot, "an .npy array", |f| {
            crate::io::write_npy_file(f, array)
        })
    }

    /// Writes `bytes` as the output `slot`.
    pub fn write_bytes(&mut self, slot: Slot, bytes: &[u8]) -> Result<(), Failure> {
        self.write(slot, |w| w.write_all(bytes).map_err(WriteError::Io))
    }

    /// Renames every temporary file onto its target. If a rename fails, the targets already
    /// replaced get their earlier files back (or are removed when they are new), so that the
    /// set is written entirely or not at all.
    pub fn commit(mut self) -> Result<(), Failure> {
        if let Some(s) = self.staged.iter().find(|s| !s.written) {
            return Err(Failure::new(format!(
                "internal error: {} was not written",
                s.shown.display()
            )));
        }
        // Signals wait until the renames are done (see `install_signal_cleanup`).
        let mut temps = temporaries();
        let mut backups: Vec<Option<PathBuf>> = Vec::new();
        for s in &self.staged {
            backups.push(match &s.temp {
                Some(_) if s.target.is_file() => backup(&s.target, &mut temps),
                _ => None,
            });
        }
        let mut failure = None;
        let mut done = 0;
        for s in &self.staged {
            if let Some(temp) = &s.temp {
                if let Err(e) = fs::rename(temp, &s.target) {
                    failure = Some(Failure::io("cannot write", &s.shown, &e));
                    break;
                }
                temps.retain(|p| p != temp);
            }
            done += 1;
        }
        if failure.is_some() {
            // Undo: put the earlier files back, remove the new ones.
            for (s, b) in self.staged[..done].iter().zip(&backups) {
                if s.temp.is_none() {
                    continue;
                }
                match b {
                    Some(b) => {
                        let _ = fs::rename(b, &s.target);
                    }
                    None => {
                        let _ = fs::remove_file(&s.target);
                    }
                }
            }
        } else {
            for s in &mut self.staged {
                s.temp = None;
            }
        }
        for b in backups.iter().flatten() {
            let _ = fs::remove_file(b);
            temps.retain(|p| p != b);
        }
        drop(temps);
        match failure {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }
}

/// A hard link to `target` next to it, registered in `temps` for removal on a signal; `None`
/// when the file system cannot make one.
fn backup(target: &Path, temps: &mut Vec<PathBuf>) -> Option<PathBuf> {
    let name = target.file_name()?.to_string_lossy().to_string();
    let dir = parent(target);
    let pid = std::process::id();
    for _ in 0..100 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".{name}.rodl-old-{pid}-{n}"));
        match fs::hard_link(target, &path) {
            Ok(()) => {
                temps.push(path.clone());
                return Some(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => return None,
        }
    }
    None
}

impl Drop for Outputs {
    fn drop(&mut self) {
        for s in &self.staged {
            if let Some(temp) = &s.temp {
                let _ = fs::remove_file(temp);
                forget(temp);
            }
        }
    }
}

/// Creates a new temporary file next to `target` and registers it for removal on a signal.
fn create_temp(target: &Path) -> std::io::Result<(PathBuf, File)> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let dir = parent(target);
    let pid = std::process::id();
    for _ in 0..100 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".{name}.rodl-tmp-{pid}-{n}"));
        // Registered before it exists, so that a signal cannot leave it behind.
        temporaries().push(temp.clone());
        // Readable too, so that an output can be memory-mapped (`Outputs::write_in_place`).
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&temp)
        {
            Ok(file) => return Ok((temp, file)),
            Err(e) => {
                forget(&temp);
                if e.kind() != std::io::ErrorKind::AlreadyExists {
                    return Err(e);
                }
            }
        }
    }
    Err(std::io::Error::other("no free temporary file name"))
}

/// Clears `O_NONBLOCK` on a file opened with it (writes to a FIFO then wait for the reader).
fn clear_nonblocking(file: &File) {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a file descriptor that `file` owns and keeps open; F_GETFL/F_SETFL
    // only read and set its status flags.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rodl-output-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// When the second rename fails (its target became a non-empty folder), the first
    /// target, already replaced, gets its older file back, and nothing else is left.
    #[test]
    fn a_failed_rename_puts_back_the_files_already_replaced() {
        let dir = temp_dir("rollback");
        let (png, npy, new) = (dir.join("x.png"), dir.join("x.npy"), dir.join("new.txt"));
        fs::write(&png, b"old png").unwrap();
        let mut outputs = Outputs::new();
        let a = outputs.prepare(&new).unwrap();
        let b = outputs.prepare(&png).unwrap();
        let c = outputs.prepare(&npy).unwrap();
        outputs.write_bytes(a, b"new text").unwrap();
        outputs.write_bytes(b, b"new png").unwrap();
        outputs.write_bytes(c, b"new npy").unwrap();
        fs::create_dir(&npy).unwrap();
        fs::write(npy.join("inside"), b"").unwrap();
        assert!(outputs.commit().is_err());
        assert_eq!(fs::read(&png).unwrap(), b"old png");
        assert!(!new.exists());
        assert_eq!(listing(&dir), ["x.npy", "x.png"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn outputs_are_written_together_or_not_at_all() {
        let dir = temp_dir("unit");
        let (a, b) = (dir.join("a"), dir.join("b"));
        let mut outputs = Outputs::new();
        let sa = outputs.prepare(&a).unwrap();
        let sb = outputs.prepare(&b).unwrap();
        outputs.write_bytes(sa, b"a").unwrap();
        // Not all written: an error, and dropping removes the temporary files.
        drop(outputs);
        assert_eq!(listing(&dir), Vec::<String>::new());
        let mut outputs = Outputs::new();
        let sa = outputs.prepare(&a).unwrap();
        outputs.write_bytes(sa, b"a").unwrap();
        let _ = sb;
        outputs.commit().unwrap();
        assert_eq!(listing(&dir), ["a"]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
