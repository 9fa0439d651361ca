//! Per-class aggregates and how two of them merge.
//!
//! A `Digest` maps fingerprints to `ClassStats`. Every structure here merges by
//! addition, min, max, or "later wins", so digests of consecutive parts of a log,
//! merged in order, equal the digest of the whole log (the parallel driver relies on
//! it, and a test checks it on every corpus file).

use hashbrown::HashMap;

use crate::number::Num;
use crate::sketch::Sketch;

/// How an attribute is aggregated; chosen from each value (numbers, `Yes`/`No`, text).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Num,
    Bool,
}

/// Attribute names seen in a digest, numbered in order of first appearance; a name
/// seen both as a number and as Yes/No gets one id per kind.
#[derive(Clone, Debug, Default)]
pub struct AttrTable {
    names: Vec<(Box<[u8]>, Kind)>,
    num: HashMap<Box<[u8]>, u16, foldhash::fast::FixedState>,
    boolean: HashMap<Box<[u8]>, u16, foldhash::fast::FixedState>,
}

impl AttrTable {
    pub fn id(&mut self, name: &[u8], kind: Kind) -> u16 {
        let map = match kind {
            Kind::Num => &mut self.num,
            Kind::Bool => &mut self.boolean,
        };
        if let Some(&id) = map.get(name) {
            return id;
        }
        let id = self.names.len() as u16;
        self.names.push((name.into(), kind));
        map.insert(name.into(), id);
        id
    }

    pub fn names(&self) -> &[(Box<[u8]>, Kind)] {
        &self.names
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// Statistics of one numeric attribute within a class. The sum is exact (nano-units)
/// for the decimals logs hold, so it does not depend on how the log was split.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NumStats {
    pub count: u64,
    pub sum_nanos: i128,
    /// Sum of the values that do not fit in nano-units (more digits, exponents).
    pub sum_other: f64,
    pub min: f64,
    pub max: f64,
    pub sketch: Sketch,
}

impl NumStats {
    pub fn sum(&self) -> f64 {
        self.sum_nanos as f64 / 1e9 + self.sum_other
    }

    #[inline]
    pub fn add(&mut self, n: Num) {
        let x = n.value;
        if self.count == 0 || x < self.min {
            self.min = x;
        }
        if self.count == 0 || x > self.max {
            self.max = x;
        }
        self.count += 1;
        match n.nanos {
            Some(v) => self.sum_nanos += v,
            None => self.sum_other += x,
        }
        self.sketch.add(x);
    }

    pub fn merge(&mut self, o: &NumStats) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 || o.min < self.min {
            self.min = o.min;
        }
        if self.count == 0 || o.max > self.max {
            self.max = o.max;
        }
        self.count += o.count;
        self.sum_nanos += o.sum_nanos;
        self.sum_other += o.sum_other;
        self.sketch.merge(&o.sketch);
    }
}

/// Value counts of a text attribute (db, user, host) within a class. Exact and
/// unbounded: real logs have few values per class, and a cap would make the counts
/// depend on how the log was cut. Equality ignores the order of values.
#[derive(Clone, Debug, Default)]
pub struct Distribution {
    pub values: Vec<(Box<[u8]>, u64)>,
}

impl Distribution {
    #[inline]
    pub fn add(&mut self, v: &[u8], n: u64) {
        if let Some(e) = self.values.iter_mut().find(|(k, _)| &k[..] == v) {
            e.1 += n;
        } else {
            self.values.push((v.into(), n));
        }
    }

    pub fn merge(&mut self, o: &Distribution) {
        for (v, n) in &o.values {
            self.add(v, *n);
        }
    }

    /// Values by descending count, then by value.
    pub fn sorted(&self) -> Vec<(&[u8], u64)> {
        let mut v: Vec<(&[u8], u64)> = self.values.iter().map(|(k, n)| (&k[..], *n)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v
    }
}

impl PartialEq for Distribution {
    fn eq(&self, other: &Self) -> bool {
        self.sorted() == other.sorted()
    }
}

/// The event a class reports as its example: pt's worst (largest Query_time, the
/// later one on ties).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    pub query_time: f64,
    pub query: Box<[u8]>,
    pub ts: Option<i64>,
    pub db: Option<Box<[u8]>>,
    pub pos_in_log: u64,
}

impl Sample {
    /// pt keeps the worst event, the later one on ties (`>=` in log order).
    pub fn beats(&self, other: &Sample) -> bool {
        self.query_time > other.query_time
            || (self.query_time == other.query_time && self.pos_in_log >= other.pos_in_log)
    }
}

/// Everything aggregated for one class (or for all events: the global class).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClassStats {
    pub count: u64,
    /// Indexed by attribute id; `count == 0` where the class never had the attribute.
    pub nums: Vec<NumStats>,
    /// `Yes` counts per boolean attribute id, and how many events had it.
    pub bools: Vec<(u64, u64)>,
    pub db: Distribution,
    pub user: Distribution,
    pub host: Distribution,
    /// Events whose db is not known yet (they inherit the db of an earlier part).
    pub db_unknown: u64,
    pub first_seen: Option<i64>,
    pub last_seen: Option<i64>,
    /// Events that inherit their time from an earlier part of the log.
    pub time_unknown: u64,
    pub sample: Option<Sample>,
}

impl ClassStats {
    #[inline]
    pub fn num(&mut self, id: u16) -> &mut NumStats {
        let i = id as usize;
        if self.nums.len() <= i {
            self.nums.resize_with(i + 1, NumStats::default);
        }
        &mut self.nums[i]
    }

    #[inline]
    pub fn add_bool(&mut self, id: u16, yes: bool) {
        let i = id as usize;
        if self.bools.len() <= i {
            self.bools.resize(i + 1, (0, 0));
        }
        self.bools[i].0 += yes as u64;
        self.bools[i].1 += 1;
    }

    #[inline]
    pub fn seen_at(&mut self, t: i64) {
        self.first_seen = Some(self.first_seen.map_or(t, |f| f.min(t)));
        self.last_seen = Some(self.last_seen.map_or(t, |l| l.max(t)));
    }

    /// Merge `o`, a later part of the log; `map` turns `o`'s attribute ids into ours.
    pub fn merge(&mut self, o: &ClassStats, map: &[u16]) {
        self.count += o.count;
        for (i, s) in o.nums.iter().enumerate() {
            if s.count > 0 {
                self.num(map[i]).merge(s);
            }
        }
        for (i, &(yes, n)) in o.bools.iter().enumerate() {
            if n > 0 {
                let j = map[i] as usize;
                if self.bools.len() <= j {
                    self.bools.resize(j + 1, (0, 0));
                }
                self.bools[j].0 += yes;
                self.bools[j].1 += n;
            }
        }
        self.db.merge(&o.db);
        self.user.merge(&o.user);
        self.host.merge(&o.host);
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
                self.sample = Some(s.clone());
            }
        }
    }
}

/// Fingerprint → class, in order of first appearance, with an optional cap: past
/// `max_classes` distinct fingerprints, new ones are counted in the `other` class.
pub struct Classes {
    index: HashMap<Box<[u8]>, u32, foldhash::fast::FixedState>,
    pub fingerprints: Vec<Box<[u8]>>,
    pub stats: Vec<ClassStats>,
    pub max_classes: usize,
    pub other: ClassStats,
    /// Events counted in `other` because of the cap.
    pub other_fingerprints: u64,
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
            index: HashMap::with_hasher(foldhash::fast::FixedState::default()),
            fingerprints: Vec::new(),
            stats: Vec::new(),
            max_classes,
            other: ClassStats::default(),
            other_fingerprints: 0,
        }
    }

    #[inline]
    pub fn slot(&mut self, fingerprint: &[u8]) -> Slot {
        if let Some(&i) = self.index.get(fingerprint) {
            return Slot::Class(i);
        }
        if self.stats.len() >= self.max_classes {
            return Slot::Other;
        }
        let i = self.stats.len() as u32;
        self.index.insert(fingerprint.into(), i);
        self.fingerprints.push(fingerprint.into());
        self.stats.push(ClassStats::default());
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
