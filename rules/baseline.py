"""Baseline files: record today's findings so CI fails only on new ones.

An entry is (rule, path relative to the baseline file, fingerprint) with a count.
The fingerprint hashes the rule and the statement's text with whitespace
collapsed, so moving a statement or reindenting it keeps it baselined while
editing it makes its findings new again. Document: ``govern.lint-baseline`` v1.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from govern.errors import ConfigError
from govern.rules.model import Finding

SCHEMA = "govern.lint-baseline"
SCHEMA_VERSION = 1

Key = tuple[str, str, str]


def _relative(finding: Finding, base: Path) -> str:
    path = finding.location.path or "<stdin>"
    if path.startswith("<"):
        return path
    return Path(os.path.relpath(Path(path).resolve(), base.resolve())).as_posix()


def key(finding: Finding, base: Path) -> Key:
    return finding.rule_id, _relative(finding, base), finding.fingerprint


def write_baseline(path: Path, findings: list[Finding]) -> int:
    """Write the baseline; returns the number of findings it records."""
    base = path.parent
    counts = Counter(key(f, base) for f in findings)
    messages = {key(f, base): f.message for f in findings}
    entries = [
        {
            "rule": rule,
            "path": rel,
            "fingerprint": fp,
            "count": n,
            "message": messages[(rule, rel, fp)],
        }
        for (rule, rel, fp), n in sorted(counts.items())
    ]
    document = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "findings": entries}
    try:
        path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    return sum(counts.values())


def load_baseline(path: Path) -> Counter[Key]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: baseline file not found (create it with --write-baseline)"
        ) from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not a govern baseline ({exc})") from None
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise ConfigError(f"{path}: not a govern baseline (schema {SCHEMA!r} expected)")
    if document.get("schema_version") != SCHEMA_VERSION:
        raise ConfigError(
            f"{path}: baseline schema_version {document.get('schema_version')!r} unsupported"
        )
    counts: Counter[Key] = Counter()
    for index, entry in enumerate(document.get("findings", [])):
        try:
            counts[(str(entry["rule"]), str(entry["path"]), str(entry["fingerprint"]))] += int(
                entry.get("count", 1)
            )
        except (KeyError, TypeError, ValueError):
            raise ConfigError(f"{path}: findings[{index}] is malformed") from None
    return counts


def split_new(
    findings: list[Finding], baseline: Counter[Key], base: Path
) -> tuple[list[Finding], int]:
    """(findings not covered by the baseline, number covered)."""
    remaining = Counter(baseline)
    new: list[Finding] = []
    matched = 0
    for finding in findings:
        k = key(finding, base)
        if remaining[k] > 0:
            remaining[k] -= 1
            matched += 1
        else:
            new.append(finding)
    return new, matched
