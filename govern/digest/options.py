"""How to digest: what ``govern digest``'s options ask of the runner and the engines."""

from __future__ import annotations

from dataclasses import dataclass, field

from govern.digest.engine import EngineOptions
from govern.digest.filters import Filters


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
