"""``govern regressions``: a thin Click shell over :mod:`govern.history.regressions`."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click

from govern.errors import EXIT_FINDINGS, ServerError, UsageError
from govern.units import parse_duration


def _duration(value: str, option: str) -> dt.timedelta:
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None
    if seconds <= 0:
        raise UsageError(f"{option} {value}: must be above 0")
    return dt.timedelta(seconds=seconds)


def _until(value: str | None) -> dt.datetime:
    """The window's end: the start of this hour by default (cron at 07:02 judges 06:00–07:00
    as the last hour), else a time or a duration back from now."""
    from govern.digest.filters import parse_time

    if value is None:
        return dt.datetime.now().replace(minute=0, second=0, microsecond=0)
    return dt.datetime.strptime(parse_time("--until", value), "%Y-%m-%d %H:%M:%S")


@click.command()
@click.option(
    "--store",
    "url",
    metavar="URL",
    help="The history store govern collect --store writes (sqlite:PATH or"
    " mysql://[GROUP@]HOST[:PORT]/SCHEMA?defaults-file=PATH) [default: history.db in"
    " govern's state directory].",
)
@click.option(
    "--baseline",
    default="7d",
    show_default=True,
    help="What normal is: this long before the window.",
)
@click.option(
    "--window", default="24h", show_default=True, help="What is judged: this long before --until."
)
@click.option(
    "--until",
    metavar="TIME",
    help="End of the window: YYYY-MM-DD[ HH:MM[:SS]] or a duration back from now"
    " [default: the start of the current hour].",
)
@click.option("--host", "pattern", metavar="GLOB", help="Only hosts matching this glob (db*).")
@click.option(
    "--factor",
    default=2.0,
    show_default=True,
    type=click.FloatRange(min=1.0, min_open=True),
    help="How many times worse p95, p99 or total time per hour must be.",
)
@click.option(
    "--min-count",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    help="Events a class needs in the window (and in the baseline for p95/p99).",
)
@click.option(
    "--min-time",
    default="10ms",
    show_default=True,
    help="p95/p99 must also grow by this much; total time by --min-count times this.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "md"]),
    default="text",
    show_default=True,
    help="text: for cron mail; json: the govern.regressions document (docs/json.md);"
    " md: Markdown for a PR or chat comment.",
)
def regressions(
    url: str | None,
    baseline: str,
    window: str,
    until: str | None,
    pattern: str | None,
    factor: float,
    min_count: int,
    min_time: str,
    output_format: str,
) -> None:
    """Classes the last --window does worse than the --baseline before it, per host and
    fleet-wide: new classes, p95/p99 or total time up by --factor, plan changes (a full
    scan appeared, another key), each with the hour it changed.

    \b
      govern regressions --store sqlite:/var/lib/govern/history.db --baseline 7d --window 24h

    Exit codes: 0 none found, 1 regressions found, 2 usage error, 3 store unreachable.
    """
    from govern.history.regressions import Rules, find_regressions
    from govern.history.store import open_store

    try:
        noise = parse_duration(min_time)
    except ValueError as exc:
        raise UsageError(f"--min-time: {exc}") from None
    rules = Rules(factor=factor, min_count=min_count, min_time=noise)
    spans = _duration(baseline, "--baseline"), _duration(window, "--window")
    end = _until(until)
    _must_exist(url)
    from govern.progress import progress

    store = open_store(url)
    try:
        with progress("judging hosts", None) as bar:
            started: list[str] = []

            def judging(host: str, hosts: int) -> None:
                """A host begins: the one before it is done."""
                bar.update_total(hosts)
                if started:
                    bar.advance()
                started.append(host)

            outcome = find_regressions(
                store,
                baseline=spans[0],
                window=spans[1],
                until=end,
                pattern=pattern,
                rules=rules,
                progress=judging,
            )
    finally:
        store.close()
    if not outcome.hosts:
        from govern.output import warn

        warn(
            f"{store.url}: no bucket between {end - spans[0] - spans[1]:%Y-%m-%d %H:%M} and"
            f" {end:%Y-%m-%d %H:%M}{f' for hosts {pattern}' if pattern else ''}:"
            " is govern collect --store running?"
        )
    if output_format == "json":
        from govern.output import print_json

        print_json(outcome.to_json())
    else:
        from govern.reports.regressions import to_markdown, to_text

        click.echo((to_markdown if output_format == "md" else to_text)(outcome), nl=False)
    if outcome.regressions:
        raise SystemExit(EXIT_FINDINGS)


def _must_exist(url: str | None) -> None:
    """A SQLite store that is not there is unreachable (exit 3), not an empty one to create."""
    from govern.history.store import default_history_path

    if url and url.startswith(("mysql://", "mariadb://")):
        return
    rest = (url or "").removeprefix("sqlite://").removeprefix("sqlite:")
    path = Path(rest).expanduser() if rest else default_history_path()
    if not path.is_file():
        raise ServerError(
            f"--store {url or 'sqlite:'}: no store at {path} (govern collect --store writes it)"
        )
