//! The mergeable quantile sketch of govern's digest (docs/design/digest-engines.md, "The sketch"),
//! bucket for bucket the same as the Python engine's `govern/sketch.py`.
//!
//! Values are integers (micro-units). Buckets are log-linear with `SUB_BITS = 7`:
//! values 0–255 have a bucket each; above, a bucket spans `2^shift` values, so a value
//! is reported within 1/256 (0.39%). Merging adds counts per key: exact, in any order.
//! A class usually holds one or two distinct keys per attribute, so they live inline.

use smallvec::SmallVec;

pub const SUB_BITS: u32 = 7;

/// The bucket key of a value: `shift = max(0, bit_length(v) − 8)`,
/// `key = (shift << 7) + (v >> shift)`; negative values mirror below zero.
#[inline]
pub fn key_of(v: i128) -> i32 {
    // Nearly every value fits in 64 bits, where the bit length and the shift are one
    // instruction each (on 128 bits, a pair and a select).
    if let Ok(u) = u64::try_from(v) {
        let shift = (64 - u.leading_zeros()).saturating_sub(SUB_BITS + 1);
        return ((shift << SUB_BITS) as u64 + (u >> shift)) as i32;
    }
    if v < 0 {
        return -1 - key_of_magnitude(v.unsigned_abs());
    }
    key_of_magnitude(v as u128)
}

#[inline]
fn key_of_magnitude(v: u128) -> i32 {
    let bit_length = 128 - v.leading_zeros();
    let shift = bit_length.saturating_sub(SUB_BITS + 1);
    ((shift << SUB_BITS) as u128 + (v >> shift)) as i32
}

/// The inclusive value range of a non-negative key.
pub fn key_range(key: i32) -> (u64, u64) {
    let key = key as u64;
    if key < 256 {
        return (key, key);
    }
    let shift = (key >> SUB_BITS) - 1;
    let low = (key - (shift << SUB_BITS)) << shift;
    (low, low + (1u64 << shift) - 1)
}

/// Key and count packed in one word: the key (offset to be unsigned) in the top 16 bits,
/// so packed words sort by key; the count in the low 48 bits.
const COUNT_BITS: u32 = 48;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

#[inline]
fn pack(key: i32, count: u64) -> u64 {
    (((key + 32768) as u64) << COUNT_BITS) | count
}

#[inline]
fn unpack(w: u64) -> (i32, u64) {
    ((w >> COUNT_BITS) as i32 - 32768, w & COUNT_MASK)
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Sketch {
    /// Packed (key, count) words, sorted by key.
    buckets: SmallVec<[u64; 2]>,
}

impl Sketch {
    #[inline]
    pub fn add(&mut self, v: i128) {
        self.add_key(key_of(v), 1);
    }

    pub fn add_n(&mut self, v: i128, n: u64) {
        self.add_key(key_of(v), n);
    }

    fn add_key(&mut self, key: i32, n: u64) {
        let probe = pack(key, 0);
        // A word's count never reaches its key bits, so the words below `probe` are
        // exactly those of smaller keys: the search compares whole words, without
        // masking, on a slice taken once (each index of the SmallVec asks whether it
        // spilled).
        let b = &mut self.buckets[..];
        let i = b.partition_point(|&w| w < probe);
        match b.get_mut(i) {
            Some(w) if *w >> COUNT_BITS == probe >> COUNT_BITS => *w += n,
            _ => self.buckets.insert(i, pack(key, n)),
        }
    }

    pub fn merge(&mut self, other: &Sketch) {
        for &w in &other.buckets {
            let (k, n) = unpack(w);
            self.add_key(k, n);
        }
    }

    /// (key, count) pairs in key order.
    pub fn buckets(&self) -> impl Iterator<Item = (i32, u64)> + '_ {
        self.buckets.iter().map(|&w| unpack(w))
    }

    pub fn count(&self) -> u64 {
        self.buckets().map(|(_, n)| n).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_as_documented() {
        // docs/design/digest-engines.md: 316 -> key 286 (316-317); 1,000,000 -> key 1780 (999,424-1,003,519).
        assert_eq!(key_of(316), 286);
        assert_eq!(key_range(286), (316, 317));
        assert_eq!(key_of(1_000_000), 1780);
        assert_eq!(key_range(1780), (999_424, 1_003_519));
        for v in [0, 1, 255] {
            assert_eq!(key_of(v), v as i32);
        }
        assert_eq!(key_of(-316), -287);
        // 2^64 - 5821 Bytes in micro-units, as the Python engine keys it.
        assert_eq!(key_of(18_446_744_073_709_545_795_000_000), 9972);
    }

    #[test]
    fn every_value_lies_in_its_bucket() {
        for v in (0..200_000u64).chain([u32::MAX as u64, i64::MAX as u64]) {
            let (lo, hi) = key_range(key_of(v as i128));
            assert!(lo <= v && v <= hi, "{v}");
            assert!((hi - lo) as f64 <= v as f64 / 128.0, "{v}: bucket too wide");
        }
    }

    #[test]
    fn merge_equals_adding_everything_to_one() {
        let (mut a, mut b, mut all) = (Sketch::default(), Sketch::default(), Sketch::default());
        for i in 0..1000i128 {
            let v = (i % 97) * 10_007 - 50_000;
            if i % 3 == 0 {
                a.add(v)
            } else {
                b.add(v)
            }
            all.add(v);
        }
        a.merge(&b);
        assert_eq!(a, all);
        assert_eq!(all.count(), 1000);
    }
}
