"""Replay a night in virtual time: the engine behind ``plan`` and ``simulate``.

List scheduling, as the runner does it: whenever a lane is free it takes the
job the policy picks among the ready ones. The policy orders by each task's
``estimate`` (what the scheduler knows); the clock advances by ``durations``
(what actually happens: recorded durations, or the estimates themselves for a plan).
With a measured contention factor, jobs slow down while others run beside them.
"""

from __future__ import annotations

import dataclasses
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


@dataclasses.dataclass
class _Running:
    name: str
    left: float  # seconds of work left, as if alone
    start: float
    lane: Lane


def simulate(
    policy: str,
    tasks: Sequence[Task],
    lanes: Sequence[Lane],
    durations: Mapping[str, float] | None = None,
    *,
    on_worker: Mapping[tuple[str, str], float] | None = None,
    contention: Contention | None = None,
) -> Timeline:
    """Every job's lane, start and finish under ``policy``.

    ``durations`` are run times alone (default: the estimates), ``on_worker`` overrides
    them per (job, worker). With ``contention`` each running job advances at
    1/factor(others running) of its alone speed, recomputed whenever a job starts or ends.
    """
    if durations is None:
        durations = {t.name: t.estimate or 0.0 for t in tasks}
    on_worker = on_worker or {}
    factor = (contention or NONE).factor
    dispatcher = Dispatcher(policy, tasks, lanes)
    free = sorted(lanes, key=lambda lane: lane.index)
    running: dict[int, _Running] = {}  # lane index -> what runs there
    placements: dict[str, Placement] = {}
    order: list[str] = []
    now = 0.0
    while True:
        still_free = []
        for lane in free:
            task = dispatcher.take(lane, now)
            if task is None:
                still_free.append(lane)
                continue
            work = on_worker.get((task.name, lane.worker), durations.get(task.name, 0.0))
            running[lane.index] = _Running(task.name, max(work, 0.0), now, lane)
            order.append(task.name)
        free = still_free
        if not running:
            break
        slowdown = factor(len(running) - 1)
        step = min(r.left for r in running.values())
        now += step * slowdown
        ended = []
        for index, entry in running.items():
            entry.left -= step
            if entry.left <= 1e-12:
                ended.append(index)
        for index in ended:
            done = running.pop(index)
            placements[done.name] = Placement(done.name, done.lane, done.start, now)
            dispatcher.succeed(done.name)
            free.append(done.lane)
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
