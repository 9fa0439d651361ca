//! The two small hashes the Python engine's aggregates use, written out so the core
//! needs no crate for them: BLAKE2b with an 8-byte digest (distinct statement texts,
//! `text_hash` in govern/digest/engine.py) and zlib's CRC-32 (connection names that are
//! not numbers), plus splitmix64's finaliser (`govern.sketch.mix64`).

const IV: [u64; 8] = [
    0x6a09e667f3bcc908,
    0xbb67ae8584caa73b,
    0x3c6ef372fe94f82b,
    0xa54ff53a5f1d36f1,
    0x510e527fade682d1,
    0x9b05688c2b3e6c1f,
    0x1f83d9abfb41bd6b,
    0x5be0cd19137e2179,
];

const SIGMA: [[usize; 16]; 10] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
    [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
    [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
    [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
    [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
    [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
    [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
    [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
    [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
];

#[inline(always)]
fn g(v: &mut [u64; 16], a: usize, b: usize, c: usize, d: usize, x: u64, y: u64) {
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(x);
    v[d] = (v[d] ^ v[a]).rotate_right(32);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(24);
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(y);
    v[d] = (v[d] ^ v[a]).rotate_right(16);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(63);
}

fn compress(h: &mut [u64; 8], block: &[u8; 128], t: u128, last: bool) {
    let mut m = [0u64; 16];
    for (i, w) in m.iter_mut().enumerate() {
        *w = u64::from_le_bytes(block[i * 8..i * 8 + 8].try_into().unwrap());
    }
    let mut v = [0u64; 16];
    v[..8].copy_from_slice(h);
    v[8..].copy_from_slice(&IV);
    v[12] ^= t as u64;
    v[13] ^= (t >> 64) as u64;
    if last {
        v[14] = !v[14];
    }
    // Rounds written out with constant message indexes: the compiler keeps `v` and `m`
    // in registers instead of looking the schedule up (about twice as fast).
    macro_rules! round {
        ($r:expr) => {{
            const S: [usize; 16] = SIGMA[$r];
            g(&mut v, 0, 4, 8, 12, m[S[0]], m[S[1]]);
            g(&mut v, 1, 5, 9, 13, m[S[2]], m[S[3]]);
            g(&mut v, 2, 6, 10, 14, m[S[4]], m[S[5]]);
            g(&mut v, 3, 7, 11, 15, m[S[6]], m[S[7]]);
            g(&mut v, 0, 5, 10, 15, m[S[8]], m[S[9]]);
            g(&mut v, 1, 6, 11, 12, m[S[10]], m[S[11]]);
            g(&mut v, 2, 7, 8, 13, m[S[12]], m[S[13]]);
            g(&mut v, 3, 4, 9, 14, m[S[14]], m[S[15]]);
        }};
    }
    round!(0);
    round!(1);
    round!(2);
    round!(3);
    round!(4);
    round!(5);
    round!(6);
    round!(7);
    round!(8);
    round!(9);
    round!(0);
    round!(1);
    for i in 0..8 {
        h[i] ^= v[i] ^ v[i + 8];
    }
}

/// BLAKE2b with an 8-byte digest, read as a little-endian integer (Python:
/// `int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")`).
pub fn blake2b_8(data: &[u8]) -> u64 {
    let mut h = IV;
    h[0] ^= 0x0101_0000 ^ 8;
    let mut t: u128 = 0;
    let mut rest = data;
    while rest.len() > 128 {
        t += 128;
        compress(&mut h, rest[..128].try_into().unwrap(), t, false);
        rest = &rest[128..];
    }
    let mut block = [0u8; 128];
    block[..rest.len()].copy_from_slice(rest);
    t += rest.len() as u128;
    compress(&mut h, &block, t, true);
    // The digest is the first 8 bytes of h[0] in little-endian order: h[0] itself.
    h[0]
}

/// zlib's CRC-32 (`zlib.crc32`).
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
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
        // Python: int.from_bytes(hashlib.blake2b(b"", digest_size=8).digest(), "little")
        assert_eq!(blake2b_8(b""), 0xb4b2797457a0a6e4);
        assert_eq!(blake2b_8(b"abc"), 0x5995d533d814bbd8);
        assert_eq!(blake2b_8(&[b'x'; 128]), 0x224e1e874e31c90);
        assert_eq!(blake2b_8(&[b'y'; 129]), 0xe601539f147a617c);
        assert_eq!(blake2b_8(&[b'z'; 300]), 0xf0c75ef981069292);
        assert_eq!(crc32(b"hello"), 0x3610a686);
        assert_eq!(mix64(0), 0xe220a8397b1dcdaf);
        assert_eq!(mix64(12345), 0x22118258a9d111a0);
    }
}
