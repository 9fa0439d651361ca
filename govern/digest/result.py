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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from govern import __version__, sketch
from govern.digest.aggregate import (
    HISTOGRAM_LABELS,
    OTHER_VALUE,
    ClassAgg,
    ClassKey,
    ClassSource,
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
QUANTILE_LEVELS = tuple(q for _, q in QUANTILES)


@dataclass
class Source:
    """An input as the report names it."""

    name: str
    host: str | None = None
    bytes: int = 0
    compression: str | None = None
    problems: list[str] = field(default_factory=list)
    stream: bool = False  # read once (stdin, a FIFO): ``bytes`` is not known


@dataclass
class Digest:
    """Everything a report needs: the merged aggregates, the inputs, the options used.

    Reports read the classes through ``partial``'s :class:`ClassSource` methods only
    (keys to rank them, one class at a time, the totals), never all at once.
    """

    partial: ClassSource
    sources: list[Source]
    order_by: str = "Query_time:sum"
    max_classes: int = 10_000
    since: str | None = None
    until: str | None = None
    filters: list[str] = field(default_factory=list)
    omitted_classes: int = 0  # classes a saved document left out (--top on a JSON digest)

    # -- ordering --------------------------------------------------------------------
    def keys(self) -> tuple[Sequence[ClassKey], Sequence[ClassKey]]:
        """The classes with Query_time, best first by ``order_by`` (ties: query ID), and
        those without (pt leaves them out of its report too), in the source's order.
        A source that ranks its own classes (the native core's) does it."""
        attribute, function = parse_order_by(self.order_by)
        ranked_keys = getattr(self.partial, "ranked_keys", None)
        if ranked_keys is not None:
            ranked: tuple[Sequence[ClassKey], Sequence[ClassKey]] = ranked_keys(attribute, function)
            return ranked
        reported: list[ClassKey] = []
        unreported: list[ClassKey] = []
        for key in self.partial.class_keys(attribute):
            (reported if key.reportable else unreported).append(key)
        reported.sort(key=lambda k: (-order_value(k, attribute, function), query_id(k.fingerprint)))
        return reported, unreported

    def ranked(self) -> Sequence[ClassKey]:
        """Keys of the classes with Query_time, best first (``partial.class_at(key.index)``)."""
        return self.keys()[0]

    def unreported(self) -> Sequence[ClassKey]:
        """Keys of the classes with no Query_time at all."""
        return self.keys()[1]

    def counts(self) -> tuple[int, int]:
        """(classes with Query_time, classes without), without ranking them (the
        core's source ranks anyway: it builds no key object to count them)."""
        attribute, _ = parse_order_by(self.order_by)
        if hasattr(self.partial, "ranked_keys"):
            reported_keys, unreported_keys = self.keys()
            return len(reported_keys), len(unreported_keys)
        keys = self.partial.class_keys(attribute)
        reported = sum(1 for key in keys if key.reportable)
        return reported, len(keys) - reported

    # -- totals ----------------------------------------------------------------------
    def total_query_time(self) -> int:
        """Query_time of the classes that have one, and of other (micro-units)."""
        return query_time_of(self.partial.totals())

    def window(self) -> tuple[str | None, str | None, float | None]:
        return window_of(self.partial.totals())

    def global_metrics(self) -> dict[str, Metric]:
        return self.partial.totals().metrics


def query_time_of(totals: ClassAgg) -> int:
    metric = totals.metrics.get("Query_time")
    return metric.total if metric is not None else 0


def window_of(totals: ClassAgg) -> tuple[str | None, str | None, float | None]:
    first = totals.ts_min or None
    last = totals.ts_max or None
    return first, last, seconds_between(first, last)


def parse_order_by(text: str) -> tuple[str, str]:
    attribute, _, function = text.partition(":")
    function = function or "sum"
    if not attribute or function not in ORDER_FUNCTIONS:
        raise UsageError(
            f"--order-by {text!r}: expected ATTRIBUTE:FUNCTION with FUNCTION one of "
            f"{', '.join(ORDER_FUNCTIONS)} (e.g. Query_time:sum, Rows_examined:max, Query_time:cnt)"
        )
    return attribute, function


def order_value(key: ClassKey, attribute: str, function: str) -> float:
    """What ``--order-by attribute:function`` ranks a class by (``key.metric`` is
    ``attribute``'s (count, total, low, high))."""
    metric = key.metric
    if function == "cnt":
        return float(metric[0] if metric else key.count if attribute == "Query_time" else 0)
    if metric is None or metric[0] == 0:
        return -math.inf
    count, total, low, high = metric
    if function == "sum":
        return float(total)
    if function == "max":
        return float(high)
    if function == "min":
        return float(low)
    return total / count


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
    values = metric.quantiles(QUANTILE_LEVELS) if metric.count else [None] * len(QUANTILES)
    for (name, _), value in zip(QUANTILES, values, strict=True):
        figures[name] = None if value is None else number(value, metric.decimal)
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


@dataclass(frozen=True, slots=True)
class _Class:
    """What the parts of a class document are built from."""

    digest: Digest
    agg: ClassAgg
    total_time: int
    window_seconds: float | None
    id: str
    fingerprint: str


def _share(c: _Class) -> float:
    query_time = c.agg.metrics.get("Query_time")
    return round(query_time.total / c.total_time, 6) if query_time and c.total_time else 0.0


def _sample(c: _Class) -> dict[str, Any] | None:
    sample, sources = c.agg.sample, c.digest.sources
    if sample is None:
        return None
    return {
        "query": decode(sample.query),
        "query_time": round(sample.query_time / 1_000_000, 6),
        "ts": sample.ts,
        "db": sample.db,
        "user": sample.user,
        "host": sample.host,
        "file": sources[sample.file].name if sample.file < len(sources) else None,
        "line": sample.line,
        "truncated": sample.truncated,
    }


def _by_count(counts: dict[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


#: A class document's parts, in document order: name -> how to build it.
_PARTS: dict[str, Callable[[_Class], Any]] = {
    "id": lambda c: c.id,
    "id16": lambda c: short_id(c.id),
    "fingerprint": lambda c: c.fingerprint,
    "count": lambda c: c.agg.count,
    "share": _share,
    "qps": lambda c: round(c.agg.count / c.window_seconds, 6) if c.window_seconds else None,
    "first_seen": lambda c: c.agg.ts_min,
    "last_seen": lambda c: c.agg.ts_max,
    "metrics": lambda c: {name: metric_figures(m) for name, m in sorted(c.agg.metrics.items())},
    "flags": lambda c: {
        name: {"yes": v[0], "count": v[1]} for name, v in sorted(c.agg.booleans.items())
    },
    "values": lambda c: {name: _by_count(values) for name, values in sorted(c.agg.strings.items())},
    "servers": lambda c: _by_count(c.agg.servers),
    "histogram": lambda c: {"Query_time": list(c.agg.histogram), "labels": list(HISTOGRAM_LABELS)},
    "sample": _sample,
    "sequence": lambda c: sequence_figures(c.agg),
    "single_row_runs": lambda c: single_row_runs(c.agg),
    "distinct_texts": lambda c: distinct_texts(c.agg),
    "rows_per_statement": lambda c: rows_per_statement(c.agg),
    "overhead": lambda c: overhead_figures(c.agg),
    "tables": lambda c: tables(c.fingerprint),
    "findings": lambda c: [],  # filled by the digest rules (govern.rules.digest), if they run
    "state": lambda c: state_document(c.agg),
}


def _class(digest: Digest, agg: ClassAgg, total_time: int, window_seconds: float | None) -> _Class:
    fingerprint = agg.fingerprint
    return _Class(
        digest, agg, total_time, window_seconds, query_id(fingerprint), decode(fingerprint)
    )


def class_document(
    digest: Digest, agg: ClassAgg, total_time: int, window_seconds: float | None
) -> dict[str, Any]:
    c = _class(digest, agg, total_time, window_seconds)
    return {name: build(c) for name, build in _PARTS.items()}


class ClassView(Mapping[str, Any]):
    """A class document, read-only, each part built when first read (then kept while
    the view lives); ``metrics`` builds each metric's figures when read too.

    What the digest rules read of a class (a few figures) costs a fraction of its
    whole document. Equal to :func:`class_document`'s dict, part by part.
    """

    __slots__ = ("_class", "_findings", "_parts")

    def __init__(self, c: _Class, findings: FindingsLookup | None = None) -> None:
        self._class = c
        self._findings = findings
        self._parts: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        parts = self._parts
        try:
            return parts[name]
        except KeyError:
            pass
        if name == "metrics":
            value: Any = _MetricsView(self._class.agg.metrics)
        elif name == "findings" and self._findings is not None:
            value = self._findings(self._class.id)
        else:
            value = _PARTS[name](self._class)
        parts[name] = value
        return value

    def __contains__(self, name: object) -> bool:
        return name in _PARTS

    def __iter__(self) -> Iterator[str]:
        return iter(_PARTS)

    def __len__(self) -> int:
        return len(_PARTS)


class _MetricsView(Mapping[str, Any]):
    """A class document's ``metrics``: each metric's figures built when read."""

    __slots__ = ("_figures", "_metrics", "_names")

    def __init__(self, metrics: dict[str, Metric]) -> None:
        self._metrics = metrics
        self._names = sorted(metrics)
        self._figures: dict[str, dict[str, Any]] = {}

    def __getitem__(self, name: str) -> dict[str, Any]:
        figures = self._figures.get(name)
        if figures is None:
            figures = self._figures[name] = metric_figures(self._metrics[name])
        return figures

    def __contains__(self, name: object) -> bool:
        return name in self._metrics

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


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
    """The document with every class (``rules`` null until the digest rules run), every
    class document built (a list): :func:`build_document`'s document, in full."""
    document = build_document(digest)
    document["classes"] = list(document["classes"])
    document["unreported"] = list(document["unreported"])
    return document


def build_document(digest: Digest) -> dict[str, Any]:
    """The document with every class, whose ``classes`` and ``unreported`` are lazy
    sequences: each class document is built when read, one at a time, so writing the
    document or running the rules over it never holds every class at once."""
    partial = digest.partial
    ranked, unreported = digest.keys()
    totals = partial.totals()
    total_time = query_time_of(totals)
    first, last, seconds = window_of(totals)
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
        "totals": global_totals(digest, total_time, ranked, unreported),
        "metrics": {name: metric_figures(m) for name, m in sorted(totals.metrics.items())},
        "malformed": [
            {
                "file": digest.sources[bad.file].name if bad.file < len(digest.sources) else None,
                "line": bad.line,
                "reason": bad.reason,
            }
            for bad in partial.malformed_kept
        ],
        "classes": LazyClasses(ranked, _ClassBuilder(digest, total_time, seconds)),
        "omitted_classes": digest.omitted_classes,
        "other": None
        if partial.other is None
        else class_document(digest, partial.other, total_time, seconds)
        | {"id": None, "id16": None, "fingerprint": None},
        "unreported": LazyDocuments(
            sorted(unreported, key=lambda key: query_id(key.fingerprint)), _unreported_document
        ),
        "rules": None,  # the digest rules' summary (govern.rules.digest), if they run
    }


def global_totals(
    digest: Digest,
    total_time: int,
    ranked: Sequence[ClassKey] | None = None,
    unreported: Sequence[ClassKey] | None = None,
) -> dict[str, Any]:
    partial = digest.partial
    if ranked is None or unreported is None:
        ranked, unreported = digest.keys()
    return {
        "events": partial.events,
        "classes": len(ranked),
        "query_time": round(total_time / 1_000_000, 6),
        "other_events": partial.other.count if partial.other else 0,
        "unreported_events": sum(key.count for key in unreported),
        "filtered": partial.filtered,
        "no_statement": partial.no_statement,
        "malformed": partial.malformed,
    }


def _unreported_document(key: ClassKey) -> dict[str, Any]:
    return {
        "id": query_id(key.fingerprint),
        "fingerprint": decode(key.fingerprint),
        "count": key.count,
    }


#: Finds the findings (as JSON) of a class by its query ID.
FindingsLookup = Callable[[str], list[dict[str, Any]]]


class _ClassBuilder:
    """Builds the document of one class from its key, with its findings once the rules ran."""

    def __init__(self, digest: Digest, total_time: int, window_seconds: float | None) -> None:
        self.digest = digest
        self.total_time = total_time
        self.window_seconds = window_seconds
        self.findings: FindingsLookup | None = None

    def __call__(self, key: ClassKey) -> dict[str, Any]:
        agg = self.digest.partial.class_at(key.index)
        item = class_document(self.digest, agg, self.total_time, self.window_seconds)
        if self.findings is not None:
            item["findings"] = self.findings(item["id"])
        return item

    def view(self, key: ClassKey) -> ClassView:
        agg = self.digest.partial.class_at(key.index)
        c = _class(self.digest, agg, self.total_time, self.window_seconds)
        return ClassView(c, self.findings)


class LazyDocuments(Sequence[dict[str, Any]]):
    """A read-only list of documents built from keys when read, each time it is read.

    Nothing is cached: iterating builds one document at a time, which the reader
    keeps or drops. A slice is another lazy sequence over the same builder.
    """

    __slots__ = ("_build", "_keys")

    def __init__(
        self, keys: Sequence[ClassKey], build: Callable[[ClassKey], dict[str, Any]]
    ) -> None:
        self._keys = keys
        self._build = build

    def __len__(self) -> int:
        return len(self._keys)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> LazyDocuments: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | LazyDocuments:
        if isinstance(index, slice):
            return self._view(self._keys[index])
        return self._build(self._keys[index])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        build = self._build
        for key in self._keys:
            yield build(key)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {len(self._keys)} documents>"

    def _view(self, keys: Sequence[ClassKey]) -> LazyDocuments:
        return LazyDocuments(keys, self._build)


class LazyClasses(LazyDocuments):
    """A digest's class documents in rank order, built one at a time when read.

    ``findings`` (the digest rules' annotate sets it) gives each class document its
    ``findings`` as it is built; slices share it.
    """

    __slots__ = ("_builder",)

    def __init__(self, keys: Sequence[ClassKey], builder: _ClassBuilder) -> None:
        super().__init__(keys, builder)
        self._builder = builder

    @property
    def findings(self) -> FindingsLookup | None:
        return self._builder.findings

    @findings.setter
    def findings(self, lookup: FindingsLookup | None) -> None:
        self._builder.findings = lookup

    def _view(self, keys: Sequence[ClassKey]) -> LazyClasses:
        return LazyClasses(keys, self._builder)

    def fingerprint_of(self, class_id: str) -> str | None:
        """The fingerprint (as documents show it) of a class of this digest, by query ID."""
        found = self._builder.digest.partial.fingerprint_of(class_id)
        return None if found is None else decode(found)

    def views(self) -> Iterator[ClassView]:
        """The classes as read-only views, each part built when read: for readers of a
        few figures per class (the digest rules), much cheaper than the documents."""
        view = self._builder.view
        for key in self._keys:
            yield view(key)


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
        if not isinstance(part, Partial):
            raise TypeError("merge_digests merges saved digests (from_document), not live ones")
        part.shift_files(offset)
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
