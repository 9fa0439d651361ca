"""Trends: a class's (or the whole server's) count, total time, p95 and p99 per step, read
from a history store for the digest page's charts.

Every step is there, empty ones as zero, so a chart's quiet stretch is a real one; the
percentiles of a step come from its merged sketch (the store never averages them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from govern.history.model import Point
from govern.history.store import HistoryStore

#: Steps a chart may have before hours become days.
MAX_HOURLY_DAYS = 14


@dataclass(frozen=True)
class Trend:
    """One series: the whole server (``class_id`` None) or one class."""

    title: str
    class_id: str | None
    step: int
    times: list[float]  # step starts, epoch seconds (the bucket clock read as UTC)
    count: list[float]
    total: list[float]  # seconds of Query_time in the step
    p95: list[float]
    p99: list[float]

    @property
    def empty(self) -> bool:
        return not any(self.count)


def pick_step(since: datetime, until: datetime) -> int:
    """Hours up to two weeks, days beyond."""
    return 3600 if until - since <= timedelta(days=MAX_HOURLY_DAYS) else 86400


def dense(points: Sequence[Point], since: datetime, until: datetime, step: int) -> list[Point]:
    """One point per step of [since, until) (aligned to the epoch), missing ones empty."""
    by_start = {point.start: point for point in points}
    first = _epoch(since) // step * step
    found = []
    at = first
    while at < _epoch(until):
        start = datetime.fromtimestamp(at, UTC).replace(tzinfo=None)
        found.append(by_start.get(start) or Point(start, None, None, 0, 0.0, None, None))
        at += step
    return found


def trend(
    store: HistoryStore,
    since: datetime,
    until: datetime,
    *,
    title: str,
    class_id: str | None = None,
    hosts: str | None = None,
    host: str | None = None,
    step: int | None = None,
) -> Trend:
    step = step or pick_step(since, until)
    points = dense(
        store.series(since, until, step=step, hosts=hosts, host=host, class_id=class_id),
        since,
        until,
        step,
    )
    return Trend(
        title=title,
        class_id=class_id,
        step=step,
        times=[float(_epoch(p.start)) for p in points],
        count=[float(p.count) for p in points],
        total=[p.query_time for p in points],
        p95=[p.p95 or 0.0 for p in points],
        p99=[p.p99 or 0.0 for p in points],
    )


def trends(
    store: HistoryStore,
    since: datetime,
    until: datetime,
    classes: Sequence[tuple[str, str]],
    *,
    hosts: str | None = None,
    host: str | None = None,
) -> list[Trend]:
    """The whole server's trend, then each of ``classes`` ((query ID, title) pairs)."""
    step = pick_step(since, until)
    found = [trend(store, since, until, title="Whole server", hosts=hosts, host=host, step=step)]
    for class_id, title in classes:
        found.append(
            trend(
                store,
                since,
                until,
                title=title,
                class_id=class_id,
                hosts=hosts,
                host=host,
                step=step,
            )
        )
    return found


def _epoch(moment: datetime) -> int:
    return int(moment.replace(tzinfo=UTC).timestamp())
