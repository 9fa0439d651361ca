"""Replay a night in virtual time: the engine behind ``plan`` and ``simulate``.

List scheduling, as the runner does it: whenever a lane is free it takes the
job the policy picks among the ready ones. The policy orders by each task's
``estimate`` (what the scheduler knows); the clock advances by ``durations``
(what actually happens: recorded durations, or the estimates themselves for a plan).
With a measured contention factor, jobs slow down while others run beside them.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Mapping, Sequence

from govern.schedulers.contention import NONE, Contention
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
    on_worker: Mapping[tuple[str, str], float] | None = None,
    contention: Contention | None = None,
    pools: Mapping[str, int] | None = None,
) -> Timeline:
    """Every job's lane, start and finish under ``policy``.

    ``durations`` are run times alone (default: the estimates), ``on_worker`` overrides
    them per (job, worker). With ``contention`` each running job advances at
    1/factor(others running) of its alone speed, recomputed whenever a job starts or ends.

    All running jobs advance at the same speed, so one clock of work done alone
    (``work``) orders their ends: a job started at work w with d seconds alone ends at
    work w + d. The running jobs sit in a heap by that end, and an event costs O(log n)
    (a night of n jobs, a 2,000-link chain included, replays in O(n log n)).
    At most ``pools[P]`` jobs of pool P run at once.
    """
    if durations is None:
        durations = {t.name: t.estimate or 0.0 for t in tasks}
    on_worker = on_worker or {}
    factor = (contention or NONE).factor
    dispatcher = Dispatcher(policy, tasks, lanes, pools)
    lane_by_index = {lane.index: lane for lane in lanes}
    free = sorted(lanes, key=lambda lane: lane.index)
    #: (work clock at its end, lane index, job, start time)
    running: list[tuple[float, int, str, float]] = []
    placements: dict[str, Placement] = {}
    order: list[str] = []
    now = 0.0
    work = 0.0  # seconds of work each running job has done since the night began, as if alone
    while True:
        still_free = []
        for lane in free:
            task = dispatcher.take(lane, now)
            if task is None:
                still_free.append(lane)
                continue
            alone = on_worker.get((task.name, lane.worker), durations.get(task.name, 0.0))
            heapq.heappush(running, (work + max(alone, 0.0), lane.index, task.name, now))
            order.append(task.name)
        free = still_free
        if not running:
            break
        slowdown = factor(len(running) - 1)
        next_end = running[0][0]
        now += (next_end - work) * slowdown
        work = next_end
        while running and running[0][0] <= work + 1e-12:  # everything ending at this instant
            _, index, name, start = heapq.heappop(running)
            placements[name] = Placement(name, lane_by_index[index], start, now)
            dispatcher.succeed(name)
            free.append(lane_by_index[index])
        free.sort(key=lambda lane: lane.index)
    dispatcher.abandon("never became ready")
    finishes = {p.name: p.finish for p in placements.values()}
    weights = {t.name: t.weight for t in tasks}
    return Timeline(
        policy=policy,
        placements=tuple(placements[name] for name in order),
        skipped=dict(dispatcher.skipped),
        metrics=night_metrics(finishes, len(tasks), weights),
    )


def makespan_lower_bound(durations: Sequence[float], lanes: int) -> float:
    """No schedule on ``lanes`` identical lanes beats max(total/lanes, longest job)."""
    if not durations:
        return 0.0
    return max(sum(durations) / max(lanes, 1), max(durations))
