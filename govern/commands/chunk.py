"""``govern chunk``: a thin shell over :func:`govern.batch.chunked_update` and ``chunked_delete``."""

from __future__ import annotations

import functools
import os
import sys

import click

from govern.cli_options import Duration, connection_options, state_option, throttle_option
from govern.connection import ConnectionSettings
from govern.readonly import opted_out_by_govern_run


@click.command()
@connection_options
@click.argument("statement")
@click.option(
    "--target-time",
    type=Duration(),
    default="0.5s",
    show_default=True,
    help="How long each chunk should take; the key range per chunk follows the measured times.",
)
@throttle_option
@state_option
@click.option("--json", "as_json", is_flag=True, help="Print the govern.chunk report.")
def chunk(
    settings: ConnectionSettings,
    statement: str,
    target_time: float,
    throttle_items: tuple[str, ...],
    state_path: str | None,
    as_json: bool,
) -> None:
    """Run a big UPDATE or DELETE in chunks over the table's primary key.

    \b
    govern chunk "DELETE FROM app.events WHERE created < '2024-01-01'" --throttle max_lag=2s

    Each chunk is the statement restricted to a key range, committed on its own,
    sized to take --target-time; the throttle checks hold between chunks. Run
    again after a crash or a stop, the same statement goes on after the last
    committed chunk. Refuses replicas and read_only servers.

    Exit 0 when every chunk is done; 1 when the server refused a chunk's data;
    2 for a usage mistake; 3 when the server failed or a critical check fired;
    75 when the throttle held longer than its max_wait.
    """
    from govern import units
    from govern.batch.chunk_sql import parse_statement
    from govern.batch.chunked import ChunkResult, chunked_delete, chunked_update
    from govern.connection import connect, log_like_anyone
    from govern.errors import GovernError
    from govern.output import info, print_json
    from govern.progress import progress
    from govern.state import StateStore
    from govern.throttle.cli import command_throttler, held_text

    parsed = parse_statement(statement)
    # No parameters are bound from the command line: a literal % stays a %.
    set_text = parsed.set.replace("%", "%%") if parsed.set else None
    where = parsed.where.replace("%", "%%") if parsed.where else None
    throttle = command_throttler(
        throttle_items, settings, state_path, work=f"govern chunk {parsed.action} {parsed.table}"
    )
    conn = connect(settings, command="chunk")
    if not opted_out_by_govern_run(os.environ):
        # The chunks are the user's workload: logged like any client's, tagged. Under
        # `govern run` in session mode the job's sessions opt out: chunks too.
        log_like_anyone(conn)
    result: ChunkResult | None = None
    error: GovernError | None = None
    try:
        with (
            StateStore.open(state_path) as store,
            progress(f"{parsed.action} on {parsed.table} (keys walked)", None) as bar,
        ):
            done = 0

            def advance(walked: int, total: int | None) -> None:
                nonlocal done
                if total and done == 0:
                    bar.update_total(max(total, walked))
                bar.advance(walked - done)
                done = walked

            walk = (
                functools.partial(chunked_update, conn, parsed.table, set_text or "", where)
                if parsed.action == "update"
                else functools.partial(chunked_delete, conn, parsed.table, where)
            )
            try:
                result = walk(
                    target_seconds=target_time, throttle=throttle, state=store, progress=advance
                )
            except GovernError as exc:  # a failed chunk or a throttle stop: what was done is kept
                error = exc
                result = getattr(exc, "result", None)
                if result is None:
                    raise
    finally:
        conn.close()
        if throttle is not None:
            throttle.close()
    assert result is not None
    if as_json:
        print_json({**result.to_json(), "error": error.message if error else None})
    else:
        verb = "deleted" if result.action == "delete" else "changed"
        rate = f" ({result.rate:,.0f} rows/s)" if result.rate is not None else ""
        click.echo(
            f"{result.table}: {result.rows:,} rows {verb} in {result.chunks:,} chunks"
            f" ({result.scanned:,} keys walked) in {units.duration(result.seconds, 'spaced')}"
            f"{rate}" + held_text(result.throttle)
        )
    for note in result.notes:
        info(note)
    if error is not None:
        click.echo(f"govern: error: {error.message}", err=True)
        sys.exit(error.exit_code)
