"""``govern digest``, ``govern digest merge`` and ``govern digest compare``: thin shells."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from govern.cli_options import state_option
from govern.digest.filters import parse_filters, parse_time
from govern.digest.options import DigestOptions, PtTablesOptions
from govern.errors import EXIT_FINDINGS, UsageError
from govern.output import info, is_terminal, warn
from govern.reports.digest_run import (
    FORMATS,
    ReportOptions,
    digest_logs,
    digest_store,
    merge_saved,
)

if TYPE_CHECKING:
    from govern.rules.digest_options import DigestRuleOptions

_SEVERITIES = ("info", "warning", "error")


def _report_options(command: Any) -> Any:
    """The report's options, handed to ``command`` as one ``report`` (and its ranking)."""

    @functools.wraps(command)
    def wrapper(
        *args: Any,
        output_format: str,
        top: int | None,
        output: str,
        window_files: tuple[str, ...],
        state_path: str | None,
        **kwargs: Any,
    ) -> Any:
        report = ReportOptions(output_format, top, output, window_files, state_path)
        return command(*args, report=report, **kwargs)

    for option in reversed(
        [
            click.option(
                "--format",
                "output_format",
                type=click.Choice(FORMATS),
                default="text",
                show_default=True,
                help="text: tables for a terminal; json: the govern.digest document "
                "(mergeable; docs/json.md); md: Markdown for CI comments; html: a "
                "self-contained page with charts (with -o).",
            ),
            click.option(
                "-o",
                "--output",
                default="-",
                metavar="FILE",
                help="Write the html page here [default: stdout].",
            ),
            click.option(
                "--windows",
                "window_files",
                multiple=True,
                metavar="HISTORY.json",
                help="Also shade these blind windows on the html load chart (govern history "
                "--json saved where govern run ran). Repeatable.",
            ),
            state_option,
            click.option(
                "--top",
                type=click.IntRange(min=1),
                help="Classes to show [default: 20 for text, md and html; all for json, so it can be merged].",
            ),
            click.option(
                "--order-by",
                default="Query_time:sum",
                show_default=True,
                metavar="ATTR:FUNC",
                help="Rank classes by an attribute's sum, max, min, avg or cnt.",
            ),
            click.option(
                "--max-classes",
                type=click.IntRange(min=1),
                default=10_000,
                show_default=True,
                help="Distinct classes kept; further ones are counted in an 'other' class.",
            ),
        ]
    ):
        wrapper = option(wrapper)
    return wrapper


def _with_rule_options(command: Any) -> Any:
    """The rules' options, handed to ``command`` as one ``rule_options`` (None: --no-rules)."""

    @functools.wraps(command)
    def wrapper(
        *args: Any,
        run_rules: bool,
        select: tuple[str, ...],
        ignore: tuple[str, ...],
        target: str | None,
        config_path: str | None,
        fail_on: str | None,
        **kwargs: Any,
    ) -> Any:
        options = _rule_options(run_rules, select, ignore, target, config_path, fail_on)
        return command(*args, rule_options=options, **kwargs)

    for option in reversed(
        [
            click.option(
                "--rules/--no-rules",
                "run_rules",
                default=True,
                show_default=True,
                help="Run the rule catalog over the classes (findings next to each class).",
            ),
            click.option(
                "--select",
                multiple=True,
                metavar="IDS",
                help="Only these rules (IDs or prefixes, comma-separated).",
            ),
            click.option(
                "--ignore", multiple=True, metavar="IDS", help="Skip these rules (IDs or prefixes)."
            ),
            click.option(
                "--target",
                metavar="NAME",
                help="Server the log comes from, for rules that need it: mariadb-10.11, "
                "mysql-8.0, mysql-5.7 … [default: the config's target].",
            ),
            click.option(
                "--config",
                "config_path",
                type=click.Path(dir_okay=False, exists=True),
                help="Rules config (govern.toml or pyproject.toml) [default: the nearest "
                "one from the working directory].",
            ),
            click.option(
                "--fail-on",
                type=click.Choice(_SEVERITIES),
                help="Exit 1 when a finding reaches this severity (CI gates).",
            ),
        ]
    ):
        wrapper = option(wrapper)
    return wrapper


def _with_pt_tables(command: Any) -> Any:
    """pt-query-digest's ``--review``/``--history`` tables, handed to ``command`` as one
    ``tables`` (docs/digest.md, "pt-query-digest's review and history tables")."""

    @functools.wraps(command)
    def wrapper(
        *args: Any,
        review: str | None,
        history: str | None,
        create_review_table: bool,
        create_history_table: bool,
        replicate_tables: bool,
        defaults_file: str | None,
        **kwargs: Any,
    ) -> Any:
        tables = PtTablesOptions(
            review,
            history,
            create_review_table,
            create_history_table,
            replicate_tables,
            defaults_file,
        )
        tables.check()
        if defaults_file and not tables.wanted:
            raise UsageError("--defaults-file: only with --review or --history")
        return command(*args, tables=tables, **kwargs)

    for option in reversed(
        [
            click.option(
                "--review",
                metavar="DSN",
                help="Upsert one row per class into pt-query-digest's review table: "
                "h=host,P=port,S=socket,u=user,F=option-file,D=db,t=table "
                "[default D=percona_schema,t=query_review].",
            ),
            click.option(
                "--history",
                metavar="DSN",
                help="Write one row of metrics per class into pt-query-digest's history "
                "table (DSN as --review) [default D=percona_schema,t=query_history].",
            ),
            click.option(
                "--create-review-table",
                is_flag=True,
                help="Create the review table (and database) as pt-query-digest does, if missing.",
            ),
            click.option(
                "--create-history-table",
                is_flag=True,
                help="Create the history table (and database) as pt-query-digest does, if missing.",
            ),
            click.option(
                "--replicate-tables",
                is_flag=True,
                help="Log the review/history writes in the binary log, so replicas get "
                "them [default: sql_log_bin=0].",
            ),
            click.option(
                "--defaults-file",
                type=click.Path(dir_okay=False),
                help="Option file with the credentials for --review/--history when their "
                "DSN has no F= [default: ~/.my.cnf].",
            ),
        ]
    ):
        wrapper = option(wrapper)
    return wrapper


def _rule_options(
    run_rules: bool,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    target: str | None,
    config_path: str | None,
    fail_on: str | None,
) -> DigestRuleOptions | None:
    """What the rule options ask for; None with --no-rules."""
    if not run_rules:
        given = [
            name
            for name, value in (
                ("--select", select),
                ("--ignore", ignore),
                ("--target", target),
                ("--config", config_path),
                ("--fail-on", fail_on),
            )
            if value
        ]
        if given:
            raise UsageError(f"{given[0]} has no effect with --no-rules")
        return None
    from govern.rules.digest_options import DigestRuleOptions
    from govern.rules.model import Severity

    if select or ignore:  # the catalog: else it loads during the digest (digest_run.py)
        from govern.rules.registry import parse_selectors
    return DigestRuleOptions(
        select=parse_selectors(select, "--select") if select else None,
        ignore=parse_selectors(ignore, "--ignore") if ignore else [],
        target=target,
        config=Path(config_path) if config_path else None,
        fail_on=Severity(fail_on) if fail_on else None,
    )


class _DigestCommand(click.Command):
    """``govern digest merge|compare …`` are those commands; anything else digests logs."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        if args and args[0] in _SUBCOMMANDS:
            command = _SUBCOMMANDS[args[0]]()
            return command.make_context(f"{info_name} {args[0]}", args[1:], parent=parent, **extra)
        return super().make_context(info_name, args, parent=parent, **extra)


@click.command(cls=_DigestCommand)
@click.argument("inputs", nargs=-1, metavar="FILE…")
@_report_options
@_with_rule_options
@_with_pt_tables
@click.option(
    "--since", metavar="TIME", help="Only events at or after TIME (log time, or 2h, 7d…)."
)
@click.option("--until", metavar="TIME", help="Only events before TIME.")
@click.option(
    "--filter",
    "filter_texts",
    multiple=True,
    metavar="KEY=GLOB",
    help="Keep events whose db, user, host, fingerprint or id matches (=, != or ~REGEX). Repeatable.",
)
@click.option(
    "--host",
    metavar="NAME",
    help="Label these logs with the server they come from (with --store: only hosts matching this glob).",
)
@click.option(
    "--store",
    metavar="URL",
    help="Report over a history store's buckets instead of logs (sqlite:PATH, sqlite: for the"
    " default file, or mysql://HOST/SCHEMA?defaults-file=PATH); --since defaults to 7d.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=0),
    default=0,
    help="Threads for the native core, worker processes for the Python engine [default: one per CPU; 1: none].",
)
def digest(
    inputs: tuple[str, ...],
    report: ReportOptions,
    order_by: str,
    max_classes: int,
    since: str | None,
    until: str | None,
    filter_texts: tuple[str, ...],
    host: str | None,
    store: str | None,
    jobs: int,
    rule_options: DigestRuleOptions | None,
    tables: PtTablesOptions,
) -> None:
    """Group slow-log events into query classes and report what costs the most.

    FILE may be a slow log from MySQL 5.0-8.x, Percona Server or MariaDB, a
    glob, - for stdin, a FIFO or <(zcat log.gz), or a gzip, bzip2 or xz file.
    Classes use pt-query-digest's fingerprints and query IDs. The rule catalog
    (govern rules) runs over each class: its sample query, and its runtime
    evidence (row-at-a-time writes, N+1 reads, oversized batches, query-cache
    policy). A log file named merge or compare: govern digest ./merge.

    \b
    Merge saved JSON digests (several hosts or days, valid percentiles):
      govern digest merge db1.json db2.json [--format …] [--top N]
    Compare two saved digests (classes new, gone, slower, faster):
      govern digest compare before.json after.json [--format text|json|md|html]
    A page with charts and govern run's blind windows shaded:
      govern digest FILE --format html -o report.html
    Fill pt-query-digest's review and history tables (Anemometer):
      govern digest FILE --review h=db1,D=pt,t=review --history h=db1,D=pt,t=history
    A week of a history store's buckets (govern collect --store), hosts db*:
      govern digest --store mysql://dbadmin/govern_history --since 7d --host 'db*'

    Exit codes: 0 ok, 1 findings at or above --fail-on, 2 bad option, config
    or unreadable input, 3 the --review/--history server refused or failed.
    """
    if store is not None:
        if inputs:
            raise UsageError("--store: reports over the store's buckets, give no FILE too")
        if filter_texts:
            raise UsageError("--filter: not with --store (the store keeps classes, not events)")
        if tables.wanted:
            raise UsageError("--review/--history: not with --store (give the slow logs)")
        code = digest_store(
            store,
            report,
            rule_options,
            since=parse_time("--since", since or "7d"),
            until=parse_time("--until", until) if until else _now(),
            hosts=host,
            order_by=order_by,
            max_classes=max_classes,
        )
        if code:
            raise SystemExit(EXIT_FINDINGS)
        return
    options = DigestOptions(
        order_by=order_by,
        max_classes=max_classes,
        since=parse_time("--since", since) if since else None,
        until=parse_time("--until", until) if until else None,
        filters=parse_filters(filter_texts),
        filter_texts=list(filter_texts),
        host=host,
        jobs=jobs,
    )
    _say_engine()
    if digest_logs(inputs, options, report, rule_options, tables=tables):
        raise SystemExit(EXIT_FINDINGS)


def _now() -> str:
    import datetime as dt

    return dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S")


def _say_engine() -> None:
    """Which engine digests: on a terminal always, and anywhere when the core is missing
    (the Python engine is many times slower; docs/digest.md, "Engines")."""
    from govern import native

    name, detail = native.engine()
    if native.missing():
        warn(f"digest engine: Python ({detail}); the native core is many times faster")
    elif is_terminal():
        info(f"digest engine: {'native' if name == 'native' else 'Python'} ({detail})")


@click.command()
@click.argument("documents", nargs=-1, metavar="DIGEST.json…")
@_report_options
@_with_rule_options
@_with_pt_tables
def merge(
    documents: tuple[str, ...],
    report: ReportOptions,
    order_by: str,
    max_classes: int,
    rule_options: DigestRuleOptions | None,
    tables: PtTablesOptions,
) -> None:
    """Merge saved digests (govern digest --format json) into one report.

    Classes join on their query ID; counts, sums and sketches add up, so the
    merged percentiles are as good as a digest of all the logs at once. Use
    --host when saving each digest to see the top servers per class. The
    rules run again over the merged classes. A saved digest is checked against
    the published schema (docs/json.md) first: a damaged one is refused (exit 2)
    with the path of its bad field.
    """
    if not documents and Path("merge").is_file():
        raise UsageError(
            "no input: give digests saved with --format json (to digest the log file named "
            "merge: govern digest ./merge)"
        )
    code = merge_saved(
        documents,
        report,
        rule_options,
        order_by=order_by,
        max_classes=max_classes,
        tables=tables,
    )
    if code:
        raise SystemExit(EXIT_FINDINGS)


def _compare() -> click.Command:
    from govern.commands.digest_compare import compare

    return compare


#: ``govern digest NAME …`` runs these instead of digesting a file named NAME.
_SUBCOMMANDS: dict[str, Any] = {"merge": lambda: merge, "compare": _compare}
