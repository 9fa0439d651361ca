"""Holds in the state store: who was held, when, for how long and why.

Each hold is written when it opens and updated when it closes, so a process
killed mid-hold leaves a hold without an end (shown "still open") rather than
nothing. ``govern history`` lists a run's holds, the scheduler's night document
a night's, and the digest page shades them all beside the blind windows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from govern.errors import GovernError
from govern.output import warn
from govern.state import StateStore
from govern.throttle.throttler import Hold, utc_iso


@dataclasses.dataclass(frozen=True)
class HoldContext:
    """What was held, and inside which govern run or scheduler job."""

    work: str  # "govern load items.csv", "govern throttle wait", "lag guard"
    server: str | None = None
    run_id: str | None = None
    night_id: int | None = None
    job: str | None = None
    worker: str | None = None

    @classmethod
    def from_environment(
        cls, work: str, server: str | None = None, environ: Mapping[str, str] | None = None
    ) -> HoldContext:
        """The run and job this process works for, from what ``govern run`` and the
        scheduler put in a job's environment."""
        env = os.environ if environ is None else environ
        night = env.get("GOVERN_NIGHT_ID", "")
        return cls(
            work=work,
            server=server,
            run_id=env.get("GOVERN_RUN_ID") or None,
            night_id=int(night) if night.isdigit() else None,
            job=env.get("GOVERN_JOB") or None,
        )


class StateHoldLog:
    """Records holds in a state store (opened at the first hold when given a path).

    A state file that cannot be written costs a warning, never the work: the
    holds are still in the throttler and in the command's report.
    """

    def __init__(
        self,
        state: StateStore | str | os.PathLike[str] | None,
        context: HoldContext,
        *,
        lock: threading.RLock | None = None,
    ) -> None:
        self.context = context
        self._store = state if isinstance(state, StateStore) else None
        self._path = None if isinstance(state, StateStore) else state
        self._owned = self._store is None
        self._lock = lock or threading.RLock()
        self._rows: dict[int, int] = {}
        self._failed = False

    def _db(self) -> sqlite3.Connection | None:
        if self._failed:
            return None
        if self._store is None:
            try:
                self._store = StateStore.open(self._path)
            except GovernError as exc:
                self._give_up(exc.message)
                return None
        return self._store.db

    def _give_up(self, why: str) -> None:
        self._failed = True
        warn(f"holds are not recorded in the state file: {why}")

    def opened(self, hold: Hold) -> None:
        c = self.context
        with self._lock:
            db = self._db()
            if db is None:
                return
            try:
                cursor = db.execute(
                    "INSERT INTO throttle_holds (work, server, run_id, night_id, job, worker,"
                    " check_kind, check_key, reason, value, bound, critical, started_at, ended_at,"
                    " host, pid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        c.work,
                        c.server,
                        c.run_id,
                        c.night_id,
                        c.job,
                        c.worker,
                        hold.kind,
                        hold.key,
                        hold.reason,
                        hold.value,
                        hold.bound,
                        int(hold.critical),
                        utc_iso(hold.started),
                        None if hold.ended is None else utc_iso(hold.ended),
                        socket.gethostname(),
                        os.getpid(),
                    ),
                )
            except sqlite3.Error as exc:
                self._give_up(str(exc))
                return
            self._rows[id(hold)] = int(cursor.lastrowid or 0)

    def closed(self, hold: Hold) -> None:
        with self._lock:
            row = self._rows.pop(id(hold), None)
            db = self._db()
            if row is None or db is None:
                return
            try:
                db.execute(
                    "UPDATE throttle_holds SET ended_at = ?, reason = ?, value = ? WHERE id = ?",
                    (
                        None if hold.ended is None else utc_iso(hold.ended),
                        hold.reason,
                        hold.value,
                        row,
                    ),
                )
            except sqlite3.Error as exc:
                self._give_up(str(exc))

    def close(self) -> None:
        if self._owned and self._store is not None:
            with contextlib.suppress(sqlite3.Error):
                self._store.close()
            self._store = None


# --- reading ----------------------------------------------------------------------------------
def epoch(stamp: str) -> float:
    """A stored time (ISO 8601 UTC, as the throttler writes them) in epoch seconds."""
    return datetime.fromisoformat(stamp).timestamp()


def hold_json(row: Mapping[str, Any]) -> dict[str, Any]:
    """One stored hold as it appears in the JSON documents (docs/json.md, "holds")."""
    seconds = None
    if row["ended_at"]:
        seconds = round(max(epoch(row["ended_at"]) - epoch(row["started_at"]), 0.0), 3)
    return {
        "work": row["work"],
        "server": row["server"],
        "run_id": row["run_id"],
        "night_id": row["night_id"],
        "job": row["job"],
        "worker": row["worker"],
        "check": row["check_kind"],
        "key": row["check_key"],
        "reason": row["reason"],
        "value": row["value"],
        "bound": row["bound"],
        "critical": bool(row["critical"]),
        "started_at": row["started_at"],
        "ended_at": row["ended_at"],
        "seconds": seconds,
    }


def holds_of_runs(store: StateStore, run_ids: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """Holds recorded inside each of these ``govern run`` runs, oldest first."""
    wanted = list(dict.fromkeys(run_ids))
    found: dict[str, list[dict[str, Any]]] = {run: [] for run in wanted}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        rows = store.db.execute(
            f"SELECT * FROM throttle_holds WHERE run_id IN ({', '.join('?' * len(chunk))})"
            " ORDER BY started_at, id",
            chunk,
        )
        for row in rows:
            found[row["run_id"]].append(hold_json(row))
    return found


def holds_of_night(store: StateStore, night_id: int) -> list[dict[str, Any]]:
    rows = store.db.execute(
        "SELECT * FROM throttle_holds WHERE night_id = ? ORDER BY started_at, id", (night_id,)
    )
    return [hold_json(row) for row in rows]


def all_holds(store: StateStore) -> list[dict[str, Any]]:
    rows = store.db.execute("SELECT * FROM throttle_holds ORDER BY started_at, id")
    return [hold_json(row) for row in rows]


def held_seconds(holds: Iterable[Mapping[str, Any]]) -> float:
    """Time covered by at least one hold (overlapping holds counted once)."""
    spans = sorted(
        (epoch(h["started_at"]), epoch(h["ended_at"])) for h in holds if h.get("ended_at")
    )
    total, reach = 0.0, float("-inf")
    for start, end in spans:
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return round(total, 3)
