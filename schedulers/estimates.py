"""How long a job will take, learned from its own history, robust to the odd slow night.

Row counts are rough (EXPLAIN estimates are often off by 2x) and one night can be
slow for reasons that have nothing to do with the job (a backup, a cold buffer
pool), so every statistic here is a median. Durations are learned per (job, worker)
*alone*: each past run is divided by the contention factor of the others that ran
beside it (:mod:`govern.schedulers.contention`), so nights with one and two workers
feed one history without the estimate drifting when the setup changes; ``plan`` and
``simulate`` multiply it back by the contention they expect.

1. ``fit``: with 3+ past runs whose sizes span 1.5x or more, a Theil-Sen line
   seconds = a + b * rows: the job's fixed cost and its slope (median of pairwise
   slopes; one outlier in four cannot move it). Over sizes within +-10% a line is
   noise: it predicted 4.3 s for a job that ran in 1.9 s.
2. ``rate``: with fewer runs, the catalog's fixed cost (the global line's, at most the
   job's fastest run) plus the median seconds-per-row beyond it times tonight's rows:
   a job seen once at 10 rows is not predicted at 0 s tonight.
3. ``median``: tonight's size unknown: the median of past durations.
4. ``global-fit`` / ``global-rate``: a job never seen before: the same, over the
   latest run of every job of the catalog.
5. ``default-rate``: no history at all: rows / ``[estimate] rows_per_second``.
6. ``none``: neither a size nor a history. Policies put such jobs on the long side.

Each uses the job's runs on the worker asked about when it has 3 or more there, else its
runs on every worker (``Estimate.worker`` says which).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence

from govern.schedulers.contention import Contention, Run, measure

#: Pairwise slopes grow quadratically; beyond this many points the fit samples evenly.
MAX_FIT_POINTS = 200
#: A line needs sizes this far apart (largest / smallest); closer, the median rate is steadier.
MIN_FIT_SPREAD = 1.5
#: Runs on a worker before its own estimate is trusted over the job's runs everywhere.
MIN_WORKER_RUNS = 3


@dataclasses.dataclass(frozen=True)
class Sample:
    """One successful past run: where it ran and beside how many others (time-weighted)."""

    rows: int | None
    seconds: float
    worker: str | None = None
    others: float = 0.0


@dataclasses.dataclass(frozen=True)
class Estimate:
    seconds: float | None  # alone, on ``worker`` (or any worker)
    method: str
    samples: int  # how many past runs of this job it rests on
    worker: str | None = None  # the worker whose runs it rests on; None: every worker


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
    """Estimates for one catalog from its history (job -> recent successful runs, newest
    first); ``contention`` defaults to the one measured from that same history."""

    def __init__(
        self,
        history: Mapping[str, Sequence[Sample]],
        rows_per_second: float,
        contention: Contention | None = None,
    ) -> None:
        self.contention = contention or measure(
            {job: [Run(s.rows, s.seconds, s.others) for s in runs] for job, runs in history.items()}
        )
        factor = self.contention.factor
        # every run as if it had run alone
        self.history = {
            job: [dataclasses.replace(s, seconds=s.seconds / factor(s.others)) for s in samples]
            for job, samples in history.items()
            if samples
        }
        self.rows_per_second = rows_per_second
        latest = [samples[0] for samples in self.history.values()]
        self._global_points = [(float(s.rows), s.seconds) for s in latest if s.rows is not None]
        line = theil_sen(self._global_points) if len(self._global_points) >= 3 else None
        self.fixed_cost = max(line[0], 0.0) if line else 0.0

    def estimate(self, job: str, rows: int | None, worker: str | None = None) -> Estimate:
        """Alone on ``worker`` (None: wherever it ran)."""
        samples = self.history.get(job, [])
        if worker is not None:
            mine = [s for s in samples if s.worker == worker]
            if len(mine) >= MIN_WORKER_RUNS:
                return self._from_own(mine, rows, worker)
        if samples:
            return self._from_own(samples, rows, None)
        if rows is None:
            return Estimate(None, "none", 0)
        if self._global_points:
            guess = _fit_or_rate(self._global_points, rows, self.fixed_cost)
            if guess is not None:
                return Estimate(guess[0], f"global-{guess[1]}", 0)
        return Estimate(rows / self.rows_per_second, "default-rate", 0)

    def _from_own(self, samples: list[Sample], rows: int | None, worker: str | None) -> Estimate:
        n = len(samples)
        if rows is not None:
            points = [(float(s.rows), s.seconds) for s in samples if s.rows is not None]
            fixed = min(self.fixed_cost, min((s for _, s in points), default=0.0))
            guess = _fit_or_rate(points, rows, fixed)
            if guess is not None:
                return Estimate(guess[0], guess[1], n, worker)
        return Estimate(statistics.median(s.seconds for s in samples), "median", n, worker)


def _fit_or_rate(
    points: list[tuple[float, float]], rows: int, fixed: float = 0.0
) -> tuple[float, str] | None:
    sizes = [r for r, _ in points]
    if len(points) >= 3 and max(sizes) >= MIN_FIT_SPREAD * max(min(sizes), 1.0):
        line = theil_sen(points)
        if line is not None:
            predicted = line[0] + line[1] * rows
            if predicted > 0:
                return predicted, "fit"
    rates = [max(seconds - fixed, 0.0) / r for r, seconds in points if r > 0]
    if rates:
        return fixed + statistics.median(rates) * rows, "rate"
    return None


@dataclasses.dataclass(frozen=True)
class EstimateError:
    """How far estimates were from what happened, over the jobs of one night.

    Duration-weighted (sum |actual - estimate| / sum actual): a job estimated at 0.01 s
    that took 1 s weighs 1 s, not 9,900%; the old median of per-job ratios was dominated
    by tiny jobs and had no bound."""

    jobs: int
    abs_error_s: float  # sum of |actual - estimate|
    total_estimate: float
    total_actual: float
    largest: tuple[tuple[str, float, float], ...]  # (job, estimate, actual), worst first

    @property
    def weighted_abs_pct(self) -> float | None:
        return self.abs_error_s / self.total_actual * 100 if self.total_actual > 0 else None

    def to_json(self) -> dict[str, object]:
        pct = self.weighted_abs_pct
        return {
            "jobs": self.jobs,
            "weighted_abs_pct": None if pct is None else round(pct, 1),
            "abs_error_s": round(self.abs_error_s, 3),
            "total_estimate_s": round(self.total_estimate, 3),
            "total_actual_s": round(self.total_actual, 3),
            "largest": [
                {
                    "name": name,
                    "estimate_s": round(est, 3),
                    "actual_s": round(actual, 3),
                    "error_s": round(actual - est, 3),
                }
                for name, est, actual in self.largest
            ],
        }


#: How many of the worst-estimated jobs a night's summary names.
LARGEST_ERRORS = 5


def estimate_error(pairs: Mapping[str, tuple[float, float]]) -> EstimateError:
    """From job -> (estimate, actual) seconds of the jobs that had an estimate and succeeded."""
    worst = sorted(pairs.items(), key=lambda item: -abs(item[1][1] - item[1][0]))
    return EstimateError(
        jobs=len(pairs),
        abs_error_s=sum(abs(a - e) for e, a in pairs.values()),
        total_estimate=sum(e for e, _ in pairs.values()),
        total_actual=sum(a for _, a in pairs.values()),
        largest=tuple((name, e, a) for name, (e, a) in worst[:LARGEST_ERRORS]),
    )
