"""Curves of several series on shared axes: "% of summaries done vs % of the night"."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from govern import units
from govern.charts import svg
from govern.charts.scale import Linear
from govern.html.markup import Markup


@dataclass(frozen=True)
class Series:
    """Points (x, y) in order; ``step`` draws a staircase (y holds until the next x)."""

    name: str
    points: Sequence[tuple[float, float]]
    step: bool = True
    dashed: bool = False
    emphasis: bool = False


def curve_chart(
    series: Sequence[Series],
    *,
    label: str,
    x_label: str,
    y_label: str,
    x_max: float = 1.0,
    y_max: float = 1.0,
    x_format: Callable[[float], str] = units.share,
    y_format: Callable[[float], str] = units.share,
    guides: Sequence[float] = (0.5,),
    width: int = 900,
    height: int = 320,
) -> Markup:
    """Every series on one chart, with a legend; vertical guides at the given x values."""
    if not any(s.points for s in series):
        return svg.empty("curves", label, "no data", width)
    left, right, top, bottom = 56, 170, 12, 40
    x = Linear(0.0, x_max, left, width - right)
    y = Linear(0.0, y_max, height - bottom, top)
    parts: list[object] = []
    for i in range(11):
        fraction = i / 10
        parts.append(
            svg.line(left, y(fraction * y_max), width - right, y(fraction * y_max), stroke=svg.GRID)
        )
        parts.append(
            svg.line(
                x(fraction * x_max), top, x(fraction * x_max), height - bottom, stroke=svg.GRID
            )
        )
        if i % 2 == 0:
            parts.append(
                svg.text(
                    left - 6, y(fraction * y_max) + 4, y_format(fraction * y_max), text_anchor="end"
                )
            )
            parts.append(
                svg.text(
                    x(fraction * x_max),
                    height - bottom + 14,
                    x_format(fraction * x_max),
                    text_anchor="middle",
                )
            )
    parts.append(
        svg.text(
            (left + width - right) / 2, height - 6, x_label, text_anchor="middle", fill=svg.MUTED
        )
    )
    parts.append(
        svg.text(
            12,
            (top + height - bottom) / 2,
            y_label,
            text_anchor="middle",
            fill=svg.MUTED,
            transform=f"rotate(-90 12 {svg.num((top + height - bottom) / 2)})",
        )
    )
    for guide in guides:
        parts.append(
            svg.line(
                x(guide), top, x(guide), height - bottom, stroke=svg.INK, stroke_dasharray="4 3"
            )
        )
    for index, item in enumerate(series):
        colour = svg.colour(index)
        points: list[tuple[float, float]] = []
        for px, py in item.points:
            if item.step and points:
                points.append((x(px), points[-1][1]))
            points.append((x(px), y(py)))
        if item.step and points:
            points.append((x(x_max), points[-1][1]))
        parts.append(
            svg.tag(
                "g",
                svg.tooltip(f"{item.name}: {_at_guides(item, guides, x_format, y_format)}"),
                svg.path(
                    points,
                    fill="none",
                    stroke=colour,
                    stroke_width="3" if item.emphasis else "1.6",
                    stroke_dasharray="6 4" if item.dashed else None,
                ),
                class_="series",
                data_series=item.name,
            )
        )
        ly = top + 8 + index * 18
        parts.append(
            svg.line(
                width - right + 12,
                ly,
                width - right + 36,
                ly,
                stroke=colour,
                stroke_width="3" if item.emphasis else "1.6",
                stroke_dasharray="6 4" if item.dashed else None,
            )
        )
        parts.append(svg.text(width - right + 42, ly + 4, svg.clip_label(item.name, right - 46)))
    return svg.frame("curves", label, width, height, *parts)


def value_at(points: Sequence[tuple[float, float]], at: float) -> float:
    """The staircase's value at ``at``: the y of the last point at or before it."""
    value = 0.0
    for px, py in points:
        if px <= at + 1e-12:
            value = py
        else:
            break
    return value


def _at_guides(
    item: Series,
    guides: Sequence[float],
    x_format: Callable[[float], str],
    y_format: Callable[[float], str],
) -> str:
    return (
        ", ".join(f"{y_format(value_at(item.points, g))} at {x_format(g)}" for g in guides)
        or item.name
    )
