"""The documents behind ``govern status``, ``govern recover`` and ``govern history``.

Each is a JSON contract (docs/json.md): a ``schema`` name and ``schema_version``;
the text output is rendered from the same document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymysql

from govern.connection import Connection, query_dicts
from govern.privileges import Grants
from govern.redact import redact
from govern.server import ServerInfo
from govern.state import StateStore
from govern.wrappers import blind, claims, deadman, journal, variables
from govern.wrappers.journal import RunRecord
from govern.wrappers.recovery import Repair

STATUS_SCHEMA = "govern.run.status"
RECOVER_SCHEMA = "govern.run.recover"
HISTORY_SCHEMA = "govern.run.history"
SCHEMA_VERSION = 1


def _number(variable: variables.Variable, value: int | None) -> float | int | None:
    """A value as the server shows it numerically: 1/0 for the switch, seconds otherwise."""
    if value is None:
        return None
    return value if variable.is_switch else value / variable.scale


def runs_json(store: StateStore, records: list[RunRecord]) -> list[dict[str, Any]]:
    return [run_json(r, journal.changes(store, r.id)) for r in records]


def run_json(record: RunRecord, changes: list[dict[str, Any]]) -> dict[str, Any]:
    variable = variables.by_name(record.variable) if record.variable else None
    return {
        "id": record.id,
        "name": record.name,
        "command": redact(record.command)[0],  # a run of an older govern may hold one
        "host": record.host,
        "pid": record.pid,
        "server": record.server,
        "connection": record.connection,
        "mode": record.mode,
        "state": record.state,
        "outcome": record.outcome,
        "started_at": record.started_at,
        "ended_at": record.ended_at,
        "exit_code": record.exit_code,
        "variable": record.variable,
        "original_value": _number(variable, record.original_value) if variable else None,
        "set_value": _number(variable, record.set_value) if variable else None,
        "original_text": variable.show(record.original_value) if variable else None,
        "set_text": variable.show(record.set_value) if variable else None,
        "window": window_json(record),
        "lease_seconds": record.lease_seconds,
        "lease_until": record.lease_until,
        "event": record.event,
        "watchdog_pid": record.watchdog_pid,
        "stale": record.stale_reason(),
        "blind_connections": record.blind,
        "changes": [
            {
                **change,
                "done": bool(change["done"]),
                "from_value": _number(variables.by_name(change["variable"]), change["from_value"]),
                "to_value": _number(variables.by_name(change["variable"]), change["to_value"]),
            }
            for change in changes
        ],
        "warnings": record.warnings,
    }


def window_json(record: RunRecord) -> dict[str, Any] | None:
    """When this run kept the setting changed: what the digest reports show as a blind window.

    None when the run changed nothing (the value in force was already the original one).
    """
    if not record.window_start or record.variable is None:
        return None
    if record.set_value == record.original_value:
        return None
    variable = variables.by_name(record.variable)
    return {
        "run_id": record.id,
        "name": record.name,
        "server": record.server,
        "mode": record.mode,
        "variable": record.variable,
        "value": _number(variable, record.set_value),
        "original_value": _number(variable, record.original_value),
        "start": record.window_start,
        "end": record.window_end,
        "connections_opened": record.window_opened,
    }


def recorded_history(state_path: str | None) -> dict[str, Any]:
    """The blind windows of every run in the state file (default location if None) and every
    throttle hold, as ``govern history --json`` lists them (``windows``, ``holds``); none
    when the file is absent.

    Reading never creates a state file: a host that never ran ``govern run`` has no windows.
    """
    from govern.state import default_state_path
    from govern.throttle.record import all_holds

    target = Path(state_path) if state_path else default_state_path()
    if not target.is_file():
        return {"windows": [], "holds": []}
    with StateStore.open(target) as store:
        return {"windows": _windows(journal.history(store)), "holds": all_holds(store)}


def history_document(store: StateStore, records: list[RunRecord]) -> dict[str, Any]:
    """The runs with the throttle holds inside each; ``holds`` lists every hold of the state
    file (runs, loads, chunks, scheduler nights) for the digest page's load chart."""
    from govern.throttle.record import all_holds, held_seconds, holds_of_runs

    runs = runs_json(store, records)
    holds = holds_of_runs(store, [r.id for r in records])
    for run in runs:
        run["holds"] = holds[run["id"]]
        run["held_s"] = held_seconds(run["holds"])
    return {
        "schema": HISTORY_SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "runs": runs,
        "windows": _windows(records),
        "holds": all_holds(store),
    }


def _windows(records: list[RunRecord]) -> list[dict[str, Any]]:
    return [w for r in records if (w := window_json(r)) is not None]


def recover_document(
    store: StateStore,
    server: ServerInfo,
    repairs: list[Repair],
    remaining: list[RunRecord],
    events_dropped: int,
) -> dict[str, Any]:
    return {
        "schema": RECOVER_SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "server": server.identity,
        "repaired": [
            {
                "run_id": r.record.id,
                "name": r.record.name,
                "reason": r.reason,
                "outcome": r.outcome.code,
                "message": r.outcome.message,
            }
            for r in repairs
            if r.outcome.code not in ("still_held", "failed")
        ],
        "remaining": runs_json(store, remaining),
        "events_dropped": events_dropped,
    }


def _holders(conn: Connection, server: ServerInfo) -> list[dict[str, Any]]:
    """Live claims on this server, with the client they come from and, if listed, their run."""
    found = []
    who = {(w.code, w.slot): w for w in claims.list_who(conn) or []}
    sessions = {
        int(row["id"]): row
        for row in query_dicts(
            conn, "SELECT ID AS id, USER AS user, HOST AS host FROM information_schema.PROCESSLIST"
        )
    }
    for variable in (variables.slow_log(server), variables.LONG_QUERY_TIME):
        for claim in claims.probe(conn, variable):
            named = who.get((variable.code, claim.slot))
            session = sessions.get(claim.connection_id, {})
            found.append(
                {
                    "variable": variable.name,
                    "slot": claim.slot,
                    "connection_id": claim.connection_id,
                    "user": session.get("user"),
                    "client": session.get("host"),
                    "original_value": _number(variable, claim.original),
                    "set_value": _number(variable, claim.value),
                    "window_first_connection": claim.since,
                    "pid": named.pid if named else None,
                    "host": named.host if named else None,
                    "name": named.name if named else None,
                }
            )
    return found


def _blind(
    conn: Connection, server: ServerInfo, started: float, store: StateStore
) -> list[dict[str, Any]]:
    """Connections still alive from finished windows of this server's current start."""
    seen: set[int] = set()
    found = []
    for record in journal.window_runs(store, server.identity, started):
        if record.window_last_id is None or record.set_value == record.original_value:
            continue
        variable = variables.by_name(record.variable or "")
        for connection in blind.window_connections(
            conn, record.window_first_id or 0, record.window_last_id
        ):
            if connection["id"] in seen:
                continue
            seen.add(connection["id"])
            found.append(
                {
                    **connection,
                    "run_id": record.id,
                    "variable": record.variable,
                    "value": _number(variable, record.set_value),
                }
            )
    return found


def _events(conn: Connection) -> list[dict[str, Any]]:
    try:
        return [
            {**row, "execute_at": str(row["execute_at"])}
            for row in query_dicts(
                conn,
                "SELECT EVENT_SCHEMA AS `schema`, EVENT_NAME AS name, STATUS AS status,"
                " EXECUTE_AT AS execute_at FROM information_schema.EVENTS WHERE EVENT_NAME LIKE %s",
                (deadman.PREFIX.replace("_", "\\_") + "%",),
            )
        ]
    except pymysql.err.MySQLError:
        return []


def status_document(
    conn: Connection,
    server: ServerInfo,
    grants: Grants,
    store: StateStore,
    connection: str,
    started: float,
) -> dict[str, Any]:
    notes = []
    if not grants.has("PROCESS"):
        notes.append("without PROCESS only this account's connections are visible")
    if claims.list_who(conn) is None:
        notes.append(
            "metadata_lock_info is not installed: runs from other hosts show without name or pid"
            " (INSTALL SONAME 'metadata_lock_info')"
        )
    runs = journal.open_runs(store, server.identity)
    blind_connections = _blind(conn, server, started, store)
    events = _events(conn)
    return {
        "schema": STATUS_SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "connection": connection,
        "server": {"identity": server.identity, "label": server.label},
        "slow_log": {
            "variable": server.slow_log_variable,
            "enabled": server.slow_log_enabled,
            "long_query_time": server.long_query_time,
            "log_output": server.log_output,
            "file": server.slow_log_file,
            "event_scheduler": server.event_scheduler,
        },
        "holders": _holders(conn, server),
        "runs": runs_json(store, runs),
        "stale": [r.id for r in runs if r.stale_reason()],
        "blind_connections": blind_connections,
        "events": events,
        "notes": notes,
    }
