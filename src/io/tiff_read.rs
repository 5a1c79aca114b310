//! TIFF stacks in: a folder of TIFF files, a pattern, or one multi-page file, with grayscale
//! pages of 8- or 16-bit unsigned integers or 32-bit floats (see [`TiffStack`]).

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use ndarray::{ArrayViewMut3, Axis};
use tiff::decoder::{Decoder, DecodingResult, Limits};
use tiff::tags::Tag;
use tiff::ColorType;

use super::file_list::list_stack_files;
use super::frames::{
    check_read, check_read_count, check_rows, put_image, read_rows_by_frames, FrameStack,
};
use crate::memory::check_host_alloc;
use crate::{Error, Result};

/// The pixel types of the TIFF pages that [`TiffStack`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TiffPixel {
    /// 8-bit unsigned integers.
    U8,
    /// 16-bit unsigned integers.
    U16,
    /// 32-bit IEEE floats.
    F32,
}

impl TiffPixel {
    /// Bytes per pixel.
    pub fn bytes(self) -> usize {
        match self {
            TiffPixel::U8 => 1,
            TiffPixel::U16 => 2,
            TiffPixel::F32 => 4,
        }
    }
}

impl std::fmt::Display for TiffPixel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TiffPixel::U8 => "8-bit unsigned integer",
            TiffPixel::U16 => "16-bit unsigned integer",
            TiffPixel::F32 => "32-bit float",
        })
    }
}

/// One file of a stack and its number of pages.
#[derive(Clone, Debug)]
struct StackFile {
    path: PathBuf,
    pages: usize,
    /// The index of the stack's first frame in this file.
    first: usize,
}

/// An open decoder positioned at a page of one file.
struct OpenPage {
    file: usize,
    page: usize,
    decoder: Decoder<BufReader<File>>,
}

/// A stack of TIFF images read as detector frames `[u, v]` (image columns × image rows; see
/// [`crate::io::frames`](super::FrameStack) for the orientation), in chunks.
///
/// [`TiffStack::open`] takes a folder (its `*.tif`/`*.tiff` files), a pattern such as
/// `scan/proj_*.tif` (`*` and `?` in the last component) or one file; files are taken in
/// natural order of their names (`p2` before `p10`) and every page of every file is a frame, so
/// one multi-page file and a folder of single-page files are read alike. Every page must be a
/// grayscale image of 8- or 16-bit unsigned integers or 32-bit floats ([`TiffPixel`]), of one
/// size and one pixel type throughout: anything else — a missing folder, no files, a non-TIFF or
/// truncated file, colour pages, other sample formats, mixed sizes or types — is an
/// [`Error::Io`] naming the file and the page. Values are converted to `f32` unscaled.
///
/// ```no_run
/// use rodl::io::{read_all_frames, FrameStack, TiffStack};
/// let mut stack = TiffStack::open("scan/projections")?;
/// println!("{} frames of {:?} ({})", stack.len(), stack.frame_shape(), stack.pixel());
/// let frames = read_all_frames(&mut stack)?; // [frames, u, v], f32
/// # Ok::<(), rodl::Error>(())
/// ```
pub struct TiffStack {
    source: PathBuf,
    files: Vec<StackFile>,
    frames: usize,
    /// `[nu, nv]` = `[width, height]`.
    shape: [usize; 2],
    pixel: TiffPixel,
    open: Option<OpenPage>,
    buffer: DecodingResult,
    /// Per frame, once looked at: where an uncompressed page's rows lie (`None`: a compressed
    /// or tiled page, decoded whole).
    layouts: Vec<Option<Option<std::sync::Arc<RawLayout>>>>,
}

/// Where the rows of an uncompressed, stripped page lie in its file.
#[derive(Debug)]
struct RawLayout {
    offsets: Vec<u64>,
    rows_per_strip: usize,
    little_endian: bool,
}

impl std::fmt::Debug for TiffStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiffStack")
            .field("source", &self.source)
            .field("files", &self.files.len())
            .field("frames", &self.frames)
            .field("shape", &self.shape)
            .field("pixel", &self.pixel)
            .finish()
    }
}

fn io_err(path: &Path, message: impl Into<String>) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// The message of a TIFF error, with an I/O error's "unexpected end of file" spelled out.
fn tiff_message(e: &tiff::TiffError) -> String {
    match e {
        tiff::TiffError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            "the file ends early (truncated?)".into()
        }
        tiff::TiffError::FormatError(tiff::TiffFormatError::TiffSignatureNotFound) => {
            "not a TIFF file (no TIFF signature)".into()
        }
        e => format!("not a readable TIFF file: {e}"),
    }
}

/// The decoder limits for pages of `bytes` bytes (checked against the memory limit before).
fn limits(bytes: usize) -> Limits {
    let mut l = Limits::default();
    l.decoding_buffer_size = l.decoding_buffer_size.max(bytes.saturating_add(1024));
    l.intermediate_buffer_size = l.intermediate_buffer_size.max(bytes.saturating_add(1024));
    l
}

/// The page's size `[width, height]` and pixel type, and a check that its strips or tiles lie
/// inside the file of `file_len` bytes.
fn page_header(
    decoder: &mut Decoder<BufReader<File>>,
    path: &Path,
    page: usize,
    file_len: u64,
) -> Result<([usize; 2], TiffPixel)> {
    let at = |m: String| io_err(path, format!("page {page}: {m}"));
    let (w, h) = decoder.dimensions().map_err(|e| at(tiff_message(&e)))?;
    let color = decoder.colortype().map_err(|e| at(tiff_message(&e)))?;
    // One value per sample (several for colour pages).
    let format = decoder
        .find_tag_unsigned_vec::<u16>(Tag::SampleFormat)
        .map_err(|e| at(tiff_message(&e)))?
        .and_then(|v| v.first().copied())
        .unwrap_or(1);
    let pixel = match (color, format) {
        (ColorType::Gray(8), 1) => TiffPixel::U8,
        (ColorType::Gray(16), 1) => TiffPixel::U16,
        (ColorType::Gray(32), 3) => TiffPixel::F32,
        (ColorType::Gray(bits), f) => {
            let kind = match f {
                1 => "unsigned integer",
                2 => "signed integer",
                3 => "float",
                5 => "complex integer",
                6 => "complex float",
                _ => "untyped",
            };
            return Err(at(format!(
                "{bits}-bit {kind} pixels; rodl reads grayscale pages of 8- or 16-bit \
                 unsigned integers or 32-bit floats"
            )));
        }
        (c, _) => {
            return Err(at(format!(
                "{c:?} pixels; rodl reads grayscale pages of 8- or 16-bit unsigned integers \
                 or 32-bit floats"
            )))
        }
    };
    if w == 0 || h == 0 {
        return Err(at(format!("an empty page of {w} × {h} pixels")));
    }
    // The data of every strip (or tile) must lie inside the file.
    let (offsets, counts) = match decoder
        .find_tag_unsigned_vec::<u64>(Tag::StripOffsets)
        .map_err(|e| at(tiff_message(&e)))?
    {
        Some(o) => (
            o,
            decoder
                .find_tag_unsigned_vec::<u64>(Tag::StripByteCounts)
                .map_err(|e| at(tiff_message(&e)))?,
        ),
        None => (
            decoder
                .find_tag_unsigned_vec::<u64>(Tag::TileOffsets)
                .map_err(|e| at(tiff_message(&e)))?
                .unwrap_or_default(),
            decoder
                .find_tag_unsigned_vec::<u64>(Tag::TileByteCounts)
                .map_err(|e| at(tiff_message(&e)))?,
        ),
    };
    if let Some(counts) = counts {
        for (o, c) in offsets.iter().zip(&counts) {
            if o.checked_add(*c).is_none_or(|end| end > file_len) {
                return Err(at(format!(
                    "the image data run to byte {} but the file has {file_len} bytes \
                     (truncated?)",
                    o.saturating_add(*c)
                )));
            }
        }
    }
    Ok(([w as usize, h as usize], pixel))
}

fn open_decoder(path: &Path, bytes: usize) -> Result<(Decoder<BufReader<File>>, u64)> {
    let file = File::open(path).map_err(|e| io_err(path, e.to_string()))?;
    let len = file
        .metadata()
        .map_err(|e| io_err(path, e.to_string()))?
        .len();
    let decoder = Decoder::new(BufReader::new(file))
        .map_err(|e| io_err(path, tiff_message(&e)))?
        .with_limits(limits(bytes));
    Ok((decoder, len))
}

impl TiffStack {
    /// Opens the stack `source` (a folder, a pattern or a file; see [`TiffStack`]) and checks
    /// the header of every page: sizes, pixel types, and that the image data lie inside the
    /// files. No pixel data are read yet.
    pub fn open(source: impl AsRef<Path>) -> Result<Self> {
        let source = source.as_ref();
        let paths = list_stack_files(source)?;
        let mut files = Vec::with_capacity(paths.len());
        let mut first_page: Option<(PathBuf, [usize; 2], TiffPixel)> = None;
        let mut frames = 0usize;
        for path in paths {
            let (mut decoder, len) = open_decoder(&path, 0)?;
            let mut pages = 0usize;
            loop {
                let (shape, pixel) = page_header(&mut decoder, &path, pages, len)?;
                match &first_page {
                    None => first_page = Some((path.clone(), shape, pixel)),
                    Some((p0, s0, x0)) => {
                        if shape != *s0 {
                            return Err(io_err(
                                &path,
                                format!(
                                    "page {pages} has {} × {} pixels (columns × rows), but {} \
                                     has {} × {}: a stack has one frame size",
                                    shape[0],
                                    shape[1],
                                    p0.display(),
                                    s0[0],
                                    s0[1]
                                ),
                            ));
                        }
                        if pixel != *x0 {
                            return Err(io_err(
                                &path,
                                format!(
                                    "page {pages} has {pixel} pixels, but {} has {x0} pixels: \
                                     a stack has one pixel type",
                                    p0.display()
                                ),
                            ));
                        }
                    }
                }
                pages += 1;
                if !decoder.more_images() {
                    break;
                }
                decoder
                    .next_image()
                    .map_err(|e| io_err(&path, format!("page {pages}: {}", tiff_message(&e))))?;
            }
            files.push(StackFile {
                path,
                pages,
                first: frames,
            });
            frames += pages;
        }
        let (_, shape, pixel) = first_page.ok_or_else(|| io_err(source, "no TIFF pages"))?;
        Ok(Self {
            source: source.to_path_buf(),
            files,
            frames,
            shape,
            pixel,
            open: None,
            buffer: DecodingResult::U8(Vec::new()),
            layouts: vec![None; frames],
        })
    }

    /// The files of the stack, in order.
    pub fn files(&self) -> Vec<&Path> {
        self.files.iter().map(|f| f.path.as_path()).collect()
    }

    /// The pixel type of the pages.
    pub fn pixel(&self) -> TiffPixel {
        self.pixel
    }

    /// The file and page of frame `k`.
    fn locate(&self, k: usize) -> (usize, usize) {
        let i = self.files.partition_point(|f| f.first + f.pages <= k);
        (i, k - self.files[i].first)
    }

    /// Where frame `k`'s rows lie in its file when its page is uncompressed and stored in
    /// strips (looked at once per frame), else `None`.
    fn layout(&mut self, k: usize) -> Result<Option<std::sync::Arc<RawLayout>>> {
        if let Some(known) = &self.layouts[k] {
            return Ok(known.clone());
        }
        let (i, page) = self.locate(k);
        let path = self.files[i].path.clone();
        let [nu, nv] = self.shape;
        let bpp = self.pixel.bytes();
        let at = |e: tiff::TiffError| io_err(&path, format!("page {page}: {}", tiff_message(&e)));
        let decoder = self.goto(i, page)?;
        let little_endian = matches!(decoder.byte_order(), tiff::tags::ByteOrder::LittleEndian);
        let first = |v: Option<Vec<u64>>| v.and_then(|v| v.first().copied());
        let compression = first(
            decoder
                .find_tag_unsigned_vec::<u64>(Tag::Compression)
                .map_err(at)?,
        );
        let tiled = decoder
            .find_tag_unsigned_vec::<u64>(Tag::TileOffsets)
            .map_err(at)?
            .is_some();
        let offsets = decoder
            .find_tag_unsigned_vec::<u64>(Tag::StripOffsets)
            .map_err(at)?;
        let counts = decoder
            .find_tag_unsigned_vec::<u64>(Tag::StripByteCounts)
            .map_err(at)?;
        let rps = first(
            decoder
                .find_tag_unsigned_vec::<u64>(Tag::RowsPerStrip)
                .map_err(at)?,
        )
        .map(|r| (r as usize).clamp(1, nv))
        .unwrap_or(nv);
        let layout = match (compression.unwrap_or(1), tiled, offsets, counts) {
            (1, false, Some(offsets), Some(counts))
                if offsets.len() == nv.div_ceil(rps) && counts.len() == offsets.len() =>
            {
                // Every strip holds its rows in full (uncompressed, one sample per pixel).
                let full = counts.iter().enumerate().all(|(s, &c)| {
                    let rows = rps.min(nv - s * rps);
                    c >= (rows * nu * bpp) as u64
                });
                full.then(|| {
                    std::sync::Arc::new(RawLayout {
                        offsets,
                        rows_per_strip: rps,
                        little_endian,
                    })
                })
            }
            _ => None,
        };
        self.layouts[k] = Some(layout.clone());
        Ok(layout)
    }

    /// Positions the open decoder at `page` of file `i`.
    fn goto(&mut self, i: usize, page: usize) -> Result<&mut Decoder<BufReader<File>>> {
        let path = self.files[i].path.clone();
        let reuse = matches!(&self.open, Some(o) if o.file == i && o.page <= page);
        if !reuse {
            let bytes = self.shape[0] * self.shape[1] * self.pixel.bytes();
            let (decoder, _) = open_decoder(&path, bytes)?;
            self.open = Some(OpenPage {
                file: i,
                page: 0,
                decoder,
            });
        }
        let open = self.open.as_mut().expect("set above");
        while open.page < page {
            open.decoder.next_image().map_err(|e| {
                io_err(
                    &path,
                    format!("page {}: {}", open.page + 1, tiff_message(&e)),
                )
            })?;
            open.page += 1;
        }
        Ok(&mut open.decoder)
    }
}

impl FrameStack for TiffStack {
    fn source(&self) -> &Path {
        &self.source
    }

    fn len(&self) -> usize {
        self.frames
    }

    fn frame_shape(&self) -> [usize; 2] {
        self.shape
    }

    fn read_rows_into(
        &mut self,
        first: usize,
        rows: std::ops::Range<usize>,
        mut out: ArrayViewMut3<'_, f32>,
    ) -> Result<()> {
        check_read_count(self, first, out.shape()[0])?;
        let [nu, nv] = self.shape;
        check_rows(&self.source, nv, &rows, [nu, rows.len()], &out)?;
        if rows.is_empty() {
            return Ok(());
        }
        let bpp = self.pixel.bytes();
        let row_bytes = nu * bpp;
        let mut bytes = vec![0u8; row_bytes * rows.len()];
        let mut file: Option<(usize, File)> = None;
        for j in 0..out.shape()[0] {
            let k = first + j;
            let Some(layout) = self.layout(k)? else {
                read_rows_by_frames(
                    self,
                    k,
                    rows.clone(),
                    out.slice_mut(ndarray::s![j..j + 1, .., ..]),
                )?;
                continue;
            };
            let (i, page) = self.locate(k);
            let path = &self.files[i].path;
            if file.as_ref().is_none_or(|(f, _)| *f != i) {
                let f = File::open(path).map_err(|e| io_err(path, e.to_string()))?;
                file = Some((i, f));
            }
            let Some((_, f)) = file.as_ref() else {
                continue;
            };
            // Image rows r0..r1 (top down) are the rows v = nv − 1 − r.
            let (r0, r1) = (nv - rows.end, nv - rows.start);
            let mut r = r0;
            while r < r1 {
                let strip = r / layout.rows_per_strip;
                let end = ((strip + 1) * layout.rows_per_strip).min(r1);
                let at = layout.offsets[strip]
                    + ((r - strip * layout.rows_per_strip) * row_bytes) as u64;
                let dst = &mut bytes[(r - r0) * row_bytes..(end - r0) * row_bytes];
                std::os::unix::fs::FileExt::read_exact_at(f, dst, at).map_err(|e| {
                    io_err(
                        path,
                        format!("page {page}: rows {r}..{end}: {} (truncated?)", e),
                    )
                })?;
                r = end;
            }
            let mut frame = out.index_axis_mut(Axis(0), j);
            let le = layout.little_endian;
            for (t, line) in bytes.chunks_exact(row_bytes).enumerate() {
                let mut col = frame.index_axis_mut(Axis(1), rows.len() - 1 - t);
                for (u, o) in col.iter_mut().enumerate() {
                    let b = &line[u * bpp..(u + 1) * bpp];
                    *o = match (self.pixel, le) {
                        (TiffPixel::U8, _) => b[0] as f32,
                        (TiffPixel::U16, true) => u16::from_le_bytes([b[0], b[1]]) as f32,
                        (TiffPixel::U16, false) => u16::from_be_bytes([b[0], b[1]]) as f32,
                        (TiffPixel::F32, true) => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                        (TiffPixel::F32, false) => f32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                    };
                }
            }
        }
        Ok(())
    }

    fn read_into(&mut self, first: usize, mut out: ArrayViewMut3<'_, f32>) -> Result<()> {
        check_read(self, first, &out)?;
        let [nu, nv] = self.shape;
        check_host_alloc(
            &format!("a TIFF page of {nu} × {nv} pixels"),
            nu * nv,
            self.pixel.bytes(),
        )?;
        for (j, frame) in out.axis_iter_mut(Axis(0)).enumerate() {
            let (i, page) = self.locate(first + j);
            let path = self.files[i].path.clone();
            let pixel = self.pixel;
            let mut buffer = std::mem::replace(&mut self.buffer, DecodingResult::U8(Vec::new()));
            let decoder = self.goto(i, page)?;
            let result = decoder.read_image_to_buffer(&mut buffer);
            if result.is_err() {
                // A failed decoder is not reused.
                self.open = None;
            }
            result.map_err(|e| io_err(&path, format!("page {page}: {}", tiff_message(&e))))?;
            let wrong = |got: &str| {
                io_err(
                    &path,
                    format!("page {page} decodes to {got} pixels, expected {pixel} pixels"),
                )
            };
            match (&buffer, pixel) {
                (DecodingResult::U8(v), TiffPixel::U8) if v.len() == nu * nv => put_image(v, frame),
                (DecodingResult::U16(v), TiffPixel::U16) if v.len() == nu * nv => {
                    put_image(v, frame)
                }
                (DecodingResult::F32(v), TiffPixel::F32) if v.len() == nu * nv => {
                    put_image(v, frame)
                }
                (DecodingResult::U8(_), _) => return Err(wrong("8-bit")),
                (DecodingResult::U16(_), _) => return Err(wrong("16-bit")),
                (DecodingResult::F32(_), _) => return Err(wrong("32-bit float")),
                _ => return Err(wrong("other")),
            }
            self.buffer = buffer;
        }
        Ok(())
    }
}
