"""Performance Schema statement digests as per-interval deltas (docs/design/collect.md,
"Performance Schema").

``events_statements_summary_by_digest`` holds running totals per (schema, digest)
since the server started or the table was last truncated. Each poll takes a
snapshot and subtracts the previous one:

* a row whose FIRST_SEEN changed, or whose COUNT_STAR went down, was reset
  (``TRUNCATE``, or evicted and re-created): its delta is all it holds now;
* a server that restarted (its start, NOW() minus Uptime, moved) starts over:
  every delta is all the row holds;
* the row whose DIGEST is NULL counts the statements the full table had no room
  for (``performance_schema_digests_size``): they go to the bucket's "other"
  class and the poll says so.

Each digest becomes a govern class: its DIGEST_TEXT is turned back into a
statement (identifiers unquoted, tokens re-spaced, ``(...)`` lists as one value)
and fingerprinted with pt's rules, so the query ID is the one a slow log of the
same statements gives wherever the server's normalisation allows; the server's
own digest is kept beside the class (``values.digest``). Where the server has
``events_statements_histogram_by_digest`` (MySQL 8.0), its bucket deltas give the
class percentiles; elsewhere (MariaDB) counts and sums only.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pymysql

from govern.collect.digesting import Aggregate, ClassFigures, aggregate_of
from govern.collect.session import Session, server_error
from govern.collect.source import Classes, Progress
from govern.connection import ConnectionSettings

#: Counter columns kept per digest, in this order (a snapshot row is a list of them).
COUNTERS = (
    "COUNT_STAR",
    "SUM_TIMER_WAIT",
    "MIN_TIMER_WAIT",
    "MAX_TIMER_WAIT",
    "SUM_LOCK_TIME",
    "SUM_ERRORS",
    "SUM_WARNINGS",
    "SUM_ROWS_AFFECTED",
    "SUM_ROWS_SENT",
    "SUM_ROWS_EXAMINED",
    "SUM_CREATED_TMP_TABLES",
    "SUM_CREATED_TMP_DISK_TABLES",
    "SUM_SELECT_FULL_JOIN",
    "SUM_SORT_ROWS",
    "SUM_NO_INDEX_USED",
)
_INDEX = {name: index for index, name in enumerate(COUNTERS)}
#: A server whose start moved by more than this restarted (Uptime has whole seconds). A
#: restart sooner than that after the last one is still counted right: its rows are new
#: (FIRST_SEEN moved), only the message is missed.
RESTART_SLACK = 2.0
#: Picoseconds (the timers) per micro-unit of a time (the digest's unit).
PS_PER_MICRO = 1_000_000
#: Micro-units per row counted.
MICRO = 1_000_000


@dataclass
class Row:
    """One (schema, digest) row: counters, when it was first and last seen, its text."""

    schema: str | None
    digest: str | None
    text: str | None
    counters: list[int]
    first_seen: str
    last_seen: str
    histogram: dict[int, int] = field(default_factory=dict)  # bucket number -> count
    sample: tuple[str, str, int] | None = None  # (text, seen, timer wait) on MySQL 8

    @property
    def key(self) -> str:
        return f"{self.schema or ''}\x00{self.digest or ''}"

    def to_json(self) -> list[Any]:
        return [
            self.schema,
            self.digest,
            self.counters,
            self.first_seen,
            self.last_seen,
            sorted(self.histogram.items()),
        ]

    @classmethod
    def from_json(cls, value: list[Any]) -> Row:
        schema, digest, counters, first, last, histogram = value
        return cls(schema, digest, None, list(counters), first, last, dict(map(tuple, histogram)))


@dataclass
class Snapshot:
    """The digest table at one moment, with the server's clock and start."""

    at: str  # NOW(6) of the server
    server_start: float  # unix seconds, NOW() minus Uptime
    rows: dict[str, Row]
    #: MySQL 8: bucket number -> (low, high) picoseconds; empty where there is no histogram
    bounds: dict[int, tuple[int, int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "snapshot_at": self.at,
            "server_start": self.server_start,
            "rows": [row.to_json() for row in self.rows.values()],
        }

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Snapshot:
        rows = [Row.from_json(item) for item in value.get("rows", [])]
        return cls(value["snapshot_at"], value["server_start"], {row.key: row for row in rows})


@dataclass
class Delta:
    """What one digest did between two snapshots."""

    row: Row
    counters: list[int]
    histogram: dict[int, int]
    since: str  # the previous snapshot (or when the row was reset)
    min_known: bool  # the interval holds the row's MIN_TIMER_WAIT
    max_known: bool  # ... and its MAX_TIMER_WAIT


@dataclass
class Deltas:
    items: list[Delta]
    restarted: bool = False
    reset: int = 0  # rows reset since the previous snapshot
    overflow: int = 0  # statements counted in the NULL-digest row during the interval


def deltas(previous: Snapshot, current: Snapshot) -> Deltas:
    """The interval between two snapshots, row by row (see the module docstring)."""
    restarted = abs(current.server_start - previous.server_start) > RESTART_SLACK
    result = Deltas([], restarted=restarted)
    for key, row in current.rows.items():
        before = None if restarted else previous.rows.get(key)
        count = row.counters[0]
        reset = before is not None and (
            before.first_seen != row.first_seen or before.counters[0] > count
        )
        if reset:
            result.reset += 1
            before = None
        if before is None:
            counters, histogram = list(row.counters), dict(row.histogram)
            since = previous.at if previous.at > row.first_seen else row.first_seen
            min_known = max_known = True
        else:
            counters = [now - then for now, then in zip(row.counters, before.counters, strict=True)]
            histogram = {
                bucket: times - before.histogram.get(bucket, 0)
                for bucket, times in row.histogram.items()
                if times - before.histogram.get(bucket, 0) > 0
            }
            since = previous.at
            min_known = (
                row.counters[_INDEX["MIN_TIMER_WAIT"]] < before.counters[_INDEX["MIN_TIMER_WAIT"]]
            )
            max_known = (
                row.counters[_INDEX["MAX_TIMER_WAIT"]] > before.counters[_INDEX["MAX_TIMER_WAIT"]]
            )
        if counters[0] <= 0:
            continue
        if row.digest is None:
            result.overflow += counters[0]
        result.items.append(Delta(row, counters, histogram, since, min_known, max_known))
    return result


def figures_of(delta: Delta, bounds: dict[int, tuple[int, int]]) -> ClassFigures:
    """A digest's interval as the figures of a govern class."""
    counters = delta.counters
    count = counters[0]

    def total(name: str, scale: int) -> int:
        return counters[_INDEX[name]] * scale

    query_time_sum = counters[_INDEX["SUM_TIMER_WAIT"]] // PS_PER_MICRO
    low = delta.row.counters[_INDEX["MIN_TIMER_WAIT"]] // PS_PER_MICRO if delta.min_known else None
    high = delta.row.counters[_INDEX["MAX_TIMER_WAIT"]] // PS_PER_MICRO if delta.max_known else None
    histogram: dict[int, int] | None = None
    if delta.histogram and bounds:
        histogram = {}
        for bucket, times in delta.histogram.items():
            value = _bucket_value(bounds.get(bucket))
            histogram[value] = histogram.get(value, 0) + times
        # The interval's extremes lie in its lowest and highest buckets.
        low = min(histogram) if low is None else low
        high = max(histogram) if high is None else high
    metrics: dict[str, tuple[int, int | None, int | None, dict[int, int] | None]] = {
        "Query_time": (query_time_sum, low, high, histogram),
        "Lock_time": (counters[_INDEX["SUM_LOCK_TIME"]] // PS_PER_MICRO, None, None, None),
        "Rows_sent": (total("SUM_ROWS_SENT", MICRO), None, None, None),
        "Rows_examined": (total("SUM_ROWS_EXAMINED", MICRO), None, None, None),
        "Rows_affected": (total("SUM_ROWS_AFFECTED", MICRO), None, None, None),
        "Errors": (total("SUM_ERRORS", MICRO), None, None, None),
        "Warnings": (total("SUM_WARNINGS", MICRO), None, None, None),
    }
    flags = {
        "Full_scan": counters[_INDEX["SUM_NO_INDEX_USED"]],
        "Full_join": counters[_INDEX["SUM_SELECT_FULL_JOIN"]],
        "Tmp_table": counters[_INDEX["SUM_CREATED_TMP_TABLES"]],
        "Tmp_table_on_disk": counters[_INDEX["SUM_CREATED_TMP_DISK_TABLES"]],
    }
    row = delta.row
    values: dict[str, dict[str, int]] = {}
    if row.schema:
        values["db"] = {row.schema: count}
    if row.digest:
        values["digest"] = {row.digest: count}
    sample = None
    if row.sample is not None and row.sample[1] >= delta.since:
        sample = (row.sample[0].encode("utf-8", "surrogateescape"), row.sample[2] // PS_PER_MICRO)
    return ClassFigures(
        statement=None if row.text is None else statement_of(row.text),
        count=count,
        ts_min=_seconds(delta.since),
        ts_max=_seconds(row.last_seen),
        metrics=metrics,
        flags={name: yes for name, yes in flags.items() if yes},
        values=values,
        sample=sample,
    )


def _bucket_value(bound: tuple[int, int] | None) -> int:
    """A histogram bucket's value in micro-units: the geometric middle of its bounds."""
    if bound is None:
        return 0
    low, high = bound
    if low <= 0:
        return high // (2 * PS_PER_MICRO)
    return round(math.sqrt(low * high) / PS_PER_MICRO)


def _seconds(value: str) -> str:
    return value[:19]


# --- DIGEST_TEXT back to a statement ------------------------------------------------------

_QUOTED_NAME = re.compile(r"`((?:[^`]|``)*)`")
_ELIDED_LIST = re.compile(r"\(\s*\.\.\.\s*\)(?:\s*/\*\s*,\s*\.\.\.\s*\*/)?")
_ELIDED_VALUES = re.compile(r"\?\s*,\s*\.\.\.")
_SPACE_BEFORE = re.compile(r"\s+([,.)])")
_SPACE_AFTER = re.compile(r"([(.])\s+")
_CALL = re.compile(
    r"(\b(?:INTO|TABLE|JOIN|FROM|UPDATE)\s+)?\b([A-Za-z_][A-Za-z0-9_$.]*)\s+\(", re.I
)
_UNARY_MINUS = re.compile(
    r"(^|[=<>(,]|\b(?:AND|OR|NOT|THEN|ELSE|WHEN|BY|LIMIT|IN|IS)\b)\s*-\s+\?", re.I
)
#: Words after which "(" keeps its space (the statement's syntax, not a function call).
_KEYWORDS = frozenset(
    [
        "select",
        "from",
        "where",
        "and",
        "or",
        "not",
        "in",
        "values",
        "value",
        "on",
        "join",
        "using",
        "as",
        "set",
        "into",
        "exists",
        "having",
        "by",
        "union",
        "all",
        "any",
        "some",
        "when",
        "then",
        "else",
        "case",
        "if",
        "like",
        "regexp",
        "between",
        "is",
        "limit",
        "offset",
        "into",
        "table",
        "update",
        "insert",
        "replace",
        "delete",
        "call",
        "over",
        "partition",
    ]
)


def statement_of(digest_text: str) -> bytes:
    """A statement whose pt fingerprint is, as far as the server's normalisation allows,
    the fingerprint of the statements the digest stands for (``?`` stays a value)."""
    text = _QUOTED_NAME.sub(lambda m: m.group(1).replace("``", "`"), digest_text)
    text = _ELIDED_LIST.sub("(?)", text)
    text = _ELIDED_VALUES.sub("?, ?", text)
    text = _UNARY_MINUS.sub(lambda m: f"{m.group(1)} ?", text)
    text = _SPACE_BEFORE.sub(r"\1", text)
    text = _SPACE_AFTER.sub(r"\1", text)
    text = _CALL.sub(
        lambda m: m.group(0) if m.group(1) or m.group(2).lower() in _KEYWORDS else f"{m.group(2)}(",
        text,
    )
    text = text.replace(",", ", ").replace(",  ", ", ")
    return text.strip().encode("utf-8", "surrogateescape")


# --- the source ---------------------------------------------------------------------------------


class PerformanceSchemaDigests:
    """``events_statements_summary_by_digest`` of one server, as a collector source."""

    key = "performance_schema:events_statements_summary_by_digest"
    label = "performance_schema digests"

    def __init__(self, settings: ConnectionSettings, *, host: str | None) -> None:
        self.settings = settings
        self.host = host
        self.previous: Snapshot | None = None
        self.session = Session(settings)

    def restore(self, saved: dict[str, Any] | None) -> None:
        self.previous = Snapshot.from_json(saved) if saved else None

    def checkpoint(self) -> dict[str, Any]:
        return self.previous.to_json() if self.previous else {}

    def close(self) -> None:
        self.session.close()

    def refresh(self, progress: Progress) -> bool:
        return False

    def read(self, progress: Progress) -> Iterator[Classes]:
        try:
            current = read_snapshot(self.session)
        except pymysql.err.MySQLError as exc:
            self.close()
            raise server_error(exc, "reading performance_schema digests") from None
        progress.now = dt.datetime.fromisoformat(current.at)
        previous, self.previous = self.previous, current
        if previous is None:
            progress.problems.append(
                "performance_schema: first snapshot taken; deltas start with the next poll"
            )
            return
        found = deltas(previous, current)
        if found.restarted:
            progress.problems.append(
                "performance_schema: the server restarted: counting from its start"
            )
        if found.overflow:
            progress.problems.append(
                f"performance_schema: the digest table is full (performance_schema_digests_size):"
                f" {found.overflow:,} statements were counted without a digest (the NULL row);"
                " they are in the bucket's other class"
            )
        figures = [figures_of(delta, current.bounds) for delta in found.items]
        aggregate: Aggregate = aggregate_of(figures, host=self.host, name=self.label)
        progress.budget -= sum(f.count for f in figures)
        yield Classes(_seconds(current.at), aggregate)


def read_snapshot(session: Session) -> Snapshot:
    """The digest table (and, where it exists, the histogram table) at one moment."""
    ((now, uptime),) = session.run(
        "SELECT NOW(6), VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
        " WHERE VARIABLE_NAME = 'UPTIME'"
    )
    digests = session.run(
        "SELECT * FROM performance_schema.events_statements_summary_by_digest", dicts=True
    )
    histogram = []
    if session.run(
        "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'performance_schema'"
        " AND TABLE_NAME = 'events_statements_histogram_by_digest'"
    ):
        histogram = session.run(
            "SELECT * FROM performance_schema.events_statements_histogram_by_digest"
            " WHERE COUNT_BUCKET > 0",
            dicts=True,
        )
    return snapshot_from_rows(now, now.timestamp() - float(uptime), digests, histogram)


def snapshot_from_rows(
    now: dt.datetime,
    server_start: float,
    digests: list[dict[str, Any]],
    histogram: list[dict[str, Any]],
) -> Snapshot:
    """A snapshot from the rows of ``events_statements_summary_by_digest`` and
    ``events_statements_histogram_by_digest`` (column name -> value, as the server
    returns them; MySQL 8.0 adds QUERY_SAMPLE_* and the histogram)."""
    rows: dict[str, Row] = {}
    for record in digests:
        row = Row(
            record["SCHEMA_NAME"],
            record["DIGEST"],
            record["DIGEST_TEXT"],
            [int(record.get(name) or 0) for name in COUNTERS],
            _stamp(record["FIRST_SEEN"]),
            _stamp(record["LAST_SEEN"]),
        )
        if record.get("QUERY_SAMPLE_TEXT"):
            row.sample = (
                str(record["QUERY_SAMPLE_TEXT"]),
                _stamp(record["QUERY_SAMPLE_SEEN"]),
                int(record.get("QUERY_SAMPLE_TIMER_WAIT") or 0),
            )
        rows[row.key] = row
    bounds: dict[int, tuple[int, int]] = {}
    for record in histogram:
        bucket = int(record["BUCKET_NUMBER"])
        bounds[bucket] = (int(record["BUCKET_TIMER_LOW"]), int(record["BUCKET_TIMER_HIGH"]))
        found = rows.get(f"{record['SCHEMA_NAME'] or ''}\x00{record['DIGEST'] or ''}")
        if found is not None and int(record["COUNT_BUCKET"]):
            found.histogram[bucket] = int(record["COUNT_BUCKET"])
    return Snapshot(_stamp(now), server_start, rows, bounds)


def _stamp(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ", timespec="microseconds")
    return str(value)
