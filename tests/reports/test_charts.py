"""govern's SVG charts, tested as markup: well-formed, deterministic, and drawing the data."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime

import pytest

from govern import units
from govern.charts import (
    Bar,
    Marker,
    Pair,
    Series,
    Task,
    Window,
    bar_chart,
    curve_chart,
    gantt_chart,
    histogram,
    paired_bars,
    time_chart,
)
from govern.charts.curves import value_at
from govern.charts.scale import Linear, nice_ticks, offset_ticks, time_ticks
from govern.charts.svg import num

NS = "{http://www.w3.org/2000/svg}"


def count(value: float) -> str:
    return units.count(value, "significant")


def duration(value: float) -> str:
    return units.duration(value, "spaced")


def parse(markup: str) -> ET.Element:
    """Every chart must be well-formed XML (SVG is XML): a stray ``<`` fails here."""
    return ET.fromstring(markup)


def epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_numbers_are_rounded_without_noise() -> None:
    assert [num(v) for v in (0.0, -0.04, 1.25, 3.0, 12.345, -7.96)] == [
        "0",
        "0",
        "1.2",
        "3",
        "12.3",
        "-8",
    ]


def test_nice_ticks_cover_the_maximum_on_round_steps() -> None:
    assert nice_ticks(0) == [0.0, 1.0]
    assert nice_ticks(7.3) == [0.0, 2.0, 4.0, 6.0, 8.0]
    assert nice_ticks(1234, 4) == [0.0, 500.0, 1000.0, 1500.0]
    assert nice_ticks(0.042, 4) == [0.0, 0.02, 0.04, 0.06]


def test_time_ticks_fall_on_round_minutes_and_show_the_date_when_the_day_changes() -> None:
    ticks = time_ticks(epoch("2024-03-01 23:12:00"), epoch("2024-03-02 01:05:00"))
    labels = [label for _, label in ticks]
    assert labels == ["23:30", "03-02 00:00", "00:30", "01:00"]
    assert all(value % 1800 == 0 for value, _ in ticks)


def test_offset_ticks_use_clock_steps() -> None:
    assert offset_ticks(3600) == [0.0, 600.0, 1200.0, 1800.0, 2400.0, 3000.0, 3600.0]
    assert offset_ticks(2.5)[:3] == [0.0, 0.5, 1.0]


def test_linear_scale_maps_and_reverses() -> None:
    scale = Linear(0, 10, 100, 0)
    assert scale(0) == 100 and scale(10) == 0 and scale(2.5) == 75


def minutes(n: int, start: str = "2024-03-01 10:00:00") -> list[float]:
    base = epoch(start)
    return [base + 60 * i for i in range(n)]


def test_time_chart_shades_and_labels_windows_inside_the_range_only() -> None:
    times = minutes(60)
    values = [float(i % 7) for i in range(60)]
    windows = [
        Window(times[10], times[20], "blind: nightly-load (global)"),
        Window(times[40], None, "blind: still open"),
        Window(times[0] - 7200, times[0] - 3600, "blind: before the log"),
    ]
    markup = time_chart(times, values, label="Queries/s", unit=count, step=60, windows=windows)
    root = parse(markup)
    assert root.get("data-chart") == "timeseries"
    shaded = root.findall(f"{NS}g[@class='window']")
    assert [g.get("data-window") for g in shaded] == [
        "blind: nightly-load (global)",
        "blind: still open",
    ]
    first = shaded[0].find(f"{NS}rect")
    assert first is not None
    # 60 buckets over 900 - 64 - 28 = 808 px: 10 minutes are 134.7 px wide.
    assert float(first.get("width", "0")) == pytest.approx(808 / 6, abs=0.1)
    assert "2024-03-01 10:10:00 UTC – 2024-03-01 10:20:00 UTC" in markup
    assert "still open" in markup
    peak = root.find(f"{NS}circle[@class='peak']")
    assert peak is not None and "peak 6 at" in markup


def test_time_chart_is_deterministic_and_says_when_empty() -> None:
    times = minutes(5)
    one = time_chart(times, [1, 2, 3, 2, 1], label="q", unit=count, step=60)
    two = time_chart(times, [1, 2, 3, 2, 1], label="q", unit=count, step=60)
    assert one == two
    empty = time_chart([], [], label="q", unit=count, step=60)
    assert (
        "no events in this time range" in empty and parse(empty).get("data-chart") == "timeseries"
    )


def test_bar_chart_escapes_labels_and_scales_bars() -> None:
    bars = [
        Bar("select <b>1</b> & 'x'", 10.0, href="#class-A"),
        Bar("B", 5.0),
    ]
    markup = bar_chart(bars, label="Top", unit=duration)
    root = parse(markup)
    assert "<b>" not in markup and "&lt;b&gt;" in markup
    rects = root.findall(f".//{NS}rect[@class='bar']")
    widths = [float(r.get("width", "0")) for r in rects]
    assert widths[0] == pytest.approx(2 * widths[1], abs=0.2)
    links = root.findall(f"{NS}a")
    assert [a.get("href") for a in links] == ["#class-A"]


def test_histogram_draws_one_bar_per_bucket() -> None:
    buckets = [("1µs", 0), ("10µs", 3), ("100µs", 12), ("1ms", 1)]
    root = parse(histogram(buckets, label="Query_time", unit=count))
    heights = [float(r.get("height", "0")) for r in root.findall(f".//{NS}rect[@class='bar']")]
    assert len(heights) == 4 and heights[0] == 0 and heights[2] > heights[1] > heights[3]
    assert "no values" in histogram([("a", 0)], label="x", unit=count)


def test_paired_bars_flag_rows() -> None:
    pairs = [Pair("job_a", 10, 12), Pair("job_b", 5, 30, flag=True), Pair("job_c", None, 3)]
    root = parse(paired_bars(pairs, label="est", names=("estimate", "actual"), unit=duration))
    assert len(root.findall(f".//{NS}rect[@class='first']")) == 2
    seconds = root.findall(f".//{NS}rect[@class='second']")
    assert len(seconds) == 3 and seconds[1].get("fill") == "#d55e00"


def test_gantt_places_tasks_on_their_lanes_with_the_plan_under_them() -> None:
    tasks = [
        Task("r1#1", "small", 0, 60, "ok", planned=(0, 50)),
        Task("r1#1", "big", 60, 600, "failed", planned=(50, 400)),
        Task("r1#2", "mid", 0, 300, "timeout"),
    ]
    markup = gantt_chart(
        tasks, label="r1", lanes=["r1#1", "r1#2", "r1#3"], span=600, markers=[Marker(300, "50%")]
    )
    root = parse(markup)
    jobs = root.findall(f"{NS}g[@class='job']")
    assert [j.get("data-outcome") for j in jobs] == ["ok", "failed", "timeout"]
    assert len(root.findall(f".//{NS}rect[@class='planned']")) == 2
    bars = {j.find(f"{NS}title").text.split(":")[0]: j.find(f"{NS}rect") for j in jobs}  # type: ignore[union-attr]
    assert float(bars["big"].get("y", "0")) == float(bars["small"].get("y", "0"))  # type: ignore[union-attr]
    assert float(bars["mid"].get("y", "0")) > float(bars["small"].get("y", "0"))  # type: ignore[union-attr]
    assert "r1#3" in markup  # an idle lane still has its row
    assert root.find(f"{NS}g[@class='marker']") is not None


def test_curves_draw_a_staircase_and_a_legend() -> None:
    series = [
        Series("actual (sjf)", [(0, 0), (0.2, 0.5), (0.6, 1.0)], emphasis=True),
        Series("fifo (simulated)", [(0, 0), (0.5, 0.3), (1.0, 1.0)], dashed=True),
    ]
    markup = curve_chart(series, label="done", x_label="% of the night", y_label="% done")
    root = parse(markup)
    groups = root.findall(f"{NS}g[@class='series']")
    assert [g.get("data-series") for g in groups] == ["actual (sjf)", "fifo (simulated)"]
    assert "actual (sjf): 50% at 50%" in markup and "fifo (simulated): 30% at 50%" in markup
    assert value_at([(0, 0), (0.2, 0.5), (0.6, 1.0)], 0.59) == 0.5
