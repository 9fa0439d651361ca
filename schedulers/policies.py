"""Which ready job a free worker slot takes next.

One function decides for both the simulator (plan, simulate) and the live runner,
so a plan predicts exactly the order a run will follow when estimates hold.

- ``fifo``: catalog order.
- ``sjf``: shortest estimate first: minimises mean completion time (SPT).
- ``ljf``: longest first: the LPT rule, makespan within 4/3 - 1/(3m) of optimal.
- ``wspt``: smallest estimate/weight first (Smith's rule): weighted completion.
- ``two-ended``: slots marked ``short`` take the shortest job, ``long`` slots the
  longest, meeting in the middle: most early finishes of SJF, a makespan near LPT.

A job with no estimate is put on the long side: last for sjf/wspt and short
slots, first for ljf and long slots (it may well be the long one).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

from govern.schedulers.catalog import POLICIES


@dataclasses.dataclass(frozen=True)
class Lane:
    """One slot of a worker: a worker with concurrency 2 has two lanes."""

    index: int
    worker: str
    slot: int
    end: str  # "short" or "long": which end of the queue two-ended takes here

    @property
    def label(self) -> str:
        return f"{self.worker}#{self.slot}"


@dataclasses.dataclass(frozen=True)
class Task:
    """What the policies see of a job."""

    name: str
    order: int
    estimate: float | None  # seconds; None when nothing is known
    weight: float = 1.0
    depends_on: tuple[str, ...] = ()
    workers: tuple[str, ...] | None = None  # None: any worker
    pool: str | None = None  # the [pools] resource it holds a slot of while it runs

    def runs_on(self, worker: str) -> bool:
        return self.workers is None or worker in self.workers


def make_lanes(workers: Sequence[tuple[str, int, str | None]]) -> list[Lane]:
    """Lanes from (worker, concurrency, end). Without an explicit end, lanes alternate
    short, long, short... in catalog order, so two one-slot workers are the two ends."""
    lanes: list[Lane] = []
    for worker, concurrency, end in workers:
        for slot in range(concurrency):
            index = len(lanes)
            lanes.append(Lane(index, worker, slot, end or ("short" if index % 2 == 0 else "long")))
    return lanes


def _shortest(task: Task) -> tuple[float, float, int]:
    if task.estimate is None:
        return (1, 0.0, task.order)
    return (0, task.estimate, task.order)


def _longest(task: Task) -> tuple[float, float, int]:
    if task.estimate is None:
        return (0, 0.0, task.order)
    return (1, -task.estimate, task.order)


def priority(policy: str, task: Task, end: str = "short") -> tuple[float, float, int]:
    """Sort key: the smallest key runs first. Ties go to catalog order."""
    if policy == "fifo":
        return (0, 0.0, task.order)
    if policy == "sjf" or (policy == "two-ended" and end == "short"):
        return _shortest(task)
    if policy == "ljf" or policy == "two-ended":
        return _longest(task)
    if policy == "wspt":
        ratio = math.inf if task.estimate is None else task.estimate / task.weight
        return (0, ratio, task.order)
    raise ValueError(f"unknown policy {policy!r} (one of {', '.join(POLICIES)})")


def choose(policy: str, ready: Iterable[Task], lane: Lane) -> Task | None:
    """The job ``lane`` takes among the ready ones it may run, or None."""
    candidates = [t for t in ready if t.runs_on(lane.worker)]
    if not candidates:
        return None
    return min(candidates, key=lambda t: priority(policy, t, lane.end))
