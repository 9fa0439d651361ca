"""Load over time: an area chart of one series on a time axis, with windows shaded.

The windows are the slow log's blind windows recorded by ``govern run``: while one
was open the log was off (or its threshold raised), so the dip under it is the
log's silence, not the server's. Shading and labelling them keeps anyone from
reading a quiet night into a blind one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from govern.charts import svg
from govern.charts.scale import Linear, nice_ticks, time_ticks
from govern.html.markup import Markup


@dataclass(frozen=True)
class Window:
    """A labelled interval (epoch seconds); ``end`` None means still open."""

    start: float
    end: float | None
    label: str
    detail: str = ""
    #: the server it belongs to (``hostname:port``), when known
    server: str | None = None
    colour: str = svg.SHADE


#: Rows of window labels above a chart; windows on further rows keep their tooltip only.
LABEL_ROWS = 3


def _clock(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def time_chart(
    times: Sequence[float],
    values: Sequence[float],
    *,
    label: str,
    unit: Callable[[float], str],
    step: float,
    windows: Sequence[Window] = (),
    colour: str = svg.PALETTE[0],
    width: int = 900,
    height: int = 200,
) -> Markup:
    """Area chart of ``values`` at ``times`` (bucket starts, epoch seconds, ``step`` apart).

    The x axis spans the buckets; windows are clipped to it. The peak bucket gets
    a dot and a tooltip, every window a tooltip with its exact start and end.
    """
    if not times:
        return svg.empty("timeseries", label, "no events in this time range", width)
    left, right, top = 64.0, 28.0, 14.0
    label_rows = _window_rows(windows, times[0], times[-1] + step)
    top += 14.0 * min(len(set(label_rows.values())), LABEL_ROWS)
    bottom = 24.0
    start, end = times[0], times[-1] + step
    x = Linear(start, end, left, width - right)
    ticks = nice_ticks(max(values, default=0.0))
    y = Linear(0.0, ticks[-1], height - bottom, top)
    parts: list[object] = []

    for index, window in enumerate(windows):
        w_start = max(window.start, start)
        w_end = min(end if window.end is None else window.end, end)
        if w_end < start or w_start > end:
            continue
        x0, x1 = x(w_start), max(x(w_end), x(w_start) + 1.5)
        row = label_rows.get(index, 0)
        ended = "still open" if window.end is None else _clock(window.end)
        detail = f"{window.label}: {_clock(window.start)} – {ended}"
        if window.detail:
            detail += f"\n{window.detail}"
        caption = (
            svg.text(
                x0 + 2,
                10 + 14.0 * row,
                svg.clip_label(window.label, max(width - right - x0, 0)),
                fill=window.colour,
            )
            if row < LABEL_ROWS
            else ""
        )
        parts.append(
            svg.tag(
                "g",
                svg.tooltip(detail),
                svg.rect(
                    x0,
                    top,
                    x1 - x0,
                    height - bottom - top,
                    fill=window.colour,
                    fill_opacity="0.14",
                    stroke=window.colour,
                    stroke_opacity="0.5",
                ),
                caption,
                class_="window",
                data_window=window.label,
            )
        )

    for tick in ticks:
        parts.append(svg.line(left, y(tick), width - right, y(tick), stroke=svg.GRID))
        parts.append(svg.text(left - 6, y(tick) + 4, unit(tick), text_anchor="end"))
    for value, text in time_ticks(start, end):
        parts.append(
            svg.line(x(value), height - bottom, x(value), height - bottom + 4, stroke=svg.MUTED)
        )
        parts.append(svg.text(x(value), height - 6, text, text_anchor="middle", fill=svg.MUTED))

    # A step outline: each bucket is flat over its minute, so the area is honest about it.
    outline: list[tuple[float, float]] = []
    for t, v in zip(times, values, strict=True):
        outline.append((x(t), y(v)))
        outline.append((x(t + step), y(v)))
    base = y(0.0)
    area = [(outline[0][0], base), *outline, (outline[-1][0], base)]
    parts.append(svg.path(area, fill=colour, fill_opacity="0.25", stroke="none", class_="area"))
    parts.append(svg.path(outline, fill="none", stroke=colour, stroke_width="1.5", class_="series"))

    peak = max(range(len(values)), key=lambda i: values[i])
    px, py = x(times[peak] + step / 2), y(values[peak])
    parts.append(
        svg.tag(
            "circle",
            svg.tooltip(f"peak {unit(values[peak])} at {_clock(times[peak])}"),
            cx=svg.num(px),
            cy=svg.num(py),
            r="3",
            fill=colour,
            class_="peak",
        )
    )
    parts.append(svg.line(left, base, width - right, base, stroke=svg.MUTED))
    return svg.frame("timeseries", label, width, height, *parts)


def _window_rows(windows: Sequence[Window], start: float, end: float) -> dict[int, int]:
    """Label row per window so the labels of overlapping or close windows do not collide."""
    rows: dict[int, int] = {}
    row_ends: list[float] = []
    span = max(end - start, 1.0)
    order = sorted(range(len(windows)), key=lambda i: windows[i].start)
    for index in order:
        window = windows[index]
        if (window.end is not None and window.end < start) or window.start > end:
            continue
        # A label needs about its length in characters of room; in data units:
        room = span * (len(window.label) * svg.CHAR_WIDTH + 12) / 800
        begin = max(window.start, start)
        for row, row_end in enumerate(row_ends):
            if begin >= row_end:
                rows[index] = row
                row_ends[row] = begin + room
                break
        else:
            rows[index] = len(row_ends)
            row_ends.append(begin + room)
    return rows
