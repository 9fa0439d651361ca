"""Helpers for the digest tests: pt-query-digest as an oracle, and a workload recorded
from the test MariaDB (a real slow log, long_query_time=0)."""

from __future__ import annotations

import contextlib
import gzip
import json
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from govern.digest.document import to_document
from govern.digest.options import DigestOptions
from govern.digest.runner import digest_paths
from tests.digest.slowlogs import wait_until_logged

PT_QUERY_DIGEST = shutil.which("pt-query-digest")


def pt_readable(path: Path, folder: Path) -> Path:
    """The log as pt-query-digest must read it to find govern's events: plain text (pt
    reads no .gz), MariaDB's banner line renamed to one pt's pattern knows (same length,
    so offsets and lines stay). govern reads that banner as a record boundary on
    purpose; pt glues the events around it (docs/design/digest-engines.md, "Departures from pt")."""
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    if path.suffix != ".gz" and b"mariadbd, Version" not in data:
        return path
    target = folder / path.name.removesuffix(".gz")
    target.write_bytes(data.replace(b"mariadbd, Version", b"xxmysqld, Version"))
    return target


def pt_classes(path: Path) -> dict[str, tuple[int, float]]:
    """pt-query-digest's classes: query ID -> (count, Query_time sum)."""
    if PT_QUERY_DIGEST is None:
        pytest.skip("pt-query-digest is not installed (scripts/test installs percona-toolkit)")
    with tempfile.TemporaryDirectory() as tmp:
        target = pt_readable(path, Path(tmp))
        out = subprocess.run(
            [
                PT_QUERY_DIGEST,
                "--no-version-check",
                "--output",
                "json",
                "--limit",
                "100%",
                str(target),
            ],
            capture_output=True,
            check=True,
        ).stdout
    if not out.strip():
        return {}
    document = json.loads(out)
    return {
        item["checksum"]: (int(item["query_count"]), float(item["metrics"]["Query_time"]["sum"]))
        for item in document["classes"]
        if "Query_time" in item["metrics"]
    }


def govern_document(path: Path, **options: Any) -> dict[str, Any]:
    return to_document(digest_paths([str(path)], DigestOptions(**options)))


def assert_same_classes(path: Path) -> None:
    """govern's classes are pt's: same IDs, counts and Query_time sums.

    pt's report (--limit 100%) stops listing classes once the listed ones add up
    to the total time, so classes that took no time at all may be missing from
    pt's output; any such class of govern's must have a zero sum.
    """
    expected = pt_classes(path)
    document = govern_document(path, jobs=1)
    ours = {
        item["id"]: (item["count"], item["metrics"]["Query_time"]["sum"])
        for item in document["classes"]
    }
    for query_id, (count, total) in expected.items():
        assert query_id in ours, f"{path.name}: pt class {query_id} missing"
        assert ours[query_id][0] == count, f"{path.name}: {query_id} count"
        assert abs(ours[query_id][1] - total) < 1e-6 * max(1.0, total), (
            f"{path.name}: {query_id} sum"
        )
    for query_id, (_, total) in ours.items():
        if query_id not in expected:
            assert total == 0, f"{path.name}: class {query_id} is not in pt's report"


def comparable(document: dict[str, Any]) -> dict[str, Any]:
    """A digest document without what may differ between equal digests (nothing, today)."""
    return document


# --- a workload recorded from the test server ---------------------------------------------

WORKLOAD_SETUP = [
    "CREATE TABLE IF NOT EXISTS users (id INT PRIMARY KEY, name VARCHAR(40), country CHAR(2),"
    " status TINYINT, KEY k_country (country))",
    "CREATE TABLE IF NOT EXISTS events (id INT AUTO_INCREMENT PRIMARY KEY, user_id INT,"
    " kind VARCHAR(20), at DATETIME)",
    "CREATE TABLE IF NOT EXISTS notes (id INT PRIMARY KEY, note TEXT)",
]


def record_workload(
    server: Any, destination: Path, workload: Callable[[Any], None] | None = None
) -> Path:
    """Run a workload (default: a realistic mix) on the test server, every statement logged.

    Returns a copy of the slow log written meanwhile. Changes global variables
    (the query cache is on with DEMAND, long_query_time 0), and puts them back.
    """
    admin = server.connect()
    names = (
        "slow_query_log",
        "long_query_time",
        "log_slow_verbosity",
        "query_cache_type",
        "query_cache_size",
    )
    with admin.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute(
            "SELECT Variable_name, Variable_value FROM information_schema.GLOBAL_VARIABLES"
            f" WHERE Variable_name IN ({', '.join(['%s'] * len(names))})",
            [n.upper() for n in names],
        )
        saved = dict(cur.fetchall())
        cur.execute("SET GLOBAL query_cache_size = 1048576")
        cur.execute("SET GLOBAL query_cache_type = DEMAND")
        cur.execute("SET GLOBAL log_slow_verbosity = 'query_plan,explain'")
        cur.execute("SET GLOBAL long_query_time = 0")
    log = server.slow_log
    start = log.stat().st_size if log.exists() else 0
    try:
        with admin.cursor() as cur:
            cur.execute("SET GLOBAL slow_query_log = ON")
        (workload or _workload)(server)
        wait_until_logged(admin)
    finally:
        with admin.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute("SET GLOBAL slow_query_log = OFF")
            for name, value in saved.items():
                try:
                    cur.execute(f"SET GLOBAL {name} = %s", (value,))
                except Exception:
                    cur.execute(f"SET GLOBAL {name} = {value}")
        admin.close()
    with log.open("rb") as handle:
        handle.seek(start)
        destination.write_bytes(handle.read())
    return destination


def _workload(server: Any) -> None:
    # Writes go through root with sql_log_bin=0: a replica started later by another
    # test must not have to replay them. Reads come from the unprivileged account.
    app = server.connect(database="app")
    web = server.connect("govern_app", database="app", tcp=True)
    root = server.connect(database="app")
    for conn in (app, root):
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")
    with app.cursor() as cur:
        for statement in WORKLOAD_SETUP:
            cur.execute(statement)
        cur.execute("DELETE FROM users")
        cur.execute("DELETE FROM events")
        cur.execute("DELETE FROM notes")
        # A bulk load in multi-row INSERTs of growing size (10, 20, … 100 rows).
        first = 0
        for size in range(10, 101, 10):
            rows = ", ".join(
                f"({i}, 'user{i}', '{('GB', 'FR', 'DE', 'ES')[i % 4]}', {i % 2})"
                for i in range(first, first + size)
            )
            cur.execute(f"INSERT INTO users (id, name, country, status) VALUES {rows}")
            first += size
        # The batching anti-pattern: 300 single-row INSERTs back to back on one connection.
        for i in range(300):
            cur.execute(
                "INSERT INTO events (user_id, kind, at) VALUES (%s, %s, NOW())", (i % 50, "click")
            )
    with web.cursor() as cur:
        for i in range(200):
            cur.execute("SELECT id, name, country FROM users WHERE id = %s", (i * 7 % 550,))
            if i % 10 == 0:
                cur.execute(
                    "SELECT id, name FROM users WHERE id IN (%s, %s, %s) /* web:list */",
                    (i, i + 1, i + 2),
                )
            if i % 25 == 0:
                cur.execute(
                    "SELECT country, COUNT(*)\n  FROM users\n WHERE status = %s\n GROUP BY country",
                    (i % 2,),
                )
        cur.execute("SELECT note FROM notes WHERE note LIKE '%\u65e5\u672c%'")
        cur.execute("PREPARE s1 FROM 'SELECT name FROM users WHERE id = ?'")
        for i in range(5):
            cur.execute(f"SET @uid = {i}")
            cur.execute("EXECUTE s1 USING @uid")
        cur.execute("DEALLOCATE PREPARE s1")
        with contextlib.suppress(Exception):
            cur.execute("SELECT * FROM no_such_table")
    with root.cursor() as cur:
        cur.execute("UPDATE users SET status = 1 - status WHERE country = 'FR'")
        cur.execute("INSERT INTO notes (id, note) VALUES (1, 'caf\u00e9 \u65e5\u672c \U0001f680')")
        for _ in range(4):
            cur.execute("SELECT SQL_CACHE COUNT(*) FROM users WHERE country = 'GB'")
        cur.execute("DELETE FROM events WHERE id > 250")
    for conn in (app, web, root):
        conn.close()


# --- workloads that show (and do not show) each digest-time rule ---------------------------

RULES_SETUP = [
    "CREATE TABLE IF NOT EXISTS clicks (id INT AUTO_INCREMENT PRIMARY KEY, user_id INT,"
    " kind VARCHAR(20), at DATETIME)",
    "CREATE TABLE IF NOT EXISTS clicks_archive (id INT PRIMARY KEY, user_id INT,"
    " kind VARCHAR(20), at DATETIME)",
    "CREATE TABLE IF NOT EXISTS products (id INT PRIMARY KEY, name VARCHAR(40), price INT)",
    "CREATE TABLE IF NOT EXISTS order_lines (id INT PRIMARY KEY, order_id INT,"
    " product_id INT, KEY k_order (order_id))",
    "CREATE TABLE IF NOT EXISTS customers (id INT PRIMARY KEY, name VARCHAR(40))",
    "CREATE TABLE IF NOT EXISTS daily_totals (day DATE PRIMARY KEY, orders INT, revenue INT)",
    "CREATE TABLE IF NOT EXISTS live_orders (id INT PRIMARY KEY, status VARCHAR(10), n INT)",
]
#: Rows per order in the N+1 scenario, orders read, and reads in the cache scenarios.
LINES_PER_ORDER = 12
ORDERS = 30
CACHE_READS = 1200
ARCHIVE_ROWS = 2000


def rules_workload(server: Any) -> None:
    """Each digest rule's anti-pattern next to its best practice, on separate classes.

    * row-at-a-time: 300 single-row INSERTs into clicks on one connection; 350 more
      rows upserted into clicks by govern.batch (100 rows a statement);
    * oversized batches: the archive of clicks written as 2,000 rows in one INSERT;
    * N+1: per order, its lines, then each line's product by key (30 × 12 lookups);
      the same with one IN() read; and a customer lookup once per request;
    * query cache: SQL_CACHE reads of a summary (daily_totals) that changes once, and
      of live_orders while another connection updates it after every read; plain
      reads of both, 1,200 each.
    """
    from govern.batch import select_in, upsert

    setup = server.connect(database="app")
    with setup.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        for statement in RULES_SETUP:
            cur.execute(statement)
        for table in ("clicks", "clicks_archive", "products", "order_lines", "customers"):
            cur.execute(f"DELETE FROM {table}")
        cur.execute("DELETE FROM daily_totals")
        cur.execute("DELETE FROM live_orders")
        products = ", ".join(f"({i}, 'product {i}', {100 + i})" for i in range(1, 401))
        cur.execute(f"INSERT INTO products (id, name, price) VALUES {products}")
        lines = ", ".join(
            f"({order * 100 + n}, {order}, {(order * 7 + n * 13) % 400 + 1})"
            for order in range(1, ORDERS + 1)
            for n in range(LINES_PER_ORDER)
        )
        cur.execute(f"INSERT INTO order_lines (id, order_id, product_id) VALUES {lines}")
        cur.execute(
            "INSERT INTO customers (id, name) VALUES "
            + ", ".join(f"({i}, 'customer {i}')" for i in range(1, 201))
        )
        days = ", ".join(f"('2025-01-{d:02d}', {d * 10}, {d * 1000})" for d in range(1, 29))
        cur.execute(f"INSERT INTO daily_totals (day, orders, revenue) VALUES {days}")
        cur.execute(
            "INSERT INTO live_orders (id, status, n) VALUES "
            + ", ".join(f"({i}, 'new', 0)" for i in range(1, 11))
        )
    setup.close()

    writer = server.connect(database="app")
    batcher = server.connect(database="app")
    for conn in (writer, batcher):
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")
    with writer.cursor() as cur:
        for i in range(300):
            cur.execute(
                "INSERT INTO clicks (user_id, kind, at) VALUES (%s, %s, %s)",
                (i % 40, "click", f"2025-01-06 09:{i // 60:02d}:{i % 60:02d}"),
            )
    rows = [
        {"id": 1000 + n, "user_id": n % 40, "kind": "view", "at": "2025-01-06 10:00:00"}
        for n in range(350)
    ]  # batches of 100, 100, 100, 50
    upsert(batcher, "clicks", rows, key="id")
    with batcher.cursor() as cur:
        archive = ", ".join(
            f"({n}, {n % 40}, 'click', '2025-01-05 {n // 3600 % 24:02d}:{n // 60 % 60:02d}:00')"
            for n in range(1, ARCHIVE_ROWS + 1)
        )
        cur.execute(f"INSERT INTO clicks_archive (id, user_id, kind, at) VALUES {archive}")

    shop = server.connect("govern_app", database="app", tcp=True)
    with shop.cursor() as cur:
        for order in range(1, ORDERS + 1):  # N+1: a lookup per line
            cur.execute("SELECT id, product_id FROM order_lines WHERE order_id = %s", (order,))
            for _, product in cur.fetchall():
                cur.execute("SELECT id, name, price FROM products WHERE id = %s", (product,))
                cur.fetchall()
    batched = server.connect("govern_app", database="app", tcp=True)
    with batched.cursor() as cur:
        for order in range(1, ORDERS + 1):  # the same reads, one IN() per order
            cur.execute("SELECT id, product_id FROM order_lines WHERE order_id = %s", (order,))
            keys = [product for _, product in cur.fetchall()]
            list(select_in(batched, "products", "id", keys, columns=("id", "name", "price")))
        for request in range(150):  # one customer per request: not a loop
            cur.execute("SELECT id, name FROM customers WHERE id = %s", (request % 200 + 1,))
            cur.execute("SELECT COUNT(*) FROM order_lines WHERE order_id = %s", (request % 30,))

    reader = server.connect("govern_app", database="app", tcp=True)
    updater = server.connect(database="app")
    with updater.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
    with reader.cursor() as read, updater.cursor() as write:
        for i in range(CACHE_READS):
            day = f"2025-01-{i % 7 + 1:02d}"
            read.execute(f"SELECT SQL_CACHE orders, revenue FROM daily_totals WHERE day = '{day}'")
            read.execute(f"SELECT orders, revenue FROM daily_totals WHERE day = '{day}'")
            read.execute(f"SELECT SQL_CACHE status, n FROM live_orders WHERE id = {i % 3 + 1}")
            read.execute(f"SELECT status, n FROM live_orders WHERE id = {i % 3 + 1}")
            write.execute("UPDATE live_orders SET n = n + 1 WHERE id = %s", (i % 3 + 1,))
            if i == CACHE_READS // 2:  # the summary is rebuilt once
                write.execute(
                    "UPDATE daily_totals SET orders = orders + 1 WHERE day = '2025-01-01'"
                )
    for conn in (writer, batcher, shop, batched, reader, updater):
        conn.close()
