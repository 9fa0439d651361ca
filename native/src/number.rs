//! Attribute values as numbers, the way pt types them, with exact sums.
//!
//! pt treats a value as a number when it matches `^(?:\d+|[+-]?\d+\.\d*(?:E[+-]?\d+)?)$`
//! (so `-5`, `.5` and `1e5` are text). Log values are short decimals; each is kept as
//! an f64 (correctly rounded, like Python's `float()`) and, when it fits, as an exact
//! count of nano-units, so sums do not depend on the order in which parts are merged.

/// A parsed value: the nearest f64, and the exact value in units of 1e-9 when the
/// decimal has at most nine fraction digits and fits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Num {
    pub value: f64,
    pub nanos: Option<i128>,
}

const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22,
];

/// pt's number pattern; `None` for text.
pub fn parse_number(s: &[u8]) -> Option<Num> {
    let (neg, body) = match s.first()? {
        b'+' => (false, &s[1..]),
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    let int_len = body.iter().take_while(|b| b.is_ascii_digit()).count();
    if int_len == 0 {
        return None;
    }
    let rest = &body[int_len..];
    if rest.is_empty() {
        // Plain `\d+` may not carry a sign.
        return if body.len() != s.len() { None } else { Some(decimal(false, body, &[], s)) };
    }
    if rest[0] != b'.' {
        return None;
    }
    let frac_len = rest[1..].iter().take_while(|b| b.is_ascii_digit()).count();
    let exp = &rest[1 + frac_len..];
    if !exp.is_empty() {
        let e = match exp[1..].first() {
            Some(b'+' | b'-') => &exp[2..],
            _ => &exp[1..],
        };
        if !matches!(exp[0], b'e' | b'E') || e.is_empty() || !e.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let value: f64 = std::str::from_utf8(s).ok()?.parse().ok()?;
        return Some(Num { value, nanos: None });
    }
    let n = decimal(neg, &body[..int_len], &rest[1..1 + frac_len], s);
    Some(n)
}

/// pt's reading of Query_time: a number by pt's pattern, then cut to
/// `^(\d+(?:\.\d+)?)` (so `1.5E-3` reads as 1.5, as pt has it).
pub fn parse_query_time(s: &[u8]) -> Option<Num> {
    let n = parse_number(s)?;
    let int_len = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if int_len == 0 {
        return Some(n); // a sign: pt's cut does not apply
    }
    let frac = match s.get(int_len) {
        Some(b'.') => {
            let f = s[int_len + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
            &s[int_len + 1..int_len + 1 + f]
        }
        _ => &s[int_len..int_len],
    };
    Some(decimal(false, &s[..int_len], frac, &s[..int_len + if frac.is_empty() { 0 } else { 1 + frac.len() }]))
}

fn decimal(neg: bool, int: &[u8], frac: &[u8], text: &[u8]) -> Num {
    let digits = int.len() + frac.len();
    if digits <= 18 {
        // One pass: the digits as an integer. Both operands of the division are exact,
        // so the quotient is the nearest double to the decimal.
        let m = int.iter().chain(frac).fold(0u64, |m, &d| m * 10 + (d - b'0') as u64);
        let value = if digits <= 15 { m as f64 / POW10[frac.len()] } else { parse_text(text) };
        let nanos = (frac.len() <= 9).then(|| m as i128 * 10i128.pow(9 - frac.len() as u32));
        return if neg { Num { value: -value, nanos: nanos.map(|n| -n) } } else { Num { value, nanos } };
    }
    let value = parse_text(text);
    let nanos = (frac.len() <= 9 && int.len() <= 25).then(|| {
        let n =
            int.iter().chain(frac).fold(0i128, |n, &d| n * 10 + (d - b'0') as i128) * 10i128.pow(9 - frac.len() as u32);
        if neg {
            -n
        } else {
            n
        }
    });
    Num { value: if neg { -value } else { value }, nanos }
}

/// The nearest double to a decimal text (digits, a dot, an optional sign).
fn parse_text(text: &[u8]) -> f64 {
    std::str::from_utf8(text).ok().and_then(|t| t.trim_start_matches(['+', '-']).parse().ok()).unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pt_number_pattern() {
        for (s, v) in
            [("123", 123.0), ("0.000316", 0.000316), ("1.", 1.0), ("+1.5", 1.5), ("-2.25", -2.25), ("1.5E-3", 0.0015)]
        {
            assert_eq!(parse_number(s.as_bytes()).map(|n| n.value), Some(v), "{s}");
        }
        for s in ["-5", ".5", "1e5", "", "No", "1.2.3", "12a"] {
            assert_eq!(parse_number(s.as_bytes()), None, "{s}");
        }
        assert_eq!(parse_number(b"0.000316").unwrap().nanos, Some(316_000));
    }

    #[test]
    fn nearest_double_like_python_float() {
        for s in ["0.1", "0.000055", "12.345678", "3.14159265358979", "0.30000000000000004"] {
            assert_eq!(parse_number(s.as_bytes()).unwrap().value, s.parse::<f64>().unwrap(), "{s}");
        }
    }

    #[test]
    fn query_time_keeps_the_numeric_prefix() {
        assert_eq!(parse_query_time(b"1.5E-3").unwrap().value, 1.5);
        assert_eq!(parse_query_time(b"0.000316").unwrap().nanos, Some(316_000));
        // A MySQL overflow pt cannot read either.
        assert_eq!(parse_query_time(b"18446744073708.796870.000036"), None);
    }
}
