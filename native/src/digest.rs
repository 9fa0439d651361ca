//! From events to class aggregates, following govern's digest spec (docs/digest.md,
//! issue 4), which follows pt-query-digest's pipeline: events without a statement are
//! skipped (counted), `db` is the `use` value else `Schema` (backticks stripped), `db`
//! and `ts` are inherited from earlier events, administrator commands have their row
//! counts zeroed, and the rest is aggregated per fingerprint: numbers (micro-units),
//! Yes/No flags, value counts of text attributes.
//!
//! A log is digested in `Part`s, consecutive byte ranges that each start where pt's
//! reader would stand (a record boundary, nothing pending). A part cannot know the
//! `db` and `ts` its first events inherit: it counts them as unknown, and `merge`
//! resolves them with what the earlier parts ended with. Merging parts in order gives
//! exactly the digest of the whole log (tests/parts.rs checks it on every corpus file).

use std::collections::VecDeque;

use crate::aggregate::{AttrTable, ClassStats, Classes, Interner, Kind, Sample, Slot};
use crate::fingerprint::Fingerprinter;
use crate::number::{classify, Typed};
use crate::perl::truthy;
use crate::slowlog::{Event, Known, Parser};

/// Not workload measures (pt's --ignore-attributes and a few more, as the Python
/// engine's `IGNORED`), plus what is read separately (`db`, `user`, `host`, `ts`,
/// `bytes`) and parser bookkeeping.
const IGNORED: &[&[u8]] = &[
    b"arg",
    b"cmd",
    b"insert_id",
    b"last_insert_id",
    b"ip",
    b"port",
    b"Thread_id",
    b"Id",
    b"timestamp",
    b"exptime",
    b"flags",
    b"key_print",
    b"res",
    b"val",
    b"server_id",
    b"offset",
    b"end_log_pos",
    b"Xid",
    b"Schema",
    b"Start",
    b"End",
    b"Time",
    b"InnoDB_trx_id",
    b"pos_in_log",
    b"db",
    b"user",
    b"host",
    b"ts",
    b"bytes",
];

/// Counted by value even when their values are numbers.
const CATEGORICAL: &[&[u8]] =
    &[b"Errno", b"Last_errno", b"Error_no", b"Killed", b"Log_slow_rate_limit", b"Log_slow_rate_type"];

/// Row counts pt zeroes for administrator commands.
const ADMIN_ZEROED: &[&[u8]] = &[b"Rows_sent", b"Rows_examined", b"Rows_read", b"Rows_affected"];

/// What `db`/`ts` an event has after pt's inheritance: its own, one inherited within
/// this part, or one inherited from an earlier part (unknown until merged).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Inherited<T> {
    Unknown,
    Known(T),
}

/// The digest of one part of a log (or of a whole log once parts are merged).
pub struct Part {
    pub classes: Classes,
    pub attrs: AttrTable,
    /// Text values (db, user, host, …), interned.
    pub texts: Interner,
    /// Events aggregated.
    pub events: u64,
    /// Events pt skips because they have no statement.
    pub no_query: u64,
    /// Events whose Query_time is not a number: counted, not aggregated; where the
    /// first one starts.
    pub malformed: u64,
    pub first_malformed: Option<u64>,
    /// The `db` (interned) and time in force at the end of the part, if the part set
    /// them (a time can be set but unreadable: `Some(None)`).
    pub last_db: Option<u32>,
    pub last_ts: Option<Option<i64>>,
    /// Where the part's reader stopped, and what it had read ahead (normally nothing).
    pub end_pos: usize,
    pub end_pending: VecDeque<Vec<u8>>,
}

impl Part {
    pub fn new(max_classes: usize) -> Self {
        Part {
            classes: Classes::new(max_classes),
            attrs: AttrTable::default(),
            texts: Interner::default(),
            events: 0,
            no_query: 0,
            malformed: 0,
            first_malformed: None,
            last_db: None,
            last_ts: None,
            end_pos: 0,
            end_pending: VecDeque::new(),
        }
    }

    /// Append `later`, the part that follows this one in the log.
    pub fn merge(&mut self, mut later: Part) {
        let attr = self.attrs.map_from(&later.attrs);
        let text: Vec<u32> = (0..later.texts.len() as u32).map(|i| self.texts.id(later.texts.get(i))).collect();
        let db_attr = self.attrs.id(b"db", Kind::Text);
        let fingerprints = std::mem::take(&mut later.classes.fingerprints);
        let stats = std::mem::take(&mut later.classes.stats);
        for (fp, st) in fingerprints.into_iter().zip(stats) {
            let slot = self.classes.slot(&fp);
            if slot == Slot::Other {
                self.classes.other_events += st.count;
            }
            self.merge_class(slot, st, &attr, &text, db_attr);
        }
        let other = std::mem::take(&mut later.classes.other);
        self.merge_class(Slot::Other, other, &attr, &text, db_attr);
        self.classes.other_events += later.classes.other_events;
        self.events += later.events;
        self.no_query += later.no_query;
        self.malformed += later.malformed;
        self.first_malformed = self.first_malformed.or(later.first_malformed);
        if let Some(db) = later.last_db {
            self.last_db = Some(text[db as usize]);
        }
        if later.last_ts.is_some() {
            self.last_ts = later.last_ts;
        }
        self.end_pos = later.end_pos;
        self.end_pending = later.end_pending;
    }

    /// Merge a later part's class, first giving its leading events the db and time
    /// this part ended with.
    fn merge_class(&mut self, slot: Slot, st: ClassStats, attr: &[Vec<u16>; 3], text: &[u32], db_attr: u16) {
        let (last_db, last_ts) = (self.last_db, self.last_ts);
        let target = self.classes.get(slot);
        let took_sample = target.merge(&st, attr, text);
        if st.db_unknown > 0 {
            if let Some(db) = last_db {
                target.text(db_attr, db, st.db_unknown);
                target.db_unknown -= st.db_unknown;
            }
        }
        if st.time_unknown > 0 {
            if let Some(t) = last_ts {
                if let Some(t) = t {
                    target.seen_at(t);
                }
                target.time_unknown -= st.time_unknown;
            }
        }
        // The sample just taken from `st` may inherit; resolve it in place.
        if let (true, Some(mine)) = (took_sample, &mut target.sample) {
            if mine.ts_inherited {
                if let Some(t) = last_ts {
                    mine.ts = t;
                    mine.ts_inherited = false;
                }
            }
            if mine.db_inherited && last_db.is_some() {
                mine.db = last_db;
                mine.db_inherited = false;
            }
        }
    }
}

/// What the digest does with one attribute name, decided once per name.
pub(crate) struct KeyInfo {
    pub(crate) name: Box<[u8]>,
    pub(crate) ignored: bool,
    pub(crate) categorical: bool,
    pub(crate) admin_zeroed: bool,
    pub(crate) num_id: Option<u16>,
    pub(crate) flag_id: Option<u16>,
    pub(crate) text_id: Option<u16>,
}

/// Attribute names of recent events: logs repeat the same header lines in the same
/// order, so the info for the k-th property is usually the previous event's k-th.
#[derive(Default)]
pub(crate) struct KeyCache {
    pub(crate) infos: Vec<KeyInfo>,
    by_name: hashbrown::HashMap<Box<[u8]>, usize, foldhash::fast::FixedState>,
    by_position: Vec<usize>,
}

impl KeyCache {
    #[inline]
    pub(crate) fn lookup(&mut self, position: usize, key: &[u8]) -> usize {
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
                    ignored: IGNORED.contains(&key),
                    categorical: CATEGORICAL.contains(&key),
                    admin_zeroed: ADMIN_ZEROED.contains(&key),
                    num_id: None,
                    flag_id: None,
                    text_id: None,
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
    db: Inherited<Option<u32>>,
    ts: Inherited<Option<i64>>,
    ts_cache: (Vec<u8>, Option<i64>),
    db_attr: u16,
    user_attr: u16,
    host_attr: u16,
    query_length_attr: u16,
    /// Where the part starts in the input, and events seen: a sample's place in the log.
    start: u64,
    seen: u64,
}

impl Digester {
    /// A digester for a part that starts at input offset `start`.
    pub fn new(max_classes: usize, start: u64) -> Self {
        let mut part = Part::new(max_classes);
        let db_attr = part.attrs.id(b"db", Kind::Text);
        let user_attr = part.attrs.id(b"user", Kind::Text);
        let host_attr = part.attrs.id(b"host", Kind::Text);
        let query_length_attr = part.attrs.id(b"Query_length", Kind::Num);
        Digester {
            part,
            keys: KeyCache::default(),
            fp: Fingerprinter::new(),
            db: Inherited::Unknown,
            ts: Inherited::Unknown,
            ts_cache: (Vec::new(), None),
            db_attr,
            user_attr,
            host_attr,
            query_length_attr,
            start,
            seen: 0,
        }
    }

    pub fn add(&mut self, ev: &Event) {
        self.seen += 1;
        let Some(arg) = ev.arg().filter(|a| truthy(a)) else {
            self.part.no_query += 1;
            return;
        };
        // A Query_time that is not a number makes the event malformed.
        let query_time = match ev.get_bytes(b"Query_time").map(classify) {
            Some(Typed::Num(v)) => Some(v),
            None => None,
            Some(_) => {
                self.part.malformed += 1;
                self.part.first_malformed.get_or_insert(ev.pos_in_log);
                return;
            }
        };
        // --attribute-aliases db|Schema, then --inherit-attributes db,ts.
        if let Some(db) = ev.known(Known::Db).or_else(|| ev.known(Known::Schema)) {
            let db: Vec<u8> = db.iter().copied().filter(|&b| b != b'`').collect();
            self.db = Inherited::Known(Some(self.part.texts.id(&db)));
        }
        if let Some(ts) = ev.known(Known::Ts) {
            if self.ts_cache.0 != ts {
                self.ts_cache = (ts.to_vec(), parse_ts(ts));
            }
            // An unreadable ts is still inherited as pt's value; it has no time.
            self.ts = Inherited::Known(self.ts_cache.1);
        }
        let fingerprint = self.fp.fingerprint(arg);
        let part = &mut self.part;
        let slot = part.classes.slot(fingerprint);
        part.events += 1;
        let admin = arg.starts_with(b"administrator");
        let (attrs, texts) = (&mut part.attrs, &mut part.texts);
        let class = match slot {
            Slot::Class(i) => &mut part.classes.stats[i as usize],
            Slot::Other => &mut part.classes.other,
        };
        class.count += 1;
        let mut num_buf = crate::slowlog::itoa_buf::Buf::default();
        for (position, (key, value)) in ev.iter().enumerate() {
            let Some(value) = value else { continue };
            let k = self.keys.lookup(position, key);
            let info = &mut self.keys.infos[k];
            if info.ignored {
                continue;
            }
            let raw = value.as_bytes(&mut num_buf);
            let typed = if info.categorical { Typed::Text } else { classify(raw) };
            match typed {
                Typed::Num(v) => {
                    let v = if admin && info.admin_zeroed { 0 } else { v };
                    let id = *info.num_id.get_or_insert_with(|| attrs.id(key, Kind::Num));
                    class.num(id).add(v);
                }
                Typed::Yes | Typed::No => {
                    let id = *info.flag_id.get_or_insert_with(|| attrs.id(key, Kind::Flag));
                    class.flag(id, typed == Typed::Yes);
                }
                Typed::Text => {
                    let id = *info.text_id.get_or_insert_with(|| attrs.id(key, Kind::Text));
                    class.text(id, texts.id(raw), 1);
                }
            }
        }
        class.num(self.query_length_attr).add(arg.len() as i128 * 1_000_000);
        if let Some(user) = ev.known(Known::User) {
            class.text(self.user_attr, texts.id(user), 1);
        }
        if let Some(host) = ev.known(Known::Host) {
            class.text(self.host_attr, texts.id(host), 1);
        }
        match self.db {
            Inherited::Known(Some(db)) => class.text(self.db_attr, db, 1),
            Inherited::Known(None) => {}
            Inherited::Unknown => class.db_unknown += 1,
        }
        match self.ts {
            Inherited::Known(Some(t)) => class.seen_at(t),
            Inherited::Known(None) => {}
            Inherited::Unknown => class.time_unknown += 1,
        }
        let qt = query_time.unwrap_or(0);
        let order = (self.start, self.seen);
        let candidate = Sample { query_time: qt, order, ..Sample::default() };
        if class.sample.as_deref().is_none_or(|s| candidate.beats(s)) {
            class.sample = Some(Box::new(Sample {
                order,
                query_time: qt,
                query: arg.into(),
                ts: match self.ts {
                    Inherited::Known(t) => t,
                    Inherited::Unknown => None,
                },
                db: match self.db {
                    Inherited::Known(d) => d,
                    Inherited::Unknown => None,
                },
                pos_in_log: ev.pos_in_log,
                ts_inherited: self.ts == Inherited::Unknown,
                db_inherited: self.db == Inherited::Unknown,
            }));
        }
    }

    /// The part, with the db and time in force at its end.
    pub fn finish(mut self) -> Part {
        if let Inherited::Known(db) = self.db {
            self.part.last_db = db;
        }
        if let Inherited::Known(ts) = self.ts {
            self.part.last_ts = Some(ts);
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
    let mut d = Digester::new(max_classes, base + start as u64);
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
