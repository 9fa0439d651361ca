"""The catalog: stable IDs, and every docstring example run (anti-pattern fires, best practice not)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from govern.cli import cli
from rules.base import Example
from rules.config import RulesConfig
from rules.lint import LintOptions, lint_text
from rules.registry import all_rules, get_rule, select

#: IDs are a contract (suppressions, baselines, configs name them): never renumber.
STABLE_IDS = [
    "QC001",
    "QC002",
    "QC003",
    "QC004",
    "QC005",
    "BATCH001",
    "BATCH002",
    "BATCH003",
    "BATCH004",
    "BATCH005",
    "BATCH006",
    "BATCH007",
    "BATCH008",
    "META001",
    "META002",
    "META003",
]


def _examples() -> list[tuple[str, str, int, Example]]:
    cases = []
    for rule in all_rules():
        for kind, examples in rule.examples().items():
            for number, example in enumerate(examples, start=1):
                cases.append((rule.id, kind, number, example))
    return cases


def test_ids_are_stable_and_unique() -> None:
    assert [rule.id for rule in all_rules()] == STABLE_IDS
    names = [rule.name for rule in all_rules()]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.id)
def test_every_rule_documents_both_sides(rule: type) -> None:
    examples = rule.examples()
    assert examples["Anti-pattern"], f"{rule.id} has no anti-pattern example"
    assert examples["Best practice"], f"{rule.id} has no best-practice example"
    assert rule.summary().endswith(".")


@pytest.mark.parametrize(
    ("rule_id", "kind", "number", "example"),
    _examples(),
    ids=[f"{r}-{k.split()[0].lower()}-{n}" for r, k, n, _ in _examples()],
)
def test_docstring_example(rule_id: str, kind: str, number: int, example: Example) -> None:
    config = RulesConfig(options={rule_id: dict(example.config)})
    report = lint_text(example.sql, LintOptions(target=example.target, config=config))
    mine = [f for f in report.findings if f.rule_id == rule_id]
    if kind == "Anti-pattern":
        assert mine, f"{rule_id} anti-pattern {number} did not fire:\n{example.sql}"
        assert all(f.location.line is not None for f in mine)
    else:
        assert not mine, f"{rule_id} best practice {number} fired: {mine[0].message}"


def test_selection_by_prefix_and_ignore() -> None:
    assert [r.id for r in select(["QC00"], ["QC005"])] == ["QC001", "QC002", "QC003", "QC004"]
    assert [r.id for r in select(["meta"], [])] == ["META001", "META002", "META003"]
    assert get_rule("batch004") is not None and get_rule("XX001") is None


def test_rules_command_lists_and_explains() -> None:
    runner = CliRunner()
    listing = runner.invoke(cli, ["rules", "--format", "json"])
    assert listing.exit_code == 0
    import json

    document = json.loads(listing.output)
    assert document["schema"] == "govern.rules" and document["schema_version"] == 1
    assert [r["id"] for r in document["rules"]] == STABLE_IDS
    qc005 = next(r for r in document["rules"] if r["id"] == "QC005")
    assert {o["name"] for o in qc005["options"]} == {"tables", "demand"}
    explained = runner.invoke(cli, ["rules", "explain", "qc001"])
    assert explained.exit_code == 0
    assert "QC001 sql-cache-unsafe" in explained.output
    assert "**Anti-pattern**" in explained.output and "govern: ignore[QC001]" in explained.output
    unknown = runner.invoke(cli, ["rules", "explain", "QC999"])
    assert unknown.exit_code == 2 and "unknown rule 'QC999'" in unknown.output
