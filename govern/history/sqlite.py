"""The embedded history store: one SQLite file (0600, in a 0700 directory), nothing to set up.

WAL lets reports read while a collector writes; a write takes its transaction up front
(``BEGIN IMMEDIATE``) and waits on the busy timeout when another process writes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sqlite3
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from govern import __version__
from govern.errors import ConfigError
from govern.history.sql import MIGRATIONS, Migration, SqlStore, stamp

BUSY_TIMEOUT_MS = 30_000


class SqliteStore(SqlStore):
    dialect = "sqlite"
    param = "?"

    def __init__(self, path: Path, migrations: Sequence[Migration] = MIGRATIONS) -> None:
        self.path = path
        self.url = f"sqlite:{path}"
        _create_private(path)
        try:
            self.db = sqlite3.connect(
                path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if str(self.db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                self.db.execute("PRAGMA journal_mode = WAL")
            self.migrate(migrations)
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"{path}: not a usable govern history store ({exc})") from None
        for suffix in ("-wal", "-shm"):
            sidecar = Path(str(path) + suffix)
            if sidecar.exists():
                os.chmod(sidecar, 0o600)

    def migrate(self, migrations: Sequence[Migration] = MIGRATIONS) -> list[str]:
        """Apply the migrations the file lacks, in order, each in its own transaction."""
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS history_migrations (id TEXT PRIMARY KEY,"
            " applied_at TEXT NOT NULL, govern_version TEXT NOT NULL)"
        )
        applied = []
        for migration in migrations:
            with self._transaction():
                if self.db.execute(
                    "SELECT 1 FROM history_migrations WHERE id = ?", (migration.id,)
                ).fetchone():
                    continue
                for statement in migration.sql["sqlite"].split(";"):
                    if statement.strip():
                        self.db.execute(statement)
                self.db.execute(
                    "INSERT INTO history_migrations VALUES (?, ?, ?)",
                    (migration.id, stamp(dt.datetime.now()), __version__),
                )
                applied.append(migration.id)
        return applied

    def applied_migrations(self) -> list[str]:
        return [str(row[0]) for row in self.run("SELECT id FROM history_migrations ORDER BY id")]

    def _execute(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.db.execute(sql, tuple(args)).fetchall()

    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.db.executemany(sql, rows)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def _mark_stale(self, host: str, day: str, hour: str) -> None:
        self.db.execute(
            "INSERT INTO history_days (host, day) VALUES (?, ?) ON CONFLICT (host, day)"
            " DO UPDATE SET stale = 1, version = version + 1",
            (host, day),
        )
        self._mark_fleet_stale(day)
        self.db.execute(
            "INSERT INTO history_fleet_hours (start) VALUES (?) ON CONFLICT (start)"
            " DO UPDATE SET stale = 1, version = version + 1",
            (hour,),
        )
        self.db.execute(
            "INSERT INTO history_host_hours (host, start) VALUES (?, ?) ON CONFLICT (host, start)"
            " DO UPDATE SET stale = 1, version = version + 1",
            (host, hour),
        )

    def _mark_fleet_stale(self, day: str) -> None:
        self.db.execute(
            "INSERT INTO history_fleet_days (day) VALUES (?) ON CONFLICT (day)"
            " DO UPDATE SET stale = 1, version = version + 1",
            (day,),
        )

    def close(self) -> None:
        self.db.close()


def _create_private(path: Path) -> None:
    """The directory 0700 and the file 0600 before SQLite touches them (samples hold data)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, stat.S_IRUSR | stat.S_IWUSR)
        os.close(fd)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot create the history store ({exc.strerror})") from None
    if stat.S_IMODE(os.stat(path).st_mode) & 0o077:
        os.chmod(path, 0o600)
