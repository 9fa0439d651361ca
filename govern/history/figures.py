"""What ``govern regressions`` reads of a store: per class, only the figures its rules need.

A merged report (``HistoryStore.report``) unpacks and merges every class's whole saved state
(distinct-count hashes, flags, values, sample …) of every bucket: 80% of a regression check.
The rules need per class only its count, total time and Query_time percentiles, plus the
worst sample's plan and the fingerprint of what they report. So this reads the figure
columns of the class rows (count, total and largest Query_time) and keeps each row's
Query_time sketch blob unopened: a class's sketches are merged only when its percentiles are
asked (classes past the count floors), its worst row's state only when its plan or
fingerprint is (:class:`ClassFigures`). A host's whole fresh days come from its day roll-up,
the rest from its hourly rows, as ``report()`` reads them; the fleet is the sum of its hosts.

The work follows what can be a finding, not the store (:func:`span_figures`): the additive
figures (count, total, largest Query_time) are summed by the server, a ``GROUP BY
class_id`` query per host, two hosts at once (:func:`parallel`); most of a fresh day cut by
the span is its roll-up minus its other hours, its own rows read only for the classes that
need them (:func:`refine`); a class's rows (their sketch blobs) are read only when its
percentiles are asked, in batches (:meth:`Source.load`). The same query takes the
``MIN``/``MAX`` of the rows' own p95/p99 buckets (bounds.py), which bound the class's
percentiles without a sketch, and the rows' ``explained`` flags, so an unexplained class's
state is never read for a plan.

The figures are those of the merged report, exactly: percentiles from the same merged sketch
clamped to the same exact [min, max] (the max is a column; the min is read from the states
in the one case it matters, a percentile in the lowest, wider-than-one-value bucket), the
sample the same worst event (ties to the last one merged, as ``report()`` merges). A class
whose rows lack a sketch for some events (sums-only sources) is read the slow, exact way.
"""

from __future__ import annotations

import datetime as dt
import functools
import queue
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from govern import sketch
from govern.digest.report import SampleQuery
from govern.history.bounds import value_range
from govern.history.rows import sketch_of, state_summary, unpack
from govern.history.sql import SqlStore, stamp

QUANTILES = (0.95, 0.99)
#: Class IDs per state query.
BATCH = 500

#: Where a row's state is: (table, host, start or day, class ID).
Ref = tuple[str, str, str, str]
#: (p95, p99) in seconds.
Pair = tuple[float | None, float | None]
#: The lowest and highest p95 bucket, then p99's, of a class's rows (bounds.py).
Keys = tuple[int, int, int, int]


class ClassFigures:
    """One class over a span, on one host or summed over several: what ``judge`` reads of
    a report's class (``key``, ``id``, ``count``, ``total_time``, ``query_time``,
    ``sample``, ``fingerprint``), the costly parts computed on first use."""

    # No __slots__: the ~240,000 host-classes of a fleet's check are built with three
    # attributes set, the rest read from these class defaults until first written (23
    # slots set in __init__: 0.66 CPU-s for 238,000 in a loop; three: 0.39)
    count = 0
    micro = 0
    _qt_max = -1
    #: the fleet's: each host's figures (this shared empty list is never appended to:
    #: :meth:`absorb` gives a class its own)
    parts: list[ClassFigures] = []  # noqa: RUF012
    _rows: list[tuple[Ref, bytes | None, int]] | None = None
    #: the largest of the rows' ``explained`` flags (2: a row lacks it); 0: no row holds
    #: a plan, so the worst row is not looked up for one
    _any = 2
    #: a host's: its largest event, flags and buckets still lack the rows of the source's
    #: ``partial`` hours (only their count and time were summed: the day roll-up minus the
    #: other hours); the fleet's: not yet folded from its parts
    _partial = False
    _found = False  # the worst row looked up (find_worst)
    _worst: Ref | None = None
    _order: tuple[Any, ...] = ()  # its place in report()'s merge order
    _explained: int | None = None  # its flag (None: the row lacks it)
    #: the lowest and highest p95 and p99 buckets of the rows (bounds.py; None: a row
    #: lacks them, or no row yet)
    _keys: Keys | None = None
    #: the buckets (lowest, highest p95, same of p99; None: no row yet) and the rows
    #: without them, as summed so far (a host's partial figures, :meth:`_fold`)
    _raw: tuple[int | None, int | None, int | None, int | None, int] = (
        None, None, None, None, 0)  # fmt: skip
    _sketch: dict[int, int] | None = None
    _stat: Pair | None = None
    _bounds: tuple[Pair, Pair] | None = None
    _fingerprint: str | None = None
    _plan: dict[str, Any] | None = None
    _plan_read = False

    def __init__(self, class_id: str, read: StateReader, source: Source | None = None) -> None:
        self.id = class_id
        self.source = source  # where a host's rows are (None: the fleet's, from its parts)
        self._read = read

    def add(
        self,
        count: int,
        micro: int,
        qt_max: int,
        any_explained: int,
        keys: Keys | None,
        *,
        partial: bool = False,
    ) -> None:
        """A host's summed rows: their largest ``qt_max`` and ``explained`` flag (2: a row
        lacks it), ``keys``: their percentile buckets; ``partial``: those three lack the
        source's partial hours (looked up when asked, :func:`refine`). Where the worst row
        is, is looked up when asked (:func:`find_worst`)."""
        self.count += count
        self.micro += micro
        self._qt_max = max(self._qt_max, qt_max)
        self._any = any_explained
        self._keys = keys
        self._partial = partial

    def _fold(
        self,
        qt_max: Any,
        explained: Any,
        keys: list[Any],
        unknown: Any,
        count: int = 0,
        micro: int = 0,
    ) -> None:
        """Add summed rows as the server returns them (NULL: no row of that kind): a host's
        partial figures, or the partial hours' rows of a class (:meth:`Source.refine`)."""
        self.count += count
        self.micro += micro
        if qt_max is not None:
            self._qt_max = max(self._qt_max, int(qt_max))
        if explained is not None:
            self._any = int(explained) if self._any < 0 else max(self._any, int(explained))
        raw = self._raw
        lows, highs = (raw[0], raw[2]), (raw[1], raw[3])
        new = [None if key is None else int(key) for key in keys]
        low95, low99 = (_pick(min, old, new[i]) for old, i in zip(lows, (0, 2), strict=True))
        high95, high99 = (_pick(max, old, new[i]) for old, i in zip(highs, (1, 3), strict=True))
        self._raw = (low95, high95, low99, high99, raw[4] + int(unknown or 0))
        self._keys = (
            None if self._raw[4] or None in self._raw[:4] else (low95, high95, low99, high99)  # type: ignore[assignment]
        )

    def _settle(self) -> None:
        """Complete the largest event, flags and buckets: a host's from its partial hours,
        the fleet's from its parts (the parts still partial looked up in one batch)."""
        if not self._partial:
            return
        if not self.parts:
            refine([self])
            return
        refine(self.parts)
        keys: Keys | None = self.parts[0]._keys
        for part in self.parts[1:]:
            if keys is None or part._keys is None:
                keys = None
                break
            keys = _widest(keys, part._keys)
        self._keys = keys
        self._any = max(part._any for part in self.parts)
        self._qt_max = max(part._qt_max for part in self.parts)
        self._partial = False

    @property
    def qt_max(self) -> int:
        """The largest event, in µs."""
        if self._partial:
            self._settle()
        return self._qt_max

    @property
    def any_explained(self) -> int:
        if self._partial:
            self._settle()
        return self._any

    @property
    def keys(self) -> Keys | None:
        if self._partial:
            self._settle()
        return self._keys

    @property
    def worst(self) -> Ref | None:
        """Where the worst event's row is (the last one merged of the largest ``qt_max``)."""
        if not self._found:
            find_worst([self])
        return self._worst

    @property
    def explained(self) -> int | None:
        """The worst row's ``explained`` flag (None: the row lacks it); 0 without a look-up
        when no row holds a plan."""
        if self.any_explained == 0:
            return 0
        if not self._found:
            find_worst([self])
        return self._explained

    @property
    def rows(self) -> list[tuple[Ref, bytes | None, int]]:
        """(where, Query_time sketch blob, count) of every row, read on first use."""
        if self.parts:
            return [row for part in self.parts for row in part.rows]
        if self._rows is None:
            if self.source is None:
                return []
            self.source.load([self])
        assert self._rows is not None
        return self._rows

    @property
    def loaded(self) -> bool:
        return all(part.loaded for part in self.parts) if self.parts else self._rows is not None

    def absorb(self, other: ClassFigures) -> None:
        """Another host's figures of the class (the fleet): its sketch merged once, reused;
        its largest event, flags and buckets folded in when first asked."""
        self.count += other.count
        self.micro += other.micro
        if self.parts:
            self.parts.append(other)
        else:
            self.parts = [other]
        self._partial = True

    # --- what judge reads ---------------------------------------------------------------
    @property
    def key(self) -> str:
        return self.id.upper()[-16:]

    @property
    def total_time(self) -> float:
        return round(self.micro / 1_000_000, 6)

    @property
    def query_time(self) -> QueryTime:
        return QueryTime(self)

    def percentiles(self) -> tuple[float | None, float | None]:
        """(p95, p99) in seconds, the sketches merged on the first call."""
        if self._stat is None:
            self._stat = self._quantiles()
        return self._stat

    def percentile_bounds(self) -> tuple[Pair, Pair]:
        """The lowest and the highest (p95, p99) can be, from the merged sketches alone: a
        percentile in the lowest bucket is clamped to the exact minimum, which only the
        states hold (somewhere in that bucket). Equal when no state is needed."""
        if self._stat is not None:
            return self._stat, self._stat
        if self._bounds is None and self.keys is not None and not self.loaded:
            # from the rows' percentile buckets (bounds.py): no sketch read
            p95 = value_range(self.keys[0], self.keys[1], self.qt_max)
            p99 = value_range(self.keys[2], self.keys[3], self.qt_max)
            return (_seconds(p95[0]), _seconds(p99[0])), (_seconds(p95[1]), _seconds(p99[1]))
        if self._bounds is None:
            merged = self.merged_sketch()
            if not merged or sum(merged.values()) != self.count:
                exact = self.percentiles()
                self._bounds = (exact, exact)
            else:
                low, top = sketch.bucket_range(min(merged))
                lowest = self._values(merged, low)
                self._bounds = (lowest, self._values(merged, top) if self._clamped() else lowest)
                if self._bounds[0] == self._bounds[1]:
                    self._stat = lowest
        return self._bounds

    @property
    def sample(self) -> SampleQuery:
        """The worst event's plan (nothing else of the sample is read)."""
        if not self._plan_read and self.explained == 0:  # its worst row holds no plan
            self._plan, self._plan_read = None, True
        if self._plan_read and self._plan is None:
            return _NO_PLAN  # (frozen: one for all; judge asks each class once or twice)
        if not self._plan_read:
            summary = self._worst_state()
            self._plan, self._plan_read = (summary[1] if summary else None), True
        return SampleQuery("", plan=self._plan)

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            summary = self._worst_state()
            self._fingerprint = summary[0] if summary else ""
        return self._fingerprint

    # --- the costly parts ---------------------------------------------------------------
    def _worst_state(self) -> Summary | None:
        return None if self.worst is None else self._read(self.worst)

    def merged_sketch(self) -> dict[int, int]:
        if self._sketch is None:
            merged: dict[int, int] = {}
            for part in self.parts:
                sketch.merge_into(merged, part.merged_sketch())
            if not self.parts:
                for _, blob, _ in self.rows:
                    if blob is not None:  # [[key, count], …] (rows.py), added in place
                        for key, count in unpack(blob):
                            merged[key] = merged.get(key, 0) + count
            self._sketch = merged
        return self._sketch

    def _quantiles(self) -> tuple[float | None, float | None]:
        merged = self.merged_sketch()
        if sum(merged.values()) != self.count:  # events without a sketched Query_time
            return self._exact_quantiles()
        if not merged:
            return None, None
        lowest = min(merged)
        low = sketch.bucket_range(lowest)[0]
        if self._clamped():
            # p95 is in the lowest bucket, whose value may lie below the exact minimum (the
            # clamp): read the minimum of the rows holding that bucket
            refs = [ref for ref, blob, _ in self.rows if lowest in sketch_of(blob)]
            self._read.prefetch(refs)
            low = min(self._row_min(ref) for ref in refs)
        # below the lowest bucket, any lower bound clamps nothing
        return self._values(merged, low)

    def _clamped(self) -> bool:
        """p95 is in the lowest bucket, wider than one value (the exact minimum matters)."""
        merged = self.merged_sketch()
        lowest = min(merged)
        low, top = sketch.bucket_range(lowest)
        rank = -((-round(QUANTILES[0] * 1000) * self.count) // 1000)
        return top > low and merged[lowest] >= rank

    def _values(self, merged: dict[int, int], low: int) -> Pair:
        values = sketch.quantiles(merged, QUANTILES, low, self.qt_max)
        p95, p99 = (round(value / 1_000_000, 6) for value in values)
        return p95, p99

    def _row_min(self, ref: Ref) -> int:
        summary = self._read(ref)
        return (summary[2] or 0) if summary else 0

    def _exact_quantiles(self) -> tuple[float | None, float | None]:
        """From the rows' saved Query_time metrics, as a merged report computes them."""
        count, low, high = 0, 0, 0
        buckets: dict[int, int] = {}
        for ref, _, _ in self.rows:
            state = self._read.document(ref)
            metric = (state or {}).get("state", {}).get("metrics", {}).get("Query_time")
            if not metric or not metric["count"]:
                continue
            low = metric["min"] if not count else min(low, metric["min"])
            high = metric["max"] if not count else max(high, metric["max"])
            count += metric["count"]
            sketch.merge_into(buckets, sketch.from_pairs(metric["buckets"]))
        if not count or sum(buckets.values()) != count:
            return None, None
        p95, p99 = (
            round(v / 1_000_000, 6) for v in sketch.quantiles(buckets, QUANTILES, low, high)
        )
        return p95, p99


_NO_PLAN = SampleQuery("")


def _seconds(micro: int) -> float:
    return round(micro / 1_000_000, 6)


def _pick(choose: Any, one: int | None, other: int | None) -> int | None:
    return other if one is None else one if other is None else choose(one, other)


def _widest(one: Keys, other: Keys) -> Keys:
    return (min(one[0], other[0]), max(one[1], other[1]),
            min(one[2], other[2]), max(one[3], other[3]))  # fmt: skip


class QueryTime:
    """A class's Query_time as a report's Stat reads: sum and max from the columns, the
    percentiles computed when first read."""

    __slots__ = ("_of",)

    def __init__(self, of: ClassFigures) -> None:
        self._of = of

    @property
    def sum(self) -> float:
        return self._of.total_time

    @property
    def max(self) -> float:
        return round(self._of.qt_max / 1_000_000, 6)

    @property
    def p95(self) -> float | None:
        return self._of.percentiles()[0]

    @property
    def p99(self) -> float | None:
        return self._of.percentiles()[1]


#: What a regression check reads of a class state (rows.state_summary).
Summary = tuple[str, dict[str, Any] | None, int | None]


class StateReader:
    """A row's class state, read once, kept as its :data:`Summary` (fingerprint, plan,
    Query_time's minimum); :meth:`prefetch` reads many in a few queries (a round trip per
    state would dominate on a MySQL store)."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store
        self.reads = 0
        self.cache: dict[Ref, Summary | None] = {}

    def __call__(self, ref: Ref) -> Summary | None:
        if ref not in self.cache:
            self.prefetch([ref])
        return self.cache.get(ref)

    def document(self, ref: Ref) -> dict[str, Any] | None:
        """The whole state (rare: a class whose sketches miss some events)."""
        for rows in self._states(ref[0], ref[1], ref[2], [ref[3]]):
            for _, state in rows:
                return dict(unpack(state))
        return None

    def prefetch(self, refs: Iterable[Ref]) -> None:
        """Read the states of ``refs``: one query per (table, host, bucket or day)."""
        groups: dict[tuple[str, str, str], list[str]] = {}
        for table, host, when, class_id in refs:
            if (table, host, when, class_id) not in self.cache:
                groups.setdefault((table, host, when), []).append(class_id)
        for (table, host, when), ids in groups.items():
            for index in range(0, len(ids), BATCH):
                chunk = ids[index : index + BATCH]
                found = {
                    str(class_id): state
                    for rows in self._states(table, host, when, chunk)
                    for class_id, state in rows
                }
                for class_id in chunk:
                    state = found.get(class_id)
                    self.cache[(table, host, when, class_id)] = (
                        None if state is None else state_summary(state)
                    )

    def _states(
        self, table: str, host: str, when: str, ids: list[str]
    ) -> Iterator[list[tuple[Any, ...]]]:
        column = "start" if table == "history_classes" else "day"
        marks = ", ".join(["?"] * len(ids))
        self.reads += 1
        yield self.store.run(
            f"SELECT class_id, state FROM {table}"
            f" WHERE host = ? AND {column} = ? AND class_id IN ({marks})",
            (host, when, *ids),
        )

    def forget(self) -> None:
        self.cache.clear()


class Figures:
    """Every class of one span on one host (or summed over hosts), as ``judge`` reads a
    report: ``classes``."""

    def __init__(self, classes: dict[str, ClassFigures] | None = None) -> None:
        self.by_id: dict[str, ClassFigures] = classes or {}

    @property
    def classes(self) -> list[ClassFigures]:
        return list(self.by_id.values())

    @classmethod
    def summed(cls, parts: Iterable[Figures], read: StateReader) -> Figures:
        total: dict[str, ClassFigures] = {}
        for part in parts:
            for class_id, mine in part.by_id.items():
                slot = total.get(class_id)
                if slot is None:
                    slot = total[class_id] = ClassFigures(class_id, read)
                slot.absorb(mine)
        return cls(total)


class Source:
    """Where a host's rows of one span are: its fresh days' roll-ups, then its hourly rows
    in ``ranges``; :meth:`load` reads the rows of many classes in a few queries."""

    def __init__(
        self, store: SqlStore, host: str, days: list[str], ranges: list[tuple[str, str]]
    ) -> None:
        self.store, self.host, self.days, self.ranges = store, host, days, ranges
        #: hours (within ``ranges``) whose count and time were summed from their day's
        #: roll-up minus its other hours: their largest event, flags and buckets are read
        #: for the classes that need them (:meth:`refine`)
        self.partial: list[tuple[str, str]] = []
        self.queries = 0

    def refine(self, classes: Iterable[ClassFigures]) -> None:
        """Fold the rows of the partial hours into the largest event, flags and buckets of
        ``classes`` (a query per batch, over the covering index)."""
        todo = [cls for cls in classes if cls._partial]
        self.fold(todo, self.partial_rows(self.store, [cls.id for cls in todo]))

    def partial_rows(self, store: SqlStore, ids: list[str]) -> list[tuple[Any, ...]]:
        """The sums of the partial hours for ``ids`` (on ``store``: any connection)."""
        rows: list[tuple[Any, ...]] = []
        for index in range(0, len(ids), BATCH):
            rows += _sums(store, self.host, (), [], self.partial, ids[index : index + BATCH])
            self.queries += 1
        return rows

    def fold(self, classes: list[ClassFigures], rows: list[tuple[Any, ...]]) -> None:
        """Fold :meth:`partial_rows` into ``classes``: their figures are complete."""
        by_id = {cls.id: cls for cls in classes}
        for class_id, _, _, qt_max, explained, *keys, unknown in rows:
            by_id[str(class_id)]._fold(qt_max, explained, keys, unknown)
        for cls in classes:
            cls._partial = False
            if cls._any < 0:  # no row of its own (not expected): may hold a plan
                cls._any = 2

    def load(self, classes: Iterable[ClassFigures]) -> None:
        """Read the rows of ``classes`` not read yet (a query per part and batch)."""
        todo = [cls for cls in classes if cls._rows is None]
        fresh = set(self.days)
        for index in range(0, len(todo), BATCH):
            chunk = {cls.id: cls for cls in todo[index : index + BATCH]}
            found: dict[str, list[tuple[Ref, bytes | None, int]]] = {name: [] for name in chunk}
            marks = ", ".join(["?"] * len(chunk))
            parts: list[tuple[str, str, str, str]] = []
            if self.days:
                parts.append(("history_day_classes", "day", self.days[0], self.days[-1]))
            parts += [("history_classes", "start", low, high) for low, high in self.ranges]
            for table, column, low, high in parts:
                upper = "<=" if table == "history_day_classes" else "<"
                rows = self.store.run(
                    f"SELECT {column}, class_id, count, qt_sketch FROM {table}"
                    f" WHERE host = ? AND {column} >= ? AND {column} {upper} ?"
                    f" AND class_id IN ({marks})",
                    (self.host, low, high, *chunk),
                )
                self.queries += 1
                for when, class_id, count, blob in rows:
                    at = _text(when)
                    if table == "history_day_classes" and at not in fresh:
                        continue  # a stale day between fresh ones: read from its hours
                    name = str(class_id)
                    found[name].append(((table, self.host, at, name), blob, int(count)))
            for name, cls in chunk.items():
                cls._rows = found[name]

    def find_worst(self, classes: Iterable[ClassFigures]) -> None:
        """Look up the worst row of ``classes`` (a query per part and batch): of the rows of
        the largest ``qt_max``, the last report() merges (hours after days, then the latest)."""
        todo = [cls for cls in classes if not cls._found]
        fresh = set(self.days)
        by_class = "history_{}_by_class"
        for index in range(0, len(todo), BATCH):
            chunk = {cls.id: cls for cls in todo[index : index + BATCH]}
            marks = ", ".join(["?"] * len(chunk))
            parts: list[tuple[str, str, int, str, tuple[str, ...]]] = []
            if self.days:
                parts.append(("history_day_classes", "day", 0,
                              f"day IN ({', '.join(['?'] * len(self.days))})", tuple(self.days)))  # fmt: skip
            parts += [("history_classes", "start", 1, "start >= ? AND start < ?", (low, high))
                      for low, high in self.ranges]  # fmt: skip
            for table, column, rank, where, args in parts:
                # by class: a few rows a class (their states read), not the host's span
                index_name = by_class.format(table.removeprefix("history_"))
                hint = (
                    f"FORCE INDEX ({index_name})"
                    if self.store.dialect == "mysql"
                    else f"INDEXED BY {index_name}"
                )
                rows = self.store.run(
                    f"SELECT {column}, class_id, qt_max, explained FROM {table} {hint}"
                    f" WHERE host = ? AND {where} AND class_id IN ({marks})",
                    (self.host, *args, *chunk),
                )
                self.queries += 1
                for when, class_id, qt_max, explained in rows:
                    cls = chunk[str(class_id)]
                    at = _text(when)
                    if int(qt_max) != cls.qt_max or (rank == 0 and at not in fresh):
                        continue
                    order = (rank, self.host, at)
                    if cls._worst is None or order > cls._order:
                        cls._worst, cls._order = (table, self.host, at, cls.id), order
                        cls._explained = None if explained is None else int(explained)
            for cls in chunk.values():
                cls._found = True


def find_worst(classes: Iterable[ClassFigures]) -> None:
    """Look up the worst rows of ``classes`` (hosts' or the fleet's), batched per host and
    span; the fleet's is the worst of its hosts' (ties: the last host)."""
    by_source: dict[int, tuple[Source, list[ClassFigures]]] = {}
    fleet: list[ClassFigures] = []
    for cls in classes:
        if cls._found:
            continue
        if cls.parts:
            fleet.append(cls)
        for part in cls.parts or [cls]:
            if not part._found and part.qt_max == cls.qt_max and part.source is not None:
                by_source.setdefault(id(part.source), (part.source, []))[1].append(part)
    for source, todo in by_source.values():
        source.find_worst(todo)
    for cls in fleet:
        best: ClassFigures | None = None
        for part in cls.parts:
            if (
                part.qt_max == cls.qt_max
                and part._worst is not None
                and (best is None or part._order > best._order)
            ):
                best = part
        if best is not None:
            cls._worst, cls._order, cls._explained = best._worst, best._order, best._explained
        cls._found = True


def load(classes: Iterable[ClassFigures]) -> None:
    """Read the rows of ``classes`` (hosts' or the fleet's), batched per host and span."""
    by_source: dict[int, tuple[Source, list[ClassFigures]]] = {}
    for cls in classes:
        for part in cls.parts or [cls]:
            if part._rows is None and part.source is not None:
                by_source.setdefault(id(part.source), (part.source, []))[1].append(part)
    for source, todo in by_source.values():
        source.load(todo)


def refine(classes: Iterable[ClassFigures]) -> None:
    """Complete the partial figures of host ``classes``, batched per host and span."""
    by_source: dict[int, tuple[Source, list[ClassFigures]]] = {}
    for cls in classes:
        if cls._partial and cls.source is not None:
            by_source.setdefault(id(cls.source), (cls.source, []))[1].append(cls)
    for source, todo in by_source.values():
        source.refine(todo)


def span_figures(
    store: SqlStore,
    read: StateReader,
    hosts: list[str],
    since: dt.datetime,
    until: dt.datetime,
    exact: dict[str, set[str]] | None = None,
    pieces: Pieces | None = None,
) -> dict[str, Figures]:
    """Each host's classes over [since, until): whole fresh days from its day roll-ups, the
    rest from its hourly rows (report()'s reading). The server sums each class's count and
    time, one query a host; the rows themselves are read when a class's percentiles are
    asked.

    With ``exact`` (the class IDs, per host, whose largest event, flags and buckets will be
    asked), the hours of a day cut by the span are, when most of a fresh day, summed as its
    day roll-up minus its other hours, and their rows read only for those classes (the
    others' on first use, :func:`refine`): a 24-hour window cuts the baseline's last day
    into 18 to 23 hours a class, which were most of the rows read.

    ``pieces`` carries the window's sums to the baseline: the window's (``exact`` None)
    hours before the midnight that ends the baseline's last day are summed apart and kept
    there; the baseline's (``exact`` given) subtracts them from that day's roll-up instead
    of reading those hours again."""
    days = _full_days(since, until)
    fresh: dict[str, set[str]] = {host: set() for host in hosts}
    if days:
        for host, day in store.run(
            "SELECT host, day FROM history_days WHERE day >= ? AND day <= ?"
            " AND stale = 0 AND meta IS NOT NULL",
            (days[0], days[-1]),
        ):
            if str(host) in fresh:
                fresh[str(host)].add(_text(day))
    cut = _cut_days(store, hosts, since, until) if exact is not None else {}
    plans: list[tuple[str, Source, _Plan]] = []
    for host in hosts:
        whole = sorted(fresh[host])
        source = Source(store, host, whole, list(_hour_ranges(since, until, days, set(whole))))
        plan = _subtract(source.ranges, cut.get(host, set()))
        source.partial = plan.partial
        plans.append((host, source, plan))
    kept: Pieces = {} if pieces is None else pieces
    sums = parallel(
        store,
        [
            functools.partial(
                _span_sums, host=host, days=source.days, ranges=plan.ranges, cut=plan.days,
                minus=plan.minus, pieces=kept, keep=pieces is not None and exact is None,
            )
            for host, source, plan in plans
        ],
    )  # fmt: skip
    found: dict[str, Figures] = {}
    refined: list[tuple[Source, list[ClassFigures]]] = []
    for (host, source, plan), rows in zip(plans, sums, strict=True):
        figures = Figures({})
        for class_id, count, micro, qt_max, explained, *keys, unknown in rows:
            if qt_max is None and not count:
                continue  # only in the hours taken off its day: not in the span
            name = str(class_id)
            cls = ClassFigures(name, read, source)
            if plan.partial:  # as _fold would, the first time (a row a class: cheaper)
                cls.count, cls.micro, cls._partial = int(count), int(micro), True
                cls._qt_max = -1 if qt_max is None else int(qt_max)
                cls._any = -1 if explained is None else int(explained)
                lost = int(unknown or 0)
                cls._raw = (*keys, lost)
                cls._keys = None if lost or None in keys else tuple(keys)
            else:
                known = (
                    None
                    if int(unknown or 0) or keys[0] is None
                    else (int(keys[0]), int(keys[1]), int(keys[2]), int(keys[3]))
                )
                cls.add(int(count), int(micro), _int(qt_max), _int(explained, 2), known)
            figures.by_id[name] = cls
        found[host] = figures
        if plan.partial:
            # apart: with the class IDs in the same query, MariaDB took twice as long
            asked = (exact or {}).get(host, set())
            refined.append((source, [cls for name, cls in figures.by_id.items() if name in asked]))
    partial = parallel(
        store,
        [
            functools.partial(source.partial_rows, ids=[cls.id for cls in classes])
            for source, classes in refined
        ],
    )
    for (source, classes), rows in zip(refined, partial, strict=True):
        source.fold(classes, rows)
    return found


#: Per (host, first, end) of hours: each class's (count, total µs) in them
#: (:func:`span_figures`)
Pieces = dict[tuple[str, str, str], dict[str, tuple[int, int]]]


def _span_sums(
    store: SqlStore,
    host: str,
    days: Sequence[str],
    ranges: list[tuple[str, str]],
    cut: Sequence[str],
    minus: Sequence[tuple[str, str]],
    pieces: Pieces,
    keep: bool,
) -> list[tuple[Any, ...]]:
    """:func:`_sums`, with the pieces of hours the baseline will subtract (``keep``: the
    window's) summed apart and kept in ``pieces``, or (the baseline's) taken from them."""
    if keep:
        split = [piece for low, high in ranges for piece in _at_midnights(low, high)]
        kept = [(low, high) for low, high in split if _kept(low, high)]
        if not kept:
            return _sums(store, host, days, ranges, cut=cut, minus=minus)
        rest = [piece for piece in split if piece not in kept]
        found = [_sums(store, host, days, rest, cut=cut, minus=minus)] if days or rest else []
        for low, high in kept:
            rows = _sums(store, host, (), [(low, high)])
            pieces[(host, low, high)] = {str(row[0]): (int(row[1]), int(row[2])) for row in rows}
            found.append(rows)
        return _merged(found)
    taken = [pieces[(host, *piece)] for piece in minus if (host, *piece) in pieces]
    if not taken:
        return _sums(store, host, days, ranges, cut=cut, minus=minus)
    rest = [piece for piece in minus if (host, *piece) not in pieces]
    rows = _sums(store, host, days, ranges, cut=cut, minus=rest)
    return _minus(rows, taken)


def _at_midnights(low: str, high: str) -> Iterator[tuple[str, str]]:
    cursor, end = _moment(low), _moment(high)
    while cursor < end:
        stop = min(end, cursor.replace(hour=0, minute=0, second=0) + dt.timedelta(days=1))
        yield stamp(cursor), stamp(stop)
        cursor = stop


def _kept(low: str, high: str) -> bool:
    """Hours that end the day they start in, from more than 12 hours into it: the part of
    that day a baseline ending at ``low`` takes off its roll-up (:func:`_subtract`)."""
    first, end = _moment(low), _moment(high)
    day = first.replace(hour=0, minute=0, second=0, microsecond=0)
    return end == day + dt.timedelta(days=1) and first - day > dt.timedelta(hours=12)


def _merged(parts: list[list[tuple[Any, ...]]]) -> list[tuple[Any, ...]]:
    """The sums of several parts' rows as one query's outer ``GROUP BY`` (:data:`_OUTER`)."""
    parts = [rows for rows in parts if rows]
    if len(parts) <= 1:
        return parts[0] if parts else []
    by_id: dict[str, list[Any]] = {}
    for rows in parts:
        for row in rows:
            slot = by_id.get(str(row[0]))
            if slot is None:
                by_id[str(row[0])] = list(row)
                continue
            slot[1] += row[1]
            slot[2] += row[2]
            for at, choose in _CHOOSE:
                slot[at] = _pick(choose, slot[at], row[at])
            slot[9] = int(slot[9] or 0) + int(row[9] or 0)
    return [tuple(slot) for slot in by_id.values()]


#: How :func:`_merged` folds the columns 3 to 8 (:data:`_OUTER`)
_CHOOSE = ((3, max), (4, max), (5, min), (6, max), (7, min), (8, max))


def _minus(
    rows: list[tuple[Any, ...]], taken: list[dict[str, tuple[int, int]]]
) -> list[tuple[Any, ...]]:
    """``rows`` with the count and time of ``taken`` subtracted, as the ``minus`` part of
    :func:`_sums` would (a class only there: a row of negative sums)."""
    if len(taken) > 1:  # (one piece a span and host, but the sums are the same)
        summed: dict[str, tuple[int, int]] = {}
        for piece in taken:
            for class_id, (count, micro) in piece.items():
                was = summed.get(class_id, (0, 0))
                summed[class_id] = (was[0] + count, was[1] + micro)
        taken = [summed]
    left = dict(taken[0])
    found: list[tuple[Any, ...]] = []
    for row in rows:
        off = left.pop(str(row[0]), None)
        found.append(row if off is None else (row[0], row[1] - off[0], row[2] - off[1], *row[3:]))
    found += [(class_id, -count, -micro, *_NULLS) for class_id, (count, micro) in left.items()]
    return found


_NULLS = (None,) * 6 + (0,)

T = TypeVar("T")


def parallel(store: SqlStore, jobs: list[Callable[..., T]]) -> list[T]:
    """``job(store=…)`` of each job, on two connections at once where the store can open a
    second (MySQL): the server sums one host while the client parses another's rows."""
    twin = store.twin() if len(jobs) > 1 else None
    if twin is None:
        return [job(store=store) for job in jobs]
    free: queue.SimpleQueue[SqlStore] = queue.SimpleQueue()
    free.put(store)
    free.put(twin)

    def run(job: Callable[..., T]) -> T:
        mine = free.get()
        try:
            return job(store=mine)
        finally:
            free.put(mine)

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(run, jobs))


def _int(value: Any, default: int = -1) -> int:
    return default if value is None else int(value)


class _Plan:
    """How a host's hours are summed: ``ranges`` as they are; ``days`` (cut days) from
    their roll-ups minus their hours in ``minus``; ``partial``: what is left of those days,
    whose largest event, flags and buckets are read per class (:meth:`Source.refine`)."""

    def __init__(self) -> None:
        self.ranges: list[tuple[str, str]] = []
        self.days: list[str] = []
        self.minus: list[tuple[str, str]] = []
        self.partial: list[tuple[str, str]] = []


def _subtract(ranges: list[tuple[str, str]], fresh: set[str]) -> _Plan:
    """Split ``ranges`` at midnights; a piece that is more than half of a day in ``fresh``
    is summed as that day minus the rest of it."""
    plan = _Plan()
    if not fresh:
        plan.ranges = ranges
        return plan
    for low, high in ranges:
        cursor, end = _moment(low), _moment(high)
        while cursor < end:
            day = cursor.replace(hour=0, minute=0, second=0, microsecond=0)
            after = day + dt.timedelta(days=1)
            stop = min(end, after)
            day_text = day.date().isoformat()
            if day_text in fresh and (stop - cursor) > dt.timedelta(hours=12):
                plan.days.append(day_text)
                plan.partial.append((stamp(cursor), stamp(stop)))
                if day < cursor:
                    plan.minus.append((stamp(day), stamp(cursor)))
                if stop < after:
                    plan.minus.append((stamp(stop), stamp(after)))
            else:
                plan.ranges.append((stamp(cursor), stamp(stop)))
            cursor = stop
    return plan


def _cut_days(
    store: SqlStore, hosts: list[str], since: dt.datetime, until: dt.datetime
) -> dict[str, set[str]]:
    """Per host, the days that [since, until) cuts (not whole in it) whose roll-up is the
    exact merge of all their buckets (fresh, not pruned): their roll-up minus the hours
    outside the span is the span's part of them."""
    edges = {moment.date().isoformat() for moment in (since, until - dt.timedelta(microseconds=1))}
    edges -= set(_full_days(since, until))
    if not edges:
        return {}
    wanted = set(hosts)
    found: dict[str, set[str]] = {}
    marks = ", ".join(["?"] * len(edges))
    for host, day in store.run(
        f"SELECT host, day FROM history_days WHERE day IN ({marks})"
        " AND stale = 0 AND pruned = 0 AND meta IS NOT NULL",
        tuple(sorted(edges)),
    ):
        if str(host) in wanted:
            found.setdefault(str(host), set()).add(_text(day))
    return found


#: What each part of the sums query takes: all figures, the count and time only (a cut
#: day's roll-up), their negation (the hours outside the span), or all but them (the hours
#: of the partial ranges: their count and time are already in the day's)
_NAMES = ("count", "query_time", "qt_max", "explained", "p95_low", "p95_high", "p99_low",
          "p99_high", "unknown")  # fmt: skip
_BOUNDS = (
    "MAX(qt_max)",
    "MAX(COALESCE(explained, 2))",
    "MIN(qt_p95_key)",
    "MAX(qt_p95_key)",
    "MIN(qt_p99_key)",
    "MAX(qt_p99_key)",
    "SUM(CASE WHEN qt_p95_key IS NULL THEN 1 ELSE 0 END)",
)
_NONE = ("NULL",) * 6 + ("0",)
#: What each part of the sums query takes: all figures, the count and time only (a cut
#: day's roll-up), their negation (the hours outside the span), or all but them (the hours
#: of the partial ranges: their count and time are already in the day's)
_FIGURES = {
    "all": ("SUM(count)", "SUM(query_time)", *_BOUNDS),
    "sums": ("SUM(count)", "SUM(query_time)", *_NONE),
    "minus": ("-SUM(count)", "-SUM(query_time)", *_NONE),
    "bounds": ("0", "0", *_BOUNDS),
}
#: How the outer query groups the parts' columns again
_OUTER = ("SUM(count)", "SUM(query_time)", "MAX(qt_max)", "MAX(explained)", "MIN(p95_low)",
          "MAX(p95_high)", "MIN(p99_low)", "MAX(p99_high)", "SUM(unknown)")  # fmt: skip


def _select(columns: Sequence[str], dialect: str) -> str:
    """The class ID and ``columns``; on MySQL as one text (empty: NULL): pymysql parsing
    ten columns a row was 15 ms of client CPU for 2,400 rows, one text and a split 9 ms."""
    if dialect != "mysql":
        return "class_id, " + ", ".join(columns)
    return "CONCAT_WS(' ', class_id, " + ", ".join(f"COALESCE({c}, '')" for c in columns) + ") AS t"


def _rows(store: SqlStore, query: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The sums query's rows as tuples (see :func:`_select`). On MySQL its texts come
    joined, a few hundred KB a text (``GROUP_CONCAT`` per first character of the class
    ID): pymysql reading 230,000 rows a packet each was a third of the client's CPU."""
    if store.dialect != "mysql":
        return store.run(query, args)
    joined = (
        "SELECT SUM(LENGTH(t)) + COUNT(*) - 1, GROUP_CONCAT(t ORDER BY t SEPARATOR ',')"
        f" FROM ({query}) AS line GROUP BY LEFT(t, 1) ORDER BY LEFT(t, 1)"
    )
    texts: list[str] = []
    for length, text in store.run(joined, args):
        if text is None or len(text) != int(length):  # cut at group_concat_max_len
            texts = [str(row[0]) for row in store.run(query, args)]
            break
        texts += str(text).split(",")
    rows: list[tuple[Any, ...]] = []
    for text in texts:
        class_id, *figures = text.split(" ")
        rows.append((class_id, *[int(value) if value else None for value in figures]))
    return rows


def _sums(
    store: SqlStore,
    host: str,
    days: Sequence[str],
    ranges: list[tuple[str, str]],
    partial: Sequence[tuple[str, str]] = (),
    ids: Sequence[str] = (),
    cut: Sequence[str] = (),
    minus: Sequence[tuple[str, str]] = (),
) -> list[tuple[Any, ...]]:
    """(class ID, count, total µs, largest qt_max, largest explained flag (2: a row lacks
    it), lowest and highest p95 bucket, same of p99, rows without buckets) of ``host`` over
    ``days`` and ``ranges``, plus the ``cut`` days' count and time minus those of the hours
    in ``minus``, plus the rest of the figures over the ``partial`` hours for the classes
    ``ids``. Where the worst row is, is looked up after, for the few classes that need it
    (:func:`find_worst`): building its text for every row summed was half the server's
    work."""
    if store.dialect == "mysql":
        index = "{table} FORCE INDEX ({table}_{name})"
    else:
        index = "{table} INDEXED BY {table}_{name}"
    # the covering indexes of migrations 0006/0008: the rows' states are not read (MariaDB
    # chose the primary key, and read them, 5x slower); each part grouped on its own, so
    # the union the outer query groups again is a row per class and part, not per row.
    # One host a query: grouped by (host, class) over the fleet, MariaDB's temporary table
    # outgrew memory and went to disk (6.0 s for the window's 600,000 rows, 50 hosts x 40
    # ms one host at a time)
    day_table = index.format(table="history_day_classes", name="figures")
    hour_table = index.format(table="history_classes", name="figures")
    # a few classes' rows of hours by (host, class): their entries only (migration 0010)
    class_table = index.format(table="history_classes", name="bounds")
    parts: list[str] = []
    args: list[Any] = []

    def part(mode: str, table: str, where: str, values: Sequence[Any], alone: bool) -> None:
        columns = _FIGURES[mode]
        what = (
            _select(columns, store.dialect)
            if alone
            else "class_id, "
            + ", ".join(f"{c} AS {n}" for c, n in zip(columns, _NAMES, strict=True))
        )
        parts.append(f"SELECT {what} FROM {table} WHERE host = ? AND {where} GROUP BY class_id")
        args.extend((host, *values))

    alone = len(days[:1]) + len(cut[:1]) + len(ranges) + len(minus) + len(partial) * bool(ids) == 1
    if days:
        part("all", day_table, f"day IN ({', '.join(['?'] * len(days))})", days, alone)
    if cut:
        part("sums", day_table, f"day IN ({', '.join(['?'] * len(cut))})", cut, alone)
    for low, high in ranges:
        part("all", hour_table, "start >= ? AND start < ?", (low, high), alone)
    for low, high in minus:
        part("minus", hour_table, "start >= ? AND start < ?", (low, high), alone)
    if ids:
        marks = ", ".join(["?"] * len(ids))
        for low, high in partial:
            part("bounds", class_table, f"start >= ? AND start < ? AND class_id IN ({marks})",
                 (low, high, *ids), alone)  # fmt: skip
    if not parts:
        return []
    if alone:
        return _rows(store, parts[0], args)
    query = (
        f"SELECT {_select(_OUTER, store.dialect)} FROM ("
        + " UNION ALL ".join(parts)
        + ") AS part GROUP BY class_id"
    )
    return _rows(store, query, args)


def host_figures(
    store: SqlStore, read: StateReader, host: str, since: dt.datetime, until: dt.datetime
) -> Figures:
    """One host's classes over [since, until) (:func:`span_figures`)."""
    return span_figures(store, read, [host], since, until)[host]


def hours_with_data(
    store: SqlStore, since: dt.datetime, until: dt.datetime, hosts: list[str]
) -> dict[str | None, set[dt.datetime]]:
    """For each host (and None: all of ``hosts``), the hours of [since, until) with events,
    counted as ``series(step=3600)`` counts them: buckets by hour, a day whose buckets were
    dropped as one hour at its start."""
    wanted = set(hosts)
    counts: dict[tuple[str, dt.datetime], int] = {}
    seen: set[tuple[str, str]] = set()
    for host, start, events in store.run(
        "SELECT host, start, events FROM history_buckets WHERE start >= ? AND start < ?",
        (stamp(since), stamp(until)),
    ):
        name = str(host)
        if name not in wanted:
            continue
        moment = _moment(start)
        hour = moment.replace(minute=0, second=0, microsecond=0)
        counts[(name, hour)] = counts.get((name, hour), 0) + int(events)
        seen.add((name, _text(start)[:10]))
    days = _full_days(since, until)
    if days:
        for host, day, events in store.run(
            "SELECT host, day, events FROM history_days WHERE day >= ? AND day <= ?"
            " AND meta IS NOT NULL AND pruned = 1",
            (days[0], days[-1]),
        ):
            name, text = str(host), _text(day)
            if name in wanted and (name, text) not in seen:
                start = _moment(text)
                counts[(name, start)] = counts.get((name, start), 0) + int(events or 0)
    found: dict[str | None, set[dt.datetime]] = {name: set() for name in hosts}
    fleet: dict[dt.datetime, int] = {}
    for (name, hour), count in counts.items():
        fleet[hour] = fleet.get(hour, 0) + count
        if count > 0:
            found[name].add(hour)
    found[None] = {hour for hour, count in fleet.items() if count > 0}
    return found


def _hour_ranges(
    since: dt.datetime, until: dt.datetime, days: list[str], fresh: set[str]
) -> Iterator[tuple[str, str]]:
    cursor = since
    for day in days:
        if day in fresh:
            start = _moment(day)
            if cursor < start:
                yield stamp(cursor), stamp(start)
            cursor = start + dt.timedelta(days=1)
    if cursor < until:
        yield stamp(cursor), stamp(until)


def _full_days(since: dt.datetime, until: dt.datetime) -> list[str]:
    first = since.replace(hour=0, minute=0, second=0, microsecond=0)
    if first < since:
        first += dt.timedelta(days=1)
    days = []
    while first + dt.timedelta(days=1) <= until:
        days.append(first.date().isoformat())
        first += dt.timedelta(days=1)
    return days


def _text(value: Any) -> str:
    """A DATE/DATETIME as the store's text (pymysql returns date objects)."""
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _moment(value: Any) -> dt.datetime:
    text = _text(value)
    if len(text) == 10:
        return dt.datetime.strptime(text, "%Y-%m-%d")
    return dt.datetime.strptime(text[:19], "%Y-%m-%d %H:%M:%S")
