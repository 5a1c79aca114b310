//! The option values of `rodl scan`: output formats, the switchable preprocessing steps, the
//! centre and the row range, parsed from their command-line text.

use std::fmt;
use std::str::FromStr;

use clap::ValueEnum;

use crate::algorithm::Algorithm;

/// The format of the volume `rodl scan` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum VolumeFormat {
    /// A `.npy` file `[x, y, z]`, float32.
    Npy,
    /// A folder of TIFF files, one per slice along z.
    Tiff,
    /// An HDF5 file with the volume as one dataset `[z, y, x]` (needs a build with HDF5).
    H5,
}

impl VolumeFormat {
    /// The format an output path implies: `.npy`, `.h5`/`.hdf5`/`.nxs`, else a TIFF folder.
    pub fn from_path(path: &std::path::Path) -> VolumeFormat {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some("npy") => VolumeFormat::Npy,
            Some("h5" | "hdf5" | "nxs" | "hdf") => VolumeFormat::H5,
            _ => VolumeFormat::Tiff,
        }
    }
}

/// The sample format of a TIFF stack written by `rodl scan`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TiffDepth {
    /// 32-bit floats, the values as they are.
    Float32,
    /// 16-bit integers scaled to the volume's range.
    Uint16,
}

/// `--beam`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BeamArg {
    /// A cone beam when the file records a source distance, else parallel.
    Auto,
    /// A parallel beam.
    Parallel,
    /// A cone beam.
    Cone,
}

/// A value, or `off`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OffOr<T>(pub Option<T>);

impl<T: FromStr + PartialOrd + Default + Copy> FromStr for OffOr<T> {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if matches!(t.to_ascii_lowercase().as_str(), "off" | "none" | "no") {
            return Ok(OffOr(None));
        }
        match t.parse::<T>() {
            Ok(v) if v > T::default() => Ok(OffOr(Some(v))),
            _ => Err(format!("expected a positive number or `off`, got {s:?}")),
        }
    }
}

/// `--centre`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CentreArg {
    /// Found from the data.
    Auto,
    /// The detector's centre.
    Off,
    /// A detector shift along u, in pixels.
    Shift(f64),
}

impl FromStr for CentreArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(CentreArg::Auto),
            "off" | "none" | "0" => Ok(CentreArg::Off),
            t => match t.parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(CentreArg::Shift(x)),
                _ => Err(format!(
                    "expected `auto`, `off` or a detector shift in pixels, got {s:?}"
                )),
            },
        }
    }
}

/// The reconstruction methods of `rodl scan`: FBP/FDK or one of `rodl reconstruct`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ScanAlgorithm {
    /// Filtered back-projection (FDK for a cone beam).
    Fbp,
    /// CGLS.
    Cgls,
    /// SIRT.
    Sirt,
    /// Landweber.
    Landweber,
    /// PDHG for ½‖Ax − y‖² + λ TV(x), x ≥ 0.
    PdhgTv,
    /// FISTA for ½‖Ax − y‖² + λ TV(x), x ≥ 0.
    FistaTv,
}

impl ScanAlgorithm {
    /// The iterative method of `rodl reconstruct`, unless this is FBP.
    pub fn iterative(self) -> Option<Algorithm> {
        Some(match self {
            ScanAlgorithm::Fbp => return None,
            ScanAlgorithm::Cgls => Algorithm::Cgls,
            ScanAlgorithm::Sirt => Algorithm::Sirt,
            ScanAlgorithm::Landweber => Algorithm::Landweber,
            ScanAlgorithm::PdhgTv => Algorithm::PdhgTv,
            ScanAlgorithm::FistaTv => Algorithm::FistaTv,
        })
    }
}

impl fmt::Display for ScanAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.iterative() {
            None => f.write_str("FBP"),
            Some(a) => a.fmt(f),
        }
    }
}

/// `--rows A:B`: detector rows `A .. B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowRange {
    /// The first row.
    pub start: usize,
    /// One past the last row.
    pub end: usize,
}

impl FromStr for RowRange {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("expected A:B with whole numbers A < B, got {s:?}");
        let (a, b) = s.split_once(':').ok_or_else(bad)?;
        let start: usize = a.trim().parse().map_err(|_| bad())?;
        let end: usize = b.trim().parse().map_err(|_| bad())?;
        if start >= end {
            return Err(bad());
        }
        Ok(RowRange { start, end })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_values_parse() {
        assert_eq!("off".parse::<OffOr<usize>>(), Ok(OffOr(None)));
        assert_eq!("21".parse::<OffOr<usize>>(), Ok(OffOr(Some(21))));
        assert!("0".parse::<OffOr<usize>>().is_err());
        assert!("-3".parse::<OffOr<f64>>().is_err());
        assert_eq!("auto".parse::<CentreArg>(), Ok(CentreArg::Auto));
        assert_eq!("-3.5".parse::<CentreArg>(), Ok(CentreArg::Shift(-3.5)));
        assert!("nan".parse::<CentreArg>().is_err());
        assert_eq!(
            "2:10".parse::<RowRange>(),
            Ok(RowRange { start: 2, end: 10 })
        );
        assert!("10:2".parse::<RowRange>().is_err());
        let p = std::path::Path::new;
        assert_eq!(VolumeFormat::from_path(p("a/rec.NPY")), VolumeFormat::Npy);
        assert_eq!(VolumeFormat::from_path(p("rec.nxs")), VolumeFormat::H5);
        assert_eq!(VolumeFormat::from_path(p("slices")), VolumeFormat::Tiff);
    }
}
