//! A merged class's `govern.digest` class document, written as JSON by the core.
//!
//! The twin of govern/digest/document.py `class_document` + figures.py + tables.py +
//! `json.dumps(..., ensure_ascii=False)`: the same bytes, so `govern digest --format json`
//! writes 200,000 classes without building 200,000 Python dicts. Every float is computed
//! as Python computes it (true division of integers correctly rounded, `round(x, n)` as
//! exact decimal rounding half to even, `repr` as the shortest round trip) and printed as
//! `repr` prints it. What this does not reproduce exactly — text that is not UTF-8 (Python
//! shows `\xNN` and sorts the escapes), a fingerprint outside printable ASCII (Python's
//! Unicode `\s`, `\w` in tables.py), a value named `(other)`, integers past what a float
//! rounds to — makes `class_json` return false, and Python builds that class
//! (tests/digest/test_digest_native_json.py compares the two on every corpus log).

use std::fmt::Write as _;
use std::sync::OnceLock;

use regex::bytes::Regex;

use crate::aggregate::NumStats;
use crate::class::{Class, Runs};
use crate::total::Total;

/// aggregate.py `HISTOGRAM_LABELS`.
const HISTOGRAM_LABELS: &str = r#"["1us", "10us", "100us", "1ms", "10ms", "100ms", "1s", "10s+"]"#;
/// figures.py `LEADS_SHOWN`.
const LEADS_SHOWN: usize = 5;
const OTHER_VALUE: &[u8] = b"(other)";
const DISTINCT_K: usize = crate::values::DISTINCT_K;

/// What every class document of one digest shares (document.py `_ClassBuilder`).
pub struct Context {
    /// The digest's Query_time in micro-units.
    pub total_time: i128,
    /// The window in seconds, if known.
    pub window_seconds: Option<f64>,
    /// Input names by file index (`sample.file`), None for inputs without one.
    pub sources: Vec<Option<String>>,
    /// The numeric attributes' ids in the order of their names (`nums`), sorted once
    /// rather than for each class twice.
    num_order: Vec<u32>,
}

impl Context {
    pub fn new(total: &Total, total_time: i128, window_seconds: Option<f64>, sources: Vec<Option<String>>) -> Context {
        let names = &total.num_names;
        let mut num_order: Vec<u32> = (0..names.len() as u32).collect();
        num_order.sort_by(|&a, &b| names.get(a).cmp(names.get(b)));
        Context { total_time, window_seconds, sources, num_order }
    }
}

/// Not written here: Python builds the class document instead.
#[derive(Debug)]
struct Fallback;

type Out<T = ()> = Result<T, Fallback>;

/// Class `index` of `total` appended to `out` as its JSON class document (what
/// `json.dumps(class_document(...))` writes), or false, `out` as it was, when Python
/// must build it.
pub fn class_json(total: &Total, index: usize, ctx: &Context, out: &mut String) -> bool {
    let start = out.len();
    let (fp, slot) = &total.classes[index];
    let id = total.query_ids()[*fp as usize];
    let written = Writer { total, ctx, out }.class(total.fingerprints.get(*fp), id, &slot.get());
    if written.is_err() {
        out.truncate(start);
    }
    written.is_ok()
}

/// A piece of `class_runs`: documents written here, joined by `", "`, or the position
/// (in the indexes asked for) of a class Python must build.
pub enum Piece {
    Run(String),
    Python(usize),
}

/// Below this many classes per thread, `class_runs` writes on the calling thread only.
const PER_THREAD: usize = 1024;

/// The documents of classes `indexes` (`class_json`) in order, as runs and the positions
/// of the classes Python builds. Many classes are split in contiguous parts, one per core
/// (at most 4), written at once: each class document depends on its class and the
/// digest's shared tables only, so the bytes are those of one thread.
pub fn class_runs(total: &Total, indexes: &[usize], ctx: &Context) -> Vec<Piece> {
    total.query_ids();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
    let threads = cores.min(indexes.len() / PER_THREAD).max(1);
    if threads == 1 {
        return runs_of(total, indexes, 0, ctx);
    }
    let part = indexes.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let parts: Vec<_> = indexes
            .chunks(part)
            .enumerate()
            .map(|(k, chunk)| scope.spawn(move || runs_of(total, chunk, k * part, ctx)))
            .collect();
        parts.into_iter().flat_map(|p| p.join().expect("a document thread panicked")).collect()
    })
}

/// `class_runs` of one part, whose first class is at position `first`.
fn runs_of(total: &Total, indexes: &[usize], first: usize, ctx: &Context) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut text = String::with_capacity(indexes.len() * 4096);
    for (position, &index) in indexes.iter().enumerate() {
        let start = text.len();
        if !text.is_empty() {
            text.push_str(", ");
        }
        if !class_json(total, index, ctx, &mut text) {
            text.truncate(start);
            if !text.is_empty() {
                pieces.push(Piece::Run(std::mem::take(&mut text)));
            }
            pieces.push(Piece::Python(first + position));
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Run(text));
    }
    pieces
}

struct Writer<'a> {
    total: &'a Total,
    ctx: &'a Context,
    out: &'a mut String,
}

impl Writer<'_> {
    fn class(&mut self, fp: &[u8], id: u128, c: &Class) -> Out {
        let fingerprint = std::str::from_utf8(fp).map_err(|_| Fallback)?;
        let id = hex_id(id);
        let o = &mut *self.out;
        o.push_str("{\"id\": \"");
        o.push_str(&id);
        o.push_str("\", \"id16\": \"");
        o.push_str(&id[16..]);
        o.push_str("\", \"fingerprint\": ");
        string(o, fingerprint);
        o.push_str(", \"count\": ");
        int(o, c.count);
        let qt = self.total.num_id(b"Query_time").and_then(|i| c.nums.get(i as usize)).filter(|s| s.count() > 0);
        o.push_str(", \"share\": ");
        match qt {
            Some(m) if self.ctx.total_time != 0 => rounded(o, div(m.sum(), self.ctx.total_time)?, 6)?,
            _ => o.push_str("0.0"),
        }
        o.push_str(", \"qps\": ");
        match self.ctx.window_seconds {
            Some(w) if w != 0.0 => rounded(o, to_f64(c.count as i128)? / w, 6)?,
            _ => o.push_str("null"),
        }
        o.push_str(", \"first_seen\": ");
        opt_string(o, c.ts_min.as_ref().map(|t| t.as_bytes()))?;
        o.push_str(", \"last_seen\": ");
        opt_string(o, c.ts_max.as_ref().map(|t| t.as_bytes()))?;
        self.metrics(c)?;
        self.flags(c)?;
        self.values(c)?;
        self.servers(c)?;
        let o = &mut *self.out;
        o.push_str(", \"histogram\": {\"Query_time\": [");
        for (i, n) in c.histogram.iter().enumerate() {
            separator(o, i);
            int(o, *n);
        }
        o.push_str("], \"labels\": ");
        o.push_str(HISTOGRAM_LABELS);
        o.push('}');
        self.sample(c)?;
        let leads = leads(self.total, &c.runs);
        self.sequence(c, &leads)?;
        let writes = writes(fp);
        let o = &mut *self.out;
        o.push_str(", \"single_row_runs\": ");
        if writes {
            let runs = c.single_runs.as_deref().cloned().unwrap_or_default();
            runs_figures(o, "{\"calls\": ", &runs);
            mean_run(o, &runs)?;
            o.push('}');
        } else {
            o.push_str("null");
        }
        o.push_str(", \"distinct_texts\": ");
        if c.texts.0.is_empty() {
            o.push_str("null");
        } else {
            o.push_str("{\"count\": ");
            distinct_count(o, &c.texts.0, "exact")?;
            o.push('}');
        }
        self.rows_per_statement(c, writes)?;
        self.overhead(c)?;
        let o = &mut *self.out;
        o.push_str(", \"tables\": ");
        tables(o, fingerprint)?;
        o.push_str(", \"findings\": []");
        self.state(c, leads)?;
        self.out.push('}');
        Ok(())
    }

    fn metrics(&mut self, c: &Class) -> Out {
        let list = nums(self.total, self.ctx, c)?;
        let o = &mut *self.out;
        o.push_str(", \"metrics\": {");
        for (k, (name, i, s)) in list.into_iter().enumerate() {
            let decimal = c.decimal.get(i);
            separator(o, k);
            string(o, name);
            o.push_str(": {\"count\": ");
            int(o, s.count());
            o.push_str(", \"sum\": ");
            number(o, s.sum(), decimal)?;
            o.push_str(", \"min\": ");
            number(o, s.min(), decimal)?;
            o.push_str(", \"max\": ");
            number(o, s.max(), decimal)?;
            o.push_str(", \"avg\": ");
            rounded(o, div(s.sum(), s.count() as i128)? / 1e6, 6)?;
            let buckets = buckets_of(s);
            let sketched = buckets.iter().map(|b| b.1).sum::<u64>() == s.count();
            for (key, q) in [(", \"median\": ", 500), (", \"p95\": ", 950), (", \"p99\": ", 990)] {
                o.push_str(key);
                if sketched {
                    number(o, quantile(&buckets, q, s.min(), s.max()), decimal)?;
                } else {
                    o.push_str("null");
                }
            }
            o.push('}');
        }
        o.push('}');
        Ok(())
    }

    fn flags(&mut self, c: &Class) -> Out {
        let mut list = Vec::new();
        for (i, &(yes, n)) in c.flags.iter().enumerate().filter(|(_, f)| f.1 > 0) {
            list.push((ascii(self.total.flag_names.get(i as u32))?, yes, n));
        }
        list.sort_by(|a, b| a.0.cmp(b.0));
        let o = &mut *self.out;
        o.push_str(", \"flags\": {");
        for (k, (name, yes, n)) in list.into_iter().enumerate() {
            separator(o, k);
            string(o, name);
            o.push_str(": {\"yes\": ");
            int(o, yes);
            o.push_str(", \"count\": ");
            int(o, n);
            o.push('}');
        }
        o.push('}');
        Ok(())
    }

    fn values(&mut self, c: &Class) -> Out {
        let mut names = Vec::new();
        for (i, values) in c.strings.iter().enumerate().filter(|(_, v)| !v.list.is_empty() || v.other > 0) {
            let mut counts: Vec<(u64, &str)> = Vec::with_capacity(values.list.len() + 1);
            for &(v, n) in &values.list {
                let raw = self.total.texts.get(v);
                if raw == OTHER_VALUE {
                    return Err(Fallback);
                }
                counts.push((n, utf8(raw)?));
            }
            if values.other > 0 {
                counts.push((values.other, "(other)"));
            }
            names.push((ascii(self.total.text_names.get(i as u32))?, counts));
        }
        names.sort_by(|a, b| a.0.cmp(b.0));
        let o = &mut *self.out;
        o.push_str(", \"values\": {");
        for (k, (name, counts)) in names.into_iter().enumerate() {
            separator(o, k);
            string(o, name);
            o.push_str(": ");
            by_count(o, counts);
        }
        o.push('}');
        Ok(())
    }

    fn servers(&mut self, c: &Class) -> Out {
        let mut counts = Vec::new();
        for &(s, n) in c.servers.as_deref().map_or(&[][..], |s| &s[..]) {
            counts.push((n, utf8(self.total.servers.get(s))?));
        }
        self.out.push_str(", \"servers\": ");
        by_count(self.out, counts);
        Ok(())
    }

    fn sample(&mut self, c: &Class) -> Out {
        let o = &mut *self.out;
        o.push_str(", \"sample\": ");
        let Some(s) = c.sample.as_deref() else {
            o.push_str("null");
            return Ok(());
        };
        let texts = &self.total.texts;
        o.push_str("{\"query\": ");
        string(o, utf8(&s.query)?);
        o.push_str(", \"query_time\": ");
        seconds_text(o, s.query_time)?;
        o.push_str(", \"ts\": ");
        opt_string(o, s.ts.as_ref().map(|t| t.as_bytes()))?;
        for (key, v) in [(", \"db\": ", s.db), (", \"user\": ", s.user), (", \"host\": ", s.host)] {
            o.push_str(key);
            opt_string(o, v.map(|v| texts.get(v)))?;
        }
        o.push_str(", \"file\": ");
        match self.ctx.sources.get(s.file as usize) {
            Some(Some(name)) => string(o, name),
            _ => o.push_str("null"),
        }
        o.push_str(", \"line\": ");
        int(o, s.line);
        o.push_str(if s.truncated { ", \"truncated\": true}" } else { ", \"truncated\": false}" });
        Ok(())
    }

    fn sequence(&mut self, c: &Class, leads: &[Lead]) -> Out {
        let runs = &c.runs;
        let o = &mut *self.out;
        runs_figures(o, ", \"sequence\": {\"calls\": ", runs);
        mean_run(o, runs)?;
        for (key, q) in [(", \"median_run\": ", 500), (", \"p95_run\": ", 950)] {
            o.push_str(key);
            if runs.runs > 0 {
                let lengths: Vec<(i32, u64)> = runs.lengths.iter().copied().collect();
                int(o, quantile(&lengths, q, 1, runs.longest as i128));
            } else {
                o.push_str("null");
            }
        }
        o.push_str(", \"connections\": ");
        distinct_count(o, &c.connections.0, "connections_exact")?;
        let (mut led_runs, mut led_calls) = (0u64, 0u64);
        for (_, r, n) in leads {
            led_runs += r;
            led_calls += n;
        }
        let o = &mut *self.out;
        o.push_str(", \"led_runs\": ");
        uint(o, led_runs);
        o.push_str(", \"led_calls\": ");
        uint(o, led_calls);
        o.push_str(", \"leads\": [");
        let mut shown: Vec<(u128, u64, u64)> = leads.iter().filter_map(|&(id, r, n)| Some((id?, r, n))).collect();
        shown.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
        for (k, (id, r, n)) in shown.into_iter().take(LEADS_SHOWN).enumerate() {
            separator(o, k);
            o.push_str("{\"id\": \"");
            o.push_str(&hex_id(id));
            o.push_str("\", \"runs\": ");
            int(o, r);
            o.push_str(", \"calls\": ");
            int(o, n);
            o.push('}');
        }
        o.push_str("]}");
        Ok(())
    }

    fn rows_per_statement(&mut self, c: &Class, writes: bool) -> Out {
        self.out.push_str(", \"rows_per_statement\": ");
        for (name, source) in
            [(&b"Values_rows"[..], "values"), (b"Rows_affected", "rows_affected"), (b"Rows_sent", "rows_sent")]
        {
            let Some(m) = self.total.num_id(name).and_then(|i| c.nums.get(i as usize)).filter(|s| s.count() > 0) else {
                continue;
            };
            if name == b"Rows_affected" && !writes {
                continue;
            }
            let o = &mut *self.out;
            let _ = write!(o, "{{\"source\": \"{source}\", \"avg\": ");
            rounded(o, div(m.sum(), m.count() as i128)? / 1e6, 3)?;
            o.push_str(", \"median\": ");
            let buckets = buckets_of(m);
            if buckets.iter().map(|b| b.1).sum::<u64>() == m.count() {
                number(o, quantile(&buckets, 500, m.min(), m.max()), false)?;
            } else {
                o.push_str("null");
            }
            o.push_str(", \"max\": ");
            number(o, m.max(), false)?;
            o.push('}');
            return Ok(());
        }
        self.out.push_str("null");
        Ok(())
    }

    fn overhead(&mut self, c: &Class) -> Out {
        let [n, sx, sy, sxx, sxy] = c.fit.as_deref().copied().unwrap_or_default();
        let o = &mut *self.out;
        o.push_str(", \"overhead\": {\"per_statement\": ");
        // aggregate.py `Fit.line`, then round(·, 9).
        let denominator = n.checked_mul(sxx).and_then(|a| a.checked_sub(sx.checked_mul(sx)?)).ok_or(Fallback)?;
        if n < 2 || denominator == 0 {
            o.push_str("null, \"per_row\": null");
        } else {
            let numerator = n.checked_mul(sxy).and_then(|a| a.checked_sub(sx.checked_mul(sy)?)).ok_or(Fallback)?;
            let slope = div(numerator, denominator)?;
            let intercept = (to_f64(sy)? - slope * to_f64(sx)?) / to_f64(n)?;
            rounded(o, intercept / 1e6, 9)?;
            o.push_str(", \"per_row\": ");
            rounded(o, slope / 1e6, 9)?;
        }
        o.push_str(", \"statements\": ");
        int(o, n);
        o.push('}');
        Ok(())
    }

    fn state(&mut self, c: &Class, mut leads: Vec<Lead>) -> Out {
        let list = nums(self.total, self.ctx, c)?;
        let o = &mut *self.out;
        o.push_str(", \"state\": {\"metrics\": {");
        for (k, (name, i, s)) in list.into_iter().enumerate() {
            separator(o, k);
            string(o, name);
            o.push_str(": {\"count\": ");
            int(o, s.count());
            o.push_str(", \"sum\": ");
            int(o, s.sum());
            o.push_str(", \"min\": ");
            int(o, s.min());
            o.push_str(", \"max\": ");
            int(o, s.max());
            o.push_str(if c.decimal.get(i) {
                ", \"decimal\": true, \"buckets\": "
            } else {
                ", \"decimal\": false, \"buckets\": "
            });
            let mut buckets = buckets_of(s);
            buckets.sort_unstable();
            pairs(o, buckets.into_iter());
            o.push('}');
        }
        o.push_str("}, \"runs\": ");
        runs_state(o, &c.runs);
        o.pop();
        o.push_str(", \"leads\": {");
        leads.sort();
        for (k, (id, r, n)) in leads.into_iter().enumerate() {
            separator(o, k);
            o.push('"');
            match id {
                Some(id) => o.push_str(&hex_id(id)),
                None => o.push_str("(other)"),
            }
            o.push_str("\": [");
            int(o, r);
            o.push_str(", ");
            int(o, n);
            o.push(']');
        }
        o.push_str("}}, \"single_runs\": ");
        runs_state(o, c.single_runs.as_deref().unwrap_or(&Runs::default()));
        for (key, kmv) in [(", \"connections\": [", &c.connections.0), (", \"texts\": [", &c.texts.0)] {
            o.push_str(key);
            // Kept sorted (`Kmv`).
            for (k, &v) in kmv.iter().enumerate() {
                separator(o, k);
                const DIGITS: &[u8; 16] = b"0123456789abcdef";
                let mut text = [b'"'; 18];
                for (i, digit) in text[1..17].iter_mut().enumerate() {
                    *digit = DIGITS[(v >> (60 - 4 * i)) as usize & 15];
                }
                push_ascii(o, &text);
            }
            o.push(']');
        }
        let [n, sx, sy, sxx, sxy] = c.fit.as_deref().copied().unwrap_or_default();
        o.push_str(", \"fit\": [");
        for (k, v) in [n, sx, sy, sxx, sxy].into_iter().enumerate() {
            separator(o, k);
            int(o, v);
        }
        o.push_str("], \"sample_query_time\": ");
        match &c.sample {
            Some(s) => {
                int(o, s.query_time);
            }
            None => o.push_str("null"),
        }
        o.push('}');
        Ok(())
    }
}

/// The numeric attributes by name, sorted (names are ASCII, else Python's order).
fn nums<'t, 'c>(total: &'t Total, ctx: &Context, c: &'c Class) -> Out<Vec<(&'t str, usize, &'c NumStats)>> {
    let mut list = Vec::with_capacity(c.nums.len());
    for &i in &ctx.num_order {
        if let Some(s) = c.nums.get(i as usize).filter(|s| s.count() > 0) {
            list.push((ascii(total.num_names.get(i))?, i as usize, s));
        }
    }
    Ok(list)
}

/// `NumStats::buckets`, a single value's bucket kept off the heap (most attributes of a
/// class of a few events have one value: three allocations per attribute saved).
fn buckets_of(s: &NumStats) -> smallvec::SmallVec<[(i32, u64); 1]> {
    match *s {
        NumStats::Same { count, value } => smallvec::smallvec![(crate::sketch::key_of(value as i128), count)],
        _ => smallvec::SmallVec::from_vec(s.buckets()),
    }
}

/// A lead: its query ID (None: `(other)`, which sorts before every hex ID as its text
/// does), runs and calls.
type Lead = (Option<u128>, u64, u64);

/// A class's leads by query ID, `(other)` last (RunsFigures' dict, in its order).
fn leads(total: &Total, runs: &Runs) -> Vec<Lead> {
    let ids = total.query_ids();
    let mut leads: Vec<Lead> = runs.leads.iter().map(|&(lead, r, n)| (Some(ids[lead as usize]), r, n)).collect();
    if let Some((r, n)) = runs.leads_other {
        leads.push((None, r, n));
    }
    leads
}

/// A query ID as pt writes it: 32 uppercase hex digits.
fn hex_id(id: u128) -> String {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut text = [0u8; 32];
    for (i, digit) in text.iter_mut().enumerate() {
        *digit = DIGITS[(id >> (124 - 4 * i)) as usize & 15];
    }
    let mut id = String::with_capacity(32);
    push_ascii(&mut id, &text);
    id
}

/// An integer as text (`write!` costs several times more, a few million times).
fn int(o: &mut String, v: impl Into<i128>) {
    let v: i128 = v.into();
    let mut rest = v.unsigned_abs();
    // u64 division is several times cheaper than u128's.
    if let Ok(small) = u64::try_from(rest) {
        if v < 0 {
            o.push('-');
        }
        uint(o, small);
        return;
    }
    let mut digits = [0u8; 40];
    let mut at = digits.len();
    while rest > 0 || at == digits.len() {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    if v < 0 {
        o.push('-');
    }
    push_ascii(o, &digits[at..]);
}

fn separator(o: &mut String, k: usize) {
    if k > 0 {
        o.push_str(", ");
    }
}

fn utf8(raw: &[u8]) -> Out<&str> {
    std::str::from_utf8(raw).map_err(|_| Fallback)
}

/// An attribute name: ASCII (decode.py `label`), else Python's replacement characters.
fn ascii(raw: &[u8]) -> Out<&str> {
    if raw.is_ascii() {
        Ok(std::str::from_utf8(raw).expect("ASCII"))
    } else {
        Err(Fallback)
    }
}

/// `json.dumps(text, ensure_ascii=False)`.
fn string(o: &mut String, text: &str) {
    if plain(text.as_bytes()) {
        o.reserve(text.len() + 2);
        o.push('"');
        o.push_str(text);
        o.push('"');
        return;
    }
    o.push('"');
    let mut from = 0;
    for (i, b) in text.bytes().enumerate() {
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        o.push_str(&text[from..i]);
        if escaped.is_empty() {
            let _ = write!(o, "\\u{b:04x}");
        } else {
            o.push_str(escaped);
        }
        from = i + 1;
    }
    o.push_str(&text[from..]);
    o.push('"');
}

/// Nothing in `bytes` that JSON escapes: tested 32 bytes at a time without branching
/// on each (most texts have nothing to escape).
fn plain(bytes: &[u8]) -> bool {
    bytes.chunks(32).all(|chunk| !chunk.iter().fold(false, |bad, &b| bad | (b < 0x20) | (b == b'"') | (b == b'\\')))
}

fn opt_string(o: &mut String, text: Option<&[u8]>) -> Out {
    match text {
        Some(t) => string(o, utf8(t)?),
        None => o.push_str("null"),
    }
    Ok(())
}

/// document.py `_by_count`: `{name: count}` by count descending, then name.
fn by_count(o: &mut String, mut counts: Vec<(u64, &str)>) {
    counts.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    o.push('{');
    for (k, (n, name)) in counts.into_iter().enumerate() {
        separator(o, k);
        string(o, name);
        o.push_str(": ");
        int(o, n);
    }
    o.push('}');
}

fn pairs(o: &mut String, pairs: impl Iterator<Item = (i32, u64)>) {
    o.push('[');
    for (k, (key, n)) in pairs.enumerate() {
        separator(o, k);
        o.push('[');
        int(o, key);
        o.push_str(", ");
        int(o, n);
        o.push(']');
    }
    o.push(']');
}

/// document.py `_runs_state` (a dict: the caller may reopen it by popping its `}`).
fn runs_state(o: &mut String, runs: &Runs) {
    o.push_str("{\"runs\": ");
    int(o, runs.runs);
    o.push_str(", \"calls\": ");
    int(o, runs.calls);
    o.push_str(", \"repeated_calls\": ");
    int(o, runs.repeated_calls);
    o.push_str(", \"longest\": ");
    int(o, runs.longest);
    o.push_str(", \"lengths\": ");
    let mut lengths: Vec<(i32, u64)> = runs.lengths.iter().copied().collect();
    lengths.sort_unstable();
    pairs(o, lengths.into_iter());
    o.push('}');
}

/// figures.py's first four figures of runs, up to `"mean_run": `.
fn runs_figures(o: &mut String, head: &str, runs: &Runs) {
    o.push_str(head);
    int(o, runs.calls);
    o.push_str(", \"runs\": ");
    int(o, runs.runs);
    o.push_str(", \"repeated_calls\": ");
    int(o, runs.repeated_calls);
    o.push_str(", \"longest_run\": ");
    int(o, runs.longest);
    o.push_str(", \"mean_run\": ");
}

fn mean_run(o: &mut String, runs: &Runs) -> Out {
    if runs.runs > 0 {
        rounded(o, div(runs.calls as i128, runs.runs as i128)?, 3)
    } else {
        o.push_str("null");
        Ok(())
    }
}

/// sketch.py `distinct_count`: the count, then `"exact_key": exact?`.
fn distinct_count(o: &mut String, kept: &[u64], exact_key: &str) -> Out {
    if kept.len() < DISTINCT_K {
        uint(o, kept.len() as u64);
        o.push_str(", \"");
        o.push_str(exact_key);
        o.push_str("\": true");
        return Ok(());
    }
    let largest = *kept.iter().max().expect("kept values") as u128 + 1;
    let estimate = round_int(div_u128((DISTINCT_K as u128 - 1) << 64, largest))?;
    let _ = write!(o, "{estimate}, \"{exact_key}\": false");
    Ok(())
}

/// figures.py `number`: micro-units as seconds (6 decimals) or a whole count.
fn number(o: &mut String, micro: i128, decimal: bool) -> Out {
    if decimal {
        seconds_text(o, micro)
    } else {
        int(o, round_int(div(micro, 1_000_000)?)?);
        Ok(())
    }
}

/// sketch.py `quantiles` for one level given in thousandths, clamped to `[low, high]`.
fn quantile(buckets: &[(i32, u64)], permille: u64, low: i128, high: i128) -> i128 {
    let total: u64 = buckets.iter().map(|b| b.1).sum();
    let clamp = |v: i128| v.max(low).min(high);
    if buckets.len() == 1 {
        return clamp(bucket_value(buckets[0].0));
    }
    let rank = ((permille as u128 * total as u128).div_ceil(1000)).max(1);
    let mut sorted = buckets.to_vec();
    sorted.sort_unstable();
    let mut seen = 0u128;
    for (key, n) in sorted {
        seen += n as u128;
        if seen >= rank {
            return clamp(bucket_value(key));
        }
    }
    high
}

/// sketch.py `bucket_value`.
fn bucket_value(key: i32) -> i128 {
    fn range(key: i64) -> (i128, i128) {
        if key < 0 {
            let (low, high) = range(-1 - key);
            return (-high, -low);
        }
        if key < 256 {
            return (key as i128, key as i128);
        }
        let shift = (key >> 7) - 1;
        let low = ((key - (shift << 7)) as i128) << shift;
        (low, low + (1i128 << shift) - 1)
    }
    let (low, high) = range(key as i64);
    low + (high - low).div_euclid(2)
}

fn writes(fp: &[u8]) -> bool {
    [&b"insert"[..], b"replace", b"update", b"delete"].iter().any(|w| fp.starts_with(w))
}

// --- numbers as Python makes and prints them -----------------------------------------

/// An integer as Python's `float(n)`: exact below 2^53, else refused (not needed here).
fn to_f64(n: i128) -> Out<f64> {
    if n.unsigned_abs() <= 1 << 53 {
        Ok(n as f64)
    } else {
        Err(Fallback)
    }
}

/// Python's `a / b` of two integers: the exact quotient correctly rounded.
fn div(a: i128, b: i128) -> Out<f64> {
    if b == 0 {
        return Err(Fallback);
    }
    let q = div_u128(a.unsigned_abs(), b.unsigned_abs());
    Ok(if (a < 0) != (b < 0) { -q } else { q })
}

/// `a / b` correctly rounded to nearest, ties to even (b > 0).
fn div_u128(a: u128, b: u128) -> f64 {
    if a < 1 << 53 && b < 1 << 53 {
        // Both exact as floats: IEEE division rounds the exact quotient.
        return a as f64 / b as f64;
    }
    let (mut q, mut r) = (a / b, a % b);
    // Below 2^54, shift in quotient bits one at a time until there are 54 of them.
    let mut exponent: i32 = 0;
    while q < 1 << 54 {
        r <<= 1;
        q <<= 1;
        if r >= b {
            r -= b;
            q |= 1;
        }
        exponent -= 1;
    }
    let extra = 128 - q.leading_zeros() - 53;
    let half = 1u128 << (extra - 1);
    let below = q & ((1u128 << extra) - 1);
    let mut mantissa = q >> extra;
    if below > half || (below == half && (r != 0 || mantissa & 1 == 1)) {
        mantissa += 1;
    }
    // mantissa <= 2^53: exact as a float; the power of two is exact too.
    mantissa as f64 * 2f64.powi(exponent + extra as i32)
}

/// Text formatted on the stack (floats are written a few million times).
struct StackText {
    bytes: [u8; 64],
    len: usize,
}

impl StackText {
    fn of(args: std::fmt::Arguments) -> Out<StackText> {
        let mut text = StackText { bytes: [0; 64], len: 0 };
        std::fmt::write(&mut text, args).map_err(|_| Fallback)?;
        Ok(text)
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).expect("formatted text")
    }
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.bytes.len() {
            return Err(std::fmt::Error);
        }
        self.bytes[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Python's `round(x, digits)`: the decimal rounding of x's exact value, half to even.
fn round(x: f64, digits: usize) -> Out<f64> {
    if !x.is_finite() {
        return Err(Fallback);
    }
    round_fast(x, digits).map_or_else(|| round_exact(x, digits), Ok)
}

/// `round` without text: y = x·10^d is within half an ulp of the exact x·10^d (10^d is
/// exact up to 10^22), so unless y is that close to a half-integer, y's nearest integer
/// r is the exact value's nearest integer, the decimal r·10^-d is Python's rounding, and
/// r / 10^d (two exact floats, one correctly rounded division) is the float nearest it,
/// which is what Python reads back. Near a half, or too large, it says None.
fn round_fast(x: f64, digits: usize) -> Option<f64> {
    const POW10: [f64; 10] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];
    let scale = *POW10.get(digits)?;
    let y = x * scale;
    if y.is_nan() || y.abs() >= (1u64 << 50) as f64 {
        return None;
    }
    // 2^-50·|y| is at least two ulps of y; 2^-60 keeps the margin above zero.
    let margin = y.abs() * f64::powi(2.0, -50) + f64::powi(2.0, -60);
    if ((y - y.floor()) - 0.5).abs() <= margin {
        return None;
    }
    Some(y.round() / scale)
}

/// `float(o, round(x, digits))` without formatting a float: the rounded decimal r·10^-d
/// has at most 15 significant digits, so it is the shortest text reading back as its
/// float (no other decimal that short reads as the same float), which is Python's repr
/// from 1e-4 up. Elsewhere it goes the long way.
fn rounded(o: &mut String, x: f64, digits: usize) -> Out {
    if x.is_finite() && digits <= 9 {
        let scale = 10u64.pow(digits as u32);
        if let Some(v) = round_fast(x, digits) {
            let r = (x * scale as f64).round();
            let units = r.abs() as u64;
            if units < 1_000_000_000_000_000 && (units == 0 || digits < 4 || units >= scale / 10_000) {
                decimal(o, v.is_sign_negative(), units, digits);
                return Ok(());
            }
            if units != 0 && units < scale / 10_000 {
                tiny_decimal(o, v.is_sign_negative(), units, digits);
                return Ok(());
            }
        }
    }
    float(o, round(x, digits)?)
}

/// `float(o, seconds(micro))`, written from the integer as `rounded` does.
fn seconds_text(o: &mut String, micro: i128) -> Out {
    let units = micro.unsigned_abs();
    if units >= 1_000_000_000_000_000 {
        return float(o, seconds(micro)?);
    }
    if units != 0 && units < 100 {
        tiny_decimal(o, micro < 0, units as u64, 6);
    } else {
        decimal(o, micro < 0, units as u64, 6);
    }
    Ok(())
}

/// units·10^-digits below 1e-4 (units > 0) as Python's repr writes the float nearest it:
/// exponent form (`5e-06`, `1.25e-07`). The decimal's digits are the shortest text that
/// reads back as that float: any other decimal of as few digits is a multiple of
/// 10^-digits too, so at least 10^-digits away, millions of ulps.
fn tiny_decimal(o: &mut String, negative: bool, mut units: u64, mut digits: usize) {
    while units.is_multiple_of(10) {
        units /= 10;
        digits -= 1;
    }
    let mut text = [0u8; 20];
    let mut at = text.len();
    while units > 0 {
        at -= 1;
        text[at] = b'0' + (units % 10) as u8;
        units /= 10;
    }
    let significant = &text[at..];
    let exponent = digits + 1 - significant.len();
    if negative {
        o.push('-');
    }
    o.push(significant[0] as char);
    if significant.len() > 1 {
        o.push('.');
        push_ascii(o, &significant[1..]);
    }
    o.push_str("e-");
    if exponent < 10 {
        o.push('0');
    }
    uint(o, exponent as u64);
}

/// Digits or hex digits made here: ASCII, so the UTF-8 check (a call per number, a
/// few hundred numbers per class) is a debug assertion only.
fn push_ascii(o: &mut String, text: &[u8]) {
    debug_assert!(text.is_ascii());
    // SAFETY: every caller passes ASCII digits, quotes or letters it wrote itself.
    o.push_str(unsafe { std::str::from_utf8_unchecked(text) });
}

/// A u64 as text, two digits at a time.
fn uint(o: &mut String, mut v: u64) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";
    let mut text = [0u8; 20];
    let mut at = text.len();
    while v >= 100 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        at -= 2;
        text[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if v >= 10 {
        at -= 2;
        text[at..at + 2].copy_from_slice(&PAIRS[v as usize * 2..v as usize * 2 + 2]);
    } else {
        at -= 1;
        text[at] = b'0' + v as u8;
    }
    push_ascii(o, &text[at..]);
}

/// units·10^-digits as Python's repr writes the float nearest it (from 1e-4 up, under
/// 10^15 units).
fn decimal(o: &mut String, negative: bool, units: u64, digits: usize) {
    let scale = 10u64.pow(digits as u32);
    if negative {
        o.push('-');
    }
    let (whole, mut fraction) = (units / scale, units % scale);
    uint(o, whole);
    o.push('.');
    if fraction == 0 {
        o.push('0');
    } else {
        let mut width = digits;
        while fraction % 10 == 0 {
            fraction /= 10;
            width -= 1;
        }
        let mut text = [b'0'; 20];
        let mut at = text.len();
        while fraction > 0 {
            at -= 1;
            text[at] = b'0' + (fraction % 10) as u8;
            fraction /= 10;
        }
        push_ascii(o, &text[text.len() - width..]);
    }
}

/// `round` through Rust's exact decimal formatting (what Python's round does).
fn round_exact(x: f64, digits: usize) -> Out<f64> {
    StackText::of(format_args!("{x:.digits$}"))?.as_str().parse().map_err(|_| Fallback)
}

/// `round(micro / 1_000_000, 6)`: below 2^52 micro-units the float nearest the decimal
/// is within half a millionth of it (its ulp is under 1e-6), so rounding to 6 decimals
/// gives that decimal back, and reading it gives the same float.
fn seconds(micro: i128) -> Out<f64> {
    let x = div(micro, 1_000_000)?;
    if micro.unsigned_abs() < 1 << 52 {
        Ok(x)
    } else {
        round(x, 6)
    }
}

/// Python's `round(x)`: the nearest integer, half to even.
fn round_int(x: f64) -> Out<i128> {
    if !x.is_finite() || x.abs() >= 1e38 {
        return Err(Fallback);
    }
    Ok(x.round_ties_even() as i128)
}

/// Python's `repr(x)` (what `json.dumps` writes): the shortest text that reads back as x,
/// in exponent form below 1e-4 and from 1e16, with a two-digit signed exponent.
fn float(o: &mut String, x: f64) -> Out {
    if !x.is_finite() {
        return Err(Fallback);
    }
    let text = StackText::of(format_args!("{x:?}"))?;
    match text.as_str().split_once('e') {
        None => o.push_str(text.as_str()),
        Some((mantissa, exponent)) => {
            let (sign, digits) = match exponent.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exponent),
            };
            let _ = write!(o, "{mantissa}e{sign}{digits:0>2}");
        }
    }
    Ok(())
}

// --- tables.py ----------------------------------------------------------------------

struct TablePatterns {
    read: Regex,
    into: Regex,
    update: Regex,
    join_split: Regex,
    on_using: Regex,
    ddl: Regex,
    delete: Regex,
}

fn patterns() -> &'static TablePatterns {
    static PATTERNS: OnceLock<TablePatterns> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        let name = r"(?:`[^`]+`|[a-z0-9_$?]+)(?:\.(?:`[^`]+`|[a-z0-9_$?]+))?";
        let re = |p: String| Regex::new(&format!("(?-u){p}")).expect("a tables.py pattern");
        TablePatterns {
            read: re(format!(r"\b(?:from|join)\s+({name}(?:\s*,\s*{name})*)")),
            into: re(format!(r"\binto\s+(?:table\s+)?({name})")),
            update: re(format!(
                r"^update\s+(?:low_priority\s+)?(?:ignore\s+)?({name}(?:\s+(?:as\s+)?[a-z_]\w*)?(?:\s*(?:,|(?:(?:inner|cross|left|right|straight_join|natural)\s+)*join)\s*{name}(?:\s+(?:as\s+)?[a-z_]\w*)?(?:\s+on\s+.*?|\s+using\s*\([^)]*\))?)*)\s+set\b"
            )),
            join_split: re(r"\s+(?:(?:inner|cross|left|right|natural)\s+)*join\s+".to_string()),
            on_using: re(r"\s+(?:on|using)\b.*".to_string()),
            ddl: re(format!(
                r"^(?:alter|truncate|drop|create|rename|optimize|analyze|repair)\s+(?:(?:temporary|online|offline|ignore)\s+)*(?:table\s+)?(?:if\s+(?:not\s+)?exists\s+)?({name})"
            )),
            delete: re(format!(
                r"^delete\s+(?:low_priority\s+)?(?:quick\s+)?(?:ignore\s+)?({name})?\s*(?:from\s+({name}))?"
            )),
        }
    })
}

/// tables.py `_names`.
fn names(text: &str, into: &mut std::collections::BTreeSet<String>) {
    const ALIAS_WORDS: [&str; 8] = ["where", "set", "on", "using", "group", "order", "limit", "having"];
    for part in text.split(',') {
        let Some(name) = part.split_ascii_whitespace().next() else { continue };
        if !ALIAS_WORDS.contains(&name) && !name.starts_with('(') {
            into.insert(name.replace('`', ""));
        }
    }
}

/// tables.py `tables` as JSON, for printable ASCII fingerprints (where Python's Unicode
/// classes and `str.strip`/`split` mean what these ASCII ones do).
fn tables(o: &mut String, fingerprint: &str) -> Out {
    if !fingerprint.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err(Fallback);
    }
    let p = patterns();
    let text = fingerprint.trim_matches(' ').to_ascii_lowercase();
    let verb = text.split(' ').next().unwrap_or("");
    let group = |c: &regex::bytes::Captures, i: usize| {
        c.get(i).map(|m| std::str::from_utf8(m.as_bytes()).expect("ASCII").to_string())
    };
    let mut read = std::collections::BTreeSet::new();
    let mut written = std::collections::BTreeSet::new();
    for c in p.read.captures_iter(text.as_bytes()) {
        names(&group(&c, 1).unwrap_or_default(), &mut read);
    }
    match verb {
        "insert" | "replace" | "load" => {
            if let Some(c) = p.into.captures(text.as_bytes()) {
                written.insert(group(&c, 1).unwrap_or_default().replace('`', ""));
            }
        }
        "update" => {
            if let Some(c) = p.update.captures(text.as_bytes()) {
                let target = group(&c, 1).unwrap_or_default();
                for piece in p.join_split.split(target.as_bytes()) {
                    let piece = p.on_using.replace(piece, &b""[..]);
                    names(std::str::from_utf8(&piece).expect("ASCII"), &mut written);
                }
            }
        }
        "delete" => {
            if let Some(c) = p.delete.captures(text.as_bytes()) {
                let first = group(&c, 1).filter(|t| t != "from");
                if let Some(t) = first.or_else(|| group(&c, 2)) {
                    if !t.is_empty() {
                        written.insert(t.replace('`', ""));
                    }
                }
            }
        }
        "alter" | "truncate" | "drop" | "create" | "rename" => {
            if let Some(c) = p.ddl.captures(text.as_bytes()) {
                written.insert(group(&c, 1).unwrap_or_default().replace('`', ""));
            }
        }
        _ => {}
    }
    if verb == "delete" {
        read.retain(|t| !written.contains(t));
    }
    read.remove("dual");
    o.push_str("{\"read\": [");
    for (k, t) in read.iter().enumerate() {
        separator(o, k);
        string(o, t);
    }
    o.push_str("], \"written\": [");
    for (k, t) in written.iter().enumerate() {
        separator(o, k);
        string(o, t);
    }
    o.push_str("]}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr(x: f64) -> String {
        let mut s = String::new();
        float(&mut s, x).unwrap();
        s
    }

    #[test]
    fn floats_print_as_python_repr() {
        for (x, text) in [
            (0.000316, "0.000316"),
            (1e-6, "1e-06"),
            (5e-5, "5e-05"),
            (0.0001, "0.0001"),
            (2.0, "2.0"),
            (1e16, "1e+16"),
            (1.5e17, "1.5e+17"),
            (123456789012345.6, "123456789012345.6"),
            (-3.25e-7, "-3.25e-07"),
            (0.0, "0.0"),
        ] {
            assert_eq!(repr(x), text);
        }
    }

    #[test]
    fn integer_division_is_correctly_rounded() {
        for (a, b) in [(1u128, 3u128), (2, 3), (10, 4), ((1 << 70) + 1, 3), (255u128 << 64, 12345678901234567891)] {
            let exact = div_u128(a, b);
            if a < 1 << 53 && b < 1 << 53 {
                assert_eq!(exact, a as f64 / b as f64);
            }
            assert!(exact > 0.0);
        }
        // Ties go to even: 2^54 + 2 over 2 is 2^53 + 1 exactly; (2^55 + 2) / 2 = 2^54 + 1 -> 2^54.
        assert_eq!(div_u128((1 << 55) + 2, 2), (1u64 << 54) as f64);
        assert_eq!(div_u128((1 << 55) + 6, 2), ((1u64 << 54) + 4) as f64);
    }

    #[test]
    fn rounding_without_text_is_rounding_through_text() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut fast = 0;
        for i in 0..400_000u64 {
            let r = next();
            let x = match i % 4 {
                0 => (r % 10_000_000_000) as f64 / 1e6,      // seconds-like quotients
                1 => (r >> 11) as f64 / (1u64 << 53) as f64, // [0, 1)
                2 => (r % 1_000_000) as f64 / 8.0 / 1e6,     // halves at the 7th decimal
                _ => f64::from_bits(r >> 2) % 1e9,           // any magnitude
            };
            for digits in [0, 3, 6, 9] {
                let exact = round_exact(x, digits).unwrap();
                if let Some(y) = round_fast(x, digits) {
                    fast += 1;
                    assert_eq!(y.to_bits(), exact.to_bits(), "round({x:e}, {digits})");
                }
                assert_eq!(round(x, digits).unwrap().to_bits(), exact.to_bits());
            }
        }
        assert!(fast > 1_000_000, "the fast path ran {fast} times");
        assert_eq!(round_fast(2.5, 0), None);
    }

    #[test]
    fn rounded_text_is_repr_of_round() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for i in 0..300_000u64 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let x = match i % 5 {
                0 => (state % 10_000_000_000) as f64 / 1e6,
                1 => (state >> 11) as f64 / (1u64 << 53) as f64 / 1e3,
                2 => -((state % 1_000_000) as f64) / 7.0,
                // Below 1e-4: exponent form, written from the digits (`tiny_decimal`).
                3 => (state % 100_000) as f64 / [1e9, 1e10, 3e9][(state % 3) as usize],
                _ => f64::from_bits(state >> 2) % 1e12,
            };
            for digits in [0, 3, 6, 9] {
                let (mut fast, mut slow) = (String::new(), String::new());
                rounded(&mut fast, x, digits).unwrap();
                float(&mut slow, round(x, digits).unwrap()).unwrap();
                assert_eq!(fast, slow, "round({x:e}, {digits})");
            }
        }
        for (x, digits, text) in [
            (1e-4, 6, "0.0001"),
            (5e-5, 6, "5e-05"),
            (-1e-9, 6, "-0.0"),
            (0.0, 3, "0.0"),
            (2.0, 0, "2.0"),
            (1.25e-7, 9, "1.25e-07"),
            (-3e-6, 6, "-3e-06"),
        ] {
            let mut o = String::new();
            rounded(&mut o, x, digits).unwrap();
            assert_eq!(o, text);
        }
    }

    #[test]
    fn seconds_text_is_repr_of_seconds() {
        let mut state = 0x1234_5678_9abc_def1u64;
        for i in 0..300_000u64 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let micro = match i % 3 {
                0 => (state % 1_000) as i128,
                1 => (state % 100_000_000_000) as i128,
                _ => -((state >> 4) as i128),
            };
            let (mut fast, mut slow) = (String::new(), String::new());
            seconds_text(&mut fast, micro).unwrap();
            float(&mut slow, seconds(micro).unwrap()).unwrap();
            assert_eq!(fast, slow, "{micro}");
        }
    }

    #[test]
    fn rounding_is_python_round() {
        assert_eq!(round(0.0000005, 6).unwrap(), 0.0); // 5e-07 is just below the half
        assert_eq!(round(2.675, 2).unwrap(), 2.67);
        assert_eq!(round_int(2.5).unwrap(), 2);
        assert_eq!(round_int(3.5).unwrap(), 4);
    }

    #[test]
    fn integers_print_as_display() {
        for v in [0i128, 7, -7, 1 << 64, -(1 << 100), i128::MAX, i128::MIN + 1, u64::MAX as i128] {
            let mut s = String::new();
            int(&mut s, v);
            assert_eq!(s, v.to_string());
        }
    }

    #[test]
    fn seconds_are_rounded_micro_units() {
        for micro in [0i128, 1, 316, 999_999, 123_456_789, (1 << 52) - 1, 1 << 52, -5, 4_503_599_627_370_495] {
            assert_eq!(seconds(micro).unwrap(), round(div(micro, 1_000_000).unwrap(), 6).unwrap(), "{micro}");
        }
    }
}
