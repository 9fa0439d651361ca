#!/usr/bin/env python3
"""Batch writer benchmark: rows/s of each way to upsert, side by side, in one run.

    .venv/bin/python benchmarks/batch_writer.py [--rows 20000] [--defaults-file F]

Starts a throwaway MariaDB (tests/harness.py) unless --defaults-file names a
server, and measures it over its socket and TCP with the server's default
durability (innodb_flush_log_at_trx_commit=1) and over the socket with the test
harness's relaxed one (2); creates and drops its own table ``bench`` in schema
``app`` (or --schema).
Every method upserts the same rows into a table that already holds every
other key, so half the rows insert and half update. Reported as rows/s and as
a ratio to row-at-a-time. Extra drivers are optional (pip install
'.[bench]', which needs libmariadb-dev for MariaDB Connector/Python); a
missing one is reported, not silently left out.

Compared:
* row-at-a-time: one ``INSERT … ON DUPLICATE KEY UPDATE`` per row (PyMySQL);
* govern.batch.upsert at batch sizes 10, 100, 1,000 (PyMySQL, client-side multi-row);
* the hand-written nested ``IF(id = k1, v1, IF(id = k2, v2, …))`` update clause at 100;
* PyMySQL executemany (its own multi-row rewriting) at 100;
* mysql-connector-python server-side prepared statements: a 100-row statement
  re-executed, and executemany (one execute per row);
* MariaDB Connector/Python: executemany (bulk execution, arrays of parameters)
  and a 100-row prepared statement;
* govern load of the same rows from a CSV file.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime
import importlib
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import pymysql  # noqa: E402

from govern.batch import upsert  # noqa: E402
from govern.batch.load import load_file  # noqa: E402
from govern.connection import ConnectionSettings, connect, resolve_settings  # noqa: E402

COLUMNS = ("id", "k", "a", "b", "c", "d")
UPDATED = COLUMNS[1:]
DDL = (
    "CREATE TABLE bench (id INT PRIMARY KEY, k VARCHAR(32) NOT NULL, a INT NOT NULL,"
    " b DOUBLE NOT NULL, c VARCHAR(64) NOT NULL, d DATETIME NOT NULL) ENGINE=InnoDB"
)
Row = tuple[Any, ...]
#: (transport, TCP?, innodb_flush_log_at_trx_commit): 1 is the server default (a redo-log
#: flush per commit); 2 is the test harness's relaxed setting, the best case for row-at-a-time.
CONFIGURATIONS = (
    ("Unix socket", False, 1),
    ("TCP 127.0.0.1", True, 1),
    ("Unix socket", False, 2),
)


def make_rows(n: int, version: int) -> list[Row]:
    start = datetime.datetime(2024, 1, 1)
    return [
        (i, f"key-{i}", i * 7 + version, i / 3.0, f"summary text {i} " * 2, start) for i in range(n)
    ]


def chunks(rows: Sequence[Row], size: int) -> Iterator[Sequence[Row]]:
    for i in range(0, len(rows), size):
        yield rows[i : i + size]


def value_clause(size: int, marker: str = "%s") -> str:
    group = "(" + ", ".join([marker] * len(COLUMNS)) + ")"
    return ", ".join([group] * size)


UPSERT_TAIL = " ON DUPLICATE KEY UPDATE " + ", ".join(f"{c} = VALUE({c})" for c in UPDATED)
INSERT_HEAD = f"INSERT INTO bench ({', '.join(COLUMNS)}) VALUES "


class Bench:
    def __init__(self, settings: ConnectionSettings, schema: str, rows: int) -> None:
        self.settings = settings
        self.schema = schema
        self.rows = make_rows(rows, version=1)
        self.pymysql_kwargs = {**settings.pymysql_kwargs(), "database": schema}

    def conn(self) -> Any:
        return connect(self.settings, database=self.schema)

    def reset(self) -> None:
        """A table holding every other key (old values): half the upserts insert, half update."""
        conn = self.conn()
        with conn.cursor() as cur:
            cur.execute("DROP TABLE IF EXISTS bench")
            cur.execute(DDL)
            old = [r for r in make_rows(len(self.rows), version=0) if r[0] % 2 == 0]
            for chunk in chunks(old, 1000):
                cur.execute(INSERT_HEAD + value_clause(len(chunk)), [v for r in chunk for v in r])
        conn.close()

    def check(self) -> None:
        conn = self.conn()
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT(*), SUM(a) FROM bench")
            count, total = cur.fetchone()
        conn.close()
        expected = sum(r[2] for r in self.rows)
        if count != len(self.rows) or int(total) != expected:
            raise RuntimeError(f"wrong result: {count} rows, sum {total} (want {expected})")

    def time(self, run: Callable[[list[Row]], None], n: int | None, repeat: int) -> float:
        """Median rows/s of ``run`` over ``repeat`` runs on the first ``n`` rows (all when None).

        Each run starts from the same half-filled table; a full run is checked.
        """
        rows = self.rows[: n or len(self.rows)]
        rates = []
        for _ in range(repeat):
            self.reset()
            started = time.perf_counter()
            run(rows)
            rates.append(len(rows) / (time.perf_counter() - started))
            if n is None:
                self.check()
        return statistics.median(rates)


# --- the methods ------------------------------------------------------------------------------
def row_at_a_time(bench: Bench) -> Callable[[list[Row]], None]:
    def run(rows: list[Row]) -> None:
        conn = bench.conn()
        with conn.cursor() as cur:
            for row in rows:
                cur.execute(INSERT_HEAD + value_clause(1) + UPSERT_TAIL, row)
        conn.close()

    return run


def govern_upsert(bench: Bench, size: int) -> Callable[[list[Row]], None]:
    def run(rows: list[Row]) -> None:
        conn = bench.conn()
        result = upsert(conn, "bench", iter(rows), key="id", columns=COLUMNS, batch_size=size)
        assert result.rows == len(rows), result
        conn.close()

    return run


def nested_if(bench: Bench, size: int) -> Callable[[list[Row]], None]:
    """The origin story's hand-written clause: each column an IF chain over every row's key.

    ``c = IF(id = k1, v1, IF(id = k2, v2, … c))``: every value bound twice, and the
    server walks the chain for each duplicate row.
    """

    def run(rows: list[Row]) -> None:
        conn = bench.conn()
        with conn.cursor() as cur:
            for chunk in chunks(rows, size):
                params = [v for r in chunk for v in r]
                clauses = []
                for position, column in enumerate(COLUMNS[1:], 1):
                    chain = "IF(id = %s, %s, " * len(chunk) + column + ")" * len(chunk)
                    clauses.append(f"{column} = {chain}")
                    params.extend(v for r in chunk for v in (r[0], r[position]))
                sql = f"{INSERT_HEAD}{value_clause(len(chunk))} ON DUPLICATE KEY UPDATE "
                cur.execute(sql + ", ".join(clauses), params)
        conn.close()

    return run


def pymysql_executemany(bench: Bench, size: int) -> Callable[[list[Row]], None]:
    def run(rows: list[Row]) -> None:
        conn = bench.conn()
        with conn.cursor() as cur:
            for chunk in chunks(rows, size):
                cur.executemany(INSERT_HEAD + value_clause(1) + UPSERT_TAIL, chunk)
        conn.close()

    return run


def connector_kwargs(bench: Bench) -> dict[str, Any]:
    k = bench.pymysql_kwargs
    out = {"user": k["user"], "password": k["password"], "database": bench.schema}
    if "unix_socket" in k:
        out["unix_socket"] = k["unix_socket"]
    else:
        out.update(host=k["host"], port=k["port"])
    return out


def prepared(bench: Bench, driver: str, size: int, many: bool) -> Callable[[list[Row]], None]:
    """A DB-API driver's server-side prepared cursor (``mysql.connector`` or ``mariadb``).

    ``many``: executemany of the one-row statement (MariaDB Connector/Python sends it as
    one bulk execution; mysql-connector executes once per row); else a ``size``-row
    statement executed per batch.
    """
    module = importlib.import_module(driver)

    def run(rows: list[Row]) -> None:
        conn = module.connect(autocommit=True, **connector_kwargs(bench))
        cur = conn.cursor(prepared=True)
        for chunk in chunks(rows, size):
            if many:
                cur.executemany(INSERT_HEAD + value_clause(1, "?") + UPSERT_TAIL, list(chunk))
            else:
                sql = INSERT_HEAD + value_clause(len(chunk), "?") + UPSERT_TAIL
                cur.execute(sql, [v for r in chunk for v in r])
        conn.close()

    return run


def govern_load_csv(bench: Bench, folder: Path) -> Callable[[list[Row]], None]:
    path = folder / "bench.csv"

    def run(rows: list[Row]) -> None:
        conn = bench.conn()
        report = load_file(conn, str(path), "bench", key=["id"])
        assert report.exit_code == 0 and report.result.rows == len(rows), report.to_json()
        conn.close()

    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(bench.rows)
    return run


# --- the run ------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--slow-rows", type=int, default=3_000, help="rows for per-row methods")
    parser.add_argument(
        "--defaults-file",
        help="use this server instead of a throwaway one (which is measured over its socket and TCP)",
    )
    parser.add_argument("--schema", default="app")
    parser.add_argument("--repeat", type=int, default=3, help="runs per method (median)")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        if args.defaults_file:
            settings = resolve_settings(defaults_file=args.defaults_file, environ={})
            run_all(Bench(settings, args.schema, args.rows), args.slow_rows, args.repeat, folder)
            return 0
        from tests.harness import temporary_server

        server = stack.enter_context(temporary_server("govern-bench-"))
        for transport, tcp, flush in CONFIGURATIONS:
            print(f"\n== {transport}, innodb_flush_log_at_trx_commit={flush}")
            with server.connect() as root, root.cursor() as cur:  # type: ignore[attr-defined]
                cur.execute(f"SET GLOBAL innodb_flush_log_at_trx_commit = {flush}")
            cnf = server.defaults_file("root", tcp=tcp)
            settings = resolve_settings(defaults_file=str(cnf), environ={})
            run_all(Bench(settings, args.schema, args.rows), args.slow_rows, args.repeat, folder)
    return 0


def run_all(bench: Bench, slow_rows: int, repeat: int, folder: Path) -> None:
    conn = bench.conn()
    with conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        version = cur.fetchone()[0]
    conn.close()
    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")),
        platform.processor(),
    )  # fmt: skip
    print(f"server {version}; {os.cpu_count()} CPUs ({cpu}); Python {platform.python_version()}")
    print(
        f"{len(bench.rows):,} rows of 6 columns, half new, half updating; per-row methods on {slow_rows:,}"
    )
    methods: list[tuple[str, Callable[[], Callable[[list[Row]], None]], int | None]] = [
        ("row-at-a-time (PyMySQL)", lambda: row_at_a_time(bench), slow_rows),
        ("govern upsert, batch 10", lambda: govern_upsert(bench, 10), None),
        ("govern upsert, batch 100", lambda: govern_upsert(bench, 100), None),
        ("govern upsert, batch 1,000", lambda: govern_upsert(bench, 1000), None),
        ("nested IF() clause, batch 100", lambda: nested_if(bench, 100), None),
        ("PyMySQL executemany, 100", lambda: pymysql_executemany(bench, 100), None),
        ("mysql-connector prepared, 100-row stmt", lambda: prepared(bench, "mysql.connector", 100, False), None),
        ("mysql-connector prepared executemany", lambda: prepared(bench, "mysql.connector", 100, True), slow_rows),
        ("MariaDB C/Py executemany (bulk), 100", lambda: prepared(bench, "mariadb", 100, True), None),
        ("MariaDB C/Py prepared, 100-row stmt", lambda: prepared(bench, "mariadb", 100, False), None),
        ("govern load (CSV file), batch 100", lambda: govern_load_csv(bench, folder), None),
    ]  # fmt: skip
    bench.time(govern_upsert(bench, 100), None, 1)  # warm the server up: not reported
    baseline: float | None = None
    print(f"{'method':42} {'rows/s':>10} {'× row-at-a-time':>16}")
    for name, factory, n in methods:
        try:
            method = factory()
        except ImportError as exc:
            print(f"{name:42} {'not installed':>10}  ({exc.name}: pip install '.[bench]')")
            continue
        try:
            rate = bench.time(method, n, repeat)
        except (pymysql.err.MySQLError, Exception) as exc:  # report, keep comparing the rest
            print(f"{name:42} {'failed':>10}  ({type(exc).__name__}: {str(exc)[:80]})")
            continue
        baseline = baseline or rate
        print(f"{name:42} {rate:10,.0f} {rate / baseline:15.1f}×", flush=True)


if __name__ == "__main__":
    sys.exit(main())
