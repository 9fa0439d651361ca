"""The bookkeeping of a night: which jobs are ready, running, done, failed or skipped.

The simulator drives it with virtual time and the runner with the real clock;
both ask it for the next job of a free lane, so dependencies, retries,
worker restrictions and pools behave the same in a plan and in a run.

A pool (``[pools] NAME = N``) caps how many jobs naming it run at once across
every lane: a lane whose best ready job's pool is full takes the next one the
policy picks among the others (or waits).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from govern.schedulers.policies import Lane, Task, choose


class Dispatcher:
    def __init__(
        self,
        policy: str,
        tasks: Sequence[Task],
        lanes: Sequence[Lane],
        pools: Mapping[str, int] | None = None,
    ) -> None:
        self.policy = policy
        self.pools = dict(pools or {})
        #: pool -> jobs holding a slot of it now
        self.in_pool: Counter[str] = Counter()
        self.tasks = {t.name: t for t in tasks}
        self.pending: dict[str, Task] = dict(self.tasks)
        self.running: set[str] = set()
        self.succeeded: set[str] = set()
        self.failed: set[str] = set()
        #: job -> why it never ran (a failed dependency, no worker it may use...)
        self.skipped: dict[str, str] = {}
        self._not_before: dict[str, float] = {}
        workers = {lane.worker for lane in lanes}
        for task in tasks:
            if task.workers is not None and not workers.intersection(task.workers):
                self._skip(
                    task.name, f"none of its workers ({', '.join(task.workers)}) is available"
                )

    # --- questions ----------------------------------------------------------------------
    def ready(self, now: float = 0.0) -> list[Task]:
        return [
            t
            for t in self.pending.values()
            if all(d in self.succeeded for d in t.depends_on)
            and self._not_before.get(t.name, 0.0) <= now
        ]

    @property
    def finished(self) -> bool:
        return not self.pending and not self.running

    def next_retry_at(self) -> float | None:
        """When a job waiting out its retry delay becomes ready again."""
        times = [self._not_before[n] for n in self.pending if n in self._not_before]
        return min(times) if times else None

    # --- transitions --------------------------------------------------------------------
    def take(self, lane: Lane, now: float = 0.0) -> Task | None:
        """The job this free lane starts now, per the policy; None if nothing fits."""
        ready = [t for t in self.ready(now) if self._pool_has_room(t)]
        task = choose(self.policy, ready, lane)
        if task is not None:
            del self.pending[task.name]
            self.running.add(task.name)
            if task.pool is not None:
                self.in_pool[task.pool] += 1
        return task

    def _pool_has_room(self, task: Task) -> bool:
        return task.pool is None or self.in_pool[task.pool] < self.pools.get(task.pool, 1 << 30)

    def _leave_pool(self, name: str) -> None:
        pool = self.tasks[name].pool
        if pool is not None and name in self.running:
            self.in_pool[pool] -= 1

    def succeed(self, name: str) -> None:
        self._leave_pool(name)
        self.running.discard(name)
        self.succeeded.add(name)

    def fail(self, name: str) -> list[str]:
        """A job failed for good: everything that depends on it, directly or not, is
        skipped (returned)."""
        self._leave_pool(name)
        self.running.discard(name)
        self.failed.add(name)
        before = set(self.skipped)
        self._skip_dependents(name)
        return [n for n in self.skipped if n not in before]

    def retry(self, name: str, not_before: float) -> None:
        """Put a failed attempt back in the queue, ready again at ``not_before``."""
        self._leave_pool(name)
        self.running.discard(name)
        self.pending[name] = self.tasks[name]
        self._not_before[name] = not_before

    def abandon(self, reason: str) -> list[str]:
        """Stop: every pending job is skipped with ``reason`` (returned)."""
        names = list(self.pending)
        for name in names:
            self._skip(name, reason)
        return names

    def _skip(self, name: str, reason: str) -> None:
        self.pending.pop(name, None)
        self.skipped[name] = reason
        self._skip_dependents(name)

    def _skip_dependents(self, name: str) -> None:
        for task in list(self.pending.values()):
            if name in task.depends_on and task.name in self.pending:
                self._skip(task.name, f"dependency {name} did not succeed")
