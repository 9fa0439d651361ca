//! The digester: one byte range of a log digested exactly as govern's Python engine
//! digests it (`govern.digest.engine.digest_range`, specified in
//! docs/design/digest-engines.md): the range's records, every per-class figure
//! (`class.rs`), runs still open at the range's ends, line numbers counted from the
//! range's start. `total.rs` merges ranges in input
//! order, so any cut of a log gives the same digest.
//!
//! The per-event rules are those of `Digester._aggregate` and `_flush` in
//! govern/digest/engine.py, done event by event instead of in batches: every cap
//! (1,000 values, 100 leads, the class cap) keeps values in order of first
//! appearance, which is what the batches give too.

/// Maps with a fast fixed hasher (keys are not attacker-chosen in a way that matters here).
type HashMap<K, V> = hashbrown::HashMap<K, V, foldhash::fast::FixedState>;

use memchr::memchr_iter;

use crate::aggregate::Interner;
use crate::attributes::KeyCache;
use crate::class::{histogram_index, Class, SAMPLE_LIMIT};
use crate::filemap::Bytes;
use crate::fingerprint::Fingerprinter;
use crate::hashes::{crc32, mix64, text_hash};
use crate::kinds::{count_tuples, is_py_space, statement_kind, INSERT, READ};
use crate::number::{classify, Typed};
use crate::perl::truthy;
use crate::slowlog::{Event, Known, Parser};
use crate::time::{normalize_time, Ts};

/// A run on a connection: (fingerprint id or none, length, class, lead).
#[derive(Clone, Copy, Debug)]
pub struct Run {
    pub key: Option<u32>,
    pub length: u64,
    pub class: u32,
    pub lead: Option<u32>,
}

/// One connection's runs in this range (engine.py `current_run`, `first_run`, …).
#[derive(Debug)]
pub struct Conn {
    /// `connection_number` of its Thread_id: `0042` and `42` are one connection.
    pub number: u64,
    hash: u64,
    pub run: Run,
    pub first_run: Option<Run>,
    pub single: Run,
    pub first_single: Option<Run>,
}

/// Why an event is malformed: cut short by the end of the input, or its Query_time.
#[derive(Debug)]
pub enum Bad {
    Truncated,
    QueryTime(Vec<u8>),
}

const OTHER: u32 = u32::MAX;
/// `class_of` of a fingerprint no kept event has had yet (its class is made by the first).
const UNSEEN: u32 = u32::MAX - 1;
/// `class_of` of a fingerprint a `--filter` on fingerprints or ids leaves out.
const DROPPED: u32 = u32::MAX - 2;

/// The result of one range.
pub struct RangeDigest {
    pub fingerprints: Interner,
    /// Per fingerprint id: its class index, or `OTHER`.
    class_of: Vec<u32>,
    /// Classes in order of first appearance, with their fingerprint ids.
    pub classes: Vec<(u32, Class)>,
    pub other: Option<Class>,
    pub num_names: Interner,
    pub flag_names: Interner,
    pub text_names: Interner,
    pub texts: Interner,
    pub events: u64,
    pub no_statement: u64,
    /// Server banners read as record boundaries (in the records digested here).
    pub banners: u64,
    /// Events `--since`, `--until` or `--filter` left out.
    pub filtered: u64,
    /// The reader's first events that needed the context before the range (engine.py's
    /// `deferred`): left out here, digested again by the merge once the context is known.
    pub deferred_events: u64,
    pub malformed: Vec<(u64, u64, Bad)>,
    pub minutes: Vec<(Ts, u64, i128)>,
    minute_index: HashMap<[u8; 16], usize>,
    pub minutes_unknown: (u64, i128),
    /// The minute of the last event and its index in `minutes` (events come in runs).
    last_minute: ([u8; 16], usize),
    pub last_ts: Option<Ts>,
    pub last_db: Option<u32>,
    pub ts_known: bool,
    pub db_known: bool,
    pub conns: Vec<Conn>,
    conn_index: HashMap<u64, usize>,
    pub end: usize,
    pub newlines: u64,
}

/// What a range needs besides its bytes (engine.py `EngineOptions`, `Context`).
pub struct RangeOptions<'a> {
    pub max_classes: usize,
    pub context_ts: Option<&'a [u8]>,
    pub context_db: Option<&'a [u8]>,
    pub context_known: bool,
    /// `zlib.crc32(server) << 32` for a `--host` label, else 0.
    pub server_salt: u64,
    /// `--since` and `--until` as `YYYY-MM-DD HH:MM:SS`: events at or after, before.
    pub since: Option<&'a [u8]>,
    pub until: Option<&'a [u8]>,
    pub filters: Option<&'a Filters<'a>>,
    /// Digest only the first this-many events the reader gives: a range's deferred head,
    /// digested again with its context (`RangeDigest::deferred_events`).
    pub max_events: Option<u64>,
}

impl Default for RangeOptions<'_> {
    fn default() -> Self {
        RangeOptions {
            max_classes: 10_000,
            context_ts: None,
            context_db: None,
            context_known: false,
            server_salt: 0,
            since: None,
            until: None,
            filters: None,
            max_events: None,
        }
    }
}

impl RangeOptions<'_> {
    /// Filters read the inherited ts (engine.py `needs_ts`).
    fn needs_ts(&self) -> bool {
        self.since.is_some() || self.until.is_some()
    }

    fn needs_db(&self) -> bool {
        self.filters.is_some_and(|f| f.needs_db)
    }
}

/// `--filter` conditions, decided by the caller (govern/digest/filters.py: Python's glob
/// and regular expressions); a range asks once per distinct (db, user, host) and once per
/// fingerprint.
pub struct Filters<'a> {
    /// A condition on db (which events inherit from the ones before them).
    pub needs_db: bool,
    /// Decides the conditions on db, user and host, if any.
    pub keep_event: Option<&'a KeepEvent<'a>>,
    /// Decides the conditions on the fingerprint or query ID, if any.
    pub keep_class: Option<&'a KeepClass<'a>>,
}

/// Keep an event of this db, user and host (each as the log wrote it, db without
/// backticks)?
pub type KeepEvent<'a> = dyn Fn(Option<&[u8]>, Option<&[u8]>, Option<&[u8]>) -> bool + Sync + 'a;
/// Keep the events of this fingerprint?
pub type KeepClass<'a> = dyn Fn(&[u8]) -> bool + Sync + 'a;

struct Ids {
    query_length: u16,
    values_rows: u16,
    db: u16,
    user: u16,
    host: u16,
}

/// What an event's head says before it is aggregated (engine.py `_aggregate`, first
/// lines): a record cut short by the end of the input (no statement, or only spaces) is
/// malformed, an event without a statement is dropped as pt does, a Query_time that is
/// not a non-negative number makes it malformed.
enum Head<'e> {
    Truncated,
    NoStatement,
    BadQueryTime(&'e [u8]),
    Statement(&'e [u8], Option<i128>),
}

fn head<'e>(ev: &'e Event) -> Head<'e> {
    let arg = match ev.arg() {
        a if ev.at_end && a.is_none_or(|a| a.iter().all(|&b| is_py_space(b))) => return Head::Truncated,
        Some(a) if truthy(a) => a,
        _ => return Head::NoStatement,
    };
    match ev.known(Known::QueryTime) {
        None => Head::Statement(arg, None),
        Some(raw) => match classify(raw) {
            Typed::Num(v) if v >= 0 => Head::Statement(arg, Some(v)),
            _ => Head::BadQueryTime(raw),
        },
    }
}

/// `texts.id(v)`, first checking the id `last` gave the previous time.
#[inline]
fn text_id(texts: &mut Interner, last: &mut Option<u32>, v: &[u8]) -> u32 {
    if let Some(id) = *last {
        if texts.get(id) == v {
            return id;
        }
    }
    let id = texts.id(v);
    *last = Some(id);
    id
}

/// `a == b` for the short names of attributes: two overlapping word loads instead of a
/// call to memcmp (a property name is compared on every property of every event).
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap());
    let half = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().unwrap());
    match n {
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        _ => a == b,
    }
}

fn strip_backticks(s: &[u8]) -> &[u8] {
    let a = s.iter().take_while(|&&b| b == b'`').count();
    let s = &s[a..];
    let b = s.iter().rev().take_while(|&&b| b == b'`').count();
    &s[..s.len() - b]
}

/// A connection name as the Python engine hashes it: the number itself when all
/// digits (modulo 2^64, as `mix64` masks), else its CRC-32.
pub fn connection_number(name: &[u8]) -> u64 {
    if !name.is_empty() && name.iter().all(u8::is_ascii_digit) {
        name.iter().fold(0u64, |n, &d| n.wrapping_mul(10).wrapping_add((d - b'0') as u64))
    } else {
        crc32(name) as u64
    }
}

/// Fingerprint ids by cache key (govern/fingerprint.py `cache_key`): the statement with
/// every digit as `0`. No step of pt's fingerprint tells digits apart (each class that
/// holds one digit holds all ten; after the number step none is left), except where pt
/// returns early with text of the statement: administrator commands and CALL, which are
/// fingerprinted every time. On the lab's logs most statements differ from an earlier one
/// only in their digits, and folding and comparing them costs a fraction of pt's steps.
///
/// A statement the first key misses (other string literals, another number of rows in a
/// multi-row INSERT, or longer than `LONGEST`) gets a second chance: the text pt's string
/// rules leave (`Fingerprinter::fingerprint_unless`: strings already `?`, an INSERT cut
/// after its first tuple), with its digits as `0`, keys a second table; only the
/// per-character pass and the list rules, most of a fingerprint's cost, are saved there.
#[derive(Default)]
struct FingerprintCache {
    /// (hash, start and length of the key in `keys`, fingerprint id): statements.
    table: KeyTable,
    /// The same for the texts after the string rules.
    texts: KeyTable,
    keys: Vec<u8>,
    key: Vec<u8>,
    /// `fold_lists`' IN lists.
    lists: Vec<(usize, usize, bool)>,
    text_key: Vec<u8>,
    hasher: foldhash::fast::FixedState,
}

impl FingerprintCache {
    /// Longer statements (IN lists of thousands of ids) rarely repeat with only other
    /// digits: they are fingerprinted directly, and the cache holds at most this much.
    const LONGEST: usize = 2048;
    const BYTES: usize = 16 << 20;

    fn id(&mut self, statement: &[u8], fp: &mut Fingerprinter, fingerprints: &mut Interner) -> u32 {
        let mut statement_hash = 0;
        let by_statement = crate::fingerprint::digits_never_matter(statement)
            && if statement.len() <= Self::LONGEST {
                statement_hash = fold_strings(&self.hasher, statement, &mut self.key);
                true
            } else {
                fold_lists(statement, &mut self.key, &mut self.lists).is_some() && {
                    statement_hash = std::hash::BuildHasher::hash_one(&self.hasher, &self.key[..]);
                    true
                }
            };
        if by_statement {
            if let Some(id) = find(&self.table, &self.keys, &self.key, statement_hash) {
                return id;
            }
        }
        let mut text_hash = None;
        let found = fp.fingerprint_unless(statement, |text| {
            if text.len() > Self::LONGEST {
                return None;
            }
            let hash = fold(&self.hasher, text, &mut self.text_key);
            text_hash = Some(hash);
            find(&self.texts, &self.keys, &self.text_key, hash)
        });
        let id = match found {
            Ok(id) => id,
            Err(fingerprint) => {
                let id = fingerprints.id(fingerprint);
                if let Some(hash) = text_hash {
                    insert(&mut self.texts, &mut self.keys, &self.text_key, hash, id);
                }
                id
            }
        };
        if by_statement {
            insert(&mut self.table, &mut self.keys, &self.key, statement_hash, id);
        }
        id
    }
}

type KeyTable = hashbrown::HashTable<(u64, u32, u32, u32)>;

/// `key` = `s` with every digit as `0`; its hash.
#[inline]
fn fold(hasher: &foldhash::fast::FixedState, s: &[u8], key: &mut Vec<u8>) -> u64 {
    key.clear();
    fold_into(key, s);
    std::hash::BuildHasher::hash_one(hasher, &key[..])
}

/// `fold`, and each `'…'` string emptied when pt's string rules make it `?` whatever it
/// holds (a string's bytes then key nothing): statements that differ only in their
/// strings (a user's name, a JSON payload) share the first key, where each used to miss
/// it and run the comment, escape and quote steps (12,581 of the 40,124 statements of
/// the profiling log; 2,326 with this). Exact when, as checked here, no string holds `/`
/// (no comment can open or close in one, so none ends a string early), a parenthesis
/// (the multi-row INSERT cut is at a `)` outside strings), CR or LF (a line comment
/// that starts in a string stops at its closing quote and is kept); there is no `"`
/// but in `\"` (only `'` strings, paired left to right as pt pairs them after removing
/// `\'` and `\"`, which this pairing skips); every string closes; and the statement
/// does not start with `u` or `/` (pt's `use ?` rule tells `use 'a'` from `use 'a b'`).
/// Otherwise the key is `fold`'s. A key of one kind cannot equal a key of the other
/// unless both statements are the same digits-only text: the emptied key has only
/// empty strings.
fn fold_strings(hasher: &foldhash::fast::FixedState, s: &[u8], key: &mut Vec<u8>) -> u64 {
    key.clear();
    if emptied_strings(s, key).is_none() {
        key.clear();
        fold_into(key, s);
    }
    std::hash::BuildHasher::hash_one(hasher, &key[..])
}

/// `fold_strings`' key with its strings emptied, or `None` when it cannot be.
#[inline]
fn emptied_strings(s: &[u8], key: &mut Vec<u8>) -> Option<()> {
    let mut i = 0;
    loop {
        let k = fold_to_mark(key, s, i);
        if k == s.len() {
            return Some(());
        }
        match s[k] {
            b'"' => return None,
            b'\\' => {
                // `\'` and `\"` are no quotes to pt (it removes them first); they stay in
                // the key as they are, as any other backslash.
                let n = if matches!(s.get(k + 1), Some(b'\'' | b'"')) { 2 } else { 1 };
                key.extend_from_slice(&s[k..k + n]);
                i = k + n;
            }
            _ => {
                if matches!(s[0], b'u' | b'U' | b'/') {
                    return None;
                }
                let mut j = k + 1;
                loop {
                    match *s.get(j)? {
                        b'\'' => break,
                        b'\\' if matches!(s.get(j + 1), Some(b'\'' | b'"')) => j += 2,
                        b'"' | b'/' | b'(' | b')' | b'\n' | b'\r' => return None,
                        _ => j += 1,
                    }
                }
                key.extend_from_slice(b"''");
                i = j + 1;
            }
        }
    }
}

/// Append `s[from..]` with digits as `0` up to the first `'`, `"` or `\\`; where that is
/// (`s.len()` when none). Sixteen bytes a step, folded and stored whole, the key's length
/// then set to what lies before the mark: a memchr3 per mark cost about 95 instructions on
/// these statements (strings a few bytes apart), and the digit fold a second pass.
#[inline]
fn fold_to_mark(key: &mut Vec<u8>, s: &[u8], from: usize) -> usize {
    let mut i = from;
    #[cfg(target_arch = "x86_64")]
    while i + 16 <= s.len() {
        use std::arch::x86_64::*;
        key.reserve(16);
        // SAFETY: SSE2 is part of x86_64; the 16 bytes read lie inside `s`, the 16 written
        // inside the capacity just reserved, and the length covers only bytes written.
        unsafe {
            let x = _mm_loadu_si128(s.as_ptr().add(i).cast::<__m128i>());
            let eq = |c: u8| _mm_cmpeq_epi8(x, _mm_set1_epi8(c as i8));
            let mark = _mm_movemask_epi8(_mm_or_si128(eq(b'\''), _mm_or_si128(eq(b'"'), eq(b'\\')))) as u32;
            // `1`–`9`: x − '1' at most 8, unsigned.
            let d = _mm_sub_epi8(x, _mm_set1_epi8(b'1' as i8));
            let digit = _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(8)), d);
            let folded = _mm_or_si128(_mm_andnot_si128(digit, x), _mm_and_si128(digit, _mm_set1_epi8(b'0' as i8)));
            _mm_storeu_si128(key.as_mut_ptr().add(key.len()).cast::<__m128i>(), folded);
            let n = if mark == 0 { 16 } else { mark.trailing_zeros() as usize };
            key.set_len(key.len() + n);
            if mark != 0 {
                return i + n;
            }
        }
        i += 16;
    }
    let n = s[i..].iter().position(|b| matches!(b, b'\'' | b'"' | b'\\')).unwrap_or(s.len() - i);
    fold_into(key, &s[i..i + n]);
    i + n
}

/// Append `s` with every digit as `0`.
#[inline]
fn fold_into(key: &mut Vec<u8>, s: &[u8]) {
    key.extend(s.iter().map(|&b| if b.wrapping_sub(b'1') < 9 { b'0' } else { b }));
}

/// The first key of a statement longer than `LONGEST`: digits as `0`, as `fold` makes
/// them, and each IN list of unsigned integers, commas and spaces as one `0` (`0 0` when
/// it holds a space, which `use_statement` tells apart). Such statements are mostly their
/// list, and pt makes any of them `in(?+)` whatever its length: the per-character pass
/// sees `in` then the list (`integer_list_end`). That holds when the byte before `in` is
/// whitespace: no string or comment rule can end right after it, and none removes it
/// (`x/**/in (1)` is not a list to pt, and is not folded here). The list holds no quote,
/// comment mark, parenthesis or letter, so no other step sees it differently.
///
/// The lists are found first (`lists`: where each opens and closes, and its blank), so a
/// statement that stays longer than `LONGEST` without them (a long multi-row INSERT) is
/// not folded at all: `None`.
fn fold_lists(s: &[u8], key: &mut Vec<u8>, lists: &mut Vec<(usize, usize, bool)>) -> Option<()> {
    // A long multi-row INSERT has a `(` per row and no IN list to speak of: looking at
    // each would cost more than the lists save (its first tuple keys the second table).
    let head = s.iter().position(|&b| !b.is_ascii_whitespace()).unwrap_or(0);
    let verb = s.get(head..head + 7).unwrap_or(&[]);
    if verb.get(..6).is_some_and(|v| v.eq_ignore_ascii_case(b"insert")) || verb.eq_ignore_ascii_case(b"replace") {
        return None;
    }
    lists.clear();
    let mut kept = s.len();
    let mut i = 0;
    while let Some(open) = memchr::memchr(b'(', &s[i..]).map(|k| k + i) {
        i = open + 1;
        if let Some((close, blank)) = after_in(s, open).then(|| integer_list(s, open + 1)).flatten() {
            lists.push((open, close, blank));
            kept -= close - open - 1;
            i = close;
        }
    }
    if kept > FingerprintCache::LONGEST {
        return None;
    }
    key.clear();
    let mut last = 0;
    for &(open, close, blank) in lists.iter() {
        fold_into(key, &s[last..=open]);
        key.extend_from_slice(if blank { b"0 0" } else { b"0" });
        last = close;
    }
    fold_into(key, &s[last..]);
    Some(())
}

/// Is `s[open]` (a `(`) preceded by `in`, spaces between, whitespace or nothing before?
fn after_in(s: &[u8], open: usize) -> bool {
    let w = open - s[..open].iter().rev().take_while(|&&b| b == b' ').count();
    w >= 2 && s[w - 2..w].eq_ignore_ascii_case(b"in") && (w == 2 || matches!(s[w - 3], b' ' | b'\t' | b'\n' | b'\r'))
}

/// The `)` that closes a list of digits, commas and spaces starting at `s[from]` (with a
/// digit at least), and whether it holds a space.
fn integer_list(s: &[u8], from: usize) -> Option<(usize, bool)> {
    let member = |b: &u8| b.is_ascii_digit() || *b == b',' || *b == b' ';
    let body = &s[from..];
    let mut j = crate::fingerprint::list_blocks(body);
    j += body[j..].iter().take_while(|b| member(b)).count();
    let list = &body[..j];
    (body.get(j) == Some(&b')') && list.iter().any(u8::is_ascii_digit))
        .then(|| (from + j, memchr::memchr(b' ', list).is_some()))
}

#[inline]
fn find(table: &KeyTable, keys: &[u8], key: &[u8], hash: u64) -> Option<u32> {
    table.find(hash, |e| e.0 == hash && &keys[e.1 as usize..(e.1 + e.2) as usize] == key).map(|e| e.3)
}

/// Store `key` in `keys` and `table`, while the byte budget allows.
fn insert(table: &mut KeyTable, keys: &mut Vec<u8>, key: &[u8], hash: u64, id: u32) {
    if keys.len() + key.len() > FingerprintCache::BYTES {
        return;
    }
    let entry = (hash, keys.len() as u32, key.len() as u32, id);
    keys.extend_from_slice(key);
    table.insert_unique(hash, entry, |e| e.0);
}

struct Digester<'o> {
    r: RangeDigest,
    options: &'o RangeOptions<'o>,
    data: &'o [u8],
    /// Line numbers: `line` is the line (from the range's start, 1) at byte `line_pos`.
    line_pos: usize,
    line: u64,
    keys: KeyCache,
    fp: Fingerprinter,
    fp_cache: FingerprintCache,
    ids: Ids,
    ts_cache: (Vec<u8>, Ts),
    /// The last ids of user, host and db (consecutive events mostly repeat them).
    last_texts: [Option<u32>; 3],
    /// Per `keys` entry (+1; 0 for an event's first property), the entry that followed it
    /// last time: header lines come in a fixed order, but an optional line (a `# Time:`,
    /// `Id:`, a server's extra fields) shifts every later position, while what follows a
    /// given name rarely changes. Checked with `same_bytes`, not memcmp.
    key_after: Vec<usize>,
    /// The numeric attribute id of `Query_time`, once seen.
    query_time_num: Option<u16>,
    /// The range's first events wait for the context before it (engine.py `deferring`).
    deferring: bool,
    /// `keep_event` of each (db, user, host) ids asked so far (`u32::MAX`: none).
    kept_events: HashMap<(u32, u32, u32), bool>,
}

impl<'o> Digester<'o> {
    fn new(options: &'o RangeOptions<'o>, data: &'o [u8], start: usize) -> Self {
        let mut num_names = Interner::default();
        let mut text_names = Interner::default();
        let ids = Ids {
            query_length: num_names.id(b"Query_length") as u16,
            values_rows: num_names.id(b"Values_rows") as u16,
            db: text_names.id(b"db") as u16,
            user: text_names.id(b"user") as u16,
            host: text_names.id(b"host") as u16,
        };
        let mut texts = Interner::default();
        let last_db = options.context_db.map(|d| texts.id(strip_backticks(d)));
        Digester {
            r: RangeDigest {
                fingerprints: Interner::default(),
                class_of: Vec::new(),
                classes: Vec::new(),
                other: None,
                num_names,
                flag_names: Interner::default(),
                text_names,
                texts,
                events: 0,
                no_statement: 0,
                banners: 0,
                filtered: 0,
                deferred_events: 0,
                malformed: Vec::new(),
                minutes: Vec::new(),
                minute_index: HashMap::default(),
                minutes_unknown: (0, 0),
                last_minute: ([0xff; 16], 0),
                last_ts: options.context_ts.map(Ts::from),
                last_db,
                ts_known: options.context_known,
                db_known: options.context_known,
                conns: Vec::new(),
                conn_index: HashMap::default(),
                end: 0,
                newlines: 0,
            },
            options,
            data,
            line_pos: start,
            line: 1,
            keys: KeyCache::default(),
            fp: Fingerprinter::new(),
            fp_cache: FingerprintCache::default(),
            ids,
            ts_cache: (Vec::new(), Ts::from(b"")),
            last_texts: [None; 3],
            key_after: Vec::new(),
            query_time_num: None,
            deferring: !options.context_known && (options.needs_ts() || options.needs_db()),
            kept_events: HashMap::default(),
        }
    }

    /// The line of byte `offset`, counting newlines once as offsets advance.
    fn line_at(&mut self, offset: u64) -> u64 {
        let o = (offset as usize).min(self.data.len());
        if o >= self.line_pos {
            self.line += memchr_iter(b'\n', &self.data[self.line_pos..o]).count() as u64;
            self.line_pos = o;
            self.line
        } else {
            self.line - memchr_iter(b'\n', &self.data[o..self.line_pos]).count() as u64
        }
    }

    /// pt's --inherit-attributes db,ts: an event's own `# Time:` and db become the
    /// range's last ones.
    fn inherit(&mut self, ev: &Event) {
        if let Some(raw) = ev.known(Known::Ts) {
            if self.ts_cache.0 != raw {
                self.ts_cache.0.clear();
                self.ts_cache.0.extend_from_slice(raw);
                self.ts_cache.1 = normalize_time(raw);
            }
            self.r.last_ts = Some(self.ts_cache.1);
            self.r.ts_known = true;
        }
        if let Some(raw) = ev.known(Known::Db).or_else(|| ev.known(Known::Schema)) {
            self.r.last_db = Some(text_id(&mut self.r.texts, &mut self.last_texts[2], strip_backticks(raw)));
            self.r.db_known = true;
        }
    }

    /// While the range waits for its context: does `ev` end the wait (then it is digested
    /// as any other)? Events before it are left to the merge, all of them, as engine.py
    /// defers its records; they still pass on what they inherit, as there.
    fn ends_deferral(&mut self, ev: &Event) -> bool {
        if !matches!(head(ev), Head::Statement(..)) {
            return false;
        }
        self.inherit(ev);
        let o = self.options;
        if (o.needs_ts() && !self.r.ts_known) || (o.needs_db() && !self.r.db_known) {
            return false;
        }
        self.deferring = false;
        true
    }

    /// engine.py `_keep`: `--since`, `--until` and the `--filter` conditions on db, user
    /// and host (those on the class are asked once per fingerprint, in `add`).
    fn keep(&mut self, ts: Option<Ts>, db: Option<u32>, user: Option<u32>, host: Option<u32>) -> bool {
        let o = self.options;
        if o.since.is_some_and(|since| ts.is_none_or(|t| t.as_bytes() < since)) {
            return false;
        }
        if o.until.is_some_and(|until| ts.is_none_or(|t| t.as_bytes() >= until)) {
            return false;
        }
        let Some(keep_event) = o.filters.and_then(|f| f.keep_event) else { return true };
        let key = (db.unwrap_or(u32::MAX), user.unwrap_or(u32::MAX), host.unwrap_or(u32::MAX));
        if let Some(&kept) = self.kept_events.get(&key) {
            return kept;
        }
        let texts = &self.r.texts;
        let kept = keep_event(db.map(|v| texts.get(v)), user.map(|v| texts.get(v)), host.map(|v| texts.get(v)));
        self.kept_events.insert(key, kept);
        kept
    }

    fn add(&mut self, ev: &Event) {
        if self.deferring && !self.ends_deferral(ev) {
            return;
        }
        let offset = ev.offset;
        let (arg, query_time) = match head(ev) {
            Head::Truncated => {
                self.r.no_statement += 1;
                let line = self.line_at(offset);
                self.r.malformed.push((offset, line, Bad::Truncated));
                return;
            }
            Head::NoStatement => {
                self.r.no_statement += 1;
                return;
            }
            Head::BadQueryTime(raw) => {
                let line = self.line_at(offset);
                self.r.malformed.push((offset, line, Bad::QueryTime(raw.to_vec())));
                return;
            }
            Head::Statement(arg, query_time) => (arg, query_time),
        };
        self.inherit(ev);
        let (ts, db) = (self.r.last_ts, self.r.last_db);
        let (ts_known, db_known) = (self.r.ts_known, self.r.db_known);
        let [last_user, last_host, _] = &mut self.last_texts;
        let user = ev.known(Known::User).map(|u| text_id(&mut self.r.texts, last_user, u));
        let host = ev.known(Known::Host).map(|h| text_id(&mut self.r.texts, last_host, h));
        if !self.keep(ts, db, user, host) {
            self.r.filtered += 1;
            return;
        }

        // The class: first `max_classes` fingerprints of the range's kept events, the rest
        // `other`.
        let fp_id = self.fp_cache.id(arg, &mut self.fp, &mut self.r.fingerprints);
        let fingerprint = self.r.fingerprints.get(fp_id);
        if fp_id as usize == self.r.class_of.len() {
            let kept = self.options.filters.and_then(|f| f.keep_class).is_none_or(|keep| keep(fingerprint));
            self.r.class_of.push(if kept { UNSEEN } else { DROPPED });
        }
        let mut slot = self.r.class_of[fp_id as usize];
        if slot == DROPPED {
            self.r.filtered += 1;
            return;
        }
        if slot == UNSEEN {
            slot = if self.r.classes.len() < self.options.max_classes {
                let kind = statement_kind(fingerprint);
                // Room for every attribute met so far: a class's first event fills them
                // in one allocation each, not a growth per attribute id.
                let r = &self.r;
                let class = Class {
                    kind,
                    nums: Vec::with_capacity(r.num_names.len()),
                    flags: Vec::with_capacity(r.flag_names.len()),
                    strings: Vec::with_capacity(r.text_names.len()),
                    ..Class::default()
                };
                self.r.classes.push((fp_id, class));
                (self.r.classes.len() - 1) as u32
            } else {
                OTHER
            };
            self.r.class_of[fp_id as usize] = slot;
        }
        self.r.events += 1;
        if let Some(qt) = query_time {
            match ts {
                None => {
                    self.r.minutes_unknown.0 += 1;
                    self.r.minutes_unknown.1 += qt;
                }
                Some(t) => {
                    let mut key = [0u8; 16];
                    let b = t.as_bytes();
                    let n = b.len().min(16);
                    key[..n].copy_from_slice(&b[..n]);
                    let minutes = &mut self.r.minutes;
                    let i = if self.r.last_minute.0 == key {
                        self.r.last_minute.1
                    } else {
                        let i = *self.r.minute_index.entry(key).or_insert_with(|| {
                            minutes.push((Ts::from(&b[..n]), 0, 0));
                            minutes.len() - 1
                        });
                        self.r.last_minute = (key, i);
                        i
                    };
                    minutes[i].1 += 1;
                    minutes[i].2 += qt;
                }
            }
        }
        let ids = &self.ids;
        let (ql, vr, db_attr, user_attr, host_attr) = (ids.query_length, ids.values_rows, ids.db, ids.user, ids.host);
        let context_known = self.options.context_known;
        // The sample's line, if this event becomes the sample (counted before `r` is borrowed).
        let sample_line = match query_time {
            Some(qt) => {
                let beats = {
                    let c = if slot == OTHER { self.r.other.as_ref() } else { Some(&self.r.classes[slot as usize].1) };
                    c.and_then(|c| c.sample.as_ref()).is_none_or(|s| qt >= s.query_time)
                };
                if beats {
                    self.line_at(offset)
                } else {
                    0
                }
            }
            None => 0,
        };
        let r = &mut self.r;
        let class =
            if slot == OTHER { r.other.get_or_insert_with(Class::default) } else { &mut r.classes[slot as usize].1 };
        let kind = class.kind;
        if !ts_known && ts.is_none() {
            class.unknown_ts = true;
        }
        if !db_known && db.is_none() {
            class.unknown_db += 1;
        }
        class.count += 1;
        if let Some(t) = ts {
            class.see_ts(t);
        }
        let mut num_buf = crate::slowlog::itoa_buf::Buf::default();
        let rows_affected = ev.known(Known::RowsAffected);
        // Query_time was typed by `head`: the same bytes type the same.
        let query_time_raw = query_time.and_then(|qt| ev.known(Known::QueryTime).map(|raw| (raw, qt)));
        // `key_after` slot of the previous property (0: none yet).
        let mut after = 0;
        for (position, (key, value)) in ev.iter().enumerate() {
            let Some(value) = value else { continue };
            let k = match self.key_after.get(after) {
                Some(&k) if k != usize::MAX && same_bytes(&self.keys.infos[k].name, key) => k,
                _ => {
                    let k = self.keys.lookup(position, key);
                    if self.key_after.len() <= after {
                        self.key_after.resize(after + 1, usize::MAX);
                    }
                    self.key_after[after] = k;
                    k
                }
            };
            after = k + 1;
            let info = &mut self.keys.infos[k];
            if info.ignored {
                continue;
            }
            let raw = value.as_bytes(&mut num_buf);
            let typed = match query_time_raw {
                _ if info.categorical => Typed::Text,
                Some((q, qt)) if std::ptr::eq(q, raw) => Typed::Num(qt),
                _ => classify(raw),
            };
            match typed {
                Typed::Num(v) => {
                    let id = *info.num_id.get_or_insert_with(|| r.num_names.id(key) as u16);
                    class.num(id).add(v);
                    let is_query_time = match self.query_time_num {
                        Some(q) => q == id,
                        None => {
                            key == b"Query_time" && {
                                self.query_time_num = Some(id);
                                true
                            }
                        }
                    };
                    if is_query_time {
                        class.decimal.set(id as usize);
                        class.histogram[histogram_index(v)] += 1;
                    } else if !class.decimal.get(id as usize) && raw.contains(&b'.') {
                        class.decimal.set(id as usize);
                    }
                }
                Typed::Yes | Typed::No => {
                    let id = *info.flag_id.get_or_insert_with(|| r.flag_names.id(key) as u16) as usize;
                    if class.flags.len() <= id {
                        class.flags.resize(id + 1, (0, 0));
                    }
                    class.flags[id].0 += (typed == Typed::Yes) as u64;
                    class.flags[id].1 += 1;
                }
                Typed::Text => {
                    let id = *info.text_id.get_or_insert_with(|| r.text_names.id(key) as u16);
                    let v = r.texts.id(raw);
                    class.string(id, v);
                }
            }
        }
        if let Some(d) = db {
            class.string(db_attr, d);
        }
        if let Some(u) = user {
            class.string(user_attr, u);
        }
        if let Some(h) = host {
            class.string(host_attr, h);
        }
        class.num(ql).add(arg.len() as i128 * 1_000_000);
        let tuples = if kind == INSERT { count_tuples(arg) } else { 0 };
        if kind == INSERT {
            class.num(vr).add(tuples as i128 * 1_000_000);
        }
        if kind == READ {
            class.texts.add(text_hash(arg));
        }
        if let Some(qt) = query_time {
            if kind != READ {
                let rows: i128 = if tuples != 0 {
                    tuples as i128
                } else {
                    match rows_affected.map(classify) {
                        Some(Typed::Num(v)) => v.div_euclid(1_000_000),
                        _ => 0,
                    }
                };
                let f = class.fit.get_or_insert_with(Default::default);
                f[0] += 1;
                f[1] += rows;
                f[2] += qt;
                f[3] += rows * rows;
                f[4] += rows * qt;
            }
            if class.sample.as_ref().is_none_or(|s| qt >= s.query_time) {
                let s = class.sample.get_or_insert_with(Box::default);
                let cut = arg.len().min(SAMPLE_LIMIT);
                s.query.clear();
                let (base, at) = (self.data.as_ptr() as usize, arg.as_ptr() as usize);
                if at >= base && at + cut <= base + self.data.len() {
                    s.span = Some((at - base, cut));
                } else {
                    s.span = None;
                    s.query.extend_from_slice(&arg[..cut]);
                }
                s.query_time = qt;
                s.truncated = arg.len() > SAMPLE_LIMIT;
                s.ts = ts;
                s.db = db;
                s.user = user;
                s.host = host;
                s.offset = offset;
                s.line = sample_line;
                s.unknown_ts = ts.is_none() && !context_known;
                s.unknown_db = db.is_none() && !context_known;
            }
        }
        // Runs of one class per connection, and runs of single-row writes.
        let Some(thread) = ev.known(Known::ThreadId) else { return };
        let single_key = match kind {
            READ => None,
            INSERT => (tuples == 1).then_some(fp_id),
            _ => matches!(rows_affected, Some(b"0" | b"1")).then_some(fp_id),
        };
        let fresh = Run { key: Some(fp_id), length: 1, class: slot, lead: None };
        let number = connection_number(thread);
        let conn = match r.conn_index.get(&number) {
            Some(&i) => &mut r.conns[i],
            None => {
                r.conn_index.insert(number, r.conns.len());
                let hash = mix64(number.wrapping_add(self.options.server_salt));
                r.conns.push(Conn {
                    number,
                    hash,
                    run: Run { key: None, length: 0, class: OTHER, lead: None },
                    first_run: None,
                    single: Run { key: None, length: 0, class: OTHER, lead: None },
                    first_single: None,
                });
                let conn = r.conns.last_mut().unwrap();
                conn.single = Run { key: single_key, ..fresh };
                conn.run = fresh;
                let hash = conn.hash;
                class.connections.add(hash);
                return;
            }
        };
        let single = conn.single;
        if single.key != single_key {
            if conn.first_single.is_some() {
                if single.key.is_some() {
                    let target = if single.class == OTHER {
                        r.other.get_or_insert_with(Class::default)
                    } else {
                        &mut r.classes[single.class as usize].1
                    };
                    target.single_runs.get_or_insert_with(Default::default).close(single.length);
                }
            } else {
                conn.first_single = Some(Run { lead: None, ..single });
            }
            conn.single = Run { key: single_key, ..fresh };
        } else if single_key.is_some() {
            conn.single.length += 1;
        }
        let run = conn.run;
        if run.key == Some(fp_id) {
            conn.run.length += 1;
            return;
        }
        if conn.first_run.is_some() {
            let target = if run.class == OTHER {
                r.other.get_or_insert_with(Class::default)
            } else {
                &mut r.classes[run.class as usize].1
            };
            target.runs.close(run.length);
            if let Some(lead) = run.lead {
                target.runs.add_lead(lead, run.length);
            }
        } else {
            conn.first_run = Some(Run { lead: None, ..run });
        }
        conn.run = Run { lead: run.key, ..fresh };
        let hash = conn.hash;
        let class = if slot == OTHER { r.other.as_mut().unwrap() } else { &mut r.classes[slot as usize].1 };
        class.connections.add(hash);
    }
}

/// Digest the records that start in `input[start..stop]`, reading at most to `end`
/// (engine.py `digest_range`). `input` is the whole buffer: a record that runs to its
/// end without a separator may be cut short. A file mapping's digested pages are dropped
/// from this process's memory as the reader passes them (`filemap.rs`).
pub fn digest_range(input: Bytes<'_>, start: usize, stop: usize, end: usize, options: &RangeOptions) -> RangeDigest {
    let data = input.as_slice();
    let end = end.min(data.len());
    let window = &data[..end];
    let mut parser = Parser::new(window, start);
    parser.set_input_end(end == data.len());
    let mut d = Digester::new(options, data, start);
    let mut released = start;
    let mut events = 0u64;
    loop {
        if parser.pos() >= stop && !parser.has_pending() {
            break;
        }
        if options.max_events.is_some_and(|most| events >= most) {
            break;
        }
        let Some(ev) = parser.next_event() else { break };
        events += 1;
        let deferring = d.deferring;
        let banners = u64::from(ev.banners);
        d.add(&ev);
        let skipped = parser.take_skipped();
        let banners = banners + parser.take_skipped_banners();
        if deferring && d.deferring {
            // This event and the records the reader skipped with it: the merge's.
            d.r.deferred_events += 1;
            continue;
        }
        d.r.banners += banners;
        for offset in skipped {
            d.r.no_statement += 1;
            let line = d.line_at(offset as u64);
            d.r.malformed.push((offset as u64, line, Bad::Truncated));
        }
        if parser.pos() > released + RELEASE_STEP {
            // Keep a margin behind the reader: line numbers may look a little back.
            released = input.release(released, parser.pos() - RELEASE_STEP / 2);
        }
    }
    d.r.banners += parser.take_skipped_banners();
    for offset in parser.take_skipped() {
        d.r.no_statement += 1;
        let line = d.line_at(offset as u64);
        d.r.malformed.push((offset as u64, line, Bad::Truncated));
    }
    let end_pos = parser.pos();
    d.line_at(end_pos as u64);
    let mut r = d.r;
    let samples = r.classes.iter_mut().map(|c| &mut c.1).chain(r.other.as_mut()).filter_map(|c| c.sample.as_mut());
    for s in samples {
        if let Some((at, len)) = s.span.take() {
            s.query.extend_from_slice(&data[at..at + len]);
        }
    }
    r.end = end_pos;
    r.newlines = d.line - 1;
    // The whole range, also past where a deferred head's reader stopped: the page cache
    // maps a file in large folios, and what a head touched again would stay mapped.
    input.release(released, end_pos.max(stop.min(end)));
    r
}

/// Bytes digested between two page releases.
const RELEASE_STEP: usize = 64 << 20;
