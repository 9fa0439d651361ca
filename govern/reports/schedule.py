"""The night report (``govern schedule report``): who ran what when, and was it worth it.

Built from a ``govern.schedule.night`` document and, when given, the
``govern.schedule.simulate`` replay of that night's durations, so the page shows
the Gantt chart of every replica, the "% of summaries done vs % of the night"
curve of the night beside the plan's and the other policies', and each job's
estimate against what it really took.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from govern import units
from govern.charts import (
    Band,
    Marker,
    Pair,
    Series,
    Task,
    curve_chart,
    gantt_chart,
    paired_bars,
)
from govern.html.components import Column, badge, details, figures, note, table
from govern.html.markup import Markup, join, tag
from govern.html.page import Page, anchor, clock

#: An estimate this far off (either way) is flagged in red.
ESTIMATE_FLAG = 0.5
#: Jobs drawn in the estimate-vs-actual chart (the longest); the table lists them all.
CHART_JOBS = 40


def schedule_report(
    night: dict[str, Any],
    simulation: dict[str, Any] | None = None,
    *,
    generated_at: datetime | None = None,
) -> str:
    """The HTML page for one recorded night (see docs/json.md for both documents)."""
    summary = night.get("summary") or {}
    makespan = _makespan(night)
    page = Page(
        f"Night {night['id']} of {night['schedule']}",
        f"{clock(night['started_at'])} → {clock(night.get('finished_at')) or 'still running'} · "
        f"policy {night['policy']} · {night['trigger']} on {night['host']} · {night['catalog']}",
        generated_at=generated_at,
    )
    page.add("summary", "Summary", _summary(night, summary, makespan))
    page.add("gantt", "Jobs per replica", _gantts(night, makespan))
    page.add("curve", "% of summaries done vs % of the night", _curves(night, simulation, makespan))
    if night.get("holds"):
        page.add("holds", "Throttle holds", _holds(night))
    page.add("estimates", "Estimate vs actual", _estimates(night))
    return page.render()


def _makespan(night: dict[str, Any]) -> float:
    summary = night.get("summary") or {}
    if summary.get("makespan_s"):
        return float(summary["makespan_s"])
    finishes = [
        a["finish_s"] for j in night["jobs"] for a in j["attempts"] if a.get("finish_s") is not None
    ]
    return max(finishes, default=0.0)


def _summary(night: dict[str, Any], summary: dict[str, Any], makespan: float) -> Markup:
    jobs = night["jobs"]
    outcomes: dict[str, int] = {}
    for job in jobs:
        outcomes[job["outcome"]] = outcomes.get(job["outcome"], 0) + 1
    error = summary.get("estimate_error") or {}
    parts: list[object] = [
        tag(
            "p",
            "Status ",
            badge(night["status"]),
            f" — {night['note']}" if night.get("note") else None,
        ),
        figures(
            [
                ("jobs done", f"{summary.get('done', outcomes.get('ok', 0))} of {len(jobs)}"),
                ("makespan", units.duration(makespan, "spaced")),
                ("mean completion", units.duration(summary.get("mean_completion_s"), "spaced")),
                (
                    "done at half the night",
                    units.share(summary.get("done_at_half_makespan"), missing=units.DASH),
                ),
                ("estimate error", _percent(error.get("weighted_abs_pct"))),
                ("policy", night["policy"]),
            ]
        ),
        table(
            [Column("outcome"), Column("jobs", True)],
            [[badge(name), count] for name, count in sorted(outcomes.items())],
        ),
    ]
    warnings = summary.get("warnings") or []
    if warnings:
        parts.append(tag("h3", "Warnings"))
        parts.append(tag("ul", *(tag("li", w) for w in warnings)))
    return join(parts)


def _lanes(night: dict[str, Any]) -> dict[str, list[str]]:
    """Lanes (``worker#slot``) per worker: the worker's slots, plus any lane a job used."""
    lanes: dict[str, list[str]] = {}
    for worker in night.get("workers") or []:
        lanes[worker["name"]] = [
            f"{worker['name']}#{slot}" for slot in range(worker.get("lanes") or 0)
        ]
    for job in night["jobs"]:
        for attempt in job["attempts"]:
            worker, lane = attempt["worker"], attempt["lane"]
            if lane not in lanes.setdefault(worker, []):
                lanes[worker].append(lane)
    return lanes


def _gantts(night: dict[str, Any], makespan: float) -> Markup:
    lanes = _lanes(night)
    tasks: dict[str, list[Task]] = {worker: [] for worker in lanes}
    for job in night["jobs"]:
        planned = job.get("planned") or {}
        attempts = job["attempts"]
        for index, attempt in enumerate(attempts):
            if attempt.get("start_s") is None:
                continue
            finish = attempt.get("finish_s")
            last = index == len(attempts) - 1
            tasks[attempt["worker"]].append(
                Task(
                    lane=attempt["lane"],
                    name=job["name"],
                    start=float(attempt["start_s"]),
                    finish=float(finish if finish is not None else makespan),
                    outcome=attempt["outcome"],
                    planned=(
                        (float(planned["start_s"]), float(planned["finish_s"]))
                        if last and planned.get("start_s") is not None
                        else None
                    ),
                    detail=_job_tip(job, attempt),
                )
            )
    workers = {w["name"]: w for w in night.get("workers") or []}
    bands = _hold_bands(night)
    parts: list[object] = [
        note(
            "Bars are attempts, coloured by outcome (blue ok, red failed, orange timed out, purple "
            "interrupted); the grey line under a bar is where the plan expected the job. "
            "All charts share one time scale; the dashed line is half of the night"
            + (
                "; green stretches are throttle holds (the lag guard, or a job's own checks)."
                if bands
                else "."
            )
        )
    ]
    for worker, worker_lanes in lanes.items():
        info = workers.get(worker, {})
        facts = [info.get("server") or ""]
        if info.get("is_replica"):
            facts.append("replica")
        if info.get("lag_s") is not None:
            facts.append(
                f"lag {units.duration(info['lag_s'], 'spaced')} ({info.get('lag_source')})"
            )
        waited = ((night.get("summary") or {}).get("lag_waits_s") or {}).get(worker)
        if waited:
            facts.append(f"held {units.duration(waited, 'spaced')} by the lag guard")
        parts.append(
            tag("h3", worker, " ", tag("span", " · ".join(f for f in facts if f), class_="note"))
        )
        if info.get("error"):
            parts.append(note(f"left out: {info['error']}"))
        parts.append(
            gantt_chart(
                tasks[worker],
                label=f"Jobs on {worker}",
                lanes=worker_lanes,
                span=makespan or None,
                markers=[Marker(makespan / 2, "50%")] if makespan else (),
                bands=bands.get(worker, ()),
            )
        )
    return join(parts)


def _offset(night: dict[str, Any], stamp: str | None) -> float | None:
    if not stamp:
        return None
    return (
        datetime.fromisoformat(stamp) - datetime.fromisoformat(night["started_at"])
    ).total_seconds()


def _hold_bands(night: dict[str, Any]) -> dict[str, list[Band]]:
    """Holds per worker, on the night's clock: the lag guard's own, and those of the jobs
    that ran there."""
    job_worker = {j["name"]: j.get("worker") for j in night["jobs"]}
    bands: dict[str, list[Band]] = {}
    for hold in night.get("holds") or []:
        worker = hold.get("worker") or job_worker.get(hold.get("job") or "")
        start = _offset(night, hold["started_at"])
        if worker is None or start is None:
            continue
        end = _offset(night, hold.get("ended_at"))
        who = hold.get("job") or "lag guard"
        bands.setdefault(worker, []).append(
            Band(start, end if end is not None else _makespan(night), f"{who}: {hold['reason']}")
        )
    return bands


def _holds(night: dict[str, Any]) -> Markup:
    rows = []
    for hold in night["holds"]:
        start = _offset(night, hold["started_at"])
        rows.append(
            [
                hold.get("job") or f"lag guard ({hold.get('worker')})",
                hold["check"],
                units.duration(start, "spaced") if start is not None else "",
                units.duration(hold["seconds"], "spaced")
                if hold.get("seconds") is not None
                else "still open",
                hold["reason"],
            ]
        )
    return join(
        [
            note(
                "Each stretch a throttle check held: the lag guard keeping new jobs off a lagging "
                "replica, or a job's own checks (a catalog's [throttle]). From is the time into "
                "the night."
            ),
            table(
                [
                    Column("held"),
                    Column("check"),
                    Column("from", True),
                    Column("for", True),
                    Column("reason"),
                ],
                rows,
            ),
        ]
    )


def _job_tip(job: dict[str, Any], attempt: dict[str, Any]) -> str:
    lines = [
        f"{job['name']} (attempt {attempt['number']}, {attempt['outcome']})",
        f"{units.duration(attempt.get('start_s'), 'spaced')} → "
        f"{units.duration(attempt.get('finish_s'), 'spaced')} on {attempt['lane']}",
        f"estimate {units.duration(job.get('estimate_s'), 'spaced')} "
        f"({job.get('estimate_method')}), rows {units.count(job.get('rows'), 'grouped', units.DASH)}",
    ]
    if job.get("reason"):
        lines.append(str(job["reason"]))
    return "\n".join(lines)


def _curves(night: dict[str, Any], simulation: dict[str, Any] | None, makespan: float) -> Markup:
    """Curves on this night's clock: x is time as a share of the recorded makespan."""
    summary = night.get("summary") or {}
    series: list[Series] = []
    actual = [(p["time_share"], p["done_share"]) for p in summary.get("curve") or []]
    if not actual and makespan:
        actual = _curve_from_finishes(
            [
                j["finish_s"]
                for j in night["jobs"]
                if j["outcome"] == "ok" and j.get("finish_s") is not None
            ],
            len(night["jobs"]),
            makespan,
        )
    series.append(Series(f"this night ({night['policy']})", actual, emphasis=True))
    planned = [
        j["planned"]["finish_s"]
        for j in night["jobs"]
        if (j.get("planned") or {}).get("finish_s") is not None
    ]
    if planned and makespan:
        series.append(
            Series("plan (predicted)", _curve_from_finishes(planned, len(night["jobs"]), makespan))
        )
    x_max = 1.0
    rows: list[list[object]] = []
    if simulation is not None and makespan:
        for policy in simulation["policies"]:
            scale = policy["makespan_s"] / makespan if makespan else 1.0
            points = [(p["time_share"] * scale, p["done_share"]) for p in policy["curve"]]
            series.append(Series(f"{policy['policy']} (simulated)", points, dashed=True))
            x_max = max(x_max, scale)
            rows.append(
                [
                    policy["policy"],
                    units.duration(policy["makespan_s"], "spaced"),
                    units.duration(policy.get("mean_completion_s"), "spaced"),
                    units.share(policy.get("done_at_half_makespan"), missing=units.DASH),
                    f"{policy['done']} of {policy['jobs']}",
                ]
            )
    parts: list[object] = [
        curve_chart(
            series,
            label="Share of summaries done over the night",
            x_label="time, as a share of this night's makespan "
            f"({units.duration(makespan, 'spaced')})",
            y_label="summaries done",
            x_max=round(x_max, 3),
        ),
        note(
            "Shares count every job of the night, so failed or skipped jobs keep a curve below 100%. "
            "Simulated policies replay this night's recorded durations on the same workers, "
            "ordered by the estimates the scheduler had; a policy whose curve runs past 100% "
            "would have made the night longer."
        ),
    ]
    if rows:
        recorded = [
            f"{night['policy']} (this night)",
            units.duration(makespan, "spaced"),
            units.duration(summary.get("mean_completion_s"), "spaced"),
            units.share(summary.get("done_at_half_makespan"), missing=units.DASH),
            f"{summary.get('done', 0)} of {summary.get('jobs', len(night['jobs']))}",
        ]
        parts.append(
            table(
                [
                    Column("policy"),
                    Column("makespan", True),
                    Column("mean completion", True),
                    Column("done at half its makespan", True),
                    Column("done", True),
                ],
                [recorded, *rows],
            )
        )
        if simulation and simulation.get("notes"):
            parts.append(tag("ul", *(tag("li", n) for n in simulation["notes"])))
    return join(parts)


def _curve_from_finishes(
    finishes: Sequence[float], jobs: int, makespan: float
) -> list[tuple[float, float]]:
    points = [(0.0, 0.0)]
    for done, finish in enumerate(sorted(finishes), start=1):
        points.append((finish / makespan, done / max(jobs, 1)))
    return points


def _estimates(night: dict[str, Any]) -> Markup:
    jobs = sorted(
        night["jobs"],
        key=lambda j: -(j.get("actual_s") or j.get("estimate_s") or 0.0),
    )
    pairs: list[Pair] = []
    rows = []
    classes: list[str | None] = []
    for job in jobs:
        estimate, actual = job.get("estimate_s"), job.get("actual_s")
        error = None if estimate is None or actual is None else actual - estimate
        flagged = error is not None and abs(error) > ESTIMATE_FLAG * max(estimate or 0, actual or 0)
        if (estimate is not None or actual is not None) and len(pairs) < CHART_JOBS:
            pairs.append(Pair(job["name"], estimate, actual, flag=flagged))
        rows.append(
            [
                tag("span", job["name"], id=anchor("job", job["name"])),
                units.count(job.get("rows"), "grouped", units.DASH),
                job.get("estimate_method") or "–",
                units.duration(estimate, "spaced"),
                units.duration(actual, "spaced"),
                "–" if error is None else f"{error:+.3f} s",
                badge(job["outcome"]),
                job.get("lane") or "–",
                len(job["attempts"]),
                job.get("reason") or "",
            ]
        )
        classes.append("bad" if flagged else None)
    error_summary = (night.get("summary") or {}).get("estimate_error") or {}
    return join(
        [
            note(
                f"Estimates off by {units.duration(error_summary.get('abs_error_s'), 'spaced')}"
                f" in all, {_percent(error_summary.get('weighted_abs_pct'))} of the actual time,"
                f" over {error_summary.get('jobs', 0)} jobs that had an estimate and succeeded;"
                f" the error column is actual − estimate; a job off by more than"
                f" {ESTIMATE_FLAG:.0%} of the longer of the two is in red."
            ),
            paired_bars(
                pairs,
                label="Estimated and actual run time per job",
                names=("estimate", "actual"),
                unit=lambda v: units.duration(v, "spaced"),
            ),
            details(
                f"All {len(jobs)} jobs",
                table(
                    [
                        Column("job"),
                        Column("rows", True),
                        Column("method"),
                        Column("estimate", True),
                        Column("actual", True),
                        Column("error", True),
                        Column("outcome"),
                        Column("lane"),
                        Column("attempts", True),
                        Column("reason"),
                    ],
                    rows,
                    row_classes=classes,
                ),
                open=len(jobs) <= 50,
            ),
        ]
    )


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}%"
