#!/usr/bin/env python3
"""The history store at fleet scale: ingest rate, bytes per class-bucket, roll-up time, and
the time of a week's fleet report (target: under 5 s for 50 hosts x 7 days x 24 hourly
buckets x 2,000 classes, 16.8 M class-buckets).

    python3 benchmarks/history_fleet.py --store 'mysql://127.0.0.1:PORT/bench?defaults-file=F'
    python3 benchmarks/history_fleet.py --store sqlite:/tmp/h.db --hosts 1 --days 90

The buckets come from a real log: ``govern collect --bucket 1h`` of the shared corpus log
(MariaDB, 10,328 events, 59 classes) gives one bucket; its classes are repeated with shifted
class IDs (``/*sK*/`` appended to the fingerprint, so each copy is a class of its own with the
real figures and sketches) up to --classes. What is measured through the store's own code:

* ingest: ``write()`` of --ingest-hosts hosts x 24 hourly buckets (one day), one process;
* roll-up: one host's day (the exact merge of its 24 buckets), then the fleet's day;
* the fleet's hour: hour 12 of day 0 of every host (copies of db00's bucket rows), rolled up
  into one fleet hour; then the blocks of every ladder (fleet days, fleet hours, host days);
* reports: ``digest --store`` of the window (merge, no rendering), whole fleet, a host glob,
  one host; and the same from noon of day 0 to noon of the last day (``--since 7d`` at
  noon): the whole fleet reads its blocks of days and of hours, a glob its hosts' blocks of
  days and hourly rows for the edges (only db00's edge rows exist: the per-row figure scales).

The rest of the fleet is made server-side from what was measured (``INSERT … SELECT`` of the
rolled-up host-day for every other host and day, of the fleet's day for every other day): the
reports read what real roll-ups would have written, without 350 roll-ups (each timed above) or
16.8 M hourly rows on a shared 2-core machine. The hourly rows of the other host-days are not
made: a report over whole days reads the roll-ups only, and the bytes per class-bucket (from
the measured ingest) give their size.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from govern.fingerprint import query_id
from govern.history.ladders import FLEET_DAYS, FLEET_HOURS, HOST_DAYS
from govern.history.mysql import MysqlStore
from govern.history.sql import SqlStore
from govern.history.store import open_store

REPO = Path(__file__).resolve().parent.parent
CORPUS_LOG = REPO.parent / "shared" / "corpus" / "mariadb" / "mixed-workload.log"
FIRST_DAY = dt.date(2026, 1, 1)


def base_bucket(log: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(
            [sys.executable, "-m", "govern", "collect", str(log), "--to", f"{folder}/b",
             "--state", f"{folder}/s.db", "--once", "--label", "h", "--close-after", "0s"],
            check=True, capture_output=True,
        )  # fmt: skip
        (path,) = Path(folder, "b").glob("*.json")
        return json.loads(path.read_text())


def widened(document: dict[str, Any], classes: int) -> dict[str, Any]:
    """The bucket with its classes repeated under shifted IDs up to ``classes``."""
    real = document["classes"]
    made = []
    for index in range(classes):
        item = copy.deepcopy(real[index % len(real)])
        shard = index // len(real)
        if shard:
            item["fingerprint"] = f"{item['fingerprint']} /*s{shard}*/"
            item["state"].pop("fingerprint_hex", None)
            item["id"] = query_id(item["fingerprint"].encode())
            item["id16"] = item["id"][-16:]
        made.append(item)
    wide = dict(document, classes=made)
    events = sum(item["count"] for item in made)
    seconds = sum(item["state"]["metrics"]["Query_time"]["sum"] for item in made) / 1e6
    wide["totals"] = dict(document["totals"], events=events, query_time=round(seconds, 6))
    return wide


def at(document: dict[str, Any], host: str, start: str) -> dict[str, Any]:
    moved = dict(document)
    moved["inputs"] = [dict(item, host=host) for item in document["inputs"]]
    moved["collect"] = dict(document["collect"], host=host)
    moved["collect"]["bucket"] = dict(document["collect"]["bucket"], start=start, seconds=3600)
    return moved


def timed(work: Any) -> tuple[Any, float]:
    began = time.perf_counter()
    result = work()
    return result, time.perf_counter() - began


def cpu_timed(work: Any) -> tuple[Any, float, float]:
    """(result, wall seconds, CPU seconds of this process): the machine is shared, CPU time
    says what the work costs."""
    began, cpu = time.perf_counter(), time.process_time()
    result = work()
    return result, time.perf_counter() - began, time.process_time() - cpu


def day_text(offset: int) -> str:
    return (FIRST_DAY + dt.timedelta(days=offset)).isoformat()


def replicate(
    store: SqlStore, hosts: int, days: int, ingest_hosts: int, later_hosts: int | None = None
) -> float:
    """Host-days as copies of host 0's rolled-up day 0 (every host on day 0, ``later_hosts``
    on the other days), and every other fleet day as a copy of day 0's; the seconds it took
    (not a figure of the store)."""
    began = time.perf_counter()
    source = day_text(0)
    day_rows = read_rows(store, "history_day_classes", "host = 'db00' AND day = ?", (source,))
    day_head = read_rows(store, "history_days", "host = 'db00' AND day = ?", (source,))
    fleet_rows = read_rows(store, "history_fleet_classes", "day = ?", (source,))
    fleet_head = read_rows(store, "history_fleet_days", "day = ?", (source,))
    for day in range(days):
        for host in range(hosts if day == 0 or later_hosts is None else later_hosts):
            if day == 0 and host < ingest_hosts:
                continue
            name, target = f"db{host:02d}", day_text(day)
            with store._transaction():
                copy_rows(store, "history_day_classes", ("host", "day"), (name, target), day_rows)
                copy_rows(store, "history_days", ("host", "day"), (name, target), day_head)
        if day == 0:
            continue
        target = day_text(day)
        with store._transaction():
            copy_rows(store, "history_fleet_classes", ("day",), (target,), fleet_rows)
            copy_rows(store, "history_fleet_days", ("day",), (target,), fleet_head)
    return time.perf_counter() - began


def fleet_hour(store: SqlStore, args: argparse.Namespace) -> None:
    """Hour 12 of day 0 of every host (copies of db00's bucket rows) rolled up into the fleet's
    hour, timed; that roll-up copied to every hour of day 0 and of the last day (what the
    edges of a window from noon read)."""
    day0 = day_text(0)
    hour = f"{day0} 12:00:00"
    buckets = read_rows(store, "history_buckets", "host = 'db00' AND start = ?", (hour,))
    classes = read_rows(store, "history_classes", "host = 'db00' AND start = ?", (hour,))
    for host in range(args.ingest_hosts, args.hosts):
        with store._transaction():
            copy_rows(store, "history_buckets", ("host",), (f"db{host:02d}",), buckets)
            copy_rows(store, "history_classes", ("host",), (f"db{host:02d}",), classes)
    ((version,),) = store.run("SELECT version FROM history_fleet_hours WHERE start = ?", (hour,))
    moment = dt.datetime.strptime(hour, "%Y-%m-%d %H:%M:%S")
    _, seconds, cpu = cpu_timed(lambda: store._roll_up_fleet_hour(moment, int(version)))
    print(
        f"roll-up of the fleet's hour ({args.hosts} hosts, {args.hosts * args.classes:,}"
        f" class-buckets): {seconds:.1f} s ({cpu:.1f} CPU-s)"
    )
    head = read_rows(store, "history_fleet_hours", "start = ?", (hour,))
    rows = read_rows(store, "history_fleet_hour_classes", "start = ?", (hour,))
    targets = [f"{day0} {h:02d}:00:00" for h in range(24) if h != 12] + [
        f"{day_text(args.days - 1)} {h:02d}:00:00" for h in range(24)
    ]
    for target in targets:
        with store._transaction():
            for table in ("history_fleet_hour_classes", "history_fleet_hours"):
                store.run(f"DELETE FROM {table} WHERE start = ?", (target,))
            copy_rows(store, "history_fleet_hour_classes", ("start",), (target,), rows)
            copy_rows(store, "history_fleet_hours", ("start",), (target,), head)
    size, stored = size_of(store, "history_fleet_hour_classes")
    print(
        f"size: history_fleet_hour_classes {size / 2**20:.1f} MiB for {stored:,} rows:"
        f" {size / stored:,.0f} B per class-hour"
    )


def read_rows(
    store: SqlStore, table: str, where: str, args: tuple[Any, ...]
) -> tuple[list[str], list[tuple[Any, ...]]]:
    columns = [row[1] for row in _columns(store, table)]
    return columns, store.run(f"SELECT {', '.join(columns)} FROM {table} WHERE {where}", args)


def _columns(store: SqlStore, table: str) -> list[tuple[Any, ...]]:
    if isinstance(store, MysqlStore):
        rows = store.run(
            "SELECT ordinal_position, column_name FROM information_schema.columns"
            " WHERE table_schema = DATABASE() AND table_name = ? ORDER BY ordinal_position",
            (table,),
        )
        return [(int(a), str(b)) for a, b in rows]
    return [(row[0], row[1]) for row in store.run(f"PRAGMA table_info({table})")]


def copy_rows(
    store: SqlStore,
    table: str,
    keys: tuple[str, ...],
    values: tuple[Any, ...],
    rows: tuple[list[str], list[tuple[Any, ...]]],
) -> None:
    """``rows`` of ``table`` inserted again with ``keys`` set to ``values``."""
    columns, data = rows
    if not data:
        return
    where = [columns.index(key) for key in keys]
    made = []
    for row in data:
        changed = list(row)
        for index, value in zip(where, values, strict=True):
            changed[index] = value
        made.append(changed)
    store._insert(table, columns, made)


def size_of(store: SqlStore, table: str) -> tuple[int, int]:
    """(bytes, rows) of a table."""
    ((rows,),) = store.run(f"SELECT COUNT(*) FROM {table}")
    if isinstance(store, MysqlStore):
        store.run(f"ANALYZE TABLE {table}")
        ((data, index),) = store.run(
            "SELECT data_length, index_length FROM information_schema.tables"
            " WHERE table_schema = DATABASE() AND table_name = ?",
            (table,),
        )
        return int(data) + int(index), int(rows)
    try:
        ((size,),) = store.run("SELECT SUM(pgsize) FROM dbstat WHERE name LIKE ?", (f"%{table}%",))
    except Exception:  # a SQLite built without dbstat: the whole file
        size = os.path.getsize(store.url.removeprefix("sqlite:"))
    return int(size or 0), int(rows)


def reports(store: SqlStore, args: argparse.Namespace) -> None:
    since = dt.datetime.combine(FIRST_DAY, dt.time())
    until = since + dt.timedelta(days=args.days)
    for label, options in (
        ("whole fleet", {}),
        ("one host", {"host": "db00"}),
        ("hosts db0*", {"hosts": "db0*"}),
    ):
        if label != "whole fleet" and args.hosts == 1:
            continue
        digest, seconds, cpu = cpu_timed(
            lambda options=options: store.digest(since, until, **options)
        )
        shares = digest.top_hosts or {}
        print(
            f"report {args.days} days, {label} ({len(digest.store['hosts'])} hosts):"
            f" {seconds:.2f} s ({cpu:.2f} CPU-s), {digest.partial.events:,} events,"
            f" {len(digest.partial.classes):,} classes, top hosts of {len(shares):,}"
        )
    # a window cutting days (``--since 7d`` at noon): the fleet reads its blocks of hours
    noon = (since + dt.timedelta(hours=12), until - dt.timedelta(hours=12))
    original = SqlStore._read
    for label, options in (("whole fleet", {}), ("hosts db0*", {"hosts": "db0*"})):
        if label != "whole fleet" and args.hosts == 1:
            continue
        units: list[str] = []

        def spy(
            self: SqlStore, ladder: Any, start: int, span: int, shares: Any, units: Any = units
        ) -> Any:
            units.append(f"{ladder.units.removeprefix('history_')}x{span}")
            return original(self, ladder, start, span, shares)

        SqlStore._read = spy  # type: ignore[method-assign]
        try:
            digest, seconds, cpu = cpu_timed(lambda options=options: store.digest(*noon, **options))
        finally:
            SqlStore._read = original  # type: ignore[method-assign]
        print(
            f"report noon to noon ({args.days - 1} days), {label}"
            f" ({len(digest.store['hosts'])} hosts): {seconds:.2f} s ({cpu:.2f} CPU-s),"
            f" {digest.partial.events:,} events; units read: {len(units)}"
            f" ({', '.join(f'{units.count(u)} {u}' for u in sorted(set(units)))})"
        )
    # the edge hours of a glob come from hourly rows, which only the ingest hosts have
    # here; the figure per class-row scales to the fleet
    edge = since + dt.timedelta(hours=12)
    rows = store.run(
        "SELECT COUNT(*) FROM history_classes WHERE host = 'db00' AND start >= ? AND start < ?",
        (
            edge.strftime("%Y-%m-%d %H:%M:%S"),
            (since + dt.timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S"),
        ),
    )[0][0]
    one = {"host": "db00"} if args.hosts > 1 else {}  # one host: its edges from its buckets
    _, seconds, cpu = cpu_timed(lambda: store.digest(edge, until, **one))
    whole = cpu_timed(lambda: store.digest(since + dt.timedelta(days=1), until, **one))[2]
    print(
        f"report of db00 from noon of day 0 (12 edge hours, {rows:,} hourly"
        f" class-rows): {seconds:.2f} s ({cpu:.2f} CPU-s; the same window from midnight"
        f" {whole:.2f} CPU-s): {(cpu - whole) / max(rows, 1) * 1000:.3f} CPU-ms per edge class-row"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", required=True, help="the store URL (a fresh schema or file)")
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--classes", type=int, default=2000)
    parser.add_argument("--ingest-hosts", type=int, default=1)
    parser.add_argument(
        "--later-hosts",
        type=int,
        default=10,
        help="hosts whose day roll-ups are made for the days after the first (db00-db09: the"
        " host-glob report); the fleet's days are made for every day",
    )
    parser.add_argument("--log", default=str(CORPUS_LOG))
    parser.add_argument(
        "--reports-only", action="store_true", help="only the reports, over a store made before"
    )
    args = parser.parse_args()

    store = open_store(args.store)
    assert isinstance(store, SqlStore)
    reuse = bool(store.run("SELECT COUNT(*) FROM history_day_classes")[0][0])
    if store.run("SELECT COUNT(*) FROM history_buckets")[0][0] and not reuse:
        print(f"{store.url}: not empty; give a fresh store", file=sys.stderr)
        return 2
    kind = "MariaDB" if isinstance(store, MysqlStore) else "SQLite"
    print(f"store: {kind} {store.url}")
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at start")
    if args.reports_only:
        reports(store, args)
        store.close()
        return 0
    bucket = widened(base_bucket(Path(args.log)), args.classes)
    print(f"bucket: {len(bucket['classes']):,} classes, {bucket['totals']['events']:,} events")

    # --- ingest: one day of hourly buckets per ingest host, through write() --------------
    day0 = day_text(0)
    documents = [
        (f"db{host:02d}", f"{day0} {hour:02d}:00:00")
        for host in range(args.ingest_hosts)
        for hour in range(24)
    ]
    if reuse:  # a run stopped after its host roll-up: go on from there
        print("reusing the ingest and host-day roll-up of an earlier run:")
        store.run("DELETE FROM history_days WHERE host <> 'db00'")
        store.run("DELETE FROM history_day_classes WHERE host <> 'db00'")
        for table in (
            "history_fleet_classes",
            "history_fleet_days",
            "history_fleet_blocks",
            "history_fleet_block_classes",
        ):
            store.run(f"DELETE FROM {table}")
        store.run("INSERT INTO history_fleet_days (day) VALUES (?)", (day0,))
    _, seconds = timed(
        lambda: (
            None
            if reuse
            else [store.write(host, start, at(bucket, host, start)) for host, start in documents]
        )
    )
    rows = len(documents) * args.classes
    if not reuse:
        print(
            f"ingest: {len(documents)} buckets ({rows:,} class-buckets) in {seconds:.1f} s:"
            f" {len(documents) / seconds:.2f} buckets/s, {rows / seconds:,.0f} class-buckets/s"
        )
    size, stored = size_of(store, "history_classes")
    print(
        f"size: history_classes {size / 2**20:.1f} MiB for {stored:,} rows: {size / stored:,.0f} B per class-bucket"
    )

    # --- roll-ups --------------------------------------------------------------------
    now = dt.datetime.combine(FIRST_DAY, dt.time()) + dt.timedelta(days=2)
    # the fleet's hours are made below from one measured roll-up: not rolled up here
    store.run("UPDATE history_fleet_hours SET stale = 2")
    done, seconds, cpu = cpu_timed(lambda: None if reuse else store.roll_up(now, host="db00"))
    if not reuse:
        print(
            f"roll-up of one host-day ({24 * args.classes:,} class-buckets): {seconds:.1f} s"
            f" ({cpu:.1f} CPU-s)"
        )
    fleet_hour(store, args)
    replicate_seconds = 0.0
    if args.hosts > args.ingest_hosts:
        replicate_seconds = replicate(store, args.hosts, 1, args.ingest_hosts)
    # day 0's blocks of hours (a collector builds them through the day, about one an hour)
    last = FLEET_HOURS.number(f"{day0} 23:00:00")
    built, seconds, cpu = cpu_timed(lambda: store._roll_up_blocks(FLEET_HOURS, last))
    print(f"fleet blocks of 2-8 hours of day 0: {built} in {seconds:.1f} s ({cpu:.1f} CPU-s)")
    # the fleet's day from every host's day (its hours taken out of the way), then from its
    # hours (3 blocks of 8 hours)
    after = f"{day_text(1)} 00:00:00"
    for source, hours in ((f"{args.hosts} host-days", 2), ("3 blocks of 8 fleet hours", 0)):
        store.run("UPDATE history_fleet_hours SET stale = ? WHERE start < ?", (hours, after))
        store.run("UPDATE history_fleet_days SET stale = 1")
        done, seconds, cpu = cpu_timed(lambda: store.roll_up(now))
        print(
            f"roll-up of the fleet's day from {source}: {seconds:.1f} s ({cpu:.1f} CPU-s;"
            f" {done.fleet_days} fleet day)"
        )
    replicate_seconds += replicate(store, args.hosts, args.days, args.hosts, args.later_hosts)
    size, stored = size_of(store, "history_day_classes")
    fleet_size, fleet_rows = size_of(store, "history_fleet_classes")
    print(
        f"made by copies: {args.hosts} hosts' first day, {args.later_hosts} hosts' other days,"
        f" {args.days} fleet days, in {replicate_seconds:.0f} s;"
        f" host-day roll-ups {size / 2**20:.0f} MiB ({size / max(stored, 1):,.0f} B per class-day),"
        f" fleet-day roll-ups {fleet_size / 2**20:.0f} MiB ({fleet_size / max(fleet_rows, 1):,.0f} B per class-day)"
    )
    store.run("UPDATE history_fleet_days SET stale = 0")
    last_day = FLEET_DAYS.number(day_text(args.days - 1))
    last_hour = FLEET_HOURS.number(f"{day_text(args.days - 1)} 23:00:00")
    hosts = [f"db{host:02d}" for host in range(args.later_hosts or args.hosts)]
    for label, ladders, last in (
        ("fleet blocks of 2-64 days", [FLEET_DAYS], last_day),
        ("fleet blocks of 2-8 hours", [FLEET_HOURS], last_hour),
        (f"host blocks of 2-64 days ({len(hosts)} hosts)",
         [HOST_DAYS.of(name) for name in hosts], last_day),
    ):  # fmt: skip
        built, seconds, cpu = cpu_timed(
            lambda ladders=ladders, last=last: sum(
                store._roll_up_blocks(ladder, last) for ladder in ladders
            )
        )
        print(f"{label} built: {built} in {seconds:.1f} s ({cpu:.1f} CPU-s)")
    for table in ("history_fleet_hour_block_classes", "history_host_block_classes"):
        size, stored = size_of(store, table)
        print(f"size: {table} {size / 2**20:.1f} MiB, {stored:,} rows")
    hourly = args.hosts * args.days * 24 * args.classes
    print(f"stands for: {hourly:,} hourly class-buckets")

    reports(store, args)
    print(f"machine load at the end: {os.getloadavg()[0]:.1f}")
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
