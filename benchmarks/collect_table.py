#!/usr/bin/env python3
"""`govern collect --table`: reading `mysql.slow_log` with 1 M rows, and what a read costs the
server while it logs.

    python3 benchmarks/collect_table.py                 # 1,000,000 rows
    python3 benchmarks/collect_table.py --rows 200000 --clients 4

Starts a throwaway MariaDB (the test harness), fills `mysql.slow_log` with --rows rows made from
the shared corpus log's statements (the CSV file written while the table is closed: the server
refuses INSERT into a log table), then:

1. reads it all with the collector's table source (`SlowLogTable`, as `govern collect --table`):
   rows per second, and the server's CPU seconds for the read;
2. polls three times with nothing new: the server's CPU for one poll, per row scanned (the
   table is CSV, without index: every read scans it whole, whatever the watermark);
3. runs a logging workload (`long_query_time = 0`, `log_output = TABLE`, --clients point
   selects) for --seconds, twice: alone, and with the collector polling every --every seconds.
   Printed: queries per second and the server's CPU per query in both.

CPU seconds of the server come from /proc/<pid>/stat (utime + stime).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from govern.collect.source import Progress  # noqa: E402
from govern.collect.table import SlowLogTable  # noqa: E402
from govern.connection import resolve_settings  # noqa: E402
from tests.harness import MariaDB  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus" / "mariadb" / "mixed-workload.log"
_ENTRY = re.compile(
    rb"# Query_time: (\S+)\s+Lock_time: (\S+)\s+Rows_sent: (\d+)\s+Rows_examined: (\d+)"
    rb".*?\n(?!#|use |SET timestamp)(.*?);\n(?=#|\Z)",
    re.S,
)


def server_cpu(server: MariaDB) -> float:
    pid = server.pid()
    assert pid is not None
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def statements() -> list[tuple[float, float, int, int, str]]:
    found = []
    for match in _ENTRY.finditer(CORPUS.read_bytes()):
        query_time, lock_time, sent, examined, sql = match.groups()
        found.append(
            (
                float(query_time),
                float(lock_time),
                int(sent),
                int(examined),
                sql.decode("utf-8", "replace"),
            )
        )
    return found


def _csv(value: str) -> str:
    # The table's columns are utf8mb3: characters beyond the BMP (emoji) cannot be there.
    value = "".join(c if ord(c) < 0x10000 else "?" for c in value)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _time(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600:02d}:{whole // 60 % 60:02d}:{whole % 60:02d}.{round((seconds - whole) * 1e6):06d}"


def fill(server: MariaDB, rows: int) -> None:
    """Write ``rows`` rows into slow_log.CSV while the table is closed, then open it."""
    conn: Any = server.connect()
    with conn.cursor() as cur:
        cur.execute("SET GLOBAL slow_query_log = OFF")
        cur.execute("SET GLOBAL log_output = 'FILE'")
        cur.execute("FLUSH TABLES mysql.slow_log")
    picked = statements()
    start = time.time() - rows * 0.001
    with (server.datadir / "mysql" / "slow_log.CSV").open("w") as out:
        for n in range(rows):
            query_time, lock_time, sent, examined, sql = picked[n % len(picked)]
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start + n * 0.001))
            out.write(
                f'"{stamp}.{n % 1000 * 1000:06d}","web[web] @ localhost []",'
                f'"{_time(query_time)}","{_time(lock_time)}",{sent},{examined},"shop",0,0,1,'
                f"{_csv(sql)},{1000 + n % 50},0\n"
            )
    with conn.cursor() as cur:
        cur.execute("FLUSH TABLES mysql.slow_log")
        cur.execute("REPAIR TABLE mysql.slow_log")  # the CSV engine's row count (.CSM)
        cur.fetchall()
        cur.execute("SELECT COUNT(*) FROM mysql.slow_log")
        print(f"mysql.slow_log: {cur.fetchone()[0]:,} rows")
    conn.close()


def table_source(server: MariaDB) -> SlowLogTable:
    settings = resolve_settings(defaults_file=str(server.defaults_file("govern_admin")), environ={})
    source = SlowLogTable(settings)
    source.restore(None)
    return source


def read_all(server: MariaDB, source: SlowLogTable) -> None:
    before_cpu, began = server_cpu(server), time.perf_counter()
    progress = Progress(budget=1 << 40)
    texts = sum(len(text.data) for text in source.read(progress))
    seconds = time.perf_counter() - began
    cpu = server_cpu(server) - before_cpu
    print(
        f"read: {source.rows:,} rows ({texts / 1e6:,.0f} MB of log text) in {seconds:.1f} s,"
        f" {source.rows / seconds:,.0f} rows/s; the server spent {cpu:.1f} CPU-s"
    )


def workload(
    server: MariaDB,
    source: SlowLogTable,
    clients: int,
    seconds: float,
    collector: bool,
    every: float = 5.0,
) -> None:
    admin: Any = server.connect()
    with admin.cursor() as cur:
        cur.execute("SET GLOBAL log_output = 'TABLE'")
        cur.execute("SET GLOBAL long_query_time = 0")
        cur.execute("SET GLOBAL slow_query_log = ON")
    done = threading.Event()
    counts = [0] * clients

    def client(index: int) -> None:
        conn: Any = server.connect()
        with conn.cursor() as cur:
            while not done.is_set():
                cur.execute("SELECT %s + 1", (index,))
                cur.fetchall()
                counts[index] += 1
        conn.close()

    polls = [0]
    if collector:
        list(source.read(Progress(budget=1 << 40)))  # caught up before the clock starts

    def poll() -> None:
        while not done.wait(every):
            list(source.read(Progress(budget=1 << 40)))
            polls[0] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    if collector:
        threads.append(threading.Thread(target=poll))
    cpu = server_cpu(server)
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    done.set()
    for thread in threads:
        thread.join()
    cpu = server_cpu(server) - cpu
    queries = sum(counts)
    with admin.cursor() as cur:
        cur.execute("SET GLOBAL slow_query_log = OFF")
    admin.close()
    label = f"with a poll every {every:g} s ({polls[0]} polls)" if collector else "alone"
    print(
        f"logging workload {label}: {queries / seconds:,.0f} queries/s,"
        f" server {cpu / queries * 1e6:,.0f} µs CPU per query ({cpu:.1f} CPU-s)"
    )


def poll_cost(server: MariaDB, source: SlowLogTable, polls: int = 3) -> None:
    """What one poll costs the server when nothing is new (``source`` is caught up): a
    scan of the whole table."""
    conn: Any = server.connect()
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM mysql.slow_log")
        (rows,) = cur.fetchone()
    conn.close()
    cpu, began = server_cpu(server), time.perf_counter()
    for _ in range(polls):
        list(source.read(Progress(budget=1 << 40)))
    cpu, seconds = (server_cpu(server) - cpu) / polls, (time.perf_counter() - began) / polls
    print(
        f"a poll with nothing new, {rows:,} rows in the table: {seconds:.2f} s,"
        f" {cpu:.2f} server CPU-s ({cpu / rows * 1e6:.1f} µs per row scanned)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--every", type=float, default=5.0, help="seconds between polls [5]")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="govern-bench-table-"))
    server = MariaDB(base)
    (base / "tmp").mkdir()
    server.options["tmpdir"] = str(base / "tmp")  # its sorts' files, nobody else's
    try:
        server.start()
        print(f"load average: {os.getloadavg()[0]:.2f}")
        fill(server, args.rows)
        source = table_source(server)  # one collector's source throughout: caught up once
        read_all(server, source)
        poll_cost(server, source)
        workload(server, source, args.clients, args.seconds, collector=False)
        workload(server, source, args.clients, args.seconds, collector=True, every=args.every)
        source.close()
        print(f"load average: {os.getloadavg()[0]:.2f}")
    finally:
        server.destroy()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
