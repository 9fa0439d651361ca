//! What the digest rules' screens (govern/rules/screen.py) learn of a sample without
//! Python's lexer: whether it is *plainly* well formed, so META001's lexical checks
//! (rules/catalog/meta001.py) cannot fire on it.
//!
//! The test is conservative: `true` only for ASCII text whose tokens the lexer
//! (rules/sql/lexer.py) reads in one way here too: every string and quoted name closed,
//! brackets outside them balanced and at most `max_depth` deep, and a first token that
//! is `(` or a statement word. Anything it does not follow (comments, `@` variables,
//! `%(name)s` placeholders, backslashes outside strings, control bytes, non-ASCII
//! bytes) answers `false`, and Python lexes the sample as before.

use std::collections::HashSet;

/// Is `query` plainly free of what META001's lexical checks report? `words` are the
/// statement words (upper case, sorted) a statement may start with.
pub fn lexically_plain(query: &[u8], words: &[Vec<u8>], max_depth: usize) -> bool {
    let q = query;
    let n = q.len();
    let mut depth = 0usize;
    let mut first = true;
    let mut i = 0;
    while i < n {
        let b = q[i];
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            0..=0x1f | 0x80..=0xff | b'#' | b'%' | b'@' | b'\\' => return false,
            b'/' if q.get(i + 1) == Some(&b'*') => return false,
            b'-' if q.get(i + 1) == Some(&b'-') => return false,
            _ => {}
        }
        if first {
            first = false;
            if b.is_ascii_alphabetic() || b == b'_' {
                let mut j = i;
                while j < n && (q[j].is_ascii_alphanumeric() || q[j] == b'_' || q[j] == b'$') {
                    j += 1;
                }
                if q.get(j) == Some(&b'\'') {
                    return false; // x'..' or b'..': a number, not a word
                }
                if words.binary_search(&q[i..j].to_ascii_uppercase()).is_err() {
                    return false;
                }
                i = j;
                continue;
            }
            if b != b'(' {
                return false;
            }
        }
        match b {
            b'\'' | b'"' | b'`' => match closing(q, i) {
                Some(end) => {
                    i = end;
                    continue;
                }
                None => return false,
            },
            b'(' => {
                depth += 1;
                if depth > max_depth {
                    return false;
                }
            }
            b')' => {
                if depth == 0 {
                    return false;
                }
                depth -= 1;
            }
            _ => {}
        }
        i += 1;
    }
    depth == 0
}

/// Does `fingerprint` hold one of `keys` (lower case) as a whole name, `[a-z0-9_$?]+`
/// between other bytes, in any case? Also true for a fingerprint with a quoted name
/// (`` ` ``), a control byte or a byte above 127, which govern/digest/tables.py may read
/// otherwise: the digest evidence reads those fingerprints in Python.
pub fn names_one_of(fingerprint: &[u8], keys: &HashSet<Vec<u8>>) -> bool {
    let name = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'?');
    let mut word: Vec<u8> = Vec::new();
    for &b in fingerprint {
        if b == b'`' || !(0x20..0x80).contains(&b) {
            return true;
        }
        if name(b) {
            word.push(b.to_ascii_lowercase());
        } else if !word.is_empty() {
            if keys.contains(&word) {
                return true;
            }
            word.clear();
        }
    }
    !word.is_empty() && keys.contains(&word)
}

/// May `fingerprint` start with one of `verbs` (lower case) as govern/digest/tables.py
/// reads its verb (leading whitespace stripped, up to the first space, any case)? Also
/// true for a fingerprint with a control byte or a byte above 127 (Python's whitespace
/// and case are Unicode's).
pub fn may_write(fingerprint: &[u8], verbs: &[Vec<u8>]) -> bool {
    if fingerprint.iter().any(|&b| !(0x20..0x80).contains(&b)) {
        return true;
    }
    let text = fingerprint.trim_ascii_start();
    let verb = text.split(|&b| b == b' ').next().unwrap_or(b"");
    verbs.iter().any(|v| verb.eq_ignore_ascii_case(v))
}

/// Just past the string or quoted name opened at `start` (a doubled quote goes on;
/// in strings a backslash escapes the next byte), or None if it never closes or
/// holds a non-ASCII byte.
fn closing(q: &[u8], start: usize) -> Option<usize> {
    let quote = q[start];
    let mut j = start + 1;
    loop {
        let c = *q.get(j)?;
        if c >= 0x80 {
            return None;
        }
        if c == b'\\' && quote != b'`' {
            j += 2;
        } else if c == quote {
            if q.get(j + 1) == Some(&quote) {
                j += 2;
            } else {
                return Some(j + 1);
            }
        } else {
            j += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{lexically_plain, may_write, names_one_of};
    use std::collections::HashSet;

    #[test]
    fn verbs() {
        let verbs = vec![b"insert".to_vec(), b"update".to_vec()];
        assert!(may_write(b"insert into t values(?+)", &verbs));
        assert!(may_write(b"  update t set a=?", &verbs));
        assert!(may_write(b"update", &verbs));
        assert!(may_write(b"select \x1f", &verbs));
        assert!(!may_write(b"select a from t for update", &verbs));
        assert!(!may_write(b"inserted", &verbs));
    }

    #[test]
    fn names() {
        let keys: HashSet<Vec<u8>> = [b"orders".to_vec(), b"t".to_vec()].into_iter().collect();
        assert!(names_one_of(b"select * from shop.orders where id=?", &keys));
        assert!(names_one_of(b"select a from t", &keys));
        assert!(names_one_of(b"select a from `x`", &keys));
        assert!(!names_one_of(b"select a from orders_? where t_id=?", &keys));
        assert!(!names_one_of(b"select note from tt", &keys));
    }

    fn plain(q: &str) -> bool {
        let mut words: Vec<Vec<u8>> = ["SELECT", "INSERT", "WITH"].iter().map(|w| w.as_bytes().to_vec()).collect();
        words.sort();
        lexically_plain(q.as_bytes(), &words, 3)
    }

    #[test]
    fn plain_statements() {
        assert!(plain("SELECT id FROM t WHERE id = 1;"));
        assert!(plain("  select count(*) from t where a in (1, 2) and b = 'x(' and c = \"y\\\"(\";"));
        assert!(plain("(SELECT 1) UNION (SELECT 2)"));
        assert!(plain("insert into `a``(` (a) values (1), (2)"));
        assert!(plain("SELECT 'it''s'"));
        assert!(plain(""));
    }

    #[test]
    fn what_python_must_lex() {
        assert!(!plain("SELECT 'unterminated"));
        assert!(!plain("SELECT `unterminated"));
        assert!(!plain("SELECT 'a\\'"));
        assert!(!plain("SELECT (1"));
        assert!(!plain("SELECT 1)"));
        assert!(!plain("SELECT ((((1))))"));
        assert!(!plain("FOO 1"));
        assert!(!plain("x'41'"));
        assert!(!plain("1 + 1"));
        assert!(!plain("SELECT 1 -- c"));
        assert!(!plain("SELECT 1 /* c */"));
        assert!(!plain("SELECT 1 # c"));
        assert!(!plain("SELECT @a"));
        assert!(!plain("SELECT %(n)s"));
        assert!(!plain("SELECT 'é'"));
        assert!(!plain("SELECT\x0c1"));
    }
}
