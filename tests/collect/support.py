"""Helpers for the collector's tests: run a collector, read its buckets back, and compare
them with a one-shot ``govern digest`` of the same log."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from govern.collect.checkpoint import Checkpoints
from govern.collect.collector import CollectOptions, Collector, PollReport
from govern.collect.files import FollowedLog
from govern.collect.sink import DirectorySink
from govern.collect.source import Source
from govern.digest.document import full_document
from govern.digest.load import read_report
from govern.digest.merge import merge_reports
from govern.digest.options import DigestOptions
from govern.digest.runner import digest_bytes, digest_paths
from govern.slowlog import SEPARATOR
from govern.state import StateStore

LABEL = "db1"


def records(data: bytes) -> list[bytes]:
    """A log cut into pt's records (each ends with ``;\\n``, the next starts with ``#``)."""
    cuts = [0]
    at = data.find(SEPARATOR)
    while at >= 0:
        cuts.append(at + 2)
        at = data.find(SEPARATOR, at + 2)
    cuts.append(len(data))
    return [data[a:b] for a, b in itertools.pairwise(cuts) if b > a]


def make_collector(
    tmp: Path,
    sources: list[Source],
    *,
    label: str = LABEL,
    bucket: int = 60,
    close_after: float = 0.0,
    **options: Any,
) -> Collector:
    store = StateStore.open(tmp / "state" / "state.db")
    return Collector(
        sources,
        DirectorySink(tmp / "buckets"),
        Checkpoints(store, label),
        CollectOptions(
            host=label, bucket_seconds=bucket, close_after=close_after, commit_every=0, **options
        ),
    )


def follow(path: Path, **options: Any) -> FollowedLog:
    options.setdefault("settle", 0.3)
    return FollowedLog(str(path), **options)


def poll_all(collector: Collector) -> list[PollReport]:
    """Poll until caught up."""
    reports = [collector.poll()]
    while not reports[-1].caught_up:
        reports.append(collector.poll())
    return reports


def bucket_documents(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(directory.glob("*.json"))]


def merged(directory: Path, collector: Collector | None = None) -> dict[str, Any]:
    """Every bucket in ``directory`` merged, as ``govern digest merge`` does, with the
    buckets ``collector`` still has open."""
    documents = bucket_documents(directory) if directory.is_dir() else []
    if collector is not None:
        documents += [
            json.loads(json.dumps(aggregate.document(), default=list))
            for aggregate in collector.open_buckets.values()
        ]
    assert documents, f"no bucket in {directory}"
    reports = [read_report(document, f"bucket {n}") for n, document in enumerate(documents)]
    return full_document(merge_reports(reports, max_classes=10_000, order_by="Query_time:sum"))


def one_shot(paths: list[Path] | bytes, label: str = LABEL) -> dict[str, Any]:
    """``govern digest --host LABEL`` of the logs (or of the bytes) in one go."""
    if isinstance(paths, bytes):
        return full_document(digest_bytes(paths, DigestOptions(host=label)))
    return full_document(digest_paths([str(p) for p in paths], DigestOptions(host=label, jobs=1)))


def classes(document: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    """Per class, everything counted from events: counts, exact sums and sketches, flags,
    db/user/host spreads, the Query_time histogram, servers and first/last times
    (runs of a connection across polls and sample lines are not compared)."""
    return {
        item["id"]: (
            item["count"],
            item["state"]["metrics"],
            item["flags"],
            item["values"],
            item["histogram"],
            item["servers"],
            item["first_seen"],
            item["last_seen"],
            item["sample"]["query_time"] if item["sample"] else None,
        )
        for item in document["classes"]
    }


def events(document: dict[str, Any]) -> int:
    return int(document["totals"]["events"])


def assert_same_events(ours: dict[str, Any], expected: dict[str, Any]) -> None:
    assert ours["totals"] == expected["totals"], (ours["totals"], expected["totals"])
    mine, theirs = classes(ours), classes(expected)
    assert mine.keys() == theirs.keys(), (mine.keys() - theirs.keys(), theirs.keys() - mine.keys())
    differing = [key for key in theirs if mine[key] != theirs[key]]
    assert not differing, f"{len(differing)} classes differ, e.g. {differing[0]}"


def govern(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh process."""
    env = {**os.environ, **kwargs.pop("env", {})}
    return subprocess.run(
        [sys.executable, "-m", "govern", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        **kwargs,
    )


# --- a workload on the test server ------------------------------------------------------------

SETUP = (
    "CREATE TABLE IF NOT EXISTS collect_users (id INT PRIMARY KEY, name VARCHAR(40),"
    " country CHAR(2), score DOUBLE, KEY k_country (country))",
    "CREATE TABLE IF NOT EXISTS collect_orders (id INT AUTO_INCREMENT PRIMARY KEY, user_id INT,"
    " amount DECIMAL(10,2), at DATETIME, KEY k_user (user_id))",
)


def prepare(conn: Any) -> None:
    """The workload's tables in ``app``, unbinlogged (a replica must not replay them)."""
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        for statement in SETUP:
            cur.execute(statement)
        cur.execute("DELETE FROM collect_users")
        cur.execute("DELETE FROM collect_orders")
        rows = ", ".join(
            f"({i}, 'user{i}', '{('GB', 'FR', 'DE', 'ES')[i % 4]}', {i * 1.5})" for i in range(200)
        )
        cur.execute(f"INSERT INTO collect_users (id, name, country, score) VALUES {rows}")


def workload(conn: Any, rounds: int = 20) -> int:
    """A mix of reads and writes in the shapes applications send, unbinlogged (run it as
    root: a replica started later must not replay it); the statements run."""
    statements = 0

    def run(sql: str, args: Any = None) -> None:
        nonlocal statements
        with conn.cursor() as cur:
            cur.execute(sql, args)
            cur.fetchall()
        statements += 1

    run("SET SESSION sql_log_bin = 0")
    for i in range(rounds):
        run("SELECT id, name FROM collect_users WHERE id = %s", (i,))
        run("SELECT id, name FROM collect_users WHERE id IN (%s, %s, %s)", (i, i + 1, i + 2))
        run("select count(*) from collect_users where country = %s", ("FR",))
        run(
            "SELECT u.name, SUM(o.amount) FROM collect_users u JOIN collect_orders o"
            " ON o.user_id = u.id WHERE u.country = %s GROUP BY u.name ORDER BY 2 DESC LIMIT 5",
            ("GB",),
        )
        run(
            "INSERT INTO collect_orders (user_id, amount, at) VALUES (%s, %s, NOW()), (%s, %s, NOW())",
            (i, 10.5, i + 1, -2),
        )
        run("UPDATE collect_users SET score = score + 1 WHERE id = %s", (i,))
        run("DELETE FROM collect_orders WHERE amount < %s AND user_id = %s", (-100, i))
        run("SELECT * FROM collect_users WHERE name LIKE %s ORDER BY id LIMIT 3", ("user1%",))
        run("SELECT MAX(score) FROM collect_users WHERE score > %s", (-1.5,))
    return statements
