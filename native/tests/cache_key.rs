//! The range's fingerprint cache (`FingerprintCache` in range.rs) against the direct
//! fingerprint: statements built from the bytes each pt rule looks at (quotes, escapes,
//! comment marks, parentheses, `use`, INSERT cuts), each written several times with other
//! strings and digits, must land in the classes their own fingerprints name.

use govern_native::filemap::Bytes;
use govern_native::fingerprint::Fingerprinter;
use govern_native::range::{digest_range, RangeOptions};

/// What a statement starts with.
const HEADS: &[&str] =
    &["SELECT a FROM t WHERE x = ", "INSERT INTO t VALUES (", "usex ", "/*c*/use ", "u", "  ", "/* q */ "];
/// What follows, `$` a string's contents and `9` a digit, both drawn again per copy.
const PIECES: &[&str] = &[
    "'$'", "'$'", "'$'", "\"$\"", "'", "\\'", "\\\"", "\\\\", "/*", "*/", "-- ", " #", "\n ", "\r", "(", ")", "),(",
    ",", " ", "in (9,9)", "VALUES (", "/", "*", "!", "?", "9", "99", "abc", "x", "'$','$'",
];
/// A string's contents: some pt empties whatever they hold, some open a comment, end a
/// tuple or hold an escape.
const CONTENTS: &[&str] = &[
    "", "a", "b c", "9-9", "x#y", "x -- y", "a(b", "a)b", "),(", "a/b", "/*", "*/", "x\ny", "-- \n", "#\r", "it\\'s",
    "q\\\"r", "\\\\", "*", "values",
];

#[test]
fn cached_fingerprints_match_direct_ones() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |bound: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % bound as u64) as usize
    };
    let mut statements = Vec::new();
    for _ in 0..3000 {
        let mut shape = HEADS[next(HEADS.len())].to_string();
        for _ in 0..next(8) + 1 {
            shape.push_str(PIECES[next(PIECES.len())]);
        }
        shape.push('x');
        for _ in 0..4 {
            let mut s = String::new();
            for c in shape.chars() {
                match c {
                    '$' => s.push_str(CONTENTS[next(CONTENTS.len())]),
                    '9' => s.push(char::from(b'0' + next(10) as u8)),
                    c => s.push(c),
                }
            }
            statements.push(s.into_bytes());
        }
    }
    let mut log = b"# Time: 261121 22:42:45\n".to_vec();
    let mut want = std::collections::BTreeMap::new();
    let mut fp = Fingerprinter::new();
    for s in &statements {
        log.extend_from_slice(b"# User@Host: u[u] @ h []\n# Query_time: 0.000100  Lock_time: 0.000000\n");
        log.extend_from_slice(s);
        log.extend_from_slice(b";\n");
        *want.entry(fp.fingerprint(s).to_vec()).or_insert(0u64) += 1;
    }
    let n = log.len();
    let options = RangeOptions { context_known: true, max_classes: usize::MAX, ..Default::default() };
    let r = digest_range(Bytes::Memory(&log), 0, n, n, &options);
    let got: std::collections::BTreeMap<Vec<u8>, u64> =
        r.classes.iter().map(|(fp, c)| (r.fingerprints.get(*fp).to_vec(), c.count)).collect();
    assert_eq!(r.events, statements.len() as u64);
    // Compare class by class, so a failure names the fingerprint that differs.
    for (k, v) in &want {
        assert_eq!(got.get(k), Some(v), "{}", String::from_utf8_lossy(k));
    }
    assert_eq!(got, want);
}
