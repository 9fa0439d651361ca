//! A query class's figures, by attribute id (the twin of aggregate.py `ClassAgg`,
//! `Sample`, `Runs`, `Fit`), and how two of them merge (`ClassAgg.merge`): one place per
//! figure in the core. The range digest fills them event by event (`range.rs`), the
//! total merges them (`total.rs`), the binding hands them to Python by name
//! (`python/figures.rs`).

use smallvec::SmallVec;

use crate::aggregate::NumStats;
use crate::time::Ts;
use crate::values::{Bits, Kmv, Values};

/// Byte strings in frozen classes (`Sample::query`, `Ts`) as serde bytes: the same
/// postcard encoding as a sequence of `u8` (a varint length, then the bytes), decoded in
/// one copy instead of one call per byte.
pub mod bytes {
    use std::fmt;

    use serde::de::{Error, SeqAccess, Visitor};

    pub fn serialize<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_byte_buf(Bytes(|b: &[u8]| b.to_vec()))
    }

    /// What `f` makes of the bytes, however the format gives them (postcard: borrowed;
    /// a text format: a sequence of numbers).
    pub struct Bytes<F>(pub F);

    impl<'de, T, F: FnOnce(&[u8]) -> T> Visitor<'de> for Bytes<F> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("bytes")
        }

        fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<T, E> {
            Ok((self.0)(v))
        }

        fn visit_byte_buf<E: Error>(self, v: Vec<u8>) -> Result<T, E> {
            Ok((self.0)(&v))
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
            let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
            while let Some(b) = seq.next_element::<u8>()? {
                v.push(b);
            }
            Ok((self.0)(&v))
        }
    }
}

/// A sample's statement is cut to this many bytes (aggregate.py `SAMPLE_LIMIT`).
pub const SAMPLE_LIMIT: usize = 64 * 1024;
/// Leading classes kept per class (aggregate.py `LEADS_LIMIT`).
pub const LEADS_LIMIT: usize = 100;
/// Query_time histogram bucket bounds, micro-units (aggregate.py `HISTOGRAM_BOUNDS`).
const HISTOGRAM_BOUNDS: [i128; 7] = [10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/// The histogram bucket of a Query_time (aggregate.py `histogram_index`).
pub fn histogram_index(micro: i128) -> usize {
    HISTOGRAM_BOUNDS.iter().position(|&b| micro < b).unwrap_or(HISTOGRAM_BOUNDS.len())
}

/// Closed runs of one class (`aggregate.Runs`); leads by fingerprint id.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Runs {
    pub runs: u64,
    pub calls: u64,
    pub repeated_calls: u64,
    pub longest: u64,
    pub lengths: SmallVec<[(i32, u64); 1]>,
    pub leads: SmallVec<[(u32, u64, u64); 1]>,
    pub leads_other: Option<(u64, u64)>,
}

impl Runs {
    pub fn close(&mut self, length: u64) {
        self.runs += 1;
        self.calls += length;
        if length > 1 {
            self.repeated_calls += length;
        }
        self.longest = self.longest.max(length);
        let key = crate::sketch::key_of(length as i128);
        match self.lengths.iter_mut().find(|e| e.0 == key) {
            Some(e) => e.1 += 1,
            None => self.lengths.push((key, 1)),
        }
    }

    pub fn add_lead(&mut self, lead: u32, calls: u64) {
        self.add_leads(lead, 1, calls);
    }

    /// `runs` runs (`calls` calls in all) followed class `lead` (`Runs.add_lead`).
    pub fn add_leads(&mut self, lead: u32, runs: u64, calls: u64) {
        if let Some(e) = self.leads.iter_mut().find(|e| e.0 == lead) {
            e.1 += runs;
            e.2 += calls;
            return;
        }
        if self.leads.len() + self.leads_other.is_some() as usize >= LEADS_LIMIT {
            let o = self.leads_other.get_or_insert((0, 0));
            o.0 += runs;
            o.1 += calls;
            return;
        }
        self.leads.push((lead, runs, calls));
    }

    /// `Runs.merge`: add `b`'s runs to these.
    pub fn merge(&mut self, b: &Runs) {
        let a = self;
        a.runs += b.runs;
        a.calls += b.calls;
        a.repeated_calls += b.repeated_calls;
        a.longest = a.longest.max(b.longest);
        for &(key, n) in &b.lengths {
            match a.lengths.iter_mut().find(|e| e.0 == key) {
                Some(e) => e.1 += n,
                None => a.lengths.push((key, n)),
            }
        }
        for &(lead, runs, calls) in &b.leads {
            a.add_leads(lead, runs, calls);
        }
        if let Some((runs, calls)) = b.leads_other {
            let o = a.leads_other.get_or_insert((0, 0));
            o.0 += runs;
            o.1 += calls;
        }
    }
}

/// A class's worst event (`aggregate.Sample`); `offset` becomes its line.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Sample {
    pub query_time: i128,
    #[serde(with = "bytes")]
    pub query: Vec<u8>,
    pub truncated: bool,
    pub ts: Option<Ts>,
    pub db: Option<u32>,
    pub user: Option<u32>,
    pub host: Option<u32>,
    pub offset: u64,
    /// While a range is digested: where `query` lies in the input (copied at the end,
    /// once, rather than at every event that beats the sample so far).
    #[serde(skip)]
    pub span: Option<(usize, usize)>,
    pub line: u64,
    /// The input's index (set when ranges merge: `total.rs`).
    pub file: u32,
    pub unknown_ts: bool,
    pub unknown_db: bool,
}

/// Everything the Python engine's `ClassAgg` holds, by attribute id.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Class {
    pub kind: u8,
    pub count: u64,
    pub ts_min: Option<Ts>,
    pub ts_max: Option<Ts>,
    pub nums: Vec<NumStats>,
    /// Per numeric attribute id: some value had a decimal point.
    pub decimal: Bits,
    pub flags: Vec<(u64, u64)>,
    pub strings: Vec<Values>,
    pub histogram: [u64; 8],
    pub sample: Option<Box<Sample>>,
    pub runs: Runs,
    /// Runs of single-row writes (writes only).
    pub single_runs: Option<Box<Runs>>,
    pub connections: Kmv,
    pub texts: Kmv,
    /// n, sx, sy, sxx, sxy of Query_time (µs) against rows per statement.
    pub fit: Option<Box<[i128; 5]>>,
    pub unknown_db: u64,
    pub unknown_ts: bool,
    /// `--host` label id -> events (set when ranges merge: `total.rs`).
    pub servers: Option<Box<Vec<(u32, u64)>>>,
}

impl Class {
    #[inline]
    pub fn num(&mut self, id: u16) -> &mut NumStats {
        let i = id as usize;
        if self.nums.len() <= i {
            self.nums.resize_with(i + 1, NumStats::default);
        }
        &mut self.nums[i]
    }

    #[inline]
    pub fn string(&mut self, id: u16, value: u32) {
        let i = id as usize;
        if self.strings.len() <= i {
            self.strings.resize_with(i + 1, Values::default);
        }
        self.strings[i].add(value, 1);
    }

    #[inline]
    pub fn see_ts(&mut self, ts: Ts) {
        if self.ts_min.is_none_or(|m| ts < m) {
            self.ts_min = Some(ts);
        }
        if self.ts_max.is_none_or(|m| ts > m) {
            self.ts_max = Some(ts);
        }
    }

    /// `ClassAgg.merge`: add `b` (later in the input) to this class.
    pub fn merge(&mut self, b: &Class) {
        let a = self;
        a.count += b.count;
        if let Some(t) = b.ts_min {
            a.see_ts(t);
        }
        if let Some(t) = b.ts_max {
            a.see_ts(t);
        }
        for (i, s) in b.nums.iter().enumerate() {
            if s.count() > 0 {
                a.num(i as u16).merge(s);
            }
        }
        a.decimal.union(&b.decimal);
        if a.flags.len() < b.flags.len() {
            a.flags.resize(b.flags.len(), (0, 0));
        }
        for (i, f) in b.flags.iter().enumerate() {
            a.flags[i].0 += f.0;
            a.flags[i].1 += f.1;
        }
        if a.strings.len() < b.strings.len() {
            a.strings.resize_with(b.strings.len(), Values::default);
        }
        for (i, values) in b.strings.iter().enumerate() {
            let target = &mut a.strings[i];
            for &(v, n) in &values.list {
                target.add(v, n);
            }
            target.other += values.other;
        }
        for &(server, n) in b.servers.iter().flat_map(|s| s.iter()) {
            let servers = a.servers.get_or_insert_with(Default::default);
            match servers.iter_mut().find(|e| e.0 == server) {
                Some(e) => e.1 += n,
                None => servers.push((server, n)),
            }
        }
        for (x, y) in a.histogram.iter_mut().zip(b.histogram) {
            *x += y;
        }
        if let Some(s) = &b.sample {
            if a.sample.as_ref().is_none_or(|mine| s.query_time >= mine.query_time) {
                a.sample = Some(s.clone());
            }
        }
        a.runs.merge(&b.runs);
        if let Some(b) = &b.single_runs {
            a.single_runs.get_or_insert_with(Default::default).merge(b);
        }
        a.connections.merge(&b.connections);
        a.texts.merge(&b.texts);
        if let Some(fit) = &b.fit {
            for (x, y) in a.fit.get_or_insert_with(Default::default).iter_mut().zip(fit.iter()) {
                *x += y;
            }
        }
    }
}
