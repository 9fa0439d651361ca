"""Saved digests as the reports see them: one model for govern's and pt-query-digest's JSON.

``govern digest compare`` and the HTML report read saved documents, so a digest
made yesterday on another host (or by pt-query-digest, whose query IDs govern
shares) can be compared or shown later. Each reader maps its format onto
:class:`Digest`; nothing else in the reports knows a file format.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from govern.errors import UsageError
from govern.reports.timeline import Timeline

#: pt-query-digest's Query_time histogram buckets (its JSON ``histograms``).
PT_BUCKETS = ("1µs", "10µs", "100µs", "1ms", "10ms", "100ms", "1s", "10s+")


@dataclass(frozen=True)
class Stat:
    """One numeric attribute of a class (seconds for times)."""

    sum: float | None = None
    min: float | None = None
    max: float | None = None
    avg: float | None = None
    median: float | None = None
    p95: float | None = None
    p99: float | None = None


@dataclass
class QueryClass:
    id: str
    fingerprint: str
    count: int
    query_time: Stat
    metrics: dict[str, Stat] = field(default_factory=dict)
    flags: dict[str, int] = field(default_factory=dict)
    first_seen: str | None = None
    last_seen: str | None = None
    sample: str | None = None
    sample_attributes: dict[str, Any] = field(default_factory=dict)
    histogram: list[tuple[str, int]] = field(default_factory=list)
    hosts: list[tuple[str, int]] = field(default_factory=list)  # servers (--host labels)
    clients: list[tuple[str, int]] = field(default_factory=list)  # client hosts
    users: list[tuple[str, int]] = field(default_factory=list)
    databases: list[tuple[str, int]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def key(self) -> str:
        """What classes match on across files: the 16-hex short ID (pt and PMM use it too)."""
        return self.id.upper()[-16:]

    @property
    def total_time(self) -> float:
        return self.query_time.sum or 0.0


@dataclass
class Digest:
    path: str
    producer: str  # "govern" or "pt-query-digest"
    events: int
    classes: list[QueryClass]
    total_time: float
    first_seen: str | None = None
    last_seen: str | None = None
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    timeline: Timeline | None = None
    hosts: list[str] = field(default_factory=list)  # the --host labels of a merged digest


def load_digest(path: str) -> Digest:
    """Read a saved digest (``govern digest --format json`` or pt-query-digest ``--output json``)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read it ({exc})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    if isinstance(document, dict) and "classes" in document and "global" in document:
        return _from_pt(path, document)
    if isinstance(document, dict) and document.get("schema") == "govern.digest":
        from govern.reports.digest_govern import from_govern

        return from_govern(path, document)
    raise UsageError(
        f"{path}: not a saved digest (expected govern digest --format json or pt-query-digest --output json)"
    )


def number(value: Any) -> float | None:
    """pt writes numbers as strings; govern as numbers. NaN and junk become None."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _stat(raw: dict[str, Any]) -> Stat:
    return Stat(
        sum=number(raw.get("sum")),
        min=number(raw.get("min")),
        max=number(raw.get("max")),
        avg=number(raw.get("avg")),
        median=number(raw.get("median")),
        p95=number(raw.get("pct_95", raw.get("p95"))),
        p99=number(raw.get("pct_99", raw.get("p99"))),
    )


def _from_pt(path: str, document: dict[str, Any]) -> Digest:
    try:
        classes = [_pt_class(raw) for raw in document["classes"]]
        overall = document["global"]
        events = int(overall.get("query_count") or sum(c.count for c in classes))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"{path}: a pt-query-digest document without {exc}") from None
    total = number((overall.get("metrics") or {}).get("Query_time", {}).get("sum"))
    firsts = [c.first_seen for c in classes if c.first_seen]
    lasts = [c.last_seen for c in classes if c.last_seen]
    return Digest(
        path=path,
        producer="pt-query-digest",
        events=events,
        classes=classes,
        total_time=total if total is not None else sum(c.total_time for c in classes),
        first_seen=min(firsts) if firsts else None,
        last_seen=max(lasts) if lasts else None,
        files=[str(f.get("name")) for f in overall.get("files") or [] if isinstance(f, dict)],
    )


def _pt_class(raw: dict[str, Any]) -> QueryClass:
    metrics: dict[str, Stat] = {}
    flags: dict[str, int] = {}
    values: dict[str, list[tuple[str, int]]] = {}
    for name, value in (raw.get("metrics") or {}).items():
        if not isinstance(value, dict):
            continue
        if "yes" in value:
            flags[name] = int(number(value["yes"]) or 0)
        elif "value" in value:
            values[name] = [(str(value["value"]), int(raw["query_count"]))]
        elif "sum" in value:
            metrics[name] = _stat(value)
    example = raw.get("example") or {}
    histogram = (raw.get("histograms") or {}).get("Query_time") or []
    return QueryClass(
        id=str(raw["checksum"]).upper(),
        fingerprint=str(raw["fingerprint"]),
        count=int(raw["query_count"]),
        query_time=metrics.pop("Query_time", Stat()),
        metrics=metrics,
        flags=flags,
        first_seen=raw.get("ts_min"),
        last_seen=raw.get("ts_max"),
        sample=example.get("query"),
        sample_attributes={k: v for k, v in example.items() if k != "query"},
        histogram=list(zip(PT_BUCKETS, (int(n) for n in histogram), strict=False)),
        clients=values.get("host", []),
        users=values.get("user", []),
        databases=values.get("db", []),
    )
