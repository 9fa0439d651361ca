"""Replay a night in virtual time: the engine behind ``plan`` and ``simulate``.

List scheduling, as the runner does it: whenever a lane is free it takes the
job the policy picks among the ready ones. The policy orders by each task's
``estimate`` (what the scheduler knows); the clock advances by ``durations``
(what actually happens: recorded durations, or the estimates themselves for a plan).
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Mapping, Sequence

from govern.schedulers.dispatch import Dispatcher
from govern.schedulers.metrics import NightMetrics, night_metrics
from govern.schedulers.policies import Lane, Task


@dataclasses.dataclass(frozen=True)
class Placement:
    name: str
    lane: Lane
    start: float
    finish: float


@dataclasses.dataclass(frozen=True)
class Timeline:
    policy: str
    placements: tuple[Placement, ...]  # in start order
    skipped: Mapping[str, str]  # job -> why it cannot run
    metrics: NightMetrics

    def placement(self, name: str) -> Placement:
        return next(p for p in self.placements if p.name == name)


def simulate(
    policy: str,
    tasks: Sequence[Task],
    lanes: Sequence[Lane],
    durations: Mapping[str, float] | None = None,
    *,
    pools: Mapping[str, int] | None = None,
) -> Timeline:
    """Every job's lane, start and finish under ``policy`` (durations default to estimates),
    with at most ``pools[P]`` jobs of pool P running at once."""
    if durations is None:
        durations = {t.name: t.estimate or 0.0 for t in tasks}
    dispatcher = Dispatcher(policy, tasks, lanes, pools)
    lane_by_index = {lane.index: lane for lane in lanes}
    free = list(lanes)
    running: list[tuple[float, int, str]] = []  # (finish, lane index, job)
    placements: list[Placement] = []
    now = 0.0
    while True:
        for lane in sorted(free, key=lambda lane: lane.index):
            task = dispatcher.take(lane, now)
            if task is None:
                continue
            free.remove(lane)
            finish = now + max(durations.get(task.name, 0.0), 0.0)
            placements.append(Placement(task.name, lane, now, finish))
            heapq.heappush(running, (finish, lane.index, task.name))
        if not running:
            break
        now, index, name = heapq.heappop(running)
        finished = [(index, name)]
        while running and running[0][0] <= now:  # everything ending at the same instant
            _, other_index, other = heapq.heappop(running)
            finished.append((other_index, other))
        for lane_index, job in finished:
            dispatcher.succeed(job)
            free.append(lane_by_index[lane_index])
    dispatcher.abandon("never became ready")
    finishes = {p.name: p.finish for p in placements}
    weights = {t.name: t.weight for t in tasks}
    return Timeline(
        policy=policy,
        placements=tuple(placements),
        skipped=dict(dispatcher.skipped),
        metrics=night_metrics(finishes, len(tasks), weights),
    )


def makespan_lower_bound(durations: Sequence[float], lanes: int) -> float:
    """No schedule on ``lanes`` identical lanes beats max(total/lanes, longest job)."""
    if not durations:
        return 0.0
    return max(sum(durations) / max(lanes, 1), max(durations))
