"""``govern digest`` with its rules, on logs that need no server: the shipped example
(recorded from MariaDB by examples/digest/record.py), and small logs written as
event scripts (rules/eventlog.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from govern.digest.document import to_document
from govern.digest.runner import digest_bytes
from govern.rules.config import RulesConfig
from govern.rules.digest import DigestRuleOptions, check_document
from govern.rules.eventlog import slow_log
from govern.rules.model import Need
from govern.rules.registry import all_rules
from tests.paths import REPO

EXAMPLE = REPO / "examples" / "digest" / "rules-slow.log.gz"


def govern(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    # PYTHONPATH: from another working directory, still this checkout's govern
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "govern", *args], capture_output=True, text=True, cwd=cwd, env=env
    )


def digest_json(*args: str, cwd: Path | None = None) -> dict[str, Any]:
    proc = govern("digest", "--format", "json", *args, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def fired(document: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Rule ID -> the classes it fired on."""
    found: dict[str, list[dict[str, Any]]] = {}
    for item in document["classes"]:
        for finding in item["findings"]:
            found.setdefault(finding["rule"], []).append(item)
    return found


def write_log(path: Path, script: str) -> Path:
    path.write_bytes(slow_log(script))
    return path


def test_the_example_log_shows_every_digest_rule() -> None:
    document = digest_json(str(EXAMPLE), "--target", "mariadb-10.11")
    digest_rules = {r.id for r in all_rules() if Need.DIGEST in r.needs} | {"BATCH008"}
    found = fired(document)
    assert digest_rules <= set(found), f"not shown: {sorted(digest_rules - set(found))}"
    fingerprints = {rule: {c["fingerprint"] for c in items} for rule, items in found.items()}
    assert "insert into clicks (user_id, kind, at) values(?+)" in fingerprints["BATCH008"]
    assert fingerprints["BATCH009"] == {"select id, name, price from products where id = ?"}
    assert fingerprints["QC006"] == {"select orders, revenue from daily_totals where day = ?"}
    assert fingerprints["QC007"] == {"select sql_cache status, n from live_orders where id = ?"}
    assert fingerprints["BATCH003"] == {
        "insert into clicks_archive (id, user_id, kind, at) values(?+)"
    }
    summary = document["rules"]["summary"]
    assert summary["findings"] == sum(len(c["findings"]) for c in document["classes"])


def test_rules_document_shape_and_no_rules() -> None:
    document = digest_json(str(EXAMPLE))
    assert set(document["rules"]) == {
        "target", "config", "full_log", "full_log_reason", "rules_run", "rules_skipped",
        "summary", "fail_on", "tables", "notes",
    }  # fmt: skip
    finding = next(f for c in document["classes"] for f in c["findings"])
    assert set(finding) == {
        "rule", "name", "severity", "message", "path", "line", "column", "end_line",
        "end_column", "class_id", "evidence", "fingerprint",
    }  # fmt: skip
    assert document["rules"]["target"] is None
    assert "QC003" in {s["rule"] for s in document["rules"]["rules_skipped"]}
    off = digest_json(str(EXAMPLE), "--no-rules")
    assert off["rules"] is None and all(c["findings"] == [] for c in off["classes"])


def test_top_lists_fewer_classes_but_counts_every_finding() -> None:
    everything = digest_json(str(EXAMPLE))
    top = digest_json(str(EXAMPLE), "--top", "2")
    assert len(top["classes"]) == 2 and top["options"]["top"] == 2
    assert top["omitted_classes"] == len(everything["classes"]) - 2
    assert top["rules"]["summary"] == everything["rules"]["summary"]
    text = govern("digest", str(EXAMPLE), "--top", "1")
    assert "more findings in classes not shown (--top)" in text.stdout


def test_fail_on_and_its_usage_errors(tmp_path: Path) -> None:
    assert govern("digest", str(EXAMPLE), "--fail-on", "warning").returncode == 1
    assert govern("digest", str(EXAMPLE), "--fail-on", "error").returncode == 0
    assert govern("digest", str(EXAMPLE), "--fail-on", "info", "--select", "QC006").returncode == 1
    for args, message in (
        (("--no-rules", "--fail-on", "warning"), "--fail-on has no effect with --no-rules"),
        (("--select", "XX999"), "--select: unknown rule 'XX999'"),
        (("--target", "oracle-19"), "--target: unknown target 'oracle-19'"),
        (("--fail-on", "fatal"), "Invalid value for '--fail-on'"),
    ):
        proc = govern("digest", str(EXAMPLE), *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert message in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "govern.toml").write_text('[rules]\nper-class-ignores = { "nope" = ["QC001"] }\n')
    proc = govern("digest", str(EXAMPLE), cwd=tmp_path)
    assert proc.returncode == 2
    # the config is read once the log is digested: the line saying so, then the error
    digested, error = proc.stderr.splitlines()
    assert digested.startswith("govern: digested ")
    assert error.startswith("govern: error: govern.toml: [rules] per-class-ignores")
    assert "'nope' is not a query ID" in error


def test_config_selection_and_options_apply(tmp_path: Path) -> None:
    config = tmp_path / "team.toml"
    config.write_text(
        '[rules]\nselect = ["BATCH", "QC"]\nignore = ["QC006"]\n'
        '[rules.BATCH008]\nmin-run = 400\nseverity = "error"\n'
    )
    document = digest_json(str(EXAMPLE), "--config", str(config))
    found = fired(document)
    assert "QC006" not in found and "QC007" in found
    # min-run 400: the 300 back-to-back INSERTs no longer count; the 1,200 UPDATEs still do
    # (1,000+ single-row calls), now as errors.
    batch = [f for c in document["classes"] for f in c["findings"] if f["rule"] == "BATCH008"]
    assert [f["evidence"]["calls"] for f in batch] == [1200]
    assert batch[0]["severity"] == "error"
    assert (
        govern("digest", str(EXAMPLE), "--config", str(config), "--fail-on", "error").returncode
        == 1
    )


def test_merge_runs_the_rules_again(tmp_path: Path) -> None:
    saved = tmp_path / "a.json"
    saved.write_text(govern("digest", "--format", "json", str(EXAMPLE)).stdout)
    merged = json.loads(
        govern("digest", "merge", "--format", "json", str(saved), str(saved)).stdout
    )
    point = next(c for c in merged["classes"] if "from products where id = ?" in c["fingerprint"])
    assert point["count"] == 720
    finding = next(f for f in point["findings"] if f["rule"] == "BATCH009")
    assert finding["evidence"]["runs"] == 60
    proc = govern("digest", "merge", str(saved), "--fail-on", "warning", "--format", "md")
    assert proc.returncode == 1 and "### Findings" in proc.stdout


INCOMPLETE = """
-- events: {connection = 7, times = 1200, query_time = 1.2}
INSERT INTO events (user_id, type) VALUES ({n}, 'view');
-- repeat: 20
-- events: {connection = 3, query_time = 1.5, rows = 12, examined = 12}
SELECT id, product_id FROM order_lines WHERE order_id = {n};
-- events: {connection = 3, times = 12, query_time = 1.1}
SELECT id, name, price FROM products WHERE id = {n};
-- end
"""


def test_a_log_cut_by_long_query_time_sets_sequence_rules_aside(tmp_path: Path) -> None:
    log = write_log(tmp_path / "slow.log", INCOMPLETE)
    document = digest_json(str(log))
    rules = document["rules"]
    assert rules["full_log"] is False
    assert "fastest statement took 1.1 s" in rules["full_log_reason"]
    skipped = {s["rule"]: s["reason"] for s in rules["rules_skipped"]}
    assert "long_query_time = 0" in skipped["BATCH009"] and "QC006" in skipped
    found = fired(document)
    assert "BATCH009" not in found
    # BATCH008 still counts 1,000+ single-row calls, but claims no run.
    (finding,) = [f for c in found["BATCH008"] for f in c["findings"] if f["rule"] == "BATCH008"]
    assert finding["evidence"]["runs"] == 0 and "runs unknown" in finding["message"]
    text = govern("digest", str(log)).stdout
    assert "rules: the log is not complete: the fastest statement took 1.1 s" in text
    assert "not run: BATCH009, QC006 (needs a log of every statement" in text


def test_a_filter_that_cuts_sequences_sets_them_aside(tmp_path: Path) -> None:
    document = digest_json(str(EXAMPLE), "--filter", "fingerprint~products")
    assert document["rules"]["full_log"] is False
    assert "--filter fingerprint~products" in document["rules"]["full_log_reason"]


BIG_AND_SLOW = """
-- events: {query_time = 0.0004, rows = 2}
INSERT INTO notes (id, note) VALUES (1, 'a'), (2, 'b');
-- events: {query_time = 0.002, rows = 1500}
INSERT INTO notes (id, note) VALUES %s;
-- events: {query_time = 0.09, rows = 2}
INSERT INTO notes (id, note) VALUES (3, 'c'), (4, 'd');
"""


def _document(script: str, **options: Any) -> dict[str, Any]:
    document = to_document(digest_bytes(slow_log(script)))
    check_document(document, DigestRuleOptions(**options)).annotate(document)
    return document


def test_oversized_batches_are_judged_by_the_largest_statement_not_the_sample() -> None:
    rows = ", ".join(f"({n}, 'note number {n}')" for n in range(5, 1505))
    config = RulesConfig(options={"BATCH002": {"max-allowed-packet": 40_000}})
    document = _document(BIG_AND_SLOW.replace("%s", rows), config=config)
    (item,) = document["classes"]
    assert item["sample"]["query"].endswith("(4, 'd')")  # the slowest is small
    by_rule = {f["rule"]: f for f in item["findings"]}
    rows_finding = by_rule["BATCH003"]
    assert (
        rows_finding["evidence"]["rows"] == 1500
        and rows_finding["evidence"]["statements_above"] == 1
    )
    assert rows_finding["message"].startswith("up to 1,500 rows per INSERT; 1 of 3 statements")
    packet = by_rule["BATCH002"]
    assert packet["evidence"]["bytes"] == item["metrics"]["Query_length"]["max"] > 20_000
    assert packet["evidence"]["statements_above"] == 1 and packet["evidence"]["calls"] == 3


SAMPLE_A = """
-- events: {connection = 1, times = 30}
INSERT INTO events (user_id) VALUES ({n});
-- events: {connection = 1, query_time = 0.01}
INSERT INTO events (user_id) VALUES (999);
"""


def test_finding_fingerprints_follow_the_class_not_the_sample() -> None:
    first = _document(SAMPLE_A)
    second = _document(SAMPLE_A.replace("999", "12345"))
    prints = [
        [f["fingerprint"] for c in d["classes"] for f in c["findings"]] for d in (first, second)
    ]
    assert prints[0] and prints[0] == prints[1]
    assert first["classes"][0]["sample"]["query"] != second["classes"][0]["sample"]["query"]


def test_a_suppression_comment_in_the_application_sql() -> None:
    tagged = SAMPLE_A.replace("INSERT INTO", "/* govern: ignore[BATCH008] */ INSERT INTO")
    document = _document(tagged)
    assert document["classes"][0]["findings"] == []
    assert document["rules"]["summary"]["suppressed"] == 1


def test_a_digest_saved_before_the_rules_still_merges(tmp_path: Path) -> None:
    """Fields are only added within govern.digest v1: a document without them loads."""
    document = digest_json(str(EXAMPLE), "--no-rules")
    del document["rules"]
    for item in document["classes"]:
        for name in ("findings", "single_row_runs", "distinct_texts"):
            del item[name]
        for name in ("texts", "single_runs"):
            del item["state"][name]
        del item["state"]["runs"]["leads"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(document))
    merged = json.loads(govern("digest", "merge", "--format", "json", str(old)).stdout)
    assert merged["rules"]["summary"]["classes"] >= 1  # the runs still give BATCH008
    point = next(c for c in merged["classes"] if "from products where id = ?" in c["fingerprint"])
    assert point["sequence"]["leads"] == [] and point["distinct_texts"] is None
