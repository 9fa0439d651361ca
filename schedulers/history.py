"""Scheduler history in the state store: every night, every job, every attempt.

Estimates learn from it, ``simulate`` replays it, ``history`` prints it, and the
HTML report (Gantt per replica, "% done vs % of the night") reads the same
``govern.schedule.night`` documents. Nights that never ran are recorded too
(``missed``, ``coalesced``, ``skipped``, ``error``) so a gap always has a reason.

One lock serialises writers: the service records missed fires from APScheduler's
thread while a night writes from another.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from govern.schedulers.contention import overlaps
from govern.schedulers.estimates import Sample
from govern.state import StateStore, utcnow
from govern.throttle.record import HoldContext, StateHoldLog, holds_of_night

NIGHT_SCHEMA = "govern.schedule.night"
HISTORY_SCHEMA = "govern.schedule.history"
SCHEMA_VERSION = 1

#: Night statuses. ``running`` until it ends; the others are final.
NIGHT_STATUSES = (
    "running",
    "ok",
    "failed",
    "interrupted",
    "missed",
    "coalesced",
    "skipped",
    "error",
)
#: Job outcomes. ``pending``/``running`` only while (or if) the night is in progress.
JOB_OUTCOMES = ("pending", "running", "ok", "failed", "timeout", "skipped", "interrupted")


@dataclasses.dataclass(frozen=True)
class PlannedJob:
    """What is known of a job before the night starts."""

    name: str
    position: int
    key: str
    weight: float
    rows: int | None
    estimate_s: float | None
    estimate_method: str
    planned_lane: str | None
    planned_start_s: float | None
    planned_finish_s: float | None


@dataclasses.dataclass(frozen=True)
class NightLabel:
    """What names a night in the history, whether it ran or not."""

    schedule: str
    catalog_path: str
    policy: str
    trigger: str  # "manual" or "cron"
    scheduled_for: str | None  # the cron fire time it is for


def _insert_night(db: sqlite3.Connection, label: NightLabel, **columns: Any) -> int:
    fields = {
        **dataclasses.asdict(label),
        "started_at": utcnow(),
        "host": socket.gethostname(),
        **columns,
    }
    cursor = db.execute(
        f"INSERT INTO schedule_nights ({', '.join(fields)}) VALUES ({', '.join('?' * len(fields))})",
        tuple(fields.values()),
    )
    return int(cursor.lastrowid or 0)


def _insert_jobs(db: sqlite3.Connection, night: int, jobs: Sequence[PlannedJob]) -> None:
    db.executemany(
        "INSERT INTO schedule_jobs (night_id, job, position, key, weight, rows, estimate_s,"
        " estimate_method, planned_lane, planned_start_s, planned_finish_s, outcome)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
        [
            (
                night,
                j.name,
                j.position,
                j.key,
                j.weight,
                j.rows,
                j.estimate_s,
                j.estimate_method,
                j.planned_lane,
                j.planned_start_s,
                j.planned_finish_s,
            )
            for j in jobs
        ],
    )


def process_token(pid: int) -> str | None:
    """The process's start time from /proc: a pid plus this tells a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


class History:
    def __init__(self, store: StateStore) -> None:
        self.store = store
        self._lock = threading.RLock()

    def hold_log(self, context: HoldContext) -> StateHoldLog:
        """Where a throttler of this night records its holds (under the history's lock)."""
        return StateHoldLog(self.store, context, lock=self._lock)

    # --- writing --------------------------------------------------------------------------
    def start_night(
        self,
        label: NightLabel,
        workers: Sequence[dict[str, Any]],
        jobs: Sequence[PlannedJob],
        night_date: str | None = None,
    ) -> int:
        """A night starts: its row (``running``, owned by this process) and its planned jobs."""
        pid = os.getpid()
        with self._lock, self.store.transaction() as db:
            night = _insert_night(
                db,
                label,
                status="running",
                pid=pid,
                pid_start=process_token(pid),
                workers=json.dumps(list(workers)),
                night_date=night_date,
            )
            _insert_jobs(db, night, jobs)
        return night

    def resume_night(self, night: int, jobs: Sequence[PlannedJob], note: str) -> None:
        """An ended night runs again (``--resume``, ``--only-failed``): owned by this process,
        ``running``, its ``jobs`` pending again with tonight's plan; the others keep theirs."""
        pid = os.getpid()
        with self._lock, self.store.transaction() as db:
            db.execute(
                "UPDATE schedule_nights SET status = 'running', finished_at = NULL, pid = ?,"
                " pid_start = ?, host = ?, note = ? WHERE id = ?",
                (pid, process_token(pid), socket.gethostname(), note, night),
            )
            kept = {
                r["job"]
                for r in db.execute("SELECT job FROM schedule_jobs WHERE night_id = ?", (night,))
            }
            db.executemany(
                "UPDATE schedule_jobs SET outcome = 'pending', reason = NULL, exit_code = NULL,"
                " rows = ?, estimate_s = ?, estimate_method = ?, planned_lane = ?,"
                " planned_start_s = ?, planned_finish_s = ? WHERE night_id = ? AND job = ?",
                [
                    (
                        j.rows,
                        j.estimate_s,
                        j.estimate_method,
                        j.planned_lane,
                        j.planned_start_s,
                        j.planned_finish_s,
                        night,
                        j.name,
                    )
                    for j in jobs
                    if j.name in kept
                ],
            )
            _insert_jobs(db, night, [j for j in jobs if j.name not in kept])

    def set_note(self, night: int, note: str) -> None:
        with self._lock, self.store.transaction() as db:
            db.execute("UPDATE schedule_nights SET note = ? WHERE id = ?", (note, night))

    def settled_jobs(self, night: int) -> dict[str, sqlite3.Row]:
        """Every job row of a night, by name (what a resumed night leaves as it was)."""
        rows = self.store.db.execute("SELECT * FROM schedule_jobs WHERE night_id = ?", (night,))
        return {r["job"]: r for r in rows}

    def attempt_counts(self, night: int) -> dict[str, int]:
        rows = self.store.db.execute(
            "SELECT job, MAX(number) AS n FROM schedule_attempts WHERE night_id = ? GROUP BY job",
            (night,),
        )
        return {r["job"]: int(r["n"]) for r in rows}

    def record_unrun_night(self, label: NightLabel, status: str, note: str) -> int:
        """A night that did not run (missed, coalesced into a later one, skipped, error)."""
        with self._lock, self.store.transaction() as db:
            return _insert_night(db, label, status=status, note=note, finished_at=utcnow())

    def attempt_started(
        self,
        night: int,
        job: str,
        number: int,
        worker: str,
        lane: str,
        start_s: float,
        log_path: str | None,
    ) -> None:
        with self._lock, self.store.transaction() as db:
            db.execute(
                "INSERT INTO schedule_attempts (night_id, job, number, worker, lane, started_at,"
                " start_s, outcome, log_path) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?)",
                (night, job, number, worker, lane, utcnow(), start_s, log_path),
            )
            db.execute(
                "UPDATE schedule_jobs SET outcome = 'running', attempts = ?, worker = ?, lane = ?,"
                " start_s = COALESCE(start_s, ?) WHERE night_id = ? AND job = ?",
                (number, worker, lane, start_s, night, job),
            )

    def attempt_finished(
        self,
        night: int,
        job: str,
        number: int,
        *,
        start_s: float | None = None,
        finish_s: float,
        outcome: str,
        exit_code: int | None,
        final: bool,
        duration_s: float,
        reason: str | None = None,
    ) -> None:
        """One attempt ended; ``final`` when no retry follows (the job's outcome is settled).
        ``start_s``: its exact start (the fork's time; the record was made just before)."""
        with self._lock, self.store.transaction() as db:
            db.execute(
                "UPDATE schedule_attempts SET finished_at = ?, start_s = COALESCE(?, start_s),"
                " finish_s = ?, outcome = ?, exit_code = ?"
                " WHERE night_id = ? AND job = ? AND number = ?",
                (utcnow(), start_s, finish_s, outcome, exit_code, night, job, number),
            )
            if start_s is not None:  # the job's start is its first attempt's
                db.execute(
                    "UPDATE schedule_jobs SET start_s = ? WHERE night_id = ? AND job = ?"
                    " AND (SELECT MIN(number) FROM schedule_attempts"
                    " WHERE night_id = ? AND job = ?) = ?",
                    (start_s, night, job, night, job, number),
                )
            db.execute(
                "UPDATE schedule_jobs SET outcome = ?, exit_code = ?, finish_s = ?,"
                " duration_s = ?, reason = ? WHERE night_id = ? AND job = ?",
                (
                    outcome if final else "pending",
                    exit_code,
                    finish_s,
                    duration_s,
                    reason,
                    night,
                    job,
                ),
            )

    def job_skipped(self, night: int, job: str, reason: str) -> None:
        self.jobs_skipped(night, [(job, reason)])

    def jobs_skipped(self, night: int, skipped: Sequence[tuple[str, str]]) -> None:
        """Jobs that will not run tonight, with why: one transaction however many (a failed
        link of a 2,000-job chain skips the rest at once)."""
        with self._lock, self.store.transaction() as db:
            db.executemany(
                "UPDATE schedule_jobs SET outcome = 'skipped', reason = ?"
                " WHERE night_id = ? AND job = ? AND outcome = 'pending'",
                [(reason, night, job) for job, reason in skipped],
            )

    def finish_night(
        self, night: int, status: str, summary: dict[str, Any], note: str | None = None
    ) -> None:
        with self._lock, self.store.transaction() as db:
            db.execute(
                "UPDATE schedule_nights SET status = ?, finished_at = ?, summary = ?, note = ?"
                " WHERE id = ?",
                (status, utcnow(), json.dumps(summary), note, night),
            )

    def reap_stale(self) -> list[int]:
        """Mark nights whose process died (on this host) as interrupted; returns their ids."""
        host = socket.gethostname()
        reaped = []
        with self._lock:
            rows = self.store.db.execute(
                "SELECT id, pid, pid_start FROM schedule_nights WHERE status = 'running' AND host = ?",
                (host,),
            ).fetchall()
            for row in rows:
                if row["pid"] is not None and process_token(int(row["pid"])) == row["pid_start"]:
                    continue  # still alive
                with self.store.transaction() as db:
                    db.execute(
                        "UPDATE schedule_attempts SET outcome = 'interrupted'"
                        " WHERE night_id = ? AND outcome = 'running'",
                        (row["id"],),
                    )
                    db.execute(
                        "UPDATE schedule_jobs SET outcome = 'interrupted'"
                        " WHERE night_id = ? AND outcome IN ('running', 'pending')",
                        (row["id"],),
                    )
                    db.execute(
                        "UPDATE schedule_nights SET status = 'interrupted', finished_at = ?,"
                        " note = 'the scheduler process ended without finishing the night'"
                        " WHERE id = ?",
                        (utcnow(), row["id"]),
                    )
                reaped.append(int(row["id"]))
        return reaped

    # --- the service's memory of its trigger -----------------------------------------------
    def remembered_fire(self, schedule: str, trigger: str) -> str | None:
        """The next fire time saved by the service, if it was saved for this same trigger."""
        row = self.store.db.execute(
            "SELECT trigger, next_fire FROM schedule_triggers WHERE schedule = ?", (schedule,)
        ).fetchone()
        if row is None or row["trigger"] != trigger:
            return None
        return str(row["next_fire"]) if row["next_fire"] else None

    def remember_fire(self, schedule: str, trigger: str, next_fire: str | None) -> None:
        with self._lock:
            self.store.db.execute(
                "INSERT INTO schedule_triggers (schedule, trigger, next_fire, updated_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (schedule) DO UPDATE SET"
                " trigger = excluded.trigger, next_fire = excluded.next_fire,"
                " updated_at = excluded.updated_at",
                (schedule, trigger, next_fire, utcnow()),
            )

    # --- reading ----------------------------------------------------------------------------
    def samples(self, schedule: str, window: int) -> dict[str, list[Sample]]:
        """The latest ``window`` successful runs per job, newest first: what estimates learn
        from, each with its worker and how many other jobs ran beside it."""
        rows = self.store.db.execute(
            "SELECT night_id, job, rows, duration_s, worker, finish_s FROM ("
            " SELECT j.night_id, j.job, j.rows, j.duration_s, j.worker, j.finish_s,"
            "  ROW_NUMBER() OVER (PARTITION BY j.job ORDER BY j.night_id DESC) AS recent"
            " FROM schedule_jobs j JOIN schedule_nights n ON n.id = j.night_id"
            " WHERE n.schedule = ? AND j.outcome = 'ok' AND j.duration_s IS NOT NULL"
            ") WHERE recent <= ? ORDER BY job, recent",
            (schedule, window),
        ).fetchall()
        beside = self._others({int(row["night_id"]) for row in rows})
        samples: dict[str, list[Sample]] = {}
        for row in rows:
            samples.setdefault(row["job"], []).append(
                Sample(
                    None if row["rows"] is None else int(row["rows"]),
                    float(row["duration_s"]),
                    row["worker"],
                    beside.get((int(row["night_id"]), row["job"]), 0.0),
                )
            )
        return samples

    def _others(self, nights: set[int]) -> dict[tuple[int, str], float]:
        """(night, job) -> the time-weighted mean number of other attempts running beside
        the job's last attempt, from every attempt of its night (failed ones ran too)."""
        out: dict[tuple[int, str], float] = {}
        for night in sorted(nights):
            attempts = self.store.db.execute(
                "SELECT job, number, start_s, finish_s FROM schedule_attempts"
                " WHERE night_id = ? AND start_s IS NOT NULL AND finish_s IS NOT NULL"
                " ORDER BY job, number",
                (night,),
            ).fetchall()
            intervals = [(float(a["start_s"]), float(a["finish_s"])) for a in attempts]
            for attempt, others in zip(attempts, overlaps(intervals), strict=True):
                out[(night, attempt["job"])] = others  # the last attempt wins
        return out

    def recent_template_keys(self, schedule: str, limit: int) -> list[dict[str, int]]:
        """The template job counts of the last ``limit`` nights that ran (refused nights
        left out), newest first, for the key-count floor."""
        rows = self.store.db.execute(
            "SELECT summary FROM schedule_nights WHERE schedule = ? AND summary IS NOT NULL"
            " AND status IN ('ok', 'failed', 'interrupted') ORDER BY id DESC",
            (schedule,),
        )
        out: list[dict[str, int]] = []
        for row in rows:
            summary = json.loads(row["summary"])
            keys = summary.get("template_keys")
            if summary.get("refused") or not isinstance(keys, dict):
                continue
            out.append({str(k): int(v) for k, v in keys.items()})
            if len(out) >= limit:
                break
        return out

    def night_ids(
        self, schedule: str | None = None, limit: int = 20, ran_only: bool = False
    ) -> list[int]:
        """Newest first. ``ran_only`` leaves out nights that never started a job."""
        where, args = [], []
        if schedule is not None:
            where.append("schedule = ?")
            args.append(schedule)
        if ran_only:  # a refused night is failed, but started nothing
            where.append("status IN ('ok', 'failed', 'interrupted')")
            # neither has a night that failed before its jobs (ready_when timed out)
            where.append(
                "EXISTS (SELECT 1 FROM schedule_attempts a WHERE a.night_id = schedule_nights.id)"
            )
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self.store.db.execute(
            f"SELECT id FROM schedule_nights{clause} ORDER BY id DESC LIMIT ?", (*args, limit)
        ).fetchall()
        return [int(r["id"]) for r in rows]

    def night(self, night_id: int) -> dict[str, Any] | None:
        """One night as the ``govern.schedule.night`` document (docs/json.md)."""
        row = self.store.db.execute(
            "SELECT * FROM schedule_nights WHERE id = ?", (night_id,)
        ).fetchone()
        if row is None:
            return None
        attempts: dict[str, list[dict[str, Any]]] = {}
        for a in self.store.db.execute(
            "SELECT * FROM schedule_attempts WHERE night_id = ? ORDER BY start_s, number",
            (night_id,),
        ):
            attempts.setdefault(a["job"], []).append(
                {
                    "number": a["number"],
                    "worker": a["worker"],
                    "lane": a["lane"],
                    "started_at": a["started_at"],
                    "finished_at": a["finished_at"],
                    "start_s": _r(a["start_s"]),
                    "finish_s": _r(a["finish_s"]),
                    "outcome": a["outcome"],
                    "exit_code": a["exit_code"],
                    "log": a["log_path"],
                }
            )
        jobs = [
            {
                "name": j["job"],
                "position": j["position"],
                "key": j["key"],
                "weight": j["weight"],
                "rows": j["rows"],
                "estimate_s": _r(j["estimate_s"]),
                "estimate_method": j["estimate_method"],
                "planned": {
                    "lane": j["planned_lane"],
                    "start_s": _r(j["planned_start_s"]),
                    "finish_s": _r(j["planned_finish_s"]),
                },
                "worker": j["worker"],
                "lane": j["lane"],
                "start_s": _r(j["start_s"]),
                "finish_s": _r(j["finish_s"]),
                "actual_s": _r(j["duration_s"]),
                "error_s": _r(j["duration_s"] - j["estimate_s"])
                if j["outcome"] == "ok"
                and j["duration_s"] is not None
                and j["estimate_s"] is not None
                else None,
                "outcome": j["outcome"],
                "exit_code": j["exit_code"],
                "reason": j["reason"],
                "attempts": attempts.get(j["job"], []),
            }
            for j in self.store.db.execute(
                "SELECT * FROM schedule_jobs WHERE night_id = ? ORDER BY position", (night_id,)
            )
        ]
        return {
            "schema": NIGHT_SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "id": row["id"],
            "schedule": row["schedule"],
            "catalog": row["catalog_path"],
            "policy": row["policy"],
            "trigger": row["trigger"],
            "scheduled_for": row["scheduled_for"],
            "date": row["night_date"],
            "started_at": row["started_at"],
            "finished_at": row["finished_at"],
            "status": row["status"],
            "note": row["note"],
            "host": row["host"],
            "workers": json.loads(row["workers"]) if row["workers"] else [],
            "summary": json.loads(row["summary"]) if row["summary"] else None,
            "jobs": jobs,
            "holds": holds_of_night(self.store, night_id),
        }

    def nights(self, schedule: str | None = None, limit: int = 20) -> Iterator[dict[str, Any]]:
        for night_id in self.night_ids(schedule, limit):
            document = self.night(night_id)
            if document is not None:
                yield document


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), 3)
