"""The catalog: stable IDs, and every docstring example run (anti-pattern fires, best practice not).

SQL examples go through ``govern lint``'s pipeline; workload examples (``-- events:``
lines, rules/eventlog.py) become slow logs that go through the digest engine and the
digest rules.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from govern.cli import cli
from govern.digest.document import to_document
from govern.digest.runner import digest_bytes
from govern.rules.base import Example
from govern.rules.config import PathRule, RulesConfig
from govern.rules.digest import DigestRuleOptions, check_document
from govern.rules.eventlog import is_event_example, slow_log
from govern.rules.lint import LintOptions, lint_text
from govern.rules.model import Finding
from govern.rules.registry import all_rules, get_rule, select

#: IDs are a contract (suppressions, baselines, configs name them): never renumber.
STABLE_IDS = [
    "QC001",
    "QC002",
    "QC003",
    "QC004",
    "QC005",
    "QC006",
    "QC007",
    "BATCH001",
    "BATCH002",
    "BATCH003",
    "BATCH004",
    "BATCH005",
    "BATCH006",
    "BATCH007",
    "BATCH008",
    "BATCH009",
    "BATCH010",
    "BATCH011",
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


def test_each_rule_lives_in_the_module_its_id_names() -> None:
    """QC001 is govern.rules.catalog.qc001, and that module defines no other rule."""
    import inspect

    from govern.rules.base import Rule

    assert [rule.__module__ for rule in all_rules()] == [
        f"govern.rules.catalog.{rule_id.lower()}" for rule_id in STABLE_IDS
    ]
    for rule in all_rules():
        module = inspect.getmodule(rule)
        defined = [
            value
            for value in vars(module).values()
            if inspect.isclass(value)
            and issubclass(value, Rule)
            and value.__module__ == module.__name__
        ]
        assert defined == [rule], module


def test_catalog_files_are_all_listed() -> None:
    """A rule module missing from the explicit list would never run: none is."""
    from govern.rules import catalog

    folder = Path(catalog.__file__).parent
    modules = sorted(p.stem for p in folder.glob("*.py") if any(c.isdigit() for c in p.stem))
    assert modules == sorted(rule_id.lower() for rule_id in STABLE_IDS)


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
    jobs = [PathRule("*", batch_job=True)] if example.batch_job else []
    config = RulesConfig(options={rule_id: dict(example.config)}, paths=jobs)
    mine: list[Finding]
    if is_event_example(example.sql):
        document = to_document(digest_bytes(slow_log(example.sql)))
        report = check_document(document, DigestRuleOptions(target=example.target, config=config))
        assert rule_id not in report.skipped, report.skipped[rule_id]
        mine = [f for f in report.findings if f.rule_id == rule_id]
        assert all(f.location.class_id for f in mine)
    else:
        options = LintOptions(target=example.target, config=config)
        lint = lint_text(example.sql, options, path="example.sql")
        mine = [f for f in lint.findings if f.rule_id == rule_id]
        assert all(f.location.line is not None for f in mine)
    if kind == "Anti-pattern":
        assert mine, f"{rule_id} anti-pattern {number} did not fire:\n{example.sql}"
    else:
        assert not mine, f"{rule_id} best practice {number} fired: {mine[0].message}"


def test_selection_by_prefix_and_ignore() -> None:
    assert [r.id for r in select(["QC00"], ["QC005", "QC006"])] == [
        "QC001",
        "QC002",
        "QC003",
        "QC004",
        "QC007",
    ]
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
