//! Attribute values the way govern's digest types them (docs/design/digest-engines.md, "Numbers"),
//! the same as the Python engine's `classify` and `micro_units`.
//!
//! A value is a number when it is `\d+` or `[+-]?\d+\.\d*(?:[eE][+-]?\d+)?` (pt's test),
//! a flag when it is `Yes`/`No`, else text. Numbers are integers of micro-units,
//! converted exactly (half up past six decimals), so sums do not depend on how the log
//! was cut.

/// What a value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Typed {
    /// A number in micro-units.
    Num(i128),
    Yes,
    No,
    Text,
}

#[inline]
pub fn classify(raw: &[u8]) -> Typed {
    match plain_decimal(raw) {
        Some(v) => Typed::Num(v as i128),
        None => classify_other(raw),
    }
}

/// `classify` of what is not a plain decimal: long integers, signs, exponents, flags, text.
#[inline(never)]
fn classify_other(raw: &[u8]) -> Typed {
    if !raw.is_empty() && raw.iter().all(u8::is_ascii_digit) {
        return digits(raw).and_then(|v| v.checked_mul(1_000_000)).map_or(Typed::Text, Typed::Num);
    }
    if is_float(raw) {
        if let Some(v) = micro_units(raw) {
            return Typed::Num(v);
        }
    }
    match raw {
        b"Yes" => Typed::Yes,
        b"No" => Typed::No,
        _ => Typed::Text,
    }
}

/// The values of nearly every attribute, `\d{1,12}(\.\d{0,6})?`, in micro-units with
/// 64-bit arithmetic and no allocation; `None` sends anything else the general way.
#[inline]
fn plain_decimal(raw: &[u8]) -> Option<u64> {
    const SCALE: [u64; 7] = [1_000_000, 100_000, 10_000, 1_000, 100, 10, 1];
    // One pass over the digits (wrapping: a run too long to fit is refused below).
    let mut whole = 0u64;
    let mut int = 0;
    while let Some(d) = raw.get(int).map(|b| b.wrapping_sub(b'0')).filter(|&d| d <= 9) {
        whole = whole.wrapping_mul(10).wrapping_add(d as u64);
        int += 1;
    }
    if int == 0 || int > 12 {
        return None;
    }
    let frac = match raw.get(int) {
        None => return Some(whole * 1_000_000),
        Some(b'.') => &raw[int + 1..],
        Some(_) => return None,
    };
    if frac.len() > 6 {
        return None;
    }
    let mut part = 0u64;
    for &b in frac {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        part = part * 10 + d as u64;
    }
    Some(whole * 1_000_000 + part * SCALE[frac.len()])
}

fn digits(raw: &[u8]) -> Option<i128> {
    raw.iter().try_fold(0i128, |n, &d| n.checked_mul(10)?.checked_add((d - b'0') as i128))
}

/// `[+-]?\d+\.\d*(?:[eE][+-]?\d+)?$`
fn is_float(raw: &[u8]) -> bool {
    let s = raw.strip_prefix(b"+").or_else(|| raw.strip_prefix(b"-")).unwrap_or(raw);
    let int = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if int == 0 || s.get(int) != Some(&b'.') {
        return false;
    }
    let s = &s[int + 1..];
    let frac = s.iter().take_while(|b| b.is_ascii_digit()).count();
    let e = &s[frac..];
    if e.is_empty() {
        return true;
    }
    if !matches!(e[0], b'e' | b'E') {
        return false;
    }
    let e = e[1..].strip_prefix(b"+").or_else(|| e[1..].strip_prefix(b"-")).unwrap_or(&e[1..]);
    !e.is_empty() && e.iter().all(u8::is_ascii_digit)
}

/// A decimal text as an integer of millionths, rounding half up past six decimals;
/// `None` when it is not a decimal or does not fit in 128 bits.
pub fn micro_units(raw: &[u8]) -> Option<i128> {
    let (sign, s) = match raw.first()? {
        b'-' => (-1i128, &raw[1..]),
        b'+' => (1, &raw[1..]),
        _ => (1, raw),
    };
    let int = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if int == 0 {
        return None;
    }
    let mut rest = &s[int..];
    let mut frac: &[u8] = &[];
    if rest.first() == Some(&b'.') {
        let n = rest[1..].iter().take_while(|b| b.is_ascii_digit()).count();
        frac = &rest[1..1 + n];
        rest = &rest[1 + n..];
    }
    let mut exponent: i64 = 0;
    if !rest.is_empty() {
        if !matches!(rest[0], b'e' | b'E') {
            return None;
        }
        let e = &rest[1..];
        let (neg, e) = match e.first() {
            Some(b'-') => (true, &e[1..]),
            Some(b'+') => (false, &e[1..]),
            _ => (false, e),
        };
        if e.is_empty() || !e.iter().all(u8::is_ascii_digit) || e.len() > 6 {
            return None;
        }
        exponent = e.iter().fold(0i64, |n, &d| n * 10 + (d - b'0') as i64);
        if neg {
            exponent = -exponent;
        }
    }
    // Leading zeros do not change the value but would overflow the digit count.
    let all: Vec<u8> = s[..int].iter().chain(frac).copied().collect();
    let first = all.iter().position(|&d| d != b'0').unwrap_or(all.len());
    let digits = &all[first..];
    let scale = 6 - frac.len() as i64 + exponent;
    if digits.is_empty() {
        return Some(0);
    }
    if digits.len() > 38 {
        return None;
    }
    let value = digits.iter().fold(0i128, |n, &d| n * 10 + (d - b'0') as i128);
    let v = if scale >= 0 {
        if digits.len() as i64 + scale > 38 {
            return None;
        }
        value * 10i128.pow(scale as u32)
    } else if -scale > 38 {
        0
    } else {
        let divisor = 10i128.pow((-scale) as u32);
        (value + divisor / 2) / divisor
    };
    Some(sign * v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_as_documented() {
        assert_eq!(classify(b"0.000316"), Typed::Num(316));
        assert_eq!(classify(b"5"), Typed::Num(5_000_000));
        assert_eq!(classify(b"1."), Typed::Num(1_000_000));
        assert_eq!(classify(b"-2.25"), Typed::Num(-2_250_000));
        assert_eq!(classify(b"1.5E-3"), Typed::Num(1_500));
        assert_eq!(classify(b"0.0000005"), Typed::Num(1)); // half up
        assert_eq!(classify(b"0.0000004"), Typed::Num(0));
        assert_eq!(classify(b"Yes"), Typed::Yes);
        assert_eq!(classify(b"No"), Typed::No);
        for text in ["-5", ".5", "1e5", "", "no", "1.2.3", "12a", "18446744073708.796870.000036"] {
            assert_eq!(classify(text.as_bytes()), Typed::Text, "{text}");
        }
    }

    #[test]
    fn the_fast_path_agrees_with_the_general_one() {
        let general = |raw: &[u8]| -> Option<i128> {
            if raw.iter().all(u8::is_ascii_digit) {
                digits(raw).and_then(|v| v.checked_mul(1_000_000))
            } else {
                micro_units(raw)
            }
        };
        let cases: &[&[u8]] = &[
            b"0",
            b"7",
            b"000012",
            b"999999999999",
            b"1.",
            b"0.000316",
            b"12.5",
            b"3.1415926",
            b"999999999999.999999",
            b"0.0000005",
            b"1234567890123",
            b"1.2.3",
            b"1e5",
            b"1.5E-3",
            b"12a",
            b"-1.5",
            b"+2",
            b".5",
            b"",
            b"Yes",
            b"1.1234567",
        ];
        for raw in cases {
            if let Some(fast) = plain_decimal(raw) {
                assert_eq!(Some(fast as i128), general(raw), "{}", String::from_utf8_lossy(raw));
            }
        }
        assert_eq!(plain_decimal(b"999999999999.999999"), Some(999_999_999_999_999_999));
        assert_eq!(plain_decimal(b"1234567890123"), None); // 13 digits: the general way
        assert_eq!(plain_decimal(b"3.1415926"), None); // seven decimals round: the general way
    }

    #[test]
    fn numbers_beyond_64_bits() {
        // MariaDB writes a wrapped-around Bytes_sent: 2^64 - 5821, as the Python engine keeps it.
        assert_eq!(classify(b"18446744073709545795"), Typed::Num(18_446_744_073_709_545_795_000_000));
        assert_eq!(classify(b"999999999999999999999999999999999999999"), Typed::Text);
        assert_eq!(classify(b"1.0e400"), Typed::Text);
        assert_eq!(classify(b"1.0e-400"), Typed::Num(0));
    }
}
