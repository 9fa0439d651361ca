"""``govern lint`` and ``govern rules``: thin Click shells over rules.lint and the catalog."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from govern.cli_options import connection_options, connection_options_given, format_option
from govern.connection import ConnectionSettings
from govern.errors import EXIT_FINDINGS, UsageError
from govern.output import is_terminal, print_json
from govern.rules.model import Severity
from govern.rules.registry import parse_selectors


def _wants_server(target: str | None) -> bool:
    """``--target server`` or any connection option on the command line."""
    given = connection_options_given(click.get_current_context())
    if given and target not in (None, "server"):
        raise UsageError("--target: give a target name or connection options, not both")
    return given or target == "server"


@click.command()
@click.argument("paths", nargs=-1, metavar="[PATH|DIR|GLOB|-]...")
@click.option(
    "--target",
    metavar="NAME",
    help="Target server: mariadb-10.11, mysql-8.0, mysql-5.7, mysql-8.0.18 …, or 'server' "
    "to read it from the server the connection options name.",
)
@click.option(
    "--select",
    multiple=True,
    metavar="IDS",
    help="Only these rules (IDs or prefixes, comma-separated).",
)
@click.option("--ignore", multiple=True, metavar="IDS", help="Skip these rules (IDs or prefixes).")
@click.option(
    "--severity",
    type=click.Choice([s.value for s in Severity]),
    help="Report and fail only at or above this severity [default: warning, or the config's].",
)
@format_option("text", "json", "sarif", "github")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, exists=True),
    help="Use this govern.toml/pyproject.toml for every file instead of the nearest one.",
)
@click.option(
    "--baseline",
    type=click.Path(dir_okay=False),
    help="Baseline file: findings recorded there are not reported (CI fails on new ones only).",
)
@click.option(
    "--write-baseline", is_flag=True, help="Record the current findings in --baseline and exit 0."
)
@connection_options
def lint(
    settings: ConnectionSettings,
    paths: tuple[str, ...],
    target: str | None,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    severity: str | None,
    output_format: str,
    config_path: str | None,
    baseline: str | None,
    write_baseline: bool,
) -> None:
    """Lint SQL files for query-cache and batching policy.

    PATHS are files, directories (searched for *.sql), glob patterns, or - for
    stdin; default: the current directory. Settings come from the nearest
    govern.toml or pyproject.toml [tool.govern]; options here override them.

    Exit codes: 0 no findings at or above --severity, 1 findings, 2 usage or
    config error, 3 the server named for --target could not be read.
    """
    from govern.rules.lint import LintOptions, lint_paths

    live = None
    if _wants_server(target):
        from govern.rules.target import target_from_server

        live = target_from_server(settings)
    options = LintOptions(
        select=parse_selectors(select, "--select") if select else None,
        ignore=parse_selectors(ignore, "--ignore"),
        severity=Severity(severity) if severity else None,
        target=None if live else target,
        live_target=live,
        config=Path(config_path) if config_path else None,
        baseline=Path(baseline) if baseline else None,
        write_baseline=write_baseline,
    )
    report = lint_paths(paths or (".",), options)
    if not report.files:
        from govern.output import warn

        warn(
            f"no SQL files found in {' '.join(paths or ('.',))} (directories are searched for *.sql)"
        )
    if output_format == "json":
        from govern.rules.formats import render_json

        sys.stdout.write(render_json(report))
    elif output_format == "sarif":
        from govern.rules.sarif import render_sarif

        sys.stdout.write(render_sarif(report))
    elif output_format == "github":
        from govern.rules.formats import render_github, summary_lines

        sys.stdout.write(render_github(report))
        for line in summary_lines(report):
            click.echo(line, err=True)
    else:
        from govern.rules.formats import render_text

        sys.stdout.write(render_text(report, color=is_terminal(sys.stdout)))
    if report.exit_code and not write_baseline:
        raise SystemExit(EXIT_FINDINGS)


@click.group(invoke_without_command=True)
@format_option("text", "json")
@click.pass_context
def rules(ctx: click.Context, output_format: str) -> None:
    """List the rule catalog (IDs, severities, what each needs).

    `govern rules explain ID` prints one rule's documentation, with the
    anti-pattern and best-practice SQL and its options.
    """
    if ctx.invoked_subcommand is not None:
        return
    from govern.rules.registry import all_rules

    catalog = all_rules()
    if output_format == "json":
        print_json(
            {
                "schema": "govern.rules",
                "schema_version": 1,
                "rules": [
                    {
                        "id": r.id,
                        "name": r.name,
                        "severity": r.severity.value,
                        "needs": sorted(n.value for n in r.needs),
                        "summary": r.summary(),
                        "options": [
                            {"name": o.name, "default": o.default, "help": o.help}
                            for o in r.options
                        ],
                    }
                    for r in catalog
                ],
            }
        )
        return
    from rich.table import Table

    from govern.output import console

    table = Table(title="govern rules", title_justify="left")
    for column in ("id", "name", "severity", "needs", "summary"):
        table.add_column(column, no_wrap=column != "summary")
    for r in catalog:
        needs = ", ".join(sorted(n.value for n in r.needs if n.value != "sql")) or "-"
        table.add_row(r.id, r.name, r.severity.value, needs, r.summary())
    console().print(table)


@rules.command()
@click.argument("rule_id", metavar="ID")
def explain(rule_id: str) -> None:
    """Print a rule's documentation: why, anti-pattern, best practice, options."""
    from govern.rules.registry import get_rule

    rule = get_rule(rule_id)
    if rule is None:
        raise UsageError(f"unknown rule {rule_id!r} (see 'govern rules')")
    needs = ", ".join(sorted(n.value for n in rule.needs))
    lines = [
        f"{rule.id} {rule.name} ({rule.severity.value}; needs: {needs})",
        "",
        rule.summary(),
        "",
    ]
    lines.append(rule.documentation())
    if rule.options:
        lines += ["", f"Options ([tool.govern.rules.{rule.id}] in pyproject.toml or govern.toml):"]
        lines += [f"  {o.name} = {o.default!r}: {o.help}" for o in rule.options]
    lines += ["", f'Severity: [tool.govern.rules.{rule.id}] severity = "error|warning|info"']
    lines += [
        f"Suppress: -- govern: ignore[{rule.id}]  (a statement)  or  -- govern: ignore-file[{rule.id}]",
        f'  on a digest class: per-class-ignores = {{ "QUERY_ID" = ["{rule.id}"] }} in '
        "[tool.govern.rules], or /* govern: ignore[…] */ in the application's SQL",
    ]
    click.echo("\n".join(lines))
