"""What a history store answers with, apart from reports: points of a series."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

#: How many hosts a report lists per class (the most expensive first).
TOP_HOSTS = 5


@dataclass(frozen=True, slots=True)
class Point:
    """One step of a series: a host's or the fleet's (host None), one class or all (None).

    ``query_time`` is the total Query_time in seconds; p95/p99 come from the merged sketch
    of the step (None: no event had a Query_time).
    """

    start: datetime  # naive, the logs' clock (as govern collect's buckets)
    host: str | None
    class_id: str | None
    count: int
    query_time: float
    p95: float | None
    p99: float | None
