"""The collector's connections: tagged, out of the slow log, read-only, time-limited.

Every statement govern collect sends starts with ``/* govern:collect */`` so a DBA
sees in the processlist who asks, and its sessions opt out of the slow log, so reading
``mysql.slow_log`` never logs the read itself: both are govern's own connections'
(``connect(..., command="collect")``). They are also read-only: collect never writes to a
server it reads.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pymysql

from govern.connection import Connection, ConnectionSettings, connect, error_text
from govern.errors import ServerError


def open_session(
    settings: ConnectionSettings, *, statement_seconds: float | None = None
) -> Connection:
    """A connection whose statements are never logged as slow, cannot write, and (with
    ``statement_seconds``) are stopped by the server after that long."""
    conn = connect(settings, command="collect")  # tagged, and out of the slow log
    try:
        if getattr(conn, "opt_out", None) is None:
            raise ServerError("cannot keep govern collect's own session out of the slow log")
        run(conn, "SET SESSION TRANSACTION READ ONLY")
        if statement_seconds:
            limit_statements(conn, statement_seconds)
    except BaseException:
        conn.close()
        raise
    return conn


def limit_statements(conn: Connection, seconds: float) -> None:
    """``max_statement_time`` (MariaDB, seconds) or ``max_execution_time`` (MySQL, ms;
    SELECT only)."""
    try:
        run(conn, f"SET SESSION max_statement_time = {seconds:g}")
    except pymysql.err.MySQLError:
        run(conn, f"SET SESSION max_execution_time = {max(1, round(seconds * 1000))}")


def run(conn: Connection, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
    """One statement (the connection tags it); its rows (if any)."""
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return list(cur.fetchall()) if cur.description else []


def server_error(exc: BaseException, what: str) -> ServerError:
    return ServerError(f"{what}: {error_text(exc)}")


#: Client errors of a connection the server dropped (a restart, wait_timeout, KILL).
LOST = frozenset({2006, 2013, 2055})


class Session:
    """One session on a server, opened when first needed and opened again once when the
    server dropped it (restarted between two polls, or closed an idle connection)."""

    def __init__(
        self, settings: ConnectionSettings, *, statement_seconds: float | None = None
    ) -> None:
        self.settings = settings
        self.statement_seconds = statement_seconds
        self._conn: Connection | None = None

    def connection(self) -> Connection:
        if self._conn is None:
            self._conn = open_session(self.settings, statement_seconds=self.statement_seconds)
        return self._conn

    def run(self, sql: str, args: Any = None, *, dicts: bool = False) -> list[Any]:
        """One tagged statement, its rows (as dicts of upper-case names with ``dicts``)."""
        for attempt in (1, 2):
            try:
                with self.connection().cursor(
                    pymysql.cursors.DictCursor if dicts else pymysql.cursors.Cursor
                ) as cur:
                    cur.execute(sql, args)
                    rows: list[Any] = list(cur.fetchall()) if cur.description else []
            except pymysql.err.OperationalError as exc:
                if attempt == 2 or not exc.args or exc.args[0] not in LOST:
                    raise
                self.close()
                continue
            if dicts:
                return [{str(k).upper(): v for k, v in row.items()} for row in rows]
            return rows
        raise AssertionError("unreachable")

    def select_db(self, db: str) -> None:
        self.connection().select_db(db)

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(pymysql.err.Error):
                self._conn.close()
            self._conn = None
