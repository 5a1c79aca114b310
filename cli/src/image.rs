//! PNG pictures of results: `--png`, `--window` and `--slice`, encoded by `rodl::io` and
//! written with the command's other outputs (see [`crate::output`]).

use std::path::PathBuf;
use std::str::FromStr;

use clap::Args;
use rodl::io::{encode_gray_png, slice_to_gray8, to_gray8, Window};
use rodl::{Element, Scalar};

use crate::output::{Outputs, Slot};
use crate::Failure;

/// The PNG options shared by the commands that write an image or a volume.
#[derive(Args, Debug, Clone, Default)]
pub struct ImageArgs {
    /// Also write a PNG picture of the result (a 2D image, or a slice of a 3D volume), shown
    /// as ODL's `show()` shows it: x to the right, y upwards.
    #[arg(long, value_name = "OUT.png")]
    pub png: Option<PathBuf>,
    /// Gray-level window of the PNG: `LO:HI` (LO black, HI white, values outside clipped) or
    /// `auto` (the picture's own range; the default).
    #[arg(long, value_name = "LO:HI", allow_hyphen_values = true)]
    pub window: Option<WindowArg>,
    /// For a 3D volume, the slice shown in the PNG: `AXIS:INDEX` (axis 0, 1 or 2; default the
    /// middle slice along z, `2:nz/2`).
    #[arg(long, value_name = "AXIS:INDEX", allow_hyphen_values = true)]
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
    /// Checks the options by themselves: `--slice` and `--window` need `--png`.
    pub fn check_options(&self) -> Result<(), Failure> {
        if self.png.is_none() {
            if self.slice.is_some() {
                return Err(Failure::usage("--slice needs --png"));
            }
            if self.window.is_some() {
                return Err(Failure::usage("--window needs --png"));
            }
        }
        Ok(())
    }

    /// Checks, before any work, the PNG options for data of shape `shape` (usage errors) and
    /// that the PNG can be written.
    pub fn check(&self, shape: &[usize]) -> Result<(), Failure> {
        self.check_options()?;
        let Some(png) = &self.png else {
            return Ok(());
        };
        crate::output::check_target(png)?;
        match (shape.len(), self.slice) {
            (2, Some(_)) => Err(Failure::usage("--slice applies to 3D volumes only")),
            (3, Some(SliceArg { axis, index })) if index >= shape[axis] => {
                Err(Failure::usage(format!(
                    "--slice {axis}:{index} is out of range: axis {axis} has {} slices \
                     (0..={})",
                    shape[axis],
                    shape[axis] - 1
                )))
            }
            _ => Ok(()),
        }
    }

    /// Prepares the PNG output, if `--png` was given.
    pub fn prepare(&self, outputs: &mut Outputs) -> Result<Option<Slot>, Failure> {
        self.png.as_deref().map(|p| outputs.prepare(p)).transpose()
    }

    /// Writes the PNG of `x` (host element) into its prepared output `slot`.
    pub fn write<T: Scalar>(
        &self,
        outputs: &mut Outputs,
        slot: Option<Slot>,
        x: &Element<T>,
    ) -> Result<(), Failure> {
        let Some(slot) = slot else {
            return Ok(());
        };
        let window = self.window.map(|w| w.0).unwrap_or_default();
        outputs.write_bytes(slot, &png_bytes(x, window, self.slice)?)
    }
}

/// The PNG of a 2D host element, or of a slice of a 3D one (default: the middle z slice).
pub fn png_bytes<T: Scalar>(
    x: &Element<T>,
    window: Window,
    slice: Option<SliceArg>,
) -> Result<Vec<u8>, Failure> {
    let shape = x.shape().map(<[usize]>::to_vec).unwrap_or_default();
    let image = if shape.len() == 3 {
        let s = slice.unwrap_or(SliceArg {
            axis: 2,
            index: shape[2] / 2,
        });
        slice_to_gray8(x, s.axis, s.index, window)?
    } else {
        to_gray8(x, window)?
    };
    let mut bytes = Vec::new();
    encode_gray_png(&mut bytes, &image)?;
    Ok(bytes)
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
