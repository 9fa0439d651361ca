"""Lint report renderers: text (people), json (scripts), github (Actions annotations).

SARIF (code-scanning upload) lives in rules/sarif.py. Each renderer returns a
string; the command writes it. The JSON document is ``govern.lint`` v1
(docs/json.md).
"""

from __future__ import annotations

import json

import click

from govern.rules.lint import LintReport
from govern.rules.model import Severity

_COLORS = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def render_json(report: LintReport) -> str:
    return json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n"


def render_text(report: LintReport, color: bool = False) -> str:
    """``path:line:col: ID severity: message`` lines, then a summary."""
    lines = []
    for finding in report.findings:
        severity = finding.severity.value
        rule = finding.rule_id
        if color:
            severity = click.style(severity, fg=_COLORS[finding.severity])
            rule = click.style(rule, bold=True)
        lines.append(f"{finding.location}: {rule} {severity}: {finding.message}")
    lines.extend(summary_lines(report))
    return "\n".join(lines) + "\n"


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def summary_lines(report: LintReport) -> list[str]:
    counts = report.counts()
    parts = [_plural(counts[s.value], s.value) for s in reversed(Severity) if counts[s.value]]
    found = _plural(len(report.findings), "finding")
    detail = f" ({', '.join(parts)})" if parts else ""
    with_findings = len({f.location.path for f in report.findings})
    lines = [
        f"{found}{detail} in {with_findings:,} of {_plural(len(report.files), 'file')}, "
        f"{_plural(report.statements, 'statement')}, {report.elapsed:.2f} s"
        + (f"; target {', '.join(report.targets)}" if report.targets else "; no target")
    ]
    hidden = []
    if report.suppressed:
        hidden.append(f"{report.suppressed:,} suppressed by comments or config")
    if report.baselined:
        hidden.append(f"{report.baselined:,} in the baseline")
    if report.below_threshold:
        hidden.append(f"{report.below_threshold:,} below --severity {report.threshold.value}")
    if hidden:
        lines.append("not shown: " + "; ".join(hidden))
    if report.skipped_files:
        lines.append(
            f"not linted: {_plural(report.skipped_files, 'file')} (exclude or skip in the config)"
        )
    if report.baseline_written is not None:
        lines.append(
            f"baseline {report.baseline} written: {_plural(report.baseline_written, 'finding')}"
        )
    by_reason: dict[str, list[str]] = {}
    for rule_id, reason in sorted(report.skipped_rules.items()):
        by_reason.setdefault(reason, []).append(rule_id)
    for reason, ids in by_reason.items():
        lines.append(f"not run: {', '.join(ids)} ({reason})")
    return lines


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(report: LintReport) -> str:
    """GitHub Actions workflow commands: one annotation per finding on the changed file."""
    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
    lines = []
    for finding in report.findings:
        loc = finding.location
        names = {"line": "line", "column": "col", "end_line": "endLine", "end_column": "endColumn"}
        props = [f"file={_escape_property(loc.path or '<stdin>')}"]
        props += [f"{names[key]}={value}" for key, value in loc.span().items()]
        props.append(f"title={_escape_property(f'{finding.rule_id} {finding.rule_name}')}")
        lines.append(
            f"::{level[finding.severity]} {','.join(props)}::{_escape_data(finding.message)}"
        )
    return "".join(line + "\n" for line in lines)
