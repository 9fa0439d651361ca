"""The history store's interface: what collectors write and reports, trends and regressions read.

A store keeps buckets of class aggregates keyed by (host, bucket start, class ID). It is a
collect ``Sink`` (writing the same (host, start) again replaces that bucket), and answers
two questions over a window: the merged report (every class's figures, sketches merged so
percentiles stay valid, with the hosts that cost the most per class) and a time series
(per step, per host or class, counts, total time and merged p95/p99, never averaged
percentiles). Two backends share one schema: SQLite (the default, a 0600 file in govern's
state directory) and a MySQL/MariaDB schema for a fleet (govern/history/mysql.py).
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from govern.digest.report import Report
from govern.digest.result import Digest
from govern.errors import UsageError
from govern.history.model import TOP_HOSTS, Point

__all__ = ["TOP_HOSTS", "HistoryStore", "Point", "default_history_path", "open_store"]


class HistoryStore(Protocol):
    """An open history store; also a collect ``Sink``. Close it when done."""

    url: str  # what it was opened with, never a password

    def write(self, host: str, start: str, document: dict[str, Any]) -> str:
        """Store one closed bucket (a ``govern.digest`` document), replacing (host, start)
        if already there, in one transaction; return where it went (for messages)."""
        ...

    def hosts(self, since: datetime, until: datetime, pattern: str | None = None) -> list[str]:
        """Hosts with buckets starting in [since, until), sorted; ``pattern`` a glob."""
        ...

    def report(
        self,
        since: datetime,
        until: datetime,
        *,
        hosts: str | None = None,
        host: str | None = None,
        max_classes: int = 10_000,
        order_by: str = "Query_time:sum",
    ) -> Report:
        """Buckets starting in [since, until) merged into one digest (``hosts`` a glob,
        ``host`` one host exactly); each class's ``top_hosts`` lists the costliest hosts."""
        ...

    def digest(
        self,
        since: datetime,
        until: datetime,
        *,
        hosts: str | None = None,
        host: str | None = None,
        max_classes: int = 10_000,
        order_by: str = "Query_time:sum",
    ) -> Digest:
        """What :meth:`report` reads, before it becomes a report: the merged
        :class:`govern.digest.result.Digest` (``top_hosts`` and ``store`` set), for the
        digest rules and every report format."""
        ...

    def series(
        self,
        since: datetime,
        until: datetime,
        *,
        step: int,
        hosts: str | None = None,
        host: str | None = None,
        class_id: str | None = None,
        by_host: bool = False,
    ) -> list[Point]:
        """Points every ``step`` seconds (aligned to the epoch) over [since, until), in time
        order; per host when ``by_host`` (else the fleet, host None), of one class when
        ``class_id`` is given (else all classes, class_id None)."""
        ...

    def close(self) -> None: ...


def default_history_path() -> Path:
    """``$XDG_STATE_HOME/govern/history.db``, else ``~/.local/state/govern/history.db``."""
    base = os.environ.get("XDG_STATE_HOME")
    root = Path(base) if base else Path.home() / ".local" / "state"
    return root / "govern" / "history.db"


def open_store(url: str | None = None, *, log_bin: bool = False) -> HistoryStore:
    """The store a URL names: ``sqlite:PATH`` (or a bare path; None or ``sqlite:``: the
    default file) or ``mysql://[GROUP@]HOST[:PORT]/SCHEMA?defaults-file=PATH`` (credentials
    from option files only). ``log_bin`` lets the MySQL backend's writes reach the binlog."""
    if url is None or url in ("", "sqlite:", "sqlite://"):
        from govern.history.sqlite import SqliteStore

        return SqliteStore(default_history_path())
    if url.startswith(("mysql://", "mariadb://")):
        from govern.history.mysql import MysqlStore

        return MysqlStore.open(url, log_bin=log_bin)
    if "://" in url and not url.startswith("sqlite://"):
        raise UsageError(f"--store {url.split('://')[0]}://…: expected sqlite:PATH or mysql://…")
    from govern.history.sqlite import SqliteStore

    path = url.removeprefix("sqlite://").removeprefix("sqlite:")
    return SqliteStore(Path(path).expanduser())
