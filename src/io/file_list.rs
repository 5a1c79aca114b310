//! The files of an image stack: every TIFF file of a folder, or the files matching a pattern,
//! in natural order of their names (`p2.tif` before `p10.tif`).

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The files that `source` names, in natural order of their names:
/// - a folder: its regular files whose names end in `.tif` or `.tiff` (any case);
/// - a pattern: a path whose last component holds `*` (any run of characters) or `?` (one
///   character), e.g. `scan/proj_*.tif`; the folders before it are taken literally;
/// - a regular file: that file alone.
///
/// Errors name the path: a folder or file that does not exist, a folder without TIFF files, a
/// pattern that matches nothing.
pub fn list_stack_files(source: impl AsRef<Path>) -> Result<Vec<PathBuf>> {
    let source = source.as_ref();
    let io = |message: String| Error::Io {
        path: source.to_path_buf(),
        message,
    };
    let name = source
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let is_pattern = name.contains(['*', '?']);
    if !is_pattern {
        let meta = std::fs::metadata(source).map_err(|e| io(e.to_string()))?;
        if meta.is_file() {
            return Ok(vec![source.to_path_buf()]);
        }
        if !meta.is_dir() {
            return Err(io("neither a regular file nor a folder".into()));
        }
        let files = regular_files(source, |n| {
            let n = n.to_ascii_lowercase();
            n.ends_with(".tif") || n.ends_with(".tiff")
        })
        .map_err(|e| io(e.to_string()))?;
        if files.is_empty() {
            return Err(io("the folder holds no TIFF files (*.tif, *.tiff)".into()));
        }
        return Ok(files);
    }
    let dir = match source.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if dir.to_string_lossy().contains(['*', '?']) {
        return Err(io(
            "only the last component of a pattern may hold `*` or `?`".into(),
        ));
    }
    let meta = std::fs::metadata(dir).map_err(|e| Error::Io {
        path: dir.to_path_buf(),
        message: e.to_string(),
    })?;
    if !meta.is_dir() {
        return Err(Error::Io {
            path: dir.to_path_buf(),
            message: "not a folder".into(),
        });
    }
    let pattern: Vec<char> = name.chars().collect();
    let files = regular_files(dir, |n| {
        wildcard_match(&pattern, &n.chars().collect::<Vec<_>>())
    })
    .map_err(|e| Error::Io {
        path: dir.to_path_buf(),
        message: e.to_string(),
    })?;
    if files.is_empty() {
        return Err(io("no file matches the pattern".into()));
    }
    Ok(files)
}

/// The regular files of `dir` (following links) whose names pass `keep`, naturally sorted.
fn regular_files(dir: &Path, keep: impl Fn(&str) -> bool) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !keep(&name) {
            continue;
        }
        let path = entry.path();
        if std::fs::metadata(&path)
            .map(|m| m.is_file())
            .unwrap_or(false)
        {
            files.push(path);
        }
    }
    files.sort_by(|a, b| {
        let name = |p: &PathBuf| {
            p.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        };
        natural_cmp(&name(a), &name(b))
    });
    Ok(files)
}

/// `*` and `?` wildcard matching of a whole name.
fn wildcard_match(pattern: &[char], name: &[char]) -> bool {
    // Iterative matching with backtracking to the last `*`.
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pattern.len() && (pattern[p] == '?' || pattern[p] == name[n]) {
            p += 1;
            n += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, n));
            p += 1;
        } else if let Some((sp, sn)) = star {
            p = sp + 1;
            n = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// Natural order: runs of ASCII digits compare by their value (then by length, so `01` and `1`
/// are ordered), everything else character by character.
pub(crate) fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            let (si, sj) = (i, j);
            while i < a.len() && a[i].is_ascii_digit() {
                i += 1;
            }
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let (da, db) = (&a[si..i], &b[sj..j]);
            let strip = |d: &[u8]| {
                let k = d.iter().position(|&c| c != b'0').unwrap_or(d.len());
                d[k..].to_vec()
            };
            let (va, vb) = (strip(da), strip(db));
            let ord = va
                .len()
                .cmp(&vb.len())
                .then_with(|| va.cmp(&vb))
                .then_with(|| da.len().cmp(&db.len()));
            if ord != Ordering::Equal {
                return ord;
            }
        } else {
            if a[i] != b[j] {
                return a[i].cmp(&b[j]);
            }
            i += 1;
            j += 1;
        }
    }
    (a.len() - i).cmp(&(b.len() - j))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order() {
        let mut v = vec!["p10.tif", "p2.tif", "p1.tif", "p02.tif", "a.tif"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["a.tif", "p1.tif", "p2.tif", "p02.tif", "p10.tif"]);
    }

    #[test]
    fn wildcards() {
        let m = |p: &str, n: &str| {
            wildcard_match(
                &p.chars().collect::<Vec<_>>(),
                &n.chars().collect::<Vec<_>>(),
            )
        };
        assert!(m("proj_*.tif", "proj_0001.tif"));
        assert!(!m("proj_*.tif", "flat_0001.tif"));
        assert!(m("p?.tif", "p1.tif"));
        assert!(!m("p?.tif", "p10.tif"));
        assert!(m("*", "x"));
        assert!(m("*a*b", "xxaxxb"));
    }
}
