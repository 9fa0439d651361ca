"""Repairing runs that could not finish themselves: ``govern recover``, the watchdog, every run.

A journal entry is stale when its govern process is gone (same host) or its lease
expired. Repairing it is finishing the run on its behalf (:func:`govern.wrappers.hold.repair`):
leave the setting to live runs, or compare-and-swap it back, drop its event.
"""

from __future__ import annotations

import dataclasses

import pymysql

from govern.connection import Connection, ConnectionSettings, connect, error_text
from govern.server import ServerInfo
from govern.state import StateStore, utcnow
from govern.wrappers import blind, deadman, hold, journal, variables
from govern.wrappers.hold import Outcome
from govern.wrappers.journal import RunRecord


@dataclasses.dataclass
class Repair:
    record: RunRecord
    reason: str
    outcome: Outcome


def repair_record(
    conn: Connection, store: StateStore, record: RunRecord, *, actor: str, reason: str
) -> Outcome:
    """Finish ``record`` for its dead owner and close its journal entry (unless still held)."""
    if record.variable is None or record.original_value is None or record.set_value is None:
        outcome = Outcome("unchanged", "the run had changed nothing on the server")
    else:
        outcome = hold.repair(conn, store, record, variables.by_name(record.variable), actor=actor)
        if outcome.code == "still_held":
            return outcome
    now = utcnow()
    record.state = journal.RECOVERED
    record.outcome = outcome.code
    record.ended_at = record.ended_at or now
    if record.window_start and not record.window_end:
        record.window_end = now
        record.window_last_id = blind.highest_id(conn)
    record.warnings.append(f"{actor}: {reason}: {outcome.message}")
    journal.save(store, record)
    return outcome


def recover_server(
    conn: Connection, info: ServerInfo, store: StateStore, *, actor: str
) -> list[Repair]:
    """Repair every stale entry of this server; sweep fired events when allowed to."""
    repairs = []
    for record in journal.open_runs(store, info.identity):
        reason = record.stale_reason()
        if reason is None:
            continue
        try:
            outcome = repair_record(conn, store, record, actor=actor, reason=reason)
        except pymysql.err.MySQLError as exc:  # the entry stays stale, for the next try
            outcome = Outcome("failed", f"could not repair: {error_text(exc)}", warning=True)
        repairs.append(Repair(record, reason, outcome))
    return repairs


def sweep_events(conn: Connection) -> int:
    """Drop fired govern events when this connection can keep that out of the binlog."""
    if deadman.unbinlogged(conn):
        return 0
    return deadman.sweep(conn)


def repair_run(
    settings: ConnectionSettings, store: StateStore, run_id: str, *, actor: str, reason: str
) -> str:
    """Connect and repair one run (the watchdog's job); raises while the server is away."""
    record = journal.load(store, run_id)
    if record is None or not record.is_open:
        return "nothing to repair (the run was finished)"
    conn = connect(settings, command="run")
    try:
        return repair_record(conn, store, record, actor=actor, reason=reason).message
    finally:
        conn.close()
