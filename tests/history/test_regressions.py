"""The regression rules over two merged reports (no store): what is reported and what is
noise, and the hour a class changed."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from govern.digest.report import Report, ReportClass, SampleQuery, Stat
from govern.history.model import Point
from govern.history.regressions import (
    Regression,
    Rules,
    first_crossing,
    judge,
    plan_change,
    rose,
)

RULES = Rules()  # factor 2, 20 events, 10 ms


def klass(
    cid: str,
    count: int,
    total: float,
    p95: float,
    p99: float | None = None,
    plan: list[dict[str, Any]] | None = None,
) -> ReportClass:
    sample = SampleQuery("SELECT 1", plan={"server": "x", "tables": plan}) if plan else None
    return ReportClass(
        id=cid,
        fingerprint=f"select {cid}",
        count=count,
        metrics={"Query_time": Stat(sum=total, p95=p95, p99=p99 if p99 is not None else p95)},
        sample=sample,
    )


def report(*classes: ReportClass) -> Report:
    return Report("store", "govern", sum(c.count for c in classes), list(classes), 0.0)


def run(before: Report, after: Report, hours: tuple[float, float] = (168, 24)) -> list[Regression]:
    return judge(
        before, after, baseline_hours=hours[0], window_hours=hours[1], rules=RULES, host="db1"
    )


STEADY = klass("A" * 32, 7 * 500, 7 * 500 * 0.002, 0.003)  # 500 a day of 2 ms
DAY = klass("A" * 32, 500, 500 * 0.002, 0.0031)  # the same, one day


def test_an_unchanged_workload_has_no_regression() -> None:
    assert run(report(STEADY), report(DAY)) == []


def test_a_class_twice_as_slow_is_slower_by_its_p95_p99_and_total_time() -> None:
    after = klass("A" * 32, 500, 500 * 0.030, 0.040, 0.050)
    (found,) = run(report(STEADY), report(after))
    assert found.kinds == ["p95", "p99", "total_time"]
    assert found.host == "db1"
    assert found.reasons[0] == "p95 3.00 ms → 40.0 ms (×13.3)"
    assert found.reasons[2].startswith("total time per hour 41.7 ms → 625 ms")


def test_noise_below_min_time_or_min_count_is_not_reported() -> None:
    fast = klass("B" * 32, 7 * 500, 7 * 500 * 0.0001, 0.0001)
    doubled = klass("B" * 32, 500, 500 * 0.0003, 0.0003)  # ×3 but 0.2 ms: noise
    rare = klass("C" * 32, 19, 19 * 1.0, 1.0)  # new, slow, but 19 events
    assert run(report(fast), report(doubled, rare)) == []


def test_total_time_is_compared_per_hour_of_data() -> None:
    """Three days of baseline data judged as three days, not seven."""
    after = klass("A" * 32, 500, 500 * 0.002, 0.003)
    assert run(report(STEADY), report(after), hours=(72, 24)) == []
    (found,) = run(report(STEADY), report(klass("A" * 32, 5000, 10.0, 0.003)))
    assert found.kinds == ["total_time"]


def test_a_new_class_with_enough_events_is_new() -> None:
    (found,) = run(report(STEADY), report(DAY, klass("D" * 32, 20, 0.02, 0.001)))
    assert (found.id, found.kinds, found.baseline) == ("D" * 32, ["new"], None)


def test_plan_changes_a_full_scan_appeared_and_a_key_changed() -> None:
    indexed = [{"table": "orders", "access": "ref", "key": "k_customer", "rows": 100}]
    scan = [{"table": "orders", "access": "ALL", "key": None, "rows": 200000}]
    other = [{"table": "orders", "access": "ref", "key": "k_day", "rows": 900}]
    assert plan_change(indexed, scan) == [
        "plan: full scan of orders appeared (was ref on key k_customer)"
    ]
    assert plan_change(indexed, other) == ["plan: key of orders changed (k_customer → k_day)"]
    assert plan_change(indexed, indexed) == []
    assert plan_change(None, scan) == []  # not explained before: nothing to compare
    before = klass("A" * 32, 3500, 7.0, 0.003, plan=indexed)
    (found,) = run(report(before), report(klass("A" * 32, 500, 1.0, 0.003, plan=scan)))
    assert found.kinds == ["plan"]


def test_the_hour_it_changed_is_the_first_step_that_crosses() -> None:
    after = klass("A" * 32, 500, 500 * 0.030, 0.040)
    (found,) = run(report(STEADY), report(after))
    hours = [datetime(2026, 11, 27, hour) for hour in range(6)]
    points = [
        Point(hours[0], "db1", "A", 20, 0.04, 0.003, 0.003),
        Point(hours[1], "db1", "A", 0, 0.0, None, None),
        Point(hours[2], "db1", "A", 20, 0.05, 0.0045, 0.005),  # ×1.5: not yet
        Point(hours[3], "db1", "A", 20, 0.80, 0.040, 0.041),
        Point(hours[4], "db1", "A", 20, 0.80, 0.040, 0.041),
    ]
    assert first_crossing(points, found, RULES) == hours[3]
    new = Regression("db1", "N", "select n", ["new"], [], None, found.window)
    assert first_crossing(points[1:], new, RULES) == hours[2]
    assert first_crossing(points[:3], found, RULES) is None
    # one stalled statement lifts an hour's p99 and its total time, not its p95: not yet
    stalled = Point(hours[2], "db1", "A", 20, 0.30, 0.0035, 0.250)
    assert {"p95", "total_time"} <= set(found.kinds)
    assert first_crossing([points[0], stalled, *points[3:]], found, RULES) == hours[3]
    # a few statements stalled by load: p95, p99 and the total cross the rules (18 ms ≥
    # 2 × 3 ms + 10 ms, 0.10 s ≥ 2 × 41.7 ms) but stay far below the changed hours
    loaded = Point(hours[2], "db1", "A", 20, 0.10, 0.018, 0.020)
    assert rose(0.003, 0.018, 2, 0.010) and rose(0.003, 0.020, 2, 0.010)
    assert rose(7 / 168, 0.10, 2, 0.0)
    assert first_crossing([points[0], loaded, *points[3:]], found, RULES) == hours[3]


def test_a_percentile_is_judged_only_with_enough_events_above_it() -> None:
    """The end-to-end shape: 450 baseline events of about 1 ms, a window of 150 whose p99
    (its second-largest event) two CPU stalls lifted: nothing. p95 needs 100 events on each
    side and p99 500 (5 events above it, a quarter of --min-count), by default."""
    assert (RULES.floor(0.95), RULES.floor(0.99)) == (100, 500)
    assert (Rules(min_count=40).floor(0.95), Rules(min_count=40).floor(0.99)) == (200, 1000)
    assert (Rules(min_count=1).floor(0.95), Rules(min_count=1).floor(0.99)) == (20, 100)
    assert RULES.to_json()["p99_min_count"] == 500
    week = klass("A" * 32, 450, 450 * 0.001, 0.0011, 0.002)
    stalled = klass("A" * 32, 150, 150 * 0.001 + 0.030, 0.0012, 0.016)
    assert run(report(week), report(stalled), hours=(18, 6)) == []
    # the same p99 with 500 events on each side is judged (and found)
    weeks = klass("A" * 32, 600, 0.6, 0.0011, 0.002)
    (found,) = run(report(weeks), report(klass("A" * 32, 500, 0.3, 0.0012, 0.016)), (18, 6))
    assert found.kinds == ["p99"]
    assert run(report(week), report(klass("A" * 32, 500, 0.3, 0.0012, 0.016)), (18, 6)) == []
    # a real slowdown of those 150 events is still found by its p95 and total time
    scanned = klass("A" * 32, 150, 150 * 0.080, 0.082, 0.090)
    (found,) = run(report(week), report(scanned), hours=(18, 6))
    assert found.kinds == ["p95", "total_time"]
    # p95 at its floor on both sides, and one event short of it on either
    (found,) = run(report(klass("A" * 32, 100, 0.1, 0.001)), report(scanned), (18, 6))
    assert found.kinds == ["p95", "total_time"]
    short = klass("A" * 32, 99, 0.099, 0.001)
    assert run(report(short), report(scanned), (18, 6))[0].kinds == ["total_time"]
    assert run(report(week), report(klass("A" * 32, 99, 99 * 0.08, 0.082)), (18, 6))[0].kinds == [
        "total_time"
    ]
