"""The local state store: one SQLite file, private to its owner, shared by every govern command.

Run journals, run history and scheduler history live here (later migrations add
their tables). The file is created 0600 in a 0700 directory, uses WAL so readers
never block the writer, and waits on a busy timeout instead of failing when two
govern processes write at once.

Migrations are named, not numbered, so features developed side by side never
collide: append a new ``Migration`` to ``MIGRATIONS``; never edit one that shipped.
A migration's SQL is split on ``;``, so keep semicolons out of its statements' bodies.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import sqlite3
import stat
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from govern import __version__
from govern.errors import ConfigError

BUSY_TIMEOUT_MS = 10_000


@dataclasses.dataclass(frozen=True)
class Migration:
    id: str
    sql: str


MIGRATIONS: list[Migration] = [
    Migration(
        "0001_meta",
        """
        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        """,
    ),
    Migration(
        "schedule_0001_history",
        """
        CREATE TABLE schedule_nights (
            id            INTEGER PRIMARY KEY AUTOINCREMENT,
            schedule      TEXT NOT NULL,
            catalog_path  TEXT NOT NULL,
            policy        TEXT NOT NULL,
            trigger       TEXT NOT NULL,
            scheduled_for TEXT,
            started_at    TEXT NOT NULL,
            finished_at   TEXT,
            status        TEXT NOT NULL,
            note          TEXT,
            host          TEXT NOT NULL,
            pid           INTEGER,
            pid_start     TEXT,
            workers       TEXT,
            summary       TEXT
        );
        CREATE INDEX schedule_nights_by_schedule ON schedule_nights (schedule, id);
        CREATE TABLE schedule_jobs (
            night_id         INTEGER NOT NULL REFERENCES schedule_nights (id) ON DELETE CASCADE,
            job              TEXT NOT NULL,
            position         INTEGER NOT NULL,
            key              TEXT NOT NULL,
            weight           REAL NOT NULL,
            rows             INTEGER,
            estimate_s       REAL,
            estimate_method  TEXT NOT NULL,
            planned_lane     TEXT,
            planned_start_s  REAL,
            planned_finish_s REAL,
            worker           TEXT,
            lane             TEXT,
            start_s          REAL,
            finish_s         REAL,
            duration_s       REAL,
            outcome          TEXT NOT NULL,
            exit_code        INTEGER,
            attempts         INTEGER NOT NULL DEFAULT 0,
            reason           TEXT,
            PRIMARY KEY (night_id, job)
        );
        CREATE INDEX schedule_jobs_by_outcome ON schedule_jobs (job, outcome);
        CREATE TABLE schedule_attempts (
            night_id    INTEGER NOT NULL,
            job         TEXT NOT NULL,
            number      INTEGER NOT NULL,
            worker      TEXT NOT NULL,
            lane        TEXT NOT NULL,
            started_at  TEXT NOT NULL,
            finished_at TEXT,
            start_s     REAL NOT NULL,
            finish_s    REAL,
            outcome     TEXT NOT NULL,
            exit_code   INTEGER,
            log_path    TEXT,
            PRIMARY KEY (night_id, job, number),
            FOREIGN KEY (night_id, job) REFERENCES schedule_jobs (night_id, job) ON DELETE CASCADE
        );
        CREATE TABLE schedule_triggers (
            schedule   TEXT PRIMARY KEY,
            trigger    TEXT NOT NULL,
            next_fire  TEXT,
            updated_at TEXT NOT NULL
        );
        """,
    ),
    # govern run (wrappers/journal.py): one row per run, written before any change is
    # made; every change of a server setting, intent first.
    Migration(
        "run_0001_journal",
        """
        CREATE TABLE runs (
            id                 TEXT PRIMARY KEY,
            name               TEXT NOT NULL,
            command            TEXT NOT NULL,
            host               TEXT NOT NULL,
            pid                INTEGER NOT NULL,
            pid_started        TEXT,
            watchdog_pid       INTEGER,
            server             TEXT,
            connection         TEXT,
            mode               TEXT NOT NULL,
            variable           TEXT,
            original_value     INTEGER,
            set_value          INTEGER,
            state              TEXT NOT NULL,
            outcome            TEXT,
            started_at         TEXT NOT NULL,
            ended_at           TEXT,
            exit_code          INTEGER,
            window_start       TEXT,
            window_end         TEXT,
            lease_seconds      REAL,
            lease_until        TEXT,
            connection_id      INTEGER,
            server_started     REAL,
            window_first_id    INTEGER,
            window_last_id     INTEGER,
            event              TEXT,
            blind              TEXT,
            warnings           TEXT
        );
        CREATE INDEX runs_by_state ON runs (state, server);
        CREATE INDEX runs_by_start ON runs (started_at);
        CREATE TABLE run_changes (
            seq         INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id      TEXT NOT NULL REFERENCES runs (id),
            at          TEXT NOT NULL,
            actor       TEXT NOT NULL,
            variable    TEXT NOT NULL,
            from_value  INTEGER,
            to_value    INTEGER NOT NULL,
            done        INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX run_changes_by_run ON run_changes (run_id)
        """,
    ),
    # govern collect (govern/collect/checkpoint.py): per collector, the sources' positions
    # and the buckets still open, committed together.
    Migration(
        "collect_0001_checkpoints",
        """
        CREATE TABLE collect_checkpoints (
            collector  TEXT PRIMARY KEY,
            bucket_s   INTEGER NOT NULL,
            state      TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE collect_open_buckets (
            collector TEXT NOT NULL,
            start     TEXT NOT NULL,
            document  TEXT NOT NULL,
            PRIMARY KEY (collector, start)
        )
        """,
    ),
    Migration(
        "run_0002_window_opened",
        # connections opened while the run kept the setting changed (they copied it)
        "ALTER TABLE runs ADD COLUMN window_opened INTEGER",
    ),
    # The throttler (govern/throttle/record.py): every hold, written when it opens and
    # updated when it closes, with the run, night or job it happened in.
    Migration(
        "throttle_0001_holds",
        """
        CREATE TABLE throttle_holds (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            work        TEXT NOT NULL,
            server      TEXT,
            run_id      TEXT,
            night_id    INTEGER,
            job         TEXT,
            worker      TEXT,
            check_kind  TEXT NOT NULL,
            check_key   TEXT NOT NULL,
            reason      TEXT NOT NULL,
            value       REAL,
            bound       REAL,
            critical    INTEGER NOT NULL,
            started_at  TEXT NOT NULL,
            ended_at    TEXT,
            host        TEXT NOT NULL,
            pid         INTEGER NOT NULL
        );
        CREATE INDEX throttle_holds_by_run ON throttle_holds (run_id);
        CREATE INDEX throttle_holds_by_night ON throttle_holds (night_id);
        CREATE INDEX throttle_holds_by_start ON throttle_holds (started_at)
        """,
    ),
    # Chunked writes (govern/batch/chunk_journal.py): where each walk over a primary key
    # got to, so a second run after a crash goes on from the last committed chunk.
    Migration(
        "chunk_0001_walks",
        """
        CREATE TABLE chunk_walks (
            id          TEXT PRIMARY KEY,
            server      TEXT NOT NULL,
            table_name  TEXT NOT NULL,
            statement   TEXT NOT NULL,
            key_columns TEXT NOT NULL,
            end_key     TEXT,
            last_key    TEXT,
            in_flight   TEXT,
            chunks      INTEGER NOT NULL DEFAULT 0,
            rows        INTEGER NOT NULL DEFAULT 0,
            scanned     INTEGER NOT NULL DEFAULT 0,
            state       TEXT NOT NULL,
            started_at  TEXT NOT NULL,
            updated_at  TEXT NOT NULL,
            finished_at TEXT
        );
        CREATE INDEX chunk_walks_by_state ON chunk_walks (state)
        """,
    ),
    # govern schedule run --date/--resume (govern/schedulers/rerun.py): the day a night is
    # for ({date}), so resuming it sizes and runs the same day's work.
    Migration(
        "schedule_0002_night_date",
        "ALTER TABLE schedule_nights ADD COLUMN night_date TEXT",
    ),
]


def default_state_path() -> Path:
    """``$XDG_STATE_HOME/govern/state.db``, else ``~/.local/state/govern/state.db``."""
    base = os.environ.get("XDG_STATE_HOME")
    root = Path(base) if base else Path.home() / ".local" / "state"
    return root / "govern" / "state.db"


def utcnow() -> str:
    """Timestamps in the store: ISO 8601 UTC with microseconds, sortable as text."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


class StateStore:
    """An open state store. Use :meth:`open`; close it (or use ``with``) when done."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self.db = connection

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None) -> StateStore:
        target = Path(path) if path else default_state_path()
        _create_private(target)
        try:
            connection = sqlite3.connect(
                target,
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            connection.row_factory = sqlite3.Row
            connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            _enable_wal(connection)
            connection.execute("PRAGMA foreign_keys = ON")
            store = cls(target, connection)
            store.migrate()
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"{target}: not a usable govern state file ({exc})") from None
        for suffix in ("-wal", "-shm"):
            sidecar = Path(str(target) + suffix)
            if sidecar.exists():
                os.chmod(sidecar, 0o600)
        return store

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction taken up front (BEGIN IMMEDIATE), so it never deadlocks later."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def applied_migrations(self) -> list[str]:
        rows = self.db.execute("SELECT id FROM schema_migrations ORDER BY seq").fetchall()
        return [str(r[0]) for r in rows]

    @property
    def schema_version(self) -> int:
        """How many known migrations this file has: the schema version."""
        known = {m.id for m in MIGRATIONS}
        return sum(1 for m in self.applied_migrations() if m in known)

    def migrate(self, migrations: list[Migration] | None = None) -> list[str]:
        """Apply the migrations this file lacks, in order, each in its own transaction."""
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
            " applied_at TEXT NOT NULL, govern_version TEXT NOT NULL)"
        )
        applied: list[str] = []
        for migration in MIGRATIONS if migrations is None else migrations:
            with self.transaction() as db:
                done = db.execute(
                    "SELECT 1 FROM schema_migrations WHERE id = ?", (migration.id,)
                ).fetchone()
                if done:
                    continue
                for statement in _statements(migration.sql):
                    db.execute(statement)
                db.execute(
                    "INSERT INTO schema_migrations (id, applied_at, govern_version) VALUES (?, ?, ?)",
                    (migration.id, utcnow(), __version__),
                )
                applied.append(migration.id)
        return applied

    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )


def _enable_wal(connection: sqlite3.Connection) -> None:
    """Switch to WAL, retrying: SQLite answers a concurrent switch with "database is locked"
    at once, without the busy timeout (measured: 6 in 800 opens of a new file by 4 processes,
    as when ``govern run`` and its watchdog open a fresh state file together)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            if str(connection.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
                return
            connection.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(random.uniform(0.005, 0.05))


def _statements(sql: str) -> list[str]:
    return [s.strip() for s in sql.split(";") if s.strip()]


def _create_private(path: Path) -> None:
    """Create the directory 0700 and the file 0600 before SQLite ever touches them."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, stat.S_IRUSR | stat.S_IWUSR)
        os.close(fd)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot create the state file ({exc.strerror})") from None
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & 0o077:
        os.chmod(path, 0o600)
