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

#: The columns that tell rows apart (with rows_affected where MariaDB has it).
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
        limit = ROWS_PER_QUERY
        while progress.budget > 0:
            before = self.watermark
            rows = self._fetch(has_affected, limit)
            entries = self._new_entries(rows)
            for start in range(0, len(entries), BATCH):
                text = "".join(entries[start : start + BATCH]).encode("utf-8", "surrogateescape")
                progress.budget -= len(text)
                yield Text(text, self.label)
            if len(rows) < limit:
                return
            # All of a read within LATENESS of the watermark: read more rows at once.
            limit = limit * 2 if self.watermark == before and not entries else ROWS_PER_QUERY
        progress.caught_up = False

    def _fetch(self, has_affected: bool, limit: int) -> list[tuple[str, str, str]]:
        """(end time, hash of the row, the row as a log entry) of the rows that ended at or
        after the watermark minus LATENESS, oldest first. The server writes the entries:
        three strings a row cross the wire, not thirteen values to convert."""
        since = None
        if self.watermark is not None:
            since = _parse(self.watermark) - dt.timedelta(seconds=LATENESS)
        sql = (
            "SELECT CAST(ADDTIME(start_time, query_time) AS CHAR) AS ended,"
            f" MD5(CONCAT_WS(0x1f, {', '.join(_COLUMNS)}{_AFFECTED if has_affected else ''})),"
            f" {_ENTRY}{_ENTRY_AFFECTED if has_affected else ''}, '\n',"
            " TRIM(TRAILING ';' FROM TRIM(CONVERT(sql_text USING utf8mb4))), ';\n')"
            " FROM mysql.slow_log"
            + (" WHERE ADDTIME(start_time, query_time) >= %s" if since else "")
            + " ORDER BY ADDTIME(start_time, query_time), thread_id LIMIT %s"
        )
        args = (since, limit) if since else (limit,)
        return self.session.run(sql, args)

    def _new_entries(self, rows: list[tuple[str, str, str]]) -> list[str]:
        """The rows not read before, as log entries; the watermark moved past them."""
        seen = dict(self.recent)
        kept: dict[str, int] = {}
        entries = []
        for ended, digest, entry in rows:
            identity = f"{ended} {digest}"
            kept[identity] = kept.get(identity, 0) + 1
            if seen.get(identity, 0) > 0:
                seen[identity] -= 1
                continue
            entries.append(entry)
        if rows:
            newest = max(rows[-1][0], self.watermark or "")
            floor = _text(_parse(newest) - dt.timedelta(seconds=LATENESS))
            for identity, times in self.recent.items():
                kept[identity] = max(kept.get(identity, 0), times)
            self.recent = {identity: times for identity, times in kept.items() if identity >= floor}
            self.watermark = newest
        self.rows += len(entries)
        return entries


def _parse(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value)


def _text(value: dt.datetime) -> str:
    """As the server prints a TIMESTAMP(6) cast to text (the watermark's form)."""
    return value.isoformat(sep=" ", timespec="microseconds")


#: A row as the server's file log writes it (MariaDB's layout), up to its statement.
_ENTRY = (
    "CONCAT('# Time: ', DATE_FORMAT(start_time, '%%Y-%%m-%%dT%%H:%%i:%%s.%%f'),"
    " '\n# User@Host: ', user_host, '\n# Thread_id: ', thread_id,"
    " IF(db = '', '', CONCAT('  Schema: ', db)),"
    " '\n# Query_time: ', CAST(TIME_TO_SEC(query_time) AS DECIMAL(20, 6)),"
    " '  Lock_time: ', CAST(TIME_TO_SEC(lock_time) AS DECIMAL(20, 6)),"
    " '  Rows_sent: ', rows_sent, '  Rows_examined: ', rows_examined"
)
_ENTRY_AFFECTED = ", '\n# Rows_affected: ', rows_affected"
_AFFECTED = ", rows_affected"
