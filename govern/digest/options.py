"""How to digest: what ``govern digest``'s options ask of the runner and the engines."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

from govern.digest.filters import Filters
from govern.errors import UsageError


@dataclass(frozen=True)
class EngineOptions:
    """What the engine needs to know beyond the bytes. Picklable (sent to workers)."""

    max_classes: int = 10_000
    since: str | None = None  # "YYYY-MM-DD HH:MM:SS", inclusive
    until: str | None = None  # exclusive
    filters: Filters | None = None
    server: str | None = None  # --host label of this input

    @property
    def needs_ts(self) -> bool:
        """Filters depend on pt's inherited ts: a range must know what came before."""
        return self.since is not None or self.until is not None

    @property
    def needs_db(self) -> bool:
        return self.filters is not None and self.filters.needs_db


def host_salt(host: str | None) -> int:
    """Added to connection numbers before hashing, so a --host label's connections
    count apart from another server's with the same Thread_id (both engines)."""
    return zlib.crc32(host.encode()) << 32 if host else 0


@dataclass
class DigestOptions:
    """How to digest. The defaults are what ``govern digest`` does without options."""

    order_by: str = "Query_time:sum"
    max_classes: int = 10_000
    since: str | None = None
    until: str | None = None
    filters: Filters | None = None
    filter_texts: list[str] = field(default_factory=list)
    host: str | None = None
    jobs: int = 0  # 0: one per CPU
    segment: int | None = None  # bytes per segment; None: SEGMENT, larger for the native core
    show_progress: bool | None = None  # None: on a terminal only

    def engine(self, host: str | None) -> EngineOptions:
        return EngineOptions(
            max_classes=self.max_classes,
            since=self.since,
            until=self.until,
            filters=self.filters,
            server=host,
        )


@dataclass(frozen=True)
class PtTablesOptions:
    """What ``--review``/``--history`` asked: the two DSNs (either may be None) and the
    switches. Here, not in govern/digest/pt_tables.py: a digest without them never loads
    pymysql."""

    review: str | None = None
    history: str | None = None
    create_review: bool = False
    create_history: bool = False
    replicate: bool = False  # log the writes in the binary log (replicas get the tables)
    defaults_file: str | None = None

    def check(self) -> None:
        if self.create_review and not self.review:
            raise UsageError("--create-review-table: only with --review")
        if self.create_history and not self.history:
            raise UsageError("--create-history-table: only with --history")
        if self.replicate and not (self.review or self.history):
            raise UsageError("--replicate-tables: only with --review or --history")

    @property
    def wanted(self) -> bool:
        return bool(self.review or self.history)
