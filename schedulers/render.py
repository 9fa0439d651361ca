"""Text output of the schedule commands: rich tables on stdout. JSON goes through print_json."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from govern import units
from govern.output import console
from govern.schedulers.metrics import CURVE_MARKS
from govern.units import plural


def _table(title: str, columns: Sequence[str]) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in columns:
        justify = (
            "left"
            if column
            in (
                "job",
                "lane",
                "policy",
                "outcome",
                "status",
                "schedule",
                "when",
                "method",
                "reason",
                "trigger",
            )
            else "right"
        )
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    return table


def curve_line(done_at: Mapping[str, float]) -> str:
    marks = " ".join(f"{float(k) * 100:g}%:{units.share(done_at[k], 1)}" for k in done_at)
    return f"done by % of the night: {marks}"


def print_plan(plan: dict[str, Any]) -> None:
    out = console()
    lanes = plan["lanes"]
    workers = sorted({lane["worker"] for lane in lanes})
    table = _table(
        f"plan for {plan['schedule']}: policy {plan['policy']}, {len(workers)} workers, "
        f"{len(lanes)} lanes, from {plan['base_time']}",
        ("job", "lane", "rows", "alone", "method", "predicted", "start", "finish"),
    )
    for job in plan["jobs"]:
        table.add_row(
            job["name"],
            job["lane"],
            units.count(job["rows"], "grouped"),
            units.duration(job["estimate_s"], "clock"),
            job["estimate_method"],
            units.duration(job["predicted_s"], "clock"),
            "+" + units.duration(job["predicted_start_s"], "clock"),
            "+" + units.duration(job["predicted_finish_s"], "clock"),
        )
    out.print(table)
    summary = plan["summary"]
    out.print(
        f"predicted: makespan {units.duration(summary['makespan_s'], 'clock')}, "
        f"mean completion {units.duration(summary['mean_completion_s'], 'clock')}; "
        f"{curve_line(summary['done_at'])}"
    )
    for item in plan["skipped"]:
        out.print(f"cannot run: {item['name']}: {item['reason']}")


def print_night(night: dict[str, Any], *, jobs: bool) -> None:
    out = console()
    summary = night.get("summary") or {}
    outcomes = summary.get("outcomes", {})
    counts = ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items()))
    out.print(
        f"night {night['id']} of {night['schedule']}: {night['status']} "
        f"(policy {night['policy']}, {night['trigger']}, started {night['started_at']})"
        + (f": {night['note']}" if night.get("note") else "")
    )
    if jobs:
        table = _table(
            "",
            (
                "job",
                "lane",
                "rows",
                "estimate",
                "actual",
                "error",
                "start",
                "finish",
                "outcome",
                "tries",
            ),
        )
        for job in sorted(night["jobs"], key=lambda j: (j["start_s"] is None, j["start_s"] or 0)):
            error = "-"
            if job["estimate_s"] and job["actual_s"] is not None and job["outcome"] == "ok":
                error = f"{job['actual_s'] - job['estimate_s']:+.3f}s"
            table.add_row(
                job["name"],
                job["lane"] or "-",
                units.count(job["rows"], "grouped"),
                units.duration(job["estimate_s"], "clock"),
                units.duration(job["actual_s"], "clock"),
                error,
                "+" + units.duration(job["start_s"], "clock")
                if job["start_s"] is not None
                else "-",
                "+" + units.duration(job["finish_s"], "clock")
                if job["finish_s"] is not None
                else "-",
                job["outcome"],
                str(len(job["attempts"])),
            )
        out.print(table)
    if summary:
        out.print(
            f"{plural(summary['jobs'], 'job')}: {counts}; "
            f"makespan {units.duration(summary['makespan_s'], 'clock')}, "
            f"mean completion {units.duration(summary['mean_completion_s'], 'clock')}, "
            f"done at 50% of the makespan: {units.share(summary['done_at_half_makespan'], 1)}"
        )
        for miss in summary.get("deadline_misses") or []:
            what = f"job {miss['job']}" if miss["job"] else "the night"
            out.print(f"deadline missed: {what} not done by {miss['deadline']}")
        failed = [
            f"on_{e['event']} {d['hook']} {d['target']}: {d['detail']}"
            for e in summary.get("events") or []
            for d in e["deliveries"]
            if not d["ok"]
        ]
        if failed:
            out.print("hooks not delivered: " + "; ".join(failed))
        waits = {w: s for w, s in sorted(summary.get("lag_waits_s", {}).items()) if s}
        if waits:
            out.print(
                "waited for replica lag: "
                + ", ".join(f"{w} {units.duration(s, 'clock')}" for w, s in waits.items())
            )
        error = summary.get("estimate_error", {})
        if error.get("jobs"):
            pct = error.get("weighted_abs_pct")
            out.print(
                f"estimates: off by {units.duration(error['abs_error_s'], 'clock')} in all"
                f" ({'-' if pct is None else f'{pct:.0f}%'} of the actual time) over "
                f"{plural(error['jobs'], 'job')}; "
                f"total {units.duration(error['total_estimate_s'], 'clock')} estimated, "
                f"{units.duration(error['total_actual_s'], 'clock')} actual"
            )
    for job in night["jobs"]:
        if job["outcome"] in ("failed", "timeout", "skipped", "interrupted"):
            log = job["attempts"][-1]["log"] if job["attempts"] else None
            out.print(
                f"{job['outcome']}: {job['name']}: {job['reason'] or ''}"
                + (f" (log {log})" if log and job["outcome"] != "skipped" else "")
            )


def print_history(nights: Sequence[dict[str, Any]]) -> None:
    table = _table(
        "",
        (
            "id",
            "schedule",
            "trigger",
            "when",
            "status",
            "jobs ok",
            "makespan",
            "done@50%",
            "est. error",
        ),
    )
    for night in nights:
        summary = night.get("summary") or {}
        outcomes = summary.get("outcomes", {})
        error = (summary.get("estimate_error") or {}).get("weighted_abs_pct")
        table.add_row(
            str(night["id"]),
            night["schedule"],
            night["trigger"],
            night["scheduled_for"] or night["started_at"],
            night["status"]
            + (
                f" ({night['note']})"
                if night["status"] in ("missed", "coalesced", "skipped", "error")
                and night.get("note")
                else ""
            ),
            f"{outcomes.get('ok', 0)}/{len(night['jobs'])}" if night["jobs"] else "-",
            units.duration(summary.get("makespan_s"), "clock"),
            units.share(summary.get("done_at_half_makespan"), 1),
            "-" if error is None else f"{error:.0f}%",
        )
    console().print(table)


def print_simulation(report: dict[str, Any]) -> None:
    out = console()
    marks = [f"{m:g}" for m in CURVE_MARKS]
    table = _table(
        f"{report['schedule']}: {report['durations']} durations, {report['jobs']} jobs, "
        f"{report['lanes']} lanes",
        (
            "policy",
            "makespan",
            "vs bound",
            "mean completion",
            *[f"done@{float(m) * 100:g}%" for m in marks],
        ),
    )
    for row in report["policies"]:
        table.add_row(
            row["policy"],
            units.duration(row["makespan_s"], "clock"),
            f"{row['makespan_s'] / report['makespan_lower_bound_s']:.3f}"
            if report["makespan_lower_bound_s"]
            else "-",
            units.duration(row["mean_completion_s"], "clock"),
            *[units.share(row["done_at"][m], 1) for m in marks],
        )
    out.print(table)
    for note in report["notes"]:
        out.print(note)
