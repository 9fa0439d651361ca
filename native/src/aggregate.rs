//! Per-class aggregates and how two of them merge.
//!
//! A `Part` (digest.rs) maps fingerprints to `ClassStats`. Every structure here merges
//! by addition, min, max, or "later wins", so digests of consecutive parts of a log,
//! merged in order, equal the digest of the whole log (tests/parts.rs checks it).
//! Memory per class is kept small (the bound: 200,000 classes in 300 MB): text
//! values are interned per part, sketches and value counts are inline while short.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use smallvec::SmallVec;

use crate::sketch::Sketch;

type Hasher = foldhash::fast::FixedState;

/// How an attribute is aggregated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Num,
    Flag,
    Text,
}

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

/// Attributes seen in a part, numbered per kind in order of first appearance (so a
/// class's vectors of numbers, flags and value counts have no holes).
#[derive(Clone, Debug, Default)]
pub struct AttrTable {
    num: Interner,
    flag: Interner,
    text: Interner,
}

impl AttrTable {
    fn of(&mut self, kind: Kind) -> &mut Interner {
        match kind {
            Kind::Num => &mut self.num,
            Kind::Flag => &mut self.flag,
            Kind::Text => &mut self.text,
        }
    }

    pub fn id(&mut self, name: &[u8], kind: Kind) -> u16 {
        self.of(kind).id(name) as u16
    }

    /// The names of one kind, by id.
    pub fn names(&self, kind: Kind) -> Vec<&[u8]> {
        let t = match kind {
            Kind::Num => &self.num,
            Kind::Flag => &self.flag,
            Kind::Text => &self.text,
        };
        (0..t.len() as u32).map(|i| t.get(i)).collect()
    }

    /// How many attributes of a kind there are.
    pub fn count(&self, kind: Kind) -> usize {
        match kind {
            Kind::Num => self.num.len(),
            Kind::Flag => self.flag.len(),
            Kind::Text => self.text.len(),
        }
    }

    /// Ids of `other`'s attributes in this table, per kind.
    pub fn map_from(&mut self, other: &AttrTable) -> [Vec<u16>; 3] {
        [Kind::Num, Kind::Flag, Kind::Text].map(|k| other.names(k).into_iter().map(|n| self.id(n, k)).collect())
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

/// Value counts of one text attribute in a class: (interned value, count). Exact;
/// equality ignores the order of values.
#[derive(Clone, Debug, Default)]
pub struct Counts(pub SmallVec<[(u32, u64); 1]>);

impl Counts {
    #[inline]
    pub fn add(&mut self, v: u32, n: u64) {
        match self.0.iter_mut().find(|(k, _)| *k == v) {
            Some(e) => e.1 += n,
            None => self.0.push((v, n)),
        }
    }

    fn sorted(&self) -> Vec<(u32, u64)> {
        let mut v = self.0.to_vec();
        v.sort_unstable();
        v
    }
}

impl PartialEq for Counts {
    fn eq(&self, other: &Self) -> bool {
        self.sorted() == other.sorted()
    }
}

/// The event a class reports as its example: pt's worst (largest Query_time, the later
/// one on ties). `order` places it in the log (part start, event number in the part):
/// `pos_in_log` cannot, as pt gives events read ahead the position after the read.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub order: (u64, u64),
    pub query_time: i128,
    pub query: Box<[u8]>,
    pub ts: Option<i64>,
    /// Interned db value.
    pub db: Option<u32>,
    pub pos_in_log: u64,
    /// Its ts / db is inherited from an earlier part, not known yet.
    pub ts_inherited: bool,
    pub db_inherited: bool,
}

impl Sample {
    /// pt keeps the worst event, the later one on ties (`>=` in log order).
    pub fn beats(&self, other: &Sample) -> bool {
        self.query_time > other.query_time || (self.query_time == other.query_time && self.order >= other.order)
    }
}

/// Equal events: `order` depends on how the log was cut, so it is left out.
impl PartialEq for Sample {
    fn eq(&self, o: &Self) -> bool {
        (self.query_time, &self.query, self.ts, self.db, self.pos_in_log, self.ts_inherited, self.db_inherited)
            == (o.query_time, &o.query, o.ts, o.db, o.pos_in_log, o.ts_inherited, o.db_inherited)
    }
}

/// Everything aggregated for one class (or for the events above the class cap).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClassStats {
    pub count: u64,
    /// By attribute id; `count == 0` where the class never had the attribute.
    pub nums: Vec<NumStats>,
    /// `Yes` counts and totals by attribute id.
    pub flags: Vec<(u64, u64)>,
    /// Value counts by attribute id (db, user, host and other text attributes).
    pub texts: Vec<Counts>,
    /// Events whose db is not known yet (they inherit the db of an earlier part).
    pub db_unknown: u64,
    pub first_seen: Option<i64>,
    pub last_seen: Option<i64>,
    /// Events that inherit their time from an earlier part of the log.
    pub time_unknown: u64,
    pub sample: Option<Box<Sample>>,
}

impl ClassStats {
    #[inline]
    pub fn num(&mut self, id: u16) -> &mut NumStats {
        let i = id as usize;
        if self.nums.len() <= i {
            grow_exact(&mut self.nums, i + 1, NumStats::default);
        }
        &mut self.nums[i]
    }

    #[inline]
    pub fn flag(&mut self, id: u16, yes: bool) {
        let i = id as usize;
        if self.flags.len() <= i {
            grow_exact(&mut self.flags, i + 1, || (0, 0));
        }
        self.flags[i].0 += yes as u64;
        self.flags[i].1 += 1;
    }

    #[inline]
    pub fn text(&mut self, id: u16, value: u32, n: u64) {
        let i = id as usize;
        if self.texts.len() <= i {
            grow_exact(&mut self.texts, i + 1, Counts::default);
        }
        self.texts[i].add(value, n);
    }

    #[inline]
    pub fn seen_at(&mut self, t: i64) {
        self.first_seen = Some(self.first_seen.map_or(t, |f| f.min(t)));
        self.last_seen = Some(self.last_seen.map_or(t, |l| l.max(t)));
    }

    /// Merge `o`, a later part of the log; `attr` (per kind) and `text` turn `o`'s
    /// attribute ids and interned values into ours. True when `o`'s sample became ours.
    pub fn merge(&mut self, o: &ClassStats, attr: &[Vec<u16>; 3], text: &[u32]) -> bool {
        self.count += o.count;
        for (i, s) in o.nums.iter().enumerate().filter(|(_, s)| s.count() > 0) {
            self.num(attr[0][i]).merge(s);
        }
        for (i, &(yes, n)) in o.flags.iter().enumerate().filter(|(_, f)| f.1 > 0) {
            let j = attr[1][i] as usize;
            if self.flags.len() <= j {
                grow_exact(&mut self.flags, j + 1, || (0, 0));
            }
            self.flags[j].0 += yes;
            self.flags[j].1 += n;
        }
        for (i, counts) in o.texts.iter().enumerate() {
            for &(v, n) in &counts.0 {
                self.text(attr[2][i], text[v as usize], n);
            }
        }
        self.db_unknown += o.db_unknown;
        if let Some(t) = o.first_seen {
            self.seen_at(t);
        }
        if let Some(t) = o.last_seen {
            self.seen_at(t);
        }
        self.time_unknown += o.time_unknown;
        if let Some(s) = &o.sample {
            if self.sample.as_ref().is_none_or(|mine| s.beats(mine)) {
                let mut s = s.clone();
                s.db = s.db.map(|d| text[d as usize]);
                self.sample = Some(s);
                return true;
            }
        }
        false
    }
}

/// Grow a per-class vector to `len` without the spare capacity of doubling: there are
/// hundreds of thousands of them.
fn grow_exact<T>(v: &mut Vec<T>, len: usize, f: impl FnMut() -> T) {
    v.reserve_exact(len - v.len());
    v.resize_with(len, f);
}

/// Fingerprint → class, in order of first appearance, with an optional cap: past
/// `max_classes` distinct fingerprints, new ones are counted in the `other` class.
pub struct Classes {
    table: HashTable<u32>,
    hasher: Hasher,
    pub fingerprints: Vec<Box<[u8]>>,
    pub stats: Vec<ClassStats>,
    pub max_classes: usize,
    pub other: ClassStats,
    /// Events counted in `other` because of the cap.
    pub other_events: u64,
}

/// Where an event's class lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Class(u32),
    Other,
}

impl Classes {
    pub fn new(max_classes: usize) -> Self {
        Classes {
            table: HashTable::new(),
            hasher: Hasher::default(),
            fingerprints: Vec::new(),
            stats: Vec::new(),
            max_classes,
            other: ClassStats::default(),
            other_events: 0,
        }
    }

    #[inline]
    pub fn slot(&mut self, fingerprint: &[u8]) -> Slot {
        let hash = self.hasher.hash_one(fingerprint);
        let fps = &self.fingerprints;
        if let Some(&i) = self.table.find(hash, |&i| &fps[i as usize][..] == fingerprint) {
            return Slot::Class(i);
        }
        if self.stats.len() >= self.max_classes {
            return Slot::Other;
        }
        let i = self.stats.len() as u32;
        self.fingerprints.push(fingerprint.into());
        self.stats.push(ClassStats::default());
        let (fps, hasher) = (&self.fingerprints, &self.hasher);
        self.table.insert_unique(hash, i, |&j| hasher.hash_one(&fps[j as usize][..]));
        Slot::Class(i)
    }

    #[inline]
    pub fn get(&mut self, slot: Slot) -> &mut ClassStats {
        match slot {
            Slot::Class(i) => &mut self.stats[i as usize],
            Slot::Other => &mut self.other,
        }
    }

    pub fn len(&self) -> usize {
        self.stats.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stats.is_empty()
    }
}
