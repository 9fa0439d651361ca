"""``mysql.slow_log`` (``log_output=TABLE``) read over a connection, each row once.

The table has no key and no index (ENGINE=CSV): every read scans it whole. Rows
are appended when a statement ends, but ``start_time`` is when it began (measured:
a ``SLEEP(2)`` row carries a start_time two seconds before rows logged ahead of
it), so the watermark is the statement's end, ``start_time + query_time``, and the
rows that ended within ``LATENESS`` seconds before it are read again and told apart
by a hash of the whole row (the tie-breaker for equal times, identical rows
counted). Each row becomes the slow-log entry the server would have written to
its file, so the file and the table give the same classes (docs/design/collect.md,
"The slow_log table").
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterator
from typing import Any

import pymysql

from govern.collect.session import Session, server_error
from govern.collect.source import Progress, Text
from govern.connection import ConnectionSettings

#: Rows that ended this long before the newest one read are read again (late inserts).
LATENESS = 10.0
#: Rows read by one query (each query scans the whole table; the next one goes on).
ROWS_PER_QUERY = 250_000
#: Rows handed to the digest at a time.
BATCH = 50_000

_COLUMNS = (
    "start_time",
    "user_host",
    "query_time",
    "lock_time",
    "rows_sent",
    "rows_examined",
    "db",
    "thread_id",
    "sql_text",
)


class SlowLogTable:
    """The ``mysql.slow_log`` table of one server, as a collector source."""

    key = "table:mysql.slow_log"
    label = "mysql.slow_log"

    def __init__(self, settings: ConnectionSettings) -> None:
        self.settings = settings
        self.watermark: str | None = None  # end time of the newest row read
        self.recent: dict[str, int] = {}  # row hash -> times, rows ending near the watermark
        self.rows = 0  # rows read, ever
        self.session = Session(settings)

    def restore(self, saved: dict[str, Any] | None) -> None:
        saved = saved or {}
        self.watermark = saved.get("watermark")
        self.recent = dict(saved.get("recent", {}))
        self.rows = saved.get("rows", 0)

    def checkpoint(self) -> dict[str, Any]:
        return {"watermark": self.watermark, "recent": self.recent, "rows": self.rows}

    def close(self) -> None:
        self.session.close()

    def refresh(self, progress: Progress) -> bool:
        return False

    def read(self, progress: Progress) -> Iterator[Text]:
        try:
            yield from self._read(progress)
        except pymysql.err.MySQLError as exc:
            self.close()
            raise server_error(exc, "reading mysql.slow_log") from None

    def _read(self, progress: Progress) -> Iterator[Text]:
        ((now,),) = self.session.run("SELECT NOW(6)")
        progress.now = now
        has_affected = bool(
            self.session.run("SHOW COLUMNS FROM mysql.slow_log LIKE 'rows_affected'")
        )
        columns = ", ".join(
            [*_COLUMNS[:-1], "CONVERT(sql_text USING utf8mb4)"]
            + (["rows_affected"] if has_affected else [])
        )
        limit = ROWS_PER_QUERY
        while progress.budget > 0:
            before = self.watermark
            rows = self._fetch(columns, limit)
            entries = self._new_entries(rows, has_affected)
            for start in range(0, len(entries), BATCH):
                text = b"".join(entries[start : start + BATCH])
                progress.budget -= len(text)
                yield Text(text, self.label)
            if len(rows) < limit:
                return
            # All of a read within LATENESS of the watermark: read more rows at once.
            limit = limit * 2 if self.watermark == before and not entries else ROWS_PER_QUERY
        progress.caught_up = False

    def _fetch(self, columns: str, limit: int) -> list[tuple[Any, ...]]:
        """The rows that ended at or after the watermark minus LATENESS, oldest first."""
        since = None
        if self.watermark is not None:
            since = _parse(self.watermark) - dt.timedelta(seconds=LATENESS)
        sql = (
            f"SELECT {columns}, ADDTIME(start_time, query_time) AS ended FROM mysql.slow_log"
            + (" WHERE ADDTIME(start_time, query_time) >= %s" if since else "")
            + " ORDER BY ended, thread_id LIMIT %s"
        )
        args = (since, limit) if since else (limit,)
        return self.session.run(sql, args)

    def _new_entries(self, rows: list[tuple[Any, ...]], has_affected: bool) -> list[bytes]:
        """The rows not read before, as log entries; the watermark moved past them."""
        seen = dict(self.recent)
        kept: dict[str, int] = {}
        entries = []
        for row in rows:
            identity = _identity(row)
            kept[identity] = kept.get(identity, 0) + 1
            if seen.get(identity, 0) > 0:
                seen[identity] -= 1
                continue
            entries.append(_entry(row, has_affected))
        if rows:
            newest = max(_text(rows[-1][-1]), self.watermark or "")
            floor = _text(_parse(newest) - dt.timedelta(seconds=LATENESS)).replace(" ", "T")
            for identity, times in self.recent.items():
                kept[identity] = max(kept.get(identity, 0), times)
            self.recent = {identity: times for identity, times in kept.items() if identity >= floor}
            self.watermark = newest
        self.rows += len(entries)
        return entries


def _parse(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value)


def _text(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ", timespec="microseconds")
    return str(value)


def _seconds(value: Any) -> str:
    """A TIME(6) column (a timedelta) as the file log writes it: ``2.003970``."""
    if isinstance(value, dt.timedelta):
        return f"{value.total_seconds():.6f}"
    return f"{float(value):.6f}"


def _identity(row: tuple[Any, ...]) -> str:
    """``<end time> <hash of the row>``: rows with equal times are told apart by content."""
    digest = hashlib.blake2b(repr(row[:-1]).encode("utf-8", "surrogateescape"), digest_size=8)
    return f"{_text(row[-1]).replace(' ', 'T')} {digest.hexdigest()}"


def _entry(row: tuple[Any, ...], has_affected: bool) -> bytes:
    """One row as the server's file log writes it (MariaDB's layout)."""
    start, user_host, query_time, lock_time, sent, examined, db, thread, sql = row[:9]
    started = _text(start).replace(" ", "T")
    lines = [
        f"# Time: {started}",
        f"# User@Host: {user_host}",
        f"# Thread_id: {thread}" + (f"  Schema: {db}" if db else ""),
        f"# Query_time: {_seconds(query_time)}  Lock_time: {_seconds(lock_time)}"
        f"  Rows_sent: {sent}  Rows_examined: {examined}",
    ]
    if has_affected:
        lines.append(f"# Rows_affected: {row[9]}")
    statement = sql if isinstance(sql, str) else bytes(sql).decode("utf-8", "surrogateescape")
    text = "\n".join(lines) + "\n" + statement.rstrip().rstrip(";") + ";\n"
    return text.encode("utf-8", "surrogateescape")
