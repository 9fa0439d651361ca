"""Connections opened while a setting was changed: they keep the changed value after restore.

Measured on MariaDB 10.11 (tests/test_run_facts.py): a session copies ``slow_query_log``
and ``long_query_time`` from the globals when it connects, so a connection opened
while the log was off stays unlogged after the global is restored, until it
reconnects. Connection ids only grow (until the server restarts), so "opened during
the window" is an id range: above the holder connection opened just before the
change, up to the highest id seen when the change was undone.
"""

from __future__ import annotations

import time
from typing import Any

from govern.connection import Connection, query_dicts

#: Server threads that are not client sessions.
_SYSTEM_COMMANDS = ("Daemon", "Binlog Dump", "Binlog Dump GTID", "Slave_IO", "Slave_SQL")
_SYSTEM_USERS = ("system user", "event_scheduler")


def window_connections(
    conn: Connection, first_id: int, last_id: int | None = None, exclude: set[int] | None = None
) -> list[dict[str, Any]]:
    """Live client connections with ``first_id < id <= last_id`` (all later ones if no last)."""
    rows = query_dicts(
        conn,
        "SELECT ID AS id, USER AS user, HOST AS host, DB AS db, COMMAND AS command,"
        " TIME AS seconds FROM information_schema.PROCESSLIST WHERE ID > %s ORDER BY ID",
        (first_id,),
    )
    skip = exclude or set()
    return [
        {**row, "id": int(row["id"]), "seconds": int(row["seconds"] or 0)}
        for row in rows
        if (last_id is None or int(row["id"]) <= last_id)
        and int(row["id"]) not in skip
        and row["command"] not in _SYSTEM_COMMANDS
        and row["user"] not in _SYSTEM_USERS
        and not str(row["command"]).startswith("Slave_")
    ]


def connections_made(conn: Connection) -> int:
    """The server's count of connection attempts since it started (``Connections``)."""
    rows = query_dicts(conn, "SHOW GLOBAL STATUS LIKE 'Connections'")
    return int(rows[0]["Value"])


def highest_id(conn: Connection) -> int:
    rows = query_dicts(conn, "SELECT MAX(ID) AS top FROM information_schema.PROCESSLIST")
    return int(rows[0]["top"] or 0)


def wait_until_idle(
    conn: Connection, first_id: int, exclude: set[int], timeout: float
) -> list[dict[str, Any]]:
    """Wait (bounded) until no connection of the window is running a statement.

    A statement is written to the slow log when it ends, by the rules in force then:
    restoring while the job's last statement still runs would judge it by the restored
    rules. Returns the connections still busy when the time ran out.
    """
    deadline = time.monotonic() + timeout
    delay = 0.02
    while True:
        busy = [
            c
            for c in window_connections(conn, first_id, exclude=exclude)
            if c["command"] != "Sleep"
        ]
        if not busy or time.monotonic() >= deadline:
            return busy
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 0.5)


def describe(connection: dict[str, Any]) -> str:
    db = f" ({connection['db']})" if connection.get("db") else ""
    return f"{connection['id']} {connection['user']}@{connection['host']}{db}"
