"""Performance Schema statement digests as per-interval deltas: on a MariaDB 10.11 started
with performance_schema=ON (TRUNCATE, restart, a full digest table), the same query IDs as
the slow log, and MySQL 8's histogram table from recorded snapshots."""

from __future__ import annotations

import datetime as dt
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from govern.collect.digesting import aggregate_of
from govern.collect.perfschema import (
    RESTART_SLACK,
    PerformanceSchemaDigests,
    Snapshot,
    deltas,
    figures_of,
    snapshot_from_rows,
    statement_of,
)
from govern.connection import ConnectionSettings, resolve_settings
from govern.digest.document import full_document
from govern.digest.result import Digest
from govern.fingerprint import fingerprint, query_id
from tests.collect.support import make_collector, merged, one_shot, prepare, workload
from tests.digest.slowlogs import recording
from tests.harness import MariaDB
from tests.paths import DATA


@pytest.fixture(scope="module")
def ps_server() -> Iterator[MariaDB]:
    """A MariaDB of its own with performance_schema=ON (it is switched on only at start)."""
    base = Path(tempfile.mkdtemp(prefix="govern-test-ps-"))
    server = MariaDB(base)
    server.options["performance_schema"] = "ON"
    server.start()
    try:
        yield server
    finally:
        server.destroy()


def settings_of(server: MariaDB) -> ConnectionSettings:
    return resolve_settings(defaults_file=str(server.defaults_file("govern_admin")), environ={})


def by_digest(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Classes of a collected bucket by the server's digest kept beside them."""
    found = {}
    for item in document["classes"]:
        for digest in item["values"].get("digest", {}):
            found[digest] = item
    return found


def run_statements(server: MariaDB, statements: list[str]) -> None:
    conn: Any = server.connect(database="app")
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        for statement in statements:
            cur.execute(statement)
            cur.fetchall()
    conn.close()


def test_deltas_count_each_interval_once(ps_server: MariaDB, tmp_path: Path) -> None:
    app: Any = ps_server.connect(database="app")
    prepare(app)
    source = PerformanceSchemaDigests(settings_of(ps_server), host="db1")
    with make_collector(tmp_path, [source]) as collector:
        first = collector.poll()
        run_statements(
            ps_server, [f"SELECT name FROM collect_users WHERE id = {i}" for i in range(7)]
        )
        second = collector.poll()
        run_statements(
            ps_server, [f"SELECT name FROM collect_users WHERE id = {i}" for i in range(5)]
        )
        third = collector.poll()
        document = merged(tmp_path / "buckets", collector)
    assert first.events == 0
    assert first.problems == [
        "performance_schema: first snapshot taken; deltas start with the next poll"
    ]
    assert second.events >= 7 and third.events >= 5
    point = [
        item
        for item in document["classes"]
        if item["fingerprint"] == "select name from collect_users where id = ?"
    ]
    (item,) = point
    assert item["count"] == 12
    assert item["values"]["db"] == {"app": 12}
    (digest,) = item["values"]["digest"]
    assert len(digest) == 32
    assert item["metrics"]["Query_time"]["sum"] > 0
    assert item["metrics"]["Query_time"]["p95"] is None  # MariaDB has no histogram table
    assert item["metrics"]["Rows_sent"]["sum"] == 12


def test_truncate_and_restart_start_the_count_again(ps_server: MariaDB, tmp_path: Path) -> None:
    app: Any = ps_server.connect(database="app")
    prepare(app)
    statement = "SELECT country FROM collect_users WHERE id = 3"
    source = PerformanceSchemaDigests(settings_of(ps_server), host="db1")
    with make_collector(tmp_path, [source]) as collector:
        collector.poll()
        run_statements(ps_server, [statement] * 4)
        collector.poll()
        run_statements(
            ps_server, ["TRUNCATE performance_schema.events_statements_summary_by_digest"]
        )
        run_statements(ps_server, [statement] * 2)
        after_truncate = collector.poll()
        time.sleep(RESTART_SLACK + 1)  # a start that differs from the last one
        ps_server.restart()
        run_statements(ps_server, [statement] * 3)
        after_restart = collector.poll()
        document = merged(tmp_path / "buckets", collector)
    assert "performance_schema: the server restarted: counting from its start" in (
        after_restart.problems
    )
    assert after_truncate.events >= 2
    counted = [
        item["count"]
        for item in document["classes"]
        if item["fingerprint"] == "select country from collect_users where id = ?"
    ]
    assert counted == [4 + 2 + 3]


def test_a_full_digest_table_is_said_and_its_statements_kept(tmp_path: Path) -> None:
    base = Path(tempfile.mkdtemp(prefix="govern-test-ps-small-"))
    server = MariaDB(base)
    server.options["performance_schema"] = "ON"
    server.options["performance_schema_digests_size"] = "20"
    server.start()
    try:
        app: Any = server.connect(database="app")
        prepare(app)
        source = PerformanceSchemaDigests(settings_of(server), host="db1")
        with make_collector(tmp_path, [source]) as collector:
            collector.poll()
            run_statements(
                server,
                [
                    f"SELECT {', '.join(['id'] * n)} FROM collect_users LIMIT 1"
                    for n in range(1, 40)
                ],
            )
            report = collector.poll()
            document = merged(tmp_path / "buckets", collector)
    finally:
        server.destroy()
    (full,) = [p for p in report.problems if "the digest table is full" in p]
    assert "statements were counted without a digest (the NULL row)" in full
    assert document["totals"]["other_events"] > 0
    assert document["totals"]["events"] == report.events


def test_digests_map_to_the_slow_logs_query_ids(ps_server: MariaDB, tmp_path: Path) -> None:
    """The workload recorded both ways: most statements land in the slow log's classes."""
    app: Any = ps_server.connect(database="app")
    prepare(app)
    source = PerformanceSchemaDigests(settings_of(ps_server), host="db1")
    with make_collector(tmp_path, [source]) as collector:
        collector.poll()
        with recording(ps_server, "collect-ps") as log:
            conn: Any = ps_server.connect(tcp=True, database="app")
            statements = workload(conn)
            conn.close()
        collector.poll()
        from_digests = merged(tmp_path / "buckets", collector)
    from_log = one_shot([log])
    log_ids = {item["id"]: item["count"] for item in from_log["classes"]}
    app_classes = [
        c
        for c in from_digests["classes"]
        if c["values"].get("db", {}).get("app")
        and c["fingerprint"].startswith(("select", "insert", "update", "delete"))
    ]
    agreeing = [c for c in app_classes if c["id"] in log_ids]
    assert sum(c["count"] for c in app_classes) == statements - 1  # all but SET sql_log_bin
    # Measured: every class of this workload; the design doc lists what cannot agree.
    assert len(agreeing) == len(app_classes) == 9
    for item in agreeing:
        assert item["count"] == log_ids[item["id"]]


@pytest.mark.parametrize(
    ("digest_text", "statement"),
    [
        ("SELECT `id` , `name` FROM `app` . `users` WHERE `id` = ?", "select id, name from app.users where id = ?"),
        ("SELECT ID , NAME FROM `t` WHERE ID IN (...) ORDER BY ID ASC LIMIT ?, ...", "select id, name from t where id in(?+) order by id limit ?"),
        ("INSERT INTO `t` VALUES (...) /* , ... */", "insert into t values(?+)"),
        ("INSERT INTO `t` ( ID , NAME ) VALUES (...)", "insert into t (id, name) values(?+)"),
        ("SELECT * FROM `t` WHERE `v` > - ?", "select * from t where v > ?"),
        ("SELECT COUNT ( * ) FROM `t` WHERE ID = ( SELECT MAX ( ID ) FROM `t` )", "select count(*) from t where id = (select max(id) from t)"),
        ("CALL `refresh_summary` ( ? )", "call refresh_summary"),
    ],
)  # fmt: skip
def test_digest_texts_become_the_statements_pt_fingerprints(
    digest_text: str, statement: str
) -> None:
    assert fingerprint(statement_of(digest_text)) == statement


# --- MySQL 8: recorded snapshots with the histogram table -------------------------------------


def recorded(name: str) -> Snapshot:
    """A recorded read of MySQL 8.0's digest and histogram tables (tests/data/perfschema)."""
    raw = json.loads((DATA / "perfschema" / name).read_text())
    now = dt.datetime.fromisoformat(raw["now"])
    return snapshot_from_rows(now, raw["server_start"], raw["digests"], raw["histogram"])


def test_mysql8_histogram_deltas_give_percentiles(tmp_path: Path) -> None:
    before, after = recorded("mysql80-before.json"), recorded("mysql80-after.json")
    found = deltas(before, after)
    figures = [figures_of(delta, after.bounds) for delta in found.items]
    aggregate = aggregate_of(figures, host="mysql8", name="performance_schema digests")
    document = full_document(Digest(aggregate.partial, aggregate.sources))
    (point,) = [c for c in document["classes"] if c["values"]["db"] == {"shop": 40}]
    query_time = point["metrics"]["Query_time"]
    # 40 statements in the interval: 30 in the bucket around 0.1 ms, 8 around 1 ms,
    # 2 around 10 ms (see tests/data/perfschema/README.md).
    assert point["count"] == 40
    assert query_time["median"] == pytest.approx(0.0001, rel=0.03)
    assert query_time["p95"] == pytest.approx(0.001, rel=0.03)
    assert query_time["p99"] == pytest.approx(0.01, rel=0.03)
    assert query_time["max"] == pytest.approx(0.0123, rel=1e-6)  # MAX_TIMER_WAIT rose
    assert point["id"] == query_id(b"select * from orders where id = ?")
    assert point["sample"]["query"] == "SELECT * FROM orders WHERE id = 1042"
    (reset,) = [c for c in document["classes"] if c["values"]["db"] == {"shop": 3}]
    assert found.reset == 1 and reset["count"] == 3  # truncated in between: all it holds
    assert found.overflow == 5
    assert document["totals"]["other_events"] == 5
