"""pt-query-digest's JSON (``--output json``) read into the report model.

``govern digest compare`` (and the HTML report) read a digest made by pt-query-digest as
they read govern's: both name classes by the same query IDs. pt writes its numbers as
strings; what pt does not say (runs, tables, rules) stays empty.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from govern.digest.report import Flag, InputName, Report, ReportClass, SampleQuery, Stat
from govern.errors import UsageError

#: pt-query-digest's Query_time histogram buckets (its JSON ``histograms``).
PT_BUCKETS = ("1µs", "10µs", "100µs", "1ms", "10ms", "100ms", "1s", "10s+")


def is_pt_document(document: Any) -> bool:
    return isinstance(document, dict) and "classes" in document and "global" in document


def report_of_pt(document: Mapping[str, Any], path: str) -> Report:
    try:
        classes = [_class(raw) for raw in document["classes"]]
        overall = document["global"]
        events = int(overall.get("query_count") or sum(c.count for c in classes))
        total = number((overall.get("metrics") or {}).get("Query_time", {}).get("sum"))
        files = [str(f.get("name")) for f in overall.get("files") or [] if isinstance(f, dict)]
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise UsageError(f"{path}: a pt-query-digest document without {exc}") from None
    firsts = [c.first_seen for c in classes if c.first_seen]
    lasts = [c.last_seen for c in classes if c.last_seen]
    return Report(
        path=path,
        producer="pt-query-digest",
        events=events,
        classes=classes,
        total_time=total if total is not None else sum(c.total_time for c in classes),
        first_seen=min(firsts) if firsts else None,
        last_seen=max(lasts) if lasts else None,
        inputs=[InputName(name) for name in files],
    )


def number(value: Any) -> float | None:
    """pt writes numbers as strings. NaN and junk become None."""
    if value is None or isinstance(value, bool):
        return None
    try:
        found = float(value)
    except (TypeError, ValueError):
        return None
    return found if math.isfinite(found) else None


def _stat(raw: Mapping[str, Any]) -> Stat:
    return Stat(
        sum=number(raw.get("sum")),
        min=number(raw.get("min")),
        max=number(raw.get("max")),
        avg=number(raw.get("avg")),
        median=number(raw.get("median")),
        p95=number(raw.get("pct_95", raw.get("p95"))),
        p99=number(raw.get("pct_99", raw.get("p99"))),
    )


def _class(raw: Mapping[str, Any]) -> ReportClass:
    count = int(raw["query_count"])
    metrics: dict[str, Stat] = {}
    flags: dict[str, Flag] = {}
    values: dict[str, dict[str, int]] = {}
    for name, value in (raw.get("metrics") or {}).items():
        if not isinstance(value, dict):
            continue
        if "yes" in value:
            flags[name] = Flag(int(number(value["yes"]) or 0))
        elif "value" in value:
            values[name] = {str(value["value"]): count}
        elif "sum" in value:
            metrics[name] = _stat(value)
    example = raw.get("example") or {}
    histogram = (raw.get("histograms") or {}).get("Query_time") or []
    query = example.get("query")
    return ReportClass(
        id=str(raw["checksum"]).upper(),
        fingerprint=str(raw["fingerprint"]),
        count=count,
        metrics=metrics,
        flags=flags,
        values=values,
        first_seen=raw.get("ts_min"),
        last_seen=raw.get("ts_max"),
        sample=None
        if query is None
        else SampleQuery(
            str(query),
            query_time=number(example.get("Query_time")),
            ts=example.get("ts"),
            db=example.get("db"),
        ),
        histogram=list(zip(PT_BUCKETS, (int(n) for n in histogram), strict=False)),
    )
