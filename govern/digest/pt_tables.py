"""``govern digest --review DSN --history DSN``: fill pt-query-digest 3.x's review and history
tables from a digest, as pt does, so Anemometer and dashboards built on them work unchanged.

An output stage of a finished ``govern.digest`` document (a fresh digest, a merge or a saved
one): :meth:`PtTables.open` connects and checks (or creates) the tables before any log is
read, :meth:`PtTables.write` upserts one review row per class (pt's ``INSERT … ON DUPLICATE KEY
UPDATE``: first_seen/last_seen widen, reviewed_by/reviewed_on/comments stay) and writes one
history row per class (pt's ``REPLACE``: a second run over the same log replaces its rows).
Each table is written in one transaction. The writes stay out of the binary log unless asked
(``replicate``); a replica or a read_only server is refused (exit 3).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pymysql

from govern.connection import (
    Connection,
    ConnectionSettings,
    connect,
    error_text,
    query_all,
    query_one,
    resolve_settings,
)
from govern.digest.options import PtTablesOptions
from govern.digest.pt_ddl import HISTORY_DDL, REVIEW_DDL, history_attribute
from govern.digest.pt_history import LogAttributes, history_values, review_row
from govern.errors import ServerError, UsageError
from govern.server import detect

#: pt's DSN keys govern reads (A= is accepted and not needed: govern always talks utf8mb4;
#: p= is refused: argv is public).
_DSN_KEYS = {"h": "host", "P": "port", "S": "socket", "u": "user", "F": "defaults_file"}
#: pt's defaults: ``percona_schema.query_review`` and ``percona_schema.query_history``.
DEFAULT_DATABASE = "percona_schema"
REVIEW_COLUMNS = (
    "checksum",
    "fingerprint",
    "sample",
    "first_seen",
    "last_seen",
    "reviewed_by",
    "reviewed_on",
    "comments",
)
#: Rows per multi-row statement.
_CHUNK = 200


@dataclass(frozen=True)
class PtDsn:
    """A pt-style DSN (``h=db1,P=3306,D=pt,t=review,F=~/.my.cnf``), resolved."""

    option: str  # --review or --history, for messages
    settings: ConnectionSettings
    database: str
    table: str

    @property
    def label(self) -> str:
        return f"{self.option} {self.database}.{self.table} on {self.settings.describe()}"

    @property
    def quoted(self) -> str:
        return f"{_quote(self.database)}.{_quote(self.table)}"


def parse_pt_dsn(
    text: str, *, option: str, default_table: str, defaults_file: str | None = None
) -> PtDsn:
    """pt's DSN syntax: comma-separated ``key=value``; credentials from ``F=`` (else
    ``defaults_file``, ``~/.my.cnf``, the environment), never from argv."""
    fields: dict[str, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep:
            raise UsageError(f"{option} {text}: expected key=value parts (h=host,D=db,t=table)")
        if key == "p":
            raise UsageError(
                f"{option}: a password in the DSN would be visible in the process list; "
                "put it in an option file (F=file, --defaults-file or ~/.my.cnf)"
            )
        if key not in (*_DSN_KEYS, "D", "t", "A"):
            raise UsageError(f"{option} {text}: unknown DSN key {key!r} (h, P, S, u, F, D, t, A)")
        fields[key] = value
    port = fields.get("P")
    if port is not None and not port.isdigit():
        raise UsageError(f"{option}: P={port}: the port must be a number")
    settings = resolve_settings(
        host=fields.get("h"),
        port=int(port) if port else None,
        user=fields.get("u"),
        socket=fields.get("S"),
        defaults_file=fields.get("F") or defaults_file,
    )
    return PtDsn(
        option, settings, fields.get("D") or DEFAULT_DATABASE, fields.get("t") or default_table
    )


@dataclass
class _Target:
    dsn: PtDsn
    conn: Connection
    columns: list[str]
    octets: dict[str, int]  # the most bytes a text column holds (TEXT: 65,535)
    cut: int = 0  # texts cut to fit

    def fit(self, column: str, text: str) -> str:
        """``text`` cut at a character to fit ``column`` (a sample of a 1 MB INSERT into a
        TEXT column: pt's insert fails on it in strict mode)."""
        limit = self.octets.get(column)
        if limit is None or len(text) * 4 <= limit:
            return text
        data = text.encode("utf-8", "surrogateescape")
        if len(data) <= limit:
            return text
        self.cut += 1
        return data[:limit].decode("utf-8", "ignore")


class PtTables:
    """Open, checked review and history tables; :meth:`write` fills them from a digest."""

    def __init__(self, review: _Target | None, history: _Target | None) -> None:
        self.review = review
        self.history = history

    @classmethod
    def open(cls, options: PtTablesOptions) -> PtTables:
        """Connect, refuse a replica or read_only server, check or create the tables."""
        options.check()
        review = history = None
        try:
            if options.review:
                dsn = parse_pt_dsn(
                    options.review,
                    option="--review",
                    default_table="query_review",
                    defaults_file=options.defaults_file,
                )
                review = _open(dsn, REVIEW_DDL, "query_review", options.create_review, options)
                missing = [c for c in REVIEW_COLUMNS if c not in review.columns]
                if missing:
                    raise UsageError(
                        f"{dsn.label}: the table has no {missing[0]} column "
                        f"(pt's review table has {', '.join(REVIEW_COLUMNS)})"
                    )
            if options.history:
                dsn = parse_pt_dsn(
                    options.history,
                    option="--history",
                    default_table="query_history",
                    defaults_file=options.defaults_file,
                )
                history = _open(dsn, HISTORY_DDL, "query_history", options.create_history, options)
                for column in ("checksum", "sample"):
                    if column not in history.columns:
                        raise UsageError(f"{dsn.label}: the table has no {column} column")
        except BaseException:
            for target in (review, history):
                if target is not None:
                    target.conn.close()
            raise
        return cls(review, history)

    def close(self) -> None:
        for target in (self.review, self.history):
            if target is not None:
                with contextlib.suppress(pymysql.err.Error):
                    target.conn.close()

    def write(self, document: Mapping[str, Any]) -> tuple[list[str], list[str]]:
        """Write every class of ``document`` (pt's ``--limit 100%``). Returns lines saying
        what was written, and warnings saying what was not (classes beyond --max-classes,
        events without Query_time)."""
        said: list[str] = []
        skipped: list[str] = []
        review: list[tuple[Any, ...]] = []
        history: list[tuple[Any, ...]] = []
        metrics: list[tuple[str, tuple[str, str]]] = []
        seen = LogAttributes()
        if self.history is not None:
            seen = LogAttributes.of(document, _views(document))
            metrics = [
                (column, found)
                for column in self.history.columns
                if (found := history_attribute(column)) is not None
            ]
        attributes = [found for _, found in metrics]
        for item in _views(document):
            if self.review is not None:
                review.append(review_row(item))
            if self.history is not None:
                history.append(
                    (
                        str(item["id"]).upper(),
                        item["sample"]["query"] if item["sample"] else "",
                        *history_values(item, attributes, seen),
                    )
                )
        if self.review is not None:
            _write_review(self.review, review)
            said.append(f"{self.review.dsn.label}: {len(review)} classes")
        if self.history is not None:
            _write_history(self.history, [column for column, _ in metrics], history)
            said.append(f"{self.history.dsn.label}: {len(history)} rows")
        for target in (self.review, self.history):
            if target is not None and target.cut:
                skipped.append(
                    f"{target.dsn.label}: {target.cut} texts cut to fit their columns "
                    f"({target.octets.get('sample', 0):,} bytes)"
                )
        totals = document["totals"]
        if totals.get("other_events"):
            skipped.append(
                f"{totals['other_events']} events in classes beyond --max-classes "
                f"{document['options']['max_classes']} were not written (raise --max-classes)"
            )
        if totals.get("unreported_events"):
            skipped.append(
                f"{totals['unreported_events']} events without Query_time were not written "
                "(pt leaves them out too)"
            )
        return said, skipped


def _views(document: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    """The classes of a document to read a few parts of: a fresh digest's as views, each
    part built when read (govern/digest/lazy.py), not whole class documents."""
    classes = document["classes"]
    views = getattr(classes, "views", None)
    return views() if views is not None else iter(classes)


def _open(
    dsn: PtDsn, ddl: str, placeholder: str, create: bool, options: PtTablesOptions
) -> _Target:
    try:
        conn = connect(dsn.settings, command="digest")
    except ServerError as exc:
        raise ServerError(f"{dsn.option}: {exc.message}") from None
    try:
        server = detect(conn)
        if server.is_replica:
            raise ServerError(f"refusing to write {dsn.label}: the server is a replica")
        if server.read_only:
            raise ServerError(f"refusing to write {dsn.label}: the server is read_only")
        if not options.replicate:
            _no_binlog(conn, dsn)
        columns, octets = _columns(conn, dsn)
        if not columns:
            if not create:
                option = (
                    "--create-review-table"
                    if placeholder == "query_review"
                    else ("--create-history-table")
                )
                raise UsageError(
                    f"{dsn.label}: no such table; pass {option} to create it as "
                    "pt-query-digest does"
                )
            _execute(conn, dsn, f"CREATE DATABASE IF NOT EXISTS {_quote(dsn.database)}")
            _execute(conn, dsn, ddl.replace(placeholder, dsn.quoted, 1))
            columns, octets = _columns(conn, dsn)
        return _Target(dsn, conn, columns, octets)
    except BaseException:
        conn.close()
        raise


def _no_binlog(conn: Connection, dsn: PtDsn) -> None:
    """Keep the writes out of the binary log (when the server keeps one)."""
    row = query_one(conn, "SELECT @@log_bin")
    if not row or not int(row[0] or 0):
        return
    try:
        query_one(conn, "SET SESSION sql_log_bin = 0")
    except pymysql.err.MySQLError as exc:
        raise ServerError(
            f"{dsn.label}: cannot keep the writes out of the binary log ({error_text(exc)}); "
            "grant BINLOG ADMIN (SUPER on MySQL), or pass --replicate-tables to replicate them"
        ) from None


def _columns(conn: Connection, dsn: PtDsn) -> tuple[list[str], dict[str, int]]:
    """The table's columns in order, and the byte limit of its text columns."""
    rows = query_all(
        conn,
        "SELECT COLUMN_NAME, CHARACTER_OCTET_LENGTH FROM information_schema.COLUMNS"
        " WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
        (dsn.database, dsn.table),
    )
    octets = {str(name): int(size) for name, size in rows if size is not None}
    return [str(name) for name, _ in rows], octets


def _execute(conn: Connection, dsn: PtDsn, sql: str) -> None:
    try:
        query_one(conn, sql)
    except pymysql.err.MySQLError as exc:
        raise ServerError(f"{dsn.label}: {error_text(exc)}") from None


def _now(conn: Connection) -> str:
    """The server's NOW(), which pt writes where a class has no time."""
    row = query_one(conn, "SELECT DATE_FORMAT(NOW(), '%Y-%m-%d %H:%i:%s')")
    return str(row[0]) if row else ""


def _write_review(target: _Target, rows: Sequence[tuple[Any, ...]]) -> None:
    now = _now(target.conn)
    sql = (
        f"INSERT INTO {target.dsn.quoted} (checksum, fingerprint, sample, first_seen, last_seen)"
        " VALUES (%s, %s, %s, %s, %s) ON DUPLICATE KEY UPDATE"
        " first_seen = IF(first_seen IS NULL, VALUES(first_seen),"
        " LEAST(first_seen, VALUES(first_seen))),"
        " last_seen = IF(last_seen IS NULL, VALUES(last_seen),"
        " GREATEST(last_seen, VALUES(last_seen)))"
    )
    filled = [
        (
            row[0],
            target.fit("fingerprint", row[1]),
            target.fit("sample", row[2]),
            row[3] or now,
            row[4] or now,
        )
        for row in rows
    ]
    _write(target, sql, filled)


def _write_history(target: _Target, columns: list[str], rows: Sequence[tuple[Any, ...]]) -> None:
    now = _now(target.conn)
    names = ["checksum", "sample", *columns]
    sql = (
        f"REPLACE INTO {target.dsn.quoted} ({', '.join(_quote(c) for c in names)})"
        f" VALUES ({', '.join(['%s'] * len(names))})"
    )
    stamps = [i for i, name in enumerate(names) if name in ("ts_min", "ts_max")]
    filled = []
    for row in rows:
        values = list(row)
        values[1] = target.fit("sample", values[1])
        for i in stamps:  # pt: COALESCE(?, NOW())
            values[i] = values[i] or now
        filled.append(tuple(values))
    _write(target, sql, filled)


def _write(target: _Target, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """All rows in one transaction: a run's rows land whole or not at all."""
    conn = target.conn
    try:
        conn.begin()
        with conn.cursor() as cur:
            for start in range(0, len(rows), _CHUNK):
                cur.executemany(sql, rows[start : start + _CHUNK])
        conn.commit()
    except pymysql.err.MySQLError as exc:
        with contextlib.suppress(pymysql.err.Error):
            conn.rollback()
        raise ServerError(f"{target.dsn.label}: {error_text(exc)}") from None


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
