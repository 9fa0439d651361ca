"""Which ``serve`` of a catalog is active when two hosts serve it: a user lock on the primary.

The active serve holds ``GET_LOCK('govern.serve.NAME', 0)`` in a connection of its own, kept
idle but for a check every lease. The server frees the lock the moment that connection ends:
the process killed, its host gone (once the server sees the connection drop), or a
``KILL CONNECTION``. The standby asks for it every lease and becomes active when it gets it.
The connection never runs a long statement, so a holder's death is seen at once (a connection
busy with a statement keeps its locks until the statement ends: docs/design/scheduling.md).
"""

from __future__ import annotations

import contextlib
import hashlib

import pymysql

from govern.connection import Connection, ConnectionSettings, connect, error_text, query_one
from govern.errors import ServerError


def serve_lock_name(schedule: str) -> str:
    """``govern.serve.NAME``, hashed when long (not the run lock ``govern.schedule.NAME``,
    which each night takes on its workers: the primary may be one of them)."""
    name = f"govern.serve.{schedule}"
    if len(name) <= 64:
        return name
    return f"govern.serve.{hashlib.sha1(schedule.encode()).hexdigest()[:24]}"


class ActiveLease:
    def __init__(self, settings: ConnectionSettings, schedule: str) -> None:
        self.settings = settings
        self.name = serve_lock_name(schedule)
        self._conn: Connection | None = None
        #: why the last attempt or check failed (for the standby's messages)
        self.problem: str | None = None

    def take(self) -> bool:
        """Try for the lock now (never waits); False while another serve holds it."""
        try:
            if self._conn is None:
                self._conn = connect(self.settings, command="schedule")
            row = query_one(self._conn, "SELECT GET_LOCK(%s, 0)", (self.name,))
        except ServerError as exc:
            self.problem = exc.message
            self.close()
            return False
        except pymysql.err.MySQLError as exc:
            self.problem = error_text(exc)
            self.close()
            return False
        self.problem = None
        return bool(row and row[0] == 1)

    def holder(self) -> int | None:
        """The connection id holding the lock (another serve's), if known."""
        if self._conn is None:
            return None
        try:
            row = query_one(self._conn, "SELECT IS_USED_LOCK(%s)", (self.name,))
        except pymysql.err.MySQLError:
            return None
        return None if not row or row[0] is None else int(row[0])

    def held(self) -> bool:
        """Do we still hold it? Asked every lease by the active serve (it also keeps the
        connection from reaching wait_timeout)."""
        if self._conn is None:
            return False
        try:
            row = query_one(self._conn, "SELECT IS_USED_LOCK(%s) = CONNECTION_ID()", (self.name,))
        except pymysql.err.MySQLError as exc:
            self.problem = error_text(exc)
            return False
        return bool(row and row[0] == 1)

    def close(self) -> None:
        """Closing the connection frees the lock."""
        if self._conn is not None:
            with contextlib.suppress(pymysql.err.Error):
                self._conn.close()
            self._conn = None
