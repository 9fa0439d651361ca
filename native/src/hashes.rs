//! The small hashes the Python engine's aggregates use: zlib's CRC-32 (`zlib.crc32`;
//! crc32fast, with the CPU's carry-less multiply) and splitmix64's finaliser
//! (`govern.sketch.mix64`). A statement text's hash for distinct-text counting is
//! `mix64(crc32(text))` (`text_hash` in govern/digest/engine.py).

/// zlib's CRC-32 (`zlib.crc32`).
#[inline]
pub fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

/// A statement text's 64-bit hash (`engine.text_hash`): 32 bits of CRC spread over 64.
#[inline]
pub fn text_hash(data: &[u8]) -> u64 {
    mix64(crc32(data) as u64)
}

/// splitmix64's finaliser (`govern.sketch.mix64`), on a 64-bit integer.
pub fn mix64(value: u64) -> u64 {
    let mut v = value.wrapping_add(0x9E37_79B9_7F4A_7C15);
    v = (v ^ (v >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    v = (v ^ (v >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    v ^ (v >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // Python: govern.sketch.mix64(zlib.crc32(b"…"))
        assert_eq!(text_hash(b""), 0xe220a8397b1dcdaf);
        assert_eq!(text_hash(b"abc"), 0x8574f32a59614dab);
        assert_eq!(text_hash(&[b'x'; 300]), 0x8f9c514d860a09d2);
        assert_eq!(crc32(b"hello"), 0x3610a686);
        assert_eq!(mix64(0), 0xe220a8397b1dcdaf);
        assert_eq!(mix64(12345), 0x22118258a9d111a0);
    }
}
