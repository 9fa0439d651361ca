"""``govern doctor``: a thin shell over :func:`govern.doctor.run_doctor`."""

from __future__ import annotations

import click

from govern.cli_options import connection_options
from govern.connection import ConnectionSettings, connect
from govern.doctor import DoctorReport, run_doctor
from govern.errors import EXIT_FINDINGS
from govern.output import print_json


@click.command()
@connection_options
@click.option(
    "--json", "as_json", is_flag=True, help="Print the report as JSON (schema govern.doctor/1)."
)
def doctor(settings: ConnectionSettings, as_json: bool) -> None:
    """Can govern do its work on this server? Read-only: changes nothing.

    Reports the server, its slow-log, query-cache, event and replication settings,
    and, per govern feature, whether this account has what it needs and the GRANT
    that would fix it. Exit 0 when every feature is ready, 1 when some is not,
    3 when the server cannot be reached.
    """
    conn = connect(settings, command="doctor")
    try:
        report = run_doctor(conn, settings)
    finally:
        conn.close()
    if as_json:
        print_json(report.to_json())
    else:
        render_text(report)
    if not report.all_ready:
        raise SystemExit(EXIT_FINDINGS)


def _yes(value: bool | None) -> str:
    return "unknown" if value is None else ("yes" if value else "no")


def render_text(report: DoctorReport) -> None:
    from rich.table import Table

    from govern.output import console

    out = console()
    data = report.to_json()
    s, slow, qc, repl = data["server"], data["slow_log"], data["query_cache"], data["replication"]
    table = Table(
        title=f"govern doctor: {report.connection}", show_header=False, title_justify="left"
    )
    table.add_column("setting", style="bold")
    table.add_column("value")
    table.add_row("server", f"{report.server.label} ({s['version_string']})")
    table.add_row("account", report.account)
    table.add_row("read_only", _yes(s["read_only"]))
    table.add_row("binary log", _yes(s["binlog"]))
    table.add_row(
        "slow log",
        f"{'ON' if slow['enabled'] else 'OFF'} ({slow['variable']}), file {slow['file']}, "
        f"log_output={slow['log_output']}, long_query_time={slow['long_query_time']}",
    )
    table.add_row(
        "query cache",
        "removed from this server"
        if not qc["available"]
        else f"type={qc['type']}, size={qc['size']}",
    )
    table.add_row("event scheduler", str(data["event_scheduler"]))
    engine = data["digest_engine"]
    table.add_row("digest engine", f"{engine['name']} ({engine['detail']})")
    if repl["is_replica"] is None:
        table.add_row("replica", f"unknown ({repl['error']})")
    else:
        lag = repl["lag_seconds"]
        if not repl["is_replica"]:
            replica_text = "no"
        elif lag is None:
            replica_text = "yes, lag unknown (replication is not running)"
        else:
            replica_text = f"yes, lag {lag} s"
        table.add_row("replica", replica_text)
    out.print(table)

    features = Table(title="features", title_justify="left")
    features.add_column("feature")
    features.add_column("ready")
    features.add_column("what is missing / how to fix")
    for feature in report.features:
        lines = [*feature.missing, *(f"fix: {fix}" for fix in feature.fixes)]
        if feature.ready:
            lines = feature.notes
        features.add_row(
            feature.title,
            "[green]yes[/green]" if feature.ready else "[red]no[/red]",
            "\n".join(lines),
        )
    out.print(features)
    if report.sources:
        sources = Table(title="govern collect sources", title_justify="left")
        sources.add_column("source")
        sources.add_column("readable")
        sources.add_column("why not / how to fix")
        for source in report.sources:
            lines = [*source.missing, *(f"fix: {fix}" for fix in source.fixes)]
            sources.add_row(
                source.title,
                "[green]yes[/green]" if source.ready else "[red]no[/red]",
                "\n".join(lines if not source.ready else source.notes),
            )
        out.print(sources)
    for warning in report.warnings:
        out.print(f"[yellow]warning:[/yellow] {warning}")
