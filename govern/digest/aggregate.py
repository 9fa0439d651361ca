"""Per-class aggregates and the partial results the engine returns; merging them.

A :class:`Partial` is what digesting one byte range (or one saved JSON digest)
yields. Partials merge left to right, in input order; everything in them is an
integer, a count or a string, so a merge is exact and a parallel digest equals
the serial one. Numeric attributes are kept in micro-units (see
govern/sketch.py), so sums never round.

Two things depend on what came before a range, and are settled when partials
merge:

* pt's inherited attributes: an event without its own ``# Time:`` or ``use db``
  takes the last one seen. Events of a range seen before its first own value
  are counted as "unknown" and get the previous range's last value on merge.
* Runs of one class on one connection (the batching facts): the first and the
  open last run of each connection in a range are kept aside and stitched to
  the neighbouring ranges' runs on merge. A run's *lead* (the class that ran
  just before it on the connection) is known inside a range except for the
  first run of each connection, which learns it on merge. Runs of single-row
  writes of one class are followed the same way.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from hashlib import md5
from typing import Any

from govern import sketch
from govern.digest.columns import ROWS_METRICS, ClassColumns, ColumnRow, columns_of
from govern.digest.ordering import ClassKey, rank
from govern.fingerprint import query_id

#: Query_time histogram bucket lower bounds, micro-units: 1us 10us 100us 1ms 10ms 100ms 1s 10s+
HISTOGRAM_BOUNDS = (10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000)
HISTOGRAM_LABELS = ("1us", "10us", "100us", "1ms", "10ms", "100ms", "1s", "10s+")

#: A saved sample query is cut to this many bytes (a 16 MB INSERT is no use in a report).
SAMPLE_LIMIT = 64 * 1024

#: Distinct values kept per string attribute and class; further values count as "(other)".
DISTINCT_LIMIT = 1000
OTHER_VALUE = "(other)"

#: Leading classes kept per class (by query ID); further leads count under "(other)".
LEADS_LIMIT = 100

#: A run on one connection: (key, calls, lead). The key is the fingerprint (for runs
#: of single-row writes: the fingerprint of a single-row write, None for any other
#: event). The lead is the fingerprint of the event before the run on that connection,
#: or None when nothing came before it (in a range's first run of a connection: not
#: known yet, settled on merge).
OpenRun = tuple[bytes | None, int, bytes | None]


def histogram_index(micro: int) -> int:
    for index, bound in enumerate(HISTOGRAM_BOUNDS):
        if micro < bound:
            return index
    return len(HISTOGRAM_BOUNDS)


@dataclass(slots=True)
class Metric:
    """A numeric attribute of a class: exact count/sum/min/max and a quantile sketch."""

    count: int = 0
    total: int = 0
    low: int = 0
    high: int = 0
    buckets: dict[int, int] = field(default_factory=dict)
    decimal: bool = False  # some value had a decimal point (a time): shown in seconds

    def add_many(self, values: list[tuple[int, int]]) -> None:
        """Add ``(value, times)`` pairs (the engine's batches), with the loop kept local."""
        if not values:
            return
        buckets = self.buckets
        low = min(values)[0]  # tuples compare by value first
        high = max(values)[0]
        if self.count == 0:
            self.low, self.high = low, high
        else:
            self.low = min(self.low, low)
            self.high = max(self.high, high)
        count = total = 0
        for value, times in values:
            count += times
            total += value * times
            key = value if 0 <= value < 256 else sketch.bucket_key(value)
            buckets[key] = buckets.get(key, 0) + times
        self.count += count
        self.total += total

    def merge(self, other: Metric) -> None:
        if other.count == 0:
            return
        if self.count == 0:
            self.low, self.high = other.low, other.high
        else:
            self.low = min(self.low, other.low)
            self.high = max(self.high, other.high)
        self.count += other.count
        self.total += other.total
        self.decimal = self.decimal or other.decimal
        sketch.merge_into(self.buckets, other.buckets)

    def quantile(self, q: float) -> int:
        return sketch.quantile(self.buckets, q, self.low, self.high)

    def quantiles(self, qs: Sequence[float]) -> list[int]:
        return sketch.quantiles(self.buckets, qs, self.low, self.high)


@dataclass(slots=True)
class Sample:
    """The worst event of a class (highest Query_time; the last one on ties, as pt)."""

    query_time: int
    query: bytes
    ts: str | None
    db: str | None
    user: str | None
    host: str | None
    file: int  # index into the digest's inputs
    line: int  # 1-based line of the event's first header line, in its file
    truncated: bool = False
    unknown_ts: bool = False  # inherits the ts of the previous part (settled on merge)
    unknown_db: bool = False
    plan: dict[str, Any] | None = None  # EXPLAIN of the sample (govern collect --explain-on)


@dataclass(slots=True)
class Runs:
    """Back-to-back calls of one class on one connection (closed runs only)."""

    runs: int = 0
    calls: int = 0  # events in closed runs
    repeated_calls: int = 0  # events in runs of two or more
    longest: int = 0
    lengths: dict[int, int] = field(default_factory=dict)  # sketch of run lengths
    #: Runs that followed another class on their connection: lead's query ID -> [runs, calls].
    leads: dict[str, list[int]] = field(default_factory=dict)

    def close(self, length: int, times: int = 1) -> None:
        """``times`` runs of ``length`` calls each have ended."""
        self.runs += times
        self.calls += length * times
        if length > 1:
            self.repeated_calls += length * times
        if length > self.longest:
            self.longest = length
        key = sketch.bucket_key(length)
        self.lengths[key] = self.lengths.get(key, 0) + times

    def add_lead(self, lead: str, runs: int, calls: int) -> None:
        """``runs`` runs (``calls`` calls in all) followed class ``lead`` on their connection."""
        leads = self.leads
        if lead not in leads and len(leads) >= LEADS_LIMIT:
            lead = OTHER_VALUE
        held = leads.get(lead)
        if held is None:
            leads[lead] = [runs, calls]
        else:
            held[0] += runs
            held[1] += calls

    def merge(self, other: Runs) -> None:
        self.runs += other.runs
        self.calls += other.calls
        self.repeated_calls += other.repeated_calls
        self.longest = max(self.longest, other.longest)
        sketch.merge_into(self.lengths, other.lengths)
        for lead, (runs, calls) in other.leads.items():
            self.add_lead(lead, runs, calls)


@dataclass(slots=True)
class Fit:
    """Exact sums for a least-squares line Query_time = a + b * rows per statement."""

    n: int = 0
    sx: int = 0
    sy: int = 0
    sxx: int = 0
    sxy: int = 0

    def merge(self, other: Fit) -> None:
        self.n += other.n
        self.sx += other.sx
        self.sy += other.sy
        self.sxx += other.sxx
        self.sxy += other.sxy

    def line(self) -> tuple[float, float] | None:
        """(seconds per statement, seconds per row), or None when rows never vary."""
        denominator = self.n * self.sxx - self.sx * self.sx
        if self.n < 2 or denominator == 0:
            return None
        slope = (self.n * self.sxy - self.sx * self.sy) / denominator
        intercept = (self.sy - slope * self.sx) / self.n
        return intercept / 1e6, slope / 1e6


@dataclass(slots=True)
class ClassAgg:
    """Everything govern knows about one query class (one fingerprint)."""

    fingerprint: bytes
    count: int = 0
    ts_min: str | None = None
    ts_max: str | None = None
    metrics: dict[str, Metric] = field(default_factory=dict)
    booleans: dict[str, list[int]] = field(default_factory=dict)  # name -> [yes, count]
    strings: dict[str, dict[str, int]] = field(default_factory=dict)
    servers: dict[str, int] = field(default_factory=dict)
    histogram: list[int] = field(default_factory=lambda: [0] * (len(HISTOGRAM_BOUNDS) + 1))
    sample: Sample | None = None
    runs: Runs = field(default_factory=Runs)
    single_runs: Runs = field(default_factory=Runs)  # runs of its single-row writes
    connections: set[int] = field(default_factory=set)  # sketch.distinct_* of hashes
    texts: set[int] = field(default_factory=set)  # distinct statement texts (reads)
    fit: Fit = field(default_factory=Fit)
    unknown_db: int = 0  # events waiting for the db of the previous range
    unknown_ts: bool = False  # had events waiting for the ts of the previous range

    def see_ts(self, ts: str) -> None:
        if self.ts_min is None or ts < self.ts_min:
            self.ts_min = ts
        if self.ts_max is None or ts > self.ts_max:
            self.ts_max = ts

    def add_string(self, name: str, value: str, times: int) -> None:
        values = self.strings.setdefault(name, {})
        if value in values or len(values) < DISTINCT_LIMIT:
            values[value] = values.get(value, 0) + times
        else:
            values[OTHER_VALUE] = values.get(OTHER_VALUE, 0) + times

    def offer_sample(self, sample: Sample) -> None:
        if self.sample is None or sample.query_time >= self.sample.query_time:
            self.sample = sample

    def merge(self, other: ClassAgg) -> None:
        """Add ``other`` (which comes later in the input) to this class."""
        self.count += other.count
        if other.ts_min is not None:
            self.see_ts(other.ts_min)
        if other.ts_max is not None:
            self.see_ts(other.ts_max)
        for name, metric in other.metrics.items():
            self.metrics.setdefault(name, Metric()).merge(metric)
        for name, (yes, count) in other.booleans.items():
            mine = self.booleans.setdefault(name, [0, 0])
            mine[0] += yes
            mine[1] += count
        for name, values in other.strings.items():
            for value, times in values.items():
                self.add_string(name, value, times)
        for label, times in other.servers.items():
            self.servers[label] = self.servers.get(label, 0) + times
        self.histogram = [a + b for a, b in zip(self.histogram, other.histogram, strict=True)]
        if other.sample is not None:
            self.offer_sample(other.sample)
        self.runs.merge(other.runs)
        self.single_runs.merge(other.single_runs)
        sketch.distinct_merge(self.connections, other.connections)
        sketch.distinct_merge(self.texts, other.texts)
        self.fit.merge(other.fit)


@dataclass(slots=True)
class Malformed:
    file: int
    line: int
    reason: str


#: How many malformed events are kept with their place (all are counted).
MALFORMED_KEPT = 10


@dataclass
class OpenRuns:
    """Runs still open at an end of a part, per connection: one run open at both ends
    (``whole``), or a first run open at its start (``heads``) and a last run open at
    its end (``tails``). The leads of whole and head runs are None: what came before
    the part decides them."""

    whole: dict[int, OpenRun] = field(default_factory=dict)
    heads: dict[int, OpenRun] = field(default_factory=dict)
    tails: dict[int, OpenRun] = field(default_factory=dict)


def column_row(agg: ClassAgg, metrics: Sequence[str]) -> ColumnRow:
    """A class as the digest rules' screens read it (govern/digest/columns.py)."""

    def high(name: str) -> float:
        found = agg.metrics.get(name)
        return float(found.high) if found is not None and found.count else -1.0

    rates = agg.strings.get("Log_slow_rate_limit", {})
    sample = agg.sample
    return ColumnRow(
        sample=None if sample is None else sample.query,
        truncated=sample is not None and sample.truncated,
        fingerprint=agg.fingerprint,
        count=agg.count,
        sampled=any(rate not in ("0", "1") for rate in rates),
        rows_touched=any(
            (m := agg.metrics.get(name)) is not None and m.count > 0 and m.high != 0
            for name in ROWS_METRICS
        ),
        maxes=tuple(high(name) for name in metrics),
    )


@dataclass
class Partial:
    """The mergeable result of digesting part of the input, in input order."""

    classes: dict[bytes, ClassAgg] = field(default_factory=dict)
    other: ClassAgg | None = None  # events of classes beyond --max-classes
    events: int = 0  # aggregated events
    filtered: int = 0  # events a --filter, --since or --until left out
    no_statement: int = 0  # records with no statement (pt drops them too)
    malformed: int = 0
    malformed_kept: list[Malformed] = field(default_factory=list)
    banners: int = 0  # server banners read as record boundaries (pt glues across MariaDB's)
    # Context: pt's inherited ts and db, as this part starts needing them and ends.
    last_ts: str | None = None
    last_db: str | None = None
    db_seen: bool = False
    ts_seen: bool = False
    # Load over time (the HTML report's chart): log minute "YYYY-MM-DD HH:MM" -> [events,
    # Query_time in micro-units]; events before this part's first ts wait in minutes_unknown.
    minutes: dict[str, list[int]] = field(default_factory=dict)
    minutes_unknown: list[int] = field(default_factory=lambda: [0, 0])
    # Runs of a class, and runs of a class's single-row writes, open at an end.
    open_runs: OpenRuns = field(default_factory=OpenRuns)
    open_single: OpenRuns = field(default_factory=OpenRuns)
    # The classes in the order of the last class_keys() (what ClassKey.index points into).
    _listed: list[ClassAgg] | None = field(default=None, init=False, repr=False, compare=False)
    # Fingerprints by query ID, for fingerprint_of().
    _by_id: dict[str, bytes] | None = field(default=None, init=False, repr=False, compare=False)

    def note_malformed(self, file: int, line: int, reason: str) -> None:
        self.malformed += 1
        if len(self.malformed_kept) < MALFORMED_KEPT:
            self.malformed_kept.append(Malformed(file, line, reason))

    def shift_lines(self, lines: int, file: int) -> None:
        """Make line numbers of ``file`` absolute: this part started ``lines`` lines in."""
        if not lines:
            return
        for agg in self.all_classes():
            if agg.sample is not None and agg.sample.file == file:
                agg.sample.line += lines
        for bad in self.malformed_kept:
            if bad.file == file:
                bad.line += lines

    def shift_files(self, offset: int) -> None:
        """Inputs renumbered: this part's inputs now start at index ``offset``."""
        if not offset:
            return
        for agg in self.all_classes():
            if agg.sample is not None:
                agg.sample.file += offset
        for bad in self.malformed_kept:
            bad.file += offset

    def all_classes(self) -> list[ClassAgg]:
        return [*self.classes.values(), *([self.other] if self.other is not None else [])]

    # -- ClassSource (govern/digest/classes.py): what reports read ------------------------
    def class_count(self) -> int:
        return len(self.classes)

    def class_keys(self, attribute: str) -> list[ClassKey]:
        listed = self._listed = list(self.classes.values())
        return [class_key(index, agg, attribute) for index, agg in enumerate(listed)]

    def ranked_keys(self, attribute: str, function: str) -> tuple[list[ClassKey], list[ClassKey]]:
        return rank(self.class_keys(attribute), attribute, function)

    def class_at(self, index: int) -> ClassAgg:
        listed = self._listed
        if listed is None or len(listed) != len(self.classes):
            listed = self._listed = list(self.classes.values())
        return listed[index]

    def totals(self) -> ClassAgg:
        return merged_classes(self.all_classes())

    def query_ids(self, keys: Sequence[ClassKey]) -> bytes:
        """The query IDs of ``keys``' classes, 16 bytes each."""
        return b"".join(md5(key.fingerprint, usedforsecurity=False).digest() for key in keys)

    def class_json(self, keys: Sequence[ClassKey], frame: object) -> Iterator[None]:
        """Python's classes have no JSON of their own: document.py builds each."""
        return itertools.repeat(None, len(keys))

    def class_json_runs(self, keys: Sequence[ClassKey], frame: object) -> Iterator[int]:
        """Python's classes have no JSON of their own: document.py builds each."""
        return iter(range(len(keys)))

    def rule_columns(
        self,
        keys: Sequence[ClassKey],
        words: Sequence[str],
        max_depth: int,
        metrics: Sequence[str],
        verbs: Sequence[str],
    ) -> ClassColumns:
        """The classes of ``keys`` in columns (plain samples marked by the core when it is
        there: a store's merge, saved digests merged; not with the Python engine)."""
        rows = (column_row(self.class_at(key.index), metrics) for key in keys)
        return columns_of(rows, metrics, verbs, words, max_depth)

    def fingerprint_of(self, class_id: str) -> bytes | None:
        """The fingerprint of the class whose query ID is ``class_id``, if kept (the
        map by query ID is made on the first call, again if classes were added)."""
        by_id = self._by_id
        if by_id is None or len(by_id) != len(self.classes):
            by_id = self._by_id = {query_id(fp): fp for fp in self.classes}
        return by_id.get(class_id)


def class_key(index: int, agg: ClassAgg, attribute: str) -> ClassKey:
    metric = agg.metrics.get(attribute)
    return ClassKey(
        index,
        agg.fingerprint,
        agg.count,
        "Query_time" in agg.metrics,
        None if metric is None else (metric.count, metric.total, metric.low, metric.high),
    )


def merged_classes(classes: Iterable[ClassAgg]) -> ClassAgg:
    """One fresh class with everything of ``classes`` merged in (they are not changed)."""
    total = ClassAgg(b"")
    for agg in classes:
        total.merge(agg)
    return total


def merge(left: Partial, right: Partial, *, max_classes: int) -> Partial:
    """``left`` followed by ``right``, as if both had been digested in one pass."""
    _settle_context(left, right)
    for fingerprint, agg in right.classes.items():
        mine = left.classes.get(fingerprint)
        if mine is not None:
            mine.merge(agg)
        else:
            left.classes[fingerprint] = agg
    if right.other is not None:
        _fold_into_other(left, right.other)
    _stitch(left.open_runs, right.open_runs, lambda run: close_run(left, run))
    _stitch(left.open_single, right.open_single, lambda run: close_single_run(left, run))
    add_minutes(left.minutes, right.minutes)
    left.events += right.events
    left.filtered += right.filtered
    left.no_statement += right.no_statement
    left.malformed += right.malformed
    left.banners += right.banners
    room = MALFORMED_KEPT - len(left.malformed_kept)
    left.malformed_kept.extend(right.malformed_kept[: max(0, room)])
    if right.ts_seen:
        left.last_ts, left.ts_seen = right.last_ts, True
    if right.db_seen:
        left.last_db, left.db_seen = right.last_db, True
    cap_classes(left, max_classes)
    return left


def add_minutes(into: dict[str, list[int]], more: dict[str, list[int]]) -> None:
    for minute, (events, micro) in more.items():
        slot = into.get(minute)
        if slot is None:
            into[minute] = [events, micro]
        else:
            slot[0] += events
            slot[1] += micro


def _settle_context(left: Partial, right: Partial) -> None:
    """Give ``right``'s events that inherited db or ts from before it ``left``'s last ones.

    ``left`` is everything before ``right`` from the start of the input, so its
    last values are final (None: there was nothing to inherit, as in pt).
    """
    waiting = right.minutes_unknown
    if waiting[0]:
        if left.last_ts is not None:  # else nothing to inherit: no minute, as pt has no ts
            add_minutes(right.minutes, {left.last_ts[:16]: waiting})
        right.minutes_unknown = [0, 0]
    for agg in right.all_classes():
        sample = agg.sample
        if sample is not None and (sample.unknown_ts or sample.unknown_db):
            if sample.unknown_ts:
                sample.ts, sample.unknown_ts = left.last_ts, False
            if sample.unknown_db:
                sample.db, sample.unknown_db = left.last_db, False
        if agg.unknown_db:
            if left.last_db is not None:
                agg.add_string("db", left.last_db, agg.unknown_db)
            agg.unknown_db = 0
        if agg.unknown_ts:
            if left.last_ts is not None:
                agg.see_ts(left.last_ts)
            agg.unknown_ts = False


def _fold_into_other(target: Partial, agg: ClassAgg) -> None:
    if target.other is None:
        target.other = ClassAgg(b"")
    target.other.merge(agg)


def cap_classes(partial: Partial, max_classes: int) -> None:
    """Keep at most ``max_classes`` classes; fold the smallest (fewest events) into other."""
    excess = len(partial.classes) - max_classes
    if excess <= 0:
        return
    smallest = sorted(
        partial.classes.values(),
        key=lambda agg: (
            agg.count,
            agg.metrics["Query_time"].total if "Query_time" in agg.metrics else 0,
            agg.fingerprint,
        ),
    )[:excess]
    for agg in smallest:
        del partial.classes[agg.fingerprint]
        _fold_into_other(partial, agg)


def _class_of(partial: Partial, fingerprint: bytes) -> ClassAgg:
    """Where a run of ``fingerprint`` is counted: its class, or other once folded."""
    agg = partial.classes.get(fingerprint)
    if agg is None:
        if partial.other is None:
            partial.other = ClassAgg(b"")
        agg = partial.other
    return agg


def close_run(partial: Partial, run: OpenRun) -> None:
    """Count a finished run in its class, with its lead."""
    fingerprint, length, lead = run
    assert fingerprint is not None
    runs = _class_of(partial, fingerprint).runs
    runs.close(length)
    if lead is not None:
        runs.add_lead(query_id(lead), 1, length)


def close_single_run(partial: Partial, run: OpenRun) -> None:
    """Count a finished run of single-row writes (runs of anything else are not kept)."""
    if run[0] is not None:
        _class_of(partial, run[0]).single_runs.close(run[1])


def _stitch(left: OpenRuns, right: OpenRuns, close: Callable[[OpenRun], None]) -> None:
    """Join ``left``'s open last runs to ``right``'s first runs, connection by connection.

    The runs in between are already closed and counted. ``right``'s first run
    follows ``left``'s last one: it continues it (same key: the joined run keeps
    the left run's lead) or is led by it. Connections go in ascending number (here,
    in :func:`close_runs` and in the core's native/src/total.rs), so runs close in
    the same order in both engines and the leads kept at a class's cap are the same.
    """
    for thread in sorted(right.whole.keys() | right.heads.keys()):
        whole_right = right.whole.get(thread)
        first_right = whole_right or right.heads[thread]
        whole_left = left.whole.pop(thread, None)
        last_left = whole_left or left.tails.pop(thread, None)
        if last_left is None:  # the connection first appears in right
            if whole_right:
                left.whole[thread] = whole_right
            else:
                left.heads[thread] = first_right
                left.tails[thread] = right.tails[thread]
            continue
        if whole_left:
            left.heads[thread] = whole_left
        if last_left[0] == first_right[0]:
            joined = (first_right[0], last_left[1] + first_right[1], last_left[2])
            if whole_right:
                if whole_left:
                    del left.heads[thread]
                    left.whole[thread] = joined
                else:
                    left.tails[thread] = joined
                continue
            if whole_left:
                left.heads[thread] = joined
            else:
                close(joined)
        else:
            if not whole_left:
                close(last_left)
            led = (first_right[0], first_right[1], last_left[0])
            if whole_right:
                left.tails[thread] = led
                continue
            close(led)
        left.tails[thread] = right.tails[thread]


def close_runs(partial: Partial) -> None:
    """End of input: every open run ends (a connection's first run had no lead)."""
    for open_runs, close in (
        (partial.open_runs, close_run),
        (partial.open_single, close_single_run),
    ):
        for table in (open_runs.whole, open_runs.heads, open_runs.tails):
            for thread in sorted(table):
                close(partial, table[thread])
            table.clear()
