"""EXPLAIN of the worst samples of a closing bucket, on a replica, in a read-only session out
of the slow log with a time limit; the plan travels with the class to ``govern digest``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from govern.collect.explain import Explainer, ExplainOptions, explainable
from govern.connection import ConnectionSettings, resolve_settings
from tests.collect.support import follow, govern, make_collector
from tests.harness import MariaDB

SCHEMA = "collect_explain"

#: A slow log of the replica's workload: a full scan, an indexed read, an UPDATE, a DDL
#: and a statement about a table the replica does not have.
LOG = """# Time: 261125 10:00:01
# User@Host: app[app] @ localhost []
# Thread_id: 1  Schema: collect_explain  QC_hit: No
# Query_time: 2.500000  Lock_time: 0.000100  Rows_sent: 1  Rows_examined: 1000
SET timestamp=1795600801;
SELECT * FROM items WHERE note = 'x';
# User@Host: app[app] @ localhost []
# Thread_id: 1  Schema: collect_explain  QC_hit: No
# Query_time: 1.500000  Lock_time: 0.000100  Rows_sent: 1  Rows_examined: 1
SET timestamp=1795600801;
SELECT note FROM items WHERE id = 5;
# User@Host: app[app] @ localhost []
# Thread_id: 1  Schema: collect_explain  QC_hit: No
# Query_time: 1.200000  Lock_time: 0.000100  Rows_sent: 0  Rows_examined: 1000
# Rows_affected: 3
SET timestamp=1795600801;
UPDATE items SET note = 'y' WHERE note = 'x';
# User@Host: app[app] @ localhost []
# Thread_id: 1  Schema: collect_explain  QC_hit: No
# Query_time: 1.100000  Lock_time: 0.000100  Rows_sent: 0  Rows_examined: 0
SET timestamp=1795600801;
ALTER TABLE items ADD COLUMN extra INT;
# User@Host: app[app] @ localhost []
# Thread_id: 1  Schema: collect_explain  QC_hit: No
# Query_time: 1.000000  Lock_time: 0.000100  Rows_sent: 0  Rows_examined: 0
SET timestamp=1795600801;
SELECT * FROM gone WHERE id = 1;
"""


def replica_settings(replica: MariaDB) -> ConnectionSettings:
    return resolve_settings(defaults_file=str(replica.defaults_file("govern_admin")), environ={})


@pytest.fixture
def replica_table(replica: MariaDB) -> MariaDB:
    """The table the samples read, on the replica only (written unbinlogged as root)."""
    conn: Any = replica.connect()
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
        cur.execute(
            f"CREATE TABLE IF NOT EXISTS {SCHEMA}.items (id INT PRIMARY KEY, note VARCHAR(20))"
        )
        cur.execute(f"DELETE FROM {SCHEMA}.items")
        values = ", ".join(f"({i}, 'n{i % 7}')" for i in range(1000))
        cur.execute(f"INSERT INTO {SCHEMA}.items VALUES {values}")
        cur.execute(f"ANALYZE TABLE {SCHEMA}.items")
    conn.close()
    return replica


def test_plans_of_the_worst_samples_travel_with_their_classes(
    replica_table: MariaDB, tmp_path: Path
) -> None:
    log = tmp_path / "slow.log"
    log.write_text(LOG)
    explainer = Explainer(ExplainOptions(replica_settings(replica_table), top=5, seconds=2))
    try:
        with make_collector(tmp_path, [follow(log, settle=0)], on_close=explainer) as collector:
            report = collector.poll()
    finally:
        explainer.close()
    ((_, where),) = report.closed
    document = json.loads(Path(where).read_text())
    assert document["collect"]["explain"] == {
        "explained": 3,
        "not_explainable": 1,
        "failed": 1,
        "errors": [document["collect"]["explain"]["errors"][0]],
    }
    assert "doesn't exist" in document["collect"]["explain"]["errors"][0]
    plans = {item["fingerprint"]: item["sample"].get("plan") for item in document["classes"]}
    scan = plans["select * from items where note = ?"]
    assert scan["tables"] == [{"table": "items", "access": "ALL", "key": None, "rows": 1000}]
    assert scan["server"] == replica_settings(replica_table).describe()
    assert scan["as_select"] is None
    point = plans["select note from items where id = ?"]
    assert point["tables"][0]["access"] == "const"
    update = plans["update items set note = ? where note = ?"]
    assert update["as_select"] == "SELECT note = 'y' FROM items WHERE note = 'x'"
    assert update["tables"][0]["access"] == "ALL"
    assert plans["alter table items add column extra int"] is None
    shown = govern("digest", "merge", where, "--no-rules")
    assert shown.returncode == 0, shown.stderr
    assert "EXPLAIN on govern_admin@127.0.0.1" in shown.stdout
    assert "items ALL 1,000 rows" in shown.stdout
    markdown = govern("digest", "merge", where, "--no-rules", "--format", "md")
    assert "items ALL 1,000 rows" in markdown.stdout, markdown.stderr
    page = tmp_path / "page.html"
    html = govern("digest", "merge", where, "--no-rules", "--format", "html", "-o", str(page))
    assert html.returncode == 0, html.stderr
    assert "items ALL 1,000 rows" in page.read_text()


def test_the_explain_session_is_read_only_unlogged_and_time_limited(
    replica_table: MariaDB,
) -> None:
    explainer = Explainer(ExplainOptions(replica_settings(replica_table), seconds=1.5))
    try:
        ((read_only, limit, logged),) = explainer.session.run(
            "SELECT @@tx_read_only, @@max_statement_time, @@log_slow_query"
        )
    finally:
        explainer.close()
    assert (read_only, float(limit), logged) == (1, 1.5, 0)


@pytest.mark.parametrize(
    ("statement", "explained"),
    [
        ("SELECT 1", "SELECT 1"),
        ("  with x as (select 1) select * from x;", "with x as (select 1) select * from x"),
        ("UPDATE t SET a = 1, b = b + 1 WHERE id = 3", "SELECT a = 1, b = b + 1 FROM t WHERE id = 3"),
        ("DELETE FROM t WHERE id < 10 LIMIT 5", "SELECT * FROM t WHERE id < 10 LIMIT 5"),
        ("INSERT INTO t (a) SELECT a FROM u WHERE b = 2", "SELECT a FROM u WHERE b = 2"),
        ("INSERT INTO t VALUES (1)", None),
        ("CALL p(1)", None),
        ("SELECT 1; SELECT 2", None),
        ("SELECT ';' AS x", "SELECT ';' AS x"),
    ],
)  # fmt: skip
def test_what_explain_can_take(statement: str, explained: str | None) -> None:
    assert explainable(statement) == explained


def test_explain_options_need_a_readable_option_file(tmp_path: Path) -> None:
    log = tmp_path / "slow.log"
    log.write_text(LOG)
    result = govern(
        "collect", str(log), "--to", str(tmp_path / "b"), "--state", str(tmp_path / "s.db"),
        "--explain-on", str(tmp_path / "missing.cnf"), "--once",
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"govern: error: --defaults-file {tmp_path / 'missing.cnf'}: no such file"
    ]
