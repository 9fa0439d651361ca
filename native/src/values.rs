//! The small containers a class's figures are kept in: value counts capped at
//! `DISTINCT_LIMIT` (`ClassAgg.add_string`), bit sets of attribute ids, and the k minimum
//! values sketch of distinct hashes (`sketch.distinct_add`).

type HashMap<K, V> = hashbrown::HashMap<K, V, foldhash::fast::FixedState>;

use smallvec::SmallVec;

/// Distinct values kept per text attribute and class (aggregate.py `DISTINCT_LIMIT`).
pub const DISTINCT_LIMIT: usize = 1000;
/// Hashes kept by a distinct-count sketch (govern/sketch.py `DISTINCT_K`).
pub const DISTINCT_K: usize = 256;

/// Value counts of one text attribute: at most 1,000 values, the rest in `other`
/// (`ClassAgg.add_string`).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Values {
    /// Most attributes keep one value per class: inline, no allocation.
    pub list: SmallVec<[(u32, u64); 1]>,
    #[serde(skip)]
    index: Option<Box<HashMap<u32, usize>>>,
    pub other: u64,
}

impl Values {
    #[inline]
    pub fn add(&mut self, v: u32, n: u64) {
        let found = match &self.index {
            Some(index) => index.get(&v).copied(),
            None => self.list.iter().position(|e| e.0 == v),
        };
        if let Some(i) = found {
            self.list[i].1 += n;
            return;
        }
        if self.list.len() + (self.other > 0) as usize >= DISTINCT_LIMIT {
            self.other += n;
            return;
        }
        self.list.push((v, n));
        if let Some(index) = &mut self.index {
            index.insert(v, self.list.len() - 1);
        } else if self.list.len() > 16 {
            let mut index = HashMap::default();
            index.extend(self.list.iter().enumerate().map(|(i, e)| (e.0, i)));
            self.index = Some(Box::new(index));
        }
    }
}

/// A set of small integers (attribute ids), one bit each; the first 64 inline.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Bits(SmallVec<[u64; 1]>);

impl Bits {
    #[inline]
    pub fn set(&mut self, i: usize) {
        let word = i / 64;
        if self.0.len() <= word {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << (i % 64);
    }

    #[inline]
    pub fn get(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    pub fn union(&mut self, other: &Bits) {
        for (i, &w) in other.0.iter().enumerate() {
            if w != 0 {
                if self.0.len() <= i {
                    self.0.resize(i + 1, 0);
                }
                self.0[i] |= w;
            }
        }
    }
}

/// k minimum values of 64-bit hashes, sorted (`sketch.distinct_add`).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Kmv(pub SmallVec<[u64; 2]>);

impl Kmv {
    #[inline]
    pub fn add(&mut self, h: u64) {
        // Full, and not below the largest kept: the usual case once a class is busy.
        if self.0.len() >= DISTINCT_K && self.0.last().is_some_and(|&max| h >= max) {
            return;
        }
        if let Err(i) = self.0.binary_search(&h) {
            if self.0.len() < DISTINCT_K {
                self.0.insert(i, h);
            } else if i < DISTINCT_K {
                self.0.insert(i, h);
                self.0.pop();
            }
        }
    }

    /// `sketch.distinct_merge`: the union, its `DISTINCT_K` smallest hashes.
    pub fn merge(&mut self, b: &Kmv) {
        let a = self;
        let limit = DISTINCT_K;
        // A full set keeps only hashes below its largest: usually none of `b`'s.
        let below = match a.0.last() {
            Some(&max) if a.0.len() >= limit => b.0.partition_point(|&h| h < max),
            _ => b.0.len(),
        };
        if below == 0 {
            return;
        }
        // Both are sorted: merge them, without duplicates, up to DISTINCT_K.
        let (x, y) = (&a.0, &b.0[..below]);
        let mut out = SmallVec::with_capacity((x.len() + y.len()).min(limit));
        let (mut i, mut j) = (0, 0);
        while out.len() < limit && (i < x.len() || j < y.len()) {
            let next = match (x.get(i), y.get(j)) {
                (Some(&p), Some(&q)) if p == q => {
                    i += 1;
                    j += 1;
                    p
                }
                (Some(&p), Some(&q)) if p < q => {
                    i += 1;
                    p
                }
                (Some(_), Some(&q)) | (None, Some(&q)) => {
                    j += 1;
                    q
                }
                (Some(&p), None) => {
                    i += 1;
                    p
                }
                (None, None) => unreachable!("the loop condition"),
            };
            out.push(next);
        }
        a.0 = out;
    }
}
