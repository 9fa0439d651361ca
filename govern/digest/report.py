"""A digest as every report reads it: one typed model for text, Markdown, HTML and compare.

Built from a ``govern.digest`` document (:meth:`Report.of_document`): a fresh digest's,
whose classes are converted one at a time as a report reads them, a merged one's, or a
saved one read back by :func:`govern.digest.load.load_report`, which also reads
pt-query-digest's JSON into it (govern/digest/pt_json.py; pt shares govern's query IDs).
What a producer does not give is None or empty.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from govern import units
from govern.digest.timeline import Timeline


@dataclass(frozen=True, slots=True)
class Stat:
    """One numeric attribute of a class or of the digest: seconds for times, else a count."""

    sum: float | None = None
    min: float | None = None
    max: float | None = None
    avg: float | None = None
    median: float | None = None
    p95: float | None = None
    p99: float | None = None
    decimal: bool = False  # the log wrote it with decimals (a time): shown in seconds

    @classmethod
    def of(cls, figures: Mapping[str, Any]) -> Stat:
        return cls(
            figures["sum"],
            figures["min"],
            figures["max"],
            figures["avg"],
            figures["median"],
            figures["p95"],
            figures["p99"],
            decimal=isinstance(figures["sum"], float),
        )


@dataclass(frozen=True, slots=True)
class Flag:
    """A Yes/No attribute: events that said yes, of the events that had it (None: unknown)."""

    yes: int
    count: int | None = None


@dataclass(frozen=True, slots=True)
class SampleQuery:
    """The worst event of a class (highest Query_time)."""

    query: str
    query_time: float | None = None
    ts: str | None = None
    db: str | None = None
    user: str | None = None
    host: str | None = None
    file: str | None = None
    line: int | None = None
    truncated: bool = False
    plan: Mapping[str, Any] | None = None  # govern collect's EXPLAIN (json.md, sample.plan)

    def plan_line(self) -> str | None:
        """``EXPLAIN on SERVER: t1 ALL 1,000 rows; t2 ref key idx 3 rows`` (None: no plan)."""
        if not self.plan:
            return None
        parts = []
        for table in self.plan.get("tables") or ():
            part = f"{table.get('table')} {table.get('access') or '?'}"
            if table.get("key"):
                part += f" key {table['key']}"
            if table.get("rows") is not None:
                part += f" {units.count(table['rows'], 'grouped')} rows"
            parts.append(part)
        shown = "; ".join(parts) or "no table"
        explained = " (as a SELECT)" if self.plan.get("as_select") else ""
        return f"EXPLAIN{explained} on {self.plan.get('server', '?')}: {shown}"

    def attributes(self) -> dict[str, Any]:
        """What is known about the event besides its text."""
        known = {
            "query_time": self.query_time,
            "ts": self.ts,
            "db": self.db,
            "user": self.user,
            "host": self.host,
        }
        return {name: value for name, value in known.items() if value is not None}


@dataclass(frozen=True, slots=True)
class ConnectionRuns:
    """Back-to-back calls of the class on one connection."""

    calls: int
    runs: int
    repeated_calls: int
    longest_run: int
    mean_run: float | None
    connections: int
    connections_exact: bool


@dataclass(frozen=True, slots=True)
class RowsPerStatement:
    source: str  # "values", "rows_affected" or "rows_sent"
    avg: float


@dataclass(frozen=True, slots=True)
class Overhead:
    """A write class's least-squares fit: seconds per statement and per row (None: no fit)."""

    per_statement: float | None
    per_row: float | None


@dataclass(frozen=True, slots=True)
class Tables:
    read: list[str]
    written: list[str]


@dataclass(frozen=True, slots=True)
class ClassFinding:
    """What a digest rule found in a class."""

    rule: str
    name: str
    severity: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HostShare:
    """One host's part of a class in a report over a history store (the costliest first)."""

    host: str
    count: int
    query_time: float  # seconds


@dataclass(slots=True)
class ReportClass:
    """One query class."""

    id: str  # the query ID (32 hex; 16 from older pt)
    fingerprint: str
    count: int
    metrics: dict[str, Stat] = field(default_factory=dict)  # Query_time included
    share: float | None = None  # of the digest's Query_time, as the producer wrote it
    qps: float | None = None
    first_seen: str | None = None
    last_seen: str | None = None
    flags: dict[str, Flag] = field(default_factory=dict)
    values: dict[str, dict[str, int]] = field(default_factory=dict)  # most frequent first
    servers: dict[str, int] = field(default_factory=dict)  # --host label -> events
    histogram: list[tuple[str, int]] = field(default_factory=list)  # Query_time buckets
    sample: SampleQuery | None = None
    runs: ConnectionRuns | None = None
    rows_per_statement: RowsPerStatement | None = None
    overhead: Overhead | None = None
    tables: Tables | None = None
    findings: list[ClassFinding] = field(default_factory=list)
    top_hosts: list[HostShare] = field(default_factory=list)  # from a history store

    @property
    def short_id(self) -> str:
        """The 16-hex form older pt versions and PMM use."""
        return self.id[-16:]

    @property
    def key(self) -> str:
        """What classes match on across files and producers."""
        return self.id.upper()[-16:]

    @property
    def query_time(self) -> Stat:
        return self.metrics.get("Query_time") or Stat()

    @property
    def total_time(self) -> float:
        return self.query_time.sum or 0.0

    @classmethod
    def of_document(cls, item: Mapping[str, Any]) -> ReportClass:
        """A class of a ``govern.digest`` document."""
        sample = item["sample"]
        runs = item["sequence"]
        rows = item["rows_per_statement"]
        overhead = item["overhead"]
        histogram = item["histogram"]
        return cls(
            id=item["id"],
            fingerprint=item["fingerprint"],
            count=item["count"],
            metrics={name: Stat.of(figures) for name, figures in item["metrics"].items()},
            share=item["share"],
            qps=item["qps"],
            first_seen=item["first_seen"],
            last_seen=item["last_seen"],
            flags={name: Flag(flag["yes"], flag["count"]) for name, flag in item["flags"].items()},
            values={name: dict(values) for name, values in item["values"].items()},
            servers=dict(item["servers"]),
            histogram=list(zip(histogram["labels"], histogram["Query_time"], strict=True)),
            sample=None
            if sample is None
            else SampleQuery(
                sample["query"],
                sample["query_time"],
                sample["ts"],
                sample["db"],
                sample["user"],
                sample["host"],
                sample["file"],
                sample["line"],
                sample["truncated"],
                sample.get("plan"),
            ),
            runs=ConnectionRuns(
                runs["calls"],
                runs["runs"],
                runs["repeated_calls"],
                runs["longest_run"],
                runs["mean_run"],
                runs["connections"],
                runs["connections_exact"],
            ),
            rows_per_statement=None
            if rows is None
            else RowsPerStatement(rows["source"], rows["avg"]),
            overhead=Overhead(overhead["per_statement"], overhead["per_row"]),
            tables=Tables(list(item["tables"]["read"]), list(item["tables"]["written"])),
            findings=[
                ClassFinding(f["rule"], f["name"], f["severity"], f["message"], f["evidence"])
                for f in item.get("findings", ())
            ],
            top_hosts=[
                HostShare(share["host"], share["count"], share["query_time"])
                for share in item.get("top_hosts", ())
            ],
        )


@dataclass(frozen=True, slots=True)
class InputName:
    """An input as reports name it: its name, and the server it came from (``--host``)."""

    name: str
    host: str | None = None


@dataclass(frozen=True, slots=True)
class Totals:
    """What a govern digest counted besides its classes."""

    classes: int = 0  # reported (with a Query_time)
    other_events: int = 0  # in classes beyond --max-classes
    unreported_events: int = 0  # without Query_time
    filtered: int = 0
    no_statement: int = 0
    malformed: int = 0


@dataclass(frozen=True, slots=True)
class MalformedEvent:
    file: str | None
    line: int
    reason: str


@dataclass(frozen=True, slots=True)
class RulesSummary:
    """What the digest rules ran and found (all classes, also those a report leaves out)."""

    findings: int
    by_severity: dict[str, int]
    classes: int  # classes with findings
    suppressed: int
    target: str | None
    full_log: bool
    full_log_reason: str | None
    skipped: list[tuple[str, str]]  # (rule, reason)
    notes: list[str]

    @classmethod
    def of_document(cls, rules: Mapping[str, Any]) -> RulesSummary:
        summary = rules["summary"]
        return cls(
            findings=summary["findings"],
            by_severity=dict(summary["by_severity"]),
            classes=summary["classes"],
            suppressed=summary["suppressed"],
            target=rules["target"],
            full_log=rules["full_log"],
            full_log_reason=rules["full_log_reason"],
            skipped=[(s["rule"], s["reason"]) for s in rules["rules_skipped"]],
            notes=list(rules["notes"]),
        )


@dataclass(slots=True)
class Report:
    """A digest as reports read it: totals, window, inputs, classes in report order."""

    path: str  # what the report calls it: the saved file, or the inputs' names
    producer: str  # "govern" or "pt-query-digest"
    events: int
    classes: Sequence[ReportClass]
    total_time: float  # Query_time of every event, seconds
    first_seen: str | None = None
    last_seen: str | None = None
    window_seconds: float | None = None
    inputs: list[InputName] = field(default_factory=list)
    timeline: Timeline | None = None
    totals: Totals = field(default_factory=Totals)
    max_classes: int | None = None  # --max-classes (govern)
    malformed: list[MalformedEvent] = field(default_factory=list)  # the first ones (govern)
    omitted_classes: int = 0  # classes a saved digest left out (--top)
    other: ReportClass | None = None  # classes beyond --max-classes, as one (no id)
    rules: RulesSummary | None = None
    #: The ``govern.digest`` document read: what ``govern digest merge`` merges (None: pt's).
    document: Mapping[str, Any] | None = None

    @property
    def files(self) -> list[str]:
        return [item.name for item in self.inputs]

    @property
    def hosts(self) -> list[str]:
        """The ``--host`` labels of the inputs (several: a merged digest)."""
        return sorted({item.host for item in self.inputs if item.host})

    @classmethod
    def of_document(cls, document: Mapping[str, Any], path: str) -> Report:
        """A ``govern.digest`` document (valid: govern's own, or a checked saved one)."""
        totals = document["totals"]
        window = document["window"]
        timeline = document.get("timeline")  # added within version 1: older ones lack it
        other = document["other"]
        rules = document.get("rules")
        return cls(
            path=path,
            producer="govern",
            events=totals["events"],
            classes=Converted(document["classes"], ReportClass.of_document),
            total_time=float(totals["query_time"]),
            first_seen=window["first_seen"],
            last_seen=window["last_seen"],
            window_seconds=window["seconds"],
            inputs=[InputName(item["name"], item["host"]) for item in document["inputs"]],
            timeline=None
            if timeline is None
            else Timeline.from_minutes(int(timeline["step_s"]), timeline["minutes"]),
            totals=Totals(
                totals["classes"],
                totals["other_events"],
                totals["unreported_events"],
                totals["filtered"],
                totals["no_statement"],
                totals["malformed"],
            ),
            max_classes=document["options"]["max_classes"],
            malformed=[
                MalformedEvent(bad["file"], bad["line"], bad["reason"])
                for bad in document["malformed"]
            ],
            omitted_classes=document["omitted_classes"],
            other=None
            if other is None
            else ReportClass.of_document(other | {"id": "", "fingerprint": ""}),
            rules=None if rules is None else RulesSummary.of_document(rules),
            document=document,
        )


class Converted(Sequence[ReportClass]):
    """Class documents as :class:`ReportClass` objects, each converted when read: a report
    of the top 20 classes of a fresh digest builds and converts 20 of them, not all."""

    __slots__ = ("_convert", "_documents")

    def __init__(
        self,
        documents: Sequence[Mapping[str, Any]],
        convert: Callable[[Mapping[str, Any]], ReportClass],
    ) -> None:
        self._documents = documents
        self._convert = convert

    def __len__(self) -> int:
        return len(self._documents)

    @overload
    def __getitem__(self, index: int) -> ReportClass: ...

    @overload
    def __getitem__(self, index: slice) -> Converted: ...

    def __getitem__(self, index: int | slice) -> ReportClass | Converted:
        if isinstance(index, slice):
            return Converted(self._documents[index], self._convert)
        return self._convert(self._documents[index])

    def __iter__(self) -> Iterator[ReportClass]:
        convert = self._convert
        for item in self._documents:
            yield convert(item)
