"""The run journal in the state store: written before the server is touched, read to repair.

A run's row is saved (state ``starting``, with the variable, the value from before
and the value govern will set) before the first change, so whoever finds it later
(the watchdog, ``govern recover``, the next ``govern run``) knows what to put back.
``run_changes`` records every change of a server setting, intent first, with who
made it (wrapper, watchdog, recover). Rows never leave: they are the run history.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
from datetime import UTC, datetime, timedelta
from typing import Any

from govern.state import StateStore, utcnow

STARTING = "starting"
RUNNING = "running"
FINISHED = "finished"
RECOVERED = "recovered"
REFUSED = "refused"
OPEN_STATES = (STARTING, RUNNING)

_JSON_FIELDS = ("command", "blind", "warnings")


@dataclasses.dataclass
class RunRecord:
    """One ``govern run``: the job, the server, what changed, and how it ended."""

    id: str
    name: str
    command: list[str]
    host: str
    pid: int
    mode: str
    state: str
    started_at: str
    pid_started: str | None = None
    watchdog_pid: int | None = None
    server: str | None = None
    connection: str | None = None
    variable: str | None = None
    original_value: int | None = None
    set_value: int | None = None
    outcome: str | None = None
    ended_at: str | None = None
    exit_code: int | None = None
    window_start: str | None = None
    window_end: str | None = None
    lease_seconds: float | None = None
    lease_until: str | None = None
    connection_id: int | None = None
    server_started: float | None = None
    window_first_id: int | None = None
    window_last_id: int | None = None
    event: str | None = None
    #: Connections opened while the setting was changed (the job's own included).
    window_opened: int | None = None
    blind: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES

    def stale_reason(self, now: str | None = None) -> str | None:
        """Why this open run can no longer look after itself, or None while it can."""
        if not self.is_open:
            return None
        if self.host == this_host() and not process_alive(self.pid, self.pid_started):
            return f"its govern process (pid {self.pid}) is gone"
        if self.lease_until and self.lease_until < (now or utcnow()):
            return f"its lease expired at {self.lease_until}"
        return None


_COLUMNS = [f.name for f in dataclasses.fields(RunRecord)]


def this_host() -> str:
    return socket.gethostname()


def process_started(pid: int) -> str | None:
    """The process's start time in clock ticks (field 22 of /proc/PID/stat): pid reuse shows."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def process_alive(pid: int, started: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if started is None:
        return True
    now = process_started(pid)
    return now is None or now == started


def lease_deadline(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat(timespec="microseconds")


def save(store: StateStore, record: RunRecord) -> None:
    """Insert or update the whole row (a row is small; one statement is one commit)."""
    values = []
    for column in _COLUMNS:
        value = getattr(record, column)
        values.append(json.dumps(value) if column in _JSON_FIELDS else value)
    updates = ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS if c != "id")
    store.db.execute(
        f"INSERT INTO runs ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
        f" ON CONFLICT (id) DO UPDATE SET {updates}",
        values,
    )


def _record(row: Any) -> RunRecord:
    fields = {column: row[column] for column in _COLUMNS}
    for column in _JSON_FIELDS:
        fields[column] = json.loads(fields[column]) if fields[column] else []
    return RunRecord(**fields)


def load(store: StateStore, run_id: str) -> RunRecord | None:
    row = store.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
    return None if row is None else _record(row)


def open_runs(store: StateStore, server: str | None = None) -> list[RunRecord]:
    """Runs not yet finished (live or stale), oldest first; of one server if given."""
    sql = "SELECT * FROM runs WHERE state IN (?, ?)"
    args: list[Any] = list(OPEN_STATES)
    if server is not None:
        sql += " AND server = ?"
        args.append(server)
    return [_record(r) for r in store.db.execute(sql + " ORDER BY started_at", args)]


def history(
    store: StateStore, *, name: str | None = None, limit: int | None = None
) -> list[RunRecord]:
    """Runs, newest first."""
    sql = "SELECT * FROM runs"
    args: list[Any] = []
    if name is not None:
        sql += " WHERE name = ?"
        args.append(name)
    sql += " ORDER BY started_at DESC"
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    return [_record(r) for r in store.db.execute(sql, args)]


def window_runs(store: StateStore, server: str, server_started: float) -> list[RunRecord]:
    """Runs that changed a setting on this server since it last started (thread ids restart)."""
    rows = store.db.execute(
        "SELECT * FROM runs WHERE server = ? AND window_first_id IS NOT NULL"
        " AND server_started BETWEEN ? AND ? ORDER BY started_at",
        (server, server_started - 2, server_started + 2),
    )
    return [_record(r) for r in rows]


def change_intent(
    store: StateStore,
    run_id: str,
    actor: str,
    variable: str,
    from_value: int | None,
    to_value: int,
) -> int:
    """Record a change about to be made; returns its sequence number for :func:`change_done`."""
    cursor = store.db.execute(
        "INSERT INTO run_changes (run_id, at, actor, variable, from_value, to_value)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (run_id, utcnow(), actor, variable, from_value, to_value),
    )
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def change_done(store: StateStore, seq: int) -> None:
    store.db.execute("UPDATE run_changes SET done = 1, at = ? WHERE seq = ?", (utcnow(), seq))


def changes(store: StateStore, run_id: str) -> list[dict[str, Any]]:
    rows = store.db.execute(
        "SELECT at, actor, variable, from_value, to_value, done FROM run_changes"
        " WHERE run_id = ? ORDER BY seq",
        (run_id,),
    )
    return [dict(r) for r in rows]
