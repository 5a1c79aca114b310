//! Input files — `.npy` arrays (float32/float64, finite values only) and geometry files —
//! read with bounds: only regular files, never more bytes than they should hold, and sizes
//! checked against the memory limit before anything is allocated. And `.npy` output. For data
//! larger than memory ([`crate::out_of_core`]), `.npy` inputs mapped into memory read-only
//! ([`NpyFile::map`]) and outputs written in place through a map ([`MappedOutput`]).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use ndarray::{ArrayD, ArrayViewD, Dimension};

#[cfg(test)]
use ndarray_npy::ReadNpyExt;
use ndarray_npy::{ViewMutNpyExt, ViewNpyExt, WriteNpyExt};

use crate::Failure;

/// Why writing an output failed: an I/O error (reported with the output's path) or a failure
/// with its own message.
pub enum WriteError {
    /// Writing failed.
    Io(std::io::Error),
    /// Producing the data failed.
    Failure(Failure),
}

impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> Self {
        WriteError::Io(e)
    }
}

/// The element type of an `.npy` file that rodl can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// float32 (`<f4` or `>f4`).
    F32,
    /// float64 (`<f8` or `>f8`).
    F64,
}

impl Dtype {
    /// The bytes of one value.
    pub fn size(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::F64 => 8,
        }
    }

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
}

/// The number of non-finite entries (NaN, ±Inf) of `a` and the index of the first one. The
/// count runs over the memory in parallel chunks; only when there is something to report is
/// the (slow, dynamic-index) logical-order walk made for the first index.
fn non_finite<T: num_traits::Float + Send + Sync>(
    a: &ArrayViewD<'_, T>,
) -> (usize, Option<Vec<usize>>) {
    use rayon::prelude::*;
    let count = |c: &[T]| c.iter().filter(|v| !v.is_finite()).count();
    let n = match a.as_slice_memory_order() {
        Some(s) => s.par_chunks(1 << 16).map(count).sum(),
        None => a.iter().filter(|v| !v.is_finite()).count(),
    };
    if n == 0 {
        return (0, None);
    }
    let first = a
        .indexed_iter()
        .find(|(_, v)| !v.is_finite())
        .map(|(idx, _)| idx.slice().to_vec());
    (n, first)
}

/// The precisions that `.npy` files hold here: wraps an array of them as an [`AnyArray`].
pub trait NpyScalar:
    rodl::Scalar + ndarray_npy::ViewElement + ndarray_npy::ViewMutElement + ndarray_npy::WritableElement
{
    /// The array as an [`AnyArray`].
    fn wrap(a: ArrayD<Self>) -> AnyArray;

    /// The value with its bytes in the other order.
    fn swap_bytes(self) -> Self;
}

impl NpyScalar for f32 {
    fn wrap(a: ArrayD<f32>) -> AnyArray {
        AnyArray::F32(a)
    }

    fn swap_bytes(self) -> f32 {
        f32::from_bits(self.to_bits().swap_bytes())
    }
}

impl NpyScalar for f64 {
    fn wrap(a: ArrayD<f64>) -> AnyArray {
        AnyArray::F64(a)
    }

    fn swap_bytes(self) -> f64 {
        f64::from_bits(self.to_bits().swap_bytes())
    }
}

const MAGIC: &[u8] = b"\x93NUMPY";

/// The largest `.npy` header read, in bytes.
const MAX_HEADER: usize = 1 << 16;

/// Opens `path`, given as `option` (`--input`), for reading: only a regular file is accepted
/// (a FIFO or a device could block or never end). Returns the file and its length.
pub fn open_regular(path: &Path, option: &str) -> Result<(File, u64), Failure> {
    // O_NONBLOCK: opening a FIFO does not wait for a writer (it is refused just after).
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Failure::io("cannot read", path, &e))?;
    let meta = file
        .metadata()
        .map_err(|e| Failure::io("cannot read", path, &e))?;
    if !meta.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        let what = if meta.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO (named pipe)"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(Failure::new(format!(
            "cannot read {option} {}: it is {what}; {option} must be a regular file",
            path.display()
        )));
    }
    Ok((file, meta.len()))
}

/// Reads the geometry file `path` (given as `--geometry`): a regular UTF-8 file of at most
/// [`crate::limits::MAX_GEOMETRY_BYTES`] bytes.
pub fn read_geometry_text(path: &Path) -> Result<String, Failure> {
    let (file, len) = open_regular(path, "--geometry")?;
    let max = crate::limits::MAX_GEOMETRY_BYTES;
    if len > max {
        return Err(Failure::new(format!(
            "cannot read --geometry {}: it has {len} bytes, more than the {max} bytes a \
             geometry file may have",
            path.display()
        )));
    }
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::io("cannot read", path, &e))?;
    String::from_utf8(bytes).map_err(|e| {
        Failure::new(format!(
            "{}: not a text file in UTF-8 (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

/// The parts of an `.npy` header that rodl uses.
#[derive(Debug, PartialEq)]
struct Header {
    /// The type descriptor, e.g. `<f4`.
    descr: String,
    /// The shape.
    shape: Vec<usize>,
    /// The header's length with the preamble: where the data start.
    data_offset: u64,
    /// Whether the data are in Fortran order.
    fortran: bool,
    /// The bytes read: the preamble, the header and any data read with them.
    raw: Vec<u8>,
}

/// Reads and checks the header of an `.npy` file. The header's length and the nesting of its
/// brackets are bounded before the dictionary is parsed (by `ndarray-npy`, whose reading of
/// the data follows the same parse).
fn read_header(file: &mut impl Read) -> Result<Header, String> {
    let mut pre = [0u8; 12];
    let n = read_up_to(file, &mut pre).map_err(|e| crate::io_message(&e))?;
    if n < 10 || &pre[..6] != MAGIC {
        return Err("not an .npy file (no \\x93NUMPY magic at the start)".into());
    }
    let (len, start) = match pre[6] {
        1 => (u16::from_le_bytes([pre[8], pre[9]]) as usize, 10),
        2 | 3 if n == 12 => (
            u32::from_le_bytes([pre[8], pre[9], pre[10], pre[11]]) as usize,
            12,
        ),
        v => return Err(format!("unsupported .npy format version {v}")),
    };
    if len > MAX_HEADER {
        return Err(format!(
            "an .npy header of {len} bytes, more than the {MAX_HEADER} rodl reads"
        ));
    }
    let mut bytes = pre[..n].to_vec();
    let have = bytes.len();
    if have < start + len {
        bytes.resize(start + len, 0);
        file.read_exact(&mut bytes[have..])
            .map_err(|_| "the .npy header is truncated".to_string())?;
    }
    let raw = bytes.clone();
    bytes.truncate(start + len);
    let mut depth = 0usize;
    for &c in &bytes[start..] {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_NESTING {
            return Err("not a valid .npy header (brackets nested too deeply)".into());
        }
    }
    let header = ndarray_npy::npy::header::Header::from_reader(&mut bytes.as_slice())
        .map_err(|e| format!("not a valid .npy header ({e})"))?;
    let descr = match header.type_descriptor.as_string() {
        Some(s) => s.clone(),
        None => {
            return Err(format!(
                "unsupported dtype {} (rodl reads float32 and float64 .npy files)",
                header.type_descriptor
            ))
        }
    };
    Ok(Header {
        descr,
        fortran: header.layout.is_fortran(),
        shape: header.shape,
        data_offset: (start + len) as u64,
        raw,
    })
}

/// The deepest nesting of brackets accepted in an `.npy` header (NumPy writes 2).
const MAX_NESTING: usize = 8;

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

/// The bytes one thread reads (and checks) at a time in [`read_array_as`] and writes in
/// [`write_npy_file`].
const IO_CHUNK: usize = 8 << 20;

/// Reads a float32 or float64 `.npy` file of type `T` whose entries are all finite (NaN or ±Inf
/// anywhere is an error that names the first such index), as fast as the file system allows:
/// the data are read by all cores at once (positioned reads of [`IO_CHUNK`] bytes each, straight
/// into the array's memory: no intermediate buffer, no zero-filling, the first-touch page
/// faults spread over the cores), and each chunk is byte-swapped (if need be) and checked for
/// non-finite values while it is in cache, so that there is no second pass over the data.
/// [`read_array`]'s checks and messages; a file whose type is not `T` (changed since its header
/// was read) is an error.
pub fn read_array_as<T: NpyScalar>(path: &Path) -> Result<ArrayD<T>, Failure> {
    let (mut file, len) = open_regular(path, "--input")?;
    let bad = |why: String| Failure::new(format!("{}: {why}", path.display()));
    let header = read_header(&mut file).map_err(bad)?;
    let dtype = check_header(&header, len).map_err(bad)?;
    if dtype.size() != std::mem::size_of::<T>() {
        return Err(bad(format!(
            "the file changed while it was read (now {})",
            dtype.name()
        )));
    }
    let n: usize = header.shape.iter().product();
    let swap = needs_swap(&header.descr);
    // `calloc`ed: large zeroed allocations are fresh pages, not written here (the reads do).
    let mut data = vec![T::zero(); n];
    let found = read_values_at(&file, header.data_offset, &mut data, swap)
        .map_err(|e| bad(format!("cannot read the .npy data: {e}")))?;
    let shape = ndarray::IxDyn(&header.shape);
    let array = if header.fortran {
        use ndarray::ShapeBuilder;
        ArrayD::from_shape_vec(shape.f(), data)
    } else {
        ArrayD::from_shape_vec(shape, data)
    }
    .map_err(|e| bad(e.to_string()))?;
    if found > 0 {
        finite_or_fail(path, self::non_finite(&array.view()))?;
    }
    Ok(array)
}

/// Fills `data` with the values of `file` from byte `at` on, by all cores at once (positioned
/// reads of [`IO_CHUNK`] bytes each, straight into `data`'s memory, advised to huge pages),
/// byte-swapping each chunk when `swap` and counting its non-finite values while it is in
/// cache. Returns that count.
fn read_values_at<T: NpyScalar>(
    file: &File,
    at: u64,
    data: &mut [T],
    swap: bool,
) -> std::io::Result<usize> {
    use rayon::prelude::*;
    use std::os::unix::fs::FileExt;
    let size = std::mem::size_of::<T>();
    rodl::memory::advise_huge_pages(data);
    let per = IO_CHUNK / size;
    data.par_chunks_mut(per)
        .enumerate()
        .map(|(k, c)| -> std::io::Result<usize> {
            // SAFETY: the bytes of the chunk's values of `T` (f32 or f64, for which every bit
            // pattern is a value), borrowed mutably from `c` while the read fills them.
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(
                    c.as_mut_ptr().cast::<u8>(),
                    std::mem::size_of_val(c),
                )
            };
            file.read_exact_at(bytes, at + (k * per * size) as u64)?;
            if swap {
                for v in c.iter_mut() {
                    *v = NpyScalar::swap_bytes(*v);
                }
            }
            Ok(c.iter().filter(|v| !v.is_finite()).count())
        })
        .try_reduce(|| 0, |a, b| Ok(a + b))
}

/// Whether values stored with the type descriptor `descr` (`<f4`, `>f8`, ...) need their bytes
/// swapped on this machine.
fn needs_swap(descr: &str) -> bool {
    let native = if cfg!(target_endian = "little") {
        '<'
    } else {
        '>'
    };
    let order = descr.chars().next();
    !(order == Some(native) || order == Some('=') || order == Some('|'))
}

/// Reads a float32 or float64 `.npy` file (the type is taken from the header) whose entries
/// are all finite: NaN or ±Inf anywhere is an error that names the first such index.
pub fn read_array(path: &Path) -> Result<AnyArray, Failure> {
    Ok(match NpyFile::open(path)?.dtype() {
        Dtype::F32 => AnyArray::F32(read_array_as::<f32>(path)?),
        Dtype::F64 => AnyArray::F64(read_array_as::<f64>(path)?),
    })
}

/// The error for an input with non-finite entries (`(count, first index)`), if it has any.
fn finite_or_fail(path: &Path, found: (usize, Option<Vec<usize>>)) -> Result<(), Failure> {
    if let (n @ 1.., Some(first)) = found {
        return Err(Failure::new(format!(
            "{}: the data contain {n} non-finite value{} (NaN or Inf), the first at index \
             {first:?}",
            path.display(),
            if n == 1 { "" } else { "s" }
        )));
    }
    Ok(())
}

/// Reads a float32 or float64 `.npy` array from `bytes` (the whole file), checking the header
/// against the length first. For tests of the reader on arbitrary bytes.
#[cfg(test)]
pub fn read_npy_bytes(bytes: &[u8]) -> Result<AnyArray, String> {
    let mut rest = bytes;
    let header = read_header(&mut rest)?;
    let dtype = check_header(&header, bytes.len() as u64)?;
    read_data(header.raw.as_slice().chain(rest), dtype).map_err(|e| e.to_string())
}

/// Checks a header against the file's length; returns the dtype.
fn check_file(header: &Header, file_len: u64) -> Result<Dtype, String> {
    let dtype = match header.descr.as_str() {
        "<f4" | ">f4" | "=f4" => Dtype::F32,
        "<f8" | ">f8" | "=f8" => Dtype::F64,
        other => {
            return Err(format!(
                "unsupported dtype {other:?} (rodl reads float32 and float64 .npy files)"
            ))
        }
    };
    let size = match dtype {
        Dtype::F32 => 4u128,
        Dtype::F64 => 8u128,
    };
    // ndarray refuses (by a panic in ndarray-npy) a shape whose non-zero lengths multiply
    // beyond isize::MAX, even when another length is 0.
    let nonzero = header
        .shape
        .iter()
        .filter(|&&n| n != 0)
        .try_fold(size, |a, &n| a.checked_mul(n as u128))
        .unwrap_or(u128::MAX);
    if nonzero > isize::MAX as u128 {
        return Err(format!(
            "the header's shape {:?} has too many entries",
            header.shape
        ));
    }
    let bytes = header
        .shape
        .iter()
        .try_fold(size, |a, &n| a.checked_mul(n as u128))
        .unwrap_or(u128::MAX);
    let have = u128::from(file_len.saturating_sub(header.data_offset));
    if bytes != have {
        return Err(format!(
            "the header's shape {:?} of {} needs {bytes} bytes of data, but the file has {have}",
            header.shape,
            dtype.name()
        ));
    }
    Ok(dtype)
}

/// [`check_file`], and the data must fit in the memory limit: for reading them into memory.
fn check_header(header: &Header, file_len: u64) -> Result<Dtype, String> {
    let dtype = check_file(header, file_len)?;
    rodl::memory::check_host_bytes(
        &format!("an array of shape {:?}", header.shape),
        header.data_bytes(dtype),
    )
    .map_err(|e| e.to_string())?;
    Ok(dtype)
}

impl Header {
    /// The bytes of the data (the shape's entries checked to fit by [`check_file`]).
    fn data_bytes(&self, dtype: Dtype) -> u128 {
        self.shape.iter().map(|&n| n as u128).product::<u128>() * dtype.size() as u128
    }
}

/// An `.npy` input whose header has been read and checked against the file (but not against
/// the memory limit): its shape and type, and the open file, to map into memory.
pub struct NpyFile {
    path: std::path::PathBuf,
    file: File,
    header: Header,
    dtype: Dtype,
}

impl NpyFile {
    /// Opens `path` (`--input`: a regular file) and checks its header against its length.
    pub fn open(path: &Path) -> Result<NpyFile, Failure> {
        let (mut file, len) = open_regular(path, "--input")?;
        let bad = |why: String| Failure::new(format!("{}: {why}", path.display()));
        let header = read_header(&mut file).map_err(bad)?;
        let dtype = check_file(&header, len).map_err(bad)?;
        Ok(NpyFile {
            path: path.to_path_buf(),
            file,
            header,
            dtype,
        })
    }

    /// The array's shape.
    pub fn shape(&self) -> &[usize] {
        &self.header.shape
    }

    /// The array's element type.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// The bytes of the array's data.
    pub fn data_bytes(&self) -> u128 {
        self.header.data_bytes(self.dtype)
    }

    /// Whether ranges of the array's first axis can be read on their own ([`NpyFile::rows`]):
    /// an array in C order with at least one axis.
    pub fn by_rows(&self) -> bool {
        !self.header.fortran && !self.header.shape.is_empty()
    }

    /// A reader of ranges of the array's first axis (groups of views of projection data),
    /// for arrays of type `T` in C order; `None` for one in Fortran order (whose ranges are
    /// not contiguous in the file).
    pub fn rows<T: NpyScalar>(&self) -> Result<Option<RowReader<'_, T>>, Failure> {
        if !self.by_rows() {
            return Ok(None);
        }
        if self.dtype.size() != std::mem::size_of::<T>() {
            return Err(Failure::new(format!(
                "internal error: {} is {}, read as another type",
                self.path.display(),
                self.dtype.name()
            )));
        }
        Ok(Some(RowReader {
            npy: self,
            row: self.header.shape[1..].iter().product(),
            swap: needs_swap(&self.header.descr),
            _values: std::marker::PhantomData,
        }))
    }

    /// Maps the file into memory read-only, for reading its data in pieces without reading it
    /// into memory. The data must be in C order and in the machine's byte order.
    pub fn map(&self) -> Result<MappedNpy, Failure> {
        let native = if cfg!(target_endian = "little") {
            '<'
        } else {
            '>'
        };
        let order = self.header.descr.chars().next();
        if self.header.fortran || !(order == Some(native) || order == Some('=')) {
            return Err(Failure::new(format!(
                "{}: an array processed in pieces (larger than the memory limit, or \
                 --out-of-core) is read straight from the file, which needs C order and {} byte \
                 order; this one is {} ({}) \
                 (numpy.ascontiguousarray(a, dtype='{}') converts it)",
                self.path.display(),
                if native == '<' {
                    "little-endian"
                } else {
                    "big-endian"
                },
                if self.header.fortran {
                    "in Fortran order"
                } else {
                    "in the other byte order"
                },
                self.header.descr,
                &self.header.descr[1..],
            )));
        }
        // SAFETY: the map is read-only and private to this process; like any program that
        // reads a file, rodl assumes the input is not changed or truncated while it runs (a
        // truncation would end the process with SIGBUS, a change would change the data read).
        let map = unsafe { memmap2::Mmap::map(&self.file) }
            .map_err(|e| Failure::io("cannot map", &self.path, &e))?;
        Ok(MappedNpy {
            map,
            path: self.path.clone(),
        })
    }
}

/// Reads ranges of the first axis of an `.npy` array ([`NpyFile::rows`]).
pub struct RowReader<'a, T> {
    npy: &'a NpyFile,
    /// Entries per index of the first axis.
    row: usize,
    swap: bool,
    _values: std::marker::PhantomData<T>,
}

impl<T: NpyScalar> RowReader<'_, T> {
    /// The entries `rows` of the first axis, flat in C order, read by all cores at once
    /// ([`read_array_as`]'s reads); non-finite values are an error that names the first one's
    /// index in the whole array.
    pub fn read(&self, rows: std::ops::Range<usize>) -> Result<Vec<T>, Failure> {
        let path = &self.npy.path;
        let bad = |why: String| Failure::new(format!("{}: {why}", path.display()));
        let mut data = vec![T::zero(); rows.len() * self.row];
        let at =
            self.npy.header.data_offset + (rows.start * self.row * std::mem::size_of::<T>()) as u64;
        let found = read_values_at(&self.npy.file, at, &mut data, self.swap)
            .map_err(|e| bad(format!("cannot read the .npy data: {e}")))?;
        if found > 0 {
            let mut shape = self.npy.header.shape.clone();
            shape[0] = rows.len();
            let view = ndarray::ArrayViewD::from_shape(ndarray::IxDyn(&shape), &data)
                .map_err(|e| bad(e.to_string()))?;
            let (n, first) = non_finite(&view);
            let first = first.map(|mut i| {
                i[0] += rows.start;
                i
            });
            finite_or_fail(path, (n, first))?;
        }
        Ok(data)
    }
}

/// An `.npy` file mapped into memory read-only ([`NpyFile::map`]).
pub struct MappedNpy {
    map: memmap2::Mmap,
    path: std::path::PathBuf,
}

impl MappedNpy {
    /// The data as a flat slice of `T` (the file's type).
    pub fn data<T: NpyScalar>(&self) -> Result<&[T], Failure> {
        let view = ndarray::ArrayViewD::<T>::view_npy(&self.map).map_err(|e| {
            Failure::new(format!(
                "{}: cannot view the .npy data: {e}",
                self.path.display()
            ))
        })?;
        view.to_slice().ok_or_else(|| {
            Failure::new(format!(
                "{}: the data are not contiguous",
                self.path.display()
            ))
        })
    }

    /// Errors unless every entry is finite, with [`read_array`]'s message.
    pub fn check_finite<T: NpyScalar>(&self, shape: &[usize]) -> Result<(), Failure> {
        let data = self.data::<T>()?;
        let view = ArrayViewD::from_shape(shape, data)
            .map_err(|e| Failure::new(format!("{}: {e}", self.path.display())))?;
        finite_or_fail(&self.path, non_finite(&view))
    }
}

#[cfg(test)]
fn read_data(reader: impl Read, dtype: Dtype) -> Result<AnyArray, ndarray_npy::ReadNpyError> {
    Ok(match dtype {
        Dtype::F32 => AnyArray::F32(ArrayD::<f32>::read_npy(reader)?),
        Dtype::F64 => AnyArray::F64(ArrayD::<f64>::read_npy(reader)?),
    })
}

/// An `.npy` output written in place through a memory map
/// ([`crate::output::Outputs::write_in_place`]): created full of zeros, with its disk space reserved first, so that a full disk is an error
/// here rather than a fault when the map is written.
pub struct MappedOutput {
    map: memmap2::MmapMut,
    shape: Vec<usize>,
}

impl MappedOutput {
    /// Writes the header of a C-order array of `T` of `shape` to the empty `file` (open for
    /// reading and writing), extends it to hold the data, reserves the disk space and maps it.
    pub fn create<T: NpyScalar>(file: &File, shape: &[usize]) -> Result<MappedOutput, WriteError> {
        let bytes = shape
            .iter()
            .try_fold(std::mem::size_of::<T>() as u128, |a, &n| {
                a.checked_mul(n as u128)
            })
            .filter(|&b| b <= isize::MAX as u128)
            .ok_or_else(|| {
                WriteError::Failure(Failure::new(format!(
                    "an output of shape {shape:?} has too many entries"
                )))
            })?;
        ndarray_npy::write_zeroed_npy::<T, _>(file, ndarray::IxDyn(shape)).map_err(
            |e| match e {
                ndarray_npy::WriteNpyError::Io(e) => WriteError::Io(e),
                e => {
                    WriteError::Failure(Failure::new(format!("cannot write the .npy header: {e}")))
                }
            },
        )?;
        let len = file.metadata()?.len();
        reserve(file, len).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "{} are needed on disk: {e}",
                    rodl::memory::format_bytes(bytes)
                ),
            )
        })?;
        // SAFETY: `file` is the command's own new temporary file (created exclusively, not
        // shared); nothing else writes or truncates it while it is mapped.
        let map = unsafe { memmap2::MmapMut::map_mut(file)? };
        Ok(MappedOutput {
            map,
            shape: shape.to_vec(),
        })
    }

    /// The data, flat, in C order.
    pub fn data_mut<T: NpyScalar>(&mut self) -> Result<&mut [T], WriteError> {
        let view = ndarray::ArrayViewMutD::<T>::view_mut_npy(&mut self.map).map_err(|e| {
            WriteError::Failure(Failure::new(format!("cannot map the .npy output: {e}")))
        })?;
        view.into_slice()
            .ok_or_else(|| WriteError::Failure(Failure::new("the .npy output is not contiguous")))
    }

    /// Errors unless every entry is finite ([`check_finite`]'s message).
    pub fn check_finite<T: NpyScalar>(&mut self, what: &str, hint: &str) -> Result<(), WriteError> {
        let shape = self.shape.clone();
        let data = self.data_mut::<T>()?;
        let view = ArrayViewD::from_shape(shape, &*data)
            .map_err(|e| WriteError::Failure(Failure::new(e.to_string())))?;
        check_finite(&view, what, hint).map_err(WriteError::Failure)
    }

    /// Writes the mapped data back to the file.
    pub fn flush(&self) -> std::io::Result<()> {
        self.map.flush()
    }
}

/// Reserves the first `len` bytes of `file` on disk (where the file system can), so that
/// writing them through a map cannot run out of space.
fn reserve(file: &File, len: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let Ok(len) = libc::off_t::try_from(len) else {
        return Err(std::io::Error::other(
            "the output is too large for this system",
        ));
    };
    // SAFETY: posix_fallocate on a file descriptor that `file` owns and keeps open.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
    match rc {
        0 => Ok(()),
        // File systems that cannot reserve space: the data are written without a reservation.
        libc::EOPNOTSUPP | libc::EINVAL => Ok(()),
        e => Err(std::io::Error::from_raw_os_error(e)),
    }
}

/// Writes `array` as `.npy` to `out`.
pub fn write_npy(out: &mut dyn Write, array: &AnyArray) -> Result<(), WriteError> {
    let written = match array {
        AnyArray::F32(a) => a.write_npy(out),
        AnyArray::F64(a) => a.write_npy(out),
    };
    written.map_err(|e| match e {
        ndarray_npy::WriteNpyError::Io(e) => WriteError::Io(e),
        e => WriteError::Failure(Failure::new(format!("cannot write the .npy data: {e}"))),
    })
}

/// Writes `array` as `.npy` into the empty regular `file` (open for writing) as fast as the
/// file system allows: the header, then the data by all cores at once with positioned writes of
/// [`IO_CHUNK`] bytes straight from the array's memory (no intermediate buffer), each chunk's
/// write-back to the disk started as soon as it is written (`sync_file_range`, Linux), so
/// that the caller's `fsync` finds little left to do. An array not in standard layout is
/// written with [`write_npy`]. Errors (a full disk, `ulimit -f`) are `WriteError::Io`.
pub fn write_npy_file(file: &File, array: &AnyArray) -> Result<(), WriteError> {
    match array {
        AnyArray::F32(a) => write_npy_file_as(file, a),
        AnyArray::F64(a) => write_npy_file_as(file, a),
    }
}

fn write_npy_file_as<T: NpyScalar>(file: &File, a: &ArrayD<T>) -> Result<(), WriteError> {
    use std::os::unix::fs::FileExt;
    let Some(data) = a.as_slice() else {
        let mut w = std::io::BufWriter::new(file);
        write_npy(&mut w, &T::wrap(a.clone()))?;
        return w.flush().map_err(WriteError::Io);
    };
    let header = npy_header::<T>(a.shape())?;
    file.write_all_at(&header, 0)?;
    write_values_at(file, header.len() as u64, data)?;
    Ok(())
}

/// The `.npy` header (preamble included) of a C-order array of `T` of shape `shape`: the data
/// follow it.
pub fn npy_header<T: NpyScalar>(shape: &[usize]) -> Result<Vec<u8>, WriteError> {
    ndarray_npy::npy::header::Header {
        type_descriptor: <T as ndarray_npy::WritableElement>::type_descriptor(),
        layout: ndarray_npy::npy::header::Layout::Standard,
        shape: shape.to_vec(),
    }
    .to_bytes()
    .map_err(|e| WriteError::Failure(Failure::new(format!("cannot write the .npy header: {e}"))))
}

/// Writes `data` into `file` from byte `at` on, by all cores at once with positioned writes of
/// [`IO_CHUNK`] bytes straight from `data`'s memory, each chunk's write-back to the disk
/// started as soon as it is written.
pub fn write_values_at<T: NpyScalar>(file: &File, at: u64, data: &[T]) -> std::io::Result<()> {
    use rayon::prelude::*;
    use std::os::unix::fs::FileExt;
    let size = std::mem::size_of::<T>();
    let per = IO_CHUNK / size;
    data.par_chunks(per)
        .enumerate()
        .try_for_each(|(k, c)| -> std::io::Result<()> {
            // SAFETY: the bytes of the chunk's values (f32 or f64: no padding), read only.
            let bytes = unsafe {
                std::slice::from_raw_parts(c.as_ptr().cast::<u8>(), std::mem::size_of_val(c))
            };
            let at = at + (k * per * size) as u64;
            file.write_all_at(bytes, at)?;
            start_write_back(file, at, bytes.len());
            Ok(())
        })
}

/// Asks the kernel to start writing `len` bytes of `file` from `at` to the disk now (without
/// waiting); a hint: failures are ignored (the caller's `fsync` makes the data durable).
fn start_write_back(file: &File, at: u64, len: usize) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        if let (Ok(at), Ok(len)) = (libc::off64_t::try_from(at), libc::off64_t::try_from(len)) {
            // SAFETY: sync_file_range on a file descriptor that `file` owns and keeps open; it
            // only starts the write-back of pages already written.
            unsafe {
                libc::sync_file_range(file.as_raw_fd(), at, len, libc::SYNC_FILE_RANGE_WRITE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, at, len);
}

/// Errors unless every entry of `array` is finite; `what` says what it is ("the
/// reconstruction") and `hint` what may have caused overflow.
pub fn check_finite<T: num_traits::Float + Send + Sync>(
    array: &ArrayViewD<'_, T>,
    what: &str,
    hint: &str,
) -> Result<(), Failure> {
    check_finite_rows(array, 0, what, hint)
}

/// [`check_finite`] of the rows of a larger array from index `first_row` of its first axis on:
/// the index named is the one in the whole array.
pub fn check_finite_rows<T: num_traits::Float + Send + Sync>(
    array: &ArrayViewD<'_, T>,
    first_row: usize,
    what: &str,
    hint: &str,
) -> Result<(), Failure> {
    if let (n @ 1.., Some(mut first)) = non_finite(array) {
        if let Some(i) = first.first_mut() {
            *i += first_row;
        }
        return Err(Failure::new(format!(
            "{what} has {n} non-finite value{} (NaN or Inf; the first at index {first:?}), so \
             nothing was written: {hint}",
            if n == 1 { "" } else { "s" }
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `.npy` file of version 1 with this header dictionary and `data` bytes.
    fn npy(dict: &str, data: &[u8]) -> Vec<u8> {
        let mut header = dict.as_bytes().to_vec();
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(b' ');
        }
        header.push(b'\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(data);
        out
    }

    /// The parallel reader: byte orders, Fortran order, float64, more than one chunk, and the
    /// first non-finite entry in logical order; the parallel writer writes what NumPy reads.
    #[test]
    fn the_parallel_reader_and_writer_keep_orders_and_find_non_finite_values() {
        let dir = std::env::temp_dir().join(format!("rodl-io-par-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.npy");
        // 2 × 3, values 0..6 in C order; stored big-endian and in Fortran order.
        let fortran: Vec<u8> = [0.0f32, 3.0, 1.0, 4.0, 2.0, 5.0]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        let dict = "{'descr': '>f4', 'fortran_order': True, 'shape': (2, 3), }";
        std::fs::write(&path, npy(dict, &fortran)).unwrap();
        let a = read_array_as::<f32>(&path).unwrap();
        let want = ndarray::Array2::from_shape_fn([2, 3], |(i, j)| (3 * i + j) as f32).into_dyn();
        assert_eq!(a, want);
        assert!(read_array_as::<f64>(&path).is_err());
        // float64 over more than one chunk, a NaN late in memory order.
        let n = IO_CHUNK / 8 * 2 + 5;
        let mut v: Vec<f64> = (0..n).map(|i| i as f64).collect();
        v[n - 3] = f64::NAN;
        v[n - 1] = f64::INFINITY;
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        let dict = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({n},), }}");
        std::fs::write(&path, npy(&dict, &bytes)).unwrap();
        let e = read_array(&path).err().unwrap().message;
        assert!(
            e.contains("2 non-finite values") && e.contains(&format!("[{}]", n - 3)),
            "{e}"
        );
        v[n - 3] = 1.0;
        v[n - 1] = 2.0;
        let arr = ndarray::Array1::from(v).into_dyn();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        assert!(write_npy_file(&file, &AnyArray::F64(arr.clone())).is_ok());
        drop(file);
        match read_array(&path) {
            Ok(AnyArray::F64(b)) => assert_eq!(b, arr),
            _ => panic!("the written file reads back"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn headers_are_checked_against_the_file_length() {
        let ok = npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
            &[0; 8],
        );
        assert_eq!(read_npy_bytes(&ok).map(|a| a.shape().to_vec()), Ok(vec![2]));
        let huge = npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (64, 100000000000), }",
            &[0; 16],
        );
        let e = read_npy_bytes(&huge).err().unwrap_or_default();
        assert!(e.contains("needs 25600000000000 bytes"), "{e}");
        let short = npy(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }",
            &[0; 8],
        );
        assert!(read_npy_bytes(&short).is_err());
        let deep = npy(
            &format!("{{'descr': '<f4', 'shape': {}", "(".repeat(5000)),
            &[],
        );
        assert!(read_npy_bytes(&deep).is_err());
        let empty_huge = npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 9223372036854775807, 4), }",
            &[],
        );
        assert!(read_npy_bytes(&empty_huge).is_err());
        let int = npy(
            "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }",
            &[0; 8],
        );
        assert!(read_npy_bytes(&int)
            .err()
            .unwrap_or_default()
            .contains("unsupported dtype"));
    }
}
