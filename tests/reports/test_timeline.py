"""The load timeline: per-minute buckets, merged like sketches, coarsened for long logs."""

from __future__ import annotations

import pytest

from govern.digest.timeline import Timeline

BASE = 1_709_251_200  # 2024-03-01 00:00 UTC


def test_events_land_in_their_minute_and_rates_are_per_second() -> None:
    timeline = Timeline.from_events([(BASE + 5, 0.5), (BASE + 59.9, 1.0), (BASE + 125, 3.0)])
    assert timeline.counts == {BASE: 2, BASE + 120: 1}
    step, times, qps, load = timeline.dense()
    assert step == 60 and times == [BASE, BASE + 60, BASE + 120]  # the empty minute is a zero
    assert qps == pytest.approx([2 / 60, 0, 1 / 60]) and load == pytest.approx(
        [1.5 / 60, 0, 3 / 60]
    )


def test_merge_adds_and_refuses_other_steps() -> None:
    one = Timeline.from_events([(BASE, 1.0)])
    two = Timeline.from_events([(BASE + 1, 2.0), (BASE + 60, 1.0)])
    merged = one.merge(two)
    assert merged.counts == {BASE: 2, BASE + 60: 1} and merged.seconds[BASE] == 3.0
    assert one.counts == {BASE: 1}  # inputs unchanged
    with pytest.raises(ValueError, match="60 s and 300 s"):
        one.merge(Timeline(300))


def test_a_month_is_coarsened_to_hours_and_keeps_its_totals() -> None:
    events = [(BASE + minute * 60, 0.25) for minute in range(30 * 24 * 60)]
    step, times, qps, load = Timeline.from_events(events).dense(max_points=720)
    assert step == 3600 and len(times) == 720
    assert sum(q * step for q in qps) == pytest.approx(len(events))
    assert sum(s * step for s in load) == pytest.approx(0.25 * len(events))


def test_json_round_trip() -> None:
    timeline = Timeline.from_events([(BASE, 0.1), (BASE + 61, 0.2)])
    data = timeline.to_json()
    assert data == {"step_s": 60, "buckets": [[BASE, 1, 0.1], [BASE + 60, 1, 0.2]]}
    again = Timeline.from_json(data)
    assert again.counts == timeline.counts and again.seconds == timeline.seconds
