//! pt-query-digest's query fingerprint (QueryRewriter::fingerprint, percona-toolkit 3.2.1),
//! without regular expressions.
//!
//! pt rewrites the query with about fifteen substitutions in a fixed order; each sees
//! the output of the previous one, and several of pt's known defects come from that
//! order (comments are removed before strings are recognised, `a - b` becomes `a ? b`,
//! digits inside identifiers are folded). This module keeps the order and the defects:
//!
//! 1. special cases: mysqldump, percona-toolkit checksums, administrator commands, CALL;
//! 2. a multi-row INSERT/REPLACE is cut after its first tuple;
//! 3. `/*…*/` comments (not `/*!…*/`), then `--`/`#` comments to the end of the line;
//! 4. `use db` → `use ?` (and stop);
//! 5. `\'`/`\"` removed, then `"…"` → `?`, then `'…'` → `?`;
//! 6. one fused pass for the rest of the per-character rules: `true`/`false` → `?`,
//!    number-like runs `[0-9+-][0-9a-f.xb+-]*` → `?`, `[xb.+-]?` → `?`, leading
//!    whitespace, one trailing newline, whitespace runs → one space, lowercase,
//!    `null` → `?`;
//! 7. on the (short) result: `in (…)`/`values (…)` lists, repeated UNION SELECTs, the
//!    first `limit ?, ?`, and `asc` after the first `order by `.
//!
//! Each step copies only when its trigger is present, so a typical statement is read
//! two or three times at memchr speed. The steps are checked against pt's own code on
//! every statement of the corpus and on fuzzed input (tests/pt_differential.rs).

use std::sync::OnceLock;

use memchr::{memchr, memchr2, memchr3, memmem};

use crate::perl::{is_space, is_word, run_len, starts_with_ci};

/// Reusable buffers: fingerprinting allocates nothing once they have grown.
#[derive(Default)]
pub struct Fingerprinter {
    a: Vec<u8>,
    b: Vec<u8>,
    out: Vec<u8>,
    /// `normalize`'s work area: it only grows, so it is zeroed once per new size rather
    /// than at every statement (an IN list of 10 KB cost a 10 KB memset per call).
    scratch: Vec<u8>,
}

/// Which buffer holds the text between steps.
#[derive(Clone, Copy, PartialEq)]
enum Cur {
    Input,
    A,
    B,
}

impl Fingerprinter {
    pub fn new() -> Self {
        Self::default()
    }

    /// The fingerprint of `q`, valid until the next call.
    pub fn fingerprint(&mut self, q: &[u8]) -> &[u8] {
        match self.fingerprint_unless(q, |_| None::<std::convert::Infallible>) {
            Ok(never) => match never {},
            Err(fingerprint) => fingerprint,
        }
    }

    /// The fingerprint of `q` (`Err`), unless `known` knows the fingerprint of the text
    /// the string rules leave (step 5's output, before the per-character pass), which is
    /// what the fingerprint is a function of for every statement that gets that far; no
    /// later step tells digits apart. `known` is not asked about the special cases, CALL
    /// and `use`.
    pub fn fingerprint_unless<T>(&mut self, q: &[u8], known: impl FnOnce(&[u8]) -> Option<T>) -> Result<T, &[u8]> {
        if let Some(special) = special_case(q) {
            self.out.clear();
            self.out.extend_from_slice(special.unwrap_or(q));
            return Err(&self.out);
        }
        if let Some(name_end) = call_name_end(q) {
            self.out.clear();
            let s = run_len(q, is_space);
            self.out.extend(q[s..name_end].iter().map(u8::to_ascii_lowercase));
            return Err(&self.out);
        }
        let q = &q[..insert_first_tuple_end(q).unwrap_or(q.len())];

        let mut cur = Cur::Input;
        macro_rules! step {
            ($f:expr) => {{
                let (src, dst): (&[u8], &mut Vec<u8>) = match cur {
                    Cur::Input => (q, &mut self.a),
                    Cur::A => (&self.a, &mut self.b),
                    Cur::B => (&self.b, &mut self.a),
                };
                dst.clear();
                if $f(src, dst) {
                    cur = match cur {
                        Cur::Input | Cur::B => Cur::A,
                        Cur::A => Cur::B,
                    };
                }
            }};
        }
        step!(strip_block_comments);
        step!(strip_line_comments);
        {
            let text: &[u8] = match cur {
                Cur::Input => q,
                Cur::A => &self.a,
                Cur::B => &self.b,
            };
            if let Some(keep_newline) = use_statement(text) {
                self.out.clear();
                self.out.extend_from_slice(if keep_newline { b"use ?\n" } else { b"use ?" });
                return Err(&self.out);
            }
        }
        step!(strip_escaped_quotes);
        step!(|s, d| replace_quoted(s, d, b'"'));
        step!(|s, d| replace_quoted(s, d, b'\''));
        let text: &[u8] = match cur {
            Cur::Input => q,
            Cur::A => &self.a,
            Cur::B => &self.b,
        };
        if let Some(t) = known(text) {
            return Ok(t);
        }
        normalize(text, &mut self.scratch, &mut self.out);
        collapse_lists(&mut self.out, &mut self.a);
        collapse_unions(&mut self.out, &mut self.a);
        collapse_limit(&mut self.out);
        drop_order_by_asc(&mut self.out, &mut self.a);
        Err(&self.out)
    }
}

/// A substring finder built once (a one-off `memmem::find` builds one per call).
macro_rules! finder {
    ($needle:expr) => {{
        static F: OnceLock<memmem::Finder<'static>> = OnceLock::new();
        F.get_or_init(|| memmem::Finder::new($needle))
    }};
}

/// pt's query ID: the uppercase hex MD5 of the fingerprint (pt ≥ 3.5.4 and its JSON
/// `checksum`; older reports and PMM use the last 16 digits).
pub fn query_id(fingerprint: &[u8]) -> String {
    use md5::{Digest, Md5};
    let digest = Md5::digest(fingerprint);
    let mut s = String::with_capacity(32);
    for b in digest {
        s.push(char::from_digit((b >> 4) as u32, 16).unwrap().to_ascii_uppercase());
        s.push(char::from_digit((b & 15) as u32, 16).unwrap().to_ascii_uppercase());
    }
    s
}

/// mysqldump, pt's checksum queries and administrator commands: `Some(Some(text))` for a
/// fixed fingerprint, `Some(None)` to keep the query as it is.
/// Statements whose fingerprint cannot depend on which digits they hold (the range's
/// cache keys them with every digit as 0): all but administrator commands and CALL, whose
/// text pt keeps, and what could be mysqldump's query (`/*!40001` is part of its test;
/// pt's own checksum comment is recognised whatever its digits).
pub fn digits_never_matter(q: &[u8]) -> bool {
    !q.starts_with(b"administrator command: ") && !q.starts_with(b"SELECT /*!") && call_name_end(q).is_none()
}

fn special_case(q: &[u8]) -> Option<Option<&'static [u8]>> {
    if q.starts_with(b"SELECT /*!40001 SQL_NO_CACHE */ * FROM `") {
        return Some(Some(b"mysqldump"));
    }
    if has_checksum_comment(q) {
        return Some(Some(b"percona-toolkit"));
    }
    if q.starts_with(b"administrator command: ") {
        return Some(None);
    }
    None
}

/// `m#/\*\w+\.\w+:[0-9]/[0-9]\*/#`
fn has_checksum_comment(q: &[u8]) -> bool {
    let mut from = 0;
    std::iter::from_fn(|| {
        let k = find2(q, from, b'/', b'*')?;
        from = k + 1;
        Some(k)
    })
    .any(|i| {
        let s = &q[i + 2..];
        let a = run_len(s, is_word);
        if a == 0 || s.get(a) != Some(&b'.') {
            return false;
        }
        let s = &s[a + 1..];
        let b = run_len(s, is_word);
        b > 0 && s.len() >= b + 6 && {
            let t = &s[b..b + 6];
            t[0] == b':' && t[1].is_ascii_digit() && t[2] == b'/' && t[3].is_ascii_digit() && &t[4..6] == b"*/"
        }
    })
}

/// `m/\A\s*(call\s+\S+)\(/i`: the end of the captured `call name`, if it matches.
fn call_name_end(q: &[u8]) -> Option<usize> {
    let s = run_len(q, is_space);
    if !starts_with_ci(&q[s..], b"call") {
        return None;
    }
    let ws = run_len(&q[s + 4..], is_space);
    if ws == 0 {
        return None;
    }
    let name = s + 4 + ws;
    let run = run_len(&q[name..], |b| !is_space(b));
    if run < 2 {
        return None;
    }
    // `\S+` is greedy: the last '(' of the run that leaves at least one name byte.
    let paren = memchr::memrchr(b'(', &q[name + 1..name + run])?;
    Some(name + 1 + paren)
}

/// `m/\A((?:INSERT|REPLACE)(?: IGNORE)?\s+INTO.+?VALUES\s*\(.*?\))\s*,\s*\(/is`: the end
/// of the first tuple of a multi-row INSERT or REPLACE.
fn insert_first_tuple_end(q: &[u8]) -> Option<usize> {
    let mut p = if starts_with_ci(q, b"insert") {
        6
    } else if starts_with_ci(q, b"replace") {
        7
    } else {
        return None;
    };
    if starts_with_ci(&q[p..], b" ignore") {
        p += 7;
    }
    let ws = run_len(&q[p..], is_space);
    if ws == 0 || !starts_with_ci(&q[p + ws..], b"into") {
        return None;
    }
    // `.+?VALUES\s*\(`: the first "values(" at least one byte after INTO. A later one
    // cannot succeed where the first failed: its search for the tuple end is a subset.
    let from = p + ws + 4 + 1;
    let mut v = from;
    let open = loop {
        let i = find_ci(&q[v.min(q.len())..], b"values")? + v;
        let after = i + 6 + run_len(&q[i + 6..], is_space);
        if q.get(after) == Some(&b'(') {
            break after + 1;
        }
        v = i + 1;
    };
    // `.*?\)\s*,\s*\(`
    let mut c = open;
    loop {
        let close = memchr(b')', &q[c..])? + c;
        let mut k = close + 1 + run_len(&q[close + 1..], is_space);
        if q.get(k) == Some(&b',') {
            k += 1 + run_len(&q[k + 1..], is_space);
            if q.get(k) == Some(&b'(') {
                return Some(close + 1);
            }
        }
        c = close + 1;
    }
}

/// Case-insensitive search for a lowercase ASCII needle.
fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let (first_lo, first_up) = (needle[0], needle[0].to_ascii_uppercase());
    let mut i = 0;
    while let Some(k) = memchr2(first_lo, first_up, &hay[i..]) {
        let at = i + k;
        if starts_with_ci(&hay[at..], needle) {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

/// The first `ab` in `s` at or after `from`: memchr on the first byte (a one-off
/// `memmem::find` would build a searcher per call).
#[inline]
fn find2(s: &[u8], from: usize, a: u8, b: u8) -> Option<usize> {
    let mut i = from;
    while let Some(k) = memchr(a, s.get(i..)?) {
        if s.get(i + k + 1) == Some(&b) {
            return Some(i + k);
        }
        i += k + 1;
    }
    None
}

/// `s#/\*[^!].*?\*/##sg`. Note `/**/` is not a comment to pt: `[^!]` eats the second
/// `*`, and the comment runs to the next `*/`.
fn strip_block_comments(s: &[u8], out: &mut Vec<u8>) -> bool {
    let mut i = 0;
    let mut last = 0;
    let mut changed = false;
    while let Some(k) = find2(s, i, b'/', b'*') {
        if k + 2 >= s.len() {
            break;
        }
        if s[k + 2] == b'!' {
            i = k + 1;
            continue;
        }
        let Some(e) = find2(s, k + 3, b'*', b'/') else { break };
        out.extend_from_slice(&s[last..k]);
        last = e + 2;
        i = e + 2;
        changed = true;
    }
    if changed {
        out.extend_from_slice(&s[last..]);
    }
    changed
}

/// `s/(?:--|#)[^'"\r\n]*(?=[\r\n]|\Z)//g`: a comment runs to the end of its line and
/// must not contain a quote (so `'a#b'` survives, and so does `# it's`).
fn strip_line_comments(s: &[u8], out: &mut Vec<u8>) -> bool {
    let mut i = 0;
    let mut last = 0;
    let mut changed = false;
    while let Some(k) = memchr2(b'-', b'#', &s[i..]).map(|k| k + i) {
        let body = if s[k] == b'#' {
            k + 1
        } else if s.get(k + 1) == Some(&b'-') {
            k + 2
        } else {
            i = k + 1;
            continue;
        };
        let stop = memchr3(b'\'', b'"', b'\n', &s[body..]).map_or(s.len(), |j| j + body);
        let stop = memchr(b'\r', &s[body..stop]).map_or(stop, |j| j + body);
        if stop < s.len() && (s[stop] == b'\'' || s[stop] == b'"') {
            // Every comment start before this quote fails the same way.
            i = stop + 1;
            continue;
        }
        out.extend_from_slice(&s[last..k]);
        last = stop;
        i = stop;
        changed = true;
    }
    if changed {
        out.extend_from_slice(&s[last..]);
    }
    changed
}

/// `s/\Ause \S+\Z/use ?/i`: `Some(true)` when a final newline stays after `use ?`.
fn use_statement(s: &[u8]) -> Option<bool> {
    if !starts_with_ci(s, b"use") || s.get(3) != Some(&b' ') {
        return None;
    }
    let r = run_len(&s[4..], |b| !is_space(b));
    let p = 4 + r;
    if r == 0 {
        None
    } else if p == s.len() {
        Some(false)
    } else if p + 1 == s.len() && s[p] == b'\n' {
        Some(true)
    } else {
        None
    }
}

/// `s/\\["']//g`
fn strip_escaped_quotes(s: &[u8], out: &mut Vec<u8>) -> bool {
    let mut i = 0;
    let mut last = 0;
    let mut changed = false;
    while let Some(k) = memchr(b'\\', &s[i..]).map(|k| k + i) {
        if matches!(s.get(k + 1), Some(b'\'' | b'"')) {
            out.extend_from_slice(&s[last..k]);
            last = k + 2;
            i = k + 2;
            changed = true;
        } else {
            i = k + 1;
        }
    }
    if changed {
        out.extend_from_slice(&s[last..]);
    }
    changed
}

/// `s/".*?"/?/sg` (or with `'`): quotes pair up left to right; an odd last one stays.
fn replace_quoted(s: &[u8], out: &mut Vec<u8>, quote: u8) -> bool {
    let mut i = 0;
    let mut changed = false;
    while let Some(a) = memchr(quote, &s[i..]).map(|k| k + i) {
        let Some(b) = memchr(quote, &s[a + 1..]).map(|k| k + a + 1) else { break };
        out.extend_from_slice(&s[i..a]);
        out.push(b'?');
        i = b + 1;
        changed = true;
    }
    if changed {
        out.extend_from_slice(&s[i..]);
    }
    changed
}

/// `[0-9a-f.xb+-]`: what pt's number pattern continues with (case-sensitive).
#[inline]
fn in_number_tail(b: u8) -> bool {
    crate::perl::CLASS[b as usize] & crate::perl::NUM_TAIL != 0
}

/// `[ \n\t\r\f]`: what `tr/…/ /s` squeezes (not the vertical tab, which `\s` has).
#[inline]
fn is_tr_space(b: u8) -> bool {
    crate::perl::CLASS[b as usize] & crate::perl::TR_SPACE != 0
}

/// The per-character rules in one pass, from the text after the string rules:
/// `\bfalse\b|\btrue\b` → `?` (i), `[0-9+-][0-9a-f.xb+-]*` → `?`, `[xb.+-]\?` → `?`,
/// `\A\s+` removed, `chomp`, `tr[ \n\t\r\f][ ]s`, `lc`, `\bnull\b` → `?`.
///
/// Each rule sees the previous one's output, so the pass keeps what it needs of each
/// stage: word boundaries come from the input (the true/false rule runs first), the
/// byte before a `?` is checked before lowercasing (`X?` is not `x?`), and `null` is
/// checked on the finished output when a word ends.
fn normalize(s: &[u8], scratch: &mut Vec<u8>, result: &mut Vec<u8>) {
    // chomp: one trailing newline. Leading whitespace is skipped below, so the order of
    // the two does not matter.
    let s = s.strip_suffix(b"\n").unwrap_or(s);
    let n = s.len();
    // No rule makes the text longer than what it has read, so `out` never passes `i`;
    // eight bytes of slack let a letter run store whole words. What the scratch held
    // before is never read: `Out` reads only below `w`, which it wrote.
    if scratch.len() < n + 8 {
        scratch.resize(n + 8, 0);
    }
    let mut out = Out { buf: scratch, w: 0 };
    let mut last_raw: u8 = 0; // the last byte of the text after the number rule
    let mut i = run_len(s, is_space);
    // The bytes before `i` are leading whitespace, which `\A\s+` removes.
    while i < n {
        let c = s[i];
        if is_word(c) && !c.is_ascii_digit() {
            if matches!(c, b't' | b'T' | b'f' | b'F') && (i == 0 || !is_word(s[i - 1])) {
                let w = run_len(&s[i..], is_word);
                if is_true_false(&s[i..i + w]) {
                    push_question(&mut out, &mut last_raw);
                    i += w;
                    continue;
                }
            }
            // Letters and underscores up to the next digit or non-word byte: no rule
            // applies inside them but lowercasing.
            i = out.letters(s, i);
            last_raw = s[i - 1];
            continue;
        }
        if matches!(c, b'0'..=b'9' | b'+' | b'-') {
            let mut j = i + 1 + digit_run(&s[i + 1..]);
            while j < n && in_number_tail(s[j]) {
                // A `false` word starting inside the run was already replaced.
                if s[j] == b'f' && !is_word(s[j - 1]) && is_true_false(&s[j..j + run_len(&s[j..], is_word)]) {
                    break;
                }
                j += 1;
            }
            push_question(&mut out, &mut last_raw);
            i = j;
            continue;
        }
        if c == b'(' {
            if let Some(close) = integer_list_end(s, i, out.text()) {
                // `in (1, 2, …)` ends as `in(?+)`: one `?` stands for the whole list.
                check_null(&mut out);
                out.push(b'(');
                last_raw = b'(';
                push_question(&mut out, &mut last_raw);
                out.push(b')');
                last_raw = b')';
                i = close + 1;
                continue;
            }
        }
        if c == b'?' {
            push_question(&mut out, &mut last_raw);
        } else if is_tr_space(c) {
            if out.last() != Some(b' ') {
                check_null(&mut out);
                out.push(b' ');
            }
            last_raw = c;
        } else {
            if !is_word(c) {
                check_null(&mut out);
            }
            out.push(c.to_ascii_lowercase());
            last_raw = c;
        }
        i += 1;
    }
    check_null(&mut out);
    result.clear();
    result.extend_from_slice(out.text());
}

/// `normalize`'s output: a buffer sized before the pass and written by index, so a byte
/// costs a store rather than a push, and a run of letters is lowercased and stored eight
/// bytes at a time.
struct Out<'a> {
    buf: &'a mut Vec<u8>,
    w: usize,
}

impl Out<'_> {
    #[inline]
    fn push(&mut self, b: u8) {
        self.buf[self.w] = b;
        self.w += 1;
    }

    #[inline]
    fn pop(&mut self) {
        self.w = self.w.saturating_sub(1);
    }

    #[inline]
    fn last(&self) -> Option<u8> {
        self.w.checked_sub(1).map(|j| self.buf[j])
    }

    #[inline]
    fn text(&self) -> &[u8] {
        &self.buf[..self.w]
    }

    /// Lowercase and append the run of letters and underscores that starts at `s[i]`;
    /// returns where it ends. The store may run past the run (into the slack, or where
    /// the next bytes will be written): only the run's bytes are kept.
    #[inline]
    fn letters(&mut self, s: &[u8], mut i: usize) -> usize {
        const HIGH: u64 = 0x8080_8080_8080_8080;
        while let Some(chunk) = s.get(i..i + 8) {
            let x = u64::from_le_bytes(chunk.try_into().unwrap());
            let (alpha, run) = letter_bytes(x);
            self.buf[self.w..self.w + 8].copy_from_slice(&(x | alpha >> 2).to_le_bytes());
            let stop = !run & HIGH;
            if stop != 0 {
                let k = (stop.trailing_zeros() / 8) as usize;
                self.w += k;
                return i + k;
            }
            self.w += 8;
            i += 8;
        }
        while i < s.len() && is_word(s[i]) && !s[i].is_ascii_digit() {
            self.push(s[i].to_ascii_lowercase());
            i += 1;
        }
        i
    }
}

/// The high bit of each byte of `x` that is an ASCII letter, and of each that is a letter
/// or `_` (`\w` without the digits). A byte with its `0x20` bit set is a letter exactly
/// when it lies in `a..=z`; the high bit is masked off first so no sum carries into the
/// next byte, and non-ASCII bytes are dropped at the end.
#[inline]
fn letter_bytes(x: u64) -> (u64, u64) {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let y = (x | 0x2020_2020_2020_2020) & 0x7F7F_7F7F_7F7F_7F7F;
    let at_least_a = y.wrapping_add(0x1F1F_1F1F_1F1F_1F1F); // y >= 0x61
    let past_z = y.wrapping_add(0x0505_0505_0505_0505); // y >= 0x7b
    let alpha = at_least_a & !past_z & !x & HIGH;
    let underscore = !nonzero_bytes(x ^ 0x5F5F_5F5F_5F5F_5F5F) & HIGH;
    (alpha, alpha | underscore)
}

/// Where the list that opens at `s[open]` closes, when pt's rules make the whole list one
/// `?`: `collapse_lists` turns `\b(in|values?)[\s,]*\(` + `[\s?,]*\)` into `in(?+)`, and a
/// list of plain unsigned integers, commas and whitespace becomes exactly that after the number
/// rule. `out` (lowercased, whitespace squeezed) must end with `in`, `value` or `values`,
/// after a non-word byte, and then only whitespace and commas. Long IN lists of ids are
/// most of the bytes some logs' statements hold; they are skipped eight bytes at a time.
fn integer_list_end(s: &[u8], open: usize, out: &[u8]) -> Option<usize> {
    let head = out.len() - out.iter().rev().take_while(|&&b| b == b',' || is_space(b)).count();
    let word = &out[..head];
    [&b"in"[..], b"value", b"values"]
        .into_iter()
        .find(|k| word.ends_with(k) && (word.len() == k.len() || !is_word(word[word.len() - k.len() - 1])))?;
    let body = &s[open + 1..];
    let mut j = list_blocks(body);
    while let Some(chunk) = body.get(j..j + 8) {
        let x = u64::from_le_bytes(chunk.try_into().unwrap());
        // Digits: the high bit stays clear in both sums (see `digit_run`).
        let not_digit =
            (x.wrapping_add(0x4646_4646_4646_4646) | x.wrapping_sub(0x3030_3030_3030_3030)) & 0x8080_8080_8080_8080;
        let not_comma = nonzero_bytes(x ^ 0x2C2C_2C2C_2C2C_2C2C);
        let not_blank = nonzero_bytes(x ^ 0x2020_2020_2020_2020);
        let stop = not_digit & not_comma & not_blank;
        if stop != 0 {
            j += (stop.trailing_zeros() / 8) as usize;
            break;
        }
        j += 8;
    }
    j += run_len(&body[j..], |b| b.is_ascii_digit() || b == b',' || is_space(b));
    (body.get(j) == Some(&b')') && body[..j].iter().any(u8::is_ascii_digit)).then_some(open + 1 + j)
}

/// How many whole 16-byte blocks of digits, commas and blanks `s` starts with, in bytes:
/// long IN lists are skipped a block at a time. On x86_64 a block is six SSE2
/// instructions (two signed compares bound the digits: bytes above 0x7F are negative);
/// elsewhere, a fixed-size test the compiler may vectorise.
#[inline]
pub(crate) fn list_blocks(s: &[u8]) -> usize {
    let mut j = 0;
    while let Some(block) = s.get(j..j + 16).and_then(|b| <&[u8; 16]>::try_from(b).ok()) {
        if !list_block(block) {
            break;
        }
        j += 16;
    }
    j
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn list_block(b: &[u8; 16]) -> bool {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of x86_64; the 16 bytes read lie inside `b`.
    unsafe {
        let x = _mm_loadu_si128(b.as_ptr().cast::<__m128i>());
        let digit = _mm_and_si128(
            _mm_cmpgt_epi8(x, _mm_set1_epi8(b'0' as i8 - 1)),
            _mm_cmplt_epi8(x, _mm_set1_epi8(b'9' as i8 + 1)),
        );
        let sep =
            _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(b',' as i8)), _mm_cmpeq_epi8(x, _mm_set1_epi8(b' ' as i8)));
        _mm_movemask_epi8(_mm_or_si128(digit, sep)) == 0xFFFF
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn list_block(b: &[u8; 16]) -> bool {
    !b.iter().fold(false, |stop, &c| stop | !(c.is_ascii_digit() || c == b',' || c == b' '))
}

/// The high bit of each byte of `x` that is not zero (exact per byte, no borrow between
/// bytes).
#[inline]
fn nonzero_bytes(x: u64) -> u64 {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    ((x & LOW7).wrapping_add(LOW7) | x) & 0x8080_8080_8080_8080
}

/// The number of ASCII digits `s` starts with, eight at a time: long IN lists and
/// VALUES tuples are mostly digits. A byte is flagged when `b + 0x46` or `b - 0x30`
/// leaves its high bit set, which digits never do; the digits below the first flagged
/// byte carry and borrow nothing into it, so it is the first non-digit.
#[inline]
fn digit_run(s: &[u8]) -> usize {
    let mut j = 0;
    while let Some(chunk) = s.get(j..j + 8) {
        let x = u64::from_le_bytes(chunk.try_into().unwrap());
        let flags =
            (x.wrapping_add(0x4646_4646_4646_4646) | x.wrapping_sub(0x3030_3030_3030_3030)) & 0x8080_8080_8080_8080;
        if flags != 0 {
            return j + (flags.trailing_zeros() / 8) as usize;
        }
        j += 8;
    }
    j + run_len(&s[j..], |b| b.is_ascii_digit())
}

#[inline]
fn is_true_false(w: &[u8]) -> bool {
    w.eq_ignore_ascii_case(b"true") || w.eq_ignore_ascii_case(b"false")
}

/// Emit a `?`, first applying `[xb.+-]\?` → `?` to the byte before it.
#[inline]
fn push_question(out: &mut Out, last_raw: &mut u8) {
    if matches!(*last_raw, b'x' | b'b' | b'.' | b'+' | b'-') {
        out.pop();
    }
    check_null(out);
    out.push(b'?');
    *last_raw = b'?';
}

/// `s/\bnull\b/?/g`, applied when a word has just ended at the end of `out`.
#[inline]
fn check_null(out: &mut Out) {
    let n = out.w;
    let o = &out.buf;
    // Most words do not end in `l`: one byte decides before four are compared.
    if n >= 4 && o[n - 1] == b'l' && o[n - 4..n] == *b"null" && (n == 4 || !is_word(o[n - 5])) {
        out.w = n - 4;
        out.push(b'?');
    }
}

/// `s/\b(in|values?)(?:[\s,]*\([\s?,]*\))+/$1(?+)/gx`
fn collapse_lists(out: &mut Vec<u8>, tmp: &mut Vec<u8>) {
    if memchr(b'(', out).is_none() {
        return;
    }
    let s: &[u8] = out;
    tmp.clear();
    let mut last = 0;
    let mut i = 0;
    let mut changed = false;
    while let Some(p) = memchr2(b'i', b'v', &s[i..]).map(|k| k + i) {
        i = p + 1;
        if p > 0 && is_word(s[p - 1]) {
            continue;
        }
        let kw = if s[p..].starts_with(b"in") {
            2
        } else if s[p..].starts_with(b"values") {
            6
        } else if s[p..].starts_with(b"value") {
            5
        } else {
            continue;
        };
        let mut end = None;
        let mut q = p + kw;
        // With `values?`, a failed "values" gives back its "s", which then cannot match.
        loop {
            let mut r = q + run_len(&s[q..], |b| is_space(b) || b == b',');
            if s.get(r) != Some(&b'(') {
                break;
            }
            r += 1;
            r += run_len(&s[r..], |b| is_space(b) || b == b'?' || b == b',');
            if s.get(r) != Some(&b')') {
                break;
            }
            q = r + 1;
            end = Some(q);
        }
        if let Some(e) = end {
            tmp.extend_from_slice(&s[last..p + kw]);
            tmp.extend_from_slice(b"(?+)");
            last = e;
            i = e;
            changed = true;
        }
    }
    if changed {
        tmp.extend_from_slice(&s[last..]);
        std::mem::swap(out, tmp);
    }
}

/// `s/\b(select\s.*?)(?:(\sunion(?:\sall)?)\s\1)+/$1 \/*repeat$2*\//xg`
fn collapse_unions(out: &mut Vec<u8>, tmp: &mut Vec<u8>) {
    let union = finder!(b"union");
    if union.find(out).is_none() {
        return;
    }
    let s: &[u8] = out;
    let n = s.len();
    tmp.clear();
    let mut last = 0;
    let mut i = 0;
    let mut changed = false;
    while let Some(p) = finder!(b"select").find(&s[i..]).map(|k| k + i) {
        i = p + 1;
        if (p > 0 && is_word(s[p - 1])) || !s.get(p + 6).is_some_and(|&b| is_space(b)) {
            continue;
        }
        // `.*?`: try group ends in increasing order; a repetition must start with
        // `\sunion`, so only the bytes before each "union" are candidates.
        let mut found = None;
        let mut u_from = p + 7;
        while let Some(u) = union.find(&s[u_from.min(n)..]).map(|k| k + u_from) {
            u_from = u + 1;
            if u < p + 8 || !is_space(s[u - 1]) {
                continue;
            }
            let g1 = &s[p..u - 1];
            let mut q = u - 1;
            let mut g2 = None;
            loop {
                // `(\sunion(?:\sall)?)\s\1`, preferring the "all" form.
                let base = q + 6; // \s + "union"
                if !(q < n && is_space(s[q]) && s[q + 1..].starts_with(b"union")) {
                    break;
                }
                let try_tail = |t: usize| -> Option<usize> {
                    (t < n && is_space(s[t]) && s[t + 1..].starts_with(g1)).then_some(t + 1 + g1.len())
                };
                let with_all = (base < n && is_space(s[base]) && s[base + 1..].starts_with(b"all"))
                    .then(|| try_tail(base + 4).map(|e| (base + 4, e)))
                    .flatten();
                match with_all.or_else(|| try_tail(base).map(|e| (base, e))) {
                    Some((g2_end, e)) => {
                        g2 = Some((q, g2_end));
                        q = e;
                    }
                    None => break,
                }
            }
            if let Some(g2) = g2 {
                found = Some((u - 1, g2, q));
                break;
            }
        }
        if let Some((g1_end, (g2a, g2b), end)) = found {
            tmp.extend_from_slice(&s[last..g1_end]);
            tmp.extend_from_slice(b" /*repeat");
            tmp.extend_from_slice(&s[g2a..g2b]);
            tmp.extend_from_slice(b"*/");
            last = end;
            i = end;
            changed = true;
        }
    }
    if changed {
        tmp.extend_from_slice(&s[last..]);
        std::mem::swap(out, tmp);
    }
}

/// `s/\blimit \?(?:, ?\?| offset \?)?/limit ?/` (the first occurrence only).
fn collapse_limit(out: &mut Vec<u8>) {
    let mut i = 0;
    while let Some(p) = finder!(b"limit ?").find(&out[i..]).map(|k| k + i) {
        if p > 0 && is_word(out[p - 1]) {
            i = p + 1;
            continue;
        }
        let q = p + 7;
        let rest = &out[q..];
        let extra = if rest.starts_with(b", ?") {
            3
        } else if rest.starts_with(b",?") {
            2
        } else if rest.starts_with(b" offset ?") {
            9
        } else {
            0
        };
        out.drain(q..q + extra);
        return;
    }
}

/// `if (m/\bORDER BY /gi) { s/\G(.+?)\s+ASC/$1/gi }`: every whitespace-then-`asc` after
/// the first `order by ` goes, even at the start of a longer word (`ascending`).
fn drop_order_by_asc(out: &mut Vec<u8>, tmp: &mut Vec<u8>) {
    let mut i = 0;
    let g = loop {
        let Some(p) = finder!(b"order by ").find(&out[i..]).map(|k| k + i) else { return };
        if p == 0 || !is_word(out[p - 1]) {
            break p + 9;
        }
        i = p + 1;
    };
    let s: &[u8] = out;
    let n = s.len();
    tmp.clear();
    tmp.extend_from_slice(&s[..g]);
    let mut g = g;
    let mut changed = false;
    loop {
        // (.+?) takes at least one byte; then \s+ and "asc".
        let mut found = None;
        let mut q = g + 1;
        while q < n {
            let Some(k) = finder!(b"asc").find(&s[q..]).map(|k| k + q) else { break };
            // \s+ ending right before "asc", starting after at least one byte of $1.
            if k > q && is_space(s[k - 1]) {
                let mut ws = k - 1;
                while ws > g + 1 && is_space(s[ws - 1]) {
                    ws -= 1;
                }
                found = Some((ws, k + 3));
                break;
            }
            q = k + 1;
        }
        let Some((ws, end)) = found else { break };
        tmp.extend_from_slice(&s[g..ws]);
        g = end;
        changed = true;
    }
    if changed {
        tmp.extend_from_slice(&s[g..]);
        std::mem::swap(out, tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digit_runs_of_every_length_and_neighbour() {
        for len in 0..20 {
            for next in 0u8..=255 {
                let mut s = vec![b'7'; len];
                s.push(next);
                s.extend_from_slice(b"123456789");
                let want = s.iter().take_while(|b| b.is_ascii_digit()).count();
                assert_eq!(digit_run(&s), want, "{len} digits then {next:#x}");
                assert_eq!(digit_run(&s[..len]), len);
            }
        }
    }

    #[test]
    fn letter_bytes_of_every_byte_and_neighbour() {
        for b in 0u8..=255 {
            for pos in 0..8 {
                for fill in [b'a', b'Z', b'_', b'0', b'@', b'[', b'`', b'{', 0x80, 0xc1, 0xdf, 0xff] {
                    let mut c = [fill; 8];
                    c[pos] = b;
                    let (alpha, run) = letter_bytes(u64::from_le_bytes(c));
                    for (k, &v) in c.iter().enumerate() {
                        assert_eq!(alpha >> (8 * k + 7) & 1 == 1, v.is_ascii_alphabetic(), "{c:?} at {k}");
                        assert_eq!(run >> (8 * k + 7) & 1 == 1, v.is_ascii_alphabetic() || v == b'_', "{c:?} at {k}");
                    }
                    assert_eq!(alpha & !0x8080_8080_8080_8080, 0);
                }
            }
        }
    }

    #[test]
    fn letter_runs_of_every_length() {
        for len in 0..20 {
            for next in [b' ', b'1', b'(', b'_', b'q', 0xc3] {
                let mut q = b"x ".to_vec();
                q.extend((0..len).map(|k| b"AbCdEfGhIj_KlMnOpQrStUvWxYz"[k % 27]));
                q.push(next);
                q.extend_from_slice(b" FROM t");
                let want: Vec<u8> = {
                    // The byte-at-a-time reading: only lowercasing applies to the run.
                    let mut f = Fingerprinter::new();
                    let mut plain = q.clone();
                    plain.make_ascii_lowercase();
                    f.fingerprint(&plain).to_vec()
                };
                assert_eq!(Fingerprinter::new().fingerprint(&q), &want[..], "{}", String::from_utf8_lossy(&q));
            }
        }
    }

    fn fp(q: &str) -> String {
        String::from_utf8(Fingerprinter::new().fingerprint(q.as_bytes()).to_vec()).unwrap()
    }

    #[test]
    fn examples_from_pt() {
        // Outputs of pt-query-digest 3.2.1's QueryRewriter for the same inputs.
        assert_eq!(
            fp("SELECT * FROM t WHERE a=TRUE and b IN (1,2,3) order by x ASC, y asc"),
            "select * from t where a=? and b in(?+) order by x, y"
        );
        assert_eq!(fp("select a asc from t order by b asc"), "select a asc from t order by b");
        assert_eq!(fp("select x from t order by a asc asc"), "select x from t order by a asc");
        assert_eq!(fp("select x from t order by a ascending"), "select x from t order by aending");
        assert_eq!(fp("SELECT a UNION SELECT a UNION ALL SELECT a"), "select a /*repeat union all*/");
        assert_eq!(fp("select 1 union select 2 union select 3"), "select ? /*repeat union*/");
        assert_eq!(fp("CALL foo(bar(1))"), "call foo(bar");
        assert_eq!(fp("USE db\n"), "use ?\n");
        assert_eq!(fp("/**/ a /* b */ c"), "c");
        assert_eq!(fp("a -- x\nb # y\n"), "a b ");
        assert_eq!(fp(" \u{b} x\n"), "x");
        assert_eq!(fp("nullx1 NULL"), "?? ?");
        assert_eq!(fp("update db2.tuningdetail_21_265507 n\n      inner join db1.gonzo a using(gonzo) \n      set n.column1 = a.column1, n.word3 = a.word3"),
            "update d?tuningdetail_?_? n inner join d?gonzo a using(gonzo) set n.column? = a.column?, n.word? = a.word?");
        assert_eq!(
            fp("INSERT INTO db1.conch (word3, vid83)\nVALUES ('211', '18')"),
            "insert into d?onch (word?, vid?) values(?+)"
        );
        assert_eq!(fp("select \"a\" from t where x in (1,2) limit 5, 10"), "select ? from t where x in(?+) limit ?");
    }

    #[test]
    fn query_id_is_uppercase_md5() {
        assert_eq!(query_id(b"begin"), "8D589AFA4DFAEEED85FFF5AA78E5FF6A");
    }
}
