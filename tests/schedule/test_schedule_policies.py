"""Policies and the simulator against known answers from scheduling theory; the estimator."""

from __future__ import annotations

import itertools
import random

import pytest

from govern.schedulers.dispatch import Dispatcher
from govern.schedulers.estimates import Estimator, Sample, estimate_error, theil_sen
from govern.schedulers.metrics import night_metrics
from govern.schedulers.policies import Task, make_lanes
from govern.schedulers.simulate import makespan_lower_bound, simulate


def tasks_of(durations: list[float], weights: list[float] | None = None) -> list[Task]:
    return [Task(f"j{i}", i, d, weights[i] if weights else 1.0) for i, d in enumerate(durations)]


def lanes(m: int) -> list:  # type: ignore[type-arg]
    return make_lanes([(f"w{i}", 1, None) for i in range(m)])


def optimal_mean_completion(durations: list[float], m: int) -> float:
    """Brute force over assignments; each machine in SPT order is optimal for its own set."""
    best = float("inf")
    for assignment in itertools.product(range(m), repeat=len(durations)):
        total = 0.0
        for machine in range(m):
            clock = 0.0
            for d in sorted(d for d, a in zip(durations, assignment, strict=True) if a == machine):
                clock += d
                total += clock
        best = min(best, total / len(durations))
    return best


def optimal_makespan(durations: list[float], m: int) -> float:
    best = float("inf")
    for assignment in itertools.product(range(m), repeat=len(durations)):
        loads = [0.0] * m
        for d, a in zip(durations, assignment, strict=True):
            loads[a] += d
        best = min(best, max(loads))
    return best


@pytest.mark.parametrize("m", [1, 2, 3])
def test_sjf_minimises_mean_completion_on_identical_machines(m: int) -> None:
    rng = random.Random(7 + m)
    for _ in range(25):
        durations = [round(rng.lognormvariate(0, 1.5), 3) for _ in range(7)]
        sjf = simulate("sjf", tasks_of(durations), lanes(m)).metrics
        assert sjf.mean_completion == pytest.approx(optimal_mean_completion(durations, m))
        for other in ("fifo", "ljf", "two-ended"):
            assert simulate(other, tasks_of(durations), lanes(m)).metrics.mean_completion >= (
                sjf.mean_completion - 1e-9
            )


@pytest.mark.parametrize("m", [2, 3])
def test_ljf_makespan_within_the_lpt_bound(m: int) -> None:
    rng = random.Random(11 * m)
    bound = 4 / 3 - 1 / (3 * m)
    worst = 0.0
    for _ in range(40):
        durations = [rng.randint(1, 20) for _ in range(8)]
        ratio = simulate("ljf", tasks_of(durations), lanes(m)).metrics.makespan / optimal_makespan(
            durations, m
        )
        assert ratio <= bound + 1e-9
        worst = max(worst, ratio)
    assert worst > 1.0  # the instances are not all trivial


def test_lpt_tight_instance_on_two_machines() -> None:
    """Graham's tight case for m=2: {3,3,2,2,2}: LPT 7, optimum 6, ratio exactly 7/6."""
    durations = [3.0, 3.0, 2.0, 2.0, 2.0]
    assert simulate("ljf", tasks_of(durations), lanes(2)).metrics.makespan == 7
    assert optimal_makespan(durations, 2) == 6


def test_wspt_is_smiths_rule_on_one_machine() -> None:
    rng = random.Random(3)
    for _ in range(20):
        durations = [rng.randint(1, 9) for _ in range(6)]
        weights = [rng.randint(1, 5) for _ in range(6)]
        best = min(
            sum(
                weights[j] * sum(durations[k] for k in order[: order.index(j) + 1])
                for j in range(6)
            )
            for order in itertools.permutations(range(6))
        ) / sum(weights)
        got = simulate("wspt", tasks_of(durations, weights), lanes(1)).metrics
        assert got.weighted_mean_completion == pytest.approx(best)


def test_two_ended_first_picks_and_meeting_in_the_middle() -> None:
    durations = [5.0, 1.0, 9.0, 3.0, 7.0]
    timeline = simulate("two-ended", tasks_of(durations), lanes(2))
    first = {p.lane.label: p.name for p in timeline.placements if p.start == 0}
    assert first == {"w0#0": "j1", "w1#0": "j2"}  # shortest on the short lane, longest on the long
    assert [p.name for p in timeline.placements if p.lane.worker == "w0"][:2] == ["j1", "j3"]
    assert len(timeline.placements) == 5 and timeline.metrics.done == 5


def test_fifo_keeps_catalog_order() -> None:
    timeline = simulate("fifo", tasks_of([5.0, 1.0, 9.0]), lanes(1))
    assert [p.name for p in timeline.placements] == ["j0", "j1", "j2"]


def test_unknown_estimates_go_to_the_long_side() -> None:
    tasks = [Task("a", 0, 5.0), Task("mystery", 1, None), Task("b", 2, 1.0)]
    assert [
        p.name for p in simulate("sjf", tasks, lanes(1), {"a": 5, "mystery": 5, "b": 1}).placements
    ] == ["b", "a", "mystery"]
    assert [
        p.name for p in simulate("ljf", tasks, lanes(1), {"a": 5, "mystery": 5, "b": 1}).placements
    ] == ["mystery", "a", "b"]
    assert (
        simulate("wspt", tasks, lanes(1), {"a": 5, "mystery": 5, "b": 1}).placements[-1].name
        == "mystery"
    )


def test_dependencies_only_ready_jobs_are_picked() -> None:
    tasks = [
        Task("base", 0, 10.0),
        Task("quick", 1, 1.0, depends_on=("base",)),
        Task("other", 2, 4.0),
    ]
    timeline = simulate("sjf", tasks, lanes(2))
    assert timeline.placement("quick").start == timeline.placement("base").finish == 10
    assert timeline.placement("other").start == 0


def test_worker_restrictions_and_unrunnable_jobs() -> None:
    tasks = [
        Task("anywhere", 0, 1.0),
        Task("r2only", 1, 1.0, workers=("w1",)),
        Task("ghost", 2, 1.0, workers=("nope",)),
    ]
    timeline = simulate("sjf", tasks, lanes(2))
    assert timeline.placement("r2only").lane.worker == "w1"
    assert "ghost" in timeline.skipped and "none of its workers" in timeline.skipped["ghost"]


def test_failure_skips_dependents_transitively_and_retry_waits() -> None:
    tasks = [
        Task("a", 0, 1.0),
        Task("b", 1, 1.0, depends_on=("a",)),
        Task("c", 2, 1.0, depends_on=("b",)),
        Task("d", 3, 1.0),
    ]
    d = Dispatcher("fifo", tasks, lanes(1))
    lane = lanes(1)[0]
    assert d.take(lane).name == "a"  # type: ignore[union-attr]
    d.retry("a", not_before=5.0)
    assert d.take(lane, now=1.0).name == "d"  # type: ignore[union-attr]
    assert d.take(lane, now=1.0) is None  # a waits out its delay
    assert d.take(lane, now=5.0).name == "a"  # type: ignore[union-attr]
    assert sorted(d.fail("a")) == ["b", "c"]
    assert d.skipped["c"] == "dependency b did not succeed"


def test_metrics_shares_and_curve() -> None:
    m = night_metrics({"a": 1.0, "b": 2.0, "c": 10.0}, jobs=4, makespan=10.0)
    assert m.done_share_at(0.5) == 0.5  # 2 of 4 jobs by t=5 (one never finished)
    assert m.done_share_at(1.0) == 0.75
    assert m.curve() == [(0.0, 0.0), (0.1, 0.25), (0.2, 0.5), (1.0, 0.75)]
    assert m.mean_completion == pytest.approx(13 / 3)
    assert makespan_lower_bound([3, 3, 2, 2, 2], 2) == 6


def test_sjf_on_heavy_tails_reproduces_the_origin_story() -> None:
    """facts.md §7: lognormal sigma 2 sizes give ~96-97% done at half time with SJF on one worker."""
    rng = random.Random(2026)
    shares = []
    for _ in range(30):
        durations = [rng.lognormvariate(0, 2) for _ in range(200)]
        shares.append(simulate("sjf", tasks_of(durations), lanes(1)).metrics.done_share_at(0.5))
    mean = sum(shares) / len(shares)
    assert 0.93 < mean < 0.99
    fifo = [
        simulate(
            "fifo", tasks_of([rng.lognormvariate(0, 2) for _ in range(200)]), lanes(1)
        ).metrics.done_share_at(0.5)
        for _ in range(30)
    ]
    assert sum(fifo) / len(fifo) < 0.65


# --- the estimator ------------------------------------------------------------------------------
def test_theil_sen_ignores_an_outlier() -> None:
    points = [(1000.0, 11.0), (2000.0, 21.0), (3000.0, 31.0), (4000.0, 41.0), (5000.0, 400.0)]
    intercept, slope = theil_sen(points)  # type: ignore[misc]
    assert slope == pytest.approx(0.01) and intercept == pytest.approx(1.0)


def test_estimate_methods_in_order_of_preference() -> None:
    history = {
        "fit": [Sample(1000, 11.0), Sample(2000, 21.0), Sample(3000, 31.0), Sample(2500, 300.0)],
        "rate": [Sample(1000, 5.0)],
        "sizeless": [Sample(None, 7.0), Sample(None, 9.0), Sample(None, 100.0)],
    }
    est = Estimator(history, rows_per_second=1000)
    fit = est.estimate("fit", 4000)
    assert fit.method == "fit" and fit.seconds == pytest.approx(41.0) and fit.samples == 4
    assert est.estimate("rate", 3000).method == "rate"
    assert est.estimate("rate", 3000).seconds == pytest.approx(15.0)
    assert est.estimate("sizeless", 10).method == "median"
    assert est.estimate("sizeless", 10).seconds == 9.0
    assert est.estimate("fit", None).method == "median"
    new = est.estimate("brand-new", 2000)
    assert new.method == "global-rate" and new.seconds == pytest.approx(2000 * 0.005, rel=1.0)
    assert est.estimate("brand-new", None).method == "none"
    empty = Estimator({}, rows_per_second=1000).estimate("x", 5000)
    assert empty.method == "default-rate" and empty.seconds == 5.0


def test_estimate_error_is_duration_weighted_and_bounded() -> None:
    """A job estimated at 1 ms that took 0.5 s counts as 0.5 s of error against the night's
    total, not as 49,900% (a median of per-job ratios had no bound and tiny jobs ruled it)."""
    error = estimate_error(
        {"a": (10.0, 12.0), "b": (10.0, 5.0), "c": (20.0, 20.0), "tiny": (0.001, 0.5)}
    )
    assert error.abs_error_s == pytest.approx(7.499)
    assert error.weighted_abs_pct == pytest.approx(7.499 / 37.5 * 100)
    assert error.total_estimate == pytest.approx(40.001) and error.total_actual == 37.5
    assert [name for name, _, _ in error.largest] == ["b", "a", "tiny", "c"]
    largest = error.to_json()["largest"]
    assert largest[0] == {"name": "b", "estimate_s": 10.0, "actual_s": 5.0, "error_s": -5.0}
    assert estimate_error({}).weighted_abs_pct is None
