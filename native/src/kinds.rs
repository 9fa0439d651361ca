//! Statement kinds (engine.py `_READ`, `_OTHER_WRITE`, `_INSERT`) and the row count of
//! a multi-row INSERT (engine.py `_count_tuples`): what decides which batching figures a
//! class gets.

use memchr::memchr_iter;
use regex::bytes::Regex;

/// Statement kinds (engine.py `_READ`, `_OTHER_WRITE`, `_INSERT`).
pub const READ: u8 = 0;
pub const OTHER_WRITE: u8 = 1;
pub const INSERT: u8 = 2;

/// Python's `bytes.strip()` whitespace.
pub fn is_py_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn insert_values() -> &'static (Regex, Regex, Regex) {
    static RE: std::sync::OnceLock<(Regex, Regex, Regex)> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        (
            Regex::new(r"(?-u)^(?:insert|replace)\b").unwrap(),
            Regex::new(r"(?-u)\bselect\b").unwrap(),
            Regex::new(r"(?-u)\bvalues?[\t\n\x0b\x0c\r ]*\(").unwrap(),
        )
    })
}

/// engine.py: `_INSERT` when the fingerprint matches `_INSERT_VALUES`, `_OTHER_WRITE`
/// when it matches `_WRITE`, else `_READ`.
pub fn statement_kind(fp: &[u8]) -> u8 {
    let (insert, select, values) = insert_values();
    if let Some(m) = insert.find(fp) {
        // `(?:(?!\bselect\b).)*?\bvalues?\s*\(`: a VALUES before any `select`.
        let limit = select.find_at(fp, m.end()).map_or(usize::MAX, |s| s.start());
        if values.find_at(fp, m.end()).is_some_and(|v| v.start() <= limit) {
            return INSERT;
        }
    }
    for w in [&b"insert"[..], b"replace", b"update", b"delete"] {
        if fp.starts_with(w) && !fp.get(w.len()).is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_') {
            return OTHER_WRITE;
        }
    }
    READ
}

/// engine.py `_count_tuples`: `),(` separators outside quotes, plus one.
pub fn count_tuples(arg: &[u8]) -> u64 {
    count_tuples_with(arg, &mut Vec::new())
}

/// `count_tuples`, quotes stripped into `scratch` (reused from event to event).
pub fn count_tuples_with(arg: &[u8], scratch: &mut Vec<u8>) -> u64 {
    let text: &[u8] = if memchr::memchr2(b'\'', b'"', arg).is_some() {
        strip_quoted(arg, scratch);
        scratch
    } else {
        arg
    };
    let mut n = 1;
    for i in memchr_iter(b')', text) {
        let mut j = i + 1;
        while j < text.len() && is_py_space(text[j]) {
            j += 1;
        }
        if text.get(j) != Some(&b',') {
            continue;
        }
        j += 1;
        while j < text.len() && is_py_space(text[j]) {
            j += 1;
        }
        if text.get(j) == Some(&b'(') {
            n += 1;
        }
    }
    n
}

/// `_QUOTED.sub(b"", arg)` into `out`: quoted strings with backslash escapes removed;
/// a quote that is never closed stays.
fn strip_quoted(arg: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while let Some(k) = memchr::memchr2(b'\'', b'"', &arg[i..]) {
        let open = i + k;
        out.extend_from_slice(&arg[i..open]);
        let q = arg[open];
        let mut j = open + 1;
        let mut closed = None;
        while let Some(m) = memchr::memchr2(q, b'\\', &arg[j..]) {
            let p = j + m;
            if arg[p] != b'\\' {
                closed = Some(p);
                break;
            }
            if p + 1 >= arg.len() {
                break;
            }
            j = p + 2;
        }
        match closed {
            Some(p) => i = p + 1,
            None => {
                out.push(q);
                i = open + 1;
            }
        }
    }
    out.extend_from_slice(&arg[i..]);
}
