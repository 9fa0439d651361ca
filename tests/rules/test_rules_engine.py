"""The engine as the digest rules use it: one subject with a class ID."""

from __future__ import annotations

from govern.rules.base import Context
from govern.rules.config import RulesConfig
from govern.rules.engine import build_ruleset, check_statement
from govern.rules.sql.statement import Statement
from govern.rules.target import parse_target

SAMPLE = "SELECT SQL_CACHE id, NOW() FROM orders WHERE id = 5"


def _run(sample: str, config: RulesConfig, class_id: str = "3A99CC42AEDCCFCD") -> list:
    target = parse_target("mariadb-10.11")
    ruleset = build_ruleset(config, has_target=True, digest=True)
    subject = Statement.from_sql(sample, class_id=class_id, stats={"calls": 1200})
    result = check_statement(subject, ruleset, Context(target, "mariadb-10.11"), config)
    return result.findings


def test_a_digest_class_gets_the_static_rules_with_its_class_id() -> None:
    (finding,) = _run(SAMPLE, RulesConfig())
    assert finding.rule_id == "QC001" and finding.location.class_id == "3A99CC42AEDCCFCD"
    assert finding.location.path is None and str(finding.location) == "class 3A99CC42AEDCCFCD"
    assert finding.to_json()["class_id"] == "3A99CC42AEDCCFCD"


def test_per_class_ignores_and_comments_in_the_sample() -> None:
    config = RulesConfig(per_class_ignores={"3A99CC42AEDCCFCD": ["QC"]})
    assert _run(SAMPLE, config) == []
    assert [f.rule_id for f in _run(SAMPLE, config, class_id="OTHER")] == ["QC001"]
    tagged = "/* govern: ignore[QC001] */ " + SAMPLE
    assert _run(tagged, RulesConfig()) == []


def test_which_rules_run_on_files_and_on_digests() -> None:
    digest = build_ruleset(RulesConfig(), has_target=False, digest=True)
    assert {"BATCH008", "BATCH009", "QC006", "QC007", "QC001"} <= digest.ids  # script rules too
    assert "QC003" in digest.skipped
    files = build_ruleset(RulesConfig(), has_target=False)
    # Digest-only rules do not apply to files: neither run nor listed as not run.
    assert not {"BATCH009", "QC006", "QC007"} & (files.ids | set(files.skipped))
    assert "BATCH008" in files.ids
    partial = build_ruleset(RulesConfig(), has_target=False, digest=True, full_log=False)
    assert "BATCH009" in partial.skipped and "QC006" in partial.skipped
    assert "long_query_time = 0" in partial.skipped["QC006"]
    assert "QC007" in partial.ids and "BATCH008" in partial.ids


def test_per_class_ignores_take_either_query_id_form() -> None:
    full = "E169244287FDA87DA9E9DA544BF1B3F3"
    for key in (full, full[-16:], full.lower()):
        config = RulesConfig(per_class_ignores={key: ["QC001"]})
        assert _run(SAMPLE, config, class_id=full) == []
