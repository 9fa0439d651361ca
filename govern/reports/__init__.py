"""Digest reports. Each renders the report model (govern/digest/report.py), so a fresh
digest, a merged one and a saved one print the same way.

* :mod:`govern.reports.text` — tables for a terminal (rich);
* :mod:`govern.reports.markdown` — for CI comments and wikis;
* JSON is the ``govern.digest`` document itself (``govern.output.print_json``);
* :mod:`govern.reports.digest_html` — the HTML page (``--format html``), and the other
  pages people open in a browser: :mod:`govern.reports.compare_html` (``govern digest
  compare``) and :mod:`govern.reports.schedule` (``govern schedule report``), all built with
  ``govern.html`` and ``govern.charts``;
* :mod:`govern.reports.digest_run` — digest (or merge), run the rules, render: what
  ``govern digest`` does, as a library.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from govern import units

if TYPE_CHECKING:  # the report model loads with the text, md and html formats only
    from govern.digest.report import Report, ReportClass, Stat


def figure(name: str, metric: Stat, key: str) -> str:
    """One statistic of a metric, as seconds for times and as a count otherwise."""
    value = getattr(metric, key)
    if value is None:
        return "-"
    if metric.decimal or name.endswith("_time") or name.endswith("_wait"):
        return units.duration(float(value), "compact")
    return units.count(value, "compact")


_FIRST_METRICS = (
    "Query_time",
    "Lock_time",
    "Rows_sent",
    "Rows_examined",
    "Rows_affected",
    "Bytes_sent",
    "Values_rows",
)


def metric_order(metrics: Mapping[str, Any]) -> list[str]:
    """The usual suspects first, the rest by name; Query_length (pt's bytes) left out."""
    first = [name for name in _FIRST_METRICS if name in metrics]
    rest = sorted(name for name in metrics if name not in _FIRST_METRICS and name != "Query_length")
    return first + rest


def top_values(values: dict[str, int], limit: int = 3) -> str:
    """``shop 90%, app 10%`` — the most frequent values of a distribution."""
    total = sum(values.values())
    if not total:
        return "-"
    shown = [
        f"{name or '(none)'} {count * 100 / total:.0f}%"
        for name, count in list(values.items())[:limit]
    ]
    rest = len(values) - limit
    return ", ".join(shown) + (f" (+{rest} more)" if rest > 0 else "")


def top_hosts_line(item: ReportClass) -> str:
    """``db3 41.2s 52% (1,204), db1 …``: a class's costliest hosts over a history store."""
    total = item.total_time
    return ", ".join(
        f"{share.host} {units.duration(share.query_time, 'compact')}"
        f" {share.query_time * 100 / total if total else 0:.0f}% ({share.count:,})"
        for share in item.top_hosts
    )


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 'es' if word.endswith('s') else 's'}"


def rules_lines(report: Report) -> list[str]:
    """What the digest rules found and what they could not run, for the report's head."""
    rules = report.rules
    if rules is None:
        return []
    counts = rules.by_severity
    parts = [_plural(counts[s], s) for s in ("error", "warning", "info") if counts.get(s)]
    line = f"rules: {_plural(rules.findings, 'finding')}"
    if parts:
        line += f" ({', '.join(parts)}) in {_plural(rules.classes, 'class')}"
    if rules.suppressed:
        line += f"; {rules.suppressed:,} suppressed"
    line += f"; target {rules.target}" if rules.target else "; no target"
    lines = [line]
    if not rules.full_log:
        lines.append(f"rules: the log is not complete: {rules.full_log_reason}")
    by_reason: dict[str, list[str]] = {}
    for rule, reason in rules.skipped:
        by_reason.setdefault(reason, []).append(rule)
    lines += [f"not run: {', '.join(ids)} ({reason})" for reason, ids in by_reason.items()]
    lines += [f"rules: {note}" for note in rules.notes]
    return lines


def finding_ids(item: ReportClass) -> str:
    """``BATCH008 QC007``: the rules that found something in a class."""
    return " ".join(dict.fromkeys(f.rule for f in item.findings)) or "-"


def unshown_findings(report: Report, shown: Sequence[ReportClass]) -> int:
    """Findings in classes the report does not show (--top)."""
    if report.rules is None:
        return 0
    return report.rules.findings - sum(len(item.findings) for item in shown)


def summary_lines(report: Report) -> list[str]:
    """The few lines that head every report."""
    totals = report.totals
    names = ", ".join(i.name + (f" ({i.host})" if i.host else "") for i in report.inputs)
    lines = [
        f"{units.plural(report.events, 'event')}, "
        f"{units.plural(totals.classes, 'class', 'classes')}, "
        f"{units.duration(report.total_time, 'compact')} total query time",
        f"inputs: {names}",
    ]
    if report.first_seen:
        span = report.window_seconds
        lines.append(
            f"window: {report.first_seen} .. {report.last_seen}"
            + (f" ({span:,.0f}s)" if span else "")
        )
    skipped = [
        (totals.filtered, "filtered out"),
        (totals.malformed, "malformed (skipped)"),
        (totals.other_events, f"in classes beyond --max-classes {report.max_classes}"),
        (totals.unreported_events, "without Query_time (not reported)"),
    ]
    notes = [f"{count:,} {what}" for count, what in skipped if count]
    if notes:
        lines.append("events " + "; ".join(notes))
    if report.omitted_classes:
        lines.append(f"{report.omitted_classes:,} more classes not shown (--top)")
    return lines
