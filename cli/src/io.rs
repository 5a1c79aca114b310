//! `.npy` input (float32/float64, finite values only) and atomic output files.

use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use ndarray::{ArrayD, Dimension};
use ndarray_npy::{ReadNpyExt, WriteNpyExt};

use crate::Failure;

/// The element type of an `.npy` file that rodl can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// float32 (`<f4` or `>f4`).
    F32,
    /// float64 (`<f8` or `>f8`).
    F64,
}

impl Dtype {
    /// NumPy's name of the type.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "float32",
            Dtype::F64 => "float64",
        }
    }
}

/// An array read from an `.npy` file, in its own precision.
pub enum AnyArray {
    /// A float32 array.
    F32(ArrayD<f32>),
    /// A float64 array.
    F64(ArrayD<f64>),
}

impl AnyArray {
    /// The array's shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            AnyArray::F32(a) => a.shape(),
            AnyArray::F64(a) => a.shape(),
        }
    }

    /// The array's element type.
    pub fn dtype(&self) -> Dtype {
        match self {
            AnyArray::F32(_) => Dtype::F32,
            AnyArray::F64(_) => Dtype::F64,
        }
    }

    /// The number of non-finite entries (NaN, ±Inf) and the index of the first one.
    fn non_finite(&self) -> (usize, Option<Vec<usize>>) {
        fn count<T: num_traits::Float>(a: &ArrayD<T>) -> (usize, Option<Vec<usize>>) {
            let mut n = 0;
            let mut first = None;
            for (idx, v) in a.indexed_iter() {
                if !v.is_finite() {
                    n += 1;
                    if first.is_none() {
                        first = Some(idx.slice().to_vec());
                    }
                }
            }
            (n, first)
        }
        match self {
            AnyArray::F32(a) => count(a),
            AnyArray::F64(a) => count(a),
        }
    }
}

/// The precisions that `.npy` files hold here: wraps an array of them as an [`AnyArray`].
pub trait NpyScalar: rodl::Scalar {
    /// The array as an [`AnyArray`].
    fn wrap(a: ArrayD<Self>) -> AnyArray;
}

impl NpyScalar for f32 {
    fn wrap(a: ArrayD<f32>) -> AnyArray {
        AnyArray::F32(a)
    }
}

impl NpyScalar for f64 {
    fn wrap(a: ArrayD<f64>) -> AnyArray {
        AnyArray::F64(a)
    }
}

const MAGIC: &[u8] = b"\x93NUMPY";

/// Reads the header of an `.npy` file and returns its type descriptor (`descr`), e.g. `<f4`.
fn read_descr(path: &Path) -> Result<String, Failure> {
    let bad = |what: &str| {
        Failure::new(format!(
            "{}: not a valid .npy file ({what})",
            path.display()
        ))
    };
    let mut file = File::open(path).map_err(|e| Failure::io("cannot read", path, &e))?;
    let mut pre = [0u8; 12];
    let n = read_up_to(&mut file, &mut pre).map_err(|e| Failure::io("cannot read", path, &e))?;
    if n < 10 || &pre[..6] != MAGIC {
        return Err(bad("missing the \\x93NUMPY magic"));
    }
    let (len, start) = match pre[6] {
        1 => (u16::from_le_bytes([pre[8], pre[9]]) as usize, 10),
        2 | 3 if n == 12 => (
            u32::from_le_bytes([pre[8], pre[9], pre[10], pre[11]]) as usize,
            12,
        ),
        v => return Err(bad(&format!("unsupported format version {v}"))),
    };
    if len > 1 << 20 {
        return Err(bad("header too long"));
    }
    let mut header = pre[start..n].to_vec();
    header.resize(len, 0);
    let have = n - start;
    if have < len {
        file.read_exact(&mut header[have..])
            .map_err(|_| bad("truncated header"))?;
    }
    header.truncate(len);
    let text = String::from_utf8_lossy(&header);
    parse_descr(&text).ok_or_else(|| bad("no 'descr' in the header"))
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Extracts the value of `'descr'` from a header dictionary such as
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (64, 64), }`.
fn parse_descr(header: &str) -> Option<String> {
    let rest = &header[header.find("descr")? + "descr".len()..];
    let rest = rest.trim_start_matches(['\'', '"']).trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let quote = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let body = &rest[1..];
    Some(body[..body.find(quote)?].to_string())
}

/// Reads a float32 or float64 `.npy` file (the type is taken from the header) whose entries
/// are all finite: NaN or ±Inf anywhere is an error that names the first such index.
pub fn read_array(path: &Path) -> Result<AnyArray, Failure> {
    let array = read_any(path)?;
    if let (n @ 1.., Some(first)) = array.non_finite() {
        return Err(Failure::new(format!(
            "{}: the data contain {n} non-finite value{} (NaN or Inf), the first at index \
             {first:?}",
            path.display(),
            if n == 1 { "" } else { "s" }
        )));
    }
    Ok(array)
}

/// Reads a float32 or float64 `.npy` file, any values.
fn read_any(path: &Path) -> Result<AnyArray, Failure> {
    let descr = read_descr(path)?;
    let dtype = match descr.as_str() {
        "<f4" | ">f4" => Dtype::F32,
        "<f8" | ">f8" => Dtype::F64,
        other => {
            return Err(Failure::new(format!(
                "{}: unsupported dtype {other:?} (rodl reads float32 and float64 .npy files)",
                path.display()
            )))
        }
    };
    let file = File::open(path).map_err(|e| Failure::io("cannot read", path, &e))?;
    let reader = BufReader::new(file);
    let bad = |e: ndarray_npy::ReadNpyError| {
        Failure::new(format!(
            "{}: cannot read the .npy data: {e}",
            path.display()
        ))
    };
    Ok(match dtype {
        Dtype::F32 => AnyArray::F32(ArrayD::<f32>::read_npy(reader).map_err(bad)?),
        Dtype::F64 => AnyArray::F64(ArrayD::<f64>::read_npy(reader).map_err(bad)?),
    })
}

/// An output file being written: data go to a hidden temporary file in the target's
/// directory, which [`AtomicOutput::write`] renames onto the target. Dropping it unwritten
/// (an error, or a panic unwinding) removes the temporary file, so a failed run leaves nothing.
pub struct AtomicOutput {
    target: PathBuf,
    temp: PathBuf,
    done: bool,
}

impl AtomicOutput {
    /// Prepares to write `target`: checks that it is not a directory and creates the temporary
    /// file next to it (which fails early when the directory is missing or not writable).
    pub fn create(target: &Path) -> Result<(AtomicOutput, File), Failure> {
        if target.is_dir() {
            return Err(Failure::new(format!(
                "cannot write {}: it is a directory",
                target.display()
            )));
        }
        let name = target.file_name().ok_or_else(|| {
            Failure::new(format!(
                "cannot write {}: not a file name",
                target.display()
            ))
        })?;
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let pid = std::process::id();
        let mut last_err = None;
        for attempt in 0..100u32 {
            let temp = dir.join(format!(
                ".{}.rodl-tmp-{pid}-{attempt}",
                name.to_string_lossy()
            ));
            match OpenOptions::new().write(true).create_new(true).open(&temp) {
                Ok(file) => {
                    let out = AtomicOutput {
                        target: target.to_path_buf(),
                        temp,
                        done: false,
                    };
                    return Ok((out, file));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    last_err = Some(e);
                    break;
                }
            }
        }
        let e = last_err.unwrap_or_else(|| std::io::Error::other("no free temporary file name"));
        Err(Failure::io("cannot write", target, &e))
    }

    /// Renames the finished temporary file onto the target.
    fn commit(mut self) -> Result<(), Failure> {
        fs::rename(&self.temp, &self.target)
            .map_err(|e| Failure::io("cannot write", &self.target, &e))?;
        self.done = true;
        Ok(())
    }
}

impl Drop for AtomicOutput {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_file(&self.temp);
        }
    }
}

impl AtomicOutput {
    /// Writes `array` as `.npy` into the temporary `file` and renames it onto the target:
    /// either the complete file appears under its name, or nothing does.
    pub fn write(self, file: File, array: &AnyArray) -> Result<(), Failure> {
        self.fill(file, array)?.commit()
    }

    /// Writes `array` as `.npy` into the temporary `file` without renaming it yet: the result
    /// is committed with [`Pending::commit`] (after the other outputs of a command have been
    /// written) or removed when dropped.
    pub fn fill(self, file: File, array: &AnyArray) -> Result<Pending, Failure> {
        let target = self.target.clone();
        let mut writer = BufWriter::new(file);
        let written = match array {
            AnyArray::F32(a) => a.write_npy(&mut writer),
            AnyArray::F64(a) => a.write_npy(&mut writer),
        };
        written.map_err(|e| Failure::new(format!("cannot write {}: {e}", target.display())))?;
        let file = writer
            .into_inner()
            .map_err(|e| Failure::io("cannot write", &target, e.error()))?;
        file.sync_all()
            .map_err(|e| Failure::io("cannot write", &target, &e))?;
        drop(file);
        Ok(Pending(self))
    }

    /// Writes `bytes` (a text file, …) into the temporary `file` and renames it onto the
    /// target.
    pub fn write_bytes(self, mut file: File, bytes: &[u8]) -> Result<(), Failure> {
        let target = self.target.clone();
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| Failure::io("cannot write", &target, &e))?;
        drop(file);
        self.commit()
    }
}

/// A complete output in its temporary file, waiting to be renamed onto its target (removed
/// when dropped uncommitted).
pub struct Pending(AtomicOutput);

impl Pending {
    /// Renames the temporary file onto the target.
    pub fn commit(self) -> Result<(), Failure> {
        self.0.commit()
    }
}

/// Writes the text `text` to `path` atomically.
pub fn write_text(path: &Path, text: &str) -> Result<(), Failure> {
    let (out, file) = AtomicOutput::create(path)?;
    out.write_bytes(file, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::parse_descr;

    #[test]
    fn descr_is_parsed() {
        let h = "{'descr': '<f4', 'fortran_order': False, 'shape': (64, 64), }";
        assert_eq!(parse_descr(h).as_deref(), Some("<f4"));
        let h = "{\"descr\":\">f8\", 'shape': ()}";
        assert_eq!(parse_descr(h).as_deref(), Some(">f8"));
        assert_eq!(parse_descr("{'shape': ()}"), None);
    }
}
