"""Deep and wide nights: no recursion anywhere in dispatch (a failed first link of a long
chain used to end in RecursionError at ~495 links), and the heap-based dispatcher choosing
exactly what the policy's own ``choose`` chooses over the ready jobs."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from govern.schedulers.dispatch import Dispatcher
from govern.schedulers.policies import Lane, Task, choose, make_lanes
from govern.schedulers.simulate import simulate
from tests.harness import MariaDB
from tests.schedule.support import WriteCatalog, govern, last_night, worker_table


def chain(n: int, estimate: float = 1.0) -> list[Task]:
    return [Task(f"j{i}", i, estimate, depends_on=(f"j{i - 1}",) if i else ()) for i in range(n)]


def test_a_failed_first_link_skips_a_5000_link_chain_without_recursion() -> None:
    lanes = make_lanes([("w", 1, None)])
    dispatcher = Dispatcher("sjf", chain(5000), lanes)
    first = dispatcher.take(lanes[0])
    assert first is not None and first.name == "j0"
    skipped = dispatcher.fail("j0")
    assert len(skipped) == 4999 and dispatcher.finished
    assert dispatcher.skipped["j4999"] == "dependency j4998 did not succeed"
    assert dispatcher.skipped["j1"] == "dependency j0 did not succeed"


def test_a_lost_worker_and_a_stop_skip_long_chains_without_recursion() -> None:
    tasks = [dataclass_with_workers(t, ("r1",)) if t.order == 0 else t for t in chain(3000)]
    dispatcher = Dispatcher("fifo", tasks, make_lanes([("r1", 1, None), ("r2", 1, None)]))
    lost = dispatcher.lose_worker("r1", "r1 held by the lag guard past max_wait")
    assert len(lost) == 3000 and lost[0] == "j0"
    assert dispatcher.skipped["j0"] == "r1 held by the lag guard past max_wait"
    assert dispatcher.skipped["j2999"] == "dependency j2998 did not succeed"
    stopped = Dispatcher("fifo", chain(3000), make_lanes([("w", 2, None)]))
    assert len(stopped.abandon("stopped")) == 3000 and stopped.finished


def dataclass_with_workers(task: Task, workers: tuple[str, ...]) -> Task:
    return Task(task.name, task.order, task.estimate, task.weight, task.depends_on, workers)


def reference_simulation(
    policy: str,
    tasks: list[Task],
    lanes: list[Lane],
    durations: dict[str, float],
    pools: dict[str, int] | None = None,
) -> list[tuple[str, str, float]]:
    """The scheduler before the heaps: every free lane calls ``choose`` over a full rescan of
    the pending jobs (those of a full pool left out). Quadratic, but obviously what the policy
    says."""
    pools = pools or {}
    pending = {t.name: t for t in tasks}
    by_name = dict(pending)
    done: set[str] = set()
    in_pool: dict[str, int] = dict.fromkeys(pools, 0)
    running: list[tuple[float, int, str]] = []
    free = list(lanes)
    now = 0.0
    out = []
    while True:
        for lane in sorted(free, key=lambda lane: lane.index):
            ready = [
                t
                for t in pending.values()
                if all(d in done for d in t.depends_on)
                and (t.pool is None or in_pool[t.pool] < pools[t.pool])
            ]
            task = choose(policy, ready, lane)
            if task is None:
                continue
            del pending[task.name]
            if task.pool is not None:
                in_pool[task.pool] += 1
            free.remove(lane)
            out.append((task.name, lane.label, now))
            running.append((now + durations[task.name], lane.index, task.name))
        if not running:
            return out
        running.sort()
        now = running[0][0]
        while running and running[0][0] <= now:
            _, index, name = running.pop(0)
            done.add(name)
            pool = by_name[name].pool
            if pool is not None:
                in_pool[pool] -= 1
            free.append(lanes[index])


@pytest.mark.parametrize("seed", range(12))
def test_the_heaps_choose_what_the_policy_chooses(seed: int) -> None:
    rng = random.Random(seed)
    workers = [("a", rng.randint(1, 3), None), ("b", rng.randint(1, 2), None), ("c", 1, "long")]
    lanes = make_lanes(workers)
    tasks = []
    for i in range(rng.randint(20, 150)):
        deps = tuple(f"t{d}" for d in rng.sample(range(i), min(i, rng.randint(0, 3))))
        allowed = rng.choice([None, None, None, ("a",), ("b", "c"), ("c",)])
        estimate = None if rng.random() < 0.1 else rng.choice([1.0, 2.0, 3.0, rng.random() * 50])
        weight = rng.choice([1.0, 2.0, 5.0])
        tasks.append(Task(f"t{i}", i, estimate, weight, deps, allowed))
    durations = {t.name: t.estimate if t.estimate is not None else 60.0 for t in tasks}
    for policy in ("fifo", "sjf", "ljf", "wspt", "two-ended"):
        timeline = simulate(policy, tasks, lanes, durations)
        got = [(p.name, p.lane.label, p.start) for p in timeline.placements]
        assert got == reference_simulation(policy, tasks, lanes, durations), policy


@pytest.mark.parametrize("seed", range(8))
def test_the_heaps_with_pools_choose_what_the_policy_chooses(seed: int) -> None:
    """Pools split the heaps further: still the policy's choice among the jobs whose pool has
    room, and never more of a pool running at once than its cap."""
    rng = random.Random(1000 + seed)
    lanes = make_lanes([("a", rng.randint(1, 3), None), ("b", 2, None), ("c", 1, "long")])
    pools = {"p1": 1, "p2": 2}
    tasks = []
    for i in range(rng.randint(20, 120)):
        deps = tuple(f"t{d}" for d in rng.sample(range(i), min(i, rng.randint(0, 2))))
        allowed = rng.choice([None, None, ("a",), ("b", "c")])
        estimate = None if rng.random() < 0.1 else rng.choice([1.0, 2.0, rng.random() * 30])
        pool = rng.choice([None, None, "p1", "p2"])
        tasks.append(Task(f"t{i}", i, estimate, rng.choice([1.0, 3.0]), deps, allowed, pool))
    durations = {t.name: t.estimate if t.estimate is not None else 60.0 for t in tasks}
    for policy in ("fifo", "sjf", "ljf", "wspt", "two-ended"):
        timeline = simulate(policy, tasks, lanes, durations, pools=pools)
        got = [(p.name, p.lane.label, p.start) for p in timeline.placements]
        assert got == reference_simulation(policy, tasks, lanes, durations, pools), policy
        for name, cap in pools.items():
            spans = sorted(
                (p.start, p.finish) for p in timeline.placements if p.name in _in(tasks, name)
            )
            assert max((_open_at(spans, start) for start, _ in spans), default=0) <= cap


def _in(tasks: list[Task], pool: str) -> set[str]:
    return {t.name for t in tasks if t.pool == pool}


def _open_at(spans: list[tuple[float, float]], at: float) -> int:
    """Spans running at instant ``at`` (one ending then no longer runs)."""
    return sum(1 for start, finish in spans if start <= at < finish)


@pytest.mark.server
def test_a_1200_link_chain_whose_first_link_fails_is_a_failed_night(
    server: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    """The night from the issue, longer: a chain far past the old recursion limit, its first
    job failing. A failed night with every other link skipped and why, exit 1, no traceback."""
    links = 1200
    assert links * 2 > sys.getrecursionlimit()  # the old two frames per link would overflow
    body = worker_table("main", server.defaults_file("govern_admin"), concurrency=2)
    body += '[jobs.j0]\ncommand = "exit 4"\n'
    for i in range(1, links):
        body += f'[jobs.j{i}]\ncommand = "true"\ndepends_on = ["j{i - 1}"]\n'
    path = write_catalog(body)
    done = govern("schedule", "run", str(path), "--state", str(state_path), "--json")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    night = json.loads(done.stdout)
    skipped_lines = [line for line in done.stderr.splitlines() if " skipped" in line]
    assert len(skipped_lines) == 11  # ten named, the rest counted, all in the history
    assert skipped_lines[-1] == (
        f"govern: and {links - 11} more jobs skipped (govern schedule history --night"
        f" {night['id']} lists each with its reason)"
    )
    assert night["status"] == "failed" and night["summary"]["outcomes"] == {
        "failed": 1,
        "skipped": links - 1,
    }
    recorded = last_night(state_path)
    reasons = {j["name"]: j["reason"] for j in recorded["jobs"]}
    assert reasons["j0"].startswith("exit 4")
    assert reasons[f"j{links - 1}"] == f"dependency j{links - 2} did not succeed"
    assert all(j["outcome"] == "skipped" for j in recorded["jobs"] if j["name"] != "j0")


@pytest.mark.server
def test_a_5000_job_catalog_with_a_2000_link_chain_plans_and_simulates(
    server: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    """The issue's scale, end to end through the CLI against the real server: every job is
    placed, each link of the chain after the one before it, and every policy replays the
    whole night (the timings are benchmarks/schedule_scale.py's)."""
    rng = random.Random(7)
    cnf = server.defaults_file("govern_admin")
    body = "[estimate]\nrows_per_second = 1000\n"
    body += worker_table("r1", cnf, concurrency=2) + worker_table("r2", cnf, concurrency=2)
    for i in range(5000):
        body += f'[jobs.j{i}]\ncommand = "true"\nrows = {int(rng.lognormvariate(8, 2)) + 1}\n'
        if 0 < i < 2000:
            body += f'depends_on = ["j{i - 1}"]\n'
    path = write_catalog(body)
    plan = govern("schedule", "plan", str(path), "--state", str(state_path), "--json")
    assert plan.returncode == 0, plan.stderr[-2000:]
    placed = {j["name"]: j for j in json.loads(plan.stdout)["jobs"]}
    assert len(placed) == 5000
    for i in range(1, 2000):
        assert placed[f"j{i}"]["predicted_start_s"] >= placed[f"j{i - 1}"]["predicted_finish_s"]
    simulated = govern(
        "schedule", "simulate", str(path), "--estimated", "--state", str(state_path), "--json"
    )
    assert simulated.returncode == 0, simulated.stderr[-2000:]
    rows = json.loads(simulated.stdout)["policies"]
    assert len(rows) == 5 and all(r["done"] == 5000 and r["skipped"] == 0 for r in rows)
