"""The digest-time rules on slow logs recorded from the test MariaDB (long_query_time = 0).

One workload (tests/digest/support.rules_workload) runs each rule's anti-pattern
next to its best practice on separate query classes; the tests assert the
findings, their evidence, and their absence.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from govern.digest.document import to_document
from govern.digest.options import DigestOptions
from govern.digest.runner import digest_paths
from govern.rules.config import RulesConfig
from govern.rules.digest import DigestRuleOptions, check_document
from tests.digest.support import (
    ARCHIVE_ROWS,
    CACHE_READS,
    LINES_PER_ORDER,
    ORDERS,
)

pytestmark = pytest.mark.server


#: A small max_allowed_packet for BATCH002 (the 2,000-row archive INSERT is about 100 KB).
PACKET = 128 * 1024


@pytest.fixture(scope="module")
def document(rules_log: Path) -> dict[str, Any]:
    document = to_document(digest_paths([str(rules_log)], DigestOptions(jobs=1)))
    config = RulesConfig(options={"BATCH002": {"max-allowed-packet": PACKET}})
    options = DigestRuleOptions(target="mariadb-10.11", config=config)
    check_document(document, options).annotate(document)
    return document


def _class(document: dict[str, Any], fingerprint: str) -> dict[str, Any]:
    found = [c for c in document["classes"] if c["fingerprint"] == fingerprint]
    assert found, f"no class {fingerprint!r}: {[c['fingerprint'] for c in document['classes']]}"
    return found[0]


def _rules(item: dict[str, Any]) -> list[str]:
    return [f["rule"] for f in item["findings"]]


def _finding(item: dict[str, Any], rule: str) -> dict[str, Any]:
    found = [f for f in item["findings"] if f["rule"] == rule]
    assert found, f"{rule} did not fire on {item['fingerprint']!r}: {item['findings']}"
    return found[0]


SINGLE_ROW = "insert into clicks (user_id, kind, at) values(?+)"
UPSERT_PREFIX = "insert into `app`.`clicks`"
POINT = "select id, name, price from products where id = ?"
LIST = "select id, product_id from order_lines where order_id = ?"
CUSTOMER = "select id, name from customers where id = ?"


def test_the_log_is_complete(document: dict[str, Any]) -> None:
    assert document["rules"]["full_log"] is True
    assert document["rules"]["target"] == "mariadb-10.11"
    assert {"BATCH008", "BATCH009", "QC006", "QC007"} <= set(document["rules"]["rules_run"])


def test_single_row_inserts_in_a_loop_are_row_at_a_time(document: dict[str, Any]) -> None:
    item = _class(document, SINGLE_ROW)
    finding = _finding(item, "BATCH008")
    evidence = finding["evidence"]
    assert evidence["calls"] == 300 and evidence["class_calls"] == 300
    assert evidence["runs"] == 1 and evidence["back_to_back_calls"] == 300
    assert evidence["connections"] == 1
    assert evidence["query_time"] == pytest.approx(item["metrics"]["Query_time"]["sum"])
    assert evidence["statements_batched"] == 3
    # The per-statement overhead: the line through this class's median (1 row) and the
    # batched upsert's into the same table (100 rows).
    assert evidence["overhead_from"] == "statements writing clicks"
    assert evidence["overhead_statements"] == 304  # 300 single-row + 4 batched
    median = item["metrics"]["Query_time"]["median"]
    assert 0 < evidence["per_statement"] <= median and evidence["per_row"] > 0
    assert evidence["estimated_saving"] == pytest.approx(evidence["per_statement"] * 297, rel=1e-3)
    message = finding["message"]
    assert message.startswith("300 single-row INSERTs on clicks, 300 back to back in 1 run")
    assert "on 1 connection" in message and "3 statements instead" in message
    assert "297 round trips" in message
    assert finding["class_id"] == item["id"] and finding["path"] is None


def test_the_batched_upsert_is_not(document: dict[str, Any]) -> None:
    (upsert,) = [c for c in document["classes"] if c["fingerprint"].startswith(UPSERT_PREFIX)]
    assert upsert["rows_per_statement"]["max"] == 100 and upsert["count"] == 4
    assert upsert["single_row_runs"]["calls"] == 0
    assert upsert["tables"]["written"] == ["app.clicks"]
    assert "BATCH008" not in _rules(upsert)


def test_an_oversized_batch(document: dict[str, Any]) -> None:
    archive = _class(document, "insert into clicks_archive (id, user_id, kind, at) values(?+)")
    rows = _finding(archive, "BATCH003")["evidence"]
    assert rows == {
        "rows": ARCHIVE_ROWS,
        "max_rows": 1000,
        "calls": 1,
        "statements_above": 1,
    }
    packet = _finding(archive, "BATCH002")["evidence"]
    size = archive["metrics"]["Query_length"]["max"]
    assert packet["bytes"] == size and size > PACKET / 2
    assert packet["max_allowed_packet"] == PACKET and packet["limit_from"] == "configured"
    for item in document["classes"]:  # the 100-row batches and the setup are within bounds
        if item["id"] != archive["id"]:
            assert not {"BATCH002", "BATCH003"} & set(_rules(item)), item["fingerprint"]


def test_single_row_updates_are_row_at_a_time_too(document: dict[str, Any]) -> None:
    updates = _class(document, "update live_orders set n = n ? ? where id = ?")
    evidence = _finding(updates, "BATCH008")["evidence"]
    assert evidence["calls"] == CACHE_READS and evidence["longest_run"] >= CACHE_READS // 2
    # Every UPDATE wrote one row: no line to fit the overhead on, and the finding says so.
    assert evidence["estimated_saving"] is None
    assert "no multi-row write of this kind" in _finding(updates, "BATCH008")["message"]


def test_point_lookups_after_a_list_are_n_plus_one(document: dict[str, Any]) -> None:
    point = _class(document, POINT)
    finding = _finding(point, "BATCH009")
    evidence = finding["evidence"]
    lookups = ORDERS * LINES_PER_ORDER
    assert evidence["calls"] == evidence["calls_in_runs"] == lookups
    assert evidence["runs"] == ORDERS
    assert evidence["longest_run"] == LINES_PER_ORDER and evidence["connections"] == 1
    lead = evidence["leads"][0]
    assert lead["id"] == _class(document, LIST)["id"] and lead["runs"] == ORDERS
    assert f"mostly after `{LIST}`" in finding["message"]
    assert f"{ORDERS} statements instead of {lookups}" in finding["message"]


def test_one_in_read_and_a_lookup_per_request_are_not(document: dict[str, Any]) -> None:
    batched = [c for c in document["classes"] if "`products` where `id` in" in c["fingerprint"]]
    assert batched and all("BATCH009" not in _rules(c) for c in batched)
    customer = _class(document, CUSTOMER)
    assert customer["count"] == 150 and customer["sequence"]["longest_run"] == 1
    assert "BATCH009" not in _rules(customer)


def test_sql_cache_on_a_table_under_constant_writes(document: dict[str, Any]) -> None:
    hot = _class(document, "select sql_cache status, n from live_orders where id = ?")
    finding = _finding(hot, "QC007")
    evidence = finding["evidence"]
    assert evidence["basis"] == "measured" and evidence["calls"] == CACHE_READS
    assert evidence["hit_ratio"] < 0.05
    assert evidence["estimate"]["table_changes"] >= CACHE_READS
    assert "live_orders changed" in finding["message"]
    assert document["rules"]["tables"]["live_orders"]["changing_writes"] >= CACHE_READS


def test_sql_cache_on_a_summary_is_kept(document: dict[str, Any]) -> None:
    summary = _class(document, "select sql_cache orders, revenue from daily_totals where day = ?")
    hits = summary["flags"]["QC_hit"]
    assert hits["count"] == CACHE_READS and hits["yes"] > 0.95 * CACHE_READS
    assert "QC007" not in _rules(summary) and "QC006" not in _rules(summary)


def test_repeated_reads_of_a_summary_should_use_the_cache(document: dict[str, Any]) -> None:
    plain = _class(document, "select orders, revenue from daily_totals where day = ?")
    finding = _finding(plain, "QC006")
    evidence = finding["evidence"]
    assert evidence["calls"] == CACHE_READS and evidence["distinct_texts"] == 7
    assert evidence["table_changes"] <= 4  # the setup's DELETE and INSERT, one UPDATE
    assert evidence["estimated_hits"] >= CACHE_READS - 7 * 5
    assert finding["severity"] == "info" and "add SQL_CACHE" in finding["message"]


def test_repeated_reads_of_a_hot_table_should_not(document: dict[str, Any]) -> None:
    plain = _class(document, "select status, n from live_orders where id = ?")
    assert plain["distinct_texts"] == {"count": 3, "exact": True}
    assert "QC006" not in _rules(plain)


def _govern(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "govern", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )


def test_fail_on_gates_a_release(rules_log: Path, document: dict[str, Any]) -> None:
    log = str(rules_log)
    assert _govern("digest", log, "--fail-on", "warning").returncode == 1
    assert _govern("digest", log, "--fail-on", "error").returncode == 0
    quiet = _govern("digest", log, "--fail-on", "warning", "--ignore", "BATCH,QC007")
    assert quiet.returncode == 0, quiet.stdout[-2000:]
    assert _govern("digest", log, "--no-rules").returncode == 0


def test_per_class_ignores_from_the_nearest_config(
    rules_log: Path, document: dict[str, Any], tmp_path: Path
) -> None:
    clicks = _class(document, SINGLE_ROW)
    (tmp_path / "govern.toml").write_text(
        f'[rules]\nper-class-ignores = {{ "{clicks["id16"]}" = ["BATCH008"] }}\n'
    )
    proc = _govern("digest", "--format", "json", str(rules_log), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    item = next(c for c in result["classes"] if c["id"] == clicks["id"])
    assert "BATCH008" not in _rules(item)
    assert result["rules"]["summary"]["suppressed"] == 1
    assert result["rules"]["config"] == "govern.toml"


def test_text_and_markdown_show_findings_next_to_their_classes(rules_log: Path) -> None:
    text = _govern("digest", str(rules_log), "--top", "40")
    assert text.returncode == 0
    assert "BATCH008 warning: 300 single-row INSERTs on clicks" in text.stdout
    assert "rules: " in text.stdout and "findings" in text.stdout
    markdown = _govern("digest", str(rules_log), "--format", "md", "--top", "40")
    assert "### Findings" in markdown.stdout
    assert "**BATCH009** warning:" in markdown.stdout


def _everything(screen: Any, rules: Any, ctx: Any) -> Any:
    """Every class, by every rule: what the screens spare (rules/digest.py ``screened``)."""
    return ((position, rules) for position in range(screen.size))


@pytest.mark.parametrize("source", ["rules_log", "corpus"])
def test_screens_and_compact_samples_change_no_finding(
    source: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rules read only the classes their screens name, and samples with IN lists of
    integers compacted (the corpus log's hold 3,000 items): the findings, suppressions and
    notes are those of every rule over every class with every token."""
    from govern.rules import digest as rules_digest
    from govern.rules.sql import lexer
    from tests.paths import require_corpus

    if source == "corpus":
        log = require_corpus() / "mariadb" / "mixed-workload.log"
    else:
        log = request.getfixturevalue("rules_log")
    document = to_document(digest_paths([str(log)], DigestOptions(jobs=1)))
    options = DigestRuleOptions(target="mariadb-10.11")
    fast = check_document(document, options)
    compacted = []
    real_after_in = lexer._after_in

    def after_in(tokens: Any) -> bool:
        found = real_after_in(tokens)
        compacted.append(found)
        return False

    monkeypatch.setattr(lexer, "_after_in", after_in)
    monkeypatch.setattr(rules_digest, "screened", _everything)
    slow = check_document(document, options)
    assert fast.to_json() == slow.to_json()
    assert fast.suppressed == slow.suppressed
    assert {k: [f.to_json() for f in v] for k, v in fast.by_class.items()} == {
        k: [f.to_json() for f in v] for k, v in slow.by_class.items()
    }
    assert fast.findings
    if source == "corpus":
        assert any(compacted)  # it has IN lists the fast pass compacted
