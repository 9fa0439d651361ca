"""The collector's connections: tagged, out of the slow log, read-only, time-limited.

Every statement govern collect sends starts with ``/* govern:collect */`` so a DBA
sees in the processlist who asks. Its sessions opt out of the slow log (MariaDB
lets any account switch its own session off; MySQL honours a session
``long_query_time``), so reading ``mysql.slow_log`` never logs the read itself,
and they are read-only: collect never writes to a server it reads.
"""

from __future__ import annotations

from typing import Any

import pymysql

from govern.connection import Connection, ConnectionSettings, connect, error_text
from govern.errors import ServerError

TAG = "/* govern:collect */ "
#: The largest long_query_time a server accepts (one year): the opt-out of last resort.
LONG_QUERY_TIME_MAX = 31_536_000


def open_session(
    settings: ConnectionSettings, *, statement_seconds: float | None = None
) -> Connection:
    """A connection whose statements are never logged as slow, cannot write, and (with
    ``statement_seconds``) are stopped by the server after that long."""
    conn = connect(settings)
    try:
        opt_out_of_slow_log(conn)
        run(conn, "SET SESSION TRANSACTION READ ONLY")
        if statement_seconds:
            limit_statements(conn, statement_seconds)
    except BaseException:
        conn.close()
        raise
    return conn


def opt_out_of_slow_log(conn: Connection) -> None:
    for statement in (
        "SET SESSION log_slow_query = OFF",  # MariaDB 10.11+
        "SET SESSION slow_query_log = OFF",  # MariaDB before 10.11
        f"SET SESSION long_query_time = {LONG_QUERY_TIME_MAX}",  # MySQL
    ):
        try:
            run(conn, statement)
            return
        except pymysql.err.MySQLError:
            continue
    raise ServerError("cannot keep govern collect's own session out of the slow log")


def limit_statements(conn: Connection, seconds: float) -> None:
    """``max_statement_time`` (MariaDB, seconds) or ``max_execution_time`` (MySQL, ms;
    SELECT only)."""
    try:
        run(conn, f"SET SESSION max_statement_time = {seconds:g}")
    except pymysql.err.MySQLError:
        run(conn, f"SET SESSION max_execution_time = {max(1, round(seconds * 1000))}")


def run(conn: Connection, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
    """One tagged statement; its rows (if any)."""
    with conn.cursor() as cur:
        cur.execute(TAG + sql, args)
        return list(cur.fetchall()) if cur.description else []


def server_error(exc: BaseException, what: str) -> ServerError:
    return ServerError(f"{what}: {error_text(exc)}")
