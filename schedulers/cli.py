"""``govern schedule plan|run|serve|simulate|history|report``: thin shells over the schedulers library."""

from __future__ import annotations

import signal
import tomllib
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

from govern.cli_options import state_option
from govern.errors import EXIT_FINDINGS, UsageError
from govern.output import print_json
from govern.schedulers.catalog import POLICIES, load_catalog
from govern.state import StateStore

if TYPE_CHECKING:
    from govern.schedulers.catalog import Catalog
    from govern.schedulers.history import History
    from govern.schedulers.rerun import Rerun

_catalog_argument = click.argument(
    "catalog_path", metavar="CATALOG", type=click.Path(exists=True, dir_okay=False)
)
_policy_option = click.option(
    "--policy",
    type=click.Choice(POLICIES),
    help="Override the catalog's policy.",
)
_json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON (docs/json.md).")


@click.group()
def schedule() -> None:
    """Nightly summary builds, shortest-job-first over replicas.

    A TOML catalog lists the jobs, how to size them (a cache table of row counts),
    their dependencies, and the workers (replicas) that run them. Exit codes:
    0 ok, 1 a job failed, 2 catalog or usage error, 3 server error.
    """


@schedule.command()
@_catalog_argument
@_policy_option
@state_option
@_json_option
def plan(catalog_path: str, policy: str | None, state_path: str | None, as_json: bool) -> None:
    """Show the order, the lane of each job, predicted start and finish, and the
    "% done vs % of the night" curve. Reads only: changes nothing.

    Exit 1 when the night would be refused (no server fit for the sizing read, too few
    sizing keys), as `run` would refuse it."""
    from govern.schedulers.cron import next_fire_time
    from govern.schedulers.history import History
    from govern.schedulers.night import secrets_dir
    from govern.schedulers.plan import make_plan
    from govern.schedulers.render import print_plan
    from govern.schedulers.workers import ServerPool

    catalog = load_catalog(catalog_path)
    schedule = catalog.schedule
    start = next_fire_time(schedule.cron, schedule.timezone) if schedule else None  # None: now
    with StateStore.open(state_path) as store, ServerPool(catalog, secrets_dir(store)) as pool:
        document = make_plan(catalog, pool, History(store), policy, base_time=start).to_json()
    if as_json:
        print_json(document)
    else:
        print_plan(document)
        for message in document["warnings"]:
            click.echo(f"govern: warning: {message}", err=True)
    if document.get("refusal"):
        click.echo(f"govern: the night would be refused: {document['refusal']}", err=True)
        raise SystemExit(EXIT_FINDINGS)


@schedule.command()
@_catalog_argument
@_policy_option
@click.option(
    "--resume",
    is_flag=True,
    help="Go on with the last night, interrupted: run only what it left (same night, same date).",
)
@click.option(
    "--only-failed",
    is_flag=True,
    help="Go on with the last night that failed: run again every job that did not end ok.",
)
@click.option(
    "--job",
    "job_globs",
    multiple=True,
    metavar="GLOB",
    help="Only the jobs whose name matches (repeatable); dependencies outside are taken as done.",
)
@click.option(
    "--date",
    "night_date",
    metavar="YYYY-MM-DD",
    help="The night's {date} in the sizing query and jobs, $GOVERN_DATE [default: today].",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print what would run, where and in which order; only the sizing reads a server.",
)
@state_option
@_json_option
def run(
    catalog_path: str,
    policy: str | None,
    resume: bool,
    only_failed: bool,
    job_globs: tuple[str, ...],
    night_date: str | None,
    dry_run: bool,
    state_path: str | None,
    as_json: bool,
) -> None:
    """Run the night now, with a progress bar on a terminal.

    A failed job does not stop the others (retries, timeouts and skipped dependents
    as the catalog says). Ctrl-C or SIGTERM starts nothing new and ends running jobs.
    Exit 0 when every job succeeded, 1 otherwise.
    """
    from govern.schedulers.night import run_night
    from govern.schedulers.render import print_night
    from govern.schedulers.rerun import Rerun, parse_date
    from govern.schedulers.runner import StopRequest

    if resume and only_failed:
        raise UsageError("--resume and --only-failed are exclusive")
    rerun = Rerun(
        date=parse_date(night_date) if night_date is not None else None,
        jobs=job_globs,
        resume=resume,
        only_failed=only_failed,
    )
    catalog = load_catalog(catalog_path)
    if dry_run:
        _dry_run(catalog, policy, rerun, state_path, as_json)
        return
    stop = StopRequest()

    def on_term(signum: int, frame: FrameType | None) -> None:
        stop.request(0)

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        with StateStore.open(state_path) as store:
            night = run_night(catalog, store, policy=policy, stop=stop, rerun=rerun)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if as_json:
        print_json(night)
    else:
        print_night(night, jobs=False)
    if night["status"] != "ok":
        raise SystemExit(EXIT_FINDINGS)


def _dry_run(
    catalog: Catalog, policy: str | None, rerun: Rerun, state_path: str | None, as_json: bool
) -> None:
    """``run --dry-run``: the plan of exactly what ``run`` would start, nothing started."""
    from govern.schedulers.night import dry_run
    from govern.schedulers.render import print_plan

    with StateStore.open(state_path) as store:
        plan, day, night = dry_run(catalog, store, policy=policy, rerun=rerun)
    document = plan.to_json()
    if as_json:
        print_json(document)
        return
    which = f"night {night} would go on" if night is not None else "a new night would run"
    click.echo(f"dry run, nothing started: {which} for {day}, {len(document['jobs'])} jobs")
    print_plan(document)
    for message in document["warnings"]:
        click.echo(f"govern: warning: {message}", err=True)


@schedule.command()
@_catalog_argument
@state_option
def serve(catalog_path: str, state_path: str | None) -> None:
    """Run nights on the catalog's [schedule] cron, until SIGTERM or Ctrl-C.

    APScheduler 3.11: cron trigger in the catalog's timezone, misfire grace and
    coalescing for nights missed while the service was down, never two nights at
    once. On SIGTERM it starts nothing new, gives running jobs shutdown_grace,
    then stops them. History stays in the state store across restarts.

    With [schedule] lease, serve runs on two hosts: the one holding a lock on the
    primary is active, the other takes over within the lease and goes on with the
    night (the night's ledger on the primary), never running an ended job again.
    """
    from govern.schedulers.service import serve_forever

    serve_forever(Path(catalog_path), state_path)


@schedule.command()
@_catalog_argument
@click.option(
    "--night",
    "night_ref",
    metavar="ID|last",
    help="Replay this recorded night [default: the last one that ran].",
)
@click.option(
    "--estimated",
    is_flag=True,
    help="Use tonight's estimates instead of a recorded night (reads the servers).",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 1000),
    help="Replay on N identical one-slot workers instead of the catalog's.",
)
@click.option(
    "--policies",
    default=",".join(POLICIES),
    show_default=True,
    help="Comma-separated policies to compare.",
)
@state_option
@_json_option
def simulate(
    catalog_path: str,
    night_ref: str | None,
    estimated: bool,
    workers: int | None,
    policies: str,
    state_path: str | None,
    as_json: bool,
) -> None:
    """Replay policies on recorded or estimated durations and compare mean completion,
    makespan and the % done curve."""
    from govern.schedulers.compare import catalog_lanes, compare_policies, recorded_inputs
    from govern.schedulers.history import History
    from govern.schedulers.render import print_simulation

    chosen = [p.strip() for p in policies.split(",") if p.strip()]
    for policy in chosen:
        if policy not in POLICIES:
            raise UsageError(
                f"--policies: unknown policy {policy!r} (one of {', '.join(POLICIES)})"
            )
    if estimated and night_ref:
        raise UsageError("--estimated and --night are exclusive")
    catalog = load_catalog(catalog_path)
    lanes, uniform = catalog_lanes(catalog, workers)
    notes: list[str] = []
    with StateStore.open(state_path) as store:
        history = History(store)
        night = None
        if not estimated:
            night = _find_night(history, catalog.name, night_ref, ran_only=True)
        if night is None:
            if night_ref:
                raise UsageError(f"--night {night_ref}: no such night of {catalog.name!r}")
            from govern.schedulers.night import secrets_dir
            from govern.schedulers.plan import make_plan
            from govern.schedulers.workers import ServerPool

            with ServerPool(catalog, secrets_dir(store)) as pool:
                planned = make_plan(catalog, pool, history)
            tasks = planned.tasks
            durations = {
                t.name: planned.unknown_seconds if t.estimate is None else t.estimate for t in tasks
            }
            source = "estimated"
            notes.extend(planned.warnings)
            if planned.refusal:
                notes.append(f"`run` would refuse tonight's night: {planned.refusal}")
        else:
            tasks, durations, notes = recorded_inputs(catalog, night)
            source = "recorded"
    document = compare_policies(
        catalog,
        tasks,
        durations,
        lanes,
        source=source,
        night=night,
        policies=chosen,
        notes=notes,
        uniform=uniform,
    )
    if as_json:
        print_json(document)
    else:
        print_simulation(document)


def _find_night(
    history: History, schedule: str | None, ref: str | None, *, ran_only: bool
) -> dict[str, Any] | None:
    """``--night ID|last`` (of this schedule, when given); None or "last": the newest."""
    if ref in (None, "last"):
        ids = history.night_ids(schedule, limit=1, ran_only=ran_only)
        return history.night(ids[0]) if ids else None
    try:
        night = history.night(int(str(ref)))
    except ValueError:
        raise UsageError(f"--night {ref}: expected a night id or 'last'") from None
    if night is None or (schedule is not None and night["schedule"] != schedule):
        return None
    return night


@schedule.command()
@click.argument("catalog_or_name", metavar="[CATALOG|NAME]", required=False)
@click.option("--night", "night_ref", metavar="ID|last", help="Show one night job by job.")
@click.option(
    "--limit",
    type=click.IntRange(1, 100000),
    default=20,
    show_default=True,
    help="How many nights.",
)
@state_option
@_json_option
def history(
    catalog_or_name: str | None,
    night_ref: str | None,
    limit: int,
    state_path: str | None,
    as_json: bool,
) -> None:
    """Past nights (newest first): status, jobs done, makespan, share done at half time,
    estimate error. With --night, every job: lane, estimate vs actual, outcome."""
    from govern.schedulers.history import HISTORY_SCHEMA, SCHEMA_VERSION, History
    from govern.schedulers.render import print_history, print_night

    schedule_name = _schedule_name(catalog_or_name)
    with StateStore.open(state_path) as store:
        past = History(store)
        past.reap_stale()
        if night_ref is not None:
            night = _find_night(past, schedule_name, night_ref, ran_only=False)
            if night is None:
                raise UsageError(f"--night {night_ref}: no such night")
            nights = [night]
        else:
            nights = list(past.nights(schedule_name, limit))
    if as_json:
        print_json({"schema": HISTORY_SCHEMA, "schema_version": SCHEMA_VERSION, "nights": nights})
    elif night_ref is not None:
        print_night(nights[0], jobs=True)
    elif nights:
        print_history(nights)
    else:
        click.echo("no nights recorded" + (f" for {schedule_name}" if schedule_name else ""))


def _schedule_name(value: str | None) -> str | None:
    """A catalog file gives its ``name`` (or file stem); anything else is a schedule name."""
    if value is None:
        return None
    path = Path(value)
    if not path.is_file():
        return value
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return path.stem
    name = data.get("name")
    return name if isinstance(name, str) else path.stem


@schedule.command()
@click.argument("catalog_or_name", metavar="[CATALOG|NAME]", required=False)
@click.option(
    "--night",
    "night_ref",
    metavar="ID|last",
    help="The night to show [default: the last one that ran].",
)
@click.option(
    "-o",
    "--output",
    required=True,
    metavar="FILE",
    help="Write the HTML page here ('-' for stdout).",
)
@state_option
def report(
    catalog_or_name: str | None, night_ref: str | None, output: str, state_path: str | None
) -> None:
    """One night as an HTML page: a Gantt chart per replica, the "% done vs % of the
    night" curve with the policies of `govern schedule simulate` overlaid (given the
    CATALOG file), and estimate vs actual per job. Opens with no network."""
    from govern.html.page import write_page
    from govern.reports.schedule import schedule_report
    from govern.schedulers.compare import catalog_lanes, compare_policies, recorded_inputs
    from govern.schedulers.history import History

    catalog = None
    if catalog_or_name is not None and Path(catalog_or_name).is_file():
        catalog = load_catalog(catalog_or_name)
    schedule_name = catalog.name if catalog else _schedule_name(catalog_or_name)
    with StateStore.open(state_path) as store:
        past = History(store)
        past.reap_stale()
        night = _find_night(past, schedule_name, night_ref, ran_only=True)
    if night is None:
        which = f"--night {night_ref}" if night_ref else "the last night"
        of = f" of {schedule_name!r}" if schedule_name else ""
        raise UsageError(f"{which}: no such night{of} in the state store")
    simulation = None
    if catalog is not None and night["schedule"] == catalog.name:
        tasks, durations, notes = recorded_inputs(catalog, night)
        lanes, uniform = catalog_lanes(catalog, None)
        simulation = compare_policies(
            catalog,
            tasks,
            durations,
            lanes,
            source="recorded",
            night=night,
            notes=notes,
            uniform=uniform,
        )
    write_page(schedule_report(night, simulation), output)
