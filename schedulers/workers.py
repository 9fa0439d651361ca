"""The servers of one night: connections, what they are, their lag guard, the run lock, and
the option files jobs receive.

govern only reads here (SELECT, SHOW, GET_LOCK): it never writes to a replica.
A worker that cannot be reached is left out with a warning and its jobs go to the
others; the night fails (exit 3) only when no worker is left.

The run lock is a user-level lock (``GET_LOCK``) on every worker: it is released
by the server the moment our connection ends, crash or not, and it is seen by a
second scheduler on another host, so two nights of one catalog never overlap.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from types import TracebackType

import pymysql

from govern.connection import (
    Connection,
    ConnectionSettings,
    connect,
    error_text,
    query_one,
    write_defaults_file,
)
from govern.errors import ConfigError, GovernError, ServerError
from govern.output import warn
from govern.readonly import READ_ONLY_SESSION
from govern.schedulers.catalog import Catalog, WorkerSpec
from govern.schedulers.history import process_token
from govern.schedulers.launch import ServerHandle
from govern.server import ServerInfo, detect
from govern.throttle.checks import Reading, ReplicaLag, trend_window
from govern.throttle.links import Link
from govern.throttle.throttler import Throttler


class LockHeld(ServerError):
    """Another night of this catalog holds the run lock."""


@dataclasses.dataclass
class Worker:
    spec: WorkerSpec
    settings: ConnectionSettings
    conn: Connection | None = None
    info: ServerInfo | None = None
    handle: ServerHandle | None = None
    error: str | None = None  # why it is left out
    #: the lag guard of a replica worker: a throttler with one check, this replica's lag
    guard: Throttler | None = None
    lag: Reading | None = None  # the guard's latest reading

    @property
    def usable(self) -> bool:
        return self.conn is not None and self.error is None

    @property
    def is_replica(self) -> bool:
        return bool(self.info and self.info.is_replica)

    def describe(self) -> dict[str, object]:
        return {
            "name": self.spec.name,
            "server": self.settings.describe(),
            "is_replica": self.info.is_replica if self.info else None,
            "lanes": self.spec.concurrency if self.usable else 0,
            "lag_s": None if self.lag is None else self.lag.value,
            "lag_source": None if self.lag is None else self.lag.source or None,
            "error": self.error,
        }


def lock_name(schedule: str) -> str:
    """``govern.schedule.NAME``, hashed when long (MySQL lock names stop at 64 characters)."""
    name = f"govern.schedule.{schedule}"
    if len(name) <= 64:
        return name
    return f"govern.schedule.{hashlib.sha1(schedule.encode()).hexdigest()[:24]}"


def private_folder(parent: Path) -> Path:
    """A fresh 0700 folder for this process's option files under ``parent`` (next to the
    state file, not /tmp), after deleting those of processes that died without cleaning up
    (a SIGKILLed scheduler cannot), so no password outlives its night for long."""
    parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    for old in parent.iterdir():
        pid, _, rest = old.name.partition("-")
        token = rest.rpartition("-")[0]
        if pid.isdigit() and process_token(int(pid)) != token:
            shutil.rmtree(old, ignore_errors=True)
    mine = os.getpid()
    return Path(tempfile.mkdtemp(prefix=f"{mine}-{process_token(mine)}-", dir=parent))


class ServerPool:
    """Open with ``with ServerPool(catalog, folder) as pool:``; everything is closed, and the
    option files handed to jobs deleted, after. ``folder`` holds those files (0700)."""

    def __init__(self, catalog: Catalog, folder: Path) -> None:
        self.catalog = catalog
        self.workers: list[Worker] = []
        self.primary: ServerHandle | None = None
        self._primary_conn: Connection | None = None
        self._parent = folder
        self._folder: Path | None = None

    def __enter__(self) -> ServerPool:
        self._folder = private_folder(self._parent)
        try:
            for spec in self.catalog.workers:
                self.workers.append(self._open(spec))
            primary = self.catalog.primary_settings()
            if primary is not None:
                self.primary = ServerHandle(primary, self._defaults_file("primary", primary))
                self._check_primary()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        for worker in self.workers:
            if worker.guard is not None:
                worker.guard.close()
        for conn in [w.conn for w in self.workers] + [self._primary_conn]:
            if conn is not None:
                with contextlib.suppress(pymysql.err.Error):
                    conn.close()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    def _defaults_file(
        self, name: str, settings: ConnectionSettings, read_only: bool = False
    ) -> Path:
        assert self._folder is not None
        init = READ_ONLY_SESSION if read_only else None
        return write_defaults_file(settings, self._folder / f"{name}.cnf", init_command=init)

    def _check_primary(self) -> None:
        """The declared write server must not be a replica: jobs write through it. One out
        of reach is only a warning (the jobs that write will fail and say so)."""
        assert self.primary is not None
        try:
            conn = self.connection_for("primary")
        except ServerError as exc:
            warn(f"the primary is out of reach: {exc.message}")
            return
        assert conn is not None
        if detect(conn).is_replica:
            raise ConfigError(
                f"{self.catalog.path}: [primary] {self.primary.settings.describe()} is a"
                " replica: jobs write through it, and govern never hands out a replica to"
                " write to"
            )

    def _open(self, spec: WorkerSpec) -> Worker:
        try:
            settings = spec.settings()
        except GovernError as exc:
            raise GovernError(f"{self.catalog.path}:{spec.line}: {exc.message}") from None
        worker = Worker(spec, settings)
        try:
            worker.conn = connect(settings, command="schedule")
            worker.info = detect(worker.conn)
        except ServerError as exc:
            worker.error = exc.message
            warn(f"worker {spec.name} is left out: {exc.message}")
            return worker
        except pymysql.err.MySQLError as exc:
            worker.error = error_text(exc)
            warn(f"worker {spec.name} is left out: {worker.error}")
            return worker
        # unknown (no SLAVE MONITOR) counts as a replica: never risk a write there
        read_only = worker.info.read_only or worker.info.is_replica is not False
        worker.handle = ServerHandle(
            settings,
            self._defaults_file(spec.name, settings, read_only),
            read_only=read_only,
            statement_time_variable=worker.info.statement_time_variable,
            opt_out=getattr(worker.conn, "opt_out", None),
        )
        worker.guard = self._lag_guard(worker)
        return worker

    def _lag_guard(self, worker: Worker) -> Throttler | None:
        """The lag guard of a replica worker: the throttler, watching this replica's own lag
        over the worker's connection (docs/design/throttling.md, "The scheduler's lag guard")."""
        guard = self.catalog.lag_guard
        if guard is None or not worker.is_replica or worker.conn is None:
            return None
        link = Link(worker.spec.name, conn=worker.conn, info=worker.info)
        check = ReplicaLag(
            [link],
            guard.max_lag,
            heartbeat_table=guard.heartbeat_table,
            heartbeat_utc=guard.heartbeat_utc,
            trend_window=trend_window(guard.check_interval),
        )
        return Throttler(
            [check], interval=guard.check_interval, name=f"lag guard {worker.spec.name}"
        )

    # --- questions --------------------------------------------------------------------------
    def usable(self) -> list[Worker]:
        return [w for w in self.workers if w.usable]

    def worker(self, name: str) -> Worker:
        return next(w for w in self.workers if w.spec.name == name)

    def connection_for(self, name: str | None) -> Connection | None:
        """The connection for sizing: a worker by name (None: the first usable one)."""
        if name == "primary":
            if self._primary_conn is None and self.primary is not None:
                self._primary_conn = connect(self.primary.settings, command="schedule")
            return self._primary_conn
        candidates = self.usable() if name is None else [self.worker(name)]
        return next((w.conn for w in candidates if w.usable), None)

    def lag_holds(self, name: str) -> bool:
        """The lag guard: is this worker held (its replica lags)? Its throttler polls the lag
        every check_interval and records each hold."""
        worker = self.worker(name)
        if worker.guard is None or not worker.usable:
            return False
        holding = bool(worker.guard.poll())
        worker.lag = next(iter(worker.guard.readings), worker.lag)
        return holding

    def refresh_lag(self) -> None:
        """Read every replica's lag now, for the plan (no hold is recorded)."""
        for worker in self.usable():
            if worker.guard is not None:
                worker.lag = worker.guard.checks[0].read()

    # --- the run lock -------------------------------------------------------------------------
    def lock(self) -> None:
        """Take the catalog's run lock on every usable worker, or raise LockHeld."""
        name = lock_name(self.catalog.name)
        ours = {w.conn.thread_id() for w in self.usable() if w.conn is not None}
        for worker in self.usable():
            assert worker.conn is not None
            row = query_one(worker.conn, "SELECT GET_LOCK(%s, 0)", (name,))
            if not row or row[0] != 1:
                holder = query_one(worker.conn, "SELECT IS_USED_LOCK(%s)", (name,))
                if holder and holder[0] in ours:
                    continue  # two workers on one server: we hold it already
                raise LockHeld(
                    f"another night of {self.catalog.name!r} is running: worker "
                    f"{worker.spec.name} has lock {name} held by connection "
                    f"{holder[0] if holder else '?'}"
                )
