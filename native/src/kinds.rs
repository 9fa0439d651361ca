//! Statement kinds (engine.py `_READ`, `_OTHER_WRITE`, `_INSERT`) and the row count of
//! a multi-row INSERT (engine.py `_count_tuples`): what decides which batching figures a
//! class gets.

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

/// engine.py `_count_tuples`: `),(` separators outside quotes, plus one. One pass, no
/// copy: a quoted string (`_QUOTED`: backslash escapes, `'` or `"`) is skipped as if
/// `_QUOTED.sub(b"", arg)` had removed it, so `)'a',(` counts as `),(` does there; a quote
/// that is never closed stays a plain byte.
pub fn count_tuples(arg: &[u8]) -> u64 {
    // 0: outside a separator; 1: after `)` and spaces; 2: after `)`, spaces, `,`, spaces.
    let mut state = 0u8;
    let mut n = 1;
    let mut i = 0;
    while i < arg.len() {
        if state == 0 {
            match find_any(arg, i, [b')', b'\'', b'"']) {
                Some(k) => i = k,
                None => break,
            }
        }
        let b = arg[i];
        if b == b'\'' || b == b'"' {
            if let Some(close) = closing_quote(arg, i) {
                i = close + 1;
                continue;
            }
            state = 0;
        } else if b == b')' {
            state = 1;
        } else if is_py_space(b) {
            // Spaces keep the state (and are only read here after a `)`).
        } else if state == 1 && b == b',' {
            state = 2;
        } else {
            if state == 2 && b == b'(' {
                n += 1;
            }
            state = 0;
        }
        i += 1;
    }
    n
}

/// Where the string that opens at `arg[open]` closes (`_QUOTED`: a backslash escapes the
/// next byte), or `None` when it never does.
fn closing_quote(arg: &[u8], open: usize) -> Option<usize> {
    let q = arg[open];
    let mut j = open + 1;
    loop {
        let p = find_any(arg, j, [q, b'\\', q])?;
        if arg[p] != b'\\' {
            return Some(p);
        }
        if p + 1 >= arg.len() {
            return None;
        }
        j = p + 2;
    }
}

/// The first byte of `s[from..]` that is one of `needles`, eight bytes at a time. A tuple's
/// fields are short: memchr's setup per call cost more than these scans (measured:
/// count_tuples with memchr3 took 6,500 instructions per multi-row INSERT of the lab log).
#[inline]
fn find_any(s: &[u8], from: usize, needles: [u8; 3]) -> Option<usize> {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut i = from;
    while let Some(chunk) = s.get(i..i + 8) {
        let x = u64::from_le_bytes(chunk.try_into().unwrap());
        // `y - 1 & !y` flags a zero byte; a borrow can flag bytes above a zero byte too,
        // but never below one, so the lowest flag is exact.
        let mut hit = 0;
        for n in needles {
            let y = x ^ (LOW * n as u64);
            hit |= y.wrapping_sub(LOW) & !y & HIGH;
        }
        if hit != 0 {
            return Some(i + (hit.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    s[i..].iter().position(|b| needles.contains(b)).map(|k| i + k)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The former two-pass reading: quoted strings removed into a copy, then each `)`
    /// followed by spaces, `,`, spaces and `(` counted.
    fn count_tuples_copying(arg: &[u8]) -> u64 {
        let mut text = Vec::new();
        let mut i = 0;
        while let Some(k) = memchr::memchr2(b'\'', b'"', &arg[i..]) {
            let open = i + k;
            text.extend_from_slice(&arg[i..open]);
            match closing_quote(arg, open) {
                Some(p) => i = p + 1,
                None => {
                    text.push(arg[open]);
                    i = open + 1;
                }
            }
        }
        text.extend_from_slice(&arg[i..]);
        let mut n = 1;
        for i in memchr::memchr_iter(b')', &text) {
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

    #[test]
    fn find_any_finds_the_first() {
        for len in 0..24 {
            for at in 0..len {
                for other in [b'a', 0x80, 0xff, 0x00, b'(' + 1] {
                    let mut s = vec![other; len];
                    s[at] = b')';
                    if at + 2 < len {
                        s[at + 2] = b'"';
                    }
                    for from in 0..=len {
                        let want = s[from..].iter().position(|&b| b == b')' || b == b'"').map(|k| k + from);
                        assert_eq!(find_any(&s, from, [b')', b'"', b')']), want, "{s:?} from {from}");
                    }
                }
            }
        }
    }

    #[test]
    fn counts_as_the_copying_reading_does() {
        for case in [
            &b"insert into t values (1,'a'),(2,'b'), (3, \"c\")"[..],
            b"insert into t values (1)'x',(2)",
            b"values (1) 'it''s' , \"q\" (2)",
            b"values ('a\\'),('b') , ('c\\",
            b"values (')'),(',('),(\"'\")",
            b"x ) ,, ( ) , ) , (",
            b"(1),\n\x0b(2)\t,\r(3)",
            b"'unclosed ),( \" ),(",
        ] {
            assert_eq!(count_tuples(case), count_tuples_copying(case), "{}", String::from_utf8_lossy(case));
        }
        // Every short string over a small alphabet that holds each rule's bytes.
        let alphabet = b")(,' \"\\a";
        let mut s = Vec::new();
        for len in 0..=7u32 {
            for mut code in 0..(alphabet.len() as u64).pow(len) {
                s.clear();
                for _ in 0..len {
                    s.push(alphabet[(code % alphabet.len() as u64) as usize]);
                    code /= alphabet.len() as u64;
                }
                assert_eq!(count_tuples(&s), count_tuples_copying(&s), "{}", String::from_utf8_lossy(&s));
            }
        }
    }
}
