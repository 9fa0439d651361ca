"""A collector's checkpoint in the state store: positions and open buckets, committed together.

One SQLite transaction holds the position of every source and the buckets still
open, so a collector killed at any point restarts from a state where every event
before the positions is in exactly one bucket (docs/design/collect.md, "Crash
safety"). Closed buckets are handed to the sink before the transaction that
forgets them, and a sink replaces a bucket it already has: a crash in between
makes the restarted collector write the same bucket again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import IO, Any

from govern import pidlock
from govern.collect.digesting import Aggregate
from govern.errors import ConfigError
from govern.state import StateStore, utcnow


@dataclass
class Saved:
    """What the last commit of a collector left."""

    bucket_seconds: int
    state: dict[str, Any]
    open_buckets: dict[str, Aggregate] = field(default_factory=dict)


class Checkpoints:
    """The checkpoint of one collector (named by its host label) in a state store."""

    def __init__(self, store: StateStore, collector: str) -> None:
        self.store = store
        self.collector = collector
        self._lock: IO[str] | None = None

    def lock(self) -> None:
        """One collector per name and state file: an flock the kernel drops if we die."""
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", self.collector)
        path = self.store.path.parent / f"collect-{safe}.lock"
        try:
            handle = pidlock.take(path)
        except pidlock.LockHeld as held:
            raise ConfigError(
                f"another govern collect (pid {held.holder}) is collecting as {self.collector!r}"
                f" with this state file ({path})"
            ) from None
        self._lock = handle

    def unlock(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def load(self) -> Saved | None:
        row = self.store.db.execute(
            "SELECT bucket_s, state FROM collect_checkpoints WHERE collector = ?",
            (self.collector,),
        ).fetchone()
        if row is None:
            return None
        saved = Saved(int(row[0]), json.loads(row[1]))
        for start, document in self.store.db.execute(
            "SELECT start, document FROM collect_open_buckets WHERE collector = ? ORDER BY start",
            (self.collector,),
        ):
            saved.open_buckets[start] = Aggregate.from_saved(json.loads(document))
        return saved

    def commit(
        self,
        bucket_seconds: int,
        state: dict[str, Any],
        changed: dict[str, dict[str, Any]],
        closed: list[str],
    ) -> None:
        """Positions, the open buckets that changed, and the closed ones forgotten: at once."""
        with self.store.transaction() as db:
            db.execute(
                "INSERT INTO collect_checkpoints (collector, bucket_s, state, updated_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT(collector) DO UPDATE SET"
                " bucket_s = excluded.bucket_s, state = excluded.state,"
                " updated_at = excluded.updated_at",
                (self.collector, bucket_seconds, json.dumps(state), utcnow()),
            )
            for start in closed:
                db.execute(
                    "DELETE FROM collect_open_buckets WHERE collector = ? AND start = ?",
                    (self.collector, start),
                )
            for start, document in changed.items():
                db.execute(
                    "INSERT INTO collect_open_buckets (collector, start, document)"
                    " VALUES (?, ?, ?) ON CONFLICT(collector, start) DO UPDATE SET"
                    " document = excluded.document",
                    (self.collector, start, json.dumps(document, default=list)),
                )
