"""The digest page's trends over a history store: count, total time, p95 and p99 per hour
(or day), for the whole server and the top classes, with ``govern run`` jobs and nightly
schedule runs drawn on them ("p99 rose at 02:00: the summary build on this replica").

The jobs and nights come as the plain documents of the run and schedule features
(govern/reports/digest_run.py reads them from the state file) and are drawn as
:class:`Window` marks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from govern import units
from govern.charts import Window, time_chart
from govern.charts.svg import PALETTE
from govern.history.trends import Trend
from govern.html.components import note
from govern.html.markup import Markup, join, tag
from govern.reports.windows import epoch

RUN_COLOUR = PALETTE[3]
NIGHT_COLOUR = PALETTE[2]
#: Classes with their own trend (the costliest of the report).
TREND_CLASSES = 5


def marks(runs: Sequence[Mapping[str, Any]], nights: Sequence[Mapping[str, Any]]) -> list[Window]:
    """``govern run`` jobs (``runs[]`` of govern.run.history) and schedule nights
    (govern.schedule.night documents) as labelled bands."""
    found: list[Window] = []
    for run in runs:
        found.append(
            Window(
                epoch(run["started_at"]),
                epoch(run["ended_at"]) if run.get("ended_at") else None,
                f"run: {run['name']}",
                f"govern run {run['name']} ({run.get('outcome') or run.get('state')})"
                + (f" on {run['server']}" if run.get("server") else ""),
                server=run.get("server"),
                colour=RUN_COLOUR,
            )
        )
    for night in nights:
        if not night.get("started_at"):
            continue
        found.append(
            Window(
                epoch(night["started_at"]),
                epoch(night["finished_at"]) if night.get("finished_at") else None,
                f"night: {night['schedule']}",
                f"govern schedule night {night['id']} of {night['schedule']}"
                f" ({night['status']}, {len(night.get('jobs') or ())} jobs)",
                colour=NIGHT_COLOUR,
            )
        )
    return found


def in_span(marks: Sequence[Window], trend: Trend) -> list[Window]:
    if not trend.times:
        return []
    first, last = trend.times[0], trend.times[-1] + trend.step
    return [m for m in marks if m.start <= last and (m.end is None or m.end >= first)]


def trends_section(trends: Sequence[Trend], marks: Sequence[Window]) -> Markup:
    """One block per trend: four charts over the same steps, the marks on each."""
    if not trends or trends[0].empty:
        return note("The store has no bucket in this time range: no trend to draw.")
    per = "hour" if trends[0].step == 3600 else "day"
    shown = in_span(marks, trends[0])
    parts: list[object] = [
        note(
            f"Per {per}, from the stored buckets (p95 and p99 from each {per}'s merged sketch)."
            + (
                f" Marked: {units.plural(len(shown), 'govern run job or schedule night', 'govern run jobs and schedule nights')}"
                " recorded in the state file."
                if shown
                else " No govern run job or schedule night is recorded for this time range."
            )
        )
    ]
    for trend in trends:
        parts.append(tag("h3", trend.title))
        if trend.empty:
            parts.append(note("No event in this time range."))
            continue
        parts.append(_charts(trend, shown))
    return join(parts)


def _charts(trend: Trend, marks: Sequence[Window]) -> Markup:
    def seconds(value: float) -> str:
        return units.duration(value, "spaced")

    what = "whole server" if trend.class_id is None else trend.class_id[-16:]
    per = "hour" if trend.step == 3600 else "day"
    charts = [
        (trend.count, f"Queries per {per} ({what})", lambda v: units.count(v, "significant")),
        (trend.total, f"Query time per {per} ({what})", seconds),
        (trend.p95, f"p95 query time ({what})", seconds),
        (trend.p99, f"p99 query time ({what})", seconds),
    ]
    return join(
        join(
            [
                note(label),
                time_chart(
                    trend.times,
                    values,
                    label=label,
                    unit=unit,
                    step=trend.step,
                    windows=marks,
                    colour=PALETTE[index % 2],
                    height=150,
                ),
            ]
        )
        for index, (values, label, unit) in enumerate(charts)
    )
