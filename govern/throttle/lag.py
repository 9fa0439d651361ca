"""Replica lag, measured on the replica: pt-heartbeat's table when it has one, else replica status.

pt-heartbeat writes the primary's clock into a row (``ts``, keyed by the
primary's ``server_id``) and the row replicates: now minus ``ts`` on a replica is
its lag, accurate to the update interval even when Seconds_Behind_Master lies
(it reads 0 on an idle relay log and NULL while the SQL thread is stopped).
Like ``pt-heartbeat --check``, ``ts`` is read as local time unless the heartbeat
writes UTC (``pt-heartbeat --utc``). Reads only.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime

from govern import units
from govern.connection import Connection, query_all, query_one
from govern.server import ReplicaStatus, ServerInfo, read_replica_status

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
        return f"{units.duration(self.seconds, 'spaced')} ({self.source})"


def heartbeat_columns(conn: Connection, table: str) -> set[str]:
    schema, name = table.split(".", 1)
    rows = query_all(
        conn,
        "SELECT LOWER(COLUMN_NAME) FROM information_schema.COLUMNS"
        " WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
        (schema, name),
    )
    return {str(r[0]) for r in rows}


class LagReader:
    """Reads one replica's lag poll after poll with as few statements as it can.

    The heartbeat table's columns and the source's ``server_id`` are read once (again
    when they stop answering, and a missing table is looked for again every minute), so
    a poll is one SELECT on the heartbeat row, or one replica-status statement.
    """

    #: Seconds between looks for a heartbeat table that was not there.
    RECHECK = 60.0

    def __init__(
        self,
        heartbeat_table: str = DEFAULT_HEARTBEAT_TABLE,
        heartbeat_utc: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.heartbeat_table = heartbeat_table
        self.heartbeat_utc = heartbeat_utc
        self._clock = clock
        self._columns: set[str] | None = None
        self._checked = float("-inf")
        self._source_id: int | None = None

    def read(self, conn: Connection, info: ServerInfo, now: datetime | None = None) -> Lag:
        """This replica's lag now, from the heartbeat table if present, else replica status."""
        if self._columns is None or (
            "ts" not in self._columns and self._clock() - self._checked >= self.RECHECK
        ):
            self._columns = heartbeat_columns(conn, self.heartbeat_table)
            self._checked = self._clock()
        if "ts" in self._columns:
            return self._heartbeat(conn, info, now)
        return _from_status(*read_replica_status(conn, info.replica_status_statement))

    def _heartbeat(self, conn: Connection, info: ServerInfo, now: datetime | None) -> Lag:
        assert self._columns is not None
        schema, name = self.heartbeat_table.split(".", 1)
        table = f"`{schema}`.`{name}`"
        source = f"pt-heartbeat {self.heartbeat_table}"
        keyed = "server_id" in self._columns
        if keyed and self._source_id is None:
            replicas, _ = read_replica_status(conn, info.replica_status_statement)
            self._source_id = next(
                (r.source_server_id for r in replicas or () if r.source_server_id), None
            )
        if keyed and self._source_id is not None:
            row = query_one(
                conn, f"SELECT ts FROM {table} WHERE server_id = %s", (self._source_id,)
            )
        else:
            row = query_one(conn, f"SELECT MAX(ts) FROM {table}")
        if row is None or row[0] is None:
            self._columns = self._source_id = None  # the table or the source changed: look again
            return Lag(None, source, "the heartbeat table has no row for the source")
        return Lag(heartbeat_age(row[0], self.heartbeat_utc, now), source)


def _from_status(replicas: tuple[ReplicaStatus, ...] | None, error: str | None) -> Lag:
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


def measure_lag(
    conn: Connection,
    info: ServerInfo,
    heartbeat_table: str = DEFAULT_HEARTBEAT_TABLE,
    heartbeat_utc: bool = False,
    now: datetime | None = None,
) -> Lag:
    """This replica's lag now (one look: :class:`LagReader` for polling)."""
    return LagReader(heartbeat_table, heartbeat_utc).read(conn, info, now)


class LagTrend:
    """How fast a replica's lag grows, over the last ``window`` seconds of readings.

    A replica that applies more slowly than the work writes has a backlog in its relay
    log: stopping the writes when the lag reaches the bound leaves it growing until the
    backlog is applied. The trend says by how much (docs/design/throttling.md, "Lag
    already on its way").
    """

    def __init__(self, window: float) -> None:
        self.window = window
        self._points: collections.deque[tuple[float, float]] = collections.deque()

    def add(self, at: float, lag: float) -> float:
        """Record a reading; the growth in seconds of lag per second (0 until the readings
        span half the window)."""
        self._points.append((at, lag))
        while len(self._points) > 2 and at - self._points[1][0] >= self.window:
            self._points.popleft()
        first_at, first_lag = self._points[0]
        span = at - first_at
        return (lag - first_lag) / span if span >= self.window / 2 else 0.0

    def reset(self) -> None:
        self._points.clear()


def projected_peak(lag: float, growth: float) -> float:
    """Where the lag ends up if the writes stop now: the replica still applies what it has,
    at the pace it keeps (``1 - growth`` seconds of the primary's time per second), so the
    lag grows until ``lag / (1 - growth)`` before it falls. Infinite when it applies nothing."""
    if growth <= 0:
        return lag
    if growth >= 1:
        return math.inf
    return lag / (1 - growth)


def heartbeat_age(ts: object, utc: bool, now: datetime | None = None) -> float:
    """Seconds since a pt-heartbeat ``ts`` (ISO text or DATETIME), never negative."""
    stamp = ts if isinstance(ts, datetime) else datetime.fromisoformat(str(ts).strip())
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC) if utc else stamp.astimezone()
    current = now or datetime.now(UTC)
    return max((current - stamp).total_seconds(), 0.0)
