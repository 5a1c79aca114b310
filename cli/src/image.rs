//! PNG pictures of results: `--png`, `--window` and `--slice`, written through
//! `rodl::io` (atomically).

use std::path::{Path, PathBuf};
use std::str::FromStr;

use clap::Args;
use rodl::io::{write_png, write_png_slice, Window};
use rodl::{Element, Scalar};

use crate::Failure;

/// The PNG options shared by the commands that write an image or a volume.
#[derive(Args, Debug, Clone, Default)]
pub struct ImageArgs {
    /// Also write a PNG picture of the result (a 2D image, or a slice of a 3D volume), shown
    /// as ODL's `show()` shows it: x to the right, y upwards.
    #[arg(long, value_name = "OUT.png")]
    pub png: Option<PathBuf>,
    /// Gray-level window of the PNG: `LO:HI` (LO black, HI white, values outside clipped) or
    /// `auto` (the picture's own range).
    #[arg(
        long,
        value_name = "LO:HI",
        default_value = "auto",
        allow_hyphen_values = true
    )]
    pub window: WindowArg,
    /// For a 3D volume, the slice shown in the PNG: `AXIS:INDEX` (axis 0, 1 or 2; default the
    /// middle slice along z, `2:nz/2`).
    #[arg(long, value_name = "AXIS:INDEX")]
    pub slice: Option<SliceArg>,
}

/// A parsed `--window`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WindowArg(pub Window);

impl FromStr for WindowArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim().eq_ignore_ascii_case("auto") {
            return Ok(WindowArg(Window::Auto));
        }
        let bad = || format!("expected LO:HI with finite numbers LO < HI, or auto; got {s:?}");
        let (lo, hi) = s.split_once(':').ok_or_else(bad)?;
        let lo: f64 = lo.trim().parse().map_err(|_| bad())?;
        let hi: f64 = hi.trim().parse().map_err(|_| bad())?;
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(bad());
        }
        Ok(WindowArg(Window::Range { min: lo, max: hi }))
    }
}

/// A parsed `--slice AXIS:INDEX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceArg {
    /// The axis cut across (0, 1 or 2).
    pub axis: usize,
    /// The slice's index along that axis.
    pub index: usize,
}

impl FromStr for SliceArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("expected AXIS:INDEX with AXIS 0, 1 or 2; got {s:?}");
        let (a, i) = s.split_once(':').ok_or_else(bad)?;
        let axis: usize = a.trim().parse().map_err(|_| bad())?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        if axis > 2 {
            return Err(bad());
        }
        Ok(SliceArg { axis, index })
    }
}

impl ImageArgs {
    /// Checks, before any work, that the PNG can be written for data of shape `shape` and does
    /// not collide with the other outputs (`others`).
    pub fn check(&self, shape: &[usize], others: &[&Path]) -> Result<(), Failure> {
        let Some(png) = &self.png else {
            if self.slice.is_some() {
                return Err(Failure::new("--slice needs --png"));
            }
            return Ok(());
        };
        if others.iter().any(|o| same_file(o, png)) {
            return Err(Failure::new(format!(
                "--png {} is also another output of the command",
                png.display()
            )));
        }
        check_writable(png)?;
        match (shape.len(), self.slice) {
            (2, Some(_)) => Err(Failure::new("--slice applies to 3D volumes only")),
            (3, Some(SliceArg { axis, index })) if index >= shape[axis] => {
                Err(Failure::new(format!(
                    "--slice {axis}:{index} is out of range: axis {axis} has {} slices",
                    shape[axis]
                )))
            }
            _ => Ok(()),
        }
    }

    /// Writes the PNG of `x` (host element) if `--png` was given.
    pub fn write<T: Scalar>(&self, x: &Element<T>) -> Result<(), Failure> {
        let Some(png) = &self.png else {
            return Ok(());
        };
        write_picture(png, x, self.window.0, self.slice)
    }
}

/// Writes a 2D host element, or a slice of a 3D one (default: the middle z slice), as PNG.
pub fn write_picture<T: Scalar>(
    path: &Path,
    x: &Element<T>,
    window: Window,
    slice: Option<SliceArg>,
) -> Result<(), Failure> {
    let shape = x.shape().map(<[usize]>::to_vec).unwrap_or_default();
    let written = if shape.len() == 3 {
        let s = slice.unwrap_or(SliceArg {
            axis: 2,
            index: shape[2] / 2,
        });
        write_png_slice(path, x, s.axis, s.index, window)
    } else {
        write_png(path, x, window)
    };
    written.map_err(|e| match e {
        rodl::Error::Io { path, message } => {
            Failure::new(format!("cannot write {}: {message}", path.display()))
        }
        e => Failure::new(format!("cannot write {}: {e}", path.display())),
    })
}

/// Whether two output paths name the same file (compared as given and, when their
/// directories exist, canonicalised).
pub fn same_file(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    let canon = |p: &Path| -> Option<PathBuf> {
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Some(dir.canonicalize().ok()?.join(p.file_name()?))
    };
    matches!((canon(a), canon(b)), (Some(x), Some(y)) if x == y)
}

/// Fails early when `path` cannot be an output file: it is a directory, or its directory is
/// missing or not a directory.
pub fn check_writable(path: &Path) -> Result<(), Failure> {
    if path.is_dir() {
        return Err(Failure::new(format!(
            "cannot write {}: it is a directory",
            path.display()
        )));
    }
    if path.file_name().is_none() {
        return Err(Failure::new(format!(
            "cannot write {}: not a file name",
            path.display()
        )));
    }
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() && !d.is_dir() => Err(Failure::new(format!(
            "cannot write {}: {} is not a directory",
            path.display(),
            d.display()
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_and_slice_parse() {
        assert_eq!("auto".parse::<WindowArg>().unwrap().0, Window::Auto);
        assert_eq!(
            "-0.5:2".parse::<WindowArg>().unwrap().0,
            Window::Range {
                min: -0.5,
                max: 2.0
            }
        );
        assert!("1:1".parse::<WindowArg>().is_err());
        assert!("0:nan".parse::<WindowArg>().is_err());
        assert!("0".parse::<WindowArg>().is_err());
        assert_eq!(
            "1:7".parse::<SliceArg>().unwrap(),
            SliceArg { axis: 1, index: 7 }
        );
        assert!("3:0".parse::<SliceArg>().is_err());
        assert!("x".parse::<SliceArg>().is_err());
    }
}
