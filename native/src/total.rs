//! Ranges merged in input order into one digest that stays in Rust.
//!
//! The twin of govern/digest/aggregate.py's `merge` and `close_runs`: each range's
//! result (`range::RangeDigest`, its own interned names and texts) is rebased on the
//! total's tables, given the `ts`/`db` it inherited from before it, merged class by
//! class, and its runs still open at its ends are stitched to the runs open at the end
//! of everything before it. Classes beyond the cap are folded into `other`, smallest
//! first. Python asks for classes one at a time (`python.rs`), so a digest of 200,000
//! classes never exists as 200,000 Python objects.
//!
//! Every rule here is the Python merge's, in the same order (the conformance tests
//! compare the two engines' JSON): where Python walks a dict of connections, both walk
//! them in ascending connection number.

use crate::aggregate::{Interner, NumStats};

use crate::class::{Class, Runs};
use crate::range::{Bad, RangeDigest, Run};
use crate::time::Ts;
use crate::values::{Bits, Values};

type HashMap<K, V> = hashbrown::HashMap<K, V, foldhash::fast::FixedState>;

/// Above this many classes in memory, classes are frozen into compact bytes after each
/// merge (a class of a few events: about 250 bytes instead of 1.3 KB) and thawed when a
/// later range adds to them. Logs of hundreds or a few thousand classes never freeze.
pub const FREEZE_ABOVE: usize = 4096;

/// A class, in memory or frozen (postcard bytes of `Class`).
pub enum Slot {
    Live(Box<Class>),
    Frozen(Box<[u8]>),
}

impl Slot {
    /// The class, decoded if frozen.
    pub fn get(&self) -> std::borrow::Cow<'_, Class> {
        match self {
            Slot::Live(c) => std::borrow::Cow::Borrowed(c),
            Slot::Frozen(bytes) => std::borrow::Cow::Owned(thaw(bytes)),
        }
    }
}

/// The fields of a `Class` that come first in its frozen bytes, up to its sample: what
/// the digest rules' screens read (`_native.Total.rule_columns`), decoded without the
/// runs and sketches after them.
#[derive(serde::Deserialize)]
pub struct ClassHead {
    pub kind: u8,
    pub count: u64,
    pub ts_min: Option<crate::time::Ts>,
    pub ts_max: Option<crate::time::Ts>,
    pub nums: Vec<crate::aggregate::NumStats>,
    pub decimal: crate::values::Bits,
    pub flags: Vec<(u64, u64)>,
    pub strings: Vec<Values>,
    pub histogram: [u64; 8],
    pub sample: Option<Box<crate::class::Sample>>,
}

impl Slot {
    /// What `ClassHead` holds (count, numeric statistics, value counts, sample) of the class,
    /// a frozen one decoded only that far.
    pub fn head<R>(
        &self,
        read: impl FnOnce(u64, &[crate::aggregate::NumStats], &[Values], Option<&crate::class::Sample>) -> R,
    ) -> R {
        match self {
            Slot::Live(c) => read(c.count, &c.nums, &c.strings, c.sample.as_deref()),
            Slot::Frozen(bytes) => {
                let (h, _) = postcard::take_from_bytes::<ClassHead>(bytes).expect("a frozen class decodes");
                read(h.count, &h.nums, &h.strings, h.sample.as_deref())
            }
        }
    }
}

fn thaw(bytes: &[u8]) -> Class {
    postcard::from_bytes(bytes).expect("a frozen class decodes")
}

/// A class's frozen bytes, written into `scratch` (grown once to the largest class, not
/// for each class from nothing) and copied out in one allocation of their exact size.
fn frozen(c: &Class, scratch: &mut Vec<u8>) -> Box<[u8]> {
    loop {
        if scratch.len() < 1024 {
            scratch.resize(4096, 0);
        }
        match postcard::to_slice(c, scratch) {
            Ok(bytes) => return Box::from(&*bytes),
            Err(postcard::Error::SerializeBufferFull) => {
                let grown = scratch.len() * 2;
                scratch.resize(grown, 0);
            }
            Err(e) => panic!("a class encodes: {e}"),
        }
    }
}

/// The first fields of a frozen `Class`, as postcard wrote them: what ranking and capping
/// read, decoded without the rest (samples, runs, values, sketches of distinct counts).
#[derive(serde::Deserialize)]
struct Head {
    _kind: u8,
    count: u64,
    _ts_min: Option<Ts>,
    _ts_max: Option<Ts>,
    nums: Vec<NumStats>,
}

impl Slot {
    /// `f(count, nums)` of the class, reading only the head of a frozen one.
    pub fn with_head<R>(&self, f: impl FnOnce(u64, &[NumStats]) -> R) -> R {
        match self {
            Slot::Live(c) => f(c.count, &c.nums),
            Slot::Frozen(bytes) => {
                let (head, _) = postcard::take_from_bytes::<Head>(bytes).expect("a frozen class decodes");
                f(head.count, &head.nums)
            }
        }
    }
}

/// pt's query ID as a number: the MD5 of the fingerprint, big-endian (its 32 uppercase
/// hex digits sort as the numbers do).
pub fn query_id_number(fingerprint: &[u8]) -> u128 {
    use md5::{Digest, Md5};
    u128::from_be_bytes(Md5::digest(fingerprint).into())
}

/// Fingerprints that name no kept class, lead or open run are forgotten once this many
/// more of them (or as many as there are classes, if more) have piled up since the last
/// time: distinct statements past `--max-classes` then cost no memory that grows with them.
pub const FORGET_AFTER: usize = 16_384;

/// No class: the fingerprint's events are counted in `other`.
const NONE: u32 = u32::MAX;
/// Malformed events kept with their place (`aggregate.MALFORMED_KEPT`).
pub const MALFORMED_KEPT: usize = 10;

/// A run open at an end of the digest so far (`aggregate.OpenRun`): its class's
/// fingerprint (none: a run of events that are not single-row writes), its length, and
/// the fingerprint that ran before it on the connection (none: not known, or nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenRun {
    pub key: Option<u32>,
    pub length: u64,
    pub lead: Option<u32>,
}

/// Runs open at the ends, per connection number (`aggregate.OpenRuns`).
#[derive(Default)]
struct OpenRuns {
    whole: HashMap<u64, OpenRun>,
    heads: HashMap<u64, OpenRun>,
    tails: HashMap<u64, OpenRun>,
}

/// A malformed event with its place (`aggregate.Malformed`).
pub struct Malformed {
    pub file: u32,
    pub line: u64,
    pub bad: Bad,
}

/// The merged digest.
#[derive(Default)]
pub struct Total {
    pub fingerprints: Interner,
    pub num_names: Interner,
    pub flag_names: Interner,
    pub text_names: Interner,
    pub texts: Interner,
    pub servers: Interner,
    /// Per fingerprint id: its index in `classes`, or `NONE`.
    class_of: Vec<u32>,
    pub classes: Vec<(u32, Slot)>,
    /// How many of `classes` are `Slot::Live`.
    live: usize,
    /// Indexes of the `Slot::Live` classes (`live` of them).
    live_list: Vec<u32>,
    /// Per class index: the merge (`merges`) that last made it live or added to it.
    touched: Vec<u32>,
    /// Merges so far (`add`).
    merges: u32,
    pub other: Option<Class>,
    pub events: u64,
    pub no_statement: u64,
    /// Server banners read as record boundaries.
    pub banners: u64,
    /// Events `--since`, `--until` or `--filter` left out.
    pub filtered: u64,
    pub malformed: u64,
    pub malformed_kept: Vec<Malformed>,
    pub minutes: HashMap<Ts, (u64, i128)>,
    pub last_ts: Option<Ts>,
    pub last_db: Option<u32>,
    open_runs: OpenRuns,
    open_single: OpenRuns,
    pub max_classes: usize,
    /// `FREEZE_ABOVE`, or another bound (tests and the fuzzer freeze everything: 0).
    pub freeze_above: usize,
    /// `FORGET_AFTER`, or another (tests forget after every merge: 0).
    pub forget_after: usize,
    /// Fingerprints that named no class after the last forgetting.
    unclassed_kept: usize,
    /// Fingerprints forgotten so far (the core's own count of state it did not keep).
    pub forgotten: u64,
    /// Query IDs by fingerprint id, computed once when first asked (`query_ids`).
    ids: std::sync::OnceLock<Vec<u128>>,
}

/// A range's ids in the total's tables.
struct IdMaps {
    fingerprints: Vec<u32>,
    nums: Vec<u16>,
    flags: Vec<u16>,
    text_names: Vec<u16>,
    texts: Vec<u32>,
}

fn map_all(from: &Interner, to: &mut Interner) -> Vec<u32> {
    (0..from.len() as u32).map(|i| to.id(from.get(i))).collect()
}

impl Total {
    pub fn new(max_classes: usize) -> Total {
        Total { max_classes, freeze_above: FREEZE_ABOVE, forget_after: FORGET_AFTER, ..Total::default() }
    }

    /// Add the next range of the input (aggregate.py `merge`, after `shift_lines`):
    /// `file` is its input's index, `line_base` the lines of that input before it.
    pub fn add(&mut self, mut r: RangeDigest, file: u32, line_base: u64, server: Option<&[u8]>) {
        self.ids.take();
        let maps = IdMaps {
            fingerprints: map_all(&r.fingerprints, &mut self.fingerprints),
            nums: map_all(&r.num_names, &mut self.num_names).into_iter().map(|i| i as u16).collect(),
            flags: map_all(&r.flag_names, &mut self.flag_names).into_iter().map(|i| i as u16).collect(),
            text_names: map_all(&r.text_names, &mut self.text_names).into_iter().map(|i| i as u16).collect(),
            texts: map_all(&r.texts, &mut self.texts),
        };
        self.class_of.resize(self.fingerprints.len(), NONE);
        let server = server.map(|s| self.servers.id(s));
        let db_name = self.text_names.id(b"db") as u16;

        // _settle_context: what the range's first events inherited from before it.
        if r.minutes_unknown.0 > 0 {
            if let Some(ts) = self.last_ts {
                let slot = self.minutes.entry(minute_of(ts)).or_insert((0, 0));
                slot.0 += r.minutes_unknown.0;
                slot.1 += r.minutes_unknown.1;
            }
        }
        let classes = std::mem::take(&mut r.classes);
        let other = r.other.take();
        let settle = |class: Class, this: &Total| {
            let mut c = rebase(class, &maps, file, line_base, server);
            this.settle(&mut c, db_name);
            c
        };
        let rebased: Vec<(u32, Class)> =
            classes.into_iter().map(|(fp, c)| (maps.fingerprints[fp as usize], settle(c, self))).collect();
        let other = other.map(|c| settle(c, self));

        // A range of more than twice `freeze_above` classes is frozen as it is merged: a new
        // class at once, a frozen one thawed, merged and frozen again where it lies (no
        // 1.3 KB box per class, allocated, copied into and freed). A smaller range's
        // classes stay in memory until the end of the next merge (`freeze_idle`): the
        // runs stitched across the next boundary end in them, and a frozen class would be
        // thawed and frozen again for each such run (frozen or live, the digest is the
        // same: tests freeze everything).
        self.merges = self.merges.wrapping_add(1);
        let freezing = rebased.len() > 2 * self.freeze_above;
        let mut scratch = Vec::new();
        for (fp, class) in rebased {
            match (self.class_of[fp as usize], freezing) {
                (NONE, true) => {
                    self.class_of[fp as usize] = self.classes.len() as u32;
                    self.classes.push((fp, Slot::Frozen(frozen(&class, &mut scratch))));
                    self.touched.push(0);
                }
                (NONE, false) => {
                    let i = self.classes.len() as u32;
                    self.class_of[fp as usize] = i;
                    self.classes.push((fp, Slot::Live(Box::new(class))));
                    self.touched.push(self.merges);
                    self.live_list.push(i);
                    self.live += 1;
                }
                (i, true) => match &mut self.classes[i as usize].1 {
                    Slot::Frozen(bytes) => {
                        let mut c = thaw(bytes);
                        c.merge(&class);
                        *bytes = frozen(&c, &mut scratch);
                    }
                    Slot::Live(c) => c.merge(&class),
                },
                (i, false) => {
                    self.touched[i as usize] = self.merges;
                    self.live_class(i as usize).merge(&class);
                }
            }
        }
        if let Some(o) = other {
            self.other.get_or_insert_with(Class::default).merge(&o);
        }

        // _stitch: the range's open runs, per connection number, in the total's ids.
        let fp = |k: Option<u32>| k.map(|k| maps.fingerprints[k as usize]);
        let open = |run: &Run, single: bool| OpenRun {
            key: fp(run.key),
            length: run.length,
            lead: if single { None } else { fp(run.lead) },
        };
        let mut runs = OpenRuns::default();
        let mut singles = OpenRuns::default();
        for c in &r.conns {
            let number = c.number;
            place(&mut runs, number, open(&c.run, false), c.first_run.as_ref().map(|f| open(f, false)));
            place(&mut singles, number, open(&c.single, true), c.first_single.as_ref().map(|f| open(f, true)));
        }
        let mut left = std::mem::take(&mut self.open_runs);
        stitch(&mut left, runs, |run| self.close_run(run));
        self.open_runs = left;
        let mut left = std::mem::take(&mut self.open_single);
        stitch(&mut left, singles, |run| self.close_single_run(run));
        self.open_single = left;

        for (minute, n, micro) in &r.minutes {
            let slot = self.minutes.entry(*minute).or_insert((0, 0));
            slot.0 += n;
            slot.1 += micro;
        }
        self.events += r.events;
        self.no_statement += r.no_statement;
        self.banners += r.banners;
        self.filtered += r.filtered;
        self.malformed += r.malformed.len() as u64;
        let mut bad = std::mem::take(&mut r.malformed);
        // engine.py `finish` lists a range's malformed events sorted by offset, then reason.
        bad.sort_by_key(|a| (a.0, reason_rank(&a.2), a.1));
        for (_, line, why) in bad.into_iter().take(MALFORMED_KEPT) {
            if self.malformed_kept.len() < MALFORMED_KEPT {
                self.malformed_kept.push(Malformed { file, line: line + line_base, bad: why });
            }
        }
        if r.ts_known {
            self.last_ts = r.last_ts;
        }
        if r.db_known {
            self.last_db = r.last_db.map(|d| maps.texts[d as usize]);
        }
        self.cap_classes();
        self.forget_fingerprints();
        self.freeze_idle();
    }

    /// Forget the fingerprints nothing names any more (classes folded into `other`, and
    /// fingerprints that never had a class): renumber the rest in their order and rewrite
    /// every reference (classes, their leads, `other`'s leads, open runs). A fingerprint
    /// seen again later is interned anew and, having no class either way, behaves as
    /// before, so the digest is the same with or without forgetting (tests/total.rs).
    fn forget_fingerprints(&mut self) {
        let unclassed = self.fingerprints.len() - self.classes.len();
        if unclassed < self.unclassed_kept + self.forget_after.max(self.classes.len()) {
            return;
        }
        let mut used = vec![false; self.fingerprints.len()];
        let mark_runs = |used: &mut Vec<bool>, runs: &Runs| runs.leads.iter().for_each(|l| used[l.0 as usize] = true);
        let mark_class = |used: &mut Vec<bool>, c: &Class| {
            mark_runs(used, &c.runs);
            if let Some(s) = &c.single_runs {
                mark_runs(used, s);
            }
        };
        for (fp, slot) in &self.classes {
            used[*fp as usize] = true;
            mark_class(&mut used, &slot.get());
        }
        if let Some(o) = &self.other {
            mark_class(&mut used, o);
        }
        for open in [&self.open_runs, &self.open_single] {
            for run in open.whole.values().chain(open.heads.values()).chain(open.tails.values()) {
                for fp in [run.key, run.lead].into_iter().flatten() {
                    used[fp as usize] = true;
                }
            }
        }
        let mut fingerprints = Interner::default();
        let map: Vec<u32> = (0..used.len())
            .map(|i| if used[i] { fingerprints.id(self.fingerprints.get(i as u32)) } else { NONE })
            .collect();
        self.forgotten += (used.len() - fingerprints.len()) as u64;
        self.fingerprints = fingerprints;
        let remap_runs = |runs: &mut Runs| runs.leads.iter_mut().for_each(|l| l.0 = map[l.0 as usize]);
        let remap_class = |c: &mut Class| {
            remap_runs(&mut c.runs);
            if let Some(s) = c.single_runs.as_mut() {
                remap_runs(s);
            }
        };
        self.class_of = vec![NONE; self.fingerprints.len()];
        for (i, (fp, slot)) in self.classes.iter_mut().enumerate() {
            *fp = map[*fp as usize];
            self.class_of[*fp as usize] = i as u32;
            match slot {
                Slot::Live(c) => remap_class(c),
                Slot::Frozen(bytes) => {
                    let mut c = thaw(bytes);
                    if !c.runs.leads.is_empty() || c.single_runs.as_ref().is_some_and(|s| !s.leads.is_empty()) {
                        remap_class(&mut c);
                        *bytes = frozen(&c, &mut Vec::new());
                    }
                }
            }
        }
        if let Some(o) = self.other.as_mut() {
            remap_class(o);
        }
        for open in [&mut self.open_runs, &mut self.open_single] {
            for run in open.whole.values_mut().chain(open.heads.values_mut()).chain(open.tails.values_mut()) {
                run.key = run.key.map(|k| map[k as usize]);
                run.lead = run.lead.map(|k| map[k as usize]);
            }
        }
        self.unclassed_kept = self.fingerprints.len() - self.classes.len();
    }

    /// Class `i`, in memory (thawed if frozen).
    fn live_class(&mut self, i: usize) -> &mut Class {
        let slot = &mut self.classes[i].1;
        if let Slot::Frozen(bytes) = slot {
            *slot = Slot::Live(Box::new(thaw(bytes)));
            self.live += 1;
            self.live_list.push(i as u32);
        }
        match slot {
            Slot::Live(c) => c,
            Slot::Frozen(_) => unreachable!("thawed above"),
        }
    }

    /// Freeze every class in memory once there are more than `FREEZE_ABOVE`.
    fn freeze(&mut self) {
        if self.live <= self.freeze_above {
            return;
        }
        self.live_list.clear();
        let mut scratch = Vec::new();
        for (_, slot) in &mut self.classes {
            if let Slot::Live(c) = slot {
                *slot = Slot::Frozen(frozen(c, &mut scratch));
            }
        }
        self.live = 0;
    }

    /// After a merge, once there are more than `FREEZE_ABOVE` classes in memory: freeze
    /// those the range did not add to (the runs stitched at its ends may have thawed
    /// some), and keep the range's own in memory if they are at most twice `FREEZE_ABOVE`
    /// (else freeze all). Each class is then frozen once per range it is in, however many
    /// runs across the range's ends close in it.
    fn freeze_idle(&mut self) {
        if self.live <= self.freeze_above {
            return;
        }
        let now = self.merges;
        let recent = self.live_list.iter().filter(|&&i| self.touched[i as usize] == now).count();
        if recent > 2 * self.freeze_above {
            self.freeze();
            return;
        }
        let mut scratch = Vec::new();
        let mut kept = Vec::with_capacity(recent);
        for i in std::mem::take(&mut self.live_list) {
            if self.touched[i as usize] == now {
                kept.push(i);
                continue;
            }
            let slot = &mut self.classes[i as usize].1;
            if let Slot::Live(c) = slot {
                *slot = Slot::Frozen(frozen(c, &mut scratch));
                self.live -= 1;
            }
        }
        self.live_list = kept;
    }

    /// Events of a range that inherit `ts`/`db` from before it get the total's last ones.
    fn settle(&self, c: &mut Class, db_name: u16) {
        if let Some(s) = c.sample.as_mut() {
            if s.unknown_ts {
                s.ts = self.last_ts;
                s.unknown_ts = false;
            }
            if s.unknown_db {
                s.db = self.last_db;
                s.unknown_db = false;
            }
        }
        if c.unknown_db > 0 {
            if let Some(db) = self.last_db {
                let i = db_name as usize;
                if c.strings.len() <= i {
                    c.strings.resize_with(i + 1, Values::default);
                }
                c.strings[i].add(db, c.unknown_db);
            }
            c.unknown_db = 0;
        }
        if c.unknown_ts {
            if let Some(ts) = self.last_ts {
                c.see_ts(ts);
            }
            c.unknown_ts = false;
        }
    }

    /// Where a run of `fp` is counted: its class, or `other` once folded.
    fn class_for(&mut self, fp: u32) -> &mut Class {
        match self.class_of.get(fp as usize).copied().unwrap_or(NONE) {
            NONE => self.other.get_or_insert_with(Class::default),
            i => self.live_class(i as usize),
        }
    }

    fn close_run(&mut self, run: OpenRun) {
        let Some(key) = run.key else { return };
        let runs = &mut self.class_for(key).runs;
        runs.close(run.length);
        if let Some(lead) = run.lead {
            runs.add_lead(lead, run.length);
        }
    }

    fn close_single_run(&mut self, run: OpenRun) {
        if let Some(key) = run.key {
            self.class_for(key).single_runs.get_or_insert_with(Default::default).close(run.length);
        }
    }

    /// `cap_classes`: keep `max_classes` classes, fold the smallest into `other`.
    fn cap_classes(&mut self) {
        let excess = self.classes.len().saturating_sub(self.max_classes);
        if excess == 0 {
            return;
        }
        let qt = self.num_names.id(b"Query_time") as usize;
        let fps = &self.fingerprints;
        let mut order: Vec<usize> = (0..self.classes.len()).collect();
        let keys: Vec<(u64, i128)> = self
            .classes
            .iter()
            .map(|(_, slot)| slot.with_head(|count, nums| (count, nums.get(qt).map_or(0, NumStats::sum))))
            .collect();
        let key = |i: &usize| (keys[*i].0, keys[*i].1, fps.get(self.classes[*i].0));
        order.sort_by(|a, b| key(a).cmp(&key(b)));
        let mut folded = vec![false; self.classes.len()];
        let mut other = self.other.take().unwrap_or_default();
        for &i in &order[..excess] {
            other.merge(&self.classes[i].1.get());
            folded[i] = true;
        }
        self.other = Some(other);
        let classes = std::mem::take(&mut self.classes);
        let touched = std::mem::take(&mut self.touched);
        self.live_list.clear();
        for (i, (fp, class)) in classes.into_iter().enumerate() {
            if folded[i] {
                self.class_of[fp as usize] = NONE;
                if matches!(class, Slot::Live(_)) {
                    self.live -= 1;
                }
            } else {
                let kept = self.classes.len() as u32;
                self.class_of[fp as usize] = kept;
                if matches!(class, Slot::Live(_)) {
                    self.live_list.push(kept);
                }
                self.classes.push((fp, class));
                self.touched.push(touched[i]);
            }
        }
    }

    /// The end of the input (`close_runs`): every open run ends.
    pub fn finish(&mut self) {
        for single in [false, true] {
            let open = std::mem::take(if single { &mut self.open_single } else { &mut self.open_runs });
            for table in [open.whole, open.heads, open.tails] {
                for (_, run) in sorted(table) {
                    if single {
                        self.close_single_run(run);
                    } else {
                        self.close_run(run);
                    }
                }
            }
        }
        self.freeze();
        // The ranges' memory was freed on the digest threads; glibc keeps it in their
        // arenas (100 MB after 200,000 classes, measured) unless asked to give it back.
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: malloc_trim only releases free memory; it takes no pointers.
        unsafe {
            libc::malloc_trim(0);
        }
    }

    /// Query IDs (`query_id_number`) by fingerprint id: each MD5 computed once, however
    /// often the ranking, the class documents and their leads name it.
    pub fn query_ids(&self) -> &[u128] {
        self.ids.get_or_init(|| {
            (0..self.fingerprints.len() as u32).map(|i| query_id_number(self.fingerprints.get(i))).collect()
        })
    }

    /// The id of numeric attribute `name`, if any event had it.
    pub fn num_id(&self, name: &[u8]) -> Option<u32> {
        (0..self.num_names.len() as u32).find(|&i| self.num_names.get(i) == name)
    }

    /// Class indexes with Query_time, best first by `attribute:function` (ties: query
    /// ID), and those without Query_time by query ID: result.py `Digest.keys` and
    /// `order_value` (values compared as Python floats).
    pub fn ranked(&self, attribute: &[u8], function: &str) -> (Vec<u32>, Vec<u32>) {
        let (qt, wanted) = (self.num_id(b"Query_time"), self.num_id(attribute));
        let ids = self.query_ids();
        let mut reported: Vec<(f64, u128, u32)> = Vec::new();
        let mut unreported: Vec<(u128, u32)> = Vec::new();
        for (i, (fp, slot)) in self.classes.iter().enumerate() {
            let id = ids[*fp as usize];
            let value = slot.with_head(|count, nums| {
                let stats = |id: Option<u32>| id.and_then(|i| nums.get(i as usize)).filter(|s| s.count() > 0);
                stats(qt)?;
                Some(match (function, stats(wanted)) {
                    ("cnt", Some(m)) => m.count() as f64,
                    ("cnt", None) => {
                        if attribute == b"Query_time" {
                            count as f64
                        } else {
                            0.0
                        }
                    }
                    (_, None) => f64::NEG_INFINITY,
                    ("sum", Some(m)) => m.sum() as f64,
                    ("max", Some(m)) => m.max() as f64,
                    ("min", Some(m)) => m.min() as f64,
                    (_, Some(m)) => m.sum() as f64 / m.count() as f64,
                })
            });
            match value {
                Some(value) => reported.push((value, id, i as u32)),
                None => unreported.push((id, i as u32)),
            }
        }
        reported.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        unreported.sort();
        (reported.into_iter().map(|e| e.2).collect(), unreported.into_iter().map(|e| e.1).collect())
    }

    /// The digest's global figures: the count, first and last seen, metrics, decimal
    /// marks and booleans of every class and `other` merged (what the reports read of
    /// them; the rest is left empty). Frozen classes are decoded that far only, and each
    /// metric is summed without merging 200,000 classes into one growing sketch: equal
    /// single values are counted together, the rest merged pairwise (`Pairs`). Merging
    /// metrics is exact and in any order the same (sums, min, max, bucket counts).
    pub fn totals(&self) -> Class {
        let mut all = Class::default();
        let mut metrics: Vec<MetricTotal> = Vec::new();
        let mut add = |count: u64, ts: [Option<Ts>; 2], nums: Vec<NumStats>, decimal: &Bits, flags: &[(u64, u64)]| {
            all.count += count;
            for t in ts.into_iter().flatten() {
                all.see_ts(t);
            }
            if metrics.len() < nums.len() {
                metrics.resize_with(nums.len(), MetricTotal::default);
            }
            for (m, s) in metrics.iter_mut().zip(nums) {
                m.add(s);
            }
            all.decimal.union(decimal);
            if all.flags.len() < flags.len() {
                all.flags.resize(flags.len(), (0, 0));
            }
            for (a, f) in all.flags.iter_mut().zip(flags) {
                a.0 += f.0;
                a.1 += f.1;
            }
        };
        for (_, slot) in &self.classes {
            match slot {
                Slot::Live(c) => add(c.count, [c.ts_min, c.ts_max], c.nums.clone(), &c.decimal, &c.flags),
                Slot::Frozen(bytes) => {
                    let (h, _) = postcard::take_from_bytes::<TotalsHead>(bytes).expect("a frozen class decodes");
                    add(h.count, [h.ts_min, h.ts_max], h.nums, &h.decimal, &h.flags);
                }
            }
        }
        if let Some(o) = &self.other {
            add(o.count, [o.ts_min, o.ts_max], o.nums.clone(), &o.decimal, &o.flags);
        }
        all.nums = metrics.into_iter().map(MetricTotal::sum).collect();
        all
    }
}

/// The fields of a frozen `Class` up to its booleans: what `Total::totals` reads.
#[derive(serde::Deserialize)]
struct TotalsHead {
    _kind: u8,
    count: u64,
    ts_min: Option<Ts>,
    ts_max: Option<Ts>,
    nums: Vec<NumStats>,
    decimal: Bits,
    flags: Vec<(u64, u64)>,
}

/// One metric of `Total::totals` being summed: classes whose values are all one value
/// counted by value, the others merged pairwise (`Pairs`).
#[derive(Default)]
struct MetricTotal {
    same: HashMap<i64, u64>,
    varied: Pairs,
}

impl MetricTotal {
    fn add(&mut self, s: NumStats) {
        match s {
            NumStats::Empty => {}
            NumStats::Same { count, value } => *self.same.entry(value).or_default() += count,
            NumStats::Varied(_) => self.varied.push(s),
        }
    }

    fn sum(self) -> NumStats {
        let mut same: Vec<(i64, u64)> = self.same.into_iter().collect();
        same.sort_unstable();
        let mut pairs = self.varied;
        for (value, count) in same {
            pairs.push(NumStats::Same { count, value });
        }
        pairs.sum()
    }
}

/// Statistics merged as a binary counter: each merge joins two of about the same size,
/// so no sketch is copied once per class (`NumStats::merge` copies the one it adds to).
#[derive(Default)]
struct Pairs(Vec<Option<NumStats>>);

impl Pairs {
    fn push(&mut self, mut s: NumStats) {
        for level in &mut self.0 {
            match level.take() {
                None => {
                    *level = Some(s);
                    return;
                }
                Some(mut other) => {
                    other.merge(&s);
                    s = other;
                }
            }
        }
        self.0.push(Some(s));
    }

    fn sum(self) -> NumStats {
        let mut all = NumStats::Empty;
        for s in self.0.into_iter().flatten() {
            all.merge(&s);
        }
        all
    }
}

fn reason_rank(bad: &Bad) -> u8 {
    // "Query_time is not a number: …" sorts before "event without a statement: …".
    match bad {
        Bad::QueryTime(_) => 0,
        Bad::Truncated => 1,
    }
}

/// `ts[:16]`: the minute of a time.
fn minute_of(ts: Ts) -> Ts {
    let b = ts.as_bytes();
    Ts::from(&b[..b.len().min(16)])
}

fn sorted(table: HashMap<u64, OpenRun>) -> Vec<(u64, OpenRun)> {
    let mut v: Vec<(u64, OpenRun)> = table.into_iter().collect();
    v.sort_unstable_by_key(|e| e.0);
    v
}

/// A connection's run open at both ends of a range, or its first and last runs (the
/// `OpenRuns` engine.py `finish` returns).
fn place(target: &mut OpenRuns, number: u64, run: OpenRun, first: Option<OpenRun>) {
    match first {
        None => {
            target.whole.insert(number, run);
        }
        Some(first) => {
            target.heads.insert(number, first);
            target.tails.insert(number, run);
        }
    }
}

/// `aggregate._stitch`: join `left`'s open last runs to `right`'s first runs.
fn stitch(left: &mut OpenRuns, mut right: OpenRuns, mut close: impl FnMut(OpenRun)) {
    let mut threads: Vec<u64> = right.whole.keys().chain(right.heads.keys()).copied().collect();
    threads.sort_unstable();
    threads.dedup();
    for thread in threads {
        let whole_right = right.whole.get(&thread).copied();
        let first_right = whole_right.unwrap_or_else(|| right.heads[&thread]);
        let whole_left = left.whole.remove(&thread);
        let last_left = whole_left.or_else(|| left.tails.remove(&thread));
        let Some(last_left) = last_left else {
            match whole_right {
                Some(w) => {
                    left.whole.insert(thread, w);
                }
                None => {
                    left.heads.insert(thread, first_right);
                    left.tails.insert(thread, right.tails[&thread]);
                }
            }
            continue;
        };
        if let Some(w) = whole_left {
            left.heads.insert(thread, w);
        }
        if last_left.key == first_right.key {
            let joined =
                OpenRun { key: first_right.key, length: last_left.length + first_right.length, lead: last_left.lead };
            if whole_right.is_some() {
                if whole_left.is_some() {
                    left.heads.remove(&thread);
                    left.whole.insert(thread, joined);
                } else {
                    left.tails.insert(thread, joined);
                }
                continue;
            }
            if whole_left.is_some() {
                left.heads.insert(thread, joined);
            } else {
                close(joined);
            }
        } else {
            if whole_left.is_none() {
                close(last_left);
            }
            let led = OpenRun { key: first_right.key, length: first_right.length, lead: last_left.key };
            if whole_right.is_some() {
                left.tails.insert(thread, led);
                continue;
            }
            close(led);
        }
        left.tails.insert(thread, right.tails.remove(&thread).expect("a head has a tail"));
    }
}

/// A range's class in the total's ids, its sample's line absolute. Ranges mostly meet
/// the attributes in the same order as the total did: then the range's statistics and
/// value counts are kept where they are (their values' text ids rewritten), and only a
/// class whose ids move is rebuilt (`rebuilt`), with the same result.
fn rebase(mut c: Class, maps: &IdMaps, file: u32, line_base: u64, server: Option<u32>) -> Class {
    let same_nums = c.nums.iter().enumerate().all(|(i, s)| s.count() == 0 || maps.nums[i] as usize == i)
        && c.nums.last().is_none_or(|s| s.count() > 0);
    let same_flags = c.flags.iter().enumerate().all(|(i, f)| f.1 == 0 || maps.flags[i] as usize == i)
        && c.flags.last().is_none_or(|f| f.1 > 0);
    let same_strings =
        c.strings.iter().enumerate().all(|(i, v)| {
            (v.list.is_empty() && v.other == 0) || (maps.text_names[i] as usize == i && v.list.len() <= 16)
        }) && c.strings.last().is_none_or(|v| !v.list.is_empty() || v.other > 0);
    if !(same_nums && same_flags && same_strings) {
        return rebuilt(c, maps, file, line_base, server);
    }
    for values in &mut c.strings {
        // At most 16 values: no index to rebuild (`Values::add`).
        for e in values.list.iter_mut() {
            e.0 = maps.texts[e.0 as usize];
        }
    }
    finish_rebase(c, maps, file, line_base, server)
}

/// `rebase` of a class whose attribute ids move: its figures copied to their new ids.
fn rebuilt(c: Class, maps: &IdMaps, file: u32, line_base: u64, server: Option<u32>) -> Class {
    let mut out = Class {
        kind: c.kind,
        count: c.count,
        ts_min: c.ts_min,
        ts_max: c.ts_max,
        histogram: c.histogram,
        connections: c.connections,
        texts: c.texts,
        fit: c.fit,
        unknown_db: c.unknown_db,
        unknown_ts: c.unknown_ts,
        sample: c.sample,
        runs: c.runs,
        single_runs: c.single_runs,
        ..Class::default()
    };
    for (i, s) in c.nums.into_iter().enumerate() {
        if s.count() > 0 {
            let id = maps.nums[i];
            *out.num(id) = s;
            if c.decimal.get(i) {
                out.decimal.set(id as usize);
            }
        }
    }
    for (i, f) in c.flags.into_iter().enumerate() {
        if f.1 > 0 {
            let id = maps.flags[i] as usize;
            if out.flags.len() <= id {
                out.flags.resize(id + 1, (0, 0));
            }
            out.flags[id] = f;
        }
    }
    for (i, values) in c.strings.into_iter().enumerate() {
        if values.list.is_empty() && values.other == 0 {
            continue;
        }
        let id = maps.text_names[i] as usize;
        if out.strings.len() <= id {
            out.strings.resize_with(id + 1, Values::default);
        }
        let target = &mut out.strings[id];
        for (v, n) in values.list {
            target.add(maps.texts[v as usize], n);
        }
        target.other += values.other;
    }
    out.nums.shrink_to_fit();
    out.flags.shrink_to_fit();
    out.strings.shrink_to_fit();
    finish_rebase(out, maps, file, line_base, server)
}

/// What `rebase` does to every class: its `--host` label, its sample's texts and place,
/// its leads.
fn finish_rebase(mut c: Class, maps: &IdMaps, file: u32, line_base: u64, server: Option<u32>) -> Class {
    c.servers = server.map(|server| Box::new(vec![(server, c.count)]));
    if let Some(s) = c.sample.as_mut() {
        let text = |v: Option<u32>| v.map(|v| maps.texts[v as usize]);
        s.db = text(s.db);
        s.user = text(s.user);
        s.host = text(s.host);
        s.file = file;
        s.line += line_base;
    }
    c.runs = rebase_runs(std::mem::take(&mut c.runs), maps);
    c.single_runs = c.single_runs.map(|r| Box::new(rebase_runs(*r, maps)));
    c
}

fn rebase_runs(mut runs: Runs, maps: &IdMaps) -> Runs {
    for lead in &mut runs.leads {
        lead.0 = maps.fingerprints[lead.0 as usize];
    }
    runs
}
