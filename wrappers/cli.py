"""Click shells: ``govern run``, ``govern status``, ``govern recover``, ``govern history``.

Only ``run`` is on the hot path: it imports nothing beyond the runner (no rich).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from govern.cli_options import Duration, connection_options, state_option, throttle_option
from govern.connection import ConnectionSettings


def seconds(
    name: str, default: float, help: str, minimum: float = 0, maximum: float | None = None
) -> Any:
    return click.option(
        name,
        type=click.FloatRange(minimum, maximum),
        default=default,
        show_default=True,
        metavar="SECONDS",
        help=help,
    )


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@connection_options
@state_option
@click.option("--name", help="Label for the run [default: the command's name].")
@click.option(
    "--mode",
    type=click.Choice(["auto", "global", "threshold", "session"]),
    default="auto",
    show_default=True,
    help="auto: session for jobs that opt their sessions out (mysql/mariadb clients, govern "
    "load, --opts-out), else threshold. global: slow log off "
    "for everyone. threshold: raise the global long_query_time. session: the job's own sessions "
    "opt out (govern's Python API, $GOVERN_INIT_COMMAND, MariaDB clients).",
)
@seconds(
    "--threshold", 10.0, "long_query_time in threshold mode (only ever raised).", 0, 31_536_000
)
@click.option("--max-runtime", type=Duration(), help="End the job's process group after this long.")
@seconds(
    "--grace",
    10.0,
    "After TERM, wait this long before KILL; also how long the restore waits for the job's "
    "last statements (MySQL).",
)
@seconds(
    "--lease",
    60.0,
    "If govern dies, the setting comes back within this long (the watchdog at once, the "
    "server-side event at the lease).",
    minimum=1,
)
@click.option(
    "--on-error",
    type=click.Choice(["refuse", "run"]),
    default="refuse",
    show_default=True,
    help="When the setting cannot be changed: refuse (exit 3) or run the job ungoverned.",
)
@click.option(
    "--opts-out",
    is_flag=True,
    help="The job opts its own sessions out: it passes $GOVERN_INIT_COMMAND to its "
    "connections, so auto picks session mode.",
)
@throttle_option
@click.option("-q", "--quiet", is_flag=True, help="Only warnings on stderr.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run(
    settings: ConnectionSettings,
    state_path: str | None,
    name: str | None,
    mode: str,
    threshold: float,
    max_runtime: float | None,
    grace: float,
    lease: float,
    on_error: str,
    opts_out: bool,
    throttle_items: tuple[str, ...],
    quiet: bool,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND with the slow log governed; always put the setting back.

    \b
    govern run [OPTIONS] -- COMMAND [ARGS]...

    --throttle hands the checks to the job (with this connection's account): its
    `govern throttle wait`, `govern load` and `govern chunk` hold on them, and
    their holds are listed by `govern history`.

    Exits with COMMAND's exit code (128+N when signal N ended it); 2 for a usage error,
    3 when the server cannot be reached or the account may not change the setting,
    126/127 when COMMAND cannot be started.
    """
    from govern.wrappers.modes import Mode
    from govern.wrappers.runner import RunOptions
    from govern.wrappers.runner import run as run_governed

    throttle = None
    if throttle_items:
        from govern.throttle.spec import parse_items

        throttle = parse_items(throttle_items)

    result = run_governed(
        settings,
        list(command),
        RunOptions(
            name=name,
            mode=Mode(mode),
            threshold=threshold,
            max_runtime=max_runtime,
            grace=grace,
            lease=lease,
            on_error=on_error,
            state_path=Path(state_path) if state_path else None,
            quiet=quiet,
            opts_out=opts_out,
            throttle=throttle,
        ),
    )
    sys.exit(result.exit_code)


@click.command()
@connection_options
@state_option
@click.option("--json", "as_json", is_flag=True, help="Print the govern.run.status document.")
def status(settings: ConnectionSettings, state_path: str | None, as_json: bool) -> None:
    """The server's slow-log settings, live runs, stale entries and blind connections.

    Exit 0 when all is well, 1 when something needs you (stale entries, blind
    connections, fired govern events), 3 when the server cannot be reached.
    """
    from govern.connection import connect
    from govern.output import print_json
    from govern.privileges import read_grants
    from govern.server import detect
    from govern.state import StateStore
    from govern.wrappers.hold import server_started
    from govern.wrappers.status import status_document

    conn = connect(settings, command="status")
    server = detect(conn, replica_status=False)
    with StateStore.open(state_path) as store:
        document = status_document(
            conn, server, read_grants(conn), store, settings.describe(), server_started(conn)
        )
    conn.close()
    if as_json:
        print_json(document)
    else:
        _print_status(document)
    fired = [e for e in document["events"] if e["status"] == "DISABLED"]
    sys.exit(1 if document["stale"] or document["blind_connections"] or fired else 0)


@click.command()
@connection_options
@state_option
@click.option("--json", "as_json", is_flag=True, help="Print the govern.run.recover document.")
@seconds("--wait", 60.0, "Keep retrying this long while the server is unreachable.")
def recover(
    settings: ConnectionSettings, state_path: str | None, as_json: bool, wait: float
) -> None:
    """Repair stale run entries of this server: restore what dead runs left changed.

    Exit 0 when nothing stale is left, 1 when an entry could not be repaired (its
    claim is still held), 3 when the server stays unreachable.
    """
    from govern.connection import connect_retrying
    from govern.output import info, print_json
    from govern.server import detect
    from govern.state import StateStore
    from govern.units import plural
    from govern.wrappers import journal
    from govern.wrappers.recovery import recover_server, sweep_events
    from govern.wrappers.status import recover_document

    conn = connect_retrying(settings, command="recover", wait=wait, say=info)
    server = detect(conn, replica_status=False)
    with StateStore.open(state_path) as store:
        repairs = recover_server(conn, server, store, actor="recover")
        dropped = sweep_events(conn)
        remaining = [r for r in journal.open_runs(store, server.identity) if r.stale_reason()]
        document = recover_document(store, server, repairs, remaining, dropped)
    conn.close()
    if as_json:
        print_json(document)
    else:
        for item in document["repaired"]:
            click.echo(
                f"run {item['run_id']} ({item['name']}): {item['reason']}; {item['message']}"
            )
        for record in remaining:
            click.echo(f"run {record.id} ({record.name}): still stale: {record.stale_reason()}")
        if not document["repaired"] and not remaining:
            click.echo(f"nothing to recover on {server.identity}")
        if dropped:
            click.echo(f"dropped {plural(dropped, 'fired govern event')}")
    sys.exit(1 if remaining else 0)


@click.command()
@state_option
@click.option("--json", "as_json", is_flag=True, help="Print the govern.run.history document.")
@click.option("--name", help="Only runs with this name.")
@click.option("--limit", type=click.IntRange(1), default=None, help="The newest N runs.")
def history(state_path: str | None, as_json: bool, name: str | None, limit: int | None) -> None:
    """Every run: name, command, start, end, exit code, mode, its blind window and the time
    its job was held by the throttle (govern run --throttle)."""
    from govern.output import print_json
    from govern.state import StateStore
    from govern.wrappers import journal
    from govern.wrappers.status import history_document

    with StateStore.open(state_path) as store:
        document = history_document(store, journal.history(store, name=name, limit=limit))
    if as_json:
        print_json(document)
        return
    _print_history(document)


# --- text rendering ---------------------------------------------------------------------
def _short_time(stamp: str | None) -> str:
    return stamp[:19].replace("T", " ") if stamp else ""


def _print_history(document: dict[str, Any]) -> None:
    from rich.table import Table

    from govern import units
    from govern.output import console

    table = Table(box=None, pad_edge=False)
    columns = ("id", "name", "started (UTC)", "took", "exit", "mode", "changed", "held", "outcome")
    for column in columns:
        table.add_column(column)
    for run in document["runs"]:
        took = ""
        if run["ended_at"]:
            seconds = (_parse(run["ended_at"]) - _parse(run["started_at"])).total_seconds()
            took = units.duration(seconds, "clock")
        changed = (
            f"{run['variable']} {run['original_text']}→{run['set_text']}" if run["window"] else ""
        )
        table.add_row(
            run["id"],
            run["name"],
            _short_time(run["started_at"]),
            took,
            "" if run["exit_code"] is None else str(run["exit_code"]),
            run["mode"],
            changed,
            _held(run),
            run["outcome"] or run["state"],
        )
    console().print(table)


def _held(run: dict[str, Any]) -> str:
    """``42s: lag, load`` for a run whose job was held, else ''."""
    if not run["holds"]:
        return ""
    kinds = ", ".join(dict.fromkeys(h["check"] for h in run["holds"]))
    return f"{run['held_s']:.0f}s: {kinds}"


def _parse(stamp: str) -> Any:
    from datetime import datetime

    return datetime.fromisoformat(stamp)


def _shown(variable: str, value: float) -> str:
    if variable == "long_query_time":
        return f"{value:g}s"
    return "ON" if value else "OFF"


def _print_status(document: dict[str, Any]) -> None:
    from rich.table import Table

    from govern.output import console
    from govern.units import plural

    out = console()
    slow = document["slow_log"]
    out.print(
        f"{document['server']['label']} ({document['server']['identity']}), connected as "
        f"{document['connection']}\n"
        f"slow log {'ON' if slow['enabled'] else 'OFF'} ({slow['variable']}), "
        f"long_query_time {slow['long_query_time']}, log_output {slow['log_output']}, "
        f"event_scheduler {slow['event_scheduler']}"
    )
    if document["holders"]:
        table = Table(title="govern runs holding a setting (server view)", box=None)
        for column in ("variable", "value", "before", "connection", "client", "run", "pid@host"):
            table.add_column(column)
        for h in document["holders"]:
            table.add_row(
                h["variable"],
                _shown(h["variable"], h["set_value"]),
                _shown(h["variable"], h["original_value"]),
                str(h["connection_id"]),
                str(h["client"] or ""),
                h["name"] or "",
                f"{h['pid']}@{h['host']}" if h["pid"] else "",
            )
        out.print(table)
    else:
        out.print("no govern run holds a setting on this server")
    if document["runs"]:
        table = Table(title="runs in this state file", box=None)
        for column in ("id", "name", "pid", "since (UTC)", "lease until", "mode", "state"):
            table.add_column(column)
        for run in document["runs"]:
            table.add_row(
                run["id"],
                run["name"],
                str(run["pid"]),
                _short_time(run["started_at"]),
                _short_time(run["lease_until"])[11:],
                run["mode"],
                f"stale: {run['stale']}" if run["stale"] else run["state"],
            )
        out.print(table)
    for connection in document["blind_connections"]:
        out.print(
            f"blind: connection {connection['id']} {connection['user']}@{connection['host']} "
            f"opened while {connection['variable']} was {connection['value']} (run "
            f"{connection['run_id']}): reconnect it or KILL {connection['id']};"
        )
    for event in document["events"]:
        out.print(
            f"event {event['schema']}.{event['name']}: {event['status']} at {event['execute_at']}"
        )
    if document["stale"]:
        stale = plural(len(document["stale"]), "stale entry", "stale entries")
        out.print(f"{stale}: run `govern recover`")
    fired = [e for e in document["events"] if e["status"] == "DISABLED"]
    if fired:
        them = "it" if len(fired) == 1 else "them"
        out.print(f"{plural(len(fired), 'fired govern event')}: `govern recover` drops {them}")
    for note in document["notes"]:
        out.print(f"note: {note}")
