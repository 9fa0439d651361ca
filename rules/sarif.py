"""SARIF 2.1.0 output, for GitHub code scanning and other SARIF viewers.

Validated against the OASIS schema in tests/rules/test_lint_formats.py. Every catalog
rule is described in ``tool.driver.rules`` (so viewers can show its help);
results carry ``partialFingerprints`` (the baseline fingerprint) so uploads
track a finding across commits.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from govern import __version__
from govern.rules.lint import LintReport
from govern.rules.model import Severity
from govern.rules.registry import all_rules

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _uri(path: str | None) -> str:
    if not path or path.startswith("<"):
        return "stdin"
    return quote(path.replace("\\", "/"))


def sarif_document(report: LintReport) -> dict[str, Any]:
    rules = all_rules()
    index = {rule.id: i for i, rule in enumerate(rules)}
    descriptors = [
        {
            "id": rule.id,
            "name": rule.name,
            "shortDescription": {"text": rule.summary()},
            "fullDescription": {"text": rule.documentation() or rule.summary()},
            "help": {"text": f"govern rules explain {rule.id}\n\n{rule.documentation()}"},
            "defaultConfiguration": {"level": _LEVELS[rule.severity]},
            "properties": {
                "needs": sorted(n.value for n in rule.needs),
                "tags": ["sql", "mysql", "mariadb"],
            },
        }
        for rule in rules
    ]
    results = []
    for finding in report.findings:
        loc = finding.location
        names = {"line": "startLine", "column": "startColumn", "end_line": "endLine"}
        names["end_column"] = "endColumn"
        region = {names[key]: value for key, value in loc.span().items()}
        physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(loc.path)}}
        if region:
            physical["region"] = region
        result: dict[str, Any] = {
            "ruleId": finding.rule_id,
            "level": _LEVELS[finding.severity],
            "message": {"text": finding.message},
            "locations": [{"physicalLocation": physical}],
            "partialFingerprints": {"governFingerprint/v1": finding.fingerprint},
        }
        if finding.rule_id in index:
            result["ruleIndex"] = index[finding.rule_id]
        if finding.evidence:
            result["properties"] = {"evidence": finding.evidence}
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "govern",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": descriptors,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "invocations": [{"executionSuccessful": True}],
                "results": results,
                "properties": {
                    "targets": report.targets,
                    "statements": report.statements,
                    "suppressed": report.suppressed,
                    "baselined": report.baselined,
                    "rulesSkipped": report.skipped_rules,
                },
            }
        ],
    }


def render_sarif(report: LintReport) -> str:
    return json.dumps(sarif_document(report), indent=2, ensure_ascii=False) + "\n"
