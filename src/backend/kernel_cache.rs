//! The on-disk cache of compiled GPU kernels (PTX), so that a process does not pay for NVRTC
//! compiling every kernel on its first GPU call.
//!
//! The logic here is plain file handling, independent of CUDA (and so compiled and tested in every
//! build); the CUDA backend (`backend::cuda::context`) feeds it the key parts and the compiler.
//!
//! # Where
//!
//! The folder is `rodl/kernels` in the user's cache folder (`$XDG_CACHE_HOME/rodl/kernels` or
//! `~/.cache/rodl/kernels` on Linux, `~/Library/Caches/rodl/kernels` on macOS,
//! `%LOCALAPPDATA%\rodl\kernels` on Windows). The environment variable `RODL_KERNEL_CACHE`
//! overrides it: a path uses that folder, `off` or an empty value disables the cache. The folder
//! may be deleted at any time; it is made again when needed.
//!
//! # Keys
//!
//! A [`CacheKey`] is a text naming everything the compiled PTX depends on: the kernel's name, a
//! SHA-256 of its full source (prelude and code), the NVRTC options (the target architecture
//! `--gpu-architecture=compute_XY` among them), the device's compute capability, the NVRTC version
//! and the CUDA driver version. The entry's file name is `<name>-<SHA-256 of the key text>.ptx`,
//! and the entry holds the key text itself, compared on every load: an entry for another key (a
//! stale one, or a hash collision) is never used.
//!
//! # Entries
//!
//! An entry is a header followed by the key text and the payload (the PTX):
//!
//! | bytes | content |
//! | --- | --- |
//! | 8 | magic `RODLPTX\n` |
//! | 4 | format version, little-endian `u32` ([`FORMAT_VERSION`]) |
//! | 4 | key text length in bytes, little-endian `u32` |
//! | 8 | payload length in bytes, little-endian `u64` |
//! | 32 | SHA-256 of the payload |
//! | key length | the key text (UTF-8) |
//! | payload length | the payload |
//!
//! An entry that is truncated, longer than its header says, of another format version, for another
//! key, or whose payload does not match its checksum is ignored (silently): the kernel is compiled
//! again and the entry overwritten.
//!
//! # Concurrency
//!
//! An entry is written to a temporary file in the same folder (named after the process id and a
//! per-process counter) and then renamed over the entry's name, an atomic replacement: concurrent
//! processes see either no entry, an old one or the new one, never a half-written one. Failing to
//! write (a read-only folder, a full disk) is not an error: the freshly compiled kernel is used all
//! the same.

// Only the CUDA backend uses the cache; the tests run in every build.
#![cfg_attr(not(feature = "cuda"), allow(dead_code))]

use std::ffi::OsStr;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

/// The environment variable that moves (a path) or disables (`off`, or empty) the cache.
pub(crate) const ENV_VAR: &str = "RODL_KERNEL_CACHE";

/// The first bytes of every entry.
pub(crate) const MAGIC: &[u8; 8] = b"RODLPTX\n";

/// The entry format version; entries of other versions are ignored.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// Bytes of the fixed part of the header (magic, version, key length, payload length, checksum).
const HEADER_LEN: usize = 8 + 4 + 4 + 8 + 32;

/// Everything a compiled kernel depends on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyParts<'a> {
    /// The kernel source's registry name (goes into the file name).
    pub name: &'a str,
    /// The full source compiled: prelude then code.
    pub source: &'a str,
    /// The NVRTC options, the target architecture among them.
    pub options: &'a [String],
    /// The device's compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// The NVRTC version (major, minor).
    pub nvrtc_version: (i32, i32),
    /// The CUDA driver version (`cuDriverGetVersion`, e.g. 13000).
    pub driver_version: i32,
}

/// The key of one cache entry: its text (stored in the entry and compared on load) and its file
/// name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CacheKey {
    text: String,
    file_name: String,
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

impl CacheKey {
    /// The key of a kernel compiled from `parts`.
    pub(crate) fn new(parts: &KeyParts<'_>) -> Self {
        let (cc_major, cc_minor) = parts.compute_capability;
        let (nvrtc_major, nvrtc_minor) = parts.nvrtc_version;
        // Debug formatting quotes and escapes, so that no name or option can forge a line.
        let text = format!(
            "rodl kernel cache key {FORMAT_VERSION}\n\
             name {:?}\n\
             source-sha256 {}\n\
             options {:?}\n\
             compute-capability {cc_major}.{cc_minor}\n\
             nvrtc {nvrtc_major}.{nvrtc_minor}\n\
             driver {}\n",
            parts.name,
            hex(&sha256(parts.source.as_bytes())),
            parts.options,
            parts.driver_version,
        );
        // Only plain characters of the name go into the file name; the hash makes it unique.
        let safe: String = parts
            .name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .take(64)
            .collect();
        let file_name = format!("{safe}-{}.ptx", hex(&sha256(text.as_bytes())));
        CacheKey { text, file_name }
    }

    /// The key text stored in the entry.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The entry's file name in the cache folder.
    pub(crate) fn file_name(&self) -> &str {
        &self.file_name
    }
}

/// The cache folder for a value of [`ENV_VAR`] (`None`: unset) and the user's cache folder
/// (`None`: unknown). `None` when the cache is disabled or there is nowhere to put it.
pub(crate) fn resolve_dir(env: Option<&OsStr>, user_cache: Option<PathBuf>) -> Option<PathBuf> {
    match env {
        Some(v) if v.is_empty() || v == "off" => None,
        Some(v) => Some(PathBuf::from(v)),
        None => user_cache.map(|d| d.join("rodl").join("kernels")),
    }
}

/// The cache folder of this process, from [`ENV_VAR`] and the user's cache folder (read once).
pub(crate) fn cache_dir() -> Option<&'static Path> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| resolve_dir(std::env::var_os(ENV_VAR).as_deref(), dirs::cache_dir()))
        .as_deref()
}

/// The bytes of an entry holding `payload` under `key`.
pub(crate) fn encode(key: &CacheKey, payload: &[u8]) -> Vec<u8> {
    let key = key.text().as_bytes();
    let mut out = Vec::with_capacity(HEADER_LEN + key.len() + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    // Key texts are a few hundred bytes; a longer one could not be stored, and would not match.
    out.extend_from_slice(&u32::try_from(key.len()).unwrap_or(u32::MAX).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&sha256(payload));
    out.extend_from_slice(key);
    out.extend_from_slice(payload);
    out
}

/// The payload of entry `bytes` if it is a complete, intact entry for `key`.
pub(crate) fn decode<'a>(key: &CacheKey, bytes: &'a [u8]) -> Option<&'a [u8]> {
    let (header, rest) = bytes.split_at_checked(HEADER_LEN)?;
    let (magic, header) = header.split_at(8);
    if magic != MAGIC {
        return None;
    }
    let (version, header) = header.split_at(4);
    if u32::from_le_bytes(version.try_into().ok()?) != FORMAT_VERSION {
        return None;
    }
    let (key_len, header) = header.split_at(4);
    let key_len = u32::from_le_bytes(key_len.try_into().ok()?) as usize;
    let (payload_len, checksum) = header.split_at(8);
    let payload_len = usize::try_from(u64::from_le_bytes(payload_len.try_into().ok()?)).ok()?;
    let (stored_key, payload) = rest.split_at_checked(key_len)?;
    if stored_key != key.text().as_bytes() || payload.len() != payload_len {
        return None;
    }
    (sha256(payload) == checksum).then_some(payload)
}

/// The payload stored under `key` in folder `dir`, if there is an intact entry.
pub(crate) fn lookup(dir: &Path, key: &CacheKey) -> Option<Vec<u8>> {
    let bytes = fs::read(dir.join(key.file_name())).ok()?;
    decode(key, &bytes).map(<[u8]>::to_vec)
}

/// Stores `payload` under `key` in folder `dir` (made if missing), replacing any entry there
/// atomically. On failure nothing is left behind but a possibly older entry.
pub(crate) fn store(dir: &Path, key: &CacheKey, payload: &[u8]) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    fs::create_dir_all(dir)?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{}.tmp-{}-{n}", key.file_name, std::process::id()));
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| f.write_all(&encode(key, payload)))
        .and_then(|()| fs::rename(&tmp, dir.join(key.file_name())));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// A kernel from the cache folder `dir` (`None`: no cache), or compiled.
///
/// Looks up `key`; an intact entry is handed to `load` (e.g. loading PTX into the driver). When
/// there is none, or `load` rejects it, `compile` makes the payload once, `load` turns it into the
/// result, and the payload is stored for the next process (failing to store is ignored). Errors
/// are `compile`'s, or `load`'s on a fresh payload.
pub(crate) fn load_or_compile<T, E>(
    dir: Option<&Path>,
    key: &CacheKey,
    compile: impl FnOnce() -> Result<Vec<u8>, E>,
    mut load: impl FnMut(&[u8]) -> Result<T, E>,
) -> Result<T, E> {
    if let Some(cached) = dir.and_then(|d| lookup(d, key)) {
        if let Ok(t) = load(&cached) {
            return Ok(t);
        }
    }
    let payload = compile()?;
    let t = load(&payload)?;
    if let Some(d) = dir {
        let _ = store(d, key, &payload);
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    const PTX: &[u8] = b".version 9.0\n.target sm_90\n.address_size 64\n// a kernel\n";

    fn parts(source: &str) -> KeyParts<'_> {
        static OPTIONS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        KeyParts {
            name: "vector_ops",
            source,
            options: OPTIONS.get_or_init(|| {
                vec![
                    "--gpu-architecture=compute_90".to_string(),
                    "--fmad=false".to_string(),
                ]
            }),
            compute_capability: (9, 0),
            nvrtc_version: (13, 0),
            driver_version: 13000,
        }
    }

    fn key() -> CacheKey {
        CacheKey::new(&parts("__global__ void k() {}"))
    }

    fn tmp() -> tempfile::TempDir {
        match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => panic!("no temporary folder: {e}"),
        }
    }

    fn entry_path(dir: &Path, key: &CacheKey) -> PathBuf {
        dir.join(key.file_name())
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .map(|r| {
                r.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    #[test]
    fn key_depends_on_every_part() {
        let base = parts("code");
        let k = CacheKey::new(&base);
        let opts = vec!["--gpu-architecture=compute_80".to_string()];
        let variants = [
            KeyParts {
                source: "code2",
                ..base
            },
            KeyParts {
                options: &opts,
                ..base
            },
            KeyParts {
                compute_capability: (9, 1),
                ..base
            },
            KeyParts {
                nvrtc_version: (13, 1),
                ..base
            },
            KeyParts {
                driver_version: 13010,
                ..base
            },
            KeyParts {
                name: "other",
                ..base
            },
        ];
        for v in &variants {
            let kv = CacheKey::new(v);
            assert_ne!(kv.text(), k.text(), "{v:?}");
            assert_ne!(kv.file_name(), k.file_name(), "{v:?}");
        }
        assert_eq!(CacheKey::new(&base), k, "keys are deterministic");
        assert!(k.file_name().starts_with("vector_ops-") && k.file_name().ends_with(".ptx"));
        assert!(k.text().contains("--gpu-architecture=compute_90"));
        assert!(k.text().contains("driver 13000"));
    }

    #[test]
    fn file_name_keeps_only_plain_characters() {
        let k = CacheKey::new(&KeyParts {
            name: "../x/y z",
            ..parts("c")
        });
        assert!(k.file_name().starts_with("xyz-"), "{}", k.file_name());
    }

    #[test]
    fn encode_decode_round_trip() {
        let k = key();
        let e = encode(&k, PTX);
        assert_eq!(e.len(), HEADER_LEN + k.text().len() + PTX.len());
        assert_eq!(decode(&k, &e), Some(PTX));
        assert_eq!(decode(&k, &encode(&k, b"")), Some(&b""[..]));
    }

    #[test]
    fn hit_returns_the_stored_bytes() {
        let d = tmp();
        let k = key();
        assert_eq!(lookup(d.path(), &k), None);
        store(d.path(), &k, PTX).expect("store");
        assert_eq!(lookup(d.path(), &k).as_deref(), Some(PTX));
        assert_eq!(files(d.path()), vec![k.file_name().to_string()]);
    }

    #[test]
    fn miss_for_another_key() {
        let d = tmp();
        store(d.path(), &key(), PTX).expect("store");
        let other = CacheKey::new(&KeyParts {
            driver_version: 13020,
            ..parts("__global__ void k() {}")
        });
        assert_eq!(lookup(d.path(), &other), None);
    }

    /// Writes a damaged entry, checks it is ignored and that a store repairs it.
    fn damaged_entry_is_ignored_then_fixed(damage: impl Fn(&mut Vec<u8>)) {
        let d = tmp();
        let k = key();
        let mut bytes = encode(&k, PTX);
        damage(&mut bytes);
        fs::write(entry_path(d.path(), &k), &bytes).expect("write");
        assert_eq!(lookup(d.path(), &k), None);
        // What the backend does: compile again and overwrite.
        let compiles = Cell::new(0);
        let got = load_or_compile(
            Some(d.path()),
            &k,
            || {
                compiles.set(compiles.get() + 1);
                Ok::<_, ()>(PTX.to_vec())
            },
            |p| Ok(p.to_vec()),
        );
        assert_eq!(got.as_deref(), Ok(PTX));
        assert_eq!(compiles.get(), 1);
        assert_eq!(lookup(d.path(), &k).as_deref(), Some(PTX));
    }

    #[test]
    fn corrupt_truncated_entry() {
        damaged_entry_is_ignored_then_fixed(|b| b.truncate(b.len() - 1));
        damaged_entry_is_ignored_then_fixed(|b| b.truncate(HEADER_LEN - 1));
        damaged_entry_is_ignored_then_fixed(|b| b.truncate(HEADER_LEN + 3));
        damaged_entry_is_ignored_then_fixed(|b| b.clear());
    }

    #[test]
    fn corrupt_trailing_bytes() {
        damaged_entry_is_ignored_then_fixed(|b| b.push(b'x'));
    }

    #[test]
    fn corrupt_flipped_payload_byte() {
        damaged_entry_is_ignored_then_fixed(|b| {
            let last = b.len() - 1;
            b[last] ^= 0x01;
        });
    }

    #[test]
    fn corrupt_flipped_checksum_byte() {
        damaged_entry_is_ignored_then_fixed(|b| b[HEADER_LEN - 1] ^= 0x80);
    }

    #[test]
    fn corrupt_wrong_magic() {
        damaged_entry_is_ignored_then_fixed(|b| b[0] = b'X');
    }

    #[test]
    fn corrupt_other_format_version() {
        damaged_entry_is_ignored_then_fixed(|b| b[8..12].copy_from_slice(&2u32.to_le_bytes()));
    }

    #[test]
    fn corrupt_huge_lengths() {
        damaged_entry_is_ignored_then_fixed(|b| b[12..16].copy_from_slice(&u32::MAX.to_le_bytes()));
        damaged_entry_is_ignored_then_fixed(|b| b[16..24].copy_from_slice(&u64::MAX.to_le_bytes()));
    }

    #[test]
    fn key_text_mismatch_is_a_miss() {
        // An entry of another key under this key's file name (a stale entry or a hash collision).
        let k = key();
        let other = CacheKey::new(&KeyParts {
            nvrtc_version: (12, 9),
            ..parts("__global__ void k() {}")
        });
        damaged_entry_is_ignored_then_fixed(|b| *b = encode(&other, PTX));
        let d = tmp();
        fs::write(entry_path(d.path(), &k), encode(&other, PTX)).expect("write");
        assert_eq!(lookup(d.path(), &k), None);
    }

    #[test]
    fn load_or_compile_uses_a_hit_without_compiling() {
        let d = tmp();
        let k = key();
        store(d.path(), &k, PTX).expect("store");
        let got = load_or_compile(
            Some(d.path()),
            &k,
            || Err("compiled although cached"),
            |p| Ok(p.to_vec()),
        );
        assert_eq!(got.as_deref(), Ok(PTX));
    }

    #[test]
    fn load_or_compile_stores_on_a_miss() {
        let d = tmp();
        let k = key();
        let got = load_or_compile(
            Some(d.path()),
            &k,
            || Ok::<_, ()>(PTX.to_vec()),
            |p| Ok(p.len()),
        );
        assert_eq!(got, Ok(PTX.len()));
        assert_eq!(lookup(d.path(), &k).as_deref(), Some(PTX));
        assert_eq!(files(d.path()), vec![k.file_name().to_string()]);
    }

    #[test]
    fn entry_rejected_by_the_driver_is_recompiled_once_and_overwritten() {
        let d = tmp();
        let k = key();
        // An intact entry whose PTX the "driver" refuses.
        store(d.path(), &k, b"bad ptx").expect("store");
        let compiles = Cell::new(0);
        let loads = Cell::new(0);
        let got = load_or_compile(
            Some(d.path()),
            &k,
            || {
                compiles.set(compiles.get() + 1);
                Ok(PTX.to_vec())
            },
            |p| {
                loads.set(loads.get() + 1);
                if p == PTX {
                    Ok(p.to_vec())
                } else {
                    Err("rejected")
                }
            },
        );
        assert_eq!(got.as_deref(), Ok(PTX));
        assert_eq!((compiles.get(), loads.get()), (1, 2));
        assert_eq!(lookup(d.path(), &k).as_deref(), Some(PTX));
    }

    #[test]
    fn fresh_payload_rejected_is_an_error_and_not_stored() {
        let d = tmp();
        let k = key();
        let got: Result<(), &str> =
            load_or_compile(Some(d.path()), &k, || Ok(PTX.to_vec()), |_| Err("rejected"));
        assert_eq!(got, Err("rejected"));
        assert_eq!(files(d.path()), Vec::<String>::new());
    }

    #[test]
    fn compile_error_is_returned() {
        let d = tmp();
        let got: Result<(), &str> =
            load_or_compile(Some(d.path()), &key(), || Err("syntax error"), |_| Ok(()));
        assert_eq!(got, Err("syntax error"));
    }

    #[test]
    fn disabled_cache_always_compiles_and_writes_nothing() {
        let compiles = Cell::new(0);
        for _ in 0..2 {
            let got = load_or_compile(
                None,
                &key(),
                || {
                    compiles.set(compiles.get() + 1);
                    Ok::<_, ()>(PTX.to_vec())
                },
                |p| Ok(p.to_vec()),
            );
            assert_eq!(got.as_deref(), Ok(PTX));
        }
        assert_eq!(compiles.get(), 2);
    }

    #[test]
    fn env_var_disables_or_moves_the_cache() {
        let user = Some(PathBuf::from("/home/u/.cache"));
        assert_eq!(resolve_dir(Some(OsStr::new("off")), user.clone()), None);
        assert_eq!(resolve_dir(Some(OsStr::new("")), user.clone()), None);
        assert_eq!(
            resolve_dir(Some(OsStr::new("/tmp/k")), user.clone()),
            Some(PathBuf::from("/tmp/k"))
        );
        assert_eq!(
            resolve_dir(None, user),
            Some(PathBuf::from("/home/u/.cache/rodl/kernels"))
        );
        assert_eq!(resolve_dir(None, None), None);
    }

    #[test]
    fn unwritable_folder_fails_silently() {
        let d = tmp();
        // A regular file where the folder should be: nothing can be made below it, even as root.
        let blocker = d.path().join("not-a-folder");
        fs::write(&blocker, b"x").expect("write");
        let dir = blocker.join("kernels");
        let k = key();
        assert!(store(&dir, &k, PTX).is_err());
        assert_eq!(lookup(&dir, &k), None);
        let got = load_or_compile(
            Some(&dir),
            &k,
            || Ok::<_, ()>(PTX.to_vec()),
            |p| Ok(p.to_vec()),
        );
        assert_eq!(
            got.as_deref(),
            Ok(PTX),
            "the compiled kernel is used anyway"
        );
        // The entry's name taken by a folder: the rename fails, the temporary file is removed.
        let d2 = tmp();
        fs::create_dir(entry_path(d2.path(), &k)).expect("mkdir");
        assert!(store(d2.path(), &k, PTX).is_err());
        assert_eq!(files(d2.path()), vec![k.file_name().to_string()]);
    }

    #[test]
    fn concurrent_threads_store_the_same_key() {
        let d = tmp();
        let k = key();
        // Different payload sizes, so that a torn write would be seen.
        let payloads: Vec<Vec<u8>> = (0..8).map(|i| PTX.repeat(1 + 500 * i).to_vec()).collect();
        std::thread::scope(|s| {
            let all = &payloads;
            for p in all {
                let (dir, k) = (d.path(), &k);
                s.spawn(move || {
                    for _ in 0..20 {
                        let _ = store(dir, k, p);
                        if let Some(got) = lookup(dir, k) {
                            assert!(all.contains(&got), "a torn entry was read");
                        }
                    }
                });
            }
        });
        let got = lookup(d.path(), &k).expect("an entry");
        assert!(payloads.contains(&got));
        assert_eq!(
            files(d.path()),
            vec![k.file_name().to_string()],
            "no temporary files"
        );
    }

    /// The environment variable that turns [`concurrent_store_child`] into a writer.
    const CHILD_DIR: &str = "RODL_KERNEL_CACHE_TEST_CHILD_DIR";

    /// A writer process of [`concurrent_processes_store_the_same_key`]; does nothing otherwise.
    #[test]
    fn concurrent_store_child() {
        let Some(dir) = std::env::var_os(CHILD_DIR) else {
            return;
        };
        let dir = PathBuf::from(dir);
        let payload = PTX.repeat(1 + std::process::id() as usize % 1000);
        for _ in 0..50 {
            store(&dir, &key(), &payload).expect("store");
            if let Some(got) = lookup(&dir, &key()) {
                assert!(
                    got.starts_with(PTX) && got.len() % PTX.len() == 0,
                    "torn entry"
                );
            }
        }
    }

    #[test]
    fn concurrent_processes_store_the_same_key() {
        let d = tmp();
        let exe = std::env::current_exe().expect("test executable");
        let children: Vec<_> = (0..4)
            .map(|_| {
                std::process::Command::new(&exe)
                    .args([
                        "--exact",
                        "backend::kernel_cache::tests::concurrent_store_child",
                        "--test-threads=1",
                        "--quiet",
                    ])
                    .env(CHILD_DIR, d.path())
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .expect("spawn")
            })
            .collect();
        for mut c in children {
            assert!(c.wait().expect("wait").success(), "a writer failed");
        }
        let got = lookup(d.path(), &key()).expect("an entry");
        assert!(got.starts_with(PTX) && got.len() % PTX.len() == 0);
        assert_eq!(
            files(d.path()),
            vec![key().file_name().to_string()],
            "no temporary files"
        );
    }

    #[test]
    fn lookup_and_store_timing() {
        // Not a benchmark: shows that a hit costs far less than a compile (seconds).
        let d = tmp();
        let k = key();
        let ptx = PTX.repeat(4000); // ~250 KB, the size of a large module's PTX
        store(d.path(), &k, &ptx).expect("store");
        let t = std::time::Instant::now();
        for _ in 0..10 {
            assert_eq!(lookup(d.path(), &k).map(|p| p.len()), Some(ptx.len()));
        }
        let per = t.elapsed().as_secs_f64() / 10.0;
        assert!(per < 0.5, "a lookup took {per} s");
    }
}
