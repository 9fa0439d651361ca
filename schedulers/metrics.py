"""What a night is judged by: makespan, mean completion, and the "% done vs % of the night" curve.

The origin story's figure is ``done_share_at(0.5)``: the share of all summaries
finished by half of the makespan (97% there with SJF on heavy-tailed sizes).
Shares count every job of the night, so a failed or skipped job lowers them.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping

#: Where the text outputs sample the curve (JSON carries every step).
CURVE_MARKS = (0.1, 0.25, 0.5, 0.75, 0.9)


@dataclasses.dataclass(frozen=True)
class NightMetrics:
    jobs: int  # every job of the night, done or not
    done: int
    makespan: float
    mean_completion: float | None
    weighted_mean_completion: float | None
    finishes: tuple[float, ...]  # sorted completion times (offsets from the night's start)

    def done_share_at(self, fraction: float) -> float:
        """Share of all jobs finished by ``fraction`` of the makespan."""
        if self.jobs == 0:
            return 0.0
        limit = fraction * self.makespan + 1e-9
        return sum(1 for f in self.finishes if f <= limit) / self.jobs

    def curve(self) -> list[tuple[float, float]]:
        """Steps ``(share of makespan, share of jobs done)`` at each completion."""
        points = [(0.0, 0.0)]
        for done, finish in enumerate(self.finishes, start=1):
            x = finish / self.makespan if self.makespan > 0 else 1.0
            points.append((round(x, 6), round(done / self.jobs, 6)))
        return points

    def to_json(self) -> dict[str, object]:
        return {
            "jobs": self.jobs,
            "done": self.done,
            "makespan_s": round(self.makespan, 3),
            "mean_completion_s": _round(self.mean_completion),
            "weighted_mean_completion_s": _round(self.weighted_mean_completion),
            "done_at_half_makespan": round(self.done_share_at(0.5), 6),
            "done_at": {f"{m:g}": round(self.done_share_at(m), 6) for m in CURVE_MARKS},
            "curve": [{"time_share": x, "done_share": y} for x, y in self.curve()],
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def night_metrics(
    finishes: Mapping[str, float],
    jobs: int,
    weights: Mapping[str, float] | None = None,
    makespan: float | None = None,
) -> NightMetrics:
    """Metrics from each successful job's completion time (offset from the night's start).

    ``makespan`` defaults to the last completion; a real night passes its own length
    (a job that failed last still kept the night going)."""
    times = sorted(finishes.values())
    weights = weights or {}
    total_weight = sum(weights.get(n, 1.0) for n in finishes)
    return NightMetrics(
        jobs=jobs,
        done=len(times),
        makespan=makespan if makespan is not None else (times[-1] if times else 0.0),
        mean_completion=statistics.fmean(times) if times else None,
        weighted_mean_completion=(
            sum(weights.get(n, 1.0) * f for n, f in finishes.items()) / total_weight
            if finishes
            else None
        ),
        finishes=tuple(times),
    )
