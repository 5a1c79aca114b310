//! Which GPU method filters device data: cuFFT when its library can be loaded, otherwise the
//! direct convolution; chosen once per filter at construction.
//!
//! The choice follows the environment variable [`CUFFT_ENV`] (`RODL_CUFFT`):
//!
//! | value | method |
//! |---|---|
//! | unset or empty | cuFFT if `libcufft` loads under its standard names (`libcufft.so`, `libcufft.so.12`, `libcufft.so.11`, …, found through the loader's search path, e.g. `LD_LIBRARY_PATH`), otherwise the direct convolution |
//! | `off`, `0`, `no`, `false`, `direct` | always the direct convolution |
//! | a file's path | that cuFFT library (loaded first, so that the standard names resolve to it); an error when it cannot be loaded or lacks a function rodl needs |
//!
//! This module holds the logic (compiled in every build, tested without a GPU); the library
//! probe itself lives with the CUDA filter.

// Without the `cuda` feature only the tests use the choice (the stub filter never chooses).
#![cfg_attr(not(feature = "cuda"), allow(dead_code))]

use std::ffi::OsStr;
use std::fmt;
use std::path::PathBuf;

use crate::{Error, Result};

/// The environment variable that selects the GPU filter's method (see [`GpuFilterMethod`]).
pub const CUFFT_ENV: &str = "RODL_CUFFT";

/// How an [`FbpFilter`](super::FbpFilter) on a GPU space filters: fixed at construction
/// ([`FbpFilter::gpu_method`](super::FbpFilter::gpu_method)).
///
/// The environment variable [`CUFFT_ENV`] (`RODL_CUFFT`) chooses, once per process:
///
/// | value | method |
/// |---|---|
/// | unset or empty | cuFFT if `libcufft` loads under its standard names (`libcufft.so`, `libcufft.so.12` of CUDA 13, `libcufft.so.11` of CUDA 12, …) from the loader's search path (`ldconfig`, `LD_LIBRARY_PATH`), otherwise the direct convolution |
/// | `off`, `0`, `no`, `false`, `direct` | the direct convolution |
/// | a file's path | that cuFFT library; [`crate::Error::CudaUnavailable`] at construction when it cannot be loaded or lacks a function rodl calls |
///
/// A missing or unusable cuFFT is never a panic: the library is opened and its functions are
/// looked up before any is called.
///
/// ```
/// use rodl::tomo::GpuFilterMethod;
/// assert_eq!(GpuFilterMethod::Fft.to_string(), "cuFFT");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuFilterMethod {
    /// Batched real FFTs through cuFFT (`O(n log n)` per detector row).
    Fft,
    /// The direct convolution with the filter's taps (`O(n²)` per detector row): the fallback
    /// when cuFFT cannot be loaded, or when `RODL_CUFFT=off`.
    DirectConvolution,
}

impl fmt::Display for GpuFilterMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GpuFilterMethod::Fft => "cuFFT",
            GpuFilterMethod::DirectConvolution => "direct convolution",
        })
    }
}

/// What [`CUFFT_ENV`] asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CufftRequest {
    /// cuFFT if it loads, else the direct convolution.
    Auto,
    /// The direct convolution.
    Off,
    /// The cuFFT library at this path (an error if it does not load).
    Path(PathBuf),
}

impl CufftRequest {
    /// Parses the variable's value (`None`: unset).
    pub(crate) fn parse(value: Option<&OsStr>) -> Self {
        let Some(v) = value else {
            return CufftRequest::Auto;
        };
        let s = v.to_string_lossy();
        let t = s.trim();
        if t.is_empty() {
            return CufftRequest::Auto;
        }
        match t.to_ascii_lowercase().as_str() {
            "off" | "0" | "no" | "false" | "direct" | "none" => CufftRequest::Off,
            "auto" | "on" | "1" | "yes" | "true" => CufftRequest::Auto,
            _ => CufftRequest::Path(PathBuf::from(v)),
        }
    }

    /// The request of the process's environment.
    pub(crate) fn from_env() -> Self {
        Self::parse(std::env::var_os(CUFFT_ENV).as_deref())
    }
}

/// The method for `request`, given `probe`, which loads cuFFT (from the path, or under the
/// standard names for `None`) and checks its functions, or says why it cannot.
///
/// `Auto` falls back to the direct convolution when the probe fails; an explicit path that
/// fails is [`Error::CudaUnavailable`]. `Off` never probes.
pub(crate) fn choose(
    request: &CufftRequest,
    probe: impl FnOnce(Option<&std::path::Path>) -> std::result::Result<(), String>,
) -> Result<GpuFilterMethod> {
    match request {
        CufftRequest::Off => Ok(GpuFilterMethod::DirectConvolution),
        CufftRequest::Auto => Ok(match probe(None) {
            Ok(()) => GpuFilterMethod::Fft,
            Err(_) => GpuFilterMethod::DirectConvolution,
        }),
        CufftRequest::Path(p) => match probe(Some(p)) {
            Ok(()) => Ok(GpuFilterMethod::Fft),
            Err(why) => Err(Error::CudaUnavailable(format!(
                "{CUFFT_ENV}={} names a cuFFT library that cannot be used: {why} (unset \
                 {CUFFT_ENV} to fall back to the direct convolution, or set it to `off`)",
                p.display()
            ))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::path::Path;

    fn parse(s: &str) -> CufftRequest {
        CufftRequest::parse(Some(OsStr::new(s)))
    }

    #[test]
    fn parses_the_variable() {
        assert_eq!(CufftRequest::parse(None), CufftRequest::Auto);
        assert_eq!(parse(""), CufftRequest::Auto);
        assert_eq!(parse("  "), CufftRequest::Auto);
        assert_eq!(parse("auto"), CufftRequest::Auto);
        for off in ["off", "OFF", "0", "no", "false", "direct", " Off "] {
            assert_eq!(parse(off), CufftRequest::Off, "{off:?}");
        }
        assert_eq!(
            parse("/opt/cuda/lib64/libcufft.so.12"),
            CufftRequest::Path(PathBuf::from("/opt/cuda/lib64/libcufft.so.12"))
        );
    }

    #[test]
    fn auto_falls_back_when_the_library_is_missing() {
        let m = choose(&CufftRequest::Auto, |p| {
            assert!(p.is_none());
            Err("libcufft not found".into())
        })
        .unwrap();
        assert_eq!(m, GpuFilterMethod::DirectConvolution);
        let m = choose(&CufftRequest::Auto, |_| Ok(())).unwrap();
        assert_eq!(m, GpuFilterMethod::Fft);
    }

    #[test]
    fn off_never_probes() {
        let probed = Cell::new(false);
        let m = choose(&CufftRequest::Off, |_| {
            probed.set(true);
            Ok(())
        })
        .unwrap();
        assert_eq!(m, GpuFilterMethod::DirectConvolution);
        assert!(!probed.get());
    }

    #[test]
    fn an_explicit_library_that_fails_is_an_error() {
        let req = CufftRequest::Path(PathBuf::from("/nowhere/libcufft.so"));
        let e = choose(&req, |p| {
            assert_eq!(p, Some(Path::new("/nowhere/libcufft.so")));
            Err("cannot open".into())
        })
        .unwrap_err();
        match e {
            Error::CudaUnavailable(m) => {
                assert!(m.contains("RODL_CUFFT=/nowhere/libcufft.so"), "{m}");
                assert!(m.contains("cannot open"), "{m}");
            }
            e => panic!("expected CudaUnavailable, got {e:?}"),
        }
        assert_eq!(choose(&req, |_| Ok(())).unwrap(), GpuFilterMethod::Fft);
    }
}
