//! pt-query-digest's slow-log event parser (SlowLogParser::parse_event), byte for byte.
//!
//! Each call reads one record (see `records.rs`), drops server banner lines, and walks
//! its lines: `# Time:`, `# User@Host:`, `# administrator command:`, `# Key: value`
//! attribute lines, `use db`, `SET timestamp=…`; the first other line starts the query
//! (`arg`), which runs to the end of the record. The properties are collected as a flat
//! list and read back the way Perl's `{ @properties }` does (later keys win), so even
//! odd inputs give pt's answer. Common line shapes take hand-written fast paths; the
//! rare shapes go through the `regex` crate, whose leftmost-first matching gives the
//! same groups as Perl's backtracking for these patterns (no back-references).

use std::collections::VecDeque;
use std::sync::OnceLock;

use memchr::{memchr, memmem};
use regex::bytes::Regex;

use crate::perl::{is_space, is_word, run_len, split_set_assignments_with};
use crate::records::Separators;

/// One value of pt's `@properties` list, stored as a place rather than a slice so the
/// parser can keep reusing its buffers: 12 bytes, pushed and copied cheaply (pairs are
/// pushed about 20 times an event).
#[derive(Clone, Copy, Debug)]
struct Item {
    src: Src,
    a: u32,
    b: u32,
}

/// Where an `Item` lives: the first four are byte places, `a..b` of
/// `Places::bytes[src]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Src {
    /// The parser's attribute names (`Parser::names`): `CONST_BYTES`, then the keys of
    /// attribute lines read by a template (`Templates`). A name keeps its place for the
    /// parser's life, so a key is compared by its offset like a constant.
    Const = 0,
    /// The current record text.
    Stmt = 1,
    /// The parser's scratch arena (lines pt edits before splitting).
    Arena = 2,
    /// The read-ahead line (`Parser::ahead`).
    Ahead = 3,
    /// The number `a | b << 32`.
    Num = 4,
}

/// The constant keys and values the parser pushes.
const CONSTS: [&[u8]; 13] = [
    b"cmd",
    b"Query",
    b"pos_in_log",
    b"arg",
    b"bytes",
    b"ts",
    b"Admin",
    b"db",
    b"/* No query */",
    b"user",
    b"host",
    b"ip",
    b"Thread_id",
];

const CONST_LEN: usize = {
    let (mut n, mut j) = (0, 0);
    while j < CONSTS.len() {
        n += CONSTS[j].len();
        j += 1;
    }
    n
};

/// `CONSTS` one after the other, so a constant is a range like any other place's.
static CONST_BYTES: [u8; CONST_LEN] = {
    let mut out = [0u8; CONST_LEN];
    let (mut p, mut j) = (0, 0);
    while j < CONSTS.len() {
        let mut k = 0;
        while k < CONSTS[j].len() {
            out[p] = CONSTS[j][k];
            p += 1;
            k += 1;
        }
        j += 1;
    }
    out
};

const CMD: Item = Item::constant(0);
const QUERY: Item = Item::constant(1);
const POS_IN_LOG: Item = Item::constant(2);
const ARG: Item = Item::constant(3);
const BYTES: Item = Item::constant(4);
const TS: Item = Item::constant(5);
const ADMIN: Item = Item::constant(6);
const DB: Item = Item::constant(7);
const NO_QUERY: Item = Item::constant(8);
const USER: Item = Item::constant(9);
const HOST: Item = Item::constant(10);
const IP: Item = Item::constant(11);
const THREAD_ID: Item = Item::constant(12);

impl Item {
    /// `CONSTS[i]`, as its range of `CONST_BYTES`.
    const fn constant(i: usize) -> Item {
        let (mut a, mut j) = (0, 0);
        while j < i {
            a += CONSTS[j].len();
            j += 1;
        }
        Item { src: Src::Const, a: a as u32, b: (a + CONSTS[i].len()) as u32 }
    }

    #[inline(always)]
    fn stmt(a: usize, b: usize) -> Item {
        Item { src: Src::Stmt, a: a as u32, b: b as u32 }
    }

    fn num(n: u64) -> Item {
        Item { src: Src::Num, a: n as u32, b: (n >> 32) as u32 }
    }
}

/// The places an `Item` points into, indexed by its `Src`: reading an item is one
/// test for a number and a slice (a match over the five sources cost the digest about
/// 15 instructions a property read).
#[derive(Clone, Copy)]
struct Places<'p> {
    bytes: [&'p [u8]; 4],
}

impl<'p> Places<'p> {
    fn new(names: &'p [u8], stmt: &'p [u8], arena: &'p [u8], ahead: &'p [u8]) -> Self {
        Places { bytes: [names, stmt, arena, ahead] }
    }

    #[inline(always)]
    fn stmt(&self) -> &'p [u8] {
        self.bytes[Src::Stmt as usize]
    }

    #[inline(always)]
    fn value(&self, item: Item) -> Value<'p> {
        let (a, b) = (item.a as usize, item.b as usize);
        if item.src == Src::Num {
            return Value::Num(a as u64 | (b as u64) << 32);
        }
        Value::Bytes(&self.bytes[item.src as usize & 3][a..b])
    }

    /// Numbers never stand in key position except through pt's odd-list quirk; such a
    /// key matches no attribute name.
    #[inline(always)]
    fn bytes(&self, item: Item) -> &'p [u8] {
        if item.src == Src::Num {
            return b"";
        }
        &self.bytes[item.src as usize & 3][item.a as usize..item.b as usize]
    }
}

/// A property value as pt's event hash holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    Bytes(&'a [u8]),
    Num(u64),
}

impl<'a> Value<'a> {
    /// The value as text: numbers are formatted into `buf`.
    pub fn as_bytes<'b>(&'b self, buf: &'b mut itoa_buf::Buf) -> &'b [u8]
    where
        'a: 'b,
    {
        match self {
            Value::Bytes(b) => b,
            Value::Num(n) => buf.format(*n),
        }
    }
}

/// Tiny integer formatter so callers need no allocation for numeric properties.
pub mod itoa_buf {
    #[derive(Default)]
    pub struct Buf([u8; 20]);
    impl Buf {
        pub fn format(&mut self, mut n: u64) -> &[u8] {
            let mut i = self.0.len();
            loop {
                i -= 1;
                self.0[i] = b'0' + (n % 10) as u8;
                n /= 10;
                if n == 0 {
                    break;
                }
            }
            &self.0[i..]
        }
    }
}

/// Where the current record text lives.
#[derive(Clone, Copy)]
enum StmtSrc {
    Data(usize, usize),
    Buf,
}

/// One event as pt's parse_event returns it: its properties, later keys winning.
pub struct Event<'p> {
    props: &'p [(Item, Option<Item>)],
    known: &'p [u16; 10],
    places: Places<'p>,
    /// Byte offset pt reports as `pos_in_log`.
    pub pos_in_log: u64,
    /// Where govern's Python reader places the record (govern/slowlog.py `Record.offset`):
    /// its start, the header after a leading banner, the start of a read-ahead piece.
    pub offset: u64,
    /// The record ran to the end of the input without a separator (it may be cut short).
    pub at_end: bool,
    /// Server banners removed from the event's record (a record boundary for govern, not
    /// for pt when the server is MariaDB's `mariadbd`: docs/design/digest-engines.md).
    pub banners: u32,
}

impl<'p> Event<'p> {
    #[inline(always)]
    fn resolve(&self, item: Item) -> Value<'p> {
        self.places.value(item)
    }

    #[inline(always)]
    fn key_bytes(&self, item: Item) -> &'p [u8] {
        self.places.bytes(item)
    }

    /// All properties: key, and value (`None` for Perl's undef).
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (&'p [u8], Option<Value<'p>>)> + '_ {
        self.props.iter().map(move |&(k, v)| (self.key_bytes(k), v.map(|v| self.resolve(v))))
    }

    /// The value of one property.
    pub fn get(&self, key: &[u8]) -> Option<Value<'p>> {
        self.props.iter().find(|(k, _)| self.key_bytes(*k) == key).and_then(|&(_, v)| v.map(|v| self.resolve(v)))
    }

    /// A property as bytes (numbers are only `bytes` and `pos_in_log`, never text fields).
    pub fn get_bytes(&self, key: &[u8]) -> Option<&'p [u8]> {
        match self.get(key)? {
            Value::Bytes(b) => Some(b),
            Value::Num(_) => None,
        }
    }

    /// A property the digest reads on every event, without a search.
    #[inline(always)]
    pub fn known(&self, k: Known) -> Option<&'p [u8]> {
        let i = self.known[k as usize];
        if i == u16::MAX {
            return None;
        }
        match self.props[i as usize].1.map(|v| self.resolve(v))? {
            Value::Bytes(b) => Some(b),
            Value::Num(_) => None,
        }
    }

    /// The query text (`arg`).
    pub fn arg(&self) -> Option<&'p [u8]> {
        self.known(Known::Arg)
    }

    /// pt's `cmd` is `Admin` for administrator commands.
    pub fn is_admin(&self) -> bool {
        self.get_bytes(b"cmd") == Some(b"Admin")
    }
}

/// What one pass of the EVENT loop produced.
enum Parsed {
    End,
    /// pt's `next EVENT`: a header-only record at the end of the input.
    Skipped,
    Event(usize),
}

/// The parser's state between events is exactly pt's: the read position and the
/// records already read but not yet parsed (`@pending`).
pub struct Parser<'d> {
    data: &'d [u8],
    pos: usize,
    /// Offset of `data` in the whole input, for `pos_in_log`.
    base: u64,
    /// A read ran into the end of `data` without finding its separator.
    hit_end: bool,
    seps: Separators,
    pending: VecDeque<Vec<u8>>,
    /// Python offsets of the pending records (see `Event::offset`).
    pending_offsets: VecDeque<usize>,
    /// The data ends where the input ends (else records running to it are not cut short).
    input_end: bool,
    cur_offset: usize,
    cur_at_end: bool,
    cur_banners: u32,
    /// Python offsets of header-only records pt skips at the end of the input.
    skipped: Vec<usize>,
    /// Banners in those records.
    skipped_banners: u64,
    stmt_buf: Vec<u8>,
    cur: StmtSrc,
    arena: Vec<u8>,
    /// The read-ahead line of the current event, a range of `data` (see `Src::Ahead`).
    ahead: (usize, usize),
    items: Vec<Item>,
    props: Vec<(Item, Option<Item>)>,
    pairs: Pairs,
    known: [u16; 10],
    /// Where the current record's lines end (absolute `data` offsets of its newlines),
    /// noted by the record read for the header pass; empty when the record is a copy.
    newlines: Vec<usize>,
    finders: LineFinders,
    /// `CONST_BYTES` and the template keys (see `Src::Const`).
    names: Vec<u8>,
    templates: Templates,
    version: memmem::Finder<'static>,
    newline_t: memmem::Finder<'static>,
    uh: memmem::Finder<'static>,
}

const USER_HOST: &[u8] = b"# User@Host: ";

impl<'d> Parser<'d> {
    /// A parser reading `data` from `pos`, which must be 0 or a record boundary
    /// (just after a `;\n#`), where pt's reader would stand with nothing pending.
    pub fn new(data: &'d [u8], pos: usize) -> Self {
        Parser {
            data,
            pos,
            base: 0,
            hit_end: false,
            seps: Separators::default(),
            pending: VecDeque::new(),
            pending_offsets: VecDeque::new(),
            input_end: true,
            cur_offset: 0,
            cur_at_end: false,
            cur_banners: 0,
            skipped: Vec::new(),
            skipped_banners: 0,
            stmt_buf: Vec::new(),
            cur: StmtSrc::Buf,
            arena: Vec::new(),
            ahead: (0, 0),
            items: Vec::with_capacity(64),
            props: Vec::with_capacity(32),
            pairs: Pairs::default(),
            known: [u16::MAX; 10],
            newlines: Vec::with_capacity(64),
            finders: LineFinders::new(),
            names: CONST_BYTES.to_vec(),
            templates: Templates::default(),
            version: memmem::Finder::new(b"Version"),
            newline_t: memmem::Finder::new(b"\nT"),
            uh: memmem::Finder::new(USER_HOST),
        }
    }

    /// A parser resuming another one's state (see `into_state`).
    pub fn with_pending(data: &'d [u8], pos: usize, pending: VecDeque<Vec<u8>>) -> Self {
        let mut p = Parser::new(data, pos);
        p.pending_offsets = pending.iter().map(|_| pos).collect();
        p.pending = pending;
        p
    }

    /// Say whether the data's end is the input's end (default: yes).
    pub fn set_input_end(&mut self, input_end: bool) {
        self.input_end = input_end;
    }

    /// Offsets (see `Event::offset`) of header-only records skipped since the last call.
    pub fn take_skipped(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.skipped)
    }

    /// Banners in the records skipped since the last call.
    pub fn take_skipped_banners(&mut self) -> u64 {
        std::mem::take(&mut self.skipped_banners)
    }

    /// Report positions as offsets from `base` (when `data` is a window of the input).
    pub fn set_base(&mut self, base: u64) {
        self.base = base;
    }

    /// True when a read ran into the end of the data: with more input to come, what
    /// was read there may not be the record pt would read.
    pub fn hit_end(&self) -> bool {
        self.hit_end
    }

    /// The reader's state: position and records read ahead but not parsed.
    pub fn into_state(self) -> (usize, VecDeque<Vec<u8>>) {
        (self.pos, self.pending)
    }

    /// Read position in the data (pt's `tell`).
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// True when records read ahead are still waiting to be parsed.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The separators, for callers that look for record boundaries.
    pub fn separators(&self) -> &Separators {
        &self.seps
    }

    /// Next event, or `None` at the end of the data (pt's parse_event).
    pub fn next_event(&mut self) -> Option<Event<'_>> {
        let mut pos_in_log = self.pos;
        let this_pos = loop {
            match self.parse_record(&mut pos_in_log) {
                Parsed::End => return None,
                Parsed::Skipped => continue,
                Parsed::Event(p) => break p,
            }
        };
        let stmt = self.stmt_of(self.cur);
        let pos_in_log = self.base + this_pos as u64;
        Some(Event {
            props: &self.props,
            known: &self.known,
            places: Places::new(&self.names, stmt, &self.arena, &self.data[self.ahead.0..self.ahead.1]),
            pos_in_log,
            offset: self.base + self.cur_offset as u64,
            at_end: self.cur_at_end,
            banners: self.cur_banners,
        })
    }

    /// One pass of parse_event's EVENT loop; the properties land in `self.props`.
    fn parse_record(&mut self, pos_in_log: &mut usize) -> Parsed {
        let data = self.data;
        {
            // 1. The next record: a pending one first, else read one.
            let banner;
            let src = if let Some(chunk) = self.pending.pop_front() {
                self.stmt_buf = chunk;
                self.newlines.clear();
                banner = self.has_banner(&self.stmt_buf);
                self.cur_offset = self.pending_offsets.pop_front().unwrap_or(self.pos);
                self.cur_at_end = false;
                StmtSrc::Buf
            } else {
                let read = self.finders.read(data, &mut self.pos, &mut self.hit_end, &mut self.newlines);
                let Some((a, b, maybe_banner)) = read else {
                    return Parsed::End;
                };
                let raw = &data[a..b];
                banner = maybe_banner && banner_re().is_match(raw);
                let separated = raw.ends_with(b";\n#");
                self.cur_at_end = !separated && b == data.len() && self.input_end;
                self.cur_offset = a;
                // govern's reader points a record that starts with stray text (a banner)
                // at its first header line when it reads it the slow way.
                if let Some(&first) = raw.first() {
                    if !matches!(first, b'#' | b' ' | b'\n')
                        && (first == b'/' || first.is_ascii_uppercase() || !separated || banner)
                    {
                        if let Some(h) = memmem::find(raw, b"\n#") {
                            self.cur_offset = a + h + 1;
                        }
                    }
                }
                StmtSrc::Data(a, b)
            };
            let this_pos = *pos_in_log;
            *pos_in_log = self.pos;

            // 2. Server banners: drop their lines; a record may then hold several events.
            let mut src = src;
            self.cur_banners = 0;
            if banner {
                self.newlines.clear();
                let text = self.stmt_of(src).to_vec();
                self.cur_banners = banner_start_re().find_iter(&text).count() as u32;
                let cleaned = banner_re().replace_all(&text, &b""[..]);
                if let std::borrow::Cow::Owned(cleaned) = cleaned {
                    let mut chunks: Vec<Vec<u8>> =
                        self.seps.split_records(&cleaned).into_iter().map(<[u8]>::to_vec).collect();
                    if chunks.len() > 1 {
                        let first = chunks.remove(0);
                        for c in chunks.into_iter().rev() {
                            self.pending.push_front(c);
                            self.pending_offsets.push_front(self.cur_offset);
                        }
                        self.stmt_buf = first;
                    } else {
                        self.stmt_buf = cleaned;
                    }
                    src = StmtSrc::Buf;
                }
            }

            // 3. `'#' . $stmt unless /\A#/`, then strip the trailing `;\n#?\Z`.
            src = self.prefix_hash(src);
            src = self.strip_terminator(src);
            self.cur = src;
            let stmt: &[u8] = match src {
                StmtSrc::Data(a, b) => &data[a..b],
                StmtSrc::Buf => &self.stmt_buf,
            };

            // 4. Lines.
            self.items.clear();
            self.arena.clear();
            let items = &mut self.items;
            items.extend([CMD, QUERY, POS_IN_LOG, Item::num(self.base + this_pos as u64)]);
            let (mut got_ts, mut got_uh, mut got_ac, mut got_db, mut got_set) = (false, false, false, false, false);
            let mut found_arg = false;
            let len = stmt.len();
            // The record read noted its newlines: the lines need no search of their own.
            let (newlines, nl_base): (&[usize], usize) = match src {
                StmtSrc::Data(a, _) => (&self.newlines, a),
                StmtSrc::Buf => (&[], 0),
            };
            let mut ni = 0;
            let mut line_start = 0;
            // Attribute lines read so far (the template hint's index).
            let mut attr_no = 0;
            loop {
                let line_end = if newlines.is_empty() {
                    memchr(b'\n', &stmt[line_start..]).map_or(len, |i| line_start + i)
                } else {
                    // Line k of the pass ends at newline k of the record: the text starts
                    // at the record's start, or at the `#` before it (`prefix_hash`).
                    let e = newlines.get(ni).map_or(len, |&e| (e - nl_base).min(len));
                    ni += 1;
                    e
                };
                let line = &stmt[line_start..line_end];
                let at = |a: usize, b: usize| Item::stmt(line_start + a, line_start + b);
                let line_items = items.len();
                if !is_header_line(line) {
                    items.extend([ARG, Item::stmt(line_start, len), BYTES, Item::num((len - line_start) as u64)]);
                    break;
                }
                let ts = if got_ts { None } else { parse_ts(line) };
                if let Some(ts_len) = ts {
                    items.extend([TS, at(8, 8 + ts_len)]);
                    got_ts = true;
                    if !got_uh {
                        if let Some(uh) = parse_user_host(line, &self.uh) {
                            push_user_host(items, line, &uh, at);
                            got_uh = true;
                        }
                    }
                } else if let Some(uh) = (!got_uh).then(|| parse_user_host(line, &self.uh)).flatten() {
                    push_user_host(items, line, &uh, at);
                    got_uh = true;
                } else if !got_ac && line.get(2) == Some(&b'a') && line.starts_with(b"# administrator command:") {
                    let skip = 1 + run_len(&line[1..], is_space);
                    items.extend([CMD, ADMIN, ARG, at(skip, line.len()), BYTES, Item::num((line.len() - skip) as u64)]);
                    found_arg = true;
                    got_ac = true;
                } else if self.templates.read(items, &self.names, stmt, line_start, line_end, attr_no) {
                    attr_no += 1;
                } else if let Some(done) = attribute_line(items, line, at) {
                    if done {
                        self.templates.learn(items, line_items, &mut self.names, stmt, (line_start, line_end), attr_no);
                        attr_no += 1;
                    } else {
                        match schema_fix(line) {
                            None => push_attribute_pairs(items, line, at),
                            Some(fixed) => {
                                let base = self.arena.len();
                                self.arena.extend_from_slice(&fixed);
                                push_attribute_pairs(items, &fixed, |a, b| Item {
                                    src: Src::Arena,
                                    a: (base + a) as u32,
                                    b: (base + b) as u32,
                                });
                            }
                        }
                    }
                } else if !got_db && line.starts_with(b"use ") && line.len() > 4 && line[4] != b';' {
                    let end = memchr(b';', &line[4..]).map_or(line.len(), |i| 4 + i);
                    items.extend([DB, at(4, end)]);
                    got_db = true;
                } else if !got_set && line.starts_with(b"SET") {
                    // Header lines start `SET ` + a keyword, so `^SET\s+` always matches.
                    let s = 3 + run_len(&line[3..], is_space);
                    // `SET timestamp=<digits>;` (nearly every event has it) splits into
                    // its name and number: no `,`, `=` or space in the digits, so the
                    // byte-by-byte split is not needed.
                    let d = s + 10;
                    let n = if line[s..].starts_with(b"timestamp=") {
                        run_len(&line[d..], |b| b.is_ascii_digit())
                    } else {
                        0
                    };
                    if n > 0 && line.get(d + n).is_none_or(|&b| b == b';') {
                        items.extend([at(s, s + 9), at(d, d + n)]);
                    } else {
                        let end = memchr(b';', &line[s..]).map_or(line.len(), |i| s + i);
                        split_set_assignments_with(&line[s..end], |a, b| items.push(at(s + a, s + b)));
                    }
                    got_set = true;
                }

                if !found_arg && line_end == len {
                    // A header line ends the record: pt reads up to the next ";\n".
                    let Some((a, b)) = read_at(&self.seps, data, &mut self.pos, &mut self.hit_end, true) else {
                        self.skipped.push(self.cur_offset);
                        self.skipped_banners += u64::from(self.cur_banners);
                        return Parsed::Skipped;
                    };
                    let l = &data[a..b];
                    if is_null_query(l) {
                        let mut chunk = l.to_vec();
                        if let Some((c, d)) = read_at(&self.seps, data, &mut self.pos, &mut self.hit_end, false) {
                            chunk.extend_from_slice(&data[c..d]);
                        }
                        self.pending.push_back(chunk);
                        self.pending_offsets.push_back(a);
                        items.extend([CMD, QUERY, ARG, NO_QUERY, BYTES, Item::num(0)]);
                    } else {
                        let mut e = b;
                        if l.ends_with(b";\n") {
                            e -= 2;
                        }
                        let s = a + run_len(&data[a..e], is_space);
                        self.ahead = (s, e);
                        let line = Item { src: Src::Ahead, a: 0, b: (e - s) as u32 };
                        items.extend([CMD, ADMIN, ARG, line, BYTES, Item::num((e - s) as u64)]);
                    }
                    found_arg = true;
                }
                // Perl's `m/^(.*)$/mg` visits no empty line after a final newline.
                if line_end == len || line_end + 1 == len {
                    break;
                }
                line_start = line_end + 1;
            }

            // 5. `{ @properties }`: pairs in order, a later key replacing an earlier one.
            let places = Places::new(&self.names, stmt, &self.arena, &data[self.ahead.0..self.ahead.1]);
            self.pairs.resolve(&self.items, places, &mut self.props, &mut self.known);
            Parsed::Event(this_pos)
        }
    }

    fn stmt_of(&self, src: StmtSrc) -> &[u8] {
        match src {
            StmtSrc::Data(a, b) => &self.data[a..b],
            StmtSrc::Buf => &self.stmt_buf,
        }
    }

    /// Cheap test before the banner regex: its lines start with `T[cC]` (Tcp port)
    /// or `Ti` (Time), or contain `Version`.
    fn has_banner(&self, s: &[u8]) -> bool {
        let t_line = |at: usize| matches!(s.get(at..at + 2), Some(b"Tc" | b"TC" | b"Ti"));
        let maybe = self.version.find(s).is_some() || t_line(0) || self.newline_t.find_iter(s).any(|i| t_line(i + 1));
        maybe && banner_re().is_match(s)
    }

    fn prefix_hash(&mut self, src: StmtSrc) -> StmtSrc {
        match src {
            StmtSrc::Data(a, b) if a == b || self.data[a] != b'#' => {
                if a > 0 && self.data[a - 1] == b'#' {
                    StmtSrc::Data(a - 1, b)
                } else {
                    self.stmt_buf.clear();
                    self.stmt_buf.push(b'#');
                    self.stmt_buf.extend_from_slice(&self.data[a..b]);
                    StmtSrc::Buf
                }
            }
            StmtSrc::Buf if self.stmt_buf.first() != Some(&b'#') => {
                self.stmt_buf.insert(0, b'#');
                StmtSrc::Buf
            }
            other => other,
        }
    }

    /// `s/;\n#?\Z//`: `\Z` also matches before a final newline, which then stays.
    fn strip_terminator(&mut self, src: StmtSrc) -> StmtSrc {
        let s = self.stmt_of(src);
        let Some((cut, cut_end)) = terminator_span(s) else { return src };
        let kept_tail = s.len() > cut_end;
        match src {
            StmtSrc::Data(a, _) if !kept_tail => StmtSrc::Data(a, a + cut),
            StmtSrc::Data(a, b) => {
                let mut v = self.data[a..a + cut].to_vec();
                v.extend_from_slice(&self.data[a + cut_end..b]);
                self.stmt_buf = v;
                StmtSrc::Buf
            }
            StmtSrc::Buf => {
                self.stmt_buf.drain(cut..cut_end);
                StmtSrc::Buf
            }
        }
    }
}

/// Read a record (or, with `line`, up to the next `;\n`) from `*pos`, advancing it.
fn read_at(seps: &Separators, data: &[u8], pos: &mut usize, hit_end: &mut bool, line: bool) -> Option<(usize, usize)> {
    let Some((a, b)) = seps.read(data, *pos, line) else {
        *hit_end = true;
        return None;
    };
    let sep: &[u8] = if line { b";\n" } else { b";\n#" };
    if b == data.len() && !data[a..b].ends_with(sep) {
        *hit_end = true;
    }
    *pos = b;
    Some((a, b))
}

/// pt's record read (`$/ = ";\n#"`) from `*pos`, by way of its newlines: the range read,
/// and whether a line of it may be a server banner line (the banner regex's prefilter,
/// so the record is not searched again for `Version` and `\nT`). `newlines` gets where
/// each of its lines ends, for the header pass.
fn read_record(
    data: &[u8],
    pos: &mut usize,
    hit_end: &mut bool,
    newlines: &mut Vec<usize>,
    finders: &LineFinders,
) -> Option<(usize, usize, bool)> {
    let a = *pos;
    newlines.clear();
    if a >= data.len() {
        *hit_end = true;
        return None;
    }
    let mut maybe = false;
    let mut line_start = a;
    let mut end = None;
    while line_start < data.len() {
        let rest = &data[line_start..];
        let nl = match rest[0] {
            // A line that may be a `…mysqld, Version…` banner line: one pass finds its
            // newline and each `V` (a memchr for the newline and then another for the
            // `V` read a statement line twice).
            c if !maybe && (c == b'/' || c.is_ascii_uppercase()) => {
                if c == b'T' && matches!(rest.get(1), Some(b'c' | b'C' | b'i')) {
                    maybe = true;
                    finders.newline(rest)
                } else {
                    let mut from = 0;
                    loop {
                        match finders.newline_or_v(&rest[from..]) {
                            Some(i) if rest[from + i] == b'V' => {
                                maybe |= rest[from + i..].starts_with(b"Version");
                                from += i + 1;
                            }
                            found => break found.map(|i| from + i),
                        }
                    }
                }
            }
            _ => finders.newline(rest),
        };
        let Some(nl) = nl else { break };
        let i = line_start + nl;
        newlines.push(i);
        if i > a && data[i - 1] == b';' && data.get(i + 1) == Some(&b'#') {
            end = Some(i + 2);
            break;
        }
        line_start = i + 1;
    }
    let end = end.unwrap_or_else(|| {
        // No separator: the record runs to the end of the data (its last line included).
        *hit_end = true;
        data.len()
    });
    *pos = end;
    Some((a, end, maybe))
}

/// `read_record` by 64-byte blocks: two AVX2 compares give the block's newlines and
/// `V`s as bit masks, and the record's lines are walked bit by bit. A memchr call a line
/// cost about 55 instructions (10 lines an event, most under 80 bytes); a block costs
/// about 15, a newline about 8. The banner prefilter here is wider than `read_record`'s
/// (any `Version`, any line starting `Tc`, `TC` or `Ti`): it only decides when the
/// banner regex runs, and that regex decides.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn read_record_avx2(
    data: &[u8],
    pos: &mut usize,
    hit_end: &mut bool,
    newlines: &mut Vec<usize>,
) -> Option<(usize, usize, bool)> {
    use std::arch::x86_64::*;
    let a = *pos;
    newlines.clear();
    if a >= data.len() {
        *hit_end = true;
        return None;
    }
    let n = data.len();
    let t_line = |i: usize| data.get(i) == Some(&b'T') && matches!(data.get(i + 1), Some(b'c' | b'C' | b'i'));
    let mut maybe = t_line(a);
    let mut end = None;
    let mut block = a;
    let mut tail = [0u8; 64];
    'blocks: while block < n {
        // The last block is copied into zeros, which are neither newline nor `V`.
        let bytes: *const u8 = if block + 64 <= n {
            data.as_ptr().add(block)
        } else {
            tail[..n - block].copy_from_slice(&data[block..]);
            tail[n - block..].fill(0);
            tail.as_ptr()
        };
        let lo = _mm256_loadu_si256(bytes.cast::<__m256i>());
        let hi = _mm256_loadu_si256(bytes.add(32).cast::<__m256i>());
        let mask = |c: u8| {
            let c = _mm256_set1_epi8(c as i8);
            let l = _mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, c)) as u32;
            let h = _mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, c)) as u32;
            u64::from(l) | u64::from(h) << 32
        };
        let mut nl = mask(b'\n');
        let mut vs = if maybe { 0 } else { mask(b'V') };
        while nl != 0 {
            let i = block + nl.trailing_zeros() as usize;
            nl &= nl - 1;
            newlines.push(i);
            let next = data.get(i + 1).copied();
            if i > a && data[i - 1] == b';' && next == Some(b'#') {
                end = Some(i + 2);
                // `V`s past the record are the next record's.
                vs &= u64::MAX >> (63 - (i - block));
                maybe |= vs != 0 && has_version(data, block, vs);
                break 'blocks;
            }
            maybe |= next == Some(b'T') && t_line(i + 1);
        }
        maybe |= vs != 0 && has_version(data, block, vs);
        block += 64;
    }
    let end = end.unwrap_or_else(|| {
        // No separator: the record runs to the end of the data (its last line included).
        *hit_end = true;
        n
    });
    *pos = end;
    Some((a, end, maybe))
}

/// A `Version` starts at one of the `V`s of the block at `block` (bit i: byte block + i).
#[inline]
fn has_version(data: &[u8], block: usize, mut vs: u64) -> bool {
    while vs != 0 {
        let i = block + vs.trailing_zeros() as usize;
        vs &= vs - 1;
        if data[i..].starts_with(b"Version") {
            return true;
        }
    }
    false
}

/// The record read's byte searches, built once: `memchr::memchr` finds its AVX2 routine
/// through a function pointer and sets up its needle on every call, about 15
/// instructions of the 60 a header line's search costs.
struct LineFinders {
    #[cfg(target_arch = "x86_64")]
    avx2: Option<(memchr::arch::x86_64::avx2::memchr::One, memchr::arch::x86_64::avx2::memchr::Two)>,
}

impl LineFinders {
    fn new() -> Self {
        LineFinders {
            #[cfg(target_arch = "x86_64")]
            avx2: memchr::arch::x86_64::avx2::memchr::One::new(b'\n')
                .zip(memchr::arch::x86_64::avx2::memchr::Two::new(b'\n', b'V')),
        }
    }

    /// The next record (`read_record`), by blocks when the CPU has AVX2.
    #[inline(always)]
    fn read(
        &self,
        data: &[u8],
        pos: &mut usize,
        hit_end: &mut bool,
        newlines: &mut Vec<usize>,
    ) -> Option<(usize, usize, bool)> {
        #[cfg(target_arch = "x86_64")]
        if self.avx2.is_some() {
            // SAFETY: `avx2` is only built when the CPU has AVX2.
            return unsafe { read_record_avx2(data, pos, hit_end, newlines) };
        }
        read_record(data, pos, hit_end, newlines, self)
    }

    #[inline(always)]
    fn newline(&self, s: &[u8]) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        if let Some((one, _)) = &self.avx2 {
            return one.find(s);
        }
        memchr(b'\n', s)
    }

    #[inline(always)]
    fn newline_or_v(&self, s: &[u8]) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        if let Some((_, two)) = &self.avx2 {
            return two.find(s);
        }
        memchr::memchr2(b'\n', b'V', s)
    }
}

/// The leftmost match of `;\n#?\Z` in `s`, as (start, end).
fn terminator_span(s: &[u8]) -> Option<(usize, usize)> {
    let n = s.len();
    let at_z = |q: usize| q == n || (q + 1 == n && s[q] == b'\n');
    (n.saturating_sub(4)..n.saturating_sub(1)).find_map(|p| {
        if s[p] != b';' || s[p + 1] != b'\n' {
            return None;
        }
        if p + 2 < n && s[p + 2] == b'#' && at_z(p + 3) {
            Some((p, p + 3))
        } else if at_z(p + 2) {
            Some((p, p + 2))
        } else {
            None
        }
    })
}

/// `m/^(?:#|use |SET (?:last_insert_id|insert_id|timestamp))/`
#[inline]
fn is_header_line(line: &[u8]) -> bool {
    match line.first() {
        Some(b'#') => true,
        Some(b'u') => line.starts_with(b"use "),
        Some(b'S') => {
            line.starts_with(b"SET ")
                && (line[4..].starts_with(b"last_insert_id")
                    || line[4..].starts_with(b"insert_id")
                    || line[4..].starts_with(b"timestamp"))
        }
        _ => false,
    }
}

/// `m/^# Time: ((?:[0-9: ]{15})|(?:[-0-9: T]{19}))/`: the length of the captured time.
fn parse_ts(line: &[u8]) -> Option<usize> {
    let rest = line.strip_prefix(b"# Time: ")?;
    let ok = |n: usize, f: fn(u8) -> bool| rest.len() >= n && rest[..n].iter().all(|&b| f(b));
    if ok(15, |b| b.is_ascii_digit() || b == b':' || b == b' ') {
        Some(15)
    } else if ok(19, |b| b.is_ascii_digit() || matches!(b, b'-' | b':' | b' ' | b'T')) {
        Some(19)
    } else {
        None
    }
}

/// Byte ranges (within the line) of the `# User@Host:` groups.
struct UserHost {
    user: (usize, usize),
    host: (usize, usize),
    ip: (usize, usize),
    thread_id: Option<(usize, usize)>,
}

fn push_user_host(items: &mut Vec<Item>, line: &[u8], uh: &UserHost, at: impl Fn(usize, usize) -> Item) {
    // `$host ||= $ip`: an empty or "0" host takes the ip.
    let host = if crate::perl::truthy(&line[uh.host.0..uh.host.1]) { uh.host } else { uh.ip };
    items.extend([USER, at(uh.user.0, uh.user.1), HOST, at(host.0, host.1), IP, at(uh.ip.0, uh.ip.1)]);
    if let Some(t) = uh.thread_id {
        items.extend([THREAD_ID, at(t.0, t.1)]);
    }
}

/// `m/# User\@Host: ([^\[]+|\[[^[]+\]).*?@ (\S*) \[(.*)\]\s*(?:Id:\s*(\d+))?/`
fn parse_user_host(line: &[u8], finder: &memmem::Finder) -> Option<UserHost> {
    // The pattern is unanchored, but the line nearly always starts with it.
    let start = if line.starts_with(USER_HOST) { 0 } else { finder.find(line)? };
    fast_user_host(line, start + USER_HOST.len()).or_else(|| regex_user_host(line))
}

/// The common shape, `user[user] @ host [ip]  Id: n`, without a regex. Returns `None`
/// (and the caller asks the regex) whenever the shape needs backtracking.
fn fast_user_host(line: &[u8], p: usize) -> Option<UserHost> {
    let rest = &line[p..];
    let user_len = if rest.first() == Some(&b'[') {
        // `\[[^[]+\]`: greedy to the next '[', back to the last ']' before it.
        let stop = memchr(b'[', &rest[1..]).map_or(rest.len(), |i| i + 1);
        let close = memchr::memrchr(b']', &rest[1..stop])? + 1;
        if close < 2 {
            return None;
        }
        close + 1
    } else {
        // `[^\[]+`: everything up to the first '['. (The fields of this line are a
        // few bytes long: byte loops cost less than memchr's calls here.)
        let n = rest.iter().position(|&b| b == b'[')?;
        if n == 0 {
            return None;
        }
        n
    };
    let after_user = p + user_len;
    let at = (after_user..line.len()).find(|&i| line[i] == b'@' && line.get(i + 1) == Some(&b' '))? + 2;
    let host_len = run_len(&line[at..], |b| !is_space(b));
    let host_end = at + host_len;
    if !line[host_end..].starts_with(b" [") {
        return None;
    }
    let ip_start = host_end + 2;
    let ip_end = line[ip_start..].iter().rposition(|&b| b == b']')? + ip_start;
    let mut q = ip_end + 1;
    q += run_len(&line[q..], is_space);
    let mut thread_id = None;
    if line[q..].starts_with(b"Id:") {
        let d = q + 3 + run_len(&line[q + 3..], is_space);
        let n = run_len(&line[d..], |b| b.is_ascii_digit());
        if n > 0 {
            thread_id = Some((d, d + n));
        }
    }
    Some(UserHost { user: (p, after_user), host: (at, host_end), ip: (ip_start, ip_end), thread_id })
}

fn regex_user_host(line: &[u8]) -> Option<UserHost> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"(?-u)# User@Host: ([^\[]+|\[[^\[]+\]).*?@ (\S*) \[(.*)\]\s*(?:Id:\s*(\d+))?").unwrap()
    });
    let c = re.captures(line)?;
    let span = |i: usize| c.get(i).map(|m| (m.start(), m.end()));
    Some(UserHost { user: span(1)?, host: span(2)?, ip: span(3)?, thread_id: span(4) })
}

/// `m/^# +[A-Z][A-Za-z_]+: \S+/`
fn is_attribute_line(line: &[u8]) -> bool {
    let spaces = run_len(&line[1..], |b| b == b' ');
    if spaces == 0 {
        return false;
    }
    let w = &line[1 + spaces..];
    if !w.first().is_some_and(u8::is_ascii_uppercase) {
        return false;
    }
    let n = 1 + run_len(&w[1..], |b| b.is_ascii_alphabetic() || b == b'_');
    n >= 2 && w[n..].starts_with(b": ") && w.get(n + 2).is_some_and(|&b| !is_space(b))
}

/// MariaDB writes `Schema:` with an empty value before the next attribute; pt removes
/// the first `Schema:\s+` when the line matches `Schema:\s+\w+: `.
fn schema_fix(line: &[u8]) -> Option<Vec<u8>> {
    find_schema(line)?;
    let mut from = 0;
    let mut needs_fix = false;
    while let Some(i) = find_schema(&line[from..]) {
        let s = from + i + 7;
        let ws = run_len(&line[s..], is_space);
        let w = run_len(&line[s + ws..], crate::perl::is_word);
        if ws > 0 && w > 0 && line[s + ws + w..].starts_with(b": ") {
            needs_fix = true;
            break;
        }
        from = from + i + 1;
    }
    if !needs_fix {
        return None;
    }
    let mut from = 0;
    while let Some(i) = find_schema(&line[from..]) {
        let s = from + i + 7;
        let ws = run_len(&line[s..], is_space);
        if ws > 0 {
            let mut v = line[..from + i].to_vec();
            v.extend_from_slice(&line[s + ws..]);
            return Some(v);
        }
        from = from + i + 1;
    }
    None
}

/// `Schema:` in a header line: memchr for the `S` costs a tenth of a memmem search on
/// a line of 60 bytes.
fn find_schema(s: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b'S', s).find(|&i| s[i..].starts_with(b"Schema:"))
}

/// `push @properties, $line =~ m/(\w+):\s+(\S+|\Z)/g`
fn push_attribute_pairs(items: &mut Vec<Item>, line: &[u8], at: impl Fn(usize, usize) -> Item) {
    let mut cursor = 0;
    while let Some(i) = memchr(b':', &line[cursor..]) {
        let colon = cursor + i;
        // The key is the \w run ending at the colon, starting no earlier than the cursor.
        let k = colon - line[cursor..colon].iter().rev().take_while(|&&b| crate::perl::is_word(b)).count();
        let ws = run_len(&line[colon + 1..], is_space);
        if k == colon || ws == 0 {
            cursor = colon + 1;
            continue;
        }
        let v = colon + 1 + ws;
        let vlen = run_len(&line[v..], |b| !is_space(b));
        if vlen == 0 && v != line.len() {
            // `\s+` is greedy and can give back nothing useful: no match here.
            cursor = colon + 1;
            continue;
        }
        items.extend([at(k, colon), at(v, v + vlen)]);
        cursor = v + vlen;
    }
}

/// A header line that is an attribute line (`is_attribute_line`) gets pt's
/// `push @properties, $line =~ m/(\w+):\s+(\S+|\Z)/g` (as `push_attribute_pairs`) in one
/// pass: its colons, spaces, word and digit bytes are classified 16 at a time into bit
/// masks, and the line test and each pair are read off them with a few bit operations
/// instead of byte loops and a search per colon. The pairs are read through a 64-bit
/// window of the masks (a u128 shifted by a variable amount costs several instructions
/// a shift), moved up to the cursor when a pair runs past it. `None`: not an attribute
/// line; `Some(false)`, nothing pushed: the line is over 128 bytes, a pair is longer
/// than the window, or pt's `Schema:` edit may apply to it (see `schema_fix`; every
/// `Schema:` followed by a space ends at a colon this pass visits, or ends a value).
fn attribute_line(items: &mut Vec<Item>, line: &[u8], at: impl Fn(usize, usize) -> Item) -> Option<bool> {
    let n = line.len();
    if n > 128 || line.first() != Some(&b'#') {
        return is_attribute_line(line).then_some(false);
    }
    // `^# +[A-Z][A-Za-z_]+: \S+`: the name is a \w run without digits.
    let p = 1 + run_len(&line[1..], |b| b == b' ');
    if p == 1 || !line.get(p).is_some_and(u8::is_ascii_uppercase) {
        return None;
    }
    let m = ByteMasks::of(line);
    let name = (!m.word >> p).trailing_zeros() as usize;
    let e = p + name;
    if name < 2
        || (m.digit >> p) & ((1u128 << name) - 1) != 0
        || !line[e..].starts_with(b": ")
        || line.get(e + 2).is_none_or(|&b| is_space(b))
    {
        return None;
    }
    let inside = if n == 128 { !0u128 } else { (1u128 << n) - 1 };
    // Where a value (`\S+`) stops: a space or the end of the line.
    let stop = m.space | !inside;
    let start_len = items.len();
    // A pair and the spaces after it take 5 bytes at least.
    items.reserve(n / 2 + 2);
    let mut base = 0;
    let mut w = Window::of(&m, stop, 0);
    let mut cursor = 0;
    loop {
        // The line goes on past the window, and the window's last bit in the line.
        let more = n - base > 64;
        let end = if more { 64 } else { n - base };
        // The next colon at or after the cursor.
        if w.colon == 0 {
            if !more {
                return Some(true);
            }
            base = if cursor > base { cursor } else { base + 64 };
            w = Window::of(&m, stop, base);
            continue;
        }
        let colon = base + w.colon.trailing_zeros() as usize;
        // Keys seldom end in `a`: one byte test spares most colons the 6-byte compare.
        if colon >= 6
            && line[colon - 1] == b'a'
            && &line[colon - 6..colon] == b"Schema"
            && schema_fix_applies(line, colon + 1)
        {
            items.truncate(start_len);
            return Some(false);
        }
        // The key is the \w run ending at the colon, starting no earlier than the cursor.
        let c = colon - base;
        let before = !w.word & ((1u64 << c) - 1);
        let k = if before != 0 {
            (base + 64 - before.leading_zeros() as usize).max(cursor)
        } else if cursor >= base {
            cursor
        } else {
            // The \w run starts before the window.
            items.truncate(start_len);
            return Some(false);
        };
        // Spaces after the colon, then the value, in window bits: `end` when they run
        // to the window's end.
        let a = c + 1;
        let ws = if a >= end { end - a } else { ((!w.space >> a).trailing_zeros() as usize).min(end - a) };
        let v = a + ws;
        let vlen = if v >= end { 0 } else { ((w.stop >> v).trailing_zeros() as usize).min(end - v) };
        if more && v + vlen == end {
            // The pair may run past the window: move the window to the cursor (the
            // colon stays in it), or give up when it starts there already.
            if base == cursor {
                items.truncate(start_len);
                return Some(false);
            }
            base = cursor;
            w = Window::of(&m, stop, base);
            continue;
        }
        let after = colon + 1;
        if k == colon || ws == 0 {
            cursor = after;
            w.skip_to(cursor - base);
            continue;
        }
        // The value's last byte, tested in the window's colons (still all there from
        // this colon on).
        let ends_in_colon = vlen > 0 && (w.colon >> (v + vlen - 1)) & 1 != 0;
        let v = base + v;
        if vlen == 0 && v != n {
            cursor = after;
            w.skip_to(cursor - base);
            continue;
        }
        if ends_in_colon {
            // A value ending in a colon may hide a `Schema:` from this pass.
            items.truncate(start_len);
            return Some(false);
        }
        items.push(at(k, colon));
        items.push(at(v, v + vlen));
        cursor = v + vlen;
        w.skip_to(cursor - base);
    }
}

/// Attribute lines read by their keys. A log repeats a few attribute lines (`# Query_time:
/// …  Lock_time: …`) with other values: a line whose keys, in order, are those of a line
/// read before is read by comparing each key and its `: ` as two words and walking its
/// value, instead of building the line's byte masks and reading each pair off them
/// (about 100 instructions a pair). Its keys are pushed as places in `Parser::names`, so
/// the property list's shape compares them by offset, not by their bytes.
#[derive(Default)]
struct Templates {
    lines: Vec<Template>,
    /// The template the k-th attribute line of the last event used: events repeat the
    /// same lines in the same order.
    hint: Vec<u8>,
    /// The template the next new one replaces, once `TEMPLATES` are kept.
    victim: usize,
}

/// Templates kept (the lab's scaled log has 6 attribute lines).
const TEMPLATES: usize = 16;
/// The longest key a template holds (a key and its `: ` are compared as two words and,
/// past 16 bytes, as a slice).
const TEMPLATE_KEY: usize = 64;
/// `Parser::names` stops growing here (odd logs with ever new names read the long way).
const NAMES_MAX: usize = 1 << 16;

struct Template {
    keys: Vec<TemplateKey>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct TemplateKey {
    /// Its place in `Parser::names`, and its length.
    name: u32,
    len: u32,
    /// The key and `: `, as `key_words` reads them.
    words: (u64, u64),
}

impl Templates {
    /// Push the pairs of the header line `stmt[s..e]` if a template reads it (`k`: attribute
    /// lines before it in the record).
    #[inline]
    fn read(&mut self, items: &mut Vec<Item>, names: &[u8], stmt: &[u8], s: usize, e: usize, k: usize) -> bool {
        let line = &stmt[s..e];
        // `^# +[A-Z]`, as `is_attribute_line`.
        if self.lines.is_empty() || line.first() != Some(&b'#') {
            return false;
        }
        let p = 1 + run_len(&line[1..], |b| b == b' ');
        if p == 1 || !line.get(p).is_some_and(u8::is_ascii_uppercase) {
            return false;
        }
        let start = items.len();
        let hint = self.hint.get(k).map_or(usize::MAX, |&h| h as usize);
        if let Some(t) = self.lines.get(hint) {
            if t.read(items, names, stmt, s + p, e) {
                return true;
            }
            items.truncate(start);
        }
        for (i, t) in self.lines.iter().enumerate() {
            if i != hint && t.read(items, names, stmt, s + p, e) {
                if self.hint.len() <= k {
                    self.hint.resize(k + 1, u8::MAX);
                }
                self.hint[k] = i as u8;
                return true;
            }
            items.truncate(start);
        }
        false
    }

    /// Keep a template of the attribute line `stmt[s..e]`, whose pairs `attribute_line`
    /// pushed from `items[from..]`, if reading the line by it gives the same pairs; they
    /// are then replaced by the template's (keys in `names`).
    #[cold]
    fn learn(
        &mut self,
        items: &mut Vec<Item>,
        from: usize,
        names: &mut Vec<u8>,
        stmt: &[u8],
        (s, e): (usize, usize),
        k: usize,
    ) {
        let mut keys = Vec::new();
        for pair in items[from..].chunks_exact(2) {
            let key = pair[0];
            let (a, b) = (key.a as usize, key.b as usize);
            if key.src != Src::Stmt || b - a > TEMPLATE_KEY || stmt.get(b..b + 2) != Some(b": ") {
                return;
            }
            let bytes = &stmt[a..b + 2];
            let known = self
                .lines
                .iter()
                .flat_map(|t| &t.keys)
                .find(|t| &names[t.name as usize..][..t.len as usize + 2] == bytes);
            let name = match known {
                Some(t) => t.name,
                None if names.len() + bytes.len() <= NAMES_MAX => {
                    names.extend_from_slice(bytes);
                    (names.len() - bytes.len()) as u32
                }
                None => return,
            };
            keys.push(TemplateKey { name, len: (b - a) as u32, words: key_words(stmt, a, (b + 2).min(a + 16)) });
        }
        let t = Template { keys };
        let mut check = Vec::with_capacity(items.len() - from);
        let p = 1 + run_len(&stmt[s + 1..e], |b| b == b' ');
        let same = t.read(&mut check, names, stmt, s + p, e)
            && check.len() == items.len() - from
            && check.iter().zip(&items[from..]).enumerate().all(|(j, (c, i))| {
                let bytes = |it: &Item| {
                    if it.src == Src::Const {
                        &names[it.a as usize..it.b as usize]
                    } else {
                        &stmt[it.a as usize..it.b as usize]
                    }
                };
                if j % 2 == 0 {
                    bytes(c) == bytes(i)
                } else {
                    (c.src, c.a, c.b) == (i.src, i.a, i.b)
                }
            });
        if !same {
            return;
        }
        items.truncate(from);
        items.extend_from_slice(&check);
        let i = if self.lines.len() < TEMPLATES {
            self.lines.push(t);
            self.lines.len() - 1
        } else {
            let i = self.victim;
            self.lines[i] = t;
            self.victim = (i + 1) % TEMPLATES;
            i
        };
        if self.hint.len() <= k {
            self.hint.resize(k + 1, u8::MAX);
        }
        self.hint[k] = i as u8;
    }
}

impl Template {
    /// pt's `m/(\w+):\s+(\S+|\Z)/g` on a line whose first key starts at `stmt[p]` (after
    /// `# +`) and that ends at `e`, when its keys are this template's: each key (a \w run
    /// after a space) with its `: `, spaces, a value (no `: ` after the key for the first,
    /// as `is_attribute_line` asks), and nothing but spaces after the last. A value ending
    /// in `:` may hide pt's `Schema:` edit (`schema_fix`): the line is then not read.
    #[inline]
    fn read(&self, items: &mut Vec<Item>, names: &[u8], stmt: &[u8], mut p: usize, e: usize) -> bool {
        // The spaces after the last value, when its chunk showed where they end.
        let mut gap = None;
        for (j, key) in self.keys.iter().enumerate() {
            if j > 0 {
                let ws = gap.unwrap_or_else(|| run_len(&stmt[p..e], is_space));
                if ws == 0 {
                    return false;
                }
                p += ws;
            }
            let n = key.len as usize;
            if p + n + 2 > e || key_words(stmt, p, (p + n + 2).min(p + 16)) != key.words {
                return false;
            }
            // A key of more than 14 bytes: the rest of it and its `: `.
            if n > 14 && stmt[p + 16..p + n + 2] != names[key.name as usize + 16..key.name as usize + n + 2] {
                return false;
            }
            let q = p + n + 2;
            let (ws, vlen, after) = space_then_value(stmt, q, e);
            gap = after;
            if j == 0 && (ws > 0 || vlen == 0) {
                return false;
            }
            let v = q + ws;
            if vlen > 0 && stmt[v + vlen - 1] == b':' {
                return false;
            }
            items.extend_from_slice(&[
                Item { src: Src::Const, a: key.name, b: key.name + key.len },
                Item::stmt(v, v + vlen),
            ]);
            p = v + vlen;
        }
        gap.unwrap_or_else(|| run_len(&stmt[p..e], is_space)) == e - p
    }
}

/// From `stmt[q]` to `e`: the run of spaces (Perl's `\s`), then the run of other bytes,
/// and the run of spaces after it when the same chunk shows its end. The 16 bytes at `q`
/// are classified at once (SSE2) when they are in `stmt` and hold both runs' ends; byte
/// loops otherwise.
#[inline(always)]
fn space_then_value(stmt: &[u8], q: usize, e: usize) -> (usize, usize, Option<usize>) {
    #[cfg(target_arch = "x86_64")]
    if q + 16 <= stmt.len() {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86_64; the load reads stmt[q..q + 16].
        let spaces = unsafe {
            let x = _mm_loadu_si128(stmt.as_ptr().add(q).cast::<__m128i>());
            let sp = _mm_or_si128(
                _mm_cmpeq_epi8(x, _mm_set1_epi8(b' ' as i8)),
                _mm_cmpeq_epi8(
                    _mm_min_epu8(_mm_sub_epi8(x, _mm_set1_epi8(9)), _mm_set1_epi8(4)),
                    _mm_sub_epi8(x, _mm_set1_epi8(9)),
                ),
            );
            _mm_movemask_epi8(sp) as u32
        };
        // Bytes from `e` on end both runs; bit 16 stands for the bytes past the chunk.
        let end = if e - q < 16 { !0u32 << (e - q) } else { 1 << 16 };
        let ws = (!spaces | end).trailing_zeros();
        let vlen = ((spaces | end) >> ws).trailing_zeros();
        if ws + vlen < 16 || q + 16 >= e {
            // Past the chunk (bit 16), the spaces after the value are not known.
            let gap = ((!spaces | end) >> (ws + vlen)).trailing_zeros();
            let known = ws + vlen + gap < 16 || q + 16 >= e;
            return (ws as usize, vlen as usize, known.then_some(gap as usize));
        }
    }
    let ws = run_len(&stmt[q..e], is_space);
    (ws, run_len(&stmt[q + ws..e], |b| !is_space(b)), None)
}

/// 64 bits of a line's masks from bit `base` on.
struct Window {
    colon: u64,
    space: u64,
    word: u64,
    stop: u64,
}

impl Window {
    #[inline]
    fn of(m: &ByteMasks, stop: u128, base: usize) -> Window {
        Window {
            colon: (m.colon >> base) as u64,
            space: (m.space >> base) as u64,
            word: (m.word >> base) as u64,
            stop: (stop >> base) as u64,
        }
    }

    /// Forget the colons before bit `i` (at most 64: all of them).
    #[inline]
    fn skip_to(&mut self, i: usize) {
        self.colon = if i >= 64 { 0 } else { self.colon & (!0u64 << i) };
    }
}

/// pt's `Schema:\s+\w+: ` test at the bytes after a `Schema:`.
#[inline]
fn schema_fix_applies(line: &[u8], s: usize) -> bool {
    let ws = run_len(&line[s..], is_space);
    let w = run_len(&line[s + ws..], is_word);
    ws > 0 && w > 0 && line[s + ws + w..].starts_with(b": ")
}

/// Bit i of each mask says what byte i of a line (at most 128 bytes) is: `:`, Perl's
/// `\s`, Perl's `\w`, a digit.
struct ByteMasks {
    colon: u128,
    space: u128,
    word: u128,
    digit: u128,
}

impl ByteMasks {
    #[inline]
    fn of(line: &[u8]) -> ByteMasks {
        debug_assert!(line.len() <= 128);
        #[cfg(target_arch = "x86_64")]
        if line.len() >= 16 {
            return Self::sse2(line);
        }
        let mut m = ByteMasks { colon: 0, space: 0, word: 0, digit: 0 };
        for (i, &b) in line.iter().enumerate() {
            m.colon |= u128::from(b == b':') << i;
            m.digit |= u128::from(b.is_ascii_digit()) << i;
            m.space |= u128::from(is_space(b)) << i;
            m.word |= u128::from(is_word(b)) << i;
        }
        m
    }

    /// 16 bytes a step, each step's four 16-bit masks stored in place (a variable shift
    /// of a u128 costs more than the compares); the last step loads the line's last 16
    /// bytes and keeps the bits past the step before.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    fn sse2(line: &[u8]) -> ByteMasks {
        use std::arch::x86_64::*;
        let n = line.len();
        let mut rows = [[0u16; 8]; 4];
        // SAFETY: SSE2 is part of x86_64; every load reads 16 bytes inside `line` (n >= 16).
        unsafe {
            let le = |a: __m128i, c: __m128i| _mm_cmpeq_epi8(_mm_min_epu8(a, c), a);
            let bits = |v: __m128i| _mm_movemask_epi8(v) as u16;
            let mut step = |at: usize, j: usize, drop: u32| {
                let x = _mm_loadu_si128(line.as_ptr().add(at).cast::<__m128i>());
                let colon = _mm_cmpeq_epi8(x, _mm_set1_epi8(b':' as i8));
                // \s: ' ' or 0x09..=0x0d.
                let space = _mm_or_si128(
                    _mm_cmpeq_epi8(x, _mm_set1_epi8(b' ' as i8)),
                    le(_mm_sub_epi8(x, _mm_set1_epi8(9)), _mm_set1_epi8(4)),
                );
                // \w: letters (either case), digits, '_'.
                let lower = _mm_or_si128(x, _mm_set1_epi8(0x20));
                let letter = le(_mm_sub_epi8(lower, _mm_set1_epi8(b'a' as i8)), _mm_set1_epi8(25));
                let digit = le(_mm_sub_epi8(x, _mm_set1_epi8(b'0' as i8)), _mm_set1_epi8(9));
                let under = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'_' as i8));
                let word = _mm_or_si128(_mm_or_si128(letter, digit), under);
                rows[0][j] = bits(colon) >> drop;
                rows[1][j] = bits(space) >> drop;
                rows[2][j] = bits(word) >> drop;
                rows[3][j] = bits(digit) >> drop;
            };
            let mut i = 0;
            while i + 16 <= n {
                step(i, i / 16, 0);
                i += 16;
            }
            if i < n {
                step(n - 16, i / 16, (i + 16 - n) as u32);
            }
        }
        // SAFETY: plain integers; x86_64 is little-endian, so r[0] becomes bits 0..16.
        let mask = |r: [u16; 8]| unsafe { std::mem::transmute::<[u16; 8], u128>(r) };
        ByteMasks { colon: mask(rows[0]), space: mask(rows[1]), word: mask(rows[2]), digit: mask(rows[3]) }
    }
}

/// `$l =~ /^\s*[A-Z][a-z_]+: /`
fn is_null_query(l: &[u8]) -> bool {
    let s = run_len(l, is_space);
    let w = &l[s..];
    if !w.first().is_some_and(u8::is_ascii_uppercase) {
        return false;
    }
    let n = run_len(&w[1..], |b| b.is_ascii_lowercase() || b == b'_');
    n > 0 && w[1 + n..].starts_with(b": ")
}

/// pt's banner lines, with MariaDB's `mariadbd` beside `mysqld` (govern/slowlog.py `_BANNER`).
fn banner_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?m-u)^(?:T[cC][pP]\s[pP]ort:\s+\d+|[/A-Z].*(?:mysqld|mariadbd),\sVersion.*(?:started\swith:|embedded\slibrary)|Time\s+Id\s+Command).*\n",
        )
        .unwrap()
    })
}

/// The line that starts each banner: the server and its version.
fn banner_start_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?m-u)^[/A-Z].*(?:mysqld|mariadbd),\sVersion.*(?:started\swith:|embedded\slibrary)").unwrap()
    })
}

/// Properties the digest reads by name, found once per event.
#[derive(Clone, Copy, Debug)]
pub enum Known {
    Arg,
    Db,
    Schema,
    Ts,
    User,
    Host,
    RateLimit,
    QueryTime,
    ThreadId,
    RowsAffected,
}

const KNOWN_KEYS: [&[u8]; 10] = [
    b"arg",
    b"db",
    b"Schema",
    b"ts",
    b"user",
    b"host",
    b"Log_slow_rate_limit",
    b"Query_time",
    b"Thread_id",
    b"Rows_affected",
];

/// The `Known` slot of a key: a switch on its length and first byte, then one compare
/// (a search of `KNOWN_KEYS` compared every key of every event with ten names).
#[inline(always)]
fn known_index(k: &[u8]) -> Option<usize> {
    let j = match (k.len(), k.first()?) {
        (3, b'a') => Known::Arg,
        (2, b'd') => Known::Db,
        (6, b'S') => Known::Schema,
        (2, b't') => Known::Ts,
        (4, b'u') => Known::User,
        (4, b'h') => Known::Host,
        (19, b'L') => Known::RateLimit,
        (10, b'Q') => Known::QueryTime,
        (9, b'T') => Known::ThreadId,
        (13, b'R') => Known::RowsAffected,
        _ => return None,
    } as usize;
    same_bytes(KNOWN_KEYS[j], k).then_some(j)
}

/// `a == b` without a call to memcmp for the short strings that header keys are.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let w8 = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().unwrap());
    let w4 = |s: &[u8], i: usize| u32::from_le_bytes(s[i..i + 4].try_into().unwrap());
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => w4(a, 0) == w4(b, 0) && w4(a, n - 4) == w4(b, n - 4),
        8..=16 => w8(a, 0) == w8(b, 0) && w8(a, n - 8) == w8(b, n - 8),
        _ => a == b,
    }
}

/// Perl's `{ @properties }`: walk the flat list in pairs; a repeated key keeps its first
/// place and takes the later value; an odd last key gets undef. Also notes where the
/// `Known` keys are. Logs repeat a few sequences of header lines, so the keys of the
/// last lists resolved the long way are kept with the place each pair went (`Shape`): a
/// list with the same keys in the same order only has its keys compared and its pairs
/// copied to those places.
#[derive(Default)]
struct Pairs {
    sigs: Vec<u64>,
    shapes: Vec<Shape>,
    /// The shape the last list had.
    last: usize,
    /// The shape the next new one replaces.
    victim: usize,
}

/// The keys of a resolved list and where its pairs went.
#[derive(Default)]
struct Shape {
    /// Its keys, one after the other, and where each ends (for `ShapeKey::SLOW` keys).
    keys: Vec<u8>,
    ends: Vec<u32>,
    /// Each key as it is compared.
    words: Vec<ShapeKey>,
    /// The prop each pair went to.
    slots: Vec<u16>,
    /// Its number of items (`usize::MAX`: not kept) and of props.
    items: usize,
    props: usize,
    /// `key_sig` of its list.
    sig: u64,
    /// Pair j went to prop j (no key repeats).
    in_order: bool,
    known: [u16; 10],
}

/// A shape's key, kept so that comparing a key read from the record costs a length and
/// two word compares (comparing its bytes with the kept bytes loaded both sides and went
/// by the key's length: about twice the instructions).
#[derive(Clone, Copy)]
struct ShapeKey {
    /// The key's offset in `CONST_BYTES`, `STMT` for a key of the record of at most 16
    /// bytes, `SLOW` for any other (its bytes are compared).
    tag: u32,
    len: u32,
    words: (u64, u64),
}

impl ShapeKey {
    const STMT: u32 = u32::MAX - 1;
    const SLOW: u32 = u32::MAX;
}

/// Shapes kept (the lab's scaled log has 7).
const SHAPES: usize = 8;

/// The bytes `s[a..b]` (at most 16) as two little-endian words, zero past the end.
#[inline(always)]
fn key_words(s: &[u8], a: usize, b: usize) -> (u64, u64) {
    let n = b - a;
    debug_assert!(n <= 16);
    let word = |w: &[u8]| u64::from_le_bytes(w.try_into().unwrap());
    // The n low bytes of a word (n <= 8).
    let low = |w: u64, n: usize| if n == 0 { 0 } else { w & (!0u64 >> (64 - 8 * n)) };
    match s.get(a..a + 16) {
        // A key is nearly always followed by its value: 16 bytes can be read at once.
        Some(w) => {
            let (lo, hi) = (word(&w[..8]), word(&w[8..]));
            if n <= 8 {
                (low(lo, n), 0)
            } else {
                (lo, low(hi, n - 8))
            }
        }
        None => {
            let mut buf = [0u8; 16];
            buf[..n].copy_from_slice(&s[a..b]);
            (word(&buf[..8]), word(&buf[8..]))
        }
    }
}

/// A cheap summary of a list's keys (their constants and lengths), so that a kept shape
/// is tried only when its keys may be the list's (trying each kept shape in turn cost
/// about 300 instructions an event in failed comparisons).
#[inline]
fn key_sig(items: &[Item]) -> u64 {
    items.iter().step_by(2).fold(items.len() as u64, |h, k| {
        // Its length and source (constants of one length share a summary: `fits` tells).
        h.rotate_left(7) ^ u64::from(k.b.wrapping_sub(k.a) ^ (k.src as u32) << 24)
    })
}

impl Shape {
    /// The keys of `items` are this shape's.
    #[inline]
    fn fits(&self, items: &[Item], places: Places) -> bool {
        items.len() == self.items
            && items.iter().step_by(2).zip(&self.words).enumerate().all(|(j, (&k, w))| match k.src {
                // A constant key is compared by its offset (a constant and a key read
                // from the record with the same bytes do not fit: the long way then).
                Src::Const => w.tag == k.a,
                Src::Stmt if w.tag == ShapeKey::STMT => {
                    w.len == k.b - k.a && key_words(places.stmt(), k.a as usize, k.b as usize) == w.words
                }
                _ => {
                    let start = if j == 0 { 0 } else { self.ends[j - 1] as usize };
                    w.tag == ShapeKey::SLOW && same_bytes(places.bytes(k), &self.keys[start..self.ends[j] as usize])
                }
            })
    }
}

impl Pairs {
    fn resolve(&mut self, items: &[Item], places: Places, out: &mut Vec<(Item, Option<Item>)>, known: &mut [u16; 10]) {
        let sig = key_sig(items);
        let try_shape = |s: &Shape| s.sig == sig && s.fits(items, places);
        let found = if self.shapes.get(self.last).is_some_and(try_shape) {
            Some(self.last)
        } else {
            self.shapes.iter().position(try_shape)
        };
        let Some(i) = found else {
            self.resolve_new(items, places, out, known, sig);
            return;
        };
        let shape = &self.shapes[i];
        if i != self.last {
            // Every prop is written below: the first pair of each key goes there.
            out.resize(shape.props, (CMD, None));
            *known = shape.known;
            self.last = i;
        }
        let pairs = items.chunks_exact(2);
        let odd = pairs.remainder().first().copied();
        let n = pairs.len();
        if shape.in_order {
            // No key repeats (nearly every list): pair j is prop j, a plain copy.
            for (o, pair) in out.iter_mut().zip(pairs) {
                *o = (pair[0], Some(pair[1]));
            }
        } else {
            for (pair, &slot) in pairs.zip(&shape.slots) {
                out[slot as usize] = (pair[0], Some(pair[1]));
            }
        }
        if let Some(k) = odd {
            out[shape.slots[n] as usize] = (k, None);
        }
    }

    fn resolve_new(
        &mut self,
        items: &[Item],
        places: Places,
        out: &mut Vec<(Item, Option<Item>)>,
        known: &mut [u16; 10],
        list_sig: u64,
    ) {
        out.clear();
        self.sigs.clear();
        *known = [u16::MAX; 10];
        let bytes = |it: Item| places.bytes(it);
        if items.len() > 200 {
            // More keys than the table holds (only in odd input): compare them all.
            self.last = usize::MAX;
            for pair in items.chunks(2) {
                let (k, v) = (pair[0], pair.get(1).copied());
                let kb = bytes(k);
                match out.iter_mut().find(|(ek, _)| bytes(*ek) == kb) {
                    Some(slot) => slot.1 = v,
                    None => {
                        if let Some(j) = known_index(kb) {
                            known[j] = out.len() as u16;
                        }
                        out.push((k, v));
                    }
                }
            }
            return;
        }
        if self.shapes.len() < SHAPES {
            self.shapes.push(Shape::default());
            self.victim = self.shapes.len() - 1;
        }
        let shape = &mut self.shapes[self.victim];
        self.last = self.victim;
        self.victim = (self.victim + 1) % SHAPES;
        shape.keys.clear();
        shape.ends.clear();
        shape.words.clear();
        shape.slots.clear();
        // Keys are looked up in a small open-addressing table of their signatures
        // (length and first and last bytes), so a repeated key is found without
        // comparing bytes of every earlier one.
        let sig = |b: &[u8]| -> u64 {
            (b.len() as u64) | (*b.first().unwrap_or(&0) as u64) << 32 | (*b.last().unwrap_or(&0) as u64) << 40
        };
        let mut table = [u16::MAX; 128];
        for pair in items.chunks(2) {
            let (k, v) = (pair[0], pair.get(1).copied());
            let kb = bytes(k);
            shape.keys.extend_from_slice(kb);
            shape.ends.push(shape.keys.len() as u32);
            let len = kb.len() as u32;
            shape.words.push(match k.src {
                Src::Const => ShapeKey { tag: k.a, len, words: (0, 0) },
                Src::Stmt if len <= 16 => {
                    ShapeKey { tag: ShapeKey::STMT, len, words: key_words(places.stmt(), k.a as usize, k.b as usize) }
                }
                _ => ShapeKey { tag: ShapeKey::SLOW, len, words: (0, 0) },
            });
            let ks = sig(kb);
            let mut h = (ks.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 57) as usize;
            let slot = loop {
                let slot = table[h];
                if slot == u16::MAX {
                    table[h] = out.len() as u16;
                    if let Some(j) = known_index(kb) {
                        known[j] = out.len() as u16;
                    }
                    out.push((k, v));
                    self.sigs.push(ks);
                    break out.len() - 1;
                }
                let s = slot as usize;
                if self.sigs[s] == ks && same_bytes(bytes(out[s].0), kb) {
                    out[s].1 = v;
                    break s;
                }
                h = (h + 1) & 127;
            };
            shape.slots.push(slot as u16);
        }
        shape.items = items.len();
        shape.in_order = shape.slots.iter().enumerate().all(|(j, &slot)| slot as usize == j);
        shape.sig = list_sig;
        shape.props = out.len();
        shape.known = *known;
    }
}
