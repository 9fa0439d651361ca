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
/// that is never closed stays a plain byte. The bytes that matter (`)`, quotes,
/// backslashes: one every twenty or so in a multi-row INSERT) are found by walking the
/// bits of a mask made 64 bytes at a time, not by a search per field.
pub fn count_tuples(arg: &[u8]) -> u64 {
    count_tuples_by_blocks(arg).unwrap_or_else(|| count_tuples_by_marks(arg))
}

/// `count_tuples` for the common multi-row INSERT (`(1,'a'),(2,'b')…`: only `'` quotes,
/// no backslash, every string closed), 64 bytes per step without a branch per row:
/// `Marks` stops at every `)` and quote (three or four a row), which cost 4,360
/// instructions per multi-row INSERT of the profiling log. Without backslashes and `"`,
/// the strings `_QUOTED` removes are exactly the spans between consecutive `'`, so the
/// bytes inside strings are a prefix XOR of the quote mask. A removed string or a space
/// is "transparent"; a separator is a `)` whose next non-transparent byte is a `,` whose
/// next is a `(`: `next_solid` finds those with one carrying add per mask. `None` (the
/// caller falls back to the byte walk) at the first `\` or `"`, or with an odd number of
/// `'` (an unclosed quote stays a plain byte there, not the start of a string).
fn count_tuples_by_blocks(arg: &[u8]) -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("pclmulqdq") {
        // SAFETY: the CPU has both features.
        return unsafe { count_tuples_avx2(arg) };
    }
    walk_blocks(arg, block_classes, prefix_xor)
}

/// `walk_blocks` with 32-byte compares and the prefix XOR as one carry-less multiply:
/// half the instructions of SSE2 (the classes are most of a block's cost).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,pclmulqdq")]
unsafe fn count_tuples_avx2(arg: &[u8]) -> Option<u64> {
    use std::arch::x86_64::*;
    let classes = |b: &[u8; 64]| {
        let mut c = Classes::default();
        for k in 0..2 {
            // SAFETY: the 32 bytes read lie inside `b`.
            let x = unsafe { _mm256_loadu_si256(b.as_ptr().add(32 * k).cast::<__m256i>()) };
            let bits = |m: __m256i| (_mm256_movemask_epi8(m) as u32 as u64) << (32 * k);
            let eq = |ch: u8| _mm256_cmpeq_epi8(x, _mm256_set1_epi8(ch as i8));
            let low = _mm256_sub_epi8(x, _mm256_set1_epi8(9));
            let tab_to_cr = _mm256_cmpeq_epi8(_mm256_min_epu8(low, _mm256_set1_epi8(4)), low);
            c.quote |= bits(eq(b'\''));
            c.bad |= bits(_mm256_or_si256(eq(b'\\'), eq(b'"')));
            c.close |= bits(eq(b')'));
            c.comma |= bits(eq(b','));
            c.open |= bits(eq(b'('));
            c.space |= bits(_mm256_or_si256(eq(b' '), tab_to_cr));
        }
        c
    };
    // Carry-less multiplication by all ones: bit k is the XOR of bits 0..=k.
    let prefix_xor =
        |m: u64| _mm_cvtsi128_si64(_mm_clmulepi64_si128(_mm_set_epi64x(0, m as i64), _mm_set1_epi8(-1), 0)) as u64;
    walk_blocks(arg, classes, prefix_xor)
}

/// The block walk of `count_tuples_by_blocks`, given how to classify a block's bytes and
/// how to take a prefix XOR.
#[inline(always)]
fn walk_blocks(arg: &[u8], classes: impl Fn(&[u8; 64]) -> Classes, prefix_xor: impl Fn(u64) -> u64) -> Option<u64> {
    let mut n = 1u64;
    // All ones while the previous block ended inside a string.
    let mut in_string = 0u64;
    // Carries of the two `next_solid` steps into the next block.
    let (mut after_paren, mut after_comma) = (0u64, 0u64);
    let mut at = 0;
    let mut tail = [0u8; 64];
    while at < arg.len() {
        // Bytes past the end are zeros, which are in no class.
        let block: &[u8; 64] = match arg.get(at..at + 64) {
            Some(b) => b.try_into().unwrap(),
            None => {
                tail[..arg.len() - at].copy_from_slice(&arg[at..]);
                &tail
            }
        };
        let c = classes(block);
        if c.bad != 0 {
            return None;
        }
        let string = prefix_xor(c.quote) ^ in_string;
        in_string = ((string >> 63) & 1).wrapping_neg();
        // The closing quote's own bit is clear in `string`: add the quotes back.
        let removed = string | c.quote;
        let transparent = removed | c.space;
        let commas = next_solid(c.close & !removed, transparent, &mut after_paren) & c.comma & !removed;
        n += (next_solid(commas, transparent, &mut after_comma) & c.open & !removed).count_ones() as u64;
        at += 64;
    }
    (in_string == 0).then_some(n)
}

/// The first non-transparent byte after each bit of `x` (`x`'s bytes are not
/// transparent), `carry` saying that one is due at the block's first byte. Adding a
/// run's first bit to `transparent` carries through the run and lands on the byte after
/// it; a carry out of bit 63 (or a mark on bit 63) moves on to the next block.
#[inline]
fn next_solid(x: u64, transparent: u64, carry: &mut u64) -> u64 {
    let start = (x << 1) | *carry;
    let (sum, over) = transparent.overflowing_add(start & transparent);
    *carry = (x >> 63) | over as u64;
    (start | sum) & !transparent
}

/// Bit k set when byte k and every byte before it in the block hold an odd number of
/// quotes between them.
#[inline]
fn prefix_xor(mut m: u64) -> u64 {
    for s in [1, 2, 4, 8, 16, 32] {
        m ^= m << s;
    }
    m
}

/// The bytes of one 64-byte block that `count_tuples_by_blocks` tells apart.
#[derive(Default)]
struct Classes {
    quote: u64,
    /// `\` or `"`: the block walk does not apply.
    bad: u64,
    close: u64,
    comma: u64,
    open: u64,
    /// `is_py_space`.
    space: u64,
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn block_classes(b: &[u8; 64]) -> Classes {
    use std::arch::x86_64::*;
    let mut c = Classes::default();
    for k in 0..4 {
        // SAFETY: SSE2 is part of x86_64; the 16 bytes read lie inside `b`.
        unsafe {
            let x = _mm_loadu_si128(b.as_ptr().add(16 * k).cast::<__m128i>());
            let bits = |m: __m128i| (_mm_movemask_epi8(m) as u16 as u64) << (16 * k);
            let eq = |ch: u8| _mm_cmpeq_epi8(x, _mm_set1_epi8(ch as i8));
            // Tab to carriage return (9–13) by an unsigned compare: min(x − 9, 4) == x − 9.
            let low = _mm_sub_epi8(x, _mm_set1_epi8(9));
            let tab_to_cr = _mm_cmpeq_epi8(_mm_min_epu8(low, _mm_set1_epi8(4)), low);
            c.quote |= bits(eq(b'\''));
            c.bad |= bits(_mm_or_si128(eq(b'\\'), eq(b'"')));
            c.close |= bits(eq(b')'));
            c.comma |= bits(eq(b','));
            c.open |= bits(eq(b'('));
            c.space |= bits(_mm_or_si128(eq(b' '), tab_to_cr));
        }
    }
    c
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn block_classes(b: &[u8; 64]) -> Classes {
    let mut c = Classes::default();
    for (k, &ch) in b.iter().enumerate() {
        let bit = 1u64 << k;
        match ch {
            b'\'' => c.quote |= bit,
            b'\\' | b'"' => c.bad |= bit,
            b')' => c.close |= bit,
            b',' => c.comma |= bit,
            b'(' => c.open |= bit,
            _ if is_py_space(ch) => c.space |= bit,
            _ => {}
        }
    }
    c
}

/// `count_tuples` by walking the marks (any statement).
fn count_tuples_by_marks(arg: &[u8]) -> u64 {
    // 0: outside a separator; 1: after `)` and spaces; 2: after `)`, spaces, `,`, spaces.
    let mut state = 0u8;
    let mut n = 1;
    let mut i = 0;
    let mut marks = Marks::new(arg);
    while i < arg.len() {
        if state == 0 {
            match marks.next(i) {
                Some(k) if arg[k] == b'\\' => {
                    i = k + 1;
                    continue;
                }
                Some(k) => i = k,
                None => break,
            }
        }
        let b = arg[i];
        if b == b'\'' || b == b'"' {
            if let Some(close) = closing_quote(arg, i, &mut marks) {
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
fn closing_quote(arg: &[u8], open: usize, marks: &mut Marks) -> Option<usize> {
    let q = arg[open];
    let mut j = open + 1;
    loop {
        let p = marks.next(j)?;
        if arg[p] == q {
            return Some(p);
        }
        if arg[p] == b'\\' {
            if p + 1 >= arg.len() {
                return None;
            }
            j = p + 2;
        } else {
            j = p + 1;
        }
    }
}

/// The positions of `)`, `'`, `"` and `\\` in a text, in order: one bit mask per 64
/// bytes, walked bit by bit.
struct Marks<'a> {
    s: &'a [u8],
    /// The mask of `s[base..base + 64]` (`base` a multiple of 64).
    base: usize,
    mask: u64,
}

impl<'a> Marks<'a> {
    fn new(s: &'a [u8]) -> Self {
        Marks { s, base: 0, mask: block_marks(s, 0) }
    }

    /// The first mark at or after `from`.
    #[inline(always)]
    fn next(&mut self, from: usize) -> Option<usize> {
        if from.wrapping_sub(self.base) < 64 {
            let m = self.mask & (!0u64 << (from - self.base));
            if m != 0 {
                return Some(self.base + m.trailing_zeros() as usize);
            }
        }
        self.next_block(from)
    }

    /// `next` past the current block: back after a string that never closed, or on to
    /// the next block that holds a mark at or after `from`.
    #[inline(never)]
    fn next_block(&mut self, from: usize) -> Option<usize> {
        let mut base = (from & !63).max(self.base + 64);
        if from < self.base {
            base = from & !63;
        }
        while base < self.s.len() {
            let all = block_marks(self.s, base);
            let mask = all & (!0u64).checked_shl(from.saturating_sub(base) as u32).unwrap_or(0);
            if mask != 0 {
                (self.base, self.mask) = (base, all);
                return Some(base + mask.trailing_zeros() as usize);
            }
            base += 64;
        }
        None
    }
}

/// The marks of `s[at..at + 64]` (bytes past the end are none).
#[inline]
fn block_marks(s: &[u8], at: usize) -> u64 {
    match s.get(at..at + 64) {
        Some(b) => marks_of(b.try_into().unwrap()),
        None => {
            let mut block = [0u8; 64];
            let rest = &s[at.min(s.len())..];
            block[..rest.len()].copy_from_slice(rest);
            marks_of(&block)
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn marks_of(b: &[u8; 64]) -> u64 {
    use std::arch::x86_64::*;
    let mut m = 0u64;
    for k in 0..4 {
        // SAFETY: SSE2 is part of x86_64; the 16 bytes read lie inside `b`.
        let bits = unsafe {
            let x = _mm_loadu_si128(b.as_ptr().add(16 * k).cast::<__m128i>());
            let eq = |c: u8| _mm_cmpeq_epi8(x, _mm_set1_epi8(c as i8));
            let hit = _mm_or_si128(_mm_or_si128(eq(b')'), eq(b'\'')), _mm_or_si128(eq(b'"'), eq(b'\\')));
            _mm_movemask_epi8(hit) as u16
        };
        m |= (bits as u64) << (16 * k);
    }
    m
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn marks_of(b: &[u8; 64]) -> u64 {
    b.iter().enumerate().fold(0, |m, (k, &c)| m | (matches!(c, b')' | b'\'' | b'"' | b'\\') as u64) << k)
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
            match closing_quote(arg, open, &mut Marks::new(arg)) {
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
    fn marks_are_every_mark_in_order() {
        for len in [0, 1, 15, 63, 64, 65, 127, 128, 130, 200] {
            for step in [1, 3, 7, 64, 65] {
                let s: Vec<u8> =
                    (0..len).map(|k| if k % step == step - 1 { b")'\"\\"[k % 4] } else { b"a(,\x80"[k % 4] }).collect();
                let want: Vec<usize> = (0..len).filter(|&k| matches!(s[k], b')' | b'\'' | b'"' | b'\\')).collect();
                for from in 0..=len {
                    let mut marks = Marks::new(&s);
                    let got: Vec<usize> = std::iter::successors(marks.next(from), |&k| marks.next(k + 1)).collect();
                    let want: Vec<usize> = want.iter().copied().filter(|&k| k >= from).collect();
                    assert_eq!(got, want, "length {len}, every {step}, from {from}");
                }
            }
        }
    }

    #[test]
    fn counts_as_the_copying_reading_does() {
        let mut s = Vec::new();
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
        // Across blocks: rows of every shape, strings and separators astride the 64-byte
        // borders, with and without the bytes that send a statement to the byte walk.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        let pieces: [&[u8]; 12] =
            [b"),(", b"), (", b")\n,\t(", b"'a)b,(c'", b"''", b"'", b" ", b",", b"(", b")", b"12", b"x"];
        for round in 0..20_000 {
            s.clear();
            let len = next(60) + 1;
            for _ in 0..len {
                s.extend_from_slice(pieces[next(pieces.len() as u64) as usize]);
            }
            if round % 10 == 0 {
                let at = next(s.len() as u64 + 1) as usize;
                s.insert(at, if round % 20 == 0 { b'\\' } else { b'"' });
            }
            let blocks = count_tuples_by_blocks(&s);
            // The portable walk (SSE2 compares, a shifting prefix XOR) agrees with the one taken.
            assert_eq!(walk_blocks(&s, block_classes, prefix_xor), blocks, "{}", String::from_utf8_lossy(&s));
            assert_eq!(count_tuples(&s), count_tuples_copying(&s), "{}", String::from_utf8_lossy(&s));
            // The block walk takes every statement it can.
            let walkable =
                !s.contains(&b'\\') && !s.contains(&b'"') && s.iter().filter(|&&b| b == b'\'').count() % 2 == 0;
            assert_eq!(blocks.is_some(), walkable, "{}", String::from_utf8_lossy(&s));
        }
        // Every short string over a small alphabet that holds each rule's bytes.
        let alphabet = b")(,' \"\\a";
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
