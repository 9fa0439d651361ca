#!/usr/bin/env python3
"""The collector's backfill of the row bounds (govern/history/bounds.py ``backfill``): what a
store written before migration history_0008_row_bounds costs each collector after an
upgrade, call by call, until it is done, and what a call costs once it is.

    python3 benchmarks/history_backfill.py --store sqlite:/tmp/b.db --hours 6 --classes 2000

The buckets are the corpus log's hour widened to --classes classes (as
benchmarks/regressions.py makes them), written through ``write()`` for one host; their
class rows then lose the columns (as rows written before 0008 have none) and the progress is
reset, as migration 0009 leaves a store that had class rows. Each call is what
``govern collect --store`` runs after a bucket it wrote (``StoreSink.maintain``), with the
default budget. Figures: wall and client CPU per call, rows filled, and the same for one
``write()`` of a bucket beside it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from regressions import CORPUS_LOG, base_bucket, widened  # noqa: E402

from govern.history import bounds  # noqa: E402
from govern.history.mysql import MysqlStore  # noqa: E402
from govern.history.sql import SqlStore  # noqa: E402
from govern.history.store import open_store  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", required=True, help="sqlite:PATH or mysql://… (emptied)")
    parser.add_argument("--hours", type=int, default=6)
    parser.add_argument("--classes", type=int, default=2000)
    parser.add_argument("--budget", type=float, default=bounds.BUDGET)
    args = parser.parse_args()
    if args.store.startswith("sqlite:"):
        Path(args.store.removeprefix("sqlite:")).unlink(missing_ok=True)
    store = open_store(args.store)
    assert isinstance(store, SqlStore)
    try:
        document = widened(base_bucket(CORPUS_LOG), args.classes)
        first = dt.datetime(2026, 11, 20)
        writes = []
        for hour in range(args.hours):
            start = f"{first + dt.timedelta(hours=hour):%Y-%m-%d %H:%M:%S}"
            began, cpu = time.perf_counter(), time.process_time()
            store.write("db1", start, dict(document))
            writes.append((time.perf_counter() - began, time.process_time() - cpu))
        rows = int(store.run("SELECT COUNT(*) FROM history_classes")[0][0])
        store.run(
            "UPDATE history_classes SET qt_p95_key = NULL, qt_p99_key = NULL, explained = NULL"
        )
        store.run("UPDATE history_backfill SET bucket = NULL, host = NULL, done = 0")
        wall, cpu = min(writes)
        print(f"store {args.store.split('?')[0]}: {args.hours} buckets x {args.classes:,} classes,"
              f" {rows:,} class rows without the columns")  # fmt: skip
        print(f"write() of one bucket: {wall:.2f} s wall, {cpu:.2f} CPU-s (best of {len(writes)})")
        calls, total_wall, total_cpu, filled = 0, 0.0, 0.0, 0
        while store.run("SELECT 1 FROM history_backfill WHERE done = 0"):
            began, cpu0 = time.perf_counter(), time.process_time()
            done = bounds.backfill(store, args.budget)
            wall, cpu = time.perf_counter() - began, time.process_time() - cpu0
            calls += 1
            total_wall += wall
            total_cpu += cpu
            filled += done
            print(
                f"  call {calls}: {done:,} rows, {wall * 1000:.0f} ms wall, {cpu * 1000:.0f} CPU-ms"
            )
        print(f"backfill: {filled:,} rows in {calls} calls, {total_wall:.2f} s wall,"
              f" {total_cpu:.2f} CPU-s of the client"
              f" ({total_cpu / max(filled, 1) * 1e6:.0f} CPU-us a row)")  # fmt: skip
        began, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(20):
            bounds.backfill(store, args.budget)
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu0
        print(f"a call once done: {wall / 20 * 1000:.2f} ms wall, {cpu / 20 * 1000:.2f} CPU-ms")
        left = store.run("SELECT COUNT(*) FROM history_classes WHERE explained IS NULL")
        print(f"rows left without the columns: {int(left[0][0])}")
        if isinstance(store, MysqlStore):
            store.run(f"DROP DATABASE `{store.target.schema}`")
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
