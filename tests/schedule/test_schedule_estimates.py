"""Estimates that know the setup: completion times to the millisecond, durations per
(job, worker) with contention divided out, the measured contention factor, and the
duration-weighted estimate error."""

from __future__ import annotations

import itertools
import json
import random
import statistics
from pathlib import Path
from typing import Any

import pytest

from govern.schedulers.catalog import load_catalog
from govern.schedulers.contention import Contention, Run, measure, overlaps
from govern.schedulers.dispatch import Dispatcher
from govern.schedulers.estimates import Estimator, Sample
from govern.schedulers.history import History
from govern.schedulers.night import run_night
from govern.schedulers.policies import Lane, Task, make_lanes
from govern.schedulers.simulate import simulate
from govern.state import StateStore
from tests.harness import MariaDB
from tests.schedule.support import WriteCatalog, govern, worker_table


def night(path: Path, state: Path, **kwargs: Any) -> dict[str, Any]:
    with StateStore.open(state) as store:
        return run_night(
            load_catalog(path), store, show_progress=False, notify=lambda m: None, **kwargs
        )


@pytest.mark.server
def test_completion_times_have_no_tick_and_no_floor(
    server: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    """A 5 ms job is recorded under 20 ms (51-53 ms before: a 50 ms tick, and the history's
    commit counted in the job's time), none near the old 55-70 ms floor, the next job
    starts as the last one ends, and a 0.3 s job is recorded within 20 ms of 0.3 s.
    Seven tiny jobs: on the shared 2-core machine (load 7) starting setpriv and sleep
    alone takes 12-24 ms, so the fastest is held to 20 ms and the median to 30 ms."""
    tiny = "".join(f'[jobs.tiny{i}]\ncommand = ["sleep", "0.005"]\n' for i in range(7))
    path = write_catalog(
        worker_table("main", server.defaults_file("govern_admin"))
        + tiny
        + '[jobs.slow]\ncommand = ["sleep", "0.3"]\n'
    )
    result = night(path, state_path, policy="fifo")
    assert result["status"] == "ok"
    jobs = sorted(result["jobs"], key=lambda j: j["start_s"])
    tinies = [j["actual_s"] for j in jobs if j["name"].startswith("tiny")]
    assert 0.005 <= min(tinies) < 0.020, tinies
    assert statistics.median(tinies) < 0.030 and max(tinies) < 0.050, tinies
    slow = next(j for j in jobs if j["name"] == "slow")
    assert 0.3 <= slow["actual_s"] < 0.32, slow
    gaps = [b["start_s"] - a["finish_s"] for a, b in itertools.pairwise(jobs)]
    assert min(gaps) >= 0 and statistics.median(gaps) < 0.030, gaps


def test_overlaps_are_time_weighted() -> None:
    others = overlaps([(0.0, 2.0), (1.0, 3.0), (4.0, 5.0), (0.0, 5.0)])
    assert others == pytest.approx([1.5, 1.5, 1.0, 1.0])
    assert overlaps([(0.0, 1.0)]) == [0.0] and overlaps([]) == []


def test_contention_is_measured_per_level_and_duration_weighted() -> None:
    """Job a takes 1.5x as long beside one other; a tiny job's 10x weighs its 10 ms only."""
    history = {
        "a": [Run(1000, 10.0, 0.0), Run(1000, 15.0, 1.0), Run(1000, 10.2, 0.1)],
        "tiny": [Run(10, 0.01, 0.0), Run(10, 0.1, 0.9)],
        "never-alone": [Run(10, 5.0, 1.0)],
    }
    contention = measure(history)
    assert contention.jobs == 2
    expected = (10.1 * 15.0 / 10.1 + 0.01 * 10) / (10.1 + 0.01)
    assert contention.levels[1] == pytest.approx(expected)
    assert contention.factor(0) == 1.0 and contention.factor(0.5) == pytest.approx(
        1 + (expected - 1) / 2
    )
    assert contention.factor(3) == pytest.approx(1 + (expected - 1) * 3)  # its slope, extended
    assert measure({"a": [Run(1000, 10.0, 0.0)]}).factor(2) == 1.0  # nothing measured
    assert contention.to_json() == {
        "jobs": 2,
        "factors": [{"others": 1, "factor": round(expected, 3)}],
    }


def test_estimates_per_worker_with_contention_divided_out() -> None:
    """One- and two-worker nights feed one history: a run beside another is divided by the
    factor, so the alone estimate does not drift with the setup; each worker its own."""
    contention = Contention({1: 1.5})
    alone = [Sample(r, 0.5 + r / 1000, "slow", 0.0) for r in (1000, 2000, 3000)]
    beside = [Sample(r, (0.5 + r / 1000) * 1.5, "slow", 1.0) for r in (1000, 2000, 3000)]
    fast = [Sample(2000, 1.0, "fast", 0.0)] * 3
    for history in (alone, beside, alone + beside):
        est = Estimator({"job": history + fast}, 1000, contention)
        on_slow = est.estimate("job", 4000, "slow")
        assert on_slow.method == "fit" and on_slow.worker == "slow"
        assert on_slow.seconds == pytest.approx(4.5)  # fixed cost 0.5 s + 1 ms a row
    est = Estimator({"job": alone + fast}, 1000, contention)
    assert est.estimate("job", 2000, "fast").seconds == pytest.approx(1.0)
    anywhere = est.estimate("job", 2000, "new-worker")  # no run there: every worker's
    assert anywhere.worker is None and anywhere.samples == 6
    few = Estimator({"job": alone + fast[:2]}, 1000, contention).estimate("job", 2000, "fast")
    assert few.worker is None  # two runs there: not enough to trust over the job's others
    narrow = [Sample(r, 1.0 + (r % 7) / 10, "w", 0.0) for r in (1000, 1050, 1100, 950)]
    line = Estimator({"job": narrow}, 1000).estimate("job", 1000)
    assert line.method == "rate"  # sizes within 1.5x: a line would be noise


def test_a_rate_estimate_keeps_the_fixed_cost() -> None:
    """A job seen once at 10 rows (0.11 s: 0.1 s of start-up) is not 100x that at 1,000 rows:
    the catalog's fixed cost comes first, the rate applies beyond it."""
    others = {
        f"j{i}": [Sample(rows, 0.1 + rows / 1000, "w", 0.0)]
        for i, rows in enumerate((10, 500, 900))
    }
    est = Estimator({**others, "once": [Sample(10, 0.11, "w", 0.0)]}, 1000)
    assert est.fixed_cost == pytest.approx(0.1)
    guess = est.estimate("once", 1000, "w")
    assert guess.method == "rate" and guess.seconds == pytest.approx(1.1)
    new = est.estimate("new", 1000)
    assert new.method == "global-fit" and new.seconds == pytest.approx(1.1)


def test_simulate_slows_jobs_beside_others() -> None:
    lanes = make_lanes([("r1", 1, None), ("r2", 1, None)])
    tasks = [Task("a", 0, 10.0), Task("b", 1, 4.0)]
    contention = Contention({1: 1.5})
    timeline = simulate("fifo", tasks, lanes, contention=contention)
    # both at 1/1.5 speed until b's 4 s of work is done (6 s), then a alone: 6 s more
    assert timeline.placement("b").finish == pytest.approx(6.0)
    assert timeline.placement("a").finish == pytest.approx(12.0)
    assert simulate("fifo", tasks, lanes).placement("a").finish == pytest.approx(10.0)
    per_worker = simulate("fifo", tasks, lanes, on_worker={("a", "r1"): 2.0})
    assert per_worker.placement("a").finish == pytest.approx(2.0)


def processor_sharing(
    policy: str,
    tasks: list[Task],
    lanes: list[Lane],
    on_worker: dict[tuple[str, str], float],
    contention: Contention,
) -> list[tuple[str, str, float, float]]:
    """The simulator before its work-clock heap: after every event each running job's work
    left shrinks by the shortest one, the clock moving by that times the slowdown."""
    dispatcher = Dispatcher(policy, tasks, lanes)
    free = sorted(lanes, key=lambda lane: lane.index)
    running: dict[int, list[Any]] = {}  # lane index -> [name, left, start, lane]
    out: dict[str, tuple[str, str, float, float]] = {}
    order: list[str] = []
    now = 0.0
    while True:
        still_free = []
        for lane in free:
            task = dispatcher.take(lane, now)
            if task is None:
                still_free.append(lane)
                continue
            work = on_worker.get((task.name, lane.worker), task.estimate or 0.0)
            running[lane.index] = [task.name, work, now, lane]
            order.append(task.name)
        free = still_free
        if not running:
            return [out[name] for name in order]
        step = min(r[1] for r in running.values())
        now += step * contention.factor(len(running) - 1)
        for index in list(running):
            running[index][1] -= step
            if running[index][1] <= 1e-9:
                name, _, start, lane = running.pop(index)
                out[name] = (name, lane.label, start, now)
                dispatcher.succeed(name)
                free.append(lane)
        free.sort(key=lambda lane: lane.index)


@pytest.mark.parametrize("seed", range(8))
def test_the_simulators_heap_replays_processor_sharing(seed: int) -> None:
    """Contention and per-worker times in the O(n log n) simulator: the same timeline as
    recomputing every running job's work left at each event."""
    rng = random.Random(seed)
    lanes = make_lanes([("a", rng.randint(1, 3), None), ("b", rng.randint(1, 2), "long")])
    tasks = []
    for i in range(rng.randint(20, 120)):
        deps = tuple(f"t{d}" for d in rng.sample(range(i), min(i, rng.randint(0, 2))))
        allowed = rng.choice([None, None, None, ("a",), ("b",)])
        tasks.append(Task(f"t{i}", i, round(rng.lognormvariate(0, 1), 2), 1.0, deps, allowed))
    on_worker = {(t.name, "b"): (t.estimate or 0.0) * 1.4 for t in tasks[::3]}
    contention = Contention({1: 1.25, 3: 1.6})
    for policy in ("fifo", "sjf", "ljf", "wspt", "two-ended"):
        timeline = simulate(policy, tasks, lanes, on_worker=on_worker, contention=contention)
        got = [(p.name, p.lane.label, p.start, p.finish) for p in timeline.placements]
        want = processor_sharing(policy, tasks, lanes, on_worker, contention)
        assert [g[:2] for g in got] == [w[:2] for w in want], policy
        for g, w in zip(got, want, strict=True):
            assert g[2:] == pytest.approx(w[2:]), (policy, g[0])


@pytest.mark.server
def test_history_knows_the_worker_and_the_jobs_beside_each_run(
    server: MariaDB, replica: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    """A night on one lane, then one on two workers: each run is recorded with its worker and
    the others beside it, the plan rests each estimate on that worker's runs, and the
    night's error is duration-weighted."""
    jobs = "".join(f'[jobs.j{i}]\ncommand = ["sleep", "0.{i + 2}"]\n' for i in range(4))
    primary_cnf = server.defaults_file("govern_admin")
    one = write_catalog('name = "setup"\n' + worker_table("main", primary_cnf) + jobs, "one.toml")
    two = write_catalog(
        'name = "setup"\n'
        + worker_table("main", primary_cnf)
        + worker_table("replica", replica.defaults_file("govern_admin"))
        + jobs,
        "two.toml",
    )
    night(one, state_path, policy="fifo")
    second = night(two, state_path, policy="fifo")
    with StateStore.open(state_path) as store:
        samples = History(store).samples("setup", 20)
    for name, runs in samples.items():
        newest, oldest = runs
        assert oldest.worker == "main" and oldest.others == 0.0
        ran = next(j for j in second["jobs"] if j["name"] == name)
        assert newest.worker == ran["worker"]
        assert newest.seconds == pytest.approx(ran["actual_s"], abs=0.001)
    # two lanes busy for most of the night: about one other beside each run
    assert statistics.fmean(runs[0].others for runs in samples.values()) > 0.5
    error = second["summary"]["estimate_error"]
    assert error["abs_error_s"] == pytest.approx(
        sum(abs(j["error_s"]) for j in second["jobs"]), abs=0.01
    )
    assert error["weighted_abs_pct"] == pytest.approx(
        error["abs_error_s"] / error["total_actual_s"] * 100, abs=0.1
    )
    plan = json.loads(
        govern(
            "schedule", "plan", str(two), "--state", str(state_path), "--json", check=True
        ).stdout
    )
    assert plan["contention"]["jobs"] == 4  # seen alone (night 1) and beside others (night 2)
    for job in plan["jobs"]:
        assert job["estimate_worker"] is None  # under 3 runs on any worker: all of its runs
        assert job["predicted_s"] >= job["estimate_s"] - 0.001
    replay = json.loads(
        govern(
            "schedule", "simulate", str(two), "--state", str(state_path), "--policies", "fifo",
            "--json", check=True,
        ).stdout
    )  # fmt: skip
    assert replay["contention"] == plan["contention"]
    # the recorded fifo night replayed in its own order: its runs divided by their slowdown
    # and slowed again by the same overlaps give back about the night it was
    (fifo,) = replay["policies"]
    assert fifo["makespan_s"] == pytest.approx(second["summary"]["makespan_s"], rel=0.15)
