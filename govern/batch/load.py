"""Load a CSV, TSV or JSON Lines file into a table through the batch writer.

Bad rows are skipped, counted and reported with their line numbers, never
dropped silently: rows the file itself gets wrong (quoting, field count, JSON,
UTF-8) and rows the server refuses (a value too long, NULL in a NOT NULL
column, a failed constraint). A batch the server refuses is retried row by row
to find the bad ones, so every good row still lands. More than ``max_bad`` bad
rows stops the load: the file is probably not what it seems.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pymysql

from govern.batch.sizing import DEFAULT_BATCH_SIZE
from govern.batch.sources import DEFAULT_MAX_LINE, BadRow, RowFile
from govern.batch.table import describe
from govern.batch.verify import read_back
from govern.batch.writer import (
    BatchError,
    BatchResult,
    BatchWriter,
    Row,
    Transaction,
    is_connection_lost,
    is_data_error,
)
from govern.connection import Connection, error_text, log_like_anyone
from govern.errors import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_SERVER,
    EXIT_USAGE,
    GovernError,
    UsageError,
)
from govern.throttle.throttler import Throttler

SCHEMA = "govern.load"
SCHEMA_VERSION = 1
#: Bad rows a report lists (all are counted).
BAD_ROW_SAMPLE = 100
DEFAULT_MAX_BAD = 100


@dataclasses.dataclass
class LoadReport:
    file: str
    format: str
    table: str
    key: tuple[str, ...]
    update: tuple[str, ...]
    columns: tuple[str, ...]
    transaction: str
    batch_size: int
    result: BatchResult = dataclasses.field(default_factory=BatchResult)
    rows: int = 0
    bad_rows: int = 0
    bad_row_samples: list[BadRow] = dataclasses.field(default_factory=list)
    complete: bool = False
    error: str | None = None
    error_exit: int = EXIT_OK
    #: the throttler's summary (held_s, holds…) when the load was throttled
    throttle: dict[str, Any] | None = None

    @property
    def exit_code(self) -> int:
        """0 clean; 1 bad rows, server warnings or a stopped load; 3 the server failed us."""
        if self.error_exit:
            return self.error_exit
        if self.bad_rows or self.result.warnings or not self.complete:
            return EXIT_FINDINGS
        return EXIT_OK

    def skip(self, bad: BadRow) -> None:
        self.bad_rows += 1
        if len(self.bad_row_samples) < BAD_ROW_SAMPLE:
            self.bad_row_samples.append(bad)

    def samples(self) -> list[BadRow]:
        """The first bad rows found, in file order (server refusals are found later)."""
        return sorted(self.bad_row_samples, key=lambda bad: bad.line)

    def to_json(self) -> dict[str, Any]:
        r = self.result
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "file": self.file,
            "format": self.format,
            "table": self.table,
            "key": list(self.key),
            "update": list(self.update),
            "columns": list(self.columns),
            "transaction": self.transaction,
            "batch_size": self.batch_size,
            "rows": self.rows,
            "written": r.rows,
            "inserted": r.inserted,
            "updated": r.updated,
            "unchanged": r.unchanged,
            "bad_rows": self.bad_rows,
            "bad_row_samples": [{"line": b.line, "reason": b.reason} for b in self.samples()],
            "warnings": r.warnings,
            "warning_messages": list(r.warning_messages),
            "statements": r.batches,
            "retries": r.retries,
            "notes": list(r.notes),
            "seconds": round(r.seconds, 3),
            "rows_per_second": round(r.rows / r.seconds) if r.seconds > 0 else None,
            "complete": self.complete,
            "error": self.error,
            "exit_code": self.exit_code,
            "throttle": self.throttle,
        }


class TooManyBadRows(Exception):
    pass


def load_file(
    conn: Connection,
    path: str,
    table: str,
    *,
    key: Sequence[str],
    update: Sequence[str] | None = None,
    fmt: str | None = None,
    null: str | None = "\\N",
    batch_size: int = DEFAULT_BATCH_SIZE,
    transaction: Transaction = "batch",
    max_bad: int = DEFAULT_MAX_BAD,
    progress: Callable[[int, int | None], None] | None = None,
    log_rows: bool = True,
    max_line: int = DEFAULT_MAX_LINE,
    reconnect: Callable[[], Connection] | None = None,
    throttle: Throttler | None = None,
) -> LoadReport:
    """Upsert every good row of ``path`` into ``table``; see the module docstring.

    On a connection govern opened for itself (out of the slow log), the rows' statements
    are logged like any client's, since they are the caller's workload, unless
    ``log_rows`` is False (a job that opts its sessions out under ``govern run``).

    Mistakes found before the first write (file, format, header, table, key)
    raise UsageError. Once writing started, a failure ends the load and is in
    the report (``error``, ``exit_code``) with everything counted so far, as is
    a stop by the ``throttle`` (a critical check: exit 3; max_wait: exit 75).
    ``update=()`` keeps existing rows as they are (insert new keys only). When the
    connection dies under a batch, ``reconnect`` (which may wait for the server) gives a
    connection to read that batch back on, and the report says what the table holds.
    """
    if not key:
        raise UsageError("--key: name the key columns")
    with RowFile(path, fmt, null=null, max_line=max_line) as source:
        info = describe(conn, table)
        where = f"{source.name}:{source.header_line}"
        columns = info.resolve(source.columns, where)
        keys = info.resolve(key, "--key")
        info.require_unique_key(keys, "--key")
        for column in keys:
            if column not in columns:
                raise UsageError(f"{where}: no column {column!r} for --key")
        wanted = info.resolve(update, "--update") if update is not None else None
        writer = BatchWriter(
            conn,
            info,
            columns,
            on_duplicate="keep" if wanted == () else "update",
            key=keys,
            update=wanted,
            batch_size=batch_size,
            transaction=transaction,
            throttle=throttle,
        )
        report = LoadReport(
            file=source.name,
            format=source.format,
            table=info.label,
            key=keys,
            update=writer.update if wanted != () else (),
            columns=columns,
            transaction=transaction,
            batch_size=writer.max_rows,
        )
        if log_rows:
            log_like_anyone(conn)
        try:
            _run(writer, source, report, max_bad, progress, reconnect)
        finally:
            if throttle is not None:
                report.throttle = throttle.summary()
    return report


def _run(
    writer: BatchWriter,
    source: RowFile,
    report: LoadReport,
    max_bad: int,
    progress: Callable[[int, int | None], None] | None,
    reconnect: Callable[[], Connection] | None,
) -> None:
    lines: collections.deque[int] = collections.deque()

    def skip(bad: BadRow) -> None:
        report.skip(bad)
        if report.bad_rows > max_bad:
            raise TooManyBadRows

    def good_rows() -> Iterator[Row]:
        for record in source.records():
            report.rows += 1
            if isinstance(record, BadRow):
                skip(record)
                continue
            line, values = record
            lines.append(line)
            yield values

    def reject(row: Row, reason: str) -> None:
        skip(BadRow(lines.pop(), reason))  # the row batches() just pulled: the newest line

    try:
        with writer.transaction_scope() as result:
            report.result = result
            first_row = 0
            for index, batch in enumerate(writer.batches(good_rows(), reject=reject)):
                batch_lines = [lines.popleft() for _ in batch]
                writer.wait_turn(result)
                try:
                    writer.apply_batch(batch, index, first_row, result)
                except BatchError as exc:
                    if writer.transaction != "batch" or not is_data_error(exc.cause):
                        raise
                    _isolate(writer, batch, batch_lines, index, first_row, result, skip)
                first_row += len(batch)
                if progress is not None:
                    progress(source.bytes_read, source.total_bytes)
        report.complete = True
    except TooManyBadRows:
        report.complete = False
        report.error = f"stopped after {report.bad_rows} bad rows (more than --max-bad {max_bad})"
        report.error_exit = EXIT_FINDINGS
    except BatchError as exc:
        report.error = exc.message
        report.error_exit = exc.exit_code
        if is_connection_lost(exc.cause) and writer.transaction == "batch":
            report.error += "; " + _read_back(writer, exc.rows, reconnect)
    except GovernError as exc:
        report.error = exc.message
        report.error_exit = exc.exit_code
        if exc.exit_code == EXIT_USAGE and report.result.rows:
            # Exit 2 means "found before any write": this stopped a load half done.
            report.error += f"; the {report.result.rows:,} rows written before it stay"
            report.error_exit = EXIT_FINDINGS
    except pymysql.err.MySQLError as exc:
        report.error = f"server: {error_text(exc)}"
        report.error_exit = EXIT_SERVER


def _read_back(
    writer: BatchWriter, batch: list[Row], reconnect: Callable[[], Connection] | None
) -> str:
    """Once the server answers again, what the table holds of the batch whose outcome the
    lost connection hid (docs/design/batch-sizing.md, "A lost connection")."""
    if reconnect is None:
        return f"read its keys back (first key {writer.key_of(batch[0])}) to know"
    try:
        conn = reconnect()
    except GovernError as exc:
        return f"the server did not answer again ({exc.message}): read its keys back to know"
    try:
        return f"read back once the server answered again, {read_back(conn, writer, batch)}"
    except pymysql.err.MySQLError as exc:
        return f"reading it back failed ({error_text(exc)}): read its keys back to know"
    finally:
        conn.close()


def _isolate(
    writer: BatchWriter,
    batch: list[Row],
    lines: list[int],
    index: int,
    first_row: int,
    result: BatchResult,
    skip: Callable[[BadRow], None],
) -> None:
    """The server refused a batch: write its rows one by one, skipping the refused ones."""
    for offset, (row, line) in enumerate(zip(batch, lines, strict=True)):
        try:
            writer.apply_batch([row], index, first_row + offset, result)
        except BatchError as exc:
            if not is_data_error(exc.cause):
                raise
            skip(BadRow(line, f"refused by the server: {error_text(exc.cause)}"))
