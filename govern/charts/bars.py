"""Bar charts: ranked horizontal bars, histograms, and estimate-vs-actual pairs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from govern.charts import svg
from govern.charts.scale import Linear, nice_ticks
from govern.html.markup import Markup


@dataclass(frozen=True)
class Bar:
    """One ranked bar; ``href`` makes the bar and its label a link (e.g. ``#class-ID``)."""

    label: str
    value: float
    detail: str = ""
    href: str | None = None


def bar_chart(
    bars: Sequence[Bar],
    *,
    label: str,
    unit: Callable[[float], str],
    width: int = 900,
    label_width: int = 300,
    bar_height: int = 18,
) -> Markup:
    """Horizontal bars, in the order given, each with its value at its end."""
    if not bars:
        return svg.empty("bars", label, "nothing to show", width)
    gap, top, bottom = 6, 6, 22
    height = top + len(bars) * (bar_height + gap) + bottom
    ticks = nice_ticks(max(b.value for b in bars))
    value_room = 70
    x = Linear(0.0, ticks[-1], label_width, width - value_room)
    parts: list[object] = _value_axis(ticks, x, top, height - bottom, unit)
    for index, bar in enumerate(bars):
        y = top + index * (bar_height + gap)
        body = svg.tag(
            "g",
            svg.tooltip(bar.detail or f"{bar.label}: {unit(bar.value)}"),
            svg.text(
                label_width - 8,
                y + bar_height - 5,
                svg.clip_label(bar.label, label_width - 12),
                text_anchor="end",
            ),
            svg.rect(
                label_width,
                y,
                max(x(bar.value) - label_width, 1.0),
                bar_height,
                fill=svg.PALETTE[0],
                class_="bar",
            ),
            svg.text(x(bar.value) + 4, y + bar_height - 5, unit(bar.value), fill=svg.MUTED),
        )
        parts.append(svg.tag("a", body, href=bar.href) if bar.href else body)
    return svg.frame("bars", label, width, height, *parts)


def _value_axis(
    ticks: list[float], x: Linear, top: float, axis_y: float, unit: Callable[[float], str]
) -> list[object]:
    """Vertical grid lines with their labels under the axis, for horizontal bars."""
    parts: list[object] = []
    for tick in ticks:
        parts.append(svg.line(x(tick), top, x(tick), axis_y, stroke=svg.GRID))
        parts.append(
            svg.text(x(tick), axis_y + 14, unit(tick), text_anchor="middle", fill=svg.MUTED)
        )
    return parts


def histogram(
    buckets: Sequence[tuple[str, float]],
    *,
    label: str,
    unit: Callable[[float], str],
    width: int = 420,
    height: int = 160,
    colour: str = svg.PALETTE[0],
) -> Markup:
    """Vertical bars over labelled buckets (in order), e.g. Query_time by decade."""
    if not buckets or not any(value for _, value in buckets):
        return svg.empty("histogram", label, "no values", width)
    left, right, top, bottom = 44, 6, 12, 22
    ticks = nice_ticks(max(value for _, value in buckets), 3)
    y = Linear(0.0, ticks[-1], height - bottom, top)
    slot = (width - left - right) / len(buckets)
    parts: list[object] = []
    for tick in ticks:
        parts.append(svg.line(left, y(tick), width - right, y(tick), stroke=svg.GRID))
        parts.append(svg.text(left - 4, y(tick) + 4, unit(tick), text_anchor="end"))
    for index, (name, value) in enumerate(buckets):
        x0 = left + index * slot
        parts.append(
            svg.tag(
                "g",
                svg.tooltip(f"{name}: {unit(value)}"),
                svg.rect(
                    x0 + 1,
                    y(value),
                    slot - 2,
                    y(0.0) - y(value),
                    fill=colour,
                    class_="bar",
                ),
            )
        )
        parts.append(
            svg.text(
                x0 + slot / 2,
                height - 6,
                svg.clip_label(name, slot),
                text_anchor="middle",
                fill=svg.MUTED,
            )
        )
    parts.append(svg.line(left, y(0.0), width - right, y(0.0), stroke=svg.MUTED))
    return svg.frame("histogram", label, width, height, *parts)


@dataclass(frozen=True)
class Pair:
    """Two values to compare on one row (an estimate and what happened)."""

    label: str
    first: float | None
    second: float | None
    detail: str = ""
    flag: bool = False


def paired_bars(
    pairs: Sequence[Pair],
    *,
    label: str,
    names: tuple[str, str],
    unit: Callable[[float], str],
    width: int = 900,
    label_width: int = 240,
) -> Markup:
    """Per row a light bar (``names[0]``) over a solid one (``names[1]``); flagged rows in red."""
    if not pairs:
        return svg.empty("pairs", label, "nothing to show", width)
    row, gap, top, bottom = 22, 6, 22, 22
    height = top + len(pairs) * (row + gap) + bottom
    largest = max(max(p.first or 0.0, p.second or 0.0) for p in pairs)
    ticks = nice_ticks(largest)
    x = Linear(0.0, ticks[-1], label_width, width - 80)
    parts: list[object] = [
        svg.rect(label_width, 4, 10, 10, fill=svg.PALETTE[5]),
        svg.text(label_width + 14, 13, names[0]),
        svg.rect(label_width + 120, 4, 10, 10, fill=svg.PALETTE[0]),
        svg.text(label_width + 134, 13, names[1]),
        *_value_axis(ticks, x, top, height - bottom, unit),
    ]
    for index, pair in enumerate(pairs):
        y = top + index * (row + gap)
        items: list[object] = [
            svg.tooltip(
                pair.detail
                or f"{pair.label}: {names[0]} {_maybe(unit, pair.first)}, {names[1]} {_maybe(unit, pair.second)}"
            ),
            svg.text(
                label_width - 8,
                y + row - 6,
                svg.clip_label(pair.label, label_width - 12),
                text_anchor="end",
                fill=svg.SHADE if pair.flag else svg.INK,
            ),
        ]
        if pair.first is not None:
            items.append(
                svg.rect(
                    label_width,
                    y,
                    x(pair.first) - label_width,
                    row / 2 - 1,
                    fill=svg.PALETTE[5],
                    class_="first",
                )
            )
            if pair.second is None:  # nothing after it (a class that is gone): label this one
                items.append(
                    svg.text(x(pair.first) + 4, y + row / 2 - 2, unit(pair.first), fill=svg.MUTED)
                )
        if pair.second is not None:
            items.append(
                svg.rect(
                    label_width,
                    y + row / 2,
                    x(pair.second) - label_width,
                    row / 2 - 1,
                    fill=svg.SHADE if pair.flag else svg.PALETTE[0],
                    class_="second",
                )
            )
            items.append(
                svg.text(x(pair.second) + 4, y + row - 6, unit(pair.second), fill=svg.MUTED)
            )
        parts.append(svg.tag("g", *items, class_="pair"))
    return svg.frame("pairs", label, width, height, *parts)


def _maybe(unit: Callable[[float], str], value: float | None) -> str:
    return "–" if value is None else unit(value)
