//! The input of `rodl scan`: a TIFF stack, an NXtomo or a DXchange file opened as a stream of
//! projections with its flats, darks and metadata, and the command line's overrides of that
//! metadata (angles, pixel size, distances).

use std::path::Path;

use rodl::io::{FileValue, FrameStack, Frames, ScanInfo, TiffStack};

use crate::args::ScanArgs;
use crate::Failure;

/// An opened scan: its metadata (with the overrides applied), flats, darks and projections.
pub struct ScanInput {
    /// What the file says (and the command line overrides).
    pub info: ScanInfo,
    /// The flat fields.
    pub flats: Frames,
    /// The dark fields.
    pub darks: Frames,
    /// The projections, read in chunks of views.
    pub projections: Box<dyn FrameStack + Send>,
    /// The format's name, for `--verbose`.
    pub format: &'static str,
}

impl ScanInput {
    /// Errors unless the flat fields that `--flat-field` needs are there (the message names
    /// the file and, for TIFF stacks, `--flats DIR`).
    pub fn check_flats(&self, args: &ScanArgs) -> Result<(), Failure> {
        if args.flat_field && self.flats.is_empty() {
            return Err(Failure::new(format!(
                "{} has no flat fields{}: give them, or --flat-field false for data that are \
                 normalised already",
                args.input.display(),
                if self.format == "TIFF" {
                    " (--flats DIR)"
                } else {
                    ""
                }
            )));
        }
        Ok(())
    }

    /// Takes the flats and darks out (leaving empty frames) with each projection's position
    /// among the flats (NXtomo), for the slabs' preprocessing.
    pub fn take_frames(&mut self) -> (Frames, Frames, Option<Vec<f64>>) {
        let [nu, nv] = self.info.detector_shape;
        let positions = self
            .info
            .projection_positions
            .as_ref()
            .map(|p| p.iter().map(|&k| k as f64).collect());
        let flats = std::mem::replace(&mut self.flats, Frames::empty([nu, nv]));
        let darks = std::mem::replace(&mut self.darks, Frames::empty([nu, nv]));
        (flats, darks, positions)
    }
}

/// Whether `path` names an HDF5 file (by its extension).
fn is_hdf5(path: &Path) -> bool {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    matches!(
        ext.as_deref(),
        Some("h5" | "hdf5" | "hdf" | "nx" | "nxs" | "cxi")
    )
}

/// Opens the scan of `args` and applies the command line's overrides.
pub fn open(args: &ScanArgs) -> Result<ScanInput, Failure> {
    let path = args.input.as_path();
    let mut input = if is_hdf5(path) {
        open_hdf5(path, args.entry.as_deref())?
    } else {
        if args.entry.is_some() {
            return Err(Failure::usage(
                "--entry applies to NXtomo files (.nxs, .h5), not to TIFF stacks",
            ));
        }
        open_tiff(path, args)?
    };
    if input.format != "TIFF" && (args.flats.is_some() || args.darks.is_some()) {
        return Err(Failure::usage(format!(
            "--flats and --darks apply to TIFF stacks; {} holds its own",
            path.display()
        )));
    }
    if let Some(text) = &args.angles {
        input.info.angles = parse_angles(text, input.projections.len())?;
    }
    let mm = |option: &str, v: f64| FileValue::found(option, v * 1e-3);
    if let Some(p) = args.pixel_size {
        input.info.pixel_size = [mm("--pixel-size", p), mm("--pixel-size", p)];
        input.info.sample_pixel_size = [mm("--pixel-size", p), mm("--pixel-size", p)];
    }
    if let Some(d) = args.source_distance {
        input.info.source_distance = mm("--source-distance", d);
    }
    if let Some(e) = args.energy {
        input.info.energy = FileValue::found("--energy", e);
    }
    if let Some(d) = args.detector_distance {
        input.info.detector_distance = mm("--detector-distance", d);
    }
    Ok(input)
}

/// A TIFF stack with flats and darks from their own stacks; the angles default to `0:180`.
fn open_tiff(path: &Path, args: &ScanArgs) -> Result<ScanInput, Failure> {
    let stack = TiffStack::open(path)?;
    let shape = stack.frame_shape();
    let angles = match &args.angles {
        Some(text) => parse_angles(text, stack.len())?,
        None => parse_angles("0:180", stack.len())?,
    };
    let info = ScanInfo::for_tiff(path, shape, angles, stack.len())?;
    let read_other = |p: Option<&Path>, what: &str| -> Result<Frames, Failure> {
        let Some(p) = p else {
            return Ok(Frames::empty(shape));
        };
        let mut s = TiffStack::open(p)?;
        if s.frame_shape() != shape {
            return Err(Failure::new(format!(
                "{}: {what} of {} × {} pixels, but the projections have {} × {}",
                p.display(),
                s.frame_shape()[1],
                s.frame_shape()[0],
                shape[1],
                shape[0]
            )));
        }
        Ok(Frames {
            data: rodl::io::read_all_frames(&mut s)?,
            positions: None,
        })
    };
    let flats = read_other(args.flats.as_deref(), "flats")?;
    let darks = read_other(args.darks.as_deref(), "darks")?;
    Ok(ScanInput {
        info,
        flats,
        darks,
        projections: Box::new(stack),
        format: "TIFF",
    })
}

/// An NXtomo file (when it has an NXtomo entry) or else a DXchange file.
#[cfg(feature = "hdf5")]
fn open_hdf5(path: &Path, entry: Option<&str>) -> Result<ScanInput, Failure> {
    use rodl::io::{DxFile, NxTomoFile};
    let entries = NxTomoFile::entries(path)?;
    if !entries.is_empty() || entry.is_some() {
        let file = match entry {
            Some(e) => NxTomoFile::open_entry(path, e)?,
            None => NxTomoFile::open(path)?,
        };
        return Ok(ScanInput {
            info: file.info().clone(),
            flats: file.flats().clone(),
            darks: file.darks().clone(),
            projections: Box::new(file),
            format: "NXtomo",
        });
    }
    let file = DxFile::open(path)?;
    Ok(ScanInput {
        info: file.info().clone(),
        flats: file.flats().clone(),
        darks: file.darks().clone(),
        projections: Box::new(file),
        format: "DXchange",
    })
}

/// Without HDF5 support: an error that says so.
#[cfg(not(feature = "hdf5"))]
fn open_hdf5(path: &Path, _entry: Option<&str>) -> Result<ScanInput, Failure> {
    Err(Failure::new(format!(
        "{}: this rodl was built without HDF5 support (NXtomo, DXchange): build it with \
         `cargo install --path cli --features hdf5` (needs libhdf5), or convert the scan to TIFF",
        path.display()
    )))
}

/// `--angles`: `START:STOP` in degrees (endpoint excluded) for `n` projections, or a text file
/// of one angle in degrees per line (blank lines and `#` comments skipped). Returns radians.
pub fn parse_angles(text: &str, n: usize) -> Result<Vec<f64>, Failure> {
    let range = text.split_once(':').and_then(|(a, b)| {
        let a: f64 = a.trim().parse().ok()?;
        let b: f64 = b.trim().parse().ok()?;
        Some((a, b))
    });
    if let Some((a, b)) = range {
        if !(a.is_finite() && b.is_finite() && a != b) {
            return Err(Failure::usage(format!(
                "--angles {text}: START and STOP must be finite and differ"
            )));
        }
        let step = (b - a) / n.max(1) as f64;
        return Ok((0..n).map(|k| (a + k as f64 * step).to_radians()).collect());
    }
    let path = Path::new(text);
    let content = std::fs::read_to_string(path).map_err(|e| {
        Failure::usage(format!(
            "--angles expects START:STOP (degrees) or a text file of angles: cannot read \
             {text:?}: {}",
            crate::io_message(&e)
        ))
    })?;
    let mut angles = Vec::new();
    for (line_no, line) in content.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        match line.parse::<f64>() {
            Ok(v) if v.is_finite() => angles.push(v.to_radians()),
            _ => {
                return Err(Failure::new(format!(
                    "{}:{}: expected an angle in degrees, got {line:?}",
                    path.display(),
                    line_no + 1
                )))
            }
        }
    }
    if angles.len() != n {
        return Err(Failure::new(format!(
            "{} holds {} angles, but the scan has {n} projections",
            path.display(),
            angles.len()
        )));
    }
    Ok(angles)
}
