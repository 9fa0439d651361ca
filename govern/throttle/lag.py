"""Replica lag, measured on the replica: pt-heartbeat's table when it has one, else replica status.

pt-heartbeat writes the primary's clock into a row (``ts``, keyed by the
primary's ``server_id``) and the row replicates: now minus ``ts`` on a replica is
its lag, accurate to the update interval even when Seconds_Behind_Master lies
(it reads 0 on an idle relay log and NULL while the SQL thread is stopped).
Like ``pt-heartbeat --check``, ``ts`` is read as local time unless the heartbeat
writes UTC (``pt-heartbeat --utc``). Reads only.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from govern.connection import Connection, query_all, query_one
from govern.server import ServerInfo, read_replica_status

DEFAULT_HEARTBEAT_TABLE = "percona.heartbeat"


@dataclasses.dataclass(frozen=True)
class Lag:
    seconds: float | None  # None: unknown (replication stopped, no permission)
    source: str  # "pt-heartbeat schema.table" or "replica status"
    detail: str = ""  # why it is unknown

    def describe(self) -> str:
        """``12.0 s (pt-heartbeat percona.heartbeat)`` or ``unknown: replication is stopped``."""
        if self.seconds is None:
            return f"unknown: {self.detail or 'no figure'} ({self.source})"
        return f"{self.seconds:.1f} s ({self.source})"


def heartbeat_columns(conn: Connection, table: str) -> set[str]:
    schema, name = table.split(".", 1)
    rows = query_all(
        conn,
        "SELECT LOWER(COLUMN_NAME) FROM information_schema.COLUMNS"
        " WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
        (schema, name),
    )
    return {str(r[0]) for r in rows}


def measure_lag(
    conn: Connection,
    info: ServerInfo,
    heartbeat_table: str = DEFAULT_HEARTBEAT_TABLE,
    heartbeat_utc: bool = False,
    now: datetime | None = None,
) -> Lag:
    """This replica's lag now, from the heartbeat table if present, else replica status."""
    replicas, error = read_replica_status(conn, info.replica_status_statement)
    columns = heartbeat_columns(conn, heartbeat_table)
    if "ts" in columns:
        source_id = next((r.source_server_id for r in replicas or () if r.source_server_id), None)
        schema, name = heartbeat_table.split(".", 1)
        table = f"`{schema}`.`{name}`"
        if "server_id" in columns and source_id is not None:
            row = query_one(conn, f"SELECT ts FROM {table} WHERE server_id = %s", (source_id,))
        else:
            row = query_one(conn, f"SELECT MAX(ts) FROM {table}")
        source = f"pt-heartbeat {heartbeat_table}"
        if row is None or row[0] is None:
            return Lag(None, source, "the heartbeat table has no row for the source")
        return Lag(heartbeat_age(row[0], heartbeat_utc, now), source)
    if replicas is None:
        return Lag(None, "replica status", error or "replica status is not readable")
    if not replicas:
        return Lag(None, "replica status", "the server is not a replica")
    stopped = [r for r in replicas if r.lag_seconds is None]
    if stopped:
        channel = stopped[0]
        threads = (
            f"IO thread {'running' if channel.io_running else 'stopped'},"
            f" SQL thread {'running' if channel.sql_running else 'stopped'}"
        )
        error_text = f": {channel.last_error}" if channel.last_error else ""
        return Lag(None, "replica status", f"replication is not running ({threads}){error_text}")
    return Lag(float(max(r.lag_seconds or 0 for r in replicas)), "replica status")


def heartbeat_age(ts: object, utc: bool, now: datetime | None = None) -> float:
    """Seconds since a pt-heartbeat ``ts`` (ISO text or DATETIME), never negative."""
    stamp = ts if isinstance(ts, datetime) else datetime.fromisoformat(str(ts).strip())
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC) if utc else stamp.astimezone()
    current = now or datetime.now(UTC)
    return max((current - stamp).total_seconds(), 0.0)
