"""``govern throttle wait``, and the throttler of the writing commands (``--throttle``)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from govern.cli_options import connection_options, connection_options_given, state_option
from govern.connection import ConnectionSettings

if TYPE_CHECKING:
    from govern.throttle.throttler import Throttler

WAIT_SCHEMA = "govern.throttle.wait"
SCHEMA_VERSION = 1


def command_throttler(
    items: tuple[str, ...],
    settings: ConnectionSettings,
    state_path: str | None,
    *,
    work: str,
) -> Throttler | None:
    """The throttler of a writing command, or None when no checks apply (no option, no
    job throttle, no config). Holds go to the job's state file, else ``--state``'s."""
    from govern.state import default_state_path
    from govern.throttle.connect import choose_spec, job_state, open_throttler

    spec = choose_spec(items)
    if spec is None or not spec.has_checks:
        return None
    state = job_state() or state_path or default_state_path()
    return open_throttler(spec, settings, work=work, state=state)


def held_text(summary: dict[str, Any] | None) -> str:
    """``; held 12.3 s (lag 10.0 s, load 2.30 s)`` for a command's summary line, or ''."""
    if not summary or not summary.get("holds"):
        return ""
    from govern import units

    reasons = ", ".join(
        f"{kind} {units.duration(seconds, 'spaced')}"
        for kind, seconds in summary["by_check"].items()
    )
    return f"; held {units.duration(summary['held_s'], 'spaced')} ({reasons})"


@click.group()
def throttle() -> None:
    """Hold batch work while replicas lag or the server is loaded (docs/throttle.md)."""


@throttle.command()
@connection_options
@state_option
@click.argument("checks", nargs=-1, metavar="[KEY=VALUE]...")
@click.option("--json", "as_json", is_flag=True, help="Print the govern.throttle.wait document.")
@click.pass_context
def wait(
    ctx: click.Context,
    settings: ConnectionSettings,
    state_path: str | None,
    checks: tuple[str, ...],
    as_json: bool,
) -> None:
    """Block until every check passes: for a script's batch loop.

    \b
    while more_rows; do govern throttle wait max_lag=2s || exit $?; write_batch; done

    Without checks: the job's (govern run --throttle, a catalog's [throttle]), else
    the [throttle] table of the nearest govern.toml. Connects with the connection
    options, else the job's account. Holds are recorded in the state file (the run's).

    Exit 0 when the checks pass; 75 when held longer than max_wait; 3 when a
    critical check fires or the server cannot be reached; 2 for a usage mistake.
    """
    from govern.output import print_json
    from govern.throttle import ThrottleStop, job_throttler
    from govern.throttle.connect import job_settings

    given = settings if connection_options_given(ctx) else (job_settings() or settings)
    throttler = job_throttler(
        checks, settings=given, state=state_path, work="govern throttle wait", where=""
    )
    stopped: ThrottleStop | None = None
    try:
        waited = throttler.pause()
    except ThrottleStop as exc:
        stopped, waited = exc, throttler.held_seconds
    finally:
        throttler.close()
    code = stopped.exit_code if stopped else 0
    if as_json:
        print_json(
            {
                "schema": WAIT_SCHEMA,
                "schema_version": SCHEMA_VERSION,
                "waited_s": round(waited, 3),
                "stopped": None if stopped is None else stopped.reason,
                "exit_code": code,
                **throttler.summary(),
            }
        )
    if stopped is not None:
        click.echo(f"govern: error: {stopped.message}", err=True)
    sys.exit(code)
