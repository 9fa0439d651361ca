//! Stored class states merged in bulk (govern/history): the history store keeps each
//! class of each bucket or roll-up as a `marshal`-ed tuple of the Python `ClassAgg`'s
//! figures (govern/history/rows.py `encode_agg`). A report merges thousands of them per
//! class; doing it here costs a parse and a few additions per row instead of building
//! and merging Python objects, and only each merged class is handed back, as the same
//! `marshal` form.
//!
//! The merge is `ClassAgg.merge` (govern/digest/aggregate.py) rule for rule, in the
//! order rows are added: a class's first row is taken as it is, later rows are added to
//! it (capped value and lead counts fold into "(other)" as they do there, the sample is
//! the later one on ties, distinct-count sketches keep their 256 smallest hashes).
//! Integers are `i128`; a row holding one beyond 2^90 (or a histogram of another
//! length) is not merged here: it and its class's later rows are handed back as they
//! are, for Python to add.

use foldhash::fast::FixedState;
use std::collections::HashMap;
use std::hash::Hash;

const DISTINCT_LIMIT: usize = 1000;
const LEADS_LIMIT: usize = 100;
const DISTINCT_K: usize = 256;
const OTHER: &[u8] = b"(other)";
/// Integers of a row must stay below this (6 digits of `marshal`): 2^37 rows summed
/// then fit an `i128`.
const BIG: i128 = 1 << 90;

/// A `marshal` value (only what class states hold).
#[derive(Clone, Debug)]
pub enum V {
    Null,
    None,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(Vec<u8>),
    Bytes(Vec<u8>),
    Tuple(Vec<V>),
    List(Vec<V>),
    Dict(Vec<(V, V)>),
    Set(Vec<V>),
}

#[derive(Debug)]
pub struct Bad;

/// What a `marshal` back-reference can stand for here: an integer or a string (where it
/// is in the payload); containers are never referenced twice in a class state.
#[derive(Clone, Copy)]
enum Ref {
    Other,
    Int(i128),
    Str(usize, usize),
}

type R<T> = Result<T, Bad>;

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
    refs: Vec<Ref>,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> R<&[u8]> {
        let end = self.at.checked_add(n).ok_or(Bad)?;
        let s = self.data.get(self.at..end).ok_or(Bad)?;
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> R<u8> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> R<usize> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()) as usize)
    }
    fn i32(&mut self) -> R<i32> {
        Ok(i32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn items(&mut self, n: usize) -> R<Vec<V>> {
        let mut items = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            items.push(self.value()?);
        }
        Ok(items)
    }
    /// A type code, its reference slot reserved if flagged.
    fn code(&mut self) -> R<(u8, Option<usize>)> {
        let code = self.u8()?;
        let slot = if code & 0x80 != 0 {
            self.refs.push(Ref::Other);
            Some(self.refs.len() - 1)
        } else {
            None
        };
        Ok((code & 0x7f, slot))
    }
    fn int(&mut self) -> R<i128> {
        let (code, slot) = self.code()?;
        let value = match code {
            b'i' => self.i32()? as i128,
            b'l' => {
                let n = self.i32()?;
                let digits = n.unsigned_abs() as usize;
                let raw = self.take(digits * 2)?;
                if digits > 6 {
                    return Err(Bad); // beyond 2^90: left to Python
                }
                let mut value: i128 = 0;
                for (i, d) in raw.chunks_exact(2).enumerate() {
                    value |= (u16::from_le_bytes([d[0], d[1]]) as i128) << (15 * i);
                }
                if n < 0 {
                    -value
                } else {
                    value
                }
            }
            b'r' => match self.u32().map(|at| self.refs.get(at))? {
                Some(Ref::Int(i)) => *i,
                _ => return Err(Bad),
            },
            _ => return Err(Bad),
        };
        if let Some(slot) = slot {
            self.refs[slot] = Ref::Int(value);
        }
        Ok(value)
    }
    /// Where a string (or None) is in the payload.
    fn opt_span(&mut self, code: u8, slot: Option<usize>) -> R<Option<(usize, usize)>> {
        let span = match code {
            b'N' => return Ok(None),
            b'u' | b't' | b'a' | b'A' => {
                let n = self.u32()?;
                self.take(n)?;
                (self.at - n, n)
            }
            b'z' | b'Z' => {
                let n = self.u8()? as usize;
                self.take(n)?;
                (self.at - n, n)
            }
            b'r' => match self.u32().map(|at| self.refs.get(at))? {
                Some(Ref::Str(at, n)) => (*at, *n),
                _ => return Err(Bad),
            },
            _ => return Err(Bad),
        };
        if let Some(slot) = slot {
            self.refs[slot] = Ref::Str(span.0, span.1);
        }
        Ok(Some(span))
    }
    fn opt_str(&mut self) -> R<Option<Vec<u8>>> {
        let (code, slot) = self.code()?;
        Ok(self.opt_span(code, slot)?.map(|(at, n)| self.data[at..at + n].to_vec()))
    }
    fn str(&mut self) -> R<Vec<u8>> {
        self.opt_str()?.ok_or(Bad)
    }
    fn bool(&mut self) -> R<bool> {
        match self.code()?.0 {
            b'T' => Ok(true),
            b'F' => Ok(false),
            _ => Err(Bad),
        }
    }
    /// A tuple's, list's or set's length (`kinds`: their codes).
    fn seq(&mut self, kinds: &[u8]) -> R<usize> {
        let (code, _) = self.code()?;
        if !kinds.contains(&code) {
            return Err(Bad);
        }
        if code == b')' {
            Ok(self.u8()? as usize)
        } else {
            self.u32()
        }
    }
    fn tuple(&mut self, n: usize) -> R<()> {
        if self.seq(b"()[")? != n {
            return Err(Bad);
        }
        Ok(())
    }
    fn dict(&mut self) -> R<()> {
        if self.code()?.0 != b'{' {
            return Err(Bad);
        }
        Ok(())
    }
    /// True while a dict has more items (its end marker is read).
    fn more(&mut self) -> R<bool> {
        if *self.data.get(self.at).ok_or(Bad)? == b'0' {
            self.at += 1;
            return Ok(false);
        }
        Ok(true)
    }
    fn two(&mut self) -> R<[i128; 2]> {
        self.tuple(2)?;
        Ok([self.int()?, self.int()?])
    }
    fn counts<K: Hash + Eq + Clone>(&mut self, key: impl Fn(&mut Self) -> R<K>) -> R<OMap<K, i128>> {
        self.dict()?;
        let mut map = OMap::default();
        while self.more()? {
            let k = key(self)?;
            map.items.push((k, self.int()?));
        }
        Ok(map)
    }
    /// A distinct-count sketch's hashes, ascending: a set (the first form), or None
    /// when they were packed before the `marshal` part (`packed`).
    fn hashes(&mut self, packed: &mut Option<Vec<u64>>) -> R<Vec<u64>> {
        if self.data.get(self.at) == Some(&b'N') {
            self.at += 1;
            return packed.take().ok_or(Bad);
        }
        let n = self.seq(b"<>")?;
        let mut hashes = (0..n).map(|_| u64::try_from(self.int()?).map_err(|_| Bad)).collect::<R<Vec<_>>>()?;
        hashes.sort_unstable();
        Ok(hashes)
    }
    /// A sketch (key -> count), ascending by key.
    fn sketch(&mut self) -> R<Sketch> {
        let mut pairs = self.counts(Self::int)?.items;
        pairs.sort_unstable_by_key(|p| p.0);
        Ok(pairs)
    }
    fn runs(&mut self) -> R<Runs> {
        self.tuple(6)?;
        let (runs, calls, repeated, longest) = (self.int()?, self.int()?, self.int()?, self.int()?);
        let lengths = self.sketch()?;
        self.dict()?;
        let mut leads = OMap::default();
        while self.more()? {
            let k = self.str()?;
            leads.items.push((k, self.two()?));
        }
        Ok(Runs { runs, calls, repeated, longest, lengths, leads })
    }
    fn state(&mut self, fingerprint: Vec<u8>, mut packed: [Option<Vec<u64>>; 2]) -> R<State> {
        let count = self.int()?;
        let ts_min = self.opt_str()?;
        let ts_max = self.opt_str()?;
        self.dict()?;
        let mut metrics = OMap::default();
        while self.more()? {
            let name = self.str()?;
            self.tuple(6)?;
            let (count, total, low, high) = (self.int()?, self.int()?, self.int()?, self.int()?);
            let buckets = self.sketch()?;
            let decimal = self.bool()?;
            metrics.items.push((name, Metric { count, total, low, high, buckets, decimal }));
        }
        self.dict()?;
        let mut booleans = OMap::default();
        while self.more()? {
            let name = self.str()?;
            booleans.items.push((name, self.two()?));
        }
        self.dict()?;
        let mut strings = OMap::default();
        while self.more()? {
            let name = self.str()?;
            strings.items.push((name, self.counts(Self::str)?));
        }
        let servers = self.counts(Self::str)?;
        let n = self.seq(b"[")?;
        let histogram = (0..n).map(|_| self.int()).collect::<R<Vec<_>>>()?;
        let sample = match self.value()? {
            V::None => None,
            V::Tuple(items) if items.len() == 10 => Some((int(&items[0])?, items)),
            _ => return Err(Bad),
        };
        let runs = self.runs()?;
        let single_runs = self.runs()?;
        let connections = self.hashes(&mut packed[0])?;
        let texts = self.hashes(&mut packed[1])?;
        self.tuple(5)?;
        let fit = [self.int()?, self.int()?, self.int()?, self.int()?, self.int()?];
        if self.at != self.data.len() {
            return Err(Bad);
        }
        Ok(State {
            fingerprint,
            count,
            ts_min,
            ts_max,
            metrics,
            booleans,
            strings,
            servers,
            histogram,
            sample,
            runs,
            single_runs,
            connections,
            texts,
            fit,
        })
    }
    fn value(&mut self) -> R<V> {
        let (code, slot) = self.code()?;
        let v = match code {
            b'0' => V::Null,
            b'N' => V::None,
            b'T' => V::Bool(true),
            b'F' => V::Bool(false),
            b'i' | b'l' => {
                self.at -= 1;
                if slot.is_some() {
                    self.refs.pop();
                }
                match self.int() {
                    Ok(i) => V::Int(i),
                    Err(_) => return Err(Bad),
                }
            }
            b'g' => V::Float(f64::from_le_bytes(self.take(8)?.try_into().unwrap())),
            b's' => {
                let n = self.u32()?;
                V::Bytes(self.take(n)?.to_vec())
            }
            b'u' | b't' | b'a' | b'A' | b'z' | b'Z' => {
                let (at, n) = self.opt_span(code, slot)?.ok_or(Bad)?;
                V::Str(self.data[at..at + n].to_vec())
            }
            b')' => {
                let n = self.u8()? as usize;
                V::Tuple(self.items(n)?)
            }
            b'(' => {
                let n = self.u32()?;
                V::Tuple(self.items(n)?)
            }
            b'[' => {
                let n = self.u32()?;
                V::List(self.items(n)?)
            }
            b'<' | b'>' => {
                let n = self.u32()?;
                V::Set(self.items(n)?)
            }
            b'{' => {
                let mut pairs = Vec::new();
                loop {
                    let key = self.value()?;
                    if matches!(key, V::Null) {
                        break;
                    }
                    let value = self.value()?;
                    pairs.push((key, value));
                }
                V::Dict(pairs)
            }
            b'r' => match self.u32().map(|at| self.refs.get(at))? {
                Some(Ref::Int(i)) => V::Int(*i),
                Some(Ref::Str(at, n)) => V::Str(self.data[*at..*at + n].to_vec()),
                _ => return Err(Bad),
            },
            _ => return Err(Bad),
        };
        Ok(v)
    }
}

/// One `marshal` value from `data` (all of it).
pub fn loads(data: &[u8]) -> R<V> {
    let mut reader = Reader { data, at: 0, refs: Vec::new() };
    let v = reader.value()?;
    if reader.at != data.len() {
        return Err(Bad);
    }
    Ok(v)
}

/// `marshal.dumps` of a value (no references: `marshal.loads` reads it back equal).
pub fn dumps(v: &V, out: &mut Vec<u8>) {
    let len = |out: &mut Vec<u8>, n: usize| out.extend_from_slice(&(n as u32).to_le_bytes());
    match v {
        V::Null => out.push(b'0'),
        V::None => out.push(b'N'),
        V::Bool(b) => out.push(if *b { b'T' } else { b'F' }),
        V::Int(i) => {
            if let Ok(small) = i32::try_from(*i) {
                out.push(b'i');
                out.extend_from_slice(&small.to_le_bytes());
            } else {
                let mut digits = Vec::new();
                let mut rest = i.unsigned_abs();
                while rest != 0 {
                    digits.push((rest & 0x7fff) as u16);
                    rest >>= 15;
                }
                out.push(b'l');
                let n = digits.len() as i32;
                out.extend_from_slice(&(if *i < 0 { -n } else { n }).to_le_bytes());
                for d in digits {
                    out.extend_from_slice(&d.to_le_bytes());
                }
            }
        }
        V::Float(f) => {
            out.push(b'g');
            out.extend_from_slice(&f.to_le_bytes());
        }
        V::Str(s) => {
            out.push(b'u');
            len(out, s.len());
            out.extend_from_slice(s);
        }
        V::Bytes(s) => {
            out.push(b's');
            len(out, s.len());
            out.extend_from_slice(s);
        }
        V::Tuple(items) | V::List(items) | V::Set(items) => {
            out.push(match v {
                V::Tuple(_) => b'(',
                V::List(_) => b'[',
                _ => b'<',
            });
            len(out, items.len());
            for item in items {
                dumps(item, out);
            }
        }
        V::Dict(pairs) => {
            out.push(b'{');
            for (k, value) in pairs {
                dumps(k, out);
                dumps(value, out);
            }
            out.push(b'0');
        }
    }
}

/// A dict in insertion order, as Python's (indexed by hash once it grows).
#[derive(Clone, Debug)]
pub struct OMap<K, T> {
    items: Vec<(K, T)>,
    index: HashMap<K, usize, FixedState>,
}

impl<K, T> Default for OMap<K, T> {
    fn default() -> Self {
        OMap { items: Vec::new(), index: HashMap::default() }
    }
}

impl<K: Hash + Eq + Clone, T> OMap<K, T> {
    fn position(&mut self, key: &K) -> Option<usize> {
        if self.items.len() <= 8 {
            return self.items.iter().position(|(k, _)| k == key);
        }
        if self.index.len() != self.items.len() {
            self.index = self.items.iter().enumerate().map(|(i, (k, _))| (k.clone(), i)).collect();
        }
        self.index.get(key).copied()
    }
    fn get_mut(&mut self, key: &K) -> Option<&mut T> {
        let at = self.position(key)?;
        Some(&mut self.items[at].1)
    }
    fn push(&mut self, key: K, value: T) -> &mut T {
        if !self.index.is_empty() || self.items.len() > 8 {
            if self.index.len() != self.items.len() {
                self.index = self.items.iter().enumerate().map(|(i, (k, _))| (k.clone(), i)).collect();
            }
            self.index.insert(key.clone(), self.items.len());
        }
        self.items.push((key, value));
        &mut self.items.last_mut().unwrap().1
    }
    fn entry(&mut self, key: &K, default: impl FnOnce() -> T) -> &mut T {
        match self.position(key) {
            Some(at) => &mut self.items[at].1,
            None => self.push(key.clone(), default()),
        }
    }
    fn len(&self) -> usize {
        self.items.len()
    }
}

fn int(v: &V) -> R<i128> {
    match v {
        V::Int(i) if i.unsigned_abs() < BIG as u128 => Ok(*i),
        _ => Err(Bad),
    }
}

#[derive(Clone, Debug)]
struct Metric {
    count: i128,
    total: i128,
    low: i128,
    high: i128,
    buckets: Sketch,
    decimal: bool,
}

#[derive(Clone, Debug)]
struct Runs {
    runs: i128,
    calls: i128,
    repeated: i128,
    longest: i128,
    lengths: Sketch,
    leads: OMap<Vec<u8>, [i128; 2]>,
}

/// One class's figures (rows.py `encode_agg`'s tuple).
#[derive(Clone, Debug)]
pub struct State {
    pub fingerprint: Vec<u8>,
    count: i128,
    ts_min: Option<Vec<u8>>,
    ts_max: Option<Vec<u8>>,
    metrics: OMap<Vec<u8>, Metric>,
    booleans: OMap<Vec<u8>, [i128; 2]>,
    strings: OMap<Vec<u8>, OMap<Vec<u8>, i128>>,
    servers: OMap<Vec<u8>, i128>,
    histogram: Vec<i128>,
    sample: Option<(i128, Vec<V>)>,
    runs: Runs,
    single_runs: Runs,
    connections: Vec<u64>,
    texts: Vec<u64>,
    fit: [i128; 5],
}

/// Bucket counts by key, ascending (a sketch's dict; its order is never shown).
type Sketch = Vec<(i128, i128)>;

/// First byte of a payload whose distinct-count hashes are packed before the `marshal`
/// part (rows.py `STATE_V2`, its zlib part inflated): two u16 counts, the hashes as
/// little-endian u64, ascending; the tuple has None in their places.
const PACKED: u8 = 2;
/// rows.py `STATE_V3`: the same layout, stored so (a roll-up's row is read as it is).
const PACKED_STORED: u8 = 3;

/// The fingerprint of a stored state, and the state if this module can merge it (its
/// `fingerprint` left empty: `Merge` sets it on the states it keeps, not on every row).
pub fn parse(data: &[u8]) -> R<(Vec<u8>, Option<State>)> {
    let mut reader = Reader { data, at: 0, refs: Vec::new() };
    let mut packed = [None, None];
    if matches!(data.first(), Some(&PACKED | &PACKED_STORED)) {
        reader.at = 1;
        let head = reader.take(4)?;
        let counts = [u16::from_le_bytes([head[0], head[1]]) as usize, u16::from_le_bytes([head[2], head[3]]) as usize];
        for (slot, n) in packed.iter_mut().zip(counts) {
            let raw = reader.take(n * 8)?;
            let hashes: Vec<u64> = raw.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().unwrap())).collect();
            if !hashes.windows(2).all(|w| w[0] < w[1]) {
                return Err(Bad);
            }
            *slot = Some(hashes);
        }
    }
    reader.tuple(15)?;
    let fingerprint = match reader.value()? {
        V::Bytes(b) => b,
        _ => return Err(Bad),
    };
    let state = reader.state(Vec::new(), packed).ok();
    Ok((fingerprint, state))
}

/// Two sketches' counts added (a merge of two ascending lists), in place: the keys both
/// have are added where they are, and only when `more` has keys `into` lacks does `into`
/// grow, merged from the back (a report adds tens of rows a class, most of them with
/// the buckets the class already has: no allocation then).
fn add_sketch(into: &mut Sketch, more: &Sketch) {
    if more.is_empty() {
        return;
    }
    if into.is_empty() {
        into.clone_from(more);
        return;
    }
    let (mut at, mut new) = (0, 0);
    for &(key, n) in more {
        while at < into.len() && into[at].0 < key {
            at += 1;
        }
        if at < into.len() && into[at].0 == key {
            into[at].1 += n;
        } else {
            new += 1;
        }
    }
    if new == 0 {
        return;
    }
    let (mut a, mut b) = (into.len(), more.len());
    into.resize(a + new, (0, 0));
    let mut w = into.len();
    while b > 0 {
        let (key, n) = more[b - 1];
        w -= 1;
        if a > 0 && into[a - 1].0 >= key {
            if into[a - 1].0 == key {
                b -= 1; // added above
            }
            into[w] = into[a - 1];
            a -= 1;
        } else {
            into[w] = (key, n);
            b -= 1;
        }
    }
}

fn add_counts<K: Hash + Eq + Clone>(into: &mut OMap<K, i128>, more: &OMap<K, i128>) {
    for (k, n) in &more.items {
        *into.entry(k, || 0) += n;
    }
}

/// `add_string` / `add_lead`: a value not yet kept past the cap counts under "(other)".
fn add_capped<T: Copy + Default>(into: &mut OMap<Vec<u8>, T>, key: &Vec<u8>, limit: usize, add: impl Fn(&mut T)) {
    if let Some(held) = into.get_mut(key) {
        add(held);
    } else if into.len() < limit {
        add(into.push(key.clone(), T::default()));
    } else {
        add(into.entry(&OTHER.to_vec(), T::default));
    }
}

impl Runs {
    fn merge(&mut self, other: &Runs) {
        self.runs += other.runs;
        self.calls += other.calls;
        self.repeated += other.repeated;
        self.longest = self.longest.max(other.longest);
        add_sketch(&mut self.lengths, &other.lengths);
        for (lead, [runs, calls]) in &other.leads.items {
            add_capped(&mut self.leads, lead, LEADS_LIMIT, |held| {
                held[0] += runs;
                held[1] += calls;
            });
        }
    }
}

/// sketch.py `distinct_merge`: the union, trimmed to the 256 smallest (both ascending).
fn distinct_merge(kept: &mut Vec<u64>, other: &[u64]) {
    let other = match kept.last() {
        Some(&largest) if kept.len() >= DISTINCT_K => &other[..other.partition_point(|h| *h < largest)],
        _ => other,
    };
    if other.is_empty() {
        return;
    }
    let mut out = Vec::with_capacity(kept.len() + other.len());
    let (mut a, mut b) = (kept.iter().peekable(), other.iter().peekable());
    loop {
        match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x == y => {
                out.push(**x);
                a.next();
                b.next();
            }
            (Some(x), Some(y)) if x < y => out.push(*a.next().unwrap()),
            (Some(_), Some(_)) | (None, Some(_)) => out.push(*b.next().unwrap()),
            (Some(_), None) => out.push(*a.next().unwrap()),
            (None, None) => break,
        }
    }
    if out.len() > DISTINCT_K {
        out.truncate(DISTINCT_K);
    }
    *kept = out;
}

impl State {
    fn see_ts(&mut self, ts: &Vec<u8>) {
        if self.ts_min.as_ref().is_none_or(|low| ts < low) {
            self.ts_min = Some(ts.clone());
        }
        if self.ts_max.as_ref().is_none_or(|high| ts > high) {
            self.ts_max = Some(ts.clone());
        }
    }

    /// `ClassAgg.merge`: add `other`, which comes later. True if its sample was taken.
    pub fn merge(&mut self, other: State) -> bool {
        self.count += other.count;
        if let Some(ts) = &other.ts_min {
            self.see_ts(ts);
        }
        if let Some(ts) = &other.ts_max {
            self.see_ts(ts);
        }
        for (name, m) in &other.metrics.items {
            let mine = self.metrics.entry(name, || Metric {
                count: 0,
                total: 0,
                low: 0,
                high: 0,
                buckets: Vec::new(),
                decimal: false,
            });
            if m.count == 0 {
                continue;
            }
            if mine.count == 0 {
                (mine.low, mine.high) = (m.low, m.high);
            } else {
                mine.low = mine.low.min(m.low);
                mine.high = mine.high.max(m.high);
            }
            mine.count += m.count;
            mine.total += m.total;
            mine.decimal |= m.decimal;
            add_sketch(&mut mine.buckets, &m.buckets);
        }
        for (name, [yes, count]) in &other.booleans.items {
            let mine = self.booleans.entry(name, || [0, 0]);
            mine[0] += yes;
            mine[1] += count;
        }
        for (name, values) in &other.strings.items {
            let mine = self.strings.entry(name, OMap::default);
            for (value, times) in &values.items {
                add_capped(mine, value, DISTINCT_LIMIT, |held| *held += times);
            }
        }
        add_counts(&mut self.servers, &other.servers);
        for (mine, more) in self.histogram.iter_mut().zip(&other.histogram) {
            *mine += more;
        }
        let mut took = false;
        if let Some((query_time, sample)) = other.sample {
            if self.sample.as_ref().is_none_or(|(mine, _)| query_time >= *mine) {
                self.sample = Some((query_time, sample));
                took = true;
            }
        }
        self.runs.merge(&other.runs);
        self.single_runs.merge(&other.single_runs);
        distinct_merge(&mut self.connections, &other.connections);
        distinct_merge(&mut self.texts, &other.texts);
        for (mine, more) in self.fit.iter_mut().zip(other.fit) {
            *mine += more;
        }
        took
    }

    /// The state in `encode_agg`'s form, `marshal`-ed.
    pub fn dumps(&self) -> Vec<u8> {
        let ints = |m: &Sketch| V::Dict(m.iter().map(|(k, n)| (V::Int(*k), V::Int(*n))).collect());
        let strs =
            |m: &OMap<Vec<u8>, i128>| V::Dict(m.items.iter().map(|(k, n)| (V::Str(k.clone()), V::Int(*n))).collect());
        let pair = |p: &[i128; 2]| V::List(vec![V::Int(p[0]), V::Int(p[1])]);
        let runs = |r: &Runs| {
            V::Tuple(vec![
                V::Int(r.runs),
                V::Int(r.calls),
                V::Int(r.repeated),
                V::Int(r.longest),
                ints(&r.lengths),
                V::Dict(r.leads.items.iter().map(|(k, p)| (V::Str(k.clone()), pair(p))).collect()),
            ])
        };
        let opt = |s: &Option<Vec<u8>>| s.as_ref().map_or(V::None, |s| V::Str(s.clone()));
        let set = |h: &[u64]| V::Set(h.iter().map(|i| V::Int(*i as i128)).collect());
        let value = V::Tuple(vec![
            V::Bytes(self.fingerprint.clone()),
            V::Int(self.count),
            opt(&self.ts_min),
            opt(&self.ts_max),
            V::Dict(
                self.metrics
                    .items
                    .iter()
                    .map(|(name, m)| {
                        let f = vec![
                            V::Int(m.count),
                            V::Int(m.total),
                            V::Int(m.low),
                            V::Int(m.high),
                            ints(&m.buckets),
                            V::Bool(m.decimal),
                        ];
                        (V::Str(name.clone()), V::Tuple(f))
                    })
                    .collect(),
            ),
            V::Dict(self.booleans.items.iter().map(|(k, p)| (V::Str(k.clone()), pair(p))).collect()),
            V::Dict(self.strings.items.iter().map(|(k, m)| (V::Str(k.clone()), strs(m))).collect()),
            strs(&self.servers),
            V::List(self.histogram.iter().map(|i| V::Int(*i)).collect()),
            self.sample.as_ref().map_or(V::None, |(_, items)| V::Tuple(items.clone())),
            runs(&self.runs),
            runs(&self.single_runs),
            set(&self.connections),
            set(&self.texts),
            V::Tuple(self.fit.iter().map(|i| V::Int(*i)).collect()),
        ]);
        let mut out = Vec::with_capacity(4096);
        dumps(&value, &mut out);
        out
    }
}

/// A merged class: its state, the unit its sample came from, and the rows this module
/// could not merge (with their units), to be added in order by Python.
pub struct Merged {
    pub state: Option<State>,
    pub sample_unit: u32,
    pub left: Vec<(Vec<u8>, u32)>,
}

/// Rows added class by class, classes kept in the order they first came.
#[derive(Default)]
pub struct Merge {
    pub classes: Vec<Merged>,
    index: HashMap<Vec<u8>, usize, FixedState>,
}

impl Merge {
    /// Add one stored state (a `marshal` payload) read from unit `unit`.
    pub fn add(&mut self, data: &[u8], unit: u32) -> R<()> {
        let (fingerprint, state) = parse(data)?;
        match state {
            Some(state) => self.add_state(fingerprint, state, unit),
            None => self.keep(fingerprint, data, unit),
        }
        Ok(())
    }

    fn add_state(&mut self, fingerprint: Vec<u8>, mut state: State, unit: u32) {
        match self.index.get(&fingerprint) {
            None => {
                state.fingerprint.clone_from(&fingerprint);
                self.index.insert(fingerprint, self.classes.len());
                self.classes.push(Merged { state: Some(state), sample_unit: unit, left: vec![] });
            }
            Some(&at) => {
                let merged = &mut self.classes[at];
                match merged.state.as_mut() {
                    Some(mine) if merged.left.is_empty() && mine.histogram.len() == state.histogram.len() => {
                        if mine.merge(state) {
                            merged.sample_unit = unit;
                        }
                    }
                    _ => {
                        state.fingerprint = fingerprint;
                        merged.left.push((state.dumps(), unit));
                    }
                }
            }
        }
    }

    /// A row this module does not merge: it and the class's later rows are left to Python.
    pub fn keep(&mut self, fingerprint: Vec<u8>, data: &[u8], unit: u32) {
        match self.index.get(&fingerprint) {
            Some(&at) => self.classes[at].left.push((data.to_vec(), unit)),
            None => {
                self.index.insert(fingerprint, self.classes.len());
                self.classes.push(Merged { state: None, sample_unit: unit, left: vec![(data.to_vec(), unit)] });
            }
        }
    }
}

/// The Python class `govern._native.StoredMerge` (govern/history/merging.py).
#[cfg(feature = "python")]
pub mod python {
    use pyo3::prelude::*;
    use pyo3::types::{PyBytes, PyList};

    #[pyclass(module = "govern._native", name = "StoredMerge")]
    #[derive(Default)]
    pub struct StoredMerge {
        merge: super::Merge,
    }

    #[pymethods]
    impl StoredMerge {
        #[new]
        fn new() -> Self {
            Self::default()
        }

        /// Add stored states (`marshal` payloads) of one unit, in order, from `start`;
        /// returns where it stopped: the length, or a row it cannot read (see `keep`).
        /// The GIL is released while merging: a report's next unit is read meanwhile
        /// (govern/history/prefetch.py).
        fn add(&mut self, py: Python<'_>, payloads: &Bound<'_, PyList>, unit: u32, start: usize) -> PyResult<usize> {
            let items = payloads
                .iter()
                .skip(start)
                .map(|item| item.cast_into::<PyBytes>().map_err(PyErr::from))
                .collect::<PyResult<Vec<_>>>()?;
            let slices: Vec<&[u8]> = items.iter().map(|item| item.as_bytes()).collect();
            let merge = &mut self.merge;
            let stopped = py.detach(|| slices.iter().position(|data| merge.add(data, unit).is_err()));
            Ok(stopped.map_or(start + slices.len(), |at| start + at))
        }

        /// A row `add` could not read (its class's fingerprint read by Python): it and
        /// its class's later rows are handed back by `finish`, for Python to add.
        fn keep(&mut self, fingerprint: Vec<u8>, payload: &[u8], unit: u32) {
            self.merge.keep(fingerprint, payload, unit);
        }

        /// The merged classes in the order they first came: (merged payload or None,
        /// unit of its sample, rows left to add as (payload, unit)).
        #[allow(clippy::type_complexity)]
        fn finish<'py>(
            &mut self,
            py: Python<'py>,
        ) -> Vec<(Option<Bound<'py, PyBytes>>, u32, Vec<(Bound<'py, PyBytes>, u32)>)> {
            let merge = std::mem::take(&mut self.merge);
            merge
                .classes
                .into_iter()
                .map(|c| {
                    (
                        c.state.map(|s| PyBytes::new(py, &s.dumps())),
                        c.sample_unit,
                        c.left.into_iter().map(|(d, u)| (PyBytes::new(py, &d), u)).collect(),
                    )
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_round_trip() {
        for i in [0i128, 1, -1, 1 << 31, -(1 << 40), (1 << 64) - 1, 123_456_789_012_345_678] {
            let mut out = vec![];
            dumps(&V::Int(i), &mut out);
            match loads(&out).unwrap() {
                V::Int(j) => assert_eq!(i, j),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn capped_counts_fold_into_other() {
        let mut map: OMap<Vec<u8>, i128> = OMap::default();
        for i in 0..DISTINCT_LIMIT + 5 {
            add_capped(&mut map, &format!("v{i}").into_bytes(), DISTINCT_LIMIT, |n| *n += 2);
        }
        assert_eq!(map.len(), DISTINCT_LIMIT + 1);
        assert_eq!(*map.get_mut(&OTHER.to_vec()).unwrap(), 10);
        add_capped(&mut map, &b"v3".to_vec(), DISTINCT_LIMIT, |n| *n += 1);
        assert_eq!(*map.get_mut(&b"v3".to_vec()).unwrap(), 3);
    }

    #[test]
    fn sketches_add_in_place_as_a_merge() {
        let cases: Vec<(Sketch, Sketch)> = vec![
            (vec![(1, 1), (3, 2)], vec![(1, 5), (3, 1)]),
            (vec![(1, 1), (3, 2)], vec![(0, 1), (2, 1), (4, 1)]),
            (vec![(2, 1)], vec![(0, 1), (1, 1), (2, 7), (9, 1)]),
            (vec![(5, 1), (6, 1)], vec![(1, 1)]),
            (vec![(5, 1), (6, 1)], vec![(7, 3), (8, 1)]),
            (vec![], vec![(1, 1)]),
        ];
        for (a, b) in cases {
            let mut want = std::collections::BTreeMap::new();
            for (k, n) in a.iter().chain(&b) {
                *want.entry(*k).or_insert(0) += n;
            }
            let mut got = a.clone();
            add_sketch(&mut got, &b);
            assert_eq!(got, want.into_iter().collect::<Vec<_>>(), "{a:?} + {b:?}");
        }
    }

    #[test]
    fn distinct_keeps_smallest() {
        let mut kept: Vec<u64> = (0..256).map(|i| i * 2).collect();
        distinct_merge(&mut kept, &[1, 3, 1000]);
        assert_eq!(kept.len(), DISTINCT_K);
        assert_eq!(&kept[..4], &[0, 1, 2, 3]);
        assert_eq!(*kept.last().unwrap(), 506);
    }
}
