"""The night's record on the primary, shared by the ``serve`` processes of two hosts.

Each host keeps its own state store; what both must see is which jobs of a night ended, so a
standby that takes over goes on with the night instead of running it again. That record is one
table on the catalog's primary, ``govern.schedule_ledger``: a row per (schedule, night, job),
the night itself under job ``''``. A night is named by the fire time it is for (the same on
both hosts). govern writes it only with ``sql_log_bin = 0`` (it refuses to write otherwise): the
rows stay on the primary and never reach a replica. Rows are written when a job starts and when
it ends, in autocommit, so a host killed at any moment leaves at worst one job ``running``,
which the next host runs again (it had not ended).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
from datetime import UTC, datetime

import pymysql

from govern.connection import Connection, ConnectionSettings, connect, error_text, query_one
from govern.errors import ServerError

SCHEMA = "govern"
TABLE = f"`{SCHEMA}`.`schedule_ledger`"
NIGHT_ROW = ""  # the job name of a night's own row
DDL = (
    f"CREATE DATABASE IF NOT EXISTS `{SCHEMA}`",
    f"CREATE TABLE IF NOT EXISTS {TABLE} ("
    " schedule VARCHAR(128) NOT NULL,"
    " night VARCHAR(64) NOT NULL,"
    " job VARCHAR(255) NOT NULL,"
    " state VARCHAR(16) NOT NULL,"
    " attempts INT NOT NULL DEFAULT 0,"
    " night_date CHAR(10) NULL,"
    " host VARCHAR(255) NOT NULL,"
    " pid INT NOT NULL,"
    " started_at DATETIME(6) NOT NULL,"
    " updated_at DATETIME(6) NOT NULL,"
    " PRIMARY KEY (schedule, night, job)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
)


@dataclasses.dataclass(frozen=True)
class LedgerNight:
    """A night as the ledger has it when a host starts (or goes on with) it."""

    night: str
    state: str  # running, ok, failed, interrupted
    night_date: str | None
    host: str
    started_at: datetime  # UTC, when the first host started it
    jobs: dict[str, str]  # job -> state
    attempts: dict[str, int]
    finishes: dict[str, float]  # ended jobs -> seconds from the night's start to their end

    @property
    def ended(self) -> bool:
        return self.state != "running"


class NightLedger:
    """Open with ``with NightLedger(settings, schedule) as ledger:`` (its own connection)."""

    def __init__(self, settings: ConnectionSettings, schedule: str) -> None:
        self.settings = settings
        self.schedule = schedule
        self.host = socket.gethostname()
        self._conn: Connection | None = None

    def __enter__(self) -> NightLedger:
        conn = connect(self.settings, command="schedule")
        self._conn = conn
        try:
            query_one(conn, "SET SESSION sql_log_bin = 0")
        except pymysql.err.MySQLError as exc:
            self.close()
            raise ServerError(
                f"the night's ledger on {self.settings.describe()}: cannot SET sql_log_bin = 0"
                f" ({error_text(exc)}): govern writes nothing there that a replica would get"
            ) from None
        try:
            for statement in DDL:
                query_one(conn, statement)
        except pymysql.err.MySQLError as exc:
            self.close()
            raise ServerError(
                f"the night's ledger on {self.settings.describe()}: {error_text(exc)}"
            ) from None
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(pymysql.err.Error):
                self._conn.close()
            self._conn = None

    def _execute(self, sql: str, args: tuple[object, ...]) -> list[tuple[object, ...]]:
        assert self._conn is not None
        try:
            with self._conn.cursor() as cur:
                cur.execute(sql, args)
                return list(cur.fetchall())
        except pymysql.err.MySQLError as exc:
            raise ServerError(
                f"the night's ledger on {self.settings.describe()}: {error_text(exc)}"
            ) from None

    # --- reading ------------------------------------------------------------------------
    def night(self, night: str) -> LedgerNight | None:
        rows = self._execute(
            f"SELECT job, state, attempts, night_date, host, started_at, updated_at FROM {TABLE}"
            " WHERE schedule = %s AND night = %s",
            (self.schedule, night),
        )
        own = next((r for r in rows if r[0] == NIGHT_ROW), None)
        if own is None:
            return None
        started = own[5]
        assert isinstance(started, datetime)
        jobs = [r for r in rows if r[0] != NIGHT_ROW]
        return LedgerNight(
            night=night,
            state=str(own[1]),
            night_date=None if own[3] is None else str(own[3]),
            host=str(own[4]),
            started_at=started.replace(tzinfo=UTC),
            jobs={str(r[0]): str(r[1]) for r in jobs},
            attempts={str(r[0]): int(str(r[2])) for r in jobs},
            finishes={
                str(r[0]): (r[6] - started).total_seconds()
                for r in jobs
                if r[1] != "running" and isinstance(r[6], datetime)
            },
        )

    def unfinished(self) -> list[str]:
        """Nights some host started and none ended, oldest first: a standby takes them over."""
        rows = self._execute(
            f"SELECT night FROM {TABLE} WHERE schedule = %s AND job = %s AND state = 'running'"
            " ORDER BY started_at",
            (self.schedule, NIGHT_ROW),
        )
        return [str(r[0]) for r in rows]

    # --- writing ------------------------------------------------------------------------
    def begin(self, night: str, night_date: str) -> LedgerNight | None:
        """This host runs ``night``: its row says so (``running``, this host); returns what
        earlier hosts settled of it, None when it is new."""
        earlier = self.night(night)
        if earlier is None:
            self._execute(
                f"INSERT INTO {TABLE} (schedule, night, job, state, night_date, host, pid,"
                " started_at, updated_at) VALUES (%s, %s, %s, 'running', %s, %s, %s,"
                " UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))",
                (self.schedule, night, NIGHT_ROW, night_date, self.host, os.getpid()),
            )
        else:
            self._execute(
                f"UPDATE {TABLE} SET state = 'running', host = %s, pid = %s,"
                " updated_at = UTC_TIMESTAMP(6) WHERE schedule = %s AND night = %s AND job = %s",
                (self.host, os.getpid(), self.schedule, night, NIGHT_ROW),
            )
        return earlier

    def job(self, night: str, job: str, state: str, attempt: int | None = None) -> None:
        """A job of the night started (``running``) or ended (its outcome)."""
        self._execute(
            f"INSERT INTO {TABLE} (schedule, night, job, state, attempts, host, pid, started_at,"
            " updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, UTC_TIMESTAMP(6),"
            " UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE state = VALUES(state),"
            " attempts = GREATEST(attempts, VALUES(attempts)), host = VALUES(host),"
            " pid = VALUES(pid), updated_at = VALUES(updated_at)",
            (self.schedule, night, job, state, attempt or 0, self.host, os.getpid()),
        )

    def finish(self, night: str, state: str) -> None:
        self.job(night, NIGHT_ROW, state)
