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

The figures are those of the merged report, exactly: percentiles from the same merged sketch
clamped to the same exact [min, max] (the max is a column; the min is read from the states
in the one case it matters, a percentile in the lowest, wider-than-one-value bucket), the
sample the same worst event (ties to the last one merged, as ``report()`` merges). A class
whose rows lack a sketch for some events (sums-only sources) is read the slow, exact way.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from typing import Any

from govern import sketch
from govern.digest.report import SampleQuery
from govern.history.rows import sketch_of, unpack
from govern.history.sql import SqlStore, stamp

QUANTILES = (0.95, 0.99)
#: Class IDs per state query.
BATCH = 500

#: Where a row's state is: (table, host, start or day, class ID).
Ref = tuple[str, str, str, str]


class ClassFigures:
    """One class over a span, on one host or summed over several: what ``judge`` reads of
    a report's class (``key``, ``id``, ``count``, ``total_time``, ``query_time``,
    ``sample``, ``fingerprint``), the costly parts computed on first use."""

    __slots__ = ("_fingerprint", "_plan", "_plan_read", "_read", "_sketch", "_stat",
                 "blobs", "count", "id", "merged", "micro", "qt_max", "rows", "worst", "worst_order")  # fmt: skip

    def __init__(self, class_id: str, read: StateReader) -> None:
        self.id = class_id
        self.count = 0
        self.micro = 0
        self.qt_max = -1
        self.rows: list[tuple[Ref, bytes | None, int]] = []  # (where, sketch blob, count)
        self.blobs: list[bytes | None] = []  # Query_time sketches not merged yet
        self.merged: list[dict[int, int]] = []  # hosts' sketches, already merged
        self.worst: Ref | None = None
        self.worst_order: tuple[Any, ...] = ()
        self._read = read
        self._sketch: dict[int, int] | None = None
        self._stat: tuple[float | None, float | None] | None = None
        self._fingerprint: str | None = None
        self._plan: dict[str, Any] | None = None
        self._plan_read = False

    def add(
        self,
        ref: Ref,
        count: int,
        micro: int,
        qt_max: int,
        blob: bytes | None,
        order: tuple[Any, ...],
    ) -> None:
        """A row; ``order`` is its place in report()'s merge (the last worst event wins)."""
        self.count += count
        self.micro += micro
        self.rows.append((ref, blob, count))
        self.blobs.append(blob)
        if qt_max > self.qt_max or (qt_max == self.qt_max and order > self.worst_order):
            self.qt_max, self.worst, self.worst_order = qt_max, ref, order

    def absorb(self, other: ClassFigures) -> None:
        """Another host's figures of the class (the fleet): its sketch merged once, reused."""
        self.count += other.count
        self.micro += other.micro
        self.rows += other.rows
        if other._sketch is not None:
            self.merged.append(other._sketch)
        else:
            self.merged += other.merged
            self.blobs += other.blobs
        if other.worst is not None and (
            other.qt_max > self.qt_max
            or (other.qt_max == self.qt_max and other.worst_order > self.worst_order)
        ):
            self.qt_max, self.worst, self.worst_order = other.qt_max, other.worst, other.worst_order

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

    @property
    def sample(self) -> SampleQuery:
        """The worst event's plan (nothing else of the sample is read)."""
        if not self._plan_read:
            state = self._worst_state()
            sample = (state or {}).get("sample") or {}
            self._plan, self._plan_read = sample.get("plan"), True
        return SampleQuery("", plan=self._plan)

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            state = self._worst_state()
            self._fingerprint = str(state.get("fingerprint") or "") if state else ""
        return self._fingerprint

    # --- the costly parts ---------------------------------------------------------------
    def _worst_state(self) -> dict[str, Any] | None:
        return None if self.worst is None else self._read(self.worst)

    def merged_sketch(self) -> dict[int, int]:
        if self._sketch is None:
            merged: dict[int, int] = {}
            for part in self.merged:
                sketch.merge_into(merged, part)
            for blob in self.blobs:
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
        low, top = sketch.bucket_range(lowest)
        rank = -((-round(QUANTILES[0] * 1000) * self.count) // 1000)
        if top > low and merged[lowest] >= rank:
            # p95 is in the lowest bucket, whose value may lie below the exact minimum (the
            # clamp): read the minimum of the rows holding that bucket
            low = min(self._row_min(ref) for ref, blob, _ in self.rows if lowest in sketch_of(blob))
        # below the lowest bucket, any lower bound clamps nothing
        values = sketch.quantiles(merged, QUANTILES, low, self.qt_max)
        p95, p99 = (round(value / 1_000_000, 6) for value in values)
        return p95, p99

    def _row_min(self, ref: Ref) -> int:
        metric = ((self._read(ref) or {}).get("state") or {}).get("metrics", {}).get("Query_time")
        return int(metric["min"]) if metric else 0

    def _exact_quantiles(self) -> tuple[float | None, float | None]:
        """From the rows' saved Query_time metrics, as a merged report computes them."""
        count, low, high = 0, 0, 0
        buckets: dict[int, int] = {}
        for ref, _, _ in self.rows:
            state = self._read(ref)
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


class StateReader:
    """A row's class state, read once; :meth:`prefetch` reads many in a few queries (a
    round trip per state would dominate on a MySQL store)."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store
        self.reads = 0
        self.cache: dict[Ref, dict[str, Any] | None] = {}

    def __call__(self, ref: Ref) -> dict[str, Any] | None:
        if ref not in self.cache:
            self.prefetch([ref])
        return self.cache.get(ref)

    def prefetch(self, refs: Iterable[Ref]) -> None:
        """Read the states of ``refs``: one query per (table, host, bucket or day)."""
        groups: dict[tuple[str, str, str], list[str]] = {}
        for table, host, when, class_id in refs:
            if (table, host, when, class_id) not in self.cache:
                groups.setdefault((table, host, when), []).append(class_id)
        for (table, host, when), ids in groups.items():
            column = "start" if table == "history_classes" else "day"
            for index in range(0, len(ids), BATCH):
                chunk = ids[index : index + BATCH]
                marks = ", ".join(["?"] * len(chunk))
                rows = self.store.run(
                    f"SELECT class_id, state FROM {table}"
                    f" WHERE host = ? AND {column} = ? AND class_id IN ({marks})",
                    (host, when, *chunk),
                )
                self.reads += 1
                found = {str(class_id): state for class_id, state in rows}
                for class_id in chunk:
                    state = found.get(class_id)
                    self.cache[(table, host, when, class_id)] = (
                        None if state is None else dict(unpack(state))
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


def host_figures(
    store: SqlStore, read: StateReader, host: str, since: dt.datetime, until: dt.datetime
) -> Figures:
    """A host's classes over [since, until): whole fresh days from its day roll-ups, the
    rest from its hourly rows (report()'s reading)."""
    days = _full_days(since, until)
    fresh: set[str] = set()
    if days:
        fresh = {
            _text(day)
            for (day,) in store.run(
                "SELECT day FROM history_days WHERE host = ? AND day >= ? AND day <= ?"
                " AND stale = 0 AND meta IS NOT NULL",
                (host, days[0], days[-1]),
            )
        }
    classes: dict[str, ClassFigures] = {}

    def add(rows: Iterable[tuple[Any, ...]], table: str, rank: int) -> None:
        for when, class_id, count, micro, qt_max, blob in rows:
            name = str(class_id)
            slot = classes.get(name)
            if slot is None:
                slot = classes[name] = ClassFigures(name, read)
            at = _text(when)
            slot.add((table, host, at, name), int(count), int(micro), int(qt_max), blob,
                     (rank, host, at))  # fmt: skip

    if fresh:  # a stale day between two fresh ones is read from its hours below
        add(
            (
                row
                for row in store.run(
                    "SELECT day, class_id, count, query_time, qt_max, qt_sketch"
                    " FROM history_day_classes WHERE host = ? AND day >= ? AND day <= ?",
                    (host, min(fresh), max(fresh)),
                )
                if _text(row[0]) in fresh
            ),
            "history_day_classes",
            0,
        )
    for low, high in _hour_ranges(since, until, days, fresh):
        add(
            store.run(
                "SELECT start, class_id, count, query_time, qt_max, qt_sketch"
                " FROM history_classes WHERE host = ? AND start >= ? AND start < ?"
                " ORDER BY start",
                (host, low, high),
            ),
            "history_classes",
            1,
        )
    return Figures(classes)


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
