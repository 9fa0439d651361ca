//! From events to class aggregates, following pt-query-digest's pipeline: events
//! without a query are skipped, `db` falls back to `Schema`, `db` and `ts` are
//! inherited from earlier events, administrator commands have their row counts
//! zeroed, rate-limit attributes are not metrics, and the rest is aggregated per
//! fingerprint.
//!
//! A log is digested in `Part`s, consecutive byte ranges that each start where pt's
//! reader would stand (a record boundary, nothing pending). A part cannot know the
//! `db` and `ts` its first events inherit: it counts them as unknown, and `merge`
//! resolves them with what the earlier parts ended with. Merging parts in order gives
//! exactly the digest of the whole log (tests/parts.rs checks it on every corpus file).

use std::collections::VecDeque;

use crate::aggregate::{AttrTable, ClassStats, Classes, Kind, Sample, Slot};
use crate::fingerprint::Fingerprinter;
use crate::number::{parse_number, parse_query_time, Num};
use crate::perl::truthy;
use crate::slowlog::{Event, Known, Parser, Value};

/// pt's default `--ignore-attributes`, plus what govern reads separately
/// (`db`, `Schema`, `user`, `host`, `ts`) and parser bookkeeping.
const NOT_METRICS: &[&[u8]] = &[
    b"arg",
    b"cmd",
    b"insert_id",
    b"ip",
    b"port",
    b"Thread_id",
    b"timestamp",
    b"exptime",
    b"flags",
    b"key",
    b"res",
    b"val",
    b"server_id",
    b"offset",
    b"end_log_pos",
    b"Xid",
    b"pos_in_log",
    b"db",
    b"Schema",
    b"user",
    b"host",
    b"ts",
    b"fingerprint",
    b"last_insert_id",
];

/// Attributes that are always numbers: any other value is counted as malformed.
const NUMERIC: &[&[u8]] =
    &[b"Query_time", b"Lock_time", b"Rows_sent", b"Rows_examined", b"Rows_affected", b"Bytes_sent"];

/// Row counts pt zeroes for administrator commands.
const ADMIN_ZEROED: &[&[u8]] = &[b"Rows_sent", b"Rows_examined", b"Rows_read", b"Rows_affected"];

/// What `db`/`ts` an event has after pt's inheritance: its own, one inherited within
/// this part, or one inherited from an earlier part (unknown until merged).
#[derive(Clone, Debug, PartialEq)]
enum Inherited<T> {
    Unknown,
    Known(T),
}

/// The digest of one part of a log (or of a whole log once parts are merged).
pub struct Part {
    pub classes: Classes,
    pub attrs: AttrTable,
    /// Events aggregated.
    pub events: u64,
    /// Events pt skips because they have no query text.
    pub no_query: u64,
    /// Values of always-numeric attributes that are not numbers (not aggregated), and
    /// where the first one is.
    pub bad_values: u64,
    pub first_bad_value: Option<u64>,
    /// The `db` and time in force at the end of the part, if the part set them.
    pub last_db: Option<Box<[u8]>>,
    pub last_ts: Option<i64>,
    /// Where the part's reader stopped, and what it had read ahead (normally nothing).
    pub end_pos: usize,
    pub end_pending: VecDeque<Vec<u8>>,
}

impl Part {
    pub fn new(max_classes: usize) -> Self {
        Part {
            classes: Classes::new(max_classes),
            attrs: AttrTable::default(),
            events: 0,
            no_query: 0,
            bad_values: 0,
            first_bad_value: None,
            last_db: None,
            last_ts: None,
            end_pos: 0,
            end_pending: VecDeque::new(),
        }
    }

    /// Append `later`, the part that follows this one in the log.
    pub fn merge(&mut self, mut later: Part) {
        let map: Vec<u16> = later.attrs.names().iter().map(|(n, k)| self.attrs.id(n, *k)).collect();
        let fingerprints = std::mem::take(&mut later.classes.fingerprints);
        let stats = std::mem::take(&mut later.classes.stats);
        for (fp, mut st) in fingerprints.into_iter().zip(stats) {
            self.resolve_inherited(&mut st);
            let slot = self.classes.slot(&fp);
            if slot == Slot::Other {
                self.classes.other_fingerprints += st.count;
            }
            self.classes.get(slot).merge(&st, &map);
        }
        let mut other = std::mem::take(&mut later.classes.other);
        self.resolve_inherited(&mut other);
        self.classes.other.merge(&other, &map);
        self.classes.other_fingerprints += later.classes.other_fingerprints;
        self.events += later.events;
        self.no_query += later.no_query;
        self.bad_values += later.bad_values;
        self.first_bad_value = self.first_bad_value.or(later.first_bad_value);
        if later.last_db.is_some() {
            self.last_db = later.last_db;
        }
        if later.last_ts.is_some() {
            self.last_ts = later.last_ts;
        }
        self.end_pos = later.end_pos;
        self.end_pending = later.end_pending;
    }

    /// Give a later part's first events the db and time this part ended with.
    fn resolve_inherited(&self, st: &mut ClassStats) {
        if st.db_unknown > 0 {
            if let Some(db) = &self.last_db {
                st.db.add(db, st.db_unknown);
                st.db_unknown = 0;
            }
        }
        if st.time_unknown > 0 {
            if let Some(t) = self.last_ts {
                st.seen_at(t);
                st.time_unknown = 0;
            }
        }
        if let Some(s) = &mut st.sample {
            if s.ts.is_none() {
                s.ts = self.last_ts;
            }
            if s.db.is_none() {
                s.db = self.last_db.clone();
            }
        }
    }
}

/// What the digest does with one attribute name, decided once per name.
struct KeyInfo {
    name: Box<[u8]>,
    /// Not a metric (pt's ignored attributes and the ones read separately).
    skip: bool,
    query_time: bool,
    admin_zeroed: bool,
    always_numeric: bool,
    rate_limit: bool,
    num_id: Option<u16>,
    bool_id: Option<u16>,
}

/// Attribute names of recent events: logs repeat the same header lines in the same
/// order, so the info for the k-th property is usually the previous event's k-th.
#[derive(Default)]
struct KeyCache {
    infos: Vec<KeyInfo>,
    by_name: hashbrown::HashMap<Box<[u8]>, usize, foldhash::fast::FixedState>,
    by_position: Vec<usize>,
}

impl KeyCache {
    #[inline]
    fn lookup(&mut self, position: usize, key: &[u8]) -> usize {
        if let Some(&i) = self.by_position.get(position) {
            if &self.infos[i].name[..] == key {
                return i;
            }
        }
        let i = match self.by_name.get(key) {
            Some(&i) => i,
            None => {
                self.infos.push(KeyInfo {
                    name: key.into(),
                    skip: NOT_METRICS.contains(&key),
                    query_time: key == b"Query_time",
                    admin_zeroed: ADMIN_ZEROED.contains(&key),
                    always_numeric: NUMERIC.contains(&key),
                    rate_limit: key == b"Log_slow_rate_limit" || key == b"Log_slow_rate_type",
                    num_id: None,
                    bool_id: None,
                });
                self.by_name.insert(key.into(), self.infos.len() - 1);
                self.infos.len() - 1
            }
        };
        if self.by_position.len() <= position {
            self.by_position.resize(position + 1, usize::MAX);
        }
        self.by_position[position] = i;
        i
    }
}

/// Turns parsed events into a `Part`.
pub struct Digester {
    part: Part,
    keys: KeyCache,
    fp: Fingerprinter,
    db: Inherited<Option<Box<[u8]>>>,
    ts: Inherited<Option<i64>>,
    ts_cache: (Vec<u8>, Option<i64>),
}

impl Digester {
    pub fn new(max_classes: usize) -> Self {
        Digester {
            part: Part::new(max_classes),
            keys: KeyCache::default(),
            fp: Fingerprinter::new(),
            db: Inherited::Unknown,
            ts: Inherited::Unknown,
            ts_cache: (Vec::new(), None),
        }
    }

    pub fn add(&mut self, ev: &Event) {
        let Some(arg) = ev.arg().filter(|a| truthy(a)) else {
            self.part.no_query += 1;
            return;
        };
        // --attribute-aliases db|Schema, then --inherit-attributes db,ts.
        if let Some(db) = ev.known(Known::Db).or_else(|| ev.known(Known::Schema)) {
            if !matches!(&self.db, Inherited::Known(Some(d)) if &d[..] == db) {
                self.db = Inherited::Known(Some(db.into()));
            }
        }
        if let Some(ts) = ev.known(Known::Ts) {
            if self.ts_cache.0 != ts {
                self.ts_cache = (ts.to_vec(), parse_ts(ts));
            }
            // An unparsable ts is still inherited as pt's value; it has no time.
            self.ts = Inherited::Known(self.ts_cache.1);
        }
        let fingerprint = self.fp.fingerprint(arg);
        let part = &mut self.part;
        let slot = part.classes.slot(fingerprint);
        part.events += 1;
        let admin = arg.starts_with(b"administrator");
        let rate_limited = ev.known(Known::RateLimit).is_some_and(truthy);
        let mut query_time = None;
        let attrs = &mut part.attrs;
        let class = match slot {
            Slot::Class(i) => &mut part.classes.stats[i as usize],
            Slot::Other => &mut part.classes.other,
        };
        class.count += 1;
        for (position, (key, value)) in ev.iter().enumerate() {
            let Some(value) = value else { continue };
            let k = self.keys.lookup(position, key);
            let info = &mut self.keys.infos[k];
            if info.skip || (rate_limited && info.rate_limit) {
                continue;
            }
            let num = match value {
                Value::Num(n) => Some(Num { value: n as f64, nanos: Some(n as i128 * 1_000_000_000) }),
                Value::Bytes(b) if info.query_time => parse_query_time(b),
                Value::Bytes(b) => parse_number(b),
            };
            if let Some(mut n) = num {
                if admin && info.admin_zeroed {
                    n = Num { value: 0.0, nanos: Some(0) };
                }
                if info.query_time {
                    query_time = Some(n.value);
                }
                let id = *info.num_id.get_or_insert_with(|| attrs.id(key, Kind::Num));
                class.num(id).add(n);
            } else if let Value::Bytes(text @ (b"Yes" | b"No")) = value {
                let id = *info.bool_id.get_or_insert_with(|| attrs.id(key, Kind::Bool));
                class.add_bool(id, text == b"Yes");
            } else if info.always_numeric {
                part.bad_values += 1;
                part.first_bad_value.get_or_insert(ev.pos_in_log);
            }
        }
        if let Some(user) = ev.known(Known::User) {
            class.user.add(user, 1);
        }
        if let Some(host) = ev.known(Known::Host) {
            class.host.add(host, 1);
        }
        match &self.db {
            Inherited::Known(Some(db)) => class.db.add(db, 1),
            Inherited::Known(None) => {}
            Inherited::Unknown => class.db_unknown += 1,
        }
        match self.ts {
            Inherited::Known(Some(t)) => class.seen_at(t),
            Inherited::Known(None) => {}
            Inherited::Unknown => class.time_unknown += 1,
        }
        let qt = query_time.unwrap_or(0.0);
        if class.sample.as_ref().is_none_or(|s| qt >= s.query_time) {
            class.sample = Some(Sample {
                query_time: qt,
                query: arg.into(),
                ts: match self.ts {
                    Inherited::Known(t) => t,
                    Inherited::Unknown => None,
                },
                db: match &self.db {
                    Inherited::Known(d) => d.clone(),
                    Inherited::Unknown => None,
                },
                pos_in_log: ev.pos_in_log,
            });
        }
    }

    /// The part, with the db and time in force at its end.
    pub fn finish(mut self) -> Part {
        if let Inherited::Known(db) = self.db {
            self.part.last_db = db;
        }
        if let Inherited::Known(ts) = self.ts {
            self.part.last_ts = ts;
        }
        self.part
    }
}

/// Digest `data[start..]` from a reader standing at `start` with `pending` read ahead,
/// until the reader passes `end` with nothing pending.
pub fn digest_range(data: &[u8], start: usize, pending: VecDeque<Vec<u8>>, end: usize, max_classes: usize) -> Part {
    digest_window(data, 0, start, pending, end, max_classes).0
}

/// `digest_range` on a window of the input that starts at offset `base`; also says
/// whether a read ran into the end of the window (see `Parser::hit_end`).
pub fn digest_window(
    data: &[u8],
    base: u64,
    start: usize,
    pending: VecDeque<Vec<u8>>,
    end: usize,
    max_classes: usize,
) -> (Part, bool) {
    let mut parser = Parser::with_pending(data, start, pending);
    parser.set_base(base);
    let mut d = Digester::new(max_classes);
    while parser.pos() < end || parser.has_pending() {
        match parser.next_event() {
            Some(ev) => d.add(&ev),
            None => break,
        }
    }
    let hit_end = parser.hit_end();
    let (end_pos, end_pending) = parser.into_state();
    let mut part = d.finish();
    part.end_pos = end_pos;
    part.end_pending = end_pending;
    (part, hit_end)
}

/// pt's `ts` (`YYMMDD HH:MM:SS`, hour possibly space-padded, or ISO
/// `YYYY-MM-DD[T ]HH:MM:SS`) as seconds since 1970 in the log's own time zone.
pub fn parse_ts(ts: &[u8]) -> Option<i64> {
    let num = |s: &[u8]| -> Option<i64> {
        let t = s.iter().skip_while(|&&b| b == b' ').copied().collect::<Vec<u8>>();
        if t.is_empty() || !t.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(t.iter().fold(0i64, |n, &d| n * 10 + (d - b'0') as i64))
    };
    let (y, mo, d, rest) = if ts.len() == 19 && ts[4] == b'-' && ts[7] == b'-' {
        (num(&ts[0..4])?, num(&ts[5..7])?, num(&ts[8..10])?, &ts[11..])
    } else if ts.len() == 15 && ts[6] == b' ' {
        (2000 + num(&ts[0..2])?, num(&ts[2..4])?, num(&ts[4..6])?, &ts[7..])
    } else {
        return None;
    };
    // rest: "HH:MM:SS" or " H:MM:SS"
    let mut f = rest.split(|&b| b == b':');
    let (h, mi, s) = (num(f.next()?)?, num(f.next()?)?, num(f.next()?)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_of_both_formats() {
        assert_eq!(parse_ts(b"071218 11:48:27"), Some(1_197_978_507));
        assert_eq!(parse_ts(b"071218  1:48:27"), Some(1_197_942_507));
        assert_eq!(parse_ts(b"2007-12-18T11:48:27"), Some(1_197_978_507));
        assert_eq!(parse_ts(b"2007-12-18 11:48:27"), Some(1_197_978_507));
        assert_eq!(parse_ts(b"071318 11:48:27"), None);
    }
}
