"""What the digest rules know beyond one class: tables' traffic, overhead fits, completeness.

Built from a ``govern.digest`` document (a fresh digest, or a merged one), so a
rule reads exactly the facts the JSON shows, and the rules run the same on
saved digests. :class:`ClassFacts` reads one class's document; a rule gets it
from ``statement.stats`` and the digest-wide :class:`DigestEvidence` from
``ctx.digest``.
"""

from __future__ import annotations

import dataclasses
import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from typing import Any

from govern import native, sketch, units
from govern.digest.classes import ClassDocuments
from govern.digest.columns import MAY_WRITE, SAMPLED, ClassColumns
from govern.digest.tables import tables
from govern.fingerprint import decode
from govern.rules.screen import Screen

WRITE_VERBS = ("insert", "replace", "update", "delete")
#: A log whose fastest statement took this long or more was cut by long_query_time.
FULL_LOG_FASTEST = 0.001
#: --filter keys that drop events from the middle of a connection's sequence.
_SEQUENCE_FILTERS = ("db", "fingerprint", "id")
_FILTER_KEY = re.compile(r"^\s*([a-z]+)\s*(?:!=|=|~)")
MICRO = 1_000_000
#: Where a write verb of govern/digest/tables.py starts in the lowered fingerprints
#: (overlapping: the fingerprints are joined; each is then checked at its start).
#: The first table name after FROM/JOIN, as govern/digest/tables.py's _READ reads it (its
#: ``\b`` is tested apart: a pattern starting with a word is searched much faster), and
#: whether a list (a comma) follows.
_FIRST_READ = re.compile(
    r"(?:from|join)\s+((?:`[^`]+`|[a-z0-9_$?]+)(?:\.(?:`[^`]+`|[a-z0-9_$?]+))?)(\s*,)?"
)


def class_documents(document: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    """A digest document's classes, to read: lazy classes (govern digest's) as read-only
    views, each figure built when a rule reads it, rather than whole class documents."""
    classes: ClassDocuments = document["classes"]
    return classes.views()


def table_key(name: str) -> str:
    """Tables are matched by name (``app.users`` and ``users`` are one table)."""
    return name.rsplit(".", 1)[-1].lower()


class ClassFacts:
    """One class of a ``govern.digest`` document, with the figures rules ask for."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.doc = document

    @property
    def id(self) -> str:
        return str(self.doc["id"])

    @property
    def fingerprint(self) -> str:
        return str(self.doc.get("fingerprint") or "")

    @property
    def verb(self) -> str:
        return self.fingerprint.split(" ", 1)[0]

    @property
    def is_write(self) -> bool:
        return self.verb in WRITE_VERBS

    @property
    def calls(self) -> int:
        return int(self.doc["count"])

    def metric(self, name: str) -> Mapping[str, Any] | None:
        found = self.doc.get("metrics", {}).get(name)
        return found if found and found.get("count") else None

    @property
    def query_time(self) -> float:
        """Seconds spent in all calls."""
        found = self.metric("Query_time")
        return float(found["sum"]) if found else 0.0

    @property
    def mean_time(self) -> float:
        found = self.metric("Query_time")
        return float(found["avg"] or 0.0) if found else 0.0

    @property
    def sequence(self) -> Mapping[str, Any]:
        return self.doc.get("sequence") or {}

    @property
    def rows(self) -> Mapping[str, Any] | None:
        """``rows_per_statement``: ``source``, ``avg``, ``median``, ``max``."""
        found = self.doc.get("rows_per_statement")
        return found if found else None

    @property
    def tables_read(self) -> list[str]:
        return list(self.doc.get("tables", {}).get("read", []))

    @property
    def tables_written(self) -> list[str]:
        return list(self.doc.get("tables", {}).get("written", []))

    @property
    def distinct_texts(self) -> int | None:
        found = self.doc.get("distinct_texts")
        return int(found["count"]) if found else None

    def flag(self, *names: str) -> tuple[int, int] | None:
        """(yes, count) of the first of ``names`` the log has (``QC_hit``, ``QC_Hit``)."""
        for name in names:
            found = self.doc.get("flags", {}).get(name)
            if found and found.get("count"):
                return int(found["yes"]), int(found["count"])
        return None

    def _state_buckets(self, metric: str) -> dict[int, int]:
        state = self.doc.get("state", {}).get("metrics", {}).get(metric)
        return sketch.from_pairs(state["buckets"]) if state else {}

    def count_at(self, metric: str, value: int) -> int:
        """Events whose ``metric`` is exactly ``value`` (a small whole number: exact)."""
        return self._state_buckets(metric).get(sketch.bucket_key(value * MICRO), 0)

    def count_above(self, metric: str, bound: float) -> int:
        """Events whose ``metric`` exceeds ``bound`` (exact below 256, else within 0.4%)."""
        limit = round(bound * MICRO)
        return sum(
            count
            for key, count in self._state_buckets(metric).items()
            if sketch.bucket_value(key) > limit
        )

    def changing_writes(self) -> int:
        """Write statements that changed rows: those with Rows_affected above 0 (an
        UPDATE that changes nothing leaves the query cache alone); all of them when
        the log has no Rows_affected."""
        if not self.tables_written:
            return 0
        affected = self.metric("Rows_affected")
        if affected is None:
            return self.calls
        unchanged = self._state_buckets("Rows_affected").get(0, 0)
        return self.calls - unchanged

    def single_row_calls(self) -> int | None:
        """Statements that wrote one row (INSERT … VALUES: one tuple; other writes:
        Rows_affected 0 or 1); None when the log cannot tell."""
        rows = self.rows
        if not self.is_write or rows is None:
            return None
        if rows["source"] == "values":
            return self.count_at("Values_rows", 1)
        if rows["source"] == "rows_affected":
            return self.count_at("Rows_affected", 0) + self.count_at("Rows_affected", 1)
        return None

    def runs_of_at_least(self, length: int, runs_of: str = "runs") -> tuple[int, int]:
        """(runs, calls) of runs of ``length`` or more back-to-back calls on a connection
        (``runs_of="single_runs"``: of the class's single-row writes only).

        Exact for lengths below 256 (the sketch keeps those values exactly).
        """
        pairs = self.doc.get("state", {}).get(runs_of, {}).get("lengths", [])
        runs = calls = 0
        for key, count in pairs:
            _, high = sketch.bucket_range(int(key))
            if high < length:
                continue
            runs += int(count)
            calls += sketch.bucket_value(int(key)) * int(count)
        return runs, calls


@dataclasses.dataclass
class TableTraffic:
    """One table's traffic over the digest's window, from the classes that touch it."""

    name: str
    reads: int = 0  # calls of classes that read it
    writes: int = 0  # calls of classes that write it
    changing_writes: int = 0  # of those, statements that changed rows
    rows_written: int = 0  # Rows_affected added up (0 when the log has none)
    write_classes: list[str] = dataclasses.field(default_factory=list)

    def rate(self, seconds: float | None) -> str:
        """``3 times in 6.0 h`` — the changing writes over the window, for messages."""
        count = self.changing_writes
        if not seconds:
            return f"{count:,} time{'' if count == 1 else 's'}"
        return f"{count:,} time{'' if count == 1 else 's'} in {units.duration(seconds, 'words')}"

    def to_json(self) -> dict[str, Any]:
        return {
            "reads": self.reads,
            "writes": self.writes,
            "changing_writes": self.changing_writes,
            "rows_written": self.rows_written,
            "write_classes": sorted(self.write_classes),
        }


@dataclasses.dataclass(frozen=True)
class Overhead:
    """A fitted per-statement cost of writes: Query_time = per_statement + per_row × rows."""

    per_statement: float  # seconds
    per_row: float  # seconds (0 when the fit's slope is not positive)
    statements: int  # calls of the pooled classes
    classes: int
    scope: str  # the statements pooled, for messages: "statements writing events"

    def batched_saving(self, calls: int, typical: float, rows: int) -> float:
        """Seconds saved when ``calls`` one-row statements become statements of ``rows``
        rows: the overhead (at most ``typical``, the class's median time) of every
        statement batching removes."""
        return min(self.per_statement, typical) * (calls - ceil_div(calls, rows))


@dataclasses.dataclass(frozen=True, slots=True)
class _WritePoint:
    """What :meth:`DigestEvidence.overhead` pools of a write class: its kind, the tables
    it writes (keys) and its point (median rows, median Query_time, calls)."""

    kind: str
    tables: frozenset[str]
    point: tuple[float, float, int]


class DigestEvidence:
    """Facts about the whole digest that a class's own figures cannot give.

    Read from the classes' columns (:class:`govern.rules.screen.Screen`): only the
    classes whose fingerprint starts with a write verb are read as documents, each
    dropped once read (what is kept per class is, for the write classes the overhead fits
    can use, a :class:`_WritePoint`); of the others, only those whose fingerprint names a
    written table are read, as a fingerprint and calls, for the reads of that table.
    Fingerprints by query ID are looked up in the digest's classes.
    """

    def __init__(self, document: Mapping[str, Any], screen: Screen | None = None) -> None:
        self.window_seconds: float | None = (document.get("window") or {}).get("seconds")
        self._classes: ClassDocuments = document["classes"]
        screen = screen or Screen.of(self._classes)
        self.tables: dict[str, TableTraffic] = {}
        reads: dict[str, int] = {}
        self._writes: list[_WritePoint] = []
        #: :meth:`overhead` by (kind, tables written): the same pools give the same line.
        self._overheads: dict[tuple[str, frozenset[str]], Overhead | None] = {}
        self._kinds: dict[str, list[_WritePoint]] = {}
        self._kind_fits: dict[str, Overhead | None] = {}
        table_sets: dict[frozenset[str], frozenset[str]] = {}
        sampled = screen.count_flagged(SAMPLED) > 0
        writers = _writers(screen)
        for position in writers:
            facts = ClassFacts(self._classes.view_at(position))
            _add_traffic(self.tables, reads, facts)
            if not facts.is_write:
                continue
            point = _median_point(facts)
            if point is not None:
                written = frozenset(table_key(t) for t in facts.tables_written)
                written = table_sets.setdefault(written, written)
                self._writes.append(_WritePoint(_write_kind(facts), written, point))
        _add_reads(reads, screen.columns, set(self.tables), set(writers))
        for key, table in self.tables.items():
            table.reads = reads.get(key, 0)
        self.full_log, self.full_log_reason = _completeness(document, sampled)

    def fingerprint_of(self, class_id: str) -> str | None:
        return self._classes.fingerprint_of(class_id)

    def table(self, name: str) -> TableTraffic:
        return self.tables.get(table_key(name)) or TableTraffic(table_key(name))

    def overhead(self, facts: ClassFacts) -> Overhead | None:
        """The per-statement overhead of ``facts``'s kind of write, measured in this log.

        A class of single-row writes cannot fit a line alone (its rows never vary),
        so classes are pooled: first those of the same kind (INSERT/REPLACE … VALUES,
        UPDATE, DELETE …) writing the same table, then those of the same kind anywhere
        in the log. Each class that wrote rows is one point, (median rows per
        statement, median Query_time), weighted by its calls; the line through them
        gives the overhead (intercept) and the cost per row (slope). Medians, because
        one slow outlier (a 20 ms flush) would tilt a least-squares line through every
        statement. A pool without two row counts, or whose line is not an overhead
        plus a cost per row (both positive), is passed over.
        """
        kind = _write_kind(facts)
        written = frozenset(table_key(t) for t in facts.tables_written)
        key = (kind, written)
        if key not in self._overheads:  # a week of a fleet: hundreds of classes, few keys
            self._overheads[key] = self._fit(kind, written)
        return self._overheads[key]

    def _fit(self, kind: str, written: frozenset[str]) -> Overhead | None:
        """:meth:`overhead`'s line: over the writes of ``kind`` to ``written``, else over
        every write of ``kind`` (fitted once a kind)."""
        same_kind = self._kinds.get(kind)
        if same_kind is None:
            same_kind = self._kinds[kind] = [w for w in self._writes if w.kind == kind]
        pool = [w.point for w in same_kind if written & w.tables]
        found = _overhead_of(pool, f"statements writing {', '.join(sorted(written))}")
        if found is not None:
            return found
        if kind not in self._kind_fits:
            points = [w.point for w in same_kind]
            self._kind_fits[kind] = _overhead_of(points, f"{kind} statements in this log")
        return self._kind_fits[kind]


def _overhead_of(points: list[tuple[float, float, int]], scope: str) -> Overhead | None:
    """The overhead of the line through ``points`` when it is one (both terms positive)."""
    line = _weighted_line(points)
    if line is not None and line[0] > 0 and line[1] > 0:
        calls = sum(weight for _, _, weight in points)
        return Overhead(line[0], line[1], calls, len(points), scope)
    return None


def _fingerprint_at(columns: ClassColumns, position: int) -> bytes:
    ends = columns.fingerprint_ends
    return columns.fingerprints[ends[position - 1] if position else 0 : ends[position]]


def _writers(screen: Screen) -> list[int]:
    """The classes that may write a table, in order: those whose fingerprint may start with
    a verb after which govern/digest/tables.py reads written tables, or is not ASCII (the
    MAY_WRITE flag). Each is read as a document, as every class was before: one that
    writes nothing only has its reads counted there rather than by :func:`_add_reads`."""
    return sorted(screen.flagged(MAY_WRITE, MAY_WRITE))


def _add_reads(
    reads: dict[str, int], columns: ClassColumns, written: set[str], done: set[int]
) -> None:
    """Count the calls of the classes (not in ``done``) that read a written table. Only
    fingerprints that may name one are read by govern/digest/tables.py as before: the
    core tests every fingerprint at once (native/src/screen.rs), else :func:`_naming`."""
    if not any(key.strip("?") for key in written):
        return
    ends = columns.fingerprint_ends
    named = native.fingerprints_naming(columns.fingerprints, ends, sorted(written))
    seen = _naming(columns, written) if named is None else set(named)
    for position in sorted(seen - done):
        if position >= len(ends):
            continue
        for name in tables(decode(_fingerprint_at(columns, position)))["read"]:
            key = table_key(name)
            if key.strip("?"):
                reads[key] = reads.get(key, 0) + columns.counts[position]


def _naming(columns: ClassColumns, written: set[str]) -> set[int]:
    """Without the core: the fingerprints whose first name after FROM/JOIN is written,
    followed by a list, quoted, runs into the next fingerprint, or that are not ASCII."""
    ends = columns.fingerprint_ends
    seen: set[int] = set()
    text = columns.fingerprints.lower().decode("latin-1")  # offsets stay the bytes'
    search = _FIRST_READ.search
    match = search(text)
    while match is not None:
        start = match.start()
        before = text[start - 1] if start else " "
        if before.isalnum() or before == "_":  # no \b: go on from the next character
            match = search(text, start + 1)
            continue
        name, more = match.group(1, 2)
        first, last = bisect_right(ends, start), bisect_right(ends, match.end() - 1)
        # A match that runs into the next fingerprint (they are joined) is read whole.
        if more or "`" in name or first != last or table_key(name) in written:
            seen.update((first, last))
        match = search(text, match.end())
    if not columns.fingerprints.isascii():
        seen |= {p for p in range(len(ends)) if not _fingerprint_at(columns, p).isascii()}
    return seen


def _median_point(facts: ClassFacts) -> tuple[float, float, int] | None:
    """(median rows per statement, median Query_time in seconds, calls) of a write class."""
    rows = facts.rows
    time = facts.metric("Query_time")
    if rows is None or time is None or time.get("median") is None or not rows["median"]:
        return None
    return float(rows["median"]), float(time["median"]), facts.calls


def _weighted_line(points: list[tuple[float, float, int]]) -> tuple[float, float] | None:
    """(intercept, slope) of the weighted least-squares line; None without two x values."""
    total = sum(w for _, _, w in points)
    if total == 0 or len({x for x, _, _ in points}) < 2:
        return None
    mean_x = sum(x * w for x, _, w in points) / total
    mean_y = sum(y * w for _, y, w in points) / total
    spread = sum(w * (x - mean_x) ** 2 for x, _, w in points)
    slope = sum(w * (x - mean_x) * (y - mean_y) for x, y, w in points) / spread
    return mean_y - slope * mean_x, slope


def _write_kind(facts: ClassFacts) -> str:
    """INSERT/REPLACE … VALUES (rows are tuples), else the verb (rows are rows affected)."""
    rows = facts.rows
    return "INSERT/REPLACE … VALUES" if rows and rows["source"] == "values" else facts.verb.upper()


def _add_traffic(tables: dict[str, TableTraffic], reads: dict[str, int], facts: ClassFacts) -> None:
    """Count one class's calls in the traffic of the tables it reads and writes. Only
    written tables are kept (a table only read has no changes to judge from: a log of
    200,000 distinct reads would keep 200,000 of them); reads are counted apart."""
    for name in facts.tables_read:
        key = table_key(name)
        if key.strip("?"):
            reads[key] = reads.get(key, 0) + facts.calls
    for name in facts.tables_written:
        key = table_key(name)
        if not key.strip("?"):
            continue
        table = tables.setdefault(key, TableTraffic(key))
        table.writes += facts.calls
        table.changing_writes += facts.changing_writes()
        affected = facts.metric("Rows_affected")
        table.rows_written += int(affected["sum"]) if affected else 0
        table.write_classes.append(facts.id)


def _sampled(item: Mapping[str, Any]) -> bool:
    """Was the class logged 1 in N (Log_slow_rate_limit above 1)?"""
    rates = item.get("values", {}).get("Log_slow_rate_limit", {})
    return any(rate not in ("0", "1") for rate in rates)


def _completeness(
    document: Mapping[str, Any], sampled: bool | None = None
) -> tuple[bool, str | None]:
    """Is every statement in the log? (False, why) when the evidence says otherwise.

    ``sampled``: whether a class is sampled, when a pass over the classes already
    found out (None: look at them)."""
    query_time = (document.get("metrics") or {}).get("Query_time")
    if not query_time or not query_time.get("count"):
        return False, "no event has a Query_time"
    fastest = float(query_time["min"])
    if fastest >= FULL_LOG_FASTEST:
        return False, (
            f"the fastest statement took {fastest:g} s: the log looks cut by long_query_time"
        )
    if sampled is None:
        sampled = any(_sampled(item) for item in class_documents(document))
    if sampled:
        return False, "the log is sampled (Log_slow_rate_limit above 1)"
    for text in (document.get("options") or {}).get("filters", []):
        key = _FILTER_KEY.match(text)
        if key and key.group(1) in _SEQUENCE_FILTERS:
            return False, f"--filter {text} leaves events out of connections' sequences"
    return True, None


def plural(count: int, word: str, plural_form: str | None = None) -> str:
    return f"{count:,} {word if count == 1 else (plural_form or word + 's')}"


def ceil_div(a: int, b: int) -> int:
    return -(-a // b) if b else 0
