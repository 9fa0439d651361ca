"""How long a job will take, learned from its own history, robust to the odd slow night.

Row counts are rough (EXPLAIN estimates are often off by 2x) and one night can be
slow for reasons that have nothing to do with the job (a backup, a cold buffer
pool), so every statistic here is a median:

1. ``fit``: with 3+ past runs at 2+ different sizes, a Theil-Sen line
   seconds = a + b * rows (median of pairwise slopes; one outlier in four cannot move it).
2. ``rate``: with fewer runs, the median seconds-per-row times tonight's rows.
3. ``median``: tonight's size unknown: the median of past durations.
4. ``global-fit`` / ``global-rate``: a job never seen before: the same, over the
   latest run of every job of the catalog.
5. ``default-rate``: no history at all: rows / ``[estimate] rows_per_second``.
6. ``none``: neither a size nor a history. Policies put such jobs on the long side.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence

#: Pairwise slopes grow quadratically; beyond this many points the fit samples evenly.
MAX_FIT_POINTS = 200


@dataclasses.dataclass(frozen=True)
class Sample:
    """One successful past run."""

    rows: int | None
    seconds: float


@dataclasses.dataclass(frozen=True)
class Estimate:
    seconds: float | None
    method: str
    samples: int  # how many past runs of this job it rests on


def theil_sen(points: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """(intercept, slope) of the Theil-Sen line, or None with fewer than 2 distinct x."""
    if len(points) > MAX_FIT_POINTS:
        ordered = sorted(points)
        step = len(ordered) / MAX_FIT_POINTS
        points = [ordered[int(i * step)] for i in range(MAX_FIT_POINTS)]
    slopes = [
        (y2 - y1) / (x2 - x1)
        for i, (x1, y1) in enumerate(points)
        for x2, y2 in points[i + 1 :]
        if x2 != x1
    ]
    if not slopes:
        return None
    slope = max(statistics.median(slopes), 0.0)  # more rows never take less time
    intercept = statistics.median(y - slope * x for x, y in points)
    return intercept, slope


class Estimator:
    """Estimates for one catalog from its history (job -> recent successful runs)."""

    def __init__(self, history: Mapping[str, Sequence[Sample]], rows_per_second: float) -> None:
        self.history = {job: list(samples) for job, samples in history.items() if samples}
        self.rows_per_second = rows_per_second
        latest = [samples[0] for samples in self.history.values()]  # newest first
        self._global_points = [(float(s.rows), s.seconds) for s in latest if s.rows is not None]

    def estimate(self, job: str, rows: int | None) -> Estimate:
        samples = self.history.get(job, [])
        if samples:
            return self._from_own(samples, rows)
        if rows is None:
            return Estimate(None, "none", 0)
        if self._global_points:
            guess = _fit_or_rate(self._global_points, rows)
            if guess is not None:
                return Estimate(guess[0], f"global-{guess[1]}", 0)
        return Estimate(rows / self.rows_per_second, "default-rate", 0)

    def _from_own(self, samples: list[Sample], rows: int | None) -> Estimate:
        n = len(samples)
        if rows is not None:
            points = [(float(s.rows), s.seconds) for s in samples if s.rows is not None]
            guess = _fit_or_rate(points, rows)
            if guess is not None:
                return Estimate(guess[0], guess[1], n)
        return Estimate(statistics.median(s.seconds for s in samples), "median", n)


def _fit_or_rate(points: list[tuple[float, float]], rows: int) -> tuple[float, str] | None:
    if len(points) >= 3:
        line = theil_sen(points)
        if line is not None:
            predicted = line[0] + line[1] * rows
            if predicted > 0:
                return predicted, "fit"
    rates = [seconds / r for r, seconds in points if r > 0]
    if rates:
        return statistics.median(rates) * rows, "rate"
    return None


@dataclasses.dataclass(frozen=True)
class EstimateError:
    """How far estimates were from what happened, over the jobs of one night."""

    jobs: int
    median_abs_pct: float | None  # median of |actual - estimate| / estimate, in percent
    total_estimate: float
    total_actual: float

    def to_json(self) -> dict[str, object]:
        return {
            "jobs": self.jobs,
            "median_abs_pct": None
            if self.median_abs_pct is None
            else round(self.median_abs_pct, 1),
            "total_estimate_s": round(self.total_estimate, 3),
            "total_actual_s": round(self.total_actual, 3),
        }


def estimate_error(pairs: Sequence[tuple[float, float]]) -> EstimateError:
    """From (estimate, actual) seconds of the jobs that had an estimate and succeeded."""
    errors = [abs(actual - est) / est * 100 for est, actual in pairs if est > 0]
    return EstimateError(
        jobs=len(pairs),
        median_abs_pct=statistics.median(errors) if errors else None,
        total_estimate=sum(e for e, _ in pairs),
        total_actual=sum(a for _, a in pairs),
    )
