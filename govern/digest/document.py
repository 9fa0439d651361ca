"""The ``govern.digest`` document (version 1) of a finished digest: what JSON, the reports
and the rules read, every figure from the class's aggregates (docs/json.md).

The document is both a report and a saved state: besides the figures people read, each
class carries a ``state`` object with the exact integers and sketch buckets, so
``govern digest merge`` rebuilds the aggregates (govern/digest/merge.py) and combines saved
digests with valid percentiles. Built for ``govern digest``, the document's classes are
lazy (:func:`build_document`): each class document is built when read.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from govern import __version__, sketch
from govern.digest.aggregate import HISTOGRAM_LABELS, ClassAgg, Metric, Runs
from govern.digest.classes import DocumentFrame, FindingsLookup
from govern.digest.columns import ClassColumns
from govern.digest.figures import (
    distinct_texts,
    metric_figures,
    overhead_figures,
    rows_per_statement,
    sequence_figures,
    single_row_runs,
)
from govern.digest.lazy import ClassList, LazyClasses, LazyDocuments
from govern.digest.ordering import ClassKey
from govern.digest.result import Digest, query_time_of, window_of
from govern.digest.tables import tables
from govern.fingerprint import decode, query_id, short_id
from govern.output import dumps, is_terminal
from govern.progress import progress

#: Classes written between two moves of the progress bar.
WRITE_STEP = 4096

#: What the native core writes for a class's findings, just before its last part.
_NO_FINDINGS = ', "findings": [], "state": '

SCHEMA = "govern.digest"
SCHEMA_VERSION = 1


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
    found = {
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
    if sample.plan is not None:  # govern collect's EXPLAIN (docs/collect.md)
        found["plan"] = sample.plan
    return found


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
    item = {name: build(c) for name, build in _PARTS.items()}
    if digest.top_hosts is not None and agg.fingerprint:
        item["top_hosts"] = [
            {"host": share.host, "count": share.count, "query_time": share.query_time}
            for share in digest.top_hosts.get(item["id"], ())
        ]
    return item


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
        elif name == "state":
            value = _StateView(self._class.agg)
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


#: The parts of a class's ``state``, in the document's order.
_STATE_PARTS: dict[str, Callable[[ClassAgg], Any]] = {
    "metrics": lambda agg: {
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
    "runs": lambda agg: (
        _runs_state(agg.runs)
        | {"leads": {lead: list(agg.runs.leads[lead]) for lead in sorted(agg.runs.leads)}}
    ),
    "single_runs": lambda agg: _runs_state(agg.single_runs),
    "connections": lambda agg: [f"{value:016x}" for value in sorted(agg.connections)],
    "texts": lambda agg: [f"{value:016x}" for value in sorted(agg.texts)],
    "fit": lambda agg: [agg.fit.n, agg.fit.sx, agg.fit.sy, agg.fit.sxx, agg.fit.sxy],
    "sample_query_time": lambda agg: agg.sample.query_time if agg.sample else None,
}


def state_document(agg: ClassAgg) -> dict[str, Any]:
    """The exact, mergeable aggregates (integers; micro-units; sketch buckets)."""
    return {name: build(agg) for name, build in _STATE_PARTS.items()} | _raw_fingerprint(
        agg.fingerprint
    )


class _StateView(Mapping[str, Any]):
    """A class document's ``state``, each part built when read: the rules read a metric's
    buckets or a run's lengths, never the connections' and texts' hashes (the costly part).
    Equal to :func:`state_document`'s dict."""

    __slots__ = ("_agg", "_names", "_parts")

    def __init__(self, agg: ClassAgg) -> None:
        self._agg = agg
        self._parts: dict[str, Any] = _raw_fingerprint(agg.fingerprint)
        self._names = [*_STATE_PARTS, *self._parts]

    def __getitem__(self, name: str) -> Any:
        parts = self._parts
        try:
            return parts[name]
        except KeyError:
            value = parts[name] = _STATE_PARTS[name](self._agg)
            return value

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def _runs_state(runs: Runs) -> dict[str, Any]:
    return {
        "runs": runs.runs,
        "calls": runs.calls,
        "repeated_calls": runs.repeated_calls,
        "longest": runs.longest,
        "lengths": sketch.to_pairs(runs.lengths),
    }


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
    document["classes"] = ClassList(document["classes"])
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
    } | ({} if digest.store is None else {"store": dict(digest.store)})


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
        "banners": partial.banners,
    }


def _unreported_document(key: ClassKey) -> dict[str, Any]:
    return {
        "id": query_id(key.fingerprint),
        "fingerprint": decode(key.fingerprint),
        "count": key.count,
    }


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

    def columns(
        self,
        keys: Sequence[ClassKey],
        words: Sequence[str],
        max_depth: int,
        metrics: Sequence[str],
        verbs: Sequence[str],
    ) -> ClassColumns:
        return self.digest.partial.rule_columns(keys, words, max_depth, metrics, verbs)

    def fingerprint_of(self, class_id: str) -> str | None:
        found = self.digest.partial.fingerprint_of(class_id)
        return None if found is None else decode(found)

    def _frame(self) -> DocumentFrame:
        return DocumentFrame(
            self.total_time,
            self.window_seconds,
            tuple(source.name for source in self.digest.sources),
        )

    def joined(self, keys: Sequence[ClassKey]) -> Iterator[bytes]:
        """The documents of ``keys`` as UTF-8 JSON separated by ``", "``: runs of them
        written by the source (the native core, hundreds per piece), the others built
        here; a class with findings alone (:meth:`encoded` puts them in). A progress bar
        counts the classes written when stderr is a terminal and stdout is not."""
        written = False
        with progress("writing classes", len(keys), force=_bar_wanted(len(keys))) as bar:
            for start in range(0, len(keys), WRITE_STEP):
                chunk = keys[start : start + WRITE_STEP]
                for piece in self._pieces(chunk):
                    if written:
                        yield b", "  # not ``b", " + piece``: a copy of every run
                    yield piece
                    written = True
                bar.advance(len(chunk))

    def _pieces(self, keys: Sequence[ClassKey]) -> Iterator[bytes]:
        """:meth:`joined`'s pieces for ``keys``, not joined to each other."""
        findings = self.findings
        if findings is None:
            yield from self._runs(keys)
            return
        ids = self.digest.partial.query_ids(keys).hex().upper()
        done = 0
        for position in range(len(keys)):
            if findings(ids[32 * position : 32 * position + 32]):
                if done < position:
                    yield b", ".join(self._runs(keys[done:position]))
                yield next(self.encoded(keys[position : position + 1])).encode()
                done = position + 1
        if done < len(keys):
            yield from self._runs(keys[done:] if done else keys)

    def _runs(self, keys: Sequence[ClassKey]) -> Iterator[bytes]:
        """Runs of documents the source writes, the others built here (no findings)."""
        for piece in self.digest.partial.class_json_runs(keys, self._frame()):
            yield dumps(self(keys[piece])).encode() if isinstance(piece, int) else piece

    def encoded(self, keys: Sequence[ClassKey]) -> Iterator[str]:
        """The documents of ``keys`` as JSON: written by the source where it can (the
        native core), with the findings put in; built here and encoded otherwise."""
        findings = self.findings
        for position, text in enumerate(self.digest.partial.class_json(keys, self._frame())):
            if text is None:
                yield dumps(self(keys[position]))
                continue
            if findings is not None:
                found = findings(text[8:40])  # {"id": "<32 hex>", …
                if found:
                    head, _, tail = text.rpartition(_NO_FINDINGS)
                    text = head + ', "findings": ' + dumps(found) + ', "state": ' + tail
            yield text


def _bar_wanted(classes: int) -> bool:
    """A bar for the classes written: on a terminal (stderr), not when stdout is that
    terminal too (the bar would be drawn among the JSON), and for many classes only."""
    return classes > WRITE_STEP and is_terminal() and not is_terminal(sys.stdout)
