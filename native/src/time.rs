//! Event times as both engines keep them: `YYYY-MM-DD HH:MM:SS` text, compared as text
//! (govern/slowlog.py `normalize_time`).

/// A `ts` as the Python engine keeps it: `YYYY-MM-DD HH:MM:SS` text (or pt's raw value
/// when it cannot be read), compared as text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ts {
    len: u8,
    buf: [u8; 32],
}

impl Ts {
    pub fn from(text: &[u8]) -> Ts {
        let mut buf = [0u8; 32];
        let n = text.len().min(32);
        buf[..n].copy_from_slice(&text[..n]);
        Ts { len: n as u8, buf }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }
}

/// As bytes: in postcard the encoding of a sequence of `u8`, decoded without a `Vec`
/// (`crate::class::bytes`).
impl serde::Serialize for Ts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.as_bytes())
    }
}

impl<'de> serde::Deserialize<'de> for Ts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Ts, D::Error> {
        d.deserialize_bytes(crate::class::bytes::Bytes(Ts::from))
    }
}

impl PartialOrd for Ts {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ts {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

/// govern/slowlog.py `normalize_time`, falling back to the raw value as `_line_info` does.
pub fn normalize_time(raw: &[u8]) -> Ts {
    let text = raw.trim_ascii();
    if text.len() >= 19 && text[4] == b'-' {
        let mut out = [b' '; 19];
        out[..10].copy_from_slice(&text[..10]);
        out[11..].copy_from_slice(&text[11..19]);
        return Ts::from(&out);
    }
    let parts: Vec<&[u8]> = text.split(|b| b.is_ascii_whitespace()).filter(|p| !p.is_empty()).collect();
    let digits = |p: &[u8]| !p.is_empty() && p.iter().all(u8::is_ascii_digit);
    if parts.len() != 2 || parts[0].len() != 6 || !digits(parts[0]) {
        return Ts::from(raw);
    }
    let pieces: Vec<&[u8]> = parts[1].split(|&b| b == b':').collect();
    if pieces.len() != 3 || !pieces.iter().all(|p| digits(p)) {
        return Ts::from(raw);
    }
    let day = parts[0];
    let mut out = Vec::with_capacity(19);
    out.extend_from_slice(b"20");
    out.extend_from_slice(&day[..2]);
    out.push(b'-');
    out.extend_from_slice(&day[2..4]);
    out.push(b'-');
    out.extend_from_slice(&day[4..6]);
    for (i, p) in pieces.iter().enumerate() {
        out.push(if i == 0 { b' ' } else { b':' });
        // `f"{int(p):02d}"`
        let p = &p[p.iter().take_while(|&&b| b == b'0').count()..];
        match p.len() {
            0 => out.extend_from_slice(b"00"),
            1 => out.extend_from_slice(&[b'0', p[0]]),
            _ => out.extend_from_slice(p),
        }
    }
    Ts::from(&out)
}
