"""The collector's one door into the digest library (govern.digest).

Everything ``govern collect`` asks of the digest code goes through here: digest a
range of slow-log text with the context pt's reader inherits (the last ``# Time:``
and ``use db`` before it), keep a bucket's classes as one mergeable
:class:`Aggregate`, turn it into a ``govern.digest`` document and back, and build a
class from counters (Performance Schema). When the digest library changes, this
module is the only place of govern.collect that has to follow it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from govern import native, sketch
from govern.digest.aggregate import (
    ClassAgg,
    Metric,
    Partial,
    Sample,
    close_runs,
    histogram_index,
    merge,
)
from govern.digest.document import SCHEMA, SCHEMA_VERSION, full_document, state_document
from govern.digest.merge import merge_sourced, partial_of
from govern.digest.result import Digest, Source
from govern.fingerprint import decode, fingerprint_bytes, query_id

__all__ = [
    "Accumulator",
    "Aggregate",
    "ClassFigures",
    "Context",
    "Piece",
    "aggregate_of",
]

#: Classes kept per bucket, as ``govern digest --max-classes``; further ones fold into "other".
MAX_CLASSES = 10_000
#: A range larger than this is cut at record boundaries and digested on threads.
PARALLEL_RANGE = 16 * 1024 * 1024


@dataclass(frozen=True)
class Context:
    """What pt's reader carries from one event to the next: the last ``# Time:``
    (``YYYY-MM-DD HH:MM:SS``) and ``use db`` seen; a range continues from them."""

    ts: str | None = None
    db: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"ts": self.ts, "db": self.db}

    @classmethod
    def from_json(cls, value: dict[str, Any] | None) -> Context:
        value = value or {}
        return cls(value.get("ts"), value.get("db"))


class Aggregate:
    """One bucket's classes, from any number of ranges and sources: merged exactly
    (counts, sums, sketches), inputs listed once each by name."""

    def __init__(self, max_classes: int = MAX_CLASSES, partial: Partial | None = None) -> None:
        self.max_classes = max_classes
        self.partial = partial or Partial(ts_seen=True, db_seen=True)
        self.sources: list[Source] = []

    @property
    def events(self) -> int:
        """Events aggregated (classes, other and those without Query_time)."""
        return self.partial.events

    def __bool__(self) -> bool:
        return bool(self.partial.events or self.partial.classes or self.partial.malformed)

    def add(self, other: Aggregate) -> None:
        """Merge ``other`` (which is consumed) into this aggregate."""
        merge_sourced(
            self.partial, self.sources, other.partial, other.sources, max_classes=self.max_classes
        )

    # --- documents ---------------------------------------------------------------------
    def document(self, collect: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``govern.digest`` document of this aggregate, with a bucket's ``collect``
        member (docs/json.md): ``govern digest merge`` reads it like any saved digest."""
        digest = Digest(partial=self.partial, sources=self.sources, max_classes=self.max_classes)
        document = full_document(digest)
        return document if collect is None else document | {"collect": collect}

    def saved(self) -> dict[str, Any]:
        """The aggregate as the checkpoint keeps it: a ``govern.digest`` document with only
        what :meth:`from_saved` reads (the exact state, no figures for people), built
        and written at every poll, so a fraction of a full document's cost."""
        partial, sources = self.partial, self.sources

        def sample(agg: ClassAgg) -> dict[str, Any] | None:
            found = agg.sample
            if found is None:
                return None
            return {
                "query": decode(found.query),
                "ts": found.ts,
                "db": found.db,
                "user": found.user,
                "host": found.host,
                "file": sources[found.file].name if found.file < len(sources) else None,
                "line": found.line,
                "truncated": found.truncated,
                "plan": found.plan,
            }

        def kept(agg: ClassAgg) -> dict[str, Any]:
            return {
                "id": query_id(agg.fingerprint),
                "fingerprint": decode(agg.fingerprint),
                "count": agg.count,
                "first_seen": agg.ts_min,
                "last_seen": agg.ts_max,
                "flags": {name: {"yes": v[0], "count": v[1]} for name, v in agg.booleans.items()},
                "values": agg.strings,
                "servers": agg.servers,
                "histogram": {"Query_time": agg.histogram},
                "sample": sample(agg),
                "state": state_document(agg),
            }

        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "inputs": [
                {
                    "name": s.name,
                    "host": s.host,
                    "bytes": s.bytes,
                    "compression": s.compression,
                    "problems": s.problems,
                }
                for s in sources
            ],
            "options": {"max_classes": self.max_classes},
            "timeline": {
                "minutes": [
                    [minute, events, micro / 1_000_000]
                    for minute, (events, micro) in partial.minutes.items()
                ]
            },
            "totals": {
                "events": partial.events,
                "filtered": partial.filtered,
                "no_statement": partial.no_statement,
                "malformed": partial.malformed,
                "banners": partial.banners,
            },
            "malformed": [
                {
                    "file": sources[bad.file].name if bad.file < len(sources) else None,
                    "line": bad.line,
                    "reason": bad.reason,
                }
                for bad in partial.malformed_kept
            ],
            "classes": [kept(agg) for agg in partial.classes.values()],
            "other": None if partial.other is None else kept(partial.other),
            "unreported": [],
        }

    @classmethod
    def from_saved(cls, document: dict[str, Any]) -> Aggregate:
        """An aggregate as :meth:`saved` left it."""
        partial, sources = partial_of(document)
        aggregate = cls(document["options"]["max_classes"], partial)
        aggregate.partial.ts_seen = aggregate.partial.db_seen = True
        aggregate.sources = sources
        return aggregate

    # --- what EXPLAIN reads and writes ----------------------------------------------------
    def worst_samples(self, top: int) -> Iterator[tuple[str, Sample]]:
        """(query ID, worst sample) of the ``top`` classes by total Query_time."""
        ranked = sorted(
            (agg for agg in self.partial.classes.values() if "Query_time" in agg.metrics),
            key=lambda agg: (-agg.metrics["Query_time"].total, query_id(agg.fingerprint)),
        )
        for agg in ranked[:top]:
            if agg.sample is not None:
                yield query_id(agg.fingerprint), agg.sample


@dataclass
class Piece:
    """What digesting a range left: where the reader stopped, its lines and events, and
    the context it hands to the next range."""

    end: int  # all of the range, for a range of whole records
    newlines: int
    events: int
    context: Context


class Accumulator:
    """Ranges of slow-log text digested into one bucket, kept merged in the native core
    until :meth:`finish` turns them into an :class:`Aggregate` once. (Turning a range's
    classes into Python objects and merging them there costs more than digesting it: the
    collector does it once per bucket and commit, not once per range.)"""

    def __init__(self, host: str | None, max_classes: int = MAX_CLASSES) -> None:
        self.host = host
        self.max_classes = max_classes
        self.sources: list[Source] = []
        self._files: dict[str, int] = {}
        self._merger: Any = None
        self._partial: Partial | None = None

    def add(
        self,
        data: bytes,
        low: int = 0,
        high: int | None = None,
        *,
        context: Context,
        name: str,
        line_base: int = 0,
    ) -> Piece:
        """Digest ``data[low:high]`` (whole records) as the continuation of a log whose
        reader stopped at ``context``; samples point at ``name``, lines counted from
        ``line_base``. Nothing is copied: the core reads the buffer in place."""
        high = len(data) if high is None else high
        file = self._files.get(name)
        if file is None:
            file = self._files[name] = len(self.sources)
            self.sources.append(Source(name, self.host, 0))
        self.sources[file].bytes += high - low
        view: Any = memoryview(data)[:high]  # the reader never runs past ``high``
        if native.available():
            return self._add_native(view, low, context, file, line_base)
        return self._add_python(data[low:high], context, file, line_base)

    def _add_native(
        self, data: Any, low: int, context: Context, file: int, line_base: int
    ) -> Piece:
        from govern.digest.engine import EngineOptions
        from govern.digest.native_total import NativeMerger, run_jobs, run_range
        from govern.slowlog import SEPARATOR

        if self._merger is None:
            self._merger = NativeMerger(
                EngineOptions(max_classes=self.max_classes, server=self.host)
            )
        merger, host = self._merger, self.host
        merger.lines[file] = line_base
        merger.reached.pop(file, None)  # a new buffer: offsets start again
        events = merger.total.events
        # Ranges cut just after a separator's "#", as the runner cuts files: the reader
        # starts a record there (cut before the "#", every range was read twice).
        raw = data.obj
        assert isinstance(raw, bytes)
        cuts = [low]
        while len(data) - cuts[-1] > 2 * PARALLEL_RANGE:
            cut = raw.find(SEPARATOR, cuts[-1] + PARALLEL_RANGE, len(data))
            if cut < 0:
                break
            cuts.append(cut + len(SEPARATOR))
        cuts.append(len(data))
        given = (_bytes(context.ts), _bytes(context.db))
        first = run_range(data, low, cuts[1], merger, host, context=given)
        merger.add(file, 0, host, first, cuts[1] - low)
        jobs = [
            (file, 0, host, low, high, False, data, high - low)
            for low, high in itertools.pairwise(cuts[1:])
        ]
        if jobs:
            run_jobs(iter(jobs), merger, 2, None)
        ts, db = merger.context()
        return Piece(
            end=merger.reached.get(file, len(data)) - low,
            newlines=merger.lines[file] - line_base,
            events=merger.total.events - events,
            context=Context(_text(ts), _text(db)),
        )

    def _add_python(self, data: bytes, context: Context, file: int, line_base: int) -> Piece:
        from govern.digest.engine import Context as EngineContext
        from govern.digest.engine import EngineOptions, digest_range

        result = digest_range(
            data,
            0,
            len(data),
            at_start=False,
            file=file,
            options=EngineOptions(max_classes=self.max_classes, server=self.host),
            context=EngineContext(context.ts, context.db, known=True),
        )
        partial = result.partial
        close_runs(partial)
        partial.shift_lines(line_base, file)
        after = Context(
            partial.last_ts if partial.ts_seen else context.ts,
            partial.last_db if partial.db_seen else context.db,
        )
        events = partial.events
        partial.ts_seen = partial.db_seen = True
        if self._partial is None:
            self._partial = Partial(ts_seen=True, db_seen=True)
        merge(self._partial, partial, max_classes=self.max_classes)
        return Piece(result.end, result.newlines, events, after)

    def finish(self) -> Aggregate:
        """Everything added, as one aggregate (the accumulator is then spent)."""
        partial = self._partial or Partial(ts_seen=True, db_seen=True)
        if self._merger is not None:
            total = self._merger.finish()
            for index in range(total.class_count()):
                agg = total.class_at(index)
                partial.classes[agg.fingerprint] = agg
            partial.other = total.other
            partial.events = total.events
            partial.filtered = total.filtered
            partial.no_statement = total.no_statement
            partial.malformed = total.malformed
            partial.banners = total.banners
            partial.malformed_kept = total.malformed_kept
            partial.minutes = total.minutes
        self._merger = self._partial = None
        aggregate = Aggregate(self.max_classes, partial)
        aggregate.sources = self.sources
        return aggregate


def _bytes(value: str | None) -> bytes | None:
    return None if value is None else value.encode("utf-8", "surrogateescape")


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", "surrogateescape")


# --- classes from counters (Performance Schema) ----------------------------------------------


@dataclass
class ClassFigures:
    """What a statistics table knows of a class over an interval: how many statements,
    and per attribute the count, sum and (when it can tell) min, max and a histogram
    of values (micro-units, as the digest keeps them)."""

    statement: bytes | None  # the text to fingerprint; None: statements of no known class
    count: int
    ts_min: str | None
    ts_max: str | None
    #: name -> (sum, low, high, histogram {value: count} or None); low/high None: unknown
    metrics: dict[str, tuple[int, int | None, int | None, dict[int, int] | None]]
    flags: dict[str, int]  # name -> statements with the flag
    values: dict[str, dict[str, int]]  # name -> value -> statements (db, digest)
    sample: tuple[bytes, int] | None = None  # a statement and its Query_time


def aggregate_of(
    classes: list[ClassFigures], *, host: str | None, name: str, max_classes: int = MAX_CLASSES
) -> Aggregate:
    """An aggregate of classes given by their figures (each statement fingerprinted as
    a slow log's would be), the inputs listed as ``name``."""
    partial = Partial(ts_seen=True, db_seen=True)
    for figures in classes:
        if figures.count <= 0:
            continue
        agg = _class_of(figures, host)
        if figures.statement is None:
            one = Partial(other=agg, events=figures.count)
        else:
            one = Partial(classes={agg.fingerprint: agg}, events=figures.count)
        merge(partial, one, max_classes=max_classes)
    aggregate = Aggregate(max_classes, partial)
    aggregate.sources = [Source(name, host, 0)]
    return aggregate


def _class_of(figures: ClassFigures, host: str | None) -> ClassAgg:
    statement = figures.statement
    agg = ClassAgg(b"" if statement is None else fingerprint_bytes(statement), count=figures.count)
    if figures.ts_min:
        agg.see_ts(figures.ts_min)
    if figures.ts_max:
        agg.see_ts(figures.ts_max)
    for metric_name, (total, low, high, histogram) in figures.metrics.items():
        average = total // figures.count
        metric = Metric(
            count=figures.count,
            total=total,
            low=average if low is None else min(low, average),
            high=average if high is None else max(high, average),
            decimal=metric_name.endswith("_time"),
        )
        if histogram and sum(histogram.values()) == figures.count:
            for value, times in histogram.items():
                key = sketch.bucket_key(value)
                metric.buckets[key] = metric.buckets.get(key, 0) + times
        agg.metrics[metric_name] = metric
    if "Query_time" in figures.metrics:
        total, _, _, spread = figures.metrics["Query_time"]
        if not spread or sum(spread.values()) != figures.count:
            spread = {total // figures.count: figures.count}
        for value, times in spread.items():
            agg.histogram[histogram_index(value)] += times
    for flag, yes in figures.flags.items():
        agg.booleans[flag] = [min(yes, figures.count), figures.count]
    for value_name, counted in figures.values.items():
        for text_value, times in counted.items():
            agg.add_string(value_name, text_value, times)
    if host:
        agg.servers[host] = figures.count
    if figures.sample is not None:
        statement, query_time = figures.sample
        agg.sample = Sample(
            query_time=query_time,
            query=statement,
            ts=figures.ts_max,
            db=next(iter(figures.values.get("db", {})), None),
            user=None,
            host=None,
            file=0,
            line=0,
        )
    return agg
