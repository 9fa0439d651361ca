"""How much a job slows beside others, measured from history, and used by ``plan``/``simulate``.

Two replicas writing to one primary do not run a job as fast as one alone: nights
predicted at 11-13 s took 16-20 s. Every recorded run knows how many other jobs ran
beside it (``others``: the time-weighted mean over its run, from the night's attempts),
so history gives, per level k = round(others), the ratio of a job's speed alone to its
speed with k others (per row, so tonight's size does not count), duration-weighted over
the jobs seen both ways. ``factor(k)`` is piecewise linear through (0, 1) and the measured
levels, extended past the last one with its slope per other job.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import statistics
from collections.abc import Mapping, Sequence

#: A run with fewer others than this (time-weighted) counts as alone.
ALONE_BELOW = 0.25


def overlaps(intervals: Sequence[tuple[float, float]]) -> list[float]:
    """For each (start, finish): the time-weighted mean number of the *other* intervals
    running during it (a sweep: O(n log n), for nights of thousands of jobs)."""
    edges = sorted({t for interval in intervals for t in interval})
    if len(edges) < 2:
        return [0.0] * len(intervals)
    delta = [0] * (len(edges) + 1)
    for start, finish in intervals:
        delta[bisect.bisect_left(edges, start)] += 1
        delta[bisect.bisect_left(edges, finish)] -= 1
    # area[i]: the integral of the running count from edges[0] to edges[i]
    area = [0.0] * len(edges)
    running = 0
    for i in range(1, len(edges)):
        running += delta[i - 1]
        area[i] = area[i - 1] + running * (edges[i] - edges[i - 1])
    out = []
    for start, finish in intervals:
        length = finish - start
        if length <= 0:
            out.append(0.0)
            continue
        total = area[bisect.bisect_left(edges, finish)] - area[bisect.bisect_left(edges, start)]
        out.append(max(total / length - 1.0, 0.0))
    return out


@dataclasses.dataclass(frozen=True)
class Contention:
    """``levels``: k others -> how many times longer a job takes than alone (measured)."""

    levels: Mapping[int, float]
    jobs: int = 0  # jobs seen both alone and beside others

    def factor(self, others: float) -> float:
        if others <= 0 or not self.levels:
            return 1.0
        points = [(0, 1.0), *sorted(self.levels.items())]
        for (k1, f1), (k2, f2) in itertools.pairwise(points):
            if others <= k2:
                return f1 + (f2 - f1) * (others - k1) / (k2 - k1)
        k, f = points[-1]
        return 1.0 + (f - 1.0) / k * others

    def to_json(self) -> dict[str, object]:
        return {
            "jobs": self.jobs,
            "factors": [
                {"others": k, "factor": round(f, 3)} for k, f in sorted(self.levels.items())
            ],
        }


NONE = Contention({})


@dataclasses.dataclass(frozen=True)
class Run:
    """What contention is measured from: one successful run of a job."""

    rows: int | None
    seconds: float
    others: float


def measure(history: Mapping[str, Sequence[Run]]) -> Contention:
    """Per level k >= 1: sum over jobs of w * (median rate with k others / median rate
    alone) / sum of w, w being the job's median duration alone (tiny jobs weigh little)."""
    sums: dict[int, tuple[float, float]] = {}
    jobs = 0
    for runs in history.values():
        by_level: dict[int, list[float]] = {}
        alone_seconds = []
        for run in runs:
            rate = run.seconds / run.rows if run.rows else run.seconds
            level = 0 if run.others < ALONE_BELOW else max(round(run.others), 1)
            by_level.setdefault(level, []).append(rate)
            if level == 0:
                alone_seconds.append(run.seconds)
        if 0 not in by_level or len(by_level) < 2:
            continue
        alone = statistics.median(by_level.pop(0))
        if alone <= 0:
            continue
        jobs += 1
        weight = statistics.median(alone_seconds)
        for level, rates in by_level.items():
            num, den = sums.get(level, (0.0, 0.0))
            sums[level] = (num + weight * statistics.median(rates) / alone, den + weight)
    levels = {k: max(num / den, 1.0) for k, (num, den) in sums.items() if den > 0}
    return Contention(levels, jobs)
