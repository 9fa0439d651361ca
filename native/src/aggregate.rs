//! What the range digest and the merged total share: interned byte strings (attribute
//! names, text values, fingerprints) and numeric statistics per class attribute, which
//! merge by addition, min and max, so ranges merged in order equal the whole log
//! (tests/total.rs checks it).

use std::hash::BuildHasher;

use hashbrown::HashTable;

use crate::sketch::Sketch;

type Hasher = foldhash::fast::FixedState;

/// Byte strings numbered in order of first appearance (attribute names, text values).
#[derive(Clone, Debug, Default)]
pub struct Interner {
    values: Vec<Box<[u8]>>,
    table: HashTable<u32>,
    hasher: Hasher,
}

impl Interner {
    #[inline]
    pub fn id(&mut self, v: &[u8]) -> u32 {
        let hash = self.hasher.hash_one(v);
        let values = &self.values;
        if let Some(&i) = self.table.find(hash, |&i| &values[i as usize][..] == v) {
            return i;
        }
        let i = self.values.len() as u32;
        self.values.push(v.into());
        let (values, hasher) = (&self.values, &self.hasher);
        self.table.insert_unique(hash, i, |&j| hasher.hash_one(&values[j as usize][..]));
        i
    }

    pub fn get(&self, i: u32) -> &[u8] {
        &self.values[i as usize]
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// One numeric attribute within a class, in micro-units: count, exact sum, min, max,
/// sketch. Many attributes keep one value within a class (Rows_affected 0, a fixed
/// Bytes_sent…): those cost 24 bytes; an attribute moves to the heap at its second value.
/// The representation is canonical (`Same` exactly when all values are equal and fit
/// in 64 bits), so equal data compare equal however the log was cut.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum NumStats {
    #[default]
    Empty,
    Same {
        count: u64,
        value: i64,
    },
    Varied(Box<Varied>),
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Varied {
    count: u64,
    sum: i128,
    min: i128,
    max: i128,
    sketch: Sketch,
}

impl Varied {
    fn of_same(count: u64, value: i128) -> Box<Varied> {
        let mut sketch = Sketch::default();
        sketch.add_n(value, count);
        Box::new(Varied { count, sum: value * count as i128, min: value, max: value, sketch })
    }
}

impl NumStats {
    #[inline]
    pub fn add(&mut self, v: i128) {
        match self {
            NumStats::Empty => match i64::try_from(v) {
                Ok(value) => *self = NumStats::Same { count: 1, value },
                Err(_) => *self = NumStats::Varied(Varied::of_same(1, v)),
            },
            NumStats::Same { count, value } if *value as i128 == v => *count += 1,
            NumStats::Same { count, value } => {
                let mut full = Varied::of_same(*count, *value as i128);
                full.add(v);
                *self = NumStats::Varied(full);
            }
            NumStats::Varied(full) => full.add(v),
        }
    }

    pub fn merge(&mut self, o: &NumStats) {
        match (&mut *self, o) {
            (_, NumStats::Empty) => {}
            (NumStats::Empty, _) => *self = o.clone(),
            (NumStats::Same { count, value }, NumStats::Same { count: n, value: v }) if value == v => *count += n,
            _ => {
                let mut full = self.to_varied();
                full.merge(&o.to_varied());
                *self = NumStats::Varied(full);
            }
        }
    }

    fn to_varied(&self) -> Box<Varied> {
        match self {
            NumStats::Empty => Box::new(Varied { count: 0, sum: 0, min: 0, max: 0, sketch: Sketch::default() }),
            NumStats::Same { count, value } => Varied::of_same(*count, *value as i128),
            NumStats::Varied(full) => full.clone(),
        }
    }

    pub fn count(&self) -> u64 {
        match self {
            NumStats::Empty => 0,
            NumStats::Same { count, .. } => *count,
            NumStats::Varied(f) => f.count,
        }
    }

    pub fn sum(&self) -> i128 {
        match self {
            NumStats::Empty => 0,
            NumStats::Same { count, value } => *value as i128 * *count as i128,
            NumStats::Varied(f) => f.sum,
        }
    }

    pub fn min(&self) -> i128 {
        match self {
            NumStats::Empty => 0,
            NumStats::Same { value, .. } => *value as i128,
            NumStats::Varied(f) => f.min,
        }
    }

    pub fn max(&self) -> i128 {
        match self {
            NumStats::Empty => 0,
            NumStats::Same { value, .. } => *value as i128,
            NumStats::Varied(f) => f.max,
        }
    }

    /// The sketch's (key, count) buckets in key order.
    pub fn buckets(&self) -> Vec<(i32, u64)> {
        match self {
            NumStats::Empty => Vec::new(),
            NumStats::Same { count, value } => vec![(crate::sketch::key_of(*value as i128), *count)],
            NumStats::Varied(f) => f.sketch.buckets().collect(),
        }
    }
}

impl Varied {
    #[inline]
    fn add(&mut self, v: i128) {
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.count += 1;
        self.sum += v;
        self.sketch.add(v);
    }

    fn merge(&mut self, o: &Varied) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = o.clone();
            return;
        }
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.count += o.count;
        self.sum += o.sum;
        self.sketch.merge(&o.sketch);
    }
}
