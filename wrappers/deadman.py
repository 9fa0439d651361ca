"""The server-side dead-man switch: a one-shot EVENT that restores if the run stops renewing it.

It covers what no process on the client host can: the host itself dying or losing
the network. The body is a compare-and-swap that also checks the claims
(:mod:`govern.wrappers.claims`), so it restores only when no run holds the variable any more:

    IF UNIX_TIMESTAMP() < <expiry> AND ROUND(@@GLOBAL.v * s) = <govern's value>
       AND COALESCE(IS_USED_LOCK('govern:slow:0'), …) IS NULL
    THEN SET GLOBAL v = <original>; END IF

Measured on MariaDB 10.11: when an ``ON COMPLETION NOT PRESERVE`` event fires, the
server drops it *and writes ``DROP EVENT`` to the binary log* even though it was created
with ``sql_log_bin = 0``; a replica that never had the event stops on that statement
(error 1539, even with ``slave_ddl_exec_mode=IDEMPOTENT``).
So govern's events are ``ON COMPLETION PRESERVE``: a fired event stays, disabled, until
govern drops it (with ``sql_log_bin = 0``) at the run's end, in ``govern recover`` or at
the next run (:func:`sweep`). The expiry keeps an event that fires hours late (the
scheduler was switched off meanwhile) from touching a setting it no longer knows about.
"""

from __future__ import annotations

import time

import pymysql

from govern.connection import Connection, error_text, query_all, query_one
from govern.privileges import Grants
from govern.server import ServerInfo
from govern.wrappers.claims import SLOTS, slot_lock
from govern.wrappers.variables import Variable

PREFIX = "govern_deadman_"
#: Seconds past the lease before the event fires: by then a dead holder's connection has
#: been closed by its ``wait_timeout`` (= the lease), so its claim no longer blocks the restore.
SLACK_S = 3
#: An event firing this long after its deadline does nothing.
EXPIRY_S = 3600
COMMENT = "govern run dead-man switch: restores the setting if the run dies (govern status)"


def unavailable_reason(info: ServerInfo, grants: Grants) -> str | None:
    """Why this account cannot rely on an event here, or None when it can."""
    if info.event_scheduler != "ON":
        return f"event_scheduler is {info.event_scheduler}"
    if info.is_replica or info.read_only:
        return "the server is a replica or read_only (govern never writes to it)"
    if not grants.on_any_schema("EVENT"):
        return "the account lacks EVENT"
    if not grants.has_any(info.set_global_privileges):
        return f"the event's definer would lack {' or '.join(info.set_global_privileges)}"
    return None


def unbinlogged(conn: Connection) -> str | None:
    """``SET SESSION sql_log_bin = 0`` on ``conn``; the reason when the account may not."""
    try:
        query_one(conn, "SET SESSION sql_log_bin = 0")
    except pymysql.err.MySQLError as exc:
        return f"cannot SET sql_log_bin = 0 ({error_text(exc)})"
    return None


def qualified_name(schema: str, run_id: str) -> str:
    return f"`{schema.replace('`', '``')}`.`{PREFIX}{run_id}`"


def body(variable: Variable, original: int, value: int, expires: int) -> str:
    nobody = ", ".join(f"IS_USED_LOCK('{slot_lock(variable, n)}')" for n in range(SLOTS))
    return (
        f"IF UNIX_TIMESTAMP() < {expires} AND {variable.current_sql()} = {value}"
        f" AND COALESCE({nobody}) IS NULL THEN {variable.set_sql(original)}; END IF"
    )


def _schedule(variable: Variable, original: int, value: int, lease: float) -> str:
    seconds = int(lease + SLACK_S + 0.999)
    expires = int(time.time()) + seconds + EXPIRY_S
    return (
        f"ON SCHEDULE AT CURRENT_TIMESTAMP + INTERVAL {seconds} SECOND ON COMPLETION PRESERVE"
        f" ENABLE COMMENT '{COMMENT}' DO {body(variable, original, value, expires)}"
    )


def create(
    conn: Connection, name: str, variable: Variable, original: int, value: int, lease: float
) -> None:
    """Create (or replace) the run's event; ``conn`` must be :func:`unbinlogged`."""
    query_one(conn, f"DROP EVENT IF EXISTS {name}")
    query_one(conn, f"CREATE EVENT {name} {_schedule(variable, original, value, lease)}")


def renew(
    conn: Connection, name: str, variable: Variable, original: int, value: int, lease: float
) -> None:
    """Push the deadline one lease further (also re-enables an event that fired)."""
    query_one(conn, f"ALTER EVENT {name} {_schedule(variable, original, value, lease)}")


def drop(conn: Connection, name: str) -> None:
    query_one(conn, f"DROP EVENT IF EXISTS {name}")


def sweep(conn: Connection) -> int:
    """Drop govern events that fired or expired (any run's); ``conn`` must be unbinlogged."""
    rows = query_all(
        conn,
        "SELECT EVENT_SCHEMA, EVENT_NAME FROM information_schema.EVENTS"
        " WHERE EVENT_NAME LIKE %s AND (STATUS = 'DISABLED'"
        " OR EXECUTE_AT < NOW() - INTERVAL %s SECOND)",
        (PREFIX.replace("_", "\\_") + "%", EXPIRY_S),
    )
    for schema, event in rows:
        drop(conn, qualified_name(str(schema), str(event)[len(PREFIX) :]))
    return len(rows)
