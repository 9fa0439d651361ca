"""``govern collect --store``: closed buckets into a history store, days rolled up as they end.

After each bucket written, the collector rolls up its host's days that ended an hour ago
(and the fleet's days once every host's is rolled up), gives rows written before migration
0008 their percentile columns for at most half a second (bounds.backfill: no command to
run after an upgrade), and at most hourly applies the retention: buckets of days older
than ``hourly_days`` dropped (their day's roll-up stays), everything older than
``keep_days`` dropped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from govern.history.store import HistoryStore

RETAIN_EVERY = 3600.0


@dataclass(frozen=True)
class Retention:
    hourly_days: int = 14
    keep_days: int = 400

    def __post_init__(self) -> None:
        if not 1 <= self.hourly_days <= self.keep_days:
            raise ValueError(
                "the buckets' retention must be at least a day and at most the store's"
            )


class StoreSink:
    """A collect ``Sink`` over a history store (closed with :meth:`close`)."""

    def __init__(self, store: HistoryStore, retention: Retention | None = None) -> None:
        self.store = store
        self.retention = retention or Retention()
        self._retained = 0.0

    def write(self, host: str, start: str, document: dict[str, Any]) -> str:
        where = self.store.write(host, start, document)
        self.maintain(host)
        return where

    def maintain(self, host: str) -> None:
        roll_up = getattr(self.store, "roll_up", None)
        if roll_up is not None:
            roll_up(host=host)
        backfill = getattr(self.store, "backfill", None)
        if backfill is not None:
            backfill()
        retain = getattr(self.store, "retain", None)
        if retain is not None and time.monotonic() - self._retained >= RETAIN_EVERY:
            retain(hourly_days=self.retention.hourly_days, keep_days=self.retention.keep_days)
            self._retained = time.monotonic()

    def close(self) -> None:
        self.store.close()


class BothSinks:
    """``--to DIR`` and ``--store URL`` together: each bucket to both."""

    def __init__(self, first: Any, second: Any) -> None:
        self.sinks = (first, second)

    def write(self, host: str, start: str, document: dict[str, Any]) -> str:
        return "; ".join(sink.write(host, start, document) for sink in self.sinks)

    def close(self) -> None:
        for sink in self.sinks:
            close = getattr(sink, "close", None)
            if close is not None:
                close()
