"""``govern collect``: a thin Click shell over govern.collect (setup, service, report)."""

from __future__ import annotations

import click

from govern import units
from govern.cli_options import connection_options, state_option
from govern.collect.buckets import parse_width
from govern.connection import ConnectionSettings, resolve_settings
from govern.errors import UsageError
from govern.history.sink import Retention


def parse_duration(text: str, option: str) -> float:
    """Seconds (0 allowed) from ``30s``, ``5m``, ``1h``, ``500ms``, or a usage error."""
    try:
        return units.parse_duration(text)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None


@click.command()
@click.argument("logs", nargs=-1, metavar="[LOG…]")
@click.option("--to", "to", metavar="DIR", help="Directory of the buckets (govern.digest files).")
@click.option(
    "--store",
    metavar="URL",
    help="Write the buckets into a history store (sqlite:PATH, sqlite: for the default file,"
    " or mysql://HOST/SCHEMA?defaults-file=PATH); with --to, into both.",
)
@click.option(
    "--keep-hourly",
    default="14d",
    show_default=True,
    help="With --store: days of buckets kept; older days keep only their daily roll-up.",
)
@click.option(
    "--keep",
    default="400d",
    show_default=True,
    help="With --store: everything older than this is dropped.",
)
@click.option(
    "--json-field",
    metavar="FIELD",
    help="The LOG files are JSON lines (CloudWatch export, Docker logs): the slow-log text"
    " is in FIELD (message, log, or a dotted path).",
)
@click.option(
    "--backfill",
    is_flag=True,
    help="On the first run, also read the rotated files beside each LOG once (slow.log.1,"
    " slow.log.2.gz …), oldest first.",
)
@click.option("--table", is_flag=True, help="Read mysql.slow_log over the connection.")
@click.option(
    "--performance-schema",
    "performance_schema",
    is_flag=True,
    help="Read Performance Schema statement digests over the connection (deltas per poll).",
)
@connection_options
@click.option(
    "--label",
    "host_label",
    metavar="NAME",
    help="The server's name in the buckets and their file names (as govern digest --host)"
    " [default: its @@hostname, or this machine's].",
)
@click.option("--bucket", default="1h", show_default=True, help="Bucket width (divides a day).")
@click.option(
    "--close-after",
    default="5m",
    show_default=True,
    help="A bucket closes this long after its end once every source is caught up.",
)
@click.option(
    "--settle",
    default="2s",
    show_default=True,
    help="A log quiet this long is read to its end (its last event is complete).",
)
@click.option("--once", is_flag=True, help="Read what is there, commit, exit (for cron).")
@click.option(
    "--interval",
    default="30s",
    show_default=True,
    help="Without --once: poll this often, as a service, until SIGTERM.",
)
@click.option(
    "--explain-on",
    metavar="FILE|DSN",
    help="EXPLAIN the worst samples of each closing bucket on this server (an option file"
    " or mysql://user@host:port; a replica, normally).",
)
@click.option("--explain-top", default=5, show_default=True, type=click.IntRange(min=1))
@click.option("--explain-timeout", default="2s", show_default=True)
@click.option(
    "--json", "as_json", is_flag=True, help="With --once: print a govern.collect document."
)
@state_option
def collect(
    logs: tuple[str, ...],
    to: str | None,
    store: str | None,
    keep_hourly: str,
    keep: str,
    json_field: str | None,
    backfill: bool,
    table: bool,
    performance_schema: bool,
    settings: ConnectionSettings,
    host_label: str | None,
    bucket: str,
    close_after: str,
    settle: str,
    once: bool,
    interval: str,
    explain_on: str | None,
    explain_top: int,
    explain_timeout: str,
    as_json: bool,
    state_path: str | None,
) -> None:
    """Read slow logs, mysql.slow_log and Performance Schema continuously into
    time buckets of query classes, nothing read twice.

    LOG files are followed across appends and rotations (rename and create,
    copytruncate, compressed rotated files). Each closed bucket is written to
    DIR as a govern.digest document, one per host and bucket:

    \b
      govern collect /var/log/mysql/slow.log --to /var/lib/govern/buckets --once
      govern digest merge /var/lib/govern/buckets/db1_2026-11-25T*.json

    Or into a history store (docs/history.md), reported with govern digest --store:

    \b
      govern collect /var/log/mysql/slow.log --store sqlite: --once

    Exit codes: 0 ok, 2 bad option or unreadable file, 3 server error.
    """
    from govern.collect.explain import ExplainOptions
    from govern.collect.setup import CollectRequest, build_collector

    if as_json and not once:
        raise UsageError("--json: only with --once")
    explain = None
    if explain_on:
        explain = ExplainOptions(
            _explain_settings(explain_on),
            top=explain_top,
            seconds=parse_duration(explain_timeout, "--explain-timeout"),
        )
    request = CollectRequest(
        logs=list(logs),
        json_field=json_field,
        backfill=backfill,
        table=table,
        performance_schema=performance_schema,
        settings=settings,
        to=to,
        store=store,
        retention=_retention(keep_hourly, keep),
        host=host_label,
        bucket_seconds=parse_width(bucket),
        close_after=parse_duration(close_after, "--close-after"),
        settle=parse_duration(settle, "--settle"),
        state_path=state_path,
        explain=explain,
    )
    poll_every = parse_duration(interval, "--interval")
    collector, explainer = build_collector(request)
    from govern.collect.report import Reporter

    reporter = Reporter(collector.options.host, show_progress=once and not as_json)
    try:
        with collector:
            if once:
                from govern.collect.service import collect_once

                with reporter:
                    collect_once(collector, reporter.on_poll)
            else:
                from govern.collect.service import serve

                reporter.started(collector, poll_every)
                serve(collector, poll_every, reporter.on_poll)
    finally:
        if explainer is not None:
            explainer.close()
        close = getattr(collector.sink, "close", None)
        if close is not None:
            close()
    if as_json:
        from govern.output import print_json

        print_json(reporter.document())


def _retention(keep_hourly: str, keep: str) -> Retention:
    days = [parse_duration(text, option) / 86400 for text, option in
            ((keep_hourly, "--keep-hourly"), (keep, "--keep"))]  # fmt: skip
    for value, option in zip(days, ("--keep-hourly", "--keep"), strict=True):
        if value < 1 or value != int(value):
            raise UsageError(f"{option}: whole days, at least 1d")
    if days[0] > days[1]:
        raise UsageError(f"--keep-hourly {keep_hourly} is longer than --keep {keep}")
    return Retention(int(days[0]), int(days[1]))


def _explain_settings(value: str) -> ConnectionSettings:
    if value.startswith(("mysql://", "mariadb://")):
        return resolve_settings(dsn=value, environ={})
    return resolve_settings(defaults_file=value, environ={})
