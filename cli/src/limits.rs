//! The tool's bounds on what it is given: worker threads, the sizes of files it reads, and the
//! parsers of numeric options that name the valid range in their messages.
//!
//! Memory is bounded in the library (`rodl::memory`): every array is checked against the
//! available memory (or `RODL_MEMORY_LIMIT`) before it is allocated.

/// How many worker threads `--threads` may ask for per core.
pub const THREADS_PER_CORE: usize = 4;

/// The most views a geometry may have (real scans have up to some 10⁵; beyond 10⁶ even
/// describing one takes seconds).
pub const MAX_VIEWS: usize = 1_000_000;

/// Errors unless the geometry of `spec` has at most [`MAX_VIEWS`] views and its projection
/// data (in float32) can be addressed; checked before the views are computed. Whether the data
/// fit in memory is up to the command: `project`, `backproject` and `fbp` compute in pieces
/// when they do not (`crate::out_of_core`), the others read them into memory, checked there.
pub fn check_geometry_size(spec: &rodl::tomo::GeometrySpec) -> Result<(), crate::Failure> {
    let (views, key) = match (&spec.angles, &spec.views) {
        (Some(a), _) => (a.count, "`geometry.angles.count`"),
        (None, Some(v)) => (v.len(), "the number of `geometry.views`"),
        (None, None) => return Ok(()),
    };
    if views > MAX_VIEWS {
        return Err(crate::Failure::new(format!(
            "{key} is {views}; rodl takes at most {MAX_VIEWS} views"
        )));
    }
    let mut shape = vec![views];
    shape.extend_from_slice(&spec.detector.shape);
    let bytes = shape
        .iter()
        .try_fold(4u128, |a, &n| a.checked_mul(n as u128))
        .unwrap_or(u128::MAX);
    if bytes > isize::MAX as u128 {
        return Err(crate::Failure::new(format!(
            "the projection data of shape {shape:?} (float32) would need {}, more than this \
             system can address",
            rodl::memory::format_bytes(bytes)
        )));
    }
    Ok(())
}

/// The largest geometry file read, in bytes (a `vec` geometry of a million views fits).
pub const MAX_GEOMETRY_BYTES: u64 = rodl::tomo::MAX_GEOMETRY_FILE_BYTES;

/// The number of cores (1 when it cannot be told).
pub fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// The largest `--threads`: [`THREADS_PER_CORE`] × the number of cores.
pub fn max_threads() -> usize {
    THREADS_PER_CORE * cores()
}

/// A whole number in `lo..=hi`, for clap; the message gives the range.
pub fn whole_in(text: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let bad = || {
        if hi == u64::MAX {
            format!("expected a whole number ≥ {lo}, got {text:?}")
        } else {
            format!("expected a whole number in {lo}..={hi}, got {text:?}")
        }
    };
    let t = text.trim();
    let n: u64 = match t.parse() {
        Ok(n) => n,
        // `90.0` and `1e4` are whole numbers too.
        Err(_) => match t.parse::<f64>() {
            Ok(x) if x.fract() == 0.0 && (0.0..1.8e19).contains(&x) => x as u64,
            _ => return Err(bad()),
        },
    };
    if !(lo..=hi).contains(&n) {
        return Err(bad());
    }
    Ok(n)
}

/// `--threads N`: 1 ..= [`max_threads`].
pub fn parse_threads(text: &str) -> Result<usize, String> {
    let max = max_threads();
    whole_in(text, 1, max as u64)
        .map(|n| n as usize)
        .map_err(|e| {
            format!(
                "{e} (at most {THREADS_PER_CORE} × the {} cores here)",
                cores()
            )
        })
}

/// The most iterations `reconstruct --iterations` runs (a bound, so that a typing slip does not
/// run for hours).
pub const MAX_ITERATIONS: usize = 100_000;

/// `--iterations N`: 1 ..= [`MAX_ITERATIONS`].
pub fn parse_iterations(text: &str) -> Result<usize, String> {
    whole_in(text, 1, MAX_ITERATIONS as u64).map(|n| n as usize)
}

/// A count ≥ 1 (`--subsets`).
pub fn parse_positive(text: &str) -> Result<usize, String> {
    whole_in(text, 1, usize::MAX as u64).map(|n| n as usize)
}

/// A seed: any whole number ≥ 0.
pub fn parse_seed(text: &str) -> Result<u64, String> {
    whole_in(text, 0, u64::MAX)
}

/// A finite number ≥ 0 (`--tv-weight`).
pub fn parse_non_negative(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!("expected a finite number ≥ 0, got {text:?}")),
    }
}

/// A number in (0, 1] (`--frequency-scaling`).
pub fn parse_unit_fraction(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 1.0 => Ok(x),
        _ => Err(format!("expected a number in (0, 1], got {text:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_options_parse_with_their_ranges() {
        assert_eq!(whole_in("90", 1, 100), Ok(90));
        assert_eq!(whole_in("90.0", 1, 100), Ok(90));
        assert!(whole_in("-1", 1, 100).unwrap_err().contains("1..=100"));
        assert!(whole_in("0", 1, 100).is_err());
        assert!(whole_in("1.5", 1, 100).is_err());
        assert!(parse_threads("18446744073709551615").is_err());
        assert!(parse_threads("0").is_err());
        assert_eq!(parse_threads("1"), Ok(1));
        assert!(parse_non_negative("-1").unwrap_err().contains("≥ 0"));
        assert!(parse_non_negative("inf").is_err());
        assert!(parse_unit_fraction("0").is_err());
        assert_eq!(parse_unit_fraction("1"), Ok(1.0));
    }
}
