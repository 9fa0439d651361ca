"""The digest engine's hot loop: a byte range of a slow log in, a mergeable Partial out.

:func:`digest_range` reads records as pt does (govern/slowlog.py), fingerprints
their statements (govern/fingerprint.py) and aggregates them per class
(govern/digest/aggregate.py). It is the reference: the Rust core
(native/src/range.rs, driven by govern/digest/native_total.py) implements the
same range digest, and both must render identical JSON
(tests/digest/test_digest_native_conformance.py). Without the core, the runner runs
this one in worker processes.

Speed comes from working in batches rather than event by event: statements are
fingerprinted a few thousand at a time in one regex pass each, and a class's
attribute values are counted first (``Counter`` runs in C) and converted and
added to sketches once per distinct value.
"""

from __future__ import annotations

import contextlib
import gc
import re
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain

from govern import sketch
from govern.digest.aggregate import (
    SAMPLE_LIMIT,
    ClassAgg,
    Metric,
    Partial,
    Sample,
    histogram_index,
)
from govern.digest.decode import CUT_SHORT, malformed_reason
from govern.digest.decode import label as _label
from govern.digest.decode import text as _text
from govern.digest.options import EngineOptions, host_salt
from govern.fingerprint import cache_key, fingerprint_many, query_id
from govern.slowlog import RawEvent, Record, parse_record, read_records

#: Attributes that are not workload measures (pt's --ignore-attributes, and a few more).
IGNORED = frozenset(
    {
        b"arg", b"cmd", b"insert_id", b"last_insert_id", b"ip", b"port", b"Thread_id",
        b"Id", b"timestamp", b"exptime", b"flags", b"key_print", b"res", b"val",
        b"server_id", b"offset", b"end_log_pos", b"Xid", b"Schema", b"Start", b"End",
        b"Time", b"InnoDB_trx_id",
    }
)  # fmt: skip
#: Attributes shown as value counts even though their values are numbers.
CATEGORICAL = frozenset(
    {b"Errno", b"Last_errno", b"Error_no", b"Killed", b"Log_slow_rate_limit", b"Log_slow_rate_type"}
)

_NUMBER = re.compile(rb"(\d+)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$")
_FLOAT = re.compile(rb"[+-]?\d+\.\d*(?:[eE][+-]?\d+)?$")
_QUOTED = re.compile(rb"'[^'\\]*(?:\\.[^'\\]*)*'|\"[^\"\\]*(?:\\.[^\"\\]*)*\"", re.S)
_TUPLE_SEPARATOR = re.compile(rb"\)\s*,\s*\(")
#: Statements whose rows per statement and per-statement overhead matter (batching).
_WRITE = re.compile(rb"(?:insert|replace|update|delete)\b")
_READ, _OTHER_WRITE, _INSERT = 0, 1, 2
#: Rows_affected of a single-row UPDATE/DELETE (events without it are not single-row).
_ONE = frozenset({b"0", b"1"})
#: A fingerprint of INSERT/REPLACE … VALUES (…): its statements carry rows we can count.
_INSERT_VALUES = re.compile(rb"(?:insert|replace)\b(?:(?!\bselect\b).)*?\bvalues?\s*\(", re.S)

NUM, YES, NO, TEXT = 0, 1, 2, 3

#: One event waiting in a class's batch: attributes, db, user, host, statement length,
#: ts, VALUES rows, byte offset, statement.
Row = tuple[
    dict[bytes, bytes], bytes | None, bytes | None, bytes | None, int, str | None, int, int, bytes
]
#: Events per batch: larger batches count more repeated values at once (measured:
#: 16,384 is a third faster than 4,096; beyond, the gain is lost in memory).
BATCH = 16384
_FINGERPRINT_CACHE_LIMIT = 50_000
_FINGERPRINTS: dict[bytes, bytes] = {}  # cache_key(statement) -> fingerprint
_VALUE_TYPES: dict[bytes, tuple[int, int]] = {}  # attribute value -> classify(value)
_IDS: dict[bytes, str] = {}  # fingerprint -> query ID (run leads)


def micro_units(raw: bytes) -> int | None:
    """A decimal text as an integer of millionths, rounding half up past 6 decimals."""
    sign = 1
    if raw[:1] in (b"+", b"-"):
        sign = -1 if raw[:1] == b"-" else 1
        raw = raw[1:]
    match = _NUMBER.match(raw)
    if not match:
        return None
    whole, fraction, exponent = match.groups()
    digits = whole + (fraction or b"")
    scale = 6 - len(fraction or b"") + (int(exponent) if exponent else 0)
    value = int(digits)
    if scale >= 0:
        return sign * value * 10**scale
    divisor = 10**-scale
    return sign * ((value + divisor // 2) // divisor)


def classify(raw: bytes) -> tuple[int, int]:
    """pt's attribute types: integer or decimal -> (NUM, micro), Yes/No, else text."""
    if raw.isdigit():
        return NUM, int(raw) * 1_000_000
    if _FLOAT.match(raw):
        value = micro_units(raw)
        if value is not None:
            return NUM, value
    if raw == b"Yes":
        return YES, 0
    if raw == b"No":
        return NO, 0
    return TEXT, 0


@dataclass
class Context:
    """pt's inherited attributes as a range starts: the last ts and db seen before it."""

    ts: str | None = None
    db: str | None = None
    known: bool = False  # False: unknown yet (a range in the middle, digested in parallel)


@dataclass
class RangeResult:
    partial: Partial
    end: int  # where reading stopped (normally the first separator end at or after stop)
    newlines: int  # lines in [start, end)
    deferred: list[Record] = field(default_factory=list)  # need the previous context
    deferred_lines: list[int] = field(default_factory=list)  # their lines, from start


class Digester:
    """Aggregates events in input order into a Partial. Used by :func:`digest_range`.

    Per event, the loop only decides the class and appends a row to the class's
    pending list; :meth:`_flush` then counts each column (in C) and converts and
    adds each distinct value once.
    """

    def __init__(self, options: EngineOptions, context: Context, file: int) -> None:
        self.options = options
        self.partial = Partial()
        self.file = file
        self.last_ts = context.ts
        self.last_db: bytes | None = None if context.db is None else context.db.encode()
        self.context_known = context.known
        self.ts_known = context.known
        self.db_known = context.known
        self.deferring = not context.known and (options.needs_ts or options.needs_db)
        self.deferred: list[Record] = []
        # Caches of pure functions, shared by the ranges a process digests (bounded).
        self.fingerprints = _FINGERPRINTS
        self.value_types = _VALUE_TYPES
        # fingerprint -> (class, rows, is INSERT … VALUES), for the current batch
        # (None: the other class, shared by every fingerprint past --max-classes)
        self.pending: dict[bytes | None, tuple[ClassAgg, list[Row], int]] = {}
        self.kinds: dict[bytes, int] = {}  # fingerprint -> _READ, _OTHER_WRITE or _INSERT
        self.kept_class: dict[bytes, bool] = {}
        # connection (connection_number) -> [fingerprint, length, class, lead] of its
        # current run (lead: the fingerprint before it on the connection; None for a
        # connection's first run here)
        self.current_run: dict[int, list[object]] = {}
        self.first_run: dict[int, tuple[bytes, int, None]] = {}
        self.closed_runs: list[tuple[ClassAgg, int, bytes]] = []
        # The same for runs of single-row writes (key None: any other event).
        self.current_single: dict[int, list[object]] = {}
        self.first_single: dict[int, tuple[bytes | None, int, None]] = {}
        self.closed_single: list[tuple[ClassAgg, int]] = []
        self.run_starts: dict[bytes, tuple[ClassAgg, set[int]]] = {}  # by fingerprint
        self.sample_offsets: list[tuple[Sample, int]] = []
        self.malformed_offsets: list[tuple[int, str]] = []
        self.server_salt = host_salt(options.server)

    # -- input -----------------------------------------------------------------------
    def feed(self, records: Sequence[Record]) -> None:
        for begin in range(0, len(records), BATCH):
            batch = records[begin : begin + BATCH]
            events = [parse_record(record) for record in batch]
            self._aggregate(batch, events, self._fingerprint(events))
            self._flush()

    def _fingerprint(self, events: list[RawEvent]) -> list[bytes | None]:
        """The events' fingerprints (None: no statement), through a cache of keys."""
        cache = self.fingerprints
        if len(cache) > _FINGERPRINT_CACHE_LIMIT:
            cache.clear()
        keys = [cache_key(e.arg) if e.arg and e.arg != b"0" else None for e in events]
        missing: dict[bytes, bytes] = {}
        for key, event in zip(keys, events, strict=True):
            if key is not None and key not in cache and key not in missing:
                missing[key] = event.arg
        if missing:
            for key, fp in zip(missing, fingerprint_many(list(missing.values())), strict=True):
                cache[key] = fp
        return [None if key is None else cache[key] for key in keys]

    def _number(self, raw: bytes) -> tuple[int, int]:
        found = self.value_types.get(raw)
        if found is None:
            if len(self.value_types) > 50_000:
                self.value_types.clear()
            found = self.value_types[raw] = classify(raw)
        return found

    def _aggregate(
        self, records: Sequence[Record], events: list[RawEvent], fps: list[bytes | None]
    ) -> None:
        """Per event: inherit ts and db, filter, find the class, queue a row, follow runs."""
        options = self.options
        partial = self.partial
        pending = self.pending
        value_types = self.value_types
        current_run = self.current_run
        first_run = self.first_run
        closed_runs = self.closed_runs
        run_starts = self.run_starts
        current_single = self.current_single
        first_single = self.first_single
        closed_single = self.closed_single
        filtering = (
            options.since is not None or options.until is not None or options.filters is not None
        )
        last_ts, last_db = self.last_ts, self.last_db
        ts_known, db_known, deferring = self.ts_known, self.db_known, self.deferring
        minutes, minutes_unknown = partial.minutes, partial.minutes_unknown
        events_seen = 0
        for record, event, fp in zip(records, events, fps, strict=True):
            partial.banners += record.banners  # given back below if the record is deferred
            if fp is None:
                partial.no_statement += 1
                if record.forced_arg == b"":
                    self.malformed_offsets.append((record.offset, CUT_SHORT))
                continue
            attributes = event.attributes
            query_time_raw = attributes.get(b"Query_time")
            if query_time_raw is not None:
                kind_value = value_types.get(query_time_raw) or self._number(query_time_raw)
                if kind_value[0] != NUM or kind_value[1] < 0:
                    self.malformed_offsets.append((record.offset, malformed_reason(query_time_raw)))
                    continue
            # pt's --inherit-attributes db,ts
            ts = event.ts
            if ts is None:
                ts = last_ts
            else:
                last_ts = ts
                ts_known = True
            db = event.db
            if db is None:
                db = last_db
            else:
                last_db = db
                db_known = True
            if deferring:
                if (options.needs_ts and not ts_known) or (options.needs_db and not db_known):
                    self.deferred.append(record)
                    partial.banners -= record.banners  # counted when digested
                    continue
                deferring = False
            if filtering and not self._keep(event, fp, ts, db):
                partial.filtered += 1
                continue
            held = pending.get(fp)
            if held is None:
                held = pending[fp] = self._pending_for(fp)
            agg = held[0]
            events_seen += 1
            if query_time_raw is not None:  # load over time, per log minute
                slot = minutes_unknown if ts is None else minutes.get(ts[:16])
                if slot is None:
                    slot = minutes[ts[:16]] = [0, 0]  # type: ignore[index]
                slot[0] += 1
                slot[1] += kind_value[1]
            if not ts_known and ts is None:
                agg.unknown_ts = True
            if not db_known and db is None:
                agg.unknown_db += 1
            arg = event.arg
            kind = held[2]
            tuples = _count_tuples(arg) if kind == _INSERT else 0
            held[1].append(
                (attributes, db, event.user, event.host, len(arg), ts, tuples, record.offset, arg)
            )
            name = event.thread or attributes.get(b"Thread_id")
            if name is not None:
                thread = connection_number(name)
                # Runs of single-row writes: any other event ends them (key None; the
                # length of such a run is never used, so it is not counted).
                if kind == _READ:
                    key = None
                elif kind == _INSERT:
                    key = fp if tuples == 1 else None
                else:
                    key = fp if attributes.get(b"Rows_affected") in _ONE else None
                run = current_single.get(thread)
                if run is None or run[0] != key:
                    if run is not None:
                        if thread in first_single:
                            if run[0] is not None:
                                closed_single.append((run[2], run[1]))  # type: ignore[arg-type]
                        else:
                            first_single[thread] = (run[0], run[1], None)  # type: ignore[assignment]
                    current_single[thread] = [key, 1, agg]
                elif key is not None:
                    run[1] += 1  # type: ignore[operator]
                run = current_run.get(thread)
                lead = None
                if run is not None:
                    if run[0] == fp:
                        run[1] += 1  # type: ignore[operator]
                        continue
                    if thread in first_run:
                        closed_runs.append((run[2], run[1], run[3]))  # type: ignore[arg-type]
                    else:
                        first_run[thread] = (run[0], run[1], None)  # type: ignore[assignment]
                    lead = run[0]
                current_run[thread] = [fp, 1, agg, lead]
                starts = run_starts.get(fp)
                if starts is None:
                    starts = run_starts[fp] = (agg, set())
                starts[1].add(thread)
        self.last_ts, self.last_db = last_ts, last_db
        self.ts_known, self.db_known, self.deferring = ts_known, db_known, deferring
        partial.events += events_seen

    def _pending_for(self, fp: bytes) -> tuple[ClassAgg, list[Row], int]:
        """A class's queue for this batch: its aggregate (or other, past the cap), its rows,
        and whether it writes (its rows per statement and overhead are measured)."""
        partial = self.partial
        agg = partial.classes.get(fp)
        if agg is None:
            if len(partial.classes) < self.options.max_classes:
                agg = partial.classes[fp] = ClassAgg(fp)
            else:  # past the cap: all such statements share the other class's queue
                if partial.other is None:
                    partial.other = ClassAgg(b"")
                shared = self.pending.get(None)
                if shared is None:
                    shared = self.pending[None] = (partial.other, [], _READ)
                return shared
        kind = self.kinds.get(fp)
        if kind is None:
            kind = self.kinds[fp] = (
                _INSERT if _INSERT_VALUES.match(fp) else _OTHER_WRITE if _WRITE.match(fp) else _READ
            )
        return agg, [], kind

    def _keep(self, event: RawEvent, fp: bytes, ts: str | None, db: bytes | None) -> bool:
        """--since, --until and --filter."""
        options = self.options
        if options.since is not None and (ts is None or ts < options.since):
            return False
        if options.until is not None and (ts is None or ts >= options.until):
            return False
        filters = options.filters
        if filters is None:
            return True
        if filters.on_events and not filters.keep_event(
            None if db is None else _text(db.strip(b"`")),
            None if event.user is None else _text(event.user),
            None if event.host is None else _text(event.host),
        ):
            return False
        if filters.on_classes:
            kept = self.kept_class.get(fp)
            if kept is None:
                kept = self.kept_class[fp] = filters.keep_class(fp)
            return kept
        return True

    # -- counting ----------------------------------------------------------------------
    def _flush(self) -> None:
        server = self.options.server
        value_types = self.value_types
        unique = {id(entry): entry for entry in self.pending.values()}
        for agg, rows, statement_kind in unique.values():
            agg.count += len(rows)
            attributes, dbs, users, hosts, lengths, stamps, values_rows, _offsets, _args = zip(
                *rows, strict=True
            )
            known = [ts for ts in stamps if ts is not None]
            if known:
                agg.see_ts(min(known))
                agg.see_ts(max(known))
            numbers: dict[bytes, list[tuple[int, int]]] = {}
            query_times: dict[bytes, int] = {}
            for (name, raw), times in Counter(
                chain.from_iterable(map(dict.items, attributes))
            ).items():
                if name in IGNORED:
                    continue
                if name in CATEGORICAL:
                    agg.add_string(_label(name), _text(raw), times)
                    continue
                kind, value = value_types.get(raw) or self._number(raw)
                if kind == NUM:
                    held = numbers.get(name)
                    if held is None:
                        held = numbers[name] = []
                    held.append((value, times))
                    if name == b"Query_time":
                        query_times[raw] = value
                    elif b"." in raw:
                        numbers.setdefault(_DECIMAL_MARK + name, [])
                elif kind == TEXT:
                    agg.add_string(_label(name), _text(raw), times)
                else:
                    flags = agg.booleans.setdefault(_label(name), [0, 0])
                    flags[1] += times
                    if kind == YES:
                        flags[0] += times
            for name, values in numbers.items():
                if name.startswith(_DECIMAL_MARK):
                    agg.metrics[_label(name[1:])].decimal = True
                    continue
                label = _label(name)
                metric = agg.metrics.get(label)
                if metric is None:
                    metric = agg.metrics[label] = Metric()
                metric.add_many(values)
                if name == b"Query_time":
                    metric.decimal = True
                    histogram = agg.histogram
                    for value, times in values:
                        histogram[histogram_index(value)] += times
            for name, column in (("db", dbs), ("user", users), ("host", hosts)):
                for raw, times in Counter(column).items():
                    if raw is not None:
                        agg.add_string(name, _text(raw.strip(b"`") if name == "db" else raw), times)
            length = agg.metrics.get("Query_length")
            if length is None:
                length = agg.metrics["Query_length"] = Metric()
            length.add_many([(size * 1_000_000, times) for size, times in Counter(lengths).items()])
            if any(values_rows):
                metric = agg.metrics.get("Values_rows")
                if metric is None:
                    metric = agg.metrics["Values_rows"] = Metric()
                metric.add_many(
                    [(n * 1_000_000, times) for n, times in Counter(values_rows).items()]
                )
            if statement_kind == _READ:
                _add_texts(agg.texts, _args)
            if query_times:
                if statement_kind != _READ:
                    self._fit(agg, attributes, values_rows, query_times)
                self._sample(agg, rows, attributes, query_times)
            if server is not None:
                agg.servers[server] = agg.servers.get(server, 0) + len(rows)
        self.pending.clear()
        self._flush_runs()

    def _flush_runs(self) -> None:
        """Count closed run lengths and leads per class, and which connections ran it."""
        by_class: dict[int, tuple[ClassAgg, list[int], dict[bytes, list[int]]]] = {}
        for agg, length, lead in self.closed_runs:
            held = by_class.get(id(agg))
            if held is None:
                held = by_class[id(agg)] = (agg, [], {})
            held[1].append(length)
            tally = held[2].get(lead)
            if tally is None:
                held[2][lead] = [1, length]
            else:
                tally[0] += 1
                tally[1] += length
        for agg, lengths, leads in by_class.values():
            for length, times in Counter(lengths).items():
                agg.runs.close(length, times)
            for lead, (runs, calls) in leads.items():
                agg.runs.add_lead(self._query_id(lead), runs, calls)
        self.closed_runs.clear()
        singles: dict[int, tuple[ClassAgg, list[int]]] = {}
        for agg, length in self.closed_single:
            held_single = singles.get(id(agg))
            if held_single is None:
                held_single = singles[id(agg)] = (agg, [])
            held_single[1].append(length)
        for agg, lengths in singles.values():
            for length, times in Counter(lengths).items():
                agg.single_runs.close(length, times)
        self.closed_single.clear()
        salt = self.server_salt
        for agg, threads in self.run_starts.values():
            for thread in threads:
                sketch.distinct_add(agg.connections, sketch.mix64(thread + salt))
        self.run_starts.clear()

    @staticmethod
    def _query_id(fp: bytes) -> str:
        found = _IDS.get(fp)
        if found is None:
            if len(_IDS) > _FINGERPRINT_CACHE_LIMIT:
                _IDS.clear()
            found = _IDS[fp] = query_id(fp)
        return found

    def _fit(
        self,
        agg: ClassAgg,
        attributes: Sequence[dict[bytes, bytes]],
        values_rows: Sequence[int],
        query_times: dict[bytes, int],
    ) -> None:
        """Query_time against rows per statement, for writes: VALUES tuples, else rows affected.

        Needs per event only the sum of Query_time per distinct row count.
        """
        time_by_rows: dict[int | bytes | None, list[int]] = {}
        for a, rows in zip(attributes, values_rows, strict=True):
            query_time = a.get(b"Query_time")
            if query_time is None:
                continue
            key: int | bytes | None = rows or a.get(b"Rows_affected")
            held = time_by_rows.get(key)
            if held is None:
                time_by_rows[key] = [query_times[query_time], 1]
            else:
                held[0] += query_times[query_time]
                held[1] += 1
        fit = agg.fit
        for key, (micro, times) in time_by_rows.items():
            rows = key if isinstance(key, int) else self._rows(key)
            fit.n += times
            fit.sx += rows * times
            fit.sy += micro
            fit.sxx += rows * rows * times
            fit.sxy += rows * micro

    def _rows(self, raw: bytes | None) -> int:
        if raw is None:
            return 0
        kind, micro = self._number(raw)
        return micro // 1_000_000 if kind == NUM else 0

    def _sample(
        self,
        agg: ClassAgg,
        rows: list[Row],
        attributes: Sequence[dict[bytes, bytes]],
        query_times: dict[bytes, int],
    ) -> None:
        """The batch's worst event (highest Query_time, the last one on ties), if it beats the class's."""
        highest = max(query_times.values())
        if agg.sample is not None and highest < agg.sample.query_time:
            return
        column = [a.get(b"Query_time") for a in attributes]
        last = -1
        for raw, value in query_times.items():
            if value == highest:
                last = max(last, len(column) - 1 - column[::-1].index(raw))
        _, db, user, host, _, ts, _, offset, query = rows[last]
        sample = Sample(
            query_time=highest,
            query=query[:SAMPLE_LIMIT],
            ts=ts,
            db=None if db is None else _text(db.strip(b"`")),
            user=None if user is None else _text(user),
            host=None if host is None else _text(host),
            file=self.file,
            line=0,
            truncated=len(query) > SAMPLE_LIMIT,
            unknown_ts=ts is None and not self.context_known,
            unknown_db=db is None and not self.context_known,
        )
        agg.sample = sample
        self.sample_offsets.append((sample, offset))

    # -- result ------------------------------------------------------------------------
    def finish(
        self, data: bytes, start: int, end: int, lines: dict[int, int] | None = None
    ) -> RangeResult:
        """Close the range: open runs, context, line numbers (from ``lines`` if given)."""
        self._flush()
        partial = self.partial
        for current, firsts, open_runs in (
            (self.current_run, self.first_run, partial.open_runs),
            (self.current_single, self.first_single, partial.open_single),
        ):
            for thread, (key, length, *rest) in current.items():
                run = (key, length, rest[1] if len(rest) > 1 else None)
                first = firsts.get(thread)
                if first is None:
                    open_runs.whole[thread] = run  # type: ignore[assignment]
                else:
                    open_runs.heads[thread] = first
                    open_runs.tails[thread] = run  # type: ignore[assignment]
        partial.ts_seen = self.ts_known
        partial.db_seen = self.db_known
        partial.last_ts = self.last_ts if self.ts_known else None
        if self.db_known and self.last_db is not None:
            partial.last_db = _text(self.last_db.strip(b"`"))
        if lines is None:
            counter = _Lines(data, start)
            offsets = sorted(
                {o for _, o in self.sample_offsets}
                | {o for o, _ in self.malformed_offsets}
                | {r.offset for r in self.deferred}
            )
            lines = {offset: counter.at(offset) for offset in offsets}
        for sample, offset in self.sample_offsets:
            sample.line = lines[offset]
        for offset, reason in sorted(self.malformed_offsets):
            partial.note_malformed(self.file, lines[offset], reason)
        deferred_lines = [lines[record.offset] for record in self.deferred]
        return RangeResult(
            partial=partial,
            end=end,
            newlines=count_newlines(data, start, end),
            deferred=self.deferred,
            deferred_lines=deferred_lines,
        )


_DECIMAL_MARK = b"\x00"  # numbers[_DECIMAL_MARK + name]: some value of name had a point


def connection_number(thread: bytes) -> int:
    """A connection's key: its Thread_id as a number (modulo 2^64), or the CRC-32 of a
    name that is not one. ``0042`` and ``42`` are one connection, within a range and
    across ranges alike."""
    return int(thread) & sketch.MASK64 if thread.isdigit() else zlib.crc32(thread)


def text_hash(statement: bytes) -> int:
    """A statement text's 64-bit hash: its CRC-32 spread over 64 bits by splitmix64.

    32 bits are plenty for a distinct count (a million distinct texts have about 116
    pairs that share a CRC: 0.01% too few), and CRC-32 runs at memory speed in the core
    (crc32fast), where BLAKE2b cost a tenth of its time."""
    return sketch.mix64(zlib.crc32(statement))


def _add_texts(kept: set[int], statements: Sequence[bytes]) -> None:
    """Count the distinct statement texts of a read class (the query cache's key)."""
    sketch.distinct_add_many(kept, [text_hash(s) for s in set(statements)])


def _count_tuples(arg: bytes) -> int:
    """Rows of an ``INSERT … VALUES (…), (…)``: tuple separators outside quotes, plus one."""
    if b"'" in arg or b'"' in arg:
        arg = _QUOTED.sub(b"", arg)
    return len(_TUPLE_SEPARATOR.findall(arg)) + 1


def count_newlines(data: bytes, start: int, end: int) -> int:
    """Newlines in ``data[start:end]`` (an mmap has no ``count``: slice it in blocks)."""
    if isinstance(data, bytes):
        return data.count(b"\n", start, end)
    block = 1 << 24
    return sum(data[at : min(end, at + block)].count(b"\n") for at in range(start, end, block))


class _Lines:
    """Line numbers of increasing byte offsets, counting newlines once."""

    def __init__(self, data: bytes, start: int) -> None:
        self.data, self.pos, self.line = data, start, 1

    def at(self, offset: int) -> int:
        if offset > self.pos:
            self.line += count_newlines(self.data, self.pos, offset)
            self.pos = offset
        return self.line


def digest_range(
    data: bytes,
    start: int,
    stop: int,
    *,
    at_start: bool,
    end: int | None = None,
    file: int = 0,
    options: EngineOptions | None = None,
    context: Context | None = None,
) -> RangeResult:
    """Digest the records that start in ``data[start:stop]``: the engine's one entry point.

    ``start`` is the beginning of an input (``at_start``) or the end of a
    ``;\\n#`` separator; ``end`` bounds how far the last record may run (default:
    all of ``data``, which must then end at the input's end or a separator).
    Line numbers in the result count from ``start`` (line 1); the caller shifts
    them. With an unknown ``context`` and filters that need inherited values,
    the records before this range's own ``# Time:``/``use`` come back in
    ``deferred``, to be digested once the previous range's context is known.
    """
    options = options or EngineOptions()
    context = context or Context(known=at_start)
    with _without_cycle_collector():
        records, reached = read_records(data, start, stop, at_start=at_start, end=end)
        digester = Digester(options, context, file)
        digester.feed(records)
        return digester.finish(data, start, reached)


@contextlib.contextmanager
def _without_cycle_collector() -> Iterator[None]:
    """Pause Python's cycle collector while a range is digested.

    The engine builds no reference cycles, but it allocates millions of small
    objects, and the collector would walk the live ones again and again: about
    a fifth of the time (measured). Reference counting still frees everything.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def digest_records(
    records: Sequence[Record],
    lines: Sequence[int],
    *,
    file: int,
    options: EngineOptions,
    context: Context,
) -> Partial:
    """Digest a range's deferred records (with their lines) once their context is known."""
    digester = Digester(options, context, file)
    digester.feed(records)
    by_offset = {record.offset: line for record, line in zip(records, lines, strict=True)}
    return digester.finish(b"", 0, 0, lines=by_offset).partial
