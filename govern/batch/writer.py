"""The batch writer: rows in, multi-row statements out, each batch applied whole or not at all.

One :class:`BatchWriter` per table and column list. It reads the table and the
server once, then cuts any stream of rows into batches (:mod:`govern.batch.sizing`),
sends each as one multi-row statement whose text is built once per row count
(:mod:`govern.batch.statements`), and splits the server's figures into exact
counts (:mod:`govern.batch.counts`).

Statements go through PyMySQL as client-side bound multi-row statements: the
benchmark (``benchmarks/batch_writer.py``) measured them within about 20% of
MariaDB Connector/Python's bulk execution and 4× faster than mysql-connector's
server-side prepared statements, with no C library to install.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Literal

import pymysql
from pymysql.constants import CLIENT

from govern.batch import sizing, statements
from govern.batch.counts import BatchCounts, split_affected
from govern.batch.table import TableInfo, describe
from govern.connection import Connection, error_text, query_all
from govern.errors import EXIT_FINDINGS, EXIT_SERVER, GovernError, ServerError, UsageError
from govern.server import ServerInfo, detect
from govern.throttle.throttler import Throttler, ThrottleStop

Row = Sequence[Any]
#: "batch": each batch commits on its own (default); "all": one transaction for
#: the whole call, rolled back on failure; "caller": never commit or roll back.
Transaction = Literal["batch", "all", "caller"]
#: What a row whose key already exists does: "update" the listed columns,
#: "keep" the existing row as it is, or "fail" (a plain INSERT).
OnDuplicate = Literal["update", "keep", "fail"]

#: Transient lock conflicts worth retrying a whole batch for: deadlock, lock wait timeout.
RETRYABLE_ERRORS = frozenset({1213, 1205})
#: How many warning texts a result keeps (all are counted).
WARNING_SAMPLE = 10


@dataclasses.dataclass
class BatchResult(BatchCounts):
    """Counts over every committed batch, and what the writer noticed on the way."""

    batches: int = 0
    retries: int = 0
    seconds: float = 0.0
    #: seconds the throttler held the writes (between batches)
    held_seconds: float = 0.0
    warning_messages: list[str] = dataclasses.field(default_factory=list)
    #: things the caller should know (a non-transactional engine, several unique keys…)
    notes: list[str] = dataclasses.field(default_factory=list)

    def forget_uncommitted(self) -> None:
        """After a rollback of the one transaction: nothing was written after all."""
        self.inserted = self.updated = self.unchanged = self.batches = 0

    def add_batch(self, counts: BatchCounts, messages: Sequence[str]) -> None:
        self.add(counts)
        self.batches += 1
        room = WARNING_SAMPLE - len(self.warning_messages)
        self.warning_messages.extend(messages[: max(room, 0)])


class BatchError(GovernError):
    """One batch failed. Carries where (batch index, first row, first key) and why."""

    def __init__(
        self,
        message: str,
        *,
        index: int,
        first_row: int,
        first_key: tuple[Any, ...],
        rows: list[Row],
        cause: pymysql.err.MySQLError,
        result: BatchResult,
    ) -> None:
        super().__init__(message, exit_code=EXIT_FINDINGS if is_data_error(cause) else EXIT_SERVER)
        self.index = index
        self.first_row = first_row
        self.first_key = first_key
        self.rows = rows
        self.cause = cause
        self.result = result

    @property
    def errno(self) -> int | None:
        args = getattr(self.cause, "args", ())
        return args[0] if args and isinstance(args[0], int) else None


class RowTooLarge(UsageError):
    """A single row does not fit in max_allowed_packet: no batching can send it."""


#: Client errors that mean the connection died under a statement: the server may or may
#: not have run it (gone away, lost during the query, lost reading the answer).
_CONNECTION_LOST = frozenset({2006, 2013, 2055})


def is_connection_lost(exc: BaseException) -> bool:
    """The connection died while a statement was out: its outcome is unknown to us."""
    if isinstance(exc, pymysql.err.InterfaceError):
        return True
    code = exc.args[0] if exc.args else None
    return isinstance(exc, pymysql.err.OperationalError) and code in _CONNECTION_LOST


def is_data_error(exc: BaseException) -> bool:
    """The server refused the data (bad value, constraint, duplicate), not the connection.

    SQLSTATE classes 22 (data exception) and 23 (integrity constraint), and
    01 (a warning that strict mode turned into an error, e.g. 1265).
    """
    state = str(getattr(exc, "sqlstate", "") or "")
    return state[:2] in ("22", "23", "01")


def check_writable(server: ServerInfo, where: str) -> list[str]:
    """Refuse replicas and read_only servers; return a note when replica status is unknown."""
    if server.is_replica:
        raise ServerError(f"refusing to write to {where}: the server is a replica")
    if server.read_only:
        raise ServerError(f"refusing to write to {where}: the server is read_only")
    if server.is_replica is None:
        return [
            "cannot tell whether the server is a replica (this account may not read replica"
            " status); it is not read_only, so writing anyway"
        ]
    return []


class BatchWriter:
    """Writes rows of fixed columns into one table in sized multi-row statements."""

    def __init__(
        self,
        conn: Connection,
        table: str | TableInfo,
        columns: Sequence[str],
        *,
        on_duplicate: OnDuplicate,
        key: Sequence[str] = (),
        update: Sequence[str] | None = None,
        batch_size: int = sizing.DEFAULT_BATCH_SIZE,
        transaction: Transaction = "batch",
        pad_last: bool = False,
        retries: int = 3,
        server: ServerInfo | None = None,
        throttle: Throttler | None = None,
    ) -> None:
        if transaction not in ("batch", "all", "caller"):
            raise UsageError(f"transaction {transaction!r}: use batch, all or caller")
        if throttle is not None and transaction == "all":
            raise UsageError(
                "throttling needs transaction=batch: one transaction reaches the replicas"
                " whole, at its commit, however long the writes wait between batches"
            )
        if batch_size < 1:
            raise UsageError(f"batch size {batch_size}: must be at least 1")
        self.conn = conn
        self.server = server or detect(conn)
        self.notes = check_writable(self.server, table if isinstance(table, str) else table.label)
        self.table = table if isinstance(table, TableInfo) else describe(conn, table)
        self.columns = self.table.resolve(columns, "columns")
        if not self.columns:
            raise UsageError("columns: no column to write")
        self.on_duplicate = on_duplicate
        self.key = self.table.resolve(key, "key") if key else ()
        self.update = self._update_columns(update)
        self.transaction = transaction
        self.throttle = throttle
        self.pad_last = pad_last and on_duplicate != "fail"
        self.retries = retries if transaction == "batch" else 0
        self.max_rows = sizing.rows_per_statement(batch_size, len(self.columns))
        self.packet_limit = sizing.packet_limit(conn, self.server)
        self.form = statements.update_form(self.server)
        self._prefix = statements.insert_prefix(self.table.quoted, self.columns)
        self._suffix = self._duplicate_clause()
        self._budget = (
            self.packet_limit - sizing.PACKET_HEADROOM - len(self._prefix) - len(self._suffix)
        )
        self._texts: dict[int, str] = {}
        self._found_rows = bool(getattr(conn, "client_flag", 0) & CLIENT.FOUND_ROWS)
        self._key_positions = [self.columns.index(c) for c in self.key]
        self._autocommit = True
        if not self.table.transactional:
            self.notes.append(
                f"{self.table.label} uses {self.table.engine}, which has no transactions:"
                " a batch that fails part-way stays half-applied"
            )
        if on_duplicate != "fail" and len(self.table.unique_keys) > 1:
            self.notes.append(
                f"{self.table.label} has {len(self.table.unique_keys)} unique keys: a row that"
                " collides on any of them counts as a duplicate"
            )

    def _update_columns(self, update: Sequence[str] | None) -> tuple[str, ...]:
        if self.on_duplicate == "update" and not self.key:
            raise UsageError("key: an upsert needs the key columns")
        if self.key:
            self.table.require_unique_key(self.key, "key")
            missing = [c for c in self.key if c not in self.columns]
            if missing:
                raise UsageError(f"key: column {missing[0]!r} is not among the columns written")
        if update is None:
            return tuple(c for c in self.columns if c not in self.key)
        resolved = self.table.resolve(update, "update")
        for column in resolved:
            if column in self.key:
                raise UsageError(f"update: {column!r} is a key column")
            if column not in self.columns:
                raise UsageError(f"update: {column!r} is not among the columns written")
        return resolved

    def _duplicate_clause(self) -> str:
        if self.on_duplicate == "fail":
            return ""
        update = self.update if self.on_duplicate == "update" else ()
        return statements.on_duplicate(
            self.form,
            update,
            noop_column=(self.key or self.columns)[0],
            alias=statements.row_alias_name(self.table.name),
        )

    # --- cutting rows into batches -------------------------------------------------------
    def batches(
        self, rows: Iterable[Row], *, reject: Callable[[Row, str], None] | None = None
    ) -> Iterator[list[Row]]:
        """Cut ``rows`` into batches: at most ``max_rows`` rows and well under the packet.

        A row too large for any statement raises RowTooLarge, or, given ``reject``,
        is handed to it (with the reason) and left out.
        """
        width = len(self.columns)
        batch: list[Row] = []
        size = 0
        for number, row in enumerate(rows, 1):
            if len(row) != width:
                raise UsageError(f"row {number}: {len(row)} values for {width} columns")
            need = sizing.row_bytes(row)
            if need > self._budget:
                reason = self.too_large(row)
                if reason and reject is None:
                    raise RowTooLarge(f"row {number}: {reason}")
                if reason and reject is not None:
                    reject(row, reason)
                    continue
            if batch and (len(batch) >= self.max_rows or size + need > self._budget):
                yield batch
                batch, size = [], 0
            batch.append(row)
            size += need
        if batch:
            yield batch

    def too_large(self, row: Row) -> str | None:
        """Why ``row`` cannot be sent in any statement, or None when it fits."""
        if sizing.row_bytes(row) <= self._budget:
            return None
        with self.conn.cursor() as cur:  # the bound said no: measure it exactly
            exact = len(cur.mogrify(self._text(1), list(row)).encode("utf-8", "surrogateescape"))
        if exact + sizing.PACKET_HEADROOM <= self.packet_limit:
            return None
        return (
            f"key {self.key_of(row)} needs {exact:,} bytes in a statement;"
            f" max_allowed_packet allows {self.packet_limit:,}: raise it on the server"
            " (it takes effect for new connections)"
        )

    def key_of(self, row: Row) -> tuple[Any, ...]:
        """The row's key values (its first column when the writer has no key)."""
        return tuple(row[i] for i in self._key_positions) if self.key else (row[0],)

    # --- sending batches --------------------------------------------------------------------
    def _text(self, rows: int) -> str:
        """The statement for ``rows`` rows, built once and reused for every batch that size."""
        text = self._texts.get(rows)
        if text is None:
            if len(self._texts) > 16:
                self._texts.clear()  # packet-cut batches of many sizes: keep the cache small
            text = statements.multi_row(self._prefix, len(self.columns), rows, self._suffix)
            self._texts[rows] = text
        return text

    def _padding(self, batch: list[Row]) -> int:
        """Copies of the last row to append (their size was already budgeted as headroom)."""
        if self.on_duplicate == "fail":
            return 0
        if self.pad_last and len(batch) < self.max_rows:
            room = self._budget - sum(sizing.row_bytes(r) for r in batch)
            copies = min(self.max_rows - len(batch), room // sizing.row_bytes(batch[-1]))
            if copies > 0:
                return copies
        # A one-row upsert is ambiguous under CLIENT_FOUND_ROWS (1 = inserted or unchanged).
        return 1 if self._found_rows and len(batch) == 1 else 0

    def write_batch(self, batch: list[Row]) -> tuple[BatchCounts, list[str]]:
        """Send one batch as one statement; return its counts and warning texts.

        Raises pymysql errors as they come; :meth:`write` wraps them in BatchError.
        """
        padding = self._padding(batch)
        rows = batch + [batch[-1]] * padding
        params = [value for row in rows for value in row]
        with self.conn.cursor() as cur:
            affected = cur.execute(self._text(len(rows)), params)
            result = getattr(cur, "_result", None)
            info = getattr(result, "message", None)
            warnings = int(getattr(result, "warning_count", 0) or 0)
        if self.on_duplicate == "fail":
            counts = BatchCounts(inserted=affected, warnings=warnings)
        else:
            counts = split_affected(
                len(rows),
                affected,
                info,
                found_rows=self._found_rows,
                warnings=warnings,
                padding=padding,
            )
        messages = self._warning_texts() if warnings else []
        return counts, messages

    def _warning_texts(self) -> list[str]:
        rows = query_all(self.conn, f"SHOW WARNINGS LIMIT {WARNING_SAMPLE}")
        return [f"{level} {code}: {message}" for level, code, message in rows]

    @contextlib.contextmanager
    def transaction_scope(self) -> Iterator[BatchResult]:
        """A fresh result; with ``transaction="all"`` also the one transaction around the batches.

        Commits when the block ends, rolls back when it raises; times the work.
        """
        started = time.monotonic()
        result = BatchResult(notes=list(self.notes))
        self._autocommit = bool(self.conn.get_autocommit())
        if self.transaction == "all":
            self.conn.begin()
        try:
            yield result
            if self.transaction == "all":
                self.conn.commit()
        except BaseException:
            if self.transaction == "all":
                with contextlib.suppress(pymysql.err.Error):
                    self.conn.rollback()
                result.forget_uncommitted()
            raise
        finally:
            result.seconds = time.monotonic() - started

    def write(
        self, rows: Iterable[Row], *, progress: Callable[[int], None] | None = None
    ) -> BatchResult:
        """Write every row; raise BatchError for the first batch that fails."""
        with self.transaction_scope() as result:
            first_row = 0
            for index, batch in enumerate(self.batches(rows)):
                self.wait_turn(result)
                self.apply_batch(batch, index, first_row, result)
                first_row += len(batch)
                if progress is not None:
                    progress(len(batch))
        return result

    def wait_turn(self, result: BatchResult) -> None:
        """Before a batch: let the throttler hold (it polls its checks at its own interval).

        A ThrottleStop (critical check, max_wait) leaves every earlier batch committed;
        it carries ``result`` so the caller knows what was written.
        """
        if self.throttle is None:
            return
        try:
            result.held_seconds += self.throttle.pause()
        except ThrottleStop as stop:
            result.held_seconds = self.throttle.held_seconds
            stop.result = result
            raise

    def apply_batch(
        self, batch: list[Row], index: int, first_row: int, result: BatchResult
    ) -> None:
        """One batch in its own transaction, retried on deadlock or lock wait timeout.

        Adds its counts to ``result``; raises BatchError (nothing of the batch applied).
        Call it inside :meth:`transaction_scope`.
        """
        own_commit = self.transaction == "batch" and not self._autocommit
        for attempt in range(self.retries + 1):
            try:
                counts, messages = self.write_batch(batch)
                if own_commit:
                    self.conn.commit()
                result.add_batch(counts, messages)
                return
            except pymysql.err.MySQLError as exc:
                if own_commit:
                    with contextlib.suppress(pymysql.err.Error):
                        self.conn.rollback()
                errno = exc.args[0] if exc.args else None
                if errno in RETRYABLE_ERRORS and attempt < self.retries:
                    result.retries += 1
                    time.sleep(0.05 * 2**attempt)
                    continue
                raise self._failure(exc, batch, index, first_row, result) from exc

    def _failure(
        self,
        exc: pymysql.err.MySQLError,
        batch: list[Row],
        index: int,
        first_row: int,
        result: BatchResult,
    ) -> BatchError:
        key = self.key_of(batch[0])
        key_text = ", ".join(
            f"{c}={v!r}" for c, v in zip(self.key or self.columns[:1], key, strict=True)
        )
        if self.transaction == "all":
            after = "the whole transaction was rolled back"
        elif is_connection_lost(exc):
            after = "the connection was lost after it was sent: whether it was applied is unknown"
        elif not self.table.transactional:
            after = f"part of it may be applied ({self.table.engine} has no transactions)"
        else:
            after = "nothing of it was applied"
        message = (
            f"{self.table.label}: batch {index} (rows {first_row + 1}-{first_row + len(batch)},"
            f" first key {key_text}) failed: {error_text(exc)}; {after}"
        )
        return BatchError(
            message,
            index=index,
            first_row=first_row,
            first_key=key,
            rows=batch,
            cause=exc,
            result=result,
        )
