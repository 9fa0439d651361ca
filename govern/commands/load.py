"""``govern load``: a thin shell over :func:`govern.batch.load.load_file`."""

from __future__ import annotations

import os

import click

from govern.batch.load import DEFAULT_MAX_BAD, LoadReport, load_file
from govern.batch.sizing import DEFAULT_BATCH_SIZE
from govern.batch.sources import DEFAULT_MAX_LINE
from govern.cli_options import Size, connection_options, state_option, throttle_option
from govern.connection import ConnectionSettings, connect, connect_retrying
from govern.output import info, print_json, warn
from govern.progress import progress
from govern.readonly import opted_out_by_govern_run
from govern.throttle.cli import command_throttler, held_text
from govern.units import plural

#: Bad rows printed on stderr (--json lists up to 100; all are counted).
SHOWN_BAD_ROWS = 10
#: How long a load whose connection died waits for the server to read its last batch back.
RECONNECT_WAIT_S = 60.0


def _columns(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple(part.strip() for part in value.split(",") if part.strip())


@click.command()
@connection_options
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--table", "-t", required=True, help="Target table, as schema.table or table.")
@click.option(
    "--key",
    "-k",
    required=True,
    help="Key columns, comma-separated: the primary or a unique key rows are matched on.",
)
@click.option(
    "--update",
    help="Columns a row with an existing key overwrites [default: every non-key column]; "
    "'' keeps existing rows unchanged.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "tsv", "jsonl"]),
    help="Input format [default: from the extension: .csv .tsv .jsonl .ndjson, also .gz].",
)
@click.option(
    "--null",
    default="\\N",
    show_default=True,
    help="The CSV/TSV field text that means NULL ('' makes empty fields NULL).",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=DEFAULT_BATCH_SIZE,
    show_default=True,
    help="Rows per statement (capped by 65,535 placeholders and max_allowed_packet).",
)
@click.option(
    "--transaction",
    type=click.Choice(["batch", "all"]),
    default="batch",
    show_default=True,
    help="batch: each batch commits on its own; all: one transaction, rolled back on failure.",
)
@click.option(
    "--max-bad",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_BAD,
    show_default=True,
    help="Stop when more rows than this are bad.",
)
@click.option(
    "--max-line",
    type=Size(),
    default=DEFAULT_MAX_LINE,
    show_default="64M",
    help="A longer line is a bad row, read on in pieces and never held (e.g. 16M, 1G).",
)
@throttle_option
@state_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (govern.load/1).")
def load(
    settings: ConnectionSettings,
    file: str,
    table: str,
    key: str,
    update: str | None,
    fmt: str | None,
    null: str,
    batch_size: int,
    transaction: str,
    max_bad: int,
    max_line: int,
    throttle_items: tuple[str, ...],
    state_path: str | None,
    as_json: bool,
) -> None:
    """Load a CSV, TSV or JSON Lines FILE into a table: insert new keys, update existing ones.

    Rows go in multi-row INSERT … ON DUPLICATE KEY UPDATE statements sized for
    the server, each batch committed on its own. CSV and TSV need a header line
    of column names; in JSON Lines the first object's keys are the columns. Bad
    rows are skipped and reported with their line numbers. Refuses replicas and
    read_only servers. With throttle checks (--throttle, the job's, or
    govern.toml's [throttle]) it holds between batches while one holds.

    Exit 0 when every row was written; 1 when rows were skipped, the server
    warned, or the load stopped; 2 for a usage mistake (nothing written);
    3 when the server failed or a critical throttle check fired; 75 when the
    throttle held longer than its max_wait.
    """
    throttle = command_throttler(throttle_items, settings, state_path, work=f"govern load {file}")
    conn = connect(settings, command="load")
    try:
        with progress(f"loading {file} (bytes read)", None) as bar:
            done = 0

            def advance(position: int, total: int | None) -> None:
                nonlocal done
                if total and done == 0:
                    bar.update_total(total)
                bar.advance(position - done)
                done = position

            report = load_file(
                conn,
                file,
                table,
                key=_columns(key) or (),
                update=_columns(update),
                fmt=fmt,
                null=null,
                batch_size=batch_size,
                transaction="all" if transaction == "all" else "batch",
                max_bad=max_bad,
                progress=advance,
                # Under `govern run` in session mode the job's sessions opt out: rows too.
                log_rows=not opted_out_by_govern_run(os.environ),
                max_line=max_line,
                reconnect=lambda: connect_retrying(
                    settings, command="load", wait=RECONNECT_WAIT_S, say=info
                ),
                throttle=throttle,
            )
    finally:
        conn.close()
        if throttle is not None:
            throttle.close()
    if as_json:
        print_json(report.to_json())
    else:
        render_text(report)
    _report_problems(report)
    if report.exit_code:
        raise SystemExit(report.exit_code)


def render_text(report: LoadReport) -> None:
    r = report.result
    rate = f" ({r.rows / r.seconds:,.0f} rows/s)" if r.seconds > 0 and r.rows else ""
    click.echo(
        f"{report.file} -> {report.table}: {plural(r.rows, 'row')} written in {r.seconds:.2f} s"
        f"{rate}: {r.inserted:,} inserted, {r.updated:,} updated, {r.unchanged:,} unchanged;"
        f" {plural(report.bad_rows, 'bad row')} skipped; {plural(r.warnings, 'warning')}"
        + held_text(report.throttle)
    )


def _report_problems(report: LoadReport) -> None:
    """Notes, bad rows and warnings on stderr; the error last, like every govern error."""
    for note in report.result.notes:
        info(note)
    for bad in report.samples()[:SHOWN_BAD_ROWS]:
        warn(f"{report.file}:{bad.line}: {bad.reason}")
    if report.bad_rows > SHOWN_BAD_ROWS:
        more = report.bad_rows - SHOWN_BAD_ROWS
        warn(f"{more:,} more bad rows (--json lists the first 100)")
    for message in report.result.warning_messages:
        warn(f"server: {message}")
    if report.error:
        click.echo(f"govern: error: {report.error}", err=True)
