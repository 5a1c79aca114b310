//! Host-memory limits: every size that comes from a user (a shape, a number of views) is checked
//! here before anything of that size is allocated, so that a size that cannot fit is an
//! [`Error::OutOfMemory`] naming the size and the limit instead of an aborting allocation.
//!
//! The limit is the memory available to the process when it first asks (`MemAvailable` of
//! `/proc/meminfo`, else `MemTotal`; where neither can be read, the address space), or the
//! value of the environment variable [`MEMORY_LIMIT_ENV`] (bytes, or with a suffix `K`, `M`,
//! `G`, `T`: powers of 1024).
//!
//! ```
//! use rodl::memory::{check_host_alloc, host_memory_limit};
//! assert!(check_host_alloc("a small array", 1000, 8).is_ok());
//! let err = check_host_alloc("a volume of shape [100000, 100000, 100000]", 1 << 60, 8).unwrap_err();
//! assert!(err.to_string().contains("more than"));
//! assert!(host_memory_limit() > 0);
//! ```

use std::sync::OnceLock;

use crate::{Device, Error, Result};

/// The environment variable that sets the host-memory limit in bytes (suffixes `K`, `M`, `G`,
/// `T` multiply by powers of 1024), instead of the available memory.
pub const MEMORY_LIMIT_ENV: &str = "RODL_MEMORY_LIMIT";

/// The host-memory limit in bytes that allocations are checked against (read once).
pub fn host_memory_limit() -> u64 {
    static LIMIT: OnceLock<u64> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var(MEMORY_LIMIT_ENV)
            .ok()
            .and_then(|v| parse_bytes(&v))
            .or_else(available_memory)
            .unwrap_or(isize::MAX as u64)
            .min(isize::MAX as u64)
    })
}

/// Asks the kernel to back `region` — fresh memory about to be written for the first time,
/// e.g. a vector's [`spare_capacity_mut`](Vec::spare_capacity_mut) — with huge pages where it
/// can (Linux's transparent huge pages in their `madvise` mode, the common default): one page
/// fault per 2 MiB instead of per 4 KiB when it is first written. Regions under 2 MiB and
/// other systems are left as they are; a hint, whose failure is ignored. The contents are not
/// changed.
///
/// ```
/// let mut v: Vec<f32> = Vec::with_capacity(1 << 22);
/// rodl::memory::advise_huge_pages(v.spare_capacity_mut());
/// v.resize(1 << 22, 1.0);
/// assert_eq!(v[12345], 1.0);
/// ```
pub fn advise_huge_pages<T>(region: &mut [T]) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let ptr = region.as_mut_ptr() as usize;
        let start = ptr.div_ceil(PAGE) * PAGE;
        let end = ptr.saturating_add(std::mem::size_of_val(region));
        if end > start + (2 << 20) {
            // SAFETY: madvise on whole pages inside `region`, which this borrow holds
            // exclusively; the advice changes how the pages are backed, not their contents.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = region;
}

/// Parses `123`, `64K`, `512M`, `2G`, `1T` (optionally followed by `B` or `iB`).
pub fn parse_bytes(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_uppercase();
    let t = t
        .strip_suffix("IB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(&t);
    let (digits, shift) = match t.chars().last()? {
        'K' => (&t[..t.len() - 1], 10),
        'M' => (&t[..t.len() - 1], 20),
        'G' => (&t[..t.len() - 1], 30),
        'T' => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    digits.trim().parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// `MemAvailable` (else `MemTotal`) of `/proc/meminfo`, in bytes.
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kib: u64 = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        kib.checked_mul(1024)
    };
    field("MemAvailable:").or_else(|| field("MemTotal:"))
}

/// A byte count for messages: `40 GB (40000000000 bytes)`.
pub fn format_bytes(bytes: u128) -> String {
    const UNITS: [(&str, f64); 4] = [("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)];
    let b = bytes as f64;
    for (unit, size) in UNITS {
        if b >= size {
            return format!("{:.3} {unit} ({bytes} bytes)", b / size).replace(".000 ", " ");
        }
    }
    format!("{bytes} bytes")
}

/// The message of [`Error::OutOfMemory`].
pub(crate) fn describe_shortage(what: &str, bytes: u128, limit: u64, device: &Device) -> String {
    match device {
        Device::Cpu => format!(
            "{what} needs {}, more than the memory limit of {} (the available memory; the \
             environment variable {MEMORY_LIMIT_ENV} sets another)",
            format_bytes(bytes),
            format_bytes(limit as u128)
        ),
        d => format!(
            "{what} needs {}, more than the free memory of {d} ({})",
            format_bytes(bytes),
            format_bytes(limit as u128)
        ),
    }
}

/// Errors unless `count` entries of `elem_size` bytes each fit in the host-memory limit;
/// `what` names them in the message ("a volume of shape [2000, 2000, 2000]").
pub fn check_host_alloc(what: &str, count: usize, elem_size: usize) -> Result<()> {
    check_host_bytes(what, count as u128 * elem_size as u128)
}

/// Errors unless `bytes` bytes fit in the host-memory limit (see [`check_host_alloc`]).
pub fn check_host_bytes(what: &str, bytes: u128) -> Result<()> {
    let limit = host_memory_limit();
    if bytes > limit as u128 {
        return Err(Error::OutOfMemory {
            what: what.to_string(),
            bytes,
            limit,
            device: Device::Cpu,
        });
    }
    Ok(())
}

/// The number of entries of an array of `shape`, if it fits in a `usize`.
pub fn entries(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |a, &n| a.checked_mul(n))
}

/// Errors unless an array of `shape` with entries of `elem_size` bytes fits in the host-memory
/// limit; the message names the shape.
pub fn check_host_array(shape: &[usize], elem_size: usize) -> Result<()> {
    let bytes = shape
        .iter()
        .try_fold(elem_size as u128, |a, &n| a.checked_mul(n as u128))
        .unwrap_or(u128::MAX);
    check_host_bytes(&format!("an array of shape {shape:?}"), bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_parse_and_print() {
        assert_eq!(parse_bytes("123"), Some(123));
        assert_eq!(parse_bytes("2G"), Some(2 << 30));
        assert_eq!(parse_bytes("64 KiB"), Some(64 << 10));
        assert_eq!(parse_bytes("x"), None);
        assert_eq!(parse_bytes("99999999999T"), None);
        assert_eq!(format_bytes(40_000_000_000), "40 GB (40000000000 bytes)");
        assert_eq!(format_bytes(12), "12 bytes");
    }

    #[test]
    fn huge_arrays_are_refused() {
        let e = check_host_array(&[100_000, 100_000, 100_000], 4).unwrap_err();
        assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
        assert!(e.to_string().contains("[100000, 100000, 100000]"), "{e}");
        assert!(check_host_array(&[usize::MAX, usize::MAX], 8).is_err());
        assert!(check_host_array(&[16, 16], 8).is_ok());
    }
}
