#!/usr/bin/env python3
"""``govern regressions`` over a SQLite history store: time to judge --hosts hosts, 7 days of
baseline and a 24-hour window of hourly buckets of --classes classes each, per host and
fleet-wide, and what it finds.

    python3 benchmarks/regressions.py --hosts 5 --classes 200

The buckets come from the shared corpus log (``govern collect --bucket 1h``: one real bucket of
59 classes), its classes repeated under shifted IDs up to --classes (as
benchmarks/history_fleet.py does), written for every host and hour through the store's own
``write``. On the first host, in the window's last 6 hours, one class runs 20 times slower
(its Query_time figures and sketch scaled): the run must report that class on that host, the
hour it changed, and nothing else.

Only db1 and db2 are written through ``write`` and rolled up; db3… are copies of db2 made
by the server (``INSERT … SELECT`` of its bucket, class and day rows): a fleet of 10 × 500
fills in minutes, not hours. The fleet's own roll-ups (which regressions do not read) are
cleared, so a reference report reads the hosts' days. ``--keep`` leaves the store for
another run, ``--reuse URL`` judges an existing one (no fill).

``--reference`` also judges the same store the way ``govern regressions`` did before its lean
store query (govern/history/figures.py): from merged reports (``store.report()``, every
class's saved state unpacked and merged), and checks both find exactly the same.
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
from govern.history.regressions import (
    STEP,
    Outcome,
    Rules,
    Span,
    find_regressions,
    first_crossing,
    judge,
)
from govern.history.store import open_store

REPO = Path(__file__).resolve().parent.parent
CORPUS_LOG = REPO.parent / "shared" / "corpus" / "mariadb" / "mixed-workload.log"
UNTIL = dt.datetime(2026, 11, 27, 6, 0)


def base_bucket(log: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(
            [sys.executable, "-m", "govern", "collect", str(log), "--to", f"{folder}/b",
             "--state", f"{folder}/s.db", "--once", "--label", "h", "--close-after", "0s"],
            check=True, capture_output=True,
        )  # fmt: skip
        (path,) = Path(folder, "b").glob("*.json")
        return dict(json.loads(path.read_text()))


def widened(document: dict[str, Any], classes: int) -> dict[str, Any]:
    real = [item for item in document["classes"] if "Query_time" in item["state"]["metrics"]]
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
    return dict(document, classes=made)


def slowed(document: dict[str, Any], class_id: str, factor: int) -> dict[str, Any]:
    """The bucket with one class's Query_time ``factor`` times longer (sums and sketch)."""
    from govern import sketch

    changed = copy.deepcopy(document)
    for item in changed["classes"]:
        if item["id"] != class_id:
            continue
        metric = item["state"]["metrics"]["Query_time"]
        for key in ("sum", "min", "max"):
            if isinstance(metric.get(key), int):
                metric[key] *= factor
        scaled: dict[int, int] = {}
        for key, count in sketch.from_pairs(metric["buckets"]).items():
            target = sketch.bucket_key(sketch.bucket_value(key) * factor)
            scaled[target] = scaled.get(target, 0) + count
        metric["buckets"] = sketch.to_pairs(scaled)
    return changed


def by_reports(store: Any, until: dt.datetime, hosts: list[str]) -> list[dict[str, Any]]:
    """The regressions judged from merged reports (the reference: what find_regressions read
    before figures.py), per host then fleet-wide, as JSON."""
    rules = Rules()
    window_since = until - dt.timedelta(hours=24)
    since = window_since - dt.timedelta(days=7)

    def hours(**where: Any) -> tuple[float, float]:
        points = [p for p in store.series(since, until, step=STEP, **where) if p.count]
        before = sum(1 for p in points if p.start < window_since)
        return float(before), float(len(points) - before)

    found = []
    for host in hosts:
        before, after = hours(host=host)
        for r in judge(
            store.report(since, window_since, host=host),
            store.report(window_since, until, host=host),
            baseline_hours=before, window_hours=after, rules=rules, host=host,
        ):  # fmt: skip
            r.hosts = [host]
            r.changed_at = first_crossing(
                store.series(window_since, until, step=STEP, host=host, class_id=r.id), r, rules
            )
            found.append(r)
    if len(hosts) > 1:
        before, after = hours()
        window = store.report(window_since, until, hosts="*")
        costs = {c.id: [s.host for s in c.top_hosts] for c in window.classes}
        for r in judge(
            store.report(since, window_since, hosts="*"), window,
            baseline_hours=before, window_hours=after, rules=rules, host=None,
        ):  # fmt: skip
            r.hosts = [f.host for f in found if f.id == r.id and f.host] or costs.get(r.id, [])
            r.changed_at = first_crossing(
                store.series(window_since, until, step=STEP, hosts="*", class_id=r.id), r, rules
            )
            found.append(r)
    span = Span(since, until, 0)
    return Outcome("", span, span, rules, hosts, None, found).to_json()["regressions"]


def fill(
    store: Any,
    base: dict[str, Any],
    target: str,
    hosts: int,
    classes: int,
    hours: list[dt.datetime],
    changed: dt.datetime,
    path: Path,
) -> None:
    """db1 (``target`` slowed from ``changed``) and db2 written and rolled up; db3… copied
    from db2 by the server; the fleet's roll-ups cleared (they would count db1 and db2)."""
    began = time.perf_counter()
    slow = slowed(base, target, 20)
    for index in range(min(hosts, 2)):
        host = f"db{index + 1}"
        for at in hours:
            document = slow if index == 0 and at >= changed else base
            start = f"{at:%Y-%m-%d %H:%M:%S}"
            document = dict(document, collect=dict(document["collect"], host=host))
            store.write(host, start, document)
    written = time.perf_counter() - began
    began = time.perf_counter()
    rolled = store.roll_up(now=UNTIL)  # as govern collect --store does when a day ends
    rolled_s = time.perf_counter() - began
    began = time.perf_counter()
    tables = {
        "history_buckets": "start, seconds, events, query_time, qt_sketch, meta, written_at",
        "history_classes": "start, class_id, count, query_time, qt_max, qt_sketch, state",
        "history_days": "day, stale, version, pruned, events, query_time, qt_sketch, meta,"
        " rolled_at",
        "history_day_classes": "day, class_id, count, query_time, qt_max, qt_sketch, state",
    }
    for index in range(2, hosts):
        for table, columns in tables.items():
            store.run(
                f"INSERT INTO {table} (host, {columns}) SELECT ?, {columns} FROM {table}"
                " WHERE host = 'db2'",
                (f"db{index + 1}",),
            )
    for table in ("history_fleet_classes", "history_fleet_block_classes", "history_fleet_blocks"):
        store.run(f"DELETE FROM {table}")
    store.run("UPDATE history_fleet_days SET stale = 1, meta = NULL")
    copied = time.perf_counter() - began
    print(f"store: {hosts} hosts x {len(hours)} hourly buckets x {classes} classes"
          f" = {hosts * len(hours) * classes:,} class-buckets; db1, db2 written in {written:.1f} s,"
          f" {rolled.days} host-days rolled up in {rolled_s:.1f} s, db3… copied in {copied:.1f} s;"
          f" {path.stat().st_size / 1e6 if path.exists() else 0:.1f} MB (SQLite)")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=5)
    parser.add_argument("--classes", type=int, default=200)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--keep", help="keep the store (SQLite: move it to this path)")
    parser.add_argument("--reuse", help="judge this existing store, no fill (--classes as filled)")
    parser.add_argument("--reference", action="store_true", help="also judge by merged reports")
    parser.add_argument(
        "--store",
        help="a new MySQL/MariaDB schema to fill (mysql://…, dropped at the end);"
        " default: a temporary SQLite file",
    )
    args = parser.parse_args()
    base = widened(base_bucket(CORPUS_LOG), args.classes)
    target = base["classes"][0]["id"]
    hours = [UNTIL - dt.timedelta(hours=h) for h in range(8 * 24, 0, -1)]
    changed = UNTIL - dt.timedelta(hours=6)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "history.db"
        store = open_store(args.reuse or args.store or f"sqlite:{path}")
        if not args.reuse:
            fill(store, base, target, args.hosts, args.classes, hours, changed, path)
        hosts = store.hosts(UNTIL - dt.timedelta(days=8), UNTIL)
        load = os.getloadavg()[0]
        began, cpu = time.perf_counter(), time.process_time()
        outcome = find_regressions(
            store, baseline=dt.timedelta(days=7), window=dt.timedelta(hours=24), until=UNTIL
        )
        judged, judged_cpu = time.perf_counter() - began, time.process_time() - cpu
        if "--profile" in sys.argv:
            import cProfile

            cProfile.runctx(
                "find_regressions(store, baseline=dt.timedelta(days=7),"
                " window=dt.timedelta(hours=24), until=UNTIL)",
                globals(),
                locals(),
                sort="cumulative",
            )
        same = True
        if args.reference:
            began, cpu = time.perf_counter(), time.process_time()
            reference = by_reports(store, UNTIL, outcome.hosts)
            referenced, referenced_cpu = time.perf_counter() - began, time.process_time() - cpu
            same = reference == outcome.to_json()["regressions"]
            print(f"reference (merged reports, as before figures.py): {referenced:.2f} s"
                  f" ({referenced_cpu:.2f} CPU-s);"
                  f" {'same findings, figure for figure' if same else 'DIFFERENT findings'}")  # fmt: skip
        if args.store and not args.keep:
            store.run(f"DROP DATABASE `{store.target.schema}`")  # type: ignore[attr-defined]
        store.close()
        if args.keep and not args.store and not args.reuse:
            path.replace(args.keep)
            print(f"store kept: sqlite:{args.keep}")
    per = judged_cpu / (len(hosts) * args.classes) * 1000
    print(f"govern regressions --baseline 7d --window 24h: {judged:.2f} s at load {load:.1f}"
          f" ({judged_cpu:.2f} client CPU-s; {per:.3f} client CPU-ms per host-class)")  # fmt: skip
    for found in outcome.regressions:
        print(f"  {found.host or 'fleet'} {found.id[-16:]} {'/'.join(found.kinds)}"
              f" since {found.changed_at}")  # fmt: skip
    expected = {("db1", target, changed)} | ({(None, target, changed)} if len(hosts) > 1 else set())
    got = {(r.host, r.id, r.changed_at) for r in outcome.regressions}
    print("as expected" if got == expected else f"UNEXPECTED: {got ^ expected}")
    return 0 if got == expected and same else 1


if __name__ == "__main__":
    sys.exit(main())
