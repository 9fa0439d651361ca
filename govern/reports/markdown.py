"""The Markdown report: a profile table and one collapsible section per class (CI comments)."""

from __future__ import annotations

from collections.abc import Callable
from typing import IO

from govern import units
from govern.digest.report import Report, ReportClass
from govern.reports import (
    figure,
    finding_ids,
    metric_order,
    rules_lines,
    summary_lines,
    top_hosts_line,
    top_values,
    unshown_findings,
)

_ICONS = {"error": "🛑", "warning": "⚠️", "info": "ℹ️"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _findings_table(
    report: Report, classes: list[ReportClass], write: Callable[[str], object]
) -> None:
    """Every finding of the classes shown, worst first: what a CI comment leads with."""
    ranked = [
        (rank, item, finding) for rank, item in enumerate(classes, 1) for finding in item.findings
    ]
    if not ranked:
        return
    order = {"error": 0, "warning": 1, "info": 2}
    ranked.sort(key=lambda entry: (order.get(entry[2].severity, 3), entry[0]))
    write("\n### Findings\n\n| | rule | class | message |\n|---|---|---|---|\n")
    for rank, item, finding in ranked:
        write(
            f"| {_ICONS.get(finding.severity, '')} {finding.severity} "
            f"| {finding.rule} {finding.name} | #{rank} `{item.short_id}` "
            f"| {_cell(finding.message)} |\n"
        )
    hidden = unshown_findings(report, classes)
    if hidden:
        write(f"\n{hidden:,} more findings in classes not shown (--top).\n")


def render(report: Report, stream: IO[str], top: int | None = 20) -> None:
    classes = list(report.classes[: top if top is not None else None])
    write = stream.write
    write("## govern digest\n\n")
    for line in summary_lines(report) + rules_lines(report):
        write(f"- {_cell(line)}\n")
    for bad in report.malformed:
        write(f"- malformed: `{bad.file}:{bad.line}`: {_cell(bad.reason)}\n")
    if not classes:
        write("\nNo query classes.\n")
        return
    _findings_table(report, classes, write)
    rules = report.rules is not None
    write(
        "\n| # | query ID | time | % | calls | avg | p95 | rows examined |"
        + (" findings |" if rules else "")
        + " fingerprint |\n"
    )
    write("|--:|---|--:|--:|--:|--:|--:|--:|" + ("---|" if rules else "") + "---|\n")
    for rank, item in enumerate(classes, 1):
        qt = item.metrics["Query_time"]
        examined = item.metrics.get("Rows_examined")
        fingerprint = " ".join(item.fingerprint.split())
        if len(fingerprint) > 100:
            fingerprint = fingerprint[:99] + "…"
        write(
            f"| {rank} | `{item.short_id}` | {units.duration(qt.sum, 'compact')} | {(item.share or 0.0) * 100:.1f} "
            f"| {units.count(item.count, 'compact')} | {units.duration(qt.avg, 'compact')} | {units.duration(qt.p95, 'compact')} "
            f"| {units.count(examined.avg, 'compact') if examined else '-'} |"
            + (f" {finding_ids(item)} |" if rules else "")
            + f" `{_cell(fingerprint)}` |\n"
        )
    for rank, item in enumerate(classes, 1):
        write(f"\n<details><summary>#{rank} <code>{item.id}</code></summary>\n\n")
        for finding in item.findings:
            write(
                f"- {_ICONS.get(finding.severity, '')} **{finding.rule}** "
                f"{finding.severity}: {_cell(finding.message)}\n"
            )
        if item.findings:
            write("\n")
        write("| attribute | sum | min | max | avg | median | p95 | p99 |\n")
        write("|---|--:|--:|--:|--:|--:|--:|--:|\n")
        for name in metric_order(item.metrics):
            metric = item.metrics[name]
            cells = " | ".join(
                figure(name, metric, key)
                for key in ("sum", "min", "max", "avg", "median", "p95", "p99")
            )
            write(f"| {name} | {cells} |\n")
        write("\n")
        for name, values in item.values.items():
            write(f"- {name}: {_cell(top_values(values))}\n")
        if item.servers:
            write(f"- servers: {_cell(top_values(item.servers, 5))}\n")
        if item.top_hosts:
            write(f"- top hosts by time: {_cell(top_hosts_line(item))}\n")
        runs = item.runs
        if runs and runs.runs:
            write(
                f"- back-to-back: {runs.repeated_calls:,} of {runs.calls:,} calls "
                f"in runs (longest {runs.longest_run:,}) on "
                f"{runs.connections:,} connections\n"
            )
        tables = item.tables
        if tables and (tables.read or tables.written):
            write(
                f"- tables: read {', '.join(tables.read) or '-'}; "
                f"written {', '.join(tables.written) or '-'}\n"
            )
        sample = item.sample
        if sample:
            where = f" at `{sample.file}:{sample.line}`" if sample.file else ""
            write(f"\nWorst sample ({units.duration(sample.query_time, 'compact')}{where}):\n\n")
            query = sample.query
            if len(query) > 4000:
                query = query[:4000] + " /* … */"
            fence = "````" if "```" in query else "```"
            write(f"{fence}sql\n{query}\n{fence}\n")
            plan = sample.plan_line()
            if plan:
                write(f"\n{plan}\n")
        write("\n</details>\n")
