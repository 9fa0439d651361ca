#!/usr/bin/env python3
"""`govern digest --review --history` beside `pt-query-digest --review --history`, one run.

    python3 benchmarks/digest_pt_tables.py --defaults-file root.cnf             # 2,000 classes
    python3 benchmarks/digest_pt_tables.py --defaults-file root.cnf --classes 10000
    python3 benchmarks/digest_pt_tables.py --defaults-file root.cnf --log slow.log

Writes a log of 3 events per class (distinct table names: distinct classes) unless --log is
given, then times, each as its own child: govern without the tables (the digest and a
one-class report), govern with both tables (schema bench_gv, created), pt-query-digest 3.x
with both tables (schema bench_pt, created; --limit 100% --no-report). Prints wall time and
the child's peak RSS, the load average before and after (the machine is shared), and the rows
each wrote. Both schemas are dropped first; leave them to inspect, or drop them after.
The server must be a throwaway one (tests/harness.py start): the benchmark creates schemas.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pymysql


def make_log(path: Path, classes: int) -> None:
    rng = random.Random(1)
    with path.open("w", encoding="utf-8") as out:
        for i in range(classes * 3):
            n, name = i % classes, ""
            for _ in range(4):
                name += string.ascii_lowercase[n % 26]
                n //= 26
            out.write(
                f"# Time: 2026-11-21T22:{(i // 1000) % 60:02d}:{i % 60:02d}.000000Z\n"
                f"# User@Host: app[app] @ localhost []  Id: {i % 50}\n"
                f"# Query_time: {rng.random() / 100:.6f}  Lock_time: 0.000010 "
                f"Rows_sent: {rng.randint(0, 20)}  Rows_examined: {rng.randint(0, 2000)}\n"
                f"SET timestamp=1795300751;\nSELECT * FROM t_{name} WHERE id = {i};\n"
            )


def timed(label: str, argv: list[str]) -> None:
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if status != 0:
        sys.exit(f"{label} failed: {stderr.strip()}")
    print(f"{label:<32} {wall:8.2f} s  {usage.ru_maxrss / 1024:8.0f} MB RSS")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--defaults-file", required=True, help="the server's client option file")
    parser.add_argument("--classes", type=int, default=2000)
    parser.add_argument("--log", type=Path)
    args = parser.parse_args()
    pt = shutil.which("pt-query-digest")
    conn = pymysql.connect(read_default_file=args.defaults_file, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("DROP DATABASE IF EXISTS bench_gv")
        cur.execute("DROP DATABASE IF EXISTS bench_pt")
    with tempfile.TemporaryDirectory() as tmp:
        log = args.log or Path(tmp) / "slow.log"
        if args.log is None:
            make_log(log, args.classes)
        print(f"{log}: {log.stat().st_size / 1e6:.1f} MB; load average {os.getloadavg()}")
        govern = [sys.executable, "-m", "govern", "digest", "--no-rules"]
        many = ["--max-classes", str(max(10_000, args.classes))]
        timed("govern, no tables", [*govern, *many, "--format", "md", "--top", "1", str(log)])
        tables = []
        for option, table in (("--review", "review"), ("--history", "history")):
            tables += [option, f"F={args.defaults_file},D=bench_gv,t={table}"]
        timed(
            "govern --review --history",
            [*govern, *many, "--format", "md", "--top", "1", *tables,
             "--create-review-table", "--create-history-table", str(log)],
        )  # fmt: skip
        if pt is None:
            print("pt-query-digest is not installed: no reference row")
        else:
            pt_tables = []
            for option, table in (("--review", "review"), ("--history", "history")):
                pt_tables += [option, f"F={args.defaults_file},D=bench_pt,t={table}"]
            timed(
                "pt-query-digest --review --history",
                [pt, "--no-version-check", "--no-report", "--limit", "100%", *pt_tables,
                 "--create-review-table", "--create-history-table", str(log)],
            )  # fmt: skip
    with conn.cursor() as cur:
        for schema in ("bench_gv", "bench_pt"):
            cur.execute(
                "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s", (schema,)
            )
            if cur.fetchone()[0]:
                cur.execute(f"SELECT COUNT(*) FROM {schema}.history")
                print(f"{schema}.history: {cur.fetchone()[0]} rows")
    print(f"load average after {os.getloadavg()}")


if __name__ == "__main__":
    main()
