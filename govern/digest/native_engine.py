"""The digest engine's hot loop in Rust (issue 10): the same RangeResult, from the core.

:func:`govern.digest.engine.digest_range` calls :func:`digest_range` here when
the native core is built and enabled (``govern.native.available()``; set
``GOVERN_NATIVE=0`` for the pure-Python engine) and no --since/--until/--filter
is given: filters, and the records deferred for an unknown context, stay with
the Python engine (see docs/notes/issue-10.md). The core (native/src/range.rs)
reads, parses, fingerprints and aggregates the range without a Python object
per event; this module turns its finished aggregates into the engine's
:class:`Partial`, class by class. The runner splits, merges and stitches ranges
as it does for the Python engine, and both give the same JSON (tests in
tests/test_digest_native_conformance.py).

The core's result is a tuple (native/src/python.rs ``range_to_tuple``):
``(end, newlines, events, no_statement, malformed, last_ts, ts_known, last_db,
db_known, minutes, minutes_unknown, classes, other, connections)``.
"""

from __future__ import annotations

import mmap
from typing import TYPE_CHECKING, Any

from govern import native
from govern.digest.aggregate import (
    OTHER_VALUE,
    ClassAgg,
    Fit,
    Metric,
    OpenRun,
    OpenRuns,
    Partial,
    Runs,
    Sample,
)
from govern.digest.decode import label as _label
from govern.digest.decode import malformed_reason
from govern.digest.decode import text as _text

if TYPE_CHECKING:
    from govern.digest.engine import Context, EngineOptions, RangeResult


def usable(options: EngineOptions) -> bool:
    """The core digests this range: it is built, enabled, and no filter is given."""
    return (
        native.available()
        and options.since is None
        and options.until is None
        and options.filters is None
    )


def _runs(state: tuple[Any, ...]) -> Runs:
    runs, calls, repeated, longest, lengths, leads, leads_other = state
    out = Runs(runs, calls, repeated, longest, dict(lengths))
    for lead, n, total in leads:
        out.leads[lead] = [n, total]
    if leads_other is not None:
        held = out.leads.setdefault(OTHER_VALUE, [0, 0])
        held[0] += leads_other[0]
        held[1] += leads_other[1]
    return out


def _class(state: tuple[Any, ...], file: int | None, server: str | None) -> ClassAgg:
    """A class from the core's tuple. ``file`` None: a merged class (``native.Total``),
    whose tuple carries its ``--host`` labels and its sample's input."""
    (
        fingerprint,
        _kind,
        count,
        ts_min,
        ts_max,
        metrics,
        flags,
        strings,
        histogram,
        sample,
        runs,
        single_runs,
        connections,
        texts,
        fit,
        unknown_db,
        unknown_ts,
        servers,
        sample_file,
    ) = state
    agg = ClassAgg(fingerprint if fingerprint is not None else b"")
    agg.count = count
    agg.ts_min, agg.ts_max = ts_min, ts_max
    for name, n, total, low, high, buckets, decimal in metrics:
        agg.metrics[_label(name)] = Metric(n, total, low, high, dict(buckets), decimal)
    for name, yes, n in flags:
        agg.booleans[_label(name)] = [yes, n]
    for name, values, other in strings:
        label = _label(name)
        held: dict[str, int] = {}
        for raw, n in values:
            text = _text(raw)
            held[text] = held.get(text, 0) + n
        if other:
            held[OTHER_VALUE] = held.get(OTHER_VALUE, 0) + other
        agg.strings[label] = held
    if file is None:
        file = sample_file
        agg.servers = dict(servers)
    elif server is not None:
        agg.servers[server] = count
    agg.histogram = list(histogram)
    if sample is not None:
        qt, query, truncated, ts, db, user, host, line, unknown_ts_s, unknown_db_s = sample
        agg.sample = Sample(
            query_time=qt,
            query=query,
            ts=ts,
            db=None if db is None else _text(db),
            user=None if user is None else _text(user),
            host=None if host is None else _text(host),
            file=file,
            line=line,
            truncated=truncated,
            unknown_ts=unknown_ts_s,
            unknown_db=unknown_db_s,
        )
    agg.runs = _runs(runs)
    agg.single_runs = _runs(single_runs)
    agg.connections = set(connections)
    agg.texts = set(texts)
    agg.fit = Fit(*fit)
    agg.unknown_db = unknown_db
    agg.unknown_ts = unknown_ts
    return agg


def _open(target: OpenRuns, number: int, run: OpenRun, first: OpenRun | None, single: bool) -> None:
    if single:
        run = (run[0], run[1], None)
    if first is None:
        target.whole[number] = run
    else:
        target.heads[number] = first
        target.tails[number] = run


def digest_range(
    data: Any,
    start: int,
    stop: int,
    *,
    end: int | None,
    file: int,
    options: EngineOptions,
    context: Context,
) -> RangeResult:
    """engine.digest_range through the core (same arguments, same RangeResult)."""
    from govern.digest.engine import RangeResult, host_salt  # engine imports this module

    server = options.server
    salt = host_salt(server)
    limit = len(data) if end is None else end
    (
        reached,
        newlines,
        events,
        no_statement,
        malformed,
        last_ts,
        ts_known,
        last_db,
        db_known,
        minutes,
        minutes_unknown,
        classes,
        other,
        connections,
    ) = native.digest_range(
        data,
        start,
        stop,
        limit,
        options.max_classes,
        None if context.ts is None else context.ts.encode(),
        None if context.db is None else context.db.encode(),
        context.known,
        salt,
        isinstance(data, mmap.mmap),
    )
    partial = Partial()
    for state in classes:
        agg = _class(state, file, server)
        partial.classes[agg.fingerprint] = agg
    if other is not None:
        partial.other = _class(other, file, server)
    partial.events = events
    partial.no_statement = no_statement
    reasons = [(offset, malformed_reason(raw), line) for offset, line, raw in malformed]
    for _offset, reason, line in sorted(reasons):
        partial.note_malformed(file, line, reason)
    for minute, n, micro in minutes:
        partial.minutes[minute] = [n, micro]
    partial.minutes_unknown = list(minutes_unknown)
    for number, run, first, single, first_single in connections:
        _open(partial.open_runs, number, run, first, False)
        _open(partial.open_single, number, single, first_single, True)
    partial.ts_seen = ts_known
    partial.db_seen = db_known
    partial.last_ts = last_ts if ts_known else None
    if db_known and last_db is not None:
        partial.last_db = _text(last_db)
    return RangeResult(partial=partial, end=reached, newlines=newlines)
