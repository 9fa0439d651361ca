"""Big UPDATEs and DELETEs in chunks over the primary key: timed, committed, throttled, resumable.

A change like ``DELETE FROM events WHERE created < '2024-01-01'`` run as one
statement locks for as long as it runs and reaches the replicas as one
transaction they replay just as long. Here it walks the primary key in ranges,
like gh-ost's row copy and pt-archiver: each chunk is
``… WHERE (your condition) AND key > last AND key <= upper``, committed on its
own. The range width is set from measured chunk times to take about
``target_seconds`` each (pt-table-checksum's weighted rate), the throttler may
hold between chunks, and the state store keeps the last committed key so a
second run after a crash goes on from there (:mod:`govern.batch.chunk_journal`).

The walk ends at the largest key at the start: rows inserted later are not
visited. Conditions are the caller's SQL (``%s`` placeholders bound from
``params``; a literal ``%`` is written ``%%``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

import pymysql

from govern.batch.chunk_journal import DONE, STOPPED, ChunkJournal, Key, Walk, walk_id
from govern.batch.identifiers import quote
from govern.batch.table import TableInfo, describe
from govern.batch.writer import RETRYABLE_ERRORS, check_writable, is_data_error
from govern.connection import Connection, error_text, query_one
from govern.errors import EXIT_FINDINGS, EXIT_SERVER, GovernError, ServerError, UsageError
from govern.server import ServerInfo, detect
from govern.state import StateStore
from govern.throttle.throttler import Throttler, ThrottleStop

SCHEMA = "govern.chunk"
SCHEMA_VERSION = 1
DEFAULT_TARGET_SECONDS = 0.5
#: The first chunk's width in keys, before any chunk was timed.
FIRST_CHUNK_ROWS = 1000
#: No chunk wider than this, however fast they go (a fast empty range is not a fast full one).
MAX_CHUNK_ROWS = 100_000
#: Weight of the past in the rate estimate (pt-table-checksum's WeightedAvgRate).
RATE_WEIGHT = 0.75

Action = Literal["delete", "update"]


@dataclasses.dataclass
class ChunkResult:
    """What a chunked change did; ``complete`` False when it stopped part-way."""

    table: str
    action: str
    key: tuple[str, ...]
    target_seconds: float
    rows: int = 0  # rows the statements affected (deleted, or changed), earlier runs included
    rows_before: int = 0  # of which the earlier runs of a resumed change
    chunks: int = 0
    scanned: int = 0  # keys walked
    retries: int = 0
    seconds: float = 0.0  # time in chunks (the work itself)
    elapsed: float = 0.0  # wall time, holds included
    held_seconds: float = 0.0
    chunk_rows: int = FIRST_CHUNK_ROWS  # the chunk width reached
    chunk_times: list[float] = dataclasses.field(default_factory=list)
    resumed: bool = False  # went on from an earlier, unfinished run
    complete: bool = False
    stopped: str | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    throttle: dict[str, Any] | None = None

    @property
    def rate(self) -> float | None:
        """This run's rows per second of chunk time."""
        return (self.rows - self.rows_before) / self.seconds if self.seconds > 0 else None

    def to_json(self) -> dict[str, Any]:
        times = self.chunk_times
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "table": self.table,
            "action": self.action,
            "key": list(self.key),
            "rows": self.rows,
            "chunks": self.chunks,
            "keys_walked": self.scanned,
            "retries": self.retries,
            "seconds": round(self.seconds, 3),
            "elapsed_s": round(self.elapsed, 3),
            "held_s": round(self.held_seconds, 3),
            "rows_per_second": None if self.rate is None else round(self.rate),
            "target_chunk_s": self.target_seconds,
            "chunk_s": {
                "median": round(statistics.median(times), 4) if times else None,
                "p95": round(sorted(times)[int(0.95 * (len(times) - 1))], 4) if times else None,
                "max": round(max(times), 4) if times else None,
            },
            "chunk_rows": self.chunk_rows,
            "resumed": self.resumed,
            "complete": self.complete,
            "stopped": self.stopped,
            "notes": list(self.notes),
            "throttle": self.throttle,
        }


class ChunkError(GovernError):
    """A chunk failed (rolled back); every earlier chunk stays committed."""

    def __init__(self, message: str, *, cause: BaseException, result: ChunkResult) -> None:
        super().__init__(message, exit_code=EXIT_FINDINGS if is_data_error(cause) else EXIT_SERVER)
        self.result = result


def chunked_delete(
    conn: Connection,
    table: str,
    where: str | None = None,
    params: Sequence[Any] = (),
    *,
    target_seconds: float = DEFAULT_TARGET_SECONDS,
    throttle: Throttler | None = None,
    state: StateStore | None = None,
    progress: Callable[[int, int | None], None] | None = None,
    server: ServerInfo | None = None,
) -> ChunkResult:
    """``DELETE FROM table WHERE where`` in timed chunks over the primary key.

    ``state`` (a state store) makes it resumable: an unfinished earlier run of the
    same change goes on from its last committed chunk. Raises ChunkError when a
    chunk fails, ThrottleStop when the throttler stops it (both carry ``.result``).
    """
    walker = _Walker(conn, table, "delete", None, where, params, target_seconds, server)
    return walker.run(throttle, state, progress)


def chunked_update(
    conn: Connection,
    table: str,
    set: str,
    where: str | None = None,
    params: Sequence[Any] = (),
    *,
    target_seconds: float = DEFAULT_TARGET_SECONDS,
    throttle: Throttler | None = None,
    state: StateStore | None = None,
    progress: Callable[[int, int | None], None] | None = None,
    server: ServerInfo | None = None,
) -> ChunkResult:
    """``UPDATE table SET set WHERE where`` in timed chunks over the primary key.

    ``params`` bind the placeholders of ``set`` then ``where``, in text order. A
    chunk that was in flight when an earlier run died runs again on resume: make
    the change idempotent (``SET status = 'archived' WHERE status = 'active'``, not
    ``SET n = n + 1``). See :func:`chunked_delete`.
    """
    if not set or not set.strip():
        raise UsageError("set: nothing to change")
    walker = _Walker(conn, table, "update", set, where, params, target_seconds, server)
    return walker.run(throttle, state, progress)


def _compare(columns: Sequence[str], op: str, count: int) -> str:
    """``(a, b) > (%s, %s)`` spelled so every server plans it as a range on the key:
    ``a > %s OR (a = %s AND b > %s)``; ``op`` is ``>`` or ``<=``."""
    strict = "<" if op.startswith("<") else ">"
    terms = []
    for i in range(count):
        parts = [f"{columns[j]} = %s" for j in range(i)]
        parts.append(f"{columns[i]} {op if i == count - 1 else strict} %s")
        terms.append(" AND ".join(parts))
    return "(" + " OR ".join(f"({t})" for t in terms) + ")"


def _compare_params(values: Key) -> list[Any]:
    out: list[Any] = []
    for i in range(len(values)):
        out.extend(values[: i + 1])
    return out


class _Walker:
    def __init__(
        self,
        conn: Connection,
        table: str,
        action: Action,
        set_clause: str | None,
        where: str | None,
        params: Sequence[Any],
        target_seconds: float,
        server: ServerInfo | None,
    ) -> None:
        if target_seconds <= 0:
            raise UsageError(f"target time {target_seconds!r}: must be above zero")
        self.conn = conn
        self.server = server or detect(conn)
        self.notes = check_writable(self.server, table)
        self.info: TableInfo = describe(conn, table)
        primary = self.info.unique_keys.get("PRIMARY")
        if not primary:
            raise UsageError(f"{self.info.label}: no primary key to walk in chunks")
        if not self.info.transactional:
            self.notes.append(
                f"{self.info.label} uses {self.info.engine}, which has no transactions:"
                " a chunk that fails part-way stays half-applied"
            )
        self.action = action
        self.key = primary
        self.columns = [quote(c) for c in primary]
        self.params = list(params)
        self.where = where.strip() if where and where.strip() else None
        self.target = target_seconds
        order = ", ".join(self.columns)
        condition = f"({self.where})" if self.where else "TRUE"
        head = (
            f"DELETE FROM {self.info.quoted}"
            if action == "delete"
            else f"UPDATE {self.info.quoted} SET {set_clause}"
        )
        self.statement = f"{head} WHERE {condition}"
        table = self.info.quoted
        #: per "is there a last key": the chunk's statement, its upper-key query, its count
        self._texts: dict[bool, tuple[str, str, str]] = {}
        for after in (False, True):
            keys = self._range(after)
            self._texts[after] = (
                f"{self.statement} AND {keys}",
                f"SELECT {order} FROM {table} WHERE {keys} ORDER BY {order} LIMIT 1 OFFSET %s",
                f"SELECT COUNT(*) FROM {table} WHERE {keys}",
            )

    def _range(self, after: bool) -> str:
        """``key <= upper``, with ``key > last`` in front once there is a last key."""
        width = len(self.columns)
        upto = _compare(self.columns, "<=", width)
        return f"{_compare(self.columns, '>', width)} AND {upto}" if after else upto

    def _bounds(self, last: Key | None, upper: Key) -> list[Any]:
        return [*(_compare_params(last) if last is not None else []), *_compare_params(upper)]

    # --- the walk ---------------------------------------------------------------------
    def run(
        self,
        throttle: Throttler | None,
        store: StateStore | None,
        progress: Callable[[int, int | None], None] | None,
    ) -> ChunkResult:
        started = time.monotonic()
        result = ChunkResult(
            self.info.label, self.action, self.key, self.target, notes=list(self.notes)
        )
        journal = ChunkJournal(store) if store is not None else None
        identity = walk_id(self.server.identity, self.info.label, self.statement, self.params)
        lock = f"govern.chunk.{identity[:24]}"
        self._lock(lock)
        try:
            walk = self._open(identity, journal, result)
            estimate = self._estimate()
            try:
                self._walk(walk, result, throttle, journal, progress, estimate)
            except ThrottleStop as stop:
                result.stopped = stop.message
                stop.result = result
                if journal is not None:
                    journal.finish(walk, STOPPED)
                raise
            result.complete = True
            if journal is not None:
                journal.finish(walk, DONE)
        finally:
            result.elapsed = time.monotonic() - started
            if throttle is not None:
                result.held_seconds = throttle.held_seconds
                result.throttle = throttle.summary()
            with contextlib.suppress(pymysql.err.Error):
                query_one(self.conn, "SELECT RELEASE_LOCK(%s)", (lock,))
        return result

    def _lock(self, name: str) -> None:
        """One run of a change at a time, even from two hosts (a user-level lock)."""
        row = query_one(self.conn, "SELECT GET_LOCK(%s, 0)", (name,))
        if not row or row[0] != 1:
            holder = query_one(self.conn, "SELECT IS_USED_LOCK(%s)", (name,))
            raise ServerError(
                f"{self.info.label}: this change is already running (lock {name} held by"
                f" connection {holder[0] if holder else '?'})"
            )

    def _open(self, identity: str, journal: ChunkJournal | None, result: ChunkResult) -> Walk:
        walk = journal.unfinished(identity) if journal is not None else None
        if walk is not None and journal is not None:
            journal.resume(walk)
            result.resumed = True
            result.rows, result.chunks, result.scanned = walk.rows, walk.chunks, walk.scanned
            result.rows_before = walk.rows
            after = "the start" if walk.last_key is None else f"key {_show(walk.last_key)}"
            result.notes.append(
                f"resuming an unfinished run of this change after {after}"
                f" ({walk.chunks:,} chunks, {walk.rows:,} rows done)"
            )
            if walk.in_flight is not None:
                result.notes.append(
                    f"the chunk up to key {_show(walk.in_flight)} was being written when that run"
                    " stopped: it runs again"
                )
            return walk
        descending = ", ".join(f"{c} DESC" for c in self.columns)
        end = query_one(
            self.conn,
            f"SELECT {', '.join(self.columns)} FROM {self.info.quoted}"
            f" ORDER BY {descending} LIMIT 1",
        )
        walk = Walk(identity, end_key=tuple(end) if end is not None else None)
        if journal is not None:
            journal.begin(walk, self.server.identity, self.info.label, self.statement, self.key)
        return walk

    def _estimate(self) -> int | None:
        row = query_one(
            self.conn,
            "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s"
            " AND TABLE_NAME = %s",
            (self.info.schema, self.info.name),
        )
        return int(row[0]) if row and row[0] is not None else None

    def _walk(
        self,
        walk: Walk,
        result: ChunkResult,
        throttle: Throttler | None,
        journal: ChunkJournal | None,
        progress: Callable[[int, int | None], None] | None,
        estimate: int | None,
    ) -> None:
        if walk.end_key is None:
            return  # an empty table
        width = FIRST_CHUNK_ROWS
        weighted_rows = weighted_time = 0.0
        last = False
        while not last:
            if throttle is not None:
                throttle.pause()
            began = time.monotonic()
            upper, walked, last = self._upper(walk, width)
            took = time.monotonic() - began  # the server's work only: the journal is local
            if journal is not None:
                journal.in_flight(walk, upper)
            began = time.monotonic()
            affected = self._apply(walk, upper, result)
            took += time.monotonic() - began
            walk.last_key = upper
            walk.chunks += 1
            walk.rows += affected
            walk.scanned += walked
            if journal is not None:
                journal.committed(walk)
            result.rows, result.chunks, result.scanned = walk.rows, walk.chunks, walk.scanned
            result.seconds += took
            result.chunk_times.append(took)
            weighted_rows = weighted_rows * RATE_WEIGHT + walked
            weighted_time = weighted_time * RATE_WEIGHT + max(took, 1e-6)
            width = max(1, min(MAX_CHUNK_ROWS, int(weighted_rows / weighted_time * self.target)))
            result.chunk_rows = width
            if progress is not None:
                progress(walk.scanned, estimate)

    def _upper(self, walk: Walk, width: int) -> tuple[Key, int, bool]:
        """The chunk's last key (``width`` keys on), how many keys the chunk holds, and
        whether it is the last chunk (it reaches the end key). Keys are compared by the
        server only: a collation may order strings unlike Python."""
        end = walk.end_key
        assert end is not None
        bounds = self._bounds(walk.last_key, end)
        _, upper_text, count_text = self._texts[walk.last_key is not None]
        row = query_one(self.conn, upper_text, (*bounds, width - 1))
        if row is not None:
            return tuple(row), width, tuple(row) == end
        counted = query_one(self.conn, count_text, bounds)
        return end, int(counted[0]) if counted else 0, True

    def _apply(self, walk: Walk, upper: Key, result: ChunkResult) -> int:
        """One chunk in its own transaction, retried on deadlock or lock wait timeout."""
        bounds = self._bounds(walk.last_key, upper)
        text = self._texts[walk.last_key is not None][0]
        for attempt in range(4):
            try:
                self.conn.begin()
                with self.conn.cursor() as cur:
                    affected = cur.execute(text, (*self.params, *bounds))
                self.conn.commit()
                return int(affected)
            except pymysql.err.MySQLError as exc:
                with contextlib.suppress(pymysql.err.Error):
                    self.conn.rollback()
                errno = exc.args[0] if exc.args else None
                if errno in RETRYABLE_ERRORS and attempt < 3:
                    result.retries += 1
                    time.sleep(0.05 * 2**attempt)
                    continue
                after = "the start" if walk.last_key is None else f"key {_show(walk.last_key)}"
                raise ChunkError(
                    f"{self.info.label}: chunk {walk.chunks + 1} (after {after}, up to key"
                    f" {_show(upper)}) failed: {error_text(exc)}; earlier chunks stay committed,"
                    " and a second run goes on from this chunk",
                    cause=exc,
                    result=result,
                ) from exc
        raise AssertionError("unreachable")


def _show(key: Key) -> str:
    return ", ".join(repr(v) for v in key) if len(key) > 1 else repr(key[0])
