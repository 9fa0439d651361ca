"""The terminal report: a profile of the top classes, then each class in detail.

Modelled on pt-query-digest's report (profile, then one block per class) but
with the facts govern adds: percentiles from a mergeable sketch, servers,
back-to-back runs on one connection, rows per statement, tables touched, and
the rules' findings next to each class.
"""

from __future__ import annotations

import sys
from typing import IO, Any, Literal

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

_BARS = " ▁▂▃▄▅▆▇█"
_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def render(report: Report, stream: IO[str] | None = None, top: int | None = 20) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    target = stream or sys.stdout
    piped = not getattr(target, "isatty", lambda: False)()
    out = Console(file=target, highlight=False, soft_wrap=False, width=160 if piped else None)
    classes = list(report.classes[: top if top is not None else None])
    out.print("[bold]govern digest[/bold]")
    for line in summary_lines(report) + rules_lines(report):
        out.print(f"  {escape(line)}")
    for bad in report.malformed:
        out.print(f"  [yellow]malformed[/yellow] {bad.file}:{bad.line}: {bad.reason}")
    if not classes:
        out.print("\nno query classes")
        return
    profile = Table(title="profile", title_justify="left", show_edge=False, pad_edge=False)
    columns: tuple[tuple[str, Literal["left", "right"]], ...] = (
        ("#", "right"),
        ("query ID", "left"),
        ("time", "right"),
        ("%", "right"),
        ("calls", "right"),
        ("avg", "right"),
        ("p95", "right"),
        ("rows exam.", "right"),
        *((("findings", "left"),) if report.rules else ()),
        ("fingerprint", "left"),
    )
    for name, justify in columns:
        profile.add_column(name, justify=justify, no_wrap=True, overflow="ellipsis")
    # The findings column takes its room from the fingerprint, not from the figures.
    findings_width = max([8, *(len(finding_ids(item)) for item in classes)])
    fingerprint_width = 80 - (findings_width + 3 if report.rules else 0)
    for rank, item in enumerate(classes, 1):
        qt = item.metrics["Query_time"]
        examined = item.metrics.get("Rows_examined")
        profile.add_row(
            str(rank),
            item.short_id,
            units.duration(qt.sum, "compact"),
            f"{_share(item) * 100:.1f}",
            units.count(item.count, "compact"),
            units.duration(qt.avg, "compact"),
            units.duration(qt.p95, "compact"),
            units.count(examined.avg, "compact") if examined else "-",
            *((finding_ids(item),) if report.rules else ()),
            escape(_short(item.fingerprint, fingerprint_width)),
        )
    out.print()
    out.print(profile)
    for rank, item in enumerate(classes, 1):
        out.print()
        _render_class(out, rank, item)
    hidden = unshown_findings(report, classes)
    if hidden:
        out.print()
        out.print(f"{hidden:,} more findings in classes not shown (--top)")
    other = report.other
    if other:
        query_time = other.metrics.get("Query_time")
        out.print()
        out.print(
            f"[bold]other[/bold]: {other.count:,} events in classes beyond --max-classes, "
            f"{units.duration(query_time.sum, 'compact') if query_time else '-'}"
        )


def _short(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _share(item: ReportClass) -> float:
    return item.share or 0.0


def _render_class(out: Any, rank: int, item: ReportClass) -> None:
    from rich.markup import escape
    from rich.table import Table

    out.print(f"[bold]# {rank}  {item.id}[/bold]  ({_share(item) * 100:.1f}% of query time)")
    out.print(f"  {escape(_short(item.fingerprint, 400))}")
    rate = f", {units.count(item.qps, 'significant')}/s" if item.qps else ""
    seen = f", seen {item.first_seen} .. {item.last_seen}" if item.first_seen else ""
    out.print(f"  {item.count:,} calls{rate}{seen}")
    table = Table(show_edge=False, pad_edge=False, box=None)
    table.add_column("  attribute")
    for column in ("sum", "min", "max", "avg", "median", "p95", "p99"):
        table.add_column(column, justify="right")
    metrics = item.metrics
    for name in metric_order(metrics):
        metric = metrics[name]
        table.add_row(
            f"  {name}",
            *(
                figure(name, metric, key)
                for key in ("sum", "min", "max", "avg", "median", "p95", "p99")
            ),
        )
    out.print(table)
    flags = [
        f"{name} {flag.yes * 100 / flag.count:.0f}%"
        for name, flag in item.flags.items()
        if flag.count
    ]
    if flags:
        out.print(f"  flags: {', '.join(flags)}")
    spread = [
        f"{name}: {escape(top_values(values))}" for name, values in item.values.items() if values
    ]
    if item.servers:
        spread.append(f"servers: {escape(top_values(item.servers, 5))}")
    if spread:
        out.print("  " + "   ".join(spread))
    if item.top_hosts:
        out.print(f"  top hosts by time: {escape(top_hosts_line(item))}")
    out.print("  Query_time: " + _sparkline(item.histogram))
    out.print("  " + _sequence(item))
    tables = item.tables
    if tables and (tables.read or tables.written):
        out.print(
            f"  tables: read {', '.join(tables.read) or '-'}; written {', '.join(tables.written) or '-'}"
        )
    for finding in item.findings:
        style = _SEVERITY_STYLE.get(finding.severity, "")
        out.print(
            f"  [{style}]{finding.rule} {finding.severity}[/{style}]: {escape(finding.message)}"
        )
    sample = item.sample
    if sample:
        where = f" at {sample.file}:{sample.line}" if sample.file else ""
        when = f", {sample.ts}" if sample.ts else ""
        out.print(f"  worst sample ({units.duration(sample.query_time, 'compact')}{where}{when}):")
        query = sample.query + (" /* … truncated */" if sample.truncated else "")
        out.print("    " + escape(_short(query, 2000)))
        plan = sample.plan_line()
        if plan:
            out.print("    " + escape(plan))


def _sparkline(histogram: list[tuple[str, int]]) -> str:
    top = max((count for _, count in histogram), default=0) or 1
    cells = []
    for label, count in histogram:
        bar = _BARS[max(1, round(count * (len(_BARS) - 1) / top))] if count else "·"
        cells.append(f"{label} {bar}")
    return "  ".join(cells)


def _sequence(item: ReportClass) -> str:
    runs = item.runs
    parts = []
    if runs and runs.runs:
        connections = f"{runs.connections:,}" + ("" if runs.connections_exact else "~")
        parts.append(
            f"runs: {runs.calls:,} calls in {runs.runs:,} runs on {connections} "
            f"connection{'' if runs.connections == 1 else 's'}, "
            f"{runs.repeated_calls:,} back-to-back (longest {runs.longest_run:,}, "
            f"mean {runs.mean_run or 0.0:.1f})"
        )
    rows = item.rows_per_statement
    if rows:
        parts.append(f"rows/statement {rows.avg:g} ({rows.source})")
    overhead = item.overhead
    if (
        overhead
        and overhead.per_statement is not None
        and overhead.per_row is not None
        and item.tables
        and item.tables.written
    ):
        parts.append(
            f"fit: {units.duration(max(overhead.per_statement, 0.0), 'compact')}/statement + "
            f"{units.duration(max(overhead.per_row, 0.0), 'compact')}/row"
        )
    return "; ".join(parts) if parts else "runs: no connection ids in this log"
