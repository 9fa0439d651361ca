"""The fleet history store: a MySQL/MariaDB schema that any number of collectors write to.

``mysql://[USER@]HOST[:PORT]/SCHEMA?defaults-file=PATH&group=NAME&socket=PATH`` names the
server; credentials come from option files only (``defaults-file``, else ~/.my.cnf; a
``group`` is read after ``[client]``), never from the URL. Writes are idempotent (one
transaction replaces a bucket's rows; a deadlock between writers is retried) and stay
out of the binlog (``SET SESSION sql_log_bin = 0``) unless the URL says ``binlog=on``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

import pymysql

from govern import __version__
from govern.connection import ConnectionSettings, connect, error_text, resolve_settings
from govern.errors import ServerError, UsageError
from govern.history.sql import MIGRATIONS, Migration, SqlStore, stamp
from govern.optionfile import default_option_file, read_option_file

#: Errors a transaction is retried on: deadlock, lock wait timeout.
RETRIED = (1213, 1205)
ATTEMPTS = 6
_PARAMETERS = ("defaults-file", "group", "socket", "binlog")
T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Target:
    """What a store URL says: where to connect, the schema, whether to binlog."""

    settings: ConnectionSettings
    schema: str
    log_bin: bool
    url: str  # as shown: no password can be in it


def parse_url(url: str, *, log_bin: bool = False) -> Target:
    """The store a ``mysql://`` URL names, or a usage error naming the part that is wrong."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"--store {url}: not a valid URL ({exc})") from None
    if parts.password is not None:
        raise UsageError(
            "--store: a password in the URL would be visible in the process list; put it in"
            " an option file (defaults-file=PATH in the URL, or ~/.my.cnf)"
        )
    schema = unquote(parts.path.lstrip("/"))
    if not schema or "/" in schema or "`" in schema:
        raise UsageError(f"--store {url}: name the schema: mysql://HOST/SCHEMA")
    query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    unknown = sorted(set(query) - set(_PARAMETERS))
    if unknown:
        raise UsageError(
            f"--store {url}: unknown parameter {unknown[0]!r} (known: {', '.join(_PARAMETERS)})"
        )
    binlog = query.get("binlog", "off").lower()
    if binlog not in ("on", "off", "1", "0"):
        raise UsageError(f"--store {url}: binlog={binlog}: expected on or off")
    defaults = query.get("defaults-file")
    settings = resolve_settings(
        host=parts.hostname,
        port=port,
        user=unquote(parts.username) if parts.username else None,
        socket=query.get("socket"),
        defaults_file=defaults,
        environ={},
    )
    group = query.get("group")
    if group:
        settings = _with_group(settings, defaults, group)
    return Target(settings, schema, log_bin or binlog in ("on", "1"), url)


def _with_group(
    settings: ConnectionSettings, defaults: str | None, group: str
) -> ConnectionSettings:
    """The settings with a ``[group]`` of the option file read over ``[client]``'s."""
    path = Path(defaults) if defaults else default_option_file()
    if path is None:
        raise UsageError(f"--store group={group}: no option file to read it from")
    options = read_option_file(path, (group,))
    if not options:
        raise UsageError(f"--store group={group}: {path} has no [{group}] group")
    fields: dict[str, Any] = {}
    for key in ("host", "user", "socket", "password"):
        if key in options:
            fields[key] = options[key] or ""
    if options.get("port"):
        fields["port"] = int(str(options["port"]))
    return dataclasses.replace(settings, **fields)


class MysqlStore(SqlStore):
    dialect = "mysql"
    param = "%s"

    def __init__(self, target: Target, conn: Any) -> None:
        self.target = target
        self.url = target.url
        self.conn = conn
        self._twin: MysqlStore | None = None

    @classmethod
    def open(
        cls,
        url: str,
        *,
        log_bin: bool = False,
        migrations: Sequence[Migration] = MIGRATIONS,
    ) -> MysqlStore:
        target = parse_url(url, log_bin=log_bin)
        conn = connect(target.settings, command="history")
        store = cls(target, conn)
        try:
            store._session()
            store.migrate(migrations)
        except BaseException:
            conn.close()
            raise
        return store

    def twin(self) -> MysqlStore:
        """Another connection to the store (govern regressions sums two hosts at once),
        opened once, closed with the store."""
        if self._twin is None:
            conn = connect(self.target.settings, command="history")
            store = MysqlStore(self.target, conn)
            try:
                store._session()
            except BaseException:
                conn.close()
                raise
            self._twin = store
        return self._twin

    def _session(self) -> None:
        if not self.target.log_bin:
            try:
                with self.conn.cursor() as cur:
                    cur.execute("SET SESSION sql_log_bin = 0")
            except pymysql.err.MySQLError as exc:
                raise ServerError(
                    f"{self.url}: cannot keep the store's writes out of the binlog"
                    f" (SET SESSION sql_log_bin = 0: {error_text(exc)}); grant SUPER or"
                    " BINLOG ADMIN, or add binlog=on to the URL to replicate them"
                ) from None
        self._execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        # govern regressions reads its sums joined, a text per first character of the
        # class IDs (figures.py, _rows): up to ~1 MB a text at 200,000 classes a host
        self._execute("SET SESSION group_concat_max_len = 16777216")
        schema = self.target.schema
        try:
            with self.conn.cursor() as cur:
                cur.execute(f"CREATE DATABASE IF NOT EXISTS `{schema}`")
                cur.execute(f"USE `{schema}`")
        except pymysql.err.MySQLError as exc:
            raise ServerError(
                f"{self.url}: cannot use schema {schema}: {error_text(exc)}"
            ) from None

    def migrate(self, migrations: Sequence[Migration] = MIGRATIONS) -> list[str]:
        """Apply the migrations the schema lacks, one collector at a time (GET_LOCK)."""
        applied: list[str] = []
        lock = f"govern_history_{self.target.schema}"[:64]
        ((got,),) = self._execute("SELECT GET_LOCK(%s, 60)", (lock,))
        if got != 1:
            raise ServerError(f"{self.url}: another govern holds the migration lock ({lock})")
        try:
            self._execute(
                "CREATE TABLE IF NOT EXISTS history_migrations (id VARCHAR(64) PRIMARY KEY,"
                " applied_at DATETIME NOT NULL, govern_version VARCHAR(32) NOT NULL)"
                " ENGINE=InnoDB"
            )
            done = {str(row[0]) for row in self._execute("SELECT id FROM history_migrations")}
            for migration in migrations:
                if migration.id in done:
                    continue
                # DDL commits on its own: a migration is made of statements each of which
                # is safe to see half-applied only until its row below is written
                for statement in migration.sql["mysql"].split(";"):
                    if statement.strip():
                        self._execute(statement)
                self._execute(
                    "INSERT INTO history_migrations VALUES (%s, %s, %s)",
                    (migration.id, stamp(dt.datetime.now()), __version__),
                )
                applied.append(migration.id)
        finally:
            self._execute("SELECT RELEASE_LOCK(%s)", (lock,))
        return applied

    def applied_migrations(self) -> list[str]:
        return [str(row[0]) for row in self.run("SELECT id FROM history_migrations ORDER BY id")]

    def _execute(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            with self.conn.cursor() as cur:
                cur.execute(sql, tuple(args) if args else None)
                return list(cur.fetchall())
        except pymysql.err.MySQLError as exc:
            if isinstance(exc, pymysql.err.OperationalError) and exc.args[:1] in ((1213,), (1205,)):
                raise
            raise ServerError(f"{self.url}: {error_text(exc)}") from None

    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(sql, rows)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self.conn.begin()
        try:
            yield
        except BaseException:
            with contextlib.suppress(pymysql.err.Error):
                self.conn.rollback()
            raise
        self.conn.commit()

    def _retrying(self, work: Callable[[], T]) -> T:
        for attempt in range(ATTEMPTS):
            try:
                return work()
            except pymysql.err.OperationalError as exc:
                if not (exc.args and exc.args[0] in RETRIED) or attempt == ATTEMPTS - 1:
                    raise ServerError(f"{self.url}: {error_text(exc)}") from None
                time.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    def write(self, host: str, start: str, document: dict[str, Any]) -> str:
        return self._retrying(lambda: SqlStore.write(self, host, start, document))

    def _mark_stale(self, host: str, day: str, hour: str) -> None:
        self._execute(
            "INSERT INTO history_days (host, day) VALUES (%s, %s)"
            " ON DUPLICATE KEY UPDATE stale = 1, version = version + 1",
            (host, day),
        )
        self._mark_fleet_stale(day)
        self._execute(
            "INSERT INTO history_fleet_hours (start) VALUES (%s)"
            " ON DUPLICATE KEY UPDATE stale = 1, version = version + 1",
            (hour,),
        )
        self._execute(
            "INSERT INTO history_host_hours (host, start) VALUES (%s, %s)"
            " ON DUPLICATE KEY UPDATE stale = 1, version = version + 1",
            (host, hour),
        )

    def _mark_fleet_stale(self, day: str) -> None:
        self._execute(
            "INSERT INTO history_fleet_days (day) VALUES (%s)"
            " ON DUPLICATE KEY UPDATE stale = 1, version = version + 1",
            (day,),
        )

    def close(self) -> None:
        if self._twin is not None:
            self._twin.close()
            self._twin = None
        with contextlib.suppress(pymysql.err.Error):
            self.conn.close()
