"""A collector built from what the user asked for: sources, sink, checkpoint, EXPLAIN.

The Click command (govern/collect/cli.py) only parses options into a
:class:`CollectRequest`; :func:`build_collector` does the rest, so a program can
run a collector without the command line.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path

import pymysql

from govern.collect.checkpoint import Checkpoints
from govern.collect.collector import COMMIT_EVERY, CollectOptions, Collector
from govern.collect.explain import Explainer, ExplainOptions
from govern.collect.files import FollowedLog
from govern.collect.perfschema import PerformanceSchemaDigests
from govern.collect.session import open_session, run, server_error
from govern.collect.sink import DirectorySink, Sink
from govern.collect.source import Source
from govern.collect.table import SlowLogTable
from govern.connection import ConnectionSettings
from govern.errors import ServerError, UsageError
from govern.history.sink import BothSinks, Retention, StoreSink
from govern.history.store import open_store
from govern.state import StateStore


@dataclass
class CollectRequest:
    """Everything ``govern collect`` is told."""

    logs: list[str] = field(default_factory=list)
    json_field: str | None = None
    backfill: bool = False
    table: bool = False
    performance_schema: bool = False
    settings: ConnectionSettings | None = None  # for the table, digests and the host label
    to: str | None = None  # the bucket directory
    store: str | None = None  # a history store's URL (govern/history)
    retention: Retention | None = None  # of the store's buckets and roll-ups
    host: str | None = None
    bucket_seconds: int = 3600
    close_after: float = 300.0
    settle: float = 2.0
    state_path: str | None = None
    explain: ExplainOptions | None = None
    commit_every: float = COMMIT_EVERY  # a service's commits (tests commit every poll)


def build_collector(request: CollectRequest) -> tuple[Collector, Explainer | None]:
    """A collector ready to ``open()``; its explainer (to close), if EXPLAIN was asked for."""
    if not (request.logs or request.table or request.performance_schema):
        raise UsageError("nothing to collect: give slow-log files, --table or --performance-schema")
    if request.json_field and not request.logs:
        raise UsageError("--json-field: only for slow-log files given as arguments")
    if request.backfill and not request.logs:
        raise UsageError("--backfill: only for slow-log files given as arguments")
    if not (request.to or request.store):
        raise UsageError(
            "--to DIR or --store URL: where the buckets go (govern.digest files, or a history"
            " store)"
        )
    on_server = request.table or request.performance_schema
    host = request.host
    if on_server:
        assert request.settings is not None
        host = host or check_server(request.settings, request.table, request.performance_schema)
    host = host or socket.gethostname()
    sources: list[Source] = [
        FollowedLog(
            path, json_field=request.json_field, settle=request.settle, backfill=request.backfill
        )
        for path in request.logs
    ]
    if request.table:
        assert request.settings is not None
        sources.append(SlowLogTable(request.settings))
    if request.performance_schema:
        assert request.settings is not None
        sources.append(PerformanceSchemaDigests(request.settings, host=host))
    explainer = Explainer(request.explain) if request.explain else None
    options = CollectOptions(
        host=host,
        bucket_seconds=request.bucket_seconds,
        close_after=request.close_after,
        on_close=explainer,
        commit_every=request.commit_every,
    )
    sink = open_sink(request)
    state = StateStore.open(request.state_path)
    collector = Collector(sources, sink, Checkpoints(state, host), options)
    return collector, explainer


def open_sink(request: CollectRequest) -> Sink:
    """The bucket directory, the history store, or both (close it if it has ``close``)."""
    directory = DirectorySink(Path(request.to)) if request.to else None
    if request.store is None:
        assert directory is not None
        return directory
    store = StoreSink(open_store(request.store), request.retention)
    return store if directory is None else BothSinks(directory, store)


def check_server(settings: ConnectionSettings, table: bool, digests: bool) -> str:
    """Refuse a server that cannot give what was asked (one line, exit 3); its hostname."""
    conn = open_session(settings)
    try:
        ((hostname, output, schema),) = run(
            conn, "SELECT @@hostname, @@log_output, @@performance_schema"
        )
        if table:
            try:
                run(conn, "SELECT 1 FROM mysql.slow_log LIMIT 0")
            except pymysql.err.MySQLError as exc:
                raise server_error(exc, "--table: cannot read mysql.slow_log") from None
            if "TABLE" not in str(output).upper():
                from govern.output import warn

                warn(
                    f"--table: log_output={output}: the server writes nothing to mysql.slow_log"
                    " (SET GLOBAL log_output = 'FILE,TABLE')"
                )
        if digests:
            if str(schema) not in ("1", "ON"):
                raise ServerError(
                    "--performance-schema: performance_schema is OFF on this server (it is"
                    " switched on only at start: performance_schema=ON in the server's my.cnf)"
                )
            try:
                run(
                    conn,
                    "SELECT 1 FROM performance_schema.events_statements_summary_by_digest LIMIT 0",
                )
            except pymysql.err.MySQLError as exc:
                raise server_error(
                    exc, "--performance-schema: cannot read events_statements_summary_by_digest"
                ) from None
        return str(hostname)
    finally:
        conn.close()
