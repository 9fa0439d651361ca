"""The bookkeeping of a night: which jobs are ready, running, done, failed or skipped.

The simulator drives it with virtual time and the runner with the real clock;
both ask it for the next job of a free lane, so dependencies, retries,
worker restrictions and pools behave the same in a plan and in a run.

Nothing here recurses or rescans the catalog: each job counts the dependencies it
still waits for, a finished job decrements its dependents' counts (a reverse index),
skips walk the dependents with an explicit stack, and the ready jobs sit in one heap
per queue end, ordered by the policy's own :func:`priority`. Taking a job costs
O(log n), so a night of n jobs is dispatched in O(n log n) whatever the shape of its
dependency graph (a 2,000-link chain included; docs/design/scheduling.md has figures).

A pool (``[pools] NAME = N``) caps how many jobs naming it run at once across every
lane. The ready heaps are also split by pool, so a lane whose best ready job's pool is
full takes the best job among the other heaps (or waits), still in O(log n): a slot is
taken by :meth:`take` and given back on success, failure and retry.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Mapping, Sequence

from govern.schedulers.policies import Lane, Task, priority

_Entry = tuple[tuple[float, float, int], str]


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
        self._workers = {lane.worker for lane in lanes}
        #: the queue ends of the lanes (two-ended orders each end its own way)
        self._ends = sorted({lane.end for lane in lanes} | {"short"})
        #: job -> the jobs that name it in depends_on (each once)
        self._dependents: dict[str, list[str]] = {name: [] for name in self.tasks}
        #: job -> how many of its dependencies have not succeeded yet (a dependency that is
        #: not in the night never succeeds: its dependents end "never became ready")
        self._waiting: dict[str, int] = {}
        for task in tasks:
            deps = list(dict.fromkeys(task.depends_on))
            known = [d for d in deps if d in self.tasks]
            self._waiting[task.name] = len(known) + (len(known) < len(deps))
            for dep in known:
                self._dependents[dep].append(task.name)
        #: ready jobs: a heap per (lane end, the job's allowed workers, its pool), entries
        #: (priority, name); an entry whose job is no longer ready is dropped when met
        self._heaps: dict[tuple[str, tuple[str, ...] | None, str | None], list[_Entry]] = {}
        self._ready: set[str] = set()
        #: jobs waiting out a retry delay: (ready again at, name)
        self._delayed: list[tuple[float, str]] = []
        for task in tasks:
            if task.workers is not None and not self._workers.intersection(task.workers):
                self._skip(
                    task.name, f"none of its workers ({', '.join(task.workers)}) is available"
                )
        for task in tasks:
            if task.name in self.pending and self._waiting[task.name] == 0:
                self._make_ready(task.name)

    # --- questions ----------------------------------------------------------------------
    def ready(self, now: float = 0.0) -> list[Task]:
        """The jobs that may start now (all dependencies done, no retry delay left)."""
        self._release(now)
        return [self.tasks[name] for name in self._ready]

    def has_ready(self, now: float = 0.0) -> bool:
        self._release(now)
        return bool(self._ready)

    @property
    def finished(self) -> bool:
        return not self.pending and not self.running

    def next_retry_at(self) -> float | None:
        """When a job waiting out its retry delay becomes ready again."""
        times = [at for at, name in self._delayed if name in self.pending]
        return min(times) if times else None

    # --- transitions --------------------------------------------------------------------
    def take(self, lane: Lane, now: float = 0.0) -> Task | None:
        """The job this free lane starts now, per the policy; None if nothing fits.

        The same choice as :func:`govern.schedulers.policies.choose` over :meth:`ready`:
        the smallest priority among the ready jobs that may run on the lane's worker and
        whose pool (if any) has a free slot."""
        self._release(now)
        if lane.end not in self._ends:  # a lane the dispatcher was not built with
            self._ends.append(lane.end)
            for name in self._ready:
                self._push(name, lane.end)
        best: tuple[_Entry, list[_Entry]] | None = None
        for (end, workers, pool), heap in self._heaps.items():
            if end != lane.end or (workers is not None and lane.worker not in workers):
                continue
            if pool is not None and not self._pool_has_room(pool):
                continue
            while heap and heap[0][1] not in self._ready:
                heapq.heappop(heap)  # stale: taken through another heap, or skipped
            if heap and (best is None or heap[0] < best[0]):
                best = (heap[0], heap)
        if best is None:
            return None
        _, name = heapq.heappop(best[1])
        task = self.tasks[name]
        self._ready.discard(name)
        del self.pending[name]
        self.running.add(name)
        if task.pool is not None:
            self.in_pool[task.pool] += 1
        return task

    def succeed(self, name: str) -> None:
        self._leave_pool(name)
        self.running.discard(name)
        self.succeeded.add(name)
        for dependent in self._dependents.get(name, ()):
            self._waiting[dependent] -= 1
            if self._waiting[dependent] == 0 and dependent in self.pending:
                self._make_ready(dependent)

    def fail(self, name: str) -> list[str]:
        """A job failed for good: everything that depends on it, directly or not, is
        skipped (returned)."""
        self._leave_pool(name)
        self.running.discard(name)
        self.failed.add(name)
        return self._skip_dependents(name)

    def retry(self, name: str, not_before: float) -> None:
        """Put a failed attempt back in the queue, ready again at ``not_before``."""
        self._leave_pool(name)
        self.running.discard(name)
        self.pending[name] = self.tasks[name]
        heapq.heappush(self._delayed, (not_before, name))

    def abandon(self, reason: str) -> list[str]:
        """Stop: every pending job is skipped with ``reason`` (returned)."""
        names = list(self.pending)
        for name in names:
            self.pending.pop(name, None)
            self._ready.discard(name)
            self.skipped[name] = reason
        return names

    def lose_worker(self, worker: str, reason: str) -> list[str]:
        """A worker takes no more jobs tonight: the jobs only it could run are skipped with
        ``reason``, and so are their dependents (all returned)."""
        self._workers.discard(worker)
        lost: list[str] = []
        for name, task in list(self.pending.items()):
            stranded = task.workers is not None and not self._workers.intersection(task.workers)
            if stranded and name in self.pending:  # not skipped already as a dependent
                lost += self._skip(name, reason)
        if not self._workers:
            for name in list(self.pending):
                lost += self._skip(name, reason)
        return lost

    # --- inside -------------------------------------------------------------------------
    def _pool_has_room(self, pool: str) -> bool:
        return self.in_pool[pool] < self.pools.get(pool, 1 << 30)

    def _leave_pool(self, name: str) -> None:
        pool = self.tasks[name].pool
        if pool is not None and name in self.running:
            self.in_pool[pool] -= 1

    def _make_ready(self, name: str) -> None:
        self._ready.add(name)
        for end in self._ends:
            self._push(name, end)

    def _push(self, name: str, end: str) -> None:
        task = self.tasks[name]
        heap = self._heaps.setdefault((end, task.workers, task.pool), [])
        heapq.heappush(heap, (priority(self.policy, task, end), name))

    def _release(self, now: float) -> None:
        """Jobs whose retry delay is over become ready."""
        while self._delayed and self._delayed[0][0] <= now:
            _, name = heapq.heappop(self._delayed)
            if name in self.pending and name not in self._ready:
                self._make_ready(name)

    def _skip(self, name: str, reason: str) -> list[str]:
        """Skip ``name`` and everything that depends on it; the names skipped, in order."""
        self.pending.pop(name, None)
        self._ready.discard(name)
        self.skipped[name] = reason
        return [name, *self._skip_dependents(name)]

    def _skip_dependents(self, root: str) -> list[str]:
        """Every pending job downstream of ``root``, skipped with the name of the dependency
        that did not succeed: an explicit stack, as deep as the catalog likes."""
        out: list[str] = []
        stack = [root]
        while stack:
            name = stack.pop()
            for dependent in reversed(self._dependents.get(name, ())):
                if dependent in self.pending:
                    self.pending.pop(dependent)
                    self._ready.discard(dependent)
                    self.skipped[dependent] = f"dependency {name} did not succeed"
                    out.append(dependent)
                    stack.append(dependent)
        return out
