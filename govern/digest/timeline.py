"""Load over time: events and query time per bucket (a minute by default), mergeable.

The digest's load chart needs, per minute, how many queries ran and how much query
time they took. This is that series: sparse while it is built (a dict keyed by
bucket, so a month-long log costs one entry per busy minute), dense when charted,
and coarsened to at most a few hundred points so long logs still chart quickly.
Two timelines with the same step merge by adding, like the digest's other sketches.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

#: Bucket sizes a chart may coarsen to, in seconds.
STEPS = (60, 300, 900, 3600, 6 * 3600, 86400)


@dataclass
class Timeline:
    step: int = 60
    counts: dict[int, int] = field(default_factory=dict)  # bucket start (epoch s) -> events
    seconds: dict[int, float] = field(default_factory=dict)  # bucket start -> query time (s)

    def add(self, epoch: float, query_time: float) -> None:
        bucket = int(epoch // self.step * self.step)
        self.counts[bucket] = self.counts.get(bucket, 0) + 1
        self.seconds[bucket] = self.seconds.get(bucket, 0.0) + query_time

    @classmethod
    def from_minutes(cls, step: int, minutes: Iterable[Iterable[Any]]) -> Timeline | None:
        """A ``govern.digest`` document's ``timeline`` (``[minute, events, query_time_s]``
        per log minute): None when no minute can be placed on a clock.

        Log time is read as UTC (the state store's clock, where blind windows come from): a
        server that logs local time in another zone shows its windows shifted by the offset.
        """
        timeline = cls(step)
        for minute, events, seconds in minutes:
            try:
                bucket = int(log_epoch(f"{minute}:00"))
            except ValueError:
                continue  # a log time govern cannot place on a clock
            timeline.counts[bucket] = timeline.counts.get(bucket, 0) + int(events)
            timeline.seconds[bucket] = timeline.seconds.get(bucket, 0.0) + float(seconds)
        return None if timeline.empty else timeline

    @classmethod
    def from_events(cls, events: Iterable[tuple[float, float]], step: int = 60) -> Timeline:
        timeline = cls(step)
        for epoch, query_time in events:
            timeline.add(epoch, query_time)
        return timeline

    def merge(self, other: Timeline) -> Timeline:
        if other.step != self.step:
            raise ValueError(f"cannot merge timelines of {self.step} s and {other.step} s buckets")
        merged = Timeline(self.step, dict(self.counts), dict(self.seconds))
        for bucket, n in other.counts.items():
            merged.counts[bucket] = merged.counts.get(bucket, 0) + n
            merged.seconds[bucket] = merged.seconds.get(bucket, 0.0) + other.seconds.get(
                bucket, 0.0
            )
        return merged

    @property
    def empty(self) -> bool:
        return not self.counts

    def dense(self, max_points: int = 720) -> tuple[int, list[float], list[float], list[float]]:
        """``(step, bucket starts, queries/s, query time/s)`` with empty buckets as zeros.

        The step grows (1 min, 5 min, 15 min, 1 h, 6 h, 1 day) until the span fits in
        ``max_points`` buckets; rates are per second of wall time, so they read the same
        at every step.
        """
        if not self.counts:
            return self.step, [], [], []
        first, last = min(self.counts), max(self.counts)
        step = next(
            (s for s in STEPS if s >= self.step and (last - first) / s < max_points),
            STEPS[-1],
        )
        start = first // step * step
        size = int((last - start) // step) + 1
        counts = [0.0] * size
        seconds = [0.0] * size
        for bucket, n in self.counts.items():
            index = int((bucket - start) // step)
            counts[index] += n
            seconds[index] += self.seconds.get(bucket, 0.0)
        times = [float(start + i * step) for i in range(size)]
        return step, times, [n / step for n in counts], [s / step for s in seconds]

    def to_json(self) -> dict[str, Any]:
        """``{step_s, buckets: [[epoch, events, query_time_s], …]}`` in time order."""
        return {
            "step_s": self.step,
            "buckets": [
                [b, self.counts[b], round(self.seconds.get(b, 0.0), 6)] for b in sorted(self.counts)
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Timeline:
        timeline = cls(int(data["step_s"]))
        for bucket, events, seconds in data["buckets"]:
            if not (math.isfinite(float(seconds)) and int(events) >= 0):
                raise ValueError(f"bad timeline bucket {bucket}")
            timeline.counts[int(bucket)] = int(events)
            timeline.seconds[int(bucket)] = float(seconds)
        return timeline


def log_epoch(stamp: str) -> float:
    """A log time (ISO 8601) as epoch seconds; without a zone it is UTC."""
    moment = datetime.fromisoformat(stamp)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
