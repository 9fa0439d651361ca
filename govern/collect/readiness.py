"""``govern doctor``'s view of govern collect: can each source be read from here?

Read-only like the rest of doctor: SELECTs with ``LIMIT 0`` and variable reads.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pymysql

from govern.connection import Connection, error_text, query_all
from govern.privileges import FeatureCheck, grant_statement

if TYPE_CHECKING:
    from govern.server import ServerInfo


def _try(conn: Connection, sql: str) -> str | None:
    """None when ``sql`` runs; the server's error when it does not."""
    try:
        query_all(conn, sql)
    except pymysql.err.MySQLError as exc:
        return error_text(exc)
    return None


def collect_features(
    conn: Connection,
    server: ServerInfo,
    user: str,
    host: str,
    *,
    local: bool,
) -> list[FeatureCheck]:

    output = server.log_output.upper()
    file = FeatureCheck("collect.file", "govern collect LOG: the slow-log file, followed")
    path = server.slow_log_file
    if "FILE" not in output:
        file.need(
            f"log_output={server.log_output} writes no file", "SET GLOBAL log_output = 'FILE';"
        )
    if not path:
        file.need("the server reports no slow-log file")
    elif not local:
        file.need(f"{path} is on the server's host: run govern collect there")
    elif os.path.isabs(path) and os.path.exists(path) and not os.access(path, os.R_OK):
        file.need(f"{path} is not readable by this user", f"chmod o+r {path}  # or run as mysql")
    elif (
        os.path.isabs(path)
        and os.path.isdir(os.path.dirname(path))
        and not os.access(os.path.dirname(path), os.R_OK | os.X_OK)
    ):
        file.need(
            f"{os.path.dirname(path)} cannot be listed: rotated files would not be found",
            f"chmod o+rx {os.path.dirname(path)}",
        )
    file.notes.append("rotation by rename, copytruncate and compressed rotated files are followed")

    table = FeatureCheck("collect.table", "govern collect --table: mysql.slow_log")
    if "TABLE" not in output:
        table.need(
            f"log_output={server.log_output}: nothing is written to mysql.slow_log",
            "SET GLOBAL log_output = 'FILE,TABLE';",
        )
    problem = _try(conn, "SELECT 1 FROM mysql.slow_log LIMIT 0")
    if problem:
        table.need(
            f"reading mysql.slow_log: {problem}",
            grant_statement("SELECT", user, host, "mysql.slow_log"),
        )
    table.notes.append("every read scans the whole table (CSV, no index)")

    digests = FeatureCheck(
        "collect.performance_schema",
        "govern collect --performance-schema: statement digests",
    )
    ((enabled,),) = query_all(conn, "SELECT @@performance_schema")
    if str(enabled) not in ("1", "ON"):
        digests.need(
            "performance_schema is OFF (it is switched on only at server start)",
            "performance_schema = ON   # in the server's my.cnf, then restart",
        )
    else:
        problem = _try(
            conn, "SELECT 1 FROM performance_schema.events_statements_summary_by_digest LIMIT 0"
        )
        if problem:
            digests.need(
                f"reading events_statements_summary_by_digest: {problem}",
                grant_statement("SELECT", user, host, "performance_schema.*"),
            )
        rows = (
            query_all(
                conn,
                "SELECT ENABLED FROM performance_schema.setup_consumers"
                " WHERE NAME = 'statements_digest'",
            )
            if not problem
            else [("YES",)]
        )
        if rows and str(rows[0][0]).upper() != "YES":
            digests.need(
                "the statements_digest consumer is disabled",
                "UPDATE performance_schema.setup_consumers SET ENABLED = 'YES'"
                " WHERE NAME = 'statements_digest';",
            )
        histogram = query_all(
            conn,
            "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'performance_schema'"
            " AND TABLE_NAME = 'events_statements_histogram_by_digest'",
        )
        digests.notes.append(
            "percentiles from events_statements_histogram_by_digest"
            if histogram
            else "no histogram table on this server: counts and sums, no percentiles"
        )
    return [file, table, digests]
