"""Gantt charts: who ran what when, one row per lane (a worker's slot)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from govern import units
from govern.charts import svg
from govern.charts.scale import Linear, offset_ticks
from govern.html.markup import Markup

#: Fill per outcome; anything else is drawn grey.
OUTCOME_COLOURS = {
    "ok": svg.PALETTE[0],
    "failed": svg.PALETTE[4],
    "timeout": svg.PALETTE[1],
    "interrupted": svg.PALETTE[3],
    "running": svg.PALETTE[5],
}


@dataclass(frozen=True)
class Task:
    """One bar: ``start``/``finish`` are offsets in seconds from the chart's zero."""

    lane: str
    name: str
    start: float
    finish: float
    outcome: str = "ok"
    planned: tuple[float, float] | None = None
    detail: str = ""


@dataclass(frozen=True)
class Marker:
    """A labelled vertical line (e.g. half of the makespan)."""

    at: float
    label: str


@dataclass(frozen=True)
class Band:
    """A shaded stretch behind every lane (e.g. the throttle holding the worker back)."""

    start: float
    end: float
    label: str


def gantt_chart(
    tasks: Sequence[Task],
    *,
    label: str,
    lanes: Sequence[str] | None = None,
    span: float | None = None,
    markers: Sequence[Marker] = (),
    bands: Sequence[Band] = (),
    unit: Callable[[float], str] = lambda v: units.duration(v, "spaced"),
    width: int = 900,
    lane_height: int = 26,
) -> Markup:
    """Bars per lane on an elapsed-time axis; the plan's expectation under each bar.

    ``lanes`` fixes the row order (and shows idle lanes); by default the lanes of
    the tasks in first-seen order. ``span`` fixes the axis end (e.g. the night's
    makespan, so the charts of all replicas share one scale).
    """
    if not tasks and not lanes:
        return svg.empty("gantt", label, "no job ran", width)
    rows = list(lanes) if lanes is not None else list(dict.fromkeys(t.lane for t in tasks))
    left, right, top, bottom = 110, 16, 18, 24
    height = top + len(rows) * lane_height + bottom
    end = span if span is not None else max((t.finish for t in tasks), default=1.0)
    planned_end = max((t.planned[1] for t in tasks if t.planned), default=0.0)
    end = max(end, planned_end if span is None else 0.0, 1e-9)
    x = Linear(0.0, end, left, width - right)
    parts: list[object] = []
    for index, name in enumerate(rows):
        y = top + index * lane_height
        if index % 2:
            parts.append(svg.rect(left, y, width - right - left, lane_height, fill="#f6f8fa"))
        parts.append(
            svg.text(
                left - 8,
                y + lane_height / 2 + 4,
                svg.clip_label(name, left - 12),
                text_anchor="end",
            )
        )
    for band in bands:
        b0, b1 = x(max(band.start, 0.0)), x(min(band.end, end))
        parts.append(
            svg.tag(
                "g",
                svg.tooltip(f"{band.label}: {unit(band.start)} → {unit(band.end)}"),
                svg.rect(
                    b0,
                    top,
                    max(b1 - b0, 1.5),
                    height - bottom - top,
                    fill=svg.PALETTE[2],
                    fill_opacity="0.14",
                ),
                class_="band",
            )
        )
    for tick in offset_ticks(end):
        parts.append(svg.line(x(tick), top, x(tick), height - bottom, stroke=svg.GRID))
        parts.append(
            svg.text(x(tick), height - 8, unit(tick), text_anchor="middle", fill=svg.MUTED)
        )
    for marker in markers:
        mx = x(min(marker.at, end))
        parts.append(
            svg.tag(
                "g",
                svg.line(mx, top - 4, mx, height - bottom, stroke=svg.INK, stroke_dasharray="4 3"),
                svg.text(mx + 3, top - 6, marker.label),
                class_="marker",
            )
        )
    row_of = {name: index for index, name in enumerate(rows)}
    for task in tasks:
        if task.lane not in row_of:
            continue
        y = top + row_of[task.lane] * lane_height
        x0, x1 = x(task.start), max(x(task.finish), x(task.start) + 1.0)
        tip = (
            task.detail or f"{task.name}: {unit(task.start)} → {unit(task.finish)} ({task.outcome})"
        )
        items: list[object] = [
            svg.tooltip(tip),
            svg.rect(
                x0,
                y + 3,
                x1 - x0,
                lane_height - 10,
                fill=OUTCOME_COLOURS.get(task.outcome, svg.MUTED),
                class_="task",
            ),
        ]
        if task.planned is not None:
            p0, p1 = x(task.planned[0]), max(x(task.planned[1]), x(task.planned[0]) + 1.0)
            items.append(
                svg.rect(p0, y + lane_height - 6, p1 - p0, 3, fill=svg.MUTED, class_="planned")
            )
        if svg.fits(task.name, x1 - x0):
            items.append(svg.text(x0 + 4, y + lane_height / 2 + 2, task.name, fill="#ffffff"))
        parts.append(svg.tag("g", *items, class_="job", data_outcome=task.outcome))
    return svg.frame("gantt", label, width, height, *parts)
