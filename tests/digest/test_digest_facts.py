"""The facts the digest-time rules read: runs on one connection, rows per
statement, per-statement overhead, tables, query-cache hits; and the class cap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from govern.digest import segments as segmenting
from govern.digest.document import to_document
from govern.digest.options import DigestOptions
from govern.digest.runner import digest_bytes
from tests.digest.support import govern_document


def _event(thread: int, query: str, seconds: str = "0.001000") -> bytes:
    return (
        f"# User@Host: app[app] @ localhost []\n# Thread_id: {thread}  Schema: app  QC_hit: No\n"
        f"# Query_time: {seconds}  Lock_time: 0.000000  Rows_sent: 0  Rows_examined: 0\n"
        f"SET timestamp=1;\n{query};\n"
    ).encode()


A = "INSERT INTO t (a) VALUES (1)"
A3 = "INSERT INTO t (a) VALUES (1), (2), (3)"  # the same class as A (pt keeps one tuple)
B = "UPDATE t SET a = 2 WHERE id = 3"


def _sequence_log() -> bytes:
    order = [(1, A), (2, A), (1, A), (1, A), (2, B), (1, B), (2, B), (1, A), (3, B)]
    return b"".join(_event(thread, query) for thread, query in order)


def _single_row_log() -> bytes:
    order = [(1, A), (2, A), (1, A), (1, A3), (2, A), (1, A), (2, A), (1, A), (4, A3)]
    return b"".join(_event(thread, query) for thread, query in order)


def _by_verb(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["fingerprint"].split()[0]: item for item in document["classes"]}


def test_runs_on_one_connection() -> None:
    classes = _by_verb(to_document(digest_bytes(_sequence_log())))
    insert_id, update_id = classes["insert"]["id"], classes["update"]["id"]
    # Thread 1: A A A B A; thread 2: A B B; thread 3: B.
    assert {k: v for k, v in classes["insert"]["sequence"].items() if k != "p95_run"} == {
        "calls": 5,
        "runs": 3,
        "repeated_calls": 3,
        "longest_run": 3,
        "mean_run": round(5 / 3, 3),
        "median_run": 1,
        "connections": 2,
        "connections_exact": True,
        "led_runs": 1,  # thread 1's last A follows a B; the other runs start a connection
        "led_calls": 1,
        "leads": [{"id": update_id, "runs": 1, "calls": 1}],
    }
    update = classes["update"]["sequence"]
    assert (update["calls"], update["runs"], update["repeated_calls"], update["longest_run"]) == (
        4,
        3,
        2,
        2,
    )
    assert update["connections"] == 3
    assert update["leads"] == [{"id": insert_id, "runs": 2, "calls": 3}]
    assert (update["led_runs"], update["led_calls"]) == (2, 3)


def test_runs_of_single_row_writes() -> None:
    (item,) = to_document(digest_bytes(_single_row_log()))["classes"]
    # Thread 1: A A A3 A A; thread 2: A A A; thread 4: A3. One class, runs 5, 3, 1.
    assert (item["sequence"]["runs"], item["sequence"]["longest_run"]) == (3, 5)
    assert item["single_row_runs"] == {
        "calls": 7,
        "runs": 3,  # thread 1: A A | A A (A3 breaks it); thread 2: A A A
        "repeated_calls": 7,
        "longest_run": 3,
        "mean_run": round(7 / 3, 3),
    }


def test_distinct_texts_of_reads() -> None:
    log = b"".join(
        _event(n % 3, f"SELECT a FROM t WHERE id = {n % 4}")
        + _event(1, f"DELETE FROM t WHERE id = {n}")
        for n in range(40)
    )
    classes = _by_verb(to_document(digest_bytes(log)))
    assert classes["select"]["distinct_texts"] == {"count": 4, "exact": True}
    assert classes["delete"]["distinct_texts"] is None  # writes: not counted
    many = b"".join(_event(1, f"SELECT a FROM t WHERE id = {n}") for n in range(5000))
    (item,) = to_document(digest_bytes(many))["classes"]
    estimate = item["distinct_texts"]
    assert not estimate["exact"] and abs(estimate["count"] - 5000) < 5000 * 0.2


def test_runs_are_stitched_across_parallel_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "seq.log"
    path.write_bytes((_sequence_log() + _single_row_log()) * 7)
    serial = govern_document(path, jobs=1)
    monkeypatch.setattr(segmenting, "PARALLEL_MINIMUM", 0)
    for segment in (150, 400, 700, 1000):
        assert govern_document(path, jobs=2, segment=segment) == serial


def test_class_cap_keeps_totals_exact() -> None:
    names = ["".join(chr(97 + (n // 26**k) % 26) for k in range(4)) for n in range(3000)]
    log = b"".join(
        _event(n % 50, f"SELECT * FROM t_{name} WHERE id = {n}") for n, name in enumerate(names)
    )
    digest = digest_bytes(log, DigestOptions(max_classes=100))
    document = to_document(digest)
    assert document["totals"]["classes"] == 100
    assert document["totals"]["events"] == 3000
    assert document["other"]["count"] == 2900 == document["totals"]["other_events"]
    total = sum(c["metrics"]["Query_time"]["count"] for c in document["classes"])
    assert total + document["other"]["metrics"]["Query_time"]["count"] == 3000


def _logged_rows_and_times(log: Path, prefix: str) -> list[tuple[int, float]]:
    """(VALUES tuples, Query_time) of the log's statements starting with ``prefix``."""
    found = []
    query_time = 0.0
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("# Query_time:"):
            query_time = float(line.split()[2])
        elif line.startswith(prefix):
            found.append((line.count("), (") + 1, query_time))
    return found


def _least_squares(points: list[tuple[int, float]]) -> tuple[float, float]:
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sum(
        (x - mean_x) ** 2 for x, _ in points
    )
    return mean_y - slope * mean_x, slope


def test_the_overhead_line_is_the_cost_per_statement_and_per_row() -> None:
    """Statements costing 2 ms + 50 µs a row: the line gives both back."""
    sizes = [1, 5, 10, 20, 50, 100, 100, 200]
    log = b"".join(
        _event(
            1,
            "INSERT INTO t (a) VALUES " + ", ".join(["(1)"] * size),
            f"{0.002 + 0.00005 * size:.6f}",
        )
        for size in sizes
    )
    (item,) = to_document(digest_bytes(log, DigestOptions()))["classes"]
    assert item["overhead"]["statements"] == len(sizes)
    assert item["overhead"]["per_statement"] == pytest.approx(0.002, abs=1e-8)
    assert item["overhead"]["per_row"] == pytest.approx(0.00005, abs=1e-9)


@pytest.mark.server
def test_batching_facts_from_a_recorded_workload(recorded_log: Path) -> None:
    log = recorded_log
    classes = {item["fingerprint"]: item for item in govern_document(log, jobs=1)["classes"]}
    single = classes["insert into events (user_id, kind, at) values (?, ?, now())"]
    assert single["count"] == 300
    assert single["sequence"]["longest_run"] == 300  # back to back on one connection
    assert single["sequence"]["connections"] == 1
    assert single["rows_per_statement"] == {"source": "values", "avg": 1.0, "median": 1, "max": 1}
    assert single["tables"] == {"read": [], "written": ["events"]}
    assert single["overhead"]["per_statement"] is None  # rows never vary: no line to fit
    bulk = classes["insert into users (id, name, country, status) values(?+)"]
    assert bulk["rows_per_statement"]["avg"] == 55.0 and bulk["rows_per_statement"]["max"] == 100
    # The line is fitted to the server's own Query_time, which on a loaded machine is
    # mostly waiting for a CPU (ms) beside a per-row cost of µs: its sign is the machine's,
    # not govern's. What govern owes is the least-squares line of the logged pairs.
    overhead = bulk["overhead"]
    assert overhead["statements"] == 10
    per_statement, per_row = _least_squares(_logged_rows_and_times(log, "INSERT INTO users"))
    assert overhead["per_statement"] == pytest.approx(per_statement, abs=1e-8)
    assert overhead["per_row"] == pytest.approx(per_row, abs=1e-8)
    cached = classes["select sql_cache count(*) from users where country = ?"]
    assert cached["flags"]["QC_hit"] == {"yes": 3, "count": 4}
    point = classes["select id, name, country from users where id = ?"]
    assert point["count"] == 200 and point["values"]["db"] == {"app": 200}
    assert point["metrics"]["Rows_examined"]["max"] == 1
