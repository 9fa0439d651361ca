"""Realistic SQL with expected findings; the shipped examples say truthfully what fires."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from govern.rules.lint import LintOptions, lint_paths, lint_text
from govern.rules.sql.split import parse_script
from tests.paths import REPO, TESTS, require_corpus

CORPUS = TESTS / "corpus" / "sql"
EXAMPLES = REPO / "examples" / "sql"


def test_corpus_findings_match_expected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CORPUS)
    expected = json.loads((CORPUS / "expected.json").read_text())
    report = lint_paths(["."])
    got: dict[str, list[str]] = {path: [] for path in expected}
    for finding in report.findings:
        path = Path(finding.location.path or "").as_posix()
        got.setdefault(path, []).append(f"{finding.location.line}:{finding.rule_id}")
    assert got == expected
    # the two ignore[QC005] comments in app/queries.sql and per-path-ignores of migrations/V000*
    assert report.suppressed == 3
    assert report.targets == ["mariadb-10.11"]


_CLAIM = re.compile(r"^-- (fires|passes)((?: [A-Z]+\d{3}(?: and [A-Z]+\d{3})*)?)", re.M)


def _claims(path: Path) -> list[tuple[str, list[str], tuple[int, int]]]:
    """(fires|passes, rule IDs, lines of the statement after the comment) per claim."""
    text = path.read_text()
    statements = parse_script(text, str(path)).statements
    claims = []
    for match in _CLAIM.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        following = next(s for s in statements if s.lines[0] > line)
        ids = [i for i in match.group(2).replace(" and ", " ").split() if i]
        claims.append((match.group(1), ids, following.lines))
    return claims


@pytest.mark.parametrize("path", sorted(EXAMPLES.rglob("*.sql")), ids=lambda p: p.name)
def test_examples_fire_and_pass_as_their_comments_say(path: Path) -> None:
    report = lint_paths([str(path)])
    found = [(f.location.line or 0, f.rule_id) for f in report.findings]
    claims = _claims(path)
    assert claims, f"{path} makes no claims"
    for verdict, ids, (first, last) in claims:
        here = {rule for line, rule in found if first <= line <= last}
        if verdict == "fires":
            assert set(ids) <= here, f"{path.name}:{first}: expected {ids}, got {sorted(here)}"
        else:
            unexpected = here & set(ids) if ids else here
            assert not unexpected, (
                f"{path.name}:{first}: expected no {ids or 'finding'}, got {here}"
            )


def test_examples_show_every_rule_firing() -> None:
    fired = {
        rule for path in EXAMPLES.rglob("*.sql") for _, ids, _ in _claims(path) for rule in ids
    }
    from govern.rules.model import Need
    from govern.rules.registry import all_rules

    # Rules that need digest statistics fire on examples/digest (tests/digest/test_digest_rules_cli.py).
    missing = {r.id for r in all_rules() if Need.DIGEST not in r.needs} - fired
    assert not missing, f"no example fires {sorted(missing)}"


def _slow_log_statements(path: Path) -> list[str]:
    """Statements of a MariaDB slow log (header, banner, use and SET timestamp lines dropped)."""
    text = path.read_bytes().decode("utf-8", "replace")
    statements: list[str] = []
    current: list[str] = []
    for line in text.split("\n"):
        if line.startswith(("#", "/usr/sbin/", "Tcp port", "Time\t")):
            if current:
                statements.append("\n".join(current))
                current = []
        elif line.strip() and not line.startswith(("SET timestamp=", "use ")):
            current.append(line)
    if current:
        statements.append("\n".join(current))
    return [s if s.rstrip().endswith(";") else s + ";" for s in statements]


def test_no_false_parse_errors_on_real_traffic() -> None:
    """Every statement MariaDB ran in the lab workload reads cleanly; only its typos do not."""
    log = require_corpus() / "mariadb" / "mixed-workload.log"
    statements = _slow_log_statements(log)
    assert len(statements) > 10_000
    report = lint_text("\n".join(statements), LintOptions(target="mariadb-10.11"))
    assert report.statements == len(statements)
    parse_errors = [f for f in report.findings if f.rule_id == "META001"]
    assert parse_errors and all(f.message == "unknown statement 'SELEC'" for f in parse_errors)
    assert {f.rule_id for f in report.findings} == {"META001"}
