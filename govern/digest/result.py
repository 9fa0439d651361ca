"""A finished digest: classes in report order, and its JSON document (govern.digest/1).

The JSON document is both a report and a saved state: besides the figures
people read (seconds, percentiles, shares), each class carries a ``state``
object with the exact integers and sketch buckets, so :func:`from_document`
rebuilds the aggregates and ``govern digest merge`` combines saved digests
with valid percentiles. docs/json.md describes every field.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from typing import Any

from govern import __version__, sketch
from govern.digest.aggregate import (
    HISTOGRAM_LABELS,
    OTHER_VALUE,
    ClassAgg,
    Fit,
    Metric,
    Partial,
    Runs,
    Sample,
    merge,
)
from govern.digest.tables import tables
from govern.errors import UsageError
from govern.fingerprint import decode, query_id, short_id

SCHEMA = "govern.digest"
SCHEMA_VERSION = 1
ORDER_FUNCTIONS = ("sum", "max", "min", "avg", "cnt")
#: Leading classes listed per class in ``sequence.leads`` (``state`` keeps them all).
LEADS_SHOWN = 5
QUANTILES = (("median", 0.5), ("p95", 0.95), ("p99", 0.99))


@dataclass
class Source:
    """An input as the report names it."""

    name: str
    host: str | None = None
    bytes: int = 0
    compression: str | None = None
    problems: list[str] = field(default_factory=list)


@dataclass
class Digest:
    """Everything a report needs: the merged aggregates, the inputs, the options used."""

    partial: Partial
    sources: list[Source]
    order_by: str = "Query_time:sum"
    max_classes: int = 10_000
    since: str | None = None
    until: str | None = None
    filters: list[str] = field(default_factory=list)
    omitted_classes: int = 0  # classes a saved document left out (--top on a JSON digest)

    # -- ordering --------------------------------------------------------------------
    def ranked(self) -> list[ClassAgg]:
        """Classes with Query_time, best first by ``order_by`` (ties: query ID)."""
        attribute, function = parse_order_by(self.order_by)

        def key(agg: ClassAgg) -> tuple[float, str]:
            return (-order_value(agg, attribute, function), query_id(agg.fingerprint))

        return sorted((a for a in self.partial.classes.values() if reportable(a)), key=key)

    def unreported(self) -> list[ClassAgg]:
        """Classes with no Query_time at all (pt leaves them out of its report too)."""
        return [a for a in self.partial.classes.values() if not reportable(a)]

    # -- totals ----------------------------------------------------------------------
    def total_query_time(self) -> int:
        return sum(
            a.metrics["Query_time"].total for a in self.partial.all_classes() if reportable(a)
        )

    def window(self) -> tuple[str | None, str | None, float | None]:
        firsts = [a.ts_min for a in self.partial.all_classes() if a.ts_min]
        lasts = [a.ts_max for a in self.partial.all_classes() if a.ts_max]
        first = min(firsts) if firsts else None
        last = max(lasts) if lasts else None
        return first, last, seconds_between(first, last)

    def global_metrics(self) -> dict[str, Metric]:
        merged: dict[str, Metric] = {}
        for agg in self.partial.all_classes():
            for name, metric in agg.metrics.items():
                merged.setdefault(name, Metric()).merge(metric)
        return merged


def reportable(agg: ClassAgg) -> bool:
    return "Query_time" in agg.metrics


def parse_order_by(text: str) -> tuple[str, str]:
    attribute, _, function = text.partition(":")
    function = function or "sum"
    if not attribute or function not in ORDER_FUNCTIONS:
        raise UsageError(
            f"--order-by {text!r}: expected ATTRIBUTE:FUNCTION with FUNCTION one of "
            f"{', '.join(ORDER_FUNCTIONS)} (e.g. Query_time:sum, Rows_examined:max, Query_time:cnt)"
        )
    return attribute, function


def order_value(agg: ClassAgg, attribute: str, function: str) -> float:
    if function == "cnt":
        metric = agg.metrics.get(attribute)
        return float(metric.count if metric else agg.count if attribute == "Query_time" else 0)
    metric = agg.metrics.get(attribute)
    if metric is None or metric.count == 0:
        return -math.inf
    if function == "sum":
        return float(metric.total)
    if function == "max":
        return float(metric.high)
    if function == "min":
        return float(metric.low)
    return metric.total / metric.count


def seconds_between(first: str | None, last: str | None) -> float | None:
    if not first or not last:
        return None
    try:
        start = dt.datetime.strptime(first, "%Y-%m-%d %H:%M:%S")
        end = dt.datetime.strptime(last, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    return (end - start).total_seconds()


# --- figures people read -----------------------------------------------------------------


def number(micro: float, decimal: bool) -> float | int:
    """A micro-unit value as the log wrote it: seconds (6 decimals) or a whole count."""
    if decimal:
        return round(micro / 1_000_000, 6)
    return round(micro / 1_000_000)


def metric_figures(metric: Metric) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "count": metric.count,
        "sum": number(metric.total, metric.decimal),
        "min": number(metric.low, metric.decimal),
        "max": number(metric.high, metric.decimal),
        "avg": round(metric.total / metric.count / 1_000_000, 6) if metric.count else None,
    }
    for name, q in QUANTILES:
        figures[name] = number(metric.quantile(q), metric.decimal) if metric.count else None
    return figures


def rows_per_statement(agg: ClassAgg) -> dict[str, Any] | None:
    """Rows a statement carries or touches: VALUES tuples for INSERT/REPLACE … VALUES,
    rows affected for other writes, rows sent for reads (whichever the log has)."""
    for name, source in (
        ("Values_rows", "values"),
        ("Rows_affected", "rows_affected"),
        ("Rows_sent", "rows_sent"),
    ):
        metric = agg.metrics.get(name)
        if metric is None or not metric.count:
            continue
        if name == "Rows_affected" and not _writes(agg.fingerprint):
            continue
        return {
            "source": source,
            "avg": round(metric.total / metric.count / 1_000_000, 3),
            "median": number(metric.quantile(0.5), False),
            "max": number(metric.high, False),
        }
    return None


def _writes(fingerprint: bytes) -> bool:
    return fingerprint.startswith((b"insert", b"replace", b"update", b"delete"))


def sequence_figures(agg: ClassAgg) -> dict[str, Any]:
    runs = agg.runs
    connections, exact = sketch.distinct_count(agg.connections)
    figures: dict[str, Any] = {
        "calls": runs.calls,
        "runs": runs.runs,
        "repeated_calls": runs.repeated_calls,
        "longest_run": runs.longest,
        "mean_run": round(runs.calls / runs.runs, 3) if runs.runs else None,
        "median_run": sketch.quantile(runs.lengths, 0.5, 1, runs.longest) if runs.runs else None,
        "p95_run": sketch.quantile(runs.lengths, 0.95, 1, runs.longest) if runs.runs else None,
        "connections": connections,
        "connections_exact": exact,
        "led_runs": sum(runs for runs, _ in runs.leads.values()),
        "led_calls": sum(calls for _, calls in runs.leads.values()),
        "leads": [
            {"id": lead, "runs": counts[0], "calls": counts[1]}
            for lead, counts in sorted(
                ((k, v) for k, v in runs.leads.items() if k != OTHER_VALUE),
                key=lambda item: (-item[1][1], item[0]),
            )[:LEADS_SHOWN]
        ],
    }
    return figures


def single_row_runs(agg: ClassAgg) -> dict[str, Any] | None:
    """Writes only: runs of the class's single-row statements on one connection."""
    if not _writes(agg.fingerprint):
        return None
    runs = agg.single_runs
    return {
        "calls": runs.calls,
        "runs": runs.runs,
        "repeated_calls": runs.repeated_calls,
        "longest_run": runs.longest,
        "mean_run": round(runs.calls / runs.runs, 3) if runs.runs else None,
    }


def distinct_texts(agg: ClassAgg) -> dict[str, Any] | None:
    """Distinct statement texts of a read class (what the query cache keys on)."""
    if not agg.texts:
        return None
    count, exact = sketch.distinct_count(agg.texts)
    return {"count": count, "exact": exact}


def overhead_figures(agg: ClassAgg) -> dict[str, Any]:
    line = agg.fit.line()
    return {
        "per_statement": None if line is None else round(line[0], 9),
        "per_row": None if line is None else round(line[1], 9),
        "statements": agg.fit.n,
    }


# --- the document ------------------------------------------------------------------------


def class_document(
    digest: Digest, agg: ClassAgg, total_time: int, window_seconds: float | None
) -> dict[str, Any]:
    fingerprint = decode(agg.fingerprint)
    query_time = agg.metrics.get("Query_time")
    sample = agg.sample
    document: dict[str, Any] = {
        "id": query_id(agg.fingerprint),
        "id16": short_id(query_id(agg.fingerprint)),
        "fingerprint": fingerprint,
        "count": agg.count,
        "share": round(query_time.total / total_time, 6) if query_time and total_time else 0.0,
        "qps": round(agg.count / window_seconds, 6) if window_seconds else None,
        "first_seen": agg.ts_min,
        "last_seen": agg.ts_max,
        "metrics": {name: metric_figures(m) for name, m in sorted(agg.metrics.items())},
        "flags": {name: {"yes": v[0], "count": v[1]} for name, v in sorted(agg.booleans.items())},
        "values": {
            name: dict(sorted(values.items(), key=lambda item: (-item[1], item[0])))
            for name, values in sorted(agg.strings.items())
        },
        "servers": dict(sorted(agg.servers.items(), key=lambda item: (-item[1], item[0]))),
        "histogram": {"Query_time": list(agg.histogram), "labels": list(HISTOGRAM_LABELS)},
        "sample": None
        if sample is None
        else {
            "query": decode(sample.query),
            "query_time": round(sample.query_time / 1_000_000, 6),
            "ts": sample.ts,
            "db": sample.db,
            "user": sample.user,
            "host": sample.host,
            "file": digest.sources[sample.file].name if sample.file < len(digest.sources) else None,
            "line": sample.line,
            "truncated": sample.truncated,
        },
        "sequence": sequence_figures(agg),
        "single_row_runs": single_row_runs(agg),
        "distinct_texts": distinct_texts(agg),
        "rows_per_statement": rows_per_statement(agg),
        "overhead": overhead_figures(agg),
        "tables": tables(fingerprint),
        "findings": [],  # filled by the digest rules (rules.digest), if they run
        "state": state_document(agg),
    }
    return document


def state_document(agg: ClassAgg) -> dict[str, Any]:
    """The exact, mergeable aggregates (integers; micro-units; sketch buckets)."""
    return {
        "metrics": {
            name: {
                "count": m.count,
                "sum": m.total,
                "min": m.low,
                "max": m.high,
                "decimal": m.decimal,
                "buckets": sketch.to_pairs(m.buckets),
            }
            for name, m in sorted(agg.metrics.items())
        },
        "runs": _runs_state(agg.runs)
        | {"leads": {lead: list(agg.runs.leads[lead]) for lead in sorted(agg.runs.leads)}},
        "single_runs": _runs_state(agg.single_runs),
        "connections": [f"{value:016x}" for value in sorted(agg.connections)],
        "texts": [f"{value:016x}" for value in sorted(agg.texts)],
        "fit": [agg.fit.n, agg.fit.sx, agg.fit.sy, agg.fit.sxx, agg.fit.sxy],
        "sample_query_time": agg.sample.query_time if agg.sample else None,
    } | _raw_fingerprint(agg.fingerprint)


def _runs_state(runs: Runs) -> dict[str, Any]:
    return {
        "runs": runs.runs,
        "calls": runs.calls,
        "repeated_calls": runs.repeated_calls,
        "longest": runs.longest,
        "lengths": sketch.to_pairs(runs.lengths),
    }


def _runs_from(state: dict[str, Any] | None) -> Runs:
    if not state:
        return Runs()
    return Runs(
        runs=state["runs"],
        calls=state["calls"],
        repeated_calls=state["repeated_calls"],
        longest=state["longest"],
        lengths=sketch.from_pairs(state["lengths"]),
        leads={lead: [int(n) for n in counts] for lead, counts in state.get("leads", {}).items()},
    )


def _raw_fingerprint(fingerprint: bytes) -> dict[str, str]:
    """A fingerprint that is not UTF-8 is also kept as hex, so merging keeps its query ID."""
    try:
        fingerprint.decode("utf-8")
    except UnicodeDecodeError:
        return {"fingerprint_hex": fingerprint.hex()}
    return {}


def to_document(digest: Digest, top: int | None = None) -> dict[str, Any]:
    """The govern.digest/1 document. ``top`` limits the classes listed (then not mergeable in full)."""
    return limit_classes(full_document(digest), top)


def limit_classes(document: dict[str, Any], top: int | None) -> dict[str, Any]:
    """The document with only its first ``top`` classes listed (None: all)."""
    if top is None:
        return document
    classes = document["classes"]
    return document | {
        "options": document["options"] | {"top": top},
        "classes": classes[:top],
        "omitted_classes": document["omitted_classes"] + max(0, len(classes) - top),
    }


def full_document(digest: Digest) -> dict[str, Any]:
    """The document with every class (``rules`` null until the digest rules run)."""
    partial = digest.partial
    ranked = digest.ranked()
    total_time = digest.total_query_time()
    first, last, seconds = digest.window()
    totals = global_totals(digest, total_time)
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "govern_version": __version__,
        "sketch": {
            "unit": 1e-6,
            "sub_bucket_bits": sketch.SUB_BITS,
            "relative_error": sketch.RELATIVE_ERROR,
        },
        "inputs": [
            {
                "name": s.name,
                "host": s.host,
                "bytes": s.bytes,
                "compression": s.compression,
                "problems": s.problems,
            }
            for s in digest.sources
        ],
        "options": {
            "order_by": digest.order_by,
            "top": None,
            "max_classes": digest.max_classes,
            "since": digest.since,
            "until": digest.until,
            "filters": list(digest.filters),
        },
        "window": {"first_seen": first, "last_seen": last, "seconds": seconds},
        "timeline": {
            "step_s": 60,
            "minutes": [
                [minute, events, round(micro / 1_000_000, 6)]
                for minute, (events, micro) in sorted(partial.minutes.items())
            ],
        },
        "totals": totals,
        "metrics": {name: metric_figures(m) for name, m in sorted(digest.global_metrics().items())},
        "malformed": [
            {
                "file": digest.sources[bad.file].name if bad.file < len(digest.sources) else None,
                "line": bad.line,
                "reason": bad.reason,
            }
            for bad in partial.malformed_kept
        ],
        "classes": [class_document(digest, agg, total_time, seconds) for agg in ranked],
        "omitted_classes": digest.omitted_classes,
        "other": None
        if partial.other is None
        else class_document(digest, partial.other, total_time, seconds)
        | {"id": None, "id16": None, "fingerprint": None},
        "unreported": [
            {"id": query_id(a.fingerprint), "fingerprint": decode(a.fingerprint), "count": a.count}
            for a in sorted(digest.unreported(), key=lambda a: query_id(a.fingerprint))
        ],
        "rules": None,  # the digest rules' summary (rules.digest), if they run
    }


def global_totals(digest: Digest, total_time: int) -> dict[str, Any]:
    partial = digest.partial
    reported = digest.ranked()
    return {
        "events": partial.events,
        "classes": len(reported),
        "query_time": round(total_time / 1_000_000, 6),
        "other_events": partial.other.count if partial.other else 0,
        "unreported_events": sum(a.count for a in digest.unreported()),
        "filtered": partial.filtered,
        "no_statement": partial.no_statement,
        "malformed": partial.malformed,
    }


# --- reading a saved document back ---------------------------------------------------------


def from_document(document: Any, name: str) -> Digest:
    """A saved govern.digest document as a Digest (to merge or re-render)."""
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise UsageError(f'{name}: not a govern digest (no "schema": "{SCHEMA}")')
    version = document.get("schema_version")
    if version != SCHEMA_VERSION:
        raise UsageError(
            f"{name}: govern.digest schema version {version}; this govern reads {SCHEMA_VERSION}"
        )
    try:
        return _from_document(document)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise UsageError(f"{name}: damaged govern digest ({type(exc).__name__}: {exc})") from None


def _from_document(document: dict[str, Any]) -> Digest:
    sources = [
        Source(
            name=item["name"],
            host=item.get("host"),
            bytes=item.get("bytes", 0),
            compression=item.get("compression"),
            problems=list(item.get("problems", [])),
        )
        for item in document["inputs"]
    ]
    names = {s.name: index for index, s in enumerate(sources)}
    partial = Partial()
    for item in document["classes"]:
        agg = _class_from(item, names)
        partial.classes[agg.fingerprint] = agg
    if document.get("other"):
        partial.other = _class_from(document["other"], names, other=True)
    for item in document.get("unreported", []):
        agg = ClassAgg(item["fingerprint"].encode("utf-8", "surrogateescape"), count=item["count"])
        partial.classes[agg.fingerprint] = agg
    for minute, events, query_time in (document.get("timeline") or {}).get("minutes", []):
        partial.minutes[str(minute)] = [int(events), round(float(query_time) * 1_000_000)]
    totals = document["totals"]
    partial.events = totals["events"]
    partial.filtered = totals["filtered"]
    partial.no_statement = totals["no_statement"]
    partial.malformed = totals["malformed"]
    from govern.digest.aggregate import Malformed

    partial.malformed_kept = [
        Malformed(names.get(bad["file"], 0), bad["line"], bad["reason"])
        for bad in document.get("malformed", [])
    ]
    options = document.get("options", {})
    return Digest(
        partial=partial,
        sources=sources,
        order_by=options.get("order_by", "Query_time:sum"),
        max_classes=options.get("max_classes", 10_000),
        since=options.get("since"),
        until=options.get("until"),
        filters=list(options.get("filters", [])),
        omitted_classes=document.get("omitted_classes", 0),
    )


def _class_from(item: dict[str, Any], names: dict[str, int], other: bool = False) -> ClassAgg:
    state = item["state"]
    raw = state.get("fingerprint_hex")
    fingerprint = b"" if other else bytes.fromhex(raw) if raw else item["fingerprint"].encode()
    agg = ClassAgg(
        fingerprint, count=item["count"], ts_min=item["first_seen"], ts_max=item["last_seen"]
    )
    if not other and query_id(fingerprint) != item["id"]:
        raise ValueError(f"class {item['id']}: fingerprint does not match its query ID")
    for name, m in state["metrics"].items():
        agg.metrics[name] = Metric(
            count=m["count"],
            total=m["sum"],
            low=m["min"],
            high=m["max"],
            buckets=sketch.from_pairs(m["buckets"]),
            decimal=m["decimal"],
        )
    agg.booleans = {name: [v["yes"], v["count"]] for name, v in item["flags"].items()}
    agg.strings = {name: dict(values) for name, values in item["values"].items()}
    agg.servers = dict(item["servers"])
    agg.histogram = list(item["histogram"]["Query_time"])
    agg.runs = _runs_from(state["runs"])
    agg.single_runs = _runs_from(state.get("single_runs"))
    agg.connections = {int(value, 16) for value in state["connections"]}
    agg.texts = {int(value, 16) for value in state.get("texts", [])}
    agg.fit = Fit(*state["fit"])
    sample = item.get("sample")
    if sample is not None:
        agg.sample = Sample(
            query_time=state["sample_query_time"],
            query=sample["query"].encode("utf-8", "surrogateescape"),
            ts=sample["ts"],
            db=sample["db"],
            user=sample["user"],
            host=sample["host"],
            file=names.get(sample["file"], 0),
            line=sample["line"],
            truncated=sample["truncated"],
        )
    return agg


def merge_digests(digests: list[Digest], *, max_classes: int, order_by: str) -> Digest:
    """Saved digests combined: classes by query ID, sketches added, inputs listed in order."""
    total = Partial()
    sources: list[Source] = []
    omitted = 0
    for digest in digests:
        offset = len(sources)
        sources.extend(digest.sources)
        part = digest.partial
        for agg in part.all_classes():
            if agg.sample is not None:
                agg.sample.file += offset
        for bad in part.malformed_kept:
            bad.file += offset
        part.ts_seen = part.db_seen = True
        merge(total, part, max_classes=max_classes)
        omitted += digest.omitted_classes
    return Digest(
        partial=total,
        sources=sources,
        order_by=order_by,
        max_classes=max_classes,
        omitted_classes=omitted,
    )
