//! Fuzz-style property tests of the two parsers of untrusted bytes: the geometry file (JSON,
//! through `rodl::tomo::TomoSpec` and the checks of [`crate::commands::Setup`], then what
//! `rodl info` prints) and the `.npy` reader. Mutations of valid files — numbers replaced by
//! awkward values, keys renamed, bytes inserted, files cut short — and generated `.npy`
//! headers must give an error or a valid result, never a panic, in bounded time.

use proptest::prelude::*;
use proptest::test_runner::Config;

use crate::commands::{info, Setup};
use crate::io::read_npy_bytes;

/// Valid geometry files of every kind.
const SEEDS: [&str; 5] = [
    r#"{"volume":{"min_pt":[-10,-10],"max_pt":[10,10],"shape":[64,64]},"geometry":{"kind":"parallel2d","angles":{"min":0,"max":3.141592653589793,"count":90},"detector":{"min":[-15],"max":[15],"shape":[95]}}}"#,
    r#"{"volume":{"min_pt":[-10,-10],"max_pt":[10,10],"shape":[16,16]},"geometry":{"kind":"fanflat","angles":{"min":0,"max":6.28,"count":12},"src_radius":40,"det_radius":20,"det_offset":[0.5],"detector":{"min":[-30],"max":[30],"shape":[24]}}}"#,
    r#"{"volume":{"min_pt":[-8,-8,-8],"max_pt":[8,8,8],"shape":[8,8,8]},"geometry":{"kind":"cone","angles":{"min":0,"max":6.283185307179586,"count":9},"src_radius":40,"det_radius":20,"pitch":2.5,"axis":[0,0,1],"detector":{"min":[-24,-18],"max":[24,18],"shape":[8,6]}}}"#,
    r#"{"volume":{"min_pt":[-1,-1,-1],"max_pt":[1,1,1],"shape":[4,4,4]},"geometry":{"kind":"parallel3d","angles":{"min":0,"max":3.14,"count":5},"axis":[1,0,0],"detector":{"min":[-2,-2],"max":[2,2],"shape":[4,4]}}}"#,
    r#"{"volume":{"min_pt":[-1,-1],"max_pt":[1,1],"shape":[4,4]},"geometry":{"kind":"vec","beam":"point","detector":{"shape":[5]},"views":[{"src":[0,-5],"det_center":[0,5],"det_u":[0.5,0]},{"src":[-5,0],"det_center":[5,0],"det_u":[0,0.5]}]}}"#,
];

/// Awkward JSON values: bounds of integers and floats, wrong types, nesting.
const VALUES: [&str; 24] = [
    "0",
    "-0",
    "1",
    "-1",
    "2",
    "90.0",
    "0.5",
    "1e12",
    "1e15",
    "1e16",
    "1e300",
    "-1e308",
    "1e-320",
    "9007199254740993",
    "18446744073709551616",
    "4294967296",
    "\"x\"",
    "null",
    "true",
    "[]",
    "[1]",
    "{}",
    "[1e308,1e308,1e308]",
    "[[[[[]]]]]",
];

/// Awkward key names.
const KEYS: [&str; 8] = [
    "volume", "kind", "count", "shape", "views", "pitch", "\u{feff}", "min",
];

#[derive(Clone, Debug)]
enum Edit {
    /// Replace the `k`-th number with `VALUES[v]`.
    Number(usize, usize),
    /// Replace the `k`-th key with `KEYS[v]`.
    Key(usize, usize),
    /// Insert a byte at a position (as a fraction of the length).
    Insert(f64, u8),
    /// Delete a byte range.
    Delete(f64, usize),
    /// Cut the text at a fraction of its length.
    Truncate(f64),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (0..40usize, 0..VALUES.len()).prop_map(|(k, v)| Edit::Number(k, v)),
        2 => (0..20usize, 0..KEYS.len()).prop_map(|(k, v)| Edit::Key(k, v)),
        1 => (0.0..1.0f64, any::<u8>()).prop_map(|(p, b)| Edit::Insert(p, b)),
        1 => (0.0..1.0f64, 1..12usize).prop_map(|(p, n)| Edit::Delete(p, n)),
        1 => (0.0..1.0f64).prop_map(Edit::Truncate),
    ]
}

/// Byte ranges `(start, end)` in a text.
type Ranges = Vec<(usize, usize)>;

/// Byte ranges of the numbers (`-?[0-9][0-9.eE+-]*`) and of the quoted keys of `text`.
fn tokens(text: &[u8]) -> (Ranges, Ranges) {
    let (mut numbers, mut keys) = (vec![], vec![]);
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        if c == b'"' {
            let start = i;
            i += 1;
            while i < text.len() && text[i] != b'"' {
                i += 1;
            }
            if text.get(i + 1) == Some(&b':') {
                keys.push((start + 1, i));
            }
            i += 1;
        } else if c == b'-' || c.is_ascii_digit() {
            let start = i;
            i += 1;
            while i < text.len() && (text[i].is_ascii_digit() || b".eE+-".contains(&text[i])) {
                i += 1;
            }
            numbers.push((start, i));
        } else {
            i += 1;
        }
    }
    (numbers, keys)
}

fn apply(mut text: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let (numbers, keys) = tokens(&text);
        let at = |p: f64, len: usize| ((p * len as f64) as usize).min(len);
        match *e {
            Edit::Number(k, v) if !numbers.is_empty() => {
                let (a, b) = numbers[k % numbers.len()];
                text.splice(a..b, VALUES[v].bytes());
            }
            Edit::Key(k, v) if !keys.is_empty() => {
                let (a, b) = keys[k % keys.len()];
                text.splice(a..b, KEYS[v].bytes());
            }
            Edit::Insert(p, byte) => {
                let i = at(p, text.len());
                text.insert(i, byte);
            }
            Edit::Delete(p, n) => {
                let i = at(p, text.len());
                let j = (i + n).min(text.len());
                text.drain(i..j);
            }
            Edit::Truncate(p) => {
                let i = at(p, text.len());
                text.truncate(i);
            }
            _ => {}
        }
    }
    text
}

/// Parses and checks a geometry file's bytes as the commands do, and describes it as `info`
/// does: any outcome but a panic is fine; an error has a message.
fn check_geometry(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    match Setup::from_text(text) {
        Ok(setup) => {
            let lines = info::describe(&setup).unwrap_or_default();
            assert!(lines.iter().all(|l| !l.contains("NaN")), "{lines:?}");
        }
        Err(f) => assert!(!f.message.is_empty()),
    }
}

/// A generated `.npy` file: header fields from awkward choices, then data of some length.
fn npy_file() -> impl Strategy<Value = Vec<u8>> {
    let descr = prop::sample::select(vec![
        "'<f4'",
        "'>f8'",
        "'<f8'",
        "'=f4'",
        "'<i4'",
        "'|b1'",
        "'f4'",
        "1",
        "('<f4', (2,))",
        "'<c16'",
        "[('a', '<f4')]",
    ]);
    let order = prop::sample::select(vec!["False", "True", "1", "None"]);
    let dim = prop::sample::select(vec![
        "0",
        "1",
        "2",
        "3",
        "64",
        "100000000000",
        "9223372036854775807",
        "18446744073709551615",
        "-1",
        "2.0",
        "'a'",
    ]);
    let shape = prop::collection::vec(dim, 0..4);
    (
        0u8..4,
        descr,
        order,
        shape,
        0usize..300,
        prop::collection::vec(any::<u8>(), 0..3),
        any::<bool>(),
    )
        .prop_map(|(version, descr, order, shape, data_len, junk, exact)| {
            let dims = shape.join(", ");
            let tuple = if shape.len() == 1 {
                format!("({dims},)")
            } else {
                format!("({dims})")
            };
            let mut dict =
                format!("{{'descr': {descr}, 'fortran_order': {order}, 'shape': {tuple}, }}")
                    .into_bytes();
            dict.extend_from_slice(&junk);
            dict.push(b'\n');
            let mut out = b"\x93NUMPY".to_vec();
            out.push(version);
            out.push(0);
            if version >= 2 {
                out.extend_from_slice(&(dict.len() as u32).to_le_bytes());
            } else {
                out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
            }
            out.extend_from_slice(&dict);
            // The exact data length when the shape is small, else an arbitrary one.
            let n: Option<usize> = shape.iter().try_fold(1usize, |a, d| {
                d.parse::<usize>().ok().and_then(|d| a.checked_mul(d))
            });
            let len = match (exact, n) {
                (true, Some(n)) if n <= 64 => n * if descr.contains('8') { 8 } else { 4 },
                _ => data_len,
            };
            out.extend(std::iter::repeat_n(0x3fu8, len));
            out
        })
}

/// Reads `.npy` bytes: an error, or an array whose shape matches the data exactly.
fn check_npy(bytes: &[u8]) {
    if let Ok(a) = read_npy_bytes(bytes) {
        let n: usize = a.shape().iter().product();
        assert!(
            n * 8 <= bytes.len() * 2 + 8,
            "{:?} from {} bytes",
            a.shape(),
            bytes.len()
        );
    }
}

/// Cases per property: 3000 (a few seconds), or `PROPTEST_CASES` for a longer run.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000)
}

proptest! {
    #![proptest_config(Config {
        cases: cases(),
        failure_persistence: None,
        timeout: 10_000,
        ..Config::default()
    })]

    #[test]
    fn geometry_files_never_panic(
        seed in 0..SEEDS.len(),
        edits in prop::collection::vec(edit(), 1..5),
    ) {
        check_geometry(&apply(SEEDS[seed].as_bytes().to_vec(), &edits));
    }

    #[test]
    fn npy_files_never_panic(file in npy_file()) {
        check_npy(&file);
    }

    #[test]
    fn mutated_npy_files_never_panic(
        flips in prop::collection::vec((0usize..200, any::<u8>()), 0..6),
        cut in 0usize..200,
    ) {
        let mut file = vec![];
        file.extend_from_slice(b"\x93NUMPY\x01\x00");
        let dict = b"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }          \n";
        file.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        file.extend_from_slice(dict);
        file.extend_from_slice(&[0; 24]);
        for (i, b) in flips {
            let n = file.len();
            file[i % n] = b;
        }
        file.truncate(file.len().min(cut.max(10)));
        check_npy(&file);
    }
}
