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
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from govern.fingerprint import query_id
from govern.history.regressions import find_regressions
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=5)
    parser.add_argument("--classes", type=int, default=200)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    base = widened(base_bucket(CORPUS_LOG), args.classes)
    target = base["classes"][0]["id"]
    hours = [UNTIL - dt.timedelta(hours=h) for h in range(8 * 24, 0, -1)]
    changed = UNTIL - dt.timedelta(hours=6)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "history.db"
        store = open_store(f"sqlite:{path}")
        began = time.perf_counter()
        slow = slowed(base, target, 20)
        for index in range(args.hosts):
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
        buckets = args.hosts * len(hours)
        print(f"store: {args.hosts} hosts x {len(hours)} hourly buckets x {args.classes} classes"
              f" = {buckets * args.classes:,} class-buckets, written in {written:.1f} s;"
              f" {path.stat().st_size / 1e6:.1f} MB; {rolled.days} host-days and"
              f" {rolled.fleet_days} fleet days rolled up in {rolled_s:.1f} s")  # fmt: skip
        began = time.perf_counter()
        outcome = find_regressions(
            store, baseline=dt.timedelta(days=7), window=dt.timedelta(hours=24), until=UNTIL
        )
        judged = time.perf_counter() - began
        if "--profile" in sys.argv:
            import cProfile

            cProfile.runctx(
                "find_regressions(store, baseline=dt.timedelta(days=7),"
                " window=dt.timedelta(hours=24), until=UNTIL)",
                globals(),
                locals(),
                sort="cumulative",
            )
        store.close()
    print(f"govern regressions --baseline 7d --window 24h: {judged:.2f} s"
          f" ({judged / args.hosts:.2f} s per host, fleet-wide included)")  # fmt: skip
    for found in outcome.regressions:
        print(f"  {found.host or 'fleet'} {found.id[-16:]} {'/'.join(found.kinds)}"
              f" since {found.changed_at}")  # fmt: skip
    expected = {("db1", target, changed)} | ({(None, target, changed)} if args.hosts > 1 else set())
    got = {(r.host, r.id, r.changed_at) for r in outcome.regressions}
    print("as expected" if got == expected else f"UNEXPECTED: {got ^ expected}")
    return 0 if got == expected else 1


if __name__ == "__main__":
    sys.exit(main())
