#!/usr/bin/env python3
"""Build a fleet-scale history store in minutes, for the fleet report and regression check.

    python3 benchmarks/fleet_store.py --store 'mysql://127.0.0.1:PORT/fleet?defaults-file=F'
    python3 benchmarks/fleet_store.py --store sqlite:/tmp/h.db --hosts 1 --days 90

What it makes (default: 50 hosts x 7 days x 24 hourly buckets x 2,000 classes, the days
ending at --last-day):

1. Variant hours from real logs: the corpus log scaled by the lab's scale-log.py (--shards:
   its table names suffixed per thread: about 2,500 classes) at --variants sizes and seeds,
   each ``govern collect``-ed into one bucket and cut to its --classes busiest classes. Each
   is written once through the store's own ``write()`` into a source store beside the fleet
   (schema ``<name>_src`` or file ``<path>.src``): the measured ingest rate. So are the
   regressed hours (below).
2. Template days: hosts db00..dbNN of the first day, each a different sequence of 24 variant
   hours (so their days differ in events and time), copied server-side into the fleet and
   rolled up by the store's real host-day roll-up (measured).
3. Every other host-day is one of the templates (which one varies by host and day), copied
   server-side (``INSERT … SELECT``, unbinlogged like every store session): its bucket heads
   (every hour), its host-day roll-up (exactly what the roll-up of those hours writes: the
   same rows with host and day rewritten; the meta's host rewritten client-side) and its
   hourly class rows only where the measured queries read them (--hourly: the window edges).
4. Regressions: on a few hosts (db07, db23, db39 of 50; db00 of one host) some classes run
   20 times slower in the last day's hours 18-23: those hours are written through ``write()``,
   their host-days rolled up for real.
5. The store's real roll-ups: every fleet day (measured), then the fleet blocks.

The full hourly table does not fit this machine's disk (16.8 M class-buckets x ~5.5 KB); by
default the hourly rows kept are the first day's from noon and the whole last day: what
``--since 7d`` (edge hours of the first day) and ``regressions --window 24h`` (the cut last
day) read when run on the day after --last-day. The bucket heads exist for every hour.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from history_fleet import cpu_timed, size_of
from regressions import slowed

from govern.history.merging import no_collection
from govern.history.mysql import MysqlStore
from govern.history.rows import pack, unpack
from govern.history.sql import SqlStore
from govern.history.store import open_store

REPO = Path(__file__).resolve().parent.parent
LAB = REPO.parent / "shared" / "lab"
CORPUS_LOG = REPO.parent / "shared" / "corpus" / "mariadb" / "mixed-workload.log"
INPUT_NAME = "/var/lib/mysql/slow.log"
CLASS_COLUMNS = "class_id, count, query_time, qt_max, qt_sketch, state"
HOUR = dt.timedelta(hours=1)


def say(text: str) -> None:
    print(text, flush=True)


def variant(folder: Path, index: int, shards: int, classes: int) -> dict[str, Any]:
    """One bucket of real classes: the corpus log scaled (size and seed by ``index``),
    collected, cut to its ``classes`` busiest classes."""
    log = folder / f"v{index}.log"
    size = 12 + 6 * index  # MB: hours of different weight
    subprocess.run(
        [sys.executable, str(LAB / "scale-log.py"), "--in", str(CORPUS_LOG), "--out", str(log),
         "--size", f"{size}M", "--shards", str(shards), "--seed", str(index + 1)],
        check=True, capture_output=True,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as work:
        subprocess.run(
            [sys.executable, "-m", "govern", "collect", str(log), "--to", f"{work}/b",
             "--state", f"{work}/s.db", "--once", "--label", "src", "--close-after", "0s"],
            check=True, capture_output=True,
        )  # fmt: skip
        (path,) = Path(work, "b").glob("*.json")
        document: dict[str, Any] = json.loads(path.read_text())
    log.unlink()
    found = len(document["classes"])
    kept = sorted(document["classes"], key=lambda item: -int(item["count"]))[:classes]
    document["classes"] = kept
    events = sum(int(item["count"]) for item in kept)
    seconds = (
        sum(item["state"]["metrics"].get("Query_time", {}).get("sum", 0) for item in kept) / 1e6
    )
    document["totals"] = dict(document["totals"], events=events, query_time=round(seconds, 6))
    document["inputs"] = [dict(item, name=INPUT_NAME) for item in document["inputs"]]
    say(
        f"variant {index}: {size} MB scaled log, {found:,} classes, kept {len(kept):,}, {events:,} events"
    )
    return document


def rehost(value: Any, host: str) -> Any:
    """A meta value with every ``host`` field set to ``host``."""
    if isinstance(value, dict):
        return {k: host if k == "host" else rehost(v, host) for k, v in value.items()}
    if isinstance(value, list):
        return [rehost(v, host) for v in value]
    return value


def meta_for(blob: bytes, host: str) -> bytes:
    return pack(rehost(unpack(blob), host))


def stamp(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S")


class Builder:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.store = open_store(args.store)
        assert isinstance(self.store, SqlStore)
        if self.store.run("SELECT COUNT(*) FROM history_buckets")[0][0]:
            raise SystemExit(f"{args.store}: not empty; give a fresh store")
        if isinstance(self.store, MysqlStore):
            schema = self.store.target.schema
            self.src_url = args.store.replace(f"/{schema}", f"/{schema}_src", 1)
            self.src = open_store(self.src_url)
            self.prefix = f"`{schema}_src`."
        else:
            path = args.store.removeprefix("sqlite:")
            self.src_url = f"sqlite:{path}.src"
            Path(f"{path}.src").unlink(missing_ok=True)
            self.src = open_store(self.src_url)
            self.store.run("ATTACH DATABASE ? AS src", (f"{path}.src",))
            self.prefix = "src."
        assert isinstance(self.src, SqlStore)
        self.last = dt.date.fromisoformat(args.last_day)
        self.days = [self.last - dt.timedelta(days=n) for n in range(args.days - 1, -1, -1)]
        self.hosts = [f"db{n:02d}" for n in range(args.hosts)]
        self.regressed = (
            {"db00": (0, 1)}
            if args.hosts == 1
            else {f"db{n:02d}": tuple(range(1 + n % 3)) for n in range(7, args.hosts, 16)}
        )
        self.templates = min(args.templates, args.hosts) if args.hosts > 1 else args.templates

    # --- 1. variants and their ingest ------------------------------------------------
    def ingest(self) -> None:
        args = self.args
        with tempfile.TemporaryDirectory(dir=args.tmp) as folder:
            documents = [
                variant(Path(folder), n, args.shards, args.classes) for n in range(args.variants)
            ]
        # the regressed classes: found in every variant, past the count floor (20 events) in
        # a few hours, slow enough (1 ms) that 20 times slower passes the 10 ms floor too
        common = set.intersection(*({c["id"] for c in d["classes"]} for d in documents))
        slow_enough = [
            c["id"]
            for c in documents[0]["classes"]
            if c["id"] in common
            and int(c["count"]) >= 10
            and c["state"]["metrics"].get("Query_time", {}).get("sum", 0) >= 1000 * int(c["count"])
        ]
        self.slow_classes = slow_enough[:3]
        assert len(self.slow_classes) == 3, "fewer than 3 classes fit for a regression"
        self.variant_starts = []
        base = dt.datetime(2000, 1, 1)
        written = 0
        began, cpu = time.perf_counter(), time.process_time()
        for index, document in enumerate(documents):
            start = stamp(base + index * HOUR)
            self.src.write("src", start, document)
            self.variant_starts.append(start)
            written += len(document["classes"])
        # a slow variant for each (regressed class set, variant): hours 18-23 of the last day
        self.slow_starts: dict[tuple[str, int], str] = {}
        at = base + dt.timedelta(days=1)
        for host, picks in self.regressed.items():
            for hour in range(18, 24):
                which = self.hour_variant(self.template_of(host, self.last), hour)
                key = (host, hour)
                document = documents[which]
                for pick in picks:
                    document = slowed(document, self.slow_classes[pick], 20)
                start = stamp(at)
                at += HOUR
                self.src.write("src", start, document)
                self.slow_starts[key] = start
                written += len(document["classes"])
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
        count = len(documents) + len(self.slow_starts)
        say(
            f"ingest through write(): {count} buckets, {written:,} class-buckets in {seconds:.1f} s"
            f" ({cpu:.1f} CPU-s of the client): {written / seconds:,.0f} class-buckets/s,"
            f" {seconds / count:.2f} s a bucket of {args.classes:,} classes"
        )
        size, rows = size_of(self.src, "history_classes")
        self.bytes_per_row = size / rows
        say(
            f"size: {self.bytes_per_row:,.0f} B per hourly class-bucket (data + index, {rows:,} rows)"
        )
        heads = self.src.run(
            "SELECT start, seconds, events, query_time, qt_sketch, meta FROM history_buckets"
        )
        self.heads = {str(row[0])[:19]: row[1:] for row in heads}

    # --- the shape of the fleet -------------------------------------------------------
    def template_of(self, host: str, day: dt.date) -> int:
        """Which template day a host-day copies: one host's templates are its first days,
        a fleet's are the first day's first hosts."""
        number, offset = int(host[2:]), (day - self.days[0]).days
        if self.args.hosts == 1:
            return offset % self.templates
        if offset == 0 and number < self.templates:
            return number
        return (number * 7 + offset * 3) % self.templates

    def hour_variant(self, template: int, hour: int) -> int:
        """Template days differ: each draws its hours from the variants with its own
        weights (a busy template has more of the big hours)."""
        weights = [1 + ((template + n) % self.args.variants) for n in range(self.args.variants)]
        return random.Random(template * 100 + hour).choices(range(self.args.variants), weights)[0]

    def source_of(self, host: str, day: dt.date, hour: int) -> str:
        if day == self.last and (host, hour) in self.slow_starts:
            return self.slow_starts[(host, hour)]
        return self.variant_starts[self.hour_variant(self.template_of(host, day), hour)]

    def hourly(self, day: dt.date, hour: int) -> bool:
        if day == self.days[0]:
            return hour >= self.args.first_day_from
        return day == self.last

    # --- 2-4. the copies ---------------------------------------------------------------
    def copy_hour(self, host: str, moment: dt.datetime, source: str) -> None:
        self.store.run(
            f"INSERT INTO history_classes (host, start, {CLASS_COLUMNS})"
            f" SELECT ?, ?, {CLASS_COLUMNS} FROM {self.prefix}history_classes"
            " WHERE host = 'src' AND start = ?",
            (host, stamp(moment), source),
        )

    def heads_of(self, host: str, day: dt.date) -> None:
        rows = []
        for hour in range(24):
            moment = dt.datetime.combine(day, dt.time(hour))
            seconds, events, qt, sketch, meta = self.heads[self.source_of(host, day, hour)]
            rows.append((host, stamp(moment), seconds, events, qt, sketch, meta_for(meta, host),
                         stamp(dt.datetime.now())))  # fmt: skip
        self.store._insert(
            "history_buckets",
            ("host", "start", "seconds", "events", "query_time", "qt_sketch", "meta", "written_at"),
            rows,
        )
        # copied hours are not written through write(): their host-hour rows, never rolled up
        # (as migration history_0007 gives hours written before it), keep blocks off them
        self.store._insert(
            "history_host_hours", ("host", "start", "stale"), [(row[0], row[1], 2) for row in rows]
        )

    def build(self) -> None:
        store, args = self.store, self.args
        first = self.days[0]
        # templates: host-days of the first day, every hour copied, rolled up for real
        rolled: list[tuple[str, dt.date]] = [(f"db{n:02d}", first) for n in range(self.templates)]
        if args.hosts == 1:  # one host: its templates are days
            rolled = [("db00", self.days[n]) for n in range(min(self.templates, len(self.days)))]
        rolled = [item for item in rolled if item[1] != self.last or item[0] not in self.regressed]
        rolled += [(host, self.last) for host in self.regressed]
        began = time.perf_counter()
        for host, day in rolled:
            self.heads_of(host, day)
            for hour in range(24):
                self.copy_hour(
                    host, dt.datetime.combine(day, dt.time(hour)), self.source_of(host, day, hour)
                )
            store.run("INSERT INTO history_days (host, day) VALUES (?, ?)", (host, day.isoformat()))
        say(
            f"{len(rolled)} host-days copied hour by hour for their real roll-up in {time.perf_counter() - began:.0f} s"
        )
        times = []
        for host, day in rolled:
            with no_collection():
                _, seconds, cpu = cpu_timed(
                    lambda h=host, d=day: store._roll_up_day(h, d.isoformat(), 1)
                )
            times.append((seconds, cpu))
        say(
            f"roll-up of a host-day ({24 * args.classes:,} class-buckets into {args.classes:,}),"
            f" {len(times)} of them: {sum(t[0] for t in times) / len(times):.1f} s wall,"
            f" {sum(t[1] for t in times) / len(times):.1f} CPU-s of the client each"
            f" (load {os.getloadavg()[0]:.1f})"
        )
        # the template roll-ups, kept apart as the copies' source
        store.run(f"DROP TABLE IF EXISTS {self.prefix}tpl_day_classes")
        store.run(
            f"CREATE TABLE {self.prefix}tpl_day_classes AS SELECT host, day, {CLASS_COLUMNS}"
            " FROM history_day_classes"
        )
        days = {
            (str(h), str(d)): rest
            for h, d, *rest in store.run(
                "SELECT host, day, events, query_time, qt_sketch, meta FROM history_days"
            )
        }
        regressed = {(host, self.last) for host in self.regressed}
        template_day = {
            self.template_of(h, d): (h, d) for h, d in rolled if (h, d) not in regressed
        }
        began = time.perf_counter()
        made = hourly = 0
        for day in self.days:
            for host in self.hosts:
                if (host, day) in rolled:
                    continue
                source_host, source_day = template_day[self.template_of(host, day)]
                events, qt, sketch, meta = days[(source_host, source_day.isoformat())]
                with store._transaction():
                    self.heads_of(host, day)
                    for hour in range(24):
                        if self.hourly(day, hour):
                            self.copy_hour(host, dt.datetime.combine(day, dt.time(hour)),
                                           self.source_of(host, day, hour))  # fmt: skip
                            hourly += 1
                    store.run(
                        f"INSERT INTO history_day_classes (host, day, {CLASS_COLUMNS})"
                        f" SELECT ?, ?, {CLASS_COLUMNS} FROM {self.prefix}tpl_day_classes"
                        " WHERE host = ? AND day = ?",
                        (host, day.isoformat(), source_host, source_day.isoformat()),
                    )
                    store.run(
                        "INSERT INTO history_days (host, day, stale, version, events, query_time,"
                        " qt_sketch, meta, rolled_at) VALUES (?, ?, 0, 1, ?, ?, ?, ?, ?)",
                        (host, day.isoformat(), events, qt, sketch, meta_for(meta, host),
                         stamp(dt.datetime.now())),
                    )  # fmt: skip
                made += 1
            if len(self.days) <= 14 or day == self.last:
                say(f"  {day}: copied ({made} host-days, {hourly} host-hours of class rows so far,"
                f" {time.perf_counter() - began:.0f} s)")  # fmt: skip
        store.run(f"DROP TABLE {self.prefix}tpl_day_classes")
        say(f"copies: {made} host-days (heads and roll-ups), {hourly} host-hours of hourly class"
            f" rows, in {time.perf_counter() - began:.0f} s")  # fmt: skip

    # --- 5. the fleet's roll-ups -------------------------------------------------------
    def roll_up(self) -> None:
        store, args = self.store, self.args
        for day in self.days:
            store.run(
                "INSERT INTO history_fleet_days (day) VALUES (?)"
                + (" ON DUPLICATE KEY UPDATE stale = 1" if isinstance(store, MysqlStore)
                   else " ON CONFLICT (day) DO UPDATE SET stale = 1"),
                (day.isoformat(),),
            )  # fmt: skip
        ((pending,),) = store.run("SELECT COUNT(*) FROM history_days WHERE stale = 1")
        assert not pending, "host-days left stale"
        now = dt.datetime.combine(self.last, dt.time()) + dt.timedelta(days=2)
        _, seconds, cpu = cpu_timed(lambda: store.roll_up(now))
        say(
            f"store.roll_up: {len(self.days)} fleet days ({args.hosts} host-days x"
            f" {args.classes:,} classes each) and the fleet blocks: {seconds:.0f} s"
            f" ({cpu:.0f} CPU-s of the client; {seconds / len(self.days):.1f} s a fleet day"
            f" and its share of blocks; load {os.getloadavg()[0]:.1f})"
        )

    def summary(self) -> None:
        store = self.store
        total = 0
        for table in ("history_classes", "history_day_classes", "history_fleet_classes",
                      "history_fleet_block_classes", "history_buckets"):  # fmt: skip
            size, rows = size_of(store, table)
            total += size
            say(f"  {table}: {rows:,} rows, {size / 2**30:.2f} GiB")
        hours = len(self.hosts) * len(self.days) * 24
        say(
            f"store: {len(self.hosts)} hosts x {len(self.days)} days ({self.days[0]} to"
            f" {self.last}) x 24 hours x {self.args.classes:,} classes ="
            f" {hours * self.args.classes:,} class-buckets; {total / 2**30:.1f} GiB as built;"
            f" the full hourly table would be {hours * self.args.classes * self.bytes_per_row / 2**30:.0f} GiB"
        )
        for host, picks in self.regressed.items():
            say(f"  regressed: {host}, {self.last} 18:00-24:00, classes"
                f" {', '.join(self.slow_classes[p][-16:] for p in picks)} 20x slower")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--store", required=True, help="a fresh store URL (MariaDB schema or SQLite file)"
    )
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--classes", type=int, default=2000)
    parser.add_argument(
        "--last-day",
        default=(dt.date.today() - dt.timedelta(days=1)).isoformat(),
        help="the fleet's last day (default yesterday: --since 7d and a 24h window read today)",
    )
    parser.add_argument(
        "--variants", type=int, default=6, help="real hours written through write()"
    )
    parser.add_argument("--templates", type=int, default=6, help="host-days rolled up for real")
    parser.add_argument("--shards", type=int, default=400, help="scale-log.py --shards")
    parser.add_argument(
        "--first-day-from", type=int, default=14, help="the first day's hourly rows from this hour"
    )
    parser.add_argument("--tmp", default=None, help="where the scaled logs go (default TMPDIR)")
    args = parser.parse_args()
    say(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at start")
    builder = Builder(args)
    builder.ingest()
    builder.build()
    builder.roll_up()
    builder.summary()
    say(f"machine load at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
