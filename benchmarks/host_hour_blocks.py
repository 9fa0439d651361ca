#!/usr/bin/env python3
"""A host's blocks of hours, the current ladder (2, 4 and 8 hours) against a lighter one (4
and 8 only, the 4-hour blocks built from the hours' buckets): what building them costs the
collector, what they store, and what the edges of a one-host window then cost to read.

    python3 benchmarks/host_hour_blocks.py --store sqlite:/tmp/hb.db --classes 2000

One host's day of hourly buckets (the corpus log's hour widened to --classes classes, as
benchmarks/regressions.py makes them) is written through ``write()``; its hours are marked
fresh and each ladder's blocks built as the collector builds them (``roll_up``'s host part),
timed in client CPU; then ``digest()`` of the one host over every window from hour H to
midnight (H = 1 … 23: every edge a window can leave in that day), with each ladder's blocks.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from regressions import CORPUS_LOG, base_bucket, widened  # noqa: E402

from govern.history import ladders, sql  # noqa: E402
from govern.history.mysql import MysqlStore  # noqa: E402
from govern.history.sql import SqlStore  # noqa: E402
from govern.history.store import open_store  # noqa: E402

DAY = dt.datetime(2026, 11, 20)
TABLES = ("history_host_hour_blocks", "history_host_hour_block_classes")


def use(spans: tuple[int, ...]) -> None:
    """The host ladder with these spans, where the store reads and builds it."""
    ladder = dataclasses.replace(ladders.HOST_HOURS, spans=spans)
    ladders.HOST_HOURS = ladder
    sql.HOST_HOURS = ladder  # type: ignore[misc]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", required=True, help="sqlite:PATH or mysql://… (emptied)")
    parser.add_argument("--classes", type=int, default=2000)
    args = parser.parse_args()
    if args.store.startswith("sqlite:"):
        Path(args.store.removeprefix("sqlite:")).unlink(missing_ok=True)
    store = open_store(args.store)
    assert isinstance(store, SqlStore)
    try:
        document = widened(base_bucket(CORPUS_LOG), args.classes)
        for hour in range(24):
            start = f"{DAY + dt.timedelta(hours=hour):%Y-%m-%d %H:%M:%S}"
            store.write("db1", start, dict(document))
        hourly = int(store.run("SELECT COUNT(*) FROM history_classes")[0][0])
        print(f"store {args.store.split('?')[0]}: db1, 24 hourly buckets x {args.classes:,}"
              f" classes ({hourly:,} class rows)")  # fmt: skip
        now = DAY + dt.timedelta(days=1, hours=2)
        store._roll_up_host_hours(now, "db1")
        ended = ladders.FLEET_HOURS.number(sql.stamp(now)) - 1
        for spans in ((2, 4, 8), (4, 8)):
            use(spans)
            for table in TABLES:
                store.run(f"DELETE FROM {table}")
            cpu, wall = time.process_time(), time.perf_counter()
            built = store._roll_up_blocks(ladders.HOST_HOURS.of("db1"), ended)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            rows, size = store.run(
                "SELECT COUNT(*), SUM(LENGTH(state) + COALESCE(LENGTH(qt_sketch), 0))"
                " FROM history_host_hour_block_classes"
            )[0]
            reads, read_rows = 0.0, 0
            for hour in range(1, 24):
                since = DAY + dt.timedelta(hours=hour)
                began = time.process_time()
                merged = store.digest(since, DAY + dt.timedelta(days=1), host="db1")
                reads += time.process_time() - began
                read_rows += len(merged.classes) if hasattr(merged, "classes") else 0
            print(f"spans {spans}: {built} blocks in {cpu:.2f} CPU-s ({wall:.1f} s wall),"
                  f" {int(rows):,} block class rows ({int(rows) / hourly:.2f} an hourly row),"
                  f" {int(size or 0) / 1e6:.1f} MB of state and sketch;"
                  f" 23 edge windows read in {reads:.2f} CPU-s")  # fmt: skip
        if isinstance(store, MysqlStore):
            store.run(f"DROP DATABASE `{store.target.schema}`")
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
