//! Perl's character classes on byte strings, as pt-query-digest sees them.
//!
//! pt reads the log without a decoding layer, so every string is bytes and Perl
//! applies ASCII rules: `\w` is `[A-Za-z0-9_]`, `\s` is `[ \t\n\x0b\x0c\r]`
//! (vertical tab included since Perl 5.18) and `lc` touches only `A-Z`.

/// Byte classes as bit flags, looked up in one table (the hot loops test every byte).
pub const SPACE: u8 = 1; // Perl \s
pub const WORD: u8 = 2; // Perl \w
pub const NUM_TAIL: u8 = 4; // pt's number tail [0-9a-f.xb+-]
pub const TR_SPACE: u8 = 8; // what pt's tr squeezes: [ \n\t\r\f]

pub static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let mut f = 0;
        if matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
            f |= SPACE;
        }
        if c.is_ascii_alphanumeric() || c == b'_' {
            f |= WORD;
        }
        if matches!(c, b'0'..=b'9' | b'a'..=b'f' | b'.' | b'x' | b'+' | b'-') {
            f |= NUM_TAIL;
        }
        if matches!(c, b' ' | b'\n' | b'\t' | b'\r' | 0x0c) {
            f |= TR_SPACE;
        }
        t[b] = f;
        b += 1;
    }
    t
};

/// Perl `\s` on a byte string.
#[inline]
pub fn is_space(b: u8) -> bool {
    CLASS[b as usize] & SPACE != 0
}

/// Perl `\w` on a byte string.
#[inline]
pub fn is_word(b: u8) -> bool {
    CLASS[b as usize] & WORD != 0
}

/// Length of the run of bytes at the start of `s` that satisfy `f`.
#[inline]
pub fn run_len(s: &[u8], f: impl Fn(u8) -> bool) -> usize {
    s.iter().position(|&b| !f(b)).unwrap_or(s.len())
}

/// Perl truthiness of a string: false for `""` and `"0"` only.
#[inline]
pub fn truthy(s: &[u8]) -> bool {
    !(s.is_empty() || s == b"0")
}

/// `starts_with`, ignoring ASCII case (`m/\A…/i`).
#[inline]
pub fn starts_with_ci(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// Perl `split(/,|\s*=\s*/, $s)` as SlowLogParser uses it on `SET` lines:
/// leading empty fields kept, trailing empty fields dropped.
pub fn split_set_assignments(s: &[u8]) -> Vec<&[u8]> {
    let mut fields = Vec::new();
    split_set_assignments_with(s, |a, b| fields.push(&s[a..b]));
    fields
}

/// `split_set_assignments` without a list: `f` gets each field's range in `s`.
pub fn split_set_assignments_with(s: &[u8], mut f: impl FnMut(usize, usize)) {
    // Empty fields are held back until a non-empty one follows (trailing ones drop).
    let mut empties = 0;
    let mut field = |a: usize, b: usize| {
        if a == b {
            empties += 1;
        } else {
            for _ in 0..std::mem::take(&mut empties) {
                f(a, a);
            }
            f(a, b);
        }
    };
    let mut start = 0;
    let mut i = 0;
    while i < s.len() {
        let sep_end = if s[i] == b',' {
            Some(i + 1)
        } else if is_space(s[i]) || s[i] == b'=' {
            let j = i + run_len(&s[i..], is_space);
            (j < s.len() && s[j] == b'=').then(|| j + 1 + run_len(&s[j + 1..], is_space))
        } else {
            None
        };
        match sep_end {
            Some(end) => {
                field(start, i);
                start = end;
                i = end;
            }
            None => i += 1,
        }
    }
    field(start, s.len());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_like_perl() {
        // Expected values printed by perl 5.36 for the same inputs.
        let cases: &[(&[u8], &[&[u8]])] = &[
            (b"a,,b,", &[b"a", b"", b"b"]),
            (b",a=1", &[b"", b"a", b"1"]),
            (b"a = b ,c", &[b"a", b"b ", b"c"]),
            (b"", &[]),
            (b"x=1,", &[b"x", b"1"]),
            (b" a=1", &[b" a", b"1"]),
            (b"insert_id=5,timestamp=6", &[b"insert_id", b"5", b"timestamp", b"6"]),
        ];
        for (input, want) in cases {
            assert_eq!(&split_set_assignments(input), want, "{:?}", String::from_utf8_lossy(input));
        }
    }
}
